"""Per-command cost of the server's Python, without sockets: a Connection with a dummy
transport is fed the same 16-command batch over and over through `data_received`, as
uvloop would call it under `redis-benchmark -P 16` (--pipeline 1: one command a read, as
under -P 1).

    .venv/bin/python bench/inprocess.py [--keys N] [--pipeline P] [set get incr ... evalsha]

Without --keys every command names the one key `key:__rand_int__`, which stays in the CPU's
caches. With --keys N each __rand_int__ is a random number below N, as redis-benchmark -r N
makes it: a key then costs the cache misses of finding it among N (with N = 100,000 most of
a GET's cost; run `set` first so the keys exist). `evalsha` runs bench/scripting.py's small
script (GET + INCR + EXPIRE) on its key, and makes its keys itself (after `set` its INCR
would fail on them).

A diagnostic for work on the hot path, steadier than the socket benchmarks on a shared
machine; the targets are checked by bench/core.py against redis-server.
"""

import argparse
import hashlib
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
from common import command  # noqa: E402
from scripting import SMALL  # noqa: E402

from store.config import Config  # noqa: E402
from store.connection import Connection  # noqa: E402
from store.server import Server  # noqa: E402

BATCHES = {
    'set': command(b'SET', b'key:__rand_int__', b'xxx'),
    'get': command(b'GET', b'key:__rand_int__'),
    'incr': command(b'INCR', b'counter:__rand_int__'),
    'setex': command(b'SET', b'key:__rand_int__', b'xxx', b'EX', b'100'),
    'mset': command(b'MSET', *[b'key:__rand_int__', b'xxx'] * 10),
    'ping': command(b'PING'),
    # the aggregate types' redis-benchmark tests (bench/data_types.py)
    'lpush': command(b'LPUSH', b'mylist', b'xxx'),
    'rpop': command(b'RPOP', b'mylist'),
    'sadd': command(b'SADD', b'myset', b'element:__rand_int__'),
    'hset': command(b'HSET', b'myhash', b'element:__rand_int__', b'xxx'),
    'zadd': command(b'ZADD', b'myzset', b'0', b'element:__rand_int__'),
    'zpopmin': command(b'ZPOPMIN', b'myzset'),
    'lrange_100': command(b'LRANGE', b'mylist', b'0', b'99'),
    'evalsha': command(
        b'EVALSHA', hashlib.sha1(SMALL.encode()).hexdigest().encode(), b'1', b'key:__rand_int__'
    ),
}


class Loop:
    """What the connection asks of the event loop: callbacks for the end of the turn."""

    def __init__(self):
        self.ready = []

    def call_soon(self, callback, *args):
        self.ready.append((callback, args))

    def run_ready(self):
        ready, self.ready = self.ready, []
        for callback, args in ready:
            callback(*args)


class Transport:
    def write(self, data):
        pass

    def get_extra_info(self, name):
        return None

    def close(self):
        pass


def main():
    server = Server(Config())
    # No event loop runs: `loop` only collects what a turn would run after the reads (the
    # replies' flush), and the active-expiry timer stays unarmed (SET EX still files the
    # deadline in the index and asks the timer, as in the server).
    server.loop = loop = Loop()
    conn = Connection(server)
    conn.connection_made(Transport())
    ap = argparse.ArgumentParser()
    ap.add_argument('--keys', type=int, default=0, help='random keys below N (redis-benchmark -r)')
    ap.add_argument('--pipeline', type=int, default=16, help='commands a read (redis-benchmark -P)')
    ap.add_argument('tests', nargs='*', default=list(BATCHES))
    args = ap.parse_args()
    conn.data_received(command(b'SCRIPT', b'LOAD', SMALL.encode()))  # for evalsha
    loop.run_ready()
    p = args.pipeline
    for name in args.tests:
        data = [BATCHES[name] * p]
        if args.keys:  # enough batches that every key comes up
            data = [random_keys(data[0], args.keys) for _ in range(args.keys // p + 1)]
        rounds = max(20000, len(data))
        best = float('inf')
        for _ in range(5):
            t0 = time.perf_counter()
            for i in range(rounds):
                conn.data_received(data[i % len(data)])
                loop.run_ready()
            best = min(best, (time.perf_counter() - t0) / rounds / p)
        print(f'{name:6} {best * 1e6:.3f} us per command')


def random_keys(batch, n):
    """`batch` with each __rand_int__ a random 12-digit number below n."""
    parts = batch.split(b'__rand_int__')
    out = [parts[0]]
    for part in parts[1:]:
        out += [b'%012d' % random.randrange(n), part]
    return b''.join(out)


if __name__ == '__main__':
    main()
