"""COMMAND: the command table as clients see it, with COUNT, DOCS, INFO, LIST, GETKEYS,
GETKEYSANDFLAGS and HELP.

redis-cli reads COMMAND DOCS at start-up, so replies follow Redis 7.0: COMMAND INFO's
ten-element entries with key specs derived from each entry's key positions, COMMAND DOCS'
summary, since, group, complexity and arguments. The complexity and argument documentation
of the server group's commands (DOCS) lives here, beside the code that renders it.
"""

from typing import Any

from ..args import E_SYNTAX, lower
from ..command_table import Command, Family, find_command
from ..context import Client
from ..glob import glob_match
from ..resp import Map, RedisError, Set
from .admin import as_text, unique_commands

COMMANDS = Family('server', since='2.8.13')


def lookup_command(server: Any, name: bytes) -> Command | None:
    """lookupCommandBySds: 'get' or 'config|get', case-insensitively; None if unknown."""
    base, _, sub = as_text(name).lower().partition('|')
    cmd: Command | None = server.commands.get(base.encode())
    if cmd is None or not sub:
        return cmd
    return cmd.subcommands.get(sub)


COMMAND_HELP = [
    'COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    '(no subcommand)',
    '    Return details about all Redis commands.',
    'COUNT',
    '    Return the total number of commands in this Redis server.',
    'LIST',
    '    Return a list of all commands in this Redis server.',
    'INFO [<command-name> ...]',
    '    Return details about multiple Redis commands.',
    '    If no command names are given, documentation details for all',
    '    commands are returned.',
    'DOCS [<command-name> ...]',
    '    Return documentation details about multiple Redis commands.',
    '    If no command names are given, documentation details for all',
    '    commands are returned.',
    'GETKEYS <full-command>',
    '    Return the keys from a full Redis command.',
    'GETKEYSANDFLAGS <full-command>',
    '    Return the keys and the access flags from a full Redis command.',
    'HELP',
    '    Prints this help.',
]


def command_info(cmd: Command) -> list[Any]:
    """addReplyCommandInfo: name, arity, flags, first/last/step, ACL categories, tips, key
    specs, subcommands."""
    return [
        cmd.name.encode(),
        cmd.arity,
        Set(list(cmd.flags)),
        cmd.first_key,
        cmd.last_key,
        cmd.step,
        Set(list(cmd.categories)),
        Set([t.encode() for t in cmd.tips]),
        [spec.info() for spec in cmd.key_specs],
        [command_info(sub) for sub in cmd.subcommands.values()],
    ]


def _arg(
    name: str,
    type_: str,
    token: str | None = None,
    flags: str = '',
    since: str | None = None,
    args: list[Map] | None = None,
    key_spec: int | None = None,
) -> Map:
    """One entry of a command's documented arguments (addReplyCommandArgList)."""
    items: list[tuple[bytes, Any]] = [(b'name', name.encode()), (b'type', type_.encode())]
    if key_spec is not None:
        items.append((b'key_spec_index', key_spec))
    if token:
        items.append((b'token', token.encode()))
    if since:
        items.append((b'since', since.encode()))
    if flags:
        items.append((b'flags', Set(flags.split())))
    if args:
        items.append((b'arguments', args))
    return Map(items)


_FLUSH_ARGS = [
    _arg(
        'async',
        'oneof',
        flags='optional',
        args=[
            _arg('async', 'pure-token', 'ASYNC', since='4.0.0'),
            _arg('sync', 'pure-token', 'SYNC', since='6.2.0'),
        ],
    )
]
_NAMES_ARG = [_arg('command-name', 'string', flags='optional multiple')]

# Complexity and argument documentation of the server group's commands (COMMAND DOCS):
# COMMAND's own and those of server.py, config_cmd.py, info.py and debug.py.
DOCS: dict[str, tuple[str, list[Map] | None]] = {
    'info': ('O(1)', [_arg('section', 'string', flags='optional multiple')]),
    'time': ('O(1)', None),
    'dbsize': ('O(1)', None),
    'flushdb': ('O(N) where N is the number of keys in the selected database', _FLUSH_ARGS),
    'flushall': ('O(N) where N is the total number of keys in all databases', _FLUSH_ARGS),
    'swapdb': (
        'O(N) where N is the count of clients watching or blocking on keys from both databases.',
        [_arg('index1', 'integer'), _arg('index2', 'integer')],
    ),
    'lastsave': ('O(1)', None),
    'save': ('O(N) where N is the total number of keys in all databases', None),
    'bgsave': ('O(1)', [_arg('schedule', 'pure-token', 'SCHEDULE', 'optional', '3.2.2')]),
    'shutdown': (
        'O(N) when saving, where N is the total number of keys in all databases '
        'when saving data, otherwise O(1)',
        [
            _arg(
                'nosave_save',
                'oneof',
                flags='optional',
                args=[_arg('nosave', 'pure-token', 'NOSAVE'), _arg('save', 'pure-token', 'SAVE')],
            ),
            _arg('now', 'pure-token', 'NOW', 'optional', '7.0.0'),
            _arg('force', 'pure-token', 'FORCE', 'optional', '7.0.0'),
            _arg('abort', 'pure-token', 'ABORT', 'optional', '7.0.0'),
        ],
    ),
    'debug': ('Depends on subcommand.', None),
    'slowlog': ('Depends on subcommand.', None),
    'slowlog|get': (
        'O(N) where N is the number of entries returned',
        [_arg('count', 'integer', flags='optional')],
    ),
    'slowlog|len': ('O(1)', None),
    'slowlog|help': ('O(1)', None),
    'slowlog|reset': ('O(N) where N is the number of entries in the slowlog', None),
    'latency': ('Depends on subcommand.', None),
    'latency|doctor': ('O(1)', None),
    'latency|help': ('O(1)', None),
    'latency|latest': ('O(1)', None),
    'latency|graph': ('O(1)', [_arg('event', 'string')]),
    'latency|history': ('O(1)', [_arg('event', 'string')]),
    'latency|reset': ('O(1)', [_arg('event', 'string', flags='optional multiple')]),
    'latency|histogram': (
        'O(N) where N is the number of commands with latency information being retrieved.',
        [_arg('command', 'string', flags='optional multiple')],
    ),
    'memory': ('Depends on subcommand.', None),
    'memory|doctor': ('O(1)', None),
    'memory|help': ('O(1)', None),
    'memory|stats': ('O(1)', None),
    'memory|usage': (
        'O(N) where N is the number of samples.',
        [_arg('key', 'key', key_spec=0), _arg('count', 'integer', 'SAMPLES', 'optional')],
    ),
    'memory|malloc-stats': ('Depends on how much memory is allocated, could be slow', None),
    'memory|purge': ('Depends on how much memory is allocated, could be slow', None),
    'command': ('O(N) where N is the total number of Redis commands', None),
    'command|count': ('O(1)', None),
    'command|docs': ('O(N) where N is the number of commands to look up', _NAMES_ARG),
    'command|info': ('O(N) where N is the number of commands to look up', _NAMES_ARG),
    'command|getkeys': ('O(N) where N is the number of arguments to the command', None),
    'command|getkeysandflags': ('O(N) where N is the number of arguments to the command', None),
    'command|list': (
        'O(N) where N is the total number of Redis commands',
        [
            _arg(
                'filterby',
                'oneof',
                'FILTERBY',
                'optional',
                args=[
                    _arg('module-name', 'string', 'MODULE'),
                    _arg('category', 'string', 'ACLCAT'),
                    _arg('pattern', 'pattern', 'PATTERN'),
                ],
            )
        ],
    ),
    'command|help': ('O(1)', None),
    'config': ('Depends on subcommand.', None),
    'config|get': (
        'O(N) when N is the number of configuration parameters provided',
        [_arg('parameter', 'block', flags='multiple', args=[_arg('parameter', 'string')])],
    ),
    'config|set': (
        'O(N) when N is the number of configuration parameters provided',
        [
            _arg(
                'parameter_value',
                'block',
                flags='multiple',
                args=[_arg('parameter', 'string'), _arg('value', 'string')],
            )
        ],
    ),
    'config|resetstat': ('O(1)', None),
    'config|rewrite': ('O(1)', None),
    'config|help': ('O(1)', None),
}


def command_docs(cmd: Command) -> Map:
    """addReplyCommandDocs: summary, since, group, complexity, arguments, subcommands."""
    items: list[tuple[bytes, Any]] = []
    if cmd.summary:
        items.append((b'summary', cmd.summary.encode()))
    items.append((b'since', cmd.since.encode()))
    items.append((b'group', cmd.group.encode()))
    complexity, arguments = DOCS.get(cmd.name, (None, None))
    if complexity:
        items.append((b'complexity', complexity.encode()))
    if cmd.name in ('debug', 'replconf'):
        items.append((b'doc_flags', Set(['syscmd'])))
    if arguments:
        items.append((b'arguments', arguments))
    if cmd.subcommands:
        items.append(
            (
                b'subcommands',
                Map([(sub.name.encode(), command_docs(sub)) for sub in cmd.subcommands.values()]),
            )
        )
    return Map(items)


def command(c: Client, args: list[bytes]) -> Any:
    if len(args) == 1:
        return [command_info(cmd) for cmd in unique_commands(c.server)]
    return c.server.commands[b'command'].dispatch(c, args)  # the server's copy


COMMAND = COMMANDS.container(
    'command',
    -1,
    handler=command,
    flags='loading stale',
    categories='@slow @connection',
    tips='nondeterministic_output_order',
    summary='Get array of Redis command details',
)


@COMMAND.subcommand(
    'count',
    2,
    flags='loading stale',
    categories='@slow @connection',
    summary='Get total number of Redis commands',
)
def command_count(c: Client, args: list[bytes]) -> int:
    return len(unique_commands(c.server))


@COMMAND.subcommand(
    'info',
    -2,
    flags='loading stale',
    categories='@slow @connection',
    tips='nondeterministic_output_order',
    summary='Get array of specific Redis command details, or all when no argument is given.',
)
def command_info_(c: Client, args: list[bytes]) -> list[Any]:
    if len(args) == 2:
        return [command_info(cmd) for cmd in unique_commands(c.server)]
    out = []
    for name in args[2:]:
        cmd = lookup_command(c.server, name)
        out.append(None if cmd is None else command_info(cmd))
    return out


@COMMAND.subcommand(
    'docs',
    -2,
    flags='loading stale',
    categories='@slow @connection',
    tips='nondeterministic_output_order',
    since='7.0.0',
    summary='Get array of specific Redis command documentation',
)
def command_docs_(c: Client, args: list[bytes]) -> Map:
    if len(args) == 2:
        found = unique_commands(c.server)
    else:
        found = [cmd for cmd in (lookup_command(c.server, n) for n in args[2:]) if cmd]
    return Map([(cmd.name.encode(), command_docs(cmd)) for cmd in found])


@COMMAND.subcommand(
    'list',
    -2,
    flags='loading stale',
    categories='@slow @connection',
    tips='nondeterministic_output_order',
    since='7.0.0',
    summary='Get an array of Redis command names',
)
def command_list(c: Client, args: list[bytes]) -> list[bytes]:
    kind: str | None = None
    arg = b''  # FILTERBY's argument, read only with its kind
    i = 2
    while i < len(args):
        if lower(args[i]) == 'filterby' and len(args) - 1 - i == 2:
            kind = lower(args[i + 1])
            if kind not in ('module', 'aclcat', 'pattern'):
                raise RedisError(E_SYNTAX)
            arg = args[i + 2]
            i += 3
        else:
            raise RedisError(E_SYNTAX)
    out = []
    for cmd in unique_commands(c.server):
        for each in cmd.all():
            if kind == 'module':
                continue  # no modules here
            if kind == 'aclcat' and '@' + as_text(arg).lower() not in each.categories:
                continue
            if kind == 'pattern' and not glob_match(arg, each.name.encode(), nocase=True):
                continue
            out.append(each.name.encode())
    return out


def _getkeys(c: Client, args: list[bytes]) -> tuple[Command, list[bytes], list[int]]:
    """The command named by args[2:], its arguments and its keys' positions, with
    Redis's errors."""
    argv = args[2:]
    cmd = find_command(c.server.commands, argv)
    if cmd is None:
        raise RedisError('ERR Invalid command specified')
    if not cmd.has_keys():
        raise RedisError('ERR The command has no key arguments')
    if not cmd.arity_ok(len(argv)):
        raise RedisError('ERR Invalid number of arguments specified for command')
    positions = cmd.key_positions(argv)
    if not positions or positions[-1] >= len(argv):
        if 'no_mandatory_keys' in cmd.flags:  # EVAL with no keys, ...
            return cmd, argv, []
        raise RedisError('ERR Invalid arguments specified for command')
    return cmd, argv, positions


@COMMAND.subcommand(
    'getkeys',
    -4,
    flags='loading stale',
    categories='@slow @connection',
    summary='Extract keys given a full Redis command',
)
def command_getkeys(c: Client, args: list[bytes]) -> list[bytes]:
    _, argv, positions = _getkeys(c, args)
    return [argv[i] for i in positions]


@COMMAND.subcommand(
    'getkeysandflags',
    -4,
    flags='loading stale',
    categories='@slow @connection',
    since='7.0.0',
    summary='Extract keys and access flags given a full Redis command',
)
def command_getkeysandflags(c: Client, args: list[bytes]) -> list[list[Any]]:
    cmd, argv, positions = _getkeys(c, args)
    return [[argv[i], Set(list(flags))] for i, flags in cmd.key_flags(argv, positions)]


@COMMAND.subcommand(
    'help',
    2,
    flags='loading stale',
    categories='@slow @connection',
    since='5.0.0',
    summary='Show helpful text about the different subcommands',
)
def command_help(c: Client, args: list[bytes]) -> list[str]:
    return COMMAND_HELP


# -- the command table --------------------------------------------------------------------
