"""The keyspace: databases split across DbSlice shards, with TTLs, lazy and active expiry.

Every command reaches keys through this object. It routes a key to its shard
(`shard_for`), which owns the key (store/db_slice: its value, deadline, access and
charge, and the shard's deadline and slot indexes), and sets the policy around it: a
key a look-up finds past its deadline is expired before the command sees it, accesses
record the LRU clock or the LFU counter, writes are charged to the memory totals, and
whoever must hear of a change does. Routing is written out in the hot methods, which
make one call into the shard each (a GET, SET or HSET costs 1.5-2.7% more CPU instructions
than when the keyspace indexed the shard's dicts itself, an INCR, which makes two, 4.3%:
bench/instructions.py, docs/benchmarks.md). Its parts, one concern each, are mixins of
this class with no state of their own:
- store/keyspace_expiry.py: deleting keys at their deadline, lazily on access and in
  the active-expiry step (`expire_due`);
- store/keyspace_memory.py: the memory charges (`used`, `mark`, `settle`) and access
  information (LRU clock, LFU counter);
- store/keyspace_databases.py: whole databases (FLUSHDB, SWAPDB, RANDOMKEY, sizes).
This module keeps what runs per request: routing, the look-ups and the writes, and the
observers they tell.

What happens to the outside world goes through three doors:
- `events` (store/events.py, Redis's notify.c), given at construction: keyspace
  notifications and the journal. Commands raise events with `ks.notify(cls, event, db,
  key)` after testing `ks.notify_flags`, so events cost nothing while nobody wants them.
- `timer`, given at construction: told when a write sets a deadline earlier than the one
  it is armed for (`timer.next_deadline`, read inline, so a TTL that is not the earliest
  costs nothing).
- the key lifecycle (store/lifecycle.py): the parties registered when the server is
  built (`register`: the AOF, the persistence manager for its background snapshots,
  client tracking) hear, while they listen (`listen`), the points of keys' lives they
  override, and
  per-key watchers (`observe`: WATCHing connections, whose transactions then fail, and
  the blocking-operations registry, for keys clients wait on) hear of their keys.

Deadlines are integer milliseconds since the epoch; a key is expired once
`deadline < now`, as in Redis's keyIsExpired. Every write charges the key what
store/memory/sizes.py estimates and every deletion uncharges it (store/keyspace_memory.py);
every look-up records an access, inline for the LRU clock.

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

"""

from __future__ import annotations

import time
from binascii import crc_hqx
from typing import Any, Protocol

from . import events as ev
from .db_slice import EXPIRED, SLOTS, DbSlice, key_slot
from .events import KeyspaceEvents
from .expiry.stats import LagStats
from .keyspace_databases import KeyspaceDatabases
from .keyspace_expiry import KeyspaceExpiry
from .keyspace_memory import KeyspaceMemory
from .lazyfree import LazyFree
from .lifecycle import POINTS, KeyObserver, KeyWatcher, hears
from .memory import lfu
from .resp import RedisError
from .types import EncodingLimits
from .types.packed import Packed

BUFFER_MIN = 512  # strings at least this long stay bytearrays once written in place


class ExpiryTimer(Protocol):
    next_deadline: float

    def reschedule(self, deadline: int) -> None: ...


class Keyspace(KeyspaceExpiry, KeyspaceMemory, KeyspaceDatabases):
    def __init__(
        self,
        databases: int,
        shards: int,
        events: KeyspaceEvents,
        timer: ExpiryTimer,
        slot_index: bool = False,
    ) -> None:
        self.databases = databases
        # when small aggregates convert (OBJECT ENCODING)
        self.limits = EncodingLimits()
        self.lazyfree = LazyFree(self)  # FLUSHALL ASYNC, UNLINK, lazyfree-lazy-*
        # `slot_index`: database 0's keys by slot too (cluster mode, store/db_slice)
        self.shards = [DbSlice(databases, self.lazyfree, slot_index) for _ in range(shards)]
        # slot -> shard, so shard_for is one table look-up after the CRC.
        self.slot_shard = [self.shards[slot % shards] for slot in range(SLOTS)]
        self.watchers: dict[tuple[int, bytes], set[KeyWatcher]] = {}  # observers per key
        self.events = events
        # The parties of the key lifecycle (store/lifecycle.py), registered when the
        # server is built; those listening now; and those hearing each point: `snapshot`
        # (the persistence manager while a snapshot runs) hears `before`; `hear_removing`
        # (the AOF, the snapshot), `hear_modified` (tracking), `hear_expired` (tracking,
        # which also hears `step_ended`) and `hear_flushed` (tracking) the others.
        self.parties: list[KeyObserver] = []
        self.listening: list[KeyObserver] = []
        self.snapshot: KeyObserver | None = None
        self.hear_removing: tuple[KeyObserver, ...] = ()
        self.hear_modified: tuple[KeyObserver, ...] = ()
        self.hear_expired: tuple[KeyObserver, ...] = ()
        self.hear_flushed: tuple[KeyObserver, ...] = ()
        # whether anyone hears of modified keys (watchers, or tracking): what the writes
        # test before calling `touch`, so that it costs nothing while nobody does
        self.observed = False
        self.notify = events.notify  # notifyKeyspaceEvent
        self.notify_flags = events.flags
        self.timer = timer
        self.next_shard = 0  # where the next expire_due starts
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
        # State commands keep with the data they walk, built on first use by their family
        # (a layer above): SCAN's walks and shard snapshots (store/commands/scan.py,
        # counted by MEMORY STATS) and the views of big collections HSCAN, SSCAN and ZSCAN
        # walk (store/commands/aggregates.py).
        self.scan_walks: Any = None
        self.collection_views: Any = None
        self.log: Any = None  # the server's log(msg, level), for values that fail to decode
        # what reading such a value does (the server's: Redis's assertion on the listpack,
        # the process ends); None: the command gets an error
        self.corrupt: Any = None
        events.attach(self)
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
        if self.snapshot is not None:  # a BGSAVE running: it writes the key out first
            self.snapshot.before(s, db, key)
        clock = self.lru_used if touch else None
        v = s.find(db, key, clock)
        if v is not None:
            if v is not EXPIRED:
                self.hits += 1
                if clock is None and touch:
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
        if self.snapshot is not None:  # a BGSAVE running: it writes the key out first
            self.snapshot.before(s, db, key)
        clock = self.lru_used
        v = s.find(db, key, clock)
        if v is not None:
            if v is EXPIRED:
                self._expire(s, db, key)
                return None
            if clock is None:
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
                v = s.to_buffer(db, key, v)
                self.mark(db, key)
        return v

    def lookup_notouch(self, db: int, key: bytes) -> Any:
        """`lookup` without recording an access."""
        return self.untouched(self.lookup, db, key)

    def lookup_for_update(self, db: int, key: bytes) -> tuple[Any, DbSlice]:
        """lookup for a read-modify-write command (INCR): returns the value (or None) and
        its shard, routing the key once; the caller stores a new string with
        `replaced(db, key, old, new, shard)`."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        if self.snapshot is not None:  # a BGSAVE running: it writes the key out first
            self.snapshot.before(s, db, key)
        clock = self.lru_used
        v = s.find(db, key, clock)
        if v is not None:
            if v is EXPIRED:
                self._expire(s, db, key)
                return None, s
            if clock is None:
                self._access(s, db, key)
            if type(v) is not bytes:
                if type(v) is Packed:
                    v = self._unpack(s, db, key, v)
                elif type(v) is bytearray:
                    return self._freeze(s, db, key, v), s
                self.mark(db, key)
        return v, s

    def materialize(self, db: int, key: bytes) -> Any:
        """The key's value as stored (no expiry, no access recorded), decoded if it was
        left packed at load: for readers outside the lookups (MEMORY USAGE, the blocking
        registry)."""
        s = self.shard_for(key)
        v = s.peek(db, key)
        if type(v) is Packed:
            return self._unpack(s, db, key, v)
        return v

    def value_class(self, db: int, key: bytes) -> type:
        """The class of the key's value (NoneType for none), without decoding it."""
        v = self.shard_for(key).peek(db, key)
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
        s.replace(db, key, v)
        self._recharge(s, db, key, v)
        return v

    def _freeze(self, s: DbSlice, db: int, key: bytes, v: bytearray) -> bytes:
        """A string changed in place, stored back as bytes for a lookup that hands it out;
        its charge becomes a string's again."""
        b = bytes(v)
        n = s.restring(db, key, b)
        self.used += n
        self.db_used[db] += n
        return b

    def updated(self, db: int, key: bytes) -> None:
        """A value was changed in place (a stream, the journal): re-estimate its size,
        tell the key's observers (WATCHers, blocked clients)."""
        self.mark(db, key)
        self.changes += 1
        if self.observed:
            self.touch(db, key)

    def string_written(self, db: int, key: bytes, v: bytearray, signal: bool = True) -> None:
        """A string from lookup(buffer=True) was changed: the stored bytearray itself, or
        for a string shorter than BUFFER_MIN a copy, stored back as bytes here. WATCH and
        client tracking are told unless not `signal`."""
        s = self.shard_for(key)
        if s.peek(db, key) is not v:
            n = s.restring(db, key, bytes(v))
            self.used += n
            self.db_used[db] += n
        self.changes += 1
        if self.observed and signal:
            self.touch(db, key)

    def replaced(self, db: int, key: bytes, new: bytes, s: DbSlice) -> None:
        """Store `new` in place of the string that lookup_for_update found in shard `s`
        (INCR), keeping the key's TTL."""
        n = s.restring(db, key, new)
        if n:  # (a counter mostly keeps its size class)
            self.used += n
            self.db_used[db] += n
        self.changes += 1
        if self.observed:
            self.touch(db, key)

    def exists(self, db: int, key: bytes) -> bool:
        return self.lookup_notouch(db, key) is not None

    def stored(self, db: int, key: bytes) -> tuple[bool, int | None]:
        """Whether the key is stored, expired or not, and its deadline, without lazy
        expiry (WATCH looks at a key as Redis's keyIsExpired does, deleting nothing)."""
        s = self.shard_for(key)
        if not s.holds(db, key):
            return False, None
        return True, s.deadline(db, key)

    def deadline(self, db: int, key: bytes) -> int | None:
        """The key's deadline in ms, or None when it has none (or does not exist)."""
        if self.lookup_notouch(db, key) is None:
            return None
        return self.deadline_of_found(db, key)

    def deadline_of_found(self, db: int, key: bytes) -> int | None:
        """`deadline` of a key the caller has just looked up and found (TTL): no second
        look-up."""
        return self.shard_for(key).deadline(db, key)

    # -- writes ----------------------------------------------------------------------

    def set(
        self, db: int, key: bytes, value: Any, deadline: int | None = None, signal: bool = True
    ) -> None:
        """Store a value, replacing any TTL with `deadline` (None: no TTL), as SET does.
        `signal=False`: without telling WATCH and client tracking (Redis's dbAdd alone)."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        if self.snapshot is not None:  # a BGSAVE running: it writes the key out first
            self.snapshot.before(s, db, key)
        if type(value) is not bytes:
            value = self._to_store(db, key, value)
        size = s.put(db, key, value, deadline, self.lru, self.lru_used)
        if size is None:
            # Redis's setKey looks the key up first: an expired old value is expired
            # (counted, 'expired' event) before the new one is added (unless paused
            # clients keep the key, see _expire).
            self._expire(s, db, key)
            size = s.put(db, key, value, deadline, self.lru, self.lru_used, False)
            assert size is not None
        if deadline is not None and deadline < self.timer.next_deadline:
            self.timer.reschedule(deadline)
        self.used += size
        self.db_used[db] += size
        if self.lru is None:
            self._access(s, db, key)
        self.changes += 1
        if self.observed and signal:
            self.touch(db, key)

    def _to_store(self, db: int, key: bytes, value: Any) -> Any:
        """A value other than bytes about to be stored: a short bytearray is stored as
        bytes (BUFFER_MIN), anything else is marked for its size to be settled."""
        if type(value) is bytearray and len(value) < BUFFER_MIN:
            return bytes(value)
        self.mark(db, key)
        return value

    def set_pairs(self, db: int, args: list[bytes]) -> None:
        """MSET: store each key args[1], args[3], ... with the value after it, as `set`
        without a TTL does, routing each key inline rather than calling `set` per key."""
        slot_shard = self.slot_shard
        pairs = iter(args)
        next(pairs)
        new, used = self.lru, self.lru_used
        snapshot = self.snapshot
        size = 0
        for key, value in zip(pairs, pairs):
            s = slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
            if snapshot is not None:
                snapshot.before(s, db, key)
            n = s.put(db, key, value, None, new, used)
            if n is None:  # there past its deadline: expired first, as `set` does
                self._expire(s, db, key)
                n = s.put(db, key, value, None, new, used, False)
                assert n is not None
            size += n
            if new is None:
                self._access(s, db, key)
        self.used += size
        self.db_used[db] += size
        self.changes += 1
        if self.observed:
            for i in range(1, len(args), 2):
                self.touch(db, args[i])

    def overwrite(self, db: int, key: bytes, value: Any, signal: bool = True) -> None:
        """Store a value keeping the key's TTL, as APPEND, INCR and SETRANGE do (`signal`
        as for `set`)."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        if self.snapshot is not None:  # a BGSAVE running: it writes the key out first
            self.snapshot.before(s, db, key)
        if type(value) is not bytes:
            value = self._to_store(db, key, value)
        size = s.store(db, key, value)
        self.used += size
        self.db_used[db] += size
        self.changes += 1
        if self.observed and signal:
            self.touch(db, key)

    def delete(self, db: int, key: bytes, lazy: bool | str | None = None) -> bool:
        """Delete a key; True if it existed (an expired key does not count). `lazy`: True
        frees a big value in steps (UNLINK), a lazyfree-lazy-* name ('user-del') does when
        that parameter is on; None frees it now (a server-side delete, where the value
        may live on under another key: RENAME, MOVE)."""
        s = self.shard_for(key)
        if self.snapshot is not None:  # a BGSAVE running: it writes the key out first
            self.snapshot.before(s, db, key)
        v = s.find(db, key, None)
        if v is None:
            return False
        if v is EXPIRED:
            self._expire(s, db, key)
            return False
        self.drop(s, db, key, lazy)
        self.changes += 1
        if self.observed:
            self.touch(db, key)
        return True

    def drop(self, s: DbSlice, db: int, key: bytes, lazy: bool | str | None = None) -> None:
        """Take a key of shard `s` out as it is, past its deadline or not, uncharged
        (`lazy` as for `delete`); the caller tells whom it concerns (DEL, an eviction)."""
        size = s.remove(db, key, lazy)
        self.used -= size
        self.db_used[db] -= size

    def set_deadline(self, db: int, key: bytes, deadline: int) -> None:
        """Give an existing key a TTL (the caller checked the key exists)."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        if self.snapshot is not None:  # a BGSAVE running: it writes the key out first
            self.snapshot.before(s, db, key)
        self._deadline_set(db, s.set_deadline(db, key, deadline), deadline, key)

    def lookup_set_deadline(self, db: int, key: bytes, deadline: int, now: int) -> bool:
        """EXPIRE's common case with the key routed once: the write look-up (lazy expiry
        against EXPIRE's reading of the clock, `now`; the access; the value itself is not
        needed) and then `set_deadline`. False, with nothing set, when the key does not
        exist."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        if self.snapshot is not None:  # a BGSAVE running: it writes the key out first
            self.snapshot.before(s, db, key)
        clock = self.lru_used
        n = s.retime(db, key, deadline, now, clock)
        if n is None:
            return False
        if n is EXPIRED:
            self._expire(s, db, key)
            return False
        if clock is None:
            self._access(s, db, key)
        self._deadline_set(db, n, deadline, key)
        return True

    def _deadline_set(self, db: int, n: int, deadline: int, key: bytes) -> None:
        """A key's TTL became `deadline`, changing its charge by `n`."""
        if n:
            self.used += n
            self.db_used[db] += n
        if deadline < self.timer.next_deadline:
            self.timer.reschedule(deadline)
        self.changes += 1
        if self.observed:
            self.touch(db, key)

    def persist(self, db: int, key: bytes) -> bool:
        """Remove a key's TTL; True if it had one."""
        if self.lookup(db, key) is None:
            return False
        n = self.shard_for(key).clear_deadline(db, key)
        if not n:
            return False
        self.used -= n
        self.db_used[db] -= n
        self.changes += 1
        if self.observed:
            self.touch(db, key)
        return True

    # -- the key lifecycle (store/lifecycle.py) ----------------------------------------

    def register(self, party: KeyObserver) -> None:
        """`party` may listen: the server registers every party when it is built."""
        self.parties.append(party)

    def listen(self, party: KeyObserver) -> None:
        """`party` hears the points of keys' lives it overrides until `unlisten`."""
        assert party in self.parties, 'a party of the key lifecycle is registered first'
        if party not in self.listening:
            self.listening.append(party)
            self._heard()

    def unlisten(self, party: KeyObserver) -> None:
        if party in self.listening:
            self.listening.remove(party)
            self._heard()

    def _heard(self) -> None:
        by = {point: tuple(p for p in self.listening if hears(p, point)) for point in POINTS}
        assert len(by['before']) <= 1, 'one snapshot at a time'
        self.snapshot = by['before'][0] if by['before'] else None
        self.hear_removing = by['removing']
        self.hear_modified = by['modified']
        self.hear_expired = by['expired']
        self.hear_flushed = by['flushed']
        self.observed = bool(self.watchers) or bool(self.hear_modified)

    def removing(self, s: DbSlice, db: int, key: bytes) -> None:
        """Tell the parties that `key` leaves without a command deleting it (callers
        test `self.hear_removing` first)."""
        for party in self.hear_removing:
            party.removing(s, db, key)

    def observe(self, dk: tuple[int, bytes], observer: KeyWatcher) -> None:
        """Call `observer.key_modified(db, key)` whenever the key changes (written,
        deleted, expired, flushed, swapped) until `unobserve`."""
        self.watchers.setdefault(dk, set()).add(observer)
        self.observed = True

    def unobserve(self, dk: tuple[int, bytes], observer: KeyWatcher) -> None:
        observers = self.watchers.get(dk)
        if observers is not None:
            observers.discard(observer)
            if not observers:
                del self.watchers[dk]
                self.observed = bool(self.watchers) or bool(self.hear_modified)

    def touch(self, db: int, key: bytes, by_client: bool = True) -> None:
        """signalModifiedKey: tell the key's observers (callers test `self.observed`
        first, so this costs nothing while nobody listens). `by_client` False: no
        client made the change (a lazy expiry, Redis's signalModifiedKey(NULL, ...)), so
        a BCAST NOLOOP client hears of it even if its own command found the key."""
        observers = self.watchers.get((db, key))
        if observers:
            for o in list(observers):
                o.key_modified(db, key)
        for party in self.hear_modified:  # client tracking's invalidations
            party.modified(key, by_client)

    # -- keyspace events -------------------------------------------------------------

    def set_event_flags(self, publish_flags: int, journal_flags: int) -> None:
        self.events.set_flags(publish_flags, journal_flags)
        self.notify_flags = self.events.flags
