"""FUNCTION's libraries (Redis 7.0's functions.c and function_lua.c): loaded into a Lua
state of their own, registered with redis.register_function, called by FCALL.

A library is its code with a `#!lua name=<library>` first line. Loading runs the code once
in a load-time environment where the only global is a small `redis` table
(register_function, log, the LOG_* levels and the version), with a 500 ms budget, as
Redis's luaEngineCreate does. The registered callbacks keep that environment table, whose
lookups are switched to the full script environment (the sandbox's, as EVAL has it, minus
KEYS and ARGV) once loading is over, so at FCALL time they see redis.call and the rest.

FUNCTION DUMP / RESTORE payloads are Redis's: per library the RDB opcode 245 and the code
as an RDB string (integer-encoded, LZF-compressed or plain, as rdbSaveRawString chooses),
then the RDB version (10, two bytes little-endian) and a CRC64 of all that (Jones, as
crc64.c, eight bytes little-endian); the RDB encoding itself is store/rdb.py's.
"""

from __future__ import annotations

import time
from typing import Any, NoReturn

import lupa.lua51 as lua51

from ..rdb import RdbError, RdbReader, dump_payload, rdb_string, verify_payload
from ..request_parser import split_args
from ..resp import RedisError, string2ll
from .engine import LuaEngine
from .eval import FLAGS
from .redis_api import lua_tostring
from .run_context import ScriptRun, check_numkeys

RDB_OPCODE_FUNCTION_PRE_GA = 246  # 7.0 release candidates' format, refused
RDB_OPCODE_FUNCTION2 = 245
LOAD_TIMEOUT_MS = 500
ENGINE = b'LUA'
E_NAME = (
    'Library names can only contain letters, numbers, or underscores(_) and must be at '
    'least one character long'
)
_NAME_CHARS = frozenset(b'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_')
_lua_type = lua51.lua_type


# -- FUNCTION DUMP / RESTORE payloads ------------------------------------------------------


def libraries_payload(codes: list[bytes], compress: bool = True) -> bytes:
    """FUNCTION DUMP: the libraries' code as RDB opcodes and strings, the RDB version and
    the CRC64 of everything before it."""
    opcode = bytes([RDB_OPCODE_FUNCTION2])
    return dump_payload(b''.join(opcode + rdb_string(c, compress) for c in codes))


def _read(read: Any, error: str) -> Any:
    try:
        return read()
    except RdbError:
        raise RedisError('ERR ' + error) from None


def read_pre_ga_library(reader: RdbReader) -> bytes:
    """A library as 7.0's release candidates saved it (opcode 246): name, engine, an
    optional description and the code without its #! line; rdbFunctionLoad makes the code
    Redis 7.0 GA keeps out of them."""
    name = _read(reader.string, 'Failed loading library name')
    engine = _read(reader.string, 'Failed loading engine name')
    has_desc, _ = _read(reader.length, 'Failed loading library description indicator')
    if has_desc:
        _read(reader.string, 'Failed loading library description')
    blob = _read(reader.string, 'Failed loading library blob')
    return b'#!%s name=%s\n%s' % (_cstr(engine), _cstr(name), _cstr(blob))


def _cstr(b: bytes) -> bytes:
    return b.split(b'\0', 1)[0]


# -- libraries ------------------------------------------------------------------------------


class Function:
    __slots__ = ('name', 'callback', 'library', 'description', 'flags')

    def __init__(
        self,
        name: bytes,
        callback: Any,
        library: Library,
        description: bytes | None,
        flags: frozenset[str],
    ) -> None:
        self.name = name
        self.callback = callback
        self.library = library
        self.description: bytes | None = description
        self.flags: frozenset[str] = flags


class Library:
    __slots__ = ('name', 'code', 'functions')

    def __init__(self, name: bytes, code: bytes) -> None:
        self.name = name
        self.code = code  # all of it, the #! line included (what DUMP saves)
        self.functions: dict[bytes, Function] = {}  # by name as registered


class LibCtx:
    """functionsLibCtx: libraries by name (case-sensitive) and their functions by name
    (case-insensitive, as FCALL looks them up)."""

    def __init__(self) -> None:
        self.libraries: dict[bytes, Library] = {}
        self.functions: dict[bytes, Function] = {}
        self.n_functions = 0  # the sum of the libraries' counts (FUNCTION STATS)

    def link(self, lib: Library) -> None:
        for fn in lib.functions.values():
            # Two names that differ only in case in one library: Redis's dictAdd keeps
            # the first for FCALL.
            self.functions.setdefault(fn.name.lower(), fn)
        self.libraries[lib.name] = lib
        self.n_functions += len(lib.functions)

    def unlink(self, lib: Library) -> None:
        for fn in lib.functions.values():
            if self.functions.get(fn.name.lower()) is fn:
                del self.functions[fn.name.lower()]
        del self.libraries[lib.name]
        self.n_functions -= len(lib.functions)

    def join(self, src: LibCtx, replace: bool) -> None:
        """libraryJoin: add `src`'s libraries; a library of the same name is an error
        unless `replace`, a function of the same name always is, and nothing changes then."""
        replaced = []
        try:
            for name in src.libraries:
                old = self.libraries.get(name)
                if old is None:
                    continue
                if not replace:
                    raise RedisError(f'ERR Library {_s(name)} already exists')
                self.unlink(old)
                replaced.append(old)
            for key, fn in src.functions.items():
                if key in self.functions:
                    raise RedisError(f'ERR Function {_s(fn.name)} already exists')
        except RedisError:
            for old in replaced:
                self.link(old)
            raise
        for lib in src.libraries.values():
            self.link(lib)


def _s(b: bytes) -> str:
    """An sds in an error reply (C's %s: up to a NUL)."""
    return b.split(b'\0', 1)[0].decode('utf-8', 'surrogateescape')


def _valid_name(name: bytes) -> bool:
    """functionsVerifyName: [a-zA-Z0-9_]+."""
    return bool(name) and all(c in _NAME_CHARS for c in name)


def parse_metadata(code: bytes) -> tuple[bytes, bytes, bytes]:
    """functionExtractLibMetaData: (engine, library name, code after the #! line, from its
    newline on, so Lua's line numbers are the library's)."""
    if not code.startswith(b'#!'):
        raise RedisError('ERR Missing library metadata')
    end = code.split(b'\0', 1)[0].find(b'\n')  # strchr on a C string
    if end < 0:
        raise RedisError('ERR Invalid library metadata')
    parts = split_args(code[:end])
    if not parts:
        raise RedisError('ERR Invalid library metadata')
    engine = parts[0][2:]
    name = None
    for part in parts[1:]:
        if part[:5].lower() == b'name=':
            if name is not None:
                raise RedisError(
                    'ERR Invalid metadata value, name argument was given multiple times'
                )
            name = part[5:]
            continue
        raise RedisError(f'ERR Invalid metadata value given: {_s(part)}')
    if name is None:
        raise RedisError('ERR Library name was not given')
    return engine, name, code[end:]


# The load-time environment and the loader, made in the real global table (which keeps
# setfenv and debug). G is every library's global table: reads go to LIB_API while a
# library loads and to the script environment after; writes always fail.
_LOADER = b"""
local env, api, pyerror, expired, timeout_err = ...
local error, tostring, setmetatable, type = error, tostring, setmetatable, type
local loadstring, setfenv, pcall = loadstring, setfenv, pcall
local sethook, gethook, getinfo = debug.sethook, debug.gethook, debug.getinfo

local function nonexistent(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end
local function readonly() error('Attempt to modify a readonly table', 2) end

local redis = setmetatable({}, {
  __index = setmetatable(api, {__index = nonexistent}), __newindex = readonly})
local LIB_API = setmetatable({redis = redis}, {__index = nonexistent})
local mt = {__index = env, __newindex = readonly}
local G = setmetatable({}, mt)

-- Past the budget the hook raises on every line of the library's code (so no loop
-- outlives it), and only there: not on this loader's lines once the code has returned.
local function hook()
  local i = getinfo(2, 'S')
  if i and i.source == '@user_function' and expired() then
    sethook(hook, 'l')  -- every line from now on
    error(timeout_err)
  end
end

-- load(code): 'compile' and Lua's message, 'run' and the error raised while running,
-- or nil once the code ran.
return function(code)
  local f, err = loadstring(code, '@user_function')
  if not f then return 'compile', err end
  setfenv(f, G)
  mt.__index = LIB_API
  local h, mask, count = gethook()  -- the engine's own count hook, put back after
  sethook(hook, '', 100000)
  local ok, e = pcall(f) sethook(h, mask, count)
  mt.__index = env
  if ok then return nil end
  if type(e) == 'userdata' then e = pyerror(e) end
  return 'run', e
end
"""


class Functions:
    def __init__(self, server: Any, client: Any) -> None:
        self.server = server
        self.engine = engine = LuaEngine(server, client)
        self.ctx = LibCtx()
        self.loading: Library | None = None  # the library whose code is running
        self.load_start = 0.0
        self.current: tuple[ScriptRun, list[bytes]] | None = None  # FCALL running
        lua = engine.lua
        g = lua.globals()
        env = g[b'getfenv'](engine.compile(b'', b'=env'))  # the script environment
        run_redis = env[b'redis']
        api = {b'register_function': self._register_function}
        for key in (
            b'log',
            b'LOG_DEBUG',
            b'LOG_VERBOSE',
            b'LOG_NOTICE',
            b'LOG_WARNING',
            b'REDIS_VERSION',
            b'REDIS_VERSION_NUM',
        ):
            api[key] = run_redis[key]
        self._error = lua.eval(b'function(s) return {err=s} end')
        self._load = lua.execute(
            _LOADER,
            env,
            engine.table(api),
            engine.unwrap_error,
            self._expired,
            self._error(b'ERR FUNCTION LOAD timeout'),
        )
        engine.seal()
        engine.set_fresh(33792)  # Redis 7.0's FUNCTION state (used_memory_vm_functions)

    # -- loading ---------------------------------------------------------------------------

    def create(self, code: bytes, replace: bool, ctx: LibCtx | None = None) -> bytes:
        """functionsCreateWithLibraryCtx: load a library into `ctx` (the current one by
        default) and return its name; RedisError with Redis's message when it fails."""
        ctx = ctx if ctx is not None else self.ctx
        engine_name, name, body = parse_metadata(code)
        if not _valid_name(name):
            raise RedisError(f'ERR {E_NAME}')
        if engine_name.lower() != b'lua':
            raise RedisError(f"ERR Engine '{_s(engine_name)}' not found")
        old = ctx.libraries.get(name)
        if old is not None and not replace:
            raise RedisError(f"ERR Library '{_s(name)}' already exists")
        if old is not None:
            ctx.unlink(old)
        try:
            lib = Library(name, code)
            self._run_library(lib, body)
            if not lib.functions:
                raise RedisError('ERR No functions registered')
            for fn in lib.functions.values():
                if fn.name.lower() in ctx.functions:
                    raise RedisError(f'ERR Function {_s(fn.name)} already exists')
        except RedisError:
            if old is not None:
                ctx.link(old)
            raise
        ctx.link(lib)
        return name

    def _run_library(self, lib: Library, body: bytes) -> None:
        """luaEngineCreate: compile the code, run it once to register its functions."""
        self.loading = lib
        self.load_start = time.perf_counter()
        try:
            failed = self._load(body)
        finally:
            self.loading = None
        if failed is None:
            return
        what, err = failed
        if what == b'compile':
            raise RedisError('ERR Error compiling function: ' + _msg(err))
        if _lua_type(err) == 'table':
            msg = err[b'err']
            text = _msg(msg) if type(msg) is bytes else '(null)'
        else:
            s = lua_tostring(err)
            text = 'ERR ' + (_msg(s) if s is not None else '(null)')
        raise RedisError('ERR Error registering functions: ' + text)

    def _expired(self) -> bool:
        return (time.perf_counter() - self.load_start) * 1000 > LOAD_TIMEOUT_MS

    def _fail(self, msg: bytes) -> NoReturn:
        raise lua51.LuaError(self._error(b'ERR ' + msg))

    def _register_function(self, *args: Any) -> None:
        """redis.register_function(name, callback) or redis.register_function{...}."""
        lib = self.loading
        if lib is None:
            self._fail(b'redis.register_function can only be called on FUNCTION LOAD command')
        if not 1 <= len(args) <= 2:
            self._fail(b'wrong number of arguments to redis.register_function')
        description = None
        flags: frozenset[str] = frozenset()
        if len(args) == 2:
            name = lua_tostring(args[0])
            if name is None:
                self._fail(b'first argument to redis.register_function must be a string')
            callback = args[1]
            if _lua_type(callback) != 'function':
                self._fail(b'second argument to redis.register_function must be a function')
        else:
            name, callback, description, flags = self._named_args(args[0])
        if not _valid_name(name):
            self._fail(E_NAME.encode())
        if name in lib.functions:
            self._fail(b'Function already exists in the library')
        lib.functions[name] = Function(name, callback, lib, description, flags)

    def _named_args(self, table: Any) -> tuple[Any, Any, Any, frozenset[str]]:
        """luaRegisterFunctionReadNamedArgs, in the table's own iteration order."""
        if _lua_type(table) != 'table':
            self._fail(
                b'calling redis.register_function with a single argument is only applicable '
                b'to Lua table (representing named arguments).'
            )
        name = callback = description = None
        flags: frozenset[str] = frozenset()
        for k, v in table.items():
            key = lua_tostring(k)
            if key is None:
                self._fail(b'named argument key given to redis.register_function is not a string')
            key = key.split(b'\0', 1)[0].lower()
            if key == b'function_name':
                name = lua_tostring(v)
                if name is None:
                    self._fail(
                        b'function_name argument given to redis.register_function must be a string'
                    )
            elif key == b'description':
                description = lua_tostring(v)
                if description is None:
                    self._fail(
                        b'description argument given to redis.register_function must be a string'
                    )
            elif key == b'callback':
                if _lua_type(v) != 'function':
                    self._fail(
                        b'callback argument given to redis.register_function must be a function'
                    )
                callback = v
            elif key == b'flags':
                if _lua_type(v) != 'table':
                    self._fail(
                        b'flags argument to redis.register_function must be a table '
                        b'representing function flags'
                    )
                flags = self._flags(v)
            else:
                self._fail(b'unknown argument given to redis.register_function')
        if name is None:
            self._fail(b'redis.register_function must get a function name argument')
        if callback is None:
            self._fail(b'redis.register_function must get a callback argument')
        return name, callback, description, flags

    def _flags(self, table: Any) -> frozenset[str]:
        """luaRegisterFunctionReadFlags: t[1], t[2], ... up to the first nil."""
        found: set[str] = set()
        j = 1
        while True:
            v = table[j]
            if v is None:
                return frozenset(found)
            s = lua_tostring(v)
            name = s.split(b'\0', 1)[0].decode('latin-1').lower() if s is not None else ''
            if name not in FLAGS:
                self._fail(b'unknown flag given')
            found.add(name)
            j += 1

    # -- the commands' operations ------------------------------------------------------------

    def delete(self, name: bytes) -> None:
        lib = self.ctx.libraries.get(name)
        if lib is None:
            raise RedisError('ERR Library not found')
        self.ctx.unlink(lib)

    def flush(self) -> None:
        self.ctx = LibCtx()

    def codes(self) -> list[bytes]:
        """The libraries' source codes, what RDB files and AOF base files keep."""
        return [lib.code for lib in self.ctx.libraries.values()]

    def dump(self) -> bytes:
        compress = self.server.config['rdbcompression']
        return libraries_payload(self.codes(), compress)

    def restore(self, data: bytes, policy: str) -> None:
        """FUNCTION RESTORE: load every library of the payload into a new context, then
        swap it in (FLUSH) or join it to the current one (APPEND, REPLACE)."""
        if not verify_payload(data):
            raise RedisError('ERR DUMP payload version or checksum are wrong')
        ctx = LibCtx()
        reader = RdbReader(data)
        while len(data) - reader.pos > 10:
            try:
                kind = reader.type()
            except RdbError:
                raise RedisError('ERR can not read data type') from None
            if kind == RDB_OPCODE_FUNCTION2:
                code = _read(reader.string, 'Failed loading library payload')
            elif kind == RDB_OPCODE_FUNCTION_PRE_GA:
                code = read_pre_ga_library(reader)
            else:
                raise RedisError('ERR given type is not a function')
            self.create(code, False, ctx)
        if policy == 'flush':
            self.ctx = ctx
        else:
            self.ctx.join(ctx, policy == 'replace')

    def call(self, caller: Any, argv: list[bytes], ro: bool) -> Any:
        """FCALL / FCALL_RO: find the function, check numkeys and the flags
        (scriptPrepareForRun), run it with its keys and arguments."""
        fn = self.ctx.functions.get(argv[1].lower())
        if fn is None:
            raise RedisError('ERR Function not found')
        numkeys = string2ll(argv[2])  # getLongLongFromObject
        if numkeys is None:
            raise RedisError('ERR Bad number of keys provided')
        check_numkeys(argv, numkeys)
        run = ScriptRun(self.server, fn.name, caller, fn.flags, ro, False)
        self.current = (run, argv)
        try:
            return self.engine.execute(run, fn.callback, numkeys, argv)
        finally:
            self.current = None

    def running(self) -> tuple[ScriptRun, list[bytes]] | None:
        """The FCALL being run and its arguments, while one runs (FUNCTION STATS)."""
        return self.current


def _msg(b: bytes) -> str:
    return b.decode('utf-8', 'surrogateescape')
