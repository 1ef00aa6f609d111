"""The Lua debugger (LDB, eval.c's ldb* in Redis 7.0): SCRIPT DEBUG SYNC makes the client's
next EVAL a debugging session.

The session runs the script with a line hook (`_LUA`): on each line of the user's script
where it must stop (stepping, a breakpoint, redis.breakpoint()) the debugger writes its log
lines to the client as an array of status replies, then reads the client's debugger
commands straight from its socket, blocking the server as Redis's synchronous session does
(step, continue, list, whole, print, break, trace, eval, redis, maxlen, abort, help). When
the script ends the log ends with "<endsession>", the EVAL's reply follows and the
connection is closed after it.

SCRIPT DEBUG YES (Redis forks a child to hold the session, so that the script's writes are
thrown away) runs the session the same way here in a forked child: the parent forgets the
client, the child serves it and exits.

Nothing here is on the path of a script run without the debugger: the session swaps the
line hook and redis.call / redis.pcall in, and back out when it ends.
"""

from __future__ import annotations

import os
import select
import threading
from typing import Any

from lupa.lua51 import LuaError

from ..resp import NO_REPLY, to_bytes
from ..tls_transport import TlsTransport

MAX_LEN_DEFAULT = 256  # LDB_MAX_LEN_DEFAULT: log lines of values are cut there
BREAKPOINTS_MAX = 64  # LDB_BREAKPOINTS_MAX

_HELP = (
    'Redis Lua debugger help:',
    '[h]elp               Show this help.',
    '[s]tep               Run current line and stop again.',
    '[n]ext               Alias for step.',
    '[c]ontinue           Run till next breakpoint.',
    '[l]ist               List source code around current line.',
    '[l]ist [line]        List source code around [line].',
    '                     line = 0 means: current position.',
    '[l]ist [line] [ctx]  In this form [ctx] specifies how many lines',
    '                     to show before/after [line].',
    "[w]hole              List all source code. Alias for 'list 1 1000000'.",
    '[p]rint              Show all the local variables.',
    '[p]rint <var>        Show the value of the specified variable.',
    '                     Can also show global vars KEYS and ARGV.',
    '[b]reak              Show all breakpoints.',
    '[b]reak <line>       Add a breakpoint to the specified line.',
    '[b]reak -<line>      Remove breakpoint from the specified line.',
    '[b]reak 0            Remove all breakpoints.',
    '[t]race              Show a backtrace.',
    '[e]val <code>        Execute some Lua code (in a different callframe).',
    '[r]edis <cmd>        Execute a Redis command.',
    '[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.',
    '                     Specifying zero as <len> means unlimited.',
    '[a]bort              Stop the execution of the script. In sync',
    '                     mode dataset changes will be retained.',
    '',
    'Debugger functions you can call from Lua scripts:',
    'redis.debug()        Produce logs in the debugger console.',
    'redis.breakpoint()   Stop execution like if there was a breakpoint in the',
    '                     next line of code.',
)

# The Lua side, made before the engine is sealed (it needs `debug`): the line hook, and
# reading the user's frames (ldbCatStackValue's representation of values).
_LUA = rb"""
local on_line, redis_table, call, pcall_ = ...
local getinfo, getlocal, sethook, gethook = debug.getinfo, debug.getlocal, debug.sethook,
                                            debug.gethook
local type, tostring, next, format, concat, gsub, byte =
      type, tostring, next, string.format, table.concat, string.gsub, string.byte
local SRC = '@user_script'
local saved, saved_call, saved_pcall

local function line_hook(event, line)
  if event == 'line' and getinfo(2, 'S').source == SRC then on_line(line) end
end
local function start()
  saved = {gethook()}
  saved_call, saved_pcall = redis_table.call, redis_table.pcall
  redis_table.call, redis_table.pcall = call, pcall_
  sethook(line_hook, 'l')
end
local function stop()
  sethook(saved[1], saved[2], saved[3])
  redis_table.call, redis_table.pcall = saved_call, saved_pcall
end

-- sdscatrepr
local function quote(s)
  return '"' .. gsub(s, '[%c"\\\128-\255]', function(c)
    if c == '\\' or c == '"' then return '\\' .. c end
    if c == '\n' then return '\\n' end
    if c == '\r' then return '\\r' end
    if c == '\t' then return '\\t' end
    if c == '\a' then return '\\a' end
    if c == '\b' then return '\\b' end
    return format('\\x%02x', byte(c))
  end) .. '"'
end
local function repr(v, level)
  if level == 10 then return '<max recursion level reached! Nested table?>' end
  local t = type(v)
  if t == 'string' then return quote(v) end
  if t == 'boolean' or t == 'nil' then return tostring(v) end
  if t == 'number' then return format('%g', v) end
  if t == 'table' then
    local array, full, expected, is_array = {}, {}, 1, true
    for k, x in next, v do
      if is_array and (type(k) ~= 'number' or k ~= expected) then is_array = false end
      array[#array + 1] = repr(x, level + 1)
      full[#full + 1] = '[' .. repr(k, level + 1) .. ']=' .. repr(x, level + 1)
      expected = expected + 1
    end
    return '{' .. concat(is_array and array or full, '; ') .. '}'
  end
  local address = gsub(tostring(v), '^[^:]*: ', '')
  if t == 'function' then return '"function@' .. address .. '"' end
  return '"' .. t .. '@' .. address .. '"'
end

-- the level of the user's innermost frame, seen from the caller of this
local function user_level()
  local l = 3
  while true do
    local i = getinfo(l, 'S')
    if i == nil then return nil end
    if i.source == SRC then return l - 1 end
    l = l + 1
  end
end

local function locals()
  local l, out = user_level(), {}
  if l == nil then return out end
  local i = 1
  local name, v = getlocal(l, i)
  while name ~= nil do
    if name ~= '(*temporary)' then out[#out + 1] = name .. ' = ' .. repr(v, 0) end
    i = i + 1
    name, v = getlocal(l, i)
  end
  return out
end
local function lookup(varname, globals)
  local l = user_level()
  if l ~= nil then
    while getinfo(l, 'S') do
      local i = 1
      local name, v = getlocal(l, i)
      while name ~= nil do
        if name == varname then return repr(v, 0) end
        i = i + 1
        name, v = getlocal(l, i)
      end
      l = l + 1
    end
  end
  if varname == 'KEYS' or varname == 'ARGV' then return repr(globals[varname], 0) end
  return nil
end
local function trace()
  local out, l, level = {}, user_level(), 0
  if l == nil then return out end
  while true do
    local i = getinfo(l, 'Snl')
    if i == nil then break end
    if i.source == SRC then
      out[#out + 1] = {(level == 0 and 'In ' or 'From ') .. (i.name or 'top level') .. ':',
                       i.currentline}
    end
    level = level + 1
    l = l + 1
  end
  return out
end
local function pcall1(f)  -- pcall keeping one result: always two values for Python
  local ok, v = pcall(f)
  return ok, v
end
return start, stop, repr, locals, lookup, trace, pcall1
"""


def _atoi(b: bytes) -> int:
    """C's atoi: the leading digits (and sign), 0 without."""
    b = b.lstrip()
    end = 1 if b[:1] in (b'-', b'+') else 0
    while end < len(b) and 48 <= b[end] <= 57:
        end += 1
    try:
        return int(b[:end])
    except ValueError:
        return 0


def _repr(s: bytes) -> str:
    """sdscatrepr."""
    out = ['"']
    for ch in s:
        c = chr(ch)
        if c in '\\"':
            out.append('\\' + c)
        elif c == '\n':
            out.append('\\n')
        elif c == '\r':
            out.append('\\r')
        elif c == '\t':
            out.append('\\t')
        elif c == '\a':
            out.append('\\a')
        elif c == '\b':
            out.append('\\b')
        elif 32 <= ch < 127:
            out.append(c)
        else:
            out.append('\\x%02x' % ch)
    out.append('"')
    return ''.join(out)


# scriptCall's refusals (redis_api.py), logged without their code, as Redis words them there
_CHECKS = (
    'ERR Unknown Redis command called from script',
    'ERR Wrong number of args calling Redis command from script',
    'ERR This Redis command is not allowed from script',
    'ERR Write commands are not allowed from read-only scripts',
    "ERR The user executing the script can't",
    'ERR Please specify at least one argument',
)


class _Abort(Exception):
    """The client went away while the debugger waited for a command."""


class Ldb:
    """The debugger of one EVAL engine: which clients asked for it (SCRIPT DEBUG), and the
    session running, if any."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.clients: dict[Any, str] = {}  # connection -> 'sync' or 'yes' (forked)
        lua = engine.lua
        as_function = lua.eval(b'python.as_function')
        made = lua.execute(
            _LUA,
            as_function(self._on_line),
            engine.redis_table,
            as_function(self._call),
            as_function(self._pcall),
        )
        self._start, self._stop, self._repr, self._locals = made[:4]
        self._lookup, self._trace, self._pcall1 = made[4:]
        self.env = lua.globals().getfenv(engine.compile(b'', b'=env'))  # KEYS, ARGV
        self.active = False
        self.fd = -1
        self.tls: TlsTransport | None = None  # the session's client is on tls-port
        self.src: list[bytes] = []
        self.logs: list[str] = []
        self.cbuf = b''
        self.step = False
        self.luabp = False
        self.breakpoints: list[int] = []
        self.currentline = -1
        self.maxlen = MAX_LEN_DEFAULT
        self.maxlen_hint_sent = False

    # -- SCRIPT DEBUG, and the session around an EVAL ---------------------------------------

    def enable(self, conn: Any, mode: str) -> None:
        for gone in [c for c in self.clients if c.closing or c.transport is None]:
            del self.clients[gone]  # (clients that left without an EVAL)
        self.clients[conn] = mode

    def disable(self, conn: Any) -> None:
        self.clients.pop(conn, None)

    def wants(self, conn: Any) -> bool:
        return bool(self.clients) and conn in self.clients

    def run(self, conn: Any, body: bytes, run: Any) -> Any:
        """evalGenericCommandWithDebugging: `run()` (the EVAL) inside a session on `conn`."""
        mode = self.clients.pop(conn)
        server = self.engine.server
        transport = conn.transport
        sock = transport.get_extra_info('socket') if transport is not None else None
        if sock is None:
            return run()
        # the session reads and writes the socket itself; a TLS client's records are
        # sealed and opened with its connection's TLS state
        self.tls = transport if isinstance(transport, TlsTransport) else None
        forked = mode == 'yes'
        if forked:
            pid = os.fork()
            if pid:
                conn.close_after_reply()  # the parent forgets the client (the child has it)
                transport.abort()
                threading.Thread(target=os.waitpid, args=(pid, 0), daemon=True).start()
                return NO_REPLY
            server.log('Redis forked for debugging eval', '#')
        else:
            server.log('Redis synchronous debugging eval session started', '#')
        self.fd = sock.fileno()
        self.active, self.step, self.luabp = True, True, False
        self.breakpoints, self.logs, self.cbuf = [], [], b''
        self.maxlen, self.maxlen_hint_sent = MAX_LEN_DEFAULT, False
        self.src = body.rstrip(b'\r\n').split(b'\n')
        self._start()
        try:
            reply = run()
        finally:
            self._stop()
            self.active = False
            self.log('<endsession>')
            try:
                self.send_logs()
            except _Abort:
                pass
        # the EVAL's reply, then the connection is closed: the session's end for the client
        try:
            self._write(to_bytes(reply, conn.proto))
        except _Abort:
            pass
        if forked:
            server.log('Lua debugging session child exiting', '#')
            os._exit(0)
        server.log('Redis synchronous debugging eval session ended', '#')
        conn.close_after_reply()
        return NO_REPLY

    # -- the log and the socket -------------------------------------------------------------

    def log(self, line: str) -> None:
        self.logs.append(line)

    def log_with_maxlen(self, line: str) -> None:
        if self.maxlen and len(line) > self.maxlen:
            line = line[: self.maxlen] + ' ...'
            if not self.maxlen_hint_sent:
                self.maxlen_hint_sent = True
                self.logs.append(line)
                self.log(
                    '<hint> The above reply was trimmed. Use \'maxlen 0\' to disable trimming.'
                )
                return
        self.logs.append(line)

    def send_logs(self) -> None:
        """ldbSendLogs: the log lines as an array of status replies."""
        logs, self.logs = self.logs, []
        parts = [b'*%d\r\n' % len(logs)]
        for line in logs:
            text = line.replace('\r', ' ').replace('\n', ' ')
            parts.append(b'+' + text.encode('utf-8', 'surrogateescape') + b'\r\n')
        self._write(b''.join(parts))

    def _write(self, data: bytes) -> None:
        if self.tls is not None:
            data = self.tls.seal(data)
        while data:
            select.select([], [self.fd], [], 5)
            try:
                n = os.write(self.fd, data)
            except BlockingIOError:
                continue
            except OSError:
                raise _Abort() from None
            data = data[n:]

    def _read_command(self) -> list[bytes] | None:
        """The next debugger command (ldbReplParseCommand's forgiving parser); None when the
        client is gone."""
        while True:
            argv = self._parse()
            if argv is not None:
                self.cbuf = b''
                return argv
            select.select([self.fd], [], [])
            try:
                data = os.read(self.fd, 1024)
            except BlockingIOError:
                continue
            except OSError:
                return None
            if not data:
                return None
            self.cbuf += data if self.tls is None else self.tls.unseal(data)
            if len(self.cbuf) > 1 << 20:
                self.cbuf = b''
                self._lua_error('max client buffer reached')

    def _parse(self) -> list[bytes] | None:
        buf = self.cbuf
        if not buf:
            return None
        p = buf.find(b'*')
        if p < 0:
            self._lua_error('protocol error')
        end = buf.find(b'\r\n', p)
        if end < 0:
            return None
        argc = _atoi(buf[p + 1 : end])
        if argc <= 0 or argc > 1024:
            self._lua_error('protocol error')
        p = end + 2
        argv: list[bytes] = []
        while len(argv) < argc:
            if p >= len(buf):
                return None
            if buf[p : p + 1] != b'$':
                self._lua_error('protocol error')
            end = buf.find(b'\r\n', p)
            if end < 0:
                return None
            slen = _atoi(buf[p + 1 : end])
            if slen <= 0 or slen > 1024:
                self._lua_error('protocol error')
            p = end + 2
            if p + slen + 2 > len(buf):
                return None
            argv.append(buf[p : p + slen])
            p += slen
            if buf[p : p + 2] != b'\r\n':
                self._lua_error('protocol error')
            p += 2
        return argv

    def _lua_error(self, msg: str) -> None:
        self.cbuf = b''
        raise LuaError(self.engine._err(msg.encode()))

    # -- stopping at a line -----------------------------------------------------------------

    def _on_line(self, line: int) -> None:
        """luaLdbLineHook: stop here when stepping or at a breakpoint, and serve the
        client's commands until one resumes the script."""
        self.currentline = line
        bp = line in self.breakpoints or self.luabp
        if not (self.step or bp):
            return
        reason = 'step over'
        if bp:
            reason = 'redis.breakpoint() called' if self.luabp else 'break point'
        self.step = self.luabp = False
        self.log(f'* Stopped at {line}, stop reason = {reason}')
        self.log_source_line(line)
        try:
            self.send_logs()
            self.repl()
        except _Abort:
            self.step, self.breakpoints = False, []

    def source_line(self, line: int) -> str:
        if 1 <= line <= len(self.src):
            return self.src[line - 1].decode('utf-8', 'surrogateescape')
        return '<out of range source code line>'

    def log_source_line(self, line: int) -> None:
        current, bp = line == self.currentline, line in self.breakpoints
        prefix = '->#' if current and bp else '-> ' if current else '  #' if bp else '   '
        self.log(f'{prefix}{line:<3} {self.source_line(line)}')

    def list_source(self, around: int, context: int) -> None:
        for j in range(1, len(self.src) + 1):
            if around != 0 and abs(around - j) > context:
                continue
            self.log_source_line(j)

    def repl(self) -> None:
        """ldbRepl: the client's commands, until step, next or continue."""
        while True:
            argv = self._read_command()
            if argv is None:
                raise _Abort()
            name = argv[0].lower()
            argc = len(argv)
            if name in (b'h', b'help'):
                for line in _HELP:
                    self.log(line)
            elif name in (b's', b'step', b'n', b'next'):
                self.step = True
                return
            elif name in (b'c', b'continue'):
                return
            elif name in (b't', b'trace'):
                self.trace()
            elif name in (b'm', b'maxlen'):
                self.set_maxlen(argv)
            elif name in (b'b', b'break'):
                self.breakpoint(argv)
            elif name in (b'e', b'eval'):
                self.eval(argv)
            elif name in (b'a', b'abort'):
                raise LuaError(self.engine._err(b'script aborted for user request'))
            elif argc > 1 and name in (b'r', b'redis'):
                self.redis(argv)
            elif name in (b'p', b'print'):
                if argc == 2:
                    value = self._lookup(argv[1], self.env)
                    self.log('No such variable.' if value is None else f'<value> {_s(value)}')
                else:
                    values = list(self._locals().values())
                    for v in values:
                        self.log(f'<value> {_s(v)}')
                    if not values:
                        self.log('No local variables in the current context.')
            elif name in (b'l', b'list'):
                around, ctx = self.currentline, 5
                if argc > 1 and _atoi(argv[1]) > 0:
                    around = _atoi(argv[1])
                if argc > 2:
                    ctx = _atoi(argv[2])
                self.list_source(around, ctx)
            elif name in (b'w', b'whole'):
                self.list_source(1, 1000000)
            else:
                self.log('<error> Unknown Redis Lua debugger command or wrong number of arguments.')
            self.send_logs()

    def debug_log(self, args: tuple[Any, ...]) -> None:
        """redis.debug(...): the values on one line of the console."""
        values = ', '.join(_s(self._repr(a, 0)) for a in args)
        self.log(f'<debug> line {self.currentline}: {values}')

    # -- the commands -----------------------------------------------------------------------

    def trace(self) -> None:
        frames = list(self._trace().values())
        for f in frames:
            self.log(_s(f[1]))
            self.log_source_line(f[2])
        if not frames:
            self.log("<error> Can't retrieve Lua stack.")

    def set_maxlen(self, argv: list[bytes]) -> None:
        if len(argv) == 2:
            value = _atoi(argv[1])
            self.maxlen_hint_sent = True
            self.maxlen = 60 if 0 < value <= 60 else value
        if self.maxlen:
            self.log(f'<value> replies are truncated at {self.maxlen} bytes.')
        else:
            self.log('<value> replies are unlimited.')

    def breakpoint(self, argv: list[bytes]) -> None:
        if len(argv) == 1:
            if not self.breakpoints:
                self.log("No breakpoints set. Use 'b <line>' to add one.")
                return
            self.log(f'{len(self.breakpoints)} breakpoints set:')
            for line in self.breakpoints:
                self.log_source_line(line)
            return
        for arg in argv[1:]:
            try:
                line = int(arg)
            except ValueError:
                self.log(f"Invalid argument:'{_s(arg)}'")
                continue
            if line == 0:
                self.breakpoints = []
                self.log('All breakpoints removed.')
            elif line > 0:
                if len(self.breakpoints) == BREAKPOINTS_MAX:
                    self.log('Too many breakpoints set.')
                elif 1 <= line <= len(self.src):
                    if line not in self.breakpoints:
                        self.breakpoints.append(line)
                    self.list_source(line, 1)
                else:
                    self.log('Wrong line number.')
            elif -line in self.breakpoints:
                self.breakpoints.remove(-line)
                self.log('Breakpoint removed.')
            else:
                self.log('No breakpoint in the specified line.')

    def eval(self, argv: list[bytes]) -> None:
        """ldbEval: the code as an expression (after "return "), else as statements."""
        code = b' '.join(argv[1:])
        load = self.engine._compile  # (in the scripts' environment)
        f, err = load(b'return ' + code, b'@ldb_eval')
        if f is None:
            f, err = load(code, b'@ldb_eval')
            if f is None:
                self.log(f'<error> {_s(err)}')
                return
        ok, value = self._pcall1(f)
        if not ok:
            if not isinstance(value, bytes):
                value = self._repr(self.engine.unwrap_error(value), 0)
            self.log(f'<error> {_s(value)}')
            return
        self.log_with_maxlen(f'<retval> {_s(self._repr(value, 0))}')

    def redis(self, argv: list[bytes]) -> None:
        """ldbRedis: redis.call with the arguments, logged as a script's call is."""
        self.step = True
        try:
            self._call(*argv[1:])
        except LuaError:
            pass
        finally:
            self.step = False

    # -- redis.call and redis.pcall during a session ----------------------------------------

    def _call(self, *args: Any) -> Any:
        return self._logged(self.engine._redis_call, args)

    def _pcall(self, *args: Any) -> Any:
        return self._logged(self.engine._redis_pcall, args)

    def _logged(self, fn: Any, args: tuple[Any, ...]) -> Any:
        if not self.step:
            return fn(*args)
        words = [_s(a) if isinstance(a, bytes) else _s(self._repr(a, 0)) for a in args[:10]]
        more = f' ... ({len(args) - 11} more)' if len(args) > 10 else ''  # (Redis's count)
        self.log('<redis>' + ''.join(' ' + w for w in words) + more)
        try:
            r = fn(*args)
        except LuaError as e:
            err = e.args[0] if e.args else None
            msg = err[b'err'] if err is not None and not isinstance(err, bytes) else err
            text = _s(msg) if isinstance(msg, bytes) else 'error'
            if text.startswith(_CHECKS):  # scriptCall refused it: its message alone
                self.log(f'<error> {text[4:]}')
            else:  # the command's error reply: logged as it came, and as the reply
                self.log(f'<error> -{text}')
                self.log_with_maxlen('<reply> ' + _repr(b'-' + text.encode()))
            raise
        self.log_with_maxlen('<reply> ' + self._human(r))
        return r

    def _human(self, v: Any) -> str:
        """ldbRedisProtocolToHuman, from the value the script got."""
        if v is None or v is False:
            return 'NULL'
        if v is True:
            return '#true'
        if isinstance(v, int):
            return str(v)
        if isinstance(v, bytes):
            return _repr(v)
        if isinstance(v, float):
            return f'(double) {v!r}'
        ok = v[b'ok']
        if ok is not None:
            return _repr(b'+' + ok)
        err = v[b'err']
        if err is not None:
            return _repr(b'-' + err)
        return '[' + ','.join(self._human(v[i]) for i in range(1, len(v) + 1)) + ']'


def _s(b: Any) -> str:
    if isinstance(b, bytes):
        return b.decode('utf-8', 'surrogateescape')
    return str(b)
