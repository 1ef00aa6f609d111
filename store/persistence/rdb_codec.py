"""Redis's RDB v10 format (helper R's module; see __init__.py): `RdbEncoder` turns values into
the bytes redis-server 7.0 writes, `RdbLoader` reads a whole file (ours or redis-server's,
versions 1 to 10) back into our value types.

Encodings written are the ones Redis 7.0 itself writes for the same value, so OBJECT
ENCODING survives a save and a load on either server: a compact hash or sorted set as a
listpack (types 16, 17), an integer set as an intset (11), every list as a quicklist of
listpacks (18), big aggregates element by element (2 set, 4 hash, 5 zset), streams with
their consumer groups as type 19. The listpack, intset, ziplist and zipmap blobs are
built and parsed here, plainly; rdb.py has the string, length, LZF and CRC64 primitives.

Loading re-derives each value's encoding from the keyspace's EncodingLimits as Redis 7.0's
rdbLoadObject does, differently for a compact form and an element-by-element one (checked
against redis-server):

- hash, listpack form: stays a listpack unless it has more than hash-max-listpack-entries
  fields (long values are not checked); hashtable form: a listpack if it has at most that
  many fields and no field or value is longer than hash-max-listpack-value.
- set, intset form: stays an intset unless it has more than set-max-intset-entries
  members; hashtable form: an intset if it has at most that many, all integers.
- sorted set, listpack form: stays a listpack unless it has more than
  zset-max-listpack-entries members; skiplist form: a listpack if it has at most that
  many and no member is longer than zset-max-listpack-value.
- list: always a quicklist.

It skips empty aggregates as Redis does (counted, the first 10 keys named, for the load's
log lines), and reports any corruption as RdbError naming the byte offset, never as
another exception and never with a half-built value. Given Redis's integrity checks
(`integrity`: payload_check.check_payload), a value the codec refuses is checked as
rdbLoadObject checks it, and under `deep` (sanitize-dump-payload yes) every aggregate is:
a failed check is RdbCorrupt, with rdb.c's line and message, which ends the start-up as
rdbReportCorruptRDB does. The deep walk costs a copy and a walk of each aggregate's
bytes, only with sanitize-dump-payload yes.

DUMP and RESTORE use the same codec for one value without a key (`RdbEncoder.value`,
`load_value`; rdb.py adds and checks the payload's footer), so payloads move both ways
between this server and redis-server, and an empty aggregate is 'Bad data format' there.

How the loader is fast (start-up time is bounded by it): one loop over the records with
the offset in a local; a string record (most keys) is read inline, key and value, with no
call; any other type goes to its reader (`_readers`, one dict look-up). A blob's length,
a run of short strings (a set's members) and each listpack entry take a few Python steps
each: a 6-bit string entry is four. Values are built without their __init__ (Hash, Set,
ZSet: the reader sets their fields) and a small sorted set's SortedList is laid out from
its sorted pairs (types/zset.py sorted_list). The readers of small aggregates also compute
their memory charge from the list they built the value from (the batches' `charges`), so
the keyspace need not walk the values again. Bounds: a string sliced past the end of the
data comes out short, which the batch's check (or the next record's first byte) finds;
offsets named are then the end of the data, else the record's (or the blob's) start.
Measured (2-core box shared with other work, CPU time, bench/persistence.py's 1M keys:
70% strings, 30% hashes, lists, sets and sorted sets of 5 elements): decode 3.4 -> 2.5 s,
about 0.7 us a string key and 4-10 us a small aggregate (lp_decode of 10 entries ~2 us,
a sorted set's sort and SortedList ~2 us); the whole load, inserted and charged, 6.3 ->
4.2 s, where redis-server takes 1.0 s.

Lazy loading (`lazy`, the start-up load into an empty keyspace): as Redis keeps them, a
small hash, sorted set, single-node list (types 16, 17, 18) or intset (11) whose blob
passes a header check (listpack: total bytes, a known element count, the end byte;
intset: width, count and size) and whose count keeps it compact under the keyspace's
limits stays a types/packed.py `Packed` (type byte, uncompressed blob, an estimated
charge), decoded by `unpack` when first used. Only when the file's CRC64 will be checked
at its end (`pack`: checksum on, version >= 5, a non-zero checksum where the footer
stands), so a corrupt blob still fails the load, with the checksum's error rather than
the blob's offset; a file without a checksum, and any blob failing the header check,
decodes now as before. `unpack` decodes with unlimited limits, so the value comes out in
the encoding the eager load would have given it even if the limits changed since. The
encoder writes a Packed value back as it was read. Measured as above: decode 2.7 -> 1.3 s
CPU (250k of the 300k aggregates packed; sets of strings are RDB hashtables in 7.0), the
whole in-process load 4.0 -> 2.4 s.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable, Iterator
from math import isnan
from typing import Any

from ..memory.sizes import (
    CONTAINER,
    DICT_ENTRY,
    LIST_SLOT,
    SAMPLES,
    SET_ENTRY,
    ZSET_ELEMENT,
    elements_size,
)
from ..rdb import RDB_VERSION, RdbError, crc64, lzf_decompress, rdb_len, rdb_string
from ..resp import format_double, string2ll
from ..types import EncodingLimits
from ..types.hash import Hash
from ..types.list import List
from ..types.packed import Packed
from ..types.set import Set, all_integers, intset_limit
from ..types.stream import (
    ENCODED,
    NACK,
    SEQ_MASK,
    Consumer,
    Group,
    Stream,
    decode_fields,
)
from ..types.zset import LISTPACK_INT_MAX, ZSet
from ..version import VERSION

__all__ = ['RdbCorrupt', 'RdbEncoder', 'RdbError', 'RdbLoader']


class RdbCorrupt(RdbError):
    """A value of the file that fails Redis's integrity checks (`RdbLoader.integrity`):
    `found` is the check's (rdb.c line, message), with the key and type being read and
    the record's offset, for rdbReportCorruptRDB's lines."""

    def __init__(self, found: tuple[int, str], key: bytes, t: int, offset: int) -> None:
        super().__init__(f'{found[1]} (RDB offset {offset})')
        self.found = found
        self.key = key
        self.type = t
        self.offset = offset


# -- opcodes and value types (rdb.h) ---------------------------------------------------------

OP_FUNCTION2 = 245
OP_FUNCTION_PRE_GA = 246
OP_MODULE_AUX = 247
OP_IDLE = 248
OP_FREQ = 249
OP_AUX = 250
OP_RESIZEDB = 251
OP_EXPIRETIME_MS = 252
OP_EXPIRETIME = 253
OP_SELECTDB = 254
OP_EOF = 255

T_STRING = 0
T_LIST = 1
T_SET = 2
T_ZSET = 3
T_HASH = 4
T_ZSET_2 = 5
T_MODULE = 6
T_MODULE_2 = 7
T_HASH_ZIPMAP = 9
T_LIST_ZIPLIST = 10
T_SET_INTSET = 11
T_ZSET_ZIPLIST = 12
T_HASH_ZIPLIST = 13
T_LIST_QUICKLIST = 14
T_STREAM_LISTPACKS = 15
T_HASH_LISTPACK = 16
T_ZSET_LISTPACK = 17
T_LIST_QUICKLIST_2 = 18
T_STREAM_LISTPACKS_2 = 19

QUICKLIST_PLAIN = 1  # quicklist node containers
QUICKLIST_PACKED = 2
QUICKLIST_NODE_BYTES = 8192  # list-max-listpack-size -2, the default
STREAM_DELETED = 1  # stream entry flags
STREAM_SAMEFIELDS = 2
U64 = (1 << 64) - 1
LOAD_BATCH = 1024  # keys per ('keys', ...) batch of RdbLoader.batches

_I64 = struct.Struct('<q')
_U32 = struct.Struct('<I')
_F64 = struct.Struct('<d')
_LP_HEADER = struct.Struct('<IH')
_INTSET_HEADER = struct.Struct('<II')
_NUMERIC_START = frozenset(b'-0123456789')
_NUMBER_STARTS = frozenset(bytes((c,)) for c in b'-0123456789')  # a number's first byte
_DIGITS = [b'%d' % i for i in range(128)]  # a listpack's 7-bit uints as digits


# -- listpack (listpack.c) ----------------------------------------------------------------


def _backlen(n: int) -> bytes:
    """lpEncodeBacklen: an entry's length, written after it so it can be walked backwards."""
    if n <= 127:
        return bytes((n,))
    if n < 16383:
        return bytes((n >> 7, (n & 127) | 128))
    if n < 2097151:
        return bytes((n >> 14, ((n >> 7) & 127) | 128, (n & 127) | 128))
    if n < 268435455:
        return bytes((n >> 21, ((n >> 14) & 127) | 128, ((n >> 7) & 127) | 128, (n & 127) | 128))
    return bytes(
        (
            n >> 28,
            ((n >> 21) & 127) | 128,
            ((n >> 14) & 127) | 128,
            ((n >> 7) & 127) | 128,
            (n & 127) | 128,
        )
    )


def _backlen_size(n: int) -> int:
    return 1 if n <= 127 else 2 if n < 16383 else 3 if n < 2097151 else 4 if n < 268435455 else 5


_LP_SMALL = [bytes((v, 1)) for v in range(128)]


def lp_int(v: int) -> bytes:
    """An integer entry in the smallest encoding that holds it, with its backlen."""
    if 0 <= v <= 127:
        return _LP_SMALL[v]
    if -4096 <= v <= 4095:
        u = v & 0x1FFF
        return bytes((0xC0 | (u >> 8), u & 0xFF, 2))
    if -32768 <= v <= 32767:
        return b'\xf1' + v.to_bytes(2, 'little', signed=True) + b'\x03'
    if -8388608 <= v <= 8388607:
        return b'\xf2' + v.to_bytes(3, 'little', signed=True) + b'\x04'
    if -2147483648 <= v <= 2147483647:
        return b'\xf3' + v.to_bytes(4, 'little', signed=True) + b'\x05'
    return b'\xf4' + v.to_bytes(8, 'little', signed=True) + b'\x09'


def lp_str(s: bytes) -> bytes:
    """A string entry (6, 12 or 32-bit length), with its backlen."""
    n = len(s)
    if n < 64:
        return bytes((0x80 | n,)) + s + bytes((n + 1,))
    if n < 4096:
        return bytes((0xE0 | (n >> 8), n & 0xFF)) + s + _backlen(n + 2)
    return b'\xf0' + n.to_bytes(4, 'little') + s + _backlen(n + 5)


_LP_STR6 = [bytes((0x80 | n,)) for n in range(64)]
_LP_BACK6 = [bytes((n + 1,)) for n in range(64)]


def lp_elem(s: bytes) -> bytes:
    """lpAppend of a string: an integer entry when it is a canonical 64-bit integer
    (lpStringToInt64), else a string entry."""
    n = len(s)
    if n and n <= 20 and s[0] in _NUMERIC_START:
        v = string2ll(s)
        if v is not None:
            return lp_int(v)
    if n < 64:
        return _LP_STR6[n] + s + _LP_BACK6[n]
    return lp_str(s)


def lp_score(score: float) -> bytes:
    """A sorted-set score in a listpack, as zzlInsertAt stores it: an integral score of at
    most 2**62 in magnitude as an integer (double2ll; -0.0 becomes 0), others as %.17g."""
    score = float(score)
    if score.is_integer() and -LISTPACK_INT_MAX <= score <= LISTPACK_INT_MAX:
        return lp_int(int(score))
    return lp_str(format_double(score))


def listpack(entries: list[bytes]) -> bytes:
    """A listpack of already encoded entries: total bytes, count (65535: unknown), the
    entries, the 0xFF terminator."""
    body = b''.join(entries)
    n = len(entries)
    return _LP_HEADER.pack(len(body) + 7, n if n < 65535 else 65535) + body + b'\xff'


class _Bad(Exception):
    """A malformed blob (listpack, ziplist, intset, zipmap): the loader names the offset."""


def lp_decode(b: bytes, as_bytes: bool = False) -> list[Any]:
    """The entries of a listpack: ints for integer entries (their digits with `as_bytes`,
    for a hash or list, so no second pass converts them), bytes for strings. Checks the
    header, every entry's bounds, the count and the terminator."""
    n = len(b)
    if n < 7 or _U32.unpack_from(b)[0] != n or b[-1] != 0xFF:
        raise _Bad('listpack header')
    count = b[4] | b[5] << 8
    out: list[Any] = []
    append = out.append
    p, end = 6, n - 1
    while p < end:
        c = b[p]
        if (c & 0xC0) == 0x80:  # a 6-bit string, most entries: tested first, 4 steps
            q = p + c - 127  # its end: p + 1 + (c & 0x3F)
            append(b[p + 1 : q])
            p = q + 1  # and its 1-byte backlen
        elif c < 0x80:
            append(_DIGITS[c] if as_bytes else c)
            p += 2
        elif c < 0xE0:  # a 13-bit int: 0xC0-0xCF are 0..4095, 0xD0-0xDF -4096..-1
            v = (c << 8 | b[p + 1]) - (0xC000 if c < 0xD0 else 0xE000)
            append(b'%d' % v if as_bytes else v)
            p += 3
        elif c < 0xF0:
            ln = ((c & 0x0F) << 8) | b[p + 1]
            append(b[p + 2 : p + 2 + ln])
            p += 2 + ln + _backlen_size(ln + 2)
        elif c == 0xF0:
            ln = _U32.unpack_from(b, p + 1)[0]
            append(b[p + 5 : p + 5 + ln])
            p += 5 + ln + _backlen_size(ln + 5)
        elif c == 0xF1:
            v = int.from_bytes(b[p + 1 : p + 3], 'little', signed=True)
            append(b'%d' % v if as_bytes else v)
            p += 4
        elif c == 0xF2:
            v = int.from_bytes(b[p + 1 : p + 4], 'little', signed=True)
            append(b'%d' % v if as_bytes else v)
            p += 5
        elif c == 0xF3:
            v = int.from_bytes(b[p + 1 : p + 5], 'little', signed=True)
            append(b'%d' % v if as_bytes else v)
            p += 6
        elif c == 0xF4:
            v = int.from_bytes(b[p + 1 : p + 9], 'little', signed=True)
            append(b'%d' % v if as_bytes else v)
            p += 10
        else:
            raise _Bad('listpack entry encoding')
    if p != end or (count != 65535 and count != len(out)):
        raise _Bad('listpack entries')
    return out


def _lp_decode_bytes(b: bytes) -> list[Any]:
    return lp_decode(b, True)


def _lp_count(b: bytes) -> int:
    """A listpack's element count when its header and end byte are sound (total bytes,
    a count that is not the unknown 65535, the 0xFF terminator), else -1: the cheap check
    a blob passes before it is left packed (its entries are checked when decoded)."""
    if len(b) < 7 or b[-1] != 0xFF:
        return -1
    total, n = _LP_HEADER.unpack_from(b)
    if total != len(b) or n == 65535:
        return -1
    return n


def _as_bytes(items: list[Any]) -> list[bytes]:
    return [x if type(x) is bytes else b'%d' % x for x in items]


# -- intset (intset.c), ziplist (ziplist.c), zipmap (zipmap.c) ------------------------------

_INTSET_FORMAT = {2: 'h', 4: 'i', 8: 'q'}


def intset_encode(values: list[int]) -> bytes:
    """An intset of distinct ints: sorted, in the narrowest width holding them all."""
    values = sorted(values)
    lo, hi = values[0], values[-1]
    if lo >= -32768 and hi <= 32767:
        width = 2
    elif lo >= -2147483648 and hi <= 2147483647:
        width = 4
    else:
        width = 8
    n = len(values)
    return struct.pack('<II%d%s' % (n, _INTSET_FORMAT[width]), width, n, *values)


def intset_decode(b: bytes) -> tuple[int, ...]:
    if len(b) < 8:
        raise _Bad('intset header')
    width, n = struct.unpack_from('<II', b)
    fmt = _INTSET_FORMAT.get(width)
    if fmt is None or len(b) != 8 + width * n:
        raise _Bad('intset size')
    values = struct.unpack_from('<%d%s' % (n, fmt), b, 8)
    for i in range(1, n):
        if values[i - 1] >= values[i]:
            raise _Bad('intset order')
    return values


def ziplist_decode(b: bytes) -> list[Any]:
    """The entries of a ziplist (RDB versions before 10): ints and bytes."""
    n = len(b)
    if n < 11 or _U32.unpack_from(b)[0] != n or b[-1] != 0xFF:
        raise _Bad('ziplist header')
    count = b[8] | b[9] << 8
    out: list[Any] = []
    append = out.append
    p, end = 10, n - 1
    while p < end:
        p += 1 if b[p] < 254 else 5  # prevlen
        c = b[p]
        kind = c >> 6
        if kind == 0:
            append(b[p + 1 : p + 1 + (c & 0x3F)])
            p += 1 + (c & 0x3F)
        elif kind == 1:
            ln = ((c & 0x3F) << 8) | b[p + 1]
            append(b[p + 2 : p + 2 + ln])
            p += 2 + ln
        elif c == 0x80:
            ln = int.from_bytes(b[p + 1 : p + 5], 'big')
            append(b[p + 5 : p + 5 + ln])
            p += 5 + ln
        elif c == 0xC0:
            append(int.from_bytes(b[p + 1 : p + 3], 'little', signed=True))
            p += 3
        elif c == 0xD0:
            append(int.from_bytes(b[p + 1 : p + 5], 'little', signed=True))
            p += 5
        elif c == 0xE0:
            append(int.from_bytes(b[p + 1 : p + 9], 'little', signed=True))
            p += 9
        elif c == 0xF0:
            append(int.from_bytes(b[p + 1 : p + 4], 'little', signed=True))
            p += 4
        elif c == 0xFE:
            append(int.from_bytes(b[p + 1 : p + 2], 'little', signed=True))
            p += 2
        elif 0xF1 <= c <= 0xFD:
            append((c & 0x0F) - 1)
            p += 1
        else:
            raise _Bad('ziplist entry encoding')
    if p != end or (count != 65535 and count != len(out)):
        raise _Bad('ziplist entries')
    return out


def zipmap_decode(b: bytes) -> list[bytes]:
    """A zipmap's fields and values, flat (Redis 2.4 hashes, RDB type 9)."""

    def length(p: int) -> tuple[int, int]:
        c = b[p]
        if c < 254:
            return c, p + 1
        if c == 254:
            return _U32.unpack_from(b, p + 1)[0], p + 5
        raise _Bad('zipmap length')

    out = []
    p = 1
    while b[p] != 255:
        n, p = length(p)
        out.append(b[p : p + n])
        p += n
        n, p = length(p)
        free = b[p]
        out.append(b[p + 1 : p + 1 + n])
        p += 1 + n + free
        if p >= len(b):
            raise _Bad('zipmap bounds')
    if p != len(b) - 1:
        raise _Bad('zipmap end')
    return out


# -- the encoder ----------------------------------------------------------------------------


def _used_memory() -> int:
    """Resident memory for the used-mem aux field (informational only)."""
    try:
        with open('/proc/self/statm', 'rb') as f:
            return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
    except (OSError, ValueError, IndexError):
        return 0


class RdbEncoder:
    """The snapshot's encoder for RDB files (protocol in snapshot.py). Each method returns
    bytes; the snapshot writes them in file order and keeps the CRC64 of all of it."""

    def __init__(
        self, compress: bool = True, checksum: bool = True, aux: dict[bytes, bytes] | None = None
    ) -> None:
        self.compress = compress
        self.checksum = checksum
        self.aux = dict(aux or {})
        self._by_type: dict[type, Callable[[Any], tuple[bytes, bytes]]] = {
            Hash: self._hash,
            List: self._list,
            Set: self._set,
            ZSet: self._zset,
            Stream: self._stream,
        }

    def header(self) -> bytes:
        """Magic, version and the aux fields rdbSaveInfoAuxFields writes (without the
        replication ones); `aux` adds or replaces fields."""
        fields = {
            b'redis-ver': VERSION.encode(),
            b'redis-bits': b'64',
            b'ctime': b'%d' % int(time.time()),
            b'used-mem': b'%d' % _used_memory(),
            b'aof-base': b'0',
        }
        fields.update(self.aux)
        c = self.compress
        return b'REDIS%04d' % RDB_VERSION + b''.join(
            b'\xfa' + rdb_string(k, c) + rdb_string(v, c) for k, v in fields.items()
        )

    def functions(self, codes: list[bytes]) -> bytes:
        c = self.compress
        return b''.join(b'\xf5' + rdb_string(code, c) for code in codes)

    def select_db(self, db: int, size: int, expires: int) -> bytes:
        return b'\xfe' + rdb_len(db) + b'\xfb' + rdb_len(size) + rdb_len(expires)

    def key(self, key: bytes, value: Any, deadline: int | None) -> bytes:
        """One key: [EXPIRETIME_MS deadline] type key value."""
        c = self.compress
        if type(value) is bytes:
            body = b'\x00' + rdb_string(key, c) + rdb_string(value, c)
        else:
            t, encoded = self.encode(value)
            body = t + rdb_string(key, c) + encoded
        if deadline is None:
            return body
        return b'\xfc' + _I64.pack(deadline) + body

    def value(self, value: Any) -> bytes:
        """rdbSaveObjectType + rdbSaveObject: a value without its key (DUMP's payload)."""
        t, encoded = self.encode(value)
        return t + encoded

    def encode(self, value: Any) -> tuple[bytes, bytes]:
        """The value's RDB type byte and its encoding."""
        t = type(value)
        if t is bytes or t is bytearray:
            return b'\x00', rdb_string(bytes(value), self.compress)
        if t is Packed:  # written back as loaded: a valid RDB encoding
            node = b'\x01\x02' if value.type == T_LIST_QUICKLIST_2 else b''
            return bytes((value.type,)), node + rdb_string(value.blob, self.compress)
        encode = self._by_type.get(t)
        if encode is None:
            raise TypeError(f'no RDB encoding for {t.__name__}')
        return encode(value)

    def footer(self, crc: int) -> bytes:
        """EOF and the checksum. `crc` is the CRC64 of every byte written before the footer;
        the EOF opcode is part of what the checksum covers, so it is folded in here."""
        if not self.checksum:
            return b'\xff' + bytes(8)
        return b'\xff' + crc64(b'\xff', crc).to_bytes(8, 'little')

    # -- values --------------------------------------------------------------------------

    def _hash(self, h: Hash) -> tuple[bytes, bytes]:
        c = self.compress
        if h.listpack:
            parts = []
            for field, value in h.items():
                parts.append(lp_elem(field))
                parts.append(lp_elem(value))
            return b'\x10', rdb_string(listpack(parts), c)
        out = [rdb_len(len(h))]
        for field, value in h.items():
            out.append(rdb_string(field, c))
            out.append(rdb_string(value, c))
        return b'\x04', b''.join(out)

    def _list(self, items: List) -> tuple[bytes, bytes]:
        """A quicklist of listpack nodes of at most 8 KB (list-max-listpack-size -2)."""
        c = self.compress
        nodes = []
        node: list[bytes] = []
        size = 7
        for item in items:
            entry = lp_elem(item)
            if node and size + len(entry) > QUICKLIST_NODE_BYTES:
                nodes.append(b'\x02' + rdb_string(listpack(node), c))
                node, size = [], 7
            node.append(entry)
            size += len(entry)
        if node:
            nodes.append(b'\x02' + rdb_string(listpack(node), c))
        return b'\x12', rdb_len(len(nodes)) + b''.join(nodes)

    def _set(self, s: Set) -> tuple[bytes, bytes]:
        c = self.compress
        if s.intset and s:
            return b'\x0b', rdb_string(intset_encode([int(m) for m in s]), c)
        return b'\x02', b''.join([rdb_len(len(s))] + [rdb_string(m, c) for m in s])

    def _zset(self, z: ZSet) -> tuple[bytes, bytes]:
        c = self.compress
        if z.listpack:
            parts = []
            for score, member in z.order:
                parts.append(lp_elem(member))
                parts.append(lp_score(score))
            return b'\x11', rdb_string(listpack(parts), c)
        # zset_2, from the highest element down, as rdbSaveObject walks the skiplist
        out = [rdb_len(len(z))]
        pack = _F64.pack
        for score, member in reversed(z.order):
            out.append(rdb_string(member, c))
            out.append(pack(score))
        return b'\x05', b''.join(out)

    def _stream(self, s: Stream) -> tuple[bytes, bytes]:
        """RDB_TYPE_STREAM_LISTPACKS_2: the entries in the stream's nodes (as
        types/stream.py keeps them), the metadata, then the consumer groups."""
        c = self.compress
        nodes = _stream_nodes(s)
        out = [rdb_len(len(nodes))]
        for master, blob in nodes:
            out.append(rdb_string(master.to_bytes(16, 'big'), c))
            out.append(rdb_string(blob, c))
        for n in (
            s.length,
            s.last_id >> 64,
            s.last_id & SEQ_MASK,
            s.first_id >> 64,
            s.first_id & SEQ_MASK,
            s.max_deleted >> 64,
            s.max_deleted & SEQ_MASK,
            s.entries_added,
            len(s.groups),
        ):
            out.append(rdb_len(n))
        for name in sorted(s.groups):  # rax order
            g = s.groups[name]
            out.append(rdb_string(name, c))
            out.append(rdb_len(g.last_id >> 64))
            out.append(rdb_len(g.last_id & SEQ_MASK))
            out.append(rdb_len(g.entries_read & U64))
            out.append(rdb_len(len(g.pel)))
            for i, nack in g.pel.iter_from(0):
                out.append(i.to_bytes(16, 'big'))
                out.append(_I64.pack(nack.delivery_time))
                out.append(rdb_len(nack.delivery_count))
            out.append(rdb_len(len(g.consumers)))
            for cname in sorted(g.consumers):
                consumer = g.consumers[cname]
                out.append(rdb_string(cname, c))
                out.append(_I64.pack(consumer.seen_time))
                out.append(rdb_len(len(consumer.pel)))
                out.extend(i.to_bytes(16, 'big') for i in consumer.pel.ids)
        return b'\x13', b''.join(out)


def _stream_nodes(s: Stream) -> list[tuple[int, bytes]]:
    """(master id, listpack) for each node holding a live entry. A node's entries before
    `start` (trimmed) and tombstones are written as deleted entries, as Redis keeps them in
    the node until it empties; a tombstone's fields are gone, so it is written with none."""
    ids, vals, enc = s.ids, s.vals, s.enc
    start = s.start
    if not s.length:
        return []
    nodes = []
    for a, b in s.node_spans():
        live = [p for p in range(max(a, start), b) if vals[p] is not None]
        if not live:
            continue
        first = vals[live[0]]
        if first is ENCODED:
            first = decode_fields(enc[live[0]])
        mfields = first[0::2]
        nf = len(mfields)
        master = ids[a]
        mms, mseq = master >> 64, master & SEQ_MASK
        parts = [lp_int(len(live)), lp_int(b - a - len(live)), lp_int(nf)]
        parts += [lp_elem(f) for f in mfields]
        parts.append(lp_int(0))
        for p in range(a, b):
            i = ids[p]
            fields = vals[p]
            deleted = p < start or fields is None
            if fields is ENCODED:
                fields = decode_fields(enc[p])
            elif fields is None:
                fields = ()
            flags = STREAM_DELETED if deleted else 0
            n = len(fields) // 2
            parts.append(b'')  # the flags, set below
            flag_at = len(parts) - 1
            parts.append(lp_int((i >> 64) - mms))
            parts.append(lp_int((i & SEQ_MASK) - mseq))
            if n == nf and tuple(fields[0::2]) == tuple(mfields):
                flags |= STREAM_SAMEFIELDS
                parts += [lp_elem(v) for v in fields[1::2]]
                parts.append(lp_int(n + 3))
            else:
                parts.append(lp_int(n))
                parts += [lp_elem(x) for x in fields]
                parts.append(lp_int(2 * n + 4))
            parts[flag_at] = lp_int(flags)
        nodes.append((master, listpack(parts)))
    return nodes


# -- the loader -----------------------------------------------------------------------------


class RdbLoader:
    """Reads an RDB file held in memory. Iterating yields, in file order:

        ('aux', name, value)
        ('function', code)
        ('db', dbnum)
        ('resize', size, expires)
        ('key', key, value, deadline, lru_idle, lfu_freq)

    `pos` is the offset reached (progress, error messages). After the iteration ends,
    `version` is the file's RDB version and `checksum_disabled` says the file carried no
    checksum (Redis logs that it could not check one)."""

    def __init__(
        self,
        data: bytes | memoryview,
        limits: EncodingLimits,
        checksum: bool = True,
        lazy: bool = False,
    ) -> None:
        self.data = data if type(data) is bytes else bytes(data)
        self.end = len(self.data)
        self.limits = limits
        self.checksum = checksum
        self.lazy = lazy  # small aggregates may stay packed (types/packed.py)
        self.pack = False  # they do in this file: lazy, and its checksum is checked
        self.packed = 0  # values left packed
        self.pos = 0
        self.version = 0
        self.checksum_disabled = False
        self.batch = LOAD_BATCH  # keys per batch (batches())
        self.charge = 0  # the last aggregate's charge, where its reader computed it
        # Redis's integrity checks (payload_check.check_payload, given by the caller:
        # payload, deep -> (line, message) or None), run on a value the codec refuses
        # and, with `deep` (sanitize-dump-payload yes), on every aggregate read
        self.integrity: Callable[[bytes, bool], tuple[int, str] | None] | None = None
        self.deep = False
        self.empty_keys = 0  # empty aggregates skipped
        self.empty_names: list[bytes] = []  # the first 10 of them (Redis logs those)
        # rdbLoadObject's cases: value type -> its reader (each takes the type)
        self._readers: dict[int, Callable[[int], Any]] = {
            T_HASH_LISTPACK: self._hash_listpack,
            T_ZSET_LISTPACK: self._zset_listpack,
            T_LIST_QUICKLIST_2: self._quicklist,
            T_SET_INTSET: self._intset,
            T_SET: self._set,
            T_HASH: self._hash,
            T_LIST: self._plain_list,
            T_ZSET_2: self._zset,
            T_ZSET: self._zset,
            T_HASH_ZIPLIST: self._hash_ziplist,
            T_HASH_ZIPMAP: self._hash_zipmap,
            T_ZSET_ZIPLIST: self._zset_listpack,
            T_LIST_QUICKLIST: self._quicklist,
            T_LIST_ZIPLIST: self._list_ziplist,
            T_STREAM_LISTPACKS_2: self._stream,
            T_STREAM_LISTPACKS: self._stream,
        }

    def __iter__(self) -> Iterator[tuple]:
        for rec in self.batches():
            if rec[0] == 'keys':
                keys, values, extras = rec[1], rec[2], rec[3]
                more = {e[0]: e for e in extras}
                for i, key in enumerate(keys):
                    e = more.get(i)
                    if e is None:
                        yield ('key', key, values[i], None, None, None)
                    else:
                        yield ('key', key, values[i], e[1], e[2], e[3])
            else:
                yield rec

    def batches(self) -> Iterator[tuple]:
        """The records with the keys in batches, for a loader that inserts them in bulk:
        ('keys', keys, values, extras, charges) in place of runs of ('key', ...) records,
        with `extras` the (index in keys, deadline, lru_idle, lfu_freq) of the keys that
        had any of those, and `charges` the (index, charge) of each aggregate: its
        memory.sizes charge where the reader computed it from what it built the value
        from, else 0. The other records come as `__iter__` gives them, never inside a
        batch's run (a batch ends before each of them)."""
        try:
            yield from self._records()
        except RdbError:
            raise
        except _Bad as e:
            raise RdbError(f'Bad RDB data at offset {self.pos}: invalid {e}') from None
        except IndexError:
            raise RdbError(f'Short read loading RDB at offset {self.pos}') from None
        except (ValueError, TypeError, struct.error, OverflowError, KeyError, MemoryError) as e:
            raise RdbError(f'Bad RDB data at offset {self.pos}: {e}') from None

    def _fail(self, message: str) -> RdbError:
        return RdbError(f'{message} (RDB offset {self.pos})')

    def _short(self) -> RdbError:
        """A read past the end: data sliced there came out short, found at the batch's end."""
        self.pos = self.end
        return self._fail('Short read loading RDB')

    # -- primitives ----------------------------------------------------------------------

    def _read(self, n: int) -> bytes:
        p = self.pos
        e = p + n
        if e > self.end:
            raise self._fail('Short read loading RDB')
        self.pos = e
        return self.data[p:e]

    def _len(self) -> int:
        """rdbLoadLen of a plain length (an encoded one is an error here)."""
        data, p = self.data, self.pos
        c = data[p]
        kind = c >> 6
        if kind == 0:
            self.pos = p + 1
            return c
        if kind == 1:
            self.pos = p + 2
            return ((c & 0x3F) << 8) | data[p + 1]
        if c == 0x80 or c == 0x81:
            e = p + 5 if c == 0x80 else p + 9
            if e > self.end:  # named at the length's first byte, within the data
                raise self._fail('Short read loading RDB')
            self.pos = e
            return int.from_bytes(data[p + 1 : e], 'big')
        raise self._fail(f'Unknown length encoding {c}')

    def _str(self) -> bytes:
        """rdbGenericLoadStringObject: plain, integer-encoded or LZF-compressed."""
        data, p = self.data, self.pos
        c = data[p]
        if c < 128:  # a 6- or 14-bit length: nearly every string
            if c < 64:
                p += 1
                e = p + c
            else:
                e = p + 2 + (((c & 0x3F) << 8) | data[p + 1])
                p += 2
            if e > self.end:
                raise self._fail('Short read loading RDB string')
            self.pos = e
            return data[p:e]
        if c >= 0xC0:
            enc = c & 0x3F
            if enc <= 2:
                size = 1 << enc
                self.pos = p + 1
                return b'%d' % int.from_bytes(self._read(size), 'little', signed=True)
            if enc == 3:
                self.pos = p + 1
                clen = self._len()
                size = self._len()
                packed = self._read(clen)
                s = lzf_decompress(packed, size)
                if s is None or len(s) != size:
                    raise self._fail('Invalid LZF compressed string')
                return s
            raise self._fail(f'Unknown RDB string encoding type {enc}')
        n = self._len()
        return self._read(n)

    def _strings(self, n: int) -> list[bytes]:
        """`n` strings in a row (a set's members, a hash's fields and values), the short
        ones read here without a call each."""
        data, p = self.data, self.pos
        out: list[bytes] = []
        append = out.append
        for _ in range(n):
            c = data[p]
            if c < 64:
                e = p + 1 + c
                append(data[p + 1 : e])
                p = e
            else:
                self.pos = p
                append(self._str())
                p = self.pos
        if p > self.end:
            raise self._short()
        self.pos = p
        return out

    def _blob(self, what: str, decode: Any) -> Any:
        """A string holding a compact structure, decoded; a bad one names its offset."""
        at = self.pos
        return self._decoded(what, decode, self._raw(), at)

    def _raw(self) -> bytes:
        """A blob's bytes (the RDB string at pos), uncompressed."""
        data, at = self.data, self.pos
        c = data[at]
        if c < 128:  # a 6- or 14-bit length, read here: 250k blobs in 1M mixed keys
            p = at + 1 if c < 64 else at + 2
            e = p + (c if c < 64 else ((c & 0x3F) << 8) | data[at + 1])
            if e > self.end:
                raise self._fail('Short read loading RDB string')
            self.pos = e
            return data[p:e]
        return self._str()

    def _decoded(self, what: str, decode: Any, blob: bytes, at: int) -> Any:
        try:
            return decode(blob)
        except (_Bad, IndexError, struct.error, ValueError) as e:
            self.pos = at
            raise self._fail(f'{what} integrity check failed ({e})') from None

    # -- records -------------------------------------------------------------------------

    def _records(self) -> Iterator[tuple]:
        data = self.data
        if self.end < 9 or data[:5] != b'REDIS':
            raise self._fail('Wrong signature trying to load DB from file')
        try:
            version = int(data[5:9])
        except ValueError:
            version = -1
        if not 1 <= version <= RDB_VERSION or not data[5:9].isdigit():
            raise self._fail(f"Can't handle RDB format version {data[5:9].decode('latin-1')}")
        self.version = version
        end = self.end
        # Values stay packed only when the CRC64 at the file's end will be checked before
        # the load completes (so a corrupt blob is still refused at load): a file whose
        # checksum is 0 (rdbchecksum no) or that is not checked decodes everything now.
        self.pack = (
            self.lazy
            and self.checksum
            and version >= 5
            and end >= 18
            and data[end - 9] == OP_EOF
            and data[end - 8 :] != bytes(8)
        )
        deadline = lru_idle = lfu_freq = None
        extra = False  # an EXPIRETIME, IDLE or FREQ opcode came before this key
        keys: list[bytes] = []
        values: list[Any] = []
        extras: list[tuple] = []
        charges: list[tuple[int, int]] = []
        add_key, add_value, add_charge = keys.append, values.append, charges.append
        read_str, read_len, readers = self._str, self._len, self._readers
        left = batch = self.batch  # keys until this batch is handed over
        # `p` is the offset of the record being read, a local: self.pos is set from it
        # before a method reads and read back after, and on an error (below). A string
        # sliced past the end of the data comes out short without an error: the batch
        # is checked before it is handed over (p > end), and the next record's first
        # byte is past the end then too.
        p = 9
        try:
            while True:
                op = data[p]
                if op == T_STRING:
                    # most records: the key and value read here without a call (one
                    # Python step per key is the loader's floor)
                    c = data[p + 1]
                    if c < 64:
                        e = p + 2 + c
                        key = data[p + 2 : e]
                    else:
                        self.pos = p + 1
                        key = read_str()
                        e = self.pos
                    c = data[e]
                    if c < 64:
                        p = e + 1 + c
                        value = data[e + 1 : p]
                    elif c < 128:
                        p = e + 2 + (((c & 0x3F) << 8) | data[e + 1])
                        value = data[e + 2 : p]
                    else:
                        self.pos = e
                        value = read_str()
                        p = self.pos
                elif op < OP_FUNCTION2:
                    c = data[p + 1]
                    if c < 64:
                        e = p + 2 + c
                        key = data[p + 2 : e]
                        self.pos = e
                    else:
                        self.pos = p + 1
                        key = read_str()
                    read = readers.get(op)
                    if read is None:
                        self.pos = p
                        if op in (T_MODULE, T_MODULE_2):
                            raise self._fail("The RDB file contains module data I can't load")
                        raise self._fail(f'Unknown RDB encoding type {op}')
                    self.charge = 0
                    vstart = self.pos
                    try:
                        value = read(op)
                    except Exception:
                        if self.integrity is not None:
                            self._check(op, key, vstart, None, p)
                        raise
                    if self.deep and self.integrity is not None:
                        self._check(op, key, vstart, self.pos, p)
                    p = self.pos
                    if value is None:  # an empty aggregate, skipped as Redis does
                        if self.empty_keys < 10:
                            self.empty_names.append(key)
                        self.empty_keys += 1
                        deadline = lru_idle = lfu_freq = None
                        extra = False
                        continue
                    add_charge((len(keys), self.charge))
                elif op == OP_EXPIRETIME_MS and p + 9 <= end:  # a TTL: a tenth of keys
                    deadline = _I64.unpack_from(data, p + 1)[0]
                    extra = True
                    p += 9
                    continue
                else:
                    self.pos = p + 1
                    if op == OP_EXPIRETIME_MS:  # cut short
                        deadline = _I64.unpack(self._read(8))[0]
                        extra = True
                    elif op == OP_EXPIRETIME:
                        deadline = int.from_bytes(self._read(4), 'little', signed=True) * 1000
                        extra = True
                    elif op == OP_FREQ:
                        lfu_freq = self._read(1)[0]
                        extra = True
                    elif op == OP_IDLE:
                        lru_idle = read_len()
                        extra = True
                    else:
                        if keys:  # the batch ends before any other record
                            if p > end:
                                raise self._short()
                            yield ('keys', keys, values, extras, charges)
                            keys, values, extras, charges = [], [], [], []
                            add_key, add_value = keys.append, values.append
                            add_charge = charges.append
                            left = batch
                        if op == OP_EOF:
                            break
                        if op == OP_SELECTDB:
                            yield ('db', read_len())
                        elif op == OP_RESIZEDB:
                            size = read_len()
                            yield ('resize', size, read_len())
                        elif op == OP_AUX:
                            name = read_str()
                            yield ('aux', name, read_str())
                        elif op == OP_MODULE_AUX:
                            raise self._fail("The RDB file contains AUX module data I can't load")
                        elif op == OP_FUNCTION_PRE_GA:
                            raise self._fail('Pre-release function format not supported.')
                        elif op == OP_FUNCTION2:
                            yield ('function', read_str())
                    p = self.pos
                    continue
                add_key(key)
                add_value(value)
                if extra:
                    extras.append((len(keys) - 1, deadline, lru_idle, lfu_freq))
                    deadline = lru_idle = lfu_freq = None
                    extra = False
                left -= 1
                if not left:
                    if p > end:
                        raise self._short()
                    yield ('keys', keys, values, extras, charges)
                    keys, values, extras, charges = [], [], [], []
                    add_key, add_value = keys.append, values.append
                    add_charge = charges.append
                    left = batch
        except Exception:
            # the offset of the record that failed, unless a method named a later one
            self.pos = min(max(self.pos, p), end)
            raise
        eof_end = self.pos
        if version >= 5:
            stored = int.from_bytes(self._read(8), 'little')
            if stored == 0:
                self.checksum_disabled = True
                if self.packed:  # data after the EOF's checksum made it look checked
                    raise self._fail('Packed values in a file without a checksum')
            elif self.checksum:
                expected = crc64(memoryview(data)[:eof_end])
                if expected != stored:
                    raise self._fail(
                        f'Wrong RDB checksum expected: ({expected:x}) but got ({stored:x})'
                    )

    def _check(self, t: int, key: bytes, start: int, end: int | None, at: int) -> None:
        """Redis's integrity checks on the value at data[start:end] (to the end of the
        data: it is cut there by its own lengths) of type `t`: RdbCorrupt if one fails."""
        assert self.integrity is not None
        payload = bytes((t,)) + self.data[start : self.end if end is None else end]
        found = self.integrity(payload, self.deep)
        if found is not None and found[1]:  # (an empty quicklist node has no message)
            self.pos = at
            raise RdbCorrupt(found, key, t, at)

    def value(self) -> Any:
        """rdbLoadObjectType + rdbLoadObject at `pos`: one value without a key (a DUMP
        payload's), or None for an empty aggregate; raises as the readers do."""
        t = self._read(1)[0]
        if t == T_STRING:
            return self._str()
        read = self._readers.get(t)
        if read is None:
            raise self._fail(f'Unknown RDB encoding type {t}')
        return read(t)

    # -- values (rdbLoadObject): each reader returns the value, or None for an empty
    # aggregate (skipped). The encodings Redis 7.0 writes for small values come first.

    def _hash_listpack(self, t: int) -> Hash | Packed | None:
        at = self.pos
        blob = self._raw()
        if self.pack:
            n = _lp_count(blob)
            if 0 < n <= 2 * self.limits.hash_entries and not n & 1:
                self.packed += 1
                self.charge = c = CONTAINER + len(blob) + (38 + DICT_ENTRY // 2) * n
                return Packed(t, blob, c)
        flat = self._decoded('Hash', _lp_decode_bytes, blob, at)
        h = self._compact_hash(flat, False)
        if h is not None and len(h) <= SAMPLES:
            self.charge = elements_size(flat, len(h), DICT_ENTRY)
        return h

    def _zset_listpack(self, t: int) -> ZSet | Packed | None:
        """A listpack (or, before RDB 10, a ziplist) of member, score, member, ..."""
        at = self.pos
        blob = self._raw()
        if self.pack and t == T_ZSET_LISTPACK:
            n = _lp_count(blob)
            if 0 < n <= 2 * self.limits.zset_entries and not n & 1:
                self.packed += 1
                self.charge = c = CONTAINER + len(blob) // 2 + (20 + ZSET_ELEMENT // 2) * n
                return Packed(t, blob, c)
        decode = lp_decode if t == T_ZSET_LISTPACK else ziplist_decode
        return self._zset_items(self._decoded('Zset', decode, blob, at))

    def _zset_items(self, items: list[Any]) -> ZSet | None:
        n = len(items)
        if n & 1:
            raise self._fail('Zset listpack with an odd number of entries')
        if not n:
            return None
        members = _as_bytes(items[0::2])
        scores = list(map(float, items[1::2]))  # integral scores are int entries
        z = self._build_zset(members, scores, n <= 2 * self.limits.zset_entries)
        if n <= 2 * SAMPLES:
            self.charge = elements_size(members, n >> 1, ZSET_ELEMENT)
        return z

    def _quicklist(self, t: int) -> List | Packed | None:
        n = self._len()
        if n == 1 and t == T_LIST_QUICKLIST_2 and self.data[self.pos] == QUICKLIST_PACKED:
            self.pos += 1  # one listpack node, as every short list has
            at = self.pos
            blob = self._raw()
            if self.pack:
                count = _lp_count(blob)
                if count > 0:
                    self.packed += 1
                    self.charge = c = CONTAINER + len(blob) + (38 + LIST_SLOT) * count
                    return Packed(t, blob, c)
            node = self._decoded('Listpack', _lp_decode_bytes, blob, at)
            if len(node) <= SAMPLES:
                self.charge = elements_size(node, len(node), LIST_SLOT)
            return List(node) if node else None
        items: list[bytes] = []
        for _ in range(n):
            if t == T_LIST_QUICKLIST_2:
                container = self._len()
                if container == QUICKLIST_PLAIN:
                    items.append(self._str())
                    continue
                if container != QUICKLIST_PACKED:
                    raise self._fail('Quicklist integrity check failed.')
                items += self._blob('Listpack', _lp_decode_bytes)
            else:
                items += _as_bytes(self._blob('Ziplist', ziplist_decode))
        return List(items) if items else None

    def _intset(self, t: int) -> Set | Packed | None:
        at = self.pos
        blob = self._raw()
        if self.pack and len(blob) >= 8:
            width, n = _INTSET_HEADER.unpack_from(blob)
            if (
                width in (2, 4, 8)
                and 0 < n <= intset_limit(self.limits)
                and len(blob) == 8 + width * n
            ):
                self.packed += 1
                self.charge = c = CONTAINER + (48 + SET_ENTRY) * n
                return Packed(t, blob, c)
        return self._intset_values(self._decoded('Intset', intset_decode, blob, at))

    def _intset_values(self, values: Any) -> Set | None:
        if not values:
            return None
        s = Set.__new__(Set)
        s.update(map(b'%d'.__mod__, values))
        s.pool = None
        s.intset = len(s) <= intset_limit(self.limits)
        return s

    def _set(self, t: int) -> Set | None:
        n = self._len()
        if not n:
            return None
        members = self._strings(n)
        s = Set.__new__(Set)  # Set's __init__ skipped: its fields are set here
        s.update(members)
        s.pool = None
        if len(s) != n:
            raise self._fail('Duplicate set members detected')
        # string2ll raises and catches an exception for each non-number (4 us): a set
        # whose first member cannot start a number is no intset, found without it
        s.intset = (
            n <= intset_limit(self.limits)
            and members[0][:1] in _NUMBER_STARTS
            and all_integers(members)
        )
        if n <= SAMPLES:
            self.charge = elements_size(members, n, SET_ENTRY)
        return s

    def _hash(self, t: int) -> Hash | None:
        n = self._len()
        if not n:
            return None
        return self._compact_hash(self._strings(2 * n), True)

    def _plain_list(self, t: int) -> List | None:
        n = self._len()
        return List(self._strings(n)) if n else None

    def _zset(self, t: int) -> ZSet | None:
        n = self._len()
        if not n:
            return None
        members, scores = [], []
        for _ in range(n):
            members.append(self._str())
            if t == T_ZSET_2:
                scores.append(_F64.unpack(self._read(8))[0])
            else:
                scores.append(self._old_double())
        limits = self.limits
        listpack = n <= limits.zset_entries and max(map(len, members)) <= limits.zset_value
        return self._build_zset(members, scores, listpack)

    def _hash_ziplist(self, t: int) -> Hash | None:
        return self._compact_hash(_as_bytes(self._blob('Hash', ziplist_decode)), False)

    def _hash_zipmap(self, t: int) -> Hash | None:
        return self._compact_hash(self._blob('Zipmap', zipmap_decode), True)

    def _list_ziplist(self, t: int) -> List | None:
        items = self._blob('Ziplist', ziplist_decode)
        return List(_as_bytes(items)) if items else None

    def _compact_hash(self, flat: list[bytes], check_values: bool) -> Hash | None:
        """A hash from its fields and values, flat: from a listpack or ziplist it stays
        one unless it has too many fields; `check_values` (a zipmap, a hashtable) converts
        it when a field or value is too long, too."""
        n = len(flat)
        if n & 1:
            raise self._fail('Hash listpack with an odd number of entries')
        if not n:
            return None
        it = iter(flat)
        h = Hash.__new__(Hash)  # Hash's __init__ skipped: its one field is set here
        h.update(zip(it, it))
        if len(h) * 2 != n:
            raise self._fail('Duplicate hash fields detected')
        limits = self.limits
        h.listpack = n <= 2 * limits.hash_entries
        if check_values and h.listpack:
            h.listpack = max(map(len, flat)) <= limits.hash_value
        return h

    def _build_zset(self, members: list[bytes], scores: list[float], listpack: bool) -> ZSet:
        if any(map(isnan, scores)):
            raise self._fail('Zset with NAN score detected')
        if listpack and 0.0 in scores:  # a listpack holds no -0.0
            scores = [0.0 if s == 0 else s for s in scores]
        by_member = dict(zip(members, scores))
        if len(by_member) != len(members):
            raise self._fail('Duplicate zset fields detected')
        return ZSet.from_sorted(by_member, sorted(zip(scores, members)), listpack)

    def _old_double(self) -> float:
        """rdbLoadDoubleValue (RDB_TYPE_ZSET): a length byte, then the number as text;
        253, 254 and 255 stand for nan, inf and -inf."""
        n = self._read(1)[0]
        if n == 253:
            return float('nan')
        if n == 254:
            return float('inf')
        if n == 255:
            return float('-inf')
        return float(self._read(n))

    def _stream(self, t: int) -> Stream:
        s = Stream()
        ids, vals, enc = s.ids, s.vals, s.enc
        starts = []  # the position of each node's first entry
        live = 0
        prev = -1
        for _ in range(self._len()):
            nodekey = self._str()
            if len(nodekey) != 16:
                raise self._fail('Stream node key entry is not the size of a stream ID')
            at = self.pos
            e = self._blob('Stream listpack', lp_decode)
            if not e:
                raise self._fail('Empty listpack inside stream')
            master = int.from_bytes(nodekey, 'big')
            mms, mseq = master >> 64, master & SEQ_MASK
            starts.append(len(ids))
            try:
                nf = e[2]
                mfields = _as_bytes(e[3 : 3 + nf])
                if e[3 + nf] != 0:
                    raise _Bad('master entry terminator')
                p = 4 + nf
                end = len(e)
                while p < end:
                    flags = e[p]
                    i = (mms + e[p + 1]) << 64 | (mseq + e[p + 2])
                    p += 3
                    if flags & STREAM_SAMEFIELDS:
                        values = _as_bytes(e[p : p + nf])
                        p += nf
                        fields: Any = [None] * (2 * nf)
                        fields[0::2] = mfields
                        fields[1::2] = values
                    else:
                        n = e[p]
                        fields = _as_bytes(e[p + 1 : p + 1 + 2 * n])
                        p += 1 + 2 * n
                    p += 1  # lp-count
                    if p > end or i <= prev or (i >> 64) > U64 or i < 0:
                        raise _Bad('stream entry')
                    prev = i
                    ids.append(i)
                    enc.append(None)
                    if flags & STREAM_DELETED:
                        vals.append(None)
                    else:
                        vals.append(tuple(fields))
                        live += 1
            except (_Bad, IndexError, TypeError, ValueError) as err:
                self.pos = at
                raise self._fail(f'Stream listpack integrity check failed ({err})') from None
        s.length = self._len()
        if s.length != live:
            raise self._fail('Stream length inconsistent with its entries')
        last = self._len()
        s.last_id = last << 64 | self._len()
        start = 0
        while start < len(vals) and vals[start] is None:
            start += 1
        s.start = start
        s.ntomb = len(vals) - start - live
        s.set_nodes(starts)
        if t == T_STREAM_LISTPACKS_2:
            ms = self._len()
            s.first_id = ms << 64 | self._len()
            ms = self._len()
            s.max_deleted = ms << 64 | self._len()
            s.entries_added = self._len()
        else:
            s.first_id = ids[start] if live else 0
            s.max_deleted = 0
            s.entries_added = s.length
        if live and s.last_id < ids[-1]:
            raise self._fail('Stream last id below its last entry')
        for _ in range(self._len()):
            self._group(s, t)
        return s

    def _group(self, s: Stream, t: int) -> None:
        name = self._str()
        if name in s.groups:
            raise self._fail(f'Duplicated consumer group name {name!r}')
        ms = self._len()
        last_id = ms << 64 | self._len()
        if t == T_STREAM_LISTPACKS_2:
            entries_read = self._len()
            if entries_read >= 1 << 63:
                entries_read -= 1 << 64
        else:
            entries_read = s.estimate_distance(last_id)
        g = s.groups[name] = Group(name, last_id, entries_read)
        pel = g.pel
        for _ in range(self._len()):
            i = int.from_bytes(self._read(16), 'big')
            delivery_time = _I64.unpack(self._read(8))[0]
            if pel.get(i) is not None:
                raise self._fail('Duplicated global PEL entry loaded')
            pel.add(i, NACK(None, delivery_time, self._len()))
        for _ in range(self._len()):
            cname = self._str()
            if cname in g.consumers:
                raise self._fail('Duplicate stream consumer detected.')
            consumer = g.consumers[cname] = Consumer(cname, _I64.unpack(self._read(8))[0])
            cpel = consumer.pel
            for _ in range(self._len()):
                i = int.from_bytes(self._read(16), 'big')
                nack = pel.get(i)
                if nack is None:
                    raise self._fail('Consumer entry not found in group global PEL')
                if cpel.get(i) is not None:
                    raise self._fail('Duplicated consumer PEL entry loaded')
                nack.consumer = consumer
                cpel.add(i, nack)
        for _, nack in pel.iter_from(0):
            if nack.consumer is None:
                raise self._fail('Stream CG PEL entry without consumer')


# -- packed values (types/packed.py) --------------------------------------------------------


def load_value(payload: bytes, limits: EncodingLimits) -> Any:
    """The value at the start of a DUMP payload, as RESTORE loads it (aggregates in the
    encodings `limits` give, as an RDB load does): None when it does not decode or is an
    empty aggregate, Redis's 'Bad data format'."""
    loader = RdbLoader(payload, limits)
    try:
        value = loader.value()
    except (RdbError, _Bad, IndexError, ValueError, TypeError, struct.error, OverflowError):
        return None
    except (KeyError, MemoryError):
        return None
    return None if loader.pos > loader.end else value


class _Unlimited(EncodingLimits):
    """Limits no packed value exceeds: it was left packed only when within the limits of
    its load, so it decodes to the compact encoding whatever the limits are now."""

    def __init__(self) -> None:
        super().__init__()
        self.hash_entries = self.hash_value = self.set_intset_entries = 1 << 62
        self.zset_entries = self.zset_value = 1 << 62


_UNPACKER = RdbLoader(b'', _Unlimited())


def unpack(p: Packed) -> Any:
    """The value a Packed object stands for, decoded as the eager load would have; raises
    RdbError for a blob that does not decode."""
    t, blob, u = p.type, p.blob, _UNPACKER
    try:
        if t == T_HASH_LISTPACK:
            value: Any = u._compact_hash(_lp_decode_bytes(blob), False)
        elif t == T_ZSET_LISTPACK:
            value = u._zset_items(lp_decode(blob))
        elif t == T_LIST_QUICKLIST_2:
            node = _lp_decode_bytes(blob)
            value = List(node) if node else None
        elif t == T_SET_INTSET:
            value = u._intset_values(intset_decode(blob))
        else:
            value = None
    except RdbError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure of a bad blob is the same error
        raise RdbError(f'packed value of RDB type {t} failed to decode ({e!r})') from None
    if value is None:
        raise RdbError(f'packed value of RDB type {t} is empty')
    return value


Packed.decode = staticmethod(unpack)  # type: ignore[method-assign, assignment]
