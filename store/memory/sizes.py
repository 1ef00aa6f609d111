"""What a stored value costs in bytes: the size model behind INFO used_memory, eviction
and MEMORY USAGE.

Python cannot ask its allocators how many bytes are live (tracemalloc costs several times
the command itself; pymalloc keeps no byte count), so the keyspace charges each key an
estimate when it is written and uncharges the same estimate when it goes. The model is
CPython 3.11 on 64-bit, calibrated against RSS growth (bench/eviction.py, `accuracy`):

- a bytes object of n bytes: 33 bytes of header plus n, rounded up to pymalloc's 16-byte
  size classes (`bytes_size`);
- a key: its bytes object plus its entries in the shard's value dict and access dict
  (`KEY_OVERHEAD`); a key with a TTL adds its expires entry and deadline-index slot
  (`TTL_OVERHEAD`);
- an aggregate: a fixed container cost plus its length times the average cost of its
  first `samples` elements, as Redis's objectComputeSize extrapolates (MEMORY USAGE
  SAMPLES). Aggregates change in place, so the keyspace re-estimates one only after a
  command touched it (Keyspace.settle), O(samples) each time.

Where it is approximate: aggregates whose elements differ widely in size (the sample may
not represent them), streams' consumer groups and PELs (counted per entry, not exactly),
and allocator fragmentation (freed blocks stay in RSS until reused; Redis's used_memory
does not count that either: see mem_fragmentation_ratio).
"""

from __future__ import annotations

from itertools import islice
from typing import Any

from ..types.hash import Hash
from ..types.list import List
from ..types.set import Set
from ..types.stream import ENCODED, Stream
from ..types.zset import ZSet

# Per-key costs beyond the key's and value's own objects, in bytes. Dict entries are 24
# bytes plus index slots, in tables kept between 1/3 and 2/3 full: ~45 bytes per dict.
KEY_OVERHEAD = 90  # the entry in the shard's data dict and in its access dict
TTL_OVERHEAD = 60  # the entry in `expires` (deadline ints are shared) and the index slot

# Containers and per-element costs of the aggregate types.
DICT_ENTRY = 45  # Hash fields, ZSet scores
SET_ENTRY = 80  # 16-byte set slots: small sets grow 4x at 60% full, so 10-60% full
LIST_SLOT = 9  # deque blocks of 64 pointers
ZSET_ORDER = 110  # the (score, member) tuple, its float, and its SortedList slot
STREAM_ENTRY = 140  # the id int, the slots in three lists, the fields tuple
CONTAINER = 200


def bytes_size(n: int) -> int:
    """A bytes object of n bytes: 33 bytes of header, in 16-byte size classes."""
    return (n + 48) & -16


def value_size(value: Any, samples: int = 5) -> int:
    """The estimated bytes of a stored value; aggregates are extrapolated from their first
    `samples` elements (0: all of them), as MEMORY USAGE does."""
    if type(value) is bytes:
        return bytes_size(len(value))
    n = len(value)
    if not n:
        return CONTAINER
    take = n if samples <= 0 else min(samples, n)
    t = type(value)
    if t is Hash:
        each = sum(
            bytes_size(len(f)) + bytes_size(len(v)) + DICT_ENTRY
            for f, v in islice(value.items(), take)
        )
    elif t is Set:
        each = sum(_element(m) + SET_ENTRY for m in islice(value, take))
    elif t is List:
        each = sum(bytes_size(len(e)) + LIST_SLOT for e in islice(value, take))
    elif t is ZSet:
        each = sum(bytes_size(len(m)) + DICT_ENTRY + ZSET_ORDER for m in islice(value.scores, take))
    elif t is Stream:
        return CONTAINER + _stream_size(value, take)
    else:
        return CONTAINER
    return CONTAINER + each * n // take


def _element(m: Any) -> int:
    return bytes_size(len(m)) if type(m) is bytes else 32  # intset members are ints


def _stream_size(s: Stream, take: int) -> int:
    """Entries (id, fields and their encoding) extrapolated from the first `take` live
    ones, plus a flat cost per consumer group, consumer and pending entry."""
    sampled = 0
    got = 0
    for i in range(s.start, len(s.ids)):
        fields = s.vals[i]
        if fields is None:  # a deleted entry's tombstone
            continue
        sampled += STREAM_ENTRY
        enc = s.enc[i]  # the entry's reply encoding, kept beside or instead of the fields
        if enc is not None:
            sampled += bytes_size(len(enc))
        if fields is not ENCODED:
            sampled += sum(bytes_size(len(f)) for f in fields)
        got += 1
        if got >= take:
            break
    size = sampled * s.length // got if got else 0
    for g in s.groups.values():
        size += CONTAINER + 120 * len(g.pel) + CONTAINER * len(g.consumers)
    return size
