"""CLIENT PAUSE and FAILOVER's write pause: the clients held, and what a pause freezes.

One `ClientPause` per server (server.pause); CLIENT PAUSE and CLIENT UNPAUSE
(store/commands/client.py), FAILOVER (store/replication.py) and SHUTDOWN's wait for its
replicas (store/shutdown.py) drive it, and the gated path asks it whether a command must
wait (`holds`) and parks the client (`hold`).
"""

from typing import Any

from ..clock import now_ms
from ..command_table import Command
from ..context import Client
from .gates import may_replicate


def _delay(end: int) -> float:
    """Seconds until `end` (ms), capped at a day: `check` re-arms for a longer pause."""
    return min(max(end - now_ms(), 0) / 1000 + 0.001, 86400.0)


class ClientPause:
    """CLIENT PAUSE (Redis 7.0's pauseClients): while `kind` is 'write' or 'all', the
    gated path holds the commands it covers (`holds`): the connection is parked with the
    command, in the order clients were held, and unpausing (CLIENT UNPAUSE, or the timeout)
    resumes them in that order. Every connection takes the gated path while a pause is on
    (Connection.update_gate), so the hot path pays nothing for this.

    A pause has two purposes, as in Redis: CLIENT PAUSE's (`client_kind`, until `end`
    or CLIENT UNPAUSE) and FAILOVER's write pause (`during_failover`, until the failover
    ends). `kind` is the stronger of the two; one ending leaves the other in force.

    While paused the dataset stays as it is: the pause holds expiry back (store/expiry/
    gate.py: no active expiry, and lazy expiry answers as if an expired key were gone
    without deleting it), and eviction does not run (store/memory/eviction.py asks
    `active()`)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.kind: str | None = None  # 'write' or 'all' while paused
        self.client_kind: str | None = None  # CLIENT PAUSE's
        self.end = 0  # ms since the epoch: CLIENT PAUSE's end
        self.during_failover = False  # FAILOVER's write pause
        self.held: list[Client] = []  # parked connections, first held first resumed
        self.timer: Any = None  # (an asyncio TimerHandle)
        server.disconnect_hooks.append(self.forget)

    def pause(self, end: int, kind: str) -> None:
        """pauseClients for CLIENT PAUSE: it never weakens nor shortens one in force."""
        if self.client_kind is None or kind == 'all':
            self.client_kind = kind
        self.end = max(self.end, end)
        if self.timer is not None:
            self.timer.cancel()
        if self.server.loop is not None:
            self.timer = self.server.loop.call_later(_delay(self.end), self.check)
        self._update()

    def unpause(self) -> None:
        """unpauseClients for CLIENT PAUSE (CLIENT UNPAUSE, or its end)."""
        if self.client_kind is None:
            return
        self.client_kind = None
        self.end = 0
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self._update()

    def failover(self, on: bool) -> None:
        """FAILOVER's write pause, from its start to its end."""
        self.during_failover = on
        self._update()

    def _update(self) -> None:
        """`kind` from the purposes in force: the dataset frozen when a pause begins,
        thawed when the last one ends, and the held commands run again, in order, when
        it ends or weakens (those a pause still covers are held again)."""
        kind = self.client_kind or ('write' if self.during_failover else None)
        was, self.kind = self.kind, kind
        if kind == was:
            return
        server = self.server
        if was is None:
            server.expiry_gate.hold('pause')
            server.update_gates()
            return
        if kind == 'all':  # stronger: what is held stays held
            return
        if kind is None:
            server.expiry_gate.release('pause')
            server.update_gates()
        held, self.held = self.held, []
        if server.loop is not None:  # as Redis reprocesses them, after the current command
            server.loop.call_soon(self._resume, held)
        else:
            self._resume(held)

    def _resume(self, held: list[Client]) -> None:
        link = self.server.replica_link
        for conn in held:
            if self.kind == 'all':  # paused again meanwhile: the rest wait on, in order
                self.held.append(conn)
                continue
            if link is not None and link.is_master(conn):
                link.resume_held()  # the master client has no transport of its own
            elif not conn.closing and conn.transport is not None:
                conn.resume(None)  # a command the pause still covers is held again
            else:
                conn.deferred = None
                conn.update_gate()

    def check(self) -> None:
        """The pause's timer: unpause once its end has passed."""
        self.timer = None
        self.active()
        if self.client_kind is not None and self.timer is None and self.server.loop is not None:
            self.timer = self.server.loop.call_later(_delay(self.end), self.check)

    def active(self) -> bool:
        """checkClientPauseTimeoutAndReturnIfPaused."""
        if self.client_kind is not None and self.end < now_ms():
            self.unpause()
        return self.kind is not None

    def holds(self, conn: Client, cmd: Command, args: list[bytes]) -> bool:
        """Whether `cmd` must wait (processCommand's pause test): everything under ALL,
        write and may-replicate commands (and EXEC of such) under WRITE; monitors, which
        are replicas for Redis, are never held."""
        if not self.active() or conn in self.server.monitors:
            return False
        if self.kind == 'all':
            return True
        if cmd.name == 'exec' and conn.multi is not None:
            return any(may_replicate(self.server, c_, a_) for c_, a_ in conn.multi)
        return may_replicate(self.server, cmd, args)

    def hold(self, conn: Client, cmd: Command, args: list[bytes]) -> None:
        """Park `conn` with `args` until the pause ends (blockPostponeClient); CLIENT
        LIST shows the command as its last one already, as Redis does."""
        conn.last_cmd = cmd
        conn.park([args])
        self.held.append(conn)

    def forget(self, conn: Client) -> None:
        if conn in self.held:
            self.held.remove(conn)

    def blocked(self) -> int:
        """Held clients, which INFO counts in blocked_clients."""
        return len(self.held)
