"""The per-shard deadline index: which keys fall due when.

Two levels, like a two-level timing wheel:

- far:  for each database, coarse buckets of COARSE_MS (1024 ms) windows,
        `{window: [key, key, ...]}`, plus a heap of `(window, db)`.
- near: exact-millisecond buckets `{deadline: [key, ...]}` plus a heap of `(deadline, db)`,
        holding only keys whose window has come up (deadline < `horizon`).

A new deadline goes to `near` if its window was already promoted, else to `far`. When a
window's start time arrives, `promote` moves it: each key's current deadline is read from
`expires` and the key is filed in `near`. Due keys are then taken from `near` in deadline
order, so keys are deleted at their exact millisecond while far-future keys cost one list
slot (8 bytes) each: a bucket's fixed cost is shared by every key in its 1 s window (per
shard), even when keys trickle in one per millisecond.

Costs: add O(1) (+ O(log w) for a new window's heap entry); promotion O(1) per key; finding
the next wake-up time is heap[0]. Work is done in chunks (`limit`) so the caller can keep
to its time budget during a mass expiry. Due keys leave in runs that share a database and
a deadline (`pop_due_runs`: one slice per bucket), so the expiry's per-key work is only
its dict operations. Measured in a server holding 100,000 other volatile keys: promoting
1,000 keys of one window ~0.3 ms (done at the window's start, ahead of their deadline),
popping them ~0.07 ms.

Deadline ints: `add` returns a canonical int object for the deadline (one per millisecond
recently used), which the shard stores in `expires`, so keys written in the same
millisecond share it instead of each holding a 32-byte int.

A key's entry sits in its deadline's window or an earlier one. A later deadline (EXPIRE
refreshing a TTL) files nothing: promotion reads the current deadline and moves the entry
on to that window, once per window the key outlives, instead of once per refresh.

Removal is lazy. PERSIST, DEL or an earlier deadline leave the old entry in place;
promotion and expiry check each key against `expires` and drop entries that no longer
match. `stale` counts them, and the index is rebuilt from `expires` when stale entries
outnumber live ones, so memory stays within 2x of live keys whatever the write pattern.
"""

from __future__ import annotations

import heapq

COARSE_MS = 1024


class DeadlineIndex:
    """Keys are bytes; deadlines, windows and `now` are ints (ms since the epoch, and
    deadline // COARSE_MS for a window); `db` is a database number."""

    __slots__ = (
        'expires',
        'far',
        'far_heap',
        'near',
        'near_heap',
        'horizon',
        'entries',
        'stale',
        'canon',
    )

    expires: list[dict[bytes, int]]
    far: list[dict[int, list[bytes]]]  # per db: window -> keys
    far_heap: list[tuple[int, int]]  # (window, db)
    near: list[dict[int, list[bytes]]]  # per db: deadline -> keys
    near_heap: list[tuple[int, int]]  # (deadline, db)
    horizon: int
    entries: int
    stale: int
    canon: dict[int, int]

    def __init__(self, expires: list[dict[bytes, int]]) -> None:
        self.expires = expires  # the shard's per-database key -> deadline dicts
        self.canon = {}
        self._reset()

    def _reset(self) -> None:
        self.far = [{} for _ in self.expires]
        self.near = [{} for _ in self.expires]
        self.far_heap = []
        self.near_heap = []
        self.horizon = 0  # deadlines below this are filed in `near`
        self.entries = 0
        self.stale = 0

    def add(self, db: int, key: bytes, deadline: int, old: int | None = None) -> int:
        """File `key` under `deadline`; return the int object to store as its deadline.
        `old` is the key's previous deadline, if it had one: when the new one is in the
        same window that has not started yet, or a later one, the key's entry (filed at
        or before old's window) already covers it, so nothing is filed or left stale:
        promotion reads the current deadline and refiles the key in its window. A TTL
        refreshed on every use (a lock, a session, a rate limiter) costs no index work."""
        canon = self.canon.get(deadline)
        if canon is None:
            if len(self.canon) >= 4096:
                self.canon.clear()
            self.canon[deadline] = canon = deadline
        if old is not None:
            # (a later deadline is in the same window or a later one: no division)
            if old >= self.horizon and (canon >= old or canon // COARSE_MS == old // COARSE_MS):
                return canon
            if self.discard():
                # The rebuild refiled the key under `old`, still in `expires` until the
                # caller stores `canon`: that entry is stale from then on.
                self.stale += 1
        self.entries += 1
        if canon < self.horizon:
            self._file_near(db, key, canon)
        else:
            self._file_far(db, key, canon // COARSE_MS)
        return canon

    def _file_far(self, db: int, key: bytes, window: int) -> None:
        _file(self.far[db], self.far_heap, db, key, window)

    def _file_near(self, db: int, key: bytes, deadline: int) -> None:
        _file(self.near[db], self.near_heap, db, key, deadline)

    def discard(self) -> bool:
        """A key's deadline went away or changed: its entry is now stale. Rebuilds the
        index when stale entries outnumber live ones (amortised O(1) per discard); True
        when it did."""
        self.stale += 1
        if self.stale > 1024 and self.stale * 2 > self.entries:
            self.rebuild()
            return True
        return False

    def rebuild(self) -> None:
        """Drop stale entries: refile every live deadline from the `expires` dicts."""
        horizon = self.horizon
        self._reset()
        self.horizon = horizon
        for db, exp in enumerate(self.expires):
            for key, deadline in exp.items():
                exp[key] = self.add(db, key, deadline)

    def clear(self, db: int) -> None:
        """FLUSHDB: forget a database's entries (their heap entries are skipped later).
        Called before the database's `expires` dict is emptied: of the dropped entries,
        one per key still in it is live, the rest were counted in `stale`."""
        dropped = sum(len(b) for b in self.far[db].values()) + sum(
            len(b) for b in self.near[db].values()
        )
        self.entries -= dropped
        self.stale -= dropped - len(self.expires[db])
        self.far[db] = {}
        self.near[db] = {}

    def swap(self, db1: int, db2: int) -> None:
        """SWAPDB: exchange two databases' entries."""

        def other(db: int) -> int:
            return db2 if db == db1 else db1 if db == db2 else db

        for level in (self.far, self.near):
            level[db1], level[db2] = level[db2], level[db1]
        self.far_heap = [(w, other(db)) for w, db in self.far_heap]
        self.near_heap = [(d, other(db)) for d, db in self.near_heap]
        heapq.heapify(self.far_heap)
        heapq.heapify(self.near_heap)

    def earliest(self) -> int | None:
        """When the next piece of work is due (ms), or None: the earliest exact deadline
        in `near`, or the start of the earliest unpromoted window."""
        best = None
        heap = self.near_heap
        while heap:
            deadline, db = heap[0]
            if deadline in self.near[db]:
                best = deadline
                break
            heapq.heappop(heap)
        heap = self.far_heap
        while heap:
            window, db = heap[0]
            if window in self.far[db]:
                start = window * COARSE_MS
                if best is None or start < best:
                    best = start
                break
            heapq.heappop(heap)
        return best

    def promote(self, now: int, limit: int) -> int:
        """File the keys of windows that have started (start <= now) in `near`, up to
        `limit` keys; returns the number of entries handled (0: nothing to promote)."""
        done = 0
        heap = self.far_heap
        while heap and done < limit and heap[0][0] * COARSE_MS <= now:
            window, db = heap[0]
            # From now on this window's new deadlines go to `near`; its filed keys
            # follow as the bucket drains (possibly over several calls).
            self.horizon = max(self.horizon, (window + 1) * COARSE_MS)
            bucket = self.far[db].get(window)
            if bucket is not None:
                exp = self.expires[db]
                near = self.near[db]
                while bucket and done < limit:
                    key = bucket.pop()
                    done += 1
                    deadline = exp.get(key)
                    if deadline is None:
                        self.entries -= 1
                        self.stale -= 1
                        continue
                    w = deadline // COARSE_MS
                    if w == window:
                        keys = near.get(deadline)  # _file_near, inline: once per key
                        if keys is None:
                            keys = near[deadline] = []
                            heapq.heappush(self.near_heap, (deadline, db))
                        keys.append(key)
                    elif w > window:  # the deadline moved later: the entry moves with it
                        self._file_far(db, key, w)
                    else:  # moved earlier: filed again there, this entry is stale
                        self.entries -= 1
                        self.stale -= 1
                if bucket:
                    break
                del self.far[db][window]
            heapq.heappop(heap)
        return done

    def pop_due(self, now: int, limit: int) -> list[tuple[int, bytes, int]]:
        """Remove and return up to `limit` promoted entries due at `now` (deadline < now,
        as Redis's keyIsExpired has it) as (db, key, deadline) triples, stale ones
        included: the caller checks them against `expires`. (`pop_due_runs`, flattened.)"""
        return [
            (db, key, deadline)
            for db, deadline, keys in self.pop_due_runs(now, limit)
            for key in keys
        ]

    def pop_due_runs(self, now: int, limit: int) -> list[tuple[int, int, list[bytes]]]:
        """`pop_due` by bucket: up to `limit` due entries as (db, deadline, keys) runs, in
        deadline order, each run's keys in the order the expiry deletes them (last filed
        first). A run costs one heap look and one slice: the caller loops over each run's
        keys with the database's dicts and the deadline already in hand."""
        out: list[tuple[int, int, list[bytes]]] = []
        heap = self.near_heap
        taken = 0
        while heap and taken < limit:
            deadline, db = heap[0]
            if deadline >= now:
                break
            near = self.near[db]
            bucket = near.get(deadline)
            if bucket is None:
                heapq.heappop(heap)
                continue
            take = limit - taken
            if len(bucket) <= take:
                keys = bucket
                del near[deadline]
                heapq.heappop(heap)
            else:
                keys = bucket[-take:]
                del bucket[-take:]
            keys.reverse()
            out.append((db, deadline, keys))
            taken += len(keys)
        self.entries -= taken
        return out

    def due_at(self, deadline: int) -> int:
        """How many promoted entries are filed under exactly `deadline` (stale included),
        summed over the databases: O(databases), O(1) when nothing earlier is promoted."""
        heap = self.near_heap
        if not heap or heap[0][0] > deadline:
            return 0
        return sum(len(near.get(deadline, ())) for near in self.near)

    def size(self) -> int:
        """Entries in the index (live and stale)."""
        return self.entries


def _file(
    buckets: dict[int, list[bytes]], heap: list[tuple[int, int]], db: int, key: bytes, at: int
) -> None:
    """Append `key` to the bucket `at` (a window or a deadline), making the bucket and
    its heap entry the first time."""
    bucket = buckets.get(at)
    if bucket is None:
        bucket = buckets[at] = []
        heapq.heappush(heap, (at, db))
    bucket.append(key)
