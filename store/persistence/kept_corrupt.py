"""RESTORE without deep sanitization: values kept as the corrupt bytes they came as.

Without deep sanitization Redis keeps blobs it did not walk as they came, corrupt or not,
and fails (an assertion, the process ends) when a command reads a corrupt one. This server
does the same where the codec cannot decode what Redis would keep (`kept_unsanitized`): a
compact value stays a types/packed.py blob (reading it is Redis's assertion on the
listpack, keyspace.Keyspace.corrupt, ending the process), a stream's
entries become a tripwire that ends the process with Redis's assertion report when read
(store/crash.py); a stream whose listpacks only deep checks refuse is kept that way even
when the codec could decode it, since Redis asserts on it (`corrupt_stream`). Nothing here
runs for a payload that decodes.
"""

from __future__ import annotations

import struct
from typing import Any

from .. import crash
from ..memory.sizes import CONTAINER
from ..rdb import RdbError, RdbReader
from ..types.packed import (
    T_HASH_LISTPACK,
    T_LIST_QUICKLIST_2,
    T_SET_INTSET,
    T_ZSET_LISTPACK,
    Packed,
)
from ..types.stream import Stream
from .blob_validation import _lp_entry_size, _lp_integer, lp_next
from .rdb_blobs import _backlen_size

_U16 = struct.Struct('<H')


def kept_unsanitized(server: Any, payload: bytes, why: str) -> Any:
    """Without deep sanitization Redis keeps a compact value whose header passed as the
    bytes it got, and only meets the corruption when a command reads it. So does this
    server, where it can keep bytes: a hash, sorted set, intset or one-node list stays a
    `Packed` blob (types/packed.py), and reading it is Redis's assertion on the listpack
    (keyspace.Keyspace.corrupt, ending the process); a stream keeps no entries but a
    tripwire, and reading them is that assertion too (store/crash.py). Converting a hash
    listpack with duplicate fields to a table panics at once, as hashTypeConvertListpack
    does. None for anything else."""
    r = RdbReader(payload)
    try:
        t = r.type()
        if t in (T_HASH_LISTPACK, T_ZSET_LISTPACK, T_SET_INTSET):
            blob = r.string()
            if t == T_HASH_LISTPACK and 'Duplicate hash fields' in why:
                pairs = _U16.unpack_from(blob, 4)[0] // 2
                if pairs > server.keyspace.limits.hash_entries:
                    _hexdump(server, 'listpack with dup elements dump', blob)
                    crash.panic(server, 'Listpack corruption detected', 't_hash.c:1217')
            return Packed(t, blob, CONTAINER + len(blob))
        if t == T_LIST_QUICKLIST_2:
            nodes, _ = r.length()
            container, _ = r.length()
            if nodes == 1 and container == 2:
                blob = r.string()
                return Packed(t, blob, CONTAINER + len(blob))
            return None
        if t in (15, 19) and 'Stream listpack integrity check failed' in why:
            # (a failure past the listpacks, in the groups, is one Redis reports too)
            return corrupt_stream(server, payload)
    except (RdbError, IndexError, struct.error):
        return None
    return None


def corrupt_stream(server: Any, payload: bytes) -> Any:
    """A stream whose listpacks Redis keeps unsanitized: its entries are a tripwire, its
    length and IDs the payload's. An RDB type 15 stream has its first entry looked up at
    load (streamGetEdgeID, no first ID stored): where that walk meets a bad entry, the
    assertion comes now."""
    t = payload[0]
    r = RdbReader(payload)
    r.type()
    nodes, _ = r.length()
    for i in range(nodes):
        r.string()
        lp = r.string()
        if t == 15 and i == 0 and not _first_entry_walk(lp):
            crash.assert_failed(server, 'lpValidateNext(lp, &p, lpbytes)', 'listpack.c:1276')
    stream = Stream()
    try:
        meta = [r.length()[0] for _ in range(3 if t == 15 else 8)]
    except RdbError:
        meta = [0] * 8
    stream.length = meta[0]
    stream.last_id = meta[1] << 64 | meta[2]
    if t != 15:
        stream.first_id = meta[3] << 64 | meta[4]
        stream.max_deleted = meta[5] << 64 | meta[6]
        stream.entries_added = meta[7]
    trip = _Tripwire(server)
    stream.ids = stream.vals = stream.enc = trip  # type: ignore[assignment]  # a deliberate trap
    if server.loop is not None:
        server.loop.call_soon(trip.arm)
    else:
        trip.arm()
    return stream


def _first_entry_walk(lp: bytes) -> bool:
    """streamIteratorGetID's forward walk to the first live entry of a node, with the
    checks lpFirst, lpNext and lpGetInteger assert: False where one would fail."""
    last = len(lp) - 1

    def nxt(p: int | None) -> int | None:
        if p is None:
            raise IndexError
        q = p + _lp_entry_size(lp, p)
        q += _backlen_size(q - p)
        if q > last:
            raise IndexError
        if lp[q] == 0xFF:
            return None
        if not lp_next(lp, q)[0]:
            raise IndexError
        return q

    def integer(p: int | None) -> int:
        v = _lp_integer(lp, p)
        if v is None:
            raise IndexError
        return v

    try:
        if len(lp) < 7 or lp[6] == 0xFF or not lp_next(lp, 6)[0]:
            return False
        p = nxt(nxt(6))
        master_fields = integer(p)
        p = nxt(p)
        for _ in range(master_fields):
            p = nxt(p)
        while True:
            p = nxt(p)
            if p is None:
                return True
            flags = integer(p)
            p = nxt(p)
            integer(p)
            p = nxt(p)
            integer(p)
            p = nxt(p)
            fields = master_fields if flags & 2 else integer(p)
            if not flags & 1:  # not deleted: the first entry is found
                return True
            for _ in range(fields if flags & 2 else fields * 2):
                p = nxt(p)
    except (IndexError, struct.error):
        return False


class _Tripwire:
    """The entries of a stream restored without sanitization whose listpacks are corrupt:
    reading them is the assertion Redis fails on such a listpack. Until the RESTORE's
    turn of the loop is over (`armed`), their number reads as none: the keyspace charges
    the new value then, which Redis does without reading a listpack."""

    __slots__ = ('server', 'armed')

    def __init__(self, server: Any) -> None:
        self.server = server
        self.armed = False

    def arm(self) -> None:
        self.armed = True

    def __len__(self) -> int:
        if self.armed:
            self._trip()
        return 0

    def _trip(self, *args: Any) -> Any:
        crash.assert_failed(self.server, 'lpValidateNext(lp, &p, lpbytes)', 'listpack.c:1276')

    __getitem__ = __setitem__ = __delitem__ = __iter__ = __reversed__ = __contains__ = _trip
    append = extend = insert = pop = index = count = __iadd__ = _trip


def _hexdump(server: Any, what: str, blob: bytes) -> None:
    """serverLogHexDump: the bytes in lines of 64 hex digits."""
    server.log(f'{what} (hexdump of {len(blob)} bytes):', '#')
    text = blob.hex()
    for i in range(0, len(text), 64):
        server.log(text[i : i + 64], '#')
