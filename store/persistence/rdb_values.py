"""Reading one RDB value (rdb.c's rdbLoadObject): `ValueReader`, the primitives (lengths,
strings, blobs) and a reader per value type, which rdb_loader.RdbLoader dispatches to.

Each reader returns the value, or None for an empty aggregate (skipped as Redis skips it),
and re-derives the value's encoding from the keyspace's EncodingLimits as Redis 7.0's
rdbLoadObject does, differently for a compact form and an element-by-element one (checked
against redis-server):

- hash, listpack form: stays a listpack unless it has more than hash-max-listpack-entries
  fields (long values are not checked); hashtable form: a listpack if it has at most that
  many fields and no field or value is longer than hash-max-listpack-value.
- set, intset form: stays an intset unless it has more than set-max-intset-entries
  members; hashtable form: an intset if it has at most that many, all integers.
- sorted set, listpack form: stays a listpack unless it has more than
  zset-max-listpack-entries members; skiplist form: a listpack if it has at most that
  many and no member is longer than zset-max-listpack-value.
- list: always a quicklist.

Corruption is RdbError naming the byte offset (`_fail`), never another exception and never
a half-built value. Speed: a blob's length, a run of short strings (a set's members) and
each listpack entry take a few Python steps each; values are built without their __init__
(Hash, Set, ZSet: the reader sets their fields) and a small sorted set's SortedList is laid
out from its sorted pairs (types/zset.py sorted_list). The readers of small aggregates also
compute their memory charge (`charge`) from the list they built the value from, so the
keyspace need not walk the values again. Bounds: a string sliced past the end of the data
comes out short, which the loader's batch check finds.

Lazy loading (`pack`, set by the loader): a small hash, sorted set, single-node list (types
16, 17, 18) or intset (11) whose blob passes a header check (listpack: total bytes, a known
element count, the end byte; intset: width, count and size) and whose count keeps it
compact under the keyspace's limits stays a types/packed.py `Packed` (type byte,
uncompressed blob, an estimated charge), decoded by rdb_loader.unpack when first used.
"""

from __future__ import annotations

import struct
from math import isnan
from typing import Any

from ..memory.sizes import (
    CONTAINER,
    DICT_ENTRY,
    LIST_SLOT,
    SAMPLES,
    SET_ENTRY,
    ZSET_ELEMENT,
    elements_size,
)
from ..rdb import RdbError, lzf_decompress
from ..types import EncodingLimits
from ..types.hash import Hash
from ..types.list import List
from ..types.packed import Packed
from ..types.set import Set, all_integers, intset_limit
from ..types.stream import NACK, SEQ_MASK, Consumer, Group, Stream
from ..types.zset import ZSet
from .rdb_blobs import (
    _as_bytes,
    _Bad,
    _lp_count,
    _lp_decode_bytes,
    intset_decode,
    lp_decode,
    ziplist_decode,
    zipmap_decode,
)
from .rdb_types import (
    F64,
    I64,
    QUICKLIST_PACKED,
    QUICKLIST_PLAIN,
    STREAM_DELETED,
    STREAM_SAMEFIELDS,
    T_LIST_QUICKLIST_2,
    T_STREAM_LISTPACKS_2,
    T_ZSET_2,
    T_ZSET_LISTPACK,
    U64,
)

_INTSET_HEADER = struct.Struct('<II')
_NUMBER_STARTS = frozenset(bytes((c,)) for c in b'-0123456789')  # a number's first byte


class ValueReader:
    """The reading of values at `pos` in `data` (up to `end`); RdbLoader sets the fields."""

    data: bytes
    end: int
    pos: int
    limits: EncodingLimits
    pack: bool  # small aggregates stay packed (types/packed.py)
    packed: int  # values left packed
    charge: int  # the last aggregate's charge, where its reader computed it

    def _fail(self, message: str) -> RdbError:
        return RdbError(f'{message} (RDB offset {self.pos})')

    def _short(self) -> RdbError:
        """A read past the end: data sliced there came out short, found at the batch's end."""
        self.pos = self.end
        return self._fail('Short read loading RDB')

    # -- primitives ----------------------------------------------------------------------

    def _read(self, n: int) -> bytes:
        p = self.pos
        e = p + n
        if e > self.end:
            raise self._fail('Short read loading RDB')
        self.pos = e
        return self.data[p:e]

    def _len(self) -> int:
        """rdbLoadLen of a plain length (an encoded one is an error here)."""
        data, p = self.data, self.pos
        c = data[p]
        kind = c >> 6
        if kind == 0:
            self.pos = p + 1
            return c
        if kind == 1:
            self.pos = p + 2
            return ((c & 0x3F) << 8) | data[p + 1]
        if c == 0x80 or c == 0x81:
            e = p + 5 if c == 0x80 else p + 9
            if e > self.end:  # named at the length's first byte, within the data
                raise self._fail('Short read loading RDB')
            self.pos = e
            return int.from_bytes(data[p + 1 : e], 'big')
        raise self._fail(f'Unknown length encoding {c}')

    def _str(self) -> bytes:
        """rdbGenericLoadStringObject: plain, integer-encoded or LZF-compressed."""
        data, p = self.data, self.pos
        c = data[p]
        if c < 128:  # a 6- or 14-bit length: nearly every string
            if c < 64:
                p += 1
                e = p + c
            else:
                e = p + 2 + (((c & 0x3F) << 8) | data[p + 1])
                p += 2
            if e > self.end:
                raise self._fail('Short read loading RDB string')
            self.pos = e
            return data[p:e]
        if c >= 0xC0:
            enc = c & 0x3F
            if enc <= 2:
                size = 1 << enc
                self.pos = p + 1
                return b'%d' % int.from_bytes(self._read(size), 'little', signed=True)
            if enc == 3:
                self.pos = p + 1
                clen = self._len()
                size = self._len()
                packed = self._read(clen)
                s = lzf_decompress(packed, size)
                if s is None or len(s) != size:
                    raise self._fail('Invalid LZF compressed string')
                return s
            raise self._fail(f'Unknown RDB string encoding type {enc}')
        n = self._len()
        return self._read(n)

    def _strings(self, n: int) -> list[bytes]:
        """`n` strings in a row (a set's members, a hash's fields and values), the short
        ones read here without a call each."""
        data, p = self.data, self.pos
        out: list[bytes] = []
        append = out.append
        for _ in range(n):
            c = data[p]
            if c < 64:
                e = p + 1 + c
                append(data[p + 1 : e])
                p = e
            else:
                self.pos = p
                append(self._str())
                p = self.pos
        if p > self.end:
            raise self._short()
        self.pos = p
        return out

    def _blob(self, what: str, decode: Any) -> Any:
        """A string holding a compact structure, decoded; a bad one names its offset."""
        at = self.pos
        return self._decoded(what, decode, self._raw(), at)

    def _raw(self) -> bytes:
        """A blob's bytes (the RDB string at pos), uncompressed."""
        data, at = self.data, self.pos
        c = data[at]
        if c < 128:  # a 6- or 14-bit length, read here: 250k blobs in 1M mixed keys
            p = at + 1 if c < 64 else at + 2
            e = p + (c if c < 64 else ((c & 0x3F) << 8) | data[at + 1])
            if e > self.end:
                raise self._fail('Short read loading RDB string')
            self.pos = e
            return data[p:e]
        return self._str()

    def _decoded(self, what: str, decode: Any, blob: bytes, at: int) -> Any:
        try:
            return decode(blob)
        except (_Bad, IndexError, struct.error, ValueError) as e:
            self.pos = at
            raise self._fail(f'{what} integrity check failed ({e})') from None

    # -- values (rdbLoadObject): each reader returns the value, or None for an empty
    # aggregate (skipped). The encodings Redis 7.0 writes for small values come first.

    def _hash_listpack(self, t: int) -> Hash | Packed | None:
        at = self.pos
        blob = self._raw()
        if self.pack:
            n = _lp_count(blob)
            if 0 < n <= 2 * self.limits.hash_entries and not n & 1:
                self.packed += 1
                self.charge = c = CONTAINER + len(blob) + (38 + DICT_ENTRY // 2) * n
                return Packed(t, blob, c)
        flat = self._decoded('Hash', _lp_decode_bytes, blob, at)
        h = self._compact_hash(flat, False)
        if h is not None and len(h) <= SAMPLES:
            self.charge = elements_size(flat, len(h), DICT_ENTRY)
        return h

    def _zset_listpack(self, t: int) -> ZSet | Packed | None:
        """A listpack (or, before RDB 10, a ziplist) of member, score, member, ..."""
        at = self.pos
        blob = self._raw()
        if self.pack and t == T_ZSET_LISTPACK:
            n = _lp_count(blob)
            if 0 < n <= 2 * self.limits.zset_entries and not n & 1:
                self.packed += 1
                self.charge = c = CONTAINER + len(blob) // 2 + (20 + ZSET_ELEMENT // 2) * n
                return Packed(t, blob, c)
        decode = lp_decode if t == T_ZSET_LISTPACK else ziplist_decode
        return self._zset_items(self._decoded('Zset', decode, blob, at))

    def _zset_items(self, items: list[Any]) -> ZSet | None:
        n = len(items)
        if n & 1:
            raise self._fail('Zset listpack with an odd number of entries')
        if not n:
            return None
        members = _as_bytes(items[0::2])
        scores = list(map(float, items[1::2]))  # integral scores are int entries
        z = self._build_zset(members, scores, n <= 2 * self.limits.zset_entries)
        if n <= 2 * SAMPLES:
            self.charge = elements_size(members, n >> 1, ZSET_ELEMENT)
        return z

    def _quicklist(self, t: int) -> List | Packed | None:
        n = self._len()
        if n == 1 and t == T_LIST_QUICKLIST_2 and self.data[self.pos] == QUICKLIST_PACKED:
            self.pos += 1  # one listpack node, as every short list has
            at = self.pos
            blob = self._raw()
            if self.pack:
                count = _lp_count(blob)
                if count > 0:
                    self.packed += 1
                    self.charge = c = CONTAINER + len(blob) + (38 + LIST_SLOT) * count
                    return Packed(t, blob, c)
            node = self._decoded('Listpack', _lp_decode_bytes, blob, at)
            if len(node) <= SAMPLES:
                self.charge = elements_size(node, len(node), LIST_SLOT)
            return List(node) if node else None
        items: list[bytes] = []
        for _ in range(n):
            if t == T_LIST_QUICKLIST_2:
                container = self._len()
                if container == QUICKLIST_PLAIN:
                    items.append(self._str())
                    continue
                if container != QUICKLIST_PACKED:
                    raise self._fail('Quicklist integrity check failed.')
                items += self._blob('Listpack', _lp_decode_bytes)
            else:
                items += _as_bytes(self._blob('Ziplist', ziplist_decode))
        return List(items) if items else None

    def _intset(self, t: int) -> Set | Packed | None:
        at = self.pos
        blob = self._raw()
        if self.pack and len(blob) >= 8:
            width, n = _INTSET_HEADER.unpack_from(blob)
            if (
                width in (2, 4, 8)
                and 0 < n <= intset_limit(self.limits)
                and len(blob) == 8 + width * n
            ):
                self.packed += 1
                self.charge = c = CONTAINER + (48 + SET_ENTRY) * n
                return Packed(t, blob, c)
        return self._intset_values(self._decoded('Intset', intset_decode, blob, at))

    def _intset_values(self, values: Any) -> Set | None:
        if not values:
            return None
        s = Set.__new__(Set)
        s.update(map(b'%d'.__mod__, values))
        s.pool = None
        s.intset = len(s) <= intset_limit(self.limits)
        return s

    def _set(self, t: int) -> Set | None:
        n = self._len()
        if not n:
            return None
        members = self._strings(n)
        s = Set.__new__(Set)  # Set's __init__ skipped: its fields are set here
        s.update(members)
        s.pool = None
        if len(s) != n:
            raise self._fail('Duplicate set members detected')
        # string2ll raises and catches an exception for each non-number (4 us): a set
        # whose first member cannot start a number is no intset, found without it
        s.intset = (
            n <= intset_limit(self.limits)
            and members[0][:1] in _NUMBER_STARTS
            and all_integers(members)
        )
        if n <= SAMPLES:
            self.charge = elements_size(members, n, SET_ENTRY)
        return s

    def _hash(self, t: int) -> Hash | None:
        n = self._len()
        if not n:
            return None
        return self._compact_hash(self._strings(2 * n), True)

    def _plain_list(self, t: int) -> List | None:
        n = self._len()
        return List(self._strings(n)) if n else None

    def _zset(self, t: int) -> ZSet | None:
        n = self._len()
        if not n:
            return None
        members, scores = [], []
        for _ in range(n):
            members.append(self._str())
            if t == T_ZSET_2:
                scores.append(F64.unpack(self._read(8))[0])
            else:
                scores.append(self._old_double())
        limits = self.limits
        listpack = n <= limits.zset_entries and max(map(len, members)) <= limits.zset_value
        return self._build_zset(members, scores, listpack)

    def _hash_ziplist(self, t: int) -> Hash | None:
        return self._compact_hash(_as_bytes(self._blob('Hash', ziplist_decode)), False)

    def _hash_zipmap(self, t: int) -> Hash | None:
        return self._compact_hash(self._blob('Zipmap', zipmap_decode), True)

    def _list_ziplist(self, t: int) -> List | None:
        items = self._blob('Ziplist', ziplist_decode)
        return List(_as_bytes(items)) if items else None

    def _compact_hash(self, flat: list[bytes], check_values: bool) -> Hash | None:
        """A hash from its fields and values, flat: from a listpack or ziplist it stays
        one unless it has too many fields; `check_values` (a zipmap, a hashtable) converts
        it when a field or value is too long, too."""
        n = len(flat)
        if n & 1:
            raise self._fail('Hash listpack with an odd number of entries')
        if not n:
            return None
        it = iter(flat)
        h = Hash.__new__(Hash)  # Hash's __init__ skipped: its one field is set here
        h.update(zip(it, it))
        if len(h) * 2 != n:
            raise self._fail('Duplicate hash fields detected')
        limits = self.limits
        h.listpack = n <= 2 * limits.hash_entries
        if check_values and h.listpack:
            h.listpack = max(map(len, flat)) <= limits.hash_value
        return h

    def _build_zset(self, members: list[bytes], scores: list[float], listpack: bool) -> ZSet:
        if any(map(isnan, scores)):
            raise self._fail('Zset with NAN score detected')
        if listpack and 0.0 in scores:  # a listpack holds no -0.0
            scores = [0.0 if s == 0 else s for s in scores]
        by_member = dict(zip(members, scores))
        if len(by_member) != len(members):
            raise self._fail('Duplicate zset fields detected')
        return ZSet.from_sorted(by_member, sorted(zip(scores, members)), listpack)

    def _old_double(self) -> float:
        """rdbLoadDoubleValue (RDB_TYPE_ZSET): a length byte, then the number as text;
        253, 254 and 255 stand for nan, inf and -inf."""
        n = self._read(1)[0]
        if n == 253:
            return float('nan')
        if n == 254:
            return float('inf')
        if n == 255:
            return float('-inf')
        return float(self._read(n))

    def _stream(self, t: int) -> Stream:
        s = Stream()
        ids, vals, enc = s.ids, s.vals, s.enc
        starts = []  # the position of each node's first entry
        live = 0
        prev = -1
        for _ in range(self._len()):
            nodekey = self._str()
            if len(nodekey) != 16:
                raise self._fail('Stream node key entry is not the size of a stream ID')
            at = self.pos
            e = self._blob('Stream listpack', lp_decode)
            if not e:
                raise self._fail('Empty listpack inside stream')
            master = int.from_bytes(nodekey, 'big')
            mms, mseq = master >> 64, master & SEQ_MASK
            starts.append(len(ids))
            try:
                nf = e[2]
                mfields = _as_bytes(e[3 : 3 + nf])
                if e[3 + nf] != 0:
                    raise _Bad('master entry terminator')
                p = 4 + nf
                end = len(e)
                while p < end:
                    flags = e[p]
                    i = (mms + e[p + 1]) << 64 | (mseq + e[p + 2])
                    p += 3
                    if flags & STREAM_SAMEFIELDS:
                        values = _as_bytes(e[p : p + nf])
                        p += nf
                        fields: Any = [None] * (2 * nf)
                        fields[0::2] = mfields
                        fields[1::2] = values
                    else:
                        n = e[p]
                        fields = _as_bytes(e[p + 1 : p + 1 + 2 * n])
                        p += 1 + 2 * n
                    p += 1  # lp-count
                    if p > end or i <= prev or (i >> 64) > U64 or i < 0:
                        raise _Bad('stream entry')
                    prev = i
                    ids.append(i)
                    enc.append(None)
                    if flags & STREAM_DELETED:
                        vals.append(None)
                    else:
                        vals.append(tuple(fields))
                        live += 1
            except (_Bad, IndexError, TypeError, ValueError) as err:
                self.pos = at
                raise self._fail(f'Stream listpack integrity check failed ({err})') from None
        s.length = self._len()
        if s.length != live:
            raise self._fail('Stream length inconsistent with its entries')
        last = self._len()
        s.last_id = last << 64 | self._len()
        start = 0
        while start < len(vals) and vals[start] is None:
            start += 1
        s.start = start
        s.ntomb = len(vals) - start - live
        s.set_nodes(starts)
        if t == T_STREAM_LISTPACKS_2:
            ms = self._len()
            s.first_id = ms << 64 | self._len()
            ms = self._len()
            s.max_deleted = ms << 64 | self._len()
            s.entries_added = self._len()
        else:
            s.first_id = ids[start] if live else 0
            s.max_deleted = 0
            s.entries_added = s.length
        if live and s.last_id < ids[-1]:
            raise self._fail('Stream last id below its last entry')
        for _ in range(self._len()):
            self._group(s, t)
        return s

    def _group(self, s: Stream, t: int) -> None:
        name = self._str()
        if name in s.groups:
            raise self._fail(f'Duplicated consumer group name {name!r}')
        ms = self._len()
        last_id = ms << 64 | self._len()
        if t == T_STREAM_LISTPACKS_2:
            entries_read = self._len()
            if entries_read >= 1 << 63:
                entries_read -= 1 << 64
        else:
            entries_read = s.estimate_distance(last_id)
        g = s.groups[name] = Group(name, last_id, entries_read)
        pel = g.pel
        for _ in range(self._len()):
            i = int.from_bytes(self._read(16), 'big')
            delivery_time = I64.unpack(self._read(8))[0]
            if pel.get(i) is not None:
                raise self._fail('Duplicated global PEL entry loaded')
            pel.add(i, NACK(None, delivery_time, self._len()))
        for _ in range(self._len()):
            cname = self._str()
            if cname in g.consumers:
                raise self._fail('Duplicate stream consumer detected.')
            consumer = g.consumers[cname] = Consumer(cname, I64.unpack(self._read(8))[0])
            cpel = consumer.pel
            for _ in range(self._len()):
                i = int.from_bytes(self._read(16), 'big')
                nack = pel.get(i)
                if nack is None:
                    raise self._fail('Consumer entry not found in group global PEL')
                if cpel.get(i) is not None:
                    raise self._fail('Duplicated consumer PEL entry loaded')
                nack.consumer = consumer
                cpel.add(i, nack)
        for _, nack in pel.iter_from(0):
            if nack.consumer is None:
                raise self._fail('Stream CG PEL entry without consumer')
