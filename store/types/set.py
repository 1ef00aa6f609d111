"""The set type: a Python set of bytes members that remembers its Redis encoding and can
draw random members in O(1).

Encoding. Redis 7.0 keeps a set whose members are all 64-bit integers in canonical decimal
form (string2ll) as an intset, sorted by value (SMEMBERS, SSCAN and SRANDMEMBER with a big
count show that order), while it has at most `set-max-intset-entries` members (capped at
2^30 as intset.c caps it); the first other member, or a new member one too many, converts
it for good to a hashtable (setTypeAdd). `intset` turns False then and never back, except
where Redis builds a new set object (SPOP COUNT, *STORE): `built` derives the encoding such
a set gets.

Random members. A Python set cannot be indexed, so SPOP and SRANDMEMBER would cost O(n) a
call. `pool` is a list built on the first random draw: it holds every member exactly once,
plus members removed since (stale entries, dropped when a draw lands on one). Invariants:
pool entries are distinct and `len(pool) - len(self)` of them are stale. Adding to a set
whose pool has stale entries could duplicate one of them, so it drops the pool instead
(rebuilt on the next draw); a pool more than twice the set's size is rebuilt too, so a
draw takes at most two tries on average. Costs: a draw O(1) amortized, 8 bytes per member
once random draws are used, nothing otherwise. Members must be added through `add_members`
(or to a set without a pool, as a fresh copy or RESTORE has).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from random import choices, random, sample
from typing import TYPE_CHECKING, Any, Self

from ..resp import string2ll

if TYPE_CHECKING:
    from . import EncodingLimits

INTSET_MAX = 1 << 30  # intset.c: an intset never holds more, whatever the configuration


def intset_limit(limits: EncodingLimits) -> int:
    return min(limits.set_intset_entries, INTSET_MAX)


def all_integers(members: Iterable[bytes]) -> bool:
    """Whether every member is a canonical 64-bit integer (isSdsRepresentableAsLongLong)."""
    for m in members:
        if string2ll(m) is None:
            return False
    return True


class Set(set[bytes]):
    __slots__ = ('intset', 'pool')
    redis_type = 'set'

    def __init__(self, *args: Iterable[bytes]) -> None:
        super().__init__(*args)
        self.intset = True
        self.pool: list[bytes] | None = None

    @classmethod
    def built(cls, limits: EncodingLimits, *sources: Iterable[bytes]) -> Self:
        """A new set holding the members of `sources` with the encoding Redis gives a set
        it builds by adding members one by one to an empty intset (SINTERSTORE, SUNION,
        SDIFF algorithm 1, the new set of SPOP COUNT): an intset iff every member is an
        integer and there are at most set-max-intset-entries of them."""
        s = cls()
        s.update(*sources)
        s.intset = len(s) <= intset_limit(limits) and all_integers(s)
        return s

    def encoding(self) -> str:
        return 'intset' if self.intset else 'hashtable'

    def fit(self, limits: EncodingLimits, *added: bytes) -> None:
        """After adding `added` (at least one of them new): convert to a hashtable when
        one is not an integer or the set outgrew the intset limit (setTypeAdd)."""
        if self.intset and (len(self) > intset_limit(limits) or not all_integers(added)):
            self.intset = False

    def add_members(self, members: Collection[bytes], limits: EncodingLimits) -> int:
        """setTypeAdd for each of `members`; returns how many were new."""
        n = len(self)
        pool = self.pool
        if pool is None:
            self.update(members)
        elif len(pool) != n:
            self.pool = None  # stale entries: a re-added member could appear twice
            self.update(members)
        else:
            for m in members:
                if m not in self:
                    self.add(m)
                    pool.append(m)
        added = len(self) - n
        if added and self.intset:
            self.fit(limits, *members)
        return added

    def members(self) -> list[bytes]:
        """Members in Redis's order where it has one: ascending values for an intset."""
        if self.intset:
            return sorted(self, key=int)
        return list(self)

    def copy(self) -> Set:
        s = Set(self)
        s.intset = self.intset
        return s

    def __deepcopy__(self, memo: dict[int, Any]) -> Set:
        return self.copy()  # members are immutable bytes

    # -- random members ----------------------------------------------------------------

    def _draw(self) -> int:
        """Index in `pool` of a member drawn uniformly at random (the set is not empty).
        int(random() * n) is below n for any n < 2**53, and cheaper than randrange."""
        pool = self.pool
        n = len(self)
        if pool is None or not n <= len(pool) <= 2 * n:
            pool = self.pool = list(self)
        if len(pool) == n:  # no stale entries
            return int(random() * n)
        while True:
            i = int(random() * len(pool))
            if pool[i] in self:
                return i
            pool[i] = pool[-1]  # a stale entry: drop it
            pool.pop()

    def random_member(self) -> bytes:
        i = self._draw()  # builds the pool first
        return self.pool[i]  # type: ignore[index]  # a list: _draw built it

    def pop_random(self) -> bytes:
        """Remove and return a random member."""
        i = self._draw()
        pool: list[bytes] = self.pool  # type: ignore[assignment]  # a list: _draw built it
        m = pool[i]
        pool[i] = pool[-1]
        pool.pop()
        self.remove(m)
        return m

    def random_members(self, count: int) -> list[bytes]:
        """`count` members drawn independently (repeats allowed), in draw order."""
        if count <= len(self):
            return [self.random_member() for _ in range(count)]
        return choices(self._exact_pool(), k=count)

    def random_distinct(self, count: int) -> list[bytes]:
        """`count` distinct members (count < len(self)) in random order."""
        if count * 3 > len(self):  # a good share of the set: sample from all of it
            return sample(self._exact_pool(), count)
        picked: dict[bytes, None] = {}
        while len(picked) < count:
            picked[self.random_member()] = None
        return list(picked)

    def _exact_pool(self) -> list[bytes]:
        """The pool without stale entries: exactly the members."""
        if self.pool is None or len(self.pool) != len(self):
            self.pool = list(self)
        return self.pool
