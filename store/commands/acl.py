"""The ACL command family (Redis 7.0's aclCommand): users, their rules, the log. The
users, the checks, the log and the ACL file are server.acl's (store/acl.py, acl_*.py)."""

import os
from typing import Any

from ..acl import Acl
from ..acl_checks import DENIED_CHANNEL, DENIED_CMD, DENIED_KEY, REASONS
from ..acl_checks import OK as ALLOWED
from ..acl_users import (
    CATEGORIES,
    AclError,
    Selector,
    has_spaces,
    merge_selectors,
    open_selector_index,
)
from ..args import lower
from ..clock import now_ms
from ..command_table import Family, find_command
from ..context import Client
from ..resp import OK, Map, RedisError, Set, error_arg, string2ll

COMMANDS = Family('server', since='6.0.0')

HELP = [
    'ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'CAT [<category>]',
    '    List all commands that belong to <category>, or all command categories',
    '    when no category is specified.',
    'DELUSER <username> [<username> ...]',
    '    Delete a list of users.',
    'DRYRUN <username> <command> [<arg> ...]',
    '    Returns whether the user can execute the given command without executing the command.',
    'GETUSER <username>',
    "    Get the user's details.",
    'GENPASS [<bits>]',
    '    Generate a secure 256-bit user password. The optional `bits` argument can',
    '    be used to specify a different size.',
    'LIST',
    '    Show users details in config file format.',
    'LOAD',
    '    Reload users from the ACL file.',
    'LOG [<count> | RESET]',
    '    Show the ACL log entries.',
    'SAVE',
    '    Save the current config to the ACL file.',
    'SETUSER <username> <attribute> [<attribute> ...]',
    '    Create or modify a user with the specified attributes.',
    'USERS',
    '    List all the registered usernames.',
    'WHOAMI',
    '    Return the current connection username.',
    'HELP',
    '    Prints this help.',
]
E_NO_FILE = (
    'ERR This Redis instance is not configured to use an ACL file. You may want to specify '
    'users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have '
    'a Redis configuration file set) in order to store users in the Redis configuration.'
)
GENPASS_MAX_BITS = 4096
ADMIN = dict(flags='admin noscript loading stale', categories='@admin @slow @dangerous')
PLAIN = dict(flags='noscript loading stale', categories='@slow')

ACL = COMMANDS.container(
    'acl', -2, categories='@slow', summary='A container for Access List Control commands '
)


@ACL.subcommand(
    'setuser', -3, summary='Modify or create the rules for a specific ACL user', **ADMIN
)
def acl_setuser(c: Client, args: list[bytes]) -> str:
    acl: Acl = c.server.acl
    name = args[2]
    if has_spaces(name):
        raise RedisError("ERR Usernames can't contain spaces or null characters")
    ops = merge_selectors(args[3:])
    if ops is None:
        start = args[3 + open_selector_index(args[3:])]
        raise RedisError(
            f"ERR Unmatched parenthesis in acl selector starting at '{error_arg(start)}'."
        )
    user = acl.users.get(name)
    staged = acl.new_user(name)  # every rule applies, or none (a staged copy)
    if user is not None:
        staged.copy_from(user)
    try:
        acl.apply(staged, ops)
    except AclError as e:
        op, msg = e.args
        raise RedisError(f"ERR Error in ACL SETUSER modifier '{error_arg(op)}': {msg}") from None
    if user is None:
        acl.users[name] = staged
    else:
        c.server.kill_pubsub_clients(user, staged)
        user.copy_from(staged)
        c.server.users_changed(user)
    return OK


@ACL.subcommand(
    'deluser', -3, summary='Remove the specified ACL users and the associated rules', **ADMIN
)
def acl_deluser(c: Client, args: list[bytes]) -> int:
    acl: Acl = c.server.acl
    if b'default' in args[2:]:
        raise RedisError("ERR The 'default' user cannot be removed")
    deleted = 0
    for name in args[2:]:
        user = acl.users.pop(name, None)
        if user is not None:
            c.server.users_changed(user, deleted=True)
            deleted += 1
    return deleted


@ACL.subcommand('getuser', 3, summary='Get the rules for a specific ACL user', **ADMIN)
def acl_getuser(c: Client, args: list[bytes]) -> Map | None:
    acl: Acl = c.server.acl
    user = acl.users.get(args[2])
    if user is None:
        return None
    fields = [
        (b'flags', Set([f.encode() for f in user.flags()])),
        (b'passwords', [h.encode() for h in user.passwords]),
        *_selector_fields(acl, user.root),
        (b'selectors', [Map(_selector_fields(acl, s)) for s in user.selectors[1:]]),
    ]
    return Map(fields)


def _selector_fields(acl: Acl, s: Selector) -> list[tuple[bytes, bytes]]:
    return [
        (b'commands', acl.describe_commands(s).encode()),
        (b'keys', acl.describe_keys(s).encode('utf-8', 'surrogateescape')),
        (b'channels', acl.describe_channels(s).encode('utf-8', 'surrogateescape')),
    ]


@ACL.subcommand('list', 2, summary='List the current ACL rules in ACL config file format', **ADMIN)
def acl_list(c: Client, args: list[bytes]) -> list[bytes]:
    return [line.encode('utf-8', 'surrogateescape') for line in c.server.acl.listing()]


@ACL.subcommand('users', 2, summary='List the username of all the configured ACL rules', **ADMIN)
def acl_users(c: Client, args: list[bytes]) -> list[bytes]:
    return sorted(c.server.acl.users)


@ACL.subcommand(
    'whoami',
    2,
    summary='Return the name of the user associated to the current connection',
    **PLAIN,
)
def acl_whoami(c: Client, args: list[bytes]) -> Any:
    return c.user.name


def _acl_file(c: Client) -> str:
    path: str = c.server.config['aclfile']
    if not path:
        raise RedisError(E_NO_FILE)
    return path


@ACL.subcommand('load', 2, summary='Reload the ACLs from the configured ACL file', **ADMIN)
def acl_load(c: Client, args: list[bytes]) -> str:
    errors = c.server.acl.load(_acl_file(c))
    if errors is not None:
        raise RedisError('ERR ' + errors)
    return OK


@ACL.subcommand('save', 2, summary='Save the current ACL rules in the configured ACL file', **ADMIN)
def acl_save(c: Client, args: list[bytes]) -> str:
    if not c.server.acl.save(_acl_file(c)):
        raise RedisError(
            'ERR There was an error trying to save the ACLs. Please check the server logs '
            'for more information'
        )
    return OK


@ACL.subcommand(
    'cat', -2, summary='List the ACL categories or the commands inside a category', **PLAIN
)
def acl_cat(c: Client, args: list[bytes]) -> list[bytes]:
    if len(args) > 3:
        raise RedisError(_syntax(args))
    if len(args) == 2:
        return [name.encode() for name in CATEGORIES]
    commands = c.server.acl.in_category.get(lower(args[2]))
    if commands is None:
        raise RedisError(f"ERR Unknown category '{error_arg(args[2], 128)}'")
    return [cmd.name.encode() for cmd in commands]


@ACL.subcommand(
    'genpass',
    -2,
    summary='Generate a pseudorandom secure password to use for ACL users',
    **PLAIN,
)
def acl_genpass(c: Client, args: list[bytes]) -> bytes:
    if len(args) > 3:
        raise RedisError(_syntax(args))
    bits: int | None
    bits = 256
    if len(args) == 3:
        bits = string2ll(args[2])
        if bits is None:
            raise RedisError('ERR value is not an integer or out of range')
    if bits <= 0 or bits > GENPASS_MAX_BITS:
        raise RedisError(
            'ERR ACL GENPASS argument must be the number of bits for the output password, '
            f'a positive number up to {GENPASS_MAX_BITS}'
        )
    chars = (bits + 3) // 4
    return os.urandom((chars + 1) // 2).hex()[:chars].encode()


@ACL.subcommand('log', -2, summary='List latest events denied because of ACLs in place', **ADMIN)
def acl_log(c: Client, args: list[bytes]) -> Any:
    acl: Acl = c.server.acl
    if len(args) > 3:
        raise RedisError(_syntax(args))
    count: int | None = 10
    if len(args) == 3:
        if lower(args[2]) == 'reset':
            acl.log.clear()
            return OK
        count = string2ll(args[2])
        if count is None:
            raise RedisError('ERR value is not an integer or out of range')
        count = max(count, 0)
    now = now_ms()
    return [
        Map(
            [
                (b'count', e['count']),
                (b'reason', REASONS[e['reason']].encode()),
                (b'context', e['context'].encode()),
                (b'object', e['object']),
                (b'username', e['username']),
                (b'age-seconds', (now - e['ctime']) / 1000),
                (b'client-info', e['cinfo'].encode('utf-8', 'surrogateescape')),
            ]
        )
        for e in acl.log[:count]
    ]


@ACL.subcommand(
    'dryrun',
    -4,
    since='7.0.0',
    summary='Returns whether the user can execute the given command without executing the command.',
    **ADMIN,
)
def acl_dryrun(c: Client, args: list[bytes]) -> Any:
    acl: Acl = c.server.acl
    user = acl.users.get(args[2])
    if user is None:
        raise RedisError(f"ERR User '{error_arg(args[2])}' not found")
    argv = args[3:]
    cmd = find_command(c.server.commands, argv)
    if cmd is None:
        raise RedisError(f"ERR Command '{error_arg(argv[0])}' not found")
    n, arity = len(argv), cmd.arity
    if (arity > 0 and arity != n) or n < -arity:
        raise RedisError(f"ERR wrong number of arguments for '{cmd.name}' command")
    result, pos = acl.check(user, cmd, argv)
    if result == ALLOWED:
        return OK
    if result == DENIED_CMD:
        return f"This user has no permissions to run the '{cmd.name}' command".encode()
    what = 'key' if result == DENIED_KEY else 'channel'
    assert result in (DENIED_KEY, DENIED_CHANNEL)
    return f"This user has no permissions to access the '{error_arg(argv[pos])}' {what}".encode()


@ACL.subcommand(
    'help',
    2,
    flags='loading stale',
    categories='@slow',
    summary='Show helpful text about the different subcommands',
)
def acl_help(c: Client, args: list[bytes]) -> list[str]:
    return HELP


def _syntax(args: list[bytes]) -> str:
    """addReplySubcommandSyntaxError: a subcommand given more arguments than it takes."""
    name = error_arg(args[1])
    return f"ERR unknown subcommand or wrong number of arguments for '{name}'. Try ACL HELP."
