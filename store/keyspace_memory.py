"""The keyspace's memory charges and access information.

Memory: every key is charged, when written, the bytes store/memory/sizes.py estimates for
it, and uncharged the same amount when it goes; `used` is the total (per database in
`db_used`, so FLUSHDB and SWAPDB stay O(1)). A string's charge is a function of the string,
so nothing is stored for it; an aggregate's charge is kept in its shard's `charged` dict,
because aggregates change in place after the look-up that found them: look-ups `mark`
them (`dirty`) and `settle` re-estimates the marked ones, O(samples) each, before anyone
reads `used` (the eviction gate, INFO, MEMORY). The connection runs the eviction gate
(store/memory/eviction.py) before a command whenever `used > check_at`, which is the room
left under `maxmemory` (infinite without one) or -1 while marked aggregates wait.

Access information (OBJECT IDLETIME/FREQ, eviction) is recorded by every look-up in the
shard's `access` dict: the LRU clock (ms, refreshed by the server's cron, one shared int
object per refresh, so recording it allocates nothing; the look-ups store it inline), or
under an LFU policy (`lru` None) Redis's 8-bit logarithmic counter with its decay time
(store/memory/lfu.py, `_access`). The clock's last bit says whether the key was used
since it was created: a new key gets `lru` (even), a look-up or a write of an existing
key `lru_used` (odd), and LRU eviction takes keys not used again first
(store/memory/eviction.py, "segmented" LRU).

`KeyspaceMemory` is a part of store/keyspace.py's Keyspace (a mixin with no state of its
own: the fields are Keyspace's, declared below for the type checker only).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .db_slice import DbSlice
from .memory import lfu
from .memory.lfu import Evicted
from .memory.sizes import KEY_OVERHEAD, TTL_OVERHEAD, bytes_size, value_size


class KeyspaceMemory:
    if TYPE_CHECKING:  # Keyspace's fields and methods this part uses
        databases: int
        shards: list[DbSlice]
        used: int
        db_used: list[int]
        dirty: set[tuple[int, bytes]]
        check_at: float
        dirty_check: float
        born: int
        no_touch: bool
        lfu: bool
        lfu_log_factor: int
        lfu_decay_time: int
        lfu_minutes: int
        lfu_tick: int
        evicted: Evicted | None

        def shard_for(self, key: bytes) -> DbSlice: ...

        def lookup_notouch(self, db: int, key: bytes) -> Any: ...

    def _recharge(self, s: DbSlice, db: int, key: bytes, v: Any) -> None:
        """Charge an aggregate what value_size says it costs now, in place of its old
        charge (after a command changed it, or once decoded)."""
        n = s.recharge(db, key, v)
        self.used += n
        self.db_used[db] += n

    def mark(self, db: int, key: bytes) -> None:
        """An aggregate may change in place: re-estimate it at the next `settle`."""
        self.dirty.add((db, key))
        self.check_at = self.dirty_check

    def settle(self) -> None:
        """Re-estimate the aggregates marked since the last settle, so `used` is exact
        to the size model."""
        dirty = self.dirty
        if not dirty:
            return
        self.dirty = set()
        for db, key in dirty:
            s = self.shard_for(key)
            v = s.peek(db, key)
            if v is None or type(v) is bytes:
                continue  # deleted or replaced since: its charge was settled then
            self._recharge(s, db, key, v)

    def recount(self) -> None:
        """Charge every key from scratch (after a load wrote the shards directly)."""
        self.dirty = set()
        self.used = 0
        for db in range(self.databases):
            total = 0
            for s in self.shards:
                total += s.recount(db)
            self.db_used[db] = total
            self.used += total

    def key_size(self, db: int, key: bytes, samples: int = 5) -> int | None:
        """MEMORY USAGE: the key's bytes (value sampled as asked), or None."""
        v = self.lookup_notouch(db, key)
        if v is None:
            return None
        size = value_size(v, samples) + bytes_size(len(key)) + KEY_OVERHEAD
        if self.shard_for(key).deadline(db, key) is not None:
            size += TTL_OVERHEAD
        return size

    def _access(self, s: DbSlice, db: int, key: bytes) -> None:
        """Record an access the slow way: the LFU counter, or nothing for a no-touch
        lookup (the fast path stores the LRU clock inline)."""
        if self.no_touch:
            return
        value = s.accesses(db).get(key)
        evicted = self.evicted
        s.record_access(
            db,
            key,
            lfu.touched(
                value,
                self.lfu_log_factor,
                self.lfu_decay_time,
                self.lfu_minutes,
                self.lfu_tick,
                value is None and evicted is not None and key in evicted,
            ),
        )

    def idle_ms(self, db: int, key: bytes) -> int:
        """OBJECT IDLETIME (in ms): time since the key's last recorded access."""
        at = self.shard_for(key).accesses(db).get(key, self.born)
        return max(0, int(time.time() * 1000) - at)

    def frequency(self, db: int, key: bytes) -> int:
        """OBJECT FREQ: the key's LFU counter, decayed to now."""
        return lfu.decayed(
            self.shard_for(key).accesses(db).get(key), self.lfu_decay_time, lfu.minutes()
        )

    def set_access(self, db: int, key: bytes, idle_s: int | None, freq: int | None) -> None:
        """RESTORE IDLETIME/FREQ (objectSetLRUOrLFU): the one that fits the policy."""
        s = self.shard_for(key)
        if self.lfu:
            if freq is not None:
                s.record_access(db, key, lfu.packed(freq, self.lfu_log_factor))
        elif idle_s is not None:
            # as if not used since: the clock's last bit clear
            s.record_access(db, key, (int(time.time() * 1000) - idle_s * 1000) & ~1)
