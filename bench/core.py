"""Server-core benchmark: our server against redis-server in the same run.

    .venv/bin/python bench/core.py [--requests 200000] [--keys 1000000] [--before DIR]

1. Throughput: redis-benchmark -t set,get,incr,mset -c 50 at -P 1 and -P 16 against each
   server in turn (alternating, so drift on a shared machine hits both), with each server's
   CPU seconds per request read from /proc/<pid>/stat around the run; then SET with and
   without `EX 100` on the same 100,000 random keys, for the cost of a TTL.
2. Memory: RSS growth per key after loading N keys with `SET key:<i> <8 bytes> EX 3600`.

Prints a Markdown table with the ratios the targets are stated in (see docs/benchmarks.md).
With --before DIR (`git worktree add DIR <rev>`), `before` is our server from that checkout,
run in turn with the other two, and a table compares ours with it: a change's before and
after in the same run.
"""

import argparse
import contextlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ServerProc, command, redis_benchmark, send_pipelined  # noqa: E402

TESTS = ['set', 'get', 'incr', 'mset']
# The expiry cost: the same random keys written with and without a TTL.
TTL_TESTS = [
    ('SET (random keys)', ['SET', 'key:__rand_int__', 'xxx']),
    ('SET EX 100 (random keys)', ['SET', 'key:__rand_int__', 'xxx', 'EX', '100']),
]


def throughput(servers, requests, pipelines, repeat, tests):
    rows = []
    for pipeline in pipelines:
        for name, test in tests:
            result = {}
            for srv in servers:
                result[srv.kind] = {'rps': 0.0, 'cpu': 0.0}
            for _ in range(repeat):
                for srv in servers:
                    cpu0 = srv.cpu_seconds()
                    rps = redis_benchmark(srv.port, test, requests, 50, pipeline)
                    cpu = srv.cpu_seconds() - cpu0
                    best = result[srv.kind]
                    if rps > best['rps']:
                        best['rps'] = rps
                        best['cpu'] = cpu / requests * 1e6
            rows.append((name, pipeline, result))
            cells = [f'{k} {v["rps"]:>10.0f} rps {v["cpu"]:6.2f} us/req' for k, v in result.items()]
            print(f'  {name:5} -P {pipeline:<2} ' + ' | '.join(cells), file=sys.stderr)
    return rows


def print_throughput(rows, other='redis'):
    """`throughput`'s rows as a Markdown table, ours against `other` (redis-server, or the
    `before` checkout)."""
    print(
        f'| test | pipeline | ours req/s | {other} req/s | ratio | ours CPU us/req | '
        f'{other} CPU us/req | CPU ratio |'
    )
    print('|---|---|---|---|---|---|---|---|')
    for test, pipeline, res in rows:
        o, r = res['ours'], res[other]
        print(
            f'| {test} | {pipeline} | {o["rps"]:.0f} | {r["rps"]:.0f} | '
            f'{o["rps"] / r["rps"]:.2f}x | {o["cpu"]:.2f} | {r["cpu"]:.2f} | '
            f'{o["cpu"] / r["cpu"]:.2f}x |'
        )


def memory(kind, nkeys, before=None):
    with server(kind, before) as srv:
        start = srv.rss_bytes()
        value = b'v' * 8
        cmds = [command(b'SET', b'key:%d' % i, value, b'EX', b'3600') for i in range(nkeys)]
        send_pipelined(srv.port, cmds)
        del cmds
        after = srv.rss_bytes()
    return (after - start) / nkeys


def server(kind, before=None):
    """A ServerProc; `before` is ours from the checkout at `before`."""
    if kind != 'before':
        return ServerProc(kind)
    srv = ServerProc('ours', root=before)
    srv.kind = 'before'
    return srv


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--requests', type=int, default=200000)
    ap.add_argument('--keys', type=int, default=1000000)
    ap.add_argument('--repeat', type=int, default=1, help='runs per cell; best is kept')
    ap.add_argument('--skip-memory', action='store_true')
    ap.add_argument('--before', help="another checkout's root: the `before` server")
    args = ap.parse_args()
    kinds = ['ours', 'redis'] + (['before'] if args.before else [])

    print('throughput (redis-benchmark -c 50):', file=sys.stderr)
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(server(k, args.before)) for k in kinds]
        rows = throughput(
            servers, args.requests, [1, 16], args.repeat, [(t, t) for t in TESTS] + TTL_TESTS
        )

    print_throughput(rows)
    if args.before:
        print()
        print_throughput(rows, 'before')
    ttl = {(name, p): res for name, p, res in rows if name in dict(TTL_TESTS)}
    print()
    print('| pipeline | server | CPU us/req SET | CPU us/req SET EX 100 | SET EX / SET |')
    print('|---|---|---|---|---|')
    for p in (1, 16):
        plain, ex = ttl[(TTL_TESTS[0][0], p)], ttl[(TTL_TESTS[1][0], p)]
        for kind in kinds:
            a, b = plain[kind]['cpu'], ex[kind]['cpu']
            print(f'| {p} | {kind} | {a:.2f} | {b:.2f} | {b / a:.2f}x |')

    if not args.skip_memory:
        print(f'memory: loading {args.keys} keys with EX 3600 ...', file=sys.stderr)
        ours_b = memory('ours', args.keys)
        redis_b = memory('redis', args.keys)
        print()
        print('| keys (EX 3600) | ours RSS bytes/key | redis RSS bytes/key | ratio |')
        print('|---|---|---|---|')
        print(f'| {args.keys} | {ours_b:.0f} | {redis_b:.0f} | {ours_b / redis_b:.2f}x |')
        if args.before:
            before_b = memory('before', args.keys, args.before)
            print(f'\nbefore: {before_b:.0f} RSS bytes/key ({ours_b / before_b:.2f}x)')


if __name__ == '__main__':
    main()
