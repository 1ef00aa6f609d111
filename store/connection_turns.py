"""Fair processing: one connection's turns of the event loop, and its output backpressure.

A connection runs at most about TURN_NS of commands per turn of the event loop: a read of
more than SLICE commands runs in slices of SLICE, and once the turn's time is spent the
rest (frames, or unparsed bytes in the exact parser's 16 KB reads) waits in `backlog` for
the next turn (call_soon). Reading is paused meanwhile and later reads queue behind the
backlog, so order holds whoever resumes reading. A client whose unread replies exceed
OUT_PAUSE_BYTES in the transport is not read, nor its backlog run, until they drain
(Connection.resume_writing): TCP backpressure bounds what it makes the server hold; not
while client-output-buffer-limit sets a normal-class limit, which then bounds it as in
Redis (store/output_limit.py). A parked connection keeps its own rules (Connection.park).

Invariants: while `backlog` is not None reading is paused and every new read is appended
to it; its items run front to back, a held item going back to the front; `turn_handle`
is the one scheduled next turn. None of this runs on the hot path: a read of SLICE or
fewer commands (the -P 16 case) runs whole in Connection.run.

`ConnectionTurns` is a part of store/connection.py's Connection (a mixin with no state
of its own: the fields are Connection's `__slots__`, declared below for the type checker
only).
"""

import time
from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

    from .output_limit import OutputLimits

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


class ConnectionTurns:
    if TYPE_CHECKING:  # Connection's fields and methods this part uses
        server: Any
        transport: asyncio.Transport | None
        closing: bool
        write_paused: bool
        backlog: deque[Any] | None  # reads (bytes) and [frames, next index] lists, in order
        turn_handle: asyncio.Handle | None
        out_full: bool
        read_paused: bool
        out_limit: OutputLimits | None
        subscriptions: int
        deferred: list[list[bytes]] | None
        replica: Any  # store/replication.py's ReplicaState (a layer above)

        def run(self, frames: list[list[bytes]]) -> None: ...

        def flush(self) -> None: ...

        def _consume(self, data: bytes, deadline: int) -> bool: ...
    else:  # no slots of its own. Hidden from mypy, which refuses assignments to fields not in
        # a class's __slots__ and cannot tell that these fields are Connection's
        __slots__ = ()

    def _run_slices(self, frames: list[list[bytes]], i: int, deadline: int) -> bool:
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

    def _may_yield(self) -> bool:
        """Whether the rest may wait for a later turn: not while a script is busy, whose
        poll feeds reads to be answered now (-BUSY), not after it ends (scripting/busy.py)."""
        server = self.server
        return server.busy.run is None and server.loop is not None and self.transport is not None

    def _hold(self, item: bytes | list[Any]) -> None:
        """Put `item` (unparsed bytes, or [frames, next index]) first in the backlog, stop
        reading, and schedule the next turn (unless unread replies hold it: resume_writing)."""
        if self.backlog is None:
            self.backlog = deque()
        self.backlog.appendleft(item)
        self._pause_reading()
        if not self.out_full:
            self._schedule_turn()

    def _schedule_turn(self) -> None:
        if self.turn_handle is None:
            self.turn_handle = self.server.loop.call_soon(self._next_turn)

    def _next_turn(self) -> None:
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

    def _pause_reading(self) -> None:
        """Stop reading (again: store/pubsub may have resumed it meanwhile; uvloop's
        pause_reading does nothing when reading is paused)."""
        self.read_paused = True
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.pause_reading()

    def _resume_reading(self) -> None:
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

    def _check_out_full(self) -> None:
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
        transport: asyncio.Transport = self.transport  # type: ignore[assignment]  # flush has one
        if transport.get_write_buffer_size() > OUT_PAUSE_BYTES and not transport.is_closing():
            self.out_full = True
            self._pause_reading()
