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

Costs: runs of strings are sized by C-level map/sum over a length table (`bytes_sizes`),
so value_size of a small aggregate is ~1 us. An RDB load charges each batch of keys as it
inserts them (`batch_charges`, 0.3 s for 1M mixed keys), with the charges of small
aggregates computed by the loader's readers by the same formula (`elements_size`). A
value left packed by the load (types/packed.py) is charged what the loader estimated from
the blob's length and element count (`Packed.charge`); the keyspace moves the charge to
value_size of the real value when it decodes it.

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
from ..types.packed import Packed
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
SAMPLES = 5  # elements value_size samples by default (MEMORY USAGE's SAMPLES 5)
ZSET_ELEMENT = DICT_ENTRY + ZSET_ORDER


QUEUED = 112  # MULTI's (command, args) tuple and the args list's header


def queued_size(args: list[bytes]) -> int:
    """A command queued by MULTI: its tuple, its argument list and the arguments."""
    return QUEUED + 8 * len(args) + bytes_sizes(args)


def bytes_size(n: int) -> int:
    """A bytes object of n bytes: 33 bytes of header, in 16-byte size classes."""
    return (n + 48) & -16


# bytes_size by length, so that a run of strings is sized by C-level map and sum (4x
# faster than a generator over bytes_size); longer strings take the Python path.
_BYTES_SIZE = [bytes_size(n) for n in range(4096)]
_size_of_length = _BYTES_SIZE.__getitem__


def bytes_sizes(strings: Any) -> int:
    """sum(bytes_size(len(s)) for s in strings), for a re-iterable `strings`."""
    try:
        return sum(map(_size_of_length, map(len, strings)))
    except (IndexError, TypeError):  # a string of 4 KB or more; an int (see _element)
        return sum(_element(s) for s in strings)


def value_size(value: Any, samples: int = SAMPLES) -> int:
    """The estimated bytes of a stored value; aggregates are extrapolated from their first
    `samples` elements (0: all of them), as MEMORY USAGE does."""
    t = type(value)
    if t is bytes or t is bytearray:  # a string changed in place: as the string it is
        return bytes_size(len(value))
    if t is Packed:  # not decoded yet: what the loader estimated (types/packed.py)
        packed: Packed = value
        return packed.charge
    n = len(value)
    if not n:
        return CONTAINER
    if n <= samples or samples <= 0:
        # every element sampled, the common case (a load charges each aggregate, 300k of
        # them in 1M keys): C-level sums, in one try
        try:
            if t is Hash:
                return (
                    CONTAINER
                    + sum(map(_size_of_length, map(len, value)))
                    + sum(map(_size_of_length, map(len, value.values())))
                    + DICT_ENTRY * n
                )
            if t is List:
                return CONTAINER + sum(map(_size_of_length, map(len, value))) + LIST_SLOT * n
            if t is ZSet:
                return (
                    CONTAINER + sum(map(_size_of_length, map(len, value.scores))) + ZSET_ELEMENT * n
                )
            if t is Set:
                return CONTAINER + sum(map(_size_of_length, map(len, value))) + SET_ENTRY * n
        except (IndexError, TypeError):  # a string of 4 KB or more; an int (_element)
            pass
    take = n if samples <= 0 else min(samples, n)
    if t is Hash:
        if take < n:
            value = dict(islice(value.items(), take))
        each = bytes_sizes(value) + bytes_sizes(value.values()) + DICT_ENTRY * take
    elif t is Set:
        each = bytes_sizes(value if take == n else list(islice(value, take))) + SET_ENTRY * take
    elif t is List:
        each = bytes_sizes(value if take == n else list(islice(value, take))) + LIST_SLOT * take
    elif t is ZSet:
        members = value.scores if take == n else list(islice(value.scores, take))
        each = bytes_sizes(members) + ZSET_ELEMENT * take
    elif t is Stream:
        return CONTAINER + _stream_size(value, take)
    else:
        return CONTAINER
    return CONTAINER + each * n // take


def shard_charges(data: dict[bytes, Any]) -> tuple[int, dict[bytes, int]]:
    """What a database's keys in one shard cost (without their TTLs), and the charge of
    each aggregate (Keyspace.recount)."""
    charged = {k: value_size(v) for k, v in data.items() if type(v) is not bytes}
    total = len(data) * KEY_OVERHEAD + bytes_sizes(data) + sum(charged.values())
    if len(charged) < len(data):
        total += bytes_sizes([v for v in data.values() if type(v) is bytes])
    return total, charged


def elements_size(strings: list[bytes], n: int, each: int) -> int:
    """value_size of an aggregate of n <= SAMPLES elements given all their `strings` (a
    hash's fields and values, a sorted set's members) and what `each` element costs
    besides them (DICT_ENTRY, LIST_SLOT, SET_ENTRY, ZSET_ELEMENT): the RDB loader charges
    a small aggregate from the list it built it from, without value_size's dispatch and
    walk over the new value (0.5 us of its 1.6 for a hash of 5 fields)."""
    return CONTAINER + bytes_sizes(strings) + each * n


def batch_charges(
    keys: list[bytes], values: list[Any], known: list[tuple[int, int]]
) -> tuple[int, list[tuple[bytes, int]]]:
    """What a batch of loaded keys and their values cost (without TTLs), and each
    aggregate's (key, charge), from `known`: (index, charge) for each aggregate, a charge
    of 0 where the loader left it to value_size. Charged as the keys go in, while the
    values are still in the CPU's caches (a recount after the load read 1M cold objects
    again: 1.2 s)."""
    charges = [(keys[i], c or value_size(values[i])) for i, c in known]
    total = len(keys) * KEY_OVERHEAD + bytes_sizes(keys) + sum(c for _, c in charges)
    if len(charges) < len(keys):
        total += bytes_sizes([v for v in values if type(v) is bytes])
    return total, charges


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
