"""The per-shard deadline index: which keys fall due when.

Structure. For each database a dict maps a deadline (integer ms since the epoch) to its
bucket, a list `[deadline, key, key, ...]`; a heap holds one `(deadline, db)` entry per
bucket. Adding a key is a dict lookup and a list append, O(1) (plus O(log b) to push a new
bucket onto the heap, b = number of buckets); finding the earliest deadline is heap[0].

Memory. Keys that share a millisecond share a bucket, and the shard's `expires` dict stores
the bucket's own deadline int (returned by `add`), so a volatile key costs one list slot
(8 bytes) here plus its slot in `expires`; keys written in bulk share deadline objects.

Removal is lazy. PERSIST, DEL or a new deadline leave the old bucket entry in place; when a
bucket falls due, each key is deleted only if its current deadline is still the bucket's,
otherwise the entry is stale and dropped. `stale` counts such entries and the index is
rebuilt from `expires` when they outnumber the live ones, so memory stays within 2x of live
keys whatever the write pattern (a session refreshed every second, for instance).
"""

import heapq


class DeadlineIndex:
    __slots__ = ('expires', 'buckets', 'heap', 'entries', 'stale')

    def __init__(self, expires):
        self.expires = expires      # the shard's per-database key -> deadline dicts
        self.buckets = [{} for _ in expires]
        self.heap = []
        self.entries = 0
        self.stale = 0

    def add(self, db, key, deadline):
        """File `key` under `deadline`; return the int object to store as its deadline.
        The caller counts the previous deadline, if any, as stale (`discard`)."""
        buckets = self.buckets[db]
        bucket = buckets.get(deadline)
        if bucket is None:
            bucket = buckets[deadline] = [deadline]
            heapq.heappush(self.heap, (deadline, db))
        bucket.append(key)
        self.entries += 1
        return bucket[0]

    def discard(self):
        """A key's deadline went away or changed: its entry is now stale. Rebuilds the
        index when stale entries outnumber live ones (amortised O(1) per discard)."""
        self.stale += 1
        if self.stale > 1024 and self.stale * 2 > self.entries:
            self.rebuild()

    def rebuild(self):
        """Drop stale entries: refile every live deadline from the `expires` dicts."""
        self.buckets = [{} for _ in self.expires]
        self.heap = []
        self.entries = self.stale = 0
        for db, exp in enumerate(self.expires):
            for key, deadline in exp.items():
                exp[key] = self.add(db, key, deadline)

    def clear(self, db):
        """FLUSHDB: forget a database's buckets (their heap entries are skipped later)."""
        dropped = sum(len(b) - 1 for b in self.buckets[db].values())
        self.entries -= dropped
        self.stale = max(0, self.stale - dropped)
        self.buckets[db] = {}

    def swap(self, db1, db2):
        b = self.buckets
        b[db1], b[db2] = b[db2], b[db1]
        self.heap = [(d, db2 if db == db1 else db1 if db == db2 else db)
                     for d, db in self.heap]
        heapq.heapify(self.heap)

    def earliest(self):
        """The earliest pending deadline, or None. Drops heap entries of cleared buckets."""
        heap = self.heap
        while heap:
            deadline, db = heap[0]
            if deadline in self.buckets[db]:
                return deadline
            heapq.heappop(heap)
        return None

    def pop_due(self, now, limit):
        """Remove and return up to `limit` (db, key, deadline) entries due at `now`, that
        is with deadline < now as Redis's keyIsExpired has it (stale ones included; the
        caller checks them against `expires`)."""
        out = []
        heap = self.heap
        while heap and len(out) < limit:
            deadline, db = heap[0]
            if deadline >= now:
                break
            bucket = self.buckets[db].get(deadline)
            if bucket is None:
                heapq.heappop(heap)
                continue
            take = limit - len(out)
            while len(bucket) > 1 and take:
                out.append((db, bucket.pop(), deadline))
                take -= 1
            if len(bucket) == 1:
                del self.buckets[db][deadline]
                heapq.heappop(heap)
        self.entries -= len(out)
        return out

    def size(self):
        return self.entries
