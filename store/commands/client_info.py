"""CLIENT LIST and CLIENT INFO's line for a client (Redis 7.0's catClientInfoString).

One line per client, its fields in Redis's order and with Redis's figures: the buffers and
tot-mem (qbuf ... tot-mem) are store/memory/client_usage.py's, the measure maxmemory-clients
evicts by. Other parts print the same line: the ACL LOG's client-info,
the log line of a client closed for its output-buffer limit or evicted, the crash report.
"""

import time

from ..args import lower
from ..command_table import Command
from ..context import Client
from ..memory.client_usage import usage
from ..resp import RedisError, error_arg

# getClientTypeByName: the names TYPE accepts ('master': a replica's link to its master).
CLIENT_TYPES = {
    'normal': 'normal',
    'slave': 'replica',
    'replica': 'replica',
    'pubsub': 'pubsub',
    'master': 'master',
}


def _is_master(conn: Client) -> bool:
    """The client of this replica's link to its master (CLIENT_MASTER)."""
    link = conn.server.replica_link
    return link is not None and link.is_master(conn)


def client_type(conn: Client) -> str:
    if conn.is_replica():
        return 'replica'
    if _is_master(conn):
        return 'master'
    return 'pubsub' if conn.subscriptions > 0 else 'normal'


def type_arg(b: bytes) -> str:
    t = CLIENT_TYPES.get(lower(b))
    if t is None:
        raise RedisError(f"ERR Unknown client type '{error_arg(b)}'")
    return t


def _sub_counts(conn: Client) -> list[int]:
    """(channels, patterns, shard channels) for sub= psub= ssub=, from the pub/sub layer's
    Subscriber (store/pubsub/dispatch.py: `sets` is (channels, patterns, shard channels))."""
    sub = conn.pubsub
    if sub is not None:
        return [len(s) for s in sub.sets]
    return [conn.subscriptions, 0, 0]


def _flags(conn: Client) -> str:
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
    if conn.readonly:  # READONLY (cluster mode)
        f += 'r'
    if conn.no_evict:
        f += 'e'
    if conn.no_touch:
        f += 'T'
    return f or 'N'


def _cmd_name(conn: Client) -> str:
    cmd: Command | None = conn.last_cmd
    if cmd is None:
        return 'NULL'
    sub: Command | None = conn.last_sub
    if cmd.subcommands and sub is not None and sub.container is cmd:
        return sub.name
    return cmd.name


def client_info_line(
    conn: Client, current: Client | None = None, args: list[bytes] | None = None
) -> str:
    """catClientInfoString: one CLIENT LIST line (without the newline). `current` is the
    connection running the command, whose in-flight command and arguments show."""
    now = time.time()
    transport = conn.transport
    sock = transport.get_extra_info('socket') if transport is not None else None
    try:
        fd = sock.fileno() if sock is not None else -1
    except (OSError, AttributeError):
        fd = -1
    m = usage(conn, current, args, now)
    sub, psub, ssub = _sub_counts(conn)
    if conn is current:
        cmd = f'client|{args[1].decode("latin-1").lower()}' if args else _cmd_name(conn)
        idle = 0
    else:
        cmd = _cmd_name(conn)
        idle = max(0, int(now - conn.last_interaction))
    events = 'r' if not conn.closing else ''
    if m.pending:
        events += 'w'
    return (
        f'id={conn.id} addr={conn.addr} laddr={conn.laddr} fd={fd} '
        f'name={conn.name or ""} age={max(0, int(now - conn.created))} idle={idle} '
        f'flags={_flags(conn)} db={conn.db} sub={sub} psub={psub} ssub={ssub} '
        f'multi={len(conn.multi) if conn.multi is not None else -1} '
        f'qbuf={m.qbuf} qbuf-free={m.qbuf_free} argv-mem={m.argv_mem} '
        f'multi-mem={m.multi_mem} rbs={m.rbs} rbp={m.rbp} obl={m.obl} oll={m.oll} '
        f'omem={m.omem} tot-mem={m.tot_mem} '
        f'events={events} cmd={cmd} user={error_arg(conn.user.name)} '
        f'redir={conn.tracking.redirect if conn.tracking is not None else -1} resp={conn.proto}'
    )
