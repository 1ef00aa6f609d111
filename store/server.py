"""The server: listening socket, client registry, periodic housekeeping, shutdown.

One process, one event loop (uvloop when available). The server owns the configuration, the
keyspace and the command table; connections reach all three through it. A housekeeping
timer (`cron`, `hz` times a second, as Redis's serverCron) refreshes the cached clock and
closes idle clients when `timeout` is set; expiry has its own deadline timer.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import resource
import socket
import sys
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import crash, listen, proc_title, process, tls, watchdog
from .acl import Acl
from .acl_checks import channel_in
from .blocking import BlockingRegistry
from .cluster import routing
from .cluster.service import Cluster, ClusterStartError
from .command_table import build_table
from .commands import MODULES
from .commands.client import close_after_this_reply, kill_connection
from .commands.client_info import client_info_line
from .commands.client_pause import ClientPause
from .commands.info import info_text
from .commands.migrate import MigrateSockets
from .commands.monitor import Monitors
from .config import COMMAND_NAMES, Config
from .connection import Connection
from .events import KeyspaceEvents
from .expiry.active import ActiveExpiry
from .expiry.gate import ExpiryGate
from .journal import Journal
from .keyspace import Keyspace
from .memory.eviction import Evictor
from .oom_score import OomScore
from .persistence.errors import LoadError
from .persistence.manager import Persistence
from .pubsub import PubSub
from .replication import Replication
from .reply_buffer import ReplyBuffers
from .scripting.busy import Busy
from .scripting.eval import EvalScripts
from .scripting.functions import Functions
from .shutdown import Shutdown
from .tracking import Tracking
from .types import EncodingLimits
from .version import VERSION

if TYPE_CHECKING:
    from .acl_users import User
    from .replica import MasterLink

COMMAND_NAMES.update(cmd.name for module in MODULES for cmd in module.COMMANDS)

LOGO = r"""                _._
           _.-``__ ''-._
      _.-``    `.  `_.  ''-._           Redis %s (00000000/0) 64 bit
  .-`` .-```.  ```\/    _.,_ ''-._
 (    '      ,       .-`  | `,    )     Running in %s mode
 |`-._`-...-` __...-.``-._|'` _.-'|     Port: %d
 |    `-._   `._    /     _.-'    |     PID: %d
  `-._    `-._  `-./  _.-'    _.-'
 |`-._`-._    `-.__.-'    _.-'_.-'|
 |    `-._`-._        _.-'_.-'    |           https://redis.io
  `-._    `-._`-.__.-'_.-'    _.-'
 |`-._`-._    `-.__.-'    _.-'_.-'|
 |    `-._`-._        _.-'_.-'    |
  `-._    `-._`-.__.-'_.-'    _.-'
      `-._    `-.__.-'    _.-'
          `-._        _.-'
              `-.__.-'
"""


class Stats:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.total_connections_received = 0
        self.rejected_connections = 0
        self.net_input_bytes = 0
        self.net_output_bytes = 0
        self.error_replies = 0  # total_error_replies
        self.total_forks = 0  # background snapshots started (each has its stand-in child)
        self.errors: dict[str, int] = {}  # error code -> replies (INFO errorstats)

    def error(self, msg: str) -> None:
        """afterErrorReply: one error reply sent, to a client or to a script's redis.call.
        Its code is the word before the first space in the reply's first 32 bytes
        ('-' + msg), else ERR."""
        self.error_replies += 1
        sp = msg.find(' ', 0, 31)
        code = msg[:sp] if sp >= 0 else 'ERR'
        self.errors[code] = self.errors.get(code, 0) + 1  # no bound, as in Redis 7.0


class Server:
    def __init__(
        self, config: Config | None = None, log_stream: process.TextSink | None = None
    ) -> None:
        self.config = config or Config()
        cfg = self.config
        # cluster-enabled: a Redis Cluster node (store/cluster), built below once what it
        # uses exists; None in standalone mode (connections made before read it)
        self.cluster: Cluster | None = None
        self.commands = build_table(*MODULES)
        for old, new in cfg.renames:  # rename-command: the command answers to its new name
            cmd = self.commands.pop(old.encode())
            del self.commands[old.upper().encode()]
            if new:
                self.commands[new.encode()] = self.commands[new.upper().encode()] = cmd
        # every command and subcommand once (the table also holds aliases): the cron folds
        # their recorded durations into their statistics (Command.settle)
        self.every_command = list(
            {id(c): c for cmd in self.commands.values() for c in cmd.all()}.values()
        )
        self.acl = Acl(self)  # users and their rules (store/acl.py)
        self.clients: dict[int, Connection] = {}
        # clients dropped (Connection.abort) whose transports have not reported the close:
        # out of `clients` at once, as freeClient removes them, their hooks still to run
        self.dropping: dict[int, Connection] = {}
        self.current_client: Connection | None = None  # the connection whose read is being run
        # connections whose replies wait for the end of the turn
        self.pending_flush: list[Connection] = []
        self.next_client_id = 1
        self.clock = time.time()
        self.start_time = time.time()
        self.run_id = os.urandom(20).hex()
        self.stats = Stats()
        self.lastsave = int(time.time())
        self.loop: Any = None  # the running loop, from `serve` on
        self.loading = False  # loading data at start-up: clients get -LOADING
        self.write_denied: str | None = None  # -MISCONF message while writes are refused
        # -NOREPLICAS while too few replicas (min-replicas-*)
        self.replicas_denied: str | None = None
        self.oom = OomScore(self)  # oom-score-adj (store/oom_score.py)
        self._replica_link: MasterLink | None = None  # store/replica.py's, while a replica
        self.readonly_denied: str | None = None  # -READONLY while a replica-read-only replica
        # asyncio servers: TCP, the unix socket, TLS (also in self.tls)
        self.listeners: list[asyncio.AbstractServer] = []
        self.tls = tls.Tls()
        self.port = cfg['port']
        self.cron_handle: asyncio.TimerHandle | None = None
        self.closed = asyncio.Event()  # set by request_shutdown (a signal may come early)
        self.exit_code = 0
        if log_stream is None:
            log_stream = process.LogFile(cfg['logfile']) if cfg['logfile'] else sys.stdout
        self.log_stream: process.TextSink = log_stream
        # store/process.py: written once listening, removed at shutdown (the default path
        # when daemonized is set by __main__)
        self.pidfile = cfg['pidfile']
        self.supervised: str | None = None  # 'systemd' or 'upstart' (store/__main__.py)
        # callables(conn), e.g. pub/sub cleanup
        self.disconnect_hooks: list[Callable[[Connection], None]] = []
        self.cron_hooks: list[Callable[[float], None]] = []  # callables(now) run by cron
        self.reset_hooks: list[Callable[[Connection], None]] = []  # callables(conn) run by RESET
        # A key's life, in the order it is wired: the keyspace is built with its event sink
        # (pub/sub notifications and the journal) and the timer that runs active expiry;
        # the blocking registry observes the keys clients wait on.
        self.pubsub = PubSub(self)  # ChannelStore + dispatch; registers its hooks
        self.journal = Journal()
        self.events = KeyspaceEvents(self.pubsub, self.journal)
        self.expiry = ActiveExpiry(cfg['active-expire-budget-us'] / 1000.0)
        self.keyspace = Keyspace(
            cfg['databases'], cfg['shards'], self.events, self.expiry, cfg['cluster-enabled']
        )
        self.expiry_gate = ExpiryGate(self.expiry, self.keyspace)  # pause, replica, DEBUG
        self.keyspace.lazyfree.config = cfg  # lazyfree-lazy-* (store/lazyfree.py)
        self.keyspace.log = self.log  # a packed value that fails to decode (types/packed.py)
        # ... is a corrupt listpack Redis reads: lpNext's assertion (lpAssertValidEntry)
        self.keyspace.corrupt = lambda: crash.assert_failed(
            self, 'lpValidateNext(lp, &p, lpbytes)', 'listpack.c:1276'
        )
        self.blocking = BlockingRegistry(self)
        self.tracking = Tracking(self)  # CLIENT TRACKING's tables and invalidations
        # MONITOR clients (store/commands/monitor.py); scripts feed them too. With CLIENT
        # PAUSE below, they gate every connection while on: the hot path never checks.
        self.monitors = Monitors(self)
        self.persistence = Persistence(self)  # RDB, AOF, loading (store/persistence)
        # The parties of the key lifecycle (store/lifecycle.py), each listening while it
        # is on: the AOF while it propagates, a background snapshot, client tracking.
        for party in (self.persistence.aof, self.persistence, self.tracking):
            self.keyspace.register(party)
        # Scripts run their commands on a connection of their own, with no socket.
        self.scripts = EvalScripts(self, Connection(self))
        self.functions = Functions(self, Connection(self))
        self.busy = Busy(self)  # a script past busy-reply-threshold
        # replicas follow the AOF's stream (store/replication.py)
        self.replication = self.persistence.aof.replication = Replication(self)
        self.evictor = Evictor(self)  # maxmemory (store/memory)
        self.pause = ClientPause(self)  # CLIENT PAUSE (store/commands/client_pause.py)
        self.cron_hooks.append(self.evictor.refresh)
        self.migrate_sockets = MigrateSockets()  # MIGRATE's connections, kept 10 s
        self.watchdog = watchdog.Watchdog(self)  # watchdog-period (store/watchdog.py)
        self.cron_hooks.append(self.migrate_sockets.close_timed_out)
        self.shutdown = Shutdown(self)  # SHUTDOWN, SIGTERM, SIGINT (store/shutdown.py)
        self.cron_hooks.append(self.shutdown.cron)
        self.cron_paused = False  # DEBUG PAUSE-CRON: the cron does nothing while set
        # DEBUG SET-SKIP-CHECKSUM-VALIDATION (RESTORE's CRC) and QUICKLIST-PACKED-THRESHOLD
        # (DEBUG's quicklist model, commands/debug_values.py)
        self.skip_checksum_validation = False
        self.quicklist_packed_threshold = 1 << 30
        self.reply_buffers = ReplyBuffers(self)  # CLIENT LIST's rbs (store/reply_buffer.py)
        self.cron_hooks.append(self.reply_buffers.cron)
        if cfg['cluster-enabled']:
            self.cluster = Cluster(self)
            routing.attach(self)  # blocked clients redirected when their slot moves
        self.apply_all()

    @property
    def replica_link(self) -> MasterLink | None:
        """store/replica.py's MasterLink while a replica, else None."""
        return self._replica_link

    @replica_link.setter
    def replica_link(self, link: MasterLink | None) -> None:
        # replicationSetMaster / replicationUnsetMaster: the OOM score's class changes
        self._replica_link = link
        self.oom.apply()

    # -- configuration hooks -------------------------------------------------------------

    def apply_config(self, name: str) -> None:
        """Make a changed parameter take effect (called by CONFIG SET)."""
        cfg = self.config
        if name == 'proto-max-bulk-len':
            self.max_bulk: int = cfg[name]
        elif name in ('notify-keyspace-events', 'keyevent-journal-events'):
            # a replica journals nothing itself: its master's entries arrive as XADD
            journal = cfg['keyevent-journal-events'] if self.replica_link is None else 0
            self.keyspace.set_event_flags(cfg['notify-keyspace-events'], journal)
        elif name in ('keyevent-journal-key', 'keyevent-journal-maxlen'):
            self.journal.configure(cfg['keyevent-journal-key'], cfg['keyevent-journal-maxlen'])
        elif name in ('min-replicas-to-write', 'min-replicas-max-lag'):
            self.replication.refresh_good()
        elif name == 'replica-read-only':
            self.replication.refresh_readonly()
        elif name == 'active-expire-budget-us':
            self.expiry.budget = cfg[name] / 1e6
        elif name in ('async-dispatch-quota', 'publish-buffer-limit', 'client-output-buffer-limit'):
            self.pubsub.apply_config()
        elif name in EncodingLimits.PARAMS:
            setattr(self.keyspace.limits, EncodingLimits.PARAMS[name], cfg[name])
        elif name == 'script-memory-limit':
            for engine in (self.scripts.engine, self.functions.engine):
                engine.lua.set_max_memory(cfg[name])
        elif name in ('appendonly', 'appendfsync') or name.startswith(('aof-', 'auto-aof-')):
            if not self.loading and self.loop is not None:
                self.persistence.aof.apply_config(name)
        elif name.startswith(('maxmemory', 'lfu-')):
            self.evictor.configure()
            if name == 'maxmemory' and self.loop is not None:
                self.evictor.shrink()
        elif name == 'tracking-table-max-keys':
            self.tracking.limit()  # Redis enforces it before the next command
        elif name in ('oom-score-adj', 'oom-score-adj-values'):
            self.oom.apply()
        elif name == 'proc-title-template' and self.loop is not None:
            proc_title.apply(self)
        elif name == 'tls-auth-clients':
            self.tls.set_auth(cfg[name])
        elif name == 'watchdog-period':
            self.watchdog.apply()
        elif name.startswith('cluster-') and self.cluster is not None:
            self.cluster.apply_config()
        elif name == 'requirepass':
            # The default user's password; connections keep their authentication.
            self.acl.set_default_password(cfg[name])
            self.users_changed(self.acl.default)

    def apply_all(self) -> None:
        for name in (
            'proto-max-bulk-len',
            'requirepass',
            'script-memory-limit',
            'notify-keyspace-events',
            'keyevent-journal-key',
            'maxmemory-policy',
            'oom-score-adj',
            *EncodingLimits.PARAMS,
        ):
            self.apply_config(name)

    # -- logging (redis-server's format: pid:role date time level message) ---------------

    def log(self, msg: str, level: str = '*') -> None:
        if process.below(level, self.config['loglevel']):
            return
        role = 'S' if self.replica_link is not None else 'M'  # as Redis marks them
        try:
            process.log_line(self.log_stream, role, level, msg)
        except (OSError, ValueError):
            return  # a closed or broken log stream must not stop the server (nor SIGTERM)
        if self.config['syslog-enabled']:
            process.to_syslog(level, msg)

    def notify_systemd(self, msg: str) -> None:
        """The supervisor's word of the server's state, under systemd (store/process.py)."""
        if self.supervised == 'systemd':
            process.notify(msg, self.log)

    def log_verbose(self, msg: str) -> None:
        self.log(msg, '-')

    def log_exception(self, msg: str, exc: BaseException) -> None:
        self.log(f'{msg}: {exc!r}\n' + ''.join(traceback.format_exception(exc)), '#')

    # -- clients -------------------------------------------------------------------------

    def new_connection(self) -> Connection:
        return Connection(self)

    def register(self, conn: Connection) -> None:
        conn.id = self.next_client_id
        self.next_client_id += 1
        self.clients[conn.id] = conn
        self.stats.total_connections_received += 1
        conn.update_gate()  # what gates every client gates it too (MONITOR, PAUSE, MISCONF)
        transport = conn.transport
        assert transport is not None  # connection_made set it, then registered the client
        sock = transport.get_extra_info('socket')
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if interval := self.config['tcp-keepalive']:
                listen.keep_alive(sock, interval)

    def client_info(
        self, conn: Connection, current: Connection | None = None, args: list[bytes] | None = None
    ) -> str:
        """A connection's CLIENT LIST line, for what sits below the commands (the ACL log,
        the crash report)."""
        return client_info_line(conn, current, args)

    def info_text(self, sections: list[str]) -> str:
        """INFO's text, for the crash report (which sits below the commands)."""
        return info_text(self, sections)

    def users_changed(self, user: User, deleted: bool = False) -> None:
        """An ACL user's rules changed: its connections take its new table of commands
        and gate (Connection.set_user). A deleted user's connections are closed, after
        the reply for the one deleting it (ACLFreeUserAndKillClients)."""
        for conn in list(self.clients.values()):
            if conn.user is not user:
                continue
            if deleted:
                conn.set_user(self.acl.default)
                conn.authenticated = False
                if conn is self.current_client:
                    close_after_this_reply(conn)
                else:
                    kill_connection(conn)
            else:
                conn.set_user(user)  # its table of commands may have changed
                conn.update_gate()

    def kill_pubsub_clients(self, user: User, new: User) -> None:
        """ACLKillPubsubClientsIfNeeded: before `user` takes the rules of `new`, close its
        subscribed connections that would no longer be allowed one of their channels or
        patterns."""
        if any(s.allchannels for s in new.selectors):
            return
        upcoming = [c for s in new.selectors for c in s.channels]
        # a superset of the old channels keeps everyone; losing allchannels never does
        if not any(s.allchannels for s in user.selectors) and all(
            c in upcoming for s in user.selectors for c in s.channels
        ):
            return
        for conn in list(self.clients.values()):
            if conn.user is not user or conn.pubsub is None or conn.subscriptions == 0:
                continue
            channels, patterns, shard_channels = conn.pubsub.sets
            if any(not channel_in(upcoming, p, True) for p in patterns) or any(
                not channel_in(upcoming, ch, False) for ch in (*channels, *shard_channels)
            ):
                kill_connection(conn)

    def update_gates(self) -> None:
        """Re-derive every connection's gate after a server-wide state changed."""
        for conn in self.clients.values():
            conn.update_gate()

    def flush_pending(self) -> None:
        """Write the replies of the reads this loop turn ran, back to back (Redis's
        handleClientsWithPendingWrites). A client sleeping on its replies is woken once
        per turn rather than once per connection between two commands' work: on loopback
        each write that wakes a sleeping reader costs the writer tens of microseconds."""
        pending = self.pending_flush
        self.pending_flush = []
        for conn in pending:
            conn.flush()

    def unregister(self, conn: Connection) -> None:
        if self.clients.pop(conn.id, None) is None and self.dropping.pop(conn.id, None) is None:
            return
        conn.end_multi()
        conn.release_deferred()
        for hook in self.disconnect_hooks:
            hook(conn)

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen, load the data (clients meanwhile get -LOADING), and start housekeeping.
        Raises OSError when the address is taken, LoadError for a file that cannot be
        loaded."""
        self.loop = asyncio.get_running_loop()
        cfg = self.config
        if cfg['syslog-enabled']:
            process.open_syslog(cfg['syslog-ident'], cfg['syslog-facility'])
        adjust_open_files_limit(self)
        if tls.enabled(cfg.values):
            try:
                self.tls.install(tls.configure(cfg.values, self.log), cfg['tls-auth-clients'])
            except tls.TlsError:
                self.log('Failed to configure TLS. Check logs for more info.', '#')
                raise LoadError('TLS') from None
        port = cfg['port']
        # port 0 beside a tls-port: TLS only, as in Redis (alone: a port the system picks)
        plain = not (port == 0 and cfg['tls-port'])
        socks = listen.open_tcp(self, cfg['bind'], port) if plain else []
        if cfg['unixsocket']:
            path, perm = cfg['unixsocket'], cfg['unixsocketperm']
            socks.append(listen.open_unix(path, perm, cfg['tcp-backlog']))
        backlog = cfg['tcp-backlog']  # (asyncio listens again, with 100 unless told)
        for sock in socks:
            if sock.family == socket.AF_UNIX:
                server = await self.loop.create_unix_server(
                    self.new_connection, sock=sock, backlog=backlog
                )
            else:
                server = await self.loop.create_server(
                    self.new_connection, sock=sock, backlog=backlog
                )
                port = sock.getsockname()[1]  # (the same for all: open_tcp sees to it)
            self.listeners.append(server)
        if cfg['tls-port']:
            listen.serve_tls(self, listen.open_tcp(self, cfg['bind'], cfg['tls-port']))
        self.port = cfg.values['port'] = port  # CONFIG GET port agrees with INFO tcp_port
        if self.pidfile and (warning := process.write_pidfile(self.pidfile)):
            self.log(warning, '#')
        proc_title.apply(self)
        errors = self.acl.load_at_startup()
        if errors is not None:
            self.log(errors, '#')
            for server in self.listeners:
                server.close()
            raise LoadError(errors)
        self.show_logo()
        if self.cluster is not None:  # clusterInit: nodes.conf, the bus port
            try:
                self.cluster.load()
                await self.cluster.start()
            except ClusterStartError as e:
                self.log(str(e), '#')
                for server in self.listeners:
                    server.close()
                raise LoadError(str(e)) from None
        self.log('Server initialized', '#')
        try:
            await self.persistence.load()
        except LoadError as e:
            self.log(str(e), '#')
            for server in self.listeners:
                server.close()
            raise
        if self.cluster is not None and not self.cluster.verify_with_data():
            msg = "You can't have keys in a DB different than DB 0 when in Cluster mode. Exiting."
            self.log(msg, '#')
            for server in self.listeners:
                server.close()
            raise LoadError(msg)
        # after the data is in, as Redis logs it: supervisors and Redis's test harness read
        # this line as "serving"
        self.log('Ready to accept connections')
        if cfg['unixsocket']:
            self.log(f'The server is now ready to accept connections at {cfg["unixsocket"]}')
        if cfg['replicaof']:
            self.notify_systemd(
                'STATUS=Ready to accept connections in read-only mode. '
                'Waiting for MASTER <-> REPLICA sync\n'
            )
        else:
            self.notify_systemd('STATUS=Ready to accept connections\n')
        self.notify_systemd('READY=1\n')
        self.expiry.start(self.loop, self.keyspace)
        self.cron_handle = self.loop.call_later(1 / max(cfg['hz'], 1), self.cron)
        if cfg['watchdog-period']:
            self.watchdog.apply()
        if cfg['replicaof']:  # replicaof <host> <port> in the configuration
            host, port = cfg['replicaof'].rsplit(' ', 1)
            self.replication.replicate(host, int(port))

    def show_logo(self) -> None:
        """redisAsciiArt: Redis's start-up banner under always-show-logo (or on a terminal),
        else one line. Its ` PID: ` line is what Redis's test harness waits for."""
        cfg = self.config
        port = self.port or cfg['tls-port']
        mode = 'cluster' if self.cluster is not None else 'standalone'
        on_terminal = not cfg['logfile'] and not cfg['syslog-enabled'] and sys.stdout.isatty()
        if not (cfg['always-show-logo'] or on_terminal):
            self.log(f'Running mode={mode}, port={port}.')
            return
        logo = LOGO % (VERSION, mode, port, os.getpid())
        try:
            print(logo, file=self.log_stream, flush=True)
        except (OSError, ValueError):
            return
        if cfg['syslog-enabled']:
            process.to_syslog('*', logo)

    def cron(self) -> None:
        self.watchdog.rearm()  # (first, as serverCron arms it)
        if self.cron_paused:  # DEBUG PAUSE-CRON, as Redis's serverCron returns at once
            self.cron_handle = self.loop.call_later(1 / max(self.config['hz'], 1), self.cron)
            return
        self.clock = now = time.time()
        timeout = self.config['timeout']
        if timeout:
            # clientsCronHandleTimeout: in whole seconds, as Redis keeps them; subscribers
            # and clients waiting in a command (a blocking read, a held PUBLISH: parked)
            # are spared, a blocking command's own timeout is what ends its wait.
            idle_since = int(now) - timeout
            for conn in list(self.clients.values()):
                if (
                    int(conn.last_interaction) < idle_since
                    and not conn.subscriptions
                    and conn.deferred is None
                    and conn.blocked is None
                    and not conn.closing
                    and conn not in self.monitors
                ):
                    self.log_verbose(f'Closing idle client {conn.describe()}')
                    conn.close_after_reply()
        self.settle_stats()
        for hook in self.cron_hooks:
            hook(now)
        self.cron_handle = self.loop.call_later(1 / max(self.config['hz'], 1), self.cron)

    def settle_stats(self) -> None:
        """Fold the durations the commands recorded into their statistics (Command.settle):
        from the cron, and from a long script's hook, which runs commands without the
        cron's turn coming."""
        for cmd in self.every_command:
            cmd.settle()

    def request_shutdown(
        self,
        reason: str = '',
        exit_code: int = 0,
        save: str = 'default',
        force: bool = False,
        now: bool = False,
    ) -> bool:
        """Shut down as SHUTDOWN does (store/shutdown.py), for an embedding process: the
        final save per `save` (default, save or nosave); False, and the server goes on,
        when that save failed and `force` is not set. Replicas get up to shutdown-timeout
        seconds to acknowledge the last writes, unless `now`."""
        if self.closed.is_set():
            return True
        if reason:
            self.log(reason, '#')
        flags = {save} - {'default'}
        if force:
            flags.add('force')
        if now:
            flags.add('now')
        self.exit_code = exit_code
        return self.shutdown.prepare(flags) != 'error'

    async def serve_until_shutdown(self) -> None:
        await self.closed.wait()
        await self.close()

    async def close(self) -> None:
        """After finishShutdown (store/shutdown.py): every connection's replies written
        and closed, the listeners' ends awaited."""
        if self.cron_handle is not None:
            self.cron_handle.cancel()
        if self.cluster is not None:
            await self.cluster.close()
        self.expiry_gate.hold('shutdown')
        for server in self.listeners:
            server.close()
        if self.replica_link is not None:
            self.replica_link.stop()
        for conn in list(self.clients.values()):
            conn.flush()
            if conn.transport is not None:
                conn.transport.close()
        for server in self.listeners:
            await server.wait_closed()
        self.listeners = []


MIN_RESERVED_FDS = 32  # Redis's CONFIG_MIN_RESERVED_FDS: listeners, log, persistence files


def adjust_open_files_limit(server: Server) -> None:
    """Redis's adjustOpenFilesLimit: raise the open-file limit to maxclients + 32, or,
    when the OS refuses, lower maxclients to what the limit allows, with Redis's warnings.
    Then every client over maxclients is accepted and refused with -ERR max number of
    clients reached (Connection.connection_made), instead of accept() failing for want of
    a descriptor, which leaves the client with nothing to read. Raises LoadError (the
    server exits, as Redis does) when the limit leaves no room for a single client.

    Unlike Redis, a hard limit above the one needed is kept, not lowered to it: an
    embedding process keeps its own."""
    cfg = server.config
    maxclients = cfg['maxclients']
    maxfiles = maxclients + MIN_RESERVED_FDS
    try:
        oldlimit, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError) as e:
        server.log(
            f'Unable to obtain the current NOFILE limit ({e}), assuming 1024 and setting the '
            'max clients configuration accordingly.',
            '#',
        )
        cfg.values['maxclients'] = 1024 - MIN_RESERVED_FDS
        return
    if oldlimit == resource.RLIM_INFINITY or oldlimit >= maxfiles:
        return
    # Try maxfiles, then less and less, 16 at a time, down to the current limit.
    bestlimit = maxfiles
    error = 0
    while bestlimit > oldlimit:
        keep_hard = hard == resource.RLIM_INFINITY or hard > bestlimit
        try:
            resource.setrlimit(
                resource.RLIMIT_NOFILE, (bestlimit, hard if keep_hard else bestlimit)
            )
            break
        except ValueError as e:  # Python's words for EPERM and EINVAL
            error = errno.EPERM if 'not allowed' in str(e) else errno.EINVAL
        except OSError as e:
            error = e.errno or errno.EPERM
        if bestlimit < 16:
            bestlimit = oldlimit
            break
        bestlimit -= 16
    bestlimit = max(bestlimit, oldlimit)
    if bestlimit >= maxfiles:
        server.log(
            f'Increased maximum number of open files to {maxfiles} '
            f'(it was originally set to {oldlimit}).'
        )
        return
    if bestlimit <= MIN_RESERVED_FDS:
        message = (
            f"Your current 'ulimit -n' of {oldlimit} is not enough for the server to start. "
            f'Please increase your open file limit to at least {maxfiles}. Exiting.'
        )
        server.log(message, '#')
        raise LoadError(message)  # logged: the command line exits with status 1
    cfg.values['maxclients'] = bestlimit - MIN_RESERVED_FDS
    server.log(
        f'You requested maxclients of {maxclients} requiring at least {maxfiles} max file '
        'descriptors.',
        '#',
    )
    server.log(
        f"Server can't set maximum open files to {maxfiles} because of OS error: "
        f'{os.strerror(error)}.',
        '#',
    )
    server.log(
        f'Current maximum open files is {bestlimit}. maxclients has been reduced to '
        f"{bestlimit - MIN_RESERVED_FDS} to compensate for low ulimit. If you need higher "
        "maxclients increase 'ulimit -n'.",
        '#',
    )


def new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:  # pragma: no cover - uvloop is a declared dependency
        return asyncio.new_event_loop()


logging.getLogger('asyncio').setLevel(logging.CRITICAL)
