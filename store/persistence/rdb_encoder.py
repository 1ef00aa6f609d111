"""The RDB encoder: `RdbEncoder` turns values into the bytes redis-server 7.0 writes (RDB
v10), for the snapshot (snapshot.py: a file, an AOF base, a replica's payload) and DUMP.

Encodings written are the ones Redis 7.0 itself writes for the same value, so OBJECT
ENCODING survives a save and a load on either server: a compact hash or sorted set as a
listpack (types 16, 17), an integer set as an intset (11), every list as a quicklist of
listpacks (18), big aggregates element by element (2 set, 4 hash, 5 zset), streams with
their consumer groups as type 19. A value still packed since its load (types/packed.py)
is written back as it was read. The blobs are built by rdb_blobs.py; rdb.py has the
string, length, LZF and CRC64 primitives.

DUMP uses the same encoder for one value without a key (`RdbEncoder.value`; rdb.py adds
the payload's footer), so payloads move both ways between this server and redis-server.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, cast

from ..rdb import RDB_VERSION, crc64, rdb_len, rdb_string
from ..types.hash import Hash
from ..types.list import List
from ..types.packed import Packed
from ..types.set import Set
from ..types.stream import ENCODED, SEQ_MASK, Stream, decode_fields
from ..types.zset import ZSet
from ..version import VERSION
from .rdb_blobs import intset_encode, listpack, lp_elem, lp_int, lp_score
from .rdb_types import (
    F64,
    I64,
    QUICKLIST_NODE_BYTES,
    STREAM_DELETED,
    STREAM_SAMEFIELDS,
    T_LIST_QUICKLIST_2,
    U64,
)


def _used_memory() -> int:
    """Resident memory for the used-mem aux field (informational only)."""
    try:
        with open('/proc/self/statm', 'rb') as f:
            return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
    except (OSError, ValueError, IndexError):
        return 0


class RdbEncoder:
    """The snapshot's encoder for RDB files (protocol in snapshot.py). Each method returns
    bytes; the snapshot writes them in file order and keeps the CRC64 of all of it."""

    def __init__(
        self, compress: bool = True, checksum: bool = True, aux: dict[bytes, bytes] | None = None
    ) -> None:
        self.compress = compress
        self.checksum = checksum
        self.aux = dict(aux or {})
        self._by_type: dict[type, Callable[[Any], tuple[bytes, bytes]]] = {
            Hash: self._hash,
            List: self._list,
            Set: self._set,
            ZSet: self._zset,
            Stream: self._stream,
        }

    def header(self) -> bytes:
        """Magic, version and the aux fields rdbSaveInfoAuxFields writes (without the
        replication ones); `aux` adds or replaces fields."""
        fields = {
            b'redis-ver': VERSION.encode(),
            b'redis-bits': b'64',
            b'ctime': b'%d' % int(time.time()),
            b'used-mem': b'%d' % _used_memory(),
            b'aof-base': b'0',
        }
        fields.update(self.aux)
        c = self.compress
        return b'REDIS%04d' % RDB_VERSION + b''.join(
            b'\xfa' + rdb_string(k, c) + rdb_string(v, c) for k, v in fields.items()
        )

    def functions(self, codes: list[bytes]) -> bytes:
        c = self.compress
        return b''.join(b'\xf5' + rdb_string(code, c) for code in codes)

    def select_db(self, db: int, size: int, expires: int) -> bytes:
        return b'\xfe' + rdb_len(db) + b'\xfb' + rdb_len(size) + rdb_len(expires)

    def key(self, key: bytes, value: Any, deadline: int | None) -> bytes:
        """One key: [EXPIRETIME_MS deadline] type key value."""
        c = self.compress
        if type(value) is bytes:
            body = b'\x00' + rdb_string(key, c) + rdb_string(value, c)
        else:
            t, encoded = self.encode(value)
            body = t + rdb_string(key, c) + encoded
        if deadline is None:
            return body
        return b'\xfc' + I64.pack(deadline) + body

    def value(self, value: Any) -> bytes:
        """rdbSaveObjectType + rdbSaveObject: a value without its key (DUMP's payload)."""
        t, encoded = self.encode(value)
        return t + encoded

    def encode(self, value: Any) -> tuple[bytes, bytes]:
        """The value's RDB type byte and its encoding."""
        t = type(value)
        if t is bytes or t is bytearray:
            return b'\x00', rdb_string(bytes(value), self.compress)
        if t is Packed:  # written back as loaded: a valid RDB encoding
            node = b'\x01\x02' if value.type == T_LIST_QUICKLIST_2 else b''
            return bytes((value.type,)), node + rdb_string(value.blob, self.compress)
        encode = self._by_type.get(t)
        if encode is None:
            raise TypeError(f'no RDB encoding for {t.__name__}')
        return encode(value)

    def footer(self, crc: int) -> bytes:
        """EOF and the checksum. `crc` is the CRC64 of every byte written before the footer;
        the EOF opcode is part of what the checksum covers, so it is folded in here."""
        if not self.checksum:
            return b'\xff' + bytes(8)
        return b'\xff' + crc64(b'\xff', crc).to_bytes(8, 'little')

    # -- values --------------------------------------------------------------------------

    def _hash(self, h: Hash) -> tuple[bytes, bytes]:
        c = self.compress
        if h.listpack:
            parts = []
            for field, value in h.items():
                parts.append(lp_elem(field))
                parts.append(lp_elem(value))
            return b'\x10', rdb_string(listpack(parts), c)
        out = [rdb_len(len(h))]
        for field, value in h.items():
            out.append(rdb_string(field, c))
            out.append(rdb_string(value, c))
        return b'\x04', b''.join(out)

    def _list(self, items: List) -> tuple[bytes, bytes]:
        """A quicklist of listpack nodes of at most 8 KB (list-max-listpack-size -2)."""
        c = self.compress
        nodes = []
        node: list[bytes] = []
        size = 7
        for item in items:
            entry = lp_elem(item)
            if node and size + len(entry) > QUICKLIST_NODE_BYTES:
                nodes.append(b'\x02' + rdb_string(listpack(node), c))
                node, size = [], 7
            node.append(entry)
            size += len(entry)
        if node:
            nodes.append(b'\x02' + rdb_string(listpack(node), c))
        return b'\x12', rdb_len(len(nodes)) + b''.join(nodes)

    def _set(self, s: Set) -> tuple[bytes, bytes]:
        c = self.compress
        if s.intset and s:
            return b'\x0b', rdb_string(intset_encode([int(m) for m in s]), c)
        return b'\x02', b''.join([rdb_len(len(s))] + [rdb_string(m, c) for m in s])

    def _zset(self, z: ZSet) -> tuple[bytes, bytes]:
        c = self.compress
        if z.listpack:
            parts = []
            for score, member in z.order:
                parts.append(lp_elem(member))
                parts.append(lp_score(score))
            return b'\x11', rdb_string(listpack(parts), c)
        # zset_2, from the highest element down, as rdbSaveObject walks the skiplist
        out = [rdb_len(len(z))]
        pack = F64.pack
        for score, member in reversed(z.order):
            out.append(rdb_string(member, c))
            out.append(pack(score))
        return b'\x05', b''.join(out)

    def _stream(self, s: Stream) -> tuple[bytes, bytes]:
        """RDB_TYPE_STREAM_LISTPACKS_2: the entries in the stream's nodes (as
        types/stream.py keeps them), the metadata, then the consumer groups."""
        c = self.compress
        nodes = _stream_nodes(s)
        out = [rdb_len(len(nodes))]
        for master, blob in nodes:
            out.append(rdb_string(master.to_bytes(16, 'big'), c))
            out.append(rdb_string(blob, c))
        for n in (
            s.length,
            s.last_id >> 64,
            s.last_id & SEQ_MASK,
            s.first_id >> 64,
            s.first_id & SEQ_MASK,
            s.max_deleted >> 64,
            s.max_deleted & SEQ_MASK,
            s.entries_added,
            len(s.groups),
        ):
            out.append(rdb_len(n))
        for name in sorted(s.groups):  # rax order
            g = s.groups[name]
            out.append(rdb_string(name, c))
            out.append(rdb_len(g.last_id >> 64))
            out.append(rdb_len(g.last_id & SEQ_MASK))
            out.append(rdb_len(g.entries_read & U64))
            out.append(rdb_len(len(g.pel)))
            for i, nack in g.pel.iter_from(0):
                out.append(i.to_bytes(16, 'big'))
                out.append(I64.pack(nack.delivery_time))
                out.append(rdb_len(nack.delivery_count))
            out.append(rdb_len(len(g.consumers)))
            for cname in sorted(g.consumers):
                consumer = g.consumers[cname]
                out.append(rdb_string(cname, c))
                out.append(I64.pack(consumer.seen_time))
                out.append(rdb_len(len(consumer.pel)))
                out.extend(i.to_bytes(16, 'big') for i in consumer.pel.ids)
        return b'\x13', b''.join(out)


def _stream_nodes(s: Stream) -> list[tuple[int, bytes]]:
    """(master id, listpack) for each node holding a live entry. A node's entries before
    `start` (trimmed) and tombstones are written as deleted entries, as Redis keeps them in
    the node until it empties; a tombstone's fields are gone, so it is written with none."""
    ids, vals, enc = s.ids, s.vals, s.enc
    start = s.start
    if not s.length:
        return []
    nodes = []
    for a, b in s.node_spans():
        live = [p for p in range(max(a, start), b) if vals[p] is not None]
        if not live:
            continue
        first = vals[live[0]]
        if first is ENCODED:  # its encoding is in `enc` (Stream.append)
            first = decode_fields(cast(bytes, enc[live[0]]))
        mfields = first[0::2]
        nf = len(mfields)
        master = ids[a]
        mms, mseq = master >> 64, master & SEQ_MASK
        parts = [lp_int(len(live)), lp_int(b - a - len(live)), lp_int(nf)]
        parts += [lp_elem(f) for f in mfields]
        parts.append(lp_int(0))
        for p in range(a, b):
            i = ids[p]
            fields = vals[p]
            deleted = p < start or fields is None
            if fields is ENCODED:
                # enc[p] is its bytes, as above (no cast: a call per entry)
                fields = decode_fields(enc[p])  # type: ignore[arg-type]
            elif fields is None:
                fields = ()
            flags = STREAM_DELETED if deleted else 0
            n = len(fields) // 2
            parts.append(b'')  # the flags, set below
            flag_at = len(parts) - 1
            parts.append(lp_int((i >> 64) - mms))
            parts.append(lp_int((i & SEQ_MASK) - mseq))
            if n == nf and tuple(fields[0::2]) == tuple(mfields):
                flags |= STREAM_SAMEFIELDS
                parts += [lp_elem(v) for v in fields[1::2]]
                parts.append(lp_int(n + 3))
            else:
                parts.append(lp_int(n))
                parts += [lp_elem(x) for x in fields]
                parts.append(lp_int(2 * n + 4))
            parts[flag_at] = lp_int(flags)
        nodes.append((master, listpack(parts)))
    return nodes
