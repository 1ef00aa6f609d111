"""Keyspace (GENERIC) commands on named keys: DEL, UNLINK, EXISTS, TYPE, TOUCH, RANDOMKEY,
RENAME, RENAMENX, MOVE, COPY.

Why it is built this way:

* Commands are ports of Redis 7.0's db.c handlers, keeping their order of checks (it
  decides which error a client sees) and their keyspace events, in Redis's order: a key
  created by dbAdd raises `new` before the command's own event (rename_from/rename_to,
  move_from/move_to, copy_to).
* Values are plain Python objects owned by the type modules; TYPE and COPY ask the type
  registry (store/types/) about them.

KEYS and SCAN, which walk the whole keyspace, are store/commands/scan.py's; DUMP and
RESTORE store/commands/dump.py's.
"""

from typing import Any

from .. import events
from ..args import SYNTAX, int_arg
from ..command_table import Family
from ..context import Client
from ..resp import OK, RedisError
from ..types import copy_value, type_name

INT_MIN, INT_MAX = -(2**31), 2**31 - 1

E_NO_SUCH_KEY = 'ERR no such key'
E_SAME_OBJECT = 'ERR source and destination objects are the same'


# -- DEL, UNLINK, EXISTS, TYPE, TOUCH ---------------------------------------------------

COMMANDS = Family('generic')


@COMMANDS.command(
    'del',
    -2,
    flags='write',
    keys=(1, -1, 1),
    categories='@keyspace @write @slow',
    tips='request_policy:multi_shard response_policy:agg_sum',
    summary='Delete a key',
    key_specs='RM delete; index 1; range -1 1 0',
)
def delete(c: Client, args: list[bytes]) -> int:
    """DEL frees a big value lazily only with lazyfree-lazy-user-del (store/lazyfree.py)."""
    return _delete(c, args, 'user-del')


@COMMANDS.command(
    'unlink',
    -2,
    flags='write fast',
    keys=(1, -1, 1),
    categories='@keyspace @write @fast',
    tips='request_policy:multi_shard response_policy:agg_sum',
    since='4.0.0',
    summary='Delete a key asynchronously in another thread. Otherwise it is just as '
    'DEL, but non blocking.',
    key_specs='RM delete; index 1; range -1 1 0',
)
def unlink(c: Client, args: list[bytes]) -> int:
    """UNLINK: the keys go at once, a big value's memory is freed in steps."""
    return _delete(c, args, True)


def _delete(c: Client, args: list[bytes], lazy: bool | str) -> int:
    ks, db = c.ks, c.db
    n = 0
    for key in args[1:]:
        if ks.delete(db, key, lazy):
            ks.notify(events.GENERIC, b'del', db, key)
            n += 1
    return n


@COMMANDS.command(
    'exists',
    -2,
    flags='readonly fast',
    keys=(1, -1, 1),
    categories='@keyspace @read @fast',
    tips='request_policy:multi_shard response_policy:agg_sum',
    summary='Determine if a key exists',
    key_specs='RO; index 1; range -1 1 0',
)
def exists(c: Client, args: list[bytes]) -> int:
    """EXISTS does not count as an access (LOOKUP_NOTOUCH); TOUCH does."""
    ks, db = c.ks, c.db
    n = 0
    for key in args[1:]:
        if ks.read_notouch(db, key) is not None:
            n += 1
    return n


@COMMANDS.command(
    'type',
    2,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@keyspace @read @fast',
    summary='Determine the type stored at key',
    key_specs='RO; index 1; range 0 1 0',
)
def type_(c: Client, args: list[bytes]) -> str:
    return type_name(c.ks.read_notouch(c.db, args[1]))


@COMMANDS.command(
    'touch',
    -2,
    flags='readonly fast',
    keys=(1, -1, 1),
    categories='@keyspace @read @fast',
    tips='request_policy:multi_shard response_policy:agg_sum',
    since='3.2.1',
    summary='Alters the last access time of a key(s). Returns the number of '
    'existing keys specified.',
    key_specs='RO; index 1; range -1 1 0',
)
def touch(c: Client, args: list[bytes]) -> int:
    ks, db = c.ks, c.db
    return sum(1 for key in args[1:] if ks.read(db, key) is not None)


@COMMANDS.command(
    'randomkey',
    1,
    flags='readonly',
    categories='@keyspace @read @slow',
    tips='request_policy:all_shards nondeterministic_output',
    summary='Return a random key from the keyspace',
)
def randomkey(c: Client, args: list[bytes]) -> bytes | None:
    key: bytes | None = c.ks.random_key(c.db)
    return key


# -- RENAME, RENAMENX, MOVE, COPY -------------------------------------------------------


def rename_generic(c: Client, args: list[bytes], nx: bool) -> Any:
    ks, db = c.ks, c.db
    src, dst = args[1], args[2]
    value = ks.lookup(db, src)
    if value is None:
        raise RedisError(E_NO_SUCH_KEY)
    if src == dst:
        return 0 if nx else OK
    if nx and ks.lookup(db, dst) is not None:
        return 0
    deadline = ks.deadline(db, src)
    ks.delete(db, src)  # first: Redis signals src modified before dst (tracking's order)
    ks.set(db, dst, value, deadline)  # replaces dst and its TTL, as dbDelete+dbAdd
    ks.notify(events.NEW, b'new', db, dst)
    ks.notify(events.GENERIC, b'rename_from', db, src)
    ks.notify(events.GENERIC, b'rename_to', db, dst)
    return 1 if nx else OK


@COMMANDS.command(
    'rename',
    3,
    flags='write',
    keys=(1, 2, 1),
    categories='@keyspace @write @slow',
    summary='Rename a key',
    key_specs='RW access delete; index 1; range 0 1 0 | OW update; index 2; range 0 1 0',
)
def rename(c: Client, args: list[bytes]) -> Any:
    return rename_generic(c, args, nx=False)


@COMMANDS.command(
    'renamenx',
    3,
    flags='write fast',
    keys=(1, 2, 1),
    categories='@keyspace @write @fast',
    summary='Rename a key, only if the new key does not exist',
    key_specs='RW access delete; index 1; range 0 1 0 | OW insert; index 2; range 0 1 0',
)
def renamenx(c: Client, args: list[bytes]) -> Any:
    return rename_generic(c, args, nx=True)


def _db_index(c: Client, b: bytes) -> int:
    """getIntFromObjectOrReply + selectDb: a 32-bit int, then the range check."""
    dbid = int_arg(b)
    if not INT_MIN <= dbid <= INT_MAX:
        raise RedisError('ERR value is out of range, value must between -2147483648 and 2147483647')
    if not 0 <= dbid < c.ks.databases:
        raise RedisError('ERR DB index is out of range')
    return dbid


@COMMANDS.command(
    'move',
    3,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@keyspace @write @fast',
    summary='Move a key to another database',
    key_specs='RW access update; index 1; range 0 1 0',
)
def move(c: Client, args: list[bytes]) -> int:
    if c.server.cluster is not None:  # a cluster node has database 0 only
        raise RedisError('ERR MOVE is not allowed in cluster mode')
    ks, src_db, key = c.ks, c.db, args[1]
    dst_db = _db_index(c, args[2])
    if dst_db == src_db:
        raise RedisError(E_SAME_OBJECT)
    value = ks.lookup(src_db, key)
    if value is None:
        return 0
    deadline = ks.deadline(src_db, key)
    if ks.lookup(dst_db, key) is not None:
        return 0
    ks.set(dst_db, key, value, deadline)
    ks.notify(events.NEW, b'new', dst_db, key)
    ks.delete(src_db, key)
    ks.notify(events.GENERIC, b'move_from', src_db, key)
    ks.notify(events.GENERIC, b'move_to', dst_db, key)
    return 1


@COMMANDS.command(
    'copy',
    -3,
    flags='write denyoom',
    keys=(1, 2, 1),
    categories='@keyspace @write @slow',
    since='6.2.0',
    summary='Copy a key',
    key_specs='RO access; index 1; range 0 1 0 | OW update; index 2; range 0 1 0',
)
def copy_(c: Client, args: list[bytes]) -> int:
    ks, db = c.ks, c.db
    src, dst = args[1], args[2]
    dst_db, replace = db, False
    i = 3
    while i < len(args):
        opt = args[i].lower()
        if opt == b'replace':
            replace = True
        elif opt == b'db' and len(args) - i - 1 >= 1:
            dst_db = _db_index(c, args[i + 1])
            i += 1
        else:
            raise SYNTAX
        i += 1
    if (db != 0 or dst_db != 0) and c.server.cluster is not None:
        raise RedisError('ERR Copying to another database is not allowed in cluster mode')
    if dst_db == db and src == dst:
        raise RedisError(E_SAME_OBJECT)
    value = ks.read(db, src)
    if value is None:
        return 0
    deadline = ks.deadline(db, src)
    if ks.lookup(dst_db, dst) is not None and not replace:
        return 0
    # a deep copy that keeps the encoding, as Redis's dup*Object (types' copy())
    ks.set(dst_db, dst, copy_value(value), deadline)
    ks.notify(events.NEW, b'new', dst_db, dst)
    ks.notify(events.GENERIC, b'copy_to', dst_db, dst)
    return 1
