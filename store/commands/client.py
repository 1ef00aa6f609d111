"""The CLIENT command family (Redis 7.0 semantics and error strings).

ID, SETNAME, GETNAME, LIST, INFO, KILL, REPLY, NO-EVICT, NO-TOUCH (7.2), PAUSE, UNPAUSE,
UNBLOCK, GETREDIR, TRACKING, TRACKINGINFO, CACHING, HELP. The server keeps its clients in
`server.clients` (id -> Connection, in connection order), which LIST and KILL walk.

TRACKING, CACHING, GETREDIR and TRACKINGINFO parse and answer as Redis 7.0 does; the
tables and the invalidations are store/tracking.py's (server.tracking).
PAUSE/UNPAUSE: `ClientPause` below, one per server (server.pause).
"""

import time

from ..args import E_NOT_INT, E_SYNTAX, lower
from ..clock import now_ms
from ..command_table import Family
from ..memory.report import bookkeeping
from ..output_limit import reply_memory
from ..resp import NO_REPLY, OK, Map, RedisError, Set, Verbatim, error_arg, string2ll
from ..tracking import E_REDIRECT_MISSING

E_NAME = 'ERR Client names cannot contain spaces, newlines or special characters.'
E_NO_CLIENT = 'ERR No such client'
LONG_MAX = 2**63 - 1

HELP = [
    'CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'CACHING (YES|NO)',
    '    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.',
    'GETREDIR',
    '    Return the client ID we are redirecting to when tracking is enabled.',
    'GETNAME',
    '    Return the name of the current connection.',
    'ID',
    '    Return the ID of the current connection.',
    'INFO',
    '    Return information about the current client connection.',
    'KILL <ip:port>',
    '    Kill connection made from <ip:port>.',
    'KILL <option> <value> [<option> <value> [...]]',
    '    Kill connections. Options are:',
    '    * ADDR (<ip:port>|<unixsocket>:0)',
    '      Kill connections made from the specified address',
    '    * LADDR (<ip:port>|<unixsocket>:0)',
    '      Kill connections made to specified local address',
    '    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)',
    '      Kill connections by type.',
    '    * USER <username>',
    '      Kill connections authenticated by <username>.',
    '    * SKIPME (YES|NO)',
    '      Skip killing current connection (default: yes).',
    'LIST [options ...]',
    '    Return information about client connections. Options:',
    '    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)',
    '      Return clients of specified type.',
    'UNPAUSE',
    '    Stop the current client pause, resuming traffic.',
    'PAUSE <timeout> [WRITE|ALL]',
    '    Suspend all, or just write, clients for <timeout> milliseconds.',
    'REPLY (ON|OFF|SKIP)',
    '    Control the replies sent to the current connection.',
    'SETNAME <name>',
    '    Assign the name <name> to the current connection.',
    'UNBLOCK <clientid> [TIMEOUT|ERROR]',
    '    Unblock the specified blocked client.',
    'TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]',
    '         [OPTIN] [OPTOUT] [NOLOOP]',
    '    Control server assisted client side caching.',
    'TRACKINGINFO',
    '    Report tracking status for the current connection.',
    'NO-EVICT (ON|OFF)',
    '    Protect current client connection from eviction.',
    'HELP',
    '    Prints this help.',
]

# getClientTypeByName: the names TYPE accepts. This server is never a replica: 'master'
# matches nobody.
CLIENT_TYPES = {
    'normal': 'normal',
    'slave': 'replica',
    'replica': 'replica',
    'pubsub': 'pubsub',
    'master': 'master',
}


COMMANDS = Family('connection', since='2.4.0')

# Commands that may replicate without the write flag (CMD_MAY_REPLICATE in Redis 7.0):
# CLIENT PAUSE WRITE holds them too.
MAY_REPLICATE = frozenset(('eval', 'evalsha', 'fcall', 'publish', 'spublish', 'pfcount'))
_SCRIPT_CALLS = frozenset(('eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro'))


def _script_flags(server, name, arg):
    """The flags a script declares (its shebang, or its function's), None when it has none
    or is not found (evalGetCommandFlags / fcallGetCommandFlags)."""
    if name.startswith('fcall'):
        fn = server.functions.ctx.functions.get(arg.lower())
        return None if fn is None else fn.flags
    if name.startswith('evalsha'):
        script = server.scripts.get(arg)
        return None if script is None else script.flags
    return server.scripts.flags_of(arg)


def writes(server, cmd, shown, args):
    """processCommand's is_write_command: the command (`shown`: its subcommand) writes, or
    runs a script whose flags do not say no-writes (getCommandFlags; an EVAL script
    without flags keeps EVAL's own, which do not write), or is the EXEC of a transaction
    that queued one (mstate.cmd_flags): EXEC is then refused (-EXECABORT) while writes
    are, even if the refusal began after the commands were queued."""
    if 'write' in shown.flags:
        return True
    name = cmd.name
    if name in _SCRIPT_CALLS:
        flags = _script_flags(server, name, args[1])
        return flags is not None and 'no-writes' not in flags
    if name == 'exec':
        conn = server.current_client  # processCommand's client: the one running EXEC
        for queued, qargs in getattr(conn, 'multi', None) or ():
            qshown = queued
            if queued.subcommands and len(qargs) > 1:
                qshown = queued.subcommands.get(lower(qargs[1]), queued)
            if writes(server, queued, qshown, qargs):
                return True
    return False


E_MASTERDOWN = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."


def denies_stale(server, cmd, shown, args):
    """processCommand's is_denystale_command, for a replica cut off from its master with
    replica-serve-stale-data no: the command (`shown`: its subcommand) is not `stale`,
    with a script's declared flags (getCommandFlags: `stale` only with allow-stale). An
    EVAL script without flags is refused too, as scriptPrepareForRun refuses it (the same
    error); a script or function not found goes on to its own error; EXEC is refused
    when a command it queued would be."""
    name = cmd.name
    if name in _SCRIPT_CALLS:
        flags = _script_flags(server, name, args[1])
        if flags is not None:
            return 'allow-stale' not in flags
        if name.startswith('fcall'):
            return False  # not found
        return not name.startswith('evalsha') or server.scripts.get(args[1]) is not None
    if name == 'exec':
        conn = server.current_client
        for queued, qargs in getattr(conn, 'multi', None) or ():
            qshown = queued
            if queued.subcommands and len(qargs) > 1:
                qshown = queued.subcommands.get(lower(qargs[1]), queued)
            if denies_stale(server, queued, qshown, qargs):
                return True
        return False
    return 'stale' not in shown.flags


def may_replicate(server, cmd, args):
    """Would this command write or replicate (processCommand's is_may_replicate_command,
    with getCommandFlags' script flags)? A script that declares flags writes unless it
    says no-writes; one without (or not found) keeps its command's flags."""
    name = cmd.name
    if name in _SCRIPT_CALLS:
        flags = _script_flags(server, name, args[1])
        if flags is not None:
            return 'no-writes' not in flags
        return name in MAY_REPLICATE
    if 'write' in cmd.flags or name in MAY_REPLICATE:
        return True
    if cmd.subcommands and len(args) > 1:
        sub = cmd.subcommands.get(args[1].decode('utf-8', 'replace').lower())
        return sub is not None and 'write' in sub.flags
    return False


def _delay(end):
    """Seconds until `end` (ms), capped at a day: `check` re-arms for a longer pause."""
    return min(max(end - now_ms(), 0) / 1000 + 0.001, 86400.0)


class ClientPause:
    """CLIENT PAUSE (Redis 7.0's pauseClients): while `kind` is 'write' or 'all', the
    gated path holds the commands it covers (`holds`): the connection is parked with the
    command, in the order clients were held, and unpausing (CLIENT UNPAUSE, or the timeout)
    resumes them in that order. Every connection takes the gated path while a pause is on
    (Connection.update_gate), so the hot path pays nothing for this.

    A pause has two purposes, as in Redis: CLIENT PAUSE's (`client_kind`, until `end`
    or CLIENT UNPAUSE) and FAILOVER's write pause (`during_failover`, until the failover
    ends). `kind` is the stronger of the two; one ending leaves the other in force.

    While paused the dataset stays as it is: active expiry is stopped, eviction does not
    run (store/memory/eviction.py asks `active()`), and lazy expiry answers as if an
    expired key were gone without deleting it (Keyspace.expire_paused)."""

    def __init__(self, server):
        self.server = server
        self.kind = None  # 'write' or 'all' while paused
        self.client_kind = None  # CLIENT PAUSE's
        self.end = 0  # ms since the epoch: CLIENT PAUSE's end
        self.during_failover = False  # FAILOVER's write pause
        self.held = []  # parked connections, first held first resumed
        self.timer = None
        self.expiry_was = True  # active expiry's state before the pause
        server.disconnect_hooks.append(self.forget)

    def pause(self, end, kind):
        """pauseClients for CLIENT PAUSE: it never weakens nor shortens one in force."""
        if self.client_kind is None or kind == 'all':
            self.client_kind = kind
        self.end = max(self.end, end)
        if self.timer is not None:
            self.timer.cancel()
        if self.server.loop is not None:
            self.timer = self.server.loop.call_later(_delay(self.end), self.check)
        self._update()

    def unpause(self):
        """unpauseClients for CLIENT PAUSE (CLIENT UNPAUSE, or its end)."""
        if self.client_kind is None:
            return
        self.client_kind = None
        self.end = 0
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self._update()

    def failover(self, on):
        """FAILOVER's write pause, from its start to its end."""
        self.during_failover = on
        self._update()

    def _update(self):
        """`kind` from the purposes in force: the dataset frozen when a pause begins,
        thawed when the last one ends, and the held commands run again, in order, when
        it ends or weakens (those a pause still covers are held again)."""
        kind = self.client_kind or ('write' if self.during_failover else None)
        was, self.kind = self.kind, kind
        if kind == was:
            return
        server = self.server
        if was is None:
            expiry = server.expiry
            self.expiry_was = expiry.enabled
            expiry.set_enabled(False)
            server.keyspace.expire_paused = True
            server.update_gates()
            return
        if kind == 'all':  # stronger: what is held stays held
            return
        if kind is None:
            replica = server.replica_link is not None  # a replica's keys wait for the master
            server.keyspace.expire_paused = replica
            server.expiry.set_enabled(self.expiry_was and not replica)
            server.update_gates()
        held, self.held = self.held, []
        if server.loop is not None:  # as Redis reprocesses them, after the current command
            server.loop.call_soon(self._resume, held)
        else:
            self._resume(held)

    def _resume(self, held):
        link = self.server.replica_link
        for conn in held:
            if self.kind == 'all':  # paused again meanwhile: the rest wait on, in order
                self.held.append(conn)
                continue
            if link is not None and link.is_master(conn):
                link.resume_held()  # the master client has no transport of its own
            elif not conn.closing and conn.transport is not None:
                conn.resume(None)  # a command the pause still covers is held again
            else:
                conn.deferred = None
                conn.update_gate()

    def check(self):
        """The pause's timer: unpause once its end has passed."""
        self.timer = None
        self.active()
        if self.client_kind is not None and self.timer is None and self.server.loop is not None:
            self.timer = self.server.loop.call_later(_delay(self.end), self.check)

    def active(self):
        """checkClientPauseTimeoutAndReturnIfPaused."""
        if self.client_kind is not None and self.end < now_ms():
            self.unpause()
        return self.kind is not None

    def holds(self, conn, cmd, args):
        """Whether `cmd` must wait (processCommand's pause test): everything under ALL,
        write and may-replicate commands (and EXEC of such) under WRITE; monitors, which
        are replicas for Redis, are never held."""
        if not self.active() or conn in self.server.monitors:
            return False
        if self.kind == 'all':
            return True
        if cmd.name == 'exec' and conn.multi is not None:
            return any(may_replicate(self.server, c_, a_) for c_, a_ in conn.multi)
        return may_replicate(self.server, cmd, args)

    def hold(self, conn, cmd, args):
        """Park `conn` with `args` until the pause ends (blockPostponeClient); CLIENT
        LIST shows the command as its last one already, as Redis does."""
        conn.last_cmd = cmd
        conn.park([args])
        self.held.append(conn)

    def forget(self, conn):
        if conn in self.held:
            self.held.remove(conn)

    def blocked(self):
        """Held clients, which INFO counts in blocked_clients."""
        return len(self.held)


def _syntax_error(args):
    """addReplySubcommandSyntaxError: right arity for the table, wrong for the form."""
    return RedisError(
        f"ERR unknown subcommand or wrong number of arguments for "
        f"'{error_arg(args[1], 128)}'. Try CLIENT HELP."
    )


def client_type(conn):
    if conn.is_replica():
        return 'replica'
    link = conn.server.replica_link
    if link is not None and link.is_master(conn):
        return 'master'
    return 'pubsub' if conn.subscriptions > 0 else 'normal'


def _type_arg(b):
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
    link = conn.server.replica_link
    if link is not None and link.is_master(conn):
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


# -- subcommands ---------------------------------------------------------------------------

CLIENT = COMMANDS.container(
    'client', -2, categories='@slow', summary='A container for client connection commands'
)


@CLIENT.subcommand(
    'id',
    2,
    flags='noscript loading stale',
    categories='@slow @connection',
    since='5.0.0',
    summary='Returns the client ID for the current connection',
)
def client_id(c, args):
    return c.id


def valid_name(name):
    return all(33 <= ch <= 126 for ch in name)


@CLIENT.subcommand(
    'setname',
    3,
    flags='noscript loading stale',
    categories='@slow @connection',
    since='2.6.9',
    summary='Set the current connection name',
)
def client_setname(c, args):
    name = args[2]
    if not valid_name(name):
        raise RedisError(E_NAME)
    c.name = name.decode('ascii') or None
    return OK


@CLIENT.subcommand(
    'getname',
    2,
    flags='noscript loading stale',
    categories='@slow @connection',
    since='2.6.9',
    summary='Get the current connection name',
)
def client_getname(c, args):
    return c.name.encode() if c.name else None


@CLIENT.subcommand(
    'list',
    -2,
    flags='admin noscript loading stale',
    categories='@admin @slow @dangerous @connection',
    tips='nondeterministic_output',
    summary='Get the list of client connections',
)
def client_list(c, args):
    clients = c.server.clients
    if len(args) == 2:
        chosen = list(clients.values())
    elif len(args) == 4 and lower(args[2]) == 'type':
        t = _type_arg(args[3])
        chosen = [conn for conn in clients.values() if client_type(conn) == t]
    elif len(args) > 3 and lower(args[2]) == 'id':
        chosen = []
        for b in args[3:]:
            cid = string2ll(b)
            if cid is None:
                raise RedisError('ERR Invalid client ID')
            conn = clients.get(cid)
            if conn is not None:
                chosen.append(conn)
    else:
        raise RedisError(E_SYNTAX)
    return Verbatim(''.join(client_info_line(conn, c, args) + '\n' for conn in chosen).encode())


@CLIENT.subcommand(
    'info',
    2,
    flags='noscript loading stale',
    categories='@slow @connection',
    tips='nondeterministic_output',
    since='6.2.0',
    summary='Returns information about the current client connection.',
)
def client_info(c, args):
    return Verbatim((client_info_line(c, c, args) + '\n').encode())


def kill_connection(conn):
    """freeClient: drop the connection now, discarding replies not yet written."""
    conn.out.clear()
    conn.closing = conn.gated = True
    if conn.transport is not None:
        conn.transport.close()
    conn.server.unregister(conn)


def close_after_this_reply(c):
    """CLIENT_CLOSE_AFTER_REPLY from inside a handler: the reply being built is still
    written (the connection's flush closes the transport after writing it), and nothing
    after this command runs."""
    c.closing = c.gated = True
    if c.transport is not None:
        c.flush_later()  # closes it, whether or not a reply is written


@CLIENT.subcommand(
    'kill',
    -3,
    flags='admin noscript loading stale',
    categories='@admin @slow @dangerous @connection',
    summary='Kill the connection of a client',
)
def client_kill(c, args):
    addr = laddr = user = ctype = None
    cid = 0
    skipme = True
    if len(args) == 3:
        addr = args[2].decode('utf-8', 'replace')
        skipme = False  # the old form may kill the caller itself
    else:
        i = 2
        while i < len(args):
            opt = lower(args[i])
            more = i + 1 < len(args)
            if opt == 'id' and more:
                v = string2ll(args[i + 1])
                if v is None or not 1 <= v <= LONG_MAX:
                    raise RedisError('ERR client-id should be greater than 0')
                cid = v
            elif opt == 'type' and more:
                ctype = _type_arg(args[i + 1])
            elif opt == 'addr' and more:
                addr = args[i + 1].decode('utf-8', 'replace')
            elif opt == 'laddr' and more:
                laddr = args[i + 1].decode('utf-8', 'replace')
            elif opt == 'user' and more:
                user = c.server.acl.users.get(args[i + 1])
                if user is None:
                    raise RedisError(f"ERR No such user '{error_arg(args[i + 1])}'")
            elif opt == 'skipme' and more:
                v = lower(args[i + 1])
                if v == 'yes':
                    skipme = True
                elif v == 'no':
                    skipme = False
                else:
                    raise RedisError(E_SYNTAX)
            else:
                raise RedisError(E_SYNTAX)
            i += 2
    killed = 0
    close_self = False
    for conn in list(c.server.clients.values()):
        if addr is not None and conn.addr != addr:
            continue
        if laddr is not None and conn.laddr != laddr:
            continue
        if ctype is not None and client_type(conn) != ctype:
            continue
        if cid and conn.id != cid:
            continue
        if user is not None and conn.user is not user:
            continue
        if conn is c:
            if skipme:
                continue
            close_self = True
        else:
            kill_connection(conn)
        killed += 1
    if close_self:
        close_after_this_reply(c)
    if len(args) == 3:
        if not killed:
            raise RedisError(E_NO_CLIENT)
        return OK
    return killed


@CLIENT.subcommand(
    'reply',
    3,
    flags='noscript loading stale',
    categories='@slow @connection',
    since='3.2.0',
    summary='Instruct the server whether to reply to commands',
)
def client_reply(c, args):
    mode = lower(args[2])
    if mode == 'on':
        c.reply_mode = 'on'
        c.update_gate()
        return OK
    if mode == 'off':
        c.reply_mode = 'off'
        c.update_gate()
        return NO_REPLY
    if mode == 'skip':
        if c.reply_mode == 'off':
            return NO_REPLY
        if c.in_exec:
            # Inside EXEC the array stays well formed; the skip applies to the command
            # after EXEC (Redis 7.0 leaves a hole in the array here).
            c.reply_mode = 'skip_next'
            c.update_gate()
            return OK
        # On the hot path nothing else is emitted for this command, so the next reply is
        # the one to skip; on the gated path _emit turns 'skip_next' into 'skip' after
        # sending this (empty) reply.
        c.reply_mode = 'skip_next' if c.gated else 'skip'
        c.update_gate()
        return NO_REPLY
    raise RedisError(E_SYNTAX)


def _on_off(args):
    v = lower(args[2])
    if v == 'on':
        return True
    if v == 'off':
        return False
    raise RedisError(E_SYNTAX)


@CLIENT.subcommand(
    'no-evict',
    3,
    flags='admin noscript loading stale',
    categories='@admin @slow @dangerous @connection',
    since='7.0.0',
    summary='Set client eviction mode for the current connection',
)
def client_no_evict(c, args):
    c.no_evict = _on_off(args)
    return OK


@CLIENT.subcommand(
    'no-touch', 3, flags='noscript loading stale', categories='@slow @connection', since='7.2.0'
)
def client_no_touch(c, args):
    """Redis 7.2: this client's commands (but TOUCH) do not count as accesses."""
    c.no_touch = _on_off(args)
    c.update_gate()  # its commands take the gated path, which applies it
    return OK


@CLIENT.subcommand(
    'pause',
    -3,
    flags='admin noscript loading stale',
    categories='@admin @slow @dangerous @connection',
    since='2.9.50',
    summary='Stop processing commands from clients for some time',
)
def client_pause(c, args):
    if len(args) > 4:
        raise _syntax_error(args)
    if len(args) == 4 and lower(args[3]) not in ('write', 'all'):
        raise RedisError('ERR CLIENT PAUSE mode must be WRITE or ALL')
    ms = string2ll(args[2])
    if ms is None:
        raise RedisError('ERR timeout is not an integer or out of range')
    if ms < 0:
        raise RedisError('ERR timeout is negative')
    kind = lower(args[3]) if len(args) == 4 else 'all'
    end = now_ms() + ms
    if end > LONG_MAX:  # 7.0.15 adds without a range check: the end wraps into the past
        end -= 2**64
    c.server.pause.pause(end, kind)
    return OK


@CLIENT.subcommand(
    'unpause',
    2,
    flags='admin noscript loading stale',
    categories='@admin @slow @dangerous @connection',
    since='6.2.0',
    summary='Resume processing of clients that were paused',
)
def client_unpause(c, args):
    c.server.pause.unpause()
    return OK


@CLIENT.subcommand(
    'unblock',
    -3,
    flags='admin noscript loading stale',
    categories='@admin @slow @dangerous @connection',
    since='5.0.0',
    summary='Unblock a client blocked in a blocking command from a different connection',
)
def client_unblock(c, args):
    if len(args) > 4:
        raise _syntax_error(args)
    if len(args) == 4 and lower(args[3]) not in ('timeout', 'error'):
        raise RedisError('ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR')
    cid = string2ll(args[2])
    if cid is None:
        raise RedisError(E_NOT_INT)
    target = c.server.clients.get(cid)
    if target is None:
        return 0
    error = len(args) == 4 and lower(args[3]) == 'error'
    unblocked = c.server.blocking.client_unblock(target, error)
    if unblocked and error:  # an error reply sent while this ran: Redis counts it failed
        c.server.commands[b'client'].subcommands['unblock'].failed += 1
    return int(unblocked)


@CLIENT.subcommand(
    'tracking',
    -3,
    flags='noscript loading stale',
    categories='@slow @connection',
    since='6.0.0',
    summary='Enable or disable server assisted client side caching support',
)
def client_tracking(c, args):
    """CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN] [OPTOUT]
    [NOLOOP], parsed and checked in Redis 7.0's order (store/tracking.py does the rest)."""
    redirect = 0
    bcast = optin = optout = noloop = False
    prefixes = []
    j = 3
    n = len(args)
    while j < n:
        opt = lower(args[j])
        more = j + 1 < n
        if opt == 'redirect' and more:
            j += 1
            if redirect:
                raise RedisError('ERR A client can only redirect to a single other client')
            redirect = string2ll(args[j])
            if redirect is None:
                raise RedisError(E_NOT_INT)
            if redirect not in c.server.clients:
                raise RedisError(E_REDIRECT_MISSING)
        elif opt == 'bcast':
            bcast = True
        elif opt == 'optin':
            optin = True
        elif opt == 'optout':
            optout = True
        elif opt == 'noloop':
            noloop = True
        elif opt == 'prefix' and more:
            j += 1
            prefixes.append(args[j])
        else:
            raise RedisError(E_SYNTAX)
        j += 1
    mode = lower(args[2])
    tracking = c.server.tracking
    if mode == 'on':
        t = c.tracking
        if not bcast and prefixes:
            raise RedisError('ERR PREFIX option requires BCAST mode to be enabled')
        if t is not None and t.bcast != bcast:
            raise RedisError(
                "ERR You can't switch BCAST mode on/off before disabling tracking for this "
                'client, and then re-enabling it with a different mode.'
            )
        if bcast and (optin or optout):
            raise RedisError('ERR OPTIN and OPTOUT are not compatible with BCAST')
        if optin and optout:
            raise RedisError("ERR You can't specify both OPTIN mode and OPTOUT mode")
        if t is not None and ((optin and t.optout) or (optout and t.optin)):
            raise RedisError(
                "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this "
                'client, and then re-enabling it with a different mode.'
            )
        if bcast:
            _check_prefixes(t.prefixes if t is not None else [], prefixes)
        tracking.enable(c, redirect, bcast, optin, optout, noloop, prefixes)
    elif mode == 'off':
        tracking.disable(c)
    else:
        raise RedisError(E_SYNTAX)
    return OK


def _c_string(b):
    """A prefix as Redis's %s prints it: up to its first NUL byte."""
    return b.split(b'\0', 1)[0].decode('utf-8', 'surrogateescape')


def _check_prefixes(existing, prefixes):
    """checkPrefixCollisionsOrReply: no prefix may be a prefix of another, among those
    the client has and those given. In sorted order a prefix sits right before the
    strings it begins, so comparing neighbours finds whether any pair overlaps in
    O(n log n); only then is Redis's pairwise walk run, to name the pair it reports."""
    together = sorted([*existing, *prefixes])
    if all(not b.startswith(a) for a, b in zip(together, together[1:])):
        return
    for i, p in enumerate(prefixes):
        for old in existing:
            if old.startswith(p) or p.startswith(old):
                raise RedisError(
                    f"ERR Prefix '{_c_string(p)}' overlaps with an existing prefix "
                    f"'{_c_string(old)}'. Prefixes for a single client must not overlap."
                )
        for q in prefixes[i + 1 :]:
            if q.startswith(p) or p.startswith(q):
                raise RedisError(
                    f"ERR Prefix '{_c_string(p)}' overlaps with another provided prefix "
                    f"'{_c_string(q)}'. Prefixes for a single client must not overlap."
                )


@CLIENT.subcommand(
    'trackinginfo',
    2,
    flags='noscript loading stale',
    categories='@slow @connection',
    since='6.2.0',
    summary='Return information about server assisted client side caching for the current '
    'connection',
)
def client_trackinginfo(c, args):
    t = c.tracking
    if t is None:
        return Map([(b'flags', Set([b'off'])), (b'redirect', -1), (b'prefixes', [])])
    return Map([(b'flags', Set(t.flags())), (b'redirect', t.redirect), (b'prefixes', t.prefixes)])


@CLIENT.subcommand(
    'getredir',
    2,
    flags='noscript loading stale',
    categories='@slow @connection',
    since='6.0.0',
    summary='Get tracking notifications redirection client ID if any',
)
def client_getredir(c, args):
    return c.tracking.redirect if c.tracking is not None else -1


@CLIENT.subcommand(
    'caching',
    3,
    flags='noscript loading stale',
    categories='@slow @connection',
    since='6.0.0',
    summary='Instruct the server about tracking or not keys in the next request',
)
def client_caching(c, args):
    t = c.tracking
    if t is None:
        raise RedisError(
            'ERR CLIENT CACHING can be called only when the client is in tracking '
            'mode with OPTIN or OPTOUT mode enabled'
        )
    opt = lower(args[2])
    if opt == 'yes':
        if not t.optin:
            raise RedisError(
                'ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.'
            )
    elif opt == 'no':
        if not t.optout:
            raise RedisError(
                'ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.'
            )
    else:
        raise RedisError(E_SYNTAX)
    t.caching = True
    return OK


@CLIENT.subcommand(
    'help',
    2,
    flags='loading stale',
    categories='@slow @connection',
    since='5.0.0',
    summary='Show helpful text about the different subcommands',
)
def client_help(c, args):
    return HELP
