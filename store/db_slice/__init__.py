"""One shard of the keyspace, and the owner of its keys.

A key belongs to the Redis Cluster hash slot CRC16(key) mod 16384 (only the part inside the
first non-empty `{...}` counts, so `{user:1}:a` and `{user:1}:b` share a slot), and a slot to
one shard. A shard holds its part of every database: a dict key -> value, a dict
key -> deadline (ms since the epoch) for the keys that carry a TTL, a dict key -> access
information (the LRU clock or the LFU counter of its last access, store/memory/eviction.py),
a dict key -> bytes charged for the aggregates, plus the deadline index the active expiry
walks. Shards are units of ownership, not threads: the active expiry works shard by shard,
and the same cut lets a cluster of processes own disjoint slots.

The shard owns those dicts, as Dragonfly's DbSlice owns its tables: nothing outside this
package touches them (tests/test_architecture.py). The keyspace (store/keyspace.py) asks a
shard to find, put, re-time and remove a key, and the shard keeps the dicts, the deadline
index, the charges and the slot index in step. Policy stays with the keyspace: which clock
an access records (`clock` arguments; None records nothing, and the keyspace applies LFU
itself), what happens to a key found past its deadline (a find answers EXPIRED and leaves
it: lazy expiry, its events and CLIENT PAUSE are the keyspace's), who hears of a change,
the memory totals and maxmemory. Writes return the change in charged bytes, which the
keyspace adds to its totals.

Charges follow store/memory/sizes.py's model: a string costs bytes_size(len), computed
from the string, so nothing is stored for it; an aggregate's charge is kept in `charged`
(it changes in place after a look-up; the keyspace has marked ones re-estimated with
`recharge`); a key costs bytes_size(len(key)) + KEY_OVERHEAD, a TTL TTL_OVERHEAD. The
per-key methods below write bytes_size out as `(n + 48) & -16`, here only: a call would
cost about what the rest of such a method does.

With `slot_index` (cluster mode, where only database 0 exists) a shard also keeps the keys
of database 0 by slot, as Redis's cluster mode keeps slots_to_keys: CLUSTER
COUNTKEYSINSLOT and GETKEYSINSLOT, and a slot's migration, read one slot's keys without
walking the shard. Every key database 0 gains or loses here updates it (a flush or swap of
database 0 rebuilds it); off, that costs one test of `slots` per key created or deleted.
"""

from __future__ import annotations

from binascii import crc_hqx  # CRC-16/XMODEM, the CRC16 Redis Cluster uses
from collections.abc import Callable, KeysView, Mapping
from itertools import islice
from typing import Any

from ..clock import now_ms
from ..expiry import DeadlineIndex
from ..lazyfree import LazyFree
from ..memory.sizes import KEY_OVERHEAD, TTL_OVERHEAD, shard_charges, value_size

SLOTS = 16384


def key_slot(key: bytes) -> int:
    """CLUSTER KEYSLOT: hash slot of `key`, honouring {hashtags}."""
    start = key.find(b'{')
    if start >= 0:
        end = key.find(b'}', start + 1)
        if end > start + 1:
            key = key[start + 1 : end]
    return crc_hqx(key, 0) & (SLOTS - 1)


class _Expired:
    def __repr__(self) -> str:
        return 'EXPIRED'


# What `find` and `retime` answer for a key that is there past its deadline: the keyspace
# decides what happens to it (lazy expiry, or nothing while clients are paused).
EXPIRED: Any = _Expired()


class DbSlice:
    __slots__ = ('data', 'expires', 'access', 'charged', 'index', 'slots', 'lazyfree')

    def __init__(self, databases: int, lazyfree: LazyFree, slot_index: bool = False) -> None:
        self.data: list[dict[bytes, Any]] = [{} for _ in range(databases)]
        self.expires: list[dict[bytes, int]] = [{} for _ in range(databases)]
        self.access: list[dict[bytes, int]] = [{} for _ in range(databases)]
        self.charged: list[dict[bytes, int]] = [{} for _ in range(databases)]
        self.index = DeadlineIndex(self.expires)
        # slot -> its keys of database 0, with `slot_index`
        self.slots: dict[int, set[bytes]] | None = {} if slot_index else None
        # where replaced and removed values go to be freed (lazyfree-lazy-*)
        self.lazyfree = lazyfree

    # -- finding a key -----------------------------------------------------------------------

    def find(self, db: int, key: bytes, clock: int | None) -> Any:
        """The key's value; None when it is not here; EXPIRED when it is here past its
        deadline (left as it is). A live key's access becomes `clock` unless None."""
        v = self.data[db].get(key)
        if v is not None:
            deadline = self.expires[db].get(key)
            if deadline is not None and deadline < now_ms():
                return EXPIRED
            if clock is not None:
                self.access[db][key] = clock
        return v

    def peek(self, db: int, key: bytes) -> Any:
        """The value as stored: no expiry, no access (it may be past its deadline, a
        bytearray being changed in place, or packed since the load)."""
        return self.data[db].get(key)

    def holds(self, db: int, key: bytes) -> bool:
        """Whether the key is here, past its deadline or not."""
        return key in self.data[db]

    def deadline(self, db: int, key: bytes) -> int | None:
        return self.expires[db].get(key)

    # -- writing a key -----------------------------------------------------------------------

    def put(
        self,
        db: int,
        key: bytes,
        value: Any,
        deadline: int | None,
        new_clock: int | None,
        used_clock: int | None,
        check: bool = True,
    ) -> int | None:
        """SET: store `value` under `key` with the TTL `deadline` (None: none), its access
        `new_clock` if the key is new, else `used_clock` (None: not recorded). Returns the
        change in charge; with `check`, None and nothing stored when the key is here past
        its deadline (Redis's setKey looks the key up first: the keyspace expires it, then
        puts again without `check`). It does `store`'s work written out (SET's hot path)
        and the TTL's."""
        exp = self.expires[db]
        old = exp.get(key)
        if check and old is not None and old < now_ms():
            return None
        data = self.data[db]
        prev = data.get(key)
        data[key] = value
        size = (len(value) + 48) & -16 if type(value) is bytes else 0
        if prev is None:
            size += ((len(key) + 48) & -16) + KEY_OVERHEAD
            if self.slots is not None and db == 0:
                self.slot_added(key)
            clock = new_clock
        else:
            if type(prev) is bytes:
                size -= (len(prev) + 48) & -16
            else:
                size -= self.charged[db].pop(key, 0)
                if prev is not value:
                    self.lazyfree.replaced(prev)
            clock = used_clock
        if deadline is not None:
            exp[key] = self.index.add(db, key, deadline, old)
            if old is None:
                size += TTL_OVERHEAD
        elif old is not None:
            del exp[key]
            self.index.discard()
            size -= TTL_OVERHEAD
        if clock is not None:
            self.access[db][key] = clock
        return size

    def store(self, db: int, key: bytes, value: Any) -> int:
        """Store `value` under `key`, keeping its TTL and access; the change in charge. An
        aggregate it replaces goes as lazyfree-lazy-server-del says (dbSetValue)."""
        data = self.data[db]
        prev = data.get(key)
        data[key] = value
        size = (len(value) + 48) & -16 if type(value) is bytes else 0
        if prev is None:
            if self.slots is not None and db == 0:
                self.slot_added(key)
            return size + ((len(key) + 48) & -16) + KEY_OVERHEAD
        if type(prev) is bytes:
            return size - ((len(prev) + 48) & -16)
        if prev is not value:
            self.lazyfree.replaced(prev)
        return size - self.charged[db].pop(key, 0)

    def restring(self, db: int, key: bytes, new: bytes) -> int:
        """Store the string `new` in place of the key's string (bytes, or a bytearray
        changed in place, whose charge entry goes); the change in charge."""
        data = self.data[db]
        old = data[key]
        data[key] = new
        if type(old) is bytes:
            return ((len(new) + 48) & -16) - ((len(old) + 48) & -16)
        return ((len(new) + 48) & -16) - self.charged[db].pop(key, 0)

    def to_buffer(self, db: int, key: bytes, v: bytes) -> bytearray:
        """Turn the key's string into a bytearray to change in place, charged as the
        string was until the keyspace has it re-estimated."""
        b = self.data[db][key] = bytearray(v)
        self.charged[db][key] = (len(b) + 48) & -16
        return b

    def replace(self, db: int, key: bytes, value: Any) -> None:
        """Store another object of the same value and size class under an existing key
        (a copy of a shared string, a decoded packed value, charged by `recharge`)."""
        self.data[db][key] = value

    def recharge(self, db: int, key: bytes, v: Any) -> int:
        """Charge the aggregate `v` under `key` what value_size says it costs now, in
        place of its old charge; the change."""
        charged = self.charged[db]
        size = value_size(v)
        n = size - charged.get(key, 0)
        charged[key] = size
        return n

    def remove(self, db: int, key: bytes, lazy: bool | str | None = None) -> int:
        """Take the key out, with its TTL and access, past its deadline or not; its charge.
        `lazy`: True frees a big value in steps (UNLINK), a lazyfree-lazy-* name
        ('user-del') does when that parameter is on; None frees it when the caller drops
        it (RENAME, MOVE: the value lives on under another key)."""
        size = KEY_OVERHEAD + ((len(key) + 48) & -16)
        exp = self.expires[db]
        if key in exp:
            del exp[key]
            self.index.discard()
            size += TTL_OVERHEAD
        value = self.data[db].pop(key)
        self.access[db].pop(key, None)
        if self.slots is not None and db == 0:
            self.slot_removed(key)
        if type(value) is bytes:
            return size + ((len(value) + 48) & -16)
        if lazy is True or (isinstance(lazy, str) and self.lazyfree.enabled(lazy)):
            self.lazyfree.free_value(value)
        return size + self.charged[db].pop(key, 0)

    # -- deadlines and accesses --------------------------------------------------------------

    def set_deadline(self, db: int, key: bytes, deadline: int) -> int:
        """Give the key (which is here) a TTL; the change in charge."""
        exp = self.expires[db]
        old = exp.get(key)
        exp[key] = self.index.add(db, key, deadline, old)
        return TTL_OVERHEAD if old is None else 0

    def retime(self, db: int, key: bytes, deadline: int, now: int, clock: int | None) -> Any:
        """EXPIRE's look-up and write in one: None when the key is not here, EXPIRED when
        it is past its deadline at `now` (nothing done), else its TTL becomes `deadline`,
        its access `clock` (unless None), and the change in charge is returned."""
        if key not in self.data[db]:
            return None
        exp = self.expires[db]
        old = exp.get(key)
        if old is not None and old < now:
            return EXPIRED
        if clock is not None:
            self.access[db][key] = clock
        exp[key] = self.index.add(db, key, deadline, old)
        return TTL_OVERHEAD if old is None else 0

    def clear_deadline(self, db: int, key: bytes) -> int:
        """PERSIST: drop the key's TTL; the charge freed (0: it had none)."""
        exp = self.expires[db]
        if key not in exp:
            return 0
        del exp[key]
        self.index.discard()
        return TTL_OVERHEAD

    def record_access(self, db: int, key: bytes, value: int) -> None:
        """An access the keyspace computed (an LFU counter, RESTORE's IDLETIME/FREQ)."""
        self.access[db][key] = value

    # -- the active expiry -------------------------------------------------------------------

    def expire_run(
        self,
        db: int,
        deadline: int,
        keys: list[bytes],
        out: list[bytes],
        before: Callable[[bytes], None] | None,
    ) -> int:
        """Remove each key of a run the deadline index filed under `deadline` that is still
        due then (not re-timed, persisted or deleted since), appending it to `out`;
        `before(key)` first, unless None (a running snapshot copies the key out, the AOF
        logs its DEL). Returns the charge freed without the per-key overheads
        (KEY_OVERHEAD, TTL_OVERHEAD), which the caller adds per key removed."""
        exp, data, access, charged = (
            self.expires[db],
            self.data[db],
            self.access[db],
            self.charged[db],
        )
        indexed = self.slots is not None and db == 0
        freed = 0
        for key in keys:
            if exp.get(key) == deadline:
                if before is not None:
                    before(key)
                del exp[key]
                value = data.pop(key)
                access.pop(key, None)
                if indexed:
                    self.slot_removed(key)
                if type(value) is bytes:
                    freed += ((len(value) + 48) & -16) + ((len(key) + 48) & -16)
                else:
                    freed += charged.pop(key, 0) + ((len(key) + 48) & -16)
                    if self.lazyfree.enabled('expire'):
                        self.lazyfree.free_value(value)
                out.append(key)
        return freed

    # -- the keys of a slot (database 0) -----------------------------------------------------

    def slot_added(self, key: bytes) -> None:
        slots = self.slots
        assert slots is not None
        slot = key_slot(key)
        keys = slots.get(slot)
        if keys is None:
            keys = slots[slot] = set()
        keys.add(key)

    def slot_removed(self, key: bytes) -> None:
        slots = self.slots
        assert slots is not None
        slot = key_slot(key)
        keys = slots[slot]
        keys.discard(key)
        if not keys:
            del slots[slot]

    def count_in_slot(self, slot: int) -> int:
        """How many keys of database 0 the slot holds (expired ones not yet deleted
        included, as Redis counts them)."""
        assert self.slots is not None
        return len(self.slots.get(slot, ()))

    def keys_in_slot(self, slot: int, count: int) -> list[bytes]:
        """Up to `count` keys of the slot in database 0."""
        assert self.slots is not None
        keys = self.slots.get(slot)
        if not keys:
            return []
        return list(keys) if count >= len(keys) else list(islice(keys, count))

    def _reindex_slots(self) -> None:
        """Database 0 changed wholesale (SWAPDB, a bulk load): index it again."""
        if self.slots is not None:
            self.slots = {}
            for key in self.data[0]:
                self.slot_added(key)

    # -- whole databases ---------------------------------------------------------------------

    def flush(self, db: int) -> tuple[dict[Any, Any], ...]:
        """Empty a database here: returns its old dicts (data, charged, access, expires)
        and its deadline index's buckets (near, far), for the caller to drop or free
        lazily."""
        index = self.index
        far, near = index.far[db], index.near[db]
        index.clear(db)  # reads expires[db]: before it is replaced
        old = self.data[db], self.charged[db], self.access[db], self.expires[db], near, far
        self.data[db] = {}
        self.expires[db] = {}
        self.access[db] = {}
        self.charged[db] = {}
        if db == 0 and self.slots is not None:
            self.slots = {}
        return old

    def swap(self, a: int, b: int) -> None:
        """Swap two databases' contents here (SWAPDB)."""
        for dicts in (self.data, self.expires, self.access, self.charged):
            dicts[a], dicts[b] = dicts[b], dicts[a]
        self.index.swap(a, b)
        if a == 0 or b == 0:
            self._reindex_slots()

    def recount(self, db: int) -> int:
        """Charge the database's keys here from scratch (after a load wrote them
        directly); their total, TTLs included."""
        used, self.charged[db] = shard_charges(self.data[db])
        return used + len(self.expires[db]) * TTL_OVERHEAD

    # What the rest of the server reads goes through these: read-only views, which cost
    # one call a shard, not one a key, so the walks over millions of keys (KEYS, SCAN,
    # DEBUG DIGEST, a snapshot) keep their C-level passes.

    def keys(self, db: int) -> KeysView[bytes]:
        return self.data[db].keys()

    def values(self, db: int) -> Mapping[bytes, Any]:
        """key -> value as stored (as `peek`)."""
        return self.data[db]

    def deadlines(self, db: int) -> Mapping[bytes, int]:
        """key -> deadline (ms since the epoch) of the keys with a TTL."""
        return self.expires[db]

    def accesses(self, db: int) -> Mapping[bytes, int]:
        """key -> LRU clock or LFU counter of the keys accessed since they were made."""
        return self.access[db]

    def count(self, db: int) -> int:
        return len(self.data[db])

    def count_all(self) -> int:
        """Keys here in every database."""
        return sum(map(len, self.data))

    def count_volatile(self, db: int) -> int:
        return len(self.expires[db])


class LoadInto:
    """Where an RDB load puts one database's keys when they go straight into the shards'
    dicts (an empty keyspace: start-up, DEBUG RELOAD, a replica's sync): the dicts per
    slot, taken once per database, so that a key costs one CRC and one store in each.
    The caller rebuilds the deadline indexes and charges the keys' totals after the load
    (store/persistence/loading.py)."""

    __slots__ = ('data', 'charged', 'expires', 'indexed')

    def __init__(self, slot_shard: list[DbSlice], db: int) -> None:
        self.data = [s.data[db] for s in slot_shard]
        self.charged = [s.charged[db] for s in slot_shard]
        self.expires = [s.expires[db] for s in slot_shard]
        # by slot, the shards keeping database 0's keys by slot (cluster mode)
        self.indexed = slot_shard if db == 0 and slot_shard[0].slots is not None else None

    def put(self, keys: list[bytes], values: list[Any], charges: list[tuple[bytes, int]]) -> None:
        """Store values, and the charges of the aggregates among them."""
        data, charged = self.data, self.charged
        if self.indexed is not None:
            for key in keys:
                slot = key_slot(key)
                if key not in data[slot]:
                    self.indexed[slot].slot_added(key)
        if 123 in b''.join(keys):  # a '{': some key has a hash tag
            for key, value in zip(keys, values):
                data[key_slot(key)][key] = value
            for key, size in charges:
                charged[key_slot(key)][key] = size
        else:
            for key, value in zip(keys, values):
                data[crc_hqx(key, 0) & 16383][key] = value
            for key, size in charges:
                charged[crc_hqx(key, 0) & 16383][key] = size

    def put_deadline(self, key: bytes, deadline: int) -> None:
        self.expires[key_slot(key)][key] = deadline
