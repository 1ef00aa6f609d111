"""What makes the libraries behave as Redis's C code: each library function has a C
function's shape, and numbers convert as C converts them.

- Each library function is a Python callable around its Lua implementation (`define`,
  made by `c_function_helpers`' cfunction), so it is a C function to Lua: a `return
  cjson.decode(x)` keeps the caller's frame (a tail-called Lua function would lose it), and
  an error message gets "user_script:N: " prepended by the callable, as luaL_error does
  with luaL_where(L, 1). lupa reads a -0 result as the integer 0: it is made -0.0 again.
- "bad argument #n to 'name'" names the function as the caller's code calls it (what
  luaL_argerror reads from lua_getinfo), found from Python on the state's main thread
  (`callerinfo`: the calls running, innermost last).
- Results are limited as the C stack limit (8000 slots) limits them in Redis (`tail`,
  MAXSTACK).
- The checks of the C API (luaL_checknumber, luaL_checkinteger, luaL_checklstring) and its
  errors are Lua (PRELUDE); the casts ((long), (unsigned long), (float), lua_tolstring of
  a number) are Python, for the helpers that do the byte work.

PRELUDE runs first and returns these Lua functions in a table; every library's chunk
starts with HEADER, which takes them (and the standard functions) as locals.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

from lupa.lua51 import LuaError

# -- C conversions -------------------------------------------------------------------------

I64 = 1 << 64
I64_MIN = -(1 << 63)


def c_long(x: float) -> int:
    """(long)x on x86-64: truncation; NaN and out-of-range values give LONG_MIN."""
    if x != x or not -9.223372036854775808e18 <= x < 9.223372036854775808e18:
        return I64_MIN
    return int(x)


def c_ulong(x: float) -> int:
    """(unsigned long)x as gcc compiles it for x86-64: below 2^63 (or NaN) a signed
    conversion, above it one of x - 2^63 with the top bit flipped."""
    if not x >= 9.223372036854775808e18:
        return c_long(x) % I64
    return (c_long(x - 9.223372036854775808e18) % I64) ^ (1 << 63)


def f32(x: float) -> bytes:
    """(float)x in native (little-endian) byte order: C's rounding, inf on overflow."""
    return bytes(ctypes.c_float(x))


def lua_number_str(x: Any, negzero: bool) -> bytes:
    """lua_tolstring of a number ("%.14g", with C's spelling of NaN and infinities)."""
    if negzero:
        return b'-0'
    x = float(x)
    if x != x:
        return b'-nan' if math.copysign(1.0, x) < 0 else b'nan'
    if x in (math.inf, -math.inf):
        return b'inf' if x > 0 else b'-inf'
    return b'%.14g' % x


# -- the C function shape ------------------------------------------------------------------


def c_function_helpers(lua: Any) -> dict[bytes, Any]:
    """PRELUDE's Python helpers for the state `lua`: cfunction (a Lua implementation made a
    C function), callerinfo and caller_is_c (the innermost library call's caller)."""
    getinfo = lua.globals().debug.getinfo

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

    return {b'callerinfo': callerinfo, b'caller_is_c': caller_is_c, b'cfunction': cfunction}


# The standard functions every chunk takes as locals.
_ALIASES = rb"""
local type, select, tostring, tonumber, rawget, next, pcall, error, unpack =
      type, select, tostring, tonumber, rawget, next, pcall, error, unpack
local floor, fmod, huge = math.floor, math.fmod, math.huge
local byte, char, sub, find, format, gsub, lower =
      string.byte, string.char, string.sub, string.find, string.format, string.gsub,
      string.lower
local concat = table.concat
local MAXSTACK, INT_MAX = 8000, 2147483647
"""

PRELUDE = (
    b"""
local H = ...
"""
    + _ALIASES
    + rb"""
local callerinfo, caller_is_c = H.callerinfo, H.caller_is_c

local function pack(...) return {n = select('#', ...), ...} end

-- unpack(t, i, n), also past the C stack limit of unpack's own frame (3 + n slots).
local function tail(t, i, n)
  if n - i < 7900 then return unpack(t, i, n) end
  return t[i], tail(t, i + 1, n)
end

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

return {pack = pack, tail = tail, define = define, argerror = argerror, typerror = typerror,
        runerror = runerror, checknumber = checknumber, tolong = tolong, toint = toint,
        checkinteger = checkinteger, checklstring = checklstring,
        helper_result = helper_result, flat = flat}
"""
)

# How every library's chunk starts: its arguments (PRELUDE's functions, the Python
# helpers, newproxy), the standard functions and PRELUDE's as locals.
HEADER = (
    b"""
local C, H, newproxy = ...
"""
    + _ALIASES
    + b"""
local pack, tail, define, argerror, typerror, runerror =
      C.pack, C.tail, C.define, C.argerror, C.typerror, C.runerror
local checknumber, tolong, toint, checkinteger, checklstring, helper_result, flat =
      C.checknumber, C.tolong, C.toint, C.checkinteger, C.checklstring, C.helper_result, C.flat
"""
)
