"""One shard of the keyspace.

A key belongs to the Redis Cluster hash slot CRC16(key) mod 16384 (only the part inside the
first non-empty `{...}` counts, so `{user:1}:a` and `{user:1}:b` share a slot), and a slot to
one shard. A shard holds its part of every database: a dict key -> value, a dict
key -> deadline (ms since the epoch) for the keys that carry a TTL, a dict key -> access
information (the LRU clock or the LFU counter of its last access, store/memory/eviction.py),
a dict key -> bytes charged for the aggregates (store/memory/sizes.py; a string's charge is
computed from the string itself), plus the deadline index the active expiry walks.
Shards are units of ownership, not threads: the active expiry works shard by shard, and
the same cut lets a cluster of processes own disjoint slots later.

With `slot_index` (cluster mode, where only database 0 exists) a shard also keeps the keys
of database 0 by slot, as Redis's cluster mode keeps slots_to_keys: CLUSTER
COUNTKEYSINSLOT and GETKEYSINSLOT, and a slot's migration, read one slot's keys without
walking the shard. The keyspace tells it of every key database 0 gains or loses
(`slot_added`, `slot_removed`; a flush or swap of database 0 here); off, that costs one
test of `slots` per key created or deleted.
"""

from __future__ import annotations

from binascii import crc_hqx  # CRC-16/XMODEM, the CRC16 Redis Cluster uses
from collections.abc import KeysView, Mapping
from itertools import islice
from typing import Any

from ..expiry import DeadlineIndex

SLOTS = 16384


def key_slot(key: bytes) -> int:
    """CLUSTER KEYSLOT: hash slot of `key`, honouring {hashtags}."""
    start = key.find(b'{')
    if start >= 0:
        end = key.find(b'}', start + 1)
        if end > start + 1:
            key = key[start + 1 : end]
    return crc_hqx(key, 0) & (SLOTS - 1)


class DbSlice:
    __slots__ = ('data', 'expires', 'access', 'charged', 'index', 'slots')

    def __init__(self, databases: int, slot_index: bool = False) -> None:
        self.data: list[dict[bytes, Any]] = [{} for _ in range(databases)]
        self.expires: list[dict[bytes, int]] = [{} for _ in range(databases)]
        self.access: list[dict[bytes, int]] = [{} for _ in range(databases)]
        self.charged: list[dict[bytes, int]] = [{} for _ in range(databases)]
        self.index = DeadlineIndex(self.expires)
        # slot -> its keys of database 0, with `slot_index`
        self.slots: dict[int, set[bytes]] | None = {} if slot_index else None

    # -- the keys of a slot (database 0) ----------------------------------------------------

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

    # -- whole databases -------------------------------------------------------------------

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

    # What the rest of the server reads goes through these (tests/test_architecture.py
    # holds every module but this package and the keyspace's to them): read-only views,
    # which cost one call a shard, not one a key, so the walks over millions of keys
    # (KEYS, SCAN, DEBUG DIGEST, a snapshot) keep their C-level passes.

    def keys(self, db: int) -> KeysView[bytes]:
        return self.data[db].keys()

    def values(self, db: int) -> Mapping[bytes, Any]:
        """key -> value as stored (no expiry, no access: a value may be past its
        deadline, a bytearray being changed in place, or packed since the load)."""
        return self.data[db]

    def deadlines(self, db: int) -> Mapping[bytes, int]:
        """key -> deadline (ms since the epoch) of the keys with a TTL."""
        return self.expires[db]

    def accesses(self, db: int) -> Mapping[bytes, int]:
        """key -> LRU clock or LFU counter of the keys accessed since they were made."""
        return self.access[db]

    def count(self, db: int) -> int:
        return len(self.data[db])

    # Writes outside the keyspace's own paths.

    def replace(self, db: int, key: bytes, value: Any) -> None:
        """Store another object of the same value and size class under an existing key
        (a copy of a shared string, a decoded packed value already charged)."""
        self.data[db][key] = value
