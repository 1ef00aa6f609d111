"""One embedded Lua 5.1 state (lupa) set up as Redis 7.0 sets up its scripting state, and
a script's run in it.

- The state: lupa's runtime with no Python reachable (no attributes, no builtins, no
  eval), the libraries Redis links in (libs/), then sandbox.lua, which makes the scripts'
  environment and returns the functions the engine drives (compile, run_eval, run_fcall,
  reply). `seal` drops the real `debug` once the boot chunks took what they need.
- The `redis` table's functions are redis_api.py's (RedisApi, a part of LuaEngine): what
  crosses through redis.call and scriptCall's checks.
- A run (`execute`, on a ScriptRun of run_context.py): on the caller's database, time
  frozen at its start for expiry (store/clock.py) as Redis freezes it, its commands one
  unit in the AOF; redis.set_repl lasts for the run. On a cluster node its calls may
  touch only keys this node serves, of one slot (redis_api.py's scriptCall checks).
- The script's result to the caller (luaReplyToRedisReply, sandbox.lua's reply): string
  -> bulk, number -> integer (truncated as C casts), true -> 1, false -> null, tables with
  err / ok / double / big_number / verbatim_string / map / set, else an array up to the
  first nil; error replies inside it are counted in errorstats as sent.
- Errors: the sandbox's handler turns any error into {err, source, line}; the caller gets
  "-<err> script: <name>, on <source>:<line>." as Redis 7.0 words it (`error_reply`).
- A script longer than `busy-reply-threshold` lets other clients in through the count
  hook (busy.py): they get -BUSY, SCRIPT KILL / FUNCTION KILL / SHUTDOWN NOSAVE work.
- INFO's used_memory_lua: `memory`, as Redis's fresh state counts plus what was added.
"""

from __future__ import annotations

import time
from importlib.resources import files
from typing import Any

import lupa.lua51 as lua51

from .. import clock
from ..db_slice import key_slot
from ..resp import CountedError, FailedRaw, Raw, RedisError
from ..version import VERSION
from . import libs
from .redis_api import RedisApi, number_arg
from .run_context import ScriptRun

_lua_type = lua51.lua_type
_perf = time.perf_counter


def _no_attributes(obj: Any, name: Any, is_setting: bool) -> Any:
    raise AttributeError('not accessible from scripts')


class LuaEngine(RedisApi):
    """A Lua state with Redis's script environment (EVAL's; functions get their own);
    its `redis` API is RedisApi's (redis_api.py)."""

    def __init__(self, server: Any, client: Any) -> None:
        self.server = server
        self.client = client  # the commands' connection (Redis's lua_client)
        self.run: ScriptRun | None = None
        lua = self.lua = lua51.LuaRuntime(
            encoding=None,
            unpack_returned_tuples=True,
            register_eval=False,
            register_builtins=False,
            attribute_filter=_no_attributes,
            max_memory=server.config['script-memory-limit'],  # Redis sets no limit
        )
        libs.install(lua)
        api = {
            b'call': self._redis_call,
            b'pcall': self._redis_pcall,
            b'error_reply': self._error_reply,
            b'status_reply': self._status_reply,
            b'sha1hex': self._sha1hex,
            b'log': self._log,
            b'setresp': self._setresp,
            b'set_repl': self._set_repl,
            b'replicate_commands': lambda *a: True,
            b'breakpoint': self._breakpoint,
            b'debug': self._debug,
            b'acl_check_cmd': self._acl_check_cmd,
        }
        boot = files(__package__).joinpath('sandbox.lua').read_bytes()
        major, minor, patch = (int(p) for p in VERSION.split('.'))
        (
            self._compile,
            self._run_eval,
            self._run_fcall,
            self._reply,
            self.redis_table,
        ) = lua.execute(
            boot,
            lua.table_from(api),
            self._hook,
            self.unwrap_error,
            VERSION.encode(),
            (major << 16) | (minor << 8) | patch,
            self._call_table,
            server.config['lua-enable-deprecated-api'],
        )
        self._status = lua.eval(b'function(s) return {ok=s} end')
        self._error = lua.eval(b'function(s) return {err=s} end')
        # a redis.call's error reply: counted in errorstats when it came, marked so that
        # the script's failure with it is not counted again (Redis's field)
        self._counted = lua.eval(b'function(s) return {err=s, ignore_error_stats_update=true} end')
        self._double = lua.eval(b'function(d) return {double=d} end')
        self._big = lua.eval(b'function(s) return {big_number=s} end')
        self._verbatim = lua.eval(
            b'function(f, s) return {verbatim_string={format=f, string=s}} end'
        )
        self._wrap = lua.eval(b'function(k, t) return {[k]=t} end')
        self._gc_count = lua.eval(b'function() return collectgarbage("count") end')
        self._gc_collect = lua.eval(b'function() collectgarbage("collect") end')
        self.table = lua.table_from
        self.resp = 2  # redis.setresp: the protocol commands answer the script in
        # name as sent -> (command, writes, the argument counts it takes): _check_command
        self._checked: dict[bytes, tuple[Any, bool, range]] = {}
        self.config = server.config
        self.monitors = server.monitors  # MONITOR clients
        self.tracked = None  # the running script's caller, if it has CLIENT TRACKING on
        self.acl_caller: Any = None  # the running script's caller, if its ACL user is restricted
        # cluster mode: the Cluster, while a script runs for a client this node does not
        # obey unchecked (not its master, not the AOF): each call's keys are checked
        self.cluster: Any = None
        self.caller_command = b''
        self.plain_calls = False  # see _plain_calls
        self.fresh = self._boot_bytes = 0  # see memory()
        self.ldb: Any = None  # EVAL's debugger (ldb.py); FUNCTION's state has none
        # DEBUG SET-DISABLE-DENY-SCRIPTS: `noscript` commands run (the tests' hack)
        self.allow_noscript = False

    def seal(self) -> None:
        """Once the boot chunks took what they need from `debug`: out of the real global
        table, as lupa looks debug.traceback up there on every call into Lua (to use as
        its error handler), and every run catches its errors itself (sandbox.lua)."""
        self.lua.execute(b'debug = nil')

    def memory(self) -> int:
        """The Lua state's bytes as Redis's INFO used_memory_lua (used_memory_vm_eval,
        _vm_functions) counts them, in whole kilobytes (LUA_GCCOUNT): a fresh state of
        Redis's (`fresh`), plus the live data and code added since this one was set up
        (set_fresh). The libraries and the sandbox that are C in Redis are Lua here, some
        220 KB that Redis's figure does not have; and the garbage is collected first, as
        this state's collector (pause 200%, on that bigger heap) lets about that much
        garbage pile up, where Redis's heap stays within its 100 KB (the suite checks)."""
        self._gc_collect()
        grown = int(self._gc_count() * 1024) - self._boot_bytes
        return (self.fresh + max(grown, 0)) >> 10 << 10

    def set_fresh(self, fresh: int) -> None:
        """Note the state as it is now (its libraries and environment made) as Redis's
        fresh state of `fresh` bytes."""
        self._gc_collect()
        self.fresh = fresh
        self._boot_bytes = int(self._gc_count() * 1024)

    # -- compiling and running -----------------------------------------------------------

    def compile(self, body: bytes, chunkname: bytes) -> Any:
        """The compiled function; RedisError with Lua's message when it does not compile."""
        f, err = self._compile(body, chunkname)
        if f is None:
            raise CompileError(err.decode('utf-8', 'surrogateescape'))
        return f

    def execute(self, run: ScriptRun, f: Any, numkeys: int, args: list[bytes]) -> Any:
        """Run the script or function `f` as `run`, on the caller's database, and return
        its reply for the caller (a reply value or a RedisError). `args` are the EVAL's or
        FCALL's, numkeys checked: the keys and arguments after it reach an EVAL script as
        KEYS and ARGV, a function as its two arguments."""
        caller = run.caller
        client = self.client
        client.db = caller.db
        client.proto = self.resp = 2
        self.run = run
        self.tracked = caller if caller.tracking is not None else None
        self.acl_caller = caller if caller.acl_rules else None
        self.caller_command = args[0]  # EVAL, FCALL, ...: what the ACL log says it ran
        cluster = self.server.cluster
        if cluster is not None and caller.user is not self.server.acl.loader:
            self.cluster = cluster  # scriptVerifyClusterState, at each call
            if numkeys:  # its declared keys: one slot, routing checked (c->slot)
                run.slot = key_slot(args[3])
        else:
            self.cluster = None
        self.plain_calls = self._plain_calls()
        frozen = clock.freeze_now()
        aof = self.server.persistence.aof  # a run's commands are one unit
        propagating = aof.propagating
        if propagating:
            aof.begin()
        try:
            runner = self._run_eval if run.is_eval else self._run_fcall
            ok, r = runner(f, numkeys, *args[3:])
        finally:
            if propagating:
                aof.targets = 3  # redis.set_repl lasts for the run (TO_ALL)
                aof.end()
            clock.freeze(frozen)
            self.run = None
            if run.timed_out:
                self.server.busy.end(run)
        if ok:
            t = type(r)
            if t is bytes or t is int:
                return r
            if t is bool and self.resp == 2:
                return 1 if r else None  # true -> :1, false -> the caller's null
            raw, errors, marked = self._reply(r, caller.proto, self.resp)  # sandbox.lua
            if raw[:1] == b'-':  # an error table: the command's error reply
                msg = raw[1:-2].decode('utf-8', 'surrogateescape')
                return CountedError(msg) if marked else RedisError(msg)
            if errors is None and not marked:
                return Raw(raw)
            reply = FailedRaw(raw)  # error replies inside an array: counted as sent
            reply.fails = (errors is not None) + marked
            for msg in (errors or {}).values():
                self.server.stats.error(msg.decode('utf-8', 'surrogateescape'))
            return reply
        return self.error_reply(r, run.name)

    def error_reply(self, r: Any, name: bytes) -> RedisError:
        """The caller's error for a failed run (luaCallFunction)."""
        if _lua_type(r) != 'table':  # out of memory: the handler never saw it
            self._gc_collect()  # what the failed script built is garbage now
            msg = r if isinstance(r, bytes) else b'execution failure'
            return _error(b'ERR Error running script %s, %s ' % (name, msg[:100]))
        msg = r[b'err']
        if not isinstance(msg, bytes):
            msg = b'ERR unknown error' if msg is None else number_arg(msg)
        source, line = r[b'source'], r[b'line']
        if line and source:
            msg += b' script: %s, on %s:%d.' % (name, source, line)
        # a redis.call's error was counted when it came
        return _error(msg, CountedError if r[b'ignore_error_stats_update'] else RedisError)

    def unwrap_error(self, e: Any) -> Any:
        """The error value (a table, or a message) a Python callback raised, as the
        script should see it."""
        if isinstance(e, lua51.LuaError) and e.args:
            value = e.args[0]
            if type(value) is bytes or _lua_type(value) == 'table':
                return value
        return self._err(str(e).encode('utf-8', 'replace'))

    def _hook(self) -> Any:
        """Every 100,000 Lua instructions: past busy-reply-threshold, serve other clients
        for a moment; once killed, raise the kill error. The commands' recorded durations
        are folded meanwhile, so that a script looping over redis.call does not pile
        them up until it ends."""
        run = self.run
        if run is None:
            return None
        self.server.settle_stats()
        if not run.timed_out:
            threshold = self.server.config['busy-reply-threshold']
            if (_perf() - run.start) * 1000 < threshold:
                return None
            self.server.busy.begin(run)
        self.server.busy.poll()
        self.plain_calls = self._plain_calls()
        if run.killed is not None:
            if run.killed == 'kill':
                self.server.log('Lua script killed by user with SCRIPT KILL.', '#')
            return self._err(b'Script killed by user with SCRIPT KILL...')
        return None


class CompileError(Exception):
    """Lua's message for code that does not compile."""


def _error(msg: bytes, cls: type[RedisError] = RedisError) -> RedisError:
    """An error reply carrying `msg` as the script gave it (CR/LF made spaces, as
    addReplyErrorFormat does); a message without a leading code is sent as is."""
    text = msg.replace(b'\r', b' ').replace(b'\n', b' ')
    return cls(text.decode('utf-8', 'surrogateescape'))
