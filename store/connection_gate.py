"""The gated path: every rule a command meets that the connection's hot path skips.

Connection.run runs a command inline when the connection is not gated, its name is in the
user's table of commands it may run unchecked (store/acl.py) and its arity is right.
Anything else comes here (`_execute_gated`), and so does every command of a connection in
a special state: `update_gate` sets `gated` whenever one holds (closing, not
authenticated, ACL checks, MULTI, RESP2 subscribe mode, CLIENT REPLY OFF/SKIP, parked,
a busy script, loading, writes refused, CLIENT NO-TOUCH, tracking, MONITOR, CLIENT PAUSE,
a cluster client's ASKING, which lasts for one command or transaction: `_asking_done`),
so the hot path tests one flag.

The checks run in processCommand's order, each rejecting with Redis's error (counted in
errorstats, and marking a MULTI as failed): QUIT first, then unknown command, arity,
subcommand, NOAUTH, no-multi, ACL, the cluster's redirection (-MOVED, -ASK, -CROSSSLOT,
-CLUSTERDOWN...: store/cluster/routing.py, not for the master's link; an EXEC so refused
discards its transaction, with no EXECABORT), subscribe mode, LOADING (a replica's async loading
refuses fewer), MISCONF / NOREPLICAS / READONLY, MASTERDOWN, BUSY, OOM (the eviction
gate), a monitor's commands, CLIENT PAUSE (held, to run again in order). Then a command
is queued in MULTI or run (`call`, which EXEC uses too), its reply emitted as CLIENT REPLY
says, and MONITOR and tracking hear of it.
Before any check, clients blocked on keys the previous command signalled are served, and
a parked connection's command is held behind the one that waits (Connection.defer).

`ConnectionGate` is a part of store/connection.py's Connection (a mixin with no state of
its own: the fields are Connection's `__slots__`, declared below for the type checker only).
"""

from typing import TYPE_CHECKING, Any

from .cluster.routing import route, subcommand_of
from .command_table import Command, call
from .commands.gates import E_MASTERDOWN, SCRIPT_CALLS, denies_stale, writes
from .commands.monitor import E_REPLICA, touches_keyspace
from .memory.sizes import queued_size
from .resp import OK, QUEUED, FailedRaw, RedisError, encode, error_arg, unknown_command_error

if TYPE_CHECKING:
    from .keyspace import Keyspace
    from .output_limit import OutputLimits
    from .tracking import ClientTracking


class ConnectionGate:
    if TYPE_CHECKING:  # Connection's fields and methods this part uses
        server: Any
        ks: Keyspace
        out: list[bytes]
        closing: bool
        gated: bool
        authenticated: bool
        acl_checks: bool
        acl_rules: bool
        proto: int
        reply_mode: str
        no_touch: bool
        multi: list[tuple[Command, list[bytes]]] | None
        multi_bytes: int
        multi_error: bool
        subscriptions: int
        tracking: ClientTracking | None
        cluster: Any
        asking: bool
        readonly: bool
        user: Any
        blocked: Any
        deferred: list[list[bytes]] | None
        out_limit: OutputLimits | None
        last_cmd: Command | None
        last_sub: Command | None

        def is_replica(self) -> bool: ...

        def end_multi(self) -> None: ...

        def defer(self, args: list[bytes]) -> None: ...

        def close_after_reply(self) -> None: ...

        def abort(self) -> None: ...

        def info_line(self) -> str: ...

        def _internal_error(self, cmd: Command, e: Exception) -> RedisError: ...

        def _failed(self, cmd: Command, err: RedisError) -> None: ...
    else:  # no slots of its own. Hidden from mypy, which refuses assignments to fields not in
        # a class's __slots__ and cannot tell that these fields are Connection's
        __slots__ = ()

    def update_gate(self) -> None:
        self.out_limit = self.server.pubsub.limits.gate(self)  # (authenticated or not)
        self.gated = (
            self.closing
            or not self.authenticated
            or self.acl_checks
            or self.multi is not None
            or (self.subscriptions > 0 and self.proto == 2)
            or self.reply_mode != 'on'
            or self.deferred is not None
            or self.server.busy.run is not None
            or self.server.loading
            or self.server.write_denied is not None
            or self.server.replicas_denied is not None
            or self.server.readonly_denied is not None
            or self.no_touch
            or self.is_replica()  # its commands must not answer (_execute_gated)
            or self.tracking is not None  # its reads are remembered on the gated path
            or bool(self.server.monitors)  # MONITOR: commands are fed from the gated path
            or self.server.pause.kind is not None  # CLIENT PAUSE: held on the gated path
            or self.asking  # ASKING: cleared after the next command (_execute_gated)
        )

    def _reject(self, cmd: Command | None, message: str) -> None:
        if cmd is not None:
            cmd.rejected += 1
            if cmd.name == 'exec':  # rejectCommand -> execCommandAbort: discard, EXECABORT
                self.end_multi()
                message = 'EXECABORT Transaction discarded because of: ' + (
                    message[4:] if message.startswith('ERR ') else message
                )
        if self.multi is not None:
            self.multi_error = True
        self.server.stats.error(message)
        self._emit(RedisError(message))

    def _misrouted(self, cmd: Command, args: list[bytes]) -> bool:
        """processCommand's cluster redirection (store/cluster/routing.py), in cluster
        mode: True when this node does not serve the command, which is then answered
        (-MOVED, -ASK, -CROSSSLOT, -CLUSTERDOWN...). Never for the master's link, nor
        the AOF (the loader's user): obeyed as they come."""
        if self.user is self.server.acl.loader:
            return False
        err = route(self.cluster, self, cmd, args, writes)
        if err is None:
            return False
        self._redirect(cmd, args, err)
        return True

    def _redirect(self, cmd: Command, args: list[bytes], err: RedisError) -> None:
        """The answer to a command this cluster node does not serve: an EXEC discards
        its transaction, a command queued in MULTI fails it, and the error goes out as
        is (no EXECABORT: clusterRedirectClient is not rejectCommand)."""
        shown = subcommand_of(cmd, args)
        shown.rejected += 1
        if cmd.name == 'exec':
            self.end_multi()
        elif self.multi is not None:
            self.multi_error = True
        self.server.stats.error(err.msg)
        self._emit(err)

    def _emit(self, value: Any) -> None:
        mode = self.reply_mode
        if mode == 'on':
            encode(value, self.proto, self.out)
        elif mode == 'skip':
            self.reply_mode = 'on'
            self.update_gate()
        elif mode == 'skip_next':  # CLIENT REPLY SKIP ran on this path: skip the next
            encode(value, self.proto, self.out)
            self.reply_mode = 'skip'

    def _execute_gated(self, cmd: Command | None, args: list[bytes]) -> None:
        """Every rule the hot path skips (`_execute_checked`); and a replica's command
        that answered, which disconnects it: replies never go on a replication link
        (REPLCONF ACK has none), as Redis's _addReplyToBufferOrList logs and frees a
        replica that generated one."""
        if not self.is_replica():
            self._execute_checked(cmd, args)
            if self.asking:
                self._asking_done(args)
            return None
        before = len(self.out)
        self._execute_checked(cmd, args)
        reply = b''.join(self.out[before:])
        if reply and not self.closing:  # (NO_REPLY queues b'')
            del self.out[before:]
            name = cmd.name if cmd is not None else '<unknown>'
            if cmd is not None and cmd.subcommands and len(args) > 1:
                name += '|' + args[1].decode('utf-8', 'replace').lower()
            if reply[:1] == b'-':  # afterErrorReply's warning for a replica's error
                text = reply[1:].split(b'\r\n', 1)[0].decode('utf-8', 'replace')
                self.server.log(
                    f"== CRITICAL == This master is sending an error to its replica: "
                    f"'{text.removeprefix('ERR ')}' after processing the command '{name}'",
                    '#',
                )
            self.server.log(
                f"Replica generated a reply to command '{name}', disconnecting it: "
                f'{self.info_line()}',
                '#',
            )
            self.abort()

    def _asking_done(self, args: list[bytes]) -> None:
        """resetClient: ASKING lasts for one command (or one transaction), not counting
        itself; a command held to run again later (CLIENT PAUSE) has not had it yet."""
        if self.multi is not None or args[0].lower() == b'asking':
            return
        if self.deferred is not None and self.blocked is None:
            return
        self.asking = False
        self.update_gate()

    def _execute_checked(self, cmd: Command | None, args: list[bytes]) -> None:
        """Every rule the hot path skips: closing, case-folded names, arity errors, auth,
        RESP2 subscribe mode, MULTI queueing, CLIENT REPLY OFF/SKIP; and serving clients
        blocked on keys the previous command signalled."""
        if self.closing:
            return
        blocking = self.server.blocking
        if blocking.ready and self.server.busy.run is None:
            blocking.serve_ready()
            self.update_gate()
        if self.deferred is not None:  # parked: blocked, a PUBLISH held, CLIENT PAUSE
            self.defer(args)
            return
        if cmd is None:
            cmd = self.server.commands.get(args[0].lower())
        if cmd is not None and cmd.name == 'quit':  # Redis 7.0 handles it before anything
            server = self.server
            if server.pause.kind is not None and server.pause.holds(self, cmd, args):
                server.pause.hold(self, cmd, args)  # but CLIENT PAUSE ALL holds it
                return
            self._emit(OK)
            if server.monitors:
                server.monitors.feed(self, args)
                self.out += server.monitors.after_reply  # a monitor's own QUIT
                server.monitors.after_reply.clear()
            self.close_after_reply()
            return
        if cmd is None:
            return self._reject(None, unknown_command_error(args))
        if not cmd.arity_ok(len(args)):
            return self._reject(cmd, f"ERR wrong number of arguments for '{cmd.name}' command")
        shown = cmd
        # Redis rejects bad subcommands here (and flags MULTI); a container called alone
        # (COMMAND, whose arity allows it) runs as itself
        if cmd.subcommands and len(args) > 1:
            shown = cmd.subcommands.get(args[1].decode('utf-8', 'replace').lower())
            if shown is None:
                return self._reject(
                    cmd,
                    f"ERR unknown subcommand '{error_arg(args[1], 128)}'. "
                    f"Try {cmd.name.upper()} HELP.",
                )
            if not shown.arity_ok(len(args)):
                return self._reject(
                    shown, f"ERR wrong number of arguments for '{shown.name}' command"
                )
        if not self.authenticated and not cmd.no_auth:
            return self._reject(cmd, 'NOAUTH Authentication required.')
        if self.multi is not None and 'no_multi' in shown.flags:  # SAVE, SHUTDOWN, SYNC
            return self._reject(cmd, 'ERR Command not allowed inside a transaction')
        if self.acl_rules:
            denied = self.server.acl.deny(self, shown, args)
            if denied is not None:
                return self._reject(shown, denied)
        if self.cluster is not None and self._misrouted(cmd, args):
            return None
        if self.subscriptions > 0 and self.proto == 2 and not cmd.pubsub_ok:
            return self._reject(
                cmd,
                f"ERR Can't execute '{shown.name}': only (P|S)SUBSCRIBE / "
                "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in "
                "this context",
            )
        server = self.server
        if server.loading and self._denied_while_loading(cmd, shown):
            return self._reject(cmd, 'LOADING Redis is loading the dataset in memory')
        misconf, noreplicas, readonly = (
            server.write_denied,
            server.replicas_denied,
            server.readonly_denied,
        )
        if (misconf or noreplicas or readonly) and not (
            server.replica_link is not None and server.replica_link.is_master(self)
        ):  # writes refused, in processCommand's order; a replica obeys its master
            write = writes(server, cmd, shown, args)  # with a script's flags
            if misconf is not None and (write or cmd.name == 'ping'):
                return self._reject(cmd, misconf)
            for denied in (noreplicas, readonly):
                if denied is not None and write:
                    return self._reject(cmd, denied)
        link = server.replica_link
        if (
            link is not None
            and not link.up()
            and not server.config['replica-serve-stale-data']
            and denies_stale(server, cmd, shown, args)
        ):  # a replica cut off from its master serves only the `stale` commands
            return self._reject(cmd, E_MASTERDOWN)
        busy = self.server.busy
        if busy.run is not None and not busy.allows(shown):
            return self._reject(cmd, busy.message())
        ks = self.ks
        if ks.used > ks.check_at and server.evictor.gate(self, cmd, args):
            return
        if (
            self.is_replica() or (server.monitors and self in server.monitors)
        ) and touches_keyspace(cmd, shown):
            return self._reject(cmd, E_REPLICA)  # (a monitor is a replica for Redis)
        pause = server.pause
        if pause.kind is not None and pause.holds(self, cmd, args):
            pause.hold(self, cmd, args)  # runs again, in order, when the pause ends
            return
        if self.multi is not None and not cmd.multi_ok:
            self.multi.append((cmd, args))
            size = queued_size(args)
            self.multi_bytes += size
            server.evictor.clients_grew(size)
            self.last_cmd, self.last_sub = cmd, shown  # CLIENT LIST cmd=, as Redis's lastcmd
            if self.reply_mode != 'on':
                return self._emit(QUEUED)
            self.out.append(b'+QUEUED\r\n')  # per queued command: encode() is 0.17 us more
            return
        self._emit(self.call(cmd, args))
        if server.monitors and server.monitors.after_reply:  # a monitor's own command
            self.out += server.monitors.after_reply
            server.monitors.after_reply.clear()
        tracking = server.tracking
        if self.tracking is not None:
            tracking.command_done(self, cmd)
        if tracking.handle is not None:
            tracking.flush(self)  # invalidations this command caused, after its reply

    def _denied_while_loading(self, cmd: Command, shown: Command) -> bool:
        """processCommand's two loading checks: while loading, a command without the
        `loading` flag is refused; while a replica loads asynchronously (swapdb from its
        own master's history, the old data served: persistence.async_loading), only one
        flagged `no_async_loading` is. EXEC is judged by its queued commands' flags too."""
        if self.server.persistence.async_loading:
            denied = _denied_during_async_loading
        else:
            denied = _denied_during_loading
        if denied(shown):
            return True
        if cmd.name == 'exec' and self.multi:
            for queued, args in self.multi:
                if queued.subcommands and len(args) > 1:
                    name = args[1].decode('utf-8', 'replace').lower()
                    queued = queued.subcommands.get(name, queued)
                if denied(queued):
                    return True
        return False

    def call(self, cmd: Command, args: list[bytes]) -> Any:
        """Run a command through the executor and return its reply value (used by EXEC
        and the gated path)."""
        if self.no_touch and cmd.name != 'touch':  # CLIENT NO-TOUCH
            return self.ks.untouched(self._call, cmd, args)
        return self._call(cmd, args)

    def _call(self, cmd: Command, args: list[bytes]) -> Any:
        monitors = self.server.monitors
        if monitors and cmd.name in SCRIPT_CALLS:
            monitors.feed(self, args)  # before the commands its script runs (evalCommand)
        try:
            r = call(cmd, self, args)
        except RedisError as e:
            r = e
            self.server.stats.error(e.msg)  # (call counted it failed)
        except Exception as e:
            r = self._internal_error(cmd, e)
            self._failed(cmd, r)
        else:
            if isinstance(r, RedisError):
                self._failed(cmd, r)
            elif type(r) is FailedRaw:
                cmd.failed += r.fails
        self.last_cmd = cmd
        if self.tracking is not None:  # CLIENT TRACKING: remember the keys it read
            self.server.tracking.remember(self, cmd, args)
        if monitors:
            shown = cmd
            if cmd.subcommands and len(args) > 1:
                shown = cmd.subcommands.get(args[1].decode('utf-8', 'replace').lower(), cmd)
            if monitors.shows(shown):
                monitors.feed(self, args)  # once it has run, as call() feeds
        return r


def _denied_during_loading(cmd: Command) -> bool:
    return 'loading' not in cmd.flags


def _denied_during_async_loading(cmd: Command) -> bool:
    return 'no_async_loading' in cmd.flags
