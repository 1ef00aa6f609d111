"""Expiry: the one place keys are deleted at their deadline.

Deadlines are integer milliseconds since the epoch; a key is expired once
`deadline < now`, as in Redis's keyIsExpired. Keys go at their deadline in two ways, and
both count `expired_keys` and record the lag (deletion time - deadline) here:
- on access (`_expire`, lazy expiry): a look-up that finds a key past its deadline deletes
  it, and raises its `expired` event, before the command sees it (not while CLIENT PAUSE
  holds writes: the key then reads as missing but stays);
- in `expire_due`, which the active-expiry timer (store/expiry/active.py) calls when
  deadlines fall due: it takes due keys from each shard's deadline index, in runs sharing
  a database and a deadline, and deletes them within the budget it is given; a shard cut
  short by the budget is where the next call starts.
A deleted key is uncharged and its observers are told; the AOF (a DEL) and a running
snapshot (which copies the key out first) hear of it before it goes.

`KeyspaceExpiry` is a part of store/keyspace.py's Keyspace (a mixin with no state of its
own: the fields are Keyspace's, declared below for the type checker only).
"""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING, Any

from . import events as ev
from .clock import now_ms
from .db_slice import DbSlice
from .events import KeyspaceEvents
from .expiry.stats import LagStats
from .lifecycle import KeyObserver, KeyWatcher
from .memory.sizes import KEY_OVERHEAD, TTL_OVERHEAD

CHUNK = 64  # keys taken from an index between two looks at the clock


class KeyspaceExpiry:
    if TYPE_CHECKING:  # Keyspace's fields and methods this part uses
        shards: list[DbSlice]
        watchers: dict[tuple[int, bytes], set[KeyWatcher]]
        observed: bool
        events: KeyspaceEvents
        notify: Any
        notify_flags: int
        snapshot: KeyObserver | None
        hear_removing: tuple[KeyObserver, ...]
        hear_expired: tuple[KeyObserver, ...]
        used: int
        db_used: list[int]
        next_shard: int
        expire_paused: bool
        expired_keys: int
        expire_lag: LagStats
        expire_cycle_ms: float
        expire_time_cap_reached: int

        def touch(self, db: int, key: bytes, by_client: bool = True) -> None: ...

        def removing(self, s: DbSlice, db: int, key: bytes) -> None: ...

    def _expire(self, s: DbSlice, db: int, key: bytes) -> None:
        """Lazy expiry: delete one key whose deadline passed, found by an access (not
        while clients are paused: the caller then treats it as missing all the same)."""
        if self.expire_paused:
            return
        deadline = s.deadline(db, key)
        assert deadline is not None
        if self.hear_removing:
            self.removing(s, db, key)
        size = s.remove(db, key, 'expire')
        self.used -= size
        self.db_used[db] -= size
        self.expired_keys += 1
        self.expire_lag.record(now_ms() - deadline)
        if self.observed:
            self.touch(db, key, False)
        if self.notify_flags & ev.EXPIRED:
            self.notify(ev.EXPIRED, b'expired', db, key, deadline)

    def expire_due(self, budget_s: float) -> bool:
        """Active expiry: delete due keys, shard by shard, until none is left or `budget_s`
        seconds are spent; True if due keys remain. The keys of each database expired in
        one call leave as one batch (`events.batch`: one coalesced dispatch on
        __keyevent@db__:expired). A shard that ran out of budget is where the next call
        starts, so no shard starves during a mass expiry.

        The index hands out due keys in runs sharing a database and a deadline
        (`pop_due_runs`), so the per-key work is four dict operations and a size sum
        (~1 us a key, against ~2.3 us when each key was a triple handled on its own);
        memory, lag and stale counts are settled once per run."""
        start = time.perf_counter()
        stop = start + budget_s
        now = now_ms()
        # per database: the expired keys, and (deadline, count) per run for the lag
        batches: dict[int, tuple[list[bytes], list[tuple[int, int]]]] = {}
        hooked = bool(self.hear_removing)
        hook = None
        shards = self.shards
        n = len(shards)
        more = False
        for i in range(n):
            s = shards[(self.next_shard + i) % n]
            index = s.index
            while True:
                if not index.promote(now, CHUNK):
                    due = index.pop_due_runs(now, CHUNK)
                    if not due:
                        break
                    for db, deadline, keys in due:
                        batch = batches.get(db)
                        if batch is None:
                            batch = batches[db] = ([], [])
                        out = batch[0]
                        before = len(out)
                        if hooked:
                            # a snapshot copies each key out first, the AOF logs its DEL
                            hook = partial(self.removing, s, db)
                        freed = s.expire_run(db, deadline, keys, out, hook)
                        done = len(out) - before
                        index.stale -= len(keys) - done
                        if done:
                            freed += done * (KEY_OVERHEAD + TTL_OVERHEAD)
                            self.used -= freed
                            self.db_used[db] -= freed
                            batch[1].append((deadline, done))
                if time.perf_counter() > stop:
                    more = True
                    break
            if more:
                self.next_shard = (self.next_shard + i) % n
                break
        heard = self.hear_expired
        journal_deadlines = self.events.journal_flags & ev.EXPIRED
        for db, (keys, counts) in batches.items():
            if not keys:
                continue
            self.expired_keys += len(keys)
            lag = self.expire_lag
            for deadline, count in counts:
                lag.record(now - deadline, count)
            for party in heard:
                party.expired(db, keys)  # tracking: no client caused these (NOLOOP)
            if self.watchers:
                watchers = self.watchers
                for key in keys:
                    observers = watchers.get((db, key))
                    if observers:
                        for o in list(observers):
                            o.key_modified(db, key)
            deadlines = None
            if journal_deadlines:
                deadlines = [d for d, count in counts for _ in range(count)]
            self.events.batch(ev.EXPIRED, b'expired', db, keys, now, deadlines)
        for party in heard:
            party.step_ended()  # tracking's invalidations leave with the `expired` events
        self.expire_cycle_ms += (time.perf_counter() - start) * 1000
        if more:
            self.expire_time_cap_reached += 1
        return more

    def earliest_deadline(self) -> int | None:
        """The earliest deadline any shard's index holds (stale entries included)."""
        earliest = [d for d in (s.index.earliest() for s in self.shards) if d is not None]
        return min(earliest) if earliest else None

    def keys_due_at(self, deadline: int) -> int:
        """How many keys wait on exactly `deadline` in the shards' promoted buckets (stale
        entries included): the timer asks when it woke before them (store/expiry/active.py)."""
        return sum(s.index.due_at(deadline) for s in self.shards)
