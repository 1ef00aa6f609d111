"""DUMP and RESTORE (and RESTORE-ASKING, MIGRATE's form in a cluster): a key's value as
Redis's serialized form and back (Redis 7.0 cluster.c's dumpCommand and restoreCommand).

The payload is Redis's own (an RDB value, its RDB version and a CRC64 footer), made and
read by the persistence layer (server.persistence), so a DUMP from redis-server restores
here and the other way round; MIGRATE (store/commands/migrate.py) sends it. RESTORE checks
in Redis's order (options, an existing key, the TTL, then the payload: its footer, then
its contents, deep-checked as sanitize-dump-payload asks) and raises `new` before its
`restore` event, as dbAdd does.
"""

from typing import Any

from .. import events
from ..args import SYNTAX, int_arg
from ..clock import now_ms
from ..command_table import Family
from ..context import Client
from ..resp import OK, RedisError

LLONG_MAX = 2**63 - 1

E_BUSYKEY = 'BUSYKEY Target key name already exists.'
E_BAD_PAYLOAD = 'ERR DUMP payload version or checksum are wrong'
E_BAD_FORMAT = 'ERR Bad data format'

COMMANDS = Family('generic')


@COMMANDS.command(
    'dump',
    2,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@keyspace @read @slow',
    tips='nondeterministic_output',
    since='2.6.0',
    summary='Return a serialized version of the value stored at the specified key.',
    key_specs='RO access; index 1; range 0 1 0',
)
def dump(c: Client, args: list[bytes]) -> Any:
    value = c.ks.read(c.db, args[1])
    return None if value is None else c.server.persistence.dump(value)


@COMMANDS.command(
    'restore',
    -4,
    flags='write denyoom',
    keys=(1, 1, 1),
    categories='@keyspace @write @slow @dangerous',
    since='2.6.0',
    summary='Create a key using the provided serialized value, previously obtained using DUMP.',
    key_specs='OW update; index 1; range 0 1 0',
)
@COMMANDS.command(
    'restore-asking',
    -4,
    flags='write denyoom asking',
    keys=(1, 1, 1),
    categories='@keyspace @write @slow @dangerous',
    group='server',
    since='3.0.0',
    summary='An internal command for migrating keys in a cluster',
    key_specs='OW update; index 1; range 0 1 0',
)
def restore(c: Client, args: list[bytes]) -> Any:
    """RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f], checks in Redis
    7.0's order: options, existing key, TTL, payload."""
    replace = absttl = False
    idle = freq = None
    i = 4
    while i < len(args):
        opt = args[i].lower()
        more = len(args) - i - 1
        if opt == b'replace':
            replace = True
        elif opt == b'absttl':
            absttl = True
        elif opt == b'idletime' and more >= 1 and freq is None:
            idle = int_arg(args[i + 1])
            if idle < 0:
                raise RedisError('ERR Invalid IDLETIME value, must be >= 0')
            i += 1
        elif opt == b'freq' and more >= 1 and idle is None:
            freq = int_arg(args[i + 1])
            if not 0 <= freq <= 255:
                raise RedisError('ERR Invalid FREQ value, must be >= 0 and <= 255')
            i += 1
        else:
            raise SYNTAX
        i += 1

    ks, db, key = c.ks, c.db, args[1]
    if not replace and ks.lookup(db, key) is not None:
        raise RedisError(E_BUSYKEY)
    ttl = int_arg(args[2])
    if ttl < 0:
        raise RedisError('ERR Invalid TTL value, must be >= 0')
    payload = args[3]
    persistence = c.server.persistence
    if not persistence.footer_valid(payload, c.server.skip_checksum_validation):
        raise RedisError(E_BAD_PAYLOAD)
    value = persistence.restore(c, payload)
    if value is None:
        raise RedisError(E_BAD_FORMAT)

    deleted = replace and ks.delete(db, key)
    if ttl and not absttl:
        ttl += now_ms()
        if ttl > LLONG_MAX:  # Redis adds in 64 bits: the sum wraps negative
            ttl -= 2**64
    if ttl and ttl <= now_ms():  # already expired: nothing to create
        if deleted:
            ks.notify(events.GENERIC, b'del', db, key)
        return OK
    ks.set(db, key, value, ttl or None)
    ks.set_access(db, key, idle, freq)
    ks.notify(events.NEW, b'new', db, key)
    ks.notify(events.GENERIC, b'restore', db, key)
    return OK
