"""The Stream data type (Redis 7.0 semantics) and its consumer groups.

Layout. Entry ids are single ints, `ms << 64 | seq`, so they compare and bisect as plain
ints. Entries live in two parallel lists, `ids` (sorted) and `vals` (the flat field/value
tuples, or None for a deleted entry: a tombstone). Entries before `start` are gone: trimming
at the head only moves `start` forward (O(1) per entry), and the lists are compacted
(`del ids[:start]`) once the dead prefix is large, so appends, head trims and XTRIM MINID are
amortised O(1) and every range lookup is a bisect, O(log n).

Redis stores entries in radix-tree nodes of up to `stream-node-max-entries` entries (live
and deleted, counted when an entry is appended: a change of the parameter applies to the
nodes made after it); approximate trimming (`~`) removes only whole nodes. We reproduce
that by numbering every entry ever appended (`base + position`) and keeping the numbers at
which nodes start (`bounds`, ascending; the first node holds `start`): an append starts a
node when the last one has `node_max` numbers, or when every node is gone. That is exact
as long as nodes are not split early by `stream-node-max-bytes` (entries of a few dozen
bytes), which is not modelled.

`first_id`, `max_deleted`, `entries_added` and the group `entries_read` counters follow
Redis 7.0's bookkeeping, so XINFO and the consumer-group lag match redis-server.

The journal writer appends with `append(next_auto_id(now_ms), fields, enc)` and trims
with `trim_maxlen(n)`, skipping command parsing entirely.

Encoded entries. A third parallel list, `enc`, may hold an entry's reply already encoded
for the wire (`encode_entry`: `[id, [f1, v1, ...]]`, the same bytes in RESP2 and RESP3), or
None. The journal fills it when it appends (one template format per event, much cheaper than
encoding the entry field by field when it is read), so XRANGE over the journal, the
analytics path, only joins bytes. Other entries are encoded when read and not cached.
"""

from __future__ import annotations

import copy
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from typing import Any

import hiredis

NODE = 100  # stream-node-max-entries' default
MAX_ID = (1 << 128) - 1  # 18446744073709551615-18446744073709551615
U64 = (1 << 64) - 1
SEQ_MASK = U64
COMPACT_MIN = 1024

Fields = tuple[bytes, ...]  # an entry's flat (f1, v1, f2, v2, ...)


def exact_trim_args(s: Stream, args: list[bytes]) -> list[bytes]:
    """XADD's or XTRIM's arguments as Redis propagates an approximate (`~`) trimming
    (streamRewriteApproxSpecifier, streamRewriteTrimArgument): `=` for `~`, and the
    threshold what the trimming left, the length for MAXLEN and the first entry's id for
    MINID (deleted entries still in the first node count; the maximum id when empty), so a
    replica or a reload trims exactly as this trimming did, whatever its nodes."""
    out = list(args)
    i, n = 2, len(args)
    while i < n:
        a = args[i].lower()
        if a in (b'maxlen', b'minid'):
            if i + 2 < n and args[i + 1] == b'~':
                out[i + 1] = b'='
                if a == b'maxlen':
                    out[i + 2] = b'%d' % s.length
                else:
                    spans = s.node_spans()
                    first = s.ids[spans[0][0]] if spans else MAX_ID
                    out[i + 2] = format_id(first)
            return out
        if a == b'limit':
            i += 2
        elif a == b'nomkstream':
            i += 1
        else:
            return out
    return out


def make_id(ms: int, seq: int) -> int:
    return ms << 64 | seq


def format_id(i: int) -> bytes:
    return b'%d-%d' % (i >> 64, i & SEQ_MASK)


class _Encoded:
    """`vals` marker for an entry whose fields live only in `enc` (journal entries: one
    bytes object instead of a tuple of field objects plus their encoding). Readers that
    need the fields decode them (`fields_at`); copies keep the marker itself."""

    __slots__ = ()

    def __copy__(self) -> _Encoded:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _Encoded:
        return self

    def __repr__(self) -> str:
        return 'ENCODED'


ENCODED = _Encoded()


def decode_fields(encoded: bytes) -> tuple[bytes, ...]:
    """The fields of an encode_entry() encoding."""
    reader = hiredis.Reader()
    reader.feed(encoded)
    return tuple(reader.gets()[1])


def encode_entry(i: int, fields: Sequence[bytes]) -> bytes:
    """The RESP encoding of one entry as XRANGE/XREAD reply it: [id, [f1, v1, ...]]."""
    idb = b'%d-%d' % (i >> 64, i & SEQ_MASK)
    return b'*2\r\n$%d\r\n%s\r\n*%d\r\n%s' % (
        len(idb),
        idb,
        len(fields),
        b''.join([b'$%d\r\n%s\r\n' % (len(v), v) for v in fields]),
    )


class Consumer:
    __slots__ = ('name', 'seen_time', 'pel')

    def __init__(self, name: bytes, now: int) -> None:
        self.name = name
        self.seen_time = now
        self.pel = PEL()


class NACK:
    """A pending entry: who has it, when it was last delivered, how many times."""

    __slots__ = ('consumer', 'delivery_time', 'delivery_count')

    def __init__(self, consumer: Any, delivery_time: int, delivery_count: int = 1) -> None:
        self.consumer = consumer
        self.delivery_time = delivery_time
        self.delivery_count = delivery_count


class PEL:
    """A pending-entries list: id -> NACK, iterable in id order (a sorted id list beside
    the dict; ids usually arrive in increasing order, so insertion is an append)."""

    __slots__ = ('ids', 'd')

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.d: dict[int, NACK] = {}

    def __len__(self) -> int:
        return len(self.d)

    def get(self, i: int) -> NACK | None:
        return self.d.get(i)

    def add(self, i: int, nack: NACK) -> None:
        if i not in self.d:
            ids = self.ids
            if not ids or ids[-1] < i:
                ids.append(i)
            else:
                ids.insert(bisect_left(ids, i), i)
        self.d[i] = nack

    def remove(self, i: int) -> None:
        if self.d.pop(i, None) is not None:
            ids = self.ids
            del ids[bisect_left(ids, i)]

    def iter_from(self, lo: int, hi: int = MAX_ID) -> list[tuple[int, NACK]]:
        """(id, nack) with lo <= id <= hi, in order (a snapshot: safe to mutate)."""
        ids = self.ids
        a = bisect_left(ids, lo)
        b = bisect_right(ids, hi)
        d = self.d
        return [(i, d[i]) for i in ids[a:b]]

    def first(self) -> int | None:
        return self.ids[0] if self.ids else None

    def last(self) -> int | None:
        return self.ids[-1] if self.ids else None


class Group:
    __slots__ = ('name', 'last_id', 'entries_read', 'pel', 'consumers', 'new_consumer')

    def __init__(self, name: bytes, last_id: int, entries_read: int) -> None:
        self.name = name
        self.last_id = last_id
        self.entries_read = entries_read  # -1: unknown (SCG_INVALID_ENTRIES_READ)
        self.pel = PEL()
        self.consumers: dict[bytes, Consumer] = {}
        # the consumer a read created last, until its propagation (a NOACK XREADGROUP's
        # XGROUP CREATECONSUMER) looks: store/persistence/aof.py
        self.new_consumer: bytes | None = None


class Stream:
    redis_type = 'stream'  # what TYPE reports
    encoding = 'stream'  # OBJECT ENCODING
    __slots__ = (
        'ids',
        'vals',
        'enc',
        'start',
        'base',
        'bounds',
        'length',
        'ntomb',
        'last_id',
        'first_id',
        'max_deleted',
        'entries_added',
        'groups',
        'claim_drops',
    )

    def copy(self) -> Stream:
        """COPY: a deep copy (groups, PELs and consumers included)."""
        return copy.deepcopy(self)

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.vals: list[Any] = []  # the fields (a tuple), ENCODED, or None (a tombstone)
        self.enc: list[bytes | None] = []  # encode_entry(id, fields) of the entry, or None
        self.start = 0  # index of the first live entry (or len(ids))
        self.base = 0  # number of entries compacted away before ids[0]
        self.bounds: list[int] = []  # the numbers (base + position) at which nodes start, ascending
        self.length = 0
        self.ntomb = 0  # tombstones at positions >= start
        self.last_id = 0
        self.first_id = 0
        self.max_deleted = 0
        self.entries_added = 0
        self.groups: dict[bytes, Group] = {}
        # The last XCLAIM's pending entries dropped because their entry was deleted:
        # (id, consumer name, delivery time, count), for its propagation (store/persistence)
        self.claim_drops: list[tuple[int, bytes, int, int]] = []

    def __len__(self) -> int:
        return self.length

    # -- appending ---------------------------------------------------------------------

    def next_auto_id(self, now_ms: int) -> int:
        """streamNextID: now's ms with seq 0, or the last id plus one."""
        last = self.last_id
        if now_ms > last >> 64:
            return now_ms << 64
        return last + 1

    def append(
        self, i: int, fields: Fields | _Encoded, enc: bytes | None = None, node_max: int = NODE
    ) -> None:
        """Append an entry whose id the caller checked is greater than last_id; `enc`, if
        given, must be encode_entry(i, fields), and `fields` may then be ENCODED.
        `node_max`: stream-node-max-entries now (0: no limit), which decides whether the
        entry starts a node (streamAppendItem)."""
        bounds = self.bounds
        n = self.base + len(self.ids)
        if not bounds or (node_max and n - bounds[-1] >= node_max):
            bounds.append(n)
        self.ids.append(i)
        self.vals.append(fields)
        self.enc.append(enc)
        self.length += 1
        self.entries_added += 1
        self.last_id = i
        if self.length == 1:
            self.first_id = i

    def append_auto(self, fields: Iterable[bytes], now_ms: int) -> int:
        """Append with an auto-generated id (XADD key * ...); returns the id (an int).
        `fields` is a flat tuple (f1, v1, f2, v2, ...) of bytes."""
        i = self.next_auto_id(now_ms)
        self.append(i, tuple(fields))
        return i

    # -- lookup ------------------------------------------------------------------------

    def _live_from(self, pos: int) -> int:
        """Smallest live position >= pos."""
        vals = self.vals
        n = len(vals)
        while pos < n and vals[pos] is None:
            pos += 1
        return pos

    def _span(self, lo: int, hi: int, count: int, rev: bool) -> range | list[int]:
        """The positions of the live entries with lo <= id <= hi, at most `count` (0: all),
        ascending or (rev) descending: a range() when they are contiguous, else a list."""
        ids, vals = self.ids, self.vals
        if lo > hi or not self.length:
            return range(0)
        a = bisect_left(ids, lo, self.start)
        b = bisect_right(ids, hi, a)
        if not rev and not self.ntomb:
            if count and b - a > count:
                b = a + count
            return range(a, b)
        out: list[int] = []
        for p in range(a, b) if not rev else range(b - 1, a - 1, -1):
            if vals[p] is not None:
                out.append(p)
                if len(out) == count:
                    break
        return out

    def fields_at(self, p: int) -> Fields | None:
        v = self.vals[p]
        # an ENCODED entry's encoding is always in `enc` (append's contract)
        return decode_fields(self.enc[p]) if v is ENCODED else v  # type: ignore[arg-type]

    def range(self, lo: int, hi: int, count: int = 0, rev: bool = False) -> list[tuple[int, Any]]:
        """[(id, fields)] for live entries with lo <= id <= hi, at most `count` (0: all),
        ascending or (rev) descending."""
        ids, vals = self.ids, self.vals
        span = self._span(lo, hi, count, rev)
        return [(ids[p], vals[p] if vals[p] is not ENCODED else self.fields_at(p)) for p in span]

    def range_encoded(
        self, lo: int, hi: int, count: int = 0, rev: bool = False
    ) -> tuple[list[int], list[bytes]]:
        """As range(), but as (ids, encoded): the entries' ids and their encode_entry()
        bytes (cached ones where the writer stored them)."""
        ids, vals, enc = self.ids, self.vals, self.enc
        span = self._span(lo, hi, count, rev)
        if type(span) is range:
            a, b = span.start, span.stop
            idl, out = ids[a:b], enc[a:b]
            if None in out:
                out = [
                    e if e is not None else encode_entry(ids[p], vals[p]) for p, e in zip(span, out)
                ]
            return idl, out  # type: ignore[return-value]  # no None left: replaced just above
        return (
            [ids[p] for p in span],
            [e if (e := enc[p]) is not None else encode_entry(ids[p], vals[p]) for p in span],
        )

    def get(self, i: int) -> Any:
        """The fields of live entry `i`, or None."""
        ids = self.ids
        p = bisect_left(ids, i, self.start)
        if p < len(ids) and ids[p] == i:
            return self.fields_at(p)
        return None

    def last_valid_id(self) -> int:
        """streamLastValidID: the id of the last live entry (0 when empty)."""
        vals = self.vals
        p = len(vals) - 1
        while p >= self.start and vals[p] is None:
            p -= 1
        return self.ids[p] if p >= self.start else 0

    def first_live_id(self) -> int | None:
        return self.ids[self.start] if self.length else None

    # -- deleting ----------------------------------------------------------------------

    def _advance(self, pos: int) -> None:
        """Drop everything before position `pos` (caller adjusted `length`), then move past
        tombstones and compact when the dead prefix is large."""
        vals = self.vals
        if self.ntomb:
            for p in range(self.start, pos):
                if vals[p] is None:
                    self.ntomb -= 1
            n = len(vals)
            while pos < n and vals[pos] is None:
                pos += 1
                self.ntomb -= 1
        self.start = pos
        bounds = self.bounds
        if pos >= len(vals):
            bounds.clear()  # every node is gone: the next append starts one
        elif len(bounds) > 1 and bounds[1] <= self.base + pos:
            k = bisect_right(bounds, self.base + pos) - 1
            del bounds[:k]  # nodes wholly before `start` are gone
        if pos >= COMPACT_MIN and pos * 2 >= len(vals):
            del self.ids[:pos]
            del vals[:pos]
            del self.enc[:pos]
            self.base += pos
            self.start = 0

    def delete(self, i: int) -> bool:
        """XDEL one id; True when a live entry was deleted."""
        ids = self.ids
        p = bisect_left(ids, i, self.start)
        if p >= len(ids) or ids[p] != i or self.vals[p] is None:
            return False
        self.vals[p] = None
        self.enc[p] = None
        self.length -= 1
        self.ntomb += 1
        if p == self.start:
            self._advance(p)
        return True

    def _update_first_after_trim(self) -> None:
        # streamTrim ends with streamGetEdgeID(first, skip tombstones); 0-0 when empty
        self.first_id = self.ids[self.start] if self.length else 0

    def trim_maxlen(self, maxlen: int, approx: bool = False, limit: int = 0) -> int:
        """XTRIM MAXLEN: remove the oldest entries until at most `maxlen` remain; returns
        how many were removed. Exact trimming with no tombstones is O(1) per entry."""
        if self.length <= maxlen:
            return 0
        if not approx and not self.ntomb:
            k = self.length - maxlen
            self.length = maxlen
            self._advance(self.start + k)
            self._update_first_after_trim()
            return k
        return self._trim(maxlen, 0, approx, limit)

    def trim_minid(self, minid: int, approx: bool = False, limit: int = 0) -> int:
        """XTRIM MINID: remove entries with ids below `minid`; returns how many."""
        if not self.length or self.ids[self.start] >= minid:
            return 0
        if not approx and not self.ntomb:
            pos = bisect_left(self.ids, minid, self.start)
            k = pos - self.start
            self.length -= k
            self._advance(pos)
            self._update_first_after_trim()
            return k
        return self._trim(None, minid, approx, limit)

    def _trim(self, maxlen: int | None, minid: int, approx: bool, limit: int) -> int:
        """streamTrim: node by node from the head; whole nodes go when allowed, and in
        exact mode the last node is trimmed entry by entry. By MINID when `maxlen` is None
        (`minid` is read only then)."""
        ids, vals = self.ids, self.vals
        deleted = 0
        bounds = self.bounds
        while self.length and (maxlen is None or self.length > maxlen):
            s = self.start
            node_end = len(ids)
            if len(bounds) > 1:  # bounds[0] is the node holding `start`
                node_end = min(node_end, bounds[1] - self.base)
            if self.ntomb:
                entries = sum(1 for p in range(s, node_end) if vals[p] is not None)
            else:
                entries = node_end - s
            if limit and deleted + entries > limit:
                break
            if maxlen is not None:
                remove = self.length - entries >= maxlen
            else:
                remove = ids[node_end - 1] < minid
            if remove:
                self.length -= entries
                deleted += entries
                self._advance(node_end)
                continue
            if approx:
                break
            p = s
            while p < node_end:
                if maxlen is not None:
                    if self.length <= maxlen:
                        break
                elif ids[p] >= minid:
                    break
                if vals[p] is not None:
                    self.length -= 1
                    deleted += 1
                p += 1
            self._advance(p)
            break
        if deleted:
            self._update_first_after_trim()
        return deleted

    # -- introspection -----------------------------------------------------------------

    def node_count(self) -> int:
        """Radix-tree keys: the nodes still holding entries."""
        if self.start >= len(self.ids):
            return 0
        return len(self.bounds)

    def node_spans(self) -> list[tuple[int, int]]:
        """(a, b) positions of each node still holding entries: ids[a:b], from the
        node's first number (entries before `start` included, as Redis keeps them in the
        node, deleted)."""
        if self.start >= len(self.ids):
            return []
        base, bounds = self.base, self.bounds
        ends = [*bounds[1:], base + len(self.ids)]
        return [(max(0, a - base), b - base) for a, b in zip(bounds, ends)]

    def set_nodes(self, starts: list[int]) -> None:
        """A loaded stream's node structure: the positions at which its nodes start."""
        self.bounds = [self.base + p for p in starts]
        if self.start >= len(self.ids):
            self.bounds = []
        elif len(self.bounds) > 1:
            k = bisect_right(self.bounds, self.base + self.start) - 1
            del self.bounds[:k]

    def has_tombstones(self, lo: int = 0, hi: int = MAX_ID) -> bool:
        """streamRangeHasTombstones."""
        md = self.max_deleted
        if not self.length or not md:
            return False
        if self.first_id > md:
            return False
        return lo <= md <= hi

    def estimate_distance(self, i: int) -> int:
        """streamEstimateDistanceFromFirstEverEntry: the logical read counter of id `i`,
        or -1 when it cannot be known."""
        if not self.entries_added:
            return 0
        if not self.length and i <= self.last_id:
            return self.entries_added
        if i == self.last_id:
            return self.entries_added
        if i > self.last_id:
            return -1
        md = self.max_deleted
        if not md or md < self.first_id:
            if i < self.first_id:
                return self.entries_added - self.length
            if i == self.first_id:
                return self.entries_added - self.length + 1
        return -1

    def group_lag(self, g: Group) -> int | None:
        """streamReplyWithCGLag: the group's lag, or None when unknown."""
        if not self.entries_added:
            return 0
        if g.entries_read != -1 and not self.has_tombstones(g.last_id):
            return self.entries_added - g.entries_read
        er = self.estimate_distance(g.last_id)
        if er != -1:
            return self.entries_added - er
        return None
