"""CONFIG: GET, SET, RESETSTAT, REWRITE and HELP, and the CONFIG REWRITE file writer.

Named config_cmd.py because store/config.py is the parameter table these commands read and
write. CONFIG GET replies with a map, CONFIG SET checks every name and value before it
applies any and fails in Redis 7.0's three forms, CONFIG RESETSTAT clears the counters that
INFO reads (server, keyspace and per-command ones), and CONFIG REWRITE rewrites the config
file in place as config.c's rewriteConfig does.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .. import tls
from ..args import E_SYNTAX
from ..command_table import Family
from ..config import Config
from ..config_params import PARAMS, TABLE
from ..config_values import ConfigError, Param, lower
from ..context import Client
from ..glob import glob_match
from ..listen import move
from ..request_parser import split_args
from ..resp import OK, Map, RedisError
from .admin import as_text, protected_allowed

if TYPE_CHECKING:
    import ssl

# -- CONFIG -------------------------------------------------------------------------------

CONFIG_HELP = [
    'CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'GET <pattern>',
    '    Return parameters matching the glob-like <pattern> and their values.',
    'SET <directive> <value>',
    '    Set the configuration <directive> to <value>.',
    'RESETSTAT',
    '    Reset statistics reported by the INFO command.',
    'REWRITE',
    '    Rewrite the configuration file.',
    'HELP',
    '    Prints this help.',
]


COMMANDS = Family('server', since='2.0.0')


CONFIG = COMMANDS.container(
    'config', -2, categories='@slow', summary='A container for server configuration commands'
)


@CONFIG.subcommand(
    'get',
    -3,
    flags='admin noscript loading stale',
    categories='@admin @slow @dangerous',
    summary='Get the values of configuration parameters',
)
def config_get(c: Client, args: list[bytes]) -> Any:
    """Exact names are looked up as typed (an alias is answered under the alias); glob
    patterns match every name and alias case-insensitively, except hidden parameters (the
    test-only ones), which answer only to their exact name. Each name appears once."""
    config = c.server.config
    matches: dict[str, tuple[str, str]] = {}  # lower-case name -> (name as replied, canonical name)
    for pattern in args[2:]:
        text = as_text(pattern)
        if not any(ch in text for ch in '[*?'):
            param = TABLE.get(lower(text))
            if param is not None and lower(text) not in matches:
                matches[lower(text)] = (text, param.name)
            continue
        for name, param in TABLE.items():
            if param.hidden or name in matches:
                continue
            if glob_match(pattern, name.encode(), nocase=True):
                matches[name] = (name, param.name)
    return Map(
        [
            (
                shown.encode('utf-8', 'surrogateescape'),
                config.render(name).encode('utf-8', 'surrogateescape'),
            )
            for shown, name in matches.values()
        ]
    )


def _set_failed(name: str, reason: str | ConfigError) -> RedisError:
    return RedisError(f"ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}")


def _apply_failed(server: Any, name: str, reason: str) -> RedisError:
    """An apply function failed: Redis logs it, and restores (here: never stored) the
    values."""
    server.log(
        f'Failed applying new configuration. Possibly related to new {name} setting. '
        'Restoring previous settings.',
        '#',
    )
    return _set_failed(name, reason)


@CONFIG.subcommand(
    'set',
    -4,
    flags='admin noscript loading stale',
    categories='@admin @slow @dangerous',
    tips='request_policy:all_nodes response_policy:all_succeeded',
    summary='Set configuration parameters to the given values',
)
def config_set(c: Client, args: list[bytes]) -> Any:
    """Check every name (unknown, immutable, protected, duplicate), then parse every value,
    then run what Redis's apply functions would change or refuse (TLS), and only then store
    them all and apply them: a failure changes nothing. An alias and its parameter are two
    names, so setting both is not a duplicate, as in Redis. Errors name the parameter in
    lower case as looked up, except the name checks, which quote it as typed."""
    if len(args) % 2:
        raise RedisError(E_SYNTAX)
    server = c.server
    config = server.config
    if server.loading:
        _deny_while_loading(c, args)
    chosen: list[tuple[str, Param, str]] = []
    seen: set[str] = set()
    for i in range(2, len(args), 2):
        name = as_text(args[i])
        key = lower(name)
        param = TABLE.get(key)
        if param is None:
            raise RedisError(f"ERR Unknown option or number of arguments for CONFIG SET - '{name}'")
        if not param.mutable:
            raise _set_failed(name, "can't set immutable config")
        if param.protected and not protected_allowed(c, config['enable-protected-configs']):
            raise _set_failed(name, "can't set protected config")
        if key in seen:
            raise _set_failed(name, 'duplicate parameter')
        seen.add(key)
        chosen.append((key, param, as_text(args[i + 1])))
    new: list[tuple[str, Param, Any]] = []
    for key, param, value in chosen:
        try:
            parsed = param.parse_set(value, config.values[param.name])
        except ConfigError as e:
            raise _set_failed(key, e) from None
        new.append((key, param, parsed))
    for i, (key, param, parsed) in enumerate(new):
        if param.on_set is not None:
            try:
                new[i] = (key, param, param.on_set(parsed, config))
            except ConfigError as e:
                raise _set_failed(key, e) from None
    contexts = _configure_tls(server, new)
    _move_listeners(server, new)
    for _, param, parsed in new:
        config.values[param.name] = parsed
    if contexts is not None:
        server.tls.install(contexts, config['tls-auth-clients'])
    if any(param.name == 'port' for _, param, _ in new):
        config.values['port'] = server.port  # port 0: the one the system chose
    for _, param, _ in new:
        server.apply_config(param.name)
    return OK


# DENY_LOADING_CONFIG: what CONFIG SET refuses while the data set loads.
_DENY_LOADING = frozenset(('appendonly', 'repl-diskless-load', 'dir'))


def _deny_while_loading(c: Client, args: list[bytes]) -> None:
    """While loading, a parameter Redis marks DENY_LOADING_CONFIG fails the whole CONFIG
    SET with -LOADING, ahead of any other error (the loading error has precedence), unless
    it is refused as protected first."""
    allowed: bool | None = None
    for i in range(2, len(args), 2):
        param = TABLE.get(lower(as_text(args[i])))
        if param is None or param.name not in _DENY_LOADING:
            continue
        if param.protected:
            if allowed is None:
                allowed = protected_allowed(c, c.server.config['enable-protected-configs'])
            if not allowed:
                continue
        raise RedisError('LOADING Redis is loading the dataset in memory')


def _move_listeners(server: Any, new: list[tuple[str, Param, Any]]) -> None:
    """The apply functions that can fail, run before anything is stored: a new port, TLS
    port or bind address listens now, or the whole CONFIG SET fails (updatePort,
    applyTLSPort, applyBind)."""
    listen = [(key, param.name, parsed) for key, param, parsed in new if param.name in _LISTEN]
    if not listen or server.loop is None:
        return
    config = server.config
    values = {name: parsed for _, name, parsed in listen}
    bind = values.get('bind', config['bind'])
    port = values.get('port', server.port)
    tls_port = values.get('tls-port', config['tls-port'])
    if (bind, port, tls_port) == (config['bind'], server.port, config['tls-port']):
        return
    try:
        move(server, bind, port, tls_port)
    except OSError:
        key, name, _ = listen[0]
        raise _apply_failed(server, key, _LISTEN[name]) from None


def _configure_tls(
    server: Any, new: list[tuple[str, Param, Any]]
) -> tuple[ssl.SSLContext, ssl.SSLContext] | None:
    """applyTlsCfg, before anything is stored: the TLS contexts the new values make (None
    when no TLS parameter changed, or TLS stays off); a failure fails the whole CONFIG
    SET, the running ones kept."""
    config = server.config
    changed = {
        param.name: parsed
        for _, param, parsed in new
        if param.name.startswith('tls-') and parsed != config.values[param.name]
    }
    changed.pop('tls-auth-clients', None)  # read per connection (apply_config)
    if not changed or server.loop is None:
        return None
    values = {**config.values, **changed}
    key = next(key for key, param, _ in new if param.name in changed)
    contexts: tuple[ssl.SSLContext, ssl.SSLContext] | None = None
    if tls.enabled(values) or ('tls-port' in changed and server.tls.listening is None):
        try:
            contexts = tls.configure(values, server.log)
        except tls.TlsError:
            raise _apply_failed(server, key, _TLS_FAILED) from None
    return contexts


_TLS_FAILED = 'Unable to update TLS configuration. Check server logs.'
_LISTEN = {
    'port': 'Unable to listen on this port. Check server logs.',
    'tls-port': 'Unable to listen on this port. Check server logs.',
    'bind': 'Failed to bind to specified addresses.',
}


def reset_stats(server: Any) -> None:
    """CONFIG RESETSTAT: server counters, keyspace counters, eviction and replication
    counters, per-command counters (Redis's resetServerStats)."""
    server.stats.reset()
    server.keyspace.reset_stats()
    server.evictor.reset_stats()
    server.pubsub.reset_stats()
    server.replication.reset_stats()
    server.reply_buffers.shrinks = server.reply_buffers.expands = 0
    for cmd in server.every_command:
        cmd.reset_stats()
    sampler = getattr(server, 'ops_sampler', None)
    if sampler is not None:
        sampler.reset()


@CONFIG.subcommand(
    'resetstat',
    2,
    flags='admin noscript loading stale',
    categories='@admin @slow @dangerous',
    summary='Reset the stats returned by INFO',
)
def config_resetstat(c: Client, args: list[bytes]) -> Any:
    reset_stats(c.server)
    return OK


@CONFIG.subcommand(
    'rewrite',
    2,
    flags='admin noscript loading stale',
    categories='@admin @slow @dangerous',
    since='2.8.0',
    summary='Rewrite the configuration file with the in memory configuration',
)
def config_rewrite(c: Client, args: list[bytes]) -> Any:
    server = c.server
    if not server.config.file:
        raise RedisError('ERR The server is running without a config file')
    try:
        # the users, unless an ACL file keeps them (then their lines go: rewriteConfigUserOption)
        users = [] if server.config['aclfile'] else server.acl.listing()
        rewrite_config(server.config, server.config.file, users)
    except OSError as e:
        server.log(f'CONFIG REWRITE failed: {e.strerror or e}', '#')
        raise RedisError(f'ERR Rewriting config file: {e.strerror or e}') from None
    server.log('CONFIG REWRITE executed with success.')
    return OK


@CONFIG.subcommand(
    'help',
    2,
    flags='loading stale',
    categories='@slow',
    since='5.0.0',
    summary='Show helpful text about the different subcommands',
)
def config_help(c: Client, args: list[bytes]) -> Any:
    return CONFIG_HELP


# -- CONFIG REWRITE (config.c's rewriteConfig) --------------------------------------------

SIGNATURE = '# Generated by CONFIG REWRITE'
# Directives the file may hold that are not parameters; their lines are kept as they are.
_KEPT_DIRECTIVES = ('include', 'rename-command', 'user', 'loadmodule', 'sentinel')


def format_memory(n: int) -> str:
    """rewriteConfigFormatMemory: 1gb, 100mb, 4kb or plain bytes."""
    for unit, size in (('gb', 1024**3), ('mb', 1024**2), ('kb', 1024)):
        if n and n % size == 0:
            return f'{n // size}{unit}'
    return str(n)


def quote(s: str) -> str:
    """sdscatrepr: a double-quoted string with C escapes."""
    out = ['"']
    for ch in s.encode('utf-8', 'surrogateescape'):
        c = chr(ch)
        if c in '\\"':
            out.append('\\' + c)
        elif c in '\n\r\t\a\b':
            out.append({'\n': '\\n', '\r': '\\r', '\t': '\\t', '\a': '\\a', '\b': '\\b'}[c])
        elif 32 <= ch < 127:
            out.append(c)
        else:
            out.append(f'\\x{ch:02x}')
    out.append('"')
    return ''.join(out)


_QUOTED = ('notify-keyspace-events', 'keyevent-journal-events', 'dir')


def _rewrite_lines(config: Config, param: Param) -> list[tuple[str, bool]]:
    """The lines one parameter rewrites to, each with whether it must be written even
    when the old file does not mention the parameter (its value is not the default)."""
    name, value = param.name, config.values[param.name]
    force = value != param.default
    if name == 'save':
        words = value.split()
        if not words:
            return [('save ""', True)]
        return [(f'save {words[i]} {words[i + 1]}', True) for i in range(0, len(words), 2)]
    if name == 'replicaof' and not value:
        return []  # not a replica: any replicaof line goes
    if name == 'client-output-buffer-limit':
        return [
            (
                f'{name} {"replica" if cls == "slave" else cls} '
                f'{format_memory(hard)} {format_memory(soft)} {secs}',
                (hard, soft, secs) != param.default[cls],
            )
            for cls, (hard, soft, secs) in sorted(
                value.items(), key=lambda kv: ('normal', 'slave', 'pubsub').index(kv[0])
            )
        ]
    if param.kind == 'mem' or (param.kind == 'mem%' and value >= 0):
        text = format_memory(value)
    elif param.kind == 'str' or name in _QUOTED:
        text = quote(config.render(name))
    else:  # yes/no, enum names, numbers, percent values, octal, words
        text = config.render(name) or '""'
    return [(f'{name} {text}', force)]


def rewrite_config(
    config: Config, path: str, users: Iterable[str] = (), force_all: bool = False
) -> None:
    """Keep the file's comments, blank lines and unknown directives; replace each
    parameter's lines in place, then the `user` lines with `users`; append parameters
    that differ from their default (every parameter with `force_all`: DEBUG
    CONFIG-REWRITE-FORCE-ALL) and users beyond the file's lines after a
    '# Generated by CONFIG REWRITE' line; drop leftover lines of rewritten parameters."""
    try:
        with open(path, encoding='utf-8', errors='surrogateescape') as f:
            old = f.read().split('\n')
        if old[-1] == '':
            old.pop()  # the newline ending the last line
    except FileNotFoundError:
        old = []
    lines: list[str] = []
    positions: dict[str, list[int]] = {}  # canonical option name -> indexes in `lines`
    has_signature = False
    for raw in old:
        line = raw.strip('\r\n\t ')
        if not line or line.startswith('#'):
            has_signature = has_signature or line == SIGNATURE
            lines.append(line)
            continue
        argv = split_args(line.encode('utf-8', 'surrogateescape'))
        name = as_text(argv[0]).lower() if argv else ''
        if name not in TABLE and name not in _KEPT_DIRECTIVES:
            lines.append('# ??? ' + line)
            continue
        name = TABLE[name].name if name in TABLE else name
        positions.setdefault(name, []).append(len(lines))
        lines.append(line)
    rewritten = [(param.name, _rewrite_lines(config, param)) for param in PARAMS]
    rewritten.append(('user', [(line, True) for line in users]))
    for name, texts in rewritten:
        slots = positions.pop(name, [])
        for text, force in texts:
            if slots:
                lines[slots.pop(0)] = text
            elif force or force_all:
                if not has_signature:
                    lines.append(SIGNATURE)
                    has_signature = True
                lines.append(text)
        for i in slots:  # the option now takes fewer lines than the file had
            lines[i] = ''
    content: list[str] = []
    for line in lines:
        if line == '' and content and content[-1] == '':
            continue  # every run of blank lines becomes one
        content.append(line)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix='.config-rewrite-', dir=directory)
    try:
        with os.fdopen(fd, 'w', encoding='utf-8', errors='surrogateescape') as f:
            f.write(''.join(line + '\n' for line in content))
            f.flush()
            os.fsync(f.fileno())
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# -- the command table --------------------------------------------------------------------

_CONFIG_FLAGS = 'admin noscript loading stale'
