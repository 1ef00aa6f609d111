"""A replica's full resynchronisation payload (replication.c's readSyncBulkPayload), the
part of store/replica.py's MasterLink that reads and loads it.

The payload comes as `$<len>` and that many bytes, or streamed: `$EOF:<40 chars>`, the
RDB, and the same 40 chars (the end mark, which may straddle two reads; the bytes read past
it are the replication stream's first, returned to the caller).

- repl-diskless-load disabled (or on-empty-db over data): the payload goes into a
  temporary file; then the data is emptied and the file loaded, clients getting -LOADING.
- Diskless (swapdb, or on-empty-db on an empty data set): the RDB is read as it arrives
  (persistence/rdb_stream.py), for the whole transfer in a loading state, as Redis parses
  it from the socket. With swapdb from a master whose replication id is this server's own
  (the same history: the payload is the same data set later on) it is async loading: the
  old data is served, and only the no_async_loading commands get -LOADING; otherwise it is
  loading (-LOADING for all but the `loading` commands). The old data is not touched
  until the payload is complete and valid: then it is dropped and the records read are
  inserted at once, with no turn of the loop in between (Redis swaps its databases). A
  link cut or a bad payload leaves it exactly as it was, and the link reconnects at once.

Pacing: the socket is read only as fast as the payload is parsed (key-load-delay pauses
after each key), so a slow replica slows its master down through TCP's flow control, as
Redis's blocking read does. Between pieces the loop serves clients, sends the master a
newline at most once a second (replicationSendNewlineToMaster) and updates INFO's
loading_loaded_bytes: at every loading-process-events-interval-bytes parsed, as
processEventsWhileBlocked, and at least every LOAD_SLICE_S.

Log lines, in Redis 7.0's order: "receiving ... to parser|to disk", ["Flushing old data"
unless swapdb], "Loading DB in memory", "Done loading RDB ...", [swapdb: "Swapping active
DB with loaded DB", "Discarding old DB in background"]; a failed diskless load logs why
(a cut link as rdbLoadRio's short read), "Failed trying to load the MASTER
synchronization DB from socket: ...", ["Discarding temporary DB in background" with
swapdb], then "Reconnecting to MASTER ... after failure".
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any, NoReturn

from .persistence.errors import LoadError
from .persistence.files import remove
from .persistence.loading import LOAD_SLICE_S
from .persistence.rdb_stream import RdbStream
from .rdb import RdbError
from .resp import RedisError

_CHUNK = 1 << 20
_MARK = 40  # CONFIG_RUN_ID_SIZE: the end mark's length


class LinkError(Exception):
    """The master's answer this replica cannot go on with."""


class LoadFailed(Exception):
    """A diskless load that failed, logged already: the link is dropped and reconnects at
    once (cancelReplicationHandshake(1))."""


class PayloadLoad:
    """MasterLink's reading and loading of a full sync's payload (a mixin; the fields are
    MasterLink's)."""

    server: Any
    writer: asyncio.StreamWriter | None
    last_io: float
    syncs: int
    newline_sent: int  # the second of the last newline sent to the master

    async def _load(self, reader: asyncio.StreamReader, replid: str) -> bytes:
        """readSyncBulkPayload: the payload after +FULLRESYNC `replid`, loaded in place of
        the data set; returns the stream's bytes read past a streamed payload's mark."""
        line = b'\n'
        while line in (b'\n', b'\r\n'):  # newlines: the master is still making it
            line = await reader.readline()
            if not line:
                raise EOFError('the master closed the connection during the sync')
            self.last_io = time.time()
        line = line.rstrip(b'\r\n')
        if line[:1] == b'-':
            raise LinkError(
                f'MASTER aborted replication with an error: {line[1:].decode(errors="replace")}'
            )
        if line[:1] != b'$':
            raise LinkError(
                "Bad protocol from MASTER, the first byte is not '$' (we received "
                f"'{line.decode(errors='replace')}'), are you sure the host and port are right?"
            )
        mark = line[5 : 5 + _MARK] if line.startswith(b'$EOF:') and len(line) >= 5 + _MARK else b''
        size = 0 if mark else int(line[1:])
        server = self.server
        mode = server.config['repl-diskless-load']
        diskless = mode == 'swapdb' or (mode == 'on-empty-db' and server.keyspace.dbsize_all() == 0)
        target = 'to parser' if diskless else 'to disk'
        if mark:
            server.log(
                f'MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF {target}'
            )
        else:
            server.log(f'MASTER <-> REPLICA sync: receiving {size} bytes from master {target}')
        if diskless:
            rest = await self._load_diskless(reader, size, mark, replid, mode == 'swapdb')
        else:
            rest = await self._load_from_disk(reader, size, mark)
        self.syncs += 1
        p = server.persistence
        if p.aof.on:  # the AOF restarts from this data, as Redis restarts it
            try:
                p.aof.start_rewrite()
            except RedisError:
                pass
        return rest

    async def _load_from_disk(self, reader: asyncio.StreamReader, size: int, mark: bytes) -> bytes:
        server = self.server
        p = server.persistence
        log = server.log
        path = p.path(f'temp-{int(time.time())}.{os.getpid()}.rdb')
        try:
            with open(path, 'wb') as out:
                rest = await self._receive(reader, size, mark, out.write, None)
            log('MASTER <-> REPLICA sync: Flushing old data')
            server.replication.drop_replicas()  # they sync again, from this data
            self._empty()
            log('MASTER <-> REPLICA sync: Loading DB in memory')
            try:
                p.load_rdb_now(path)
            except Exception as e:
                raise LinkError(f'Failed trying to load the MASTER synchronization DB: {e}') from e
        finally:
            remove(path)
        return rest

    async def _load_diskless(
        self, reader: asyncio.StreamReader, size: int, mark: bytes, replid: str, swapdb: bool
    ) -> bytes:
        server = self.server
        p = server.persistence
        log = server.log
        if not swapdb:  # on-empty-db: nothing to keep
            server.replication.drop_replicas()
            log('MASTER <-> REPLICA sync: Flushing old data')
            self._empty()
        log('MASTER <-> REPLICA sync: Loading DB in memory')
        same_history = swapdb and replid == server.replication.replid
        stream = RdbStream(server)
        with p.async_loading_state() if same_history else p.loading_state():
            p.load_total = size  # 0 for a streamed payload, as in Redis
            try:
                rest = await self._receive(reader, size, mark, stream.feed, stream)
                if mark and stream.trailing():
                    raise LinkError('the RDB ends before the end mark')
            except (OSError, EOFError, LinkError, RdbError, LoadError) as e:
                self._load_failed(stream, swapdb, e)
            p.log_loaded(stream.loader, stream.keys, 0)  # a replica expires nothing
            if swapdb:
                server.replication.drop_replicas()  # they sync again, from this data
                log('MASTER <-> REPLICA sync: Swapping active DB with loaded DB')
                self._empty()
            server.functions.ctx = stream.functions
            p.insert_loaded(stream.items)
            if swapdb:
                log('MASTER <-> REPLICA sync: Discarding old DB in background')
        return rest

    def _load_failed(self, stream: RdbStream, swapdb: bool, e: Exception) -> NoReturn:
        """The lines Redis logs for a diskless load that failed, and the data as it was
        (swapdb) or empty; raises LoadFailed."""
        log = self.server.log
        if isinstance(e, LinkError) or (isinstance(e, (OSError, EOFError)) and stream.done):
            log('Replication stream EOF marker is broken', '#')
        else:
            if isinstance(e, (OSError, EOFError)):  # rdbLoadRio's short read from the socket
                log('Short read or OOM loading DB. Unrecoverable error, aborting now.', '#')
                log(
                    f'Internal error in RDB reading offset {stream.parsed()}, function at '
                    'rdb.c:3249 -> Unexpected EOF reading RDB file. Failure loading rdb '
                    'format from socket, assuming connection error, resuming operation.',
                    '#',
                )
                reason = getattr(e, 'strerror', None) or 'Connection lost'
            else:
                reason = str(e)
            log(f'Failed trying to load the MASTER synchronization DB from socket: {reason}', '#')
        if swapdb:
            log('MASTER <-> REPLICA sync: Discarding temporary DB in background')
        else:
            self._empty()
        raise LoadFailed(str(e)) from e

    def _empty(self) -> None:
        """emptyData: every database and the functions."""
        self.server.keyspace.flushall()
        self.server.functions.flush()

    async def _receive(
        self, reader: asyncio.StreamReader, size: int, mark: bytes, write: Any, stream: Any
    ) -> bytes:
        """The payload's bytes to `write` as they arrive, up to the `size` announced or the
        end `mark`; with a `stream`, it is parsed after each read, before the next one.
        Returns the bytes read past the mark."""
        tail = b''  # the last bytes read, where the mark may begin
        rest = b''
        left = size
        done = not mark and not left
        while not done:
            chunk = await reader.read(_CHUNK if mark else min(left, _CHUNK))
            if not chunk:
                raise EOFError('the master closed the connection during the sync')
            self.last_io = time.time()
            if mark:
                data = tail + chunk if tail else chunk
                at = data.find(mark)
                if at >= 0:
                    write(data[:at])
                    rest = data[at + _MARK :]
                    done = True
                else:
                    cut = max(len(data) - (_MARK - 1), 0)
                    write(data[:cut])
                    tail = data[cut:]
            else:
                write(chunk)
                left -= len(chunk)
                done = not left
            if stream is not None:
                if done:
                    stream.finish()
                if stream.ready():
                    await self._parse(stream)
        return rest

    async def _parse(self, stream: RdbStream) -> None:
        """A pass of the stream over what arrived, serving clients between pieces."""
        server = self.server
        p = server.persistence
        every = server.config['loading-process-events-interval-bytes']
        step = stream.parsed() // every
        next_turn = time.perf_counter() + LOAD_SLICE_S
        for _ in stream.steps():
            parsed = stream.parsed()
            if parsed // every != step or time.perf_counter() > next_turn:
                p.load_pos = parsed
                now = time.time()
                if int(now) != self.newline_sent and self.writer is not None:
                    self.newline_sent = int(now)  # best effort: the master sees we are alive
                    self.writer.write(b'\n')
                self.last_io = now  # progress: repl-timeout counts from here
                await asyncio.sleep(0)
                step = stream.parsed() // every
                next_turn = time.perf_counter() + LOAD_SLICE_S
        p.load_pos = stream.parsed()
