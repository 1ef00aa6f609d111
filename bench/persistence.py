"""Persistence benchmark: our server against redis-server 7.0.15 in the same run.

    .venv/bin/python bench/persistence.py [--keys 1000000 | --quick] [--write-rate 5000]
        [--requests 200000] [--repeat 1]

1. Both servers are loaded with the same N keys of mixed types through pipelines: 70%
   strings of 10-100 bytes, 10% hashes, 10% lists, 5% sets, 5% sorted sets (5 elements
   each), a tenth of them with a TTL of one to two hours (nothing expires during the run).
2. BGSAVE while a writer process SETs random existing keys at a steady rate and a reader
   process GETs random keys one request at a time (1 ms apart), each server in turn:
   - time to save: from sending BGSAVE to INFO's rdb_bgsave_in_progress:0;
   - peak memory over the pre-save RSS, sampled every 10 ms from /proc. redis-server
     forks, so its peak is given two ways: parent RSS + child RSS (what per-process RSS
     monitoring adds up; the shared pages count twice) and parent RSS + the child's private
     pages (the memory the fork really added: copy-on-write copies; Redis's own figure for
     it, rdb_last_cow_size, is shown too). We do not fork: one process, one RSS.
   - GET latency p50/p99/max during the save (and before it, for reference).
3. Start-up loading of the dump.rdb each server just wrote: time from spawn to the first
   reply that is not -LOADING, the keys INFO says were loaded, DBSIZE (must be N on both).
4. SET requests/s at -P 1 (redis-benchmark -t set -c 50) with `appendonly yes` and
   `appendfsync everysec` on both, and with `appendonly no` for reference.

Each server has its own temporary `dir`; every process started here is stopped at the
end, on error too. Prints a Markdown table, writes the figures as JSON to bench/results/,
and ends with the command line that reproduces the run.
"""

import argparse
import compileall
import contextlib
import json
import multiprocessing
import os
import random
import shlex
import socket
import sys
import tempfile
import time

import hiredis
import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, ServerProc, command, percentiles, read_replies, redis_benchmark  # noqa: E402

BATCH = 10_000  # keys per pipeline chunk while loading
SAMPLE_S = 0.010  # memory sampling period during a save
INFO_S = 0.020  # INFO polling period during a save
BASELINE_S = 1.0  # reader and writer run this long before BGSAVE


# -- data -------------------------------------------------------------------------------


def key_name(i):
    return b'key:%d' % i


def value(rng, lo=10, hi=100):
    return rng.randbytes(rng.randint(lo, hi) // 2).hex().encode()[:hi]


def key_commands(i, rng):
    """The commands that create key i: its type by its share of the mix, and a TTL for
    about a tenth of the keys."""
    k = key_name(i)
    ttl = rng.randint(3600, 7200) if rng.random() < 0.1 else None
    kind = rng.random()
    if kind < 0.70:
        v = value(rng)
        return [command(b'SET', k, v, b'EX', ttl) if ttl else command(b'SET', k, v)]
    if kind < 0.80:
        pairs = [x for j in range(5) for x in (b'f%d' % j, value(rng, 4, 20))]
        cmds = [command(b'HSET', k, *pairs)]
    elif kind < 0.90:
        cmds = [command(b'RPUSH', k, *[value(rng, 4, 20) for _ in range(5)])]
    elif kind < 0.95:
        cmds = [command(b'SADD', k, *[b'm%d' % rng.randrange(1000) for _ in range(5)])]
    else:
        pairs = [x for j in range(5) for x in (b'%d' % rng.randrange(1000), b'm%d' % j)]
        cmds = [command(b'ZADD', k, *pairs)]
    if ttl:
        cmds.append(command(b'EXPIRE', k, ttl))
    return cmds


def load_keys(servers, nkeys, seed=1):
    """The same keys into every server, chunk by chunk (each chunk generated once)."""
    socks = [socket.create_connection(('127.0.0.1', s.port)) for s in servers]
    try:
        for start in range(0, nkeys, BATCH):
            rng = random.Random(seed * 1_000_003 + start)
            cmds = [
                c for i in range(start, min(start + BATCH, nkeys)) for c in key_commands(i, rng)
            ]
            payload = b''.join(cmds)
            for s in socks:
                s.sendall(payload)
                read_replies(s, len(cmds), errors_ok=False)
    finally:
        for s in socks:
            s.close()


# -- load generators (separate processes, so that they do not share a GIL with the
# -- memory sampler or each other) -------------------------------------------------------


def writer(port, nkeys, rate, stop, out):
    """SET random existing keys at `rate` per second, in small pipelines every 10 ms."""
    rng = random.Random(7)
    per_tick = max(1, rate // 100)
    sent = 0
    t0 = next_tick = time.monotonic()
    with socket.create_connection(('127.0.0.1', port)) as s:
        while not stop.is_set():
            cmds = [
                command(b'SET', key_name(rng.randrange(nkeys)), value(rng)) for _ in range(per_tick)
            ]
            s.sendall(b''.join(cmds))
            read_replies(s, per_tick, errors_ok=False)
            sent += per_tick
            next_tick += 0.010
            pause = next_tick - time.monotonic()
            if pause > 0:
                time.sleep(pause)
    out.put(('writer', sent / (time.monotonic() - t0)))


def reader(port, nkeys, interval, stop, out):
    """GET random keys one at a time; records (send time, latency in seconds). Lists
    and other types answer WRONGTYPE: still one round trip through the server."""
    rng = random.Random(11)
    samples = []
    hr = hiredis.Reader()
    with socket.create_connection(('127.0.0.1', port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while not stop.is_set():
            req = command(b'GET', key_name(rng.randrange(nkeys)))
            t = time.time()
            t0 = time.perf_counter()
            s.sendall(req)
            while True:
                hr.feed(s.recv(65536))
                if hr.gets() is not False:
                    break
            samples.append((t, time.perf_counter() - t0))
            if interval:
                time.sleep(interval)
    out.put(('reader', samples))


# -- /proc ------------------------------------------------------------------------------


def status_kb(pid, field):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1])
    return 0


def private_kb(pid):
    """The pages only this process maps (for a forked child: its copy-on-write copies)."""
    total = 0
    with open(f'/proc/{pid}/smaps_rollup') as f:
        for line in f:
            if line.startswith(('Private_Clean:', 'Private_Dirty:')):
                total += int(line.split()[1])
    return total


def children(pid):
    kids = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f'/proc/{pid}/task'):
            with open(f'/proc/{pid}/task/{tid}/children') as f:
                kids += [int(c) for c in f.read().split()]
    return kids


def memory_sample(pid):
    """(parent RSS, parent + children RSS, parent RSS + children's private) in bytes."""
    rss = status_kb(pid, 'VmRSS')
    kids_rss = kids_private = 0
    for kid in children(pid):
        with contextlib.suppress(OSError):  # the child may exit meanwhile
            kids_rss += status_kb(kid, 'VmRSS')
            kids_private += private_kb(kid)
    return rss * 1024, (rss + kids_rss) * 1024, (rss + kids_private) * 1024


# -- phases -----------------------------------------------------------------------------


def bgsave_under_load(srv, nkeys, rate, interval):
    """BGSAVE with the writer and the reader running; returns the figures."""
    ctx = multiprocessing.get_context('spawn')
    stop, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=writer, args=(srv.port, nkeys, rate, stop, out)),
        ctx.Process(target=reader, args=(srv.port, nkeys, interval, stop, out)),
    ]
    admin = redis.Redis('127.0.0.1', srv.port, protocol=2)
    try:
        for p in procs:
            p.start()
        time.sleep(BASELINE_S)
        pre_rss = memory_sample(srv.proc.pid)[0]
        peaks = [pre_rss, pre_rss, pre_rss]
        t_start = time.time()
        t0 = time.monotonic()
        admin.bgsave()
        next_info = 0.0
        while True:
            now = time.monotonic()
            peaks = [max(a, b) for a, b in zip(peaks, memory_sample(srv.proc.pid))]
            if now >= next_info:
                info = admin.info('persistence')
                if not info['rdb_bgsave_in_progress']:
                    break
                next_info = now + INFO_S
            if now - t0 > 3600:
                raise TimeoutError('BGSAVE did not finish within an hour')
            time.sleep(SAMPLE_S)
        t1 = time.monotonic()
        t_end = time.time()
        if info['rdb_last_bgsave_status'] != 'ok':
            raise RuntimeError(f'{srv.kind}: BGSAVE failed')
        stop.set()
        got = dict(out.get(timeout=60) for _ in procs)
        for p in procs:
            p.join(30)
        during = [lat for t, lat in got['reader'] if t_start <= t <= t_end]
        before = [lat for t, lat in got['reader'] if t_start - BASELINE_S + 0.2 <= t < t_start]
        return {
            'save_s': t1 - t0,
            'pre_rss': pre_rss,
            'peak_rss': peaks[0],
            'peak_rss_with_child': peaks[1],
            'peak_rss_with_child_private': peaks[2],
            'rdb_last_cow_size': info.get('rdb_last_cow_size'),
            'writer_sets_per_s': got['writer'],
            'get_during': percentiles(during),
            'get_before': percentiles(before),
        }
    finally:
        stop.set()
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
        admin.close()


def call(sock, rd, *args):
    """One command over a raw socket (redis-py would retry -LOADING replies by itself)."""
    sock.sendall(command(*args))
    while True:
        reply = rd.gets()
        if reply is not False:
            return reply
        data = sock.recv(1 << 20)
        if not data:
            raise ConnectionError('server closed the connection')
        rd.feed(data)


def load_time(kind, data_dir, stack, *args):
    """Spawn a server on `data_dir`'s dump.rdb; time to listening and to the first PING
    reply that is not -LOADING, with the loading fields INFO showed meanwhile.

    Our modules' bytecode is compiled first, as it is from an installed server's second
    start on (Python caches it in __pycache__); where PYTHONDONTWRITEBYTECODE is set, as on
    this project's machines, every start would otherwise compile ~90 modules (~0.2 s)."""
    if kind == 'ours':
        compileall.compile_dir(os.path.join(ROOT, 'store'), quiet=1)
    t0 = time.monotonic()
    srv = stack.enter_context(ServerProc(kind, '--dir', data_dir, *args))  # once listening
    listening = time.monotonic() - t0
    seen = {}
    loading_replies = 0
    with socket.create_connection(('127.0.0.1', srv.port)) as sock:
        rd = hiredis.Reader(encoding='utf-8')
        next_info = 0.0
        while True:
            reply = call(sock, rd, 'PING')
            if not isinstance(reply, hiredis.ReplyError):
                break
            if not str(reply).startswith('LOADING'):
                raise RuntimeError(f'{kind}: {reply}')
            loading_replies += 1
            if time.monotonic() >= next_info:
                info = call(sock, rd, 'INFO', 'persistence')
                for line in info.splitlines():
                    if line.startswith('loading'):
                        name, _, v = line.partition(':')
                        seen[name] = v
                next_info = time.monotonic() + 0.1
            time.sleep(0.005)
    ready = time.monotonic() - t0
    c = redis.Redis('127.0.0.1', srv.port, protocol=2)
    info = c.info('persistence')
    result = {
        'listening_s': listening,
        'ready_s': ready,
        'loading_replies': loading_replies,
        'dbsize': c.dbsize(),
        'keys_loaded': info.get('rdb_last_load_keys_loaded'),
        'keys_expired': info.get('rdb_last_load_keys_expired'),
        'loading_fields_seen': seen,  # the last value of each
        'rss_after_load': srv.rss_bytes(),
    }
    c.close()
    srv.stop()
    return result


def set_throughput(requests, repeat, stack):
    """SET req/s at -P 1 -c 50, AOF everysec and no AOF, servers alternating."""
    rows = {}
    for label, args in (
        ('appendonly yes, everysec', ('--appendonly', 'yes', '--appendfsync', 'everysec')),
        ('appendonly no', ('--appendonly', 'no')),
    ):
        servers = []
        for kind in ('ours', 'redis'):
            d = stack.enter_context(tempfile.TemporaryDirectory(prefix=f'bench-aof-{kind}-'))
            servers.append(stack.enter_context(ServerProc(kind, '--dir', d, *args)))
        # req/s of the best run, and the server's CPU per request in that run (user +
        # system of all its threads, so Redis's fsync thread counts): the steadier figure
        # on a shared machine
        best = {s.kind: {'rps': 0.0, 'cpu_us': 0.0} for s in servers}
        for _ in range(repeat):
            for s in servers:
                cpu0 = s.cpu_seconds()
                rps = redis_benchmark(s.port, 'set', requests)
                cpu = s.cpu_seconds() - cpu0
                if rps > best[s.kind]['rps']:
                    best[s.kind] = {'rps': rps, 'cpu_us': cpu / requests * 1e6}
        for s in servers:
            if label.startswith('appendonly yes'):
                aof = redis.Redis('127.0.0.1', s.port).info('persistence')
                if not aof['aof_enabled'] or aof['aof_last_write_status'] != 'ok':
                    raise RuntimeError(f'{s.kind}: the AOF is not on or not writing: {aof}')
            s.stop()
        rows[label] = best
        o, r = best['ours'], best['redis']
        print(
            f'  SET -P 1 {label}: ours {o["rps"]:.0f} rps {o["cpu_us"]:.1f} us/req | '
            f'redis {r["rps"]:.0f} rps {r["cpu_us"]:.1f} us/req',
            file=sys.stderr,
        )
    return rows


# -- output -----------------------------------------------------------------------------


def mb(n):
    return f'{n / 2**20:.0f} MB'


def table(res):
    o, r = res['bgsave']['ours'], res['bgsave']['redis']
    lo, lr = res['load']['ours'], res['load']['redis']
    so, sr = res['set']['appendonly yes, everysec'], res['set']['appendonly no']
    x = res['ours_rdb_in_redis']
    ms = lambda x: '-' if x is None else f'{x:.2f} ms'  # noqa: E731
    rows = [
        (
            'BGSAVE: time to save',
            f'{o["save_s"]:.2f} s',
            f'{r["save_s"]:.2f} s',
            f'{o["save_s"] / r["save_s"]:.2f}x',
            '',
        ),
        ('BGSAVE: pre-save RSS', mb(o['pre_rss']), mb(r['pre_rss']), '', ''),
        (
            'BGSAVE: peak RSS / pre-save (parent + child RSS for redis)',
            f'{o["peak_rss"] / o["pre_rss"]:.2f}x',
            f'{r["peak_rss_with_child"] / r["pre_rss"]:.2f}x',
            '',
            'ours <= 1.3x',
        ),
        (
            'BGSAVE: peak (RSS + child private pages) / pre-save',
            f'{o["peak_rss_with_child_private"] / o["pre_rss"]:.2f}x',
            f'{r["peak_rss_with_child_private"] / r["pre_rss"]:.2f}x',
            '',
            '',
        ),
        (
            'BGSAVE: rdb_last_cow_size (INFO)',
            '-' if not o['rdb_last_cow_size'] else mb(o['rdb_last_cow_size']),
            mb(r['rdb_last_cow_size'] or 0),
            '',
            '',
        ),
        (
            'GET p50 during save',
            ms(o['get_during']['p50_ms']),
            ms(r['get_during']['p50_ms']),
            '',
            '',
        ),
        (
            'GET p99 during save',
            ms(o['get_during']['p99_ms']),
            ms(r['get_during']['p99_ms']),
            '',
            'ours <= 10 ms',
        ),
        (
            'GET max during save',
            ms(o['get_during']['max_ms']),
            ms(r['get_during']['max_ms']),
            '',
            '',
        ),
        (
            'GET p99 before save (reference)',
            ms(o['get_before']['p99_ms']),
            ms(r['get_before']['p99_ms']),
            '',
            '',
        ),
        ('GETs measured during save', str(o['get_during']['n']), str(r['get_during']['n']), '', ''),
        (
            'writer SETs/s during the run',
            f'{o["writer_sets_per_s"]:.0f}',
            f'{r["writer_sets_per_s"]:.0f}',
            '',
            '',
        ),
        ('dump.rdb size', mb(res['rdb_size']['ours']), mb(res['rdb_size']['redis']), '', ''),
        (
            'start-up load: spawn to first non-LOADING reply',
            f'{lo["ready_s"]:.2f} s',
            f'{lr["ready_s"]:.2f} s',
            f'{lo["ready_s"] / lr["ready_s"]:.2f}x',
            'ours <= 3x',
        ),
        (
            'start-up load: spawn to listening',
            f'{lo["listening_s"]:.2f} s',
            f'{lr["listening_s"]:.2f} s',
            '',
            '',
        ),
        (
            'start-up load: listening to first non-LOADING reply',
            f'{lo["ready_s"] - lo["listening_s"]:.2f} s',
            f'{lr["ready_s"] - lr["listening_s"]:.2f} s',
            f'{(lo["ready_s"] - lo["listening_s"]) / (lr["ready_s"] - lr["listening_s"]):.2f}x',
            '',
        ),
        (
            'start-up load: keys loaded (INFO) / DBSIZE',
            f'{lo["keys_loaded"]} / {lo["dbsize"]}',
            f'{lr["keys_loaded"]} / {lr["dbsize"]}',
            '',
            '',
        ),
        (
            'start-up load: INFO loading_* fields while loading',
            ', '.join(sorted(lo['loading_fields_seen'])) or '-',
            ', '.join(sorted(lr['loading_fields_seen'])) or '-',
            '',
            '',
        ),
        (
            'our dump.rdb loads in redis-server',
            f'yes, DBSIZE {x["dbsize"]}' if x['loads'] else f'NO: {x.get("error", x)}',
            '',
            '',
            '',
        ),
        (
            'SET -P 1 req/s, appendonly yes everysec',
            f'{so["ours"]["rps"]:.0f}',
            f'{so["redis"]["rps"]:.0f}',
            f'{so["ours"]["rps"] / so["redis"]["rps"]:.2f}x',
            'ours >= 0.8x',
        ),
        (
            'SET -P 1 req/s, appendonly no (reference)',
            f'{sr["ours"]["rps"]:.0f}',
            f'{sr["redis"]["rps"]:.0f}',
            f'{sr["ours"]["rps"] / sr["redis"]["rps"]:.2f}x',
            '',
        ),
        (
            'SET -P 1 server CPU us/req, appendonly yes everysec',
            f'{so["ours"]["cpu_us"]:.2f}',
            f'{so["redis"]["cpu_us"]:.2f}',
            f'{so["ours"]["cpu_us"] / so["redis"]["cpu_us"]:.2f}x',
            '',
        ),
        (
            'SET -P 1 server CPU us/req, appendonly no',
            f'{sr["ours"]["cpu_us"]:.2f}',
            f'{sr["redis"]["cpu_us"]:.2f}',
            f'{sr["ours"]["cpu_us"] / sr["redis"]["cpu_us"]:.2f}x',
            '',
        ),
    ]
    lines = ['| measure | ours | redis-server | ours/redis | target |', '|---|---|---|---|---|']
    lines += ['| ' + ' | '.join(row) + ' |' for row in rows]
    return '\n'.join(lines)


def only(args, nkeys):
    """--only load|aof: one part of the run, with its figures printed as table rows."""
    with contextlib.ExitStack() as stack:
        if args.only == 'aof':
            rows = set_throughput(args.requests, args.repeat, stack)
            for label, best in rows.items():
                o, r = best['ours'], best['redis']
                print(
                    f'| SET -P 1, {label} | {o["rps"]:.0f} / {r["rps"]:.0f} req/s | '
                    f'{o["rps"] / r["rps"]:.2f}x | CPU {o["cpu_us"]:.2f} / {r["cpu_us"]:.2f} '
                    f'us/req | {o["cpu_us"] / r["cpu_us"]:.2f}x |'
                )
            return
        dirs = {
            kind: stack.enter_context(tempfile.TemporaryDirectory(prefix=f'bench-rdb-{kind}-'))
            for kind in ('ours', 'redis')
        }
        servers = [stack.enter_context(ServerProc(k, '--dir', dirs[k])) for k in dirs]
        print(f'loading {nkeys} keys into both servers ...', file=sys.stderr)
        load_keys(servers, nkeys)
        for s in servers:
            c = redis.Redis('127.0.0.1', s.port)
            c.bgsave()
            while c.info('persistence')['rdb_bgsave_in_progress']:
                time.sleep(0.05)
            s.stop()
        times = {'ours': [], 'redis': []}
        for _ in range(args.repeat):
            for kind, d in dirs.items():
                r = load_time(kind, d, stack)
                if r['dbsize'] != nkeys:
                    raise RuntimeError(f'{kind}: DBSIZE {r["dbsize"]} after load')
                times[kind].append(r['ready_s'])
                print(f'  {kind}: ready in {r["ready_s"]:.2f} s', file=sys.stderr)
        o, r = min(times['ours']), min(times['redis'])
        print(
            f'| start-up load, spawn to first non-LOADING reply (best of {args.repeat}) '
            f'| {o:.2f} s | {r:.2f} s | {o / r:.2f}x |'
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--keys', type=int, default=1_000_000)
    ap.add_argument('--quick', action='store_true', help='100,000 keys: a smoke run')
    ap.add_argument('--write-rate', type=int, default=5000, help='writer SETs per second')
    ap.add_argument('--get-interval-ms', type=float, default=1.0, help="reader's pause")
    ap.add_argument('--requests', type=int, default=200_000, help='redis-benchmark -n')
    ap.add_argument('--repeat', type=int, default=1, help='SET runs per cell; best is kept')
    ap.add_argument(
        '--only',
        choices=('load', 'aof'),
        help='one part, to iterate on it: load (SAVE instead of the BGSAVE part, then the '
        'start-up loads, alternating --repeat times) or aof (the SET part)',
    )
    args = ap.parse_args()
    nkeys = 100_000 if args.quick else args.keys
    if args.only:
        return only(args, nkeys)

    res = {'keys': nkeys, 'args': vars(args), 'started': time.strftime('%Y-%m-%dT%H:%M:%S')}
    with contextlib.ExitStack() as stack:
        dirs = {
            kind: stack.enter_context(tempfile.TemporaryDirectory(prefix=f'bench-rdb-{kind}-'))
            for kind in ('ours', 'redis')
        }
        servers = [stack.enter_context(ServerProc(k, '--dir', dirs[k])) for k in dirs]
        res['redis_version'] = redis.Redis('127.0.0.1', servers[1].port).info()['redis_version']
        print(f'loading {nkeys} keys into both servers ...', file=sys.stderr)
        t0 = time.monotonic()
        load_keys(servers, nkeys)
        print(f'  loaded in {time.monotonic() - t0:.1f} s', file=sys.stderr)
        for s in servers:
            got = redis.Redis('127.0.0.1', s.port).dbsize()
            if got != nkeys:
                raise RuntimeError(f'{s.kind}: DBSIZE {got} after loading {nkeys} keys')
        res['bgsave'] = {}
        for s in servers:
            print(f'BGSAVE on {s.kind} under load ...', file=sys.stderr)
            res['bgsave'][s.kind] = bgsave_under_load(
                s, nkeys, args.write_rate, args.get_interval_ms / 1000
            )
            print(f'  {res["bgsave"][s.kind]["save_s"]:.2f} s', file=sys.stderr)
        for s in servers:
            s.stop()
        res['rdb_size'] = {k: os.path.getsize(os.path.join(d, 'dump.rdb')) for k, d in dirs.items()}

        res['load'] = {}
        for kind, d in dirs.items():
            print(f'start-up load on {kind} ...', file=sys.stderr)
            res['load'][kind] = load_time(kind, d, stack)
            print(f'  ready in {res["load"][kind]["ready_s"]:.2f} s', file=sys.stderr)
            if res['load'][kind]['dbsize'] != nkeys:
                raise RuntimeError(f'{kind}: DBSIZE {res["load"][kind]["dbsize"]} after load')

        # The file we wrote must load in redis-server too (Redis refuses duplicated keys)
        print("our dump.rdb in redis-server ...", file=sys.stderr)
        log = os.path.join(dirs['ours'], 'redis-server.log')
        try:
            cross = load_time('redis', dirs['ours'], stack, '--logfile', log)
            res['ours_rdb_in_redis'] = {'loads': cross['dbsize'] == nkeys, **cross}
        except (ConnectionError, redis.exceptions.ConnectionError, RuntimeError):
            with open(log) as f:  # its reason: the first warning after loading began
                lines = f.read().split('Loading RDB', 1)[-1].splitlines()
                why = [line.split(' # ', 1)[-1].strip() for line in lines if ' # ' in line]
            res['ours_rdb_in_redis'] = {'loads': False, 'error': why[0] if why else '?'}

        print('SET throughput ...', file=sys.stderr)
        res['set'] = set_throughput(args.requests, args.repeat, stack)

    out = table(res)
    print(f'redis-server {res["redis_version"]}; {nkeys} keys; CPUs: {os.cpu_count()}')
    print()
    print(out)
    print()
    os.makedirs(os.path.join(ROOT, 'bench', 'results'), exist_ok=True)
    path = os.path.join(ROOT, 'bench', 'results', f'persistence-{int(time.time())}.json')
    with open(path, 'w') as f:
        json.dump(res, f, indent=2)
    script = os.path.relpath(os.path.abspath(__file__), ROOT)
    exe = os.path.relpath(sys.executable, ROOT) if sys.executable.startswith(ROOT) else 'python'
    argv = [exe, script, '--keys', str(nkeys), '--write-rate', str(args.write_rate),
            '--get-interval-ms', str(args.get_interval_ms), '--requests', str(args.requests),
            '--repeat', str(args.repeat)]  # fmt: skip
    print(f'results: {os.path.relpath(path, ROOT)}')
    print('reproduce (from the repository root): ' + shlex.join(argv))


if __name__ == '__main__':
    main()
