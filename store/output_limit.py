"""client-output-buffer-limit: dropping a client whose unread replies pile up, as Redis does.

`client-output-buffer-limit <class> <hard> <soft> <secs>` bounds what one client can make the
server hold for it: a client whose queued output reaches <hard> bytes, or stays at or over
<soft> bytes for more than <secs> seconds, is disconnected ("scheduled to be closed ASAP for
overcoming of output buffer limits", logged as a warning with its CLIENT LIST line). A 0
limit is no limit. Redis's defaults: `normal 0 0 0`, `pubsub 32mb 8mb 60`.

Classes: a client with subscriptions is in the pubsub class, whose queue and checks live in
store/pubsub/dispatch.py; a replica is in the replica class, checked as its stream is sent
(store/replication.py); every other client is in the normal class, checked here. All use
`exceeded`, Redis's checkClientOutputBufferLimits, and `disconnect`.

What is measured (normal class): the bytes the connection holds and has not written, i.e. its
`out` list (replies of the commands just run) plus the transport's write buffer (earlier
replies the socket did not take), less what Redis would keep in its 16 KB static reply
buffer (`reply_memory`): Redis's limits count only its reply list, which CLIENT LIST shows
as omem, and so do these. Redis rounds list nodes up to 16 KB: limits of a few tens of KB
trip at slightly different points here and there.

When it is checked: when replies are about to be written, i.e. once per batch of commands
(Connection.flush), before they are joined and handed to the transport. Redis checks when a
reply is added, and only then: a client that stops sending commands is not dropped however
long it stays over the soft limit, here as there. The soft-limit clock counts whole seconds
of the wall clock, as Redis's server.unixtime does. Checking before the write means a batch
whose replies would cross the hard limit is dropped whole, before it is copied into one
buffer: memory stays within the limit plus one batch's reply references (a GET's reply
refers to the stored value, it is not a copy). Redis stops running a client's commands as
soon as it is scheduled to close; here the rest of the batch being run still runs (their
replies are discarded with the others).

A reply built item by item (HRANDFIELD, SRANDMEMBER and ZRANDMEMBER with a negative
count, KEYS) is checked before it is returned, or built (`drop_for_reply`): one
that would take the client over its hard limit drops it, as Redis's loop stops part way
once the limit has closed the client, rather than being built (or refused as too big).

Cost: none per command. With no normal-class limit, Connection.flush tests one slot that is
None; with one, each flush sums the lengths of the batch's reply pieces and reads the
transport's buffer size.
"""

import time
from typing import Any

_NO_LIMIT = (0, 0, 0)
REPLY_BUFFER = 16384  # PROTO_REPLY_CHUNK_BYTES: the static reply buffer of a Redis client
UNAUTHENTICATED_LIMIT = 1024  # what a client that has not authenticated may have queued


def reply_memory(unsent: int, buffered: int) -> tuple[int, int]:
    """Redis's view of what a client has not been sent: (obl, omem) of CLIENT LIST. Replies
    fill the 16 KB static buffer (obl) first while nothing else waits to be written; the rest
    (omem) is what the output-buffer limits count. `unsent`: replies not yet handed to the
    transport; `buffered`: bytes already waiting (transport buffer, pub/sub queue)."""
    static = min(unsent, REPLY_BUFFER) if not buffered else 0
    return static, unsent - static + buffered


def exceeded(
    used: int, limits: tuple[int, int, int], since: float | None, now: float
) -> tuple[bool, float | None]:
    """checkClientOutputBufferLimits for one class: `used` queued bytes against `limits`
    (hard, soft, soft seconds); `since` is when the client was first seen at or over the soft
    limit (None: it was not). Returns (over, since): over the hard limit at once, over the
    soft one once it has stayed there for more than <secs> (the first time only starts the
    clock); under the soft limit, the clock stops."""
    hard, soft, secs = limits
    over = bool(hard and used >= hard)
    if soft and used >= soft:
        if since is None:
            since = now
        elif now - since > secs:
            over = True
    else:
        since = None
    return over, since


class OutputLimits:
    """The limits in force, the normal class's check, and the disconnect both classes share.

    Connections hold this object in `out_limit` while a normal-class limit is set, None
    otherwise, so an unlimited server's flush tests a slot and nothing else."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.normal: tuple[int, int, int] = _NO_LIMIT
        self.normal_floor = 0  # the lower of the normal class's nonzero limits
        self.pubsub: tuple[int, int, int] = _NO_LIMIT
        self.replica: tuple[int, int, int] = _NO_LIMIT
        self.disconnections = 0  # INFO client_output_buffer_limit_disconnections
        self.apply_config()

    def apply_config(self) -> None:
        limits = self.server.config['client-output-buffer-limit']
        self.normal = limits['normal']
        self.normal_floor = min([x for x in self.normal[:2] if x], default=0)
        self.pubsub = limits['pubsub']
        self.replica = limits['slave']
        for conn in self.server.clients.values():
            conn.out_limit = self.gate(conn)
            if conn.out_limit is None:
                conn.obl_soft_since = None

    def gate(self, conn: Any) -> 'OutputLimits | None':
        """What a connection's `out_limit` is: this object while a normal limit is set or
        the connection has not authenticated, else None."""
        hard, soft, _ = self.normal
        return self if hard or soft or not conn.authenticated else None

    def check(self, conn: Any) -> bool:
        """Called by Connection.flush before it writes `conn.out`: True when the client went
        over the normal class's limit, or an unauthenticated client over 1 KB of unsent
        replies beyond the static buffer (checkClientOutputBufferLimits: such a client must
        not make the server hold what it does not read), and was disconnected (its replies
        discarded)."""
        if conn.subscriptions:
            return False  # the pubsub class (store/pubsub/dispatch.py)
        if conn.is_replica():
            return False  # the replica class (check_replica)
        used = reply_memory(sum(map(len, conn.out)), conn.transport.get_write_buffer_size())[1]
        if not conn.authenticated:
            if used > UNAUTHENTICATED_LIMIT:
                self.disconnect(conn)
                return True
            if not (self.normal[0] or self.normal[1]):
                return False  # no normal-class limit
        if used < self.normal_floor and conn.obl_soft_since is None:
            return False  # under both limits, no soft-limit clock to stop: the usual case
        over, conn.obl_soft_since = exceeded(
            used, self.normal, conn.obl_soft_since, int(time.time())
        )
        if over:
            self.disconnect(conn)
        return over

    def drop_for_reply(self, conn: Any, size: int, deferred: bool = False) -> bool:
        """A normal-class client about to be given a reply of `size` bytes that takes it
        over its hard limit: disconnected now, True (the reply need not be built). Redis
        builds such replies piece by piece and stops once the limit has closed the client
        (HRANDFIELD, KEYS ... check CLIENT_CLOSE_ASAP as they go). `deferred`: Redis sends
        the reply's length after its items (addReplyDeferredLen, as KEYS does), and all of
        it then goes to the reply list the limits count, none to the static buffer."""
        hard = self.normal[0]
        if not hard or conn.transport is None or conn.subscriptions or conn.is_replica():
            return False  # (a script's or the AOF's client: Redis never frees a fake one)
        unsent = sum(map(len, conn.out))
        buffered = conn.transport.get_write_buffer_size()
        if deferred:
            used = reply_memory(unsent, buffered)[1] + size
        else:
            used = reply_memory(unsent + size, buffered)[1]
        if used < hard:
            return False
        self.disconnect(conn)
        return True

    def check_replica(self, conn: Any, queued: int) -> bool:
        """The replica class, for a replica's stream: `queued` is what of it the
        transport holds (its RDB payload does not count, as Redis sends it apart). True
        when the replica was disconnected."""
        limits = self.replica
        hard = limits[0]
        if hard and queued >= hard:
            backlog = self.server.config['repl-backlog-size']
            if hard < backlog:
                # checkClientOutputBufferLimits: a replica's hard limit under
                # repl-backlog-size is raised to it (a partial resync would succeed, then
                # the limit drop the replica; Redis's replicas share the backlog's memory)
                limits = (backlog, *limits[1:])
        over, conn.obl_soft_since = exceeded(queued, limits, conn.obl_soft_since, int(time.time()))
        if over:
            self.disconnect(conn)
        return over

    def disconnect(self, conn: Any) -> None:
        """freeClientAsync after an output-buffer limit: log the client as it was, then drop
        what it has queued and close the socket at once (abort: its transport buffer is not
        written)."""
        self.disconnections += 1
        self.server.log(
            f'Client {conn.info_line()} scheduled to be closed ASAP for '
            f'overcoming of output buffer limits.',
            '#',
        )
        conn.abort()
