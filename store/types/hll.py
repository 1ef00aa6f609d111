"""HyperLogLog values as Redis 7.0 stores them (hyperloglog.c): a string of a 16-byte header
and 16384 six-bit registers, sparse or dense.

The bytes are Redis's own, not a re-encoding of the same registers: GET, DUMP, the RDB
file and PFDEBUG show them, and redis-server loads and goes on adding to an HLL written
here. So the sparse representation is updated in place exactly as hllSparseSet does (split
the opcode covering the register, then merge equal VAL opcodes in a window of five around
it, which is not a canonical form), and it is promoted to dense at the same point
(a value over 32, or longer than `hll-sparse-max-bytes`). Counts use Ertl's estimator,
as Redis's hllCount does, in IEEE doubles like C's, so they are Redis's numbers.

Header: "HYLL", encoding (0 dense, 1 sparse), three unused bytes, the cached cardinality
as a little-endian uint64 whose top bit set means "stale".

Sparse opcodes: ZERO `00xxxxxx` (1-64 zero registers), XZERO `01xxxxxx yyyyyyyy`
(1-16384 zero registers), VAL `1vvvvvxx` (1-4 registers of value 1-32). Dense registers
are packed least significant bit first: register i is bits 6i..6i+5 of the little-endian
number the 12,288 bytes make.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterator

P = 14
REGISTERS = 1 << P  # 16384
Q = 64 - P
HDR = 16
DENSE, SPARSE = 0, 1
DENSE_SIZE = HDR + REGISTERS * 6 // 8  # 12304
VAL_MAX_VALUE = 32
VAL_MAX_LEN = 4
ZERO_MAX_LEN = 64
XZERO_MAX_LEN = 16384
ALPHA_INF = 0.721347520444481703680  # 0.5 / ln(2)
_M64 = (1 << 64) - 1


class Corrupted(Exception):
    """A sparse representation that does not cover exactly 16384 registers (Redis's
    "-INVALIDOBJ Corrupted HLL object detected")."""


def murmur64a(data: bytes, seed: int = 0xADC83B19) -> int:
    """MurmurHash64A, little-endian, as hllPatLen calls it."""
    m = 0xC6A4A7935BD1E995
    n = len(data)
    h = (seed ^ (n * m)) & _M64
    end = n - (n & 7)
    for i in range(0, end, 8):
        k = int.from_bytes(data[i : i + 8], 'little') * m & _M64
        k ^= k >> 47
        k = k * m & _M64
        h ^= k
        h = h * m & _M64
    if n & 7:
        h ^= int.from_bytes(data[end:], 'little')
        h = h * m & _M64
    h ^= h >> 47
    h = h * m & _M64
    return h ^ (h >> 47)


def pattern(element: bytes) -> tuple[int, int]:
    """hllPatLen: (register index, run length of the pattern 000..1 + 1) of an element."""
    h = murmur64a(element)
    index = h & (REGISTERS - 1)
    h = (h >> P) | (1 << Q)
    return index, (h & -h).bit_length()


def new() -> bytearray:
    """createHLLObject: an empty sparse HLL (one XZERO opcode), cached cardinality 0."""
    return bytearray(b'HYLL\x01\x00\x00\x00' + bytes(8) + b'\x7f\xff')


def is_hll(v: bytes | bytearray) -> bool:
    """isHLLObjectOrReply's checks of a string value."""
    return (
        len(v) >= HDR
        and v[:4] == b'HYLL'
        and v[4] <= SPARSE
        and (v[4] != DENSE or len(v) == DENSE_SIZE)
    )


def invalidate(h: bytearray) -> None:
    h[15] |= 0x80


def cached(h: bytes) -> int | None:
    """The cached cardinality, None when stale."""
    return None if h[15] & 0x80 else int.from_bytes(h[8:16], 'little')


def set_cached(h: bytearray, card: int) -> None:
    h[8:16] = card.to_bytes(8, 'little')


# -- dense ------------------------------------------------------------------------------


def dense_get(h: bytes | bytearray, i: int) -> int:
    byte, fb = HDR + i * 6 // 8, i * 6 & 7
    if fb <= 2:  # within one byte (the last register is: no byte after it to read)
        return (h[byte] >> fb) & 63
    return ((h[byte] >> fb) | (h[byte + 1] << (8 - fb))) & 63


def dense_set(h: bytearray, i: int, count: int) -> bool:
    """hllDenseSet: raise register i to `count`; True when it changed."""
    if dense_get(h, i) >= count:
        return False
    byte, fb = HDR + i * 6 // 8, i * 6 & 7
    h[byte] = (h[byte] & ~(63 << fb) & 0xFF) | (count << fb & 0xFF)
    if fb > 2:
        h[byte + 1] = (h[byte + 1] & ~(63 >> (8 - fb))) | (count >> (8 - fb))
    return True


def dense_registers(h: bytes | bytearray) -> list[int]:
    b = h[HDR:DENSE_SIZE]
    regs: list[int] = []
    for i in range(0, len(b), 3):  # 3 bytes hold 4 registers
        x = b[i] | b[i + 1] << 8 | b[i + 2] << 16
        regs += (x & 63, x >> 6 & 63, x >> 12 & 63, x >> 18)
    return regs


# -- sparse -----------------------------------------------------------------------------


# Registers a one-byte opcode covers (ZERO: 1-64, VAL: 1-4); 0 for XZERO's first byte.
_SPAN = [(op & 3) + 1 if op & 0x80 else 0 if op & 0x40 else (op & 0x3F) + 1 for op in range(256)]


def _zero_op(n: int) -> bytes:
    """ZERO or XZERO for a run of n zero registers."""
    if n > ZERO_MAX_LEN:
        return bytes((0x40 | ((n - 1) >> 8), (n - 1) & 0xFF))
    return bytes((n - 1,))


def _val_op(value: int, n: int) -> int:
    return 0x80 | ((value - 1) << 2) | (n - 1)


def sparse_runs(h: bytes | bytearray) -> Iterator[tuple[str, int, int]]:
    """(opcode, value, run length) of each opcode: 'z' ZERO, 'Z' XZERO (value 0), 'v' VAL."""
    p, end = HDR, len(h)
    while p < end:
        op = h[p]
        if op & 0x80:
            yield 'v', ((op >> 2) & 0x1F) + 1, (op & 3) + 1
            p += 1
        elif op & 0x40:
            # an XZERO cut at the end reads the sds terminator, 0, as Redis's does
            yield 'Z', 0, ((op & 0x3F) << 8 | (h[p + 1] if p + 1 < end else 0)) + 1
            p += 2
        else:
            yield 'z', 0, (op & 0x3F) + 1
            p += 1


def sparse_registers(h: bytes | bytearray) -> list[int]:
    """The registers of a sparse HLL; Corrupted unless they are exactly 16384. An opcode
    of any kind that would run past the last register makes it invalid, as Redis 7.0.15
    checks (hllSparseRegHisto, hllSparseToDense), so runs of XZERO opcodes cannot add up
    to billions of registers."""
    regs: list[int] = []
    for _, value, n in sparse_runs(h):
        if len(regs) + n > REGISTERS:
            raise Corrupted
        regs += [value] * n
    if len(regs) != REGISTERS:
        raise Corrupted
    return regs


def to_dense(h: bytearray) -> bytearray:
    """hllSparseToDense: the header (cached cardinality included) with the registers."""
    if h[4] == DENSE:
        return h
    regs = sparse_registers(h)
    out = bytearray(DENSE_SIZE)
    out[:HDR] = h[:HDR]
    out[4] = DENSE
    for i in range(0, REGISTERS, 4):
        x = regs[i] | regs[i + 1] << 6 | regs[i + 2] << 12 | regs[i + 3] << 18
        j = HDR + i * 3 // 4
        out[j : j + 3] = x.to_bytes(3, 'little')
    return out


def sparse_set(
    h: bytearray,
    index: int,
    count: int,
    max_bytes: int,
    resume: list[tuple[int, int]] | None = None,
) -> tuple[bytearray, bool]:
    """hllSparseSet: (the HLL, possibly promoted to dense, whether register `index` rose).

    `resume` serves calls in increasing `index` order (PFMERGE), which would otherwise walk
    the opcodes from the first one each time: the call leaves in it (position, first
    register) of the two opcodes before the one preceding its change, which no change
    moves, and the next call starts its walk from there."""
    if count > VAL_MAX_VALUE:
        return _promote(h, index, count)
    # Step 1: the opcode covering `index`, and `prev`, the one before it.
    end = len(h)
    span = 0
    if resume:
        trail = resume[:-1]  # (position, first register) of the opcodes passed
        p, first = resume[-1]
    else:
        trail, p, first = [], HDR, 0
    spans = _SPAN
    while p < end:
        span = spans[h[p]]
        oplen = 1
        if not span:  # XZERO (cut at the end: the terminator, 0, as in sparse_runs)
            span = ((h[p] & 0x3F) << 8 | (h[p + 1] if p + 1 < end else 0)) + 1
            oplen = 2
        if index < first + span:
            break
        trail.append((p, first))
        p += oplen
        first += span
    if span == 0 or p >= end:
        raise Corrupted
    prev = trail[-1][0] if trail else None
    if resume is not None:
        resume[:] = trail[-3:-1]
    op = h[p]
    is_val, is_xzero = bool(op & 0x80), (op & 0xC0) == 0x40
    # Step 2: cases A-C in place, else D: the opcode split around the register.
    if is_val:
        old = ((op >> 2) & 0x1F) + 1
        if old >= count:
            return h, False
        if op & 3 == 0:
            h[p] = _val_op(count, 1)
            return _merge(h, prev), True
    elif not is_xzero and op & 0x3F == 0:
        h[p] = _val_op(count, 1)
        return _merge(h, prev), True
    last = first + span - 1
    if is_val:
        seq = bytearray()
        if index != first:
            seq.append(_val_op(old, index - first))
        seq.append(_val_op(count, 1))
        if index != last:
            seq.append(_val_op(old, last - index))
    else:
        seq = bytearray(_zero_op(index - first) if index != first else b'')
        seq.append(_val_op(count, 1))
        if index != last:
            seq += _zero_op(last - index)
    # Step 3: put it in place of the old opcode, unless that makes the HLL too long.
    oldlen = 2 if is_xzero else 1
    if len(seq) > oldlen and len(h) + len(seq) - oldlen > max_bytes:
        return _promote(h, index, count)
    h[p : p + oldlen] = seq
    return _merge(h, prev), True


def _merge(h: bytearray, prev: int | None) -> bytearray:
    """Step 4: merge adjacent VAL opcodes of equal value, in five steps from the opcode
    before the change (a merge is a step too: the merged opcode is tried again with the
    next); invalidate the cached cardinality."""
    p = HDR if prev is None else prev
    for _ in range(5):
        if p >= len(h):
            break
        op = h[p]
        if not op & 0x80:
            p += 2 if op & 0x40 else 1
            continue
        if p + 1 < len(h) and h[p + 1] & 0x80:
            nxt = h[p + 1]
            length = (op & 3) + (nxt & 3) + 2
            if (op >> 2) & 0x1F == (nxt >> 2) & 0x1F and length <= VAL_MAX_LEN:
                h[p + 1] = (nxt & ~3) | (length - 1)
                del h[p]
                continue
        p += 1
    invalidate(h)
    return h


def _promote(h: bytearray, index: int, count: int) -> tuple[bytearray, bool]:
    h = to_dense(h)
    dense_set(h, index, count)
    invalidate(h)
    return h, True


# -- the commands' operations ------------------------------------------------------------


def add(h: bytearray, element: bytes, max_bytes: int) -> tuple[bytearray, bool]:
    """hllAdd: (the HLL, True when a register rose)."""
    index, count = pattern(element)
    if h[4] == DENSE:
        return h, dense_set(h, index, count)
    return sparse_set(h, index, count, max_bytes)


def add_many(h: bytearray, elements: list[bytes], max_bytes: int) -> tuple[bytearray, bool]:
    """hllAdd of each element in turn (PFADD): (the HLL, True when a register rose). The
    same bytes as `add` element by element, but a sparse HLL is edited as a list of its
    opcodes (_SparseEdit): finding the opcode of a register is a bisect instead of a walk
    over the bytes (a 3000-element PFADD: ~0.3 s -> ~15 ms)."""
    updated = False
    if h[4] == SPARSE and len(elements) > 1:
        edit = _SparseEdit.of(h)
        if edit is not None:
            for i, element in enumerate(elements):
                index, count = pattern(element)
                changed = edit.set(index, count, max_bytes)
                if changed is None:  # promoted: go on in the dense HLL
                    h = _promote(edit.bytes(), index, count)[0]
                    updated = True
                    elements = elements[i + 1 :]
                    break
                updated = updated or changed
            else:
                return (edit.bytes() if updated else h), updated
    for element in elements:
        h, changed = add(h, element, max_bytes)
        updated = updated or changed
    return h, updated


def _op_span(op: int) -> int:
    return _SPAN[op] if op < 256 else (op & 0x3FFF) + 1


def _zero_code(n: int) -> int:
    """ZERO or XZERO for n zero registers, as an opcode of _SparseEdit."""
    return 0x10000 | (n - 1) if n > ZERO_MAX_LEN else n - 1


class _SparseEdit:
    """A sparse HLL as a list of opcodes (a one-byte opcode as its value, an XZERO as
    0x10000 | its length - 1) with the first register of each: hllSparseSet's steps on
    the list, which `bytes()` writes back."""

    __slots__ = ('header', 'ops', 'firsts', 'nbytes', 'covered')

    def __init__(self, header: bytes, ops: list[int], firsts: list[int], covered: int) -> None:
        self.header = header
        self.ops = ops
        self.firsts = firsts
        self.nbytes = HDR + sum(1 if op < 256 else 2 for op in ops)
        self.covered = covered

    @classmethod
    def of(cls, h: bytearray) -> _SparseEdit | None:
        """The opcodes of `h`, or None for one with an XZERO cut at its end (left to the
        byte-wise path, which reads its missing byte as Redis does)."""
        ops: list[int] = []
        firsts: list[int] = []
        p, end, first = HDR, len(h), 0
        spans = _SPAN
        while p < end:
            op = h[p]
            span = spans[op]
            if span:
                p += 1
            else:
                if p + 1 >= end:
                    return None
                op = 0x10000 | (op & 0x3F) << 8 | h[p + 1]
                span = (op & 0x3FFF) + 1
                p += 2
            ops.append(op)
            firsts.append(first)
            first += span
        return cls(bytes(h[:HDR]), ops, firsts, first)

    def bytes(self) -> bytearray:
        out = bytearray(self.header)
        for op in self.ops:
            if op < 256:
                out.append(op)
            else:
                n = op & 0x3FFF
                out += bytes((0x40 | n >> 8, n & 0xFF))
        invalidate(out)
        return out

    def set(self, index: int, count: int, max_bytes: int) -> bool | None:
        """sparse_set on the list: whether register `index` rose; None where the HLL must
        become dense first (a value over 32, or longer than max_bytes)."""
        if count > VAL_MAX_VALUE:
            return None
        ops, firsts = self.ops, self.firsts
        k = bisect_right(firsts, index) - 1
        if k < 0 or index >= self.covered:
            raise Corrupted
        op, first = ops[k], firsts[k]
        prev = k - 1 if k else None
        is_xzero = op >= 256
        is_val = not is_xzero and op & 0x80
        if is_val:
            old = ((op >> 2) & 0x1F) + 1
            if old >= count:
                return False
            if op & 3 == 0:
                ops[k] = _val_op(count, 1)
                self._merge(prev)
                return True
        elif not is_xzero and op & 0x3F == 0:
            ops[k] = _val_op(count, 1)
            self._merge(prev)
            return True
        last = first + _op_span(op) - 1
        seq: list[int] = []
        seq_firsts: list[int] = []
        if index != first:
            seq.append(_val_op(old, index - first) if is_val else _zero_code(index - first))
            seq_firsts.append(first)
        seq.append(_val_op(count, 1))
        seq_firsts.append(index)
        if index != last:
            seq.append(_val_op(old, last - index) if is_val else _zero_code(last - index))
            seq_firsts.append(index + 1)
        seqlen = sum(1 if o < 256 else 2 for o in seq)
        oldlen = 2 if is_xzero else 1
        if seqlen > oldlen and self.nbytes + seqlen - oldlen > max_bytes:
            return None
        ops[k : k + 1] = seq
        firsts[k : k + 1] = seq_firsts
        self.nbytes += seqlen - oldlen
        self._merge(prev)
        return True

    def _merge(self, prev: int | None) -> None:
        """_merge's five steps on the list."""
        ops, firsts = self.ops, self.firsts
        i = 0 if prev is None else prev
        for _ in range(5):
            if i >= len(ops):
                break
            op = ops[i]
            if op >= 256 or not op & 0x80:
                i += 1
                continue
            if i + 1 < len(ops) and ops[i + 1] < 256 and ops[i + 1] & 0x80:
                nxt = ops[i + 1]
                length = (op & 3) + (nxt & 3) + 2
                if (op >> 2) & 0x1F == (nxt >> 2) & 0x1F and length <= VAL_MAX_LEN:
                    ops[i + 1] = (nxt & ~3) | (length - 1)
                    del ops[i]
                    del firsts[i + 1]
                    self.nbytes -= 1
                    continue
            i += 1


# -- registers as bytes (PFCOUNT, PFMERGE) ------------------------------------------------
# One byte per register: decoding, unions and histograms run over whole strings in C
# (bytes.translate, slicing, big-int arithmetic, bytes.count) instead of a Python step per
# register (3 HLLs' union count: ~8 ms -> ~1 ms).

_LOW6 = bytes(b & 63 for b in range(256))
_HIGH2 = bytes(b >> 6 for b in range(256))
_LOW4_UP2 = bytes((b & 15) << 2 for b in range(256))
_HIGH4 = bytes(b >> 4 for b in range(256))
_LOW2_UP4 = bytes((b & 3) << 4 for b in range(256))
_HIGH6 = bytes(b >> 2 for b in range(256))
_GUARDS = int.from_bytes(b'\x80' * REGISTERS, 'little')


def _or(x: bytes, y: bytes) -> bytes:
    """x | y byte by byte (the parts OR-ed here have no bit in common)."""
    return (int.from_bytes(x, 'little') | int.from_bytes(y, 'little')).to_bytes(len(x), 'little')


def register_bytes(h: bytes | bytearray) -> bytes:
    """The 16384 registers, a byte each; Corrupted for a sparse HLL that does not cover
    them exactly. Three dense bytes hold four registers: the first byte's low 6 bits, its
    top 2 with the second's low 4, the second's top 4 with the third's low 2, the third's
    top 6."""
    if h[4] != DENSE:
        out = bytearray()
        for _, value, n in sparse_runs(h):
            if len(out) + n > REGISTERS:
                raise Corrupted
            out += bytes((value,)) * n
        if len(out) != REGISTERS:
            raise Corrupted
        return bytes(out)
    area = bytes(h[HDR:DENSE_SIZE])
    b0, b1, b2 = area[0::3], area[1::3], area[2::3]
    regs = bytearray(REGISTERS)
    regs[0::4] = b0.translate(_LOW6)
    regs[1::4] = _or(b0.translate(_HIGH2), b1.translate(_LOW4_UP2))
    regs[2::4] = _or(b1.translate(_HIGH4), b2.translate(_LOW2_UP4))
    regs[3::4] = b2.translate(_HIGH6)
    return bytes(regs)


def union_bytes(a: bytes, b: bytes) -> bytes:
    """The registers' maxima (hllMerge), byte lane by byte lane in one big int: a lane's
    a + 128 - b keeps its guard bit (128) exactly when a >= b (registers are below 64, so
    no lane borrows from the next), and that bit selects a or b."""
    x, y = int.from_bytes(a, 'little'), int.from_bytes(b, 'little')
    pick_x = ((((x | _GUARDS) - y) & _GUARDS) >> 7) * 255
    return ((x & pick_x) | (y & ~pick_x)).to_bytes(REGISTERS, 'little')


def count_bytes(regs: bytes) -> int:
    """`count` of registers given as bytes."""
    return _estimate([regs.count(v) for v in range(Q + 2)])


def registers(h: bytes | bytearray) -> list[int]:
    return dense_registers(h) if h[4] == DENSE else sparse_registers(h)


def _sigma(x: float) -> float:
    if x == 1.0:
        return math.inf
    y, z = 1.0, x
    while True:
        x *= x
        z_prime = z
        z += x * y
        y += y
        if z_prime == z:
            return z


def _tau(x: float) -> float:
    if x == 0.0 or x == 1.0:
        return 0.0
    y, z = 1.0, 1 - x
    while True:
        x = math.sqrt(x)
        z_prime = z
        y *= 0.5
        z -= (1 - x) ** 2 * y
        if z_prime == z:
            return z / 3


def count(regs: list[int]) -> int:
    """hllCount: Ertl's estimate ("New cardinality estimation algorithms for HyperLogLog
    sketches", arXiv:1702.01284) from the register histogram."""
    histo = [0] * 64
    for r in regs:
        histo[r] += 1
    return _estimate(histo)


def _estimate(histo: list[int]) -> int:
    """hllCount's estimate from the histogram of register values 0..Q+1 (at least)."""
    m = float(REGISTERS)
    z = m * _tau((m - histo[Q + 1]) / m)
    for j in range(Q, 0, -1):
        z += histo[j]
        z *= 0.5
    z += m * _sigma(histo[0] / m)
    e = ALPHA_INF * m * m / z
    return math.floor(e + 0.5)  # llroundl of a positive value
