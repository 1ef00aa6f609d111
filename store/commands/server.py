"""Server and administration commands: CONFIG, INFO, COMMAND, DEBUG, TIME, DBSIZE, FLUSHDB,
FLUSHALL, SWAPDB, LASTSAVE, SAVE, BGSAVE, SHUTDOWN.

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

import hashlib
import os
import resource
import sys
import tempfile
import time

from ..args import E_SYNTAX, int_arg, lower
from ..command_table import Command, subcommand
from ..config import PARAMS, PROTECTED, TABLE, ConfigError
from ..expiry.stats import expiry_info_fields
from ..pubsub import pubsub_info_fields
from ..pubsub.glob import glob_match
from ..resp import OK, Map, Raw, RedisError, Set, Verbatim, split_args, string2ll, to_bytes

_perf_ns = time.perf_counter_ns


def _text(b):
    return b.decode('utf-8', 'surrogateescape')


def _is_local(c):
    """islocalClient: a Unix socket or a loopback peer."""
    peer = c.transport.get_extra_info('peername') if c.transport is not None else None
    if not isinstance(peer, tuple):
        return True
    return peer[0] in ('127.0.0.1', '::1')


def _allowed(c, setting):
    """allowProtectedAction for enable-debug-command / enable-protected-configs."""
    return setting == 'yes' or (setting == 'local' and _is_local(c))


def _dispatch(c, args):
    """Run a container's subcommand (command_table.subcommand), also keeping the
    subcommand's time and failed/rejected counts for INFO commandstats."""
    container = c.table.get(args[0]) or c.table[args[0].lower()]
    sub = container.subcommands.get(_text(args[1]).lower())
    t0 = _perf_ns()
    try:
        return subcommand(container, c, args)
    except RedisError:
        if sub is not None:
            if sub.arity_ok(len(args)):
                sub.failed += 1
            else:
                sub.rejected += 1
        raise
    finally:
        if sub is not None and sub.arity_ok(len(args)):
            sub.ns += _perf_ns() - t0


def unique_commands(server):
    """The top-level Command entries, once each (the table is keyed by lower and upper
    case names)."""
    seen = set()
    out = []
    for cmd in server.commands.values():
        if id(cmd) not in seen:
            seen.add(id(cmd))
            out.append(cmd)
    return out


def lookup_command(server, name):
    """lookupCommandBySds: 'get' or 'config|get', case-insensitively; None if unknown."""
    base, _, sub = _text(name).lower().partition('|')
    cmd = server.commands.get(base.encode())
    if cmd is None or not sub:
        return cmd
    return cmd.subcommands.get(sub)


def total_commands(server):
    return sum(cmd.calls for cmd in unique_commands(server))


# -- CONFIG -------------------------------------------------------------------------------

CONFIG_HELP = [
    'CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'GET <pattern>',
    '    Return parameters matching the glob-like <pattern> and their values.',
    'SET <directive> <value>',
    '    Set the configuration <directive> to <value>.',
    'RESETSTAT',
    '    Reset statistics reported by the INFO command.',
    'REWRITE',
    '    Rewrite the configuration file.',
    'HELP',
    '    Prints this help.',
]


def config_get(c, args):
    """Exact names are looked up as typed (an alias is answered under the alias); glob
    patterns match every name and alias case-insensitively. Each name appears once."""
    config = c.server.config
    matches = {}        # lower-case name -> (name as replied, canonical name)
    for pattern in args[2:]:
        text = _text(pattern)
        if not any(ch in text for ch in '[*?'):
            param = TABLE.get(text.lower())
            if param is not None and text.lower() not in matches:
                matches[text.lower()] = (text, param.name)
            continue
        for name, param in TABLE.items():
            if name not in matches and glob_match(pattern, name.encode(), nocase=True):
                matches[name] = (name, param.name)
    return Map([(shown.encode('utf-8', 'surrogateescape'), config.render(name).encode())
                for shown, name in matches.values()])


def _set_failed(name, reason):
    return RedisError(f"ERR CONFIG SET failed (possibly related to argument '{name}') - "
                      f'{reason}')


def config_set(c, args):
    """Check every name (unknown, immutable, protected, duplicate), then parse every value,
    and only then store them all and apply them: a failure changes nothing."""
    if len(args) % 2:
        raise RedisError(E_SYNTAX)
    server = c.server
    config = server.config
    chosen = []
    seen = set()
    for i in range(2, len(args), 2):
        name = _text(args[i])
        key = name.lower()
        param = TABLE.get(key)
        if param is None:
            raise RedisError(f"ERR Unknown option or number of arguments for CONFIG SET - "
                             f"'{name}'")
        if not param.mutable:
            raise _set_failed(name, "can't set immutable config")
        if param.name in PROTECTED and not _allowed(c, config['enable-protected-configs']):
            raise _set_failed(name, "can't set protected config")
        if key in seen:
            raise _set_failed(name, 'duplicate parameter')
        seen.add(key)
        chosen.append((key, param, _text(args[i + 1])))
    new = []
    for key, param, value in chosen:
        try:
            parsed = param.parse([value])
        except ConfigError as e:
            raise _set_failed(key, e) from None
        if isinstance(parsed, dict):    # client-output-buffer-limit: only the classes given
            parsed = {**config.values[param.name], **parsed}
        new.append((param, parsed))
    for param, parsed in new:
        config.values[param.name] = parsed
    for param, _ in new:
        server.apply_config(param.name)
    return OK


def reset_stats(server):
    """CONFIG RESETSTAT: server counters, keyspace counters, per-command counters."""
    server.stats.reset()
    server.keyspace.reset_stats()
    for cmd in unique_commands(server):
        for each in cmd.all():
            each.reset_stats()
    sampler = getattr(server, 'ops_sampler', None)
    if sampler is not None:
        sampler.reset()


def config_resetstat(c, args):
    reset_stats(c.server)
    c.table[b'config'].subcommands['resetstat'].calls = 1    # this call, counted after it
    return OK


def config_rewrite(c, args):
    server = c.server
    if not server.config.file:
        raise RedisError('ERR The server is running without a config file')
    try:
        rewrite_config(server.config, server.config.file)
    except OSError as e:
        server.log(f'CONFIG REWRITE failed: {e.strerror or e}', '#')
        raise RedisError(f'ERR Rewriting config file: {e.strerror or e}') from None
    server.log('CONFIG REWRITE executed with success.')
    return OK


def config_help(c, args):
    return CONFIG_HELP


def config(c, args):
    return _dispatch(c, args)


# -- CONFIG REWRITE (config.c's rewriteConfig) --------------------------------------------

SIGNATURE = '# Generated by CONFIG REWRITE'
# Directives the file may hold that are not parameters; their lines are kept as they are.
_KEPT_DIRECTIVES = ('include', 'rename-command', 'user', 'loadmodule', 'sentinel')


def format_memory(n):
    """rewriteConfigFormatMemory: 1gb, 100mb, 4kb or plain bytes."""
    for unit, size in (('gb', 1024**3), ('mb', 1024**2), ('kb', 1024)):
        if n and n % size == 0:
            return f'{n // size}{unit}'
    return str(n)


def quote(s):
    """sdscatrepr: a double-quoted string with C escapes."""
    out = ['"']
    for ch in s.encode('utf-8', 'surrogateescape'):
        c = chr(ch)
        if c in '\\"':
            out.append('\\' + c)
        elif c in '\n\r\t\a\b':
            out.append({'\n': '\\n', '\r': '\\r', '\t': '\\t', '\a': '\\a', '\b': '\\b'}[c])
        elif 32 <= ch < 127:
            out.append(c)
        else:
            out.append(f'\\x{ch:02x}')
    out.append('"')
    return ''.join(out)


def _rewrite_lines(config, param):
    """The lines one parameter rewrites to, each with whether it must be written even
    when the old file does not mention the parameter (its value is not the default)."""
    name, value = param.name, config.values[param.name]
    force = value != param.default
    if name == 'save':
        words = value.split()
        if not words:
            return [('save ""', True)]
        return [(f'save {words[i]} {words[i + 1]}', True) for i in range(0, len(words), 2)]
    if name == 'client-output-buffer-limit':
        return [(f'{name} {cls} {format_memory(hard)} {format_memory(soft)} {secs}',
                 (hard, soft, secs) != param.default[cls])
                for cls, (hard, soft, secs) in sorted(
                    value.items(), key=lambda kv: ('normal', 'slave', 'pubsub').index(kv[0]))]
    if param.kind == 'mem':
        text = format_memory(value)
    elif param.kind == 'str' or name in ('notify-keyspace-events', 'keyevent-journal-events'):
        text = quote(config.render(name))
    else:
        text = config.render(name)
    return [(f'{name} {text}', force)]


def rewrite_config(config, path):
    """Keep the file's comments, blank lines and unknown directives; replace each
    parameter's lines in place; append parameters that differ from their default after a
    '# Generated by CONFIG REWRITE' line; drop leftover lines of rewritten parameters."""
    try:
        with open(path, encoding='utf-8', errors='surrogateescape') as f:
            old = f.read().split('\n')
        if old[-1] == '':
            old.pop()           # the newline ending the last line
    except FileNotFoundError:
        old = []
    lines = []
    positions = {}          # canonical option name -> indexes in `lines`
    has_signature = False
    for raw in old:
        line = raw.strip('\r\n\t ')
        if not line or line.startswith('#'):
            has_signature = has_signature or line == SIGNATURE
            lines.append(line)
            continue
        argv = split_args(line.encode('utf-8', 'surrogateescape'))
        name = _text(argv[0]).lower() if argv else ''
        if name not in TABLE and name not in _KEPT_DIRECTIVES:
            lines.append('# ??? ' + line)
            continue
        name = TABLE[name].name if name in TABLE else name
        positions.setdefault(name, []).append(len(lines))
        lines.append(line)
    for param in PARAMS:
        slots = positions.pop(param.name, [])
        for text, force in _rewrite_lines(config, param):
            if slots:
                lines[slots.pop(0)] = text
            elif force:
                if not has_signature:
                    lines.append(SIGNATURE)
                    has_signature = True
                lines.append(text)
        for i in slots:         # the parameter now takes fewer lines than the file had
            lines[i] = ''
    content = []
    for line in lines:
        if line == '' and content and content[-1] == '':
            continue            # every run of blank lines becomes one
        content.append(line)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix='.config-rewrite-', dir=directory)
    try:
        with os.fdopen(fd, 'w', encoding='utf-8', errors='surrogateescape') as f:
            f.write(''.join(line + '\n' for line in content))
            f.flush()
            os.fsync(f.fileno())
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# -- INFO ---------------------------------------------------------------------------------

DEFAULT_SECTIONS = ('server', 'clients', 'memory', 'persistence', 'stats', 'replication',
                    'cpu', 'module_list', 'errorstats', 'cluster', 'keyspace')
ALL_ONLY_SECTIONS = ('commandstats', 'latencystats')


def bytes_to_human(n):
    """bytesToHuman: 812B, 1.16M, 23.54G."""
    if n < 1024:
        return f'{n}B'
    for unit, power in (('K', 1), ('M', 2), ('G', 3), ('T', 4), ('P', 5)):
        if n < 1024 ** (power + 1):
            return f'{n / 1024 ** power:.2f}{unit}'
    return f'{n}B'


def rss_bytes():
    try:
        with open('/proc/self/statm') as f:
            return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def system_memory():
    try:
        return os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')
    except (OSError, ValueError):
        return 0


class OpsSampler:
    """instantaneous_ops_per_sec and the kbps figures, as Redis computes them: a sample
    every 100 ms (from the server's cron), averaged over the last 16."""

    SAMPLES = 16

    def __init__(self, server):
        self.server = server
        self.reset()
        server.cron_hooks.append(self.tick)

    def reset(self):
        self.last = None
        self.ops = [0.0] * self.SAMPLES
        self.inp = [0.0] * self.SAMPLES
        self.out = [0.0] * self.SAMPLES
        self.i = 0

    def counters(self):
        stats = self.server.stats
        return (time.monotonic(), total_commands(self.server), stats.net_input_bytes,
                stats.net_output_bytes)

    def tick(self, now):
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

    def ops_per_sec(self):
        return int(sum(self.ops) / self.SAMPLES)

    def kbps(self):
        return sum(self.inp) / self.SAMPLES, sum(self.out) / self.SAMPLES


def sampler(server):
    s = getattr(server, 'ops_sampler', None)
    if s is None:
        s = server.ops_sampler = OpsSampler(server)
    return s


def _server_section(server):
    now = time.time()
    uname = os.uname()
    cfg = server.config
    from ..server import VERSION
    return [
        ('redis_version', VERSION), ('redis_git_sha1', '00000000'), ('redis_git_dirty', 0),
        ('redis_build_id', '0'), ('redis_mode', 'standalone'),
        ('os', f'{uname.sysname} {uname.release} {uname.machine}'),
        ('arch_bits', 64 if sys.maxsize > 2**32 else 32),
        ('monotonic_clock', 'POSIX clock_gettime'),
        ('multiplexing_api', 'epoll' if sys.platform.startswith('linux') else 'kqueue'),
        ('atomicvar_api', 'c11-builtin'), ('gcc_version', '0.0.0'),
        ('process_id', os.getpid()), ('process_supervised', 'no'), ('run_id', server.run_id),
        ('tcp_port', server.port), ('server_time_usec', time.time_ns() // 1000),
        ('uptime_in_seconds', int(now - server.start_time)),
        ('uptime_in_days', int(now - server.start_time) // 86400),
        ('hz', cfg['hz']), ('configured_hz', cfg['hz']),
        ('lru_clock', int(now) & 0xFFFFFF), ('executable', sys.executable),
        ('config_file', server.config.file or ''), ('io_threads_active', 0),
    ]


def _clients_section(server):
    clients = list(server.clients.values())
    max_in = max((len(c.parser.buf) for c in clients if c.parser is not None), default=0)
    return [
        ('connected_clients', len(clients)), ('cluster_connections', 0),
        ('maxclients', server.config['maxclients']),
        ('client_recent_max_input_buffer', max_in), ('client_recent_max_output_buffer', 0),
        ('blocked_clients', sum(1 for c in clients if getattr(c, 'blocked', None))),
        ('tracking_clients', 0), ('clients_in_timeout_table', 0),
    ]


def _memory_section(server):
    rss = rss_bytes()
    stats = server.stats
    peak = max(getattr(stats, 'peak_memory', 0), rss)
    stats.peak_memory = peak
    total = system_memory()
    maxmemory = server.config['maxmemory']
    return [
        ('used_memory', rss), ('used_memory_human', bytes_to_human(rss)),
        ('used_memory_rss', rss), ('used_memory_rss_human', bytes_to_human(rss)),
        ('used_memory_peak', peak), ('used_memory_peak_human', bytes_to_human(peak)),
        ('used_memory_peak_perc', f'{100 * rss / peak:.2f}%'),
        ('used_memory_overhead', 0), ('used_memory_startup', 0),
        ('used_memory_dataset', rss), ('used_memory_dataset_perc', '100.00%'),
        ('allocator_allocated', rss), ('allocator_active', rss), ('allocator_resident', rss),
        ('total_system_memory', total), ('total_system_memory_human', bytes_to_human(total)),
        ('used_memory_lua', 0), ('used_memory_vm_eval', 0), ('used_memory_lua_human', '0B'),
        ('used_memory_scripts_eval', 0), ('number_of_cached_scripts', 0),
        ('number_of_functions', 0), ('number_of_libraries', 0),
        ('used_memory_vm_functions', 0), ('used_memory_vm_total', 0),
        ('used_memory_vm_total_human', '0B'), ('used_memory_functions', 0),
        ('used_memory_scripts', 0), ('used_memory_scripts_human', '0B'),
        ('maxmemory', maxmemory), ('maxmemory_human', bytes_to_human(maxmemory)),
        ('maxmemory_policy', server.config['maxmemory-policy']),
        ('allocator_frag_ratio', '1.00'), ('allocator_frag_bytes', 0),
        ('allocator_rss_ratio', '1.00'), ('allocator_rss_bytes', 0),
        ('rss_overhead_ratio', '1.00'), ('rss_overhead_bytes', 0),
        ('mem_fragmentation_ratio', '1.00'), ('mem_fragmentation_bytes', 0),
        ('mem_not_counted_for_evict', 0), ('mem_replication_backlog', 0),
        ('mem_total_replication_buffers', 0), ('mem_clients_slaves', 0),
        ('mem_clients_normal', 0), ('mem_cluster_links', 0), ('mem_aof_buffer', 0),
        ('mem_allocator', 'libc'), ('active_defrag_running', 0),
        ('lazyfree_pending_objects', 0), ('lazyfreed_objects', 0),
    ]


def _persistence_section(server):
    return [
        ('loading', 0), ('async_loading', 0), ('current_cow_peak', 0),
        ('current_cow_size', 0), ('current_cow_size_age', 0), ('current_fork_perc', '0.00'),
        ('current_save_keys_processed', 0), ('current_save_keys_total', 0),
        ('rdb_changes_since_last_save', 0), ('rdb_bgsave_in_progress', 0),
        ('rdb_last_save_time', server.lastsave), ('rdb_last_bgsave_status', 'ok'),
        ('rdb_last_bgsave_time_sec', -1), ('rdb_current_bgsave_time_sec', -1),
        ('rdb_saves', getattr(server.stats, 'rdb_saves', 0)), ('rdb_last_cow_size', 0),
        ('rdb_last_load_keys_expired', 0), ('rdb_last_load_keys_loaded', 0),
        ('aof_enabled', 0), ('aof_rewrite_in_progress', 0), ('aof_rewrite_scheduled', 0),
        ('aof_last_rewrite_time_sec', -1), ('aof_current_rewrite_time_sec', -1),
        ('aof_last_bgrewrite_status', 'ok'), ('aof_rewrites', 0),
        ('aof_rewrites_consecutive_failures', 0), ('aof_last_write_status', 'ok'),
        ('aof_last_cow_size', 0), ('module_fork_in_progress', 0),
        ('module_fork_last_cow_size', 0),
    ]


def _stats_section(server):
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
        ('total_net_repl_input_bytes', 0), ('total_net_repl_output_bytes', 0),
        ('instantaneous_input_kbps', f'{kbps_in:.2f}'),
        ('instantaneous_output_kbps', f'{kbps_out:.2f}'),
        ('instantaneous_input_repl_kbps', '0.00'), ('instantaneous_output_repl_kbps', '0.00'),
        ('rejected_connections', stats.rejected_connections),
        ('sync_full', 0), ('sync_partial_ok', 0), ('sync_partial_err', 0),
        ('expired_keys', ks.expired_keys), ('expired_stale_perc', '0.00'),
        ('expired_time_cap_reached_count', ks.expire_time_cap_reached),
        ('expire_cycle_cpu_milliseconds', int(ks.expire_cycle_ms)),
        *expiry_info_fields(server),
        ('evicted_keys', getattr(ks, 'evicted_keys', 0)), ('evicted_clients', 0),
        ('total_eviction_exceeded_time', 0), ('current_eviction_exceeded_time', 0),
        ('keyspace_hits', ks.hits), ('keyspace_misses', ks.misses),
        *pubsub_info_fields(server),
        ('latest_fork_usec', 0), ('total_forks', 0), ('migrate_cached_sockets', 0),
        ('slave_expires_tracked_keys', 0), ('active_defrag_hits', 0),
        ('active_defrag_misses', 0), ('active_defrag_key_hits', 0),
        ('active_defrag_key_misses', 0), ('total_active_defrag_time', 0),
        ('current_active_defrag_time', 0), ('tracking_total_keys', 0),
        ('tracking_total_items', 0), ('tracking_total_prefixes', 0),
        ('unexpected_error_replies', 0),
        ('total_error_replies', sum(cmd.failed + cmd.rejected for cmd in commands)),
        ('dump_payload_sanitizations', 0), ('total_reads_processed', 0),
        ('total_writes_processed', 0), ('io_threaded_reads_processed', 0),
        ('io_threaded_writes_processed', 0), ('reply_buffer_shrinks', 0),
        ('reply_buffer_expands', 0),
    ]


def _replication_section(server):
    return [
        ('role', 'master'), ('connected_slaves', 0), ('master_failover_state', 'no-failover'),
        ('master_replid', server.run_id), ('master_replid2', '0' * 40),
        ('master_repl_offset', 0), ('second_repl_offset', -1), ('repl_backlog_active', 0),
        ('repl_backlog_size', 1048576), ('repl_backlog_first_byte_offset', 0),
        ('repl_backlog_histlen', 0),
    ]


def _cpu_section(server):
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        main = resource.getrusage(resource.RUSAGE_THREAD)
    except (AttributeError, ValueError):
        main = me
    return [
        ('used_cpu_sys', f'{me.ru_stime:.6f}'), ('used_cpu_user', f'{me.ru_utime:.6f}'),
        ('used_cpu_sys_children', f'{kids.ru_stime:.6f}'),
        ('used_cpu_user_children', f'{kids.ru_utime:.6f}'),
        ('used_cpu_sys_main_thread', f'{main.ru_stime:.6f}'),
        ('used_cpu_user_main_thread', f'{main.ru_utime:.6f}'),
    ]


def _cmdstat(cmd):
    per_call = cmd.ns / 1000 / cmd.calls if cmd.calls else 0
    return (f'cmdstat_{cmd.name}',
            f'calls={cmd.calls},usec={cmd.ns // 1000},usec_per_call={per_call:.2f},'
            f'rejected_calls={cmd.rejected},failed_calls={cmd.failed}')


def _commandstats_section(server):
    """Commands that were called, failed or rejected; a container shows its subcommands
    ('cmdstat_config|get'), as in Redis 7.0."""
    out = []
    for cmd in unique_commands(server):
        for each in (cmd.subcommands.values() if cmd.subcommands else (cmd,)):
            if each.calls or each.failed or each.rejected:
                out.append(_cmdstat(each))
    return out


def _avg_ttl(ks, db, now_ms, limit=128):
    """The mean remaining TTL (ms) of up to `limit` volatile keys."""
    total = n = 0
    for s in ks.shards:
        for deadline in s.expires[db].values():
            total += max(deadline - now_ms, 0)
            n += 1
            if n >= limit:
                return total // n
    return total // n if n else 0


def _keyspace_section(server):
    ks = server.keyspace
    now_ms = time.time_ns() // 1_000_000
    out = []
    for db in range(ks.databases):
        keys = ks.dbsize(db)
        if keys:
            out.append((f'db{db}', f'keys={keys},expires={ks.volatile_count(db)},'
                                   f'avg_ttl={_avg_ttl(ks, db, now_ms)}'))
    return out


# (section name in the request, header, fields)
_SECTIONS = [
    ('server', 'Server', _server_section),
    ('clients', 'Clients', _clients_section),
    ('memory', 'Memory', _memory_section),
    ('persistence', 'Persistence', _persistence_section),
    ('stats', 'Stats', _stats_section),
    ('replication', 'Replication', _replication_section),
    ('cpu', 'CPU', _cpu_section),
    ('module_list', 'Modules', lambda server: []),
    ('commandstats', 'Commandstats', _commandstats_section),
    ('errorstats', 'Errorstats', lambda server: []),
    ('latencystats', 'Latencystats', lambda server: []),
    ('cluster', 'Cluster', lambda server: [('cluster_enabled', 0)]),
    ('keyspace', 'Keyspace', _keyspace_section),
]


def info_text(server, names=()):
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
    parts = []
    for key, header, fields in _SECTIONS:
        if not (every or key in wanted):
            continue
        lines = [f'# {header}\r\n']
        lines.extend(f'{name}:{value}\r\n' for name, value in fields(server))
        parts.append(''.join(lines))
    return '\r\n'.join(parts)


def info(c, args):
    text = info_text(c.server, [_text(a) for a in args[1:]]).encode('utf-8', 'replace')
    return Verbatim(text) if c.proto == 3 else text


# -- COMMAND ------------------------------------------------------------------------------

COMMAND_HELP = [
    'COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    '(no subcommand)',
    '    Return details about all Redis commands.',
    'COUNT',
    '    Return the total number of commands in this Redis server.',
    'LIST',
    '    Return a list of all commands in this Redis server.',
    'INFO [<command-name> ...]',
    '    Return details about multiple Redis commands.',
    '    If no command names are given, documentation details for all',
    '    commands are returned.',
    'DOCS [<command-name> ...]',
    '    Return documentation details about multiple Redis commands.',
    '    If no command names are given, documentation details for all',
    '    commands are returned.',
    'GETKEYS <full-command>',
    '    Return the keys from a full Redis command.',
    'GETKEYSANDFLAGS <full-command>',
    '    Return the keys and the access flags from a full Redis command.',
    'HELP',
    '    Prints this help.',
]


def _key_flags(cmd):
    """Key-spec flags derived from the command's flags (the table has no key specs)."""
    if 'write' in cmd.flags:
        return ['RW', 'update']
    return ['RO', 'access']


def _key_specs(cmd):
    if not cmd.first_key:
        return []
    last = cmd.last_key - cmd.first_key if cmd.last_key >= 0 else cmd.last_key
    return [Map([
        (b'flags', Set(_key_flags(cmd))),
        (b'begin_search', Map([(b'type', b'index'),
                               (b'spec', Map([(b'index', cmd.first_key)]))])),
        (b'find_keys', Map([(b'type', b'range'),
                            (b'spec', Map([(b'lastkey', last), (b'keystep', cmd.step),
                                           (b'limit', 0)]))])),
    ])]


def command_info(cmd):
    """addReplyCommandInfo: name, arity, flags, first/last/step, ACL categories, tips, key
    specs, subcommands."""
    return [cmd.name.encode(), cmd.arity, Set(list(cmd.flags)), cmd.first_key, cmd.last_key,
            cmd.step, Set(list(cmd.categories)), Set([t.encode() for t in cmd.tips]),
            _key_specs(cmd), [command_info(sub) for sub in cmd.subcommands.values()]]


def _arg(name, type_, token=None, flags='', since=None, args=None):
    """One entry of a command's documented arguments (addReplyCommandArgList)."""
    items = [(b'name', name.encode()), (b'type', type_.encode())]
    if token:
        items.append((b'token', token.encode()))
    if since:
        items.append((b'since', since.encode()))
    if flags:
        items.append((b'flags', Set(flags.split())))
    if args:
        items.append((b'arguments', args))
    return Map(items)


_FLUSH_ARGS = [_arg('async', 'oneof', flags='optional', args=[
    _arg('async', 'pure-token', 'ASYNC', since='4.0.0'),
    _arg('sync', 'pure-token', 'SYNC', since='6.2.0')])]
_NAMES_ARG = [_arg('command-name', 'string', flags='optional multiple')]

# Complexity and argument documentation of this family's commands (COMMAND DOCS).
DOCS = {
    'info': ('O(1)', [_arg('section', 'string', flags='optional multiple')]),
    'time': ('O(1)', None),
    'dbsize': ('O(1)', None),
    'flushdb': ('O(N) where N is the number of keys in the selected database', _FLUSH_ARGS),
    'flushall': ('O(N) where N is the total number of keys in all databases', _FLUSH_ARGS),
    'swapdb': ('O(N) where N is the count of clients watching or blocking on keys from '
               'both databases.', [_arg('index1', 'integer'), _arg('index2', 'integer')]),
    'lastsave': ('O(1)', None),
    'save': ('O(N) where N is the total number of keys in all databases', None),
    'bgsave': ('O(1)', [_arg('schedule', 'pure-token', 'SCHEDULE', 'optional', '3.2.2')]),
    'shutdown': ('O(N) when saving, where N is the total number of keys in all databases '
                 'when saving data, otherwise O(1)', [
                     _arg('nosave_save', 'oneof', flags='optional', args=[
                         _arg('nosave', 'pure-token', 'NOSAVE'),
                         _arg('save', 'pure-token', 'SAVE')]),
                     _arg('now', 'pure-token', 'NOW', 'optional', '7.0.0'),
                     _arg('force', 'pure-token', 'FORCE', 'optional', '7.0.0'),
                     _arg('abort', 'pure-token', 'ABORT', 'optional', '7.0.0')]),
    'debug': ('Depends on subcommand.', None),
    'command': ('O(N) where N is the total number of Redis commands', None),
    'command|count': ('O(1)', None),
    'command|docs': ('O(N) where N is the number of commands to look up', _NAMES_ARG),
    'command|info': ('O(N) where N is the number of commands to look up', _NAMES_ARG),
    'command|getkeys': ('O(N) where N is the number of arguments to the command', None),
    'command|getkeysandflags': ('O(N) where N is the number of arguments to the command',
                                None),
    'command|list': ('O(N) where N is the total number of Redis commands', [
        _arg('filterby', 'oneof', 'FILTERBY', 'optional', args=[
            _arg('module-name', 'string', 'MODULE'), _arg('category', 'string', 'ACLCAT'),
            _arg('pattern', 'pattern', 'PATTERN')])]),
    'command|help': ('O(1)', None),
    'config': ('Depends on subcommand.', None),
    'config|get': ('O(N) when N is the number of configuration parameters provided', [
        _arg('parameter', 'block', flags='multiple', args=[_arg('parameter', 'string')])]),
    'config|set': ('O(N) when N is the number of configuration parameters provided', [
        _arg('parameter_value', 'block', flags='multiple', args=[
            _arg('parameter', 'string'), _arg('value', 'string')])]),
    'config|resetstat': ('O(1)', None),
    'config|rewrite': ('O(1)', None),
    'config|help': ('O(1)', None),
}


def command_docs(cmd):
    """addReplyCommandDocs: summary, since, group, complexity, arguments, subcommands."""
    items = []
    if cmd.summary:
        items.append((b'summary', cmd.summary.encode()))
    items.append((b'since', cmd.since.encode()))
    items.append((b'group', cmd.group.encode()))
    complexity, arguments = DOCS.get(cmd.name, (None, None))
    if complexity:
        items.append((b'complexity', complexity.encode()))
    if cmd.name == 'debug':
        items.append((b'doc_flags', Set(['syscmd'])))
    if arguments:
        items.append((b'arguments', arguments))
    if cmd.subcommands:
        items.append((b'subcommands', Map([(sub.name.encode(), command_docs(sub))
                                           for sub in cmd.subcommands.values()])))
    return Map(items)


def command(c, args):
    if len(args) == 1:
        return [command_info(cmd) for cmd in unique_commands(c.server)]
    return _dispatch(c, args)


def command_count(c, args):
    return len(unique_commands(c.server))


def command_info_(c, args):
    if len(args) == 2:
        return [command_info(cmd) for cmd in unique_commands(c.server)]
    out = []
    for name in args[2:]:
        cmd = lookup_command(c.server, name)
        out.append(None if cmd is None else command_info(cmd))
    return out


def command_docs_(c, args):
    if len(args) == 2:
        found = unique_commands(c.server)
    else:
        found = [cmd for cmd in (lookup_command(c.server, n) for n in args[2:]) if cmd]
    return Map([(cmd.name.encode(), command_docs(cmd)) for cmd in found])


def command_list(c, args):
    kind = arg = None
    i = 2
    while i < len(args):
        if lower(args[i]) == 'filterby' and len(args) - 1 - i == 2:
            kind = lower(args[i + 1])
            if kind not in ('module', 'aclcat', 'pattern'):
                raise RedisError(E_SYNTAX)
            arg = args[i + 2]
            i += 3
        else:
            raise RedisError(E_SYNTAX)
    out = []
    for cmd in unique_commands(c.server):
        for each in cmd.all():
            if kind == 'module':
                continue            # no modules here
            if kind == 'aclcat' and '@' + _text(arg).lower() not in each.categories:
                continue
            if kind == 'pattern' and not glob_match(arg, each.name.encode(), nocase=True):
                continue
            out.append(each.name.encode())
    return out


def _getkeys(c, args):
    """The command named by args[2:] and the positions of its keys, with Redis's errors."""
    argv = args[2:]
    cmd = c.server.commands.get(argv[0].lower())
    if cmd is not None and cmd.subcommands and len(argv) >= 2:
        cmd = cmd.subcommands.get(_text(argv[1]).lower())
    if cmd is None:
        raise RedisError('ERR Invalid command specified')
    if not cmd.first_key:
        raise RedisError('ERR The command has no key arguments')
    if not cmd.arity_ok(len(argv)):
        raise RedisError('ERR Invalid number of arguments specified for command')
    positions = cmd.key_positions(argv)
    if not positions or positions[-1] >= len(argv):
        raise RedisError('ERR Invalid arguments specified for command')
    return cmd, [argv[i] for i in positions]


def command_getkeys(c, args):
    return _getkeys(c, args)[1]


def command_getkeysandflags(c, args):
    cmd, keys = _getkeys(c, args)
    return [[key, Set(_key_flags(cmd))] for key in keys]


def command_help(c, args):
    return COMMAND_HELP


# -- DEBUG --------------------------------------------------------------------------------

E_DEBUG_DISABLED = ('ERR DEBUG command not allowed. If the enable-debug-command option is set '
                    'to "local", you can run it from a local connection, otherwise you need to '
                    'set this option in the configuration file, and then restart the server.')
E_PROTOCOL_TYPE = ('ERR Wrong protocol type name. Please use one of the following: '
                   'string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|'
                   'false')

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


def _atoi(b):
    """C atoi: the leading integer of `b`, 0 if none."""
    digits = b.strip()
    sign = -1 if digits[:1] == b'-' else 1
    digits = digits[1:] if digits[:1] in (b'-', b'+') else digits
    n = 0
    for ch in digits:
        if not 48 <= ch <= 57:
            break
        n = n * 10 + ch - 48
    return sign * n


def _strtod(b):
    """C strtod for DEBUG SLEEP: the leading number, 0.0 if none."""
    text = _text(b).strip()
    for end in range(len(text), 0, -1):
        try:
            return float(text[:end])
        except ValueError:
            continue
    return 0.0


def _encoding(value):
    try:
        from .keys import encoding_of
    except ImportError:         # pragma: no cover - keys.py is part of the package
        return 'embstr' if type(value) is bytes else 'raw'
    return encoding_of(value)


def _serialized_length(value):
    """About what the value takes in an RDB file."""
    if type(value) is bytes:
        n = string2ll(value) if len(value) <= 20 else None
        if n is not None and -2**31 <= n < 2**31:
            return 2 if -128 <= n < 128 else 3 if -32768 <= n < 32768 else 5
        return len(value) + (1 if len(value) < 64 else 2 if len(value) < 16384 else 5)
    try:
        return 1 + sum(len(x) + 1 if isinstance(x, bytes) else 9 for x in value)
    except TypeError:
        return 1


def debug_object(c, value):
    enc = _encoding(value)
    refcount = 1
    if enc == 'int' and 0 <= int(value) < 10000:
        refcount = 2147483647       # a shared integer object
    return (f'Value at:{id(value):#x} refcount:{refcount} encoding:{enc} '
            f'serializedlength:{_serialized_length(value)} lru:{int(time.time()) & 0xFFFFFF} '
            f'lru_seconds_idle:0')


def _value_digest(value):
    return hashlib.sha1(repr(value).encode('utf-8', 'surrogateescape')).digest()


def debug_digest(ks):
    """A dataset signature: XOR over keys of SHA1(db, key, value); zeros when empty."""
    acc = 0
    for db in range(ks.databases):
        for key in ks.keys(db):
            value = ks.lookup(db, key)
            if value is not None:
                h = hashlib.sha1(b'%d\0%s\0' % (db, key) + _value_digest(value)).digest()
                acc ^= int.from_bytes(h, 'big')
    return b'%040x' % acc


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
        return Raw(b'|1\r\n' + to_bytes(b'key-popularity', 3) + to_bytes([b'key:123', 90], 3)
                   + to_bytes(reply, 3))
    if kind == 'push':
        if not resp3:
            raise RedisError('ERR RESP2 is not supported by this command')
        return Raw(b'>2\r\n' + to_bytes(b'server-cpu-usage', 3) + to_bytes(42, 3)
                   + to_bytes(b'Some real reply following the push reply', 3))
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


def debug(c, args):
    """DEBUG is one command that parses its own subcommands (Redis 7.0 debugCommand), so
    its errors differ from those of containers like CONFIG."""
    server = c.server
    if not _allowed(c, server.config['enable-debug-command']):
        raise RedisError(E_DEBUG_DISABLED)
    sub, n = lower(args[1]), len(args)
    if sub == 'help' and n == 2:
        return DEBUG_HELP
    if sub == 'sleep' and n == 3:
        time.sleep(max(_strtod(args[2]), 0.0))      # blocks the loop, as in Redis
        return OK
    if sub == 'set-active-expire' and n == 3:
        if server.expiry is not None:
            server.expiry.set_enabled(bool(_atoi(args[2])))
        return OK
    if sub == 'object' and n == 3:
        value = c.ks.lookup(c.db, args[2])
        if value is None:
            raise RedisError('ERR no such key')
        return debug_object(c, value)
    if sub == 'protocol' and n == 3:
        return debug_protocol(c, lower(args[2]))
    if sub == 'reload' and n >= 2:
        return OK           # nothing is persisted, so reloading leaves the data as it is
    if sub == 'change-repl-id' and n == 2:
        server.run_id = os.urandom(20).hex()
        return OK
    if sub == 'log' and n == 3:
        server.log(f'DEBUG LOG: {_text(args[2])}', '#')
        return OK
    if sub == 'error' and n == 3:
        msg = _text(args[2])
        raise RedisError(msg[1:] if msg.startswith('-') else 'ERR ' + msg)
    if sub == 'digest' and n == 2:
        return debug_digest(c.ks)
    if sub == 'digest-value' and n >= 2:
        out = []
        for key in args[2:]:
            value = c.ks.lookup(c.db, key)
            out.append(b'0' * 40 if value is None else _value_digest(value).hex().encode())
        return out
    if sub == 'populate' and 3 <= n <= 5:
        return debug_populate(c, args)
    raise RedisError(f"ERR unknown subcommand or wrong number of arguments for "
                     f"'{_text(args[1])[:128]}'. Try DEBUG HELP.")


# -- keyspace and lifecycle ------------------------------------------------------------------

def _flush_mode(args):
    """getFlushCommandFlags: no argument, ASYNC or SYNC (both act at once here)."""
    if len(args) == 2 and lower(args[1]) in ('sync', 'async'):
        return
    if len(args) != 1:
        raise RedisError(E_SYNTAX)


def flushall(c, args):
    _flush_mode(args)
    c.ks.flushall()
    return OK


def flushdb(c, args):
    _flush_mode(args)
    c.ks.flushdb(c.db)
    return OK


def dbsize(c, args):
    return c.ks.dbsize(c.db)


def _db_index(b, msg):
    n = string2ll(b)
    if n is None or not -2**31 <= n < 2**31:
        raise RedisError(msg)
    return n


def swapdb(c, args):
    a = _db_index(args[1], 'ERR invalid first DB index')
    b = _db_index(args[2], 'ERR invalid second DB index')
    databases = c.ks.databases
    if not (0 <= a < databases and 0 <= b < databases):
        raise RedisError('ERR DB index is out of range')
    if a != b:
        c.ks.swapdb(a, b)
    return OK


def time_(c, args):
    us = time.time_ns() // 1000
    return [b'%d' % (us // 1_000_000), b'%d' % (us % 1_000_000)]


def lastsave(c, args):
    return c.server.lastsave


def _saved(server):
    """Record a save. Nothing is written: this server keeps its data in memory only."""
    server.lastsave = int(time.time())
    server.stats.rdb_saves = getattr(server.stats, 'rdb_saves', 0) + 1


def save(c, args):
    _saved(c.server)
    return OK


def bgsave(c, args):
    if len(args) > 2 or (len(args) == 2 and lower(args[1]) != 'schedule'):
        raise RedisError(E_SYNTAX)
    _saved(c.server)
    return 'Background saving started'


def shutdown(c, args):
    flags = set()
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
    if abort:
        raise RedisError('ERR No shutdown in progress.')
    c.server.request_shutdown()
    c.closing = True        # no reply: the client sees the connection close
    return Raw(b'')


# -- the command table --------------------------------------------------------------------

_ADMIN = '@admin @slow @dangerous'
_CONFIG_FLAGS = 'admin noscript loading stale'


def _sub(name, handler, arity, flags, categories, summary, since, tips=''):
    return Command(name, handler, arity, flags, categories=categories, group='server',
                   summary=summary, since=since, tips=tips)


COMMANDS = [
    Command('config', config, -2, categories='@slow', group='server',
            summary='A container for server configuration commands', since='2.0.0',
            subcommands=[
                _sub('get', config_get, -3, _CONFIG_FLAGS, _ADMIN,
                     'Get the values of configuration parameters', '2.0.0'),
                _sub('set', config_set, -4, _CONFIG_FLAGS, _ADMIN,
                     'Set configuration parameters to the given values', '2.0.0',
                     'request_policy:all_nodes response_policy:all_succeeded'),
                _sub('resetstat', config_resetstat, 2, _CONFIG_FLAGS, _ADMIN,
                     'Reset the stats returned by INFO', '2.0.0'),
                _sub('rewrite', config_rewrite, 2, _CONFIG_FLAGS, _ADMIN,
                     'Rewrite the configuration file with the in memory configuration',
                     '2.8.0'),
                _sub('help', config_help, 2, 'loading stale', '@slow',
                     'Show helpful text about the different subcommands', '5.0.0'),
            ]),
    Command('command', command, -1, 'loading stale', categories='@slow @connection',
            group='server', tips='nondeterministic_output_order',
            summary='Get array of Redis command details', since='2.8.13',
            subcommands=[
                _sub('count', command_count, 2, 'loading stale', '@slow @connection',
                     'Get total number of Redis commands', '2.8.13'),
                _sub('docs', command_docs_, -2, 'loading stale', '@slow @connection',
                     'Get array of specific Redis command documentation', '7.0.0',
                     'nondeterministic_output_order'),
                _sub('getkeys', command_getkeys, -4, 'loading stale', '@slow @connection',
                     'Extract keys given a full Redis command', '2.8.13'),
                _sub('getkeysandflags', command_getkeysandflags, -4, 'loading stale',
                     '@slow @connection',
                     'Extract keys and access flags given a full Redis command', '7.0.0'),
                _sub('info', command_info_, -2, 'loading stale', '@slow @connection',
                     'Get array of specific Redis command details, or all when no argument '
                     'is given.', '2.8.13', 'nondeterministic_output_order'),
                _sub('list', command_list, -2, 'loading stale', '@slow @connection',
                     'Get an array of Redis command names', '7.0.0',
                     'nondeterministic_output_order'),
                _sub('help', command_help, 2, 'loading stale', '@slow @connection',
                     'Show helpful text about the different subcommands', '5.0.0'),
            ]),
    Command('info', info, -1, 'loading stale', categories='@slow @dangerous', group='server',
            tips='nondeterministic_output request_policy:all_shards response_policy:special',
            summary='Get information and statistics about the server', since='1.0.0'),
    Command('debug', debug, -2, 'admin noscript loading stale', categories=_ADMIN,
            group='server', summary='A container for debugging commands', since='1.0.0'),
    Command('time', time_, 1, 'loading stale fast', categories='@fast', group='server',
            tips='nondeterministic_output', summary='Return the current server time',
            since='2.6.0'),
    Command('dbsize', dbsize, 1, 'readonly fast', categories='@keyspace @read @fast',
            group='server', tips='request_policy:all_shards response_policy:agg_sum',
            summary='Return the number of keys in the selected database', since='1.0.0'),
    Command('flushall', flushall, -1, 'write', categories='@keyspace @write @slow @dangerous',
            group='server', tips='request_policy:all_shards response_policy:all_succeeded',
            summary='Remove all keys from all databases', since='1.0.0'),
    Command('flushdb', flushdb, -1, 'write', categories='@keyspace @write @slow @dangerous',
            group='server', tips='request_policy:all_shards response_policy:all_succeeded',
            summary='Remove all keys from the current database', since='1.0.0'),
    Command('swapdb', swapdb, 3, 'write fast', categories='@keyspace @write @fast @dangerous',
            group='server', summary='Swaps two Redis databases', since='4.0.0'),
    Command('lastsave', lastsave, 1, 'loading stale fast', categories='@admin @fast @dangerous',
            group='server', tips='nondeterministic_output',
            summary='Get the UNIX time stamp of the last successful save to disk',
            since='1.0.0'),
    Command('save', save, 1, 'admin noscript no_async_loading no_multi', categories=_ADMIN,
            group='server', summary='Synchronously save the dataset to disk', since='1.0.0'),
    Command('bgsave', bgsave, -1, 'admin noscript no_async_loading', categories=_ADMIN,
            group='server', summary='Asynchronously save the dataset to disk', since='1.0.0'),
    Command('shutdown', shutdown, -1, 'admin noscript loading stale no_multi allow_busy',
            categories=_ADMIN, group='server',
            summary='Synchronously save the dataset to disk and then shut down the server',
            since='1.0.0'),
]
