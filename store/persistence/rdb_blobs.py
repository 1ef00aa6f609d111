"""The compact blobs inside RDB values, built and parsed plainly: listpack (listpack.c),
intset (intset.c), and the older ziplist (ziplist.c) and zipmap (zipmap.c) that files
before RDB 10 hold.

Encoding writes what Redis 7.0 writes for the same elements: `lp_elem` stores a canonical
64-bit integer as an integer entry in its smallest width (lpStringToInt64) and anything
else as a string entry; `lp_score` a sorted-set score as zzlInsertAt does. Decoding checks
each blob's header, every entry's bounds, the count and the terminator, and raises `_Bad`
for a malformed one (the loader names the offset); `_lp_count` is the cheap header check a
blob passes before it is left packed (types/packed.py). A 6-bit string entry, most of a
listpack's, decodes in four Python steps (tested first).
"""

from __future__ import annotations

import struct
from typing import Any

from ..resp import format_double, string2ll
from ..types.zset import LISTPACK_INT_MAX

_U32 = struct.Struct('<I')
_LP_HEADER = struct.Struct('<IH')
_NUMERIC_START = frozenset(b'-0123456789')
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
    n: int
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
