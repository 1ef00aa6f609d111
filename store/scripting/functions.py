"""FUNCTION's libraries (Redis 7.0's functions.c and function_lua.c): loaded into a Lua
state of their own, registered with redis.register_function, called by FCALL."""

from __future__ import annotations

from typing import Any

from .engine import LuaEngine


class Functions:
    def __init__(self, server: Any, client: Any) -> None:
        self.server = server
        self.engine = LuaEngine(server, client)
