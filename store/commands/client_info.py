"""CLIENT LIST and CLIENT INFO's line for a client (Redis 7.0's catClientInfoString).

One line per client, its fields in Redis's order and with Redis's figures: the query
buffer (qbuf, qbuf-free: what Redis's buffer would have allocated), the reply buffer
(rbs, rbp, obl, oll, omem: store/output_limit.py counts them as the limits do), and
tot-mem, Redis's getClientMemoryUsage (the client structure, both buffers, the arguments
being run, MULTI's queue, the WATCH, pub/sub and tracking bookkeeping of
store/memory/report.py). Other parts print the same line: the ACL LOG's client-info,
the log line of a client closed for its output-buffer limit or evicted, the crash report.
"""

import time

from ..args import lower
from ..memory.report import bookkeeping
from ..output_limit import reply_memory
from ..resp import RedisError, error_arg

# getClientTypeByName: the names TYPE accepts ('master': a replica's link to its master).
CLIENT_TYPES = {
    'normal': 'normal',
    'slave': 'replica',
    'replica': 'replica',
    'pubsub': 'pubsub',
    'master': 'master',
}


def _is_master(conn):
    """The client of this replica's link to its master (CLIENT_MASTER)."""
    link = conn.server.replica_link
    return link is not None and link.is_master(conn)


def client_type(conn):
    if conn.is_replica():
        return 'replica'
    if _is_master(conn):
        return 'master'
    return 'pubsub' if conn.subscriptions > 0 else 'normal'


def type_arg(b):
    t = CLIENT_TYPES.get(lower(b))
    if t is None:
        raise RedisError(f"ERR Unknown client type '{error_arg(b)}'")
    return t


def _sub_counts(conn):
    """(channels, patterns, shard channels) for sub= psub= ssub=, from the pub/sub layer's
    Subscriber (store/pubsub/dispatch.py: `sets` is (channels, patterns, shard channels))."""
    sub = conn.pubsub
    if sub is not None:
        return [len(s) for s in sub.sets]
    return [conn.subscriptions, 0, 0]


def _pubsub_queued(conn):
    """Bytes of pub/sub messages queued for the connection (part of omem)."""
    return conn.pubsub.qbytes if conn.pubsub is not None else 0


def _flags(conn):
    f = ''
    if conn.is_replica():
        f += 'S'
    if _is_master(conn):
        f += 'M'
    if conn in conn.server.monitors:
        f += 'O'
    if conn.subscriptions:
        f += 'P'
    if conn.multi is not None:
        f += 'x'
    if conn.blocked is not None or conn in conn.server.pause.held:
        f += 'b'
    t = conn.tracking
    if t is not None:
        f += 't'
        if t.broken:
            f += 'R'
        if t.bcast:
            f += 'B'
    if conn.dirty_cas:
        f += 'd'
    if conn.closing:
        f += 'c'
    if conn.no_evict:
        f += 'e'
    if conn.no_touch:
        f += 'T'
    return f or 'N'


def _cmd_name(conn):
    cmd = conn.last_cmd
    if cmd is None:
        return 'NULL'
    sub = conn.last_sub
    if cmd.subcommands and sub is not None and sub.container is cmd:
        return sub.name
    return cmd.name


# The part of a client's memory that is not its buffers (zmalloc_size of Redis 7.0's client).
CLIENT_STRUCT = 768


def _alloc_size(n):
    """jemalloc's size class for an allocation of n bytes (small classes, then four per
    doubling), as zmalloc_size reports it."""
    if n <= 8:
        return 8
    if n <= 128:
        return (n + 15) & ~15
    step = 1 << (n - 1).bit_length() - 3
    return (n + step - 1) // step * step


def client_info_line(conn, current=None, args=None):
    """catClientInfoString: one CLIENT LIST line (without the newline). `current` is the
    connection running the command, whose in-flight command and arguments show."""
    now = time.time()
    transport = conn.transport
    sock = transport.get_extra_info('socket') if transport is not None else None
    try:
        fd = sock.fileno() if sock is not None else -1
    except (OSError, AttributeError):
        fd = -1
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
    qbuf_alloc = _alloc_size(qbuf + qbuf_free + (5 if qbuf + qbuf_free > 255 else 3) + 1)
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
    if transport is not None:
        try:
            pending = transport.get_write_buffer_size()
        except (AttributeError, RuntimeError):
            pending = 0
    queued = _pubsub_queued(conn)
    # obl: Redis's 16 KB static reply buffer; omem: the rest not yet written (replies of the
    # running batch, the transport's buffer, queued pub/sub messages), as the limits count
    unsent = sum(len(b) for b in conn.out)
    obl, omem = reply_memory(unsent, pending + queued)
    oll = (1 if unsent > obl else 0) + (1 if pending else 0) + (1 if queued else 0)
    # rbs/rbp: the reply buffer is created at 16 KB and the cron shrinks it to 1 KB within a
    # few of its ticks when replies stay small (clientsCronResizeOutputBuffer)
    young = now - conn.created < 0.15 or not conn.server.reply_buffer_resizing
    rbs = 16384 if young else 1024
    rbp = rbs if young and conn.last_cmd is not None else 0
    sub, psub, ssub = _sub_counts(conn)
    # getClientMemoryUsage: the client structure, both buffers, the arguments being run,
    # MULTI's queue, pub/sub and WATCH bookkeeping, and replies waiting beyond obl
    tot_mem = (
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
    if conn is current:
        cmd = f'client|{args[1].decode("latin-1").lower()}' if args else _cmd_name(conn)
        idle = 0
    else:
        cmd = _cmd_name(conn)
        idle = max(0, int(now - conn.last_interaction))
    events = 'r' if not conn.closing else ''
    if pending:
        events += 'w'
    return (
        f'id={conn.id} addr={conn.addr} laddr={conn.laddr} fd={fd} '
        f'name={conn.name or ""} age={max(0, int(now - conn.created))} idle={idle} '
        f'flags={_flags(conn)} db={conn.db} sub={sub} psub={psub} ssub={ssub} '
        f'multi={len(conn.multi) if conn.multi is not None else -1} '
        f'qbuf={qbuf} qbuf-free={qbuf_free} argv-mem={argv_mem} multi-mem={multi_mem} '
        f'rbs={rbs} rbp={rbp} obl={obl} oll={oll} omem={omem} tot-mem={tot_mem} '
        f'events={events} cmd={cmd} user={error_arg(conn.user.name)} '
        f'redir={conn.tracking.redirect if conn.tracking is not None else -1} resp={conn.proto}'
    )
