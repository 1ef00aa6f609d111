"""The configuration parameters: one declarative table (PARAMS), by name and alias (TABLE).

The table holds every parameter of Redis 7.0.15's config.c, under the same names and
aliases, with the same types, defaults, bounds and flags, plus this server's own few
(shards, the keyevent journal, pub/sub dispatch, the active-expiry budget). Each entry
says how a value is parsed and rendered (`kind`, store/config_values.py), whether CONFIG
SET may change it, and, where this server has nothing that the parameter could steer, why
it is inert (`inert`): tools and test suites set replication, cluster, TLS or persistence
parameters as a matter of course, so they are accepted, validated and reported exactly as
redis-server does, and docs/config.md lists what each one does here.

Beside the table are the checks config.c runs on single parameters (its is_valid_fn) and
the apply functions that refuse or adjust a CONFIG SET value (`on_set`).
"""

from typing import TypeVar

from .config_values import (
    INT_MAX,
    INT_MIN,
    LLONG_MAX,
    UINT_MAX,
    ULLONG_MAX,
    ConfigError,
    Param,
    Settings,
)
from .proc_title import expand
from .version import VERSION

# Why a parameter is inert here (see docs/config.md): what it would steer does not exist in
# this server.
PERSISTENCE = 'persistence'  # tunes a forked child or incremental fsync: none here
REPLICATION = 'replication'  # never a replica, no diskless sync (store/replication.py)
CLUSTER = 'cluster'  # the cluster bus is plain TCP (no TLS on it yet)
TLS = 'tls'  # what Python's ssl module cannot set (store/tls.py)
MEMORY = 'memory'  # no eviction, no allocator to tune, no defragmentation
ENCODING = 'encoding'  # internal layouts this server does not use
PROCESS = 'process'  # process management: daemon, logs, signals, OOM score, threads
EXPIRY = 'expiry'  # deadline-driven expiry has no sampling effort or hz to adapt

# -- validity checks (config.c's is_valid_fn) and apply refusals ----------------------------


def _valid_dbfilename(value: str) -> None:
    if '/' in value or '\\' in value:
        raise ConfigError("dbfilename can't be a path, just a filename")


def _valid_appendfilename(value: str) -> None:
    if value == '':
        raise ConfigError("appendfilename can't be empty")
    if '/' in value or '\\' in value:
        raise ConfigError("appendfilename can't be a path, just a filename")


def _valid_appenddirname(value: str) -> None:
    if value == '':
        raise ConfigError("appenddirname can't be empty")
    if '/' in value or '\\' in value:
        raise ConfigError("appenddirname can't be a path, just a dirname")


def _valid_version(value: str) -> None:
    """announce-redis-version: MAJOR.MINOR.PATCH, as clients parse it."""
    parts = value.split('.')
    if len(parts) != 3 or not all(p.isdigit() and p.isascii() and len(p) < 6 for p in parts):
        raise ConfigError('argument must be a version of the form MAJOR.MINOR.PATCH')


def _valid_hostname(value: str) -> None:
    if len(value.encode('utf-8', 'surrogateescape')) >= 256:
        raise ConfigError('Hostnames must be less than 256 characters')
    for ch in value:
        if not (ch.isascii() and (ch.isalnum() or ch in '-.')):
            raise ConfigError('Hostnames may only contain alphanumeric characters, hyphens or dots')


# What the proc-title-template variables expand to when the template is validated: only
# whether the expansion is empty matters (no title yet, not in cluster or sentinel mode, no
# Unix socket; config-file is '-' without a file).
_TITLE_VARIABLES = {
    'title': '',
    'listen-addr': '*:6379',
    'server-mode': '',
    'port': '6379',
    'tls-port': '0',
    'unixsocket': '',
    'config-file': '-',
}


def _valid_proc_title(value: str) -> None:
    """validateProcTitleTemplate: sdstemplate must expand it (store/proc_title.py) to
    something besides spaces."""
    if not expand(value, _TITLE_VARIABLES):
        raise ConfigError('template format is invalid or contains unknown variables')


def _no_defrag(value: bool) -> None:
    """isValidActiveDefrag as Debian's build answers it (no Redis-patched jemalloc); this
    server has no defragmenter either."""
    if value:
        raise ConfigError(
            'Active defragmentation cannot be enabled: it requires a Redis server compiled '
            'with a modified Jemalloc like the one shipped by default with the Redis source '
            'distribution'
        )


def _same_shards(value: int, config: Settings) -> int:
    """shards is fixed once the keyspace exists: CONFIG SET takes back the value it has
    (as CONFIG GET * then CONFIG SET of every parameter does) and refuses another."""
    if value != config['shards']:
        raise ConfigError("can't set immutable config")
    return value


def _backlog_size(value: int, config: Settings) -> int:
    """updateReplBacklogSize: resizeReplicationBacklog raises the size to 16kb."""
    return max(value, 16 * 1024)


def _watchdog_period(value: int, config: Settings) -> int:
    """applyWatchdogPeriod: a period shorter than two cron ticks is raised to that."""
    return max(value, 1000 // config['hz'] * 2) if value else 0


# Parameters the hot path's one comparison depends on (Config.slow_ns).
MONITOR_PARAMS = frozenset(
    ('slowlog-log-slower-than', 'slowlog-max-len', 'latency-monitor-threshold', 'latency-tracking')
)


_V = TypeVar('_V')


def _monitor_changed(value: _V, config: Settings) -> _V:
    """A slowlog or latency-monitor parameter changes: the next command (this CONFIG SET
    itself) takes the slow path, which derives `slow_ns` from the stored values
    (store/latency.py), so a CONFIG SET that fails later leaves nothing stale."""
    config.slow_ns = 0
    return value


_PROTECTED_ACTION = ('no', 'yes', 'local')
_OOM_SCORE_ADJ = {'no': 'no', 'yes': 'yes', 'relative': 'yes', 'absolute': 'absolute'}
_SYSLOG_FACILITIES = ('user', *(f'local{i}' for i in range(8)))
_MAXMEMORY_POLICIES = (
    'volatile-lru',
    'volatile-lfu',
    'volatile-random',
    'volatile-ttl',
    'allkeys-lru',
    'allkeys-lfu',
    'allkeys-random',
    'noeviction',
)

# Redis 7.0.15's parameters, grouped by subsystem, then this server's own. The order is the
# order CONFIG REWRITE appends parameters in. `mutable=False` is config.c's IMMUTABLE_CONFIG
# (port and bind move the listeners when CONFIG SET changes them: store/listen.py).
PARAMS = [
    # network and clients
    Param('port', 'int', 6379, 0, 65535),
    Param('bind', 'special', '* -::*', multi=True),
    Param('protected-mode', 'bool', True),
    Param('tcp-backlog', 'int', 511, 0, INT_MAX, mutable=False),
    Param('tcp-keepalive', 'int', 300, 0, INT_MAX),  # new connections (listen.keep_alive)
    Param('socket-mark-id', 'int', 0, 0, UINT_MAX, mutable=False),  # store/listen.py
    Param('unixsocket', 'str', '', mutable=False),  # listened on (store/listen.py)
    Param('unixsocketperm', 'octal', 0, 0, 0o777, mutable=False),
    Param('timeout', 'int', 0, 0, INT_MAX),
    Param('maxclients', 'int', 10000, 1, UINT_MAX),
    Param('requirepass', 'str', ''),
    Param('proto-max-bulk-len', 'mem', 512 * 1024**2, 1024**2, LLONG_MAX),
    Param('client-query-buffer-limit', 'mem', 1024**3, 1024**2, LLONG_MAX),
    Param(
        'client-output-buffer-limit',
        'special',
        {
            'normal': (0, 0, 0),
            'slave': (256 * 1024**2, 64 * 1024**2, 60),
            'pubsub': (32 * 1024**2, 8 * 1024**2, 60),
        },
        multi=True,
    ),
    Param('maxmemory-clients', 'mem%', 0, -100, LLONG_MAX),
    Param('tracking-table-max-keys', 'int', 1000000, 0, LLONG_MAX),
    Param('io-threads', 'int', 1, 1, 128, mutable=False, inert=PROCESS),
    Param('io-threads-do-reads', 'bool', False, mutable=False, inert=PROCESS),
    # keyspace
    Param('databases', 'int', 16, 1, INT_MAX, mutable=False),
    Param('shards', 'int', 16, 1, 16384, on_set=_same_shards),
    Param('notify-keyspace-events', 'special', 0),
    Param('hz', 'int', 10, 0, INT_MAX, clamp=(1, 500)),
    Param('dynamic-hz', 'bool', True, inert=EXPIRY),
    Param('active-expire-effort', 'int', 1, 1, 10, inert=EXPIRY),
    Param('active-expire-budget-us', 'int', 1000, 10, 1000000),
    # memory: the limit and eviction (store/memory)
    Param('maxmemory', 'mem', 0, 0, ULLONG_MAX),
    Param('maxmemory-policy', 'enum', 'noeviction', choices=_MAXMEMORY_POLICIES),
    Param('maxmemory-samples', 'int', 5, 1, INT_MAX),
    Param('maxmemory-eviction-tenacity', 'int', 10, 0, 100),
    Param('lfu-log-factor', 'int', 10, 0, INT_MAX),
    Param('lfu-decay-time', 'int', 1, 0, INT_MAX),
    # lazy freeing: the value or database goes at once, its memory in steps (store/lazyfree.py)
    Param('lazyfree-lazy-eviction', 'bool', False),
    Param('lazyfree-lazy-expire', 'bool', False),
    Param('lazyfree-lazy-server-del', 'bool', False),
    Param('lazyfree-lazy-user-del', 'bool', False),
    Param('lazyfree-lazy-user-flush', 'bool', False),
    Param('activerehashing', 'bool', True, inert=MEMORY),
    Param('activedefrag', 'bool', False, valid=_no_defrag, inert=MEMORY),
    Param('active-defrag-ignore-bytes', 'mem', 100 * 1024**2, 1, LLONG_MAX, inert=MEMORY),
    Param('active-defrag-threshold-lower', 'int', 10, 0, 1000, inert=MEMORY),
    Param('active-defrag-threshold-upper', 'int', 100, 0, 1000, inert=MEMORY),
    Param('active-defrag-cycle-min', 'int', 1, 1, 99, inert=MEMORY),
    Param('active-defrag-cycle-max', 'int', 25, 1, 99, inert=MEMORY),
    Param('active-defrag-max-scan-fields', 'int', 1000, 1, LLONG_MAX, inert=MEMORY),
    Param('jemalloc-bg-thread', 'bool', True, inert=MEMORY),
    # when small aggregates convert to their big encodings (types.EncodingLimits)
    Param('hash-max-listpack-entries', 'int', 512, 0, LLONG_MAX, alias='hash-max-ziplist-entries'),
    Param('hash-max-listpack-value', 'mem', 64, 0, LLONG_MAX, alias='hash-max-ziplist-value'),
    Param('set-max-intset-entries', 'int', 512, 0, LLONG_MAX),
    Param('zset-max-listpack-entries', 'int', 128, 0, LLONG_MAX, alias='zset-max-ziplist-entries'),
    Param('zset-max-listpack-value', 'mem', 64, 0, LLONG_MAX, alias='zset-max-ziplist-value'),
    Param(
        'list-max-listpack-size',
        'int',
        -2,
        INT_MIN,
        INT_MAX,
        alias='list-max-ziplist-size',
        inert=ENCODING,
    ),
    Param('list-compress-depth', 'int', 0, 0, INT_MAX, inert=ENCODING),
    Param('stream-node-max-bytes', 'mem', 4096, 0, LLONG_MAX, inert=ENCODING),
    Param('stream-node-max-entries', 'int', 100, 0, LLONG_MAX, inert=ENCODING),
    Param('hll-sparse-max-bytes', 'mem', 3000, 0, LLONG_MAX),  # store/types/hll.py
    Param('sanitize-dump-payload', 'enum', 'no', choices=('no', 'yes', 'clients')),
    # keyspace-event journal (store/journal.py)
    Param('keyevent-journal-events', 'special', 0),
    Param('keyevent-journal-key', 'str', '__keyevents__'),
    Param('keyevent-journal-maxlen', 'int', 1000000, 1, LLONG_MAX),
    # pub/sub
    Param('async-dispatch-quota', 'int', 100, 1, INT_MAX),
    Param('publish-buffer-limit', 'mem', 128 * 1024**2, 0, LLONG_MAX),
    # the Redis version HELLO and INFO announce (docs/tracking.md)
    Param('announce-redis-version', 'str', VERSION, valid=_valid_version),
    # persistence (store/persistence); the inert ones tune what forking or rewriting
    # with a child process would need
    Param('save', 'special', '3600 1 300 100 60 10000', multi=True),
    Param('stop-writes-on-bgsave-error', 'bool', True),
    Param('rdbcompression', 'bool', True),
    Param('rdbchecksum', 'bool', True, mutable=False),
    Param('rdb-del-sync-files', 'bool', False, inert=PERSISTENCE),
    Param('rdb-save-incremental-fsync', 'bool', True, inert=PERSISTENCE),
    Param('dbfilename', 'str', 'dump.rdb', protected=True, valid=_valid_dbfilename),
    Param('dir', 'special', '.', protected=True),
    Param('appendonly', 'bool', False),
    Param(
        'appendfilename',
        'str',
        'appendonly.aof',
        mutable=False,
        valid=_valid_appendfilename,
    ),
    Param(
        'appenddirname',
        'str',
        'appendonlydir',
        mutable=False,
        valid=_valid_appenddirname,
    ),
    Param('appendfsync', 'enum', 'everysec', choices=('everysec', 'always', 'no')),
    Param('no-appendfsync-on-rewrite', 'bool', False, inert=PERSISTENCE),
    Param('auto-aof-rewrite-percentage', 'int', 100, 0, INT_MAX),
    Param('auto-aof-rewrite-min-size', 'mem', 64 * 1024**2, 0, LLONG_MAX),
    Param('aof-load-truncated', 'bool', True),
    Param('aof-use-rdb-preamble', 'bool', True),
    Param('aof-rewrite-incremental-fsync', 'bool', True, inert=PERSISTENCE),
    Param('aof-timestamp-enabled', 'bool', False),
    Param('aof-disable-auto-gc', 'bool', False),
    Param('rdb-key-save-delay', 'int', 0, INT_MIN, INT_MAX, hidden=True),
    Param('key-load-delay', 'int', 0, INT_MIN, INT_MAX, hidden=True),
    # a replica's diskless load serves clients at least every that many bytes parsed
    # (store/replica_load.py), as processEventsWhileBlocked
    Param('loading-process-events-interval-bytes', 'int', 2 * 1024**2, 1024, INT_MAX, hidden=True),
    # replication
    Param('replicaof', 'special', '', multi=True, mutable=False, alias='slaveof'),
    Param('masterauth', 'str', ''),
    Param('masteruser', 'str', ''),
    Param('replica-serve-stale-data', 'bool', True, alias='slave-serve-stale-data'),
    Param('replica-read-only', 'bool', True, alias='slave-read-only'),
    Param('replica-lazy-flush', 'bool', False, alias='slave-lazy-flush', inert=REPLICATION),
    Param('replica-ignore-maxmemory', 'bool', True, alias='slave-ignore-maxmemory'),
    Param('replica-announced', 'bool', True),
    Param('replica-ignore-disk-write-errors', 'bool', False, inert=REPLICATION),
    Param('replica-priority', 'int', 100, 0, INT_MAX, alias='slave-priority'),
    Param('replica-announce-ip', 'str', '', alias='slave-announce-ip', inert=REPLICATION),
    Param(
        'replica-announce-port', 'int', 0, 0, 65535, alias='slave-announce-port', inert=REPLICATION
    ),
    Param('repl-diskless-sync', 'bool', True),
    Param('repl-diskless-sync-delay', 'int', 5, 0, INT_MAX),
    Param('repl-diskless-sync-max-replicas', 'int', 0, 0, INT_MAX),
    Param(
        'repl-diskless-load',
        'enum',
        'disabled',
        choices=('disabled', 'on-empty-db', 'swapdb'),
    ),
    Param(
        'repl-ping-replica-period',
        'int',
        10,
        1,
        INT_MAX,
        alias='repl-ping-slave-period',
    ),
    Param('repl-timeout', 'int', 60, 1, INT_MAX),
    Param('repl-disable-tcp-nodelay', 'bool', False, inert=REPLICATION),
    Param('repl-backlog-size', 'mem', 1024**2, 1, LLONG_MAX, on_set=_backlog_size),
    Param('repl-backlog-ttl', 'int', 3600, 0, LLONG_MAX),
    Param('min-replicas-to-write', 'int', 0, 0, INT_MAX, alias='min-slaves-to-write'),
    Param('min-replicas-max-lag', 'int', 10, 0, INT_MAX, alias='min-slaves-max-lag'),
    Param(
        'propagation-error-behavior',
        'enum',
        'ignore',
        choices=('ignore', 'panic', 'panic-on-replicas'),
    ),
    Param('bind-source-addr', 'str', ''),  # the replica link's source (store/replica.py)
    # cluster mode (store/cluster)
    Param('cluster-enabled', 'bool', False, mutable=False),
    Param('cluster-config-file', 'str', 'nodes.conf', mutable=False),
    Param('cluster-port', 'int', 0, 0, 65535, mutable=False),
    Param('cluster-node-timeout', 'int', 15000, 0, LLONG_MAX),
    Param(
        'cluster-replica-validity-factor',
        'int',
        10,
        0,
        INT_MAX,
        alias='cluster-slave-validity-factor',
    ),
    Param('cluster-migration-barrier', 'int', 1, 0, INT_MAX),
    Param('cluster-allow-replica-migration', 'bool', True),
    Param('cluster-require-full-coverage', 'bool', True),
    Param(
        'cluster-replica-no-failover',
        'bool',
        False,
        alias='cluster-slave-no-failover',
    ),
    Param('cluster-allow-reads-when-down', 'bool', False),
    Param('cluster-allow-pubsubshard-when-down', 'bool', True),
    Param('cluster-announce-ip', 'str', ''),
    Param('cluster-announce-hostname', 'str', '', valid=_valid_hostname),
    Param('cluster-announce-port', 'int', 0, 0, 65535),
    Param('cluster-announce-bus-port', 'int', 0, 0, 65535),
    Param('cluster-announce-tls-port', 'int', 0, 0, 65535, inert=CLUSTER),
    Param(
        'cluster-preferred-endpoint-type',
        'enum',
        'ip',
        choices=('ip', 'hostname', 'unknown-endpoint'),
    ),
    Param('cluster-link-sendbuf-limit', 'mem', 0, 0, ULLONG_MAX),
    # TLS (store/tls.py): CONFIG SET rebuilds the contexts, or fails as Redis's applyTlsCfg
    Param('tls-port', 'int', 0, 0, 65535),
    Param('tls-cert-file', 'str', ''),
    Param('tls-key-file', 'str', ''),
    Param('tls-key-file-pass', 'str', ''),
    Param('tls-client-cert-file', 'str', ''),
    Param('tls-client-key-file', 'str', ''),
    Param('tls-client-key-file-pass', 'str', ''),
    Param('tls-dh-params-file', 'str', ''),
    Param('tls-ca-cert-file', 'str', ''),
    Param('tls-ca-cert-dir', 'str', ''),
    Param('tls-protocols', 'str', ''),
    Param('tls-ciphers', 'str', ''),
    Param('tls-ciphersuites', 'str', '', inert=TLS),
    Param('tls-auth-clients', 'enum', 'yes', choices=('no', 'yes', 'optional')),
    Param('tls-replication', 'bool', False),
    Param('tls-cluster', 'bool', False),  # MIGRATE's connections (commands/migrate.py)
    Param('tls-prefer-server-ciphers', 'bool', False),
    Param('tls-session-caching', 'bool', True),
    Param('tls-session-cache-size', 'int', 20480, 0, INT_MAX, inert=TLS),
    Param('tls-session-cache-timeout', 'int', 300, 0, INT_MAX, inert=TLS),
    # ACL and modules
    Param('aclfile', 'str', '', mutable=False),  # ACL LOAD / ACL SAVE (store/acl.py)
    Param(
        'acl-pubsub-default',
        'enum',
        'resetchannels',
        choices=('allchannels', 'resetchannels'),  # new users' channels
    ),
    Param('enable-module-command', 'enum', 'no', choices=_PROTECTED_ACTION, mutable=False),
    # the process
    Param('daemonize', 'bool', False, mutable=False),  # store/process.py, as pidfile, logfile
    Param('supervised', 'enum', 'no', choices=('upstart', 'systemd', 'auto', 'no'), mutable=False),
    Param('pidfile', 'str', '', mutable=False),
    Param('loglevel', 'enum', 'notice', choices=('debug', 'verbose', 'notice', 'warning')),
    Param('logfile', 'str', '', mutable=False),
    Param('syslog-enabled', 'bool', False, mutable=False),  # store/process.py
    Param('syslog-ident', 'str', 'redis', mutable=False),
    Param(
        'syslog-facility',
        'enum',
        'local0',
        choices=_SYSLOG_FACILITIES,
        mutable=False,
    ),
    Param('always-show-logo', 'bool', False, mutable=False),
    Param('set-proc-title', 'bool', True, mutable=False),
    Param(
        'proc-title-template',
        'str',
        '{title} {listen-addr} {server-mode}',
        valid=_valid_proc_title,
    ),
    Param('crash-log-enabled', 'bool', True),
    Param('crash-memcheck-enabled', 'bool', True, inert=PROCESS),
    Param('use-exit-on-panic', 'bool', False, hidden=True),
    Param('watchdog-period', 'int', 0, 0, INT_MAX, hidden=True, on_set=_watchdog_period),
    Param('disable-thp', 'bool', True, mutable=False, inert=PROCESS),
    Param('oom-score-adj', 'enum', 'no', choices=_OOM_SCORE_ADJ),
    Param('oom-score-adj-values', 'special', (0, 200, 800), multi=True),
    Param('server_cpulist', 'str', '', mutable=False, inert=PROCESS),
    Param('bio_cpulist', 'str', '', mutable=False, inert=PROCESS),
    Param('aof_rewrite_cpulist', 'str', '', mutable=False, inert=PROCESS),
    Param('bgsave_cpulist', 'str', '', mutable=False, inert=PROCESS),
    Param('shutdown-on-sigint', 'special', 'default', multi=True),
    Param('shutdown-on-sigterm', 'special', 'default', multi=True),
    Param('shutdown-timeout', 'int', 10, 0, INT_MAX),
    Param('ignore-warnings', 'str', '', inert=PROCESS),
    Param('enable-debug-command', 'enum', 'no', choices=_PROTECTED_ACTION, mutable=False),
    Param('enable-protected-configs', 'enum', 'no', choices=_PROTECTED_ACTION, mutable=False),
    # monitoring: the slowlog and the latency monitor (store/latency.py)
    Param('slowlog-log-slower-than', 'int', 10000, -1, LLONG_MAX, on_set=_monitor_changed),
    Param('slowlog-max-len', 'int', 128, 0, LLONG_MAX, on_set=_monitor_changed),
    Param('latency-monitor-threshold', 'int', 0, 0, LLONG_MAX, on_set=_monitor_changed),
    Param('latency-tracking', 'bool', True, on_set=_monitor_changed),
    Param('latency-tracking-info-percentiles', 'special', (50.0, 99.0, 99.9), multi=True),
    Param('acllog-max-len', 'int', 128, 0, LLONG_MAX),
    # scripting
    Param('busy-reply-threshold', 'int', 5000, 0, LLONG_MAX, alias='lua-time-limit'),
    Param('script-memory-limit', 'mem', 1024**3, 1024**2, LLONG_MAX),  # this server's own
    # Redis's CVE fixes (Debian's 7.0.15): setfenv, getfenv and newproxy for scripts
    Param('lua-enable-deprecated-api', 'bool', False, mutable=False, hidden=True),
]

# Directives a config file may still hold that Redis 7.0 reads and ignores, with the
# number of arguments it accepts for them.
DEPRECATED = {
    'list-max-ziplist-entries': 1,
    'list-max-ziplist-value': 1,
    'lua-replicate-commands': 1,
}

TABLE = {p.name: p for p in PARAMS}
for _p in PARAMS:
    if _p.alias:
        TABLE[_p.alias] = _p
