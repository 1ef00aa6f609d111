"""store/expiry/active.py (ActiveExpiry): when the timer wakes, driven on a fake loop and a
fake clock, so nothing here depends on the machine's speed.

- A key written into a window of the deadline index that is not promoted yet wakes the
  timer at the window's start, 1 ms after it as for any deadline.
- After a step, a deadline with CHUNK keys or more (a mass expiry) is armed LEAD_MS early;
  the early wake re-arms for the last whole millisecond, then looks every loop turn until
  the keys are due, and only then deletes.
- A deadline with few keys that wakes early just re-arms, rounded up.
"""

import math

import pytest

from store.expiry import active
from store.expiry.active import CHUNK, LEAD_MS, ActiveExpiry
from store.expiry.index import COARSE_MS

BASE = 1_700_000_000_000 // COARSE_MS * COARSE_MS + 100  # 100 ms into a window


class Clock:
    """Wall-clock time in ms (float), for time.time() and now_ms()."""

    def __init__(self, ms):
        self.ms = ms

    def time(self):
        return self.ms / 1000

    def perf_counter(self):
        return self.ms / 1000

    def now_ms(self):
        return math.floor(self.ms)


class Loop:
    """Records what was scheduled; `run_next` runs the earliest, moving the clock."""

    def __init__(self, clock):
        self.clock = clock
        self.handles = []

    def call_later(self, delay, fn, *args):
        return self._add(self.clock.ms + delay * 1000, fn, args, 'later')

    def call_soon(self, fn, *args):
        return self._add(self.clock.ms, fn, args, 'soon')

    def _add(self, when, fn, args, kind):
        h = Handle(when, fn, args, kind)
        self.handles.append(h)
        return h

    def pending(self):
        return [h for h in self.handles if not h.cancelled]

    def run_next(self, late=0.0):
        (h,) = self.pending()
        self.handles.remove(h)
        self.clock.ms = max(self.clock.ms, h.when + late)
        h.fn(*h.args)
        return h


class Handle:
    def __init__(self, when, fn, args, kind):
        self.when, self.fn, self.args, self.kind = when, fn, args, kind
        self.cancelled = False

    def cancel(self):
        self.cancelled = True


class Keys:
    """The keyspace's side: deadlines -> number of keys, promoted or not."""

    def __init__(self, clock):
        self.clock = clock
        self.due = {}  # deadline -> keys
        self.steps = []  # the clock (ms) at each expire_due call

    def expire_due(self, budget_s):
        now = self.clock.now_ms()
        self.steps.append(self.clock.ms)
        for d in [d for d in self.due if d < now]:
            del self.due[d]
        return False

    def earliest_deadline(self):
        return min(self.due) if self.due else None

    def keys_due_at(self, deadline):
        return self.due.get(deadline, 0)


@pytest.fixture
def setup(monkeypatch):
    clock = Clock(BASE + 0.3)
    monkeypatch.setattr(active, 'time', clock)
    monkeypatch.setattr(active, 'now_ms', clock.now_ms)
    loop = Loop(clock)
    keys = Keys(clock)
    timer = ActiveExpiry()
    timer.start(loop, keys)
    return clock, loop, keys, timer


def test_a_deadline_in_an_unpromoted_window_wakes_at_the_window_start(setup):
    clock, loop, keys, timer = setup
    start = (BASE // COARSE_MS + 2) * COARSE_MS
    deadline = start + 500
    keys.due[deadline] = 1
    timer.reschedule(deadline)
    (h,) = loop.pending()
    assert timer.next_deadline == start
    assert h.when == pytest.approx(start + 1)
    # a later deadline in the same window does not move it
    timer.reschedule(deadline + 10)
    assert loop.pending() == [h]


def test_a_deadline_in_the_current_window_wakes_when_due(setup):
    clock, loop, keys, timer = setup
    deadline = BASE + 50
    keys.due[deadline] = 1
    timer.reschedule(deadline)
    (h,) = loop.pending()
    assert timer.next_deadline == deadline
    assert h.when == pytest.approx(deadline + 1)


def test_a_mass_expiry_is_armed_early_and_deletes_once_due(setup):
    clock, loop, keys, timer = setup
    deadline = BASE + 50
    keys.due[deadline] = CHUNK
    timer.rearm()
    (h,) = loop.pending()
    assert h.when == pytest.approx(deadline + 1 - LEAD_MS)
    loop.run_next(late=0.4)  # 1.6 ms early: re-armed for the last whole millisecond
    (h,) = loop.pending()
    assert h.kind == 'later' and h.when == pytest.approx(deadline + 0.4)
    assert keys.steps == []
    loop.run_next()  # 0.6 ms early: look every loop turn
    for _ in range(2):
        (h,) = loop.pending()
        assert h.kind == 'soon'
        clock.ms += 0.2
        loop.run_next()
    assert keys.steps == []
    clock.ms = deadline + 1  # due
    loop.run_next()
    assert keys.steps == [deadline + 1]
    assert deadline not in keys.due


def test_few_keys_woken_early_wait_for_a_timer_rounded_up(setup):
    clock, loop, keys, timer = setup
    deadline = BASE + 50
    keys.due[deadline] = CHUNK - 1
    timer.rearm()
    (h,) = loop.pending()
    assert h.when == pytest.approx(deadline + 1)  # no lead
    clock.ms = deadline + 0.6  # the timer fired 0.4 ms early
    loop.handles.remove(h)
    h.fn(*h.args)
    (h,) = loop.pending()
    assert h.kind == 'later' and h.when == pytest.approx(deadline + 1.6)
    assert keys.steps == []
    loop.run_next()
    assert keys.steps == [pytest.approx(deadline + 1.6)]


def test_an_earlier_deadline_replaces_a_wait(setup):
    clock, loop, keys, timer = setup
    deadline = BASE + 50
    keys.due[deadline] = CHUNK
    timer.rearm()
    loop.run_next(late=0.3)  # 1.7 ms early
    loop.run_next()  # 0.7 ms early: waiting every loop turn
    (h,) = loop.pending()
    assert h.kind == 'soon'
    keys.due[deadline - 1] = 1
    timer.reschedule(deadline - 1)
    assert h.cancelled
    (h,) = loop.pending()
    assert timer.next_deadline == deadline - 1
