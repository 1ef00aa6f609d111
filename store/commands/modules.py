"""MODULE as Redis 7.0 answers it with no modules loaded, which is what this server always
has: tools list modules before using one, so MODULE LIST is empty and MODULE LOAD fails as it
fails in Redis for a library it cannot load, after the `enable-module-command` check
(module.c)."""

from typing import Any

from ..command_table import Family
from ..context import Client
from ..resp import RedisError
from .admin import protected_allowed

COMMANDS = Family('server')

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
def module_help(c: Client, args: list[bytes]) -> Any:
    return MODULE_HELP


@MODULE.subcommand(
    'list',
    2,
    flags='admin noscript',
    categories='@admin @slow @dangerous',
    tips='nondeterministic_output_order',
    summary='List all modules loaded by the server',
)
def module_list(c: Client, args: list[bytes]) -> Any:
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
def module_load(c: Client, args: list[bytes]) -> Any:
    """moduleLoad of the shared library at args[2]: a Python server cannot run one."""
    _check_allowed(c)
    name = args[2].decode('utf-8', 'replace')
    c.server.log(f'Module {name} failed to load: this server cannot load native modules', '#')
    raise RedisError('ERR Error loading the extension. Please check the server logs.')


def _check_allowed(c: Client) -> None:
    if not protected_allowed(c, c.server.config['enable-module-command']):
        raise RedisError(E_MODULE_DISABLED)


@MODULE.subcommand(
    'unload',
    3,
    flags='admin noscript no_async_loading',
    categories='@admin @slow @dangerous',
    summary='Unload a module',
)
def module_unload(c: Client, args: list[bytes]) -> Any:
    _check_allowed(c)
    raise RedisError('ERR Error unloading module: no such module with that name')
