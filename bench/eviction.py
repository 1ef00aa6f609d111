"""Memory and eviction benchmark (issue 12): our server against redis-server 7.0.15 in the
same run, both started with `--save '' --appendonly no` and the same maxmemory and policy.

    .venv/bin/python bench/eviction.py [--quick] [--accuracy] [--storm] [--zipf] [--set]

With no part named, all four run; --quick shrinks every part to a smoke run (< 2 minutes).

1. accuracy: for each shape of data (strings of 16, 100, 1000 and 10000 bytes, 100-byte
   strings with EX, hashes/sets/lists/zsets of 100 small elements, one stream of 100,000
   entries), a fresh server of each kind is loaded with N keys of that shape through
   pipelines. Reported: RSS growth, INFO used_memory growth, and used_memory growth / RSS
   growth (ours: target 0.8..1.2; Redis's for reference). Before the baseline each server
   runs the shape's commands on 100 throw-away keys and deletes them, so that code paths
   loaded on first use (and their RSS) are not counted as data.
2. storm: 1.5 GB of 1000-byte values under distinct keys, pipelined over one connection,
   against `maxmemory 200mb` and `maxmemory-policy allkeys-lru`. Reported: peak RSS over the
   pre-run RSS (VmRSS sampled every 50 ms by a thread; target <= 250 MB for ours), the
   final used_memory, DBSIZE and evicted_keys.
3. zipf: a trace over 1,000,000 distinct keys with Zipf s = 0.99 (inverse-CDF table and
   bisect, seeded: the same trace for every server), GET-then-SET-on-miss with 100-byte
   values. maxmemory is sized so that redis-server holds about 100,000 keys: its used_memory
   per key is measured first (100,000 keys drawn uniformly from the key space), and the
   same maxmemory is given to both. Several client processes each take every C-th request
   of the trace; each sends a pipeline of GETs, then one pipeline of SETs for the GETs that
   missed. A warm-up pass (not counted), then the measured pass: hit ratio under
   allkeys-lru and allkeys-lfu, trace requests/s (a trace request is a GET, plus its SET on
   a miss) and the server's CPU per trace request.
4. set: `redis-benchmark -t set -P 1 -c 50 -n 200000 -r 100000` with `maxmemory 1gb`
   `noeviction`, and without maxmemory, servers alternating, best of --repeat runs, with the
   server's CPU per request (target: ours >= 0.8x Redis's req/s with maxmemory set).

Prints Markdown tables, writes the figures as JSON to bench/results/, and ends with the
command line that reproduces the run. Every server started here is stopped at the end.
"""

import argparse
import contextlib
import itertools
import json
import multiprocessing
import os
import random
import shlex
import socket
import subprocess
import sys
import time
from array import array
from bisect import bisect_right

import hiredis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    ROOT,
    RssPeak,
    ServerProc,
    command,
    git_state,
    info,
    redis_benchmark,
    send_all,
    vm_rss_bytes,
)

KINDS = ('ours', 'redis')
MB = 1 << 20
OURS_ROOT = ROOT  # --root: run our server from another checkout (an A/B or a clean copy)


def start(kind, *args):
    """A server with the options both kinds share: no RDB save points and no AOF (Redis
    gets both from ServerProc; `appendonly no` is ours's default, said again here)."""
    extra = ('--appendonly', 'no') if kind == 'ours' else ()
    return ServerProc(kind, *extra, *args, root=OURS_ROOT)


def call(port, *args):
    """One command over a fresh connection; its decoded reply."""
    with socket.create_connection(('127.0.0.1', port)) as s:
        s.sendall(command(*args))
        reader = hiredis.Reader()
        while (reply := reader.gets()) is False:
            reader.feed(s.recv(1 << 16))
    return reply


def used_memory(port):
    return info(port, 'memory')['used_memory']


# -- 1. accuracy --------------------------------------------------------------------------


def string_of(size):
    """Values that are not integers (Redis would store those in 8 bytes) and differ per key."""

    def make(prefix, i):
        return command(b'SET', b'%s:%d' % (prefix, i), (b'x%d:' % i).ljust(size, b'.'))

    return make


def string_ex(prefix, i):
    return command(b'SET', b'%s:%d' % (prefix, i), (b'x%d:' % i).ljust(100, b'.'), b'EX', 100_000)


def hash100(prefix, i):
    pairs = [x for j in range(100) for x in (b'field:%d' % j, b'v%d.%d' % (i, j))]
    return command(b'HSET', b'%s:%d' % (prefix, i), *pairs)


def set100(prefix, i):
    return command(b'SADD', b'%s:%d' % (prefix, i), *[b'm%d.%d' % (i, j) for j in range(100)])


def list100(prefix, i):
    return command(b'RPUSH', b'%s:%d' % (prefix, i), *[b'e%d.%d' % (i, j) for j in range(100)])


def zset100(prefix, i):
    pairs = [x for j in range(100) for x in (b'%d' % j, b'm%d.%d' % (i, j))]
    return command(b'ZADD', b'%s:%d' % (prefix, i), *pairs)


def stream_entry(prefix, i):
    """Entry i of one stream (the key does not depend on i)."""
    return command(b'XADD', b'%s:stream' % prefix, b'*', b'name', b'n%d' % i, b'n', b'%d' % i)


# (name, keys in the full run, command maker, whether --quick shrinks it)
SHAPES = [
    ('string 16 B', 1_000_000, string_of(16), True),
    ('string 100 B', 1_000_000, string_of(100), True),
    ('string 1000 B', 200_000, string_of(1000), True),
    ('string 10000 B', 20_000, string_of(10000), True),
    ('string 100 B, EX', 1_000_000, string_ex, True),
    ('hash of 100 fields', 20_000, hash100, True),
    ('set of 100 members', 20_000, set100, True),
    ('list of 100 elements', 20_000, list100, True),
    ('zset of 100 members', 20_000, zset100, True),
    ('stream of 100k entries', 100_000, stream_entry, False),
]
WARM_KEYS = 100


def measure_shape(kind, cmds, make):
    with start(kind) as srv, socket.create_connection(('127.0.0.1', srv.port)) as sock:
        send_all(sock, (make(b'warm', i) for i in range(WARM_KEYS)))
        warm = {b'warm:stream'} | {b'warm:%d' % i for i in range(WARM_KEYS)}
        send_all(sock, [command(b'DEL', *warm)])
        info(srv.port)  # the first INFO of a server may load code too
        used0, rss0 = used_memory(srv.port), vm_rss_bytes(srv.proc.pid)
        t0 = time.monotonic()
        errors = send_all(sock, cmds, max_bytes=256 << 10)
        load_s = time.monotonic() - t0
        if errors:
            raise RuntimeError(f'{kind}: {errors} error replies while loading')
        used1, rss1 = used_memory(srv.port), vm_rss_bytes(srv.proc.pid)
        return {'rss': rss1 - rss0, 'used': used1 - used0, 'load_s': load_s}


def accuracy(quick):
    rows = []
    for name, n, make, shrinks in SHAPES:
        n = n // 10 if quick and shrinks else n
        row = {'shape': name, 'n': n}
        cmds = [make(b'k', i) for i in range(n)]  # built once: Python is slow at it
        for kind in KINDS:
            row[kind] = measure_shape(kind, cmds, make)
        del cmds
        rows.append(row)
        o, r = row['ours'], row['redis']
        print(
            f'  {name} x{n}: ours rss +{o["rss"] / MB:.1f} MB used +{o["used"] / MB:.1f} MB | '
            f'redis rss +{r["rss"] / MB:.1f} MB used +{r["used"] / MB:.1f} MB',
            file=sys.stderr,
        )
    return rows


# -- 2. write storm -----------------------------------------------------------------------


def storm(total_mb, value_size=1000, maxmemory='200mb'):
    value = b'v' * value_size
    template = b'*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n'
    n = total_mb * MB // value_size
    res = {'values': n, 'value_size': value_size, 'maxmemory': maxmemory}
    for kind in KINDS:
        with start(kind, '--maxmemory', maxmemory, '--maxmemory-policy', 'allkeys-lru') as srv:
            info(srv.port)
            pre = vm_rss_bytes(srv.proc.pid)
            sampler = RssPeak(srv.proc.pid, 0.05)
            sampler.start()
            t0 = time.monotonic()
            with socket.create_connection(('127.0.0.1', srv.port)) as sock:
                keys = (b'storm:%d' % i for i in range(n))
                cmds = (template % (len(k), k, value_size, value) for k in keys)
                errors = send_all(sock, cmds)
            elapsed = time.monotonic() - t0
            peak = sampler.stop()
            fields = info(srv.port)
            res[kind] = {
                'pre_rss': pre,
                'peak_rss': peak,
                'growth': peak - pre,
                'samples': sampler.samples,
                'seconds': elapsed,
                'errors': errors,
                'used_memory': fields['used_memory'],
                'dbsize': call(srv.port, b'DBSIZE'),
                'evicted_keys': fields['evicted_keys'],
            }
        x = res[kind]
        print(
            f'  {kind}: peak RSS +{x["growth"] / MB:.0f} MB in {elapsed:.1f} s, '
            f'used_memory {x["used_memory"] / MB:.0f} MB, DBSIZE {x["dbsize"]}, '
            f'evicted {x["evicted_keys"]}, errors {errors}',
            file=sys.stderr,
        )
    return res


# -- 3. Zipf trace ------------------------------------------------------------------------

VALUE_100 = b'z' * 100
GET = b'*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n'
SET = b'*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$100\r\n' + VALUE_100 + b'\r\n'
TRACE = array('i')  # filled before the workers fork, which inherit it


def zipf_trace(nkeys, s, count, seed=12):
    """`count` ranks in [0, nkeys) with P(rank k) proportional to 1 / (k + 1) ** s: a
    uniform draw looked up in the cumulative weights (inverse CDF)."""
    cum = list(itertools.accumulate(1.0 / (k**s) for k in range(1, nkeys + 1)))
    total, last = cum[-1], nkeys - 1
    draw = random.Random(seed).random
    return array('i', (min(bisect_right(cum, draw() * total), last) for _ in range(count)))


def zkey(rank):
    return b'z:%d' % rank


def read_n(sock, reader, n):
    out = []
    while len(out) < n:
        reply = reader.gets()
        if reply is False:
            data = sock.recv(1 << 20)
            if not data:
                raise ConnectionError('server closed the connection')
            reader.feed(data)
        else:
            out.append(reply)
    return out


def trace_worker(port, lo, hi, step, batch, go, out):
    """Requests lo, lo + step, ... < hi of TRACE: GETs pipelined `batch` at a time, then
    one pipeline of SETs for the misses."""
    hits = misses = errors = 0
    reader = hiredis.Reader()
    with socket.create_connection(('127.0.0.1', port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        go.wait()
        mine = range(lo, hi, step)
        for b in range(0, len(mine), batch):
            keys = [zkey(TRACE[i]) for i in mine[b : b + batch]]
            sock.sendall(b''.join([GET % (len(k), k) for k in keys]))
            missed = [k for k, v in zip(keys, read_n(sock, reader, len(keys))) if v is None]
            hits += len(keys) - len(missed)
            misses += len(missed)
            if missed:
                sock.sendall(b''.join([SET % (len(k), k) for k in missed]))
                replies = read_n(sock, reader, len(missed))
                errors += sum(isinstance(r, hiredis.ReplyError) for r in replies)
    out.put((hits, misses, errors))


def run_pass(srv, lo, hi, clients, batch):
    ctx = multiprocessing.get_context('fork')
    go, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=trace_worker, args=(srv.port, lo + j, hi, clients, batch, go, out))
        for j in range(clients)
    ]
    for p in procs:
        p.start()
    time.sleep(0.2)  # let them connect
    cpu0, t0 = srv.cpu_seconds(), time.monotonic()
    go.set()
    results = [out.get() for _ in procs]
    elapsed, cpu = time.monotonic() - t0, srv.cpu_seconds() - cpu0
    for p in procs:
        p.join()
    hits, misses, errors = (sum(col) for col in zip(*results))
    return {'hits': hits, 'misses': misses, 'errors': errors, 'seconds': elapsed, 'cpu': cpu}


def size_for(kind, nkeys, held, seed=13):
    """The maxmemory at which a server of `kind` holds about `held` keys of the trace: its
    used_memory after SETting `held` keys drawn uniformly from the key space."""
    with start(kind) as srv, socket.create_connection(('127.0.0.1', srv.port)) as sock:
        used0 = used_memory(srv.port)
        ranks = random.Random(seed).sample(range(nkeys), held)
        send_all(sock, (SET % (len(k), k) for k in map(zkey, ranks)))
        used1 = used_memory(srv.port)
    per_key = (used1 - used0) / held
    return {'per_key': per_key, 'startup': used0, 'maxmemory': used1}


def trace_run(kind, maxmemory, policy, warmup, requests, clients, batch):
    """A fresh server: the warm-up pass, then the measured pass."""
    args = ('--maxmemory', str(maxmemory), '--maxmemory-policy', policy)
    with start(kind, *args) as srv:
        run_pass(srv, 0, warmup, clients, batch)
        x = run_pass(srv, warmup, warmup + requests, clients, batch)
        fields = info(srv.port)
        x.update(
            hit_ratio=x['hits'] / (x['hits'] + x['misses']),
            rps=(x['hits'] + x['misses']) / x['seconds'],
            cpu_us=x['cpu'] / (x['hits'] + x['misses']) * 1e6,
            dbsize=call(srv.port, b'DBSIZE'),
            used_memory=fields['used_memory'],
            evicted_keys=fields['evicted_keys'],
        )
    print(
        f'  {policy} {kind} maxmemory {maxmemory}: hit ratio {x["hit_ratio"]:.4f}, '
        f'{x["rps"]:.0f} req/s, {x["cpu_us"]:.1f} us/req, DBSIZE {x["dbsize"]}, '
        f'errors {x["errors"]}',
        file=sys.stderr,
    )
    return x


def zipf(nkeys, s, warmup, requests, clients, batch):
    """Both servers at the maxmemory where redis-server holds a tenth of the keys; then
    ours again at the maxmemory where it holds a tenth itself, which separates the quality
    of the eviction policy from what a key costs."""
    global TRACE
    t0 = time.monotonic()
    TRACE = zipf_trace(nkeys, s, warmup + requests)
    distinct = len(set(TRACE[warmup:]))
    print(f'  trace of {len(TRACE)} in {time.monotonic() - t0:.1f} s', file=sys.stderr)
    sizing = {kind: size_for(kind, nkeys, nkeys // 10) for kind in KINDS}
    for kind, x in sizing.items():
        print(
            f'  {kind}: {x["per_key"]:.0f} bytes per key, maxmemory {x["maxmemory"]}',
            file=sys.stderr,
        )
    same = sizing['redis']['maxmemory']
    res = {'sizing': sizing, 'distinct_in_measured': distinct, 'policies': {}}
    for policy in ('allkeys-lru', 'allkeys-lfu'):
        res['policies'][policy] = {
            'ours': trace_run('ours', same, policy, warmup, requests, clients, batch),
            'redis': trace_run('redis', same, policy, warmup, requests, clients, batch),
            'ours_own_size': trace_run(
                'ours', sizing['ours']['maxmemory'], policy, warmup, requests, clients, batch
            ),
        }
    return res


# -- 4. SET -P 1 ---------------------------------------------------------------------------


def set_throughput(requests, repeat):
    rows = {}
    for label, args in (
        ('maxmemory 1gb, noeviction', ('--maxmemory', '1gb', '--maxmemory-policy', 'noeviction')),
        ('no maxmemory', ()),
    ):
        best = {k: {'rps': 0.0, 'cpu_us': 0.0} for k in KINDS}
        with contextlib.ExitStack() as stack:
            servers = [stack.enter_context(start(k, *args)) for k in KINDS]
            for _ in range(repeat):
                for srv in servers:
                    cpu0 = srv.cpu_seconds()
                    rps = redis_benchmark(srv.port, 'set', requests, 50, 1, ('-r', '100000'))
                    cpu = srv.cpu_seconds() - cpu0
                    if rps > best[srv.kind]['rps']:
                        best[srv.kind] = {'rps': rps, 'cpu_us': cpu / requests * 1e6}
        rows[label] = best
        o, r = best['ours'], best['redis']
        print(
            f'  SET -P 1 {label}: ours {o["rps"]:.0f} rps {o["cpu_us"]:.1f} us/req | '
            f'redis {r["rps"]:.0f} rps {r["cpu_us"]:.1f} us/req',
            file=sys.stderr,
        )
    return rows


# -- output -------------------------------------------------------------------------------


def md(header, rows):
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    lines += ['| ' + ' | '.join(str(c) for c in row) + ' |' for row in rows]
    return '\n'.join(lines)


def mbs(n):
    return f'{n / MB:.1f} MB'


def ratio(a, b):
    return f'{a / b:.2f}' if b else '-'


def tables(res):
    out = []
    if 'accuracy' in res:
        rows = []
        for row in res['accuracy']:
            o, r = row['ours'], row['redis']
            rows.append(
                (
                    row['shape'],
                    row['n'],
                    mbs(o['rss']),
                    mbs(o['used']),
                    ratio(o['used'], o['rss']),
                    mbs(r['rss']),
                    mbs(r['used']),
                    ratio(r['used'], r['rss']),
                    ratio(o['rss'], r['rss']),
                )
            )
        out.append(
            md(
                (
                    'shape',
                    'keys',
                    'ours RSS growth',
                    'ours used_memory growth',
                    'ours used/RSS (target 0.8-1.2)',
                    'redis RSS growth',
                    'redis used_memory growth',
                    'redis used/RSS',
                    'RSS ours/redis',
                ),
                rows,
            )
        )
    if 'storm' in res:
        st = res['storm']
        o, r = st['ours'], st['redis']
        rows = [
            ('pre-run RSS', mbs(o['pre_rss']), mbs(r['pre_rss']), ''),
            ('peak RSS', mbs(o['peak_rss']), mbs(r['peak_rss']), ''),
            ('peak RSS - pre-run RSS', mbs(o['growth']), mbs(r['growth']), 'ours <= 250 MB'),
            ('final used_memory', mbs(o['used_memory']), mbs(r['used_memory']), ''),
            ('final DBSIZE', o['dbsize'], r['dbsize'], ''),
            ('evicted_keys', o['evicted_keys'], r['evicted_keys'], ''),
            ('error replies', o['errors'], r['errors'], ''),
            ('time to write', f'{o["seconds"]:.1f} s', f'{r["seconds"]:.1f} s', ''),
            ('RSS samples (every 50 ms)', o['samples'], r['samples'], ''),
        ]
        head = f'write storm: {st["values"]} SETs of {st["value_size"]} bytes, '
        head += f'maxmemory {st["maxmemory"]} allkeys-lru'
        out.append(head + '\n\n' + md(('measure', 'ours', 'redis-server', 'target'), rows))
    if 'zipf' in res:
        z = res['zipf']
        rows = []
        for policy, row in z['policies'].items():
            o, r, own = row['ours'], row['redis'], row['ours_own_size']
            rows.append(
                (
                    policy,
                    f'{100 * o["hit_ratio"]:.2f}%',
                    f'{100 * r["hit_ratio"]:.2f}%',
                    f'{100 * (o["hit_ratio"] - r["hit_ratio"]):+.2f}',
                    f'{o["dbsize"]} / {r["dbsize"]}',
                    f'{100 * own["hit_ratio"]:.2f}% ({own["dbsize"]} keys)',
                    f'{o["rps"]:.0f}',
                    f'{r["rps"]:.0f}',
                    ratio(o['rps'], r['rps']),
                    f'{o["cpu_us"]:.1f}',
                    f'{r["cpu_us"]:.1f}',
                )
            )
        zo, zr = z['sizing']['ours'], z['sizing']['redis']
        head = (
            f'Zipf trace: {z["keys"]} keys, s = {z["s"]}, {z["warmup"]} warm-up and '
            f'{z["requests"]} measured requests from {z["clients"]} clients; maxmemory '
            f'{zr["maxmemory"]} bytes for both (redis-server: {zr["per_key"]:.0f} bytes per '
            f'key from a used_memory of {zr["startup"]}); ours alone at {zo["maxmemory"]} '
            f'({zo["per_key"]:.0f} bytes per key from {zo["startup"]})'
        )
        out.append(
            head
            + '\n\n'
            + md(
                (
                    'policy',
                    'ours hit ratio',
                    'redis hit ratio',
                    'points (target >= -2)',
                    'keys held ours / redis',
                    'ours at its own tenth',
                    'ours trace req/s',
                    'redis trace req/s',
                    'req/s ours/redis',
                    'ours CPU us/req',
                    'redis CPU us/req',
                ),
                rows,
            )
        )
    if 'set' in res:
        rows = []
        for label, best in res['set'].items():
            o, r = best['ours'], best['redis']
            rows.append(
                (
                    label,
                    f'{o["rps"]:.0f}',
                    f'{r["rps"]:.0f}',
                    ratio(o['rps'], r['rps']),
                    f'{o["cpu_us"]:.2f}',
                    f'{r["cpu_us"]:.2f}',
                    ratio(o['cpu_us'], r['cpu_us']),
                )
            )
        out.append(
            md(
                (
                    'SET -P 1 -c 50 -r 100000',
                    'ours req/s',
                    'redis req/s',
                    'ours/redis (target >= 0.8 with maxmemory)',
                    'ours CPU us/req',
                    'redis CPU us/req',
                    'CPU ours/redis',
                ),
                rows,
            )
        )
    return '\n\n'.join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--quick', action='store_true', help='every part shrunk: a smoke run')
    for part in ('accuracy', 'storm', 'zipf', 'set'):
        ap.add_argument(f'--{part}', action='store_true', help=f'run the {part} part')
    ap.add_argument('--storm-mb', type=int, help='MB of values written (default 1536)')
    ap.add_argument('--storm-value-size', type=int, default=1000, help='bytes a value')
    ap.add_argument('--zipf-keys', type=int, help='distinct keys (default 1,000,000)')
    ap.add_argument('--zipf-s', type=float, default=0.99)
    ap.add_argument('--zipf-warmup', type=int, help='warm-up requests (default 1,000,000)')
    ap.add_argument('--zipf-requests', type=int, help='measured requests (default 2,000,000)')
    ap.add_argument('--clients', type=int, default=4, help='trace client processes')
    ap.add_argument('--batch', type=int, default=50, help='GETs per trace pipeline')
    ap.add_argument('--requests', type=int, help='redis-benchmark -n (default 200000)')
    ap.add_argument('--repeat', type=int, help='SET runs per cell, best kept (default 3)')
    ap.add_argument('--root', default=ROOT, help='the checkout our server runs from')
    args = ap.parse_args()
    global OURS_ROOT
    OURS_ROOT = os.path.abspath(args.root)
    parts = [p for p in ('accuracy', 'storm', 'zipf', 'set') if getattr(args, p)]
    parts = parts or ['accuracy', 'storm', 'zipf', 'set']
    q = args.quick
    storm_mb = args.storm_mb or (400 if q else 1536)
    zkeys = args.zipf_keys or (100_000 if q else 1_000_000)
    zwarm = args.zipf_warmup if args.zipf_warmup is not None else (100_000 if q else 1_000_000)
    zreq = args.zipf_requests or (200_000 if q else 2_000_000)
    requests = args.requests or (50_000 if q else 200_000)
    repeat = args.repeat or (1 if q else 3)

    started = time.monotonic()
    busy = test_suites_running()
    if busy:
        print('warning: test suites are running; the figures will be noisy:', file=sys.stderr)
        print('  ' + '\n  '.join(busy), file=sys.stderr)
    res = {'started': time.strftime('%Y-%m-%dT%H:%M:%S'), 'parts': parts, 'quick': q}
    res['ours_at'] = git_state(OURS_ROOT)
    res['test_suites_running'] = busy
    res['loadavg_at_start'] = os.getloadavg()
    res['redis_version'] = redis_version()
    for part in parts:
        print(f'{part} ...', file=sys.stderr)
        t0 = time.monotonic()
        if part == 'accuracy':
            res['accuracy'] = accuracy(q)
        elif part == 'storm':
            res['storm'] = storm(storm_mb, args.storm_value_size)
        elif part == 'zipf':
            res['zipf'] = zipf(zkeys, args.zipf_s, zwarm, zreq, args.clients, args.batch)
            res['zipf'].update(
                keys=zkeys, s=args.zipf_s, warmup=zwarm, requests=zreq, clients=args.clients
            )
        else:
            res['set'] = set_throughput(requests, repeat)
        res[f'{part}_seconds'] = round(time.monotonic() - t0, 1)
        print(f'  ({res[f"{part}_seconds"]} s)', file=sys.stderr)
    res['seconds'] = time.monotonic() - started

    load = ' '.join(f'{x:.2f}' for x in res['loadavg_at_start'])
    print(
        f'redis-server {res["redis_version"]}; CPUs: {os.cpu_count()}; load average at start '
        f'{load}; {res["seconds"]:.0f} s'
    )
    print()
    print(tables(res))
    print()
    os.makedirs(os.path.join(ROOT, 'bench', 'results'), exist_ok=True)
    path = os.path.join(ROOT, 'bench', 'results', f'eviction-{int(time.time())}.json')
    with open(path, 'w') as f:
        json.dump(res, f, indent=2)
    script = os.path.relpath(os.path.abspath(__file__), ROOT)
    exe = os.path.relpath(sys.executable, ROOT) if sys.executable.startswith(ROOT) else 'python'
    argv = [exe, script, *(['--quick'] if q else []), *(f'--{p}' for p in parts)]
    if OURS_ROOT != ROOT:
        argv += ['--root', OURS_ROOT]
    if 'storm' in parts:
        argv += ['--storm-mb', str(storm_mb), '--storm-value-size', str(args.storm_value_size)]
    if 'zipf' in parts:
        argv += ['--zipf-keys', str(zkeys), '--zipf-s', str(args.zipf_s), '--zipf-warmup',
                 str(zwarm), '--zipf-requests', str(zreq), '--clients', str(args.clients),
                 '--batch', str(args.batch)]  # fmt: skip
    if 'set' in parts:
        argv += ['--requests', str(requests), '--repeat', str(repeat)]
    print(f'results: {os.path.relpath(path, ROOT)}')
    print('reproduce (from the repository root): ' + shlex.join(argv))


def test_suites_running():
    """pytest processes beside the benchmark: it needs a quiet machine."""
    out = subprocess.run(['pgrep', '-af', 'pytest'], capture_output=True, text=True).stdout
    return out.splitlines()


def redis_version():
    with start('redis') as srv:
        return info(srv.port, 'server')['redis_version']


if __name__ == '__main__':
    main()
