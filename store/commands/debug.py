"""DEBUG: one command that parses its own subcommands, as Redis 7.0's debugCommand does.

Test suites use it (SET-ACTIVE-EXPIRE, SLEEP, PROTOCOL's sample RESP3 replies) and match its
error strings; it is refused unless enable-debug-command allows the connection. Nothing is
persisted here, so RELOAD leaves the data as it is, and OBJECT and DIGEST describe this
server's own values.
"""

import os
import time

from ..args import int_arg, lower
from ..cnum import atoi, strtod
from ..command_table import Family
from ..persistence.debug_load import debug_loadaof
from ..persistence.debug_load import debug_loadaof
from ..resp import OK, Map, Raw, RedisError, Set, Verbatim, string2ll, to_bytes
from ..types import encoding_of
from .admin import as_text, protected_allowed
from .digest import dataset_digest, digest_values

E_DEBUG_DISABLED = (
    'ERR DEBUG command not allowed. If the enable-debug-command option is set '
    'to "local", you can run it from a local connection, otherwise you need to '
    'set this option in the configuration file, and then restart the server.'
)
E_PROTOCOL_TYPE = (
    'ERR Wrong protocol type name. Please use one of the following: '
    'string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|'
    'false'
)

DEBUG_HELP = [
    'DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'CHANGE-REPL-ID',
    '    Change the replication IDs of the instance.',
    '    Dangerous: should be used only for testing the replication subsystem.',
    'DIGEST',
    '    Output a hex signature representing the current DB content.',
    'DIGEST-VALUE <key> [<key> ...]',
    '    Output a hex signature of the values of all the specified keys.',
    'ERROR <string>',
    '    Return a Redis protocol error with <string> as message. Useful for clients',
    '    unit tests to simulate Redis errors.',
    'LOG <message>',
    '    Write <message> to the server log.',
    'OBJECT <key>',
    '    Show low level info about `key` and associated value.',
    'POPULATE <count> [<prefix>] [<size>]',
    '    Create <count> string keys named key:<num>. If <prefix> is specified then',
    '    it is used instead of the \'key\' prefix. These are not propagated to',
    '    replicas. Cluster slots are not respected so keys not belonging to the',
    '    current node can be created in cluster mode.',
    'PROTOCOL <type>',
    '    Reply with a test value of the specified type. <type> can be: string,',
    '    integer, double, bignum, null, array, set, map, attrib, push, verbatim,',
    '    true, false.',
    'RELOAD [option ...]',
    '    Save the RDB on disk and reload it back to memory. Valid <option> values:',
    '    * MERGE: conflicting keys will be loaded from RDB.',
    '    * NOFLUSH: the existing database will not be removed before load, but',
    '      conflicting keys will generate an exception and kill the server.',
    '    * NOSAVE: the database will be loaded from an existing RDB file.',
    'SET-ACTIVE-EXPIRE <0|1>',
    '    Setting it to 0 disables expiring keys in background when they are not',
    '    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the',
    '    default.',
    'SLEEP <seconds>',
    '    Stop the server for <seconds>. Decimals allowed.',
    'HELP',
    '    Prints this help.',
]


COMMANDS = Family('server')


def _serialized_length(value):
    """About what the value takes in an RDB file."""
    if type(value) is bytes:
        n = string2ll(value) if len(value) <= 20 else None
        if n is not None and -(2**31) <= n < 2**31:
            return 2 if -128 <= n < 128 else 3 if -32768 <= n < 32768 else 5
        return len(value) + (1 if len(value) < 64 else 2 if len(value) < 16384 else 5)
    try:
        return 1 + sum(len(x) + 1 if isinstance(x, bytes) else 9 for x in value)
    except TypeError:
        return 1


def debug_object(c, value):
    enc = encoding_of(value)
    refcount = 1
    if enc == 'int' and 0 <= int(value) < 10000:
        refcount = 2147483647  # a shared integer object
    return (
        f'Value at:{id(value):#x} refcount:{refcount} encoding:{enc} '
        f'serializedlength:{_serialized_length(value)} lru:{int(time.time()) & 0xFFFFFF} '
        f'lru_seconds_idle:0'
    )


def debug_reload(c, options):
    """DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save the RDB file, empty the server and
    load the file back (what a restart would do), each step skippable."""
    opts = set()
    for o in options:
        opt = lower(o)
        if opt not in ('merge', 'noflush', 'nosave'):
            raise RedisError(
                'ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.'
            )
        opts.add(opt)
    p = c.server.persistence
    if 'nosave' not in opts:
        p.save()
    if 'noflush' not in opts and 'merge' not in opts:
        c.ks.flushall()
        c.server.functions.flush()
    try:
        p.load_rdb_now(p.rdb_path())
    except Exception as e:
        c.server.log(f'Error loading the RDB file for DEBUG RELOAD: {e}', '#')
        raise RedisError('ERR Error trying to load the RDB dump, check server logs.') from None
    c.server.log('DB reloaded by DEBUG RELOAD')
    return OK


def debug_protocol(c, kind):
    resp3 = c.proto == 3
    if kind == 'string':
        return b'Hello World'
    if kind == 'integer':
        return 12345
    if kind == 'double':
        return 3.141
    if kind == 'bignum':
        big = b'1234567999999999999999999999999999999'
        return Raw(b'(%s\r\n' % big) if resp3 else big
    if kind == 'null':
        return None
    if kind == 'array':
        return [0, 1, 2]
    if kind == 'set':
        return Set([0, 1, 2])
    if kind == 'map':
        return Map([(0, False), (1, True), (2, False)])
    if kind == 'attrib':
        reply = b'Some real reply following the attribute'
        if not resp3:
            return reply
        return Raw(
            b'|1\r\n'
            + to_bytes(b'key-popularity', 3)
            + to_bytes([b'key:123', 90], 3)
            + to_bytes(reply, 3)
        )
    if kind == 'push':
        if not resp3:
            raise RedisError('ERR RESP2 is not supported by this command')
        return Raw(
            b'>2\r\n'
            + to_bytes(b'server-cpu-usage', 3)
            + to_bytes(42, 3)
            + to_bytes(b'Some real reply following the push reply', 3)
        )
    if kind == 'verbatim':
        return Verbatim(b'This is a verbatim\nstring')
    if kind == 'true':
        return True
    if kind == 'false':
        return False
    raise RedisError(E_PROTOCOL_TYPE)


def debug_populate(c, args):
    count = string2ll(args[2])
    if count is None or count < 0:
        raise RedisError('ERR value is out of range, must be positive')
    prefix = args[3] if len(args) > 3 else b'key'
    size = int_arg(args[4]) if len(args) > 4 else 0
    ks, db = c.ks, c.db
    for i in range(count):
        key = b'%s:%d' % (prefix, i)
        if ks.lookup(db, key) is not None:
            continue
        value = b'value:%d' % i
        if size:
            value = value[:size].ljust(size, b'\0')
        ks.set(db, key, value)
    return OK


@COMMANDS.command(
    'debug',
    -2,
    flags='admin noscript loading stale',
    categories='@admin @slow @dangerous',
    summary='A container for debugging commands',
)
def debug(c, args):
    """DEBUG is one command that parses its own subcommands (Redis 7.0 debugCommand), so
    its errors differ from those of containers like CONFIG."""
    server = c.server
    if not protected_allowed(c, server.config['enable-debug-command']):
        raise RedisError(E_DEBUG_DISABLED)
    sub, n = lower(args[1]), len(args)
    if sub == 'help' and n == 2:
        return DEBUG_HELP
    if sub == 'sleep' and n == 3:
        time.sleep(max(strtod(args[2])[0], 0.0))  # blocks the loop, as in Redis
        return OK
    if sub == 'set-active-expire' and n == 3:
        if server.expiry is not None:
            server.expiry.set_enabled(bool(atoi(args[2])))
        return OK
    if sub == 'object' and n == 3:
        value = c.ks.lookup(c.db, args[2])
        if value is None:
            raise RedisError('ERR no such key')
        return debug_object(c, value)
    if sub == 'protocol' and n == 3:
        return debug_protocol(c, lower(args[2]))
    if sub == 'reload' and n >= 2:
        return debug_reload(c, args[2:])
    if sub == 'loadaof' and n == 2:
        debug_loadaof(server)
        return OK
    if sub == 'loadaof' and n == 2:
        debug_loadaof(server)
        return OK
    if sub == 'change-repl-id' and n == 2:
        server.run_id = os.urandom(20).hex()
        return OK
    if sub == 'log' and n == 3:
        server.log(f'DEBUG LOG: {as_text(args[2])}', '#')
        return OK
    if sub == 'error' and n == 3:
        # The argument is the whole error line, code included (Redis sends '-' + it, CR and
        # LF as spaces): DEBUG ERROR "LOADING x" replies -LOADING x, "-x" replies --x.
        raise RedisError(as_text(args[2]).replace('\r', ' ').replace('\n', ' '))
    if sub == 'digest' and n == 2:
        return dataset_digest(c.ks)
    if sub == 'digest-value' and n >= 2:
        return digest_values(c.ks, c.db, args[2:])
    if sub == 'populate' and 3 <= n <= 5:
        return debug_populate(c, args)
    raise RedisError(
        f"ERR unknown subcommand or wrong number of arguments for "
        f"'{as_text(args[1])[:128]}'. Try DEBUG HELP."
    )


# -- the command table --------------------------------------------------------------------
