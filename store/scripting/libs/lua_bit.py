"""`bit`, LuaBitOp 1.0.2 as Redis 7.0 links it: tobit, bnot, band, bor, bxor, lshift,
rshift, arshift, rol, ror, bswap, tohex.

The arguments are checked in Lua as LuaBitOp checks them (numbers, or strings that read
as one); the arithmetic is Python's on 32-bit values, each number taken as barg() takes
it (the low 32 bits of its mantissa after adding 2^52+2^51, so that fractions round as
LuaBitOp's do) and returned as a signed 32-bit number. tohex(x, -2^31) is Redis's fix of
the C's overflow.
"""

from __future__ import annotations

import struct
from typing import Any


def _barg(x: Any) -> int:
    """barg(): the number plus 2^52+2^51, whose low 32 mantissa bits are the value."""
    d = float(x) + 6755399441055744.0
    bits: int = struct.unpack('<Q', struct.pack('<d', d))[0]
    return bits & 0xFFFFFFFF


def _bret(b: int) -> int:
    b &= 0xFFFFFFFF
    return b - (1 << 32) if b & 0x80000000 else b


def _bitop(op: bytes, *nums: Any) -> Any:
    """One LuaBitOp function on arguments Lua has checked to be numbers."""
    b = _barg(nums[0])
    if op == b'tobit':
        return _bret(b)
    if op == b'bnot':
        return _bret(~b)
    if op in (b'band', b'bor', b'bxor'):
        for x in nums[1:]:
            y = _barg(x)
            b = b & y if op == b'band' else b | y if op == b'bor' else b ^ y
        return _bret(b)
    if op == b'bswap':
        return _bret(
            (b >> 24) | ((b >> 8) & 0xFF00) | ((b & 0xFF00) << 8) | ((b << 24) & 0xFF000000)
        )
    if op == b'tohex':
        n = _bret(_barg(nums[1])) if len(nums) > 1 else 8
        digits = '0123456789abcdef'
        if n == -(1 << 31):  # Redis's fix: -INT_MIN would overflow
            n += 1
        if n < 0:
            n, digits = -n, '0123456789ABCDEF'
        n = min(n, 8)
        return ''.join(digits[(b >> (4 * i)) & 15] for i in range(n - 1, -1, -1)).encode()
    n = _barg(nums[1]) & 31
    if op == b'lshift':
        return _bret(b << n)
    if op == b'rshift':
        return _bret(b >> n)
    if op == b'arshift':
        return _bret(_bret(b) >> n)
    if op == b'rol':
        return _bret((b << n) | (b >> (32 - n)))
    return _bret((b >> n) | (b << (32 - n)))  # ror


def helpers() -> dict[bytes, Any]:
    return {b'bitop': _bitop}


LUA = rb"""
local bitop = H.bitop

local function barg(i, n, v)
  local x = tonumber(v)
  if x == nil or i > n then typerror(i, 'number', n, v) end
  return x
end

local bit = {tobit = 1, bnot = 1, band = 1, bor = 1, bxor = 1, lshift = 1, rshift = 1,
             arshift = 1, rol = 1, ror = 1, bswap = 1, tohex = 1}
for _, op in ipairs({'tobit', 'bnot', 'bswap'}) do
  define(bit, op, function(...)
    return bitop(op, barg(1, select('#', ...), (...)))
  end)
end
for _, op in ipairs({'band', 'bor', 'bxor'}) do
  define(bit, op, function(...)
    local n, args = select('#', ...), {...}
    local nums = {barg(1, n, args[1])}
    for i = n, 2, -1 do nums[i] = barg(i, n, args[i]) end
    return bitop(op, unpack(nums, 1, n))
  end)
end
for _, op in ipairs({'lshift', 'rshift', 'arshift', 'rol', 'ror'}) do
  define(bit, op, function(...)
    local n, a, b = select('#', ...), ...
    local x = barg(1, n, a)
    return bitop(op, x, barg(2, n, b))
  end)
end
define(bit, 'tohex', function(...)
  local n, a, b = select('#', ...), ...
  local x = barg(1, n, a)
  if n < 2 then return bitop('tohex', x) end
  return bitop('tohex', x, barg(2, n, b))
end)

return bit
"""
