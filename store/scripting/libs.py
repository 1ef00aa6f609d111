"""The libraries Redis 7.0 links into its Lua state beyond Lua 5.1's own: `bit`
(LuaBitOp 1.0.2), `struct`, `cjson` (2.1.0), `cmsgpack` (0.4.0), and math.random on
Redis's rand48.

lupa's Lua 5.1 has none of them, and Redis's are C. Here the walking of Lua tables and
the JSON / MessagePack grammars are Lua (_LIBS), so tables are built and read with the
same operations, and so iterated in the same order, as the C versions do; the bit
arithmetic, struct's byte layouts and MessagePack's numbers are Python (the helpers
passed to _LIBS).

How a C function behaves is kept where a script can see it:
- Each library function is a Python callable around its Lua implementation, so it is a
  C function to Lua: a `return cjson.decode(x)` keeps the caller's frame (a tail-called
  Lua function would lose it), and an error message gets "user_script:N: " prepended by
  the callable, as luaL_error does with luaL_where(L, 1).
- "bad argument #n to 'name'" names the function as the caller's code calls it (what
  luaL_argerror reads from lua_getinfo), found from Python on the state's main thread.
- Results are limited as the C stack limit (8000 slots) limits them in Redis.
"""

from __future__ import annotations

import ctypes
import math
import os
import struct
from typing import Any

from lupa.lua51 import LuaError

_MASK48 = (1 << 48) - 1


class Rand48:
    """redisLrand48/redisSrand48 (rand48.c): the 48-bit LCG Redis's math.random draws
    from. Its state lives as long as the server, as in Redis 7.0, which no longer
    reseeds before each script."""

    def __init__(self) -> None:
        self.x = 0
        self.seed(int.from_bytes(os.urandom(4), 'little', signed=True))

    def seed(self, seedval: int) -> None:
        seedval &= 0xFFFFFFFF
        self.x = ((seedval >> 16) << 32) | ((seedval & 0xFFFF) << 16) | 0x330E

    def next(self) -> int:
        self.x = (0x5DEECE66D * self.x + 0xB) & _MASK48
        return self.x >> 17


# -- C conversions -------------------------------------------------------------------------

_I64 = 1 << 64
_I64_MIN = -(1 << 63)


def _c_long(x: float) -> int:
    """(long)x on x86-64: truncation; NaN and out-of-range values give LONG_MIN."""
    if x != x or not -9.223372036854775808e18 <= x < 9.223372036854775808e18:
        return _I64_MIN
    return int(x)


def _c_ulong(x: float) -> int:
    """(unsigned long)x as gcc compiles it for x86-64: below 2^63 (or NaN) a signed
    conversion, above it one of x - 2^63 with the top bit flipped."""
    if not x >= 9.223372036854775808e18:
        return _c_long(x) % _I64
    return (_c_long(x - 9.223372036854775808e18) % _I64) ^ (1 << 63)


def _f32(x: float) -> bytes:
    """(float)x in native (little-endian) byte order: C's rounding, inf on overflow."""
    return bytes(ctypes.c_float(x))


def _lua_number_str(x: Any, negzero: bool) -> bytes:
    """lua_tolstring of a number ("%.14g", with C's spelling of NaN and infinities)."""
    if negzero:
        return b'-0'
    x = float(x)
    if x != x:
        return b'-nan' if math.copysign(1.0, x) < 0 else b'nan'
    if x in (math.inf, -math.inf):
        return b'inf' if x > 0 else b'-inf'
    return b'%.14g' % x


# -- bit (LuaBitOp) --------------------------------------------------------------------------


def _barg(x: Any) -> int:
    """barg(): the number plus 2^52+2^51, whose low 32 mantissa bits are the value."""
    d = float(x) + 6755399441055744.0
    return struct.unpack('<Q', struct.pack('<d', d))[0] & 0xFFFFFFFF


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


# -- struct ----------------------------------------------------------------------------------

_MAXINTSIZE = 32
_MAXALIGN = 8
_INT_MAX = (1 << 31) - 1
_MAX_STACK = 8000  # LUAI_MAXCSTACK: what a C function's frame can hold


class _Fail(Exception):
    """An error as the C library raises it: ('err', msg) for luaL_error, ('arg', n, msg)
    for luaL_argerror, ('type', n, tname) for a wrong argument type, ('stack', msg) for
    luaL_checkstack."""


class _Args:
    """A C function's arguments as the Lua side passes them: per argument its kind
    ('n' number, 'z' negative zero, 's' string, else the Lua type name), value, and
    lua_tonumber of it (None when not a number)."""

    def __init__(self, flat: tuple[Any, ...], tonumber: Any) -> None:
        self.tonumber = tonumber  # Lua's, for a string read as a number
        self.kinds = flat[0::3]
        self.vals = flat[1::3]
        self.nums = flat[2::3]
        self.n = len(self.kinds)

    def number(self, i: int) -> float:
        """luaL_checknumber."""
        if i > self.n or self.nums[i - 1] is None:
            raise _Fail(b'type', i, b'number')
        if self.kinds[i - 1] == b'z':
            return -0.0
        return float(self.nums[i - 1])

    def integer(self, i: int) -> int:
        """luaL_checkinteger: (long) of the number."""
        return _c_long(self.number(i))

    def opt_integer(self, i: int, default: int) -> int:
        if i > self.n or self.kinds[i - 1] == b'nil':
            return default
        return self.integer(i)

    def string(self, i: int) -> bytes:
        """luaL_checklstring: strings, and numbers as Lua prints them."""
        kind = self.kinds[i - 1] if i <= self.n else b'none'
        if kind == b's':
            return self.vals[i - 1]
        if kind in (b'n', b'z'):
            return _lua_number_str(self.vals[i - 1], kind == b'z')
        raise _Fail(b'type', i, b'string')


def _getnum(fmt: bytes, i: int, df: int) -> tuple[int, int]:
    if i >= len(fmt) or not 48 <= fmt[i] <= 57:
        return df, i
    a = 0
    while i < len(fmt) and 48 <= fmt[i] <= 57:
        d = fmt[i] - 48
        if a > _INT_MAX // 10 or a * 10 > _INT_MAX - d:
            raise _Fail(b'err', b'integral size overflow')
        a = a * 10 + d
        i += 1
    return a, i


def _optsize(opt: int, fmt: bytes, i: int) -> tuple[int, int]:
    c = chr(opt)
    if c in 'Bbx':
        return 1, i
    if c in 'Hh':
        return 2, i
    if c in 'LlTd':
        return 8, i
    if c == 'f':
        return 4, i
    if c == 'c':
        return _getnum(fmt, i, 1)
    if c in 'iI':
        sz, i = _getnum(fmt, i, 4)
        if sz > _MAXINTSIZE:
            raise _Fail('err', b'integral size %d is larger than limit of %d' % (sz, _MAXINTSIZE))
        return sz, i
    return 0, i


def _gettoalign(pos: int, align: int, opt: int, size: int) -> int:
    if size == 0 or opt == 99:  # 'c'
        return 0
    size = min(size, align)
    return (size - (pos & (size - 1))) & (size - 1)


def _controloptions(opt: int, fmt: bytes, i: int, h: list[int]) -> int:
    """Endianness and alignment options; h = [little_endian, align]."""
    if opt == 32:  # ' '
        return i
    if opt == 62:  # '>'
        h[0] = 0
        return i
    if opt == 60:  # '<'
        h[0] = 1
        return i
    if opt == 33:  # '!'
        a, i = _getnum(fmt, i, _MAXALIGN)
        if not (a > 0 and a & (a - 1) == 0):
            raise _Fail(b'err', b'alignment %d is not a power of 2' % a)
        h[1] = a
        return i
    raise _Fail(b'arg', 1, b"invalid format option '%c'" % opt)


def _struct_call(fn: Any, flat: tuple[Any, ...], tonumber: Any) -> Any:
    try:
        return (True, *fn(_Args(flat, tonumber)))
    except _Fail as e:
        return (False, *e.args)


def _format(args: _Args) -> bytes:
    return args.string(1).split(b'\0', 1)[0]


def _pack(args: _Args) -> tuple[Any, ...]:
    fmt = _format(args)
    h = [1, 1]
    arg = 2
    out = bytearray()
    total = 0
    i = 0
    while i < len(fmt):
        opt = fmt[i]
        i += 1
        size, i = _optsize(opt, fmt, i)
        toalign = _gettoalign(total, h[1], opt, size)
        total += toalign
        out += bytes(toalign)
        c = chr(opt)
        if c in 'bBhHlLTiI':
            n = args.number(arg)
            arg += 1
            value = _c_long(n) % _I64 if n < 0 else _c_ulong(n)
            raw = bytes((value >> (8 * k)) & 0xFF for k in range(size))
            out += raw if h[0] else raw[::-1]
        elif c == 'x':
            out += b'\0'
        elif c == 'f':
            raw = _f32(args.number(arg))
            arg += 1
            out += raw if h[0] else raw[::-1]
        elif c == 'd':
            raw = struct.pack('<d', args.number(arg))
            arg += 1
            out += raw if h[0] else raw[::-1]
        elif c in 'cs':
            s = args.string(arg)
            arg += 1
            if size == 0:
                size = len(s)
            if len(s) < size:
                raise _Fail(b'arg', arg, b'string too short')
            out += s[:size]
            if c == 's':
                out += b'\0'
                size += 1
        else:
            i = _controloptions(opt, fmt, i, h)
        total += size
    return (bytes(out),)


def _getinteger(raw: bytes, little: int, signed: bool, size: int) -> float:
    word = 0
    for b in reversed(raw) if little else raw:
        word = ((word << 8) | b) % _I64
    if not signed:
        return float(word)
    mask = ((1 << 64) - 1) << ((size * 8 - 1) % 64) & ((1 << 64) - 1)
    if word & mask:
        word |= mask
    return float(word - _I64 if word >= 1 << 63 else word)


def _unpack(args: _Args) -> tuple[Any, ...]:
    fmt = _format(args)
    data = args.string(2)
    ld = len(data)
    pos = args.opt_integer(3, 1) % _I64
    if pos == 0:
        raise _Fail(b'arg', 3, b'offset must be 1 or greater')
    pos -= 1
    h = [1, 1]
    out: list[Any] = []
    i = 0
    while i < len(fmt):
        opt = fmt[i]
        i += 1
        size, i = _optsize(opt, fmt, i)
        pos = (pos + _gettoalign(pos, h[1], opt, size)) % _I64
        if not (size <= ld and pos <= ld - size):
            raise _Fail(b'arg', 2, b'data string too short')
        if args.n + len(out) + 2 > _MAX_STACK:
            raise _Fail(b'stack', b'too many results')
        c = chr(opt)
        if c in 'bBhHlLTiI':
            out.append(_getinteger(data[pos : pos + size], h[0], c.islower(), size))
        elif c == 'f':
            raw = data[pos : pos + 4]
            out.append(float(ctypes.c_float.from_buffer_copy(raw if h[0] else raw[::-1]).value))
        elif c == 'd':
            raw = data[pos : pos + 8]
            out.append(struct.unpack('<d' if h[0] else '>d', raw)[0])
        elif c == 'c':
            if size == 0:
                prev = args.tonumber(out[-1]) if out else None
                if prev is None:
                    raise _Fail(b'err', b"format 'c0' needs a previous size")
                size = _c_ulong(prev)
                out.pop()
                if not (size <= ld and pos <= ld - size):
                    raise _Fail(b'arg', 2, b'data string too short')
            out.append(data[pos : pos + size])
        elif c == 's':
            e = data.find(b'\0', pos)
            if e < 0:
                raise _Fail(b'err', b'unfinished string in data')
            size = e - pos + 1
            out.append(data[pos:e])
        elif c != 'x':
            i = _controloptions(opt, fmt, i, h)
        pos = (pos + size) % _I64
    pos += 1
    out.append(pos - _I64 if pos >= 1 << 63 else pos)
    return tuple(out)


def _size(args: _Args) -> tuple[Any, ...]:
    fmt = _format(args)
    h = [1, 1]
    pos = 0
    i = 0
    while i < len(fmt):
        opt = fmt[i]
        i += 1
        size, i = _optsize(opt, fmt, i)
        pos += _gettoalign(pos, h[1], opt, size)
        if opt == 115:  # 's'
            raise _Fail(b'arg', 1, b"option 's' has no fixed size")
        if opt == 99 and size == 0:
            raise _Fail(b'arg', 1, b"option 'c0' has no fixed size")
        if not chr(opt).isalnum() or opt > 127:
            i = _controloptions(opt, fmt, i, h)
        pos += size
    return (pos,)


# -- cmsgpack numbers --------------------------------------------------------------------------


def _mp_number(x: Any) -> bytes:
    """mp_encode_lua_number: integers (in int64) as the shortest integer type, other
    numbers as a float when it holds them exactly, else as a double."""
    d = float(x)
    if d == d and -9.223372036854775808e18 <= d < 9.223372036854775808e18 and d == int(d):
        n = int(d)
        if n >= 0:
            if n <= 127:
                return bytes((n,))
            if n <= 0xFF:
                return b'\xcc' + n.to_bytes(1, 'big')
            if n <= 0xFFFF:
                return b'\xcd' + n.to_bytes(2, 'big')
            if n <= 0xFFFFFFFF:
                return b'\xce' + n.to_bytes(4, 'big')
            return b'\xcf' + n.to_bytes(8, 'big')
        if n >= -32:
            return bytes((n & 0xFF,))
        if n >= -128:
            return b'\xd0' + n.to_bytes(1, 'big', signed=True)
        if n >= -32768:
            return b'\xd1' + n.to_bytes(2, 'big', signed=True)
        if n >= -(1 << 31):
            return b'\xd2' + n.to_bytes(4, 'big', signed=True)
        return b'\xd3' + n.to_bytes(8, 'big', signed=True)
    f = _f32(d)
    if struct.unpack('<f', f)[0] == d:
        return b'\xca' + f[::-1]
    return b'\xcb' + struct.pack('>d', d)


def _mp_decode_number(code: int, raw: bytes) -> float:
    """The 8-byte integers and the floats of MessagePack, as lua_Numbers."""
    if code == 0xCA:
        return float(ctypes.c_float.from_buffer_copy(raw[::-1]).value)
    if code == 0xCB:
        return struct.unpack('>d', raw)[0]
    # uint 64 goes through lua_pushinteger (a signed 64-bit), int 64 is signed.
    return float(int.from_bytes(raw, 'big', signed=True))


_LIBS = rb"""
local H, newproxy = ...
local type, select, tostring, tonumber, rawget, next, pcall, error, unpack =
      type, select, tostring, tonumber, rawget, next, pcall, error, unpack
local floor, fmod, huge = math.floor, math.fmod, math.huge
local byte, char, sub, find, format, gsub, lower =
      string.byte, string.char, string.sub, string.find, string.format, string.gsub,
      string.lower
local concat = table.concat
local callerinfo, caller_is_c = H.callerinfo, H.caller_is_c
local MAXSTACK, INT_MAX = 8000, 2147483647

local function pack(...) return {n = select('#', ...), ...} end

-- unpack(t, i, n), also past the C stack limit of unpack's own frame (3 + n slots).
local function tail(t, i, n)
  if n - i < 7900 then return unpack(t, i, n) end
  return t[i], tail(t, i + 1, n)
end

-- ---------------------------------------------------------------- C function shape --

-- A library function: a Python callable around the Lua implementation (H.cfunction), so
-- a C function to Lua (see the module comment).
local cfunction, as_function = H.cfunction, python.as_function
local function define(lib, name, impl)
  lib[name] = as_function(cfunction(impl))
end

-- luaL_argerror: the function's name as its caller called it.
local function argerror(narg, extramsg)
  local name, namewhat = callerinfo()
  if namewhat == 'method' then
    narg = narg - 1
    if narg == 0 then
      error("calling '" .. tostring(name) .. "' on bad self (" .. extramsg .. ')', 0)
    end
  end
  error('bad argument #' .. narg .. " to '" .. (name or '?') .. "' (" .. extramsg .. ')', 0)
end

local function typerror(narg, tname, n, v)
  argerror(narg, tname .. ' expected, got ' .. (narg > n and 'no value' or type(v)))
end

-- A runtime error (luaG_runerror) inside a C function carries no position; raised from
-- here, the wrapper would add the caller's, so a caller in Lua gets the error table the
-- script's handler would have made of the message.
local function runerror(msg)
  if caller_is_c() then error(msg, 0) end
  error({err = 'ERR ' .. msg}, 0)
end

local function checknumber(i, n, v)
  local x = tonumber(v)
  if x == nil or i > n then typerror(i, 'number', n, v) end
  return x
end

-- (long) of a number: truncation, LONG_MIN for NaN and out-of-range values.
local function tolong(x)
  if x ~= x or x >= 9223372036854775808 or x < -9223372036854775808 then
    return -9223372036854775808
  end
  if x >= 0 then return floor(x) end
  return -floor(-x)
end

-- (int) of an integral value: its low 32 bits, signed.
local function toint(x)
  local r = fmod(x, 4294967296)
  if r < 0 then r = r + 4294967296 end
  if r >= 2147483648 then r = r - 4294967296 end
  return r
end

local function checkinteger(i, n, v) return tolong(checknumber(i, n, v)) end

local function checklstring(i, n, v)
  local t = type(v)
  if i <= n and t == 'string' then return v end
  if i <= n and t == 'number' then return tostring(v) end
  typerror(i, 'string', n, v)
end

-- A Python helper's answer: true and the results, or false and how it failed.
-- (struct.pack has pushed a nil above its arguments: a missing one is that nil.)
local function helper_result(n, args, r, pushed_nil)
  if r[1] then return tail(r, 2, r.n) end
  local kind = r[2]
  if kind == 'arg' then argerror(r[3], r[4]) end
  if kind == 'type' then
    if pushed_nil and n > 0 and r[3] == n + 1 then n = n + 1 end
    typerror(r[3], r[4], n, args[r[3]])
  end
  if kind == 'stack' then error('stack overflow (' .. r[3] .. ')', 0) end
  error(r[3], 0)
end

-- Arguments for a Python helper: kind, value and lua_tonumber of each.
local function flat(n, args)
  local out = {}
  for i = 1, n do
    local v = args[i]
    local t = type(v)
    if t == 'number' then
      t = (v == 0 and 1 / v < 0) and 'z' or 'n'
    elseif t == 'string' then
      t = 's'
    end
    out[3 * i - 2], out[3 * i - 1], out[3 * i] = t, v, tonumber(v)
  end
  return unpack(out, 1, 3 * n)
end

-- ----------------------------------------------------------------------------- bit --

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

-- -------------------------------------------------------------------------- struct --

local struct = {pack = 1, unpack = 1, size = 1}
for _, name in ipairs({'pack', 'unpack', 'size'}) do
  local fn = H['struct_' .. name]
  define(struct, name, function(...)
    local n, args = select('#', ...), {...}
    return helper_result(n, args, pack(fn(flat(n, args))), name == 'pack')
  end)
end

-- --------------------------------------------------------------------------- cjson --

local null = newproxy(false)

local T_OBJ_BEGIN, T_OBJ_END, T_ARR_BEGIN, T_ARR_END, T_STRING, T_NUMBER, T_BOOLEAN,
      T_NULL, T_COLON, T_COMMA, T_END, T_WHITESPACE, T_ERROR, T_UNKNOWN =
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
local TOKEN_NAME = {[0] = 'T_OBJ_BEGIN', 'T_OBJ_END', 'T_ARR_BEGIN', 'T_ARR_END',
  'T_STRING', 'T_NUMBER', 'T_BOOLEAN', 'T_NULL', 'T_COLON', 'T_COMMA', 'T_END',
  'T_WHITESPACE', 'T_ERROR', 'T_UNKNOWN'}

local ESCAPE = {}
for i = 0, 31 do ESCAPE[char(i)] = format('\\u%04x', i) end
ESCAPE['\b'], ESCAPE['\t'], ESCAPE['\n'], ESCAPE['\f'], ESCAPE['\r'] =
  '\\b', '\\t', '\\n', '\\f', '\\r'
ESCAPE['"'], ESCAPE['\\'], ESCAPE['/'], ESCAPE['\127'] = '\\"', '\\\\', '\\/', '\\u007f'

local function json_string(s)
  return '"' .. (gsub(s, '[%z\1-\31"/\\\127]', ESCAPE)) .. '"'
end

local buf, nbuf
local function put(s) nbuf = nbuf + 1; buf[nbuf] = s end

local function encode_exception(tname, reason)
  error('Cannot serialise ' .. tname .. ': ' .. reason, 0)
end

local function json_number(cfg, num)
  if num ~= num or num == huge or num == -huge then
    local inv = cfg.encode_invalid_numbers
    if inv == 0 then encode_exception('number', 'must not be NaN or Inf') end
    if inv ~= 1 then return 'null' end
    if num ~= num then return 'nan' end
  end
  return format(cfg.number_fmt, num)
end

-- (int)(a * b) for ints a, b >= 0: the product's low 32 bits, signed.
local function mul32(a, b)
  local lo = fmod(a * (b % 65536), 4294967296)
  local hi = fmod(fmod(a * floor(b / 65536), 65536) * 65536, 4294967296)
  return toint(lo + hi)
end

-- lua_array_length: the array's size, or -1 for an object.
local function array_length(cfg, t)
  local max, items = 0, 0
  for k in next, t do
    if type(k) == 'number' and k ~= 0 and floor(k) == k and k >= 1 then
      if k > max then max = k < 2147483648 and k or -2147483648 end
      items = items + 1
    else
      return -1
    end
  end
  local ratio = cfg.sparse_ratio
  if ratio > 0 and max > mul32(items, ratio) and max > cfg.sparse_safe then
    if cfg.sparse_convert == 0 then encode_exception('table', 'excessively sparse array') end
    return -1
  end
  return max
end

-- depth counts tables; slots is what Redis's C stack holds at this value (for the
-- lua_checkstack that also ends deep nesting).
local encode_value
local function encode_table(cfg, t, depth, slots)
  depth = depth + 1
  if depth > cfg.encode_max_depth or slots + 3 > MAXSTACK then
    error(format('Cannot serialise, excessive nesting (%d)', depth), 0)
  end
  local len = array_length(cfg, t)
  if len > 0 then
    put('[')
    for i = 1, len do
      if i > 1 then put(',') end
      encode_value(cfg, rawget(t, i), depth, slots + 1)
    end
    put(']')
    return
  end
  put('{')
  local comma = false
  for k, v in next, t do
    if comma then put(',') else comma = true end
    local kt = type(k)
    if kt == 'number' then
      put('"' .. json_number(cfg, k) .. '":')
    elseif kt == 'string' then
      put(json_string(k) .. ':')
    else
      encode_exception(kt, 'table key must be a number or string')
    end
    encode_value(cfg, v, depth, slots + 2)
  end
  put('}')
end

function encode_value(cfg, v, depth, slots)
  local t = type(v)
  if t == 'string' then
    put(json_string(v))
  elseif t == 'number' then
    put(json_number(cfg, v))
  elseif t == 'boolean' then
    put(v and 'true' or 'false')
  elseif t == 'table' then
    encode_table(cfg, v, depth, slots)
  elseif t == 'nil' or v == null then
    put('null')
  else
    encode_exception(t, 'type not supported')
  end
end

-- Decoding: S is the text up to its first NUL (where the C parser stops), P the 0-based
-- position in it, DCFG the configuration.
local S, P, DCFG

local CH2TOKEN = {[123] = T_OBJ_BEGIN, [125] = T_OBJ_END, [91] = T_ARR_BEGIN,
  [93] = T_ARR_END, [44] = T_COMMA, [58] = T_COLON}
for i = 1, 19 do CH2TOKEN[byte('fiINnt"+-0123456789', i)] = T_UNKNOWN end
local ESCAPE2CHAR = {[34] = '"', [92] = '\\', [47] = '/', [98] = '\b', [116] = '\t',
  [110] = '\n', [102] = '\f', [114] = '\r', [117] = 'u'}

local function hex4(p)
  local s = sub(S, p + 1, p + 4)
  if #s < 4 or find(s, '[^%x]') then return nil end
  return tonumber(s, 16)
end

local function utf8(cp)
  if cp <= 0x7F then return char(cp) end
  if cp <= 0x7FF then return char(0xC0 + floor(cp / 64), 0x80 + cp % 64) end
  if cp <= 0xFFFF then
    return char(0xE0 + floor(cp / 4096), 0x80 + floor(cp / 64) % 64, 0x80 + cp % 64)
  end
  return char(0xF0 + floor(cp / 262144), 0x80 + floor(cp / 4096) % 64,
              0x80 + floor(cp / 64) % 64, 0x80 + cp % 64)
end

-- json_append_unicode_escape, P at the backslash: the UTF-8 bytes, or nil.
local function unicode_escape()
  local cp = hex4(P + 2)
  if not cp then return nil end
  local len = 6
  if cp >= 0xD800 and cp <= 0xDFFF then
    if cp >= 0xDC00 then return nil end
    if byte(S, P + 7) ~= 92 or byte(S, P + 8) ~= 117 then return nil end
    local lo = hex4(P + 8)
    if not lo or lo < 0xDC00 or lo > 0xDFFF then return nil end
    cp = (cp - 0xD800) * 1024 + (lo - 0xDC00) + 0x10000
    len = 12
  end
  P = P + len
  return utf8(cp)
end

local function string_token()
  local start = P
  P = P + 1
  local parts, np = {}, 0
  while true do
    local a = find(S, '["\\]', P + 1)
    if a == nil then
      P = #S
      return T_ERROR, 'unexpected end of string', P
    end
    if a > P + 1 then np = np + 1; parts[np] = sub(S, P + 1, a - 1) end
    P = a - 1
    if byte(S, a) == 34 then
      P = a
      return T_STRING, concat(parts, '', 1, np), start
    end
    local ch = ESCAPE2CHAR[byte(S, a + 1) or 0]
    if ch == 'u' then
      ch = unicode_escape()
      if not ch then return T_ERROR, 'invalid unicode escape code', P end
    elseif ch == nil then
      return T_ERROR, 'invalid escape code', P
    else
      P = P + 2
    end
    np = np + 1
    parts[np] = ch
  end
end

-- json_is_invalid_number: what strtod reads but JSON does not allow.
local function is_invalid_number(p)
  local c = byte(S, p + 1) or 0
  if c == 43 then return true end
  if c == 45 then p = p + 1; c = byte(S, p + 1) or 0 end
  if c == 48 then
    local c2 = byte(S, p + 2) or 0
    return c2 == 120 or c2 == 88 or (c2 >= 48 and c2 <= 57)
  elseif c <= 57 or c >= 128 then
    return false
  end
  local w = lower(sub(S, p + 1, p + 3))
  return w == 'inf' or w == 'nan'
end

-- How many bytes glibc's strtod reads of s from i (1-based): sign, then infinity, NaN
-- (with its optional "(chars)"), hexadecimal or decimal with optional exponent.
local function strtod_len(s, i)
  local j = i
  local c = byte(s, j)
  if c == 43 or c == 45 then j = j + 1 end
  local w = lower(sub(s, j, j + 7))
  if sub(w, 1, 3) == 'inf' then
    return (w == 'infinity' and j + 8 or j + 3) - i
  end
  if sub(w, 1, 3) == 'nan' then
    local k = j + 3
    if byte(s, k) == 40 then
      local _, e = find(s, '^[%w_]*%)', k + 1)
      if e then return e + 1 - i end
    end
    return k - i
  end
  local digits, expo = '^%d*', 101
  local k = j
  if byte(s, j) == 48 and (byte(s, j + 1) == 120 or byte(s, j + 1) == 88) then
    digits, expo, k = '^%x*', 112, j + 2
  end
  local _, e = find(s, digits, k)
  local nd = e - k + 1
  k = e + 1
  if byte(s, k) == 46 then
    local _, e2 = find(s, digits, k + 1)
    if nd + e2 - k > 0 then
      nd = nd + e2 - k
      k = e2 + 1
    end
  end
  if nd == 0 then
    if expo == 112 then return j + 1 - i end  -- "0x" without digits: the "0"
    return 0
  end
  local ec = byte(s, k)
  if ec == expo or ec == expo - 32 then
    local _, e3 = find(s, '^[+-]?%d+', k + 1)
    if e3 then k = e3 + 1 end
  end
  return k - i
end

local function number_token()
  local len = strtod_len(S, P + 1)
  local v = len > 0 and tonumber(sub(S, P + 1, P + len))
  if not v then return T_ERROR, 'invalid number', P end
  local start = P
  P = P + len
  return T_NUMBER, v, start
end

-- json_next_token: type, value and index (where an error was found, for T_ERROR).
local function next_token()
  local c = byte(S, P + 1)
  while c == 32 or c == 9 or c == 10 or c == 13 do
    P = P + 1
    c = byte(S, P + 1)
  end
  if c == nil then return T_END, nil, P end
  local tt = CH2TOKEN[c]
  if tt == nil then return T_ERROR, 'invalid token', P end
  if tt ~= T_UNKNOWN then
    P = P + 1
    return tt, nil, P - 1
  end
  if c == 34 then return string_token() end
  if c == 45 or (c >= 48 and c <= 57) then
    if DCFG.decode_invalid_numbers == 0 and is_invalid_number(P) then
      return T_ERROR, 'invalid number', P
    end
    return number_token()
  end
  if sub(S, P + 1, P + 4) == 'true' then
    P = P + 4
    return T_BOOLEAN, true, P - 4
  end
  if sub(S, P + 1, P + 5) == 'false' then
    P = P + 5
    return T_BOOLEAN, false, P - 5
  end
  if sub(S, P + 1, P + 4) == 'null' then
    P = P + 4
    return T_NULL, nil, P - 4
  end
  if DCFG.decode_invalid_numbers ~= 0 and is_invalid_number(P) then return number_token() end
  return T_ERROR, 'invalid token', P
end

local function throw(expected, tt, tv, ti)
  local found = tt == T_ERROR and tv or TOKEN_NAME[tt]
  error(format('Expected %s but found %s at character %d', expected, found, ti + 1), 0)
end

local function descend(depth, slots)
  if depth > DCFG.decode_max_depth or slots > MAXSTACK then
    error(format('Found too many nested data structures (%d) at character %d', depth, P), 0)
  end
end

local process_value
local function parse_object(depth, slots)
  depth = depth + 1
  descend(depth, slots + 3)
  local t = {}
  local tt, tv, ti = next_token()
  if tt == T_OBJ_END then return t end
  while true do
    if tt ~= T_STRING then throw('object key string', tt, tv, ti) end
    local key = tv
    tt, tv, ti = next_token()
    if tt ~= T_COLON then throw('colon', tt, tv, ti) end
    t[key] = process_value(depth, slots + 2, next_token())
    tt, tv, ti = next_token()
    if tt == T_OBJ_END then return t end
    if tt ~= T_COMMA then throw('comma or object end', tt, tv, ti) end
    tt, tv, ti = next_token()
  end
end

local function parse_array(depth, slots)
  depth = depth + 1
  descend(depth, slots + 2)
  local t = {}
  local tt, tv, ti = next_token()
  if tt == T_ARR_END then return t end
  local i = 1
  while true do
    t[i] = process_value(depth, slots + 1, tt, tv, ti)
    tt, tv, ti = next_token()
    if tt == T_ARR_END then return t end
    if tt ~= T_COMMA then throw('comma or array end', tt, tv, ti) end
    tt, tv, ti = next_token()
    i = i + 1
  end
end

function process_value(depth, slots, tt, tv, ti)
  if tt == T_STRING or tt == T_NUMBER or tt == T_BOOLEAN then return tv end
  if tt == T_OBJ_BEGIN then return parse_object(depth, slots) end
  if tt == T_ARR_BEGIN then return parse_array(depth, slots) end
  if tt == T_NULL then return null end
  throw('value', tt, tv, ti)
end

local BOOL_OPTIONS = {[0] = 'off', 'on'}
local INVALID_OPTIONS = {[0] = 'off', 'on', 'null'}

local function too_many(n, max)
  if n > max then argerror(max + 1, 'found too many arguments') end
end

-- json_integer_option (its range error names argument 1 whatever the argument).
local function integer_option(cfg, key, i, n, v, min, max)
  if v ~= nil then
    local value = toint(checkinteger(i, n, v))
    if value < min or value > max then
      argerror(1, format('expected integer between %d and %d', min, max))
    end
    cfg[key] = value
  end
  return cfg[key]
end

-- json_enum_option with bool_true 1: a boolean, or one of the option names.
local function enum_option(cfg, key, i, n, v, options)
  if v ~= nil then
    if type(v) == 'boolean' then
      cfg[key] = v and 1 or 0
    else
      local name = checklstring(i, n, v)
      name = sub(name, 1, (find(name, '\0', 1, true) or #name + 1) - 1)
      local setting
      for k = 0, #options do
        if options[k] == name then setting = k end
      end
      if setting == nil then argerror(i, "invalid option '" .. name .. "'") end
      cfg[key] = setting
    end
  end
  local s = cfg[key]
  if s == 0 or s == 1 then return s == 1 end
  return options[s]
end

local cjson_new
function cjson_new()
  local cfg = {sparse_convert = 0, sparse_ratio = 2, sparse_safe = 10,
               encode_max_depth = 1000, decode_max_depth = 1000,
               encode_invalid_numbers = 0, decode_invalid_numbers = 1,
               encode_keep_buffer = 1, encode_number_precision = 14, number_fmt = '%.14g'}
  local lib = {}
  define(lib, 'encode', function(...)
    if select('#', ...) ~= 1 then argerror(1, 'expected 1 argument') end
    buf, nbuf = {}, 0
    encode_value(cfg, (...), 0, 1)
    local s = concat(buf, '', 1, nbuf)
    buf = nil
    return s
  end)
  define(lib, 'decode', function(...)
    local n = select('#', ...)
    if n ~= 1 then argerror(1, 'expected 1 argument') end
    local s = checklstring(1, n, (...))
    if #s >= 2 and (byte(s, 1) == 0 or byte(s, 2) == 0) then
      error('JSON parser does not support UTF-16 or UTF-32', 0)
    end
    local z = find(s, '\0', 1, true)
    if z then s = sub(s, 1, z - 1) end
    S, P, DCFG = s, 0, cfg
    local v = process_value(0, 1, next_token())
    local tt, tv, ti = next_token()
    if tt ~= T_END then throw('the end', tt, tv, ti) end
    S = nil
    return v
  end)
  define(lib, 'encode_sparse_array', function(...)
    local n, a, b, c = select('#', ...), ...
    too_many(n, 3)
    return enum_option(cfg, 'sparse_convert', 1, n, a, BOOL_OPTIONS),
           integer_option(cfg, 'sparse_ratio', 2, n, b, 0, INT_MAX),
           integer_option(cfg, 'sparse_safe', 3, n, c, 0, INT_MAX)
  end)
  for _, key in ipairs({'encode_max_depth', 'decode_max_depth'}) do
    define(lib, key, function(...)
      local n, a = select('#', ...), ...
      too_many(n, 1)
      return integer_option(cfg, key, 1, n, a, 1, INT_MAX)
    end)
  end
  define(lib, 'encode_number_precision', function(...)
    local n, a = select('#', ...), ...
    too_many(n, 1)
    local p = integer_option(cfg, 'encode_number_precision', 1, n, a, 1, 14)
    cfg.number_fmt = '%.' .. p .. 'g'
    return p
  end)
  define(lib, 'encode_keep_buffer', function(...)
    local n, a = select('#', ...), ...
    too_many(n, 1)
    return enum_option(cfg, 'encode_keep_buffer', 1, n, a, BOOL_OPTIONS)
  end)
  define(lib, 'encode_invalid_numbers', function(...)
    local n, a = select('#', ...), ...
    too_many(n, 1)
    return enum_option(cfg, 'encode_invalid_numbers', 1, n, a, INVALID_OPTIONS)
  end)
  define(lib, 'decode_invalid_numbers', function(...)
    local n, a = select('#', ...), ...
    too_many(n, 1)
    return enum_option(cfg, 'decode_invalid_numbers', 1, n, a, BOOL_OPTIONS)
  end)
  define(lib, 'new', function() return cjson_new() end)
  lib.null = null
  lib._NAME = 'cjson'
  lib._VERSION = '2.1.0'
  return lib
end

-- ------------------------------------------------------------------------ cmsgpack --

local mp_number, mp_decode_number = H.mp_number, H.mp_decode_number

local function be(n, bytes)
  local out = {}
  for i = bytes, 1, -1 do
    out[i] = n % 256
    n = floor(n / 256)
  end
  return char(unpack(out, 1, bytes))
end

local function header(n, fix, b16, b32)
  if n <= 15 then return char(fix + n) end
  if n <= 65535 then return char(b16) .. be(n, 2) end
  return char(b32) .. be(n % 4294967296, 4)
end

-- table_is_an_array: keys exactly 1..N.
local function is_array(t)
  local count, max = 0, 0
  for k in next, t do
    if type(k) ~= 'number' or k <= 0 or not (k < 2147483648 and floor(k) == k) then
      return false
    end
    if k > max then max = k end
    count = count + 1
  end
  return max == count
end

local function mp_encode(v, level)
  local t = type(v)
  if t == 'table' and level == 16 then t = 'nil' end
  if t == 'string' then
    local len = #v
    if len < 32 then
      put(char(0xa0 + len))
    elseif len <= 0xff then
      put(char(0xd9, len))
    else
      put(len <= 0xffff and char(0xda) .. be(len, 2) or char(0xdb) .. be(len % 4294967296, 4))
    end
    put(v)
  elseif t == 'boolean' then
    put(v and '\195' or '\194')
  elseif t == 'number' then
    if v >= -32 and v <= 127 and floor(v) == v then
      put(char(v < 0 and v + 256 or v))
    else
      put(mp_number(v))
    end
  elseif t == 'table' then
    if is_array(v) then
      local len = #v
      put(header(len, 0x90, 0xdc, 0xdd))
      for j = 1, len do mp_encode(v[j], level + 1) end
    else
      local len = 0
      for _ in next, v do len = len + 1 end
      put(header(len, 0x80, 0xde, 0xdf))
      for k, val in next, v do
        mp_encode(k, level + 1)
        mp_encode(val, level + 1)
      end
    end
  else
    put('\192')
  end
end

-- Decoding: MS the input, MI the next byte (1-based), ML the bytes left.
local MS, MI, ML

local function need(n)
  if ML < n then error('Missing bytes in input.', 0) end
end
local function consume(n)
  MI = MI + n
  ML = ML - n
end
local function uint(i, n)
  local v = 0
  for k = i, i + n - 1 do v = v * 256 + byte(MS, k) end
  return v
end
local function str(skip, l)
  need(skip + l)
  local s = sub(MS, MI + skip, MI + skip + l - 1)
  consume(skip + l)
  return s
end

local mp_decode
local function mp_array(len, slots)
  local t = {}
  if slots + 2 > MAXSTACK then error('stack overflow (in function mp_decode_to_lua_array)', 0) end
  for i = 1, len do t[i] = mp_decode(slots + 2) end
  return t
end
local function mp_map(len, slots)
  local t = {}
  for _ = 1, len do
    local k = mp_decode(slots + 1)
    local v = mp_decode(slots + 2)
    if k == nil then runerror('table index is nil') end
    if k ~= k then runerror('table index is NaN') end
    t[k] = v
  end
  return t
end

local FIXED = {[0xcc] = 1, [0xd0] = 1, [0xcd] = 2, [0xd1] = 2, [0xce] = 4, [0xd2] = 4}

-- mp_decode_to_lua_type; slots is what Redis's C stack holds below the value.
function mp_decode(slots)
  need(1)
  if slots + 1 > MAXSTACK then
    error('stack overflow (too many return values at once; ' ..
          'use unpack_one or unpack_limit instead.)', 0)
  end
  local c = byte(MS, MI)
  local size = FIXED[c]
  if size then
    need(1 + size)
    local v = uint(MI + 1, size)
    consume(1 + size)
    if c >= 0xd0 and v >= 2 ^ (8 * size - 1) then v = v - 2 ^ (8 * size) end
    return v
  end
  if c == 0xcf or c == 0xd3 or c == 0xca or c == 0xcb then
    size = (c == 0xca) and 4 or 8
    need(1 + size)
    local v = mp_decode_number(c, sub(MS, MI + 1, MI + size))
    consume(1 + size)
    return v
  end
  if c == 0xc0 then consume(1) return nil end
  if c == 0xc3 then consume(1) return true end
  if c == 0xc2 then consume(1) return false end
  if c == 0xd9 then need(2) return str(2, byte(MS, MI + 1)) end
  if c == 0xda then need(3) return str(3, uint(MI + 1, 2)) end
  if c == 0xdb then
    need(5)
    local l = uint(MI + 1, 4)
    consume(5)
    return str(0, l)
  end
  if c == 0xdc or c == 0xde then
    need(3)
    local l = uint(MI + 1, 2)
    consume(3)
    if c == 0xdc then return mp_array(l, slots) end
    return mp_map(l, slots)
  end
  if c == 0xdd or c == 0xdf then
    need(5)
    local l = uint(MI + 1, 4)
    consume(5)
    if c == 0xdd then return mp_array(l, slots) end
    return mp_map(l, slots)
  end
  if c < 0x80 then consume(1) return c end
  if c >= 0xe0 then consume(1) return c - 256 end
  if c >= 0xa0 and c <= 0xbf then return str(1, c - 0xa0) end
  if c >= 0x90 and c <= 0x9f then consume(1) return mp_array(c - 0x90, slots) end
  if c >= 0x80 and c <= 0x8f then consume(1) return mp_map(c - 0x80, slots) end
  error('Bad data format in input.', 0)
end

-- mp_unpack_full; base is what the C stack holds before the results.
local function unpack_full(n, v, limit, offset, base)
  local s = checklstring(1, n, v)
  local len = #s
  if offset < 0 or limit < 0 then
    error(format('Invalid request to unpack with offset of %d and limit of %d.',
                 toint(offset), len), 0)
  elseif offset > len then
    error(format('Start offset %d greater than input length %d.', toint(offset), len), 0)
  end
  local decode_all = limit == 0 and offset == 0
  if decode_all then limit = INT_MAX end
  MS, MI, ML = s, offset + 1, len - offset
  local out, cnt = {}, 0
  while ML > 0 and cnt < limit do
    out[cnt + 1] = mp_decode(base + cnt)
    cnt = cnt + 1
  end
  MS = nil
  if decode_all then return tail(out, 1, cnt) end
  if base + cnt + 1 > MAXSTACK then error('stack overflow (in function mp_unpack_full)', 0) end
  return ML == 0 and -1 or len - ML, tail(out, 1, cnt)
end

local cmsgpack = {}
define(cmsgpack, 'pack', function(...)
  local n, args = select('#', ...), {...}
  if n == 0 then argerror(0, 'MessagePack pack needs input.') end
  if n + n > MAXSTACK then argerror(0, 'Too many arguments for MessagePack pack.') end
  local parts = {}
  for i = 1, n do
    buf, nbuf = {}, 0
    mp_encode(args[i], 0)
    parts[i] = concat(buf, '', 1, nbuf)
  end
  buf = nil
  return concat(parts, '', 1, n)
end)
define(cmsgpack, 'unpack', function(...)
  local n = select('#', ...)
  return unpack_full(n, (...), 0, 0, n)
end)
define(cmsgpack, 'unpack_one', function(...)
  local n, s, off = select('#', ...), ...
  local offset = off == nil and 0 or checkinteger(2, n, off)
  return unpack_full(n, s, 1, offset, 1)
end)
define(cmsgpack, 'unpack_limit', function(...)
  local n, s, lim, off = select('#', ...), ...
  local limit = checkinteger(2, n, lim)
  local offset = off == nil and 0 or checkinteger(3, n, off)
  return unpack_full(n, s, limit, offset, 1)
end)
cmsgpack._NAME = 'cmsgpack'
cmsgpack._VERSION = 'lua-cmsgpack 0.4.0'
cmsgpack._COPYRIGHT = 'Copyright (C) 2012, Salvatore Sanfilippo'
cmsgpack._DESCRIPTION = 'MessagePack C implementation for Lua'

-- math.random and math.randomseed on Redis's rand48 (redis_math_random).
local rand48, srand48 = H.rand48, H.srand48
local function checkint(i, n, v)  -- luaL_checkint: (int) of the (long)
  local x = checkinteger(i, n, v) % 4294967296
  if x >= 2147483648 then x = x - 4294967296 end
  return x
end
define(math, 'random', function(...)
  local n = select('#', ...)
  local r = (rand48() % 2147483647) / 2147483647
  if n == 0 then return r end
  if n == 1 then
    local u = checkint(1, n, (...))
    if u < 1 then argerror(1, 'interval is empty') end
    return floor(r * u) + 1
  end
  if n == 2 then
    local l, u = ...
    l, u = checkint(1, n, l), checkint(2, n, u)
    if l > u then argerror(2, 'interval is empty') end
    return floor(r * (u - l + 1)) + l
  end
  error('wrong number of arguments', 0)
end)
define(math, 'randomseed', function(...)
  srand48(checkint(1, select('#', ...), (...)))
end)

cjson, _G.struct, _G.bit, _G.cmsgpack = cjson_new(), struct, bit, cmsgpack
"""


def install(lua: Any) -> None:
    """Add the libraries to a fresh LuaRuntime's globals (before the sandbox makes them
    read-only)."""
    rand = Rand48()
    g = lua.globals()
    getinfo, tonumber = g.debug.getinfo, g.tonumber

    # The library calls running, innermost last: how the caller named the function
    # (luaL_argerror's name) and the caller's frame (luaL_where's position).
    calls: list[tuple[Any, Any, Any]] = []
    invoke = lua.eval(
        b"function(f, ...) return (function(...) return {n = select('#', ...), ...} end)"
        b'(pcall(f, ...)) end'
    )

    negative_zero = lua.eval(b'function(r, i) return 1 / r[i] < 0 end')

    def cfunction(impl: Any) -> Any:
        def call(*args: Any) -> Any:
            # from here, level 1 is this function as Lua called it, level 2 its caller
            info = getinfo(1, b'n')
            calls.append((info[b'name'], info[b'namewhat'], getinfo(2, b'Sl')))
            try:
                r = invoke(impl, *args)
            finally:
                where = calls.pop()[2]
            if r[1]:
                values = [r[i] for i in range(2, r[b'n'] + 1)]
                for i, v in enumerate(values):  # lupa reads -0 as the integer 0
                    if v == 0 and type(v) is int and negative_zero(r, i + 2):
                        values[i] = -0.0
                return tuple(values)
            err = r[2]
            if type(err) in (int, float):
                err = b'%.14g' % err
            if type(err) is bytes and where is not None and where[b'currentline'] > 0:
                err = b'%s:%d: %s' % (where[b'short_src'], where[b'currentline'], err)
            raise LuaError(err)  # the sandbox hands the value on (pcall, the handler)

        return call

    def callerinfo() -> Any:
        name, namewhat, _ = calls[-1]
        return name, namewhat

    def caller_is_c() -> bool:
        caller = calls[-1][2]
        return caller is not None and caller[b'what'] == b'C'

    def struct_fn(fn: Any) -> Any:
        return lambda *flat: _struct_call(fn, flat, tonumber)

    helpers = {
        b'callerinfo': callerinfo,
        b'caller_is_c': caller_is_c,
        b'cfunction': cfunction,
        b'rand48': rand.next,
        b'srand48': lambda v: rand.seed(int(v)),
        b'bitop': _bitop,
        b'struct_pack': struct_fn(_pack),
        b'struct_unpack': struct_fn(_unpack),
        b'struct_size': struct_fn(_size),
        b'mp_number': _mp_number,
        b'mp_decode_number': _mp_decode_number,
    }
    lua.execute(_LIBS, lua.table_from(helpers), g.newproxy)
