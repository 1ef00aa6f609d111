"""Message dispatch: the publish path from a PUBLISH (or a keyspace event) to the sockets.

Algorithm
1. Look up the channel's subscriber snapshot and the matching patterns (ChannelStore).
2. Encode each message once: the RESP2 array, and the RESP3 push (the same bytes with `>`
   for `*`) only if a RESP3 subscriber is present. Every subscriber gets the same bytes
   object; nothing is re-encoded per subscriber.
3. Append it to each subscriber's control queue and mark the subscriber dirty. A message to
   the publishing connection itself (when its queue is empty) becomes part of its PUBLISH
   reply, so a RESP3 client that publishes to itself sees message-then-reply as in Redis,
   also inside EXEC.
4. Once per loop turn (`_drain`), each dirty subscriber's queue is joined into one write:
   up to `async-dispatch-quota` items (and ~256 KB) per connection per turn, then the loop
   gets a turn so commands are read and run. A connection that receives commands drains up
   to the quota from its queue into its output first (`drain_before_commands`, called from
   Connection.data_received), so messages already queued precede the replies, but a flood
   of messages cannot hold replies back by more than one quota.
5. Subscribers whose transport buffer is above its high-water mark (`pause_writing`) are
   skipped until `resume_writing`; their backlog stays in the control queue where it is
   counted.

Accounting and limits
- `queued` is the sum of all control-queue bytes, exact. `buffered` is the sum of the
  subscribers' transport-buffer sizes, sampled after each write, on resume_writing, every
  cron tick, and every few ms while a publisher waits. Their sum is what
  `publish-buffer-limit` bounds (0 = no limit).
- A PUBLISH/SPUBLISH that finds subscribers while the sum is above the limit waits: the
  publisher's connection stops reading, the command and everything after it are held in
  `conn.deferred` (Connection.park), and they run, in order, once the sum is at
  or below the limit. The loop and other clients carry on. Publishes inside EXEC and
  keyspace notifications never wait (they cannot be suspended).
- `client-output-buffer-limit pubsub <hard> <soft> <secs>` is checked against a
  subscriber's control queue plus transport buffer when a message is queued and every cron
  tick, with Redis's rules (store/output_limit.py's `exceeded`: hard at once, soft when
  still over it after <secs>); the client is then dropped like Redis's freeClientAsync
  (queue discarded, socket aborted). The normal class is checked by the connection itself
  (store/output_limit.py).

Invariants: a subscriber's queue is non-empty only while it has subscriptions (fully
unsubscribing, RESET and disconnect clear it) or receives client-tracking invalidations
(`push`, `pushes`); `queued == sum(s.qbytes)`; `buffered ==
sum(s.tbytes)`, and `buffering` holds exactly the subscribers with tbytes > 0.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from ..output_limit import OutputLimits, exceeded
from ..resp import NO_REPLY, Raw
from .channel_store import CHANNELS, PATTERNS, SHARD_CHANNELS, ChannelStore, PatternEntry

if TYPE_CHECKING:
    import asyncio

DRAIN_BATCH_BYTES = 256 * 1024
POLL_INTERVAL = 0.005

_SUB_NAMES = (b'subscribe', b'psubscribe', b'ssubscribe')
_UNSUB_NAMES = (b'unsubscribe', b'punsubscribe', b'sunsubscribe')
_MSG_HEAD = (b'*3\r\n$7\r\nmessage\r\n', None, b'*3\r\n$8\r\nsmessage\r\n')

DEFERRED = Raw(b'')  # a handler's "no reply now": the command will run again later

# A channel's or pattern's subscriber snapshot (channel_store.Subscribers): the store types
# its items as Hashable, not knowing this layer; they are this module's Subscribers.
Snapshot: TypeAlias = tuple[Any, ...]


class Subscriber:
    """Per-connection pub/sub state (Dragonfly's SubscribeInfo plus the control queue).

    `sets[kind]` are insertion-ordered dicts used as sets (Redis 7.0 keeps patterns in
    subscription order; UNSUBSCRIBE-all replies in that order)."""

    __slots__ = (
        'hub',
        'conn',
        'sets',
        'queue',
        'qbytes',
        'tbytes',
        'soft_since',
        'doomed',
        'pushes',
    )

    def __init__(self, hub: PubSub, conn: Any) -> None:
        self.hub = hub
        self.conn = conn
        self.sets: tuple[dict[bytes, None], ...] = ({}, {}, {})
        self.queue: deque[bytes] = deque()
        self.qbytes = 0  # bytes in `queue`
        self.tbytes = 0  # sampled transport write-buffer size
        self.soft_since: float | None = None  # when the soft output limit was first seen exceeded
        self.doomed = False  # scheduled for an output-buffer-limit disconnect
        self.pushes = False  # receives client-tracking invalidations (`PubSub.push`)

    def total(self) -> int:
        s = self.sets
        return len(s[0]) + len(s[1]) + len(s[2])

    def drain_before_commands(self) -> None:
        """Called by the connection before it runs newly read commands: move up to the
        dispatch quota of queued messages into its output, ahead of the replies."""
        hub = self.hub
        q = self.queue
        if not self.conn.subscriptions and not self.pushes:
            hub.clear_queue(self)
            return
        data = _take(q, hub.quota)
        n = len(data)
        self.qbytes -= n
        hub.queued -= n
        self.conn.out.append(data)
        if hub.blocked:
            hub.schedule_wake()

    def resume(self) -> None:
        """The transport drained below its low-water mark (Connection.resume_writing)."""
        hub = self.hub
        hub.sample(self)
        if self.queue:
            hub.dirty.append(self)
            hub.schedule_drain()
        if hub.blocked:
            hub.schedule_wake()


def _take(q: deque[bytes], quota: int) -> bytes:
    """Join up to `quota` items (and about DRAIN_BATCH_BYTES) from the front of deque q."""
    if len(q) <= quota:
        if len(q) == 1:
            data = q[0]
        else:
            data = b''.join(q)
        if len(data) <= DRAIN_BATCH_BYTES:
            q.clear()
            return data
    parts: list[bytes] = []
    size = 0
    pop = q.popleft
    while q and len(parts) < quota and size < DRAIN_BATCH_BYTES:
        item = pop()
        parts.append(item)
        size += len(item)
    return parts[0] if len(parts) == 1 else b''.join(parts)


def _bulk(b: bytes) -> bytes:
    return b'$%d\r\n%s\r\n' % (len(b), b)


_SILENT = ('off', 'skip')  # CLIENT REPLY modes in which the current command sends no reply


def _push(conn: Any, frames: bytes) -> Raw:
    """(Un)subscribe confirmations as a command's reply. They are push messages: Redis
    sends them even while CLIENT REPLY OFF or SKIP silences the command's replies
    (networking.c's CLIENT_PUSHING), in RESP2 as in RESP3, so they go straight to the
    output; a RESP3 subscriber with replies off would otherwise wait for them forever.
    Published messages already bypass replies (the queue writes to the transport)."""
    if conn.reply_mode in _SILENT:
        conn.out.append(frames)
        return NO_REPLY
    return Raw(frames)


class PubSub:
    """The server's pub/sub hub: ChannelStore + dispatch + backpressure."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.store = ChannelStore()
        self.dirty: list[Subscriber] = []  # subscribers with queued messages to write
        self.drain_handle: asyncio.Handle | None = None
        self.wake_handle: asyncio.Handle | None = None
        self.poll_handle: asyncio.TimerHandle | None = None
        self.queued = 0
        self.buffered = 0
        self.buffering: set[Subscriber] = set()
        self.soft_watch: set[Subscriber] = set()
        self.blocked: deque[Any] = deque()  # publisher connections waiting for the limit
        # a subscriber's own messages, during its PUBLISH
        self.origin_out: list[bytes] | None = None
        # counters for INFO
        self.messages = 0  # deliveries (receivers summed over publishes)
        self.publisher_waits = 0  # times a PUBLISH had to wait
        # client-output-buffer-limit, every class (the hub created first, connections after)
        self.limits = OutputLimits(server)
        self.apply_config()
        server.disconnect_hooks.append(self.on_disconnect)
        server.reset_hooks.append(self.on_reset)
        server.cron_hooks.append(self.on_cron)

    def apply_config(self) -> None:
        cfg = self.server.config
        self.quota: int = cfg['async-dispatch-quota']
        self.limit: int = cfg['publish-buffer-limit']
        self.limits.apply_config()
        hard, soft, _ = self.limits.pubsub
        limits = [x for x in (hard, soft) if x]
        self.obl_check: float = min(limits) if limits else float('inf')

    # -- subscribe / unsubscribe -------------------------------------------------------------

    def subscriber(self, conn: Any) -> Subscriber:
        sub: Subscriber | None = conn.pubsub
        if sub is None:
            sub = conn.pubsub = Subscriber(self, conn)
        return sub

    def _count(self, sub: Subscriber, kind: int) -> int:
        s = sub.sets
        return len(s[2]) if kind == SHARD_CHANNELS else len(s[0]) + len(s[1])

    def _set_total(self, conn: Any, sub: Subscriber) -> None:
        total = sub.total()
        was = conn.subscriptions
        conn.subscriptions = total
        if bool(was) != bool(total):
            conn.update_gate()
        if not total and not sub.pushes:
            self.clear_queue(sub)

    def subscribe(self, conn: Any, kind: int, keys: Iterable[bytes]) -> Raw:
        """(P|S)SUBSCRIBE: one confirmation per argument, with the running count."""
        sub = self.subscriber(conn)
        mine = sub.sets[kind]
        head = (b'*3\r\n' if conn.proto == 2 else b'>3\r\n') + _bulk(_SUB_NAMES[kind])
        updater = None
        frames = []
        for key in keys:
            if key not in mine:
                mine[key] = None
                if updater is None:
                    updater = self.store.updater(kind, sub, True)
                updater.record(key)
            frames.append(b'%s%s:%d\r\n' % (head, _bulk(key), self._count(sub, kind)))
        if updater is not None:
            updater.apply()
        self._set_total(conn, sub)
        return _push(conn, b''.join(frames))

    def unsubscribe(
        self, conn: Any, kind: int, keys: Sequence[bytes] | None, notify: bool = True
    ) -> Raw | None:
        """(P|S)UNSUBSCRIBE; keys None means all of this kind. With nothing to unsubscribe
        from, Redis still replies once, with a null channel and the count."""
        sub: Subscriber | None = conn.pubsub
        mine = sub.sets[kind] if sub is not None else {}
        if keys is None:
            keys = list(mine)
            if not keys:
                if not notify:
                    return None
                null = b'$-1\r\n' if conn.proto == 2 else b'_\r\n'
                head = b'*3\r\n' if conn.proto == 2 else b'>3\r\n'
                count = self._count(sub, kind) if sub is not None else 0
                return _push(
                    conn, b'%s%s%s:%d\r\n' % (head, _bulk(_UNSUB_NAMES[kind]), null, count)
                )
        head = (b'*3\r\n' if conn.proto == 2 else b'>3\r\n') + _bulk(_UNSUB_NAMES[kind])
        updater = None
        frames = []
        for key in keys:
            if key in mine:
                del mine[key]
                if updater is None:
                    updater = self.store.updater(kind, sub, False)
                updater.record(key)
            if notify:
                frames.append(
                    b'%s%s:%d\r\n'
                    % (head, _bulk(key), self._count(sub, kind) if sub is not None else 0)
                )
        if updater is not None:
            updater.apply()
        if sub is not None:
            self._set_total(conn, sub)
        return _push(conn, b''.join(frames)) if notify else None

    def forget(self, conn: Any) -> None:
        """Leave no trace of `conn` (RESET, disconnect): cost is what it holds."""
        sub: Subscriber | None = conn.pubsub
        if sub is None:
            return
        for kind in (CHANNELS, PATTERNS, SHARD_CHANNELS):
            if sub.sets[kind]:
                self.unsubscribe(conn, kind, None, notify=False)
        self.clear_queue(sub)
        if sub.tbytes:
            self.buffered -= sub.tbytes
            sub.tbytes = 0
            self.buffering.discard(sub)
        sub.soft_since = None
        self.soft_watch.discard(sub)

    def clear_queue(self, sub: Subscriber) -> None:
        if sub.queue:
            self.queued -= sub.qbytes
            sub.qbytes = 0
            sub.queue.clear()
            if self.blocked:
                self.schedule_wake()

    def on_reset(self, conn: Any) -> None:
        self.forget(conn)

    def on_disconnect(self, conn: Any) -> None:
        self.forget(conn)
        if conn.deferred is not None:
            try:
                self.blocked.remove(conn)
            except ValueError:
                pass
            conn.deferred = None

    # -- publish -------------------------------------------------------------------------------

    def publish(self, channel: bytes, message: bytes, kind: int = CHANNELS) -> int:
        """Internal publish (keyspace notifications; a message another cluster node
        published, to a channel or a shard channel): never waits. Returns receivers."""
        return self._deliver(channel, message, kind, None)

    def publish_batch(self, channel: bytes, messages: Sequence[bytes]) -> int:
        """Publish several messages on one channel as one coalesced dispatch: one lookup,
        and each subscriber gets one queue item holding all its frames (used for batches
        of `__keyevent@N__:expired`). Returns receivers summed over the messages."""
        if not messages:
            return 0
        if len(messages) == 1:
            return self._deliver(channel, messages[0], CHANNELS, None)
        store = self.store
        subs = store.subscribers(channel, CHANNELS)
        pats = store.matching_patterns(channel) if store.counts[PATTERNS] else None
        if subs is None and not pats:
            return 0
        n = 0
        count = len(messages)
        bodies = [_bulk(m) for m in messages]
        if subs:
            head = _bulk(b'message') + _bulk(channel)
            self._fanout(
                subs,
                b''.join([b'*3\r\n' + head + m for m in bodies]),
                b''.join([b'>3\r\n' + head + m for m in bodies]),
                None,
                count,
            )
            n += len(subs)
        if pats:
            cb = _bulk(channel)
            for e in pats:
                head = _bulk(b'pmessage') + _bulk(e.pattern) + cb
                self._fanout(
                    e.subs,
                    b''.join([b'*4\r\n' + head + m for m in bodies]),
                    b''.join([b'>4\r\n' + head + m for m in bodies]),
                    None,
                    count,
                )
                n += len(e.subs)
        self._after_fanout()
        return n * len(messages)

    def push(self, conn: Any, frame: bytes) -> None:
        """Queue one message for one connection outside any subscription: a client
        tracking invalidation (store/tracking.py), which takes the same control queue,
        dispatch quota, backpressure and output-buffer limits as published messages. Its
        queue then survives having no subscriptions (`pushes`)."""
        s = self.subscriber(conn)
        s.pushes = True
        q = s.queue
        if not q:
            self.dirty.append(s)
        q.append(frame)
        n = len(frame)
        self.queued += n
        b = s.qbytes = s.qbytes + n
        if b + s.tbytes > self.obl_check:
            self._check_output_limit(s, time.time())
        evictor = conn.server.evictor
        if evictor.clients_limit and b + s.tbytes > evictor.clients_limit >> 4:
            # maxmemory-clients as Redis checks it once a redirection grew the client
            # (updateClientMemUsageAndBucket, then beforeSleep): not at the next cron
            evictor.evict_clients()
        self.messages += 1
        self._after_fanout()

    def publish_command(self, conn: Any, args: list[bytes], kind: int) -> int | Raw:
        """PUBLISH / SPUBLISH from a client: may wait for publish-buffer-limit. One lookup
        of the receivers serves both the limit check and the delivery."""
        channel = args[1]
        store = self.store
        subs = store.subscribers(channel, kind)
        pats = (
            store.matching_patterns(channel)
            if kind == CHANNELS and store.counts[PATTERNS]
            else None
        )
        if subs is None and not pats:
            return 0
        limit = self.limit
        if (
            limit
            and self.queued + self.buffered > limit
            and not conn.in_exec
            and conn.transport is not None
            and not conn.closing
        ):
            self._block(conn, args)
            return DEFERRED
        origin = conn.pubsub
        if origin is None or not origin.total():
            return self._send(channel, args[2], kind, None, subs, pats)
        mine: list[bytes]
        self.origin_out = mine = []
        n = self._send(channel, args[2], kind, origin, subs, pats)
        self.origin_out = None
        if mine:  # Redis writes a client's own messages before its PUBLISH reply
            if conn.reply_mode in _SILENT:  # ... and the messages even when it sends no reply
                conn.out.append(b''.join(mine))
                return n
            mine.append(b':%d\r\n' % n)
            return Raw(b''.join(mine))
        return n

    def _deliver(self, channel: bytes, message: bytes, kind: int, origin: Subscriber | None) -> int:
        store = self.store
        subs = store.subscribers(channel, kind)
        pats = (
            store.matching_patterns(channel)
            if kind == CHANNELS and store.counts[PATTERNS]
            else None
        )
        if subs is None and not pats:
            return 0
        return self._send(channel, message, kind, origin, subs, pats)

    def _send(
        self,
        channel: bytes,
        message: bytes,
        kind: int,
        origin: Subscriber | None,
        subs: Snapshot | None,
        pats: list[PatternEntry] | None,
    ) -> int:
        """Encode one message for `subs` (a channel's snapshot or None) and for each
        matching pattern in `pats`, and queue it; returns the receivers."""
        n = 0
        if subs:
            self._fanout(
                subs,
                b'%s$%d\r\n%s\r\n$%d\r\n%s\r\n'
                % (_MSG_HEAD[kind], len(channel), channel, len(message), message),
                None,
                origin,
                1,
            )
            n = len(subs)
        if pats:
            tail = b'$%d\r\n%s\r\n$%d\r\n%s\r\n' % (len(channel), channel, len(message), message)
            for e in pats:
                p = e.pattern
                self._fanout(
                    e.subs,
                    b'*4\r\n$8\r\npmessage\r\n$%d\r\n%s\r\n%s' % (len(p), p, tail),
                    None,
                    origin,
                    1,
                )
                n += len(e.subs)
        self._after_fanout()
        return n

    def _fanout(
        self,
        subs: Snapshot,
        m2: bytes,
        m3: bytes | None,
        origin: Subscriber | None,
        count: int,
    ) -> None:
        """Queue one encoded message (or a batch of `count`) for every subscriber: m2 is
        the RESP2 encoding, m3 the RESP3 one (None: derived from m2 on first need, which
        for a single frame is m2 with '>' for its leading '*')."""
        size = len(m2)
        dirty = self.dirty
        check = self.obl_check
        queued = 0
        s: Subscriber
        for s in subs:
            q = s.queue
            conn = s.conn
            if not q:
                if s is origin:
                    if conn.proto != 2 and m3 is None:
                        m3 = b'>' + m2[1:]
                    self.origin_out.append(  # type: ignore[union-attr]  # a list: origin publishes
                        m2 if conn.proto == 2 else m3  # type: ignore[arg-type]  # RESP3: m3 set above
                    )
                    continue
                dirty.append(s)
            if conn.proto == 2:
                q.append(m2)
            else:
                if m3 is None:
                    m3 = b'>' + m2[1:]
                q.append(m3)
            queued += size
            b = s.qbytes = s.qbytes + size
            if b + s.tbytes > check:
                self._check_output_limit(s, time.time())
        self.queued += queued
        self.messages += len(subs) * count

    def _after_fanout(self) -> None:
        if self.dirty and self.drain_handle is None:
            self.drain_handle = self.server.loop.call_soon(self._drain)
        if self.soft_watch:
            doomed = [s for s in self.soft_watch if s.doomed]
            for s in doomed:
                self._disconnect(s)

    # -- draining ------------------------------------------------------------------------------

    def schedule_drain(self) -> None:
        if self.drain_handle is None:
            self.drain_handle = self.server.loop.call_soon(self._drain)

    def _drain(self) -> None:
        """Once per loop turn: one coalesced write per dirty subscriber."""
        self.drain_handle = None
        dirty = self.dirty
        if not dirty:
            return
        self.dirty = again = []
        quota = self.quota
        moved = 0
        stats = self.server.stats
        for s in dirty:
            q = s.queue
            if not q:
                continue
            conn = s.conn
            transport = conn.transport
            if conn.write_paused or transport is None or conn.closing:
                continue  # resume_writing (or disconnect) takes it from here
            if not conn.subscriptions and not s.pushes:
                self.clear_queue(s)
                continue
            if conn.out:  # its replies still wait for Server.flush_pending: they go first
                conn.flush()
            data = _take(q, quota)
            n = len(data)
            s.qbytes -= n
            moved += n
            transport.write(data)
            stats.net_output_bytes += n
            self.sample(s)
            if q:
                again.append(s)
        self.queued -= moved
        if again:
            self.drain_handle = self.server.loop.call_soon(self._drain)
        if self.blocked:
            self._wake()

    def sample(self, s: Subscriber) -> None:
        """Refresh a subscriber's transport-buffer size."""
        transport = s.conn.transport
        t = transport.get_write_buffer_size() if transport is not None else 0
        if t != s.tbytes:
            self.buffered += t - s.tbytes
            s.tbytes = t
            if t:
                self.buffering.add(s)
            else:
                self.buffering.discard(s)

    # -- output buffer limits ------------------------------------------------------------------

    def _check_output_limit(self, s: Subscriber, now: float) -> None:
        """Redis's checkClientOutputBufferLimits for the pubsub class. A client over the
        limit is marked and dropped after the current fan-out (the snapshot being iterated
        stays valid either way)."""
        if s.doomed:
            return
        over, s.soft_since = exceeded(s.qbytes + s.tbytes, self.limits.pubsub, s.soft_since, now)
        if s.soft_since is not None:
            self.soft_watch.add(s)
        else:
            self.soft_watch.discard(s)
        if over:
            s.doomed = True
            self.soft_watch.add(s)

    def _disconnect(self, s: Subscriber) -> None:
        conn = s.conn
        self.soft_watch.discard(s)
        # logs the client as it is, then aborts its socket
        self.limits.disconnect(conn)
        self.forget(conn)
        s.doomed = False
        if conn.deferred is not None:
            self.on_disconnect(conn)

    # -- backpressure on publishers -------------------------------------------------------------

    def _block(self, conn: Any, args: list[bytes]) -> None:
        conn.park([args])
        conn.transport.pause_reading()
        self.blocked.append(conn)
        self.publisher_waits += 1
        cmd = self.server.commands.get(b'publish' if args[0].lower() == b'publish' else b'spublish')
        if cmd is not None:
            cmd.calls -= 1  # it is counted when it runs
        if self.poll_handle is None:
            self.poll_handle = self.server.loop.call_later(POLL_INTERVAL, self._poll)

    def _poll(self) -> None:
        self.poll_handle = None
        for s in list(self.buffering):
            self.sample(s)
        self._wake()
        if self.blocked:
            self.poll_handle = self.server.loop.call_later(POLL_INTERVAL, self._poll)

    def schedule_wake(self) -> None:
        if self.wake_handle is None:
            self.wake_handle = self.server.loop.call_soon(self._wake)

    def _wake(self) -> None:
        """Let waiting publishers run, oldest first, while the queued bytes are at or
        below the limit (each resumed PUBLISH checks again and may wait again)."""
        self.wake_handle = None
        blocked = self.blocked
        while blocked:
            limit = self.limit
            if limit and self.queued + self.buffered > limit:
                return
            conn = blocked.popleft()
            if conn.deferred is None:
                continue
            conn.resume()
            if conn.deferred is None and not conn.closing and conn.transport is not None:
                conn.transport.resume_reading()

    # -- housekeeping ----------------------------------------------------------------------------

    def on_cron(self, now: float) -> None:
        for s in list(self.buffering):
            self.sample(s)
        if self.soft_watch:
            for s in list(self.soft_watch):
                if not s.doomed:
                    self.sample(s)
                    self._check_output_limit(s, now)
                if s.doomed:
                    self._disconnect(s)
        if self.blocked:
            self._wake()

    # -- introspection ----------------------------------------------------------------------------

    def reset_stats(self) -> None:
        """CONFIG RESETSTAT: the counters among info_fields (the others are states)."""
        self.messages = self.publisher_waits = self.limits.disconnections = 0

    def info_fields(self) -> list[tuple[str, int]]:
        counts = self.store.counts
        return [
            ('pubsub_channels', counts[CHANNELS]),
            ('pubsub_patterns', counts[PATTERNS]),
            ('pubsubshard_channels', counts[SHARD_CHANNELS]),
            ('pubsub_queued_bytes', self.queued + self.buffered),
            ('pubsub_control_queue_bytes', self.queued),
            ('pubsub_transport_buffer_bytes', self.buffered),
            ('pubsub_blocked_publishers', len(self.blocked)),
            ('pubsub_publisher_waits', self.publisher_waits),
            ('pubsub_messages_delivered', self.messages),
            ('client_output_buffer_limit_disconnections', self.limits.disconnections),
        ]
