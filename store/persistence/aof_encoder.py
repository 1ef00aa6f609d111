"""The AOF rewrite's base written as commands (aof-use-rdb-preamble no): `AofEncoder`, the
snapshot encoder (protocol in snapshot.py) that writes each key as the commands that
rebuild it, as rewriteAppendOnlyFileRio does: SELECT, then per key RPUSH/SADD/HMSET/ZADD
of at most ITEMS_PER_CMD elements each (a stream as its entries, XSETID, its groups and
their pending entries), and its PEXPIREAT. A value still packed since its load is decoded
for this, not stored.
"""

from __future__ import annotations

import time
from typing import Any

from ..types.hash import Hash
from ..types.list import List
from ..types.packed import Packed
from ..types.set import Set
from ..types.stream import MAX_ID, Stream, format_id
from ..types.zset import ZSet
from .aof_resp import resp_command

ITEMS_PER_CMD = 64  # AOF_REWRITE_ITEMS_PER_CMD: elements per RPUSH/SADD/... of a rewrite


def _double(d: float) -> bytes:
    """rioWriteBulkDouble's "%.17g" (inf and -inf as ZADD reads them)."""
    if d != d:
        return b'nan'
    return b'%.17g' % d


class AofEncoder:
    """The snapshot encoder (protocol in snapshot.py) writing the base as commands, as
    rewriteAppendOnlyFileRio does: SELECT, then per key the commands that rebuild it (at
    most 64 elements each) and its PEXPIREAT."""

    checksum = False

    def __init__(self, timestamps: bool = False) -> None:
        self.timestamps = timestamps  # aof-timestamp-enabled

    def header(self) -> bytes:
        """The base opens with a #TS: annotation when they are on (rewriteAppendOnlyFileRio
        writes one, forced, before anything else)."""
        return b'#TS:%d\r\n' % int(time.time()) if self.timestamps else b''

    def functions(self, codes: list[bytes]) -> bytes:
        return b''.join(resp_command((b'FUNCTION', b'LOAD', code)) for code in codes)

    def select_db(self, db: int, size: int, expires: int) -> bytes:
        return resp_command((b'SELECT', b'%d' % db))

    def footer(self, crc: int) -> bytes:
        return b''

    def key(self, key: bytes, value: Any, deadline: int | None) -> bytes:
        out: list[bytes] = []
        t = type(value)
        if t is Packed:  # left packed at load (types/packed.py): decoded, not stored
            value = Packed.decode(value)
            t = type(value)
        if t is bytes or t is bytearray:
            out.append(resp_command((b'SET', key, bytes(value))))
        elif isinstance(value, List):
            _batched(out, b'RPUSH', key, list(value))
        elif isinstance(value, Set):
            _batched(out, b'SADD', key, list(value))
        elif isinstance(value, Hash):
            flat: list[bytes] = []
            for f, v in value.items():
                flat += (f, v)
            _batched(out, b'HMSET', key, flat, 2)
        elif isinstance(value, ZSet):
            flat = []
            for score, member in value.order:
                flat += (_double(score), member)
            _batched(out, b'ZADD', key, flat, 2)
        elif isinstance(value, Stream):
            _stream_commands(out, key, value)
        else:
            raise TypeError(f'cannot rewrite a value of type {t.__name__}')
        if deadline is not None:
            out.append(resp_command((b'PEXPIREAT', key, b'%d' % deadline)))
        return b''.join(out)


def _batched(out: list[bytes], name: bytes, key: bytes, items: list[bytes], per: int = 1) -> None:
    step = ITEMS_PER_CMD * per
    for i in range(0, len(items), step):
        out.append(resp_command((name, key, *items[i : i + step])))


def _stream_commands(out: list[bytes], key: bytes, s: Stream) -> None:
    """rewriteStreamObject: the entries, XSETID, the groups, their pending entries (as
    XCLAIM ... FORCE JUSTID) and consumers without any."""
    if len(s):
        for i, fields in s.range(0, MAX_ID):
            out.append(resp_command((b'XADD', key, format_id(i), *fields)))
    else:
        out.append(resp_command((b'XADD', key, b'MAXLEN', b'0', b'0-1', b'x', b'y')))
    out.append(
        resp_command(
            (
                b'XSETID',
                key,
                format_id(s.last_id),
                b'ENTRIESADDED',
                b'%d' % s.entries_added,
                b'MAXDELETEDID',
                format_id(s.max_deleted),
            )
        )
    )
    for name, g in s.groups.items():
        out.append(
            resp_command(
                (
                    b'XGROUP',
                    b'CREATE',
                    key,
                    name,
                    format_id(g.last_id),
                    b'ENTRIESREAD',
                    b'%d' % g.entries_read,
                )
            )
        )
        for cname, consumer in g.consumers.items():
            if not len(consumer.pel):
                out.append(resp_command((b'XGROUP', b'CREATECONSUMER', key, name, cname)))
        for i, nack in g.pel.iter_from(0):
            cname = nack.consumer.name if hasattr(nack.consumer, 'name') else nack.consumer
            out.append(
                resp_command(
                    (
                        b'XCLAIM',
                        key,
                        name,
                        cname,
                        b'0',
                        format_id(i),
                        b'TIME',
                        b'%d' % nack.delivery_time,
                        b'RETRYCOUNT',
                        b'%d' % nack.delivery_count,
                        b'JUSTID',
                        b'FORCE',
                    )
                )
            )
