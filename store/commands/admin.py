"""Server commands: TIME, DBSIZE, FLUSHDB, FLUSHALL, SWAPDB, LASTSAVE, SAVE, BGSAVE,
SHUTDOWN, and the helpers the other server-group families share.

The 'server' command group is split one family a module: config_cmd.py (CONFIG), info.py
(INFO), introspection.py (COMMAND), debug.py (DEBUG) and this one. The others import from
here the protected-action check (`protected_allowed`) and the table's entries once each
(`unique_commands`); this module imports none of them.

These are how operators and tools look at and steer a running server, and tools are
strict about them: redis-cli reads COMMAND DOCS at start-up, client libraries parse INFO
line by line and CONFIG GET as a map, test suites toggle DEBUG SET-ACTIVE-EXPIRE and match
error strings. So replies follow Redis 7.0 to the byte where a client could notice: INFO's
'# Section' / 'field:value' layout and section selection, CONFIG SET's validate-all-then-
apply order and its three error forms, COMMAND INFO's ten-element entries with key specs,
DEBUG PROTOCOL's sample RESP3 replies.

What is not real here is said so plainly: there is no persistence, so SAVE and BGSAVE only
record the time (LASTSAVE), and memory figures come from the process's resident size.
Statistics are read from where they are kept: connection and byte counters on
`server.stats`, hits, misses and expiries on the keyspace, per-command calls on the
Command entries. CONFIG RESETSTAT clears all three.
"""

from __future__ import annotations

import time
from typing import Any

from ..args import E_SYNTAX, lower
from ..command_table import Command, Family
from ..context import Client
from ..resp import NO_REPLY, OK, RedisError, string2ll

COMMANDS = Family('server')


def as_text(b: bytes) -> str:
    return b.decode('utf-8', 'surrogateescape')


def _is_local(c: Client) -> bool:
    """islocalClient: a Unix socket or a loopback peer."""
    peer = c.transport.get_extra_info('peername') if c.transport is not None else None
    if not isinstance(peer, tuple):
        return True
    return peer[0] in ('127.0.0.1', '::1')


def protected_allowed(c: Client, setting: str) -> bool:
    """allowProtectedAction for enable-debug-command / enable-protected-configs."""
    return setting == 'yes' or (setting == 'local' and _is_local(c))


def unique_commands(server: Any) -> list[Command]:
    """The top-level Command entries, once each (the table is keyed by lower and upper
    case names)."""
    seen: set[int] = set()
    out: list[Command] = []
    for cmd in server.commands.values():
        if id(cmd) not in seen:
            seen.add(id(cmd))
            out.append(cmd)
    return out


# -- keyspace and lifecycle ------------------------------------------------------------------


def _flush_lazy(c: Client, args: list[bytes]) -> bool:
    """getFlushCommandFlags: True for ASYNC (the keys go at once, their memory is freed
    in steps: store/lazyfree.py), False for SYNC, lazyfree-lazy-user-flush without
    either."""
    if len(args) == 2:
        mode = lower(args[1])
        if mode in ('sync', 'async'):
            return mode == 'async'
    if len(args) != 1:
        raise RedisError(E_SYNTAX)
    return bool(c.server.config['lazyfree-lazy-user-flush'])


@COMMANDS.command(
    'flushall',
    -1,
    flags='write',
    categories='@keyspace @write @slow @dangerous',
    tips='request_policy:all_shards response_policy:all_succeeded',
    summary='Remove all keys from all databases',
)
def flushall(c: Client, args: list[bytes]) -> Any:
    c.ks.flushall(_flush_lazy(c, args))
    c.server.persistence.flushed_all()
    return OK


@COMMANDS.command(
    'flushdb',
    -1,
    flags='write',
    categories='@keyspace @write @slow @dangerous',
    tips='request_policy:all_shards response_policy:all_succeeded',
    summary='Remove all keys from the current database',
)
def flushdb(c: Client, args: list[bytes]) -> Any:
    c.ks.flushdb(c.db, _flush_lazy(c, args))
    return OK


@COMMANDS.command(
    'dbsize',
    1,
    flags='readonly fast',
    categories='@keyspace @read @fast',
    tips='request_policy:all_shards response_policy:agg_sum',
    summary='Return the number of keys in the selected database',
)
def dbsize(c: Client, args: list[bytes]) -> Any:
    return c.ks.dbsize(c.db)


def _db_index(b: bytes, msg: str) -> int:
    n = string2ll(b)
    if n is None or not -(2**31) <= n < 2**31:
        raise RedisError(msg)
    return n


@COMMANDS.command(
    'swapdb',
    3,
    flags='write fast',
    categories='@keyspace @write @fast @dangerous',
    since='4.0.0',
    summary='Swaps two Redis databases',
)
def swapdb(c: Client, args: list[bytes]) -> Any:
    if c.server.cluster is not None:  # a cluster node has database 0 only
        raise RedisError('ERR SWAPDB is not allowed in cluster mode')
    a = _db_index(args[1], 'ERR invalid first DB index')
    b = _db_index(args[2], 'ERR invalid second DB index')
    databases = c.ks.databases
    if not (0 <= a < databases and 0 <= b < databases):
        raise RedisError('ERR DB index is out of range')
    if a != b:
        c.ks.swapdb(a, b)
    return OK


@COMMANDS.command(
    'time',
    1,
    flags='loading stale fast',
    categories='@fast',
    tips='nondeterministic_output',
    since='2.6.0',
    summary='Return the current server time',
)
def time_(c: Client, args: list[bytes]) -> Any:
    us = time.time_ns() // 1000
    return [b'%d' % (us // 1_000_000), b'%d' % (us % 1_000_000)]


@COMMANDS.command(
    'lastsave',
    1,
    flags='loading stale fast',
    categories='@admin @fast @dangerous',
    tips='nondeterministic_output',
    summary='Get the UNIX time stamp of the last successful save to disk',
)
def lastsave(c: Client, args: list[bytes]) -> Any:
    return c.server.lastsave


@COMMANDS.command(
    'save',
    1,
    flags='admin noscript no_async_loading no_multi',
    categories='@admin @slow @dangerous',
    summary='Synchronously save the dataset to disk',
)
def save(c: Client, args: list[bytes]) -> Any:
    c.server.persistence.save()
    return OK


@COMMANDS.command(
    'bgsave',
    -1,
    flags='admin noscript no_async_loading',
    categories='@admin @slow @dangerous',
    summary='Asynchronously save the dataset to disk',
)
def bgsave(c: Client, args: list[bytes]) -> Any:
    if len(args) > 2 or (len(args) == 2 and lower(args[1]) != 'schedule'):
        raise RedisError(E_SYNTAX)
    return c.server.persistence.bgsave(len(args) == 2, c.in_exec)


@COMMANDS.command(
    'bgrewriteaof',
    1,
    flags='admin noscript no_async_loading',
    categories='@admin @slow @dangerous',
    summary='Asynchronously rewrite the append-only file',
)
def bgrewriteaof(c: Client, args: list[bytes]) -> Any:
    return c.server.persistence.aof.rewrite()


@COMMANDS.command(
    'shutdown',
    -1,
    flags='admin noscript loading stale no_multi allow_busy',
    categories='@admin @slow @dangerous',
    summary='Synchronously save the dataset to disk and then shut down the server',
)
def shutdown(c: Client, args: list[bytes]) -> Any:
    flags: set[str] = set()
    abort = False
    for a in args[1:]:
        opt = lower(a)
        if opt in ('nosave', 'save', 'now', 'force'):
            flags.add(opt)
        elif opt == 'abort':
            abort = True
        else:
            raise RedisError(E_SYNTAX)
    if (abort and flags) or {'nosave', 'save'} <= flags:
        raise RedisError(E_SYNTAX)
    server = c.server
    if abort:
        if not server.shutdown.abort():
            raise RedisError('ERR No shutdown in progress.')
        return OK
    if 'now' not in flags and not server.blocking.may_block(c):
        raise RedisError("ERR SHUTDOWN without NOW or ABORT isn't allowed for DENY BLOCKING client")
    busy = server.busy
    if busy.run is not None:  # a script past busy-reply-threshold: only NOSAVE stops it
        if 'nosave' not in flags:
            raise RedisError(busy.message())
        busy.run.killed = 'shutdown'
    # the client blocks: the connection closes when the server exits, or it gets an error
    # if the shutdown fails now or later (store/shutdown.py)
    server.shutdown.command(c, flags)
    return NO_REPLY
