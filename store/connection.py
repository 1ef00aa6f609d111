"""One client connection: parse requests, run commands in order, write replies.

Parsing has two paths (store/request_parser.py). The fast path hands a read to hiredis
when it starts a multibulk frame and ends with CRLF; it accepts hiredis's frames only when
parse_bulk_arrays proves the read held whole, well-formed frames of bulk strings. Anything
else (inline commands, frames split across reads, non-bulk elements, oversized arguments,
unauthenticated clients) goes to the exact parser, RequestParser, which reproduces Redis's
errors, limits and close points (and itself has hiredis parse the stretches it can prove
well-formed: a pipeline cut across reads, a command of a million arguments); the
connection returns to the fast path once the exact parser's buffer is empty.

Turns (fair processing, store/connection_turns.py): a read of more than SLICE commands, or
one past the turn's budget, runs over several turns of the event loop, its rest held in
`backlog` with reading paused; a client not reading its replies is not read either. Reads
the fast path cannot take go to the exact parser (store/connection_query.py), which also
applies the query buffer limit and maxmemory-clients while a request arrives.

Commands from one read (or slice) run in order and their replies leave in one write. The
common case (authenticated, not in MULTI or subscribe mode, replies on) runs inline in
`run`; in cluster mode it is routed first (store/cluster/routing.py: a command for another
node's slot is answered -MOVED, ...), which costs a standalone server one test per
command; every special state sets `self.gated`, which routes commands through
`_execute_gated` (store/connection_gate.py), where the auth, MULTI, subscribe-mode and
CLIENT REPLY rules live. A key
signalled for blocked clients gates the running connection too, so they are served before
its next command (store/blocking.py).

A connection is parked (`park`) while its current command waits: a blocking read
(store/blocking.py) or a PUBLISH held by publisher backpressure (store/pubsub). Later
commands then queue in `deferred` and run, in order, once `resume` delivers the reply.

Every piece of session state is declared in `__slots__` below, with the module that owns
it; other modules read and write these fields but add none.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import hiredis

from .commands.client_info import client_info_line
from .connection_gate import ConnectionGate
from .connection_query import ConnectionQuery
from .connection_turns import SLICE, ConnectionTurns
from .latency import observe
from .memory.sizes import queued_size
from .reply_buffer import REPLY_CHUNK
from .request_parser import parse_bulk_arrays
from .resp import (
    BULK_HEADER,
    CRLF,
    OK,
    CountedError,
    FailedRaw,
    RedisError,
    encode,
)

if TYPE_CHECKING:
    from .blocking import Waiter
    from .command_table import Command
    from .pubsub.dispatch import Subscriber
    from .request_parser import RequestParser
    from .tracking import ClientTracking

_perf_ns = time.perf_counter_ns

# What Redis 7.0 sends a non-loopback client in protected mode, word for word.
PROTECTED_MODE_DENIED = (
    b'-DENIED Redis is running in protected mode because protected mode is enabled and no '
    b'password is set for the default user. In this mode connections are only accepted from '
    b'the loopback interface. If you want to connect from external computers to Redis you '
    b'may adopt one of the following solutions: 1) Just disable protected mode sending the '
    b"command 'CONFIG SET protected-mode no' from the loopback interface by connecting to "
    b'Redis from the same host the server is running, however MAKE SURE Redis is not '
    b'publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change '
    b'permanent. 2) Alternatively you can just disable the protected mode by editing the '
    b"Redis configuration file, and setting the protected mode option to 'no', and then "
    b"restarting the server. 3) If you started the server manually just for testing, restart "
    b"it with the '--protected-mode no' option. 4) Setup a an authentication password for "
    b'the default user. NOTE: You only need to do one of the above things in order for the '
    b'server to start accepting connections from the outside.\r\n'
)


class Connection(ConnectionGate, ConnectionTurns, ConnectionQuery, asyncio.Protocol):
    __slots__ = (
        # transport and parsing
        'server',
        'ks',
        'aof',
        'table',
        'transport',
        'reader',
        'parser',
        'out',
        'closing',
        'write_paused',
        # fair processing (data_received): input left for later turns, the call_soon handle
        # of the next turn, replies over OUT_PAUSE_BYTES unread, reading paused for these
        'backlog',
        'turn_handle',
        'out_full',
        'read_paused',
        # identity (CLIENT LIST, CLIENT SETNAME)
        'id',
        'name',
        'addr',
        'laddr',
        'created',
        'last_interaction',
        'last_cmd',
        'last_sub',
        # session
        'db',
        'proto',
        'authenticated',
        'user',  # the ACL user (store/acl.py)
        'acl_rules',  # its user has ACL rules: the gated path checks each command
        'acl_checks',  # ... and none may skip that path (no table of its own)
        'gated',
        'reply_mode',
        'no_evict',
        'no_touch',
        # MULTI/EXEC and WATCH (commands/transactions.py)
        'multi',
        'multi_bytes',
        'multi_error',
        'dirty_cas',
        'watched',
        'watched_deadlines',
        'in_exec',
        # pub/sub (store/pubsub): subscription count and the Subscriber with its queue
        'subscriptions',
        'pubsub',
        # CLIENT TRACKING (store/tracking.py): its ClientTracking while tracking is on
        'tracking',
        # cluster mode (store/cluster/routing.py): the server's Cluster (None in standalone
        # mode: the hot path's one test), ASKING for the next command (gates the connection
        # while set), READONLY reads from a replica
        'cluster',
        'asking',
        'readonly',
        # parked: commands held while the current one waits, and the blocking wait
        'deferred',
        'deferred_bytes',
        'blocked',
        # client-output-buffer-limit (store/output_limit.py): the limits while the normal
        # class has one (else None), and when this client first went over its soft limit
        'out_limit',
        'obl_soft_since',
        # (args, bytes) of a read holding one command while it runs: the AOF writes a
        # plain write's own bytes instead of encoding them again
        # (persistence/aof_propagate.py, _wrapped); None without an AOF
        'raw',
        # store/replication.py: REPLCONF's state, then the synced replica's
        'replica',
        # (size, when) of the query buffer Redis would have allocated for the last big
        # argument (PROTO_MBULK_BIG_ARG or more) read: CLIENT LIST's qbuf-free
        'qbuf_big',
        # the bytes of the request held by `parser` that used_memory counts (the evictor's
        # last measure, or what arrived since: store/connection_query.py)
        'qbuf_counted',
        # the reply buffer's modelled size and peak, and when the peak was reset
        # (store/reply_buffer.py): CLIENT LIST's rbs and rbp, part of tot-mem
        'rbs',
        'rb_peak',
        'rb_peak_reset',
    )
    serves_stale_keys = False  # a WATCHed key a SWAPDB brings stale is no change (KeyWatcher)

    def __init__(self, server: Any) -> None:
        self.server = server
        self.ks = server.keyspace
        self.aof = server.persistence.aof  # propagating: the raw bytes of a lone command
        self.table: dict[bytes, Any] = server.commands
        self.transport: asyncio.Transport | None = None
        self.reader = hiredis.Reader()
        self.parser: RequestParser | None = None  # exact parser, while it holds a partial request
        self.out: list[bytes] = []
        self.db = 0
        self.proto = 2
        self.id = 0
        self.name: str | None = None
        self.addr = self.laddr = '?'
        self.created = self.last_interaction = time.time()
        self.last_cmd: Command | None = None  # the Command last run (CLIENT LIST cmd=)
        self.last_sub: Command | None = None  # its subcommand, for containers
        self.set_user(server.acl.default)
        self.authenticated = not server.acl.auth_required()
        self.closing = False
        # MULTI/EXEC and WATCH
        # the queued (cmd, args) while in MULTI
        self.multi: list[tuple[Command, list[bytes]]] | None = None
        self.multi_bytes = 0  # what the queue holds (sizes.queued_size), in used_memory
        self.multi_error = False
        self.dirty_cas = False
        self.watched: list[tuple[int, bytes]] = []  # (db, key) pairs
        self.watched_deadlines: list[int | None] = []  # their deadlines at WATCH time
        self.in_exec = False  # EXEC is running the queued commands
        # CLIENT REPLY, CLIENT NO-EVICT/NO-TOUCH
        self.reply_mode = 'on'
        self.no_evict = self.no_touch = False
        # pub/sub state, owned by store/pubsub
        self.subscriptions = 0
        self.pubsub: Subscriber | None = None  # store.pubsub Subscriber, from the first subscribe
        self.tracking: ClientTracking | None = None  # store.tracking, while tracking is on
        # cluster mode: every command is routed. (The server builds its scripts' own
        # connections before its Cluster: they are never routed, scriptCall checks instead.)
        self.cluster = server.cluster
        self.asking = self.readonly = False  # ASKING, READONLY (cluster mode)
        self.deferred: list[list[bytes]] | None = None  # commands held while parked
        self.deferred_bytes = 0  # what they hold (sizes.queued_size), in used_memory
        self.blocked: Waiter | None = None  # the blocking.Waiter while a blocking command waits
        self.write_paused = False  # transport above its high-water mark
        # reads (bytes) and [frames, next index] lists, in order
        self.backlog: deque[Any] | None = None
        self.turn_handle: asyncio.Handle | None = None
        self.out_full = False
        self.read_paused = False
        self.out_limit = server.pubsub.limits.gate(self)
        self.obl_soft_since: float | None = None
        self.raw: tuple[list[bytes], bytes] | None = None
        self.replica: Any = None  # store/replication.py's ReplicaState (a layer above)
        self.qbuf_big: tuple[int, float] | None = None
        self.qbuf_counted = 0
        self.rbs = self.rb_peak = REPLY_CHUNK
        self.rb_peak_reset = int(self.created)  # seconds, compared with ms: as Redis does
        self.gated = not self.authenticated or server.loading or self.acl_checks

    # -- asyncio.Protocol --------------------------------------------------------------

    def connection_made(self, transport: Any) -> None:  # a Transport (TCP, unix, TLS)
        if self.id:  # accepted while a script was busy (scripting/busy.py): now the loop's
            self.transport = transport
            return
        self.transport = transport
        server = self.server
        peer = transport.get_extra_info('peername')
        sock = transport.get_extra_info('sockname')
        if type(sock) is str:  # the unix socket: Redis shows its path, port 0, for both
            self.addr = self.laddr = f'{sock}:0'
            peer = None
        else:
            if peer:
                self.addr = f'{peer[0]}:{peer[1]}'
            if sock:
                self.laddr = f'{sock[0]}:{sock[1]}'
        if len(server.clients) >= server.config['maxclients']:
            server.stats.rejected_connections += 1
            transport.write(b'-ERR max number of clients reached\r\n')
            transport.close()
            self.closing = True
            return
        cfg = server.config
        if (
            cfg['protected-mode']
            and server.acl.default.nopass
            and peer
            and peer[0] not in ('127.0.0.1', '::1')
        ):
            # clientAcceptHandler: the client was created (its id is spent) but is neither
            # counted as a connection nor listed; Redis 7.0 compares the peer address with
            # these two exactly, so 127.0.0.2 is not local.
            server.next_client_id += 1
            server.stats.rejected_connections += 1
            transport.write(PROTECTED_MODE_DENIED)
            transport.close()
            self.closing = True
            return
        server.register(self)

    def eof_received(self) -> None:
        """The client closed its side: what it was answered this turn leaves before the
        transport closes (Server.flush_pending would find it closed)."""
        self.flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        self.server.unregister(self)

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        server = self.server
        self.last_interaction = server.clock
        server.stats.net_input_bytes += len(data)
        if self.backlog is not None:  # earlier input waits for its turn: this goes after it
            self.backlog.append(data)
            self._pause_reading()  # someone else may have resumed it (store/pubsub)
            return
        server.current_client = self
        self._consume(data, 0)

    def _consume(self, data: bytes, deadline: int) -> bool:
        """Parse and run one read. What the turn's budget (`deadline`, 0: from now) leaves
        goes to the front of the backlog; True then."""
        if self.pubsub is not None and self.pubsub.queue:
            self.pubsub.drain_before_commands()  # queued messages first, up to the quota
        server = self.server
        # data is never empty; indexing it compares ints, where slices build bytes objects
        if (
            self.parser is None
            and data[0] == 42  # '*'
            and data[-1] == 10  # CRLF
            and data[-2] == 13
            and self.authenticated
            and len(data) <= server.max_bulk
        ):
            frames = parse_bulk_arrays(self.reader, data)
            if frames is not None:
                if len(frames) > SLICE:
                    return self._run_slices(frames, 0, deadline)
                if self.aof.propagating and len(frames) == 1:
                    self.raw = (frames[0], data)
                    self.run(frames)
                    self.raw = None  # a big value is not kept alive by it
                else:
                    self.run(frames)
                if server.evictor.clients_limit:
                    # maxmemory-clients: the replies leave now, so that a client not reading
                    # them is measured (flush) before the turn's other clients run commands,
                    # as Redis checks before each command
                    self.flush()
                    return False
                pending = server.pending_flush  # flush_later, inlined: once per read
                if not pending:
                    server.loop.call_soon(server.flush_pending)
                pending.append(self)
                return False
            self.reader = hiredis.Reader()
        return self._parse_exact(data, deadline)

    # -- output ------------------------------------------------------------------------

    def flush_later(self) -> None:
        """Leave the replies queued for the end of the loop turn, when they are written
        with every other client's (Server.flush_pending), as Redis writes them in
        beforeSleep."""
        server = self.server
        pending = server.pending_flush
        if not pending:
            server.loop.call_soon(server.flush_pending)
        pending.append(self)

    def flush(self) -> None:
        """Write the queued replies; a closing connection closes once they are written."""
        aof = self.aof  # appendfsync always: written and fsynced before replies leave
        if aof.always and aof.buf:
            aof.write()
        out = self.out
        transport = self.transport
        if transport is None:
            return
        if out:
            if self.out_limit is not None and self.out_limit.check(self):
                return  # over client-output-buffer-limit: dropped, nothing written
            data = b''.join(out)  # (one part: the part itself, no copy)
            out.clear()
            n = len(data)
            self.server.stats.net_output_bytes += n
            if n > self.rb_peak:  # what Redis's reply buffer held before this write
                self.rb_peak = n if n < self.rbs else self.rbs
            transport.write(data)
            if self.write_paused and not self.out_full:
                self._check_out_full()
        if self.closing:
            transport.close()

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        if self.out_full:  # the client read its replies: go on with its input
            self.out_full = False
            if self.backlog is not None:
                self._schedule_turn()
            else:
                self._resume_reading()
        if self.pubsub is not None:
            self.pubsub.resume()  # move queued messages on (store/pubsub/dispatch.py)
        replica = self.replica
        if replica is not None and replica.state in ('wait_bgsave', 'send_bulk'):
            self.server.replication.writable(replica)  # its sync's payload, piece by piece

    def close_after_reply(self) -> None:
        """Stop reading; the transport closes once pending replies are written."""
        self.closing = self.gated = True
        if not self.out and self.transport is not None:
            self.transport.close()

    def is_replica(self) -> bool:
        """Synced or syncing as a replica (store/replication.py); REPLCONF alone is not."""
        return self.replica is not None and self.replica.state != ''

    def send_stream(self, data: bytes) -> None:
        """Bytes of the replication stream (store/replication.py), written after the
        replies queued before them."""
        if self.transport is not None and not self.closing:
            self.out.append(data)
            self.flush()

    def reply(self, value: Any) -> None:
        """Queue a reply outside the command path (pushes, protocol errors)."""
        encode(value, self.proto, self.out)

    def park(self, held: Iterable[list[bytes]] = ()) -> None:
        """Hold the commands that follow the current one until `resume`; `held` run
        first then (a PUBLISH waiting on backpressure runs again)."""
        if self.deferred is None:
            self.deferred = []
            for args in held:
                self.defer(args)
        self.update_gate()

    def defer(self, args: list[bytes]) -> None:
        """Hold `args` behind the parked command. Like redis-server's query buffer behind a
        blocked client (it goes on reading, so a close is seen), what is held counts as the
        client's memory and closes the client past client-query-buffer-limit."""
        self.deferred.append(args)  # type: ignore[union-attr]  # a list while parked
        size = queued_size(args)
        self.deferred_bytes += size
        server = self.server
        server.evictor.clients_grew(size)
        if self.deferred_bytes > server.config['client-query-buffer-limit'] and not self.closing:
            server.log(f'Closing client that reached max query buffer length: {self.describe()}')
            self.close_after_reply()

    def release_deferred(self) -> None:
        """The held commands were run or dropped: their memory leaves used_memory."""
        if self.deferred_bytes:
            self.server.evictor.clients_grew(-self.deferred_bytes)
            self.deferred_bytes = 0

    def resume(self, reply: Any = None) -> None:
        """Deliver the parked command's reply (None: it has none, as a held PUBLISH), then
        run the commands held behind it."""
        deferred, self.deferred = self.deferred, None
        self.release_deferred()
        self.update_gate()
        if self.closing or self.transport is None:
            return
        if reply is not None:
            self.last_interaction = self.server.clock  # a reply written is activity
            if isinstance(reply, RedisError):  # UNBLOCKED ...: the blocked command failed
                self.server.stats.error(reply.msg)
                if self.last_cmd is not None:
                    self.last_cmd.failed += 1
            self._emit(reply)
        if deferred:
            server = self.server
            previous, server.current_client = server.current_client, self
            self.run(deferred)
            server.current_client = previous
        self.flush()

    def key_modified(self, db: int, key: bytes) -> None:
        """A WATCHed key changed (Keyspace observer): EXEC will fail. Not for a key that
        was already expired when WATCHed (-1 in watched_deadlines, transactions.STALE),
        as touchWatchedKey: its deletion is no logical change (the mark goes then)."""
        deadlines = self.watched_deadlines
        if -1 in deadlines:
            try:
                i = self.watched.index((db, key))
            except ValueError:
                i = -1
            if i >= 0 and deadlines[i] == -1:
                if not self.ks.stored(db, key)[0]:
                    deadlines[i] = None
                return
        self.dirty_cas = True

    def swapped(self, db: int, key: bytes, here: bool, there: bool, stale: bool) -> None:
        """SWAPDB changed the WATCHed key's database, which held it (`here`) and now has
        the other's (`there`, `stale`: expired), as touchAllWatchedKeysInDb decides: a key
        seen expired at WATCH that is now gone or still expired is no change, nor is a
        missing key replaced by an expired one (then marked as seen expired)."""
        try:
            i = self.watched.index((db, key))
        except ValueError:
            return
        deadlines = self.watched_deadlines
        if deadlines[i] == -1:
            if not there:
                deadlines[i] = None
                return
            if stale:
                return
        elif not here and stale:
            deadlines[i] = -1
            return
        self.dirty_cas = True

    # -- dispatch ----------------------------------------------------------------------

    def run(self, frames: list[list[bytes]]) -> None:
        """Run parsed commands in order, queueing their replies. The hot path: a command
        of a known name with the right arity on an ungated connection runs inline."""
        table = self.table
        out = self.out
        ks = self.ks
        config = self.server.config
        tracking = self.server.tracking
        # One clock read per command: a command's time runs from the end of the previous
        # one, so it includes the previous reply's encoding (tens of ns).
        t0 = _perf_ns()
        for args in frames:
            if not args:
                continue
            cmd = table.get(args[0])
            if cmd is None or self.gated:
                self._execute_gated(cmd, args)
                t0 = _perf_ns()
                continue
            n, arity = len(args), cmd.arity
            if (n != arity) if arity > 0 else (n < -arity):
                self._execute_gated(cmd, args)
                t0 = _perf_ns()
                continue
            if self.cluster is not None and self._misrouted(cmd, args):
                t0 = _perf_ns()  # another node's slot, CROSSSLOT, CLUSTERDOWN: answered
                continue
            # maxmemory (store/memory/eviction.py): evict, or refuse with -OOM
            if ks.used > ks.check_at and self.server.evictor.gate(self, cmd, args):
                t0 = _perf_ns()
                continue
            try:  # call(), inlined: a method call per command is measurable
                handler = cmd.handler  # (an attribute: `cmd.handler(...)` is not specialised)
                r = handler(self, args)
            except RedisError as e:
                r = e  # counted with the reply below
            except Exception as e:  # a bug must not take the server down
                r = self._internal_error(cmd, e)
            t1 = _perf_ns()
            took = t1 - t0
            cmd.took.append(took)  # calls, time, LATENCY HISTOGRAM (Command.settle)
            t0 = t1
            if took >= config.slow_ns:  # SLOWLOG, LATENCY events (past any took when off)
                observe(self, cmd, args, took)
                t0 = _perf_ns()
            if tracking.handle is not None:  # CLIENT TRACKING: this command's invalidations
                tracking.flush()
                t0 = _perf_ns()
            self.last_cmd = cmd
            if r is OK:
                out.append(b'+OK\r\n')
            else:
                t = type(r)
                if t is bytes:
                    n = len(r)
                    out += (BULK_HEADER[n] if n < 1024 else b'$%d\r\n' % n, r, CRLF)
                elif t is int:
                    out.append(b':%d\r\n' % r)
                else:
                    if t is RedisError or t is CountedError:  # raised, or a script's
                        self._failed(cmd, r)
                    elif t is FailedRaw:  # a script's array with errors in it
                        cmd.failed += r.fails
                    encode(r, self.proto, out)

    def _internal_error(self, cmd: Command, e: Exception) -> RedisError:
        """The error reply for a handler's bug (logged); the caller counts it (_failed)."""
        self.server.log_exception(f'Error running {cmd.name}', e)
        return RedisError(f'ERR internal error while running {cmd.name}: {e!r}'[:500])

    def _failed(self, cmd: Command, err: RedisError) -> None:
        """A command's error reply (raised, a bug's, or returned by EVAL and FCALL): the
        command failed, and the error counts in errorstats unless a script's redis.call
        counted it already (CountedError)."""
        cmd.failed += 1
        if type(err) is not CountedError:
            self.server.stats.error(err.msg)

    def set_user(self, user: Any) -> None:
        """Run as ACL user `user` from now on. The hot path's command table is the one
        of commands the user may run with no check (store/acl.py, Acl.table_for): a
        command outside it takes the gated path, where ACL checks it; a user with key or
        channel patterns has no such table, and all its commands take that path.
        `acl_rules` (any user but one that may run everything) is what the gated path,
        EXEC, scripts and SORT test, once here rather than from the rules each time."""
        self.user = user
        table = self.server.acl.table_for(user)
        self.table = table if table is not None else self.server.commands
        self.acl_checks = table is None
        self.acl_rules = table is not self.server.commands

    # -- helpers for commands ----------------------------------------------------------

    def abort(self) -> None:
        """freeClient for a client the server drops (output-buffer limits, client
        eviction): discard what it has queued and close its socket at once. It leaves
        CLIENT LIST and the client count now; its disconnect hooks run when the transport
        reports the close (Server.unregister), not in the middle of the caller's walk."""
        self.out.clear()
        self.closing = self.gated = True
        self.obl_soft_since = None
        if self.transport is not None:
            self.transport.abort()
            server = self.server
            if server.clients.pop(self.id, None) is not None:
                server.dropping[self.id] = self

    def info_line(self) -> str:
        """This client's CLIENT LIST line (for the log)."""
        return client_info_line(self)

    def describe(self) -> str:
        return f'id={self.id} addr={self.addr} laddr={self.laddr} name={self.name or ""}'

    def end_multi(self) -> None:
        """Leave MULTI (EXEC, DISCARD, RESET, an aborted EXEC, a close): no queue, no
        WATCH, and the queue's memory leaves used_memory now."""
        self.multi = None
        self.multi_error = False
        if self.multi_bytes:
            self.server.evictor.clients_grew(-self.multi_bytes)
            self.multi_bytes = 0
        self.unwatch_all()
        self.update_gate()

    def unwatch_all(self) -> None:
        if self.watched:
            for dk in self.watched:
                self.ks.unobserve(dk, self)
            self.watched = []
        self.dirty_cas = False
