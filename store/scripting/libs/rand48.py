"""math.random and math.randomseed on Redis's rand48 (redis_math_random).

Redis 7.0 replaces Lua's math.random, which draws from the C library's rand(), with
redisLrand48 (rand48.c): a 48-bit linear congruential generator whose state lives as
long as the server (it is no longer reseeded before each script), seeded at start-up
from the system's randomness. math.random() is rand48() % 2^31-1 scaled to [0, 1), and
math.random(m[, n]) picks an integer in the range from it, with luaL_checkint's checks.
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


def helpers() -> dict[bytes, Any]:
    """rand48 and srand48 on a generator of the state's own."""
    rand = Rand48()
    return {b'rand48': rand.next, b'srand48': lambda v: rand.seed(int(v))}


LUA = rb"""
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
"""
