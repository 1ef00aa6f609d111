"""The memory totals: used_memory and its parts, for INFO memory, MEMORY STATS / DOCTOR and
the maxmemory check. This is the one place they are computed.

    used_memory = used_memory_startup + ks.used + overhead(server)['total']

- `ks.used` (store/keyspace_memory.py) is what the keys are charged by the size model of
  store/memory/sizes.py: key and value objects, their dict entries, TTL entries.
- `overhead` is what clients and the server hold outside the keyspace now: per connection
  a fixed cost (the Connection, its parser and transport), its query buffer (with the
  arguments of a command not yet complete, as Redis's argv_len_sum), replies
  not yet written (`conn.out` plus the transport's write buffer) and its queued pub/sub
  messages; the AOF buffer; the replication buffer (the backlog, and what replicas have
  not read, modelled as Redis 7.0's buffer shared by both: the part beyond
  repl-backlog-size is the replicas', `clients.slaves`, which maxmemory does not count);
  the cached EVAL script bodies and FUNCTION library codes; and what the two Lua VMs grew
  by since start-up.
- `used_memory_startup` is fixed once, when the server starts (the first `startup()`
  call; the server makes it before loading data and accepting clients): the Lua VMs'
  memory then plus the empty databases' tables. It is never recomputed, so a VM that
  shrinks below its start-up size is not counted negative.

used_memory excludes the Python interpreter's own code and fixed structures (tens of MB
that no command can change), so it starts near zero as Redis's does; used_memory_rss is
the real RSS, which includes them, and so does every ratio Redis derives from RSS
(mem_fragmentation_ratio is large on a small dataset, as it is for Redis, only more so).
MEMORY DOCTOR alone judges fragmentation on the RSS above the interpreter's baseline (the
RSS at start-up less used_memory_startup), or it would call every small instance
fragmented.

Where it is approximate, beyond the size model: MULTI queues, commands held while a
connection is parked, and WATCHed keys are not counted; the script and library caches are
re-summed only when their counts change (a FUNCTION LOAD REPLACE with as many functions is
seen at the next INFO or MEMORY STATS, which re-sum them). The allocator figures are those
Redis reports when built with libc malloc (mem_allocator:libc), which has no statistics:
allocator_allocated is used_memory, allocator_active and allocator_resident are the RSS
less the EVAL Lua VM.

Cost: `overhead` is O(clients) with a few attribute reads each, as the cron calls it ten
times a second to keep the maxmemory check's figure current; `figures` (INFO, MEMORY) also
counts keys per database, O(databases x shards).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import resource
import struct
import sys
from typing import Any

from ..resp import Map
from .sizes import KEY_OVERHEAD, TTL_OVERHEAD

# A connection's own objects: the Connection (slots), its hiredis reader, the transport and
# socket objects, its entry in the client registry: 2.3-2.7 KB of RSS growth per idle
# connection that sent one PING, measured over 2,000 and 4,000 connections.
CLIENT_BASE = 2560

# An empty database's dicts per shard (data, expires, access, charged), at start-up.
EMPTY_DICT = sys.getsizeof({})

# MEMORY DOCTOR's thresholds (object.c getMemoryDoctorReport).
DOCTOR_EMPTY = 5 * 1024 * 1024
DOCTOR_BYTES = 10 << 20
DOCTOR_CLIENT_BUF = 200 * 1024
DOCTOR_SCRIPTS = 1000


class State:
    """What the report keeps between calls, per server (`state`)."""

    __slots__ = ('startup', 'vm_start', 'rss_base', 'peak', 'caches_key', 'lua_caches', 'fn_caches')

    def __init__(self) -> None:
        self.startup = -1  # used_memory_startup, fixed by the first startup() call
        self.vm_start = 0  # the Lua VMs' bytes then
        self.rss_base = 0  # the RSS then, less the startup figure: the interpreter's share
        self.peak = 0  # used_memory_peak
        self.caches_key: tuple[int, int, int] | None = None  # what the cache sums are for
        self.lua_caches = 0
        self.fn_caches = 0


def state(server: Any) -> State:
    st: State | None = server.__dict__.get('memory_report')
    if st is None:
        st = server.memory_report = State()
    return st


def rss() -> int:
    """The process's resident set size in bytes (used_memory_rss)."""
    try:
        with open('/proc/self/statm') as f:
            return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _vm(server: Any) -> tuple[int, int]:
    """The EVAL and FUNCTION Lua VMs' bytes."""
    return server.scripts.engine.memory(), server.functions.engine.memory()


def startup(server: Any) -> int:
    """used_memory_startup, fixed by the first call: the Lua VMs' memory and the empty
    databases' tables when the server starts (Redis measures initial_memory_usage after
    initServer, before loading data). The server calls this at start-up; a later first
    call fixes it then."""
    st = state(server)
    if st.startup < 0:
        ks = server.keyspace
        vm = sum(_vm(server))
        st.vm_start = vm
        st.startup = vm + len(ks.shards) * ks.databases * 4 * EMPTY_DICT
        st.rss_base = max(0, rss() - st.startup)
    return st.startup


def _caches(server: Any, st: State, exact: bool) -> None:
    """Refresh the sums of the script bodies and library codes when their counts changed
    (or always when `exact`)."""
    scripts = server.scripts.cache
    ctx = server.functions.ctx
    key = (len(scripts), len(ctx.libraries), ctx.n_functions)
    if exact or key != st.caches_key:
        st.caches_key = key
        st.lua_caches = sum(len(s.body) for s in scripts.values())
        st.fn_caches = sum(len(lib.code) for lib in ctx.libraries.values())


def client_memory(conn: Any) -> int:
    """One connection's memory: its fixed cost, its query buffer (unparsed bytes and the
    arguments of a partial command), replies not yet written (ours and the transport's)
    and pub/sub messages queued for it."""
    return CLIENT_BASE + _buffers(conn)


def _buffers(conn: Any) -> int:
    n = sum(map(len, conn.out)) if conn.out else 0
    transport = conn.transport
    if transport is not None:
        try:
            n += transport.get_write_buffer_size()
        except AttributeError:  # a socket accepted while a script was busy (busy.py)
            pass
    parser = conn.parser
    if parser is not None:
        n += query_bytes(parser)
    if conn.pubsub is not None:
        n += conn.pubsub.qbytes
    total: int = n + conn.multi_bytes + conn.deferred_bytes + bookkeeping(conn)
    return total


def query_bytes(parser: Any) -> int:
    """What a request held by the exact parser takes: the query buffer (a big argument
    being read included) and a partial command's arguments parsed so far, as Redis counts
    them (argv_len_sum and the argv array, getClientMemoryUsage)."""
    n: int = parser.pending()
    args = parser.args
    if args:
        n += sum(map(len, args)) + 8 * len(args)
    return n


def bookkeeping(conn: Any) -> int:
    """What Redis's getClientMemoryUsage adds for a client's own lists and tables (the
    keys and channels themselves are shared): a listNode and a watchedKey per WATCHed key
    (multiStateMemOverhead), a listNode per pattern and a dict entry and slot per channel
    and shard channel (pubsubMemOverhead), and for CLIENT TRACKING's BCAST prefixes
    numnodes * sizeof(raxNode) * sizeof(raxNode *) (two rax nodes a prefix, about)."""
    n = 56 * len(conn.watched)
    sub = conn.pubsub
    if sub is not None:
        channels, patterns, shard = map(len, sub.sets)
        n += 24 * patterns
        for k in (channels, shard):
            if k:
                n += 24 * k + 8 * _dict_slots(k)
    tracking = conn.tracking
    if tracking is not None and tracking.prefixes:
        n += 2 * len(tracking.prefixes) * 32
    return n


def _dict_slots(n: int) -> int:
    """Buckets of a dict holding n entries (a power of two, at least 4)."""
    size = 4
    while size < n:
        size *= 2
    return size


def _replica_unsent(conn: Any) -> int:
    """The replication stream a replica's connection holds and has not sent, the stream
    waiting with a syncing replica for its payload included (Redis's replicas waiting for
    a BGSAVE hold their place in the shared replication buffer the same way)."""
    r = conn.replica
    n = r.streamed if r.start >= 0 else 0  # (waiting: the stream since `start`, in the backlog)
    if conn.out:
        n += sum(map(len, conn.out))
    transport = conn.transport
    if transport is not None:
        try:
            n += transport.get_write_buffer_size()
        except AttributeError:
            pass
    return n


def overhead(server: Any) -> dict[str, int]:
    """What clients and the server hold outside the keyspace now, by part, and 'total'
    (the part of used_memory beyond startup and the keys). O(clients); also raises the
    peak, from the keyspace's charge as it stands (settled or not)."""
    st = state(server)
    if st.startup < 0:
        startup(server)
    conns = server.clients
    clients = CLIENT_BASE * len(conns)
    repl_buf = 0  # the replication buffer's span: what the slowest replica has not read
    replicas = 0
    replica_own = 0  # the replicas' connections and query buffers, in neither part below
    for conn in conns.values():
        if conn.replica is not None and conn.is_replica():
            replicas += 1
            unsent = _replica_unsent(conn)
            if unsent > repl_buf:
                repl_buf = unsent
            parser = conn.parser  # its acknowledgements
            if parser is not None:
                replica_own += parser.pending()
        elif (
            conn.out
            or conn.parser is not None
            or conn.pubsub is not None
            or conn.multi_bytes
            or conn.deferred_bytes
            or conn.watched
            or conn.tracking is not None
        ):
            clients += _buffers(conn)
            parser = conn.parser  # what of its held request this measure counted
            conn.qbuf_counted = query_bytes(parser) if parser is not None else 0
        else:  # the common case, inline: only the transport may hold bytes
            if conn.qbuf_counted:
                conn.qbuf_counted = 0
            try:
                clients += conn.transport.get_write_buffer_size()
            except AttributeError:  # no transport yet, or a socket accepted while busy
                pass
    # Redis 7.0's replicas and backlog share one replication buffer: the backlog's part
    # (up to repl-backlog-size) counts as replication.backlog, the rest as the replicas'
    # (clients.slaves), which eviction does not count (freeMemoryGetNotCountedMemory).
    # Here each replica's transport holds its own copy of the stream: the shared buffer
    # would reach back to what the slowest one has not read.
    repl = server.replication
    backlog_size = server.config['repl-backlog-size']
    if repl.backlog is not None and len(repl.backlog) > repl_buf:
        repl_buf = len(repl.backlog)
    if replicas and repl_buf > backlog_size:
        slaves, backlog = repl_buf - backlog_size, backlog_size
    else:
        slaves, backlog = 0, repl_buf
    not_counted = repl_buf - backlog_size if repl_buf > backlog_size else 0
    clients -= CLIENT_BASE * replicas
    replica_own += CLIENT_BASE * replicas
    aof = server.persistence.aof
    aof_buffer = aof.buf_len if aof.on else 0
    _caches(server, st, False)
    vm = max(0, sum(_vm(server)) - st.vm_start)
    evicted = server.keyspace.evicted  # LFU's filter of keys evicted lately
    evicted_bytes = 0 if evicted is None else evicted.nbytes()
    walks = server.keyspace.scan_walks  # SCAN's shard snapshots
    scans = 0 if walks is None else walks.nbytes()
    total = (
        clients
        + replica_own
        + slaves
        + backlog
        + aof_buffer
        + st.lua_caches
        + st.fn_caches
        + vm
        + evicted_bytes
        + scans
    )
    used = st.startup + server.keyspace.used + total
    if used > st.peak:
        st.peak = used
    return {
        'clients.normal': clients,
        'clients.slaves': slaves,
        'replication.backlog': backlog,
        'replication.buffer': repl_buf,
        'not_counted': not_counted + aof_buffer,  # mem_not_counted_for_evict
        'aof.buffer': aof_buffer,
        'lua.caches': st.lua_caches,
        'functions.caches': st.fn_caches,
        'lua.vm': vm,
        'keys.evicted': evicted_bytes,
        'scan.snapshots': scans,
        'total': total,
    }


def used_memory(server: Any) -> int:
    """used_memory: startup + the keyspace's charge (settled first) + overhead."""
    ks = server.keyspace
    ks.settle()
    used: int = startup(server) + ks.used + overhead(server)['total']
    return used


def _f32(x: float) -> float:
    """Redis keeps these ratios in C floats: the same rounding shows the same digits."""
    f: float = struct.unpack('f', struct.pack('f', x))[0]
    return f


def figures(server: Any) -> dict[str, Any]:
    """Everything getMemoryOverheadData computes, from this server's accounting: the
    fields of MEMORY STATS plus what INFO memory and MEMORY DOCTOR derive from them."""
    st = state(server)
    ks = server.keyspace
    ks.settle()
    start = startup(server)
    _caches(server, st, True)
    parts = overhead(server)
    used = start + ks.used + parts['total']
    peak = st.peak = max(st.peak, used)
    process_rss = rss()
    vm_eval = server.scripts.engine.memory()
    # libc malloc has no statistics: Redis's cron fakes them from the RSS and used_memory
    resident = max(1, process_rss - vm_eval)
    active = resident
    allocated = max(1, used)

    dbs = []
    keys = 0
    overhead_total = start + parts['total']
    for db in range(ks.databases):
        n = ks.dbsize(db)
        if not n:
            continue
        keys += n
        main = n * KEY_OVERHEAD
        expires = ks.volatile_count(db) * TTL_OVERHEAD
        overhead_total += main + expires
        dbs.append((db, main, expires))
    net = used - start if used > start else 1
    dataset = max(0, used - overhead_total)
    return {
        'used': used,
        'peak': peak,
        'startup': start,
        'rss': process_rss,
        'rss_base': st.rss_base,
        'clients_normal': parts['clients.normal'],
        'clients_slaves': parts['clients.slaves'],
        'repl_backlog': parts['replication.backlog'],
        'repl_buffer': parts['replication.buffer'],
        'not_counted': parts['not_counted'],
        'aof_buffer': parts['aof.buffer'],
        'lua_caches': parts['lua.caches'],
        'functions_caches': parts['functions.caches'],
        'lua_vm': parts['lua.vm'],
        'vm_eval': vm_eval,
        'dbs': dbs,
        'overhead_total': overhead_total,
        'keys': keys,
        'bytes_per_key': net // keys if keys else 0,
        'dataset': dataset,
        'dataset_perc': _f32(dataset * 100 / net),
        'peak_perc': _f32(used * 100 / peak),
        'allocator_allocated': allocated,
        'allocator_active': active,
        'allocator_resident': resident,
        'allocator_frag': _f32(active / allocated),
        'allocator_frag_bytes': active - allocated,
        'allocator_rss': _f32(resident / active),
        'allocator_rss_bytes': resident - active,
        'rss_extra': _f32(process_rss / resident),
        'rss_extra_bytes': process_rss - resident,
        'total_frag': _f32(process_rss / allocated),
        'total_frag_bytes': process_rss - used,
        'lazyfree_pending_objects': ks.lazyfree.pending,  # store/lazyfree.py
        'lazyfreed_objects': ks.lazyfree.freed,
    }


def stats(server: Any) -> Map:
    """MEMORY STATS: Redis 7.0's fields in its order, a map (a flat array in RESP2) with
    one nested map per non-empty database; ratios are doubles."""
    f = figures(server)
    items: list[tuple[bytes, Any]] = [
        (b'peak.allocated', f['peak']),
        (b'total.allocated', f['used']),
        (b'startup.allocated', f['startup']),
        (b'replication.backlog', f['repl_backlog']),
        (b'clients.slaves', f['clients_slaves']),
        (b'clients.normal', f['clients_normal']),
        (b'cluster.links', 0),
        (b'aof.buffer', f['aof_buffer']),
        (b'lua.caches', f['lua_caches']),
        (b'functions.caches', f['functions_caches']),
    ]
    for db, main, expires in f['dbs']:
        items.append(
            (
                b'db.%d' % db,
                Map(
                    [
                        (b'overhead.hashtable.main', main),
                        (b'overhead.hashtable.expires', expires),
                        (b'overhead.hashtable.slot-to-keys', 0),
                    ]
                ),
            )
        )
    items += [
        (b'overhead.total', f['overhead_total']),
        (b'keys.count', f['keys']),
        (b'keys.bytes-per-key', f['bytes_per_key']),
        (b'dataset.bytes', f['dataset']),
        (b'dataset.percentage', f['dataset_perc']),
        (b'peak.percentage', f['peak_perc']),
        (b'allocator.allocated', f['allocator_allocated']),
        (b'allocator.active', f['allocator_active']),
        (b'allocator.resident', f['allocator_resident']),
        (b'allocator-fragmentation.ratio', f['allocator_frag']),
        (b'allocator-fragmentation.bytes', f['allocator_frag_bytes']),
        (b'allocator-rss.ratio', f['allocator_rss']),
        (b'allocator-rss.bytes', f['allocator_rss_bytes']),
        (b'rss-overhead.ratio', f['rss_extra']),
        (b'rss-overhead.bytes', f['rss_extra_bytes']),
        (b'fragmentation', f['total_frag']),
        (b'fragmentation.bytes', f['total_frag_bytes']),
    ]
    return Map(items)


# -- MEMORY DOCTOR ---------------------------------------------------------------------------

DOCTOR_NONE = (
    "Hi Sam, I can't find any memory issue in your instance. "
    'I can only account for what occurs on this base.\n'
)
DOCTOR_EMPTY_TEXT = (
    'Hi Sam, this instance is empty or is using very little memory, '
    "my issues detector can't be used in these conditions. "
    'Please, leave for your mission on Earth and fill it with some data. '
    'The new Sam and I will be back to our programming as soon as I '
    'finished rebooting.\n'
)
DOCTOR_HEAD = 'Sam, I detected a few issues in this Redis instance memory implants:\n\n'
DOCTOR_TAIL = "I'm here to keep you safe, Sam. I want to help you.\n"
DOCTOR_PEAK = (
    ' * Peak memory: In the past this instance used more than 150% the memory that is '
    'currently using. The allocator is normally not able to release memory after a peak, so '
    'you can expect to see a big fragmentation ratio, however this is actually harmless and '
    'is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is '
    'currently bigger than expected, the memory will be used as soon as you fill the Redis '
    'instance with more data. If the memory peak was only occasional and you want to try to '
    'reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is '
    'to shutdown and restart the instance.\n\n'
)
DOCTOR_FRAG = (
    ' * High total RSS: This instance has a memory fragmentation and RSS overhead greater '
    'than 1.4 (this means that the Resident Set Size of the Redis process is much larger than '
    'the sum of the logical allocations Redis performed). This problem is usually due either '
    'to a large peak memory (check if there is a peak memory entry above in the report) or '
    'may result from a workload that causes the allocator to fragment memory a lot. If the '
    'problem is a large peak memory, then there is no issue. Otherwise, make sure you are '
    'using the Jemalloc allocator and not the default libc malloc. Note: The currently used '
    'allocator is "libc".\n\n'
)
DOCTOR_ALLOC_FRAG = (
    ' * High allocator fragmentation: This instance has an allocator external fragmentation '
    'greater than 1.1. This problem is usually due either to a large peak memory (check if '
    'there is a peak memory entry above in the report) or may result from a workload that '
    "causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' "
    'config option.\n\n'
)
DOCTOR_PROC_RSS = (
    ' * High process RSS overhead: This instance has non-allocator RSS memory overhead is '
    'greater than 1.1 (this means that the Resident Set Size of the Redis process is much '
    'larger than the RSS the allocator holds). This problem may be due to Lua scripts or '
    'Modules.\n\n'
)
DOCTOR_CLIENTS = (
    ' * Big client buffers: The clients output buffers in this instance are greater than '
    '200K per client (on average). This may result from different causes, like Pub/Sub '
    'clients subscribed to channels bot not receiving data fast enough, so that data piles on '
    'the Redis instance output buffer, or clients sending commands with large replies or very '
    'large sequences of commands in the same pipeline. Please use the CLIENT LIST command in '
    'order to investigate the issue if it causes problems in your instance, or to understand '
    'better why certain clients are using a big amount of memory.\n\n'
)
DOCTOR_SCRIPTS_TEXT = (
    " * Many scripts: There seem to be many cached scripts in this instance (more than 1000). "
    'This may be because scripts are generated and `EVAL`ed, instead of being parameterized '
    '(with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called '
    "periodically, the scripts' caches may end up consuming most of your memory.\n\n"
)


def doctor(server: Any) -> str:
    """MEMORY DOCTOR: Redis 7.0's report (getMemoryDoctorReport) with libc's allocator
    figures. RSS-based checks use the RSS above the interpreter's baseline (see the module
    comment); replica buffers cannot occur here."""
    f = figures(server)
    used = f['used']
    if used < DOCTOR_EMPTY:
        return DOCTOR_EMPTY_TEXT
    found = []
    if f['peak'] / used > 1.5:
        found.append(DOCTOR_PEAK)
    own_rss = max(1, f['rss'] - f['rss_base'])
    resident = max(1, own_rss - f['vm_eval'])
    # total fragmentation, and libc's faked allocator fragmentation (active = resident)
    if own_rss / used > 1.4 and own_rss - used > DOCTOR_BYTES:
        found.append(DOCTOR_FRAG)
    if resident / used > 1.1 and resident - used > DOCTOR_BYTES:
        found.append(DOCTOR_ALLOC_FRAG)
    if own_rss / resident > 1.1 and own_rss - resident > DOCTOR_BYTES:
        found.append(DOCTOR_PROC_RSS)
    if f['clients_normal'] // max(1, len(server.clients)) > DOCTOR_CLIENT_BUF:
        found.append(DOCTOR_CLIENTS)
    if len(server.scripts.cache) > DOCTOR_SCRIPTS:
        found.append(DOCTOR_SCRIPTS_TEXT)
    if not found:
        return DOCTOR_NONE
    return DOCTOR_HEAD + ''.join(found) + DOCTOR_TAIL


# -- MEMORY PURGE ------------------------------------------------------------------------------


def _malloc_trim() -> Any:
    """glibc's malloc_trim, or None elsewhere."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6')
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


_TRIM = _malloc_trim()


def purge() -> None:
    """MEMORY PURGE: give the heap's free pages back to the system (glibc malloc_trim), the
    nearest thing to jemalloc's arena purge; Redis built with libc does nothing."""
    if _TRIM is not None:
        _TRIM(0)
