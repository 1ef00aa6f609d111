"""The libraries Redis 7.0 links into its Lua state beyond Lua 5.1's own, one module each:
`bit` (lua_bit.py, LuaBitOp 1.0.2), `struct` (lua_struct.py), `cjson` (lua_cjson.py,
2.1.0), `cmsgpack` (lua_cmsgpack.py, 0.4.0), and math.random on Redis's rand48
(rand48.py); cfunction.py is what makes them behave as C functions.

lupa's Lua 5.1 has none of them, and Redis's are C. Here the walking of Lua tables and
the JSON / MessagePack grammars are Lua, so tables are built and read with the same
operations, and so iterated in the same order, as the C versions do; the bit arithmetic,
struct's byte layouts and MessagePack's numbers are Python. Each module holds both
halves of its library: `LUA`, a chunk run in the state, and `helpers`, the Python
functions that chunk calls (as `H`).

`install` runs cfunction.py's PRELUDE, then each library's chunk after cfunction.HEADER,
and sets the globals, before the sandbox (sandbox.lua) copies them into the scripts'
read-only environment.
"""

from __future__ import annotations

from typing import Any

from . import lua_bit, lua_cjson, lua_cmsgpack, lua_struct, rand48
from .cfunction import HEADER, PRELUDE, c_function_helpers


def install(lua: Any) -> None:
    """Add the libraries to a fresh LuaRuntime's globals (before the sandbox makes them
    read-only)."""
    g = lua.globals()
    helpers = {
        **c_function_helpers(lua),
        **rand48.helpers(),
        **lua_bit.helpers(),
        **lua_struct.helpers(g.tonumber),
        **lua_cmsgpack.helpers(),
    }
    h = lua.table_from(helpers)
    c = lua.execute(PRELUDE, h)
    bit, struct, cjson, cmsgpack = (
        lua.execute(HEADER + lib.LUA, c, h, g.newproxy)
        for lib in (lua_bit, lua_struct, lua_cjson, lua_cmsgpack)
    )
    lua.execute(HEADER + rand48.LUA, c, h, g.newproxy)
    lua.execute(
        b'local cj, st, bi, mp = ...\ncjson, struct, bit, cmsgpack = cj, st, bi, mp',
        cjson,
        struct,
        bit,
        cmsgpack,
    )
