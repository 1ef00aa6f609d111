"""Per-command cost of the server's Python, without sockets: a Connection with a dummy
transport is fed the same 16-command batch over and over through `data_received`, as
uvloop would call it under `redis-benchmark -P 16`.

    .venv/bin/python bench/inprocess.py [set get incr setex mset ping]

A diagnostic for work on the hot path, steadier than the socket benchmarks on a shared
machine; the targets are checked by bench/core.py against redis-server.
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
from common import command  # noqa: E402

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
    # the aggregate types' redis-benchmark tests (bench/types.py)
    'lpush': command(b'LPUSH', b'mylist', b'xxx'),
    'rpop': command(b'RPOP', b'mylist'),
    'sadd': command(b'SADD', b'myset', b'element:__rand_int__'),
    'hset': command(b'HSET', b'myhash', b'element:__rand_int__', b'xxx'),
    'zadd': command(b'ZADD', b'myzset', b'0', b'element:__rand_int__'),
    'zpopmin': command(b'ZPOPMIN', b'myzset'),
    'lrange_100': command(b'LRANGE', b'mylist', b'0', b'99'),
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
    for name in sys.argv[1:] or BATCHES:
        data = BATCHES[name] * 16
        rounds = 20000
        best = float('inf')
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(rounds):
                conn.data_received(data)
                loop.run_ready()
            best = min(best, (time.perf_counter() - t0) / rounds / 16)
        print(f'{name:6} {best * 1e6:.3f} us per command')


if __name__ == '__main__':
    main()
