"""Redis's RDB encoding primitives (rdb.c, lzf, crc64.c), shared by everything that reads
or writes Redis's binary formats: RDB files, DUMP / RESTORE and FUNCTION DUMP / RESTORE
payloads.
"""

from __future__ import annotations

import anycrc
import lzf as _lzf

RDB_VERSION = 10  # what redis-server 7.0 writes


# -- CRC64 and LZF: C implementations (anycrc, python-lzf) --------------------------------

_CRC64 = anycrc.Model('CRC64-REDIS')  # crc64.c: Jones polynomial, reflected, no final xor


def crc64(data: bytes | memoryview, crc: int = 0) -> int:
    """Redis's crc64 of `data`, continuing from `crc` (the CRC of what came before)."""
    v: int = _CRC64.calc(data, crc)  # anycrc ships no types
    return v


def lzf_compress(data: bytes, out_len: int) -> bytes | None:
    """lzf_compress as Redis builds it, byte for byte: the compressed form, or None when it
    does not fit in `out_len` bytes. python-lzf accepts an output one byte longer than
    Redis's copy of liblzf does (checked against redis-server's DUMP on 20,000 strings),
    hence the `- 1`."""
    if len(data) < 3 or out_len <= 1:
        return None
    packed: bytes | None = _lzf.compress(data, out_len - 1)  # python-lzf ships no types
    return packed


def lzf_decompress(data: bytes, out_len: int) -> bytes | None:
    """lzf_decompress: the original bytes (at most `out_len` of them), or None for a corrupt
    or oversized input. An `out_len` that no input of this size can expand to (LZF turns
    3 bytes into at most 264) is refused before allocating it."""
    if out_len <= 0:
        return b'' if out_len == 0 else None
    if not data or out_len > 100 * len(data):
        return None
    try:
        out: bytes | None = _lzf.decompress(data, out_len)  # None when it does not fit
        return out
    except (ValueError, MemoryError, OverflowError, SystemError):
        return None


# -- RDB strings (rdb.c's rdbSaveRawString / rdbGenericLoadStringObject) ------------------


_LEN6 = [bytes([n]) for n in range(64)]


def rdb_len(n: int) -> bytes:
    """rdbSaveLen: 6, 14, 32 or 64 bits."""
    if n < 64:
        return _LEN6[n]
    if n < 1 << 14:
        return bytes((0x40 | (n >> 8), n & 0xFF))
    if n <= 0xFFFFFFFF:
        return b'\x80' + n.to_bytes(4, 'big')
    return b'\x81' + n.to_bytes(8, 'big')


_NUMERIC_START = frozenset(b'-0123456789')
_SMALL_INTS = {b'%d' % v: b'\xc0' + v.to_bytes(1, 'little', signed=True) for v in range(-128, 128)}


def _int_encoding(s: bytes) -> bytes | None:
    """rdbTryIntegerEncoding: a canonical integer that fits 8, 16 or 32 bits."""
    enc = _SMALL_INTS.get(s)
    if enc is not None:
        return enc
    if not s or s[0] not in _NUMERIC_START:
        return None
    try:
        v = int(s)
    except ValueError:
        return None
    if b'%d' % v != s:
        return None
    if -(1 << 15) <= v < 1 << 15:
        return b'\xc1' + v.to_bytes(2, 'little', signed=True)
    if -(1 << 31) <= v < 1 << 31:
        return b'\xc2' + v.to_bytes(4, 'little', signed=True)
    return None


def rdb_string(s: bytes, compress: bool = True) -> bytes:
    """rdbSaveRawString: integer encoding for short numbers, LZF above 20 bytes when
    `rdbcompression` is on and it saves at least 4 bytes, else the bytes as they are."""
    n = len(s)
    if n <= 11:
        if n and s[0] in _NUMERIC_START:
            enc = _int_encoding(s)
            if enc is not None:
                return enc
        return _LEN6[n] + s
    if compress and n > 20:
        packed = lzf_compress(s, n - 4)
        if packed is not None:
            return b'\xc3' + rdb_len(len(packed)) + rdb_len(n) + packed
    return rdb_len(n) + s


class RdbReader:
    """Reads RDB values from a buffer; a short read or bad encoding raises RdbError."""

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def read(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise RdbError('short read')
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b

    def type(self) -> int:
        return self.read(1)[0]

    def length(self) -> tuple[int, bool]:
        """rdbLoadLenByRef: (length or encoding type, is_encoded)."""
        b = self.read(1)[0]
        kind = b >> 6
        if kind == 3:
            return b & 0x3F, True
        if kind == 0:
            return b & 0x3F, False
        if kind == 1:
            return ((b & 0x3F) << 8) | self.read(1)[0], False
        if b == 0x80:
            return int.from_bytes(self.read(4), 'big'), False
        if b == 0x81:
            return int.from_bytes(self.read(8), 'big'), False
        raise RdbError('unknown length encoding')

    def string(self) -> bytes:
        n, encoded = self.length()
        if not encoded:
            return self.read(n)
        if n in (0, 1, 2):
            size = 1 << n
            return str(int.from_bytes(self.read(size), 'little', signed=True)).encode()
        if n == 3:
            clen, _ = self.length()
            size, _ = self.length()
            s = lzf_decompress(self.read(clen), size)
            if s is None or len(s) != size:
                raise RdbError('Invalid LZF compressed string')
            return s
        raise RdbError('unknown string encoding')


def dump_payload(body: bytes) -> bytes:
    """createDumpPayload's footer after `body` (DUMP, FUNCTION DUMP): the RDB version, two
    bytes little-endian, and the CRC64 of everything before the checksum."""
    body += RDB_VERSION.to_bytes(2, 'little')
    return body + crc64(body).to_bytes(8, 'little')


def verify_payload(data: bytes) -> bool:
    """verifyDumpPayload: room for the footer, an RDB version we read, a matching CRC."""
    if len(data) < 10:
        return False
    if int.from_bytes(data[-10:-8], 'little') > RDB_VERSION:
        return False
    return crc64(data[:-8]).to_bytes(8, 'little') == data[-8:]


class RdbError(Exception):
    pass
