"""MIGRATE (Redis 7.0 cluster.c's migrateCommand): move keys to another server with the
RESTORE it understands, DUMP payloads being Redis's own (store/persistence/rdb_encoder.py),
so the target may be a redis-server as well as this server. A cluster node sends
RESTORE-ASKING, as Redis does, which the target serves while it imports the slot (a
RESTORE would be redirected back with -MOVED).

As in Redis the transfer is synchronous: the event loop waits for the target, at most
`timeout` ms for each connect, write and read (MIGRATE is for moving keys between
servers an operator controls). Connections are cached per target as Redis caches them
(MigrateSockets: up to 64, closed after 10 s unused, SELECT skipped when the database is
the one the last transfer selected; INFO migrate_cached_sockets counts them), and a
transfer whose cached connection turns out dead before the first reply is tried once more
on a new one. Keys the target acknowledged are deleted here, unless COPY, and written to
the AOF as DEL, as Redis rewrites the command; a key that expired since the lookup is
skipped.
"""

import random
import socket
import ssl
import time
from typing import Any

import hiredis

from ..args import SYNTAX, int_arg
from ..clock import now_ms
from ..command_table import Family
from ..context import Client
from ..events import GENERIC
from ..resp import OK, Raw, RedisError, to_bytes

COMMANDS = Family('generic', since='2.6.0')

E_KEYS_ARG = 'ERR When using MIGRATE KEYS option, the key argument must be set to the empty string'


CACHE_ITEMS = 64  # MIGRATE_SOCKET_CACHE_ITEMS
CACHE_TTL = 10  # MIGRATE_SOCKET_CACHE_TTL: seconds a connection may stay unused


class MigrateSockets:
    """server.migrate_cached_sockets: 'host:port' -> [socket, last selected db (-1: none),
    last use in whole seconds]."""

    def __init__(self) -> None:
        self.cache: dict[bytes, list[Any]] = {}

    def get(
        self, host: bytes, port: bytes, timeout: float, tls: ssl.SSLContext | None
    ) -> list[Any]:
        """migrateGetSocket: the cached connection to host:port, or a new one (a random one
        dropped when 64 are cached), over TLS with `tls` (tls-cluster, as Redis connects
        to the target); RedisError when the target cannot be reached."""
        name = host + b':' + port
        entry = self.cache.get(name)
        if entry is not None:
            entry[2] = int(time.time())
            return entry
        if len(self.cache) >= CACHE_ITEMS:
            self.close(random.choice(list(self.cache)))
        try:
            sock = socket.create_connection((host.decode(), int(port)), timeout)
            if tls is not None:
                try:
                    sock = tls.wrap_socket(sock)  # the handshake, within the timeout
                except OSError:
                    sock.close()
                    raise
        except ConnectionRefusedError:
            # Redis's non-blocking connect sees the socket writable and fails on the write
            raise RedisError('IOERR error or timeout writing to target instance') from None
        except (OSError, ValueError, UnicodeDecodeError):  # a timeout, an unknown host
            raise RedisError('IOERR error or timeout connecting to the client') from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        entry = self.cache[name] = [sock, -1, int(time.time())]
        return entry

    def close(self, name: bytes) -> None:
        entry = self.cache.pop(name, None)
        if entry is not None:
            entry[0].close()

    def close_timed_out(self, now: float) -> None:
        """migrateCloseTimedoutSockets, from the cron."""
        for name, entry in list(self.cache.items()):
            if int(now) - entry[2] > CACHE_TTL:
                self.close(name)


class _SocketError(Exception):
    """The connection failed during a transfer; `retry`: nothing was acknowledged and it
    was no timeout, so a new connection may try again (Redis's may_retry)."""

    def __init__(self, writing: bool, retry: bool) -> None:
        self.writing, self.retry = writing, retry


def _keys(args: list[bytes]) -> list[int]:
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
def migrate(c: Client, args: list[bytes]) -> Any:
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

    server = c.server
    sockets = server.migrate_sockets
    tls = server.tls.client_ctx if server.config['tls-cluster'] else None
    for retry in (True, False):
        cached = sockets.get(args[1], args[2], timeout / 1000, tls)
        try:
            return _transfer(c, cached, keys, db, auth, copy, replace, timeout / 1000)
        except _SocketError as e:
            sockets.close(args[1] + b':' + args[2])
            if not (retry and e.retry):
                what = 'writing' if e.writing else 'reading'
                raise RedisError(f'IOERR error or timeout {what} to target instance') from None
    raise AssertionError('unreachable')


def _transfer(
    c: Client,
    cached: list[Any],
    keys: list[bytes],
    db: int,
    auth: list[bytes],
    copy: bool,
    replace: bool,
    timeout: float,
) -> Any:
    ks, persistence = c.ks, c.server.persistence
    conn = cached[0]
    conn.settimeout(timeout)
    select = cached[1] != db
    commands = ([auth] if auth else []) + ([[b'SELECT', b'%d' % db]] if select else [])
    moved = []
    # a cluster node imports the slot: RESTORE-ASKING is served there without ASKING
    restore = b'RESTORE-ASKING' if c.server.cluster is not None else b'RESTORE'
    for key in keys:
        deadline = ks.deadline(c.db, key)
        value = ks.materialize(c.db, key)
        ttl = 0 if deadline is None else deadline - now_ms()
        if value is None or ttl < 0:
            continue  # expired since the lookup
        if deadline is not None:
            ttl = max(ttl, 1)
        payload = persistence.dump(value)
        commands.append([restore, key, b'%d' % ttl, payload] + ([b'REPLACE'] if replace else []))
        moved.append(key)
    reader = hiredis.Reader(notEnoughData=False)
    try:
        conn.sendall(b''.join(to_bytes(cmd) for cmd in commands))
    except TimeoutError:
        raise _SocketError(writing=True, retry=False) from None
    except OSError:
        raise _SocketError(writing=True, retry=True) from None
    replies: list[Any] = []  # hiredis's
    timed_out = False
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
    except TimeoutError:
        timed_out = True
    except (OSError, hiredis.ProtocolError):
        pass
    if not replies:  # nothing was acknowledged: a dead cached connection may be retried
        raise _SocketError(writing=False, retry=not timed_out)
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
    aof = c.server.persistence.aof
    if deleted and aof.propagating:
        aof.feed(c.db, to_bytes([b'DEL', *deleted]))  # what MIGRATE is rewritten as
    if error is not None:
        cached[1] = -1  # the target's database is no longer known
        raise RedisError(f'ERR Target instance replied with error: {error}')
    if len(replies) < len(commands):
        raise _SocketError(writing=False, retry=False)
    cached[1] = db
    return OK
