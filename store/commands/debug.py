"""DEBUG: one command that parses its own subcommands, as Redis 7.0's debugCommand does.

Test suites use it (SET-ACTIVE-EXPIRE, SLEEP, PROTOCOL's sample RESP3 replies) and match its
error strings; it is refused unless enable-debug-command allows the connection. Nothing is
persisted here, so RELOAD leaves the data as it is, and OBJECT and DIGEST describe this
server's own values.
"""

from __future__ import annotations

import os
import time
from typing import Any

from .. import crash
from ..args import int_arg, lower
from ..cnum import atoi, strtod
from ..command_table import Family
from ..context import Client
from ..resp import OK, Map, Raw, RedisError, Set, Verbatim, string2ll, to_bytes
from ..scripting import set_disable_deny_scripts
from . import debug_values as dv
from .admin import as_text, protected_allowed
from .config_cmd import rewrite_config
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

# debugCommand's help, as a redis-server built without jemalloc gives it (no MALLCTL)
DEBUG_HELP = [
    'DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'AOF-FLUSH-SLEEP <microsec>',
    '    Server will sleep before flushing the AOF, this is used for testing.',
    'ASSERT',
    '    Crash by assertion failed.',
    'CHANGE-REPL-ID',
    '    Change the replication IDs of the instance.',
    '    Dangerous: should be used only for testing the replication subsystem.',
    'CONFIG-REWRITE-FORCE-ALL',
    '    Like CONFIG REWRITE but writes all configuration options, including',
    '    keywords not listed in original configuration file or default values.',
    'CRASH-AND-RECOVER [<milliseconds>]',
    '    Hard crash and restart after a <milliseconds> delay (default 0).',
    'DIGEST',
    '    Output a hex signature representing the current DB content.',
    'DIGEST-VALUE <key> [<key> ...]',
    '    Output a hex signature of the values of all the specified keys.',
    'ERROR <string>',
    '    Return a Redis protocol error with <string> as message. Useful for clients',
    '    unit tests to simulate Redis errors.',
    'LEAK <string>',
    '    Create a memory leak of the input string.',
    'LOG <message>',
    '    Write <message> to the server log.',
    'HTSTATS <dbid>',
    '    Return hash table statistics of the specified Redis database.',
    'HTSTATS-KEY <key>',
    "    Like HTSTATS but for the hash table stored at <key>'s value.",
    'LOADAOF',
    '    Flush the AOF buffers on disk and reload the AOF in memory.',
    'REPLICATE <string>',
    '    Replicates the provided string to replicas, allowing data divergence.',
    'OBJECT <key>',
    '    Show low level info about `key` and associated value.',
    'DROP-CLUSTER-PACKET-FILTER <packet-type>',
    '    Drop all packets that match the filtered type. Set to -1 allow all packets.',
    'OOM',
    '    Crash the server simulating an out-of-memory error.',
    'PANIC',
    '    Crash the server simulating a panic.',
    'POPULATE <count> [<prefix>] [<size>]',
    '    Create <count> string keys named key:<num>. If <prefix> is specified then',
    "    it is used instead of the 'key' prefix. These are not propagated to",
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
    '    Examples:',
    '    * DEBUG RELOAD: verify that the server is able to persist, flush and reload',
    '      the database.',
    '    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an',
    '      existing RDB file.',
    '    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB',
    '      file to the database.',
    'RESTART [<milliseconds>]',
    '    Graceful restart: save config, db, restart after a <milliseconds> delay (default 0).',
    'SDSLEN <key>',
    '    Show low level SDS string info representing `key` and value.',
    'SEGFAULT',
    '    Crash the server with sigsegv.',
    'SET-ACTIVE-EXPIRE <0|1>',
    '    Setting it to 0 disables expiring keys in background when they are not',
    '    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the',
    '    default.',
    'QUICKLIST-PACKED-THRESHOLD <size>',
    '    Sets the threshold for elements to be inserted as plain vs packed nodes',
    '    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.',
    'SET-SKIP-CHECKSUM-VALIDATION <0|1>',
    "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
    'SLEEP <seconds>',
    '    Stop the server for <seconds>. Decimals allowed.',
    'STRINGMATCH-TEST',
    '    Run a fuzz tester against the stringmatchlen() function.',
    'STRUCTSIZE',
    '    Return the size of different Redis core C structures.',
    'LISTPACK <key>',
    '    Show low level info about the listpack encoding of <key>.',
    'QUICKLIST <key> [<0|1>]',
    '    Show low level info about the quicklist encoding of <key>.',
    '    The optional argument (0 by default) sets the level of detail',
    'CLIENT-EVICTION',
    '    Show low level client eviction pools info (maxmemory-clients).',
    'PAUSE-CRON <0|1>',
    '    Stop periodic cron job processing.',
    'REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>',
    '    Sets the time (in milliseconds) to wait between client reply buffer peak resets.',
    '    In case NEVER is provided the last observed peak will never be reset',
    '    In case RESET is provided the peak reset time will be restored to the default value',
    'REPLYBUFFER RESIZING <0|1>',
    '    Enable or disable the reply buffer resize cron job',
    'CLUSTERLINK KILL <to|from|all> <node-id>',
    '    Kills the link based on the direction to/from (both) with the provided node.',
    'HELP',
    '    Prints this help.',
]


COMMANDS = Family('server')


def debug_reload(c: Client, options: list[bytes]) -> str:
    """DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save the RDB file, empty the server and
    load the file back (what a restart would do), each step skippable."""
    opts: set[str] = set()
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
    if 'noflush' not in opts:
        c.ks.flushall()
        c.server.functions.flush()
    try:
        # MERGE: what the file holds replaces what is here (RDBFLAGS_ALLOW_DUP)
        p.load_rdb_now(p.rdb_path(), allow_dup='merge' in opts)
    except Exception as e:
        c.server.log(f'Error loading the RDB file for DEBUG RELOAD: {e}', '#')
        raise RedisError('ERR Error trying to load the RDB dump') from None
    c.server.log('DB reloaded by DEBUG RELOAD')
    return OK


def debug_protocol(c: Client, kind: str) -> Any:
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


def debug_populate(c: Client, args: list[bytes]) -> str:
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


def debug_config_rewrite_force_all(c: Client) -> str:
    """CONFIG REWRITE writing every parameter, defaults included (rewriteConfig(.., 1))."""
    server = c.server
    users = [] if server.config['aclfile'] else server.acl.listing()
    try:
        rewrite_config(server.config, server.config.file or '', users, force_all=True)
    except OSError as e:
        raise RedisError(f'ERR CONFIG-REWRITE-FORCE-ALL failed: {e.strerror or e}') from None
    return OK


@COMMANDS.command(
    'debug',
    -2,
    flags='admin noscript loading stale',
    categories='@admin @slow @dangerous',
    summary='A container for debugging commands',
)
def debug(c: Client, args: list[bytes]) -> Any:
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
    if sub == 'set-disable-deny-scripts' and n == 3:
        set_disable_deny_scripts(server, bool(atoi(args[2])))
        return OK
    if sub == 'set-active-expire' and n == 3:
        server.expiry_gate.set_active(bool(atoi(args[2])))
        return OK
    if sub == 'object' and n == 3:
        return dv.debug_object(c, args[2])
    if sub == 'sdslen' and n == 3:
        return dv.debug_sdslen(c, args[2])
    if sub == 'listpack' and n == 3:
        return dv.debug_listpack(c, args[2])
    if sub == 'quicklist' and n in (3, 4):
        return dv.debug_quicklist(c, args[2], atoi(args[3]) if n == 4 else 0)
    if sub == 'quicklist-packed-threshold' and n == 3:
        return dv.set_packed_threshold(server, args[2])
    if sub == 'htstats' and n == 3:
        return dv.debug_htstats(c, args[2])
    if sub == 'htstats-key' and n == 3:
        return dv.debug_htstats_key(c, args[2])
    if sub == 'set-skip-checksum-validation' and n == 3:
        server.skip_checksum_validation = bool(atoi(args[2]))
        return OK
    if sub == 'leak' and n == 3:
        return OK  # a Python string cannot leak; the reply is Redis's
    if sub == 'stringmatch-test' and n == 2:
        return 'Apparently Redis did not crash: test passed'
    if sub == 'protocol' and n == 3:
        return debug_protocol(c, lower(args[2]))
    if sub == 'reload' and n >= 2:
        return debug_reload(c, args[2:])
    if sub == 'loadaof' and n == 2:
        server.persistence.debug_loadaof()
        return OK
    if sub == 'replicate' and n >= 3:
        server.persistence.debug_replicate(args[2:])
        return OK
    if sub == 'aof-flush-sleep' and n == 3:
        server.persistence.aof.flush_sleep = atoi(args[2])
        return OK
    if sub == 'change-repl-id' and n == 2:
        # changeReplicationId (this server keeps no second id to clear): a new history
        server.log('Changing replication IDs after receiving DEBUG change-repl-id', '#')
        server.replication.replid = os.urandom(20).hex()
        return OK
    if sub == 'log' and n == 3:
        server.log(f'DEBUG LOG: {as_text(args[2])}', '#')
        return OK
    if sub == 'error' and n == 3:
        # The argument is the whole error line, code included (Redis sends '-' + it, CR and
        # LF as spaces): DEBUG ERROR "LOADING x" replies -LOADING x, "-x" replies --x.
        raise RedisError(as_text(args[2]).replace('\r', ' ').replace('\n', ' '))
    if sub == 'config-rewrite-force-all' and n == 2:
        return debug_config_rewrite_force_all(c)
    if sub == 'digest' and n == 2:
        return dataset_digest(c.ks)
    if sub == 'digest-value' and n >= 2:
        return digest_values(c.ks, c.db, args[2:])
    if sub == 'populate' and 3 <= n <= 5:
        return debug_populate(c, args)
    if sub == 'pause-cron' and n == 3:
        server.cron_paused = bool(atoi(args[2]))  # the cron reschedules itself, doing nothing
        return OK
    if sub == 'replybuffer' and n == 4:
        return debug_replybuffer(c, args)
    if sub == 'drop-cluster-packet-filter' and n == 3:
        # packets of that type are dropped on receipt (-1: none), for the cluster tests
        drop = int_arg(args[2])
        if server.cluster is not None and server.cluster.gossip is not None:
            server.cluster.gossip.drop_filter = drop
        return OK
    if sub == 'clusterlink' and n == 5 and lower(args[2]) == 'kill':
        return debug_clusterlink_kill(c, args[3], args[4])
    # the crashes (store/crash.py writes Redis's report and ends the process as it does)
    if sub == 'segfault':
        crash.debug_segfault(server, args)
    if sub == 'panic':
        crash.panic(server, f'DEBUG PANIC called at Unix time {int(time.time())}', args=args)
    if sub == 'assert':
        crash.assert_failed(server, '1 == 2', conn=c, args=args)
    raise unknown_subcommand(args)


def debug_clusterlink_kill(c: Client, direction: bytes, name: bytes) -> Any:
    """DEBUG CLUSTERLINK KILL to|from|all <node-id>: close this node's link(s) with
    that node, which the cron then reconnects."""
    cluster = c.server.cluster
    if cluster is None:
        raise RedisError('ERR Debug option only available for cluster mode enabled setup!')
    node = cluster.state.lookup(name)
    if node is None:
        raise RedisError(f'ERR Unknown node {as_text(name)}')
    way = lower(direction)
    if way not in ('to', 'from', 'all'):
        raise RedisError(f'ERR Unknown direction {as_text(direction)}')
    for link in (node.link if way != 'from' else None, node.inbound_link if way != 'to' else None):
        if link is not None:
            link.free()
    return OK


def unknown_subcommand(args: list[bytes]) -> RedisError:
    return RedisError(
        f"ERR unknown subcommand or wrong number of arguments for "
        f"'{as_text(args[1])[:128]}'. Try DEBUG HELP."
    )


DEFAULT_PEAK_RESET_MS = 5000  # REPLY_BUFFER_DEFAULT_PEAK_RESET_TIME


def debug_replybuffer(c: Client, args: list[bytes]) -> str:
    """DEBUG REPLYBUFFER PEAK-RESET-TIME <NEVER|RESET|ms> | RESIZING <0|1>: the reply
    buffer's resizing knobs (store/reply_buffer.py; with resizing off a client's buffer
    keeps the size it has, as clientsCronResizeOutputBuffer then leaves it)."""
    what, value, buffers = lower(args[2]), args[3], c.server.reply_buffers
    if what == 'peak-reset-time':
        v = lower(value)
        if v == 'never':
            buffers.peak_reset_ms = -1
        elif v == 'reset':
            buffers.peak_reset_ms = DEFAULT_PEAK_RESET_MS
        else:
            try:
                buffers.peak_reset_ms = int(value)
            except ValueError:
                raise RedisError('ERR value is not an integer or out of range') from None
    elif what == 'resizing':
        try:
            buffers.resizing = int(value) != 0
        except ValueError:
            buffers.resizing = False
    else:
        raise unknown_subcommand(args)
    return OK


# -- the command table --------------------------------------------------------------------
