"""INFO: the section builders, and the sampler behind the instantaneous_* rates.

Client libraries parse INFO line by line, so the '# Section' / 'field:value' layout and the
section selection (default, all, everything, or named sections) follow Redis 7.0. Each
figure is read from where it is kept: connection and byte counters on `server.stats`, hits,
misses and expiries on the keyspace, per-command calls on the Command entries, memory
from store/memory/report.py; sections for what this server does not have (replication,
modules) carry the values of a Redis that has none of it.
"""

import os
import resource
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

from ..command_table import Command, Family
from ..config_values import render_percentile
from ..context import Client
from ..expiry.stats import expiry_info_fields
from ..latency import monitor as latency_monitor
from ..latency import percentile_us
from ..memory import report
from ..pubsub import pubsub_info_fields
from ..resp import Verbatim
from .admin import as_text, unique_commands

COMMANDS = Family('server')

# a section's 'field:value' lines
Fields = list[tuple[str, object]]


def total_commands(server: Any) -> int:
    return sum(cmd.calls for cmd in unique_commands(server))


DEFAULT_SECTIONS = (
    'server',
    'clients',
    'memory',
    'persistence',
    'stats',
    'replication',
    'cpu',
    'module_list',
    'errorstats',
    'cluster',
    'keyspace',
)
ALL_ONLY_SECTIONS = ('commandstats', 'latencystats')


def bytes_to_human(n: int) -> str:
    """bytesToHuman: 812B, 1.16M, 23.54G."""
    if n < 1024:
        return f'{n}B'
    for unit, power in (('K', 1), ('M', 2), ('G', 3), ('T', 4), ('P', 5)):
        if n < 1024 ** (power + 1):
            return f'{n / 1024**power:.2f}{unit}'
    return f'{n}B'


def system_memory() -> int:
    try:
        return os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')
    except (OSError, ValueError):
        return 0


class OpsSampler:
    """instantaneous_ops_per_sec and the kbps figures, as Redis computes them: a sample
    every 100 ms (from the server's cron), averaged over the last 16."""

    SAMPLES = 16

    last: tuple[float, int, int, int] | None

    def __init__(self, server: Any) -> None:
        self.server = server
        self.reset()
        server.cron_hooks.append(self.tick)

    def reset(self) -> None:
        self.last = None
        self.ops = [0.0] * self.SAMPLES
        self.inp = [0.0] * self.SAMPLES
        self.out = [0.0] * self.SAMPLES
        self.i = 0

    def counters(self) -> tuple[float, int, int, int]:
        stats = self.server.stats
        return (
            time.monotonic(),
            total_commands(self.server),
            stats.net_input_bytes,
            stats.net_output_bytes,
        )

    def tick(self, now: float) -> None:
        current = self.counters()
        last = self.last
        if last is not None and current[0] - last[0] < 0.1:
            return
        self.last = current
        if last is None:
            return
        dt = current[0] - last[0]
        i = self.i
        self.ops[i] = (current[1] - last[1]) / dt
        self.inp[i] = (current[2] - last[2]) / dt / 1024
        self.out[i] = (current[3] - last[3]) / dt / 1024
        self.i = (i + 1) % self.SAMPLES

    def ops_per_sec(self) -> int:
        return int(sum(self.ops) / self.SAMPLES)

    def kbps(self) -> tuple[float, float]:
        return sum(self.inp) / self.SAMPLES, sum(self.out) / self.SAMPLES


def sampler(server: Any) -> OpsSampler:
    s: OpsSampler | None = getattr(server, 'ops_sampler', None)
    if s is None:
        s = server.ops_sampler = OpsSampler(server)
    return s


def _server_section(server: Any) -> Fields:
    now = time.time()
    uname = os.uname()
    cfg = server.config
    fields = [
        ('redis_version', cfg['announce-redis-version']),
        ('redis_git_sha1', '00000000'),
        ('redis_git_dirty', 0),
        ('redis_build_id', '0'),
        ('redis_mode', 'cluster' if server.cluster is not None else 'standalone'),
        ('os', f'{uname.sysname} {uname.release} {uname.machine}'),
        ('arch_bits', 64 if sys.maxsize > 2**32 else 32),
        ('monotonic_clock', 'POSIX clock_gettime'),
        ('multiplexing_api', 'epoll' if sys.platform.startswith('linux') else 'kqueue'),
        ('atomicvar_api', 'c11-builtin'),
        ('gcc_version', '0.0.0'),
        ('process_id', os.getpid()),
        ('process_supervised', 'no'),
        ('run_id', server.run_id),
        ('tcp_port', server.port),
        ('server_time_usec', time.time_ns() // 1000),
        ('uptime_in_seconds', int(now - server.start_time)),
        ('uptime_in_days', int(now - server.start_time) // 86400),
        ('hz', cfg['hz']),
        ('configured_hz', cfg['hz']),
        ('lru_clock', int(now) & 0xFFFFFF),
        ('executable', sys.executable),
        ('config_file', server.config.file or ''),
        ('io_threads_active', 0),
    ]
    remaining = server.shutdown.remaining_ms()  # while a shutdown waits for replicas
    if remaining is not None:
        fields.append(('shutdown_in_milliseconds', remaining))
    return fields


def _clients_section(server: Any) -> Fields:
    clients = list(server.clients.values())
    max_in = max((len(c.parser.buf) for c in clients if c.parser is not None), default=0)
    return [
        ('connected_clients', len(clients) - server.replication.count()),
        ('cluster_connections', 0),
        ('maxclients', server.config['maxclients']),
        ('client_recent_max_input_buffer', max_in),
        ('client_recent_max_output_buffer', 0),
        ('blocked_clients', server.blocking.blocked_clients() + server.pause.blocked()),
        ('tracking_clients', server.tracking.clients),
        ('clients_in_timeout_table', 0),
    ]


def _memory_section(server: Any) -> Fields:
    """INFO memory, Redis 7.0's fields and formats, from store/memory/report.py (how
    used_memory is computed and where it is approximate is said there and in
    docs/memory.md); the allocator figures are those of a Redis built with libc malloc."""
    f = report.figures(server)
    used, peak, rss = f['used'], f['peak'], f['rss']
    total = system_memory()
    maxmemory = server.config['maxmemory']
    vm_eval = f['vm_eval']
    vm_functions = server.functions.engine.memory()
    functions = server.functions.ctx
    scripts_eval, function_bytes = f['lua_caches'], f['functions_caches']
    return [
        ('used_memory', used),
        ('used_memory_human', bytes_to_human(used)),
        ('used_memory_rss', rss),
        ('used_memory_rss_human', bytes_to_human(rss)),
        ('used_memory_peak', peak),
        ('used_memory_peak_human', bytes_to_human(peak)),
        ('used_memory_peak_perc', f'{f["peak_perc"]:.2f}%'),
        ('used_memory_overhead', f['overhead_total']),
        ('used_memory_startup', f['startup']),
        ('used_memory_dataset', f['dataset']),
        ('used_memory_dataset_perc', f'{f["dataset_perc"]:.2f}%'),
        ('allocator_allocated', f['allocator_allocated']),
        ('allocator_active', f['allocator_active']),
        ('allocator_resident', f['allocator_resident']),
        ('total_system_memory', total),
        ('total_system_memory_human', bytes_to_human(total)),
        ('used_memory_lua', vm_eval),
        ('used_memory_vm_eval', vm_eval),
        ('used_memory_lua_human', bytes_to_human(vm_eval)),
        ('used_memory_scripts_eval', scripts_eval),
        ('number_of_cached_scripts', len(server.scripts.cache)),
        ('number_of_functions', functions.n_functions),
        ('number_of_libraries', len(functions.libraries)),
        ('used_memory_vm_functions', vm_functions),
        ('used_memory_vm_total', vm_eval + vm_functions),
        ('used_memory_vm_total_human', bytes_to_human(vm_eval + vm_functions)),
        ('used_memory_functions', function_bytes),
        ('used_memory_scripts', scripts_eval + function_bytes),
        ('used_memory_scripts_human', bytes_to_human(scripts_eval + function_bytes)),
        ('maxmemory', maxmemory),
        ('maxmemory_human', bytes_to_human(maxmemory)),
        ('maxmemory_policy', server.config['maxmemory-policy']),
        ('allocator_frag_ratio', f'{f["allocator_frag"]:.2f}'),
        ('allocator_frag_bytes', f['allocator_frag_bytes'] % 2**64),  # %zu in Redis
        ('allocator_rss_ratio', f'{f["allocator_rss"]:.2f}'),
        ('allocator_rss_bytes', f['allocator_rss_bytes']),
        ('rss_overhead_ratio', f'{f["rss_extra"]:.2f}'),
        ('rss_overhead_bytes', f['rss_extra_bytes']),
        ('mem_fragmentation_ratio', f'{f["total_frag"]:.2f}'),
        ('mem_fragmentation_bytes', f['total_frag_bytes']),
        ('mem_not_counted_for_evict', f['not_counted']),
        ('mem_replication_backlog', f['repl_backlog']),
        ('mem_total_replication_buffers', f['repl_buffer']),
        ('mem_clients_slaves', f['clients_slaves']),
        ('mem_clients_normal', f['clients_normal']),
        ('mem_cluster_links', 0),
        ('mem_aof_buffer', f['aof_buffer']),
        ('mem_allocator', 'libc'),
        ('active_defrag_running', 0),
        ('lazyfree_pending_objects', f['lazyfree_pending_objects']),
        ('lazyfreed_objects', f['lazyfreed_objects']),
    ]


def _persistence_section(server: Any) -> Fields:
    fields: Fields = server.persistence.info()
    return fields


def _stats_section(server: Any) -> Fields:
    stats, ks = server.stats, server.keyspace
    commands = unique_commands(server)
    s = sampler(server)
    kbps_in, kbps_out = s.kbps()
    return [
        ('total_connections_received', stats.total_connections_received),
        ('total_commands_processed', sum(cmd.calls for cmd in commands)),
        ('instantaneous_ops_per_sec', s.ops_per_sec()),
        ('total_net_input_bytes', stats.net_input_bytes),
        ('total_net_output_bytes', stats.net_output_bytes),
        ('total_net_repl_input_bytes', 0),
        ('total_net_repl_output_bytes', 0),
        ('instantaneous_input_kbps', f'{kbps_in:.2f}'),
        ('instantaneous_output_kbps', f'{kbps_out:.2f}'),
        ('instantaneous_input_repl_kbps', '0.00'),
        ('instantaneous_output_repl_kbps', '0.00'),
        ('rejected_connections', stats.rejected_connections),
        ('sync_full', server.replication.full_syncs),
        ('sync_partial_ok', server.replication.partial_syncs),
        ('sync_partial_err', server.replication.partial_errors),
        ('expired_keys', ks.expired_keys),
        ('expired_stale_perc', '0.00'),
        ('expired_time_cap_reached_count', ks.expire_time_cap_reached),
        ('expire_cycle_cpu_milliseconds', int(ks.expire_cycle_ms)),
        *expiry_info_fields(server),
        ('evicted_keys', server.evictor.evicted_keys),
        ('evicted_clients', server.evictor.evicted_clients),
        ('total_eviction_exceeded_time', server.evictor.exceeded_ms()),
        ('current_eviction_exceeded_time', server.evictor.current_exceeded_ms()),
        ('keyspace_hits', ks.hits),
        ('keyspace_misses', ks.misses),
        *pubsub_info_fields(server),
        ('latest_fork_usec', 0),
        ('total_forks', server.stats.total_forks),
        ('migrate_cached_sockets', len(server.migrate_sockets.cache)),
        ('slave_expires_tracked_keys', 0),
        ('active_defrag_hits', 0),
        ('active_defrag_misses', 0),
        ('active_defrag_key_hits', 0),
        ('active_defrag_key_misses', 0),
        ('total_active_defrag_time', 0),
        ('current_active_defrag_time', 0),
        *server.tracking.info_fields(),  # tracking_total_keys, _items, _prefixes
        ('unexpected_error_replies', 0),
        ('total_error_replies', server.stats.error_replies),
        ('dump_payload_sanitizations', 0),
        ('total_reads_processed', 0),
        ('total_writes_processed', 0),
        ('io_threaded_reads_processed', 0),
        ('io_threaded_writes_processed', 0),
        ('reply_buffer_shrinks', server.reply_buffers.shrinks),
        ('reply_buffer_expands', server.reply_buffers.expands),
    ]


def _replication_section(server: Any) -> Fields:
    fields: Fields = server.replication.info()
    return fields


def _cpu_section(server: Any) -> Fields:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        main = resource.getrusage(resource.RUSAGE_THREAD)
    except (AttributeError, ValueError):
        main = me
    return [
        ('used_cpu_sys', f'{me.ru_stime:.6f}'),
        ('used_cpu_user', f'{me.ru_utime:.6f}'),
        ('used_cpu_sys_children', f'{kids.ru_stime:.6f}'),
        ('used_cpu_user_children', f'{kids.ru_utime:.6f}'),
        ('used_cpu_sys_main_thread', f'{main.ru_stime:.6f}'),
        ('used_cpu_user_main_thread', f'{main.ru_utime:.6f}'),
    ]


def _cmdstat(cmd: Command) -> tuple[str, str]:
    per_call = cmd.ns / 1000 / cmd.calls if cmd.calls else 0
    return (
        f'cmdstat_{cmd.name}',
        f'calls={cmd.calls},usec={cmd.ns // 1000},usec_per_call={per_call:.2f},'
        f'rejected_calls={cmd.rejected},failed_calls={cmd.failed}',
    )


def _commandstats_section(server: Any) -> Fields:
    """Commands that were called, failed or rejected; a container shows its subcommands
    ('cmdstat_config|get'), as in Redis 7.0."""
    out: Fields = []
    for cmd in unique_commands(server):
        for each in cmd.subcommands.values() if cmd.subcommands else (cmd,):
            if each.calls or each.failed or each.rejected:
                out.append(_cmdstat(each))
    return out


def _avg_ttl(ks: Any, db: int, now_ms: int, limit: int = 128) -> int:
    """The mean remaining TTL (ms) of up to `limit` volatile keys."""
    total = n = 0
    deadline: int
    for s in ks.shards:
        for deadline in s.deadlines(db).values():
            total += max(deadline - now_ms, 0)
            n += 1
            if n >= limit:
                return total // n
    return total // n if n else 0


def _keyspace_section(server: Any) -> Fields:
    ks = server.keyspace
    now_ms = time.time_ns() // 1_000_000
    out: Fields = []
    for db in range(ks.databases):
        keys = ks.dbsize(db)
        if keys:
            out.append(
                (
                    f'db{db}',
                    f'keys={keys},expires={ks.volatile_count(db)},'
                    f'avg_ttl={_avg_ttl(ks, db, now_ms)}',
                )
            )
    return out


def _latencystats_section(server: Any) -> Fields:
    """Each command's latency percentiles (latency-tracking-info-percentiles), in us,
    for the commands that have a histogram; nothing while latency-tracking is off."""
    mon = latency_monitor(server)
    mon.sync()
    if not mon.tracking:
        return []
    percentiles = server.config['latency-tracking-info-percentiles']
    out: Fields = []
    for cmd in unique_commands(server):
        for each in cmd.all():
            hist = mon.histogram(each)
            if hist is not None:
                values = ','.join(
                    f'p{render_percentile(p)}={percentile_us(hist, p):.3f}' for p in percentiles
                )
                out.append((f'latency_percentiles_usec_{each.name}', values))
    return out


def _errorstats_section(server: Any) -> Fields:
    """errorstat_<code>:count=<n>, codes in byte order (Redis keeps them in a rax)."""
    errors = server.stats.errors
    return [(f'errorstat_{code}', f'count={errors[code]}') for code in sorted(errors)]


# (section name in the request, header, fields)
_SECTIONS: list[tuple[str, str, Callable[[Any], Fields]]] = [
    ('server', 'Server', _server_section),
    ('clients', 'Clients', _clients_section),
    ('memory', 'Memory', _memory_section),
    ('persistence', 'Persistence', _persistence_section),
    ('stats', 'Stats', _stats_section),
    ('replication', 'Replication', _replication_section),
    ('cpu', 'CPU', _cpu_section),
    ('module_list', 'Modules', lambda server: []),
    ('commandstats', 'Commandstats', _commandstats_section),
    ('errorstats', 'Errorstats', _errorstats_section),
    ('latencystats', 'Latencystats', _latencystats_section),
    (
        'cluster',
        'Cluster',
        lambda server: [('cluster_enabled', int(server.config['cluster-enabled']))],
    ),
    ('keyspace', 'Keyspace', _keyspace_section),
]


def info_text(server: Any, names: Iterable[str] = ()) -> str:
    """genRedisInfoString: the requested sections, '# Header' then 'field:value' lines,
    sections separated by an empty line, all lines ending in CRLF."""
    names = [n.lower() for n in names]
    everything = 'everything' in names
    every = everything or 'all' in names
    wanted = set(names) if names else set(DEFAULT_SECTIONS)
    if 'default' in wanted:
        wanted.update(DEFAULT_SECTIONS)
    if 'modules' in wanted:
        wanted.add('module_list')
    parts: list[str] = []
    for key, header, fields in _SECTIONS:
        if not (every or key in wanted):
            continue
        lines = [f'# {header}\r\n']
        lines.extend(f'{name}:{value}\r\n' for name, value in fields(server))
        parts.append(''.join(lines))
    return '\r\n'.join(parts)


@COMMANDS.command(
    'info',
    -1,
    flags='loading stale',
    categories='@slow @dangerous',
    tips='nondeterministic_output request_policy:all_shards response_policy:special',
    summary='Get information and statistics about the server',
)
def info(c: Client, args: list[bytes]) -> bytes:
    text = info_text(c.server, [as_text(a) for a in args[1:]]).encode('utf-8', 'replace')
    return Verbatim(text) if c.proto == 3 else text


# -- the command table --------------------------------------------------------------------
