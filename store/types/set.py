"""The set type: a Python set of bytes members that remembers its Redis encoding.

Redis 7.0 keeps a set whose members are all 64-bit integers (in canonical decimal form) as
an intset, sorted by value (SMEMBERS and SSCAN show that order), while it has at most
`set-max-intset-entries` members; the first other member or one too many converts it for
good to a hashtable. `intset` turns False then and never back.
"""

from ..resp import string2ll
from . import TYPE_NAMES


class Set(set):
    __slots__ = ('intset',)
    redis_type = 'set'

    def __init__(self, *args):
        super().__init__(*args)
        self.intset = True

    def encoding(self):
        return 'intset' if self.intset else 'hashtable'

    def fit(self, limits, *added):
        """After adding `added`: convert to a hashtable when one is not an integer or the
        set outgrew the intset limit (setTypeAdd / intsetUpgrade)."""
        if self.intset and (
            len(self) > limits.set_intset_entries or any(string2ll(m) is None for m in added)
        ):
            self.intset = False

    def members(self):
        """Members in Redis's order where it has one: ascending values for an intset."""
        if self.intset:
            return sorted(self, key=int)
        return list(self)

    def copy(self):
        s = Set(self)
        s.intset = self.intset
        return s


TYPE_NAMES[Set] = 'set'
