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
"""

from sortedcontainers import SortedList

from . import TYPE_NAMES


class ZSet:
    __slots__ = ('scores', 'order', 'listpack')
    redis_type = 'zset'

    def __init__(self):
        self.scores = {}
        self.order = SortedList()
        self.listpack = True

    def __len__(self):
        return len(self.scores)

    def __contains__(self, member):
        return member in self.scores

    def __iter__(self):
        """Members in rank order (`order` has the (score, member) pairs)."""
        return (m for _, m in self.order)

    def encoding(self):
        return 'listpack' if self.listpack else 'skiplist'

    def fit(self, limits, *members):
        if self.listpack and (
            len(self.scores) > limits.zset_entries
            or any(len(m) > limits.zset_value for m in members)
        ):
            self.listpack = False

    def score(self, member):
        return self.scores.get(member)

    def add(self, member, score):
        """Set `member`'s score; True if it is a new member."""
        old = self.scores.get(member)
        if old is not None:
            if old == score:
                return False
            self.order.remove((old, member))
        self.scores[member] = score
        self.order.add((score, member))
        return old is None

    def remove(self, member):
        """Remove `member`; True if it was there."""
        score = self.scores.pop(member, None)
        if score is None:
            return False
        self.order.remove((score, member))
        return True

    def rank(self, member):
        """0-based rank in ascending order, or None."""
        score = self.scores.get(member)
        if score is None:
            return None
        return self.order.bisect_left((score, member))

    def copy(self):
        z = ZSet()
        z.scores = dict(self.scores)
        z.order = SortedList(self.order)
        z.listpack = self.listpack
        return z

    @classmethod
    def sized(cls, limits, items):
        """A new sorted set of (score, member) `items`, encoded as Redis would create it
        for that size (zsetTypeCreate)."""
        z = cls()
        for score, member in items:
            z.add(member, score)
        z.listpack = len(z) <= limits.zset_entries and all(
            len(m) <= limits.zset_value for m in z.scores
        )
        return z


TYPE_NAMES[ZSet] = 'zset'
