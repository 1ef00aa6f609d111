"""The CLIENT command family (Redis 7.0 semantics and error strings).

ID, SETNAME, GETNAME, LIST, INFO, KILL, REPLY, NO-EVICT, NO-TOUCH (7.2), PAUSE, UNPAUSE,
UNBLOCK, GETREDIR, TRACKING, TRACKINGINFO, CACHING, HELP. The server keeps its clients in
`server.clients` (id -> Connection, in connection order), which LIST and KILL walk.

The handlers parse and answer; what they drive lives with its concern:
- LIST and INFO: the line for a client, store/commands/client_info.py;
- PAUSE/UNPAUSE: `ClientPause`, one per server (server.pause), store/commands/client_pause.py;
- TRACKING, CACHING, GETREDIR and TRACKINGINFO parse and answer as Redis 7.0 does; the
  tables and the invalidations are store/tracking.py's (server.tracking).
"""

import os
import socket
from typing import Any

from ..args import E_NOT_INT, E_SYNTAX, lower
from ..clock import now_ms
from ..command_table import Family
from ..context import Client
from ..resp import NO_REPLY, OK, Map, RedisError, Set, Verbatim, error_arg, string2ll
from ..tracking import E_REDIRECT_MISSING
from .client_info import client_info_line, client_type, type_arg

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


COMMANDS = Family('connection', since='2.4.0')


def _syntax_error(args: list[bytes]) -> RedisError:
    """addReplySubcommandSyntaxError: right arity for the table, wrong for the form."""
    return RedisError(
        f"ERR unknown subcommand or wrong number of arguments for "
        f"'{error_arg(args[1], 128)}'. Try CLIENT HELP."
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
def client_id(c: Client, args: list[bytes]) -> Any:
    return c.id


def valid_name(name: bytes) -> bool:
    return all(33 <= ch <= 126 for ch in name)


@CLIENT.subcommand(
    'setname',
    3,
    flags='noscript loading stale',
    categories='@slow @connection',
    since='2.6.9',
    summary='Set the current connection name',
)
def client_setname(c: Client, args: list[bytes]) -> Any:
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
def client_getname(c: Client, args: list[bytes]) -> Any:
    return c.name.encode() if c.name else None


@CLIENT.subcommand(
    'list',
    -2,
    flags='admin noscript loading stale',
    categories='@admin @slow @dangerous @connection',
    tips='nondeterministic_output',
    summary='Get the list of client connections',
)
def client_list(c: Client, args: list[bytes]) -> Any:
    clients = c.server.clients
    if len(args) == 2:
        chosen = list(clients.values())
    elif len(args) == 4 and lower(args[2]) == 'type':
        t = type_arg(args[3])
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
def client_info(c: Client, args: list[bytes]) -> Any:
    return Verbatim((client_info_line(c, c, args) + '\n').encode())


def kill_connection(conn: Client) -> None:
    """freeClient: drop the connection now, discarding replies not yet written."""
    conn.out.clear()
    conn.closing = conn.gated = True
    if conn.transport is not None:
        shut_now(conn.transport)
        conn.transport.close()
    conn.server.unregister(conn)


def shut_now(transport: Any) -> None:
    """The peer sees the connection end now, as freeClient's close(2) shows it, not
    when the loop next runs (a DEBUG SLEEP or a long script after CLIENT KILL would hold
    the close back; a replica killing its master link then sleeping must leave its master
    without replicas meanwhile). shutdown(2) on a duplicate of the descriptor: the
    transport still owns and closes its own."""
    sock = transport.get_extra_info('socket')
    try:
        dup = socket.socket(fileno=os.dup(sock.fileno()))
    except (AttributeError, OSError):
        return
    try:
        dup.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        dup.close()


def close_after_this_reply(c: Client) -> None:
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
def client_kill(c: Client, args: list[bytes]) -> Any:
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
                ctype = type_arg(args[i + 1])
            elif opt == 'addr' and more:
                addr = args[i + 1].decode('utf-8', 'replace')
            elif opt == 'laddr' and more:
                laddr = args[i + 1].decode('utf-8', 'replace')
            elif opt == 'user' and more:
                user = c.server.acl.users.get(args[i + 1])
                if user is None:
                    raise RedisError(f"ERR No such user '{error_arg(args[i + 1])}'")
            elif opt == 'skipme' and more:
                skip = lower(args[i + 1])
                if skip == 'yes':
                    skipme = True
                elif skip == 'no':
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
def client_reply(c: Client, args: list[bytes]) -> Any:
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


def _on_off(args: list[bytes]) -> bool:
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
def client_no_evict(c: Client, args: list[bytes]) -> Any:
    c.no_evict = _on_off(args)
    return OK


@CLIENT.subcommand(
    'no-touch', 3, flags='noscript loading stale', categories='@slow @connection', since='7.2.0'
)
def client_no_touch(c: Client, args: list[bytes]) -> Any:
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
def client_pause(c: Client, args: list[bytes]) -> Any:
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
def client_unpause(c: Client, args: list[bytes]) -> Any:
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
def client_unblock(c: Client, args: list[bytes]) -> Any:
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
def client_tracking(c: Client, args: list[bytes]) -> Any:
    """CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN] [OPTOUT]
    [NOLOOP], parsed and checked in Redis 7.0's order (store/tracking.py does the rest)."""
    redirect = 0
    bcast = optin = optout = noloop = False
    prefixes: list[bytes] = []
    j = 3
    n = len(args)
    while j < n:
        opt = lower(args[j])
        more = j + 1 < n
        if opt == 'redirect' and more:
            j += 1
            if redirect:
                raise RedisError('ERR A client can only redirect to a single other client')
            rid = string2ll(args[j])
            if rid is None:
                raise RedisError(E_NOT_INT)
            redirect = rid
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


def _c_string(b: bytes) -> str:
    """A prefix as Redis's %s prints it: up to its first NUL byte."""
    return b.split(b'\0', 1)[0].decode('utf-8', 'surrogateescape')


def _check_prefixes(existing: list[bytes], prefixes: list[bytes]) -> None:
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
def client_trackinginfo(c: Client, args: list[bytes]) -> Any:
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
def client_getredir(c: Client, args: list[bytes]) -> Any:
    return c.tracking.redirect if c.tracking is not None else -1


@CLIENT.subcommand(
    'caching',
    3,
    flags='noscript loading stale',
    categories='@slow @connection',
    since='6.0.0',
    summary='Instruct the server about tracking or not keys in the next request',
)
def client_caching(c: Client, args: list[bytes]) -> Any:
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
def client_help(c: Client, args: list[bytes]) -> Any:
    return HELP
