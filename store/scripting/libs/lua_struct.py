"""`struct` (Roberto Ierusalimschy's, as Redis 7.0 links it): pack, unpack and size of
binary strings by a format of options (endianness `<` `>`, alignment `!n`, integers
b B h H l L T i I with a size, floats f d, strings c s, padding x).

The byte layouts are Python (_pack, _unpack, _size on _Args, the arguments as the Lua
side flattens them); errors come back as the C library raises them (_Fail: luaL_error,
luaL_argerror, a wrong type, luaL_checkstack) and are raised in Lua with the C messages
(cfunction.py's helper_result). Numbers convert as C casts them (cfunction.py).
"""

from __future__ import annotations

import ctypes
import struct
from typing import Any

from .cfunction import I64, c_long, c_ulong, f32, lua_number_str

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
        return c_long(self.number(i))

    def opt_integer(self, i: int, default: int) -> int:
        if i > self.n or self.kinds[i - 1] == b'nil':
            return default
        return self.integer(i)

    def string(self, i: int) -> bytes:
        """luaL_checklstring: strings, and numbers as Lua prints them."""
        kind = self.kinds[i - 1] if i <= self.n else b'none'
        if kind == b's':
            s: bytes = self.vals[i - 1]
            return s
        if kind in (b'n', b'z'):
            return lua_number_str(self.vals[i - 1], kind == b'z')
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
            value = c_long(n) % I64 if n < 0 else c_ulong(n)
            raw = bytes((value >> (8 * k)) & 0xFF for k in range(size))
            out += raw if h[0] else raw[::-1]
        elif c == 'x':
            out += b'\0'
        elif c == 'f':
            raw = f32(args.number(arg))
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
        word = ((word << 8) | b) % I64
    if not signed:
        return float(word)
    mask = ((1 << 64) - 1) << ((size * 8 - 1) % 64) & ((1 << 64) - 1)
    if word & mask:
        word |= mask
    return float(word - I64 if word >= 1 << 63 else word)


def _unpack(args: _Args) -> tuple[Any, ...]:
    fmt = _format(args)
    data = args.string(2)
    ld = len(data)
    pos = args.opt_integer(3, 1) % I64
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
        pos = (pos + _gettoalign(pos, h[1], opt, size)) % I64
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
                size = c_ulong(prev)
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
        pos = (pos + size) % I64
    pos += 1
    out.append(pos - I64 if pos >= 1 << 63 else pos)
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


def helpers(tonumber: Any) -> dict[bytes, Any]:
    """The Python halves, with Lua's tonumber (a string read as a number)."""

    def struct_fn(fn: Any) -> Any:
        return lambda *flat: _struct_call(fn, flat, tonumber)

    return {
        b'struct_pack': struct_fn(_pack),
        b'struct_unpack': struct_fn(_unpack),
        b'struct_size': struct_fn(_size),
    }


LUA = rb"""
local struct = {pack = 1, unpack = 1, size = 1}
for _, name in ipairs({'pack', 'unpack', 'size'}) do
  local fn = H['struct_' .. name]
  define(struct, name, function(...)
    local n, args = select('#', ...), {...}
    return helper_result(n, args, pack(fn(flat(n, args))), name == 'pack')
  end)
end

return struct
"""
