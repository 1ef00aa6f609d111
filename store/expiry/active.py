"""The active-expiry timer: run the keyspace's deletion of due keys at their deadline, not
when a sampler finds them.

This module only decides when the step runs and with what budget; deleting keys, counting
them and raising their events is the keyspace's (`Keyspace.expire_due`), the one place keys
are deleted at their deadline.

One timer is armed at the earliest deadline across all shards (`reschedule` moves it
earlier when a write sets an earlier deadline; the keyspace compares with `next_deadline`
inline before calling). When it fires, the step asks the keyspace to delete due keys within
the time budget (`active-expire-budget-us`, default 1 ms); if work remains it runs again on
the next loop turn, so clients are served between slices of a mass expiry, otherwise it
re-arms at the next deadline. Nothing runs while nothing is due.

Invariant: `next_deadline` is the deadline the timer is armed for (inf when none, 0 while a
continuation is queued), and only this object writes it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from ..clock import now_ms

INF = float('inf')


class ActiveExpiry:
    def __init__(self, budget_ms: float = 1.0) -> None:
        self.budget = budget_ms / 1000.0
        self.enabled = True
        self.next_deadline: float = INF
        self.timer: asyncio.TimerHandle | asyncio.Handle | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.expire_due: Callable[[float], bool] | None = None
        self.earliest: Callable[[], int | None] | None = None
        # the latency monitor, once it exists: each step is an `expire-cycle` sample
        self.latency: Any = None

    def start(
        self,
        loop: asyncio.AbstractEventLoop,
        expire_due: Callable[[float], bool],
        earliest: Callable[[], int | None],
    ) -> None:
        """Begin running `expire_due(budget_s) -> more` on `loop`; `earliest()` gives the
        earliest pending deadline (Keyspace.expire_due and earliest_deadline)."""
        self.loop = loop
        self.expire_due = expire_due
        self.earliest = earliest
        self.rearm()

    def reschedule(self, deadline: int) -> None:
        """Arm the timer for `deadline` (ms) if that is earlier than what is armed."""
        if not self.enabled or deadline >= self.next_deadline or self.loop is None:
            return
        if self.timer is not None:
            self.timer.cancel()
        self.next_deadline = deadline
        # A key is due once now > deadline, so wake 1 ms after it.
        delay = (deadline + 1 - now_ms()) / 1000.0
        self.timer = self.loop.call_later(max(delay, 0.0), self.step)

    def set_enabled(self, enabled: bool) -> None:
        """DEBUG SET-ACTIVE-EXPIRE: off stops the timer; on re-arms it."""
        self.enabled = enabled
        self._disarm()
        if enabled:
            self.rearm()

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.next_deadline = INF

    def rearm(self) -> None:
        if self.earliest is not None:
            earliest = self.earliest()
            if earliest is not None:
                self.reschedule(earliest)

    def step(self) -> None:
        self.timer = None
        self.next_deadline = INF
        if not self.enabled or self.expire_due is None or self.loop is None:
            return
        started = time.perf_counter()
        more = self.expire_due(self.budget)
        if self.latency is not None:
            self.latency.timed('expire-cycle', started)
        if more:
            # Work remains: yield one loop turn to clients, then continue.
            self.next_deadline = 0
            self.timer = self.loop.call_soon(self.step)
        else:
            self.rearm()
