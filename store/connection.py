"""One client connection: parse requests, run commands in order, write replies.

Parsing has two paths. The fast path hands a read to hiredis when it starts a multibulk
frame and ends with CRLF; it accepts hiredis's frames only when resp.parse_bulk_arrays
proves the read held whole, well-formed frames of bulk strings. Anything else (inline
commands, frames split across reads, non-bulk elements, oversized arguments,
unauthenticated clients) goes to the exact parser in resp.py, which reproduces Redis's
errors, limits and close points; the connection returns to the fast path once the exact
parser's buffer is empty.

Commands from one read run in order and their replies leave in one write. The common case
(authenticated, not in MULTI or subscribe mode, replies on) runs inline in `run`; every
special state sets `self.gated`, which routes commands through `_execute_gated`
where the auth, MULTI, subscribe-mode and CLIENT REPLY rules live. A key signalled for
blocked clients gates the running connection too, so they are served before its next
command (store/blocking.py).

A connection is parked (`park`) while its current command waits: a blocking read
(store/blocking.py) or a PUBLISH held by publisher backpressure (store/pubsub). Later
commands then queue in `deferred` and run, in order, once `resume` delivers the reply.

Every piece of session state is declared in `__slots__` below, with the module that owns
it; other modules read and write these fields but add none.
"""

import asyncio
import time

import hiredis

from .command_table import call
from .commands.client import client_info_line
from .latency import observe
from .resp import (
    BULK_HEADER,
    CRLF,
    OK,
    QUEUED,
    ProtocolError,
    RedisError,
    RequestParser,
    encode,
    error_arg,
    parse_bulk_arrays,
    unknown_command_error,
)

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
        'gated',
        'reply_mode',
        'no_evict',
        'no_touch',
        # MULTI/EXEC and WATCH (commands/transactions.py)
        'multi',
        'multi_error',
        'dirty_cas',
        'watched',
        'watched_deadlines',
        'in_exec',
        # pub/sub (store/pubsub): subscription count and the Subscriber with its queue
        'subscriptions',
        'pubsub',
        # parked: commands held while the current one waits, and the blocking wait
        'deferred',
        'blocked',
        # client-output-buffer-limit (store/output_limit.py): the limits while the normal
        # class has one (else None), and when this client first went over its soft limit
        'out_limit',
        'obl_soft_since',
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
        self.authenticated = not server.config['requirepass']
        self.closing = False
        # MULTI/EXEC and WATCH
        self.multi = None  # list of queued (cmd, args) while in MULTI
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
        self.deferred = None  # commands held while parked
        self.blocked = None  # the blocking.Waiter while a blocking command waits
        self.write_paused = False  # transport above its high-water mark
        self.out_limit = server.pubsub.limits.gate()
        self.obl_soft_since = None
        self.gated = not self.authenticated or server.loading

    # -- asyncio.Protocol --------------------------------------------------------------

    def connection_made(self, transport):
        if self.id:  # accepted while a script was busy (scripting/busy.py): now the loop's
            self.transport = transport
            return
        self.transport = transport
        server = self.server
        peer = transport.get_extra_info('peername')
        sock = transport.get_extra_info('sockname')
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
            and not cfg['requirepass']
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

    def connection_lost(self, exc):
        self.closing = True
        self.server.unregister(self)

    def data_received(self, data):
        if self.closing:
            return
        server = self.server
        server.current_client = self
        self.last_interaction = server.clock
        server.stats.net_input_bytes += len(data)
        if self.pubsub is not None and self.pubsub.queue:
            self.pubsub.drain_before_commands()  # queued messages first, up to the quota
        if (
            self.parser is None
            and self.authenticated
            and data[:1] == b'*'
            and data[-2:] == b'\r\n'
            and len(data) <= self.server.max_bulk
        ):
            frames = parse_bulk_arrays(self.reader, data)
            if frames is not None:
                self.run(frames)
                self.flush()
                return
            self.reader = hiredis.Reader()
        self._parse_exact(data)

    def _parse_exact(self, data):
        parser = self.parser
        if parser is None:
            parser = self.parser = RequestParser()
        limit = self.server.config['client-query-buffer-limit']
        # redis-server's limits apply per read(2) of at most 16 KB: replay those reads
        for chunk in parser.reads(data):
            parser.feed(chunk)
            if parser.pending() > limit:
                # checked before parsing; replies of earlier reads still go out
                self.server.log(
                    f'Closing client that reached max query buffer length: {self.describe()}'
                )
                self.close_after_reply()
                break
            while True:
                error = None
                try:
                    frames = parser.parse(self.server.max_bulk, self.authenticated)
                except ProtocolError as e:
                    frames, error = parser.ready, e
                self.run(frames)
                if error is None or self.closing:
                    break
                if frames:  # they may have changed the limits (AUTH, CONFIG SET)
                    continue
                self.server.log_verbose(f'Protocol error ({error}) from client: {self.describe()}')
                self.out.append(b'-ERR Protocol error: %s\r\n' % str(error).encode('latin-1'))
                self.close_after_reply()
                break
            if self.closing:
                break
        if not parser.buf and not parser.multibulklen:  # not mid-request (args may be [])
            self.parser = None
        self.flush()

    # -- output ------------------------------------------------------------------------

    def flush(self):
        aof = self.ks.aof  # appendfsync always: written and fsynced before replies leave
        if aof is not None and aof.always and aof.buf:
            aof.write()
        out = self.out
        if out and self.transport is not None:
            if self.out_limit is not None and self.out_limit.check(self):
                return  # over client-output-buffer-limit: dropped, nothing written
            data = out[0] if len(out) == 1 else b''.join(out)
            out.clear()
            self.server.stats.net_output_bytes += len(data)
            self.transport.write(data)
            if self.closing:
                self.transport.close()

    def pause_writing(self):
        self.write_paused = True

    def resume_writing(self):
        self.write_paused = False
        if self.pubsub is not None:
            self.pubsub.resume()  # move queued messages on (store/pubsub/dispatch.py)

    def close_after_reply(self):
        """Stop reading; the transport closes once pending replies are written."""
        self.closing = self.gated = True
        if not self.out and self.transport is not None:
            self.transport.close()

    def reply(self, value):
        """Queue a reply outside the command path (pushes, protocol errors)."""
        encode(value, self.proto, self.out)

    def park(self, held=()):
        """Hold the commands that follow the current one until `resume`; `held` run
        first then (a PUBLISH waiting on backpressure runs again)."""
        if self.deferred is None:
            self.deferred = list(held)
        self.update_gate()

    def resume(self, reply=None):
        """Deliver the parked command's reply (None: it has none, as a held PUBLISH), then
        run the commands held behind it."""
        deferred, self.deferred = self.deferred, None
        self.update_gate()
        if self.closing or self.transport is None:
            return
        if reply is not None:
            self.last_interaction = self.server.clock  # a reply written is activity
            self._emit(reply)
        if deferred:
            server = self.server
            previous, server.current_client = server.current_client, self
            self.run(deferred)
            server.current_client = previous
        self.flush()

    def key_modified(self, db, key):
        """A WATCHed key changed (Keyspace observer): EXEC will fail."""
        self.dirty_cas = True

    # -- dispatch ----------------------------------------------------------------------

    def run(self, frames):
        """Run parsed commands in order, queueing their replies. The hot path: a command
        of a known name with the right arity on an ungated connection runs inline."""
        table = self.table
        out = self.out
        ks = self.ks
        config = self.server.config
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
                r = cmd.handler(self, args)
            except RedisError as e:
                r = e
                cmd.failed += 1
            except Exception as e:  # a bug must not take the server down
                r = self._internal_error(cmd, e)
            t1 = _perf_ns()
            took = t1 - t0
            cmd.calls += 1
            cmd.ns += took
            cmd.hist[took.bit_length()] += 1  # LATENCY HISTOGRAM (store/latency.py)
            t0 = t1
            if took >= config.slow_ns:  # SLOWLOG, LATENCY events (past any took when off)
                observe(self, cmd, args, took)
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
                    encode(r, self.proto, out)

    def _internal_error(self, cmd, e):
        self.server.log_exception(f'Error running {cmd.name}', e)
        cmd.failed += 1
        return RedisError(f'ERR internal error while running {cmd.name}: {e!r}'[:500])

    def update_gate(self):
        self.gated = (
            self.closing
            or not self.authenticated
            or self.multi is not None
            or (self.subscriptions > 0 and self.proto == 2)
            or self.reply_mode != 'on'
            or self.deferred is not None
            or self.server.busy.run is not None
            or self.server.loading
            or self.server.write_denied is not None
            or self.no_touch
        )

    def _reject(self, cmd, message):
        if cmd is not None:
            cmd.rejected += 1
            if cmd.name == 'exec':  # rejectCommand -> execCommandAbort: discard, EXECABORT
                self.multi = None
                self.multi_error = False
                self.unwatch_all()
                self.update_gate()
                message = 'EXECABORT Transaction discarded because of: ' + (
                    message[4:] if message.startswith('ERR ') else message
                )
        if self.multi is not None:
            self.multi_error = True
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
        if self.deferred is not None:  # a PUBLISH waits for publish-buffer-limit
            self.deferred.append(args)
            return
        name = args[0]
        if cmd is None:
            cmd = self.table.get(name.lower())
        if name.lower() == b'quit':  # Redis 7.0 handles QUIT before anything else
            self._emit(OK)
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
        if server.write_denied is not None and ('write' in shown.flags or cmd.name == 'ping'):
            return self._reject(cmd, server.write_denied)
        busy = self.server.busy
        if busy.run is not None and not busy.allows(shown):
            return self._reject(cmd, busy.message())
        ks = self.ks
        if ks.used > ks.check_at and server.evictor.gate(self, cmd, args):
            return
        if self.multi is not None and not cmd.multi_ok:
            self.multi.append((cmd, args))
            return self._emit(QUEUED)
        self._emit(self.call(cmd, args))

    def call(self, cmd, args):
        """Run a command through the executor and return its reply value (used by EXEC
        and the gated path)."""
        if self.no_touch and cmd.name != 'touch':  # CLIENT NO-TOUCH
            return self.ks.untouched(self._call, cmd, args)
        return self._call(cmd, args)

    def _call(self, cmd, args):
        try:
            r = call(cmd, self, args)
        except RedisError as e:
            r = e
        except Exception as e:
            r = self._internal_error(cmd, e)
        self.last_cmd = cmd
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

    def unwatch_all(self):
        if self.watched:
            for dk in self.watched:
                self.ks.unobserve(dk, self)
            self.watched = []
        self.dirty_cas = False
