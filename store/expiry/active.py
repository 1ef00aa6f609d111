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

When it wakes. A key is due from the instant deadline + 1 ms (Redis's `now > when`), and
the timer is aimed there. uvloop timers are whole milliseconds, counted on libuv's
millisecond clock as of the loop's last poll, so a timer armed long before lands anywhere
from about 1 ms early to 1 ms late. Two things make a mass expiry (CHUNK keys or more on
one deadline, `keys_due_at`) start on time:
- a key written into a window of the deadline index that is not promoted yet wakes the
  timer at the window's start first (`reschedule`), so the keys are in exact-millisecond
  buckets before their deadline and the step at the deadline only deletes;
- the timer of a mass expiry is armed LEAD_MS early; when it fires, it re-arms for the
  last whole millisecond (a timer started then is exact to its rounding) and then
  steps every loop turn until the keys are due (`_early`), serving clients in between:
  at most 1 ms of CPU once per mass expiry.
A few keys are not worth that CPU: an early wake just re-arms, rounded up.

Measured (bench/tracking.py --only stale: 1,000 keys on one deadline among 100,000
volatile keys, 10 tracking clients): the first step began 1.5-1.9 ms after the deadline
and promoted the window before deleting; now 1.02-1.09 ms after it, deleting only.

Invariant: `next_deadline` is the deadline (or window start) the timer is armed for (inf
when none, 0 while a continuation is queued), and only this object writes it.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any, Protocol

from ..clock import now_ms
from .index import COARSE_MS

CHUNK = 64  # keys on one deadline that make a mass expiry, worth waking early for
LEAD_MS = 2  # how early a mass expiry's timer fires, to wait out the rest precisely

INF = float('inf')


class DueKeys(Protocol):
    """What the timer asks of the keyspace (store/keyspace_expiry.py)."""

    def expire_due(self, budget_s: float) -> bool:
        """Delete due keys within the budget; True if due keys remain."""
        ...

    def earliest_deadline(self) -> int | None: ...

    def keys_due_at(self, deadline: int) -> int:
        """How many keys wait on exactly `deadline`."""
        ...


class ActiveExpiry:
    def __init__(self, budget_ms: float = 1.0) -> None:
        self.budget = budget_ms / 1000.0
        self.enabled = True
        self.next_deadline: float = INF
        self.timer: asyncio.TimerHandle | asyncio.Handle | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.keys: DueKeys | None = None  # the keyspace, once started
        # the latency monitor, once it exists: each step is an `expire-cycle` sample
        self.latency: Any = None

    def start(self, loop: asyncio.AbstractEventLoop, keys: DueKeys) -> None:
        """Begin running the keys' `expire_due` on `loop`, armed at their earliest
        deadline."""
        self.loop = loop
        self.keys = keys
        self.rearm()

    def reschedule(self, deadline: int, lead: float = 0) -> None:
        """Arm the timer for `deadline` (ms) if that is earlier than what is armed, to
        fire `lead` ms before its keys are due."""
        if not self.enabled or deadline >= self.next_deadline or self.loop is None:
            return
        start = deadline - deadline % COARSE_MS
        if start > time.time() * 1000:
            # The key went to a window of the index not promoted yet: wake at its start
            # to promote it, so that the step at the deadline only deletes (rearm() then
            # aims at the deadline, early for a mass expiry).
            deadline, lead = start, 0
            if deadline >= self.next_deadline:
                return
        if self.timer is not None:
            self.timer.cancel()
        self.next_deadline = deadline
        # A key is due once now > deadline, i.e. from the wall-clock instant deadline + 1
        # ms. uvloop rounds the delay to the nearest millisecond, and libuv counts it on
        # a millisecond clock read when the loop last polled: the wake lands within about
        # 1 ms of the instant aimed at, either side (`step` waits out an early one).
        delay = deadline + 1 - lead - time.time() * 1000
        self.timer = self.loop.call_later(max(delay, 0.0) / 1000.0, self.step)

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
        if self.keys is not None:
            earliest = self.keys.earliest_deadline()
            if earliest is not None:
                self.reschedule(earliest, LEAD_MS if self._mass(earliest) else 0)

    def _mass(self, deadline: float) -> bool:
        """Do CHUNK keys or more wait on `deadline`?"""
        return self.keys is not None and self.keys.keys_due_at(int(deadline)) >= CHUNK

    def step(self) -> None:
        self.timer = None
        armed = self.next_deadline
        self.next_deadline = INF
        if not self.enabled or self.keys is None or self.loop is None:
            return
        if armed and now_ms() <= armed:
            self._early(armed)
            return
        started = time.perf_counter()
        more = self.keys.expire_due(self.budget)
        if self.latency is not None:
            self.latency.timed('expire-cycle', started)
        if more:
            # Work remains: yield one loop turn to clients, then continue.
            self.next_deadline = 0
            self.timer = self.loop.call_soon(self.step)
        else:
            self.rearm()

    def _early(self, armed: float) -> None:
        """The timer fired before `armed`'s keys were due: armed LEAD_MS early for a mass
        expiry (CHUNK keys or more on one deadline), or its rounding, or the wall clock
        stepped back. A mass expiry re-arms for the last whole millisecond (a timer
        started now, from a loop that polls next, is exact to the rounding) and then
        comes back every loop turn until its keys are due, serving clients in between:
        at most 1 ms of CPU once, and every key of the batch is deleted within a loop turn
        of its due instant, where a plain timer wakes 0-2 ms after it. A few keys just
        wait for a timer rounded up, as late as 1 ms after."""
        assert self.loop is not None
        self.next_deadline = armed
        rest = armed + 1 - time.time() * 1000
        if rest <= LEAD_MS + 2 and self._mass(armed):  # 2: the first timer's own error
            if rest <= 1:
                self.timer = self.loop.call_soon(self._wait, armed)
            else:
                self.timer = self.loop.call_later(math.floor(rest) / 1000.0, self.step)
        else:
            self.timer = self.loop.call_later(max(math.ceil(rest), 0) / 1000.0, self.step)

    def _wait(self, armed: float) -> None:
        """Step as soon as `armed`'s keys are due, looking once a loop turn."""
        if now_ms() > armed:
            self.step()
        else:
            assert self.loop is not None
            self.timer = self.loop.call_soon(self._wait, armed)
