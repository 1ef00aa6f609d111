"""MONITOR: every command the server runs, streamed to the clients that asked, as Redis 7.0's
replicationFeedMonitors prints it.

A line is `+<sec>.<usec> [<db> <addr>] "arg" "arg"...` (`[<db> lua]` for a script's
commands), each argument quoted as sdscatrepr quotes it. A command is shown once it has
run (call() feeds after the handler, so MULTI's queued commands come before EXEC), except
EVAL/EVALSHA/FCALL and their _RO forms, shown before the commands their script runs.
Admin commands (CONFIG, CLIENT, DEBUG...) and those flagged skip_monitor are not shown;
AUTH, HELLO ... AUTH and MIGRATE ... AUTH/AUTH2 show "(redacted)" for their secrets.
Commands rejected before running (unknown, wrong arity, NOAUTH...) are not shown, but an
EXEC that is aborted is.

Feeding costs nothing while no monitor is attached: connections take the gated path only
while `server.monitors` is not empty (Connection.update_gate), and only that path feeds.

A monitor client is a replica for Redis: commands that read or write the keyspace are
refused ("Replica can't interact with the keyspace"), CLIENT PAUSE does not hold it, a
second MONITOR is ignored without a reply, and RESET returns it to a normal client.
"""

import time
from typing import Any

from ..command_table import MAY_REPLICATE, Command, Family
from ..context import Client
from ..resp import NO_REPLY, OK, RedisError

COMMANDS = Family('server', since='1.0.0')

E_REPLICA = "ERR Replica can't interact with the keyspace"

_REPR = {
    ord('\\'): b'\\\\',
    ord('"'): b'\\"',
    ord('\n'): b'\\n',
    ord('\r'): b'\\r',
    ord('\t'): b'\\t',
    7: b'\\a',
    8: b'\\b',
}
# sdscatrepr, one table lookup per byte: printable ASCII as is, the escapes above, the rest
# as \xhh.
_REPR_TABLE = [
    _REPR.get(i) or (bytes((i,)) if 32 <= i < 127 else b'\\x%02x' % i) for i in range(256)
]
_PLAIN = frozenset(i for i in range(32, 127) if i not in _REPR)


def repr_arg(a: bytes) -> bytes:
    """sdscatrepr: the argument in double quotes, escaped as Redis escapes it."""
    if all(ch in _PLAIN for ch in a):
        return b'"' + a + b'"'
    table = _REPR_TABLE
    return b'"' + b''.join([table[ch] for ch in a]) + b'"'


def redacted(args: list[bytes]) -> list[bytes]:
    """The arguments as shown, with the secrets Redis redacts (redactClientCommandArgument
    in AUTH, HELLO and MIGRATE) replaced."""
    name = args[0].lower()
    if name == b'auth':  # redacted once past its syntax check (2 or 3 arguments)
        return [args[0]] + [b'(redacted)'] * (len(args) - 1) if len(args) <= 3 else args
    if name == b'hello':
        if len(args) < 3 or args[1] not in (b'2', b'3'):  # a bad version: shown as is
            return args
        out = list(args)
        i = 2
        while i < len(out):
            opt = out[i].lower()
            if opt == b'auth' and i + 2 < len(out):
                out[i + 1] = out[i + 2] = b'(redacted)'
                i += 3
            elif opt == b'setname' and i + 1 < len(out):
                i += 2
            else:
                break
        return out
    if name == b'migrate':
        out = list(args)
        for i in range(6, len(out)):
            opt = out[i].lower()
            if opt == b'auth' and i + 1 < len(out):
                out[i + 1] = b'(redacted)'
            elif opt == b'auth2' and i + 2 < len(out):
                out[i + 1] = out[i + 2] = b'(redacted)'
            elif opt == b'keys':
                break
        return out
    return args


class Monitors(list[Client]):
    """The MONITOR clients, in the order they attached (server.monitors). Empty, it is
    false, which is all the gate looks at."""

    def __init__(self, server: Any) -> None:
        super().__init__()
        self.server = server
        # A monitor's own command shows after its reply: the lines wait here until the
        # gated path has queued the reply (Connection._execute_gated).
        self.after_reply: list[bytes] = []
        self.flush_handle = None  # one write per monitor per loop turn, not one per line
        server.disconnect_hooks.append(self.detach)
        server.reset_hooks.append(self.detach)

    def attach(self, conn: Client) -> None:
        self.append(conn)
        if len(self) == 1:
            self.server.update_gates()  # every connection now feeds from the gated path

    def detach(self, conn: Client) -> None:
        if conn not in self:
            return
        self.remove(conn)
        if not self:
            self.server.update_gates()

    def feed(self, conn: Client, args: list[bytes]) -> None:
        """replicationFeedMonitors: one line for `args` run by `conn` (a script's own
        connection, which has no socket, shows as lua)."""
        server = self.server
        if server.loading:
            return
        now = time.time()
        sec = int(now)
        where = b'lua' if conn.transport is None else conn.addr.encode()
        head = b'+%d.%06d [%d %s] ' % (sec, int((now - sec) * 1e6), conn.db, where)
        line = head + b' '.join([repr_arg(a) for a in redacted(args)]) + b'\r\n'
        for m in self:
            if m is conn:
                self.after_reply.append(line)
            elif not m.closing:
                m.out.append(line)
        if self.flush_handle is None and server.loop is not None:
            self.flush_handle = server.loop.call_soon(self.flush)

    def flush(self) -> None:
        """Write the lines fed during the last loop turn (Redis writes in beforeSleep)."""
        self.flush_handle = None
        for m in self:
            if m.out and not m.closing:
                m.flush()

    def shows(self, cmd: Command) -> bool:
        """Whether call() feeds this command (not admin, not skip_monitor)."""
        flags = cmd.flags
        return 'admin' not in flags and 'skip_monitor' not in flags


def touches_keyspace(cmd: Command, shown: Command) -> bool:
    """processCommand's test for replicas: a read, write or may-replicate command."""
    flags = shown.flags
    return (
        'readonly' in flags
        or 'write' in flags
        or shown.name in MAY_REPLICATE
        or cmd.name in MAY_REPLICATE
    )


@COMMANDS.command(
    'monitor',
    1,
    flags='admin noscript loading stale',
    categories='@admin @slow @dangerous',
    summary='Listen for all requests received by the server in real time',
)
def monitor(c: Client, args: list[bytes]) -> Any:
    if c.in_exec:  # inside EXEC a client may not block (CLIENT_DENY_BLOCKING)
        raise RedisError("ERR MONITOR isn't allowed for DENY BLOCKING client")
    if c in c.server.monitors:
        return NO_REPLY  # already a monitor (a replica): ignored, no reply
    c.server.monitors.attach(c)
    return OK
