"""The `redis` table's functions a script calls (script_lua.c's luaRedis*Command), as
methods of the engine (store/scripting/engine.py's LuaEngine, whose state they use), and
what crosses through redis.call both ways.

- redis.call / redis.pcall (scriptCall): arguments are Lua strings as they are, numbers as
  "%.17g" (`number_arg`); the command runs on the engine's own client (a Connection with
  no socket, as Redis's lua_client) after scriptCall's checks in its order (unknown
  command, arity, `noscript`, a stale replica, the caller's ACL user, writes from
  read-only scripts or while writes are refused, denyoom over maxmemory, on a cluster node
  keys of another node or of a second slot), through the
  executor inlined, so commandstats, keyspace events, WATCH, MONITOR, SLOWLOG and
  blocked clients see it as any other command. A refusal or the command's error reply is
  raised in the script as its error table, counted in errorstats as sent.
- Per call, so written for speed: a plain command seen before (`_checked`) skips to the
  arity check, and `plain_calls` (set when a run starts and after other clients were
  served) skips the checks nothing can fail for this run.
- The command's reply to Lua (redisProtocolToLuaType, `to_lua`): integer -> number, bulk
  -> string, null -> false (RESP2) or nil (RESP3), status -> {ok=...}, error -> {err=...},
  array -> table; under redis.setresp(3) also map, set, double, boolean, big number and
  verbatim tables. A pre-encoded (Raw) reply is parsed back first (`_parse_resp`).
- A redis.call with more arguments than lupa passes to Python (7997) arrives as a table
  (sandbox.lua's unpack, `_call_table`).
- The rest of the table: error_reply, status_reply, sha1hex, log, setresp, set_repl,
  breakpoint / debug (the debugger's, ldb.py), acl_check_cmd.
"""

from __future__ import annotations

import hashlib
import math
import time
from typing import Any, NoReturn

import lupa.lua51 as lua51

from ..acl_checks import DENIED_CHANNEL, DENIED_CMD, DENIED_KEY
from ..acl_checks import OK as ALLOWED
from ..cluster.routing import script_access_error
from ..command_table import MAY_REPLICATE, find_command
from ..latency import observe
from ..memory.eviction import OOM
from ..resp import OK, DoubleText, Map, Raw, RedisError, Set, Verbatim, format_double, int_bytes
from .run_context import ScriptRun

_ACL_DENIED = {
    DENIED_CMD: b"ERR The user executing the script can't run this command or subcommand",
    DENIED_KEY: b"ERR The user executing the script can't access at least one of the keys "
    b'mentioned in the command arguments',
    DENIED_CHANNEL: b"ERR The user executing the script can't publish to the channel "
    b'mentioned in the command',
}

_perf_ns = time.perf_counter_ns


def number_arg(v: float) -> bytes:
    """A Lua number as a command argument: "%.17g", C's spelling of NaN and infinities.
    lupa hands integral numbers over as ints: below 2**53 "%d" spells them the same."""
    if type(v) is int and -9007199254740992 <= v <= 9007199254740992:
        return b'%d' % v
    if v != v:
        return b'-nan' if math.copysign(1.0, v) < 0 else b'nan'
    return b'%.17g' % v


def lua_tostring(v: Any) -> bytes | None:
    """lua_tolstring: strings as they are, numbers as Lua prints them ("%.14g")."""
    t = type(v)
    if t is bytes:
        s: bytes = v
        return s
    if t is int or t is float:
        return b'%.14g' % v
    return None


def _lua_tonumber(v: Any) -> float | None:
    """lua_tonumber (0 and no number): numbers, and strings that read as one."""
    t = type(v)
    if t is int or t is float:
        n: float = v
        return n
    if t is bytes:
        try:
            return float(v)
        except ValueError:
            return None
    return None


class RedisApi:
    """The `redis` table's functions and redis.call's conversions: a part of LuaEngine
    (store/scripting/engine.py), on its state."""

    # LuaEngine's state these use (set in LuaEngine.__init__)
    server: Any
    client: Any  # the commands' connection (Redis's lua_client)
    run: ScriptRun | None
    resp: int
    _checked: dict[bytes, tuple[Any, bool, range]]
    plain_calls: bool
    config: Any
    monitors: Any
    tracked: Any
    acl_caller: Any
    cluster: Any  # the Cluster while a script runs for a client not obeyed unchecked
    caller_command: bytes
    ldb: Any
    allow_noscript: bool
    table: Any  # the Lua constructors: a table, {ok=s}, {err=s}, ...
    _status: Any
    _error: Any
    _counted: Any
    _double: Any
    _big: Any
    _verbatim: Any
    _wrap: Any

    def _redis_call(self, *args: Any) -> Any:
        """redis.call (scriptCall): run one command for the script and answer its reply;
        an error is raised in the script as its error table. Per call, so written out:
        the executor (command_table.call) is inlined, and a plain command seen before
        skips scriptCall's checks but arity (`_checked`)."""
        argv = [*args]
        for a in argv:
            if type(a) is not bytes:
                argv = self._convert_args(argv)
                break
        try:
            top, write, lengths = self._checked[argv[0]]
        except (KeyError, IndexError):  # not seen yet (or no name)
            top, cmd, write = self._check_command(argv)
        else:
            cmd = top
            if len(argv) not in lengths:
                self._reject(b'ERR Wrong number of args calling Redis command from script', cmd)
        if self.plain_calls:
            if write:
                self.run.written = True  # type: ignore[union-attr]
        else:
            self._check_call(cmd, argv, write)
        t0 = _perf_ns()
        try:
            handler = top.handler  # (as Connection.run calls it)
            r = handler(self.client, argv)
        except RedisError as e:
            top.failed += 1
            self._reject(e.msg.encode('utf-8', 'surrogateescape'))
        except Exception as e:  # a bug must not take the server down
            top.failed += 1
            self.server.log_exception(f'Error running {cmd.name} from a script', e)
            self._reject(f'ERR internal error while running {cmd.name}'.encode())
        finally:
            took = _perf_ns() - t0
            top.took.append(took)  # calls, time, LATENCY HISTOGRAM (Command.settle)
            if took >= self.config.slow_ns:
                observe(self.client, top, argv, took)  # SLOWLOG, LATENCY (store/latency.py)
            if self.monitors and self.monitors.shows(cmd):
                self.monitors.feed(self.client, argv)  # MONITOR's [db lua] lines
        if self.tracked is not None:
            # CLIENT TRACKING: a read-only command makes the script's keys remembered
            self.server.tracking.script_read(self.tracked, top, argv)
        t = type(r)
        if t is bytes or t is int:
            return r
        if r is OK:
            return self._status(b'OK')
        return self.to_lua(r, self.resp)

    def _check_call(self, cmd: Any, argv: list[bytes], write: bool) -> None:
        """scriptCall's checks after the command's own: a stale replica's, the caller's
        ACL user, a write's, and a cluster node's (`plain_calls` is False when any of
        them may refuse; a stale replica is read-only, unless replica-read-only is off)."""
        server = self.server
        link = server.replica_link
        if (
            link is not None
            and 'stale' not in cmd.flags
            and not link.up()
            and not server.config['replica-serve-stale-data']
        ):  # scriptVerifyAllowStale: an allow-stale script on a replica cut off from its master
            self._reject(b'ERR Can not execute the command on a stale replica', cmd)
        if self.acl_caller is not None:
            self._check_acl(cmd, argv)
        if write:
            self._check_write(cmd)
        elif cmd.name in MAY_REPLICATE and self.run is not None and self.run.read_only:
            self._reject(b'ERR Write commands are not allowed from read-only scripts.', cmd)
        if self.cluster is not None and self.run is not None:  # scriptVerifyClusterState
            err = script_access_error(self.cluster, self.run.caller, cmd, argv, self.run)
            if err is not None:
                self._reject(err.encode(), cmd)

    def _plain_calls(self) -> bool:
        """Whether _check_call has nothing to check for the running script: its caller
        may run every command on every key, it may write, it is not out of memory, and
        writes are not refused. Set when a run starts, and again after other clients were
        served (busy.py), the only moments those can change while a script runs."""
        run, server = self.run, self.server
        return not (
            run is None
            or self.acl_caller is not None
            or self.cluster is not None  # each call's keys are checked
            or run.read_only
            or run.oom
            or server.readonly_denied  # the refusals' messages, None when writes pass
            or server.write_denied
            or server.replicas_denied
        )

    def _check_write(self, cmd: Any) -> None:
        """scriptCall's checks of a write command, and the run has written from then on
        (SCRIPT KILL refuses)."""
        run = self.run
        assert run is not None  # the redis API is called from a running script
        if run.read_only:
            self._reject(b'ERR Write commands are not allowed from read-only scripts.', cmd)
        if run.written:  # a script that wrote is not failed on the server's state now
            return  # (Redis's SCRIPT_WRITE_DIRTY)
        server = self.server  # -READONLY, -MISCONF, -NOREPLICAS, in scriptCall's order
        for denied in (server.readonly_denied, server.write_denied, server.replicas_denied):
            if denied is not None:
                self._reject(denied.encode(), cmd)
        if run.oom and 'denyoom' in cmd.flags:
            self._reject(OOM.encode(), cmd)
        run.written = True

    def _check_command(self, argv: list[bytes]) -> tuple[Any, Any, bool]:
        """scriptCall's checks, in its order: (the command to run, the command or
        subcommand it is, whether it writes). A plain command that passes is remembered
        by its name as sent, so the next call skips to the arity check."""
        if not argv:
            self._raise(b'Please specify at least one argument for this redis lib call')
        table = self.server.commands
        cmd = table.get(argv[0]) or table.get(argv[0].lower())
        top = cmd
        if cmd is not None and cmd.subcommands and len(argv) > 1:
            cmd = cmd.find_subcommand(argv[1])
        if cmd is None:
            self._reject(b'ERR Unknown Redis command called from script')
        n, arity = len(argv), cmd.arity
        if (n != arity) if arity > 0 else (n < -arity):
            self._reject(b'ERR Wrong number of args calling Redis command from script', cmd)
        noscript = 'noscript' in cmd.flags
        if noscript and not self.allow_noscript:
            self._reject(b'ERR This Redis command is not allowed from script', cmd)
        write = 'write' in cmd.flags
        if cmd is top and not cmd.subcommands and not noscript:
            lengths = range(arity, arity + 1) if arity > 0 else range(-arity, 1 << 62)
            self._checked[argv[0]] = (cmd, write, lengths)
        return top, cmd, write

    def _redis_pcall(self, *args: Any) -> Any:
        """redis.pcall: as redis.call, with an error table as the value."""
        try:
            return self._redis_call(*args)
        except lua51.LuaError as e:
            return e.args[0]

    def _call_table(self, is_pcall: bool, args: Any) -> Any:
        """redis.call (redis.pcall when `is_pcall`) with its arguments in a table
        {n=count, ...}: how a call with more arguments than lupa passes to Python (7997)
        arrives (sandbox.lua's unpack)."""
        argv = [args[i] for i in range(1, args[b'n'] + 1)]
        return self._redis_pcall(*argv) if is_pcall else self._redis_call(*argv)

    def _convert_args(self, argv: list[Any]) -> list[bytes]:
        """Numbers as _number_arg spells them (the small integers spelled once), in
        place; anything else but a string is an error."""
        i = 0
        for a in argv:
            t = type(a)
            if t is not bytes:
                if t is int:
                    b = int_bytes(a)
                    argv[i] = number_arg(a) if b is None else b
                elif t is float:
                    argv[i] = number_arg(a)
                else:
                    self._raise(b'Lua redis lib command arguments must be strings or integers')
            i += 1  # noqa: SIM113 - enumerate costs ~600 instructions a call here
        return argv

    def _err(self, msg: bytes) -> Any:
        return self._error(b'ERR ' + msg)

    def _raise(self, msg: bytes) -> NoReturn:
        raise lua51.LuaError(self._err(msg))

    def _reject(self, msg: bytes, cmd: Any = None) -> NoReturn:
        """Raise a redis.call's error reply, `msg` with its code (scriptCall's checks, the
        command's own error): it was sent to the script's client, so it counts in
        errorstats, and with `cmd` (a check refused it) in the command's rejected calls,
        as Redis counts them."""
        self.server.stats.error(msg.decode('utf-8', 'surrogateescape'))
        if cmd is not None:
            cmd.rejected += 1
        raise lua51.LuaError(self._counted(msg))

    def _error_buff(self, s: bytes) -> Any:
        """luaPushErrorBuff: "-CODE msg" keeps its code, anything else gets ERR; the
        message is trimmed of CR and LF."""
        s = s.split(b'\0', 1)[0]
        code, msg = b'ERR', s
        if s[:1] == b'-':
            sp = s.find(b' ')
            code, msg = (b'ERR', s[1:]) if sp < 0 else (s[1:sp], s[sp + 1 :])
        return self._error(code + b' ' + msg.strip(b'\r\n'))

    def _error_reply(self, *args: Any) -> Any:
        if len(args) != 1 or type(args[0]) is not bytes:
            return self._err(b'wrong number or type of arguments')
        s = args[0]
        return self._error_buff(s if s[:1] == b'-' else b'-' + s)

    def _status_reply(self, *args: Any) -> Any:
        if len(args) != 1 or type(args[0]) is not bytes:
            return self._err(b'wrong number or type of arguments')
        return self._status(args[0])

    def _sha1hex(self, *args: Any) -> bytes:
        if len(args) != 1:
            self._raise(b'wrong number of arguments')
        s = lua_tostring(args[0]) or b''
        return hashlib.sha1(s).hexdigest().encode()

    def _log(self, *args: Any) -> None:
        """redis.log(level, ...): the strings and numbers joined by spaces, written when
        `loglevel` lets that level through."""
        if len(args) < 2:
            self._raise(b'redis.log() requires two arguments or more.')
        level = _lua_tonumber(args[0])
        if level is None:
            self._raise(b'First argument must be a number (log level).')
        if not 0 <= level <= 3:
            self._raise(b'Invalid debug level.')
        parts = []
        for j, a in enumerate(args[1:]):
            s = lua_tostring(a)
            if s is not None:
                parts.append(s if j == 0 else b' ' + s)
        # (Server.log drops what is below `loglevel`)
        self.server.log(b''.join(parts).decode('utf-8', 'replace'), '.-*#'[int(level)])

    def _setresp(self, *args: Any) -> None:
        if len(args) != 1:
            self._raise(b'redis.setresp() requires one argument.')
        resp = _lua_tonumber(args[0])
        if resp not in (2, 3):
            self._raise(b'RESP version must be 2 or 3.')
        self.resp = self.client.proto = int(resp)

    def _set_repl(self, *args: Any) -> None:
        if len(args) != 1:
            self._raise(b'redis.set_repl() requires two arguments.')
        flags = _lua_tonumber(args[0]) or 0
        if int(flags) & ~3:
            self._raise(
                b'Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.'
            )
        # The script's next commands go to the AOF (1), the replicas (2), both or neither
        # (store/persistence/aof.py's `targets`, reset when the run ends)
        aof = self.server.persistence.aof
        if aof.propagating:
            aof.targets = int(flags)

    def _breakpoint(self, *args: Any) -> bool:
        """redis.breakpoint: in a debugging session, stop at the next line."""
        ldb = self.ldb
        if ldb is None or not ldb.active:
            return False
        ldb.luabp = True
        return True

    def _debug(self, *args: Any) -> None:
        """redis.debug: in a debugging session, log the values in its console."""
        ldb = self.ldb
        if ldb is not None and ldb.active:
            ldb.debug_log(args)

    def _acl_check_cmd(self, *args: Any) -> bool:
        """redis.acl_check_cmd: whether the script's caller may run the command."""
        if not args:
            self._raise(b'Please specify at least one argument for this redis lib call')
        argv = self._convert_args(list(args))
        cmd = find_command(self.server.commands, argv)
        if cmd is None:
            self._raise(b'Invalid command passed to redis.acl_check_cmd()')
        run = self.run
        assert run is not None
        allowed: bool = self.server.acl.check(run.caller.user, cmd, argv)[0] == ALLOWED
        return allowed

    def _check_acl(self, cmd: Any, argv: list[bytes]) -> None:
        """scriptVerifyACL: the caller's user must be allowed the command, its keys and
        channels (logged in the 'lua' context)."""
        running = self.server.commands.get(self.caller_command.lower())
        result = self.server.acl.check_logged(self.acl_caller, cmd, argv, 'lua', running)
        if result != ALLOWED:
            self._reject(_ACL_DENIED[result], cmd)

    # -- replies to the script -----------------------------------------------------------

    def to_lua(self, r: Any, resp: int) -> Any:
        """A command's reply as the script sees it (redisProtocolToLuaType)."""
        t = type(r)
        if t is bytes or t is int:
            return r
        if r is None:
            return None if resp == 3 else False
        if t is str:
            return self._status(r.encode())
        if t is list or t is tuple:
            return self.table([self.to_lua(v, resp) for v in r])
        if isinstance(r, RedisError):
            return self._error(r.msg.encode('utf-8', 'surrogateescape'))
        if t is bool:
            return r if resp == 3 else int(r)
        if t is float:
            return self._double(r) if resp == 3 else format_double(r)
        if t is Map:
            if resp == 3:
                return self._wrap(b'map', self.table({k: self.to_lua(v, resp) for k, v in r}))
            return self.table([self.to_lua(x, resp) for kv in r for x in kv])
        if t is Set:
            if resp == 3:
                return self._wrap(b'set', self.table({k: True for k in r}))
            return self.table([self.to_lua(v, resp) for v in r])
        if t is Verbatim:
            return self._verbatim(b'txt', bytes(r)) if resp == 3 else bytes(r)
        if t is DoubleText:
            return self._double(float(r)) if resp == 3 else bytes(r)
        if t is Raw:
            value, _ = _parse_resp(bytes(r), 0)
            return self._from_resp(value, resp)
        raise TypeError(f'cannot convert {t.__name__}')

    def _from_resp(self, v: Any, resp: int) -> Any:
        """Values _parse_resp made of a pre-encoded (Raw) reply."""
        kind, x = v
        if kind == 'null':
            return None if resp == 3 else False
        if kind == 'array':
            return self.table([self._from_resp(e, resp) for e in x])
        if kind == 'map':
            pairs = {self._from_resp(k, resp): self._from_resp(e, resp) for k, e in x}
            return self._wrap(b'map', self.table(pairs))
        if kind == 'set':
            return self._wrap(b'set', self.table({self._from_resp(e, resp): True for e in x}))
        if kind == 'status':
            return self._status(x)
        if kind == 'error':
            return self._error(x)
        if kind == 'double':
            return self._double(x)
        if kind == 'big':
            return self._big(x)
        if kind == 'verbatim':
            return self._verbatim(x[:3], x[4:])
        return x  # bulk, integer, boolean


def _parse_resp(data: bytes, pos: int) -> tuple[Any, int]:
    """One RESP2/3 value of a pre-encoded reply as (kind, value), and where it ends."""
    end = data.index(b'\r\n', pos)
    mark, line = data[pos : pos + 1], data[pos + 1 : end]
    pos = end + 2
    if mark == b'$' or mark == b'=':
        n = int(line)
        if n < 0:
            return ('null', None), pos
        s = data[pos : pos + n]
        return ('verbatim' if mark == b'=' else 'bulk', s), pos + n + 2
    if mark == b':':
        return ('int', int(line)), pos
    if mark == b'+':
        return ('status', line), pos
    if mark == b'-':
        return ('error', line), pos
    if mark == b'_':
        return ('null', None), pos
    if mark == b'#':
        return ('bool', line == b't'), pos
    if mark == b',':
        return ('double', float(line)), pos
    if mark == b'(':
        return ('big', line), pos
    if mark == b'|':  # an attribute: skipped, the reply after it is the value (as Redis)
        for _ in range(2 * int(line)):
            _, pos = _parse_resp(data, pos)
        return _parse_resp(data, pos)
    n = int(line)
    if n < 0:
        return ('null', None), pos
    items = []
    count = 2 * n if mark == b'%' else n
    for _ in range(count):
        item, pos = _parse_resp(data, pos)
        items.append(item)
    if mark == b'%':
        return ('map', list(zip(items[::2], items[1::2]))), pos
    return ('set' if mark == b'~' else 'array', items), pos
