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

SYNC / PSYNC. A full resynchronisation (+FULLRESYNC, the dataset as an RDB payload, then
the stream from its offset on) is store/replication_full_sync.py's, a part of this
module's Replication. PSYNC with this server's replication id and an offset still held by
the backlog (`repl-backlog-size` bytes, kept while replicas come and go, freed
`repl-backlog-ttl` seconds after the last one left) continues with +CONTINUE and the
bytes the replica missed.

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

FAILOVER (failoverCommand, a target replica taking over from this server) is
store/replication_failover.py's, a part of Replication as well.

A replica's history is its master's (store/replication_history.py): its replicas get the
master's stream as applied here, a promotion keeps the old id as replid2, and RDB files
carry the id and offset so that a restart continues them.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from . import replication_history as history
from .replica import MasterLink
from .replica_expire import ReplicaKeysWithExpire
from .replication_failover import Failover
from .replication_full_sync import FullSync
from .replication_presync import presync_cron
from .resp import RedisError, string2ll

E_NOREPLICAS = 'NOREPLICAS Not enough good replicas to write.'
E_READONLY = "READONLY You can't write against a read only replica."
E_UNBLOCKED_ROLE = (
    'UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)'
)
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
        'start',
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
        'partial_since',
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
        # while it waits for its payload, and for its first ACK after a streamed one: the
        # offset its stream continues from, which the backlog keeps for it (-1: none)
        self.start = -1
        self.payload: Any = None  # while sent (send_bulk): the payload file, and what is left
        self.payload_left = 0
        self.psync = False  # SYNC (redis-cli --replica) never acknowledges
        self.ack = 0  # the offset it acknowledged last
        self.ack_time = time.time()
        # the stream bytes it was given (those it waits with, from `start`, meanwhile),
        # and what its transport held when it went online (the payload, first out): the
        # output-buffer limit counts the stream's part of what it holds
        self.rdb_queued = self.streamed = 0
        self.since = 0.0  # when it asked for a full sync (repl-diskless-sync-delay)
        # diskless sync: the payload as `$EOF:<mark>\r\n` + RDB + mark (b'': `$<len>`)
        self.eof_mark = b''
        # after a streamed payload, the stream waits in the backlog for its first
        # REPLCONF ACK (repl_start_cmd_stream_on_ack): no byte follows the mark until
        # it loaded
        self.hold = False
        # a diskless payload written to it: since when it holds part of it unsent
        # (repl_last_partial_write), 0 while it takes all
        self.partial_since = 0.0

    def send(self, data: bytes) -> None:
        """Stream bytes, within the replica class's output-buffer limit."""
        conn = self.conn
        if self.hold:  # (the bytes wait in the backlog: Replication.catch_up)
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


class Replication(FullSync, Failover):
    """The master side (this module's docstring); its full resynchronisations are
    FullSync's (store/replication_full_sync.py), FAILOVER Failover's
    (store/replication_failover.py)."""

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
        # `backlog_start` on (None until a replica first syncs), and more while a
        # replica waits with the stream from an older offset (`_trim`).
        self.backlog: bytearray | None = None
        self.held: set[Replica] = set()  # online replicas waiting for their first ACK
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
            if len(backlog) > self.server.config['repl-backlog-size']:
                self._trim()
        for r in list(self.replicas):
            r.send(data)
        for r in self.syncing:
            if r.start < 0 or r.conn.closing:
                continue
            r.streamed += len(data)  # waiting with its payload: within the class limit too
            self.server.pubsub.limits.check_replica(r.conn, r.streamed)

    def _trim(self) -> None:
        """Drop what the backlog holds past repl-backlog-size, but none a replica still
        waits with: Redis 7's replicas and backlog share one buffer, so a replica waiting for its
        payload keeps the stream since its snapshot there and the backlog outgrows
        repl-backlog-size meanwhile (a reconnecting replica can continue from any of it);
        once it is sent, or the replica gone, the backlog shrinks back (called then)."""
        if self.backlog is None:
            return
        over = len(self.backlog) - self.server.config['repl-backlog-size']
        if over > 0 and (self.syncing or self.held):
            starts = [r.start for r in self.syncing if r.start >= 0]
            starts += [r.start for r in self.held]
            if starts:
                over = min(over, min(starts) - self.backlog_start)
        if over > 0:
            del self.backlog[:over]  # cheap: bytearray moves its start
            self.backlog_start += over

    def catch_up(self, r: Replica) -> None:
        """Send `r` the stream it waited with, from its `start` on; from then on
        `streamed` counts what its transport holds."""
        start, r.start = r.start, -1
        r.streamed = 0
        self.held.discard(r)
        backlog = self.backlog
        if start < 0:
            return
        if backlog is None or start < self.backlog_start:  # (its history was replaced)
            self.server.log(f'The stream for replica {r.name()} is gone', '#')
            r.conn.abort()
            return
        data = bytes(backlog[start - self.backlog_start :])
        self._trim()
        if data:
            r.send(data)

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
        r: Replica | None = conn.replica
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
        if link is not None and not link.up():
            raise RedisError("NOMASTERLINK Can't SYNC while not connected with my master")
        if conn.out:
            raise RedisError('ERR SYNC and PSYNC are invalid with pending output')
        r = self.of(conn)
        self.server.log(f'Replica {r.name()} asks for synchronization')
        if not (psync and self._continue(r, args[1], offset)):
            self.full_syncs += 1
            if psync and args[1] != b'?':
                self.partial_errors += 1
            self._full_sync(r, psync)
        conn.update_gate()  # a replica's commands take the gated path, which checks replies

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
            waited, r.state = r.state, ''
            if r.payload is not None:
                r.payload.close()
                r.payload = None
            if waited == 'wait_bgsave':
                self.payload_unwanted()
                # a streamed payload that waited for it goes on at the others' pace
                self.server.persistence.resume_step()
            if r.start >= 0:
                r.start = -1
                self._trim()
            return
        r.state = ''
        self.replicas.remove(r)
        if r in self.held:
            self.held.discard(r)
            self._trim()
        self.server.log(f'Connection with replica {r.name()} lost.')
        if not self.replicas:
            self.no_replicas_since = time.time()
        self._check_waiting()
        self.refresh_good()

    def writable(self, r: Any) -> None:
        """A replica waiting for or being sent its payload took what its transport held
        (Connection.resume_writing): the next piece of its payload."""
        if r.payload is not None:
            self.pump(r)
        elif r.state == 'wait_bgsave':
            r.partial_since = 0.0
            self.server.persistence.resume_step()

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
            self.catch_up(r)
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
            stream = self.server.persistence.stream
            if stream is not None:
                for r in stream.timed_out(now, self.server.config['repl-timeout']):
                    self.server.log(f'Disconnecting timedout replica (full sync): {r.name()}', '#')
                    r.conn.abort()
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

    # -- this server as a replica (store/replica.py) -------------------------------------

    def replicate(self, host: str, port: int, failover: bool = False) -> bool:
        """REPLICAOF <host> <port>: follow that master from now on (its first sync
        replaces the data). True when it already does. `failover`: FAILOVER's demotion,
        the link continues this server's own history (its replication id and offset)."""
        server = self.server
        link = server.replica_link
        down_since = 0.0  # a master becoming a replica: down since ever (replicationSetMaster)
        if link is not None:
            if (link.host, link.port) == (host, port):
                return True
            # the old master's link ends now if it was up (replicationHandleMasterDisconnection)
            down_since = time.time() if link.up() else link.down_since
            if link.conn is not None:  # the cached master's database: a stream continued
                self.resume_db = link.conn.db  # at the next master goes on in it
            link.stop()
            # the cached master: PSYNC continues the history it had (unless cut mid-way)
            resume = link.replid != '?' and self.backlog is not None
        else:
            resume = self.backlog is not None  # a master continuing its own history
            server.expiry_gate.hold('replica')  # the master's DELs expire keys here
        self.unblock_all()
        self.own_keys.install()
        history.start_proxy(self)
        server.replica_link = MasterLink(
            server, host, port, failover, resume or failover, down_since
        )
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
        server.expiry_gate.release('replica')
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
        link: MasterLink | None = self.server.replica_link
        if link is not None:
            return link.role()
        return [
            b'master',
            self.offset,
            [[r.address().encode(), b'%d' % r.port, b'%d' % r.ack] for r in self.replicas],
        ]
