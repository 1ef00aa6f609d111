"""Connection commands: PING, ECHO, SELECT, QUIT, AUTH, HELLO, RESET (CLIENT has its own
module, client.py)."""

from typing import Any

from ..acl_checks import DENIED_AUTH
from ..args import E_DB_RANGE, E_NOT_INT, lower
from ..command_table import Family
from ..context import Client
from ..resp import OK, PONG, Map, RedisError, string2ll
from .client import close_after_this_reply

E_WRONGPASS = 'WRONGPASS invalid username-password pair or user is disabled.'


COMMANDS = Family('connection')


@COMMANDS.command(
    'ping',
    -1,
    flags='fast',
    categories='@fast @connection',
    summary='Ping the server',
    tips='request_policy:all_shards response_policy:all_succeeded',
)
def ping(c: Client, args: list[bytes]) -> Any:
    if len(args) > 2:
        raise RedisError("ERR wrong number of arguments for 'ping' command")
    if c.subscriptions and c.proto == 2:
        return [b'pong', args[1] if len(args) > 1 else b'']
    return args[1] if len(args) > 1 else PONG


@COMMANDS.command(
    'echo',
    2,
    flags='fast loading stale',
    categories='@fast @connection',
    summary='Echo the given string',
)
def echo(c: Client, args: list[bytes]) -> Any:
    return args[1]


@COMMANDS.command(
    'select',
    2,
    flags='loading stale fast',
    categories='@connection @fast',
    summary='Change the selected database for the current connection',
)
def select(c: Client, args: list[bytes]) -> Any:
    # getIntFromObjectOrReply: a 64-bit integer outside the C int range has its own error.
    db = string2ll(args[1])
    if db is None:
        raise RedisError(E_NOT_INT)
    if not -(2**31) <= db < 2**31:
        raise RedisError('ERR value is out of range, value must between -2147483648 and 2147483647')
    if db != 0 and c.server.cluster is not None:  # a cluster node has database 0 only
        raise RedisError('ERR SELECT is not allowed in cluster mode')
    if not 0 <= db < c.ks.databases:
        raise RedisError(E_DB_RANGE)
    c.db = db
    return OK


@COMMANDS.command(
    'quit',
    -1,
    flags='allow_busy noscript loading stale fast no_auth',
    categories='@fast @connection',
    summary='Close the connection',
)
def quit_(c: Client, args: list[bytes]) -> Any:
    # Reached on the hot path only (the gated path answers QUIT itself): the +OK is queued
    # after this returns, so close once it is written rather than now.
    close_after_this_reply(c)
    return OK


def authenticate(c: Client, command: bytes, name: bytes, password: bytes) -> None:
    """ACLAuthenticateUser: the connection becomes the user's, or -WRONGPASS (logged
    with `command`, the AUTH or HELLO as sent)."""
    acl = c.server.acl
    user = acl.credentials(name, password)
    if user is None:
        context = 'multi' if c.multi is not None else 'toplevel'
        cmd = c.server.commands.get(command.lower())
        acl.add_log(c, DENIED_AUTH, context, command, username=name, cmd=cmd)
        raise RedisError(E_WRONGPASS)
    c.set_user(user)
    c.authenticated = True
    c.update_gate()


@COMMANDS.command(
    'auth',
    -2,
    flags='noscript loading stale fast no_auth allow_busy',
    categories='@fast @connection',
    summary='Authenticate to the server',
)
def auth(c: Client, args: list[bytes]) -> Any:
    if len(args) > 3:
        raise RedisError('ERR syntax error')
    if len(args) == 2 and c.server.acl.default.nopass:
        raise RedisError(
            'ERR AUTH <password> called without any password configured for '
            'the default user. Are you sure your configuration is correct?'
        )
    user, password = (b'default', args[1]) if len(args) == 2 else (args[1], args[2])
    authenticate(c, args[0], user, password)
    return OK


@COMMANDS.command(
    'hello',
    -1,
    flags='noscript loading stale fast no_auth allow_busy',
    categories='@fast @connection',
    since='6.0.0',
    summary='Handshake with Redis',
)
def hello(c: Client, args: list[bytes]) -> Any:
    proto = None
    if len(args) > 1:
        proto = string2ll(args[1])
        if proto is None:
            raise RedisError('ERR Protocol version is not an integer or out of range')
        if proto < 2 or proto > 3:
            raise RedisError('NOPROTO unsupported protocol version')
    # As Redis 7.0: AUTH authenticates and SETNAME's name is checked as the options are
    # parsed, left to right; the name is set only once everything succeeded.
    i = 2
    name = None
    while i < len(args):
        opt = lower(args[i])
        if opt == 'auth' and i + 2 < len(args):
            authenticate(c, args[0], args[i + 1], args[i + 2])
            i += 3
        elif opt == 'setname' and i + 1 < len(args):
            name = args[i + 1]
            if not all(33 <= ch <= 126 for ch in name):
                raise RedisError(
                    'ERR Client names cannot contain spaces, newlines or special characters.'
                )
            i += 2
        else:
            raise RedisError(
                f"ERR Syntax error in HELLO option '{args[i].decode('utf-8', 'replace')}'"
            )
    if not c.authenticated:
        raise RedisError(
            'NOAUTH HELLO must be called with the client already authenticated, '
            'otherwise the HELLO AUTH <user> <pass> option can be used to '
            'authenticate the client and select the RESP protocol version at '
            'the same time'
        )
    if name is not None:
        c.name = name.decode('ascii') or None
    if proto is not None:
        c.proto = proto
    c.update_gate()
    return Map(
        [
            (b'server', b'redis'),
            (b'version', c.server.config['announce-redis-version'].encode()),
            (b'proto', c.proto),
            (b'id', c.id),
            (b'mode', b'cluster' if c.server.cluster is not None else b'standalone'),
            (b'role', b'master'),
            (b'modules', []),
        ]
    )


@COMMANDS.command(
    'reset',
    1,
    flags='noscript loading stale fast no_auth allow_busy',
    categories='@fast @connection',
    since='6.2.0',
    summary='Reset the connection',
)
def reset(c: Client, args: list[bytes]) -> Any:
    c.end_multi()
    for hook in c.server.reset_hooks:
        hook(c)
    c.db = 0
    c.proto = 2
    c.name = None
    # Redis 7.0 clears REPLY_OFF and REPLY_SKIP_NEXT but not the active SKIP (so a skipped
    # RESET sends nothing), and keeps NO-EVICT; NO-TOUCH (7.2) is cleared as 7.2 does.
    if c.reply_mode != 'skip':
        c.reply_mode = 'on'
    c.no_touch = False
    c.asking = c.readonly = False  # cluster mode's ASKING and READONLY
    c.set_user(c.server.acl.default)  # clientSetDefaultAuth
    c.authenticated = not c.server.acl.auth_required()
    c.update_gate()
    return 'RESET'
