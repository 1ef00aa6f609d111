"""Bitmap commands (Redis 7.0 bitops.c): SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP,
BITFIELD and BITFIELD_RO.

A bitmap is a string value; bit 0 is the most significant bit of the first byte, as in
Redis. SETBIT and BITFIELD write into the string's bytearray in place and the readers look
into it without a copy (store/keyspace.py): a bitmap of megabytes costs a write what the
write changes. Handlers follow bitops.c's order of checks, and share the string family's
look-ups and length limit (strings.py). Whole strings are combined as Python ints
(`int.from_bytes`) or through `bytes.translate`, not byte by byte.

BITFIELD's integers are C's: a signed field is read and written in two's complement,
overflow is detected with bitops.c's int64 arithmetic (`_s64` wraps as a C int64 does,
where that arithmetic overflows on purpose), and `#N` offsets multiply in 64 bits too.
"""

from ..args import SYNTAX, int_arg, keyword
from ..command_table import Family
from ..context import Client
from ..events import GENERIC, NEW
from ..resp import RedisError, string2ll
from ..types.strenc import mark
from .strings import (
    E_BIT_OFFSET,
    E_BIT_VALUE,
    _changed,
    _clamp_range,
    _lookup_buffer,
    _read_buffer,
    _set_generic,
    _store,
)

COMMANDS = Family('bitmap', since='2.2.0')


def _bit_offset(c: Client, b: bytes) -> int:
    """getBitOffsetFromArgument: a bit offset within proto-max-bulk-len bytes."""
    off = string2ll(b)
    if off is None or off < 0 or (off >> 3) >= c.server.max_bulk:
        raise RedisError(E_BIT_OFFSET)
    return off


@COMMANDS.command(
    'setbit',
    4,
    flags='write denyoom',
    keys=(1, 1, 1),
    categories='@write @bitmap @slow',
    summary='Sets or clears the bit at offset in the string value stored at key',
    key_specs='RW access update; index 1; range 0 1 0',
)
def setbit(c: Client, args: list[bytes]) -> int:
    key = args[1]
    off = _bit_offset(c, args[2])
    on = string2ll(args[3])
    if on is None or on & ~1:
        raise RedisError(E_BIT_VALUE)
    v: bytearray | None = _lookup_buffer(c, key)
    byte = off >> 3
    mask = 1 << (7 - (off & 7))
    if v is None:
        v = bytearray(byte + 1)
        v[byte] = mask if on else 0
        _store(c, key, v, True, b'setbit')
        return 0
    grown = len(v) <= byte
    if grown:
        v += bytes(byte + 1 - len(v))
    old = 1 if v[byte] & mask else 0
    if grown or old != on:
        if on:
            v[byte] |= mask
        else:
            v[byte] &= ~mask
        _changed(c, key, v, b'setbit')
    return old


@COMMANDS.command(
    'getbit',
    3,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @bitmap @fast',
    summary='Returns the bit value at offset in the string value stored at key',
    key_specs='RO access; index 1; range 0 1 0',
)
def getbit(c: Client, args: list[bytes]) -> int:
    off = _bit_offset(c, args[2])
    v: bytes | bytearray | None = _read_buffer(c, args[1])
    if v is None:
        return 0
    byte = off >> 3
    if byte < len(v) and v[byte] & (1 << (7 - (off & 7))):
        return 1
    return 0


def _bit_unit(b: bytes) -> bool:
    """BITCOUNT's and BITPOS's BYTE|BIT: True for BIT."""
    unit = keyword(b)
    if unit != b'bit' and unit != b'byte':
        raise SYNTAX
    return unit == b'bit'


def _range(start: int, end: int, size: int, isbit: bool) -> tuple[int, int, int, int]:
    """A BITCOUNT / BITPOS range of a `size`-byte string, in bytes or bits, clamped as
    Redis clamps it, as (first byte, last byte, the first byte's bits before the range,
    the last byte's bits after it)."""
    start, end = _clamp_range(start, end, size * 8 if isbit else size)
    first_mask = last_mask = 0
    if isbit and start <= end:
        first_mask = ~((1 << (8 - (start & 7))) - 1) & 0xFF
        last_mask = (1 << (7 - (end & 7))) - 1
        start >>= 3
        end >>= 3
    return start, end, first_mask, last_mask


@COMMANDS.command(
    'bitcount',
    -2,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @bitmap @slow',
    since='2.6.0',
    summary='Count set bits in a string',
    key_specs='RO access; index 1; range 0 1 0',
)
def bitcount(c: Client, args: list[bytes]) -> int:
    v: bytes | bytearray | None = _read_buffer(c, args[1])
    if v is None:
        return 0
    n = len(args)
    first_mask = last_mask = 0
    if n == 4 or n == 5:
        start = int_arg(args[2])
        end = int_arg(args[3])
        if start < 0 and end < 0 and start > end:
            return 0
        isbit = n == 5 and _bit_unit(args[4])
        start, end, first_mask, last_mask = _range(start, end, len(v), isbit)
    elif n == 2:
        start, end = 0, len(v) - 1
    else:
        raise SYNTAX
    if start > end:
        return 0
    count = int.from_bytes(v[start : end + 1], 'big').bit_count()
    if first_mask:
        count -= (v[start] & first_mask).bit_count()
    if last_mask:
        count -= (v[end] & last_mask).bit_count()
    return count


def _first_bit(s: bytes | bytearray, bit: int) -> int:
    """redisBitpos: the first bit equal to `bit` in `s`; -1 when looking for a 1 and there
    is none, len(s) * 8 (the bit after) when looking for a 0 and there is none."""
    if bit:
        rest = s.lstrip(b'\0')
        if not rest:
            return -1
        return (len(s) - len(rest)) * 8 + 8 - rest[0].bit_length()
    rest = s.lstrip(b'\xff')
    if not rest:
        return len(s) * 8
    return (len(s) - len(rest)) * 8 + 8 - (rest[0] ^ 0xFF).bit_length()


@COMMANDS.command(
    'bitpos',
    -3,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @bitmap @slow',
    since='2.8.7',
    summary='Find first bit set or clear in a string',
    key_specs='RO access; index 1; range 0 1 0',
)
def bitpos(c: Client, args: list[bytes]) -> int:
    bit = int_arg(args[2])
    if bit != 0 and bit != 1:
        raise RedisError('ERR The bit argument must be 1 or 0.')
    v: bytes | bytearray | None = _read_buffer(c, args[1])
    if v is None:  # an infinite run of 0 bits
        return -1 if bit else 0
    n = len(args)
    first_mask = last_mask = 0
    end_given = n >= 5
    if 4 <= n <= 6:
        start = int_arg(args[3])
        isbit = n == 6 and _bit_unit(args[5])  # checked before the end is read, as Redis
        end = int_arg(args[4]) if end_given else len(v) - 1
        start, end, first_mask, last_mask = _range(start, end, len(v), isbit)
    elif n == 3:
        start, end = 0, len(v) - 1
    else:
        raise SYNTAX
    if start > end:
        return -1
    s: bytes | bytearray = v[start : end + 1]
    if first_mask or last_mask:
        # the edge bytes of a BIT range: the bits outside it forced to the other value
        s = bytearray(s)
        if first_mask:
            s[0] = s[0] & ~first_mask if bit else s[0] | first_mask
        if last_mask:
            s[-1] = s[-1] & ~last_mask if bit else s[-1] | last_mask
        s = bytes(s)
    pos = _first_bit(s, bit)
    if end_given and bit == 0 and pos == len(s) * 8:
        return -1  # no clear bit inside an explicit range: the padding does not count
    return pos if pos == -1 else pos + (start << 3)


_NOT = bytes(255 - i for i in range(256))


@COMMANDS.command(
    'bitop',
    -4,
    flags='write denyoom',
    keys=(2, -1, 1),
    categories='@write @bitmap @slow',
    since='2.6.0',
    summary='Perform bitwise operations between strings',
    key_specs='OW update; index 2; range 0 1 0 | RO access; index 3; range -1 1 0',
)
def bitop(c: Client, args: list[bytes]) -> int:
    op = keyword(args[1])
    if op not in (b'and', b'or', b'xor', b'not'):
        raise SYNTAX
    if op == b'not' and len(args) != 4:
        raise RedisError('ERR BITOP NOT must be called with a single source key.')
    values: list[bytes | bytearray] = [_read_buffer(c, key) or b'' for key in args[3:]]
    size = max(map(len, values))
    dest = args[2]
    if not size:
        ks = c.ks
        if ks.delete(c.db, dest) and ks.notify_flags:
            ks.notify(GENERIC, b'del', c.db, dest)
        return 0
    if op == b'not':
        result = bytes(values[0].translate(_NOT))
    else:
        # Shorter strings are padded with zero bytes at the end: the ints' low bytes.
        ints = [int.from_bytes(v, 'big') << ((size - len(v)) * 8) for v in values]
        acc = ints[0]
        if op == b'and':
            for x in ints[1:]:
                acc &= x
        elif op == b'or':
            for x in ints[1:]:
                acc |= x
        else:
            for x in ints[1:]:
                acc ^= x
        result = acc.to_bytes(size, 'big')
    _set_generic(c, dest, result, 0, None)
    mark(c.ks, c.db, dest, 'raw')  # createObject(OBJ_STRING, res): a raw sds
    return size


# -- BITFIELD --------------------------------------------------------------------------

E_BITFIELD_TYPE = (
    'ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported '
    'but i64 is.'
)
WRAP, SAT, FAIL = 0, 1, 2
_OVERFLOW = {b'wrap': WRAP, b'sat': SAT, b'fail': FAIL}
_NARGS = {b'get': 2, b'set': 3, b'incrby': 3}


def _s64(x: int) -> int:
    """x as a C int64_t holds it (two's complement wrap-around)."""
    return ((x + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)


def _field_type(b: bytes) -> tuple[bool, int]:
    """getBitfieldTypeFromArgument: (signed, bits) of `i<1..64>` or `u<1..63>`."""
    sign = b[:1]
    bits = string2ll(b[1:])
    if sign not in (b'i', b'u') or bits is None or bits < 1 or bits > (64 if sign == b'i' else 63):
        raise RedisError(E_BITFIELD_TYPE)
    return sign == b'i', bits


def _field_offset(c: Client, b: bytes, bits: int) -> int:
    """getBitOffsetFromArgument with `#N` (N fields of `bits` bits) accepted."""
    hashed = b[:1] == b'#'
    off = string2ll(b[1:] if hashed else b)
    if off is None:
        raise RedisError(E_BIT_OFFSET)
    if hashed:
        off = _s64(off * bits)
    if off < 0 or (off >> 3) >= c.server.max_bulk:
        raise RedisError(E_BIT_OFFSET)
    return off


def _unsigned_overflow(value: int, incr: int, bits: int, owtype: int) -> tuple[bool, int | None]:
    """checkUnsignedBitfieldOverflow: (overflowed, the value to store instead)."""
    top = (1 << bits) - 1
    if value > top or (incr > 0 and incr > top - value):
        limit = top
    elif incr < 0 and incr < -value:
        limit = 0
    else:
        return False, None
    if owtype == WRAP:
        limit = (value + incr) & top
    return True, limit


def _signed_overflow(value: int, incr: int, bits: int, owtype: int) -> tuple[bool, int | None]:
    """checkSignedBitfieldOverflow, with its int64 arithmetic (for i64 the limits of the
    increment wrap, which its conditions allow for)."""
    top = (1 << (bits - 1)) - 1
    bottom = -top - 1
    maxincr = _s64(top - value)
    minincr = _s64(bottom - value)
    if (
        value > top
        or (bits != 64 and incr > maxincr)
        or (value >= 0 and incr > 0 and incr > maxincr)
    ):
        limit = top
    elif (
        value < bottom
        or (bits != 64 and incr < minincr)
        or (value < 0 and incr < 0 and incr < minincr)
    ):
        limit = bottom
    else:
        return False, None
    if owtype == WRAP:
        x = (value + incr) & ((1 << bits) - 1)
        limit = x - (1 << bits) if x >> (bits - 1) else x
    return True, limit


def _get_field(buf: bytes | bytearray, offset: int, bits: int, signed: bool) -> int:
    """The `bits`-bit field at bit `offset` of `buf` (zero past its end)."""
    first, last = offset >> 3, (offset + bits - 1) >> 3
    chunk = bytes(buf[first : last + 1]).ljust(last - first + 1, b'\0')
    x = int.from_bytes(chunk, 'big') >> ((last + 1) * 8 - offset - bits) & ((1 << bits) - 1)
    if signed and x >> (bits - 1):
        x -= 1 << bits
    return x


def _set_field(buf: bytearray, offset: int, bits: int, value: int) -> None:
    """Write the low `bits` bits of `value` at bit `offset` of the bytearray `buf`."""
    first, last = offset >> 3, (offset + bits - 1) >> 3
    shift = (last + 1) * 8 - offset - bits
    mask = ((1 << bits) - 1) << shift
    old = int.from_bytes(buf[first : last + 1], 'big')
    new = (old & ~mask) | ((value << shift) & mask)
    buf[first : last + 1] = new.to_bytes(last - first + 1, 'big')


def _bitfield(c: Client, args: list[bytes], read_only: bool) -> list[int | None]:
    """bitfieldGeneric: parse every operation first, then run them in order."""
    ops: list[tuple[bytes, bool, int, int, int, int]] = []
    owtype = WRAP
    writes = False
    highest = 0
    j, n = 2, len(args)
    while j < n:
        name = keyword(args[j])
        left = n - j - 1
        if name == b'overflow' and left >= 1:
            given = _OVERFLOW.get(keyword(args[j + 1]))
            if given is None:
                raise RedisError('ERR Invalid OVERFLOW type specified')
            owtype = given
            j += 2
            continue
        need = _NARGS.get(name)
        if need is None or left < need:
            raise SYNTAX
        signed, bits = _field_type(args[j + 1])
        offset = _field_offset(c, args[j + 2], bits)
        value = 0
        if name != b'get':
            writes = True
            highest = max(highest, offset + bits - 1)
            value = int_arg(args[j + 3])
        ops.append((name, signed, bits, offset, value, owtype))
        j += need + 1
    key = args[1]
    if not writes:  # GETs alone: read where the string is (a bytes, or a bytearray)
        found: bytes | bytearray | None = _read_buffer(c, key)
        got = b'' if found is None else found
        return [_get_field(got, offset, bits, signed) for _, signed, bits, offset, _, _ in ops]
    if read_only:
        raise RedisError('ERR BITFIELD_RO only supports the GET subcommand')
    grown = False
    v: bytearray | None = _lookup_buffer(c, key)
    buf = bytearray() if v is None else v
    if len(buf) <= highest >> 3:  # lookupStringForBitCommand: room for every write
        buf.extend(bytes((highest >> 3) + 1 - len(buf)))
        grown = True
    changes = 0
    out: list[int | None] = []
    for name, signed, bits, offset, value, owtype in ops:
        old = _get_field(buf, offset, bits, signed)
        if name == b'get':
            out.append(old)
            continue
        if name == b'incrby':
            base, incr = old, value
        else:  # SET checks the new value alone, as unsigned when the field is
            base, incr = (value if signed else value & ((1 << 64) - 1)), 0
        check = _signed_overflow if signed else _unsigned_overflow
        overflow, limit = check(base, incr, bits, owtype)
        new = base + incr if limit is None else limit  # None: no overflow (`overflow` False)
        if overflow and owtype == FAIL:
            out.append(None)
        else:
            out.append(new if name == b'incrby' else old)
            _set_field(buf, offset, bits, new)
            if grown or new != old:
                changes += 1
    if v is None and (changes or grown):
        if not changes:  # every write failed: the key is still made, silently
            ks = c.ks
            ks.set(c.db, key, buf, signal=False)
            mark(ks, c.db, key, 'raw')
            if ks.notify_flags:
                ks.notify(NEW, b'new', c.db, key)
        else:
            _store(c, key, buf, True, b'setbit')
    elif changes:
        _changed(c, key, buf, b'setbit')
    elif grown:  # grown in place with every write failed: silently
        c.ks.string_written(c.db, key, buf, signal=False)
        mark(c.ks, c.db, key, 'raw')
    return out


def _bitfield_key_flags(args: list[bytes]) -> str:
    """bitfieldGetKeys: read-only while the subcommands are GETs and OVERFLOWs; a SET, an
    INCRBY or anything else (a syntax error) makes it a write."""
    i, n = 2, len(args)
    while i < n:
        op = args[i].lower()
        if op == b'get' and n - i > 2:
            i += 3
        elif op == b'overflow' and n - i > 1:
            i += 2
        else:
            return 'RW access update'
    return 'RO access'


@COMMANDS.command(
    'bitfield',
    -2,
    flags='write denyoom',
    keys=(1, 1, 1),
    categories='@write @bitmap @slow',
    since='3.2.0',
    summary='Perform arbitrary bitfield integer operations on strings',
    key_specs=(
        'RW access update variable_flags; index 1; range 0 1 0; '
        'This command allows both access and modification of the key'
    ),
    key_flags_of=_bitfield_key_flags,
)
def bitfield(c: Client, args: list[bytes]) -> list[int | None]:
    return _bitfield(c, args, False)


@COMMANDS.command(
    'bitfield_ro',
    -2,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @bitmap @fast',
    since='6.0.0',
    summary='Perform arbitrary bitfield integer operations on strings. Read-only variant of '
    'BITFIELD',
    key_specs='RO access; index 1; range 0 1 0',
)
def bitfield_ro(c: Client, args: list[bytes]) -> list[int | None]:
    return _bitfield(c, args, True)
