"""The libraries Redis 7.0 links into its Lua state beyond Lua 5.1's own: `bit`
(LuaBitOp), `struct`, `cjson`, `cmsgpack`, and math.random on Redis's rand48.

lupa's Lua 5.1 has none of them, and Redis's are C; here each is Python behind a thin
Lua table, with the results and error messages of Redis's C versions.
"""

from __future__ import annotations

import os
from typing import Any

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


_MATH = b"""
local rand, seed = ...
local floor, select, type, tonumber = math.floor, select, type, tonumber
local function checkint(n, v, fname)
  local x = tonumber(v)
  if x == nil then
    local got = select('#', v) == 0 and 'no value' or type(v)
    error("bad argument #" .. n .. " to '" .. fname .. "' (number expected, got " .. got .. ")", 0)
  end
  if x >= 0 then return floor(x) end
  return -floor(-x)
end
math.random = function(...)
  local r = (rand() % 2147483647) / 2147483647
  local n = select('#', ...)
  if n == 0 then return r end
  if n == 1 then
    local u = checkint(1, (...), 'random')
    if u < 1 then error("bad argument #1 to 'random' (interval is empty)", 0) end
    return floor(r * u) + 1
  end
  if n == 2 then
    local l, u = ...
    l, u = checkint(1, l, 'random'), checkint(2, u, 'random')
    if l > u then error("bad argument #2 to 'random' (interval is empty)", 0) end
    return floor(r * (u - l + 1)) + l
  end
  error('wrong number of arguments', 0)
end
math.randomseed = function(...)
  seed(checkint(1, (...), 'randomseed'))
end
"""


def install(lua: Any) -> None:
    """Add the libraries to a fresh LuaRuntime's globals (before the sandbox makes them
    read-only)."""
    rand = Rand48()
    lua.execute(_MATH, rand.next, lambda v: rand.seed(int(v)))
    g = lua.globals()
    for name in (b'bit', b'struct', b'cjson', b'cmsgpack'):
        g[name] = lua.table()
