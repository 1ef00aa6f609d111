"""FUNCTION and FCALL (Redis 7.0's functions.c). The libraries live in
store/scripting/functions.py; this module reads the arguments and answers."""

from __future__ import annotations

import time
from typing import Any

from ..args import keyword
from ..command_table import Family
from ..context import Client
from ..glob import glob_match
from ..resp import OK, Map, RedisError, Set, error_arg
from ..scripting.eval import FLAGS
from ..scripting.functions import ENGINE
from .scripting import CALL, CALL_FLAGS, RO_KEYS, RW_KEYS, kill

COMMANDS = Family('scripting', since='7.0.0')

_ALL_SHARDS = 'request_policy:all_shards response_policy:all_succeeded'


@COMMANDS.command(
    'fcall',
    -3,
    flags=CALL_FLAGS,
    summary='Invoke a function',
    key_specs=RW_KEYS,
    **CALL,
)
def fcall(c: Client, args: list[bytes]) -> Any:
    return c.server.functions.call(c, args, False)


@COMMANDS.command(
    'fcall_ro',
    -3,
    flags='readonly ' + CALL_FLAGS,
    summary='Invoke a read-only function',
    key_specs=RO_KEYS,
    **CALL,
)
def fcall_ro(c: Client, args: list[bytes]) -> Any:
    return c.server.functions.call(c, args, True)


FUNCTION = COMMANDS.container(
    'function', categories='@slow', summary='A container for function commands'
)
_SUB = dict(categories='@slow @scripting')
_WRITE = dict(categories='@write @slow @scripting', tips=_ALL_SHARDS)


@FUNCTION.subcommand(
    'load',
    -3,
    flags='write denyoom noscript',
    summary='Create a function with the given arguments (name, code, description)',
    **_WRITE,
)
def function_load(c: Client, args: list[bytes]) -> Any:
    """FUNCTION LOAD [REPLACE] code: every argument before the last is an option."""
    replace = False
    for arg in args[2:-1]:
        if keyword(arg) != b'replace':
            raise RedisError(f'ERR Unknown option given: {error_arg(arg)}')
        replace = True
    name = c.server.functions.create(args[-1], replace)
    c.ks.changes += 1  # server.dirty++: propagated, counted as a change (no key moved)
    return name


@FUNCTION.subcommand(
    'delete', 3, flags='write noscript', summary='Delete a function by name', **_WRITE
)
def function_delete(c: Client, args: list[bytes]) -> Any:
    c.server.functions.delete(args[2])
    c.ks.changes += 1  # server.dirty++, as FUNCTION LOAD
    return OK


@FUNCTION.subcommand(
    'flush', -2, flags='write noscript', summary='Deleting all functions', **_WRITE
)
def function_flush(c: Client, args: list[bytes]) -> Any:
    if len(args) > 3:
        raise RedisError(_syntax(args))
    if len(args) == 3 and keyword(args[2]) not in (b'sync', b'async'):
        raise RedisError('ERR FUNCTION FLUSH only supports SYNC|ASYNC option')
    c.server.functions.flush()
    c.ks.changes += 1  # server.dirty++, as FUNCTION LOAD
    return OK


@FUNCTION.subcommand(
    'list',
    -2,
    flags='noscript',
    tips='nondeterministic_output_order',
    summary='List information about all the functions',
    **_SUB,
)
def function_list(c: Client, args: list[bytes]) -> Any:
    """FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE], each option at most once."""
    with_code = False
    pattern: bytes | None = None
    i = 2
    while i < len(args):
        arg = keyword(args[i])
        if not with_code and arg == b'withcode':
            with_code = True
        elif pattern is None and arg == b'libraryname':
            if i >= len(args) - 1:
                raise RedisError('ERR library name argument was not given')
            i += 1
            pattern = args[i]
        else:
            raise RedisError(f'ERR Unknown argument {error_arg(args[i])}')
        i += 1
    out = []
    for lib in c.server.functions.ctx.libraries.values():
        if pattern is not None and not glob_match(pattern, lib.name, nocase=True):
            continue
        functions = [
            Map(
                [
                    (b'name', fn.name),
                    (b'description', fn.description),
                    (b'flags', Set([f for f in FLAGS if f in fn.flags])),
                ]
            )
            for fn in lib.functions.values()
        ]
        items = [(b'library_name', lib.name), (b'engine', ENGINE), (b'functions', functions)]
        if with_code:
            items.append((b'library_code', lib.code))
        out.append(Map(items))
    return out


@FUNCTION.subcommand(
    'dump',
    2,
    flags='noscript',
    summary='Dump all functions into a serialized binary payload',
    **_SUB,
)
def function_dump(c: Client, args: list[bytes]) -> Any:
    return c.server.functions.dump()


@FUNCTION.subcommand(
    'restore',
    -3,
    flags='write denyoom noscript',
    summary='Restore all the functions on the given payload',
    **_WRITE,
)
def function_restore(c: Client, args: list[bytes]) -> Any:
    if len(args) > 4:
        raise RedisError(_syntax(args))
    policy = 'append'
    if len(args) == 4:
        policy = keyword(args[3]).decode('latin-1')
        if policy not in ('append', 'replace', 'flush'):
            raise RedisError(
                'ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.'
            )
    c.server.functions.restore(args[2], policy)
    c.ks.changes += 1  # server.dirty++, as FUNCTION LOAD
    return OK


@FUNCTION.subcommand(
    'stats',
    2,
    flags='noscript allow_busy',
    tips='nondeterministic_output request_policy:all_shards response_policy:special',
    summary='Return information about the function currently running (name, description, duration)',
    **_SUB,
)
def function_stats(c: Client, args: list[bytes]) -> Any:
    server = c.server
    functions = server.functions
    busy = server.busy.run
    if busy is not None and busy.is_eval:
        raise RedisError(server.busy.message())
    running = None
    current = functions.running()
    if current is not None:
        run, argv = current
        running = Map(
            [
                (b'name', run.name),
                (b'command', list(argv)),
                (b'duration_ms', int((time.perf_counter() - run.start) * 1000)),
            ]
        )
    ctx = functions.ctx
    engines = Map(
        [
            (
                ENGINE,
                Map(
                    [
                        (b'libraries_count', len(ctx.libraries)),
                        (b'functions_count', ctx.n_functions),
                    ]
                ),
            )
        ]
    )
    return Map([(b'running_script', running), (b'engines', engines)])


@FUNCTION.subcommand(
    'kill',
    2,
    flags='noscript allow_busy',
    tips='request_policy:all_shards response_policy:one_succeeded',
    summary='Kill the function currently in execution.',
    **_SUB,
)
def function_kill(c: Client, args: list[bytes]) -> Any:
    return kill(c, is_eval=False)


FUNCTION_HELP = [
    'FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'LOAD [REPLACE] <FUNCTION CODE>',
    '    Create a new library with the given library name and code.',
    'DELETE <LIBRARY NAME>',
    '    Delete the given library.',
    'LIST [LIBRARYNAME PATTERN] [WITHCODE]',
    '    Return general information on all the libraries:',
    '    * Library name',
    '    * The engine used to run the Library',
    '    * Library description',
    '    * Functions list',
    '    * Library code (if WITHCODE is given)',
    '    It also possible to get only function that matches a pattern using LIBRARYNAME argument.',
    'STATS',
    '    Return information about the current function running:',
    '    * Function name',
    '    * Command used to run the function',
    '    * Duration in MS that the function is running',
    '    If no function is running, return nil',
    '    In addition, returns a list of available engines.',
    'KILL',
    '    Kill the current running function.',
    'FLUSH [ASYNC|SYNC]',
    '    Delete all the libraries.',
    '    When called without the optional mode argument, the behavior is determined by the',
    '    lazyfree-lazy-user-flush configuration directive. Valid modes are:',
    '    * ASYNC: Asynchronously flush the libraries.',
    '    * SYNC: Synchronously flush the libraries.',
    'DUMP',
    '    Return a serialized payload representing the current libraries, can be restored '
    'using FUNCTION RESTORE command',
    'RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]',
    '    Restore the libraries represented by the given payload, it is possible to give a '
    'restore policy to',
    '    control how to handle existing libraries (default APPEND):',
    '    * FLUSH: delete all existing libraries.',
    '    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.',
    '    * REPLACE: appends the restored libraries to the existing libraries, On collision, '
    'replace the old',
    '      libraries with the new libraries (notice that even on this option there is a '
    'chance of failure',
    '      in case of functions name collision with another library).',
    'HELP',
    '    Prints this help.',
]


@FUNCTION.subcommand(
    'help',
    2,
    flags='loading stale',
    summary='Show helpful text about the different subcommands',
    **_SUB,
)
def function_help(c: Client, args: list[bytes]) -> Any:
    return FUNCTION_HELP


def _syntax(args: list[bytes]) -> str:
    """addReplySubcommandSyntaxError: the subcommand as it was typed."""
    sub = error_arg(args[1], 128)
    return f"ERR unknown subcommand or wrong number of arguments for '{sub}'. Try FUNCTION HELP."
