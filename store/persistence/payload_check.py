"""RESTORE's integrity checks of a DUMP payload, as Redis 7.0's rdbLoadObject runs them
(`sanitize-dump-payload`), before the codec (rdb_loader.py, rdb_values.py) builds the value.

Redis keeps compact encodings (ziplists, listpacks, intsets, zipmaps) as the bytes it
received, so it checks them before use; which checks run depends on the payload's type and
on "deep" sanitization:

- always: the blob's header (total bytes, terminator, ziplist tail offset, intset size);
  every entry of a ziplist (RDB types 10, 12, 13, 14: they are converted, so walked
  anyway) and of a zipmap (9), with duplicate fields refused in the pairs' forms; a
  quicklist node's container (18); a stream node key of 16 bytes and a non-empty
  listpack.
- deep (`sanitize-dump-payload yes`, or `clients` for a client that is neither the
  master nor an ACL user with skip-sanitize-payload): every listpack entry (16, 17, 18),
  a stream listpack's entry structure (15, 19), the intset's order.

A failed check is Redis's "<what> integrity check failed." (logged at verbose level by the
caller, as rdbReportCorruptRDB does in a RESTORE) and the reply 'Bad data format'. The
checks mirror Redis's check for check (zipmap.c's here, the others blob_validation.py's),
so a payload passes here exactly when it passes in redis-server; a stream's consumer
groups are walked too, for the PEL entry two consumers claim. What the codec refuses after
these passed (duplicate stream consumers, ...) is 'Bad data format' too.

Without deep sanitization a value the codec cannot decode is kept as Redis keeps it
(kept_corrupt.py).

Cost: nothing for strings and element-by-element types (no walk); a compact blob is read
once more, entry by entry, only when Redis reads it too.
"""

from __future__ import annotations

import struct
from typing import Any

from ..rdb import RDB_VERSION, RdbError, RdbReader, verify_payload
from .blob_validation import intset_valid, lp_valid, stream_lp_valid, ziplist_valid
from .kept_corrupt import corrupt_stream, kept_unsanitized
from .rdb_loader import RdbLoader

_U16 = struct.Struct('<H')
_U32 = struct.Struct('<I')

# rdbReportCorruptRDB's message for each check, with the line of rdb.c that reports it
# (Redis's log names it: "Internal error in RDB reading offset 0, function at rdb.c:N").
QUICKLIST = (2048, 'Quicklist integrity check failed.')
LISTPACK = (2071, 'Listpack integrity check failed.')
ZIPLIST = (2081, 'Ziplist integrity check failed.')
ZIPMAP = (2130, 'Zipmap integrity check failed.')
ZIPMAP_DUP = (2144, 'Hash zipmap with dup elements, or big length')
LIST_ZIPLIST = (2189, 'List ziplist integrity check failed.')
INTSET = (2214, 'Intset integrity check failed.')
ZSET_ZIPLIST = (2229, 'Zset ziplist integrity check failed.')
ZSET_LISTPACK = (2255, 'Zset listpack integrity check failed.')
HASH_ZIPLIST = (2275, 'Hash ziplist integrity check failed.')
HASH_LISTPACK = (2301, 'Hash listpack integrity check failed.')
STREAM_NODE_KEY = (2344, 'Stream node key entry is not the size of a stream ID')
STREAM_LISTPACK = (2362, 'Stream listpack integrity check failed.')
STREAM_EMPTY = (2373, 'Empty listpack inside stream')
PEL_CLAIMED = (2583, 'Stream consumer PEL entry already has a consumer assigned')

EMPTY_NODE = (0, '')  # refused without a log line (a quicklist node of no bytes)
LISTPACK_MAX_SAFETY_SIZE = 1 << 30  # lpSafeToAdd's bound


def corrupt_message(found: tuple[int, str]) -> str:
    """rdbReportError's line for a RESTORE (the loading offset is 0 outside a load)."""
    line, what = found
    return f'Internal error in RDB reading offset 0, function at rdb.c:{line} -> {what}'


def deep_sanitization(conn: Any) -> bool:
    """rdbLoadObject's deep_integrity_validation for a RESTORE run by `conn`."""
    mode = conn.server.config['sanitize-dump-payload']
    if mode == 'yes':
        return True
    if mode != 'clients':
        return False
    link = conn.server.replica_link
    if link is not None and link.is_master(conn):
        return False
    user = getattr(conn, 'user', None)
    return user is None or user.sanitize != 'skip-sanitize-payload'


def footer_valid(payload: bytes, skip_checksum: bool = False) -> bool:
    """verifyDumpPayload: an RDB version this server reads and, unless DEBUG
    SET-SKIP-CHECKSUM-VALIDATION 1 turned it off (`skip_checksum`), a matching CRC64."""
    if skip_checksum:
        return len(payload) >= 10 and _U16.unpack_from(payload, len(payload) - 10)[0] <= RDB_VERSION
    return verify_payload(payload)


def restore_value(conn: Any, payload: bytes) -> Any:
    """The value of a RESTORE payload whose footer passed, or None for 'Bad data format':
    Redis's integrity checks first, then the codec; why it failed is logged at verbose
    level, as Redis logs it in a RESTORE."""
    server = conn.server
    deep = deep_sanitization(conn)
    found = check_payload(payload, deep)
    if found is not None:
        if found[1]:
            server.log_verbose(corrupt_message(found))
        return None
    if not deep and payload[0] in (15, 19) and check_payload(payload, True) is not None:
        # listpacks only deep sanitization would refuse: Redis keeps them as they are
        return corrupt_stream(server, payload)
    loader = RdbLoader(payload, server.keyspace.limits)
    try:
        value = loader.value()
    except RdbError as e:
        server.log_verbose(f'Internal error in RDB reading offset 0 -> {e}')
        return None if deep else kept_unsanitized(server, payload, str(e))
    except (IndexError, ValueError, TypeError, KeyError, struct.error, OverflowError):
        return None
    except MemoryError:
        return None
    return None if loader.pos > loader.end else value


def check_payload(payload: bytes, deep: bool) -> tuple[int, str] | None:
    """The first integrity check Redis would fail on the value at the start of `payload`
    (a (line, message) pair), or None. A payload that does not even parse (short read,
    bad length) passes here: the codec refuses it."""
    r = RdbReader(payload)
    try:
        t = r.type()
        check = _CHECKS.get(t)
        return None if check is None else check(r, t, deep)
    except (RdbError, IndexError, struct.error):
        return None


# -- zipmap (zipmap.c) ----------------------------------------------------------------------


def zipmap_check(zm: bytes) -> tuple[int, str] | None:
    """zipmapValidateIntegrity (always deep), then the conversion's duplicate check."""
    size = len(zm)
    if size < 2 or zm[-1] != 0xFF:
        return ZIPMAP
    last = size - 1

    def length(p: int) -> tuple[int, int] | None:
        s = 1 if zm[p] < 254 else 5
        if p + s > last:
            return None
        n = zm[p] if s == 1 else _U32.unpack_from(zm, p + 1)[0]
        if n < 254 and s != 1:
            return None
        return n, s

    fields: set[bytes] = set()
    total = count = 0
    p = 1
    while zm[p] != 0xFF:
        got = length(p)
        if got is None:
            return ZIPMAP
        n, s = got
        field = zm[p + s : p + s + n]
        p += s + n
        if p > last:
            return ZIPMAP
        got = length(p)
        if got is None:
            return ZIPMAP
        vlen, s = got
        p += s
        free = zm[p]
        p += 1 + ((vlen + free) & 0xFFFFFFFF)  # C adds them as unsigned ints
        count += 1
        if p > last:
            return ZIPMAP
        total += n + vlen
        if field in fields or total > LISTPACK_MAX_SAFETY_SIZE:
            return ZIPMAP_DUP
        fields.add(field)
    if count == 0 or (zm[0] != 254 and zm[0] != count):
        return ZIPMAP
    return None


# -- per RDB type -----------------------------------------------------------------------------


def _check_zipmap(r: RdbReader, t: int, deep: bool) -> tuple[int, str] | None:
    return zipmap_check(r.string())


def _check_list_ziplist(r: RdbReader, t: int, deep: bool) -> tuple[int, str] | None:
    return None if ziplist_valid(r.string(), True) else LIST_ZIPLIST


def _check_intset(r: RdbReader, t: int, deep: bool) -> tuple[int, str] | None:
    return None if intset_valid(r.string(), deep) else INTSET


def _check_zset_ziplist(r: RdbReader, t: int, deep: bool) -> tuple[int, str] | None:
    return None if ziplist_valid(r.string(), True, pairs=True) else ZSET_ZIPLIST


def _check_hash_ziplist(r: RdbReader, t: int, deep: bool) -> tuple[int, str] | None:
    return None if ziplist_valid(r.string(), True, pairs=True) else HASH_ZIPLIST


def _check_zset_listpack(r: RdbReader, t: int, deep: bool) -> tuple[int, str] | None:
    return None if lp_valid(r.string(), deep, pairs=True) else ZSET_LISTPACK


def _check_hash_listpack(r: RdbReader, t: int, deep: bool) -> tuple[int, str] | None:
    return None if lp_valid(r.string(), deep, pairs=True) else HASH_LISTPACK


def _check_quicklist(r: RdbReader, t: int, deep: bool) -> tuple[int, str] | None:
    n, _ = r.length()
    for _ in range(n):
        if t == 18:
            container, _ = r.length()
            if container not in (1, 2):  # PLAIN, PACKED
                return QUICKLIST
            blob = r.string()
            if not blob:
                return EMPTY_NODE
            if container == 1:
                continue  # a plain node: any bytes
            if not lp_valid(blob, deep):
                return LISTPACK
        else:
            blob = r.string()
            if not blob:
                return EMPTY_NODE
            if not ziplist_valid(blob, True):
                return ZIPLIST
    return None


def _check_stream(r: RdbReader, t: int, deep: bool) -> tuple[int, str] | None:
    n, _ = r.length()
    for _ in range(n):
        if len(r.string()) != 16:
            return STREAM_NODE_KEY
        lp = r.string()
        if not stream_lp_valid(lp, deep):
            return STREAM_LISTPACK
        if lp[6] == 0xFF:
            return STREAM_EMPTY
    for _ in range(3 if t == 15 else 8):  # length, last ID (first ID, max deleted, added)
        r.length()
    groups, _ = r.length()
    for _ in range(groups):
        r.string()
        for _ in range(2 if t == 15 else 3):  # its last ID (and entries read)
            r.length()
        pel = set()
        n, _ = r.length()
        for _ in range(n):
            pel.add(r.read(16))
            r.read(8)
            r.length()
        claimed: set[bytes] = set()
        consumers, _ = r.length()
        for _ in range(consumers):
            r.string()
            r.read(8)
            n, _ = r.length()
            for _ in range(n):
                nack = r.read(16)
                if nack not in pel:
                    return None  # the codec's 'Consumer entry not found in group global PEL'
                if nack in claimed:
                    return PEL_CLAIMED
                claimed.add(nack)
    return None


_CHECKS = {
    9: _check_zipmap,
    10: _check_list_ziplist,
    11: _check_intset,
    12: _check_zset_ziplist,
    13: _check_hash_ziplist,
    14: _check_quicklist,
    15: _check_stream,
    16: _check_hash_listpack,
    17: _check_zset_listpack,
    18: _check_quicklist,
    19: _check_stream,
}
