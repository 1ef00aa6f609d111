"""One client connection: parse requests, run commands in order, write replies.

Parsing has two paths (store/request_parser.py). The fast path hands a read to hiredis
when it starts a multibulk frame and ends with CRLF; it accepts hiredis's frames only when
parse_bulk_arrays proves the read held whole, well-formed frames of bulk strings. Anything
else (inline commands, frames split across reads, non-bulk elements, oversized arguments,
unauthenticated clients) goes to the exact parser, RequestParser, which reproduces Redis's
errors, limits and close points (and itself has hiredis parse the stretches it can prove
well-formed: a pipeline cut across reads, a command of a million arguments); the
connection returns to the fast path once the exact parser's buffer is empty.

Turns (fair processing). A connection runs at most about TURN_NS of commands per turn of
the event loop: a read of more than SLICE commands runs in slices of SLICE, and once the
turn's time is spent the rest (frames, or unparsed bytes in the exact parser's 16 KB reads)
waits in `backlog` for the next turn (call_soon). Reading is paused meanwhile and later reads
queue behind the backlog, so order holds whoever resumes reading. A client whose unread
replies exceed OUT_PAUSE_BYTES in the transport is not read, nor its backlog run, until
they drain (resume_writing): TCP backpressure bounds what it makes the server hold; not
while client-output-buffer-limit sets a normal-class limit, which then bounds it as in
Redis (store/output_limit.py). A parked connection keeps its own rules (`park` below).

Commands from one read (or slice) run in order and their replies leave in one write. The
common case (authenticated, not in MULTI or subscribe mode, replies on) runs inline in
`run`; every special state sets `self.gated`, which routes commands through
`_execute_gated` where the auth, MULTI, subscribe-mode and CLIENT REPLY rules live. A key
signalled for blocked clients gates the running connection too, so they are served before
its next command (store/blocking.py).

A connection is parked (`park`) while its current command waits: a blocking read
(store/blocking.py) or a PUBLISH held by publisher backpressure (store/pubsub). Later
commands then queue in `deferred` and run, in order, once `resume` delivers the reply.

Every piece of session state is declared in `__slots__` below, with the module that owns
it; other modules read and write these fields but add none.
"""

import asyncio
import time
from collections import deque

import hiredis

from .command_table import call
from .commands.client_info import client_info_line
from .commands.gates import E_MASTERDOWN, SCRIPT_CALLS, denies_stale, writes
from .commands.monitor import E_REPLICA, touches_keyspace
from .latency import observe
from .memory.report import client_memory
from .memory.sizes import queued_size
from .request_parser import ProtocolError, RequestParser, parse_bulk_arrays
from .resp import (
    BULK_HEADER,
    CRLF,
    OK,
    QUEUED,
    CountedError,
    FailedRaw,
    RedisError,
    encode,
    error_arg,
    unknown_command_error,
)

_perf_ns = time.perf_counter_ns

# Fair processing (issue 13): a connection runs at most about TURN_NS of commands per turn of
# the event loop, in slices of SLICE commands (a read of SLICE or fewer commands, the -P 16
# case, runs whole, as before); the rest waits in `backlog` for the next turn (call_soon),
# reading paused meanwhile so the order holds. Redis runs one 16 KB read per client per turn.
TURN_NS = 1_000_000
SLICE = 256
# A client stops being read while more than this many bytes of its replies wait in the
# transport (it does not read them), and is read again once they drain (resume_writing).
# Not the transport's 64 KB high-water mark itself: a client that sends a whole pipeline
# before reading any reply (redis-py's pipelines do) would then deadlock as soon as the
# replies outgrow the socket buffers, where Redis buffers them; this bounds the memory one
# client holds all the same.
OUT_PAUSE_BYTES = 16 * 1024 * 1024

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


class Connection(asyncio.Protocol):
    __slots__ = (
        # transport and parsing
        'server',
        'ks',
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
        # parked: commands held while the current one waits, and the blocking wait
        'deferred',
        'deferred_bytes',
        'blocked',
        # client-output-buffer-limit (store/output_limit.py): the limits while the normal
        # class has one (else None), and when this client first went over its soft limit
        'out_limit',
        'obl_soft_since',
        # (args, bytes) of a read holding one command while it runs: the AOF writes a
        # plain write's own bytes instead of encoding them again (Aof._wrapped); None
        # without an AOF
        'raw',
        # store/replication.py: REPLCONF's state, then the synced replica's
        'replica',
        # (size, when) of the query buffer Redis would have allocated for the last big
        # argument (PROTO_MBULK_BIG_ARG or more) read: CLIENT LIST's qbuf-free
        'qbuf_big',
    )

    def __init__(self, server):
        self.server = server
        self.ks = server.keyspace
        self.table = server.commands
        self.transport = None
        self.reader = hiredis.Reader()
        self.parser = None  # exact parser, while it holds a partial request
        self.out = []
        self.db = 0
        self.proto = 2
        self.id = 0
        self.name = None
        self.addr = self.laddr = '?'
        self.created = self.last_interaction = time.time()
        self.last_cmd = None  # the Command last run (CLIENT LIST cmd=)
        self.last_sub = None  # its subcommand, for containers
        self.set_user(server.acl.default)
        self.authenticated = not server.acl.auth_required()
        self.closing = False
        # MULTI/EXEC and WATCH
        self.multi = None  # list of queued (cmd, args) while in MULTI
        self.multi_bytes = 0  # what the queue holds (sizes.queued_size), in used_memory
        self.multi_error = False
        self.dirty_cas = False
        self.watched = []  # (db, key) pairs
        self.watched_deadlines = []  # their deadlines at WATCH time
        self.in_exec = False  # EXEC is running the queued commands
        # CLIENT REPLY, CLIENT NO-EVICT/NO-TOUCH
        self.reply_mode = 'on'
        self.no_evict = self.no_touch = False
        # pub/sub state, owned by store/pubsub
        self.subscriptions = 0
        self.pubsub = None  # store.pubsub Subscriber, from the first subscribe
        self.tracking = None  # store.tracking ClientTracking while tracking is on
        self.deferred = None  # commands held while parked
        self.deferred_bytes = 0  # what they hold (sizes.queued_size), in used_memory
        self.blocked = None  # the blocking.Waiter while a blocking command waits
        self.write_paused = False  # transport above its high-water mark
        self.backlog = None  # deque of reads (bytes) and [frames, next index], in order
        self.turn_handle = None
        self.out_full = False
        self.read_paused = False
        self.out_limit = server.pubsub.limits.gate(self)
        self.obl_soft_since = None
        self.raw = None
        self.replica = None
        self.qbuf_big = None
        self.gated = not self.authenticated or server.loading or self.acl_checks

    # -- asyncio.Protocol --------------------------------------------------------------

    def connection_made(self, transport):
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

    def eof_received(self):
        """The client closed its side: what it was answered this turn leaves before the
        transport closes (Server.flush_pending would find it closed)."""
        self.flush()

    def connection_lost(self, exc):
        self.closing = True
        self.server.unregister(self)

    def data_received(self, data):
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

    def _consume(self, data, deadline):
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
                if self.ks.aof is not None and len(frames) == 1:
                    self.raw = (frames[0], data)
                    self.run(frames)
                    self.raw = None  # a big value is not kept alive by it
                else:
                    self.run(frames)
                pending = server.pending_flush  # flush_later, inlined: once per read
                if not pending:
                    server.loop.call_soon(server.flush_pending)
                pending.append(self)
                return False
            self.reader = hiredis.Reader()
        return self._parse_exact(data, deadline)

    def _run_slices(self, frames, i, deadline):
        """Run frames[i:] in slices until the turn's budget is spent or the client's unread
        replies are over OUT_PAUSE_BYTES; the rest goes to the backlog (True)."""
        if not deadline:
            deadline = _perf_ns() + TURN_NS
        n = len(frames)
        while i < n:
            # the client is not reading (its transport is above its high-water mark): small
            # slices, so what one slice adds before out_full is checked stays small
            step = SLICE if not self.write_paused else SLICE // 16
            self.run(frames[i : i + step])
            i += step
            self.flush()
            if self.closing:
                return False
            if i < n and (self.out_full or _perf_ns() > deadline) and self._may_yield():
                self._hold([frames, i])
                return True
        return False

    def _parse_exact(self, data, deadline):
        parser = self.parser
        if parser is None:
            parser = self.parser = RequestParser()
        limit = self.server.config['client-query-buffer-limit']
        link = self.server.replica_link
        if link is not None and link.is_master(self):
            limit = 1 << 63  # the master's stream is never cut (CLIENT_MASTER)
        if not deadline:
            deadline = _perf_ns() + TURN_NS
        held = False
        done = 0
        # redis-server's limits apply per read(2) of at most 16 KB: replay those reads where
        # they can matter: inline requests (64 KB without a line end), near the query
        # buffer limit, under maxmemory-clients. Otherwise the read is parsed whole: 16 KB
        # pieces freed between the values parsed out of them left holes in the heap that no
        # value fits (values of 10 KB under maxmemory: +18% RSS, tests/test_big_values_
        # memory.py), where a read of 128 KB or more is mapped and unmapped.
        whole = (
            (parser.multibulklen or data[0] == 42)  # '*': a multibulk request
            and parser.pending() + len(data) < limit >> 1
            and not self.server.evictor.clients_limit
        )
        for chunk in (data,) if whole else parser.reads(data):
            done += len(chunk)
            parser.feed(chunk)
            if parser.pending() > limit:
                # checked before parsing; replies of earlier reads still go out
                self.server.log(
                    f'Closing client that reached max query buffer length: {self.describe()}'
                )
                self.close_after_reply()
                break
            if parser.big is not None and self.server.evictor.clients_limit:
                self._evict_if_over(parser)
                if self.closing:
                    break
            while True:
                error = None
                try:
                    frames = parser.parse(self.server.max_bulk, self.authenticated)
                except ProtocolError as e:
                    frames, error = parser.ready, e
                if whole and len(frames) > SLICE and error is None:  # many commands: in turns
                    held = self._run_slices(frames, 0, deadline)
                    break
                self.run(frames)
                if error is None or self.closing:
                    break
                if frames:  # they may have changed the limits (AUTH, CONFIG SET)
                    continue
                self.server.log_verbose(f'Protocol error ({error}) from client: {self.describe()}')
                self.out.append(b'-ERR Protocol error: %s\r\n' % str(error).encode('latin-1'))
                self.server.stats.error('ERR Protocol error')
                self.close_after_reply()
                break
            if self.closing or held:
                break
            if done < len(data):  # the rest is what redis-server would read next: a turn ends
                self.flush()
                if (self.out_full or _perf_ns() > deadline) and self._may_yield():
                    self._hold(data[done:])
                    held = True
                    break
        if parser.big_seen:  # Redis read it into a query buffer of its size, kept after
            self.qbuf_big = (parser.big_seen + 2, time.time())
            parser.big_seen = 0
        if not parser.buf and not parser.multibulklen:  # not mid-request (args may be [])
            self.parser = None
        self.flush()
        return held

    def _evict_if_over(self, parser):
        """maxmemory-clients while a big argument arrives: checked as its bytes do, as
        Redis checks after each read (beforeSleep), not at the next cron, by when the
        command would have run. Redis made room in the query buffer for the whole argument
        when it read its header: a client whose room alone is over the limit goes (Redis
        would evict it, after any larger one)."""
        evictor = self.server.evictor
        evictor.evict_clients()
        if self.closing or self.no_evict:
            return
        if client_memory(self) + parser.big_left >= evictor.clients_limit:
            self.server.log_verbose(f'Evicting client: {self.info_line()}')
            self.abort()
            evictor.evicted_clients += 1

    # -- turns: fair processing ----------------------------------------------------------

    def _may_yield(self):
        """Whether the rest may wait for a later turn: not while a script is busy, whose
        poll feeds reads to be answered now (-BUSY), not after it ends (scripting/busy.py)."""
        server = self.server
        return server.busy.run is None and server.loop is not None and self.transport is not None

    def _hold(self, item):
        """Put `item` (unparsed bytes, or [frames, next index]) first in the backlog, stop
        reading, and schedule the next turn (unless unread replies hold it: resume_writing)."""
        if self.backlog is None:
            self.backlog = deque()
        self.backlog.appendleft(item)
        self._pause_reading()
        if not self.out_full:
            self._schedule_turn()

    def _schedule_turn(self):
        if self.turn_handle is None:
            self.turn_handle = self.server.loop.call_soon(self._next_turn)

    def _next_turn(self):
        """Run the backlog, in order, for one turn's budget."""
        self.turn_handle = None
        backlog = self.backlog
        if backlog is None:
            return
        if self.closing or self.transport is None:
            self.backlog = None
            return
        if self.out_full:
            return  # resume_writing schedules the next turn
        server = self.server
        server.current_client = self
        deadline = _perf_ns() + TURN_NS
        while backlog:
            item = backlog.popleft()
            if type(item) is list:
                held = self._run_slices(item[0], item[1], deadline)
            else:
                held = self._consume(item, deadline)
            if held:
                return
            if self.closing:
                self.backlog = None
                return
            if backlog and (self.out_full or _perf_ns() > deadline):
                if not self.out_full:
                    self._schedule_turn()
                return
        self.backlog = None
        self._resume_reading()

    def _pause_reading(self):
        """Stop reading (again: store/pubsub may have resumed it meanwhile; uvloop's
        pause_reading does nothing when reading is paused)."""
        self.read_paused = True
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.pause_reading()

    def _resume_reading(self):
        """Read again once nothing of ours holds it: no backlog, replies drained. A PUBLISH
        parked by publisher backpressure keeps it paused: store/pubsub resumes it. (Other
        parked connections, blocked or held by CLIENT PAUSE, read on as they always did.)"""
        if not self.read_paused or self.backlog is not None or self.out_full:
            return
        if self.deferred is not None and self in self.server.pubsub.blocked:
            return
        self.read_paused = False
        transport = self.transport
        if transport is not None and not transport.is_closing() and not self.closing:
            transport.resume_reading()

    # -- output ------------------------------------------------------------------------

    def flush_later(self):
        """Leave the replies queued for the end of the loop turn, when they are written
        with every other client's (Server.flush_pending), as Redis writes them in
        beforeSleep."""
        server = self.server
        pending = server.pending_flush
        if not pending:
            server.loop.call_soon(server.flush_pending)
        pending.append(self)

    def flush(self):
        """Write the queued replies; a closing connection closes once they are written."""
        aof = self.ks.aof  # appendfsync always: written and fsynced before replies leave
        if aof is not None and aof.always and aof.buf:
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
            self.server.stats.net_output_bytes += len(data)
            transport.write(data)
            if self.write_paused and not self.out_full:
                self._check_out_full()
        if self.closing:
            transport.close()

    def _check_out_full(self):
        """Replies written to a client that is not reading them (its transport is over its
        high-water mark): maxmemory-clients is checked, as Redis checks it before it sleeps.
        Over OUT_PAUSE_BYTES of unread replies: read no more until they drain. Not a
        normal-class client while that class has a limit: redis-server reads and runs its
        commands until its replies trip the limit (store/output_limit.py), and paused here,
        below a limit over OUT_PAUSE_BYTES, it would never reach it."""
        evictor = self.server.evictor
        if evictor.clients_limit:  # maxmemory-clients, as Redis checks it in beforeSleep
            evictor.evict_clients()  # (only for a client that is not reading: cold)
            if self.closing:
                return
        if self.out_limit is not None and not self.subscriptions and self.replica is None:
            return
        transport = self.transport
        if transport.get_write_buffer_size() > OUT_PAUSE_BYTES and not transport.is_closing():
            self.out_full = True
            self._pause_reading()

    def pause_writing(self):
        self.write_paused = True

    def resume_writing(self):
        self.write_paused = False
        if self.out_full:  # the client read its replies: go on with its input
            self.out_full = False
            if self.backlog is not None:
                self._schedule_turn()
            else:
                self._resume_reading()
        if self.pubsub is not None:
            self.pubsub.resume()  # move queued messages on (store/pubsub/dispatch.py)
        if self.replica is not None and self.replica.payload is not None:
            self.server.replication.pump(self.replica)  # its sync's payload, chunk by chunk

    def close_after_reply(self):
        """Stop reading; the transport closes once pending replies are written."""
        self.closing = self.gated = True
        if not self.out and self.transport is not None:
            self.transport.close()

    def is_replica(self):
        """Synced or syncing as a replica (store/replication.py); REPLCONF alone is not."""
        return self.replica is not None and self.replica.state != ''

    def send_stream(self, data):
        """Bytes of the replication stream (store/replication.py), written after the
        replies queued before them."""
        if self.transport is not None and not self.closing:
            self.out.append(data)
            self.flush()

    def reply(self, value):
        """Queue a reply outside the command path (pushes, protocol errors)."""
        encode(value, self.proto, self.out)

    def park(self, held=()):
        """Hold the commands that follow the current one until `resume`; `held` run
        first then (a PUBLISH waiting on backpressure runs again)."""
        if self.deferred is None:
            self.deferred = []
            for args in held:
                self.defer(args)
        self.update_gate()

    def defer(self, args):
        """Hold `args` behind the parked command. Like redis-server's query buffer behind a
        blocked client (it goes on reading, so a close is seen), what is held counts as the
        client's memory and closes the client past client-query-buffer-limit."""
        self.deferred.append(args)
        size = queued_size(args)
        self.deferred_bytes += size
        server = self.server
        server.evictor.clients_grew(size)
        if self.deferred_bytes > server.config['client-query-buffer-limit'] and not self.closing:
            server.log(f'Closing client that reached max query buffer length: {self.describe()}')
            self.close_after_reply()

    def release_deferred(self):
        """The held commands were run or dropped: their memory leaves used_memory."""
        if self.deferred_bytes:
            self.server.evictor.clients_grew(-self.deferred_bytes)
            self.deferred_bytes = 0

    def resume(self, reply=None):
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

    def key_modified(self, db, key):
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

    def watch_swapped(self, db, key, here, there, stale):
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

    def run(self, frames):
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

    def _internal_error(self, cmd, e):
        """The error reply for a handler's bug (logged); the caller counts it (_failed)."""
        self.server.log_exception(f'Error running {cmd.name}', e)
        return RedisError(f'ERR internal error while running {cmd.name}: {e!r}'[:500])

    def _failed(self, cmd, err):
        """A command's error reply (raised, a bug's, or returned by EVAL and FCALL): the
        command failed, and the error counts in errorstats unless a script's redis.call
        counted it already (CountedError)."""
        cmd.failed += 1
        if type(err) is not CountedError:
            self.server.stats.error(err.msg)

    def set_user(self, user):
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

    def update_gate(self):
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
            or self.tracking is not None  # its reads are remembered on the gated path
            or bool(self.server.monitors)  # MONITOR: commands are fed from the gated path
            or self.server.pause.kind is not None  # CLIENT PAUSE: held on the gated path
        )

    def _reject(self, cmd, message):
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

    def _emit(self, value):
        mode = self.reply_mode
        if mode == 'on':
            encode(value, self.proto, self.out)
        elif mode == 'skip':
            self.reply_mode = 'on'
            self.update_gate()
        elif mode == 'skip_next':  # CLIENT REPLY SKIP ran on this path: skip the next
            encode(value, self.proto, self.out)
            self.reply_mode = 'skip'

    def _execute_gated(self, cmd, args):
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
                return server.pause.hold(self, cmd, args)  # but CLIENT PAUSE ALL holds it
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
        if cmd.subcommands:  # Redis rejects bad subcommands here (and flags MULTI)
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
        if self.subscriptions > 0 and self.proto == 2 and not cmd.pubsub_ok:
            return self._reject(
                cmd,
                f"ERR Can't execute '{shown.name}': only (P|S)SUBSCRIBE / "
                "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in "
                "this context",
            )
        server = self.server
        if server.loading and 'loading' not in shown.flags:
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
            and link.state != 'connected'
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
        if server.monitors and self in server.monitors and touches_keyspace(cmd, shown):
            return self._reject(cmd, E_REPLICA)  # a monitor is a replica for Redis
        pause = server.pause
        if pause.kind is not None and pause.holds(self, cmd, args):
            return pause.hold(self, cmd, args)  # runs again, in order, when the pause ends
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

    def call(self, cmd, args):
        """Run a command through the executor and return its reply value (used by EXEC
        and the gated path)."""
        if self.no_touch and cmd.name != 'touch':  # CLIENT NO-TOUCH
            return self.ks.untouched(self._call, cmd, args)
        return self._call(cmd, args)

    def _call(self, cmd, args):
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

    # -- helpers for commands ----------------------------------------------------------

    def abort(self):
        """freeClient for a client the server drops (output-buffer limits, client
        eviction): discard what it has queued and close its socket at once."""
        self.out.clear()
        self.closing = self.gated = True
        self.obl_soft_since = None
        if self.transport is not None:
            self.transport.abort()

    def info_line(self):
        """This client's CLIENT LIST line (for the log)."""
        return client_info_line(self)

    def describe(self):
        return f'id={self.id} addr={self.addr} laddr={self.laddr} name={self.name or ""}'

    def end_multi(self):
        """Leave MULTI (EXEC, DISCARD, RESET, an aborted EXEC, a close): no queue, no
        WATCH, and the queue's memory leaves used_memory now."""
        self.multi = None
        self.multi_error = False
        if self.multi_bytes:
            self.server.evictor.clients_grew(-self.multi_bytes)
            self.multi_bytes = 0
        self.unwatch_all()
        self.update_gate()

    def unwatch_all(self):
        if self.watched:
            for dk in self.watched:
                self.ks.unobserve(dk, self)
            self.watched = []
        self.dirty_cas = False
