"""HyperLogLog commands (Redis 7.0 hyperloglog.c): PFADD, PFCOUNT, PFMERGE, PFDEBUG and
PFSELFTEST. The representation and its arithmetic are in store/types/hll.py; this module
reads the arguments, checks the values and stores the results with Redis's side effects:
PFADD and PFMERGE raise `pfadd` (and `new` for a key they make), PFCOUNT writes a
recomputed cardinality back into the value's cache (a change WATCH sees, with no event),
PFDEBUG GETREG/TODENSE convert a sparse value in place without telling anyone.
"""

import random
from typing import Any

from ..args import WRONGTYPE, keyword
from ..command_table import Family
from ..context import Client
from ..resp import OK, RedisError
from ..types import hll
from ..types.strenc import mark, value_encoding
from .strings import _changed, _store

COMMANDS = Family('hyperloglog', since='2.8.9')

E_NOT_HLL = RedisError('WRONGTYPE Key is not a valid HyperLogLog string value.')
E_CORRUPTED = RedisError('INVALIDOBJ Corrupted HLL object detected')


def _checked(v: Any) -> Any:
    """isHLLObjectOrReply: `v` when it is a string holding a valid HLL (as the keyspace
    gave it: a buffer lookup's bytearray, or a read's bytes or bytearray)."""
    if type(v) is not bytes and type(v) is not bytearray:
        raise WRONGTYPE
    if not hll.is_hll(v):
        raise E_NOT_HLL
    return v


def _write_back(
    c: Client, key: bytes, h: bytearray, v: bytearray | None, created: bool, event: bytes
) -> None:
    """The HLL `h` changed; it is the bytearray `v` from the lookup unless a promotion or
    a new key made another one."""
    if h is v:
        _changed(c, key, h, event)
    else:
        _store(c, key, h, created, event)


def _registers(h: bytes | bytearray) -> bytes:
    """The registers of HLL `h`, a byte each (hll.register_bytes)."""
    try:
        return hll.register_bytes(h)
    except hll.Corrupted:
        raise E_CORRUPTED from None


@COMMANDS.command(
    'pfadd',
    -2,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @hyperloglog @fast',
    summary='Adds the specified elements to the specified HyperLogLog.',
    key_specs='RW insert; index 1; range 0 1 0',
)
def pfadd(c: Client, args: list[bytes]) -> int:
    key = args[1]
    v = c.ks.lookup(c.db, key, buffer=True)  # changed in place (keyspace.py)
    created = v is None
    h = hll.new() if created else _checked(v)
    updated = created
    limit = c.server.config['hll-sparse-max-bytes']
    try:
        h, changed = hll.add_many(h, args[2:], limit)
        updated = updated or changed
    except hll.Corrupted:
        raise E_CORRUPTED from None
    if not updated:
        return 0
    hll.invalidate(h)
    _write_back(c, key, h, v, created, b'pfadd')
    return 1


@COMMANDS.command(
    'pfcount',
    -2,
    flags='readonly',
    keys=(1, -1, 1),
    categories='@read @hyperloglog @slow',
    summary='Return the approximated cardinality of the set(s) observed by the HyperLogLog '
    'at key(s).',
    key_specs=(
        'RW access; index 1; range -1 1 0; '
        'RW because it may change the internal representation of the key, and propagate to replicas'
    ),
)
def pfcount(c: Client, args: list[bytes]) -> int:
    ks, db = c.ks, c.db
    if len(args) > 2:  # the cardinality of the union, nothing cached
        union = bytes(hll.REGISTERS)
        for key in args[1:]:
            v = ks.read(db, key, buffer=True)
            if v is not None:
                union = hll.union_bytes(union, _registers(_checked(v)))
        return hll.count_bytes(union)
    key = args[1]
    h = ks.read(db, key, buffer=True)
    if h is None:
        return 0
    card = hll.cached(_checked(h))
    if card is None:
        card = hll.count_bytes(_registers(h))
        enc = value_encoding(ks, db, key, h)  # the cache is written into the sds as it is
        if type(h) is not bytearray:
            h = bytearray(h)  # a copy, which string_written stores back
        hll.set_cached(h, card)
        ks.string_written(db, key, h)
        mark(ks, db, key, enc)
    return card


@COMMANDS.command(
    'pfmerge',
    -2,
    flags='write denyoom',
    keys=(1, -1, 1),
    categories='@write @hyperloglog @slow',
    summary='Merge N different HyperLogLogs into a single one.',
    key_specs='RW access insert; index 1; range 0 1 0 | RO access; index 2; range -1 1 0',
)
def pfmerge(c: Client, args: list[bytes]) -> str:
    ks, db = c.ks, c.db
    union = bytes(hll.REGISTERS)
    dense = False
    for key in args[1:]:  # the destination is one of the sources
        v = ks.read(db, key, buffer=True)
        if v is not None:
            h = _checked(v)
            dense = dense or h[4] == hll.DENSE
            union = hll.union_bytes(union, _registers(h))
    dest = args[1]
    v = ks.lookup(db, dest, buffer=True)
    created = v is None
    h = hll.new() if created else v
    limit = c.server.config['hll-sparse-max-bytes']
    try:
        if dense:
            h = hll.to_dense(h)
        resume: list[tuple[int, int]] = []  # registers go in in increasing order: each walk goes on
        for i, value in enumerate(union):
            if value:
                if h[4] == hll.DENSE:
                    hll.dense_set(h, i, value)
                else:
                    h, _ = hll.sparse_set(h, i, value, limit, resume)
    except hll.Corrupted:
        raise E_CORRUPTED from None
    hll.invalidate(h)
    _write_back(c, dest, h, v, created, b'pfadd')
    return OK


@COMMANDS.command(
    'pfdebug',
    3,
    flags='write denyoom admin',
    keys=(2, 2, 1),
    categories='@write @hyperloglog @admin @slow @dangerous',
    summary='Internal commands for debugging HyperLogLog values',
    key_specs='RW access; index 2; range 0 1 0',
)
def pfdebug(c: Client, args: list[bytes]) -> Any:
    ks, db, key = c.ks, c.db, args[2]
    h = ks.lookup(db, key, buffer=True)
    if h is None:
        raise RedisError('ERR The specified key does not exist')
    _checked(h)
    sub = keyword(args[1])
    if sub in (b'getreg', b'todense'):
        converted = h[4] == hll.SPARSE
        if converted:
            try:
                h = hll.to_dense(h)
            except hll.Corrupted:
                raise E_CORRUPTED from None
            ks.overwrite(db, key, h, signal=False)
        if sub == b'getreg':
            return hll.dense_registers(h)
        return int(converted)
    if sub == b'decode':
        if h[4] != hll.SPARSE:
            raise RedisError('ERR HLL encoding is not sparse')
        parts = [
            f'v:{value},{n}' if op == 'v' else f'{op}:{n}' for op, value, n in hll.sparse_runs(h)
        ]
        return ' '.join(parts).encode()
    if sub == b'encoding':
        return 'sparse' if h[4] == hll.SPARSE else 'dense'
    raise RedisError(f"ERR Unknown PFDEBUG subcommand '{args[1].decode('utf-8', 'replace')}'")


@COMMANDS.command(
    'pfselftest',
    1,
    flags='admin',
    keys=(0, 0, 0),
    categories='@hyperloglog @admin @slow @dangerous',
    summary='An internal command for testing HyperLogLog values',
)
def pfselftest(c: Client, args: list[bytes]) -> str:
    """pfselftestCommand's first test (dense registers read back as written) and a sparse
    HLL agreeing with its dense conversion after random additions."""
    rng = random.Random()
    h = bytearray(hll.DENSE_SIZE)
    values = [rng.randrange(64) for _ in range(hll.REGISTERS)]
    for i, value in enumerate(values):
        hll.dense_set(h, i, value)
    if hll.dense_registers(h) != values:
        raise RedisError('ERR TESTFAILED Register error')
    s = hll.new()
    for _ in range(1000):
        s, _ = hll.add(s, b'%d' % rng.getrandbits(64), 1 << 30)
    if hll.count(hll.registers(s)) != hll.count(hll.registers(hll.to_dense(bytearray(s)))):
        raise RedisError('ERR TESTFAILED sparse and dense disagree')
    return OK
