"""A small aggregate loaded from an RDB file and not decoded yet.

Redis keeps a small hash, sorted set or list as the listpack (and a small integer set as
the intset) its RDB file holds, and never decodes it at load. We decode values into our
types, which took most of a start-up load's time (1M mixed keys: the 300k small
aggregates took ~1.6 s of the decode's 2.7 s CPU, 4-10 us each). So the RDB loader
(persistence/rdb_loader.py, RdbLoader with `lazy`) stores such a value as a `Packed`: its
RDB type byte, the blob, and the bytes it is charged. The first time anything needs the
value, it is decoded and replaces the Packed object in its shard's dict
(Keyspace.materialize, with the charge moved to the real value's).

Invariants:
- A Packed object lives only in a shard's `data` dict, under a key loaded from an RDB
  file whose CRC64 checksum the loader verifies before the server answers anything, and
  only when the blob passed a header check (total bytes, element count, end byte) and
  decodes to a compact encoding (listpack, intset; a list of one quicklist node): the
  decoded value reports the encoding the eager load would have given it, whatever the
  encoding limits are when it is decoded.
- Every path that reads values out of the shards either materializes first (the
  keyspace's lookups, MEMORY USAGE, the blocking registry) or handles a Packed value
  itself (value_size: its charge; the RDB encoder: the blob written back as is; the AOF
  rewrite: decoded without being stored).
- `decode` is set by the module that creates Packed objects (rdb_loader), which sits above
  this layer; a blob that still fails to decode (only a writer's bug can make one under a
  valid checksum) raises, and the keyspace turns that into an error reply.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .hash import Hash
from .list import List
from .set import Set
from .zset import ZSet

# RDB value types a Packed may hold, and the class it decodes to (the blocking registry
# asks which type a key holds without decoding it)
T_SET_INTSET = 11
T_HASH_LISTPACK = 16
T_ZSET_LISTPACK = 17
T_LIST_QUICKLIST_2 = 18
CLASS_OF = {
    T_SET_INTSET: Set,
    T_HASH_LISTPACK: Hash,
    T_ZSET_LISTPACK: ZSet,
    T_LIST_QUICKLIST_2: List,
}


def _no_decoder(p: Packed) -> Any:
    raise RuntimeError('no decoder for packed values')


class Packed:
    """An RDB value type byte, its blob (a listpack or an intset, uncompressed), and the
    estimated bytes the keyspace charged for it."""

    __slots__ = ('type', 'blob', 'charge')

    decode: Callable[[Packed], Any] = staticmethod(_no_decoder)  # set by rdb_loader

    def __init__(self, type_: int, blob: bytes, charge: int) -> None:
        self.type = type_
        self.blob = blob
        self.charge = charge

    @property
    def cls(self) -> type:
        return CLASS_OF[self.type]
