"""The slow log and the latency monitor (Redis 7.0's slowlog.c and latency.c), and the
per-command latency histograms behind LATENCY HISTOGRAM and INFO latencystats.

What the hot path pays: every executed command already has its duration in ns (`took`,
Connection.run, command_table.call, redis.call), appended to `cmd.took` for the counters
and the histogram (folded in by Command.settle when they are read), and one comparison,
`took >= config.slow_ns`. Only a command at least that slow calls `observe` here.
`Config.slow_ns` is the least duration either consumer could want: the slowlog's
`slowlog-log-slower-than` (us; 0 logs everything, -1 is off) and the latency monitor's
`latency-monitor-threshold` (ms; 0 is off); with both off it is past any duration. A
CONFIG SET of one of the parameters sets it to 0, so the CONFIG SET itself comes here
and `sync` derives the exact value from the stored settings: the comparison never needs
to know which parameter changed, or whether the CONFIG SET failed halfway.

The histograms are log2 buckets of ns (index = bit length), where Redis keeps an HDR
histogram of two significant digits: LATENCY HISTOGRAM's buckets are the same powers of
two Redis prints, but INFO's percentiles are only as fine as a power of two.

A server's monitor is `server.latency`, created on first use (`monitor`); it also wires the
active-expiry step's `expire-cycle` samples (store/expiry/active.py).
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from .resp import string2ll

NEVER = 1 << 62  # Config.slow_ns when neither the slowlog nor the monitor wants anything

SLOWLOG_ENTRY_MAX_ARGC = 32
SLOWLOG_ENTRY_MAX_STRING = 128
LATENCY_TS_LEN = 160  # samples kept per event, one per second at most

HIST_LEN = 65  # bit lengths 0..64 of a duration in ns
_MAX_HIST_BIT = 30  # Redis's histograms stop at 1 s (LATENCY_HISTOGRAM_MAX_VALUE): 2**30 ns
_REDACTED = b'(redacted)'
# config.c's SENSITIVE_CONFIG parameters: CONFIG SET shows their values as (redacted)
_SENSITIVE = frozenset((b'requirepass', b'masterauth', b'masteruser'))


def new_histogram() -> list[int]:
    return [0] * HIST_LEN


def monitor(server: Any) -> LatencyMonitor:
    """The server's monitor, created and wired on first use."""
    mon: LatencyMonitor | None = server.__dict__.get('latency')
    if mon is None:
        mon = server.latency = LatencyMonitor(server)
    return mon


def observe(conn: Any, cmd: Any, args: list[bytes], took: int) -> None:
    """A command ran for `took` ns, at least `Config.slow_ns`: feed the slowlog and the
    `command` / `fast-command` events as Redis's call() does. A bug here must not cost
    the command its reply (the hot path calls this between running it and replying)."""
    try:
        monitor(conn.server).command(conn, cmd, args, took)
    except Exception as e:
        conn.server.log_exception(f'Error logging {cmd.name} in the slowlog', e)


class Series:
    """latencyTimeSeries: a ring of (unix time, ms) samples, one per second, and the
    all-time maximum."""

    __slots__ = ('idx', 'max', 'samples')

    def __init__(self) -> None:
        self.idx = 0
        self.max = 0
        self.samples = [(0, 0)] * LATENCY_TS_LEN

    def add(self, ms: int, now: int) -> None:
        """latencyAddSample: a sample in the same second as the previous one only raises it."""
        if ms > self.max:
            self.max = ms
        prev = (self.idx + LATENCY_TS_LEN - 1) % LATENCY_TS_LEN
        t, latency = self.samples[prev]
        if t == now:
            if ms > latency:
                self.samples[prev] = (now, ms)
            return
        self.samples[self.idx] = (now, ms)
        self.idx = (self.idx + 1) % LATENCY_TS_LEN

    def in_order(self) -> list[tuple[int, int]]:
        """The samples oldest first, as LATENCY HISTORY and GRAPH walk them."""
        n = LATENCY_TS_LEN
        return [s for j in range(n) if (s := self.samples[(self.idx + j) % n])[0]]

    def latest(self) -> tuple[int, int]:
        return self.samples[(self.idx + LATENCY_TS_LEN - 1) % LATENCY_TS_LEN]


class LatencyMonitor:
    """One server's slow log, latency events and latency-tracking state."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.config = server.config
        self.slowlog: deque[list[Any]] = deque()  # newest first
        self.next_id = 0
        self.events: dict[str, Series] = {}
        self.slower_than = -1  # us, -1: slowlog off
        self.max_len = 0
        self.threshold = 0  # ms, 0: monitor off
        self.tracking = True
        # While latency-tracking is off every command's `hist` points to one scratch list
        # (the hot path still increments it: no flag to test there) and the real
        # histograms wait here, frozen, as Redis stops updating them.
        self.scratch = new_histogram()
        self.frozen: dict[Any, list[int]] = {}
        expiry = getattr(server, 'expiry', None)
        if expiry is not None:
            expiry.latency = self
        self.sync()

    # -- configuration ---------------------------------------------------------------------

    def sync(self) -> None:
        """Read the parameters and set `Config.slow_ns` to what they ask for."""
        cfg = self.config
        self.slower_than = cfg['slowlog-log-slower-than']
        self.max_len = cfg['slowlog-max-len']
        self.threshold = cfg['latency-monitor-threshold']
        slow = NEVER
        if self.slower_than >= 0:
            slow = self.slower_than * 1000
        if self.threshold:
            slow = min(slow, self.threshold * 1_000_000)
        cfg.slow_ns = slow
        tracking = cfg['latency-tracking']
        if tracking != self.tracking:
            self._set_tracking(tracking)

    def _set_tracking(self, on: bool) -> None:
        self.tracking = on
        every = self.server.every_command
        if not on:
            for cmd in every:
                self.frozen[cmd] = cmd.hist
                cmd.hist = self.scratch
            return
        for cmd in every:
            saved = self.frozen.get(cmd)
            if cmd.hist is not self.scratch:  # CONFIG RESETSTAT while off: counted nothing
                cmd.hist[:] = new_histogram()
            elif saved is not None:
                cmd.hist = saved
        self.frozen.clear()

    def histogram(self, cmd: Any) -> list[int] | None:
        """`cmd`'s histogram as Redis would show it, None if it has none (never ran since
        the start or CONFIG RESETSTAT; containers never have one, their subcommands do)."""
        if cmd.subcommands:
            return None
        hist: list[int] | None = cmd.hist
        if not self.tracking:  # frozen; reset by CONFIG RESETSTAT if it is not the scratch
            hist = self.frozen.get(cmd) if hist is self.scratch else None
        if hist is None or not any(hist):
            return None
        return hist

    # -- samples -----------------------------------------------------------------------------

    def command(self, conn: Any, cmd: Any, args: list[bytes], took: int) -> None:
        self.sync()
        if conn.transport is None and self.server.loading:
            return  # the AOF's commands being replayed (and scripts they run): not calls
        real = cmd
        if cmd.subcommands:
            if len(args) < 2:
                return  # a container without its subcommand: rejected, not a call
            real = cmd.subcommands.get(args[1].decode('latin-1').lower())
            if real is None or not real.arity_ok(len(args)):
                return  # Redis rejects it before running anything: not a call
        if self.threshold:
            self.add_sample('fast-command' if 'fast' in real.flags else 'command', took // 10**6)
        if self.slower_than < 0 or 'skip_slowlog' in real.flags:
            return
        if conn.blocked is not None:
            self._when_served(conn, args, took)
            return
        self._log(conn, args, took)

    def _when_served(self, conn: Any, args: list[bytes], took: int) -> None:
        """A command that blocked is logged when a write serves it, with the time of its
        first run plus the time serving took, as Redis 7.0's updateStatsOnUnblock logs it;
        a wait that ends otherwise (timeout, CLIENT UNBLOCK, disconnect) is never logged,
        as in Redis 7.0. The waiter's serve function (store/blocking.py) is wrapped to see
        that moment."""
        waiter = conn.blocked
        serve = waiter.serve

        def serve_and_log(db: int, key: bytes) -> Any:
            t0 = time.perf_counter_ns()
            reply = serve(db, key)
            if reply is not None:
                self.sync()
                if self.slower_than >= 0:
                    self._log(conn, args, took + time.perf_counter_ns() - t0)
            return reply

        waiter.serve = serve_and_log

    def _log(self, conn: Any, args: list[bytes], took: int) -> None:
        """slowlogPushEntryIfNeeded: log if at least the threshold, then trim."""
        if took // 1000 >= self.slower_than:
            self.push(conn, args, took // 1000)
        slowlog = self.slowlog
        while len(slowlog) > self.max_len:
            slowlog.pop()

    def add_sample(self, event: str, ms: int) -> None:
        """latencyAddSampleIfNeeded: record `ms` for `event` if the monitor is on and it is
        at least the threshold."""
        if self.threshold and ms >= self.threshold:
            series = self.events.get(event)
            if series is None:
                series = self.events[event] = Series()
            series.add(ms, int(time.time()))

    def timed(self, event: str, started: float) -> None:
        """An operation that began at perf_counter() `started` ends now (expiry, eviction)."""
        if self.threshold:
            self.add_sample(event, int((time.perf_counter() - started) * 1000))

    # -- slowlog -----------------------------------------------------------------------------

    def push(self, conn: Any, args: list[bytes], us: int) -> None:
        """slowlogCreateEntry: [id, time, us, args, peer, name], args redacted as the
        command would have redacted them, at most 32 of them, each cut at 128 bytes."""
        argv = redacted(args)
        argc = len(argv)
        if argc > SLOWLOG_ENTRY_MAX_ARGC:
            argv = argv[: SLOWLOG_ENTRY_MAX_ARGC - 1]
            argv.append(b'... (%d more arguments)' % (argc - SLOWLOG_ENTRY_MAX_ARGC + 1))
        argv = [
            a
            if len(a) <= SLOWLOG_ENTRY_MAX_STRING
            else a[:SLOWLOG_ENTRY_MAX_STRING]
            + b'... (%d more bytes)' % (len(a) - SLOWLOG_ENTRY_MAX_STRING)
            for a in argv
        ]
        addr = conn.addr if conn.transport is not None and conn.addr != '?' else '?:0'
        name = conn.name or ''
        entry = [self.next_id, int(time.time()), us, argv, addr.encode(), _as_bytes(name)]
        self.next_id += 1
        self.slowlog.appendleft(entry)

    def reset_slowlog(self) -> None:
        self.slowlog.clear()

    def reset_events(self, names: list[bytes] | None) -> int:
        """latencyResetEvent for each name (case-insensitively), or for all."""
        if names is None:
            n = len(self.events)
            self.events.clear()
            return n
        resets = 0
        for name in names:
            low = name.decode('utf-8', 'surrogateescape').lower()
            for event in [e for e in self.events if e.lower() == low]:
                del self.events[event]
                resets += 1
        return resets


def _as_bytes(s: str | bytes) -> bytes:
    return s if isinstance(s, bytes) else s.encode('utf-8', 'surrogateescape')


def _low(b: bytes) -> bytes:
    return b.lower()


def redacted(args: list[bytes]) -> list[bytes]:
    """The arguments as Redis's slowlog shows them once the command redacted its secrets
    (redactClientCommandArgument): AUTH's, HELLO's AUTH pair, MIGRATE's AUTH/AUTH2, CONFIG
    SET's sensitive values, ACL SETUSER's rules. A command redacts as it parses, so an
    option after a syntax error stays as sent."""
    name = _low(args[0])
    out = list(args)
    n = len(args)
    if name == b'auth':
        if n <= 3:
            out[1:] = [_REDACTED] * (n - 1)
    elif name == b'hello':
        if n >= 2:
            proto = string2ll(args[1])
            if proto is None or not 2 <= proto <= 3:
                return out  # HELLO fails before it reads its options
        j = 2
        while j < n:
            opt = _low(args[j])
            more = n - 1 - j
            if opt == b'auth' and more >= 2:
                out[j + 1] = out[j + 2] = _REDACTED
                j += 3
            elif opt == b'setname' and more:
                j += 2
            else:
                break
    elif name == b'migrate':
        j = 6
        while j < n:
            opt = _low(args[j])
            more = n - 1 - j
            if opt in (b'copy', b'replace'):
                j += 1
            elif opt == b'auth' and more:
                out[j + 1] = _REDACTED
                j += 2
            elif opt == b'auth2' and more >= 2:
                out[j + 1] = out[j + 2] = _REDACTED
                j += 3
            else:
                break
    elif name == b'config' and n > 1 and _low(args[1]) == b'set' and n % 2 == 0:
        for j in range(2, n - 1, 2):
            if _low(args[j]) in _SENSITIVE:
                out[j + 1] = _REDACTED
    elif name == b'acl' and n > 2 and _low(args[1]) == b'setuser':
        out[2:] = [_REDACTED] * (n - 2)
    return out


# -- histograms ------------------------------------------------------------------------------


def _bucket_bit(b: int) -> int:
    """Where a bit length's durations count: Redis records at least 1 ns, at most 1 s."""
    return min(max(b, 1), _MAX_HIST_BIT)


def histogram_usec(hist: list[int]) -> list[tuple[int, int]]:
    """fillCommandCDF's histogram_usec: (us, cumulative calls) at the power-of-two buckets
    from 1024 ns on, as hdr_iter_log reports them (the bucket's highest equivalent value
    at two significant digits, in us), empty buckets left out."""
    counts: dict[int, int] = {}
    for b, n in enumerate(hist):
        if n:
            b = max(_bucket_bit(b), 10)
            counts[b] = counts.get(b, 0) + n
    out = []
    total = 0
    for b in sorted(counts):
        total += counts[b]
        if b == 10:
            us = 1
        elif b >= _MAX_HIST_BIT:
            us = ((1 << _MAX_HIST_BIT) - 1) // 1000
        else:
            us = ((1 << b) + (1 << (b - 7)) - 1) // 1000
        out.append((us, total))
    return out


def percentile_us(hist: list[int], percentile: float) -> float:
    """hdr_value_at_percentile in us: the upper end of the bucket holding the requested
    rank (the lower end for the 0th percentile)."""
    total = sum(hist)
    rank = max(int(min(percentile, 100.0) / 100 * total + 0.5), 1)
    seen = 0
    for b, n in enumerate(hist):
        seen += n
        if n and seen >= rank:
            b = _bucket_bit(b)
            ns = (1 << (b - 1)) if percentile == 0.0 else (1 << b) - 1
            return min(ns, 10**9) / 1000.0
    return 0.0


# -- LATENCY DOCTOR and GRAPH ---------------------------------------------------------------


def _anon_huge_pages() -> int:
    """THPGetAnonHugePagesSize: AnonHugePages of this process, in kB."""
    for path in ('/proc/self/smaps_rollup', '/proc/self/smaps'):
        try:
            with open(path) as f:
                return sum(int(line.split()[1]) for line in f if line.startswith('AnonHugePages:'))
        except (OSError, ValueError, IndexError):
            continue
    return 0


def _analyze(series: Series) -> tuple[int, int, int, int]:
    """analyzeLatencyForEvent: (samples, avg, mad, period) of an event's samples."""
    samples = [s for s in series.samples if s[0]]
    if not samples:
        return 0, 0, 0, 0
    n = len(samples)
    avg = sum(ms for _, ms in samples) // n
    period = int(time.time()) - min(t for t, _ in samples) or 1
    mad = sum(abs(avg - ms) for _, ms in samples) // n
    return n, avg, mad, period


_DOCTOR_DISABLED = (
    "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. "
    'You may use "CONFIG SET latency-monitor-threshold <milliseconds>." in order to enable '
    "it. If we weren't in a deep space mission I'd suggest to take a look at "
    'https://redis.io/topics/latency-monitor.\n'
)

# createLatencyReport's advices, in the order it prints them: (flag, text); a text with
# {ms} names the threshold in us.
_ADVICES = [
    (
        'better_vm',
        '- If you are using a virtual machine, consider upgrading it with a faster one using a '
        'hypervisior that provides less latency during fork() calls. Xen is known to have '
        'poor fork() performance. Even in the context of the same VM provider, certain kinds '
        'of instances can execute fork faster than others.\n',
    ),
    (
        'slowlog_enabled',
        '- There are latency issues with potentially slow commands you are using. Try to '
        "enable the Slow Log Redis feature using the command 'CONFIG SET "
        "slowlog-log-slower-than {us}'. If the Slow log is disabled Redis is not able to log "
        'slow commands execution for you.\n',
    ),
    (
        'slowlog_tuning',
        '- Your current Slow Log configuration only logs events that are slower than your '
        "configured latency monitor threshold. Please use 'CONFIG SET "
        "slowlog-log-slower-than {us}'.\n",
    ),
    (
        'slowlog_inspect',
        '- Check your Slow Log to understand what are the commands you are running which are '
        'too slow to execute. Please check https://redis.io/commands/slowlog for more '
        'information.\n',
    ),
    (
        'scheduler',
        '- The system is slow to execute Redis code paths not containing system calls. This '
        'usually means the system does not provide Redis CPU time to run for long periods. '
        'You should try to:\n'
        '  1) Lower the system load.\n'
        '  2) Use a computer / VM just for Redis if you are running other software in the '
        'same system.\n'
        '  3) Check if you have a "noisy neighbour" problem.\n'
        "  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency "
        'in your system.\n'
        '  5) Check if the problem is allocator-related by recompiling Redis with '
        'MALLOC=libc, if you are using Jemalloc. However this may create fragmentation '
        'problems.\n',
    ),
    (
        'local_disk',
        '- It is strongly advised to use local disks for persistence, especially if you are '
        'using AOF. Remote disks provided by platform-as-a-service providers are known to be '
        'slow.\n',
    ),
    (
        'ssd',
        '- SSD disks are able to reduce fsync latency, and total time needed for snapshotting '
        'and AOF log rewriting (resulting in smaller memory usage). With extremely high write '
        'load SSD disks can be a good option. However Redis should perform reasonably with '
        'high load using normal disks. Use this advice as a last resort.\n',
    ),
    (
        'data_writeback',
        '- Mounting ext3/4 filesystems with data=writeback can provide a performance boost '
        'compared to data=ordered, however this mode of operation provides less guarantees, '
        'and sometimes it can happen that after a hard crash the AOF file will have a '
        'half-written command at the end and will require to be repaired before Redis '
        'restarts.\n',
    ),
    (
        'disk_contention',
        '- Try to lower the disk contention. This is often caused by other disk intensive '
        'processes running in the same computer (including other Redis instances).\n',
    ),
    (
        'no_appendfsync',
        '- Assuming from the point of view of data safety this is viable in your environment, '
        "you could try to enable the 'no-appendfsync-on-rewrite' option, so that fsync will "
        'not be performed while there is a child rewriting the AOF file or producing an RDB '
        'file (the moment where there is high disk contention).\n',
    ),
    (
        'relax_fsync_policy',
        "- Your fsync policy is set to 'always'. It is very hard to get good performances "
        "with such a setup, if possible try to relax the fsync policy to 'onesec'.\n",
    ),
    (
        'write_load_info',
        '- Latency during the AOF atomic rename operation or when the final difference is '
        'flushed to the AOF file at the end of the rewrite, sometimes is caused by very high '
        'write load, causing the AOF buffer to get very large. If possible try to send less '
        'commands to accomplish the same work, or use Lua scripts to group multiple '
        'operations into a single EVALSHA call.\n',
    ),
    (
        'hz',
        "- In order to make the Redis keys expiring process more incremental, try to set the "
        "'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n",
    ),
    (
        'large_objects',
        '- Deleting, expiring or evicting (because of maxmemory policy) large objects is a '
        'blocking operation. If you have very large objects that are often deleted, expired, '
        'or evicted, try to fragment those objects into multiple smaller objects.\n',
    ),
    (
        'mass_eviction',
        "- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large "
        'objects via sets or sorted sets intersections, STORE option of SORT, Redis Cluster '
        'large keys migrations (RESTORE command), may create sudden memory pressure forcing '
        'the server to block trying to evict keys. \n',
    ),
    (
        'disable_thp',
        '- I detected a non zero amount of anonymous huge pages used by your process. This '
        'creates very serious latency events in different conditions, especially when Redis '
        "is persisting on disk. To disable THP support use the command 'echo never > "
        "/sys/kernel/mm/transparent_hugepage/enabled', make sure to also add it into "
        '/etc/rc.local so that the command will be executed again after a reboot. Note that '
        "even if you have already disabled THP, you still need to restart the Redis process "
        'to get rid of the huge pages already created.\n',
    ),
]

# Event -> the advices it calls for, and how many it counts (createLatencyReport's
# `advices +=`, which counts some twice).
_EVENT_ADVICES = {
    'fast-command': (('scheduler',), 1),
    'aof-write-pending-fsync': (('local_disk', 'disk_contention', 'ssd', 'data_writeback'), 4),
    'aof-write-active-child': (('no_appendfsync', 'data_writeback', 'ssd'), 3),
    'aof-write-alone': (('local_disk', 'data_writeback', 'ssd'), 3),
    'aof-fsync-always': (('relax_fsync_policy',), 1),
    'aof-fstat': (('disk_contention', 'local_disk'), 2),
    'rdb-unlink-temp-file': (('disk_contention', 'local_disk'), 2),
    'aof-rewrite-diff-write': (('write_load_info', 'data_writeback', 'ssd', 'local_disk'), 4),
    'aof-rename': (('write_load_info', 'data_writeback', 'ssd', 'local_disk'), 4),
    'expire-cycle': (('hz', 'large_objects'), 2),
    'eviction-del': (('large_objects',), 1),
    'eviction-cycle': (('mass_eviction',), 1),
}


def doctor(mon: LatencyMonitor) -> str:
    """createLatencyReport."""
    mon.sync()
    cfg = mon.config
    if not mon.events and not mon.threshold:
        return _DOCTOR_DISABLED
    report = []
    advise: set[str] = set()
    advices = 0
    for num, (event, series) in enumerate(mon.events.items(), 1):
        if num == 1:
            report.append(
                'Dave, I have observed latency spikes in this Redis instance. You don\'t mind '
                'talking about it, do you Dave?\n\n'
            )
        samples, avg, mad, period = _analyze(series)
        report.append(
            f'{num}. {event}: {samples} latency spikes (average {avg}ms, mean deviation '
            f'{mad}ms, period {period / samples:.2f} sec). '
            f'Worst all time event {series.max}ms.'
        )
        low = event.lower()
        if low == 'command':
            if mon.slower_than < 0:
                advise.add('slowlog_enabled')
                advices += 1
            elif mon.slower_than // 1000 > mon.threshold:
                advise.add('slowlog_tuning')
                advices += 1
            advise.update(('slowlog_inspect', 'large_objects'))
            advices += 2
        elif low in _EVENT_ADVICES:
            names, count = _EVENT_ADVICES[low]
            advise.update(names)
            advices += count
        report.append('\n')
    if _anon_huge_pages() > 0:
        advise.add('disable_thp')
        advices += 1
    events = len(mon.events)
    if events == 0 and advices == 0:
        report.append(
            'Dave, no latency spike was observed during the lifetime of this Redis instance, '
            'not in the slightest bit. I honestly think you ought to sit down calmly, take a '
            'stress pill, and think things over.\n'
        )
    elif events > 0 and advices == 0:
        report.append(
            "\nWhile there are latency events logged, I'm not able to suggest any easy fix. "
            'Please use the Redis community to get some help, providing this report in your '
            'help request.\n'
        )
    else:
        report.append('\nI have a few advices for you:\n\n')
        for flag, text in _ADVICES:
            if flag not in advise:
                continue
            if flag == 'relax_fsync_policy' and cfg['appendfsync'] != 'always':
                continue
            if flag == 'hz' and cfg['hz'] >= 100:
                continue
            report.append(text.replace('{us}', str(mon.threshold * 1000)))
    return ''.join(report)


_GRAPH_COLS = 80
_CHARSET = '_-`'
_CHARSET_FILL = '_o#'


def _sparkline(samples: list[tuple[float, str]], rows: int = 4) -> str:
    """sparklineRender with SPARKLINE_FILL: `samples` are (value, label), rendered 80
    columns at a time, `rows` rows of bars then the labels written downwards."""
    if not samples:
        return ''
    values = [v for v, _ in samples]
    lo, hi = min(values), max(values)
    has_labels = any(label for _, label in samples)
    out = []
    for start in range(0, len(samples), _GRAPH_COLS):
        if start:
            out.append('\n')
        part = samples[start : start + _GRAPH_COLS]
        relmax = (hi - lo) or 1
        steps = len(_CHARSET) * rows
        row = 0
        while True:
            more = False
            chars = [' '] * len(part)
            for j, (value, label) in enumerate(part):
                step = int(int((value - lo) * steps) / relmax)
                step = min(max(step, 0), steps - 1)
                if row < rows:
                    idx = step - (rows - row - 1) * len(_CHARSET)
                    more = True
                    if 0 <= idx < len(_CHARSET):
                        chars[j] = _CHARSET_FILL[idx]
                    elif idx >= len(_CHARSET):
                        chars[j] = '|'
                else:
                    if has_labels and row - rows < 1:  # label_margin_top
                        more = True
                        break
                    at = row - rows - 1
                    if label and len(label) > at:
                        more = True
                        chars[j] = label[at]
            if not more:
                break
            row += 1
            out.append(''.join(chars) + '\n')
    return ''.join(out)


def graph(event: str, series: Series) -> str:
    """latencyCommandGenSparkeline: a header, 80 dashes, then the sparkline of the samples
    labelled with how long ago each happened."""
    now = int(time.time())
    samples = []
    for t, ms in series.in_order():
        elapsed = now - t
        if elapsed < 60:
            label = f'{elapsed}s'
        elif elapsed < 3600:
            label = f'{elapsed // 60}m'
        elif elapsed < 86400:
            label = f'{elapsed // 3600}h'
        else:
            label = f'{elapsed // 86400}d'
        samples.append((float(ms), label))
    values = [int(v) for v, _ in samples]
    hi, lo = (max(values), min(values)) if values else (0, 0)
    head = f'{event} - high {hi} ms, low {lo} ms (all time high {series.max} ms)\n'
    return head + '-' * _GRAPH_COLS + '\n' + _sparkline(samples)
