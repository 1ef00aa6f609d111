"""The hash type: a dict of field -> value (both bytes) that remembers its Redis encoding.

Redis keeps a small hash as a listpack (insertion order, which HGETALL shows) and converts
it for good to a hashtable once it has more than `hash-max-listpack-entries` fields or a
field or value longer than `hash-max-listpack-value` bytes. A Python dict keeps insertion
order too, so only the encoding name needs remembering: `listpack` turns False at the
first write past a threshold and never back (HDEL does not convert back, nor does Redis).

Where a listpack shows its order, so does the dict: a new field goes to the end, a field
whose value is replaced keeps its place (lpReplace), a deleted and re-added field moves to
the end. A hashtable's order is Redis's hash order, which nobody can rely on; ours stays
insertion order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import EncodingLimits


class Hash(dict[bytes, bytes]):
    __slots__ = ('listpack',)
    redis_type = 'hash'

    def __init__(self, *args: Mapping[bytes, bytes] | Iterable[tuple[bytes, bytes]]) -> None:
        super().__init__(*args)
        self.listpack = True

    def encoding(self) -> str:
        return 'listpack' if self.listpack else 'hashtable'

    def fit(self, limits: EncodingLimits, *strings: bytes) -> None:
        """hashTypeTryConversion / hashTypeConvert after a write that added `strings`
        (fields and values): convert to a hashtable past either threshold."""
        if self.listpack and (
            len(self) > limits.hash_entries or any(len(s) > limits.hash_value for s in strings)
        ):
            self.listpack = False

    def fit_pair(self, limits: EncodingLimits, field: bytes, value: bytes) -> None:
        """`fit` after one field was set: the HSET/HINCRBY hot path, without the tuple."""
        if self.listpack and (
            len(self) > limits.hash_entries
            or len(field) > limits.hash_value
            or len(value) > limits.hash_value
        ):
            self.listpack = False

    def copy(self) -> Hash:
        h = Hash(self)
        h.listpack = self.listpack
        return h
