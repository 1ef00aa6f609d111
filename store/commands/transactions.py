"""MULTI, EXEC, DISCARD, WATCH, UNWATCH.

MULTI switches the connection to queueing (connection.py queues every command but these);
EXEC runs the queue atomically, which in a single-threaded server means without letting
another client in between. WATCH registers the connection on the keyspace's watcher map;
any write to a watched key sets `dirty_cas` and EXEC then answers with a null array. A key
already expired when WATCHed is marked STALE in `watched_deadlines` (Redis 7.0's
wk->expired): its deletion is no change, and it does not fail EXEC as expired
(Connection.key_modified, _watched_key_expired).

EXEC reads deadlines against one clock reading, taken as it starts (store/clock.py's
freeze), as Redis's call() caches the time for the commands nested in it: a key that is
live for the transaction's first command is live for all of them, even across a DEBUG
SLEEP.
"""

from typing import Any

from .. import clock
from ..clock import now_ms
from ..command_table import Command, Family
from ..context import Client
from ..resp import NULL_ARRAY, OK, RedisError

COMMANDS = Family('transactions')

STALE = -1  # watched_deadlines' mark of a key already expired when it was WATCHed


@COMMANDS.command(
    'multi',
    1,
    flags='noscript loading stale fast allow_busy',
    categories='@fast @transaction',
    summary='Mark the start of a transaction block',
    since='1.2.0',
)
def multi(c: Client, args: list[bytes]) -> Any:
    if c.multi is not None:
        raise RedisError('ERR MULTI calls can not be nested')
    c.multi = []
    c.multi_error = False
    c.update_gate()
    return OK


@COMMANDS.command(
    'exec',
    1,
    flags='noscript loading stale skip_slowlog',
    categories='@slow @transaction',
    summary='Execute all commands issued after MULTI',
    since='1.2.0',
)
def exec_(c: Client, args: list[bytes]) -> Any:
    if c.multi is None:
        raise RedisError('ERR EXEC without MULTI')
    queued, failed = c.multi, c.multi_error
    if failed:
        c.end_multi()
        raise RedisError('EXECABORT Transaction discarded because of previous errors.')
    dirty = c.dirty_cas or _watched_key_expired(c)
    c.end_multi()
    if dirty:
        return NULL_ARRAY
    c.in_exec = True
    aof = c.server.persistence.aof  # what EXEC ran is one unit (MULTI ... EXEC)
    propagating = aof.propagating
    if propagating:
        aof.begin()
    frozen = clock.freeze_now()
    try:
        if not c.acl_rules:
            return [c.call(cmd, a) for cmd, a in queued]
        return [_run_queued(c, cmd, a, c.server.acl) for cmd, a in queued]
    finally:
        clock.freeze(frozen)
        c.in_exec = False
        if propagating:
            aof.end()


def _run_queued(c: Client, cmd: Command, args: list[bytes], acl: Any) -> Any:
    """One queued command of a user with ACL rules, its permissions checked again first:
    they may have changed since it was queued."""
    denied = acl.deny_queued(c, cmd, args)
    if denied is not None:
        c.server.stats.error(denied)
        return RedisError(denied)
    return c.call(cmd, args)


def _watched_key_expired(c: Client) -> bool:
    """Redis fails EXEC when a key that existed at WATCH time has logically expired since,
    even if nothing has deleted it yet (isWatchedKeyExpired; not a key already expired
    then: STALE)."""
    now = now_ms()
    return any(d is not None and d != STALE and d < now for d in c.watched_deadlines)


@COMMANDS.command(
    'discard',
    1,
    flags='noscript loading stale fast allow_busy',
    categories='@fast @transaction',
    summary='Discard all commands issued after MULTI',
    since='2.0.0',
)
def discard(c: Client, args: list[bytes]) -> Any:
    if c.multi is None:
        raise RedisError('ERR DISCARD without MULTI')
    c.end_multi()
    return OK


@COMMANDS.command(
    'watch',
    -2,
    flags='noscript loading stale fast allow_busy',
    keys=(1, -1, 1),
    categories='@fast @transaction',
    summary='Watch the given keys to determine execution of the MULTI/EXEC block',
    since='2.2.0',
    key_specs='RO; index 1; range -1 1 0',
)
def watch(c: Client, args: list[bytes]) -> Any:
    if c.multi is not None:
        raise RedisError('ERR WATCH inside MULTI is not allowed')
    if not c.watched:
        c.watched_deadlines = []
    for key in args[1:]:
        dk = (c.db, key)
        if dk in c.watched:
            continue
        c.watched.append(dk)
        # the key as stored: WATCH deletes nothing, and a key already expired is marked
        # (watchForKey's wk->expired), so its deletion later is no change
        present, deadline = c.ks.stored(c.db, key)
        if present and deadline is not None and deadline < now_ms():
            deadline = STALE
        c.watched_deadlines.append(deadline)
        c.ks.observe((c.db, key), c)
    return OK


@COMMANDS.command(
    'unwatch',
    1,
    flags='noscript loading stale fast allow_busy',
    categories='@fast @transaction',
    summary='Forget about all watched keys',
    since='2.2.0',
)
def unwatch(c: Client, args: list[bytes]) -> Any:
    c.unwatch_all()
    return OK
