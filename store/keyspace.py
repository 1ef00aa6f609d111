"""The keyspace: databases split across DbSlice shards, with TTLs, lazy and active expiry.

Every command reaches keys through this object. It routes a key to its shard
(`shard_for`), keeps each shard's deadline index in step with every write, and is the one
place keys are deleted at their deadline: on access (lazy expiry: a key whose deadline
passed is deleted, and its `expired` event raised, before the command sees it) and in
`expire_due`, which the active-expiry timer (store/expiry/active.py) calls when deadlines
fall due and which deletes due keys within the budget it is given. Both count
`expired_keys` and record lag here.

What happens to the outside world goes through two doors, both given at construction:
- `events` (store/events.py, Redis's notify.c): keyspace notifications and the journal,
  and later tracking invalidations and evictions. Commands raise events with
  `ks.notify(cls, event, db, key)` after testing `ks.notify_flags`, so events cost nothing
  while nobody wants them.
- `timer`: told when a write sets a deadline earlier than the one it is armed for
  (`timer.next_deadline`, read inline, so a TTL that is not the earliest costs nothing).
Modified keys are reported to their observers (`observe`): WATCHing connections, whose
transactions then fail, and the blocking-operations registry, for keys clients wait on.

Deadlines are integer milliseconds since the epoch; a key is expired once
`deadline < now`, as in Redis's keyIsExpired.
"""

from __future__ import annotations

import random
import time
from binascii import crc_hqx
from itertools import islice
from typing import Any, Protocol

from . import events as ev
from .clock import now_ms
from .db_slice import SLOTS, DbSlice, key_slot
from .events import KeyspaceEvents
from .expiry.stats import LagStats
from .types import EncodingLimits

CHUNK = 64  # keys taken from an index between two looks at the clock


class Observer(Protocol):
    def key_modified(self, db: int, key: bytes) -> None: ...


class ExpiryTimer(Protocol):
    next_deadline: float

    def reschedule(self, deadline: int) -> None: ...


class Keyspace:
    def __init__(
        self, databases: int, shards: int, events: KeyspaceEvents, timer: ExpiryTimer
    ) -> None:
        self.databases = databases
        self.limits = EncodingLimits()  # when small aggregates convert (OBJECT ENCODING)
        self.shards = [DbSlice(databases) for _ in range(shards)]
        # slot -> shard, so shard_for is one table look-up after the CRC.
        self.slot_shard = [self.shards[slot % shards] for slot in range(SLOTS)]
        self.watchers: dict[tuple[int, bytes], set[Observer]] = {}  # observers per key
        self.events = events
        self.notify = events.notify  # notifyKeyspaceEvent
        self.notify_flags = events.flags
        self.timer = timer
        self.next_shard = 0  # where the next expire_due starts
        # Persistence (store/persistence), both None unless in use: the append-only file,
        # told of every key deleted at its deadline (Redis propagates it as a DEL), and
        # the running point-in-time snapshot, which must see a key before active expiry
        # deletes it (commands reach keys through methods it wraps while it runs).
        self.aof: Any = None
        self.snapshot: Any = None
        events.attach(self)
        self.reset_stats()

    def reset_stats(self) -> None:
        self.hits = self.misses = 0
        self.expired_keys = 0
        self.expire_lag = LagStats()
        self.expire_cycle_ms = 0.0  # time spent in active-expiry steps
        self.expire_time_cap_reached = 0  # steps that ran out of budget

    # -- routing ---------------------------------------------------------------------

    # Routing is written out inline in the hot methods below. `123 in key` ('{'): an int
    # operand is a memchr, while `b'{' in key` takes a buffer-protocol path ~8x slower.
    def shard_for(self, key: bytes) -> DbSlice:
        if 123 in key:
            return self.slot_shard[key_slot(key)]
        return self.slot_shard[crc_hqx(key, 0) & (SLOTS - 1)]

    # -- reads -----------------------------------------------------------------------

    def read(self, db: int, key: bytes) -> Any:
        """Look a key up for a read command: lazy expiry, hit/miss stats, `keymiss`."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        v = s.data[db].get(key)
        if v is not None:
            exp = s.expires[db]
            if not exp or key not in exp or exp[key] >= now_ms():
                self.hits += 1
                return v
            self._expire(s, db, key)
        self.misses += 1
        if self.notify_flags & ev.KEY_MISS:
            self.notify(ev.KEY_MISS, b'keymiss', db, key)
        return None

    def lookup(self, db: int, key: bytes) -> Any:
        """Look a key up for a write command: lazy expiry only."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        v = s.data[db].get(key)
        if v is not None:
            exp = s.expires[db]
            if exp and key in exp and exp[key] < now_ms():
                self._expire(s, db, key)
                return None
        return v

    def lookup_for_update(self, db: int, key: bytes) -> tuple[Any, dict[bytes, Any]]:
        """lookup for a read-modify-write command (INCR, APPEND): returns the value (or
        None) and the shard dict to store the new value in, routing the key once. The
        caller stores with `data[key] = new` and then calls `updated(db, key)`."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        data = s.data[db]
        v = data.get(key)
        if v is not None:
            exp = s.expires[db]
            if exp and key in exp and exp[key] < now_ms():
                self._expire(s, db, key)
                return None, data
        return v, data

    def updated(self, db: int, key: bytes) -> None:
        """A value was changed in place (lookup_for_update, a stream, the journal): tell
        the key's observers (WATCHers, blocked clients)."""
        if self.watchers:
            self.touch(db, key)

    def exists(self, db: int, key: bytes) -> bool:
        return self.lookup(db, key) is not None

    def deadline(self, db: int, key: bytes) -> int | None:
        """The key's deadline in ms, or None when it has none (or does not exist)."""
        if self.lookup(db, key) is None:
            return None
        return self.shard_for(key).expires[db].get(key)

    # -- writes ----------------------------------------------------------------------

    def set(self, db: int, key: bytes, value: Any, deadline: int | None = None) -> None:
        """Store a value, replacing any TTL with `deadline` (None: no TTL), as SET does."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        exp = s.expires[db]
        old = exp.get(key)
        if old is not None and old < now_ms():
            # Redis's setKey looks the key up first: an expired old value is
            # expired (counted, 'expired' event) before the new one is added.
            self._expire(s, db, key)
            old = None
        s.data[db][key] = value
        if deadline is not None:
            exp[key] = s.index.add(db, key, deadline, old)
            if deadline < self.timer.next_deadline:
                self.timer.reschedule(deadline)
        elif old is not None:
            del exp[key]
            s.index.discard()
        if self.watchers:
            self.touch(db, key)

    def set_pairs(self, db: int, args: list[bytes]) -> None:
        """MSET: store each key args[1], args[3], ... with the value after it, as `set`
        without a TTL does, routing each key inline rather than calling `set` per key."""
        slot_shard = self.slot_shard
        pairs = iter(args)
        next(pairs)
        for key, value in zip(pairs, pairs):
            s = slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
            exp = s.expires[db]
            if exp and key in exp:
                self.set(db, key, value)  # drops (or first expires) the old TTL
            else:
                s.data[db][key] = value
        if self.watchers:
            for i in range(1, len(args), 2):
                self.touch(db, args[i])

    def overwrite(self, db: int, key: bytes, value: Any) -> None:
        """Store a value keeping the key's TTL, as APPEND, INCR and SETRANGE do."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        s.data[db][key] = value
        if self.watchers:
            self.touch(db, key)

    def delete(self, db: int, key: bytes) -> bool:
        """Delete a key; True if it existed (an expired key does not count)."""
        s = self.shard_for(key)
        data = s.data[db]
        if key not in data:
            return False
        exp = s.expires[db]
        if key in exp:
            if exp[key] < now_ms():
                self._expire(s, db, key)
                return False
            del exp[key]
            s.index.discard()
        del data[key]
        if self.watchers:
            self.touch(db, key)
        return True

    def set_deadline(self, db: int, key: bytes, deadline: int) -> None:
        """Give an existing key a TTL (the caller checked the key exists)."""
        s = self.shard_for(key)
        exp = s.expires[db]
        exp[key] = s.index.add(db, key, deadline, exp.get(key))
        if deadline < self.timer.next_deadline:
            self.timer.reschedule(deadline)
        if self.watchers:
            self.touch(db, key)

    def persist(self, db: int, key: bytes) -> bool:
        """Remove a key's TTL; True if it had one."""
        if self.lookup(db, key) is None:
            return False
        s = self.shard_for(key)
        exp = s.expires[db]
        if key not in exp:
            return False
        del exp[key]
        s.index.discard()
        if self.watchers:
            self.touch(db, key)
        return True

    # -- expiry: the one place keys are deleted at their deadline -------------------------

    def _expire(self, s: DbSlice, db: int, key: bytes) -> None:
        """Lazy expiry: delete one key whose deadline passed, found by an access."""
        del s.data[db][key]
        deadline = s.expires[db].pop(key)
        s.index.discard()
        self.expired_keys += 1
        self.expire_lag.record(now_ms() - deadline)
        if self.aof is not None:
            self.aof.expired(db, key)
        if self.watchers:
            self.touch(db, key)
        if self.notify_flags & ev.EXPIRED:
            self.notify(ev.EXPIRED, b'expired', db, key, deadline)

    def expire_due(self, budget_s: float) -> bool:
        """Active expiry: delete due keys, shard by shard, until none is left or `budget_s`
        seconds are spent; True if due keys remain. The keys of each database expired in
        one call leave as one batch (`events.expired_batch`: one coalesced dispatch on
        __keyevent@db__:expired). A shard that ran out of budget is where the next call
        starts, so no shard starves during a mass expiry."""
        start = time.perf_counter()
        stop = start + budget_s
        now = now_ms()
        batches: dict[int, tuple[list[bytes], list[int]]] = {}
        record_lag = self.expire_lag.record
        snapshot, aof = self.snapshot, self.aof
        shards = self.shards
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
                            if snapshot is not None:
                                snapshot.before(s, db, key)
                            if aof is not None:
                                aof.expired(db, key)
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
            self.expired_keys += len(keys)
            if self.watchers:
                for key in keys:
                    self.touch(db, key)
            self.events.expired_batch(db, keys, deadlines, now)
        self.expire_cycle_ms += (time.perf_counter() - start) * 1000
        if more:
            self.expire_time_cap_reached += 1
        return more

    def earliest_deadline(self) -> int | None:
        """The earliest deadline any shard's index holds (stale entries included)."""
        earliest = [d for d in (s.index.earliest() for s in self.shards) if d is not None]
        return min(earliest) if earliest else None

    # -- whole databases ---------------------------------------------------------------

    def dbsize(self, db: int) -> int:
        return sum(len(s.data[db]) for s in self.shards)

    def volatile_count(self, db: int) -> int:
        return sum(len(s.expires[db]) for s in self.shards)

    def keys(self, db: int) -> list[bytes]:
        """Every key of a database (expired ones not yet reaped included): a snapshot
        list, so callers may delete while walking it."""
        out: list[bytes] = []
        for s in self.shards:
            out.extend(s.data[db])
        return out

    def random_key(self, db: int) -> bytes | None:
        """RANDOMKEY: a random live key or None."""
        candidates = [s for s in self.shards if s.data[db]]
        for _ in range(100):
            if not candidates:
                return None
            s = random.choice(candidates)
            data = s.data[db]
            if not data:
                candidates.remove(s)
                continue
            key = random.choice(list(data)) if len(data) < 64 else _random_dict_key(data)
            if self.lookup(db, key) is not None:
                return key
        return None

    def flushdb(self, db: int) -> None:
        if self.watchers:
            for s in self.shards:
                for key in s.data[db]:
                    self.touch(db, key)
        for s in self.shards:
            s.index.clear(db)  # reads expires[db]: before it is replaced
            s.data[db] = {}
            s.expires[db] = {}

    def flushall(self) -> None:
        for db in range(self.databases):
            self.flushdb(db)

    def swapdb(self, a: int, b: int) -> None:
        for s in self.shards:
            s.data[a], s.data[b] = s.data[b], s.data[a]
            s.expires[a], s.expires[b] = s.expires[b], s.expires[a]
            s.index.swap(a, b)
        if self.watchers:
            # touchAllWatchedKeysInDb: a key of either database changes in both (after
            # the swap, so observers see what each database now holds).
            for s in self.shards:
                for key in s.data[a].keys() | s.data[b].keys():
                    self.touch(a, key)
                    self.touch(b, key)

    # -- observers of modified keys (WATCH, blocked clients) -----------------------------

    def observe(self, dk: tuple[int, bytes], observer: Observer) -> None:
        """Call `observer.key_modified(db, key)` whenever the key changes (written,
        deleted, expired, flushed, swapped) until `unobserve`."""
        self.watchers.setdefault(dk, set()).add(observer)

    def unobserve(self, dk: tuple[int, bytes], observer: Observer) -> None:
        observers = self.watchers.get(dk)
        if observers is not None:
            observers.discard(observer)
            if not observers:
                del self.watchers[dk]

    def touch(self, db: int, key: bytes) -> None:
        """signalModifiedKey: tell the key's observers (callers test `self.watchers`
        first, so this costs nothing while no key is observed)."""
        observers = self.watchers.get((db, key))
        if observers:
            for o in list(observers):
                o.key_modified(db, key)

    # -- keyspace events -------------------------------------------------------------

    def set_event_flags(self, publish_flags: int, journal_flags: int) -> None:
        self.events.set_flags(publish_flags, journal_flags)
        self.notify_flags = self.events.flags


def _random_dict_key(d: dict[bytes, Any]) -> bytes:
    """A random key of a large dict without copying it all."""
    return next(islice(d, random.randrange(len(d)), None))
