"""`cmsgpack`, lua-cmsgpack 0.4.0 as Redis 7.0 links it: pack, unpack, unpack_one,
unpack_limit.

Tables and strings are encoded and decoded in Lua, walked as the C walks them (a table
is an array when its keys are exactly 1..N, nesting stops at 16 levels), with the C
stack limit on the results; numbers are Python (_mp_number: the shortest integer type for
an integral value, a float when it holds the value exactly, else a double;
_mp_decode_number: the 8-byte integers and the floats).
"""

from __future__ import annotations

import ctypes
import struct
from typing import Any

from .cfunction import f32


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
    f = f32(d)
    if struct.unpack('<f', f)[0] == d:
        return b'\xca' + f[::-1]
    return b'\xcb' + struct.pack('>d', d)


def _mp_decode_number(code: int, raw: bytes) -> float:
    """The 8-byte integers and the floats of MessagePack, as lua_Numbers."""
    if code == 0xCA:
        return float(ctypes.c_float.from_buffer_copy(raw[::-1]).value)
    if code == 0xCB:
        d: float = struct.unpack('>d', raw)[0]
        return d
    # uint 64 goes through lua_pushinteger (a signed 64-bit), int 64 is signed.
    return float(int.from_bytes(raw, 'big', signed=True))


def helpers() -> dict[bytes, Any]:
    return {b'mp_number': _mp_number, b'mp_decode_number': _mp_decode_number}


LUA = rb"""
local buf, nbuf
local function put(s) nbuf = nbuf + 1; buf[nbuf] = s end

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

return cmsgpack
"""
