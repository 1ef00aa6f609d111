"""RESTORE's integrity checks of a DUMP payload, as Redis 7.0's rdbLoadObject runs them
(`sanitize-dump-payload`), before the codec (rdb_codec.py) builds the value.

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
functions mirror ziplist.c's ziplistValidateIntegrity / zipEntrySafe, listpack.c's
lpValidateIntegrity / lpValidateNext, intset.c, zipmap.c and t_stream.c's
streamValidateListpackIntegrity check for check, offsets as ints where C has pointers,
so a payload passes here exactly when it passes in redis-server; a stream's consumer
groups are walked too, for the PEL entry two consumers claim. What the codec refuses after
these passed (duplicate stream consumers, ...) is 'Bad data format' too.

Without deep sanitization Redis keeps blobs it did not walk as they came, corrupt or not,
and fails (an assertion, the process ends) when a command reads a corrupt one. This server
does the same where the codec cannot decode what Redis would keep (`kept_unsanitized`): a
compact value stays a types/packed.py blob (reading it is Redis's assertion on the
listpack, keyspace.Keyspace.corrupt, ending the process), a stream's
entries become a tripwire that ends the process with Redis's assertion report when read
(store/crash.py); a stream whose listpacks only deep checks refuse is kept that way even
when the codec could decode it, since Redis asserts on it.

Cost: nothing for strings and element-by-element types (no walk); a compact blob is read
once more, entry by entry, only when Redis reads it too.
"""

from __future__ import annotations

import struct
from typing import Any

from .. import crash
from ..memory.sizes import CONTAINER
from ..rdb import RDB_VERSION, RdbError, RdbReader, verify_payload
from ..resp import string2ll
from ..types.packed import (
    T_HASH_LISTPACK,
    T_LIST_QUICKLIST_2,
    T_SET_INTSET,
    T_ZSET_LISTPACK,
    Packed,
)
from ..types.stream import Stream
from .rdb_codec import RdbLoader

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


def kept_unsanitized(server: Any, payload: bytes, why: str) -> Any:
    """Without deep sanitization Redis keeps a compact value whose header passed as the
    bytes it got, and only meets the corruption when a command reads it. So does this
    server, where it can keep bytes: a hash, sorted set, intset or one-node list stays a
    `Packed` blob (types/packed.py), and reading it is an error reply then; a stream
    keeps no entries but a tripwire, and reading them is Redis's assertion on the
    listpack (store/crash.py). Converting a hash listpack with duplicate fields to a
    table panics at once, as hashTypeConvertListpack does. None for anything else."""
    r = RdbReader(payload)
    try:
        t = r.type()
        if t in (T_HASH_LISTPACK, T_ZSET_LISTPACK, T_SET_INTSET):
            blob = r.string()
            if t == T_HASH_LISTPACK and 'Duplicate hash fields' in why:
                pairs = _U16.unpack_from(blob, 4)[0] // 2
                if pairs > server.keyspace.limits.hash_entries:
                    _hexdump(server, 'listpack with dup elements dump', blob)
                    crash.panic(server, 'Listpack corruption detected', 't_hash.c:1217')
            return Packed(t, blob, CONTAINER + len(blob))
        if t == T_LIST_QUICKLIST_2:
            nodes, _ = r.length()
            container, _ = r.length()
            if nodes == 1 and container == 2:
                blob = r.string()
                return Packed(t, blob, CONTAINER + len(blob))
            return None
        if t in (15, 19) and 'Stream listpack integrity check failed' in why:
            # (a failure past the listpacks, in the groups, is one Redis reports too)
            return corrupt_stream(server, payload)
    except (RdbError, IndexError, struct.error):
        return None
    return None


def corrupt_stream(server: Any, payload: bytes) -> Any:
    """A stream whose listpacks Redis keeps unsanitized: its entries are a tripwire, its
    length and IDs the payload's. An RDB type 15 stream has its first entry looked up at
    load (streamGetEdgeID, no first ID stored): where that walk meets a bad entry, the
    assertion comes now."""
    t = payload[0]
    r = RdbReader(payload)
    r.type()
    nodes, _ = r.length()
    for i in range(nodes):
        r.string()
        lp = r.string()
        if t == 15 and i == 0 and not _first_entry_walk(lp):
            crash.assert_failed(server, 'lpValidateNext(lp, &p, lpbytes)', 'listpack.c:1276')
    stream = Stream()
    try:
        meta = [r.length()[0] for _ in range(3 if t == 15 else 8)]
    except RdbError:
        meta = [0] * 8
    stream.length = meta[0]
    stream.last_id = meta[1] << 64 | meta[2]
    if t != 15:
        stream.first_id = meta[3] << 64 | meta[4]
        stream.max_deleted = meta[5] << 64 | meta[6]
        stream.entries_added = meta[7]
    trip = _Tripwire(server)
    stream.ids = stream.vals = stream.enc = trip
    if server.loop is not None:
        server.loop.call_soon(trip.arm)
    else:
        trip.arm()
    return stream


def _first_entry_walk(lp: bytes) -> bool:
    """streamIteratorGetID's forward walk to the first live entry of a node, with the
    checks lpFirst, lpNext and lpGetInteger assert: False where one would fail."""
    last = len(lp) - 1

    def nxt(p: int | None) -> int | None:
        if p is None:
            raise IndexError
        q = p + _lp_entry_size(lp, p)
        q += _backlen_size(q - p)
        if q > last:
            raise IndexError
        if lp[q] == 0xFF:
            return None
        if not lp_next(lp, q)[0]:
            raise IndexError
        return q

    def integer(p: int | None) -> int:
        v = _lp_integer(lp, p)
        if v is None:
            raise IndexError
        return v

    try:
        if len(lp) < 7 or lp[6] == 0xFF or not lp_next(lp, 6)[0]:
            return False
        p = nxt(nxt(6))
        master_fields = integer(p)
        p = nxt(p)
        for _ in range(master_fields):
            p = nxt(p)
        while True:
            p = nxt(p)
            if p is None:
                return True
            flags = integer(p)
            p = nxt(p)
            integer(p)
            p = nxt(p)
            integer(p)
            p = nxt(p)
            fields = master_fields if flags & 2 else integer(p)
            if not flags & 1:  # not deleted: the first entry is found
                return True
            for _ in range(fields if flags & 2 else fields * 2):
                p = nxt(p)
    except (IndexError, struct.error):
        return False


class _Tripwire:
    """The entries of a stream restored without sanitization whose listpacks are corrupt:
    reading them is the assertion Redis fails on such a listpack. Until the RESTORE's
    turn of the loop is over (`armed`), their number reads as none: the keyspace charges
    the new value then, which Redis does without reading a listpack."""

    __slots__ = ('server', 'armed')

    def __init__(self, server: Any) -> None:
        self.server = server
        self.armed = False

    def arm(self) -> None:
        self.armed = True

    def __len__(self) -> int:
        if self.armed:
            self._trip()
        return 0

    def _trip(self, *args: Any) -> Any:
        crash.assert_failed(self.server, 'lpValidateNext(lp, &p, lpbytes)', 'listpack.c:1276')

    __getitem__ = __setitem__ = __delitem__ = __iter__ = __reversed__ = __contains__ = _trip
    append = extend = insert = pop = index = count = __iadd__ = _trip


def _hexdump(server: Any, what: str, blob: bytes) -> None:
    """serverLogHexDump: the bytes in lines of 64 hex digits."""
    server.log(f'{what} (hexdump of {len(blob)} bytes):', '#')
    text = blob.hex()
    for i in range(0, len(text), 64):
        server.log(text[i : i + 64], '#')


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


# -- ziplist (ziplist.c) ----------------------------------------------------------------------

_ZIP_INT_SIZE = {0xC0: 2, 0xD0: 4, 0xE0: 8, 0xF0: 3, 0xFE: 1}


def _zip_entry(zl: bytes, p: int) -> tuple[int, int, int, int] | None:
    """zipEntrySafe with prevlen validation: (prevrawlen, headersize, len, encoding) of
    the entry at `p`, or None when its header is invalid or it reaches outside."""
    first, last = 10, len(zl) - 1
    if p < first or p > last:
        return None
    prevlensize = 1 if zl[p] < 254 else 5
    if p + prevlensize > last:
        return None
    q = p + prevlensize
    enc = zl[q]
    if enc < 0xC0:
        enc &= 0xC0
        lensize = 1 if enc == 0x00 else 2 if enc == 0x40 else 5
    elif enc in _ZIP_INT_SIZE or 0xF1 <= enc <= 0xFD:
        lensize = 1
    else:
        return None
    if q + lensize > last:
        return None
    prevlen = zl[p] if prevlensize == 1 else _U32.unpack_from(zl, p + 1)[0]
    if enc == 0x00:
        ln = zl[q] & 0x3F
    elif enc == 0x40:
        ln = ((zl[q] & 0x3F) << 8) | zl[q + 1]
    elif enc == 0x80:
        ln = int.from_bytes(zl[q + 1 : q + 5], 'big')
    else:
        ln = _ZIP_INT_SIZE.get(enc, 0)
    headersize = prevlensize + lensize
    if p + headersize + ln > last or p - prevlen < first:
        return None
    return prevlen, headersize, ln, enc


def _zip_value(zl: bytes, p: int, e: tuple[int, int, int, int]) -> bytes:
    """ziplistGet of a validated entry, an integer as its digits."""
    _, headersize, ln, enc = e
    start = p + headersize
    if enc < 0xC0:
        return zl[start : start + ln]
    if 0xF1 <= enc <= 0xFD:
        return b'%d' % ((enc & 0x0F) - 1)
    return b'%d' % int.from_bytes(zl[start : start + ln], 'little', signed=True)


def ziplist_valid(zl: bytes, deep: bool, pairs: bool = False) -> bool:
    """ziplistValidateIntegrity; `pairs`: ziplistPairsConvertAndValidateIntegrity's
    callback too (no duplicate field, an even number of entries)."""
    size = len(zl)
    if size < 11 or _U32.unpack_from(zl)[0] != size or zl[-1] != 0xFF:
        return False
    tail = _U32.unpack_from(zl, 4)[0]
    if tail > size - 1:
        return False
    if not deep:
        return True
    header_count = _U16.unpack_from(zl, 8)[0]
    fields: set[bytes] = set()
    p, prev, prev_raw, count = 10, -1, 0, 0
    while zl[p] != 0xFF:
        e = _zip_entry(zl, p)
        if e is None or e[0] != prev_raw:
            return False
        if pairs and count % 2 == 0:
            field = _zip_value(zl, p, e)
            if field in fields:
                return False
            fields.add(field)
        prev_raw = e[1] + e[2]
        prev = p
        p += prev_raw
        count += 1
    if p != size - 1:
        return False
    if prev >= 0 and prev != tail:
        return False
    if header_count != 0xFFFF and count != header_count:
        return False
    return not (pairs and count % 2)


# -- listpack (listpack.c) --------------------------------------------------------------------


def _lp_size_bytes(c: int) -> int:
    """lpCurrentEncodedSizeBytes: the encoding byte and length bytes, 0 if invalid."""
    if c < 0xE0 or 0xF1 <= c <= 0xF4 or c == 0xFF:
        return 1
    if c < 0xF0:
        return 2
    return 5 if c == 0xF0 else 0


def _lp_entry_size(lp: bytes, p: int) -> int:
    """lpCurrentEncodedSizeUnsafe: the entry's encoding, length and data bytes."""
    c = lp[p]
    if c < 0x80:
        return 1
    if c < 0xC0:
        return 1 + (c & 0x3F)
    if c < 0xE0:
        return 2
    if c < 0xF0:
        return 2 + (((c & 0x0F) << 8) | lp[p + 1])
    if c == 0xF0:
        return 5 + _U32.unpack_from(lp, p + 1)[0]
    return {0xF1: 3, 0xF2: 4, 0xF3: 5, 0xF4: 9}.get(c, 1)


def _backlen_size(n: int) -> int:
    """lpEncodeBacklen's size for an entry of `n` bytes."""
    if n <= 127:
        return 1
    if n < 16383:
        return 2
    if n < 2097151:
        return 3
    return 4 if n < 268435455 else 5


def _decode_backlen(lp: bytes, p: int) -> int:
    """lpDecodeBacklen, reading backwards from `p`."""
    val = shift = 0
    while True:
        c = lp[p]
        val |= (c & 127) << shift
        if not c & 128:
            return val
        shift += 7
        p -= 1
        if shift > 28:
            return 1 << 64


def lp_next(lp: bytes, p: int | None) -> tuple[bool, int | None]:
    """lpValidateNext: (valid, the next entry's offset or None after the terminator)."""
    last = len(lp) - 1
    if p is None or p < 6 or p > last:
        return False, None
    if lp[p] == 0xFF:
        return True, None
    lenbytes = _lp_size_bytes(lp[p])
    if not lenbytes or p + lenbytes > last:
        return False, None
    entrylen = _lp_entry_size(lp, p)
    backlen = _backlen_size(entrylen)
    entrylen += backlen
    if p + entrylen > last:
        return False, None
    p += entrylen
    if _decode_backlen(lp, p - 1) + backlen != entrylen:
        return False, None
    return True, p


def lp_value(lp: bytes, p: int) -> bytes | int:
    """lpGet of a validated entry: bytes for a string, int for an integer."""
    c = lp[p]
    if c < 0x80:
        return c
    if c < 0xC0:
        return lp[p + 1 : p + 1 + (c & 0x3F)]
    if c < 0xE0:
        v = ((c & 0x1F) << 8) | lp[p + 1]
        return v - 8192 if v >= 4096 else v
    if c < 0xF0:
        n = ((c & 0x0F) << 8) | lp[p + 1]
        return lp[p + 2 : p + 2 + n]
    if c == 0xF0:
        n = _U32.unpack_from(lp, p + 1)[0]
        return lp[p + 5 : p + 5 + n]
    width = {0xF1: 2, 0xF2: 3, 0xF3: 4, 0xF4: 8}[c]
    return int.from_bytes(lp[p + 1 : p + 1 + width], 'little', signed=True)


def lp_valid(lp: bytes, deep: bool, pairs: bool = False) -> bool:
    """lpValidateIntegrity; `pairs`: lpPairsValidateIntegrityAndDups's callback too."""
    size = len(lp)
    if size < 7 or _U32.unpack_from(lp)[0] != size or lp[-1] != 0xFF:
        return False
    if not deep:
        return True
    numele = _U16.unpack_from(lp, 4)[0]
    fields: set[bytes] = set()
    count = 0
    p: int | None = 6
    while p is not None and lp[p] != 0xFF:
        prev = p
        ok, p = lp_next(lp, p)
        if not ok:
            return False
        if pairs and count % 2 == 0:
            v = lp_value(lp, prev)
            field = v if isinstance(v, bytes) else b'%d' % v
            if field in fields:
                return False
            fields.add(field)
        count += 1
    if p != size - 1:
        return False
    if numele != 0xFFFF and numele != count:
        return False
    return not (pairs and count % 2)


def _lp_integer(lp: bytes, p: int | None) -> int | None:
    """lpGetIntegerIfValid: the entry's integer, or None when it is not one."""
    if p is None:
        return None
    v = lp_value(lp, p)
    return v if type(v) is int else string2ll(v)  # type: ignore[arg-type]


def stream_lp_valid(lp: bytes, deep: bool) -> bool:
    """streamValidateListpackIntegrity: the header, and when deep the stream's entry
    layout (master entry, then flags, ID, fields, values and lp-count per entry)."""
    if not lp_valid(lp, False):
        return False
    if not deep:
        return True
    p: int | None = 6 if lp[6] != 0xFF else None
    nxt = p

    def step() -> bool:
        nonlocal p, nxt
        p = nxt
        ok, nxt = lp_next(lp, nxt)
        return ok

    ok, nxt = lp_next(lp, nxt)
    if not ok or p is None:
        return False
    entry_count = _lp_integer(lp, p)
    if entry_count is None or not step():
        return False
    deleted = _lp_integer(lp, p)
    if deleted is None or not step():
        return False
    master_fields = _lp_integer(lp, p)
    if master_fields is None or not step():
        return False
    for _ in range(max(master_fields, 0)):
        if not step():
            return False
    zero = _lp_integer(lp, p)
    if zero != 0 or not step():
        return False
    entry_count += deleted
    while entry_count != 0:  # C's while (n--): a negative count runs until entries run out
        entry_count -= 1
        if p is None:
            return False
        fields, extra = master_fields, 3
        flags = _lp_integer(lp, p)
        if flags is None or not step():
            return False
        for _ in range(2):  # the entry ID
            if _lp_integer(lp, p) is None or not step():
                return False
        if not flags & 2:  # STREAM_ITEM_FLAG_SAMEFIELDS
            own = _lp_integer(lp, p)
            if own is None or not step():
                return False
            fields = own
            for _ in range(max(fields, 0)):
                if not step():
                    return False
            extra += fields + 1
        for _ in range(max(fields, 0)):
            if not step():
                return False
        lp_count = _lp_integer(lp, p)
        if lp_count is None or lp_count != fields + extra or not step():
            return False
    return nxt is None


# -- intset (intset.c) and zipmap (zipmap.c) --------------------------------------------------


def intset_valid(b: bytes, deep: bool) -> bool:
    if len(b) < 8:
        return False
    width, count = struct.unpack_from('<II', b)
    fmt = {2: 'h', 4: 'i', 8: 'q'}.get(width)
    if fmt is None or 8 + count * width != len(b) or count == 0:
        return False
    if not deep:
        return True
    values = struct.unpack_from(f'<{count}{fmt}', b, 8)
    return all(values[i - 1] < values[i] for i in range(1, count))


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


def _blob(r: RdbReader) -> bytes:
    return r.string()


def _check_zipmap(r: RdbReader, t: int, deep: bool) -> tuple[int, str] | None:
    return zipmap_check(_blob(r))


def _check_list_ziplist(r: RdbReader, t: int, deep: bool) -> tuple[int, str] | None:
    return None if ziplist_valid(_blob(r), True) else LIST_ZIPLIST


def _check_intset(r: RdbReader, t: int, deep: bool) -> tuple[int, str] | None:
    return None if intset_valid(_blob(r), deep) else INTSET


def _check_zset_ziplist(r: RdbReader, t: int, deep: bool) -> tuple[int, str] | None:
    return None if ziplist_valid(_blob(r), True, pairs=True) else ZSET_ZIPLIST


def _check_hash_ziplist(r: RdbReader, t: int, deep: bool) -> tuple[int, str] | None:
    return None if ziplist_valid(_blob(r), True, pairs=True) else HASH_ZIPLIST


def _check_zset_listpack(r: RdbReader, t: int, deep: bool) -> tuple[int, str] | None:
    return None if lp_valid(_blob(r), deep, pairs=True) else ZSET_LISTPACK


def _check_hash_listpack(r: RdbReader, t: int, deep: bool) -> tuple[int, str] | None:
    return None if lp_valid(_blob(r), deep, pairs=True) else HASH_LISTPACK


def _check_quicklist(r: RdbReader, t: int, deep: bool) -> tuple[int, str] | None:
    n, _ = r.length()
    for _ in range(n):
        if t == 18:
            container, _ = r.length()
            if container not in (1, 2):  # PLAIN, PACKED
                return QUICKLIST
            blob = _blob(r)
            if not blob:
                return EMPTY_NODE
            if container == 1:
                continue  # a plain node: any bytes
            if not lp_valid(blob, deep):
                return LISTPACK
        else:
            blob = _blob(r)
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
        lp = _blob(r)
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
