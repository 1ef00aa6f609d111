"""ROLE, WAIT, MODULE and REPLICAOF as Redis 7.0 answers them on a standalone master with
no replicas and no modules, which is what this server always is.

Clients ask these to find out where they are: Sentinel-aware clients check ROLE, some
libraries WAIT for replicas after a write, tools list modules before using one. So the
answers are Redis's own for that setup (replication.c, module.c), not errors: ROLE is a
master at offset 0 without replicas; WAIT with replicas to wait for blocks until its
timeout and answers 0 acknowledgements (at once inside MULTI, as Redis's
CLIENT_DENY_BLOCKING does); MODULE LIST is empty and MODULE LOAD fails as it fails in
Redis for a library it cannot load, after the `enable-module-command` check. REPLICAOF
(SLAVEOF) NO ONE is +OK, as on any master; given a master's address it refuses, after
Redis's port check, since this server does not replicate.
"""

from ..args import int_arg
from ..command_table import Family
from ..resp import NO_REPLY, OK, RedisError, string2ll
from .admin import protected_allowed
from .aggregates import FOREVER_MS

COMMANDS = Family('server')

E_TIMEOUT = 'ERR timeout is not an integer or out of range'
E_MODULE_DISABLED = (
    'ERR MODULE command not allowed. If the enable-module-command option is set to "local", '
    'you can run it from a local connection, otherwise you need to set this option in the '
    'configuration file, and then restart the server.'
)
MODULE_HELP = [
    'MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'LIST',
    '    Return a list of loaded modules.',
    'LOAD <path> [<arg> ...]',
    '    Load a module library from <path>, passing to it any optional arguments.',
    'LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]',
    '    Load a module library from <path>, while passing it module configurations and '
    'optional arguments.',
    'UNLOAD <name>',
    '    Unload a module.',
    'HELP',
    '    Prints this help.',
]


@COMMANDS.command(
    'role',
    1,
    flags='noscript loading stale fast',
    categories='@admin @fast @dangerous',
    since='2.8.12',
    summary='Return the role of the instance in the context of replication',
)
def role(c, args):
    return [b'master', 0, []]  # the replication offset, the replicas


E_NO_REPLICATION = (
    'ERR This server does not replicate: it is always a master, so REPLICAOF and SLAVEOF '
    'take NO ONE only'
)
REPLICAOF = dict(
    flags='admin noscript stale no_async_loading',
    categories='@admin @slow @dangerous',
    summary='Make the server a replica of another instance, or promote it as master.',
)


def _replicaof(c, args):
    """replicaofCommand: NO ONE on a master is +OK; a master's address is checked as
    Redis checks it, then refused (there is no replication here)."""
    if args[1].lower() == b'no' and args[2].lower() == b'one':
        return OK
    port = string2ll(args[2])
    if port is None or not 0 <= port <= 65535:
        raise RedisError('ERR Invalid master port')
    raise RedisError(E_NO_REPLICATION)


@COMMANDS.command('replicaof', 3, since='5.0.0', **REPLICAOF)
def replicaof(c, args):
    return _replicaof(c, args)


@COMMANDS.command('slaveof', 3, since='1.0.0', **REPLICAOF)
def slaveof(c, args):
    return _replicaof(c, args)


@COMMANDS.command(
    'wait',
    3,
    flags='noscript',
    categories='@slow @connection',
    tips='request_policy:all_shards response_policy:agg_min',
    group='generic',
    since='3.0.0',
    summary='Wait for the synchronous replication of all the write commands sent in the '
    'context of the current connection',
)
def wait(c, args):
    numreplicas = int_arg(args[1])
    ms = string2ll(args[2])  # getTimeoutFromObjectOrReply(UNIT_MILLISECONDS)
    if ms is None:
        raise RedisError(E_TIMEOUT)
    if ms < 0:
        raise RedisError('ERR timeout is negative')
    blocking = c.server.blocking
    if numreplicas <= 0 or not blocking.may_block(c):
        return 0  # as many replicas acknowledged as asked for, or it may not block
    # No replica will acknowledge: the wait ends by its timeout (or CLIENT UNBLOCK) with 0.
    blocking.block(c, [], _no_key, 0 if ms >= FOREVER_MS else ms / 1000, 0)
    return NO_REPLY


def _no_key(db, key):
    return None


MODULE = COMMANDS.container(
    'module',
    -2,
    categories='@slow',
    since='4.0.0',
    summary='A container for module commands',
)


@MODULE.subcommand(
    'help',
    2,
    flags='loading stale',
    categories='@slow',
    since='5.0.0',
    summary='Show helpful text about the different subcommands',
)
def module_help(c, args):
    return MODULE_HELP


@MODULE.subcommand(
    'list',
    2,
    flags='admin noscript',
    categories='@admin @slow @dangerous',
    tips='nondeterministic_output_order',
    summary='List all modules loaded by the server',
)
def module_list(c, args):
    return []


@MODULE.subcommand(
    'load',
    -3,
    flags='admin noscript no_async_loading',
    categories='@admin @slow @dangerous',
    summary='Load a module',
)
@MODULE.subcommand(
    'loadex',
    -3,
    flags='admin noscript no_async_loading',
    categories='@admin @slow @dangerous',
    since='7.0.0',
    summary='Load a module with extended parameters',
)
def module_load(c, args):
    """moduleLoad of the shared library at args[2]: a Python server cannot run one."""
    _check_allowed(c)
    name = args[2].decode('utf-8', 'replace')
    c.server.log(f'Module {name} failed to load: this server cannot load native modules', '#')
    raise RedisError('ERR Error loading the extension. Please check the server logs.')


def _check_allowed(c):
    if not protected_allowed(c, c.server.config['enable-module-command']):
        raise RedisError(E_MODULE_DISABLED)


@MODULE.subcommand(
    'unload',
    3,
    flags='admin noscript no_async_loading',
    categories='@admin @slow @dangerous',
    summary='Unload a module',
)
def module_unload(c, args):
    _check_allowed(c)
    raise RedisError('ERR Error unloading module: no such module with that name')
