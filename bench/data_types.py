"""Data-type benchmark: hashes, lists, sets, sorted sets, bitfields, HyperLogLogs and
geospatial indexes, our server against redis-server in the same run.

    .venv/bin/python bench/data_types.py [--requests 200000] [--repeat 2] [--scale 1.0]
        [--tests set,pfadd,...] [--skip-memory] [--skip-throughput]

1. Throughput: redis-benchmark -c 50 -t lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,
   lrange_100,lrange_600 at -P 1 and -P 16 against each server in turn (core.py's
   `throughput`: alternating servers, best of --repeat, CPU per request from /proc), with
   SET first as the reference for what the machine gives the string hot path that run;
   then `COMMANDS`: BITFIELD INCRBY on 100,000 small keys, PFADD of random elements to one
   HLL (dense after its first ~1,700), GEOADD of random points in a 1 x 1 degree square
   and GEOSEARCH within 1 km of its middle (redis-benchmark's __rand_int__ in the
   coordinates' decimals), BITFIELD INCRBY at the end of one 1 MB bitmap, and APPEND of
   100 bytes to one string (which grows by requests x 100 bytes a run).
2. Memory: RSS growth per element in a fresh server of each kind after loading
   (a) 1,000,000 hashes of 5 small fields, (b) one hash, one set and one sorted set of
   1,000,000 members each (each in its own server), (c) 100,000 lists of 10 items.
   --scale shrinks the counts for a quick look.

Prints Markdown tables (docs/benchmarks.md records them with this command).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ServerProc, command, send_pipelined  # noqa: E402
from core import print_throughput, throughput  # noqa: E402

TESTS = [
    'set',  # the reference: what the string hot path gets in the same run
    'lpush',
    'rpush',
    'lpop',
    'rpop',
    'sadd',
    'hset',
    'spop',
    'zadd',
    'zpopmin',
    'lrange_100',
    'lrange_600',
]

COMMANDS = [
    ('bitfield', ['BITFIELD', 'bf:__rand_int__', 'INCRBY', 'u8', '#3', '1']),
    ('pfadd', ['PFADD', 'hll', 'element:__rand_int__']),
    ('geoadd', ['GEOADD', 'geo', '13.__rand_int__', '38.__rand_int__', 'm:__rand_int__']),
    ('geosearch', ['GEOSEARCH', 'geo', 'FROMLONLAT', '13.5', '38.5', 'BYRADIUS', '1', 'km']),
    # one string written over and over: a 1 MB bitmap, and a log growing by 100 bytes
    ('bitfield 1 MB', ['BITFIELD', 'bitmap', 'INCRBY', 'u8', '#1048575', '1']),
    ('append 100 B', ['APPEND', 'log', 'x' * 100]),
]


def small_hashes(n):
    """(a): n hashes h:<i> of five 8-byte fields with 8-byte values."""
    args = []
    for f in range(5):
        args += [b'field:%02d' % f, b'val:%04d' % f]
    return [command(b'HSET', b'h:%d' % i, *args) for i in range(n)], n * 5


def big_hash(n):
    return [command(b'HSET', b'bighash', b'field:%d' % i, b'v%d' % i) for i in range(n)], n


def big_set(n):
    return [command(b'SADD', b'bigset', b'member:%d' % i) for i in range(n)], n


def big_zset(n):
    return [command(b'ZADD', b'bigzset', i, b'member:%d' % i) for i in range(n)], n


def small_lists(n):
    """(c): n lists l:<i> of ten 8-byte items."""
    items = [b'item:%03d' % j for j in range(10)]
    return [command(b'RPUSH', b'l:%d' % i, *items) for i in range(n)], n * 10


LOADS = [
    ('(a) hashes of 5 fields', small_hashes, 1_000_000),
    ('(b) one hash', big_hash, 1_000_000),
    ('(b) one set', big_set, 1_000_000),
    ('(b) one sorted set', big_zset, 1_000_000),
    ('(c) lists of 10 items', small_lists, 100_000),
]


def rss_per_element(kind, make, n):
    cmds, elements = make(n)
    with ServerProc(kind) as srv:
        before = srv.rss_bytes()
        send_pipelined(srv.port, cmds)
        after = srv.rss_bytes()
    return (after - before) / elements


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--requests', type=int, default=200000)
    ap.add_argument('--repeat', type=int, default=1, help='runs per cell; best is kept')
    ap.add_argument('--scale', type=float, default=1.0, help='multiplies the memory loads')
    ap.add_argument('--skip-memory', action='store_true')
    ap.add_argument('--skip-throughput', action='store_true')
    ap.add_argument('--tests', help='comma-separated throughput tests (default: all)')
    args = ap.parse_args()
    tests = [(t, t) for t in TESTS] + COMMANDS
    if args.tests:
        tests = [t for t in tests if t[0] in args.tests.split(',')]

    if not args.skip_throughput:
        print('throughput (redis-benchmark -c 50):', file=sys.stderr)
        with ServerProc('ours') as ours, ServerProc('redis') as redis:
            rows = throughput(
                [ours, redis],
                args.requests,
                [1, 16],
                args.repeat,
                tests,
            )
        print_throughput(rows)

    if not args.skip_memory:
        print()
        print('| load | elements | ours RSS bytes/element | redis RSS bytes/element | ratio |')
        print('|---|---|---|---|---|')
        for name, make, n in LOADS:
            n = max(1, int(n * args.scale))
            print(f'memory: {name} x {n} ...', file=sys.stderr)
            ours_b = rss_per_element('ours', make, n)
            redis_b = rss_per_element('redis', make, n)
            elements = make(1)[1] * n
            print(
                f'| {name} | {elements} | {ours_b:.0f} | {redis_b:.0f} | {ours_b / redis_b:.2f}x |'
            )


if __name__ == '__main__':
    main()
