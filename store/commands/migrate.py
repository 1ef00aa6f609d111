"""MIGRATE (Redis 7.0 cluster.c's migrateCommand): move keys to another server with the
RESTORE it understands, DUMP payloads being Redis's own (store/persistence/rdb_codec.py),
so the target may be a redis-server as well as this server.

As in Redis the transfer is synchronous: the event loop waits for the target, at most
`timeout` ms for each connect, write and read (MIGRATE is for moving keys between
servers an operator controls). The connection is opened for each MIGRATE and closed
after it (Redis keeps it for 10 s and skips the SELECT when the database is the same:
the target sees one more SELECT and connection, nothing a client can tell apart).
Keys the target acknowledged are deleted here, unless COPY, and written to the AOF as
DEL, as Redis rewrites the command; a key that expired since the lookup is skipped.
"""

import socket

import hiredis

from ..args import SYNTAX, int_arg
from ..clock import now_ms
from ..command_table import Family
from ..events import GENERIC
from ..resp import OK, Raw, RedisError, to_bytes

COMMANDS = Family('generic', since='2.6.0')

E_KEYS_ARG = 'ERR When using MIGRATE KEYS option, the key argument must be set to the empty string'


def _keys(args):
    """migrateGetKeys: the key at 3, or those after KEYS (none if the key at 3 is not
    empty then); COPY, REPLACE and AUTH/AUTH2's arguments are skipped on the way."""
    skip = {b'copy': 0, b'replace': 0, b'auth': 1, b'auth2': 2}
    i = 6
    while i < len(args):
        opt = args[i].lower()
        if opt == b'keys':
            return [] if args[3] else list(range(i + 1, len(args)))
        i += skip.get(opt, 0) + 1
    return [3]


@COMMANDS.command(
    'migrate',
    -6,
    flags='write movablekeys',
    keys=(3, 3, 1),
    categories='@keyspace @write @slow @dangerous',
    tips='nondeterministic_output',
    summary='Atomically transfer a key from a Redis instance to another one.',
    key_specs=(
        'RW access delete; index 3; range 0 1 0 | '
        'RW access delete incomplete; keyword KEYS -2; range -1 1 0'
    ),
    getkeys=_keys,
    key_flags_of=lambda args: 'RW access delete',
)
def migrate(c, args):
    copy = replace = False
    auth: list[bytes] = []
    first, count = 3, 1
    j = 6
    while j < len(args):
        opt, more = args[j].lower(), len(args) - 1 - j
        if opt == b'copy':
            copy = True
        elif opt == b'replace':
            replace = True
        elif opt == b'auth' and more >= 1:
            auth = [b'AUTH', args[j + 1]]
            j += 1
        elif opt == b'auth2' and more >= 2:
            auth = [b'AUTH', args[j + 1], args[j + 2]]
            j += 2
        elif opt == b'keys':
            if args[3]:
                raise RedisError(E_KEYS_ARG)
            first, count = j + 1, len(args) - j - 1
            break
        else:
            raise SYNTAX
        j += 1
    timeout, db = int_arg(args[5]), int_arg(args[4])
    if timeout <= 0:
        timeout = 1000
    ks = c.ks
    keys = [k for k in args[first : first + count] if ks.read(c.db, k) is not None]
    if not keys:
        return Raw(b'+NOKEY\r\n')

    try:
        conn = socket.create_connection((args[1].decode(), int(args[2])), timeout / 1000)
    except ConnectionRefusedError:
        # Redis's non-blocking connect sees the socket writable and fails on the write
        raise RedisError('IOERR error or timeout writing to target instance') from None
    except (OSError, ValueError, UnicodeDecodeError):  # a timeout, an unknown host
        raise RedisError('IOERR error or timeout connecting to the client') from None
    with conn:
        return _transfer(c, conn, keys, db, auth, copy, replace)


def _transfer(c, conn, keys, db, auth, copy, replace):
    ks, persistence = c.ks, c.server.persistence
    commands = ([auth] if auth else []) + [[b'SELECT', b'%d' % db]]
    moved = []
    for key in keys:
        deadline = ks.deadline(c.db, key)
        value = ks.materialize(c.db, key)
        ttl = 0 if deadline is None else deadline - now_ms()
        if value is None or ttl < 0:
            continue  # expired since the lookup
        if deadline is not None:
            ttl = max(ttl, 1)
        payload = persistence.dump(value)
        commands.append([b'RESTORE', key, b'%d' % ttl, payload] + ([b'REPLACE'] if replace else []))
        moved.append(key)
    reader = hiredis.Reader(notEnoughData=False)
    try:
        conn.sendall(b''.join(to_bytes(cmd) for cmd in commands))
    except OSError:
        raise RedisError('IOERR error or timeout writing to target instance') from None
    replies = []
    try:
        while len(replies) < len(commands):
            reply = reader.gets()
            if reply is False:
                data = conn.recv(1 << 16)
                if not data:
                    break
                reader.feed(data)
                continue
            replies.append(reply)
    except (OSError, hiredis.ProtocolError):
        pass
    setup = replies[: len(commands) - len(moved)]
    setup_error = next((r for r in setup if isinstance(r, hiredis.ReplyError)), None)
    error = setup_error
    deleted = []
    for key, reply in zip(moved, replies[len(setup) :]):
        if setup_error is not None or isinstance(reply, hiredis.ReplyError):
            error = error or reply  # the first error is the one told
        elif not copy:
            ks.delete(c.db, key)
            ks.notify(GENERIC, b'del', c.db, key)
            deleted.append(key)
    if deleted and ks.aof is not None:
        ks.aof.feed(c.db, to_bytes([b'DEL', *deleted]))  # what MIGRATE is rewritten as
    if error is not None:
        raise RedisError(f'ERR Target instance replied with error: {error}')
    if len(replies) < len(commands):
        raise RedisError('IOERR error or timeout reading to target instance')
    return OK
