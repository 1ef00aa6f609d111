"""The master side of a full resynchronisation (SYNC, or a PSYNC that cannot continue):
the replica gets +FULLRESYNC <replid> <offset>, the dataset as one RDB payload, then the
stream from that offset on (store/replication.py, whose Replication this is part of).

The payload is the point-in-time snapshot BGSAVE makes (store/persistence/snapshot.py),
written between commands into a temporary file (or the sockets, below): clients are
served meanwhile, and the stream since the snapshot's start waits for each syncing
replica in the backlog (from its `start`, within its output-buffer class; the backlog
outgrows repl-backlog-size meanwhile, as Redis's shared buffer does) until its payload is
sent, a chunk
at a time as its socket takes it (`pump`), so that a payload is never all in memory.
Replicas that ask while it is made share it, and the first one's `start`, as Redis shares
a BGSAVE. While another snapshot runs (BGSAVE, an AOF rewrite),
that one is completed and the payload made at once, as SAVE makes it. The AOF's queue is
written before the snapshot starts, so what it held is in the payload and not in the
stream. The payload carries the replication aux fields (repl-id, repl-offset,
repl-stream-db: `_encoder`).

Its forms: `$<len>\r\n` and the file's bytes, as Redis's disk-based sync sends it. With
repl-diskless-sync yes, a full sync waits repl-diskless-sync-delay seconds (or
repl-diskless-sync-max-replicas) before its payload starts and +FULLRESYNC is sent, and
replicas waiting get a newline every second (store/replication_presync.py). When every
replica it is for announced `capa eof` (startBgsaveForReplication's socket target: "target:
replicas sockets") the snapshot writes straight to their sockets, paced by the slowest, as
`$EOF:<40 random hex chars>\r\n`, the RDB, and the same 40 chars
(store/replication_socket_sync.py); a replica asking meanwhile waits for the next
payload, as with Redis, and after it the stream waits (`hold`) for the replica's first
REPLCONF ACK, as a Redis replica cannot find the mark with bytes glued after it.

`REPLCONF rdb-only 1` (redis-cli --rdb) gets the payload and is then disconnected;
`REPLCONF rdb-filter-only` (redis-cli --functions-rdb) gets one of its own at once: the
header and the functions, never a key.
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import replication_history as history
from .persistence.files import remove
from .persistence.snapshot import Snapshot
from .replication_presync import diskless_delay
from .replication_socket_sync import SocketPayload

if TYPE_CHECKING:
    from .persistence.rdb_encoder import RdbEncoder

PAYLOAD_CHUNK = 1 << 20  # bytes of a payload read and written at a time


class FullSync:
    """Replication's full resynchronisations (a part of store/replication.py's class;
    the replicas here are its Replica objects)."""

    # Replication's state this part reads and writes (set in Replication.__init__)
    server: Any
    replid: str
    offset: int
    syncing: list[Any]
    sync_offset: int
    sync_socket: bool
    backlog: bytearray | None
    backlog_start: int
    no_replicas_since: float
    active: bool
    proxy: bool
    held: set[Any]
    _attach: Callable[[Any, bool], None]  # the replica online
    catch_up: Callable[[Any], None]  # the stream it waited with

    def _full_sync(self, r: Any, psync: bool) -> None:
        """The full resynchronisation of `r` (SYNC, or a PSYNC that cannot continue):
        its payload shared, delayed, made now or its own, then the stream from its
        offset on."""
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
            self._send_now(r, self._filtered_rdb(r.rdb_filter))
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
            r.start = waiting[0].start  # the payload being made, shared
            r.streamed = self.offset - r.start
            r.state = 'wait_bgsave'
            self.syncing.append(r)
            if psync:
                self._fullresync(r.conn, self.sync_offset)
        elif p.snapshot is None and self._start_payload([r]):
            pass
        else:  # another snapshot runs (BGSAVE, a rewrite): completed, then one made now
            aof.selected_db = -1  # the replica's stream starts with a SELECT
            self._send_now(r, self._rdb())

    def start_waiting(self, waiting: list[Any]) -> None:
        """The delayed full sync of `waiting` starts (replicationStartPendingFork): one
        payload for all, then +FULLRESYNC to each, as Redis replies when its fork starts."""
        p = self.server.persistence
        p.aof.write_replicas()  # queued writes: in the payload
        if p.snapshot is not None and p.snapshot_kind == 'repl':
            return  # a streamed payload still runs: the next cron starts theirs
        if self._start_payload(waiting):
            return
        p.aof.selected_db = -1  # the stream starts with a SELECT
        rdb = self._rdb()  # another snapshot runs: completed, then one made now
        for r in waiting:
            r.state = ''
            self._send_now(r, rdb)

    def _socket_target(self, replicas: list[Any]) -> bool:
        """startBgsaveForReplication's choice: streamed (`$EOF:`) with repl-diskless-sync
        when every replica it is for announced capa eof, else disk-based (`$<len>`)."""
        if not self.server.config['repl-diskless-sync']:
            return False
        for r in replicas:
            if 'eof' not in r.capa:
                return False
        return True

    def _start_payload(self, replicas: list[Any]) -> bool:
        """A point-in-time snapshot of the data as of now, written between commands
        (store/persistence/snapshot.py): the payload of `replicas` (and of those that
        share it meanwhile), each getting the stream from this offset on after it. Into a
        temporary file, or with diskless sync (`_socket_target`) straight to their sockets
        in the `$EOF:` form (store/replication_socket_sync.py). False when it could not
        start."""
        p = self.server.persistence
        socket = self._socket_target(replicas)
        path = p.path(f'temp-repl-{os.getpid()}.rdb')
        stream = SocketPayload(replicas, os.urandom(20).hex().encode()) if socket else None

        def done(ok: bool) -> None:
            if stream is not None:
                self._stream_done(ok, stream)
            else:
                self._payload_done(ok, path)

        try:
            started = p.start_snapshot(path, self._encoder(), done, kind='repl', out=stream)
        except OSError as e:
            self.server.log(f'Can not make the replication payload in {path}: {e}', '#')
            return False
        if not started:
            return False
        log = self.server.log
        log(f'Starting BGSAVE for SYNC with target: {"replicas sockets" if socket else "disk"}')
        pid = p.child.pid if p.child is not None and p.child.pid else os.getpid()
        if socket:
            log(f'Background RDB transfer started by pid {pid}')
        else:
            log(f'Background saving started by pid {pid}')
        self.sync_socket = socket
        self.sync_offset = self.offset
        p.aof.selected_db = -1  # the stream starts with a SELECT
        for r in replicas:
            r.start, r.streamed, r.state = self.sync_offset, 0, 'wait_bgsave'
            if r not in self.syncing:
                self.syncing.append(r)
            if r.psync:
                self._fullresync(r.conn, self.sync_offset)
            if stream is not None:
                r.partial_since = 0.0
                r.conn.send_stream(b'$EOF:%s\r\n' % stream.mark)
        return True

    def _stream_done(self, ok: bool, stream: SocketPayload) -> None:
        """The diskless payload is written (or stopped): the replicas still there get its
        end mark and go online, as Redis's do when its child exits."""
        alive = stream.alive()
        log = self.server.log
        if not ok:
            for r in alive:
                log('SYNC failed. BGSAVE child returned an error', '#')
                r.conn.abort()
            return
        log(f'Diskless rdb transfer, done reading from pipe, {len(alive)} replicas still up.', '#')
        log('Background RDB transfer terminated with success')
        for r in alive:
            r.eof_mark = stream.mark
            self._payload_sent(r)

    def payload_unwanted(self) -> None:
        """A replica waiting for the running payload left: with none left waiting, the
        payload is stopped, as Redis kills its child (a streamed one always, a file only
        without save points, which would have used it)."""
        p = self.server.persistence
        if p.snapshot is None or p.snapshot_kind != 'repl' or p.snapshot.written:
            return
        if any(r.state == 'wait_bgsave' for r in self.syncing):
            return
        if self.sync_socket:
            self.server.log('Diskless rdb transfer, last replica dropped, killing fork child.', '#')
        elif self.server.config['save']:
            return
        p.kill_rdb_child()

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
        if ok:
            self.server.log('Background saving terminated with success')
        for r in waiting:
            if ok:
                self._send_payload(r, r.payload, size, self.sync_offset)
            else:
                self.server.log('SYNC failed. BGSAVE child returned an error', '#')
                r.conn.abort()

    def _fullresync(self, conn: Any, offset: int) -> None:
        """PSYNC's answer to a full resynchronisation: the payload's history and offset."""
        conn.send_stream(b'+FULLRESYNC %s %d\r\n' % (self.replid.encode(), offset))

    def _send_now(self, r: Any, rdb: bytes) -> None:
        """Send a payload made now (in memory), the stream following from this offset."""
        r.start, r.streamed = self.offset, 0
        self._send_payload(r, io.BytesIO(rdb), len(rdb), self.offset)

    def _send_payload(self, r: Any, payload: Any, size: int, offset: int) -> None:
        """Start sending the RDB payload (after +FULLRESYNC when it was not sent yet)."""
        conn = r.conn
        if r.psync and not r.state:
            self._fullresync(conn, offset)
        if r not in self.syncing:
            self.syncing.append(r)
        r.state = 'send_bulk'
        r.payload, r.payload_left = payload, size
        conn.send_stream(b'$%d\r\n' % size)
        self.pump(r)

    def pump(self, r: Any) -> None:
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
        self._payload_sent(r)

    def _payload_sent(self, r: Any) -> None:
        """All of its payload is written: its end mark if streamed, then the replica is
        online (an rdb-only one is disconnected instead)."""
        conn = r.conn
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
        if r.rdb_only:
            r.start, r.streamed, r.state = -1, 0, ''
            conn.close_after_reply()  # once the payload is written
            return
        self._attach(r, r.psync)
        if hold:  # its stream waits in the backlog until its first ACK (Replication.ack)
            r.hold = True
            self.held.add(r)
        else:
            self.catch_up(r)

    def _encoder(self) -> RdbEncoder:
        """The payload's encoder: the RDB with the replication aux fields (rdbSaveInfo);
        repl-stream-db is the database the stream that follows has selected (a replica's
        replicas get its master's stream, which will not SELECT it again)."""
        from .persistence.rdb_encoder import RdbEncoder

        link = self.server.replica_link
        db = link.conn.db if self.proxy and link is not None and link.conn is not None else 0
        cfg = self.server.config
        aux = history.aux_fields(self, db)
        return RdbEncoder(cfg['rdbcompression'], cfg['rdbchecksum'], aux)

    def _rdb(self) -> bytes:
        """The dataset as an RDB file, now (a running BGSAVE or rewrite is completed
        first: one snapshot shadows the keyspace at a time)."""
        p = self.server.persistence
        p.complete_running()
        out = io.BytesIO()
        encoder = self._encoder()
        snap = Snapshot(self.server.keyspace, encoder, out, self.server.functions.codes())
        snap.run()  # at once: no command runs beside it
        snap.complete()
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
