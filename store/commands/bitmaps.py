"""Bitmap commands (Redis 7.0 bitops.c): SETBIT, GETBIT, BITCOUNT.

A bitmap is a string value (bytes); bit 0 is the most significant bit of the first byte, as
in Redis. Handlers follow bitops.c's order of checks, and share the string family's
look-ups and length limit (strings.py).
"""

from ..args import SYNTAX, int_arg, keyword
from ..command_table import Family
from ..resp import RedisError, string2ll
from .strings import (
    E_BIT_OFFSET,
    E_BIT_VALUE,
    _clamp_range,
    _lookup_string,
    _read_string,
    _store,
)

COMMANDS = Family('bitmap', since='2.2.0')


def _bit_offset(c, b):
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
)
def setbit(c, args):
    key = args[1]
    off = _bit_offset(c, args[2])
    on = string2ll(args[3])
    if on is None or on & ~1:
        raise RedisError(E_BIT_VALUE)
    v = _lookup_string(c, key)
    byte = off >> 3
    mask = 1 << (7 - (off & 7))
    created = v is None
    if created:
        buf = bytearray(byte + 1)
        dirty = True
    else:
        dirty = len(v) <= byte
        buf = bytearray(v)
        if dirty:
            buf.extend(bytes(byte + 1 - len(v)))
    old = 1 if buf[byte] & mask else 0
    if dirty or old != on:
        if on:
            buf[byte] |= mask
        else:
            buf[byte] &= ~mask
        _store(c, key, bytes(buf), created, b'setbit')
    return old


@COMMANDS.command(
    'getbit',
    3,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @bitmap @fast',
    summary='Returns the bit value at offset in the string value stored at key',
)
def getbit(c, args):
    off = _bit_offset(c, args[2])
    v = _read_string(c, args[1])
    if v is None:
        return 0
    byte = off >> 3
    if byte < len(v) and v[byte] & (1 << (7 - (off & 7))):
        return 1
    return 0


@COMMANDS.command(
    'bitcount',
    -2,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @bitmap @slow',
    since='2.6.0',
    summary='Count set bits in a string',
)
def bitcount(c, args):
    v = _read_string(c, args[1])
    if v is None:
        return 0
    n = len(args)
    first_mask = last_mask = 0
    if n == 4 or n == 5:
        total = len(v)
        start = int_arg(args[2])
        end = int_arg(args[3])
        if start < 0 and end < 0 and start > end:
            return 0
        isbit = False
        if n == 5:
            unit = keyword(args[4])
            if unit == b'bit':
                isbit = True
            elif unit != b'byte':
                raise SYNTAX
        if isbit:
            total <<= 3
        start, end = _clamp_range(start, end, total)
        if isbit and start <= end:
            first_mask = ~((1 << (8 - (start & 7))) - 1) & 0xFF
            last_mask = (1 << (7 - (end & 7))) - 1
            start >>= 3
            end >>= 3
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
