"""The sorted-set type: members (bytes) with IEEE-double scores, ordered by (score, member).

Two structures, as Redis's skiplist encoding has: `scores` (member -> score) answers ZSCORE
and membership in O(1), and `order`, a sortedcontainers SortedList of (score, member)
tuples, answers ranks and score/lex ranges in O(log n). Tuples compare as Redis orders
elements: by score, then by member bytes (memcmp). -0.0 and 0.0 are equal scores here as
in Redis.

Redis keeps a small sorted set as a listpack and converts it to a skiplist once it has more
than `zset-max-listpack-entries` members or a member longer than `zset-max-listpack-value`
bytes; `listpack` remembers that (never back for an existing key; commands that build a new
set, such as ZUNIONSTORE, start from `ZSet.sized`).

What a listpack changes that a client can see: Redis stores a listpack score that is an
integer of at most 2**62 in magnitude as that integer (zzlInsertAt's double2ll), so -0.0
becomes 0 there (the skiplist keeps -0.0), and ZSCAN, which returns the listpack's entries
as they are, shows such a score as an integer ('100000000000000000' where ZSCORE says
'1e+17'). `insert` (ZADD's path for a new member, converting before it inserts, as zsetAdd
does), `update` and `sized` store -0.0 as Redis would; `scan_score` renders a ZSCAN score.

Costs (sortedcontainers, load factor 1000): add/remove/rank O(log n), a pop from either
end amortized O(1) for the list and O(log n) for the index; one element is a dict entry
plus a (score, member) tuple.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Self

from sortedcontainers import SortedList

from ..resp import format_double

if TYPE_CHECKING:
    from . import EncodingLimits

LISTPACK_INT_MAX = 2.0**62  # double2ll: a listpack stores integral scores up to this as ints
LOAD = SortedList.DEFAULT_LOAD_FACTOR


def sorted_list(pairs: list[tuple[float, bytes]]) -> SortedList:
    """SortedList(pairs) for `pairs` already sorted, a list it takes over: the layout
    SortedList.update gives an empty list (sublists of LOAD values and their maxima, in
    the six fields sortedcontainers 2.4 keeps; tests/test_rdb_codec.py checks the result
    with SortedList._check), without its re-sort, copies and calls, which cost a small
    sorted set's load 3 us of its 10."""
    sl = object.__new__(SortedList)
    if len(pairs) <= LOAD:
        lists = [pairs] if pairs else []
    else:
        lists = [pairs[i : i + LOAD] for i in range(0, len(pairs), LOAD)]
    sl.__dict__ = {
        '_len': len(pairs),
        '_load': LOAD,
        '_lists': lists,
        '_maxes': [sub[-1] for sub in lists],
        '_index': [],
        '_offset': 0,
    }
    return sl


class ZSet:
    __slots__ = ('scores', 'order', 'listpack')
    redis_type = 'zset'

    def __init__(self) -> None:
        self.scores: dict[bytes, float] = {}
        self.order: SortedList = SortedList()  # of (score, member)
        self.listpack = True

    def __len__(self) -> int:
        return len(self.scores)

    def __contains__(self, member: object) -> bool:
        return member in self.scores

    def __iter__(self) -> Iterator[bytes]:
        """Members in rank order (`order` has the (score, member) pairs)."""
        return (m for _, m in self.order)

    def encoding(self) -> str:
        return 'listpack' if self.listpack else 'skiplist'

    def fit(self, limits: EncodingLimits, *members: bytes) -> None:
        if self.listpack and (
            len(self.scores) > limits.zset_entries
            or any(len(m) > limits.zset_value for m in members)
        ):
            self.listpack = False

    def score(self, member: bytes) -> float | None:
        return self.scores.get(member)

    def insert(self, limits: EncodingLimits, member: bytes, score: float) -> None:
        """zsetAdd of a member not in the set: a listpack that would grow past
        zset-max-listpack-entries, or receive a member longer than -value, becomes a
        skiplist first, and a listpack stores -0.0 as 0."""
        if self.listpack:
            if len(self.scores) >= limits.zset_entries or len(member) > limits.zset_value:
                self.listpack = False
            elif score == 0:
                score = 0.0
        self.scores[member] = score
        self.order.add((score, member))

    def update(self, member: bytes, old: float, score: float) -> None:
        """Move an existing member from score `old` to a different `score`."""
        if score == 0 and self.listpack:
            score = 0.0
        order = self.order
        order.remove((old, member))
        order.add((score, member))
        self.scores[member] = score

    def pop(self, count: int, highest: bool) -> list[tuple[float, bytes]]:
        """Remove the `count` (>= 1, at most len) lowest or highest elements: their
        (score, member) pairs, in the order popped."""
        order, scores = self.order, self.scores
        if count == 1:
            pair = order.pop(-1 if highest else 0)
            del scores[pair[1]]
            return [pair]
        if highest:
            pairs = list(order.islice(len(order) - count, reverse=True))
            del order[len(order) - count :]
        else:
            pairs = list(order.islice(0, count))
            del order[:count]
        for _, m in pairs:
            del scores[m]
        return pairs

    def scan_score(self, member: bytes) -> bytes:
        """A score as ZSCAN shows it: a listpack's entry as stored (an integer when
        double2ll took it), otherwise %.17g."""
        score = float(self.scores[member])
        if self.listpack and score.is_integer() and -LISTPACK_INT_MAX <= score <= LISTPACK_INT_MAX:
            return b'%d' % score
        return format_double(score)

    def add(self, member: bytes, score: float) -> bool:
        """Set `member`'s score; True if it is a new member."""
        old = self.scores.get(member)
        if old is not None:
            if old == score:
                return False
            self.order.remove((old, member))
        self.scores[member] = score
        self.order.add((score, member))
        return old is None

    def remove(self, member: bytes) -> bool:
        """Remove `member`; True if it was there."""
        score = self.scores.pop(member, None)
        if score is None:
            return False
        self.order.remove((score, member))
        return True

    def rank(self, member: bytes) -> int | None:
        """0-based rank in ascending order, or None."""
        score = self.scores.get(member)
        if score is None:
            return None
        rank: int = self.order.bisect_left((score, member))
        return rank

    def copy(self) -> ZSet:
        z = ZSet()
        z.scores = dict(self.scores)
        z.order = SortedList(self.order)
        z.listpack = self.listpack
        return z

    @classmethod
    def from_sorted(
        cls, scores: dict[bytes, float], pairs: list[tuple[float, bytes]], listpack: bool
    ) -> Self:
        """A sorted set from its `scores` (member -> score) and the same elements as
        (score, member) `pairs` in order: the RDB loader's, which checked them both."""
        z = object.__new__(cls)
        z.scores = scores
        z.order = sorted_list(pairs)
        z.listpack = listpack
        return z

    @classmethod
    def sized(cls, limits: EncodingLimits, items: Iterable[tuple[float, bytes]]) -> Self:
        """A new sorted set of (score, member) `items`, encoded as Redis would create it
        for that size (zsetTypeCreate)."""
        z = cls()
        for score, member in items:
            z.add(member, score)
        z.listpack = len(z) <= limits.zset_entries and all(
            len(m) <= limits.zset_value for m in z.scores
        )
        if z.listpack and 0.0 in z.scores.values():
            # a listpack holds no -0.0 (zzlInsertAt stores it as the integer 0)
            z.scores = {m: (0.0 if s == 0 else s) for m, s in z.scores.items()}
            z.order = SortedList((s, m) for m, s in z.scores.items())
        return z
