"""EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (Redis 7.0's eval.c). The Lua state,
the conversions and the script cache are in store/scripting/; this module reads the
arguments and answers."""

from __future__ import annotations

from typing import Any

from ..args import int_arg, lower
from ..command_table import Family, numkeys_keys
from ..context import Client
from ..resp import OK, RedisError, small_int
from ..scripting.run_context import ScriptRun, check_numkeys

COMMANDS = Family('scripting', since='2.6.0')

# What EVAL, EVALSHA, FCALL and their _RO forms declare alike; their key specs are
# Redis's, notes included (EVALSHA's have none: they are written out there).
CALL = dict(keys=(0, 0, 0), categories='@slow @scripting', getkeys=numkeys_keys(2))
CALL_FLAGS = 'noscript stale skip_monitor no_mandatory_keys movablekeys'
RW_KEYS = (
    'RW access update; index 2; keynum 0 1 1; '
    'We cannot tell how the keys will be used so we assume the worst, RW and UPDATE'
)
RO_KEYS = (
    'RO access; index 2; keynum 0 1 1; '
    'We cannot tell how the keys will be used so we assume the worst, RO and ACCESS'
)
E_NOSCRIPT = RedisError('NOSCRIPT No matching script. Please use EVAL.')


def _eval(c: Client, args: list[bytes], ro: bool) -> Any:
    """EVAL and EVAL_RO: numkeys read and checked before the script is compiled or looked
    up (evalGenericCommand), the run's checks in ScriptRun (scriptPrepareForRun)."""
    numkeys = check_numkeys(args, int_arg(args[2]))
    scripts = c.server.scripts
    script = scripts.load(args[1])
    run = ScriptRun(c.server, script.sha, c, script.flags, ro, True)
    if scripts.ldb.wants(c):  # SCRIPT DEBUG YES|SYNC: a debugging session (ldb.py)
        return scripts.ldb.run(
            c, args[1], lambda: scripts.engine.execute(run, script.function, numkeys, args)
        )
    return scripts.engine.execute(run, script.function, numkeys, args)


@COMMANDS.command(
    'eval',
    -3,
    flags=CALL_FLAGS,
    summary='Execute a Lua script server side',
    key_specs=RW_KEYS,
    **CALL,
)
def eval_(c: Client, args: list[bytes]) -> Any:
    return _eval(c, args, False)


@COMMANDS.command(
    'evalsha',
    -3,
    flags=CALL_FLAGS,
    summary='Execute a Lua script server side',
    key_specs='RW access update; index 2; keynum 0 1 1',
    **CALL,
)
def evalsha(c: Client, args: list[bytes], ro: bool = False) -> Any:
    """As _eval, with the cached script; per request, so a small numkeys in range is read
    with one dict look-up (bench/instructions.py counts it)."""
    numkeys = small_int(args[2])
    if numkeys is None or not 0 <= numkeys <= len(args) - 3:
        numkeys = check_numkeys(args, int_arg(args[2]))
    scripts = c.server.scripts
    script = scripts.cache.get(args[1]) or scripts.get(args[1])  # (as loaded, mostly)
    if script is None:
        raise E_NOSCRIPT
    run = ScriptRun(c.server, script.sha, c, script.flags, ro, True)
    return scripts.engine.execute(run, script.function, numkeys, args)


@COMMANDS.command(
    'eval_ro',
    -3,
    flags='readonly ' + CALL_FLAGS,
    summary='Execute a read-only Lua script server side',
    since='7.0.0',
    key_specs=RO_KEYS,
    **CALL,
)
def eval_ro(c: Client, args: list[bytes]) -> Any:
    return _eval(c, args, True)


@COMMANDS.command(
    'evalsha_ro',
    -3,
    flags='readonly ' + CALL_FLAGS,
    summary='Execute a read-only Lua script server side',
    since='7.0.0',
    key_specs='RO access; index 2; keynum 0 1 1',
    **CALL,
)
def evalsha_ro(c: Client, args: list[bytes]) -> Any:
    return evalsha(c, args, True)


SCRIPT = COMMANDS.container(
    'script', categories='@slow', summary='A container for Lua scripts management commands'
)
_SCRIPT = dict(categories='@slow @scripting')


@SCRIPT.subcommand(
    'flush',
    -2,
    flags='noscript',
    tips='request_policy:all_nodes response_policy:all_succeeded',
    summary='Remove all the scripts from the script cache.',
    **_SCRIPT,
)
def script_flush(c: Client, args: list[bytes]) -> Any:
    if len(args) > 3 or (len(args) == 3 and lower(args[2]) not in ('sync', 'async')):
        raise RedisError('ERR SCRIPT FLUSH only support SYNC|ASYNC option')
    c.server.scripts.flush()
    return OK


@SCRIPT.subcommand(
    'exists',
    -3,
    flags='noscript',
    tips='request_policy:all_shards response_policy:agg_logical_and',
    summary='Check existence of scripts in the script cache.',
    **_SCRIPT,
)
def script_exists(c: Client, args: list[bytes]) -> Any:
    scripts = c.server.scripts
    return [int(scripts.get(sha) is not None) for sha in args[2:]]


@SCRIPT.subcommand(
    'load',
    3,
    flags='noscript stale',
    tips='request_policy:all_nodes response_policy:all_succeeded',
    summary='Load the specified Lua script into the script cache.',
    **_SCRIPT,
)
def script_load(c: Client, args: list[bytes]) -> Any:
    return c.server.scripts.load(args[2]).sha


@SCRIPT.subcommand(
    'debug',
    3,
    flags='noscript',
    since='3.2.0',
    summary='Set the debug mode for executed scripts.',
    **_SCRIPT,
)
def script_debug(c: Client, args: list[bytes]) -> Any:
    if c.multi is not None:
        raise RedisError('ERR SCRIPT DEBUG must be called outside MULTI')
    mode = lower(args[2])
    ldb = c.server.scripts.ldb
    if mode == 'no':
        ldb.disable(c)
        return OK
    if mode in ('yes', 'sync'):
        ldb.enable(c, mode)  # the next EVAL of `c` is a debugging session (ldb.py)
        return OK
    raise RedisError('ERR Use SCRIPT DEBUG YES/SYNC/NO')


@SCRIPT.subcommand(
    'kill',
    2,
    flags='noscript allow_busy',
    tips='request_policy:all_shards response_policy:one_succeeded',
    summary='Kill the script currently in execution.',
    **_SCRIPT,
)
def script_kill(c: Client, args: list[bytes]) -> Any:
    return kill(c, is_eval=True)


def kill(c: Client, is_eval: bool) -> str:
    """scriptKill (SCRIPT KILL, FUNCTION KILL): ask the running script to stop; one that
    has written cannot be stopped without losing atomicity."""
    run = c.server.busy.run
    if run is None:
        raise RedisError('NOTBUSY No scripts in execution right now.')
    if run.written:
        raise RedisError(
            'UNKILLABLE Sorry the script already executed write commands against the '
            'dataset. You can either wait the script termination or kill the server in a '
            'hard way using the SHUTDOWN NOSAVE command.'
        )
    if run.is_eval != is_eval:
        raise RedisError('NOTBUSY No scripts in execution right now.')
    run.killed = 'kill'
    return OK


SCRIPT_HELP = [
    'SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'DEBUG (YES|SYNC|NO)',
    '    Set the debug mode for subsequent scripts executed.',
    'EXISTS <sha1> [<sha1> ...]',
    '    Return information about the existence of the scripts in the script cache.',
    'FLUSH [ASYNC|SYNC]',
    '    Flush the Lua scripts cache. Very dangerous on replicas.',
    '    When called without the optional mode argument, the behavior is determined by the',
    '    lazyfree-lazy-user-flush configuration directive. Valid modes are:',
    '    * ASYNC: Asynchronously flush the scripts cache.',
    '    * SYNC: Synchronously flush the scripts cache.',
    'KILL',
    '    Kill the currently executing Lua script.',
    'LOAD <script>',
    '    Load a script into the scripts cache without executing it.',
    'HELP',
    '    Prints this help.',
]


@SCRIPT.subcommand(
    'help',
    2,
    flags='loading stale',
    since='5.0.0',
    summary='Show helpful text about the different subcommands',
    **_SCRIPT,
)
def script_help(c: Client, args: list[bytes]) -> Any:
    return SCRIPT_HELP
