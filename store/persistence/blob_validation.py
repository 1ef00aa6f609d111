"""Redis's integrity validators of the compact blobs a value may hold, check for check:
ziplist.c's ziplistValidateIntegrity / zipEntrySafe, listpack.c's lpValidateIntegrity /
lpValidateNext, t_stream.c's streamValidateListpackIntegrity and intset.c's
intsetValidateIntegrity, with offsets as ints where C has pointers, so a blob passes here
exactly when it passes in redis-server (payload_check.py runs them per RDB type).

Each returns whether the blob is sound: without `deep` only the header (total bytes,
terminator, ziplist tail offset, intset size), with it every entry (`pairs`: no duplicate
field and an even count too, for a hash or sorted set). Cost: one walk of the blob, entry
by entry, a few Python steps per entry.
"""

from __future__ import annotations

import struct

from ..resp import string2ll
from .rdb_blobs import _INTSET_FORMAT, _backlen_size

_U16 = struct.Struct('<H')
_U32 = struct.Struct('<I')


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
        size: int = _U32.unpack_from(lp, p + 1)[0]
        return 5 + size
    return {0xF1: 3, 0xF2: 4, 0xF3: 5, 0xF4: 9}.get(c, 1)


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


# -- intset (intset.c) ------------------------------------------------------------------------


def intset_valid(b: bytes, deep: bool) -> bool:
    if len(b) < 8:
        return False
    width, count = struct.unpack_from('<II', b)
    fmt = _INTSET_FORMAT.get(width)
    if fmt is None or 8 + count * width != len(b) or count == 0:
        return False
    if not deep:
        return True
    values = struct.unpack_from(f'<{count}{fmt}', b, 8)
    return all(values[i - 1] < values[i] for i in range(1, count))
