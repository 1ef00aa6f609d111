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
"""

from __future__ import annotations

from binascii import crc_hqx  # CRC-16/XMODEM, the CRC16 Redis Cluster uses
from collections.abc import KeysView, Mapping
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
    __slots__ = ('data', 'expires', 'access', 'charged', 'index')

    def __init__(self, databases: int) -> None:
        self.data: list[dict[bytes, Any]] = [{} for _ in range(databases)]
        self.expires: list[dict[bytes, int]] = [{} for _ in range(databases)]
        self.access: list[dict[bytes, int]] = [{} for _ in range(databases)]
        self.charged: list[dict[bytes, int]] = [{} for _ in range(databases)]
        self.index = DeadlineIndex(self.expires)

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
