"""The active-expiry step: delete keys at their deadline, not when a sampler finds them.

One timer is armed at the earliest deadline across all shards (`reschedule` moves it
earlier when a command sets an earlier deadline). When it fires, the step walks the shards'
deadline indexes and deletes every due key until its time budget (`active-expire-budget-ms`,
default 1 ms) is spent; if work remains it runs again on the next loop turn, so clients are
served between slices of a mass expiry, otherwise it re-arms at the next deadline. Nothing
runs while nothing is due. The keys expired in one step are handed to the notifier per
database as one batch (`Keyspace.expired_batch`).
"""

import time

from ..clock import now_ms

CHUNK = 64      # keys taken from an index between two looks at the clock


class ActiveExpiry:
    def __init__(self, keyspace, loop, budget_ms=1.0):
        self.ks = keyspace
        self.loop = loop
        self.budget = budget_ms / 1000.0
        self.enabled = True
        self.timer = None
        self.next_shard = 0
        keyspace.expiry = self

    def reschedule(self, deadline):
        """Arm the timer for `deadline` (ms) if that is earlier than what is armed."""
        ks = self.ks
        if not self.enabled or deadline >= ks.next_deadline:
            return
        if self.timer is not None:
            self.timer.cancel()
        ks.next_deadline = deadline
        # A key is due once now > deadline, so wake 1 ms after it.
        delay = (deadline + 1 - now_ms()) / 1000.0
        self.timer = self.loop.call_later(max(delay, 0.0), self.step)

    def set_enabled(self, enabled):
        """DEBUG SET-ACTIVE-EXPIRE: off stops the timer; on re-arms it."""
        self.enabled = enabled
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.ks.next_deadline = float('inf')
        if enabled:
            self.rearm()

    def rearm(self):
        earliest = [d for d in (s.index.earliest() for s in self.ks.shards) if d is not None]
        if earliest:
            self.reschedule(min(earliest))

    def step(self):
        ks = self.ks
        self.timer = None
        ks.next_deadline = float('inf')
        if not self.enabled:
            return
        start = time.perf_counter()
        stop = start + self.budget
        now = now_ms()
        batches = {}
        record_lag = ks.expire_lag.record
        shards = ks.shards
        n = len(shards)
        more = False
        for i in range(n):
            s = shards[(self.next_shard + i) % n]
            index = s.index
            while True:
                if not index.promote(now, CHUNK):
                    due = index.pop_due(now, CHUNK)
                    if not due:
                        break
                    for db, key, deadline in due:
                        exp = s.expires[db]
                        if exp.get(key) == deadline:
                            del exp[key]
                            del s.data[db][key]
                            record_lag(now - deadline)
                            batch = batches.get(db)
                            if batch is None:
                                batch = batches[db] = ([], [])
                            batch[0].append(key)
                            batch[1].append(deadline)
                        else:
                            index.stale -= 1
                if time.perf_counter() > stop:
                    more = True
                    break
            if more:
                self.next_shard = (self.next_shard + i) % n
                break
        for db, (keys, deadlines) in batches.items():
            ks.expired_batch(db, keys, deadlines, now)
        ks.expire_cycle_ms += (time.perf_counter() - start) * 1000
        if more:
            ks.expire_time_cap_reached += 1
            # Work remains: yield one loop turn to clients, then continue.
            ks.next_deadline = 0
            self.timer = self.loop.call_soon(self.step)
        else:
            self.rearm()
