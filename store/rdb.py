"""Redis's RDB encoding primitives (rdb.c, lzf, crc64.c), shared by everything that reads
or writes Redis's binary formats: FUNCTION DUMP / RESTORE payloads today, RDB files next.
"""

from __future__ import annotations

RDB_VERSION = 10  # what redis-server 7.0 writes


# -- CRC64 (crc64.c: Jones polynomial, reflected, no final xor) ------------------------------


def _crc64_table() -> list[int]:
    poly = 0x95AC9329AC4BC9B5  # 0xad93d23594c935a9 reflected
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC64 = _crc64_table()


def crc64(data: bytes, crc: int = 0) -> int:
    table = _CRC64
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


# -- LZF (lzf_c.c / lzf_d.c with Redis's lzfP.h: HLOG 16, VERY_FAST) ----------------------


def lzf_compress(data: bytes, out_len: int) -> bytes | None:
    """lzf_compress as Redis builds it, byte for byte: the compressed form, or None when it
    does not fit in `out_len` bytes."""
    in_end = len(data)
    if not in_end or not out_len or in_end < 3:
        return None
    htab: dict[int, int] = {}
    out = bytearray(out_len + 8)
    ip, op, lit = 0, 1, 0  # op starts past the first literal run's length byte
    hval = (data[0] << 8) | data[1]
    while ip < in_end - 2:
        hval = ((hval << 8) | data[ip + 2]) & 0xFFFFFFFF
        slot = ((hval >> 8) - hval * 5) & 0xFFFF
        ref = htab.get(slot)
        htab[slot] = ip
        if (
            ref is not None
            and ip - ref - 1 < 8192
            and ip + 4 < in_end
            and ref > 0
            and data[ref] == data[ip]
            and data[ref + 1] == data[ip + 1]
            and data[ref + 2] == data[ip + 2]
        ):
            off = ip - ref - 1
            length = 2
            maxlen = min(in_end - ip - length, 264)
            out[op - lit - 1] = (lit - 1) & 0xFF  # stop the literal run
            op -= not lit
            if op + 3 + 1 >= out_len:
                return None
            matched = True
            if maxlen > 16:  # the C code's unrolled compares, unbounded by maxlen
                for _ in range(16):
                    length += 1
                    if data[ref + length] != data[ip + length]:
                        matched = False
                        break
            if matched:
                length += 1
                while length < maxlen and data[ref + length] == data[ip + length]:
                    length += 1
            length -= 2
            ip += 1
            if length < 7:
                out[op] = ((off >> 8) + (length << 5)) & 0xFF
                op += 1
            else:
                out[op] = ((off >> 8) + (7 << 5)) & 0xFF
                out[op + 1] = (length - 7) & 0xFF
                op += 2
            out[op] = off & 0xFF
            op += 2  # and start a literal run
            lit = 0
            ip += length + 1
            if ip >= in_end - 2:
                break
            ip -= 2
            hval = (data[ip] << 8) | data[ip + 1]
            for _ in range(2):
                hval = ((hval << 8) | data[ip + 2]) & 0xFFFFFFFF
                htab[((hval >> 8) - hval * 5) & 0xFFFF] = ip
                ip += 1
        else:
            if op >= out_len:
                return None
            out[op] = data[ip]
            op += 1
            ip += 1
            lit += 1
            if lit == 32:
                out[op - lit - 1] = lit - 1
                lit = 0
                op += 1
    if op + 3 > out_len:
        return None
    while ip < in_end:
        out[op] = data[ip]
        op += 1
        ip += 1
        lit += 1
        if lit == 32:
            out[op - lit - 1] = lit - 1
            lit = 0
            op += 1
    out[op - lit - 1] = (lit - 1) & 0xFF
    op -= not lit
    return bytes(out[:op])


def lzf_decompress(data: bytes, out_len: int) -> bytes | None:
    """lzf_decompress: the original bytes, or None for a corrupt or oversized input."""
    out = bytearray()
    ip, in_end = 0, len(data)
    while ip < in_end:
        ctrl = data[ip]
        ip += 1
        if ctrl < 32:
            ctrl += 1
            if len(out) + ctrl > out_len or ip + ctrl > in_end:
                return None
            out += data[ip : ip + ctrl]
            ip += ctrl
            continue
        length = ctrl >> 5
        ref = len(out) - ((ctrl & 0x1F) << 8) - 1
        if ip >= in_end:
            return None
        if length == 7:
            length += data[ip]
            ip += 1
            if ip >= in_end:
                return None
        ref -= data[ip]
        ip += 1
        if len(out) + length + 2 > out_len or ref < 0:
            return None
        for i in range(ref, ref + length + 2):  # may overlap what it writes
            out.append(out[i])
    return bytes(out)


# -- RDB strings (rdb.c's rdbSaveRawString / rdbGenericLoadStringObject) ------------------


def rdb_len(n: int) -> bytes:
    """rdbSaveLen: 6, 14, 32 or 64 bits."""
    if n < 1 << 6:
        return bytes([n])
    if n < 1 << 14:
        return bytes([0x40 | (n >> 8), n & 0xFF])
    if n <= 0xFFFFFFFF:
        return b'\x80' + n.to_bytes(4, 'big')
    return b'\x81' + n.to_bytes(8, 'big')


def _int_encoding(s: bytes) -> bytes | None:
    """rdbTryIntegerEncoding: a canonical integer that fits 8, 16 or 32 bits."""
    try:
        v = int(s)
    except ValueError:
        return None
    if str(v).encode() != s:
        return None
    if -(1 << 7) <= v < 1 << 7:
        return b'\xc0' + v.to_bytes(1, 'little', signed=True)
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
        enc = _int_encoding(s)
        if enc is not None:
            return enc
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


class RdbError(Exception):
    pass
