"""A client's memory as Redis 7.0 counts it (getClientMemoryUsage, with catClientInfoString's
view of the buffers): CLIENT LIST's qbuf, qbuf-free, argv-mem, multi-mem, rbs, rbp, obl, oll,
omem and tot-mem, and the measure maxmemory-clients evicts by (memory/eviction.py), so that a
client is evicted at the tot-mem CLIENT LIST shows for it, as with Redis.

used_memory's share of the clients is another measure (memory/report.py's overhead: what a
connection costs this process); tot-mem is Redis's model of its own allocations (the client
structure, a query buffer in jemalloc's size classes, the reply buffer store/reply_buffer.py
sizes), which is what the limit is set against.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from ..output_limit import reply_memory
from .report import bookkeeping

# The part of a client's memory that is not its buffers (zmalloc_size of Redis 7.0's client).
CLIENT_STRUCT = 768


class Usage(NamedTuple):
    qbuf: int
    qbuf_free: int
    argv_mem: int
    multi_mem: int
    rbs: int
    rbp: int
    obl: int
    oll: int
    omem: int
    pending: int  # bytes in the transport's buffer (CLIENT LIST's `w` event)
    tot_mem: int


def alloc_size(n: int) -> int:
    """jemalloc's size class for an allocation of n bytes (small classes, then four per
    doubling), as zmalloc_size reports it."""
    if n <= 8:
        return 8
    if n <= 128:
        return (n + 15) & ~15
    step = 1 << (n - 1).bit_length() - 3
    return (n + step - 1) // step * step


def tot_mem(conn: Any) -> int:
    """getClientMemoryUsage: what maxmemory-clients counts for a client."""
    return usage(conn).tot_mem


def usage(conn: Any, current: Any = None, args: Any = None, now: float | None = None) -> Usage:
    """A client's buffers and memory. `current` is the connection running the command
    (CLIENT LIST's own), whose in-flight `args` count as Redis counts them."""
    if now is None:
        now = time.time()
    parser = conn.parser
    qbuf = parser.pending() if parser is not None else 0
    if conn is current and args:  # Redis trims the query buffer once the command has run
        qbuf += len(b'*%d\r\n' % len(args))
        qbuf += sum(len(b'$%d\r\n' % len(a)) + len(a) + 2 for a in args)
    elif conn.deferred and conn in conn.server.pause.held:
        args = conn.deferred[0]  # a command held by CLIENT PAUSE keeps its arguments
    fresh = conn.last_cmd is None and not qbuf and conn.last_interaction == conn.created
    idle_s = now - conn.last_interaction
    # qbuf-free is what Redis's query buffer has allocated beyond qbuf: a new client's empty
    # buffer (4), the 20474 free bytes of a buffer grown for a 16 KB read, or none once the
    # cron has trimmed the buffer of a client idle for more than 2 s. After a big argument
    # (32 KB or more) Redis gives the client a new buffer of that argument's size, which
    # the cron trims back to the recent peak on its second visit, within 200 ms
    # (clientsCronResizeQueryBuffer).
    big = conn.qbuf_big
    if fresh:
        qbuf_free = 4
    elif int(idle_s) > 2:
        qbuf_free = 0
    elif parser is not None and parser.big is not None:  # made room for all of it at once
        qbuf_free = max(parser.bulklen + 2 - qbuf, 0)
    elif big is not None and now - big[1] < 0.2 and big[0] > qbuf:
        qbuf_free = big[0] - qbuf
    else:
        qbuf_free = max(20474 - qbuf, 0)
    qbuf_alloc = alloc_size(qbuf + qbuf_free + (5 if qbuf + qbuf_free > 255 else 3) + 1)
    running = args and (conn is current or (conn.deferred and conn in conn.server.pause.held))
    if not running and parser is not None and parser.args:  # a partial command's parsed part
        args, running = parser.args, True
    argv_mem = sum(len(a) for a in args) if running else 0
    argc = len(args) if running else 0
    multi_mem = multi_cmds = 0
    if conn.multi is not None:  # argv_len_sums: argument bytes and an 8-byte pointer each
        multi_mem = sum(sum(len(a) for a in a_) + 8 * len(a_) for _, a_ in conn.multi)
        multi_cmds = len(conn.multi)
    pending = 0
    transport = conn.transport
    if transport is not None:
        try:
            pending = transport.get_write_buffer_size()
        except (AttributeError, RuntimeError):
            pending = 0
    queued = conn.pubsub.qbytes if conn.pubsub is not None else 0
    # obl: Redis's 16 KB static reply buffer; omem: the rest not yet written (replies of the
    # running batch, the transport's buffer, queued pub/sub messages), as the limits count
    unsent = sum(len(b) for b in conn.out)
    obl, omem = reply_memory(unsent, pending + queued)
    oll = (1 if unsent > obl else 0) + (1 if pending else 0) + (1 if queued else 0)
    rbs = conn.rbs  # the reply buffer's size (store/reply_buffer.py)
    # getClientMemoryUsage: the client structure, both buffers, the arguments being run,
    # MULTI's queue, pub/sub and WATCH bookkeeping, and replies waiting beyond obl
    total = (
        CLIENT_STRUCT
        + rbs
        + qbuf_alloc
        + argv_mem
        + 8 * argc
        + multi_mem
        + 24 * multi_cmds
        + bookkeeping(conn)  # WATCH, pub/sub and tracking prefixes (memory/report.py)
        + omem
    )
    return Usage(
        qbuf, qbuf_free, argv_mem, multi_mem, rbs, conn.rb_peak, obl, oll, omem, pending, total
    )
