"""EVAL's scripts: the cache of compiled bodies by SHA1, shebang flags, and running one
(eval.c's evalGenericCommand and scriptPrepareForRun in Redis 7.0)."""

from __future__ import annotations

import hashlib
from typing import Any

from ..request_parser import split_args
from ..resp import RedisError
from .engine import CompileError, LuaEngine
from .ldb import Ldb

# #!lua flags=... (scripts_flags_def)
FLAGS = ('no-writes', 'allow-oom', 'allow-stale', 'no-cluster', 'allow-cross-slot-keys')


class Script:
    __slots__ = ('sha', 'body', 'function', 'flags')

    def __init__(self, sha: bytes, body: bytes, function: Any, flags: frozenset[str] | None):
        self.sha = sha
        self.body = body
        self.function = function
        self.flags = flags  # None: no shebang (Redis's eval compatibility mode)


def shebang_flags(body: bytes) -> tuple[frozenset[str] | None, int]:
    """evalExtractShebangFlags: the flags of a `#!lua` first line (None without one) and
    the length of that line."""
    if not body.startswith(b'#!'):
        return None, 0
    end = body.find(b'\n')
    if end < 0:
        raise RedisError('ERR Invalid script shebang')
    parts = split_args(body[:end])
    if not parts:
        raise RedisError('ERR Invalid engine in script shebang')
    if parts[0] != b'#!lua':
        raise RedisError(f'ERR Unexpected engine in script shebang: {_s(parts[0])}')
    flags: set[str] = set()
    for part in parts[1:]:
        if not part.startswith(b'flags='):
            raise RedisError(f'ERR Unknown lua shebang option: {_s(part)}')
        for flag in part[6:].split(b','):
            if not flag and part == b'flags=':
                continue  # "flags=" alone sets none
            name = _s(flag)
            if name not in FLAGS:
                raise RedisError(f'ERR Unexpected flag in script shebang: {name}')
            flags.add(name)
    return frozenset(flags), end


def _s(b: bytes) -> str:
    return b.decode('utf-8', 'surrogateescape')


class EvalScripts:
    def __init__(self, server: Any, client: Any) -> None:
        self.server = server
        self.engine = LuaEngine(server, client)
        self.ldb = self.engine.ldb = Ldb(self.engine)  # (made while `debug` is there)
        self.engine.seal()
        self.engine.set_fresh(32768)  # Redis 7.0's EVAL state (INFO used_memory_lua)
        self.cache: dict[bytes, Script] = {}  # lower-case hex SHA1 -> Script

    def load(self, body: bytes) -> Script:
        """The cached script for `body`, compiling it the first time (SCRIPT LOAD, EVAL)."""
        sha = hashlib.sha1(body).hexdigest().encode()
        script = self.cache.get(sha)
        if script is not None:
            return script
        flags, shebang = shebang_flags(body)
        # The shebang line stays as a comment, so Lua's line numbers are the script's.
        code = b'--' + body if shebang else body
        try:
            function = self.engine.compile(code, b'@user_script')
        except CompileError as e:
            raise RedisError(f'ERR Error compiling script (new function): {e}') from None
        script = self.cache[sha] = Script(sha, body, function, flags)
        return script

    def get(self, sha: bytes) -> Script | None:
        script = self.cache.get(sha)  # as SCRIPT LOAD spelled it, most of the time
        if script is None and len(sha) == 40:
            script = self.cache.get(sha.lower())
        return script

    def flags_of(self, body: bytes) -> frozenset[str] | None:
        """The shebang flags of a script body: None without a shebang or with a bad one
        (evalGetCommandFlags: the command then keeps its own flags)."""
        try:
            return shebang_flags(body)[0]
        except RedisError:
            return None

    def flush(self) -> None:
        self.cache.clear()

    def body_bytes(self) -> int:
        """The cached scripts' source (INFO used_memory_scripts_eval)."""
        return sum(len(s.body) for s in self.cache.values())
