"""SLOWLOG GET / LEN / RESET / HELP (Redis 7.0 slowlog.c's slowlogCommand), over the log
store/latency.py keeps."""

from typing import Any

from ..args import range_arg
from ..command_table import Family
from ..context import Client
from ..latency import monitor
from ..resp import OK, RedisError, error_arg

COMMANDS = Family('server', since='2.2.12')

LONG_MAX = 2**63 - 1

SLOWLOG_HELP = [
    'SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'GET [<count>]',
    '    Return top <count> entries from the slowlog (default: 10, -1 mean all).',
    '    Entries are made of:',
    '    id, timestamp, time in microseconds, arguments array, client IP and port,',
    '    client name',
    'LEN',
    '    Return the length of the slowlog.',
    'RESET',
    '    Reset the slowlog.',
    'HELP',
    '    Prints this help.',
]

_ADMIN = 'admin loading stale'
_ADMIN_CATS = '@admin @slow @dangerous'
_ALL_NODES = 'request_policy:all_nodes'

SLOWLOG = COMMANDS.container(
    'slowlog', -2, categories='@slow', summary='A container for slow log commands'
)


# Declared in the order redis-server 7.0.15 lists them (COMMAND INFO SLOWLOG).
@SLOWLOG.subcommand(
    'get',
    -2,
    flags=_ADMIN,
    categories=_ADMIN_CATS,
    tips=f'{_ALL_NODES} nondeterministic_output',
    summary="Get the slow log's entries",
)
def slowlog_get(c: Client, args: list[bytes]) -> Any:
    if len(args) > 3:
        raise subcommand_syntax_error(args)
    count = 10
    log = monitor(c.server).slowlog
    if len(args) == 3:
        count = range_arg(args[2], -1, LONG_MAX, 'ERR count should be greater than or equal to -1')
        if count == -1:
            count = len(log)
    return [list(entry) for entry in list(log)[:count]]


def subcommand_syntax_error(args: list[bytes]) -> RedisError:
    """addReplySubcommandSyntaxError: the subcommand as typed, the container upper-cased."""
    return RedisError(
        f"ERR unknown subcommand or wrong number of arguments for '{error_arg(args[1], 128)}'. "
        f'Try {error_arg(args[0]).upper()} HELP.'
    )


@SLOWLOG.subcommand(
    'help',
    2,
    flags='loading stale',
    categories='@slow',
    since='6.2.0',
    summary='Show helpful text about the different subcommands',
)
def slowlog_help(c: Client, args: list[bytes]) -> Any:
    return SLOWLOG_HELP


@SLOWLOG.subcommand(
    'reset',
    2,
    flags=_ADMIN,
    categories=_ADMIN_CATS,
    tips=f'{_ALL_NODES} response_policy:all_succeeded',
    summary='Clear all entries from the slow log',
)
def slowlog_reset(c: Client, args: list[bytes]) -> Any:
    monitor(c.server).reset_slowlog()
    return OK


@SLOWLOG.subcommand(
    'len',
    2,
    flags=_ADMIN,
    categories=_ADMIN_CATS,
    tips=f'{_ALL_NODES} response_policy:agg_sum nondeterministic_output',
    summary="Get the slow log's length",
)
def slowlog_len(c: Client, args: list[bytes]) -> Any:
    return len(monitor(c.server).slowlog)
