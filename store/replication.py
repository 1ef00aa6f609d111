"""The master side of Redis replication: replicas (redis-server with `replicaof`, and
`redis-cli --rdb` / `--replica`) sync from this server and follow its writes.

Replicas receive what the append-only file receives. The AOF's propagation (store/
persistence/aof.py) already turns every write into the commands that replay it: relative
TTLs made absolute, keys deleted at their deadline as DEL, MULTI/EXEC and scripts as
MULTI ... EXEC units, SELECT before a command of another database. Redis feeds one such
stream to both the AOF and its replicas (propagateNow); so does this server: while
replication is active the AOF's propagation runs whether or not the AOF itself is on,
and each batch the AOF writes is also `feed`-ed here. What only replicas get (PING every
`repl-ping-replica-period` seconds, REPLCONF GETACK for WAIT) enters the stream here,
after the AOF's queue was written, so the order of the two stays the order of events.

SYNC / PSYNC. A full resynchronisation answers +FULLRESYNC <replid> <offset>, then the
dataset as one RDB payload (`$<len>\r\n` and the file's bytes, as Redis's disk-based
sync sends it), then the stream from that offset on. The payload is the point-in-time
snapshot BGSAVE makes (store/persistence/snapshot.py), written between commands into a
temporary file: clients are served meanwhile, and the stream since the snapshot's start
waits with each syncing replica (`pending`, within its output-buffer class) until its
payload is sent, a chunk at a time as its socket takes it (`pump`), so that a payload is
never all in memory. Replicas that ask while it is made share it, with a copy of what the
first one has pending, as Redis shares a BGSAVE. While another snapshot runs (BGSAVE, an
AOF rewrite), that one is completed and the payload made at once, as SAVE makes it. The
AOF's queue is written before the snapshot starts, so what it held is in the payload and
not in the stream. PSYNC with this server's replication id and an offset still held by
the backlog (`repl-backlog-size` bytes, kept while replicas come and go, freed
`repl-backlog-ttl` seconds after the last one left) continues with +CONTINUE and the
bytes the replica missed. `REPLCONF rdb-only 1` (redis-cli --rdb) gets the payload and is
then disconnected.

Offsets are bytes of the stream: `offset` is master_repl_offset, a replica's position is
the offset it acknowledged last (REPLCONF ACK, about once a second). WAIT counts the
replicas whose acknowledged offset reached the server's offset when WAIT ran.

A replica that stops reading is dropped at client-output-buffer-limit's replica class
(256mb, or 64mb for 60 s, by default), counted on the stream it was not sent, not on its
RDB payload.

With min-replicas-to-write and min-replicas-max-lag set, writes are refused (-NOREPLICAS)
while fewer replicas acknowledged within the lag (`refresh_good`).

PUBLISH and SPUBLISH reach the replicas too (not the AOF file), so that their subscribers
get the messages, as Redis propagates them.

This server as a replica of another (REPLICAOF <host> <port>) is store/replica.py's;
`replicate` and `promote` switch.

FAILOVER (failoverCommand): writes are paused (a CLIENT PAUSE WRITE of its own) until
the target replica, or any replica, acknowledged the whole stream; then this server becomes
the target's replica with `PSYNC <its replid> <its offset + 1> FAILOVER`, which makes the
target a master (here: `sync`, which promotes this server when it is the target). Its
answer ends the failover and the paused writes run (as a replica's: -READONLY); an error,
a lost connection or the timeout (without FORCE) abort it, and this server is a master
again. This server as the target promotes itself and answers with a full resynchronisation
where Redis continues partially (its replicas do not share their master's history).

With repl-diskless-sync yes, a full sync waits repl-diskless-sync-delay seconds (or
repl-diskless-sync-max-replicas) before its payload starts and +FULLRESYNC is sent, and
replicas waiting get a newline every second (store/replication_presync.py). When every
replica it is for announced `capa eof` (startBgsaveForReplication's socket target: "target:
replicas sockets") the payload goes as `$EOF:<40 random hex chars>\r\n`, the RDB, and the
same 40 chars, instead of `$<len>\r\n` and the RDB; a replica asking meanwhile waits for
the next payload, as with Redis. The snapshot still goes through a temporary file (the
snapshot is made between commands, not by a child writing to the sockets).

A replica's history is its master's (store/replication_history.py): its replicas get the
master's stream as applied here, a promotion keeps the old id as replid2, and RDB files
carry the id and offset so that a restart continues them.
"""

from __future__ import annotations

import asyncio
import io
import os
import time
from typing import Any

from . import replication_history as history
from .clock import now_ms
from .persistence.files import remove
from .persistence.snapshot import Snapshot
from .replica import MasterLink
from .replica_expire import ReplicaKeysWithExpire
from .replication_presync import diskless_delay, presync_cron
from .resp import RedisError, string2ll

E_NOREPLICAS = 'NOREPLICAS Not enough good replicas to write.'
E_READONLY = "READONLY You can't write against a read only replica."
E_UNBLOCKED_ROLE = (
    'UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)'
)
PAYLOAD_CHUNK = 1 << 20  # bytes of a payload read and written at a time
_PING = b'*1\r\n$4\r\nPING\r\n'
_GETACK = b'*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n'


class Replica:
    """A connection's replication state (Connection.replica): what REPLCONF told; while
    its payload is made (`state` wait_bgsave) the stream it will get after it; once
    online, its acknowledgements."""

    __slots__ = (
        'conn',
        'port',
        'ip',
        'capa',
        'rdb_only',
        'rdb_filter',
        'state',
        'pending',
        'payload',
        'payload_left',
        'psync',
        'ack',
        'ack_time',
        'rdb_queued',
        'streamed',
        'since',
        'eof_mark',
        'hold',
    )

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.port = 0  # REPLCONF listening-port
        self.ip = ''  # REPLCONF ip-address, else the connection's address
        self.capa: set[str] = set()  # REPLCONF capa: eof, psync2
        self.rdb_only = False  # REPLCONF rdb-only 1: the RDB, then the connection closes
        # REPLCONF rdb-filter-only (redis-cli --functions-rdb): None for the whole RDB,
        # else what the RDB holds besides its header: {'functions'} or nothing
        self.rdb_filter: set[str] | None = None
        # '', then 'wait_bgsave' and 'send_bulk' (in Replication.syncing), then 'online'
        # (in Replication.replicas)
        self.state = ''
        self.pending: list[bytes] = []  # the stream since its payload's snapshot
        self.payload: Any = None  # while sent (send_bulk): the payload file, and what is left
        self.payload_left = 0
        self.psync = False  # SYNC (redis-cli --replica) never acknowledges
        self.ack = 0  # the offset it acknowledged last
        self.ack_time = time.time()
        # the stream bytes it was given (pending ones while it waits for its payload),
        # and what its transport held when it went online (the payload, first out): the
        # output-buffer limit counts the stream's part of what it holds
        self.rdb_queued = self.streamed = 0
        self.since = 0.0  # when it asked for a full sync (repl-diskless-sync-delay)
        # diskless sync: the payload as `$EOF:<mark>\r\n` + RDB + mark (b'': `$<len>`)
        self.eof_mark = b''
        # after a streamed payload, the stream waits in `pending` for its first REPLCONF
        # ACK (repl_start_cmd_stream_on_ack): no byte follows the mark until it loaded
        self.hold = False

    def send(self, data: bytes) -> None:
        """Stream bytes, within the replica class's output-buffer limit."""
        conn = self.conn
        if self.hold:
            self.pending.append(data)
            self.streamed += len(data)
            conn.server.pubsub.limits.check_replica(conn, self.streamed)
            return
        conn.send_stream(data)
        transport = conn.transport
        if transport is None or conn.closing:
            return
        self.streamed += len(data)
        queued = transport.get_write_buffer_size()
        drained = self.rdb_queued + self.streamed - queued
        unsent_rdb = max(self.rdb_queued - drained, 0)
        conn.server.pubsub.limits.check_replica(conn, queued - unsent_rdb)

    def address(self) -> str:
        return self.ip or self.conn.addr.rsplit(':', 1)[0]

    def name(self) -> str:
        """ip:port as Redis's replicationGetSlaveName gives it."""
        return f'{self.address()}:{self.port}' if self.port else self.conn.addr


class Replication:
    def __init__(self, server: Any) -> None:
        self.server = server
        self.replid = os.urandom(20).hex()
        self.offset = 0  # master_repl_offset: bytes of the stream so far
        self.replicas: list[Replica] = []  # online
        self.syncing: list[Replica] = []  # waiting for the payload being made
        self.sync_offset = 0  # the offset of that payload
        # that payload streamed to the replicas' sockets (`$EOF:` form, diskless sync)
        self.sync_socket = False
        # The backlog: the stream's last repl-backlog-size bytes, from offset
        # `backlog_start` on (None until a replica first syncs).
        self.backlog: bytearray | None = None
        self.backlog_start = 0
        self.active = False  # the stream is fed (replicas, or a backlog kept for them)
        # replication_history.py: the previous id, valid up to second_offset; `proxy`:
        # a replica whose replicas get its master's stream as applied here
        self.replid2 = history.NO_ID
        self.second_offset = -1
        self.proxy = False
        self.resume_db = 0  # the stream's database when a restart continues a history
        self.no_replicas_since = 0.0  # when the last replica left (the backlog's TTL)
        # replication_cron_loops: Redis's replicationCron runs once a second and PINGs the
        # replicas when its count is a multiple of repl-ping-replica-period, so a replica
        # attached just now waits for the next multiple (the suite sets 3600 to get none)
        self.started = time.time()
        self.cron_loop = 0
        self.last_newline = 0.0  # pre-sync newlines, once a second (replication_presync.py)
        self.waiting: list[tuple[Any, int, int]] = []  # WAIT: (waiter, offset, replicas)
        self.getack_scheduled = False
        self.reset_stats()
        self.good = 0  # replicas that acknowledged within min-replicas-max-lag
        self.expiry_was = True  # active expiry's state before this server became a replica
        # FAILOVER: no-failover, waiting-for-sync (writes paused until the target replica
        # acknowledged the whole stream), failover-in-progress (a replica of the target,
        # asking it with PSYNC ... FAILOVER to become the master)
        self.failover_state = 'no-failover'
        self.failover_target: tuple[str, int] | None = None  # host, port; None: any replica
        self.failover_end = 0  # ms since the epoch; 0: no timeout
        self.failover_force = False
        server.disconnect_hooks.append(self.detach)
        server.cron_hooks.append(self.cron)
        self.own_keys = ReplicaKeysWithExpire(server)  # a writable replica's own TTLs
        server.cron_hooks.append(self.own_keys.cron)

    # -- the stream ------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Stream bytes: into the backlog and to every replica."""
        self.offset += len(data)
        backlog = self.backlog
        if backlog is not None:
            backlog += data
            over = len(backlog) - self.server.config['repl-backlog-size']
            if over > 0:
                del backlog[:over]  # cheap: bytearray moves its start
                self.backlog_start += over
        for r in list(self.replicas):
            r.send(data)
        for r in self.syncing:
            if r.conn.closing:
                continue
            r.pending.append(data)
            r.streamed += len(data)  # waiting with its payload: within the class limit too
            self.server.pubsub.limits.check_replica(r.conn, r.streamed)

    def proxied(self, data: bytes) -> None:
        """The bytes of the master's commands a replica applied (replication_history.py)."""
        if self.proxy and self.backlog is not None and data:
            self.feed(data)

    def _control(self, data: bytes) -> None:
        """A command for the replicas only (PING, GETACK), after what the AOF queued."""
        self.server.persistence.aof.write_replicas()
        self.feed(data)

    # -- SYNC / PSYNC ------------------------------------------------------------------------

    def of(self, conn: Any) -> Replica:
        """The connection's replication state, made at its first REPLCONF or SYNC."""
        r = conn.replica
        if r is None:
            r = conn.replica = Replica(conn)
        return r

    def sync(self, conn: Any, args: list[bytes]) -> None:
        """syncCommand: make `conn` a replica, continuing from the backlog when PSYNC
        names this server's history and an offset it still holds, else from a full copy.
        Everything is queued on the connection; the command itself has no reply."""
        if conn.is_replica():
            return  # already a replica: ignored, as Redis ignores it
        psync = args[0].lower() == b'psync'
        offset = 0
        if psync:
            got = string2ll(args[2])
            if got is None:
                self.server.log(
                    f'Replica {conn.addr} asks for synchronization but with a wrong offset', '#'
                )
                raise RedisError('ERR value is not an integer or out of range')
            offset = got
        link = self.server.replica_link
        if psync and len(args) > 3 and args[3].lower() == b'failover':
            # the master failing over to this replica: a master from now on, if it names
            # the history this server follows
            if args[1].decode('latin-1').lower() != (self.replid if link is None else link.replid):
                raise RedisError('ERR PSYNC FAILOVER replid must match my replid.')
            if link is not None:
                self.promote(f" (failover request from '{conn.describe()}')")
                link = None
        if self.failover_state != 'no-failover':
            raise RedisError("NOMASTERLINK Can't SYNC while failing over")
        if link is not None and link.state != 'connected':
            raise RedisError("NOMASTERLINK Can't SYNC while not connected with my master")
        if conn.out:
            raise RedisError('ERR SYNC and PSYNC are invalid with pending output')
        r = self.of(conn)
        self.server.log(f'Replica {r.name()} asks for synchronization')
        if psync and self._continue(r, args[1], offset):
            return
        self.full_syncs += 1
        if psync and args[1] != b'?':
            self.partial_errors += 1
        aof = self.server.persistence.aof
        aof.write_replicas()  # what was queued is in the payload: the stream starts after
        if self.backlog is None:
            self.replid = os.urandom(20).hex()  # changeReplicationId: a new history
            self.backlog = bytearray()
            self.backlog_start = self.offset
            self.no_replicas_since = time.time()  # its TTL counts from now if none stays
            self.active = True
            aof.replication_started()
        r.psync = psync
        if r.rdb_filter is not None:  # a payload of its own, made now (it holds no keys)
            rdb = self._filtered_rdb(r.rdb_filter)
            self._send_payload(r, io.BytesIO(rdb), len(rdb), self.offset)
            return
        p = self.server.persistence
        waiting = [x for x in self.syncing if x.state == 'wait_bgsave']
        sharing = p.snapshot is not None and p.snapshot_kind == 'repl' and waiting
        if sharing and self.sync_socket:
            # a streamed payload is not shared (its stream started): the next one
            self.server.log('Current BGSAVE has socket target. Waiting for next BGSAVE for SYNC')
            r.state, r.since = 'wait_start', time.time()
            self.syncing.append(r)
            return
        if not sharing and 'eof' in r.capa and diskless_delay(self):
            # replication_presync.py: the payload starts after the delay, for all waiting
            r.state, r.since = 'wait_start', time.time()
            self.syncing.append(r)
            return
        if sharing:
            self.server.log('Waiting for end of BGSAVE for SYNC')
            r.pending = list(waiting[0].pending)  # the payload being made, shared
            r.streamed = sum(map(len, r.pending))
        elif p.snapshot is None and self._start_payload(self._socket_target([r])):
            r.pending = []
        else:  # another snapshot runs (BGSAVE, a rewrite): completed, then one made now
            aof.selected_db = -1  # the replica's stream starts with a SELECT
            rdb = self._rdb()
            self._send_payload(r, io.BytesIO(rdb), len(rdb), self.offset)
            return
        r.state = 'wait_bgsave'
        self.syncing.append(r)
        if psync:
            conn.send_stream(b'+FULLRESYNC %s %d\r\n' % (self.replid.encode(), self.sync_offset))

    def start_waiting(self, waiting: list[Replica]) -> None:
        """The delayed full sync of `waiting` starts (replicationStartPendingFork): one
        payload for all, then +FULLRESYNC to each, as Redis replies when its fork starts."""
        self.server.persistence.aof.write_replicas()  # queued writes: in the payload
        p = self.server.persistence
        if p.snapshot is not None and p.snapshot_kind == 'repl':
            return  # a streamed payload still runs: the next cron starts theirs
        if self._start_payload(self._socket_target(waiting)):
            for r in waiting:
                r.pending, r.streamed, r.state = [], 0, 'wait_bgsave'
                if r.psync:
                    r.conn.send_stream(
                        b'+FULLRESYNC %s %d\r\n' % (self.replid.encode(), self.sync_offset)
                    )
            return
        self.server.persistence.aof.selected_db = -1  # the stream starts with a SELECT
        rdb = self._rdb()  # another snapshot runs: completed, then one made now
        for r in waiting:
            r.pending, r.streamed, r.state = [], 0, ''
            self._send_payload(r, io.BytesIO(rdb), len(rdb), self.offset)

    def _socket_target(self, replicas: list[Replica]) -> bool:
        """startBgsaveForReplication's choice: streamed (`$EOF:`) with repl-diskless-sync
        when every replica it is for announced capa eof, else disk-based (`$<len>`)."""
        if not self.server.config['repl-diskless-sync']:
            return False
        for r in replicas:
            if 'eof' not in r.capa:
                return False
        return True

    def _start_payload(self, socket: bool = False) -> bool:
        """A point-in-time snapshot of the data as of now, written between commands
        (store/persistence/snapshot.py) into a temporary file: the payload of the replicas
        syncing meanwhile, each getting the stream from this offset on after it. With
        `socket` (diskless sync) it goes to them in the `$EOF:` form."""
        p = self.server.persistence
        path = p.path(f'temp-repl-{os.getpid()}.rdb')
        try:
            started = p.start_snapshot(
                path, self._encoder(), lambda ok: self._payload_done(ok, path), kind='repl'
            )
        except OSError as e:
            self.server.log(f'Can not make the replication payload in {path}: {e}', '#')
            return False
        if started:
            target = 'replicas sockets' if socket else 'disk'
            self.server.log(f'Starting BGSAVE for SYNC with target: {target}')
            self.sync_socket = socket
            self.sync_offset = self.offset
            self.server.persistence.aof.selected_db = -1  # the stream starts with a SELECT
        return started

    def _payload_done(self, ok: bool, path: str) -> None:
        """The payload is on disk (or failed): each replica waiting for it reads it from
        a file of its own, opened before the file is deleted."""
        waiting = [r for r in self.syncing if r.state == 'wait_bgsave']
        size = 0
        if ok:
            try:
                size = os.path.getsize(path)
                for r in waiting:
                    r.payload = open(path, 'rb')  # noqa: SIM115 - closed by pump/detach
            except OSError as e:
                self.server.log(f'Can not read the replication payload {path}: {e}', '#')
                ok = False
        remove(path)
        for r in waiting:
            if ok:
                if self.sync_socket:
                    r.eof_mark = os.urandom(20).hex().encode()
                self._send_payload(r, r.payload, size, self.sync_offset)
            else:
                self.server.log(f'SYNC failed: the payload for {r.name()} was not made', '#')
                r.conn.abort()

    def _send_payload(self, r: Replica, payload: Any, size: int, offset: int) -> None:
        """Start sending the RDB payload (after +FULLRESYNC when it was not sent yet)."""
        conn = r.conn
        if r.psync and not r.state:
            conn.send_stream(b'+FULLRESYNC %s %d\r\n' % (self.replid.encode(), offset))
        if r not in self.syncing:
            self.syncing.append(r)
        r.state = 'send_bulk'
        r.payload, r.payload_left = payload, size
        if r.eof_mark:
            conn.send_stream(b'$EOF:%s\r\n' % r.eof_mark)
        else:
            conn.send_stream(b'$%d\r\n' % size)
        self.pump(r)

    def pump(self, r: Replica) -> None:
        """Write the payload a chunk at a time while the replica's socket takes it
        (Connection.resume_writing calls again), so that a big payload is never all in
        memory; then the stream it waited with, and the replica is online (an rdb-only
        one is disconnected instead)."""
        conn = r.conn
        payload = r.payload
        while r.payload_left and not conn.write_paused:
            if conn.closing or conn.transport is None:
                return  # detach closes the file
            chunk = payload.read(min(PAYLOAD_CHUNK, r.payload_left))
            if not chunk:
                self.server.log(f'SYNC failed: the payload for {r.name()} ended early', '#')
                conn.abort()
                return
            r.payload_left -= len(chunk)
            conn.send_stream(chunk)
        if r.payload_left:
            return
        payload.close()
        r.payload = None
        self.syncing.remove(r)
        hold = bool(r.eof_mark)
        if hold:
            conn.send_stream(r.eof_mark)
            r.eof_mark = b''
            self.server.log(
                f'Streamed RDB transfer with replica {r.name()} succeeded (socket). '
                'Waiting for REPLCONF ACK from slave to enable streaming'
            )
        self.server.log(f'Synchronization with replica {r.name()} succeeded')
        pending, r.pending = r.pending, []
        r.streamed = 0
        if r.rdb_only:
            r.state = ''
            conn.close_after_reply()  # once the payload is written
            return
        self._attach(r, r.psync)
        if hold:
            r.hold, r.pending = True, pending
            r.streamed = sum(map(len, pending))
        elif pending:
            r.send(b''.join(pending))

    def _continue(self, r: Replica, replid: bytes, offset: int) -> bool:
        """masterTryPartialResynchronization: +CONTINUE and the missed bytes, or False.
        `offset` is the first byte the replica wants (its offset + 1)."""
        backlog = self.backlog
        if backlog is None or not history.accepts(self, replid.decode('latin-1').lower(), offset):
            return False
        start = offset - 1 - self.backlog_start  # into the backlog
        if start < 0 or offset - 1 > self.offset:
            self.server.log(f'Unable to partial resync with replica {r.name()} for lack of backlog')
            return False
        self.partial_syncs += 1
        conn = r.conn
        if 'psync2' in r.capa:
            conn.send_stream(b'+CONTINUE %s\r\n' % self.replid.encode())
        else:
            conn.send_stream(b'+CONTINUE\r\n')
        if start < len(backlog):
            conn.send_stream(bytes(backlog[start:]))
        self.server.log(
            f'Partial resynchronization request from {r.name()} accepted. Sending '
            f'{len(backlog) - start} bytes of backlog starting from offset {offset}.'
        )
        self._attach(r, True)
        return True

    def _attach(self, r: Replica, psync: bool) -> None:
        transport = r.conn.transport
        r.rdb_queued = transport.get_write_buffer_size() if transport is not None else 0
        r.state = 'online'
        r.psync = psync
        r.ack_time = time.time()
        self.replicas.append(r)
        self.refresh_good()

    def _encoder(self) -> Any:
        """The payload's encoder: the RDB with the replication aux fields (rdbSaveInfo);
        repl-stream-db is the database the stream that follows has selected (a replica's
        replicas get its master's stream, which will not SELECT it again)."""
        from .persistence.rdb_encoder import RdbEncoder

        link = self.server.replica_link
        db = link.conn.db if self.proxy and link is not None and link.conn is not None else 0
        cfg = self.server.config
        aux = {
            b'repl-stream-db': b'%d' % db,
            b'repl-id': self.replid.encode(),
            b'repl-offset': b'%d' % self.offset,
        }
        return RdbEncoder(cfg['rdbcompression'], cfg['rdbchecksum'], aux)

    def _rdb(self) -> bytes:
        """The dataset as an RDB file, now (a running BGSAVE or rewrite is completed
        first: one snapshot shadows the keyspace at a time)."""
        p = self.server.persistence
        p.complete_running()
        out = io.BytesIO()
        encoder = self._encoder()
        snap = Snapshot(self.server.keyspace, encoder, out, self.server.functions.codes())
        try:
            snap.run()
            snap.complete()
        finally:
            snap.abort()
        return out.getvalue()

    def _filtered_rdb(self, parts: set[str]) -> bytes:
        """The RDB of a replica that asked for some parts only (SLAVE_REQ_RDB_EXCLUDE_DATA):
        the header, the functions if asked for, never a key."""
        from .rdb import crc64

        encoder = self._encoder()
        body = encoder.header()
        if 'functions' in parts:
            body += encoder.functions(self.server.functions.codes())
        return body + encoder.footer(crc64(body))

    def detach(self, conn: Any) -> None:
        link = self.server.replica_link
        if link is not None and link.is_master(conn):
            link.dropped(conn)
            return
        r = conn.replica
        if r is None or not r.state:
            return
        if r.state != 'online':  # waiting for its payload, or being sent it
            self.syncing.remove(r)
            r.state = ''
            if r.payload is not None:
                r.payload.close()
                r.payload = None
            return
        r.state = ''
        self.replicas.remove(r)
        self.server.log(f'Connection with replica {r.name()} lost.')
        if not self.replicas:
            self.no_replicas_since = time.time()
        self._check_waiting()
        self.refresh_good()

    # -- acknowledgements and WAIT ---------------------------------------------------------

    def ack(self, conn: Any, offset: int) -> None:
        r = conn.replica
        if r is None or r.state != 'online':
            return
        if offset > r.ack:
            r.ack = offset
        r.ack_time = time.time()
        if r.hold:  # loaded its streamed payload: the stream it waited with follows
            r.hold = False
            pending, r.pending = r.pending, []
            r.streamed = 0
            if pending:
                r.send(b''.join(pending))
        if self.waiting:
            self._check_waiting()
        self.failover_check()

    def acked(self, offset: int) -> int:
        """replicationCountAcksByOffset: replicas that acknowledged `offset`."""
        return sum(1 for r in self.replicas if r.ack >= offset)

    def wait(self, waiter: Any, offset: int, numreplicas: int) -> None:
        """A blocked WAIT: answered when `numreplicas` acknowledged `offset` (its
        timeout reply is kept at the count so far); GETACK asked of the replicas."""
        self.waiting.append((waiter, offset, numreplicas))
        self.request_acks()

    def request_acks(self) -> None:
        if not self.getack_scheduled and self.replicas:
            self.getack_scheduled = True
            self.server.loop.call_soon(self._getack)

    def _getack(self) -> None:
        self.getack_scheduled = False
        if self.replicas:
            self._control(_GETACK)

    def _check_waiting(self) -> None:
        blocking = self.server.blocking
        still = []
        for waiter, offset, numreplicas in self.waiting:
            if not waiter.active:
                continue
            count = self.acked(offset)
            if count >= numreplicas:
                blocking.end(waiter, count)
            else:
                waiter.timeout_reply = count
                still.append((waiter, offset, numreplicas))
        self.waiting = still

    def refresh_good(self) -> None:
        """refreshGoodSlavesCount: with min-replicas-to-write and min-replicas-max-lag set,
        writes are refused (-NOREPLICAS) while fewer replicas acknowledged within the lag.
        Every connection takes the gated path meanwhile, which checks."""
        cfg = self.server.config
        need, lag = cfg['min-replicas-to-write'], cfg['min-replicas-max-lag']
        denied = None
        if need and lag:
            now = int(time.time())  # whole seconds, as Redis's unixtime and ack times
            self.good = sum(1 for r in self.replicas if now - int(r.ack_time) <= lag)
            if self.good < need:
                denied = E_NOREPLICAS
        if denied != self.server.replicas_denied:
            self.server.replicas_denied = denied
            self.server.update_gates()

    async def drain(self, timeout: float) -> None:
        """At shutdown: the stream written, then up to `timeout` seconds for the replicas
        to acknowledge all of it (isReadyToShutdown; SYNC replicas never acknowledge and
        are not waited for); the ones still behind are logged."""
        self.server.persistence.aof.write_replicas()
        waited = [r for r in self.replicas if r.psync]
        if timeout <= 0 or all(r.ack >= self.offset for r in waited):
            return
        self._control(_GETACK)  # answered once all before it is applied: offset covers it
        target = self.offset
        self.server.log('Waiting for replicas before shutting down.')
        end = time.monotonic() + timeout
        while time.monotonic() < end and any(r.ack < target for r in self.replicas if r.psync):
            await asyncio.sleep(0.01)
        now = time.time()
        for r in self.replicas:
            if r.psync and r.ack < target:
                self.server.log(
                    f'Lagging replica {r.name()} reported offset {target - r.ack} behind '
                    f'master, lag={int(now - r.ack_time)}, state=online.',
                    '#',
                )

    # -- housekeeping ----------------------------------------------------------------------

    def cron(self, now: float) -> None:
        link = self.server.replica_link
        if link is not None:
            link.cron(now)
        if self.syncing:
            presync_cron(self, now)
        if self.server.replicas_denied is not None or self.replicas:
            self.refresh_good()
        if self.backlog is None:
            return
        cfg = self.server.config
        self.failover_check()
        if self.replicas:
            # no PING while a failover waits: the target must reach the offset (Redis
            # sends none while writes are paused for a failover)
            waiting = self.failover_state != 'no-failover'
            loop = int(now - self.started)
            period = cfg['repl-ping-replica-period']
            # a replica's replicas get its master's PINGs, never its own
            proxy = self.proxy
            if not waiting and not proxy and loop != self.cron_loop and loop % period == 0:
                self._control(_PING)
            self.cron_loop = loop
            timeout = cfg['repl-timeout']
            for r in list(self.replicas):
                if r.psync and now - r.ack_time > timeout:
                    self.server.log(f'Disconnecting timedout replica: {r.name()}', '#')
                    r.conn.abort()
        elif (
            not self.syncing
            and not self.proxy  # a replica keeps its backlog
            and cfg['repl-backlog-ttl']
            and now - self.no_replicas_since > cfg['repl-backlog-ttl']
        ):
            self.server.log(
                f'Replication backlog freed after {cfg["repl-backlog-ttl"]} seconds without '
                'connected replicas.'
            )
            self.server.persistence.aof.write_replicas()
            self.backlog = None
            self.active = False
            self.server.persistence.aof.replication_stopped()

    def reset_stats(self) -> None:
        """The sync counters of INFO stats (CONFIG RESETSTAT zeroes them)."""
        self.full_syncs = self.partial_syncs = self.partial_errors = 0

    # -- FAILOVER (replication.c's failoverCommand and updateFailoverStatus) ----------------

    def find_replica(self, host: str, port: int) -> Replica | None:
        """findReplica: the replica at host (its announced or peer address) and its
        listening port, online or syncing."""
        for r in self.syncing + self.replicas:
            if r.address().lower() == host.lower() and r.port == port:
                return r
        return None

    def start_failover(self, target: tuple[str, int] | None, timeout_ms: int, force: bool):
        """FAILOVER, its checks passed: writes paused until a replica caught up."""
        if target is not None:
            self.server.log(f'FAILOVER requested to {target[0]}:{target[1]}.')
        else:
            self.server.log('FAILOVER requested to any replica.')
        self.failover_target = target
        self.failover_end = now_ms() + timeout_ms if timeout_ms else 0
        self.failover_force = force
        self.failover_state = 'waiting-for-sync'
        self.server.pause.failover(True)
        self.server.persistence.aof.write_replicas()  # the stream so far, to be acknowledged

    def failover_check(self) -> None:
        """updateFailoverStatus: past the timeout abort (or, with FORCE, fail over all the
        same); once the target (or any replica) acknowledged the whole stream, become its
        replica and ask it to take over."""
        if self.failover_state != 'waiting-for-sync':
            return
        target = self.failover_target
        if self.failover_end and self.failover_end <= now_ms():
            if self.failover_force and target is not None:
                self.server.log(
                    f'FAILOVER to {target[0]}:{target[1]} time out exceeded, failing over.'
                )
                self._demote(target)
            else:
                self.abort_failover('Replica never caught up before timeout')
            return
        if target is not None:
            r = self.find_replica(*target)
            if r is None or r.ack != self.offset:
                return
        else:
            r = next((x for x in self.replicas if x.ack == self.offset), None)
            if r is None:
                return
            target = self.failover_target = (r.address(), r.port)
        self.server.log(f'Failover target {target[0]}:{target[1]} is synced, failing over.')
        self._demote(target)

    def _demote(self, target: tuple[str, int]) -> None:
        self.failover_state = 'failover-in-progress'
        self.replicate(target[0], target[1], failover=True)

    def abort_failover(self, reason: str) -> None:
        """abortFailover: a master again if it had become the target's replica."""
        if self.failover_state == 'no-failover':
            return
        target = self.failover_target
        if target is not None:
            self.server.log(f'FAILOVER to {target[0]}:{target[1]} aborted: {reason}')
        else:
            self.server.log(f'FAILOVER to any replica aborted: {reason}')
        if self.failover_state == 'failover-in-progress':
            self.promote()
        self.end_failover()

    def end_failover(self) -> None:
        """The failover is over: taken over by the target (it answered PSYNC ...
        FAILOVER) or aborted; the writes paused meanwhile run."""
        self.failover_state = 'no-failover'
        self.failover_target = None
        self.failover_end = 0
        self.failover_force = False
        self.server.pause.failover(False)

    # -- this server as a replica (store/replica.py) -------------------------------------

    def replicate(self, host: str, port: int, failover: bool = False) -> bool:
        """REPLICAOF <host> <port>: follow that master from now on (its first sync
        replaces the data). True when it already does. `failover`: FAILOVER's demotion,
        the link continues this server's own history (its replication id and offset)."""
        server = self.server
        link = server.replica_link
        if link is not None:
            if (link.host, link.port) == (host, port):
                return True
            link.stop()
            # the cached master: PSYNC continues the history it had (unless cut mid-way)
            resume = link.replid != '?' and self.backlog is not None
        else:
            resume = self.backlog is not None  # a master continuing its own history
            self.expiry_was = server.expiry.enabled
            server.expiry.set_enabled(False)  # the master's DELs expire keys here
            server.keyspace.expire_paused = True  # past their deadline they read as missing
        self.unblock_all()
        self.own_keys.install()
        history.start_proxy(self)
        server.replica_link = MasterLink(server, host, port, failover, resume or failover)
        server.config.values['replicaof'] = f'{host} {port}'  # what CONFIG REWRITE saves
        server.apply_config('keyevent-journal-events')  # no journal of its own
        self.refresh_readonly()
        server.log(f'REPLICAOF {host}:{port} enabled')
        return False

    def unblock_all(self) -> None:
        """disconnectAllBlockedClients: clients blocked while this server was a master
        (BLPOP, WAIT, ...) get -UNBLOCKED and are disconnected once it is sent, so that
        a later write of the new master cannot serve them here."""
        blocking = self.server.blocking
        for conn in list(self.server.clients.values()):
            w = conn.blocked
            if w is not None and w.active:
                blocking.end(w, RedisError(E_UNBLOCKED_ROLE))
                conn.close_after_reply()

    def promote(self, why: str = '') -> None:
        """REPLICAOF NO ONE: a master again, with the data it has and a new history."""
        server = self.server
        link = server.replica_link
        if link is None:
            return
        link.stop()
        server.replica_link = None
        server.config.values['replicaof'] = ''
        self.own_keys.uninstall()
        server.keyspace.expire_paused = server.pause.kind is not None
        server.expiry.set_enabled(self.expiry_was)
        server.apply_config('keyevent-journal-events')
        self.refresh_readonly()
        if not history.promoted(self):  # no history to keep: the replicas sync again
            self.drop_replicas()
        server.log(f'MASTER MODE enabled{why}')

    def refresh_readonly(self) -> None:
        """A replica with replica-read-only refuses other clients' writes (-READONLY, on
        the gated path, which every connection takes meanwhile, and in scripts)."""
        server = self.server
        denied = None
        if server.replica_link is not None and server.config['replica-read-only']:
            denied = E_READONLY
        if denied != server.readonly_denied:
            server.readonly_denied = denied
            server.update_gates()

    def drop_replicas(self) -> None:
        """Disconnect every replica and forget the backlog: what they had no longer
        leads to this data (a replica's full sync, a promotion); they sync again."""
        for r in self.syncing + self.replicas:
            r.conn.abort()
        if self.backlog is not None:
            self.server.persistence.aof.write_replicas()
            self.backlog = None
            self.active = False
            self.server.persistence.aof.replication_stopped()
        self.replid = os.urandom(20).hex()

    def count(self) -> int:
        """Connected replicas, online or waiting for their payload (connected_slaves)."""
        return len(self.replicas) + len(self.syncing)

    def info(self) -> list[tuple[str, Any]]:
        """INFO replication (a master's)."""
        replicas = self.syncing + self.replicas
        link = self.server.replica_link
        fields: list[tuple[str, Any]] = [('role', 'master')] if link is None else link.info()
        fields.append(('connected_slaves', len(replicas)))
        cfg = self.server.config
        if cfg['min-replicas-to-write'] and cfg['min-replicas-max-lag']:
            fields.append(('min_slaves_good_slaves', self.good))
        now = time.time()
        for i, r in enumerate(replicas):
            state = r.state
            if state == 'wait_start' or (r.eof_mark and state == 'send_bulk'):
                state = 'wait_bgsave'  # a streamed payload: Redis's child still writes it
            line = f'ip={r.address()},port={r.port},state={state},offset={r.ack}'
            fields.append((f'slave{i}', f'{line},lag={int(now - r.ack_time)}'))
        backlog = self.backlog
        first = self.backlog_start + 1 if backlog is not None else 0
        fields += [
            ('master_failover_state', self.failover_state),
            ('master_replid', self.replid if link is None else link.replid),
            ('master_replid2', self.replid2),
            ('master_repl_offset', self.offset if link is None else link.offset),
            ('second_repl_offset', self.second_offset),
            ('repl_backlog_active', int(backlog is not None)),
            ('repl_backlog_size', self.server.config['repl-backlog-size']),
            ('repl_backlog_first_byte_offset', first),
            ('repl_backlog_histlen', len(backlog) if backlog is not None else 0),
        ]
        return fields

    def role(self) -> list[Any]:
        """ROLE: master, the offset, and each replica's ip, port and acknowledged offset
        (a replica's: slave, its master, the link's state, the offset)."""
        if self.server.replica_link is not None:
            return self.server.replica_link.role()
        return [
            b'master',
            self.offset,
            [[r.address().encode(), b'%d' % r.port, b'%d' % r.ack] for r in self.replicas],
        ]
