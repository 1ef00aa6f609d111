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

Memory: every key is charged, when written, the bytes store/memory/sizes.py estimates for
it, and uncharged the same amount when it goes; `used` is the total (per database in
`db_used`, so FLUSHDB and SWAPDB stay O(1)). A string's charge is a function of the string,
so nothing is stored for it; an aggregate's charge is kept in its shard's `charged` dict,
because aggregates change in place after the lookup that found them: `lookup` marks
them (`dirty`) and `settle` re-estimates the marked ones, O(samples) each, before anyone
reads `used` (the eviction gate, INFO, MEMORY). The connection runs the eviction gate
(store/memory/eviction.py) before a command whenever `used > check_at`, which is the
room left under `maxmemory` (infinite without one) or -1 while marked aggregates wait.

Values left packed by an RDB load (store/types/packed.py) are decoded on their first
lookup (`read`, `lookup`, `lookup_for_update`; `materialize` for readers outside them):
one `type(v) is Packed` test on a hit, inside the aggregate branch where there is one
(GET in process: 1.86 -> 1.88 us, within the noise). Decoding stores the real value in
the shard's dict and moves the key's charge to its value_size.

Strings are `bytes`, shared freely (COPY, replies, scripts) because nothing changes them.
A command that changes a string in place (SETBIT, BITFIELD, SETRANGE, APPEND, PFADD, as
Redis changes its sds) asks `lookup(db, key, buffer=True)`, which turns the stored bytes
into a bytearray once, and then writes into it: a run of such writes costs what each
changes, not a copy of the whole string each time (a BITFIELD at the end of a 1 MB
bitmap: 55 -> 10.5 us of server CPU a request, docs/benchmarks.md). A string shorter
than BUFFER_MIN is not turned into a bytearray: the writer gets a copy, stored back as
bytes (`string_written`), because a stored bytearray with its charge entry and size mark
costs more RSS than copying a short string costs time (200,000 keys SET and APPENDed
once: 444 bytes of RSS a key held as bytearrays, 206 copied).
A bytearray is charged as an aggregate (it changes in place after the lookup). Every
other lookup freezes it back into bytes (`_freeze`, one copy, as a GET's reply copies in
Redis), so commands, replies and scripts only ever see bytes; readers that only look
into the string (GETBIT, BITCOUNT, GETRANGE, STRLEN, PFCOUNT) ask `read(db, key,
buffer=True)` and take either. What walks the dicts directly (the snapshot's encoders,
the size model, lazy free) takes either too.

Access information (OBJECT IDLETIME/FREQ, eviction) is recorded by every lookup in the
shard's `access` dict: the LRU clock (ms, refreshed by the server's cron, one shared int
object per refresh so recording allocates nothing), or under an LFU policy (`lru` None)
Redis's 8-bit logarithmic counter with its decay time (store/memory/lfu.py). The clock's
last bit says whether the key was used since it was created: a new key gets `lru`
(even), a lookup or a write of an existing key `lru_used` (odd), and LRU eviction takes
keys not used again first (store/memory/eviction.py, "segmented" LRU).
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
from .lazyfree import DATA, REFS, LazyFree
from .memory import lfu
from .memory.sizes import KEY_OVERHEAD, TTL_OVERHEAD, shard_charges, value_size
from .resp import RedisError
from .types import EncodingLimits
from .types.packed import Packed

BUFFER_MIN = 512  # strings at least this long stay bytearrays once written in place

CHUNK = 64  # keys taken from an index between two looks at the clock


class Observer(Protocol):
    def key_modified(self, db: int, key: bytes) -> None: ...


class ExpiryTimer(Protocol):
    next_deadline: float
    keys_due_at: Any

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
        self.tracking: Any = None  # store/tracking.py while clients track keys
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
        # Memory and access information (see the module comment).
        self.used = 0
        self.db_used = [0] * databases
        self.dirty: set[tuple[int, bytes]] = set()
        # Redis's server.dirty as far as keys go: every write below that changes the data
        # set adds one. A write command that leaves it where it was changed nothing and is
        # not propagated (store/persistence/aof.py); it is also what rdb_changes_since_last_save
        # counts (store/persistence/manager.py). A command that changes a value in place
        # tells it with `updated` (or adds one itself on a hot path).
        self.changes = 0
        self.check_at: float = float('inf')  # run the eviction gate while used > check_at
        self.dirty_check: float = float('inf')  # check_at while aggregates wait to settle
        self.born = int(time.time() * 1000) & ~1  # the access time of keys never looked up
        # the LRU clock for a new key (even) and for a key used again (odd); both None
        # under LFU and no-touch
        self.lru: int | None = self.born
        self.lru_used: int | None = self.born | 1
        self.lfu = False
        self.no_touch = False
        self.lfu_log_factor = 10
        self.lfu_decay_time = 1
        self.lfu_minutes = lfu.minutes()  # LFU's minute clock, refreshed by the cron
        self.lfu_tick = lfu.tick()  # and its tick (tenths of a second), refreshed with it
        self.evicted: lfu.Evicted | None = None  # keys evicted lately, under an LFU policy
        # CLIENT PAUSE: a key past its deadline reads as missing but is not deleted
        self.expire_paused = False
        self.lazyfree = LazyFree(self)  # FLUSHALL ASYNC, UNLINK, lazyfree-lazy-*
        self.log: Any = None  # the server's log(msg, level), for values that fail to decode
        # what reading such a value does (the server's: Redis's assertion on the listpack,
        # the process ends); None: the command gets an error
        self.corrupt: Any = None
        events.attach(self)
        timer.keys_due_at = self.keys_due_at
        self.reset_stats()

    def reset_stats(self) -> None:
        self.hits = self.misses = 0
        self.expired_keys = 0
        self.expire_lag = LagStats()
        self.expire_cycle_ms = 0.0  # time spent in active-expiry steps
        self.expire_time_cap_reached = 0  # steps that ran out of budget
        self.lazyfree.reset_stats()  # lazyfreed_objects

    # -- routing ---------------------------------------------------------------------

    # Routing is written out inline in the hot methods below. `123 in key` ('{'): an int
    # operand is a memchr, while `b'{' in key` takes a buffer-protocol path ~8x slower.
    def shard_for(self, key: bytes) -> DbSlice:
        if 123 in key:
            return self.slot_shard[key_slot(key)]
        return self.slot_shard[crc_hqx(key, 0) & (SLOTS - 1)]

    # -- reads -----------------------------------------------------------------------

    def read(self, db: int, key: bytes, buffer: bool = False, touch: bool = True) -> Any:
        """Look a key up for a read command: lazy expiry, hit/miss stats, `keymiss`, and
        the access unless not `touch` (read_notouch). `buffer`: a string changed in place
        may come as its bytearray."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        v = s.data[db].get(key)
        if v is not None:
            deadline = s.expires[db].get(key)
            if deadline is None or deadline >= now_ms():
                self.hits += 1
                if touch:
                    clock = self.lru_used
                    if clock is not None:
                        s.access[db][key] = clock
                    else:
                        self._access(s, db, key)
                if type(v) is not bytes:
                    if type(v) is Packed:
                        return self._unpack(s, db, key, v)
                    if type(v) is bytearray and not buffer:
                        return self._freeze(s, db, key, v)
                return v
            self._expire(s, db, key)
        self.misses += 1
        if self.notify_flags & ev.KEY_MISS:
            self.notify(ev.KEY_MISS, b'keymiss', db, key)
        return None

    def untouched(self, fn: Any, *args: Any) -> Any:
        """fn(*args) with no access recorded by its lookups (Redis's LOOKUP_NOTOUCH, and
        CLIENT NO-TOUCH)."""
        saved = self.lru, self.lru_used, self.no_touch
        self.lru = self.lru_used = None
        self.no_touch = True
        try:
            return fn(*args)
        finally:
            self.lru, self.lru_used, self.no_touch = saved

    def read_notouch(self, db: int, key: bytes) -> Any:
        """`read` for EXISTS, TYPE, OBJECT, TTL: not an access (LOOKUP_NOTOUCH)."""
        return self.read(db, key, False, False)

    def lookup(self, db: int, key: bytes, buffer: bool = False) -> Any:
        """Look a key up for a write command: lazy expiry, and an aggregate is marked
        for re-estimating its size (the command may change it in place). `buffer`: a
        string comes as a bytearray to change in place (then `string_written`)."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        v = s.data[db].get(key)
        if v is not None:
            deadline = s.expires[db].get(key)
            if deadline is not None and deadline < now_ms():
                self._expire(s, db, key)
                return None
            clock = self.lru_used
            if clock is not None:
                s.access[db][key] = clock
            else:
                self._access(s, db, key)
            if type(v) is not bytes:
                if type(v) is Packed:
                    v = self._unpack(s, db, key, v)
                elif type(v) is bytearray and not buffer:
                    return self._freeze(s, db, key, v)
                self.mark(db, key)
            elif buffer:
                if len(v) < BUFFER_MIN:
                    return bytearray(v)  # a copy, which string_written stores back
                v = s.data[db][key] = bytearray(v)
                s.charged[db][key] = (len(v) + 48) & -16  # as bytes, until settled
                self.mark(db, key)
        return v

    def lookup_notouch(self, db: int, key: bytes) -> Any:
        """`lookup` without recording an access."""
        return self.untouched(self.lookup, db, key)

    def lookup_for_update(self, db: int, key: bytes) -> tuple[Any, dict[bytes, Any]]:
        """lookup for a read-modify-write command (INCR, APPEND): returns the value (or
        None) and the shard dict to store the new value in, routing the key once. The
        caller stores with `data[key] = new` and then calls `updated(db, key)`."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        data = s.data[db]
        v = data.get(key)
        if v is not None:
            deadline = s.expires[db].get(key)
            if deadline is not None and deadline < now_ms():
                self._expire(s, db, key)
                return None, data
            clock = self.lru_used
            if clock is not None:
                s.access[db][key] = clock
            else:
                self._access(s, db, key)
            if type(v) is not bytes:
                if type(v) is Packed:
                    v = self._unpack(s, db, key, v)
                elif type(v) is bytearray:
                    return self._freeze(s, db, key, v), data
                self.mark(db, key)
        return v, data

    def materialize(self, db: int, key: bytes) -> Any:
        """The key's value as stored (no expiry, no access recorded), decoded if it was
        left packed at load: for readers outside the lookups (MEMORY USAGE, the blocking
        registry)."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        v = s.data[db].get(key)
        if type(v) is Packed:
            return self._unpack(s, db, key, v)
        return v

    def value_class(self, db: int, key: bytes) -> type:
        """The class of the key's value (NoneType for none), without decoding it."""
        v = self.shard_for(key).data[db].get(key)
        return v.cls if type(v) is Packed else type(v)

    def _unpack(self, s: DbSlice, db: int, key: bytes, p: Packed) -> Any:
        """Decode a value left packed at load (types/packed.py) into its shard's dict, its
        charge moved to the real value's. A blob that fails to decode (one RESTORE kept
        unsanitized, or a writer's bug under a valid checksum) is what Redis meets reading
        a corrupt listpack: `corrupt` ends the process with its assertion; without it the
        blob stays packed, the command gets an error and the log a line."""
        try:
            v = Packed.decode(p)
        except Exception as e:  # noqa: BLE001 - whatever a bad blob raises
            if self.corrupt is not None:
                self.corrupt()  # does not return
            if self.log is not None:
                self.log(f'Corrupt packed value of key {key!r} in DB {db}: {e}', '#')
            raise RedisError(
                f'ERR corrupt value of this key loaded from the RDB file: {e}'
            ) from None
        s.data[db][key] = v
        self._recharge(s, db, key, v)
        return v

    def _freeze(self, s: DbSlice, db: int, key: bytes, v: bytearray) -> bytes:
        """A string changed in place, stored back as bytes for a lookup that hands it out;
        its charge becomes a string's again."""
        b = s.data[db][key] = bytes(v)
        n = ((len(b) + 48) & -16) - s.charged[db].pop(key, 0)
        self.used += n
        self.db_used[db] += n
        return b

    def _recharge(self, s: DbSlice, db: int, key: bytes, v: Any) -> None:
        """Charge an aggregate what value_size says it costs now, in place of its old
        charge (after a command changed it, or once decoded)."""
        charged = s.charged[db]
        size = value_size(v)
        n = size - charged.get(key, 0)
        charged[key] = size
        self.used += n
        self.db_used[db] += n

    def updated(self, db: int, key: bytes) -> None:
        """A value was changed in place (a stream, the journal): re-estimate its size,
        tell the key's observers (WATCHers, blocked clients)."""
        self.mark(db, key)
        self.changes += 1
        if self.watchers:
            self.touch(db, key)

    def string_written(self, db: int, key: bytes, v: bytearray, signal: bool = True) -> None:
        """A string from lookup(buffer=True) was changed: the stored bytearray itself, or
        for a string shorter than BUFFER_MIN a copy, stored back as bytes here. WATCH and
        client tracking are told unless not `signal`."""
        data = self.shard_for(key).data[db]
        old = data[key]
        if old is not v:
            new = data[key] = bytes(v)
            n = ((len(new) + 48) & -16) - ((len(old) + 48) & -16)
            self.used += n
            self.db_used[db] += n
        self.changes += 1
        if self.watchers and signal:
            self.touch(db, key)

    def replaced(self, db: int, key: bytes, old: bytes, new: bytes) -> None:
        """A string found by lookup_for_update was replaced in its dict by `new` (INCR)."""
        n = ((len(new) + 48) & -16) - ((len(old) + 48) & -16)
        if n:  # (a counter mostly keeps its size class)
            self.used += n
            self.db_used[db] += n
        self.changes += 1
        if self.watchers:
            self.touch(db, key)

    def exists(self, db: int, key: bytes) -> bool:
        return self.lookup_notouch(db, key) is not None

    def stored(self, db: int, key: bytes) -> tuple[bool, int | None]:
        """Whether the key is stored, expired or not, and its deadline, without lazy
        expiry (WATCH looks at a key as Redis's keyIsExpired does, deleting nothing)."""
        s = self.shard_for(key)
        if key not in s.data[db]:
            return False, None
        return True, s.expires[db].get(key)

    def deadline(self, db: int, key: bytes) -> int | None:
        """The key's deadline in ms, or None when it has none (or does not exist)."""
        if self.lookup_notouch(db, key) is None:
            return None
        return self.deadline_of_found(db, key)

    def deadline_of_found(self, db: int, key: bytes) -> int | None:
        """`deadline` of a key the caller has just looked up and found (TTL): no second
        look-up."""
        return self.shard_for(key).expires[db].get(key)

    # -- writes ----------------------------------------------------------------------

    def set(
        self, db: int, key: bytes, value: Any, deadline: int | None = None, signal: bool = True
    ) -> None:
        """Store a value, replacing any TTL with `deadline` (None: no TTL), as SET does.
        `signal=False`: without telling WATCH and client tracking (Redis's dbAdd alone)."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        exp = s.expires[db]
        old = exp.get(key)
        if old is not None and old < now_ms():
            # Redis's setKey looks the key up first: an expired old value is
            # expired (counted, 'expired' event) before the new one is added.
            self._expire(s, db, key)
            old = exp.get(key)  # None, unless paused clients keep the key (see _expire)
        data = s.data[db]
        prev = data.get(key)
        data[key] = value
        if type(value) is bytes:
            size = (len(value) + 48) & -16
        elif type(value) is bytearray and len(value) < BUFFER_MIN:
            value = data[key] = bytes(value)
            size = (len(value) + 48) & -16
        else:
            size = 0
            self.mark(db, key)
        if prev is None:
            size += ((len(key) + 48) & -16) + KEY_OVERHEAD
        elif type(prev) is bytes:
            size -= (len(prev) + 48) & -16
        else:
            size -= s.charged[db].pop(key, 0)
            if prev is not value:
                self.lazyfree.replaced(prev)
        if deadline is not None:
            exp[key] = s.index.add(db, key, deadline, old)
            if old is None:
                size += TTL_OVERHEAD
            if deadline < self.timer.next_deadline:
                self.timer.reschedule(deadline)
        elif old is not None:
            del exp[key]
            s.index.discard()
            size -= TTL_OVERHEAD
        self.used += size
        self.db_used[db] += size
        clock = self.lru if prev is None else self.lru_used
        if clock is not None:
            s.access[db][key] = clock
        else:
            self._access(s, db, key)
        self.changes += 1
        if self.watchers and signal:
            self.touch(db, key)

    def set_pairs(self, db: int, args: list[bytes]) -> None:
        """MSET: store each key args[1], args[3], ... with the value after it, as `set`
        without a TTL does, routing each key inline rather than calling `set` per key."""
        slot_shard = self.slot_shard
        pairs = iter(args)
        next(pairs)
        new, used = self.lru, self.lru_used
        size = 0
        for key, value in zip(pairs, pairs):
            s = slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
            exp = s.expires[db]
            if exp and key in exp:
                self.set(db, key, value)  # drops (or first expires) the old TTL
                continue
            clock = used if key in s.data[db] else new
            size += self._store(s, db, key, value)
            if clock is not None:
                s.access[db][key] = clock
            else:
                self._access(s, db, key)
        self.used += size
        self.db_used[db] += size
        self.changes += 1
        if self.watchers:
            for i in range(1, len(args), 2):
                self.touch(db, args[i])

    def overwrite(self, db: int, key: bytes, value: Any, signal: bool = True) -> None:
        """Store a value keeping the key's TTL, as APPEND, INCR and SETRANGE do (`signal`
        as for `set`)."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        size = self._store(s, db, key, value)
        self.used += size
        self.db_used[db] += size
        self.changes += 1
        if self.watchers and signal:
            self.touch(db, key)

    def _store(self, s: DbSlice, db: int, key: bytes, value: Any) -> int:
        """Put `value` under `key` in shard `s`; the change of the key's charge (without
        the TTL's), for the caller to add. An aggregate is marked for settling, and one it
        replaces goes to the lazy-free queue. (`set` has this inline: SET's hot path.)"""
        data = s.data[db]
        prev = data.get(key)
        data[key] = value
        if type(value) is bytes:
            size = (len(value) + 48) & -16
        elif type(value) is bytearray and len(value) < BUFFER_MIN:
            value = data[key] = bytes(value)
            size = (len(value) + 48) & -16
        else:
            size = 0
            self.mark(db, key)
        if prev is None:
            return size + ((len(key) + 48) & -16) + KEY_OVERHEAD
        if type(prev) is bytes:
            return size - ((len(prev) + 48) & -16)
        if prev is not value:
            self.lazyfree.replaced(prev)
        return size - s.charged[db].pop(key, 0)

    def delete(self, db: int, key: bytes, lazy: bool | str | None = None) -> bool:
        """Delete a key; True if it existed (an expired key does not count). `lazy`: True
        frees a big value in steps (UNLINK), a lazyfree-lazy-* name ('user-del') does when
        that parameter is on; None frees it now (a server-side delete, where the value
        may live on under another key: RENAME, MOVE)."""
        s = self.shard_for(key)
        data = s.data[db]
        v = data.get(key)
        if v is None:
            return False
        exp = s.expires[db]
        size = 0
        if key in exp:
            if exp[key] < now_ms():
                self._expire(s, db, key)
                return False
            del exp[key]
            s.index.discard()
            size = TTL_OVERHEAD
        del data[key]
        size += self._forget(s, db, key, v, lazy)
        self.used -= size
        self.db_used[db] -= size
        self.changes += 1
        if self.watchers:
            self.touch(db, key)
        return True

    def _forget(
        self, s: DbSlice, db: int, key: bytes, value: Any, lazy: bool | str | None = None
    ) -> int:
        """A key left `s.data[db]`: drop its access and charge entries and return its
        charge (without the TTL's). `lazy` as for `delete`: whether a big value is freed
        in steps (store/lazyfree.py) rather than when the caller drops it."""
        s.access[db].pop(key, None)
        if type(value) is bytes:
            size = (len(value) + 48) & -16
        else:
            size = s.charged[db].pop(key, 0)
            if lazy is True or (isinstance(lazy, str) and self.lazyfree.enabled(lazy)):
                self.lazyfree.free_value(value)
        return size + ((len(key) + 48) & -16) + KEY_OVERHEAD

    def set_deadline(self, db: int, key: bytes, deadline: int) -> None:
        """Give an existing key a TTL (the caller checked the key exists)."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        self._set_deadline(s, db, key, deadline, s.expires[db].get(key))

    def lookup_set_deadline(self, db: int, key: bytes, deadline: int, now: int) -> bool:
        """EXPIRE's common case with the key routed once: the write look-up (lazy expiry
        against EXPIRE's reading of the clock, `now`; the access; the value itself is not
        needed) and then `set_deadline`. False, with nothing set, when the key does not
        exist."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        if key not in s.data[db]:
            return False
        old = s.expires[db].get(key)
        if old is not None and old < now:
            self._expire(s, db, key)
            return False
        clock = self.lru_used
        if clock is not None:
            s.access[db][key] = clock
        else:
            self._access(s, db, key)
        self._set_deadline(s, db, key, deadline, old)
        return True

    def _set_deadline(self, s: DbSlice, db: int, key: bytes, deadline: int, old: Any) -> None:
        exp = s.expires[db]
        exp[key] = s.index.add(db, key, deadline, old)
        if old is None:
            self.used += TTL_OVERHEAD
            self.db_used[db] += TTL_OVERHEAD
        if deadline < self.timer.next_deadline:
            self.timer.reschedule(deadline)
        self.changes += 1
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
        self.used -= TTL_OVERHEAD
        self.db_used[db] -= TTL_OVERHEAD
        self.changes += 1
        if self.watchers:
            self.touch(db, key)
        return True

    # -- expiry: the one place keys are deleted at their deadline -------------------------

    def _expire(self, s: DbSlice, db: int, key: bytes) -> None:
        """Lazy expiry: delete one key whose deadline passed, found by an access (not
        while clients are paused: the caller then treats it as missing all the same)."""
        if self.expire_paused:
            return
        size = self._forget(s, db, key, s.data[db].pop(key), 'expire') + TTL_OVERHEAD
        self.used -= size
        self.db_used[db] -= size
        deadline = s.expires[db].pop(key)
        s.index.discard()
        self.expired_keys += 1
        self.expire_lag.record(now_ms() - deadline)
        if self.aof is not None:
            self.aof.expired(db, key)
        if self.watchers:
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
        hooked = self.snapshot is not None or self.aof is not None
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
                            freed = self._expire_hooked(s, db, deadline, keys, out)
                        else:
                            freed = self._expire_run(s, db, deadline, keys, out)
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
        tracking = self.tracking
        journal_deadlines = self.events.journal_flags & ev.EXPIRED
        for db, (keys, counts) in batches.items():
            if not keys:
                continue
            self.expired_keys += len(keys)
            lag = self.expire_lag
            for deadline, count in counts:
                lag.record(now - deadline, count)
            if tracking is not None:
                tracking.keys_modified(keys)  # no client caused these (NOLOOP)
            if len(self.watchers) > (tracking is not None):  # more than tracking's SENTINEL
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
        if tracking is not None:
            tracking.flush()  # the invalidations leave with the batch's `expired` events
        self.expire_cycle_ms += (time.perf_counter() - start) * 1000
        if more:
            self.expire_time_cap_reached += 1
        return more

    def _expire_run(
        self, s: DbSlice, db: int, deadline: int, keys: list[bytes], out: list[bytes]
    ) -> int:
        """expire_due's loop over one run of keys filed under `deadline`: each key still
        due then (not re-timed, persisted or deleted since) is deleted and appended to
        `out`. Returns the bytes freed without the per-key overheads."""
        exp, data, access = s.expires[db], s.data[db], s.access[db]
        freed = 0
        for key in keys:
            if exp.get(key) == deadline:
                del exp[key]
                value = data.pop(key)
                access.pop(key, None)
                if type(value) is bytes:
                    freed += ((len(value) + 48) & -16) + ((len(key) + 48) & -16)
                else:
                    freed += self._forget(s, db, key, value, 'expire') - KEY_OVERHEAD
                out.append(key)
        return freed

    def _expire_hooked(
        self, s: DbSlice, db: int, deadline: int, keys: list[bytes], out: list[bytes]
    ) -> int:
        """expire_due's loop over one run while a snapshot or the AOF must hear of each
        key first: the snapshot copies it out before it goes (a point-in-time image holds
        it), the AOF logs its DEL. Appends the deleted keys to `out`; returns the bytes
        freed without the per-key overheads."""
        snapshot, aof = self.snapshot, self.aof
        exp, data = s.expires[db], s.data[db]
        freed = 0
        for key in keys:
            if exp.get(key) == deadline:
                if snapshot is not None:
                    snapshot.before(s, db, key)
                if aof is not None:
                    aof.expired(db, key)
                del exp[key]
                freed += self._forget(s, db, key, data.pop(key), 'expire') - KEY_OVERHEAD
                out.append(key)
        return freed

    def earliest_deadline(self) -> int | None:
        """The earliest deadline any shard's index holds (stale entries included)."""
        earliest = [d for d in (s.index.earliest() for s in self.shards) if d is not None]
        return min(earliest) if earliest else None

    def keys_due_at(self, deadline: int) -> int:
        """How many keys wait on exactly `deadline` in the shards' promoted buckets (stale
        entries included): the timer asks when it woke before them (store/expiry/active.py)."""
        return sum(s.index.due_at(deadline) for s in self.shards)

    # -- whole databases ---------------------------------------------------------------

    def dbsize(self, db: int) -> int:
        return sum(len(s.data[db]) for s in self.shards)

    def dbsize_all(self) -> int:
        return sum(len(d) for s in self.shards for d in s.data)

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

    def flushdb(self, db: int, lazy: bool = False) -> None:
        """Empty a database: its dicts are replaced by empty ones, so the keys are gone
        for every client at once. With `lazy` (FLUSHDB ASYNC, emptyDbAsync) the old dicts
        are freed in steps between commands (store/lazyfree.py), else when dropped here.
        Observers hear of the keys that existed (touchAllWatchedKeysInDb walks the
        watched keys, not the database). Counts as a change even when it was empty:
        Redis propagates FLUSHDB and FLUSHALL always."""
        self.changes += 1
        if self.watchers:
            for wdb, key in list(self.watchers):
                if wdb == db and key in self.shard_for(key).data[db]:
                    self.touch(db, key)
        for s in self.shards:
            index = s.index
            far, near = index.far[db], index.near[db]
            index.clear(db)  # reads expires[db]: before it is replaced
            data, expires, access, charged = s.data[db], s.expires[db], s.access[db], s.charged[db]
            s.data[db] = {}
            s.expires[db] = {}
            s.access[db] = {}
            s.charged[db] = {}
            if lazy and data:
                # drained from the end: index buckets and expires first, keys last
                parts = [(data, DATA), (charged, REFS), (access, REFS), (expires, REFS)]
                self.lazyfree.free_db([*parts, (near, REFS), (far, REFS)], len(data), data)
        self.used -= self.db_used[db]
        self.db_used[db] = 0
        if self.tracking is not None:
            self.tracking.flushed()  # a null invalidation to every tracking client

    def flushall(self, lazy: bool = False) -> None:
        tracking, self.tracking = self.tracking, None
        try:
            for db in range(self.databases):
                self.flushdb(db, lazy)
        finally:
            self.tracking = tracking
        if tracking is not None:
            tracking.flushed()  # one null invalidation per tracking client

    def swapdb(self, a: int, b: int) -> None:
        """Swap two databases' contents. Each observed key either database holds is
        looked at before the swap and reported after it, so observers see what each
        database now holds: a WATCH decides as Redis's touchAllWatchedKeysInDb
        (Connection.watch_swapped: a missing key replaced by a stale one is no change and
        is marked stale), another observer hears of a key its database held or gets live.
        A key a client blocks on is also signalled when the swap brings it, stale or not
        (scanDatabaseForReadyKeys). Tracking clients hear of every key of both databases
        (Redis 7.0 sends nothing, leaving caches stale)."""
        self.changes += 1
        # (db, key, held here, held there, there but expired) of each observed key
        seen: list[tuple[int, bytes, bool, bool, bool]] = []
        arriving: list[tuple[int, bytes]] = []  # keys a database gets, stale ones too
        if self.watchers:
            now = now_ms()
            for wdb, key in list(self.watchers):
                if wdb != a and wdb != b:
                    continue
                other = b if wdb == a else a
                s = self.shard_for(key)
                if key in s.data[other]:
                    arriving.append((wdb, key))
                here, there = key in s.data[wdb], key in s.data[other]
                if here or there:
                    deadline = s.expires[other].get(key) if there else None
                    seen.append((wdb, key, here, there, deadline is not None and deadline < now))
        for s in self.shards:
            s.data[a], s.data[b] = s.data[b], s.data[a]
            s.expires[a], s.expires[b] = s.expires[b], s.expires[a]
            s.access[a], s.access[b] = s.access[b], s.access[a]
            s.charged[a], s.charged[b] = s.charged[b], s.charged[a]
            s.index.swap(a, b)
        self.db_used[a], self.db_used[b] = self.db_used[b], self.db_used[a]
        for wdb, key, here, there, stale in seen:
            for o in list(self.watchers.get((wdb, key)) or ()):
                swapped = getattr(o, 'watch_swapped', None)
                if swapped is not None:  # a WATCH, which knows whether it saw the key stale
                    swapped(wdb, key, here, there, stale)
                elif here or not stale:
                    o.key_modified(wdb, key)
        # Blocked clients are served for every key the swap brings, even one past its
        # deadline (scanDatabaseForReadyKeys finds it with dictFind): serving expires it,
        # and its DEL is propagated, while the client goes on waiting.
        for dk in arriving:
            observers = self.watchers.get(dk)
            if observers:
                for o in list(observers):
                    if getattr(o, 'serves_stale_keys', False):
                        o.key_modified(*dk)
        tracking = self.tracking
        if tracking is not None:
            for s in self.shards:
                for key in s.data[a].keys() | s.data[b].keys():
                    tracking.key_modified(key)

    # -- memory and access information --------------------------------------------------

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
            v = s.data[db].get(key)
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
                used, s.charged[db] = shard_charges(s.data[db])
                total += used + len(s.expires[db]) * TTL_OVERHEAD
            self.db_used[db] = total
            self.used += total

    def key_size(self, db: int, key: bytes, samples: int = 5) -> int | None:
        """MEMORY USAGE: the key's bytes (value sampled as asked), or None."""
        v = self.lookup_notouch(db, key)
        if v is None:
            return None
        size = value_size(v, samples) + ((len(key) + 48) & -16) + KEY_OVERHEAD
        if key in self.shard_for(key).expires[db]:
            size += TTL_OVERHEAD
        return size

    def _access(self, s: DbSlice, db: int, key: bytes) -> None:
        """Record an access the slow way: the LFU counter, or nothing for a no-touch
        lookup (the fast path stores the LRU clock inline)."""
        if self.no_touch:
            return
        access = s.access[db]
        value = access.get(key)
        evicted = self.evicted
        access[key] = lfu.touched(
            value,
            self.lfu_log_factor,
            self.lfu_decay_time,
            self.lfu_minutes,
            self.lfu_tick,
            value is None and evicted is not None and key in evicted,
        )

    def idle_ms(self, db: int, key: bytes) -> int:
        """OBJECT IDLETIME (in ms): time since the key's last recorded access."""
        at = self.shard_for(key).access[db].get(key, self.born)
        return max(0, int(time.time() * 1000) - at)

    def frequency(self, db: int, key: bytes) -> int:
        """OBJECT FREQ: the key's LFU counter, decayed to now."""
        return lfu.decayed(
            self.shard_for(key).access[db].get(key), self.lfu_decay_time, lfu.minutes()
        )

    def set_access(self, db: int, key: bytes, idle_s: int | None, freq: int | None) -> None:
        """RESTORE IDLETIME/FREQ (objectSetLRUOrLFU): the one that fits the policy."""
        access = self.shard_for(key).access[db]
        if self.lfu:
            if freq is not None:
                access[key] = lfu.packed(freq, self.lfu_log_factor)
        elif idle_s is not None:
            access[key] = (int(time.time() * 1000) - idle_s * 1000) & ~1  # as if not used

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

    def touch(self, db: int, key: bytes, by_client: bool = True) -> None:
        """signalModifiedKey: tell the key's observers (callers test `self.watchers`
        first, so this costs nothing while no key is observed). `by_client` False: no
        client made the change (a lazy expiry, Redis's signalModifiedKey(NULL, ...)), so
        a BCAST NOLOOP client hears of it even if its own command found the key."""
        observers = self.watchers.get((db, key))
        if observers:
            for o in list(observers):
                o.key_modified(db, key)
        tracking = self.tracking
        if tracking is not None:  # client tracking's invalidations (store/tracking.py)
            tracking.key_modified(key, by_client)

    # -- keyspace events -------------------------------------------------------------

    def set_event_flags(self, publish_flags: int, journal_flags: int) -> None:
        self.events.set_flags(publish_flags, journal_flags)
        self.notify_flags = self.events.flags


def _random_dict_key(d: dict[bytes, Any]) -> bytes:
    """A random key of a large dict without copying it all."""
    return next(islice(d, random.randrange(len(d)), None))
