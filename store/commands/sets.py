"""Set commands (Redis 7.0 t_set.c): SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP
SRANDMEMBER SMOVE SINTER SINTERCARD SINTERSTORE SUNION SUNIONSTORE SDIFF SDIFFSTORE SSCAN.

The value is store/types/set.py's Set: a Python set that remembers whether Redis would
keep it as an intset, and draws random members in O(1). Handlers follow t_set.c's order
of checks, which a client can observe: SPOP and SRANDMEMBER parse their count before the
key is looked up and answer a count of 0 only after the WRONGTYPE check; SMOVE answers 0
for a missing source before it checks the destination's type; the multi-key commands look
up every source (counting keyspace hits and misses, as lookupKeyRead does, also for the
*STORE variants) and stop at the first of another type, and only then treat a missing
source as an empty set.

Encodings of new sets, as Redis builds them (checked against redis-server): SINTERSTORE,
SUNION(STORE) and SDIFF(STORE) fill a fresh intset member by member, so the result is an
intset iff all its members are integers and few enough (Set.built), except SDIFF's second
algorithm, which first copies the whole first set and then removes: its result is an
intset iff the first set's members would all fit one. SPOP COUNT leaving few members
builds a new set of the survivors the same way. A reply built from such a result lists an
intset in ascending order, so SUNION and SDIFF of integer sets, and SPOP of a whole set,
come out sorted even when their sources are hashtables.

Keyspace events, in Redis's order: `new` when a command creates its key (dbAdd), then
`sadd` / `srem` / `spop` / `sinterstore` / `sunionstore` / `sdiffstore`, then `del` when a
command emptied its key (aggregates.py). SMOVE raises `srem` (and `del`) on the source
before `new` and `sadd` on the destination. A *STORE whose result is empty deletes the
destination (`del` if it existed); one with a result replaces any value there, of any
type, and drops its TTL (setKey).

SRANDMEMBER with a negative count past the set's size repeats members: that reply is
proportional to the client's number, so it is built as its final bytes and refused with
'ERR value is out of range' beyond MAX_RANDOM_REPLY_BYTES, as HRANDFIELD is (hashes.py).
Redis 7.0 has no bound there: redis-server 7.0.15 builds the reply until memory runs
out (SRANDMEMBER s -9223372036854775807 takes it down). Every other count is served
without allocating more than the set's size.

SSCAN shares aggregates.scan_collection (an intset is returned whole, ascending, with
cursor 0), but looks the key up first itself: Redis answers a missing key (an empty scan)
or WRONGTYPE before it parses MATCH/COUNT.

SADD, SISMEMBER and SPOP are the hot path: one look-up, one set operation, events only
when someone listens.
"""

from typing import Any

from .. import events
from ..args import SYNTAX, int_arg
from ..command_table import Family, numkeys_keys
from ..context import Client
from ..resp import BULK_HEADER, CRLF, Raw, RedisError, c_string, string2ll
from ..resp import Set as SetReply
from ..types import expect
from ..types.set import Set, all_integers, intset_limit
from .aggregates import (
    changed,
    create,
    drop_if_empty,
    read_value,
    repeated_reply,
    scan_collection,
    store_result,
    write_value,
)
from .cursor import parse_cursor

SET, GENERIC = events.SET, events.GENERIC

LONG_MAX = 2**63 - 1

E_POSITIVE = 'ERR value is out of range, must be positive'
E_COUNT_RANGE = (
    'ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807'
)
E_NUMKEYS = 'ERR numkeys should be greater than 0'
E_NUMKEYS_ARGS = "ERR Number of keys can't be greater than number of args"
E_LIMIT = "ERR LIMIT can't be negative"

# The largest SRANDMEMBER reply with a negative count past the set's size (members
# repeated) this server builds; see the module comment. Peak memory is a few times this.

SPOP_MOVE_STRATEGY_MUL = 5  # t_set.c: when SPOP COUNT keeps the survivors instead

COMMANDS = Family('set')


def _positive(b: bytes, msg: str = E_POSITIVE) -> int:
    """getPositiveLongFromObjectOrReply: a 64-bit integer >= 0, else `msg` (also for
    what is not an integer at all)."""
    v = string2ll(b)
    if v is None or v < 0:
        raise RedisError(msg)
    return v


def _read_sources(c: Client, keys: list[bytes]) -> list[Set | None]:
    """lookupKeyRead + checkType of every source key in order, WRONGTYPE at the first of
    another type; None for a missing one."""
    ks, db = c.ks, c.db
    return [expect(ks.read(db, k), Set) for k in keys]


# -- SADD, SREM, SMOVE ------------------------------------------------------------------


@COMMANDS.command(
    'sadd',
    -3,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @set @fast',
    summary='Add one or more members to a set',
    key_specs='RW insert; index 1; range 0 1 0',
)
def sadd(c: Client, args: list[bytes]) -> int:
    key = args[1]
    s = write_value(c, key, Set)
    if s is None:
        s = create(c, key, Set())
    added = s.add_members(args[2:], c.ks.limits)
    if added:
        changed(c, SET, b'sadd', key)
    return added


@COMMANDS.command(
    'srem',
    -3,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@write @set @fast',
    summary='Remove one or more members from a set',
    key_specs='RW delete; index 1; range 0 1 0',
)
def srem(c: Client, args: list[bytes]) -> int:
    key = args[1]
    s = write_value(c, key, Set)
    if s is None:
        return 0
    n = len(s)
    s.difference_update(args[2:])
    deleted = n - len(s)
    if deleted:
        changed(c, SET, b'srem', key)
        drop_if_empty(c, key, s)
    return deleted


@COMMANDS.command(
    'smove',
    4,
    flags='write fast',
    keys=(1, 2, 1),
    categories='@write @set @fast',
    summary='Move a member from one set to another',
    key_specs='RW access delete; index 1; range 0 1 0 | RW insert; index 2; range 0 1 0',
)
def smove(c: Client, args: list[bytes]) -> int:
    ks, db = c.ks, c.db
    src_key, dst_key, member = args[1], args[2], args[3]
    src = ks.lookup(db, src_key)
    dst = ks.lookup(db, dst_key)
    if src is None:
        return 0  # before the destination's type is checked
    expect(src, Set)
    expect(dst, Set)
    if src is dst:
        return int(member in src)
    if member not in src:
        return 0
    src.remove(member)
    if ks.notify_flags & SET:
        ks.notify(SET, b'srem', db, src_key)
    drop_if_empty(c, src_key, src)
    if dst is None:
        dst = create(c, dst_key, Set())
    ks.updated(db, src_key)
    if dst.add_members((member,), ks.limits):
        changed(c, SET, b'sadd', dst_key)
    return 1


# -- membership and size ----------------------------------------------------------------


@COMMANDS.command(
    'sismember',
    3,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @set @fast',
    summary='Determine if a given value is a member of a set',
    key_specs='RO; index 1; range 0 1 0',
)
def sismember(c: Client, args: list[bytes]) -> int:
    s = read_value(c, args[1], Set)
    return 0 if s is None else int(args[2] in s)


@COMMANDS.command(
    'smismember',
    -3,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @set @fast',
    since='6.2.0',
    summary='Returns the membership associated with the given elements for a set',
    key_specs='RO access; index 1; range 0 1 0',
)
def smismember(c: Client, args: list[bytes]) -> list[int]:
    s = read_value(c, args[1], Set)
    if s is None:
        return [0] * (len(args) - 2)
    return [int(m in s) for m in args[2:]]


@COMMANDS.command(
    'scard',
    2,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @set @fast',
    summary='Get the number of members in a set',
    key_specs='RO; index 1; range 0 1 0',
)
def scard(c: Client, args: list[bytes]) -> int:
    s = read_value(c, args[1], Set)
    return 0 if s is None else len(s)


@COMMANDS.command(
    'smembers',
    2,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @set @slow',
    tips='nondeterministic_output_order',
    summary='Get all the members in a set',
    key_specs='RO access; index 1; range 0 1 0',
)
def smembers(c: Client, args: list[bytes]) -> Any:
    """Redis 7.0 serves SMEMBERS with sinterCommand: the intersection of one set."""
    return _sinter(c, args[1:2], None, False, 0)


# -- SPOP, SRANDMEMBER ------------------------------------------------------------------


@COMMANDS.command(
    'spop',
    -2,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@write @set @fast',
    tips='nondeterministic_output',
    summary='Remove and return one or multiple random members from a set',
    key_specs='RW access delete; index 1; range 0 1 0',
)
def spop(c: Client, args: list[bytes]) -> Any:
    if len(args) == 3:
        return _spop_count(c, args[1], _positive(args[2]))
    if len(args) > 3:
        raise SYNTAX
    key = args[1]
    s = write_value(c, key, Set)
    if s is None:
        return None
    member = s.pop_random()
    changed(c, SET, b'spop', key)
    drop_if_empty(c, key, s)
    return member


def _spop_count(c: Client, key: bytes, count: int) -> SetReply:
    """spopWithCountCommand: the whole set when count reaches its size (and the key is
    deleted), else `count` random members popped one by one, or, when few would stay, a
    new set of `size - count` random survivors replacing the old one."""
    s = write_value(c, key, Set)
    if s is None or count == 0:
        return SetReply()
    ks = c.ks
    if ks.notify_flags & SET:
        ks.notify(SET, b'spop', c.db, key)
    size = len(s)
    if count >= size:
        # Redis replies with SUNION of the set: a fresh set (sorted if it fits an
        # intset), looked up once more as a read (a keyspace hit)
        ks.read(c.db, key)
        reply = SetReply(Set.built(ks.limits, s).members())
        s.clear()
        drop_if_empty(c, key, s)
        return reply
    remaining = size - count
    if remaining * SPOP_MOVE_STRATEGY_MUL > count:
        reply = SetReply(s.pop_random() for _ in range(count))
    else:
        kept = s.random_distinct(remaining)
        popped = s.members()  # in the old set's order, which Redis replies in
        survivors = Set.built(ks.limits, kept)
        s.clear()
        s.update(survivors)
        s.intset = survivors.intset
        s.pool = None
        reply = SetReply([m for m in popped if m not in s])
    ks.updated(c.db, key)
    return reply


@COMMANDS.command(
    'srandmember',
    -2,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @set @slow',
    tips='nondeterministic_output',
    summary='Get one or multiple random members from a set',
    key_specs='RO access; index 1; range 0 1 0',
)
def srandmember(c: Client, args: list[bytes]) -> Any:
    if len(args) == 3:
        return _srandmember_count(c, args)
    if len(args) > 3:
        raise SYNTAX
    s = read_value(c, args[1], Set)
    return None if s is None else s.random_member()


def _srandmember_count(c: Client, args: list[bytes]) -> Any:
    """srandmemberWithCountCommand: a negative count draws with repeats, in draw order;
    a positive one distinct members, the whole set (in its order) when it has no more."""
    count = int_arg(args[2])
    if count < -LONG_MAX:
        raise RedisError(E_COUNT_RANGE)
    s = read_value(c, args[1], Set)
    if s is None or count == 0:
        return []
    size = len(s)
    if count < 0 or count == 1:
        n = -count if count < 0 else 1
        if n <= size:
            return s.random_members(n)
        return _repeated_reply(c, s, n)
    if count >= size:
        return s.members()
    return s.random_distinct(count)


def _repeated_reply(c: Client, s: Set, count: int) -> Raw:
    """The reply bytes of `count` members drawn with repeats, `count` past the set's size:
    each member encoded once, refused beyond MAX_RANDOM_REPLY_BYTES (the expected size,
    from the mean size of an encoded member)."""
    pieces = [
        (BULK_HEADER[len(m)] if len(m) < 1024 else b'$%d\r\n' % len(m)) + m + CRLF
        for m in s.members()
    ]
    return repeated_reply(pieces, count, count, c)


# -- SINTER, SINTERCARD, SINTERSTORE ------------------------------------------------------


def _sinter(
    c: Client, keys: list[bytes], dst: bytes | None, cardinality_only: bool, limit: int
) -> Any:
    """sinterGenericCommand: iterate the smallest set (in its order: ascending for an
    intset) and keep what every other set holds. `limit` (SINTERCARD) stops counting
    there; 0 is no limit."""
    sets = [s for s in _read_sources(c, keys) if s is not None]
    if len(sets) < len(keys):  # a missing key, an empty set: an empty intersection
        if dst is not None:
            return store_result(c, dst, None, SET, b'sinterstore')
        return 0 if cardinality_only else SetReply()
    sets.sort(key=len)  # stable, as glibc's qsort (a merge sort) is for equal sizes
    first, others = sets[0], [s for s in sets[1:] if s is not sets[0]]
    if cardinality_only and limit:
        n = 0
        for m in first:
            if all(m in o for o in others):
                n += 1
                if n >= limit:
                    break
        return n
    common = first.intersection(*others) if others else first
    if cardinality_only:
        return len(common)
    if dst is not None:
        return store_result(c, dst, Set.built(c.ks.limits, common), SET, b'sinterstore')
    if first.intset:
        return SetReply(sorted(common, key=int))
    return SetReply(common)


@COMMANDS.command(
    'sinter',
    -2,
    flags='readonly',
    keys=(1, -1, 1),
    categories='@read @set @slow',
    tips='nondeterministic_output_order',
    summary='Intersect multiple sets',
    key_specs='RO access; index 1; range -1 1 0',
)
def sinter(c: Client, args: list[bytes]) -> Any:
    return _sinter(c, args[1:], None, False, 0)


@COMMANDS.command(
    'sintercard',
    -3,
    flags='readonly movablekeys',
    getkeys=numkeys_keys(1),
    categories='@read @set @slow',
    since='7.0.0',
    summary='Intersect multiple sets and return the cardinality of the result',
    key_specs='RO access; index 1; keynum 0 1 1',
)
def sintercard(c: Client, args: list[bytes]) -> Any:
    numkeys = int_arg(args[1], E_NUMKEYS)
    if numkeys < 1:
        raise RedisError(E_NUMKEYS)
    if numkeys > len(args) - 2:
        raise RedisError(E_NUMKEYS_ARGS)
    limit = 0
    j = 2 + numkeys
    while j < len(args):
        if c_string(args[j]).lower() == b'limit' and j + 1 < len(args):
            j += 1
            limit = _positive(args[j], E_LIMIT)
        else:
            raise SYNTAX
        j += 1
    return _sinter(c, args[2 : 2 + numkeys], None, True, limit)


@COMMANDS.command(
    'sinterstore',
    -3,
    flags='write denyoom',
    keys=(1, -1, 1),
    categories='@write @set @slow',
    summary='Intersect multiple sets and store the resulting set in a key',
    key_specs='RW update; index 1; range 0 1 0 | RO access; index 2; range -1 1 0',
)
def sinterstore(c: Client, args: list[bytes]) -> Any:
    return _sinter(c, args[2:], args[1], False, 0)


# -- SUNION, SDIFF and their STORE variants ---------------------------------------------


def _sunion_diff(c: Client, keys: list[bytes], dst: bytes | None, diff: bool) -> Any:
    """sunionDiffGenericCommand. SDIFF picks between Redis's two algorithms as Redis does,
    because the second one leaves its result a hashtable whenever the first set could not
    be an intset (module comment)."""
    sets = _read_sources(c, keys)
    limits = c.ks.limits
    present = [s for s in sets if s is not None]
    if not diff:
        result = Set.built(limits, *present)
    elif sets[0] is None:
        result = Set()
    else:
        first = sets[0]
        algo_one_work = len(first) * len(present) // 2
        algo_two_work = sum(map(len, present))
        result = Set.built(limits, first.difference(*present[1:]))
        if algo_one_work > algo_two_work:  # algorithm 2: copy the first set, then remove
            result.intset = len(first) <= intset_limit(limits) and (
                first.intset or all_integers(first)
            )
    if dst is None:
        return SetReply(result.members())
    return store_result(c, dst, result, SET, b'sdiffstore' if diff else b'sunionstore')


@COMMANDS.command(
    'sunion',
    -2,
    flags='readonly',
    keys=(1, -1, 1),
    categories='@read @set @slow',
    tips='nondeterministic_output_order',
    summary='Add multiple sets',
    key_specs='RO access; index 1; range -1 1 0',
)
def sunion(c: Client, args: list[bytes]) -> Any:
    return _sunion_diff(c, args[1:], None, False)


@COMMANDS.command(
    'sunionstore',
    -3,
    flags='write denyoom',
    keys=(1, -1, 1),
    categories='@write @set @slow',
    summary='Add multiple sets and store the resulting set in a key',
    key_specs='OW update; index 1; range 0 1 0 | RO access; index 2; range -1 1 0',
)
def sunionstore(c: Client, args: list[bytes]) -> Any:
    return _sunion_diff(c, args[2:], args[1], False)


@COMMANDS.command(
    'sdiff',
    -2,
    flags='readonly',
    keys=(1, -1, 1),
    categories='@read @set @slow',
    tips='nondeterministic_output_order',
    summary='Subtract multiple sets',
    key_specs='RO access; index 1; range -1 1 0',
)
def sdiff(c: Client, args: list[bytes]) -> Any:
    return _sunion_diff(c, args[1:], None, True)


@COMMANDS.command(
    'sdiffstore',
    -3,
    flags='write denyoom',
    keys=(1, -1, 1),
    categories='@write @set @slow',
    summary='Subtract multiple sets and store the resulting set in a key',
    key_specs='OW update; index 1; range 0 1 0 | RO access; index 2; range -1 1 0',
)
def sdiffstore(c: Client, args: list[bytes]) -> Any:
    return _sunion_diff(c, args[2:], args[1], True)


# -- SSCAN ------------------------------------------------------------------------------


def _intset_members(s: Set) -> list[bytes] | None:
    return s.members() if s.intset else None


def _append_member(s: Set, member: bytes, out: list[bytes]) -> None:
    out.append(member)


@COMMANDS.command(
    'sscan',
    -3,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @set @slow',
    tips='nondeterministic_output',
    since='2.8.0',
    summary='Incrementally iterate Set elements',
    key_specs='RO access; index 1; range 0 1 0',
)
def sscan(c: Client, args: list[bytes]) -> list[Any]:
    parse_cursor(args[2])
    s = c.ks.lookup(c.db, args[1])  # no hit/miss counted: scan_collection counts it
    if s is None or type(s) is not Set:
        read_value(c, args[1], Set)  # counts the miss, or the hit and WRONGTYPE
        return [b'0', []]
    return scan_collection(c, args, Set, _intset_members, _append_member)
