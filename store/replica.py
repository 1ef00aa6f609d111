"""This server as a replica (REPLICAOF <host> <port>): it copies a Redis master's data and
follows its writes, e.g. to move a live dataset from redis-server to this server.

The link (`MasterLink`, one asyncio task) does what a Redis 7.0 replica does: PING, AUTH
with masterauth / masteruser, REPLCONF listening-port and capa eof capa psync2, then PSYNC
with the master's replication id and offset when it has them (a reconnect continues:
+CONTINUE) or `? -1`. A full resynchronisation's payload is loaded by store/
replica_load.py: through a temporary file, or with repl-diskless-load (swapdb, or
on-empty-db on an empty dataset) parsed as it arrives, in a loading state (async loading,
the old data served, when swapdb syncs from the master of this server's own history).
Then the stream is applied by a connection of its own (`conn`, ACL's `loader` user,
replies dropped), which counts the offset and answers REPLCONF GETACK; REPLCONF ACK goes
back every second. A link that was up and is lost is tried again at once (Redis's
replicationHandleMasterDisconnection), as after a diskless load that failed; a connection
or handshake that fails, a second later (replicationCron).

The master client (`conn`) is listed among the server's clients while the link is up
(CLIENT LIST flags=M, addr the master's); CLIENT KILL of it closes the link, which
reconnects and continues in the database the stream had selected, unless the applied
stream ended inside MULTI ... EXEC (`in_multi`) or a command: then it syncs in full. The
replies to the master's commands are dropped, but an error among them is logged ('==
CRITICAL == ...', naming the command it answered) and panics the server under
propagation-error-behavior panic, as afterErrorReply does. ROLE's states are Redis's:
connect, connecting, handshake (until the PSYNC reply; newlines the master sends meanwhile
are skipped), sync, connected; `cron` drops a link silent for repl-timeout in any of them.
A writable replica's own keys with a TTL expire here (store/replica_expire.py).

While a replica the dataset is the master's: writes of other clients are refused
(-READONLY with replica-read-only), keys are not expired here (active expiry stops; a key
past its deadline reads as missing and stays until the master's DEL; the master's own
commands see every key, at a frozen clock), the event journal is not written (the
master's journal entries arrive as XADD), maxmemory does not evict (replica-ignore-
maxmemory), and this server's own replicas are dropped at each full sync, to sync again.
REPLICAOF NO ONE makes it a master again with the data it has.

FAILOVER's demotion of a master (store/replication.py) makes one with `failover`: its
first PSYNC continues the server's own history and asks the target to take over.

Its own replicas share the master's history (store/replication_history.py): they get the
master's stream as applied here (`Replication.proxied`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import hiredis

from . import clock
from . import replication_history as history
from .commands.client import shut_now
from .connection import Connection
from .persistence.aof_resp import _parse_command, resp_command
from .replica_load import LinkError, LoadFailed, PayloadLoad


def _unapplied(parser: Any) -> int:
    """The bytes of the stream the parser holds of a command not complete yet: what is
    buffered (`pending`), plus what it parsed already of that command (its header and
    complete arguments, which have left the buffer), so that the offset ends at the last
    complete command, where a partial resync continues."""
    if parser is None:
        return 0
    n: int = parser.pending()
    if parser.multibulklen or parser.args:
        n += len(b'*%d\r\n' % (len(parser.args) + parser.multibulklen))
        for a in parser.args:
            n += len(b'$%d\r\n' % len(a)) + len(a) + 2
        if parser.bulklen != -1:
            n += len(b'$%d\r\n' % parser.bulklen)
    return n


def _collect_errors(reply: Any, out: list[str]) -> None:
    """The error replies in a parsed reply (an EXEC's array holds its commands')."""
    if isinstance(reply, hiredis.ReplyError):
        out.append(str(reply))
    elif isinstance(reply, list):
        for item in reply:
            _collect_errors(item, out)


def _command(*args: Any) -> bytes:
    return resp_command([a if isinstance(a, bytes) else str(a).encode() for a in args])


class _LinkProtocol(asyncio.StreamReaderProtocol):
    """The master link's socket. Its end is seen when it arrives (the link is down from
    then on, as Redis's read handler frees the master client at once), not when the
    link's task next runs: a client whose INFO is read in the same loop turn as the
    master's FIN must not be told the link is up."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        super().__init__(reader)
        self.ended = False

    def eof_received(self) -> bool | None:
        self.ended = True
        return super().eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        super().connection_lost(exc)


class MasterLink(PayloadLoad):
    def __init__(
        self,
        server: Any,
        host: str,
        port: int,
        failover: bool = False,
        resume: bool = False,
        down_since: float = 0.0,
    ) -> None:
        self.server = server
        self.host = host
        self.port = port
        self.state = 'connect'  # connect, connecting, handshake, sync, connected
        self.replid = '?'  # the master's replication id, once synced
        self.offset = -1  # the stream's bytes applied (master_repl_offset here)
        # FAILOVER's demotion: the master to be was this server's replica and has its
        # history, so the first PSYNC names this server's own (replicationCacheMaster-
        # UsingMyself) and asks it to take over; its answer ends the failover
        self.failover = failover
        if failover or resume:  # `resume`: a master continuing its own history
            self.replid, self.offset = server.replication.replid, server.replication.offset
        self.conn: Connection | None = None  # runs the master's commands
        self.writer: asyncio.StreamWriter | None = None
        self.socket: _LinkProtocol | None = None  # sees the socket's end (an old one's is late)
        self.last_io = time.time()
        # repl_down_since: when the link to a master went down, 0 while it never was up
        # (INFO says -1, and a cluster replica that never synced does not fail over)
        self.down_since = down_since
        self.syncs = 0
        self.getack = False  # REPLCONF GETACK in the read being applied
        self.in_multi = False  # the stream applied so far ends inside MULTI ... EXEC
        self.tail = b''  # the bytes of a command the last read left incomplete
        self.newline_sent = 0  # the second of the last newline sent while loading
        self.reconnecting = False  # at once, after a load that failed
        self.task = server.loop.create_task(self._run())

    # -- the link --------------------------------------------------------------------------

    def stop(self) -> None:
        self.task.cancel()
        self._close()

    def cron(self, now: float) -> None:
        """replicationCron's timeouts (repl-timeout): connecting or in the handshake, the
        transfer of the payload, and a connected master sending nothing (not even its
        PING); the link is dropped and tried again."""
        timeout = self.server.config['repl-timeout']
        if now - self.last_io <= timeout or self.state == 'connect':
            return
        log = self.server.log
        if self.state in ('connecting', 'handshake'):
            log('Timeout connecting to the MASTER...', '#')
        elif self.state == 'sync':
            log(
                'Timeout receiving bulk data from MASTER... If the problem persists try to '
                "set the 'repl-timeout' parameter in redis.conf to a larger value.",
                '#',
            )
        else:
            log('MASTER timeout: no data nor PING received...', '#')
        self.task.cancel()
        self._close()
        self.task = self.server.loop.create_task(self._run())

    def _close(self) -> None:
        if self.conn is not None:  # the master client is listed while the link is up
            self.server.clients.pop(self.conn.id, None)
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        conn = self.conn
        if conn is not None and self.in_multi:
            # cut inside a transaction: what was applied of it is not an offset to
            # continue from (Redis keeps its offset at the MULTI); sync again. A command
            # cut in half was not counted: the link continues, with a new parser
            self.replid = '?'
        if self.state == 'connected':
            self.down_since = time.time()
        self.state = 'connect'

    async def _run(self) -> None:
        log = self.server.log
        while True:
            try:
                await self._session()
            except asyncio.CancelledError:
                raise
            except LoadFailed:  # logged: reconnect at once, as cancelReplicationHandshake(1)
                self._close()
                log(f'Reconnecting to MASTER {self.host}:{self.port} after failure')
                self.reconnecting = True
                continue
            except (OSError, EOFError, LinkError, ValueError, asyncio.IncompleteReadError) as e:
                if self.failover:  # the target did not take over: a master again
                    self.failover = False
                    self.server.replication.abort_failover(
                        f'Failover target rejected psync request ({e or type(e).__name__})'
                    )
                    return
                if self.state == 'connected':
                    # as freeClient and replicationHandleMasterDisconnection: a link that
                    # was up is tried again at once (a second's wait may cost the backlog)
                    self.server.log_verbose(f'Client closed connection: {e or type(e).__name__}')
                    log('Connection with master lost.', '#')
                    log('Caching the disconnected master state.')
                    self._close()
                    log(f'Reconnecting to MASTER {self.host}:{self.port}')
                    self.reconnecting = True
                    continue
                log(f'Error condition on socket for SYNC: {e or type(e).__name__}', '#')
            self._close()
            await asyncio.sleep(1)

    async def _session(self) -> None:
        log = self.server.log
        self.state = 'connecting'
        self.last_io = time.time()
        if not self.reconnecting:
            log(f'Connecting to MASTER {self.host}:{self.port}')
        self.reconnecting = False
        source = self.server.config['bind-source-addr']  # the link's own address, if set
        local = (source, 0) if source else None
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(loop=loop)
        tls = self.server.tls.client_ctx if self.server.config['tls-replication'] else None
        transport, protocol = await loop.create_connection(
            lambda: _LinkProtocol(reader),
            self.host,
            self.port,
            local_addr=local,
            ssl=tls,  # tls-replication: the master's tls-port, as its client (store/tls.py)
            server_hostname='' if tls else None,
        )
        self.socket = protocol
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        self.writer = writer
        self.state = 'handshake'  # ROLE's state until the PSYNC reply (Redis's RECEIVE_*)
        self.last_io = time.time()
        log('MASTER <-> REPLICA sync started')

        async def ask(*args: Any) -> bytes:
            writer.write(_command(*args))
            while True:
                line = await reader.readline()
                if not line:
                    raise EOFError('the master closed the connection')
                self.last_io = time.time()
                if line not in (b'\n', b'\r\n'):  # newlines: the master keeps us waiting
                    return line.rstrip(b'\r\n')

        reply = await ask('PING')
        if reply[:1] == b'-' and not reply[1:].startswith((b'NOAUTH', b'NOPERM', b'ERR operation')):
            raise LinkError(f'Error reply to PING from master: {reply.decode(errors="replace")}')
        cfg = self.server.config
        if cfg['masterauth']:
            user = [cfg['masteruser']] if cfg['masteruser'] else []
            reply = await ask('AUTH', *user, cfg['masterauth'])
            if reply[:1] == b'-':
                raise LinkError(f'Unable to AUTH to MASTER: {reply.decode(errors="replace")}')
        # the port the master shows and FAILOVER looks for: the TLS one under tls-replication
        tls_port = cfg['tls-port'] if cfg['tls-replication'] else 0
        await ask('REPLCONF', 'listening-port', tls_port or self.server.port)  # errors ignored
        await ask('REPLCONF', 'capa', 'eof', 'capa', 'psync2')
        log(f'Trying a partial resynchronization (request {self.replid}:{self.offset + 1}).')
        failover = ['FAILOVER'] if self.failover else []
        reply = await ask(
            'PSYNC', self.replid, self.offset + 1 if self.replid != '?' else -1, *failover
        )
        if self.failover and reply.startswith((b'+FULLRESYNC', b'+CONTINUE')):
            self.failover = False  # the target is the master now
            self.server.replication.end_failover()
        if reply.startswith(b'+FULLRESYNC'):
            _, replid, offset = reply.split()
            log(f'Full resync from master: {replid.decode()}:{offset.decode()}')
            self.state = 'sync'
            rest = await self._load(reader, replid.decode())
            full = True
            self.replid, self.offset = replid.decode(), int(offset)
            history.follow(self.server.replication, self.replid, self.offset)
            aux = self.server.persistence.last_aux
            self._new_conn(int(aux.get(b'repl-stream-db', b'0') or 0))
        elif reply.startswith(b'+CONTINUE'):
            rest, full = b'', False
            parts = reply.split()
            repl = self.server.replication
            if len(parts) > 1 and parts[1].decode() != self.replid:
                # the master's id changed (it was promoted): this server's history too
                self.replid = parts[1].decode()
                history.shift(repl, self.replid)
            elif repl.replid != self.replid:  # a master continuing its own history
                history.shift(repl, self.replid)
            conn = self.conn
            if conn is None or conn.closing or _unapplied(conn.parser):
                # continuing this server's own history (FAILOVER), after the master client
                # was killed, or cut inside a command (its bytes come again): a new one,
                # in the database the stream had selected
                db = self.conn.db if self.conn is not None else self.server.replication.resume_db
                self._new_conn(db)
            else:
                self._register(conn)
            log('Successful partial resynchronization with master.')
        else:
            text = reply.decode(errors='replace')
            raise LinkError(f'Unexpected reply to PSYNC from master: {text}')
        self.state = 'connected'
        self.last_io = time.time()
        if full:
            log('MASTER <-> REPLICA sync: Finished with success')
        else:
            log('MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.')
        self.server.notify_systemd(
            'STATUS=MASTER <-> REPLICA sync: Finished with success. Ready to accept '
            'connections in read-write mode.\n'
            if full
            else 'STATUS=MASTER <-> REPLICA sync: Partial Resynchronization accepted. '
            'Ready to accept connections in read-write mode.\n'
        )
        if full:  # the first ACK at once: a master holds the stream after a streamed payload
            self._ack()
        if rest:  # the stream's first bytes, read with a streamed payload's end
            self._apply(rest)
        acks = asyncio.ensure_future(self._ack_every_second())
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    raise EOFError('the master closed the connection')
                self.last_io = time.time()
                self._apply(data)
        finally:
            acks.cancel()

    def _new_conn(self, db: int = 0) -> None:
        old = self.conn
        if old is not None:
            self.server.clients.pop(old.id, None)
        conn = self.conn = Connection(self.server)
        self.in_multi = False
        self.tail = b''
        conn.set_user(self.server.acl.loader)  # the master's commands are not checked
        conn.authenticated = True
        conn.db = db
        conn.update_gate()
        self._register(conn)

    def _register(self, conn: Connection) -> None:
        """The master client is one of the server's clients, as in Redis: CLIENT LIST
        shows it (flags=M, addr the master's), CLIENT KILL drops the link (the server's
        disconnect hook calls `dropped`), and the link then reconnects and continues."""
        server = self.server
        if conn.id and conn.id in server.clients:
            return
        writer = self.writer
        sock = writer.get_extra_info('socket') if writer is not None else None
        if sock is not None:
            peer, mine = sock.getpeername(), sock.getsockname()
            conn.addr, conn.laddr = f'{peer[0]}:{peer[1]}', f'{mine[0]}:{mine[1]}'
        conn.id = server.next_client_id
        server.next_client_id += 1
        server.clients[conn.id] = conn

    def dropped(self, conn: Any) -> None:
        """The master client was killed (CLIENT KILL): the link is closed, and reconnects."""
        if conn is self.conn and self.writer is not None:
            shut_now(self.writer.transport)
            self.writer.close()

    def _apply(self, data: bytes) -> None:
        """Run the master's commands; the offset counts the ones complete."""
        conn = self.conn
        assert conn is not None
        if conn.closing:
            # killed (CLIENT KILL): what was still read is not applied, nor counted; the
            # link continues from the offset applied so far
            return
        held = _unapplied(conn.parser)
        read = self.tail + data if held else data  # this read's commands, whole
        self.getack = False
        clock.freeze(1)  # the master's commands see keys its DEL has not removed yet
        try:
            conn.data_received(data)
        finally:
            clock.freeze(0)
        # read here, not when the link closes: CLIENT KILL of the master client ends its
        # transaction (unregister) before the link learns of it
        self.in_multi = conn.multi is not None
        if conn.out:
            self._errors(conn, read)
        conn.out.clear()  # replies are the master's to ignore
        pending = _unapplied(conn.parser)
        self.tail = read[len(read) - pending :] if pending else b''
        self.offset += held + len(data) - pending
        # this server's replicas get the master's stream as it was applied here
        self.server.replication.proxied(read[: len(read) - pending] if pending else read)
        if self.getack:
            self._ack()

    def _errors(self, conn: Connection, read: bytes) -> None:
        """afterErrorReply for the master client: an error this replica would send its
        master (the master's command failed here, so the data may have diverged) is
        logged, and with propagation-error-behavior panic (or panic-on-replicas) on a
        read-only replica the server panics, as Redis does."""
        out = b''.join(conn.out)
        if b'-' not in out:  # no error can be in there: most reads
            return
        reader = hiredis.Reader()  # the replies parsed: a value may start with '-' too
        reader.feed(out)
        # the command each error answers (c->lastcmd): replies come one per command, but
        # for REPLCONF ACK / GETACK, which answer nothing; inside EXEC it is EXEC
        names = []
        pos = 0
        while pos < len(read):
            parsed = _parse_command(read, pos)
            if not parsed:
                break
            args, pos = parsed
            name = args[0].decode('utf-8', 'replace').lower()
            if name != 'replconf' or len(args) < 2 or args[1].lower() not in (b'ack', b'getack'):
                names.append(name)
        errors: list[tuple[str, str]] = []
        reply = reader.gets()
        n = 0
        while reply is not False:
            found: list[str] = []
            _collect_errors(reply, found)
            name = names[n] if n < len(names) else '<unknown>'
            errors += [(err, name) for err in found]
            n += 1
            reply = reader.gets()
        for err, name in errors:
            err = err[:4096]
            if err.startswith('ERR unknown command'):
                name = '<unknown>'
            server = self.server
            server.log(
                f"== CRITICAL == This replica is sending an error to its master: '{err}' "
                f"after processing the command '{name}'",
                '#',
            )
            cfg = server.config
            behavior = cfg['propagation-error-behavior']
            if behavior in ('panic', 'panic-on-replicas') and cfg['replica-read-only']:
                from .crash import panic

                panic(
                    server,
                    'This replica panicked sending an error to its master after processing '
                    f"the command '{name}'",
                    'networking.c:555',
                )

    def _ack(self) -> None:
        if self.writer is not None and self.state == 'connected':
            self.writer.write(_command('REPLCONF', 'ACK', self.applied_offset()))

    def applied_offset(self) -> int:
        """The stream's bytes applied (Redis's c->reploff): those read (`offset`) less
        the master's commands CLIENT PAUSE holds, which run when it ends (resume_held)."""
        conn = self.conn
        if conn is None or not conn.deferred:
            return self.offset
        return self.offset - sum(len(resp_command(args)) for args in conn.deferred)

    def resume_held(self) -> None:
        """The pause that held the master's commands ended (store/commands/client_pause.py's
        ClientPause): run them now, as Redis runs its postponed master client again."""
        conn = self.conn
        if conn is None or conn.deferred is None or conn.closing:
            return
        deferred, conn.deferred = conn.deferred, None
        conn.release_deferred()
        conn.update_gate()
        clock.freeze(1)  # as _apply runs them
        try:
            conn.run(deferred)
        finally:
            clock.freeze(0)
        conn.out.clear()  # replies are the master's to ignore
        self.in_multi = conn.multi is not None

    async def _ack_every_second(self) -> None:
        while True:
            await asyncio.sleep(1)
            self._ack()

    # -- what others ask -------------------------------------------------------------------

    def is_master(self, conn: Any) -> bool:
        return conn is self.conn and conn is not None

    def up(self) -> bool:
        """master_link_status: synced and following, the socket not ended."""
        return self.state == 'connected' and not (self.socket and self.socket.ended)

    def info(self) -> list[tuple[str, Any]]:
        now = time.time()
        up = self.up()
        fields: list[tuple[str, Any]] = [
            ('role', 'slave'),
            ('master_host', self.host),
            ('master_port', self.port),
            ('master_link_status', 'up' if up else 'down'),
            ('master_last_io_seconds_ago', int(now - self.last_io) if up else -1),
            ('master_sync_in_progress', int(self.state == 'sync')),
            ('slave_read_repl_offset', self.offset),
            ('slave_repl_offset', self.applied_offset()),
        ]
        if not up:
            down = int(now - self.down_since) if self.down_since else -1
            fields.append(('master_link_down_since_seconds', down))
        fields += [
            ('slave_priority', self.server.config['replica-priority']),
            ('slave_read_only', int(self.server.config['replica-read-only'])),
            ('replica_announced', int(self.server.config['replica-announced'])),
        ]
        return fields

    def role(self) -> list[Any]:
        state = 'connect' if self.state == 'connected' and not self.up() else self.state
        return [b'slave', self.host.encode(), self.port, state.encode(), self.offset]
