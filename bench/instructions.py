"""Work per request, counted rather than timed: ours against the floor of bench/floor.py.

    .venv/bin/python bench/instructions.py [--by-function] [get set incr hset lpush sadd
                                                            evalsha evalsha1]

Each test sends one command per read, as redis-benchmark -P 1 does, to a Connection with
a dummy transport (bench/inprocess.py) and to the floor server's protocol, in process,
keys drawn from 1,000 that exist. Per request it reports:

- bytecodes: Python instructions run (sys.settrace opcode events);
- instructions: CPU instructions under valgrind's cachegrind, when valgrind is installed
  (apt-get install valgrind): the difference between a run of 6,000 requests and one of
  1,000, so that start-up cancels out.

Both come out the same on every run, busy machine or not, where timings here move by 5-10%
from one run to the next: a change of 1% to the hot path shows. They count work, not time:
cache misses (a big keyspace), system calls and the event loop are not in them;
bench/scripting.py and bench/core.py measure those, against redis-server. --by-function
lists where our bytecodes go.
"""

import argparse
import collections
import hashlib
import os
import random
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
from common import command  # noqa: E402
from scripting import SMALL  # noqa: E402

SCRIPTS = {'evalsha': SMALL.encode(), 'evalsha1': b'return 1'}
TESTS = ('get', 'set', 'incr', 'hset', 'lpush', 'sadd', 'evalsha', 'evalsha1')
FLOOR_TESTS = ('get', 'set', 'incr', 'evalsha', 'evalsha1')  # bench/floor.py has no HSET, ...
KEYS = 1000
SHORT, LONG = 1000, 6000  # requests in the two runs under valgrind


def feeder(kind, test):
    """A function delivering one read (and, for ours, the loop turn after it), and the
    request for a key of `test`."""
    if kind == 'ours':
        from inprocess import Loop, Transport

        from store.config import Config
        from store.connection import Connection
        from store.server import Server

        server = Server(Config())
        server.loop = loop = Loop()
        conn = Connection(server)
        conn.connection_made(Transport())

        def feed(data):
            conn.data_received(data)
            loop.run_ready()
    else:
        from floor import FloorProtocol
        from inprocess import Transport

        protocol = FloorProtocol()
        protocol.connection_made(Transport())
        feed = protocol.data_received
    if test in SCRIPTS:
        body = SCRIPTS[test]
        feed(command(b'SCRIPT', b'LOAD', body))
        sha = hashlib.sha1(body).hexdigest().encode()
        return feed, lambda key: command(b'EVALSHA', sha, b'1', key)
    if test == 'set':
        return feed, lambda key: command(b'SET', key, b'xxx')
    if test == 'incr':
        return feed, lambda key: command(b'INCR', key)
    if test == 'hset':  # a field of a small hash (the key's own, beside its string)
        return feed, lambda key: command(b'HSET', b'h' + key, b'f', b'xxx')
    if test == 'lpush':  # a list that grows by one (about 7 elements at the end)
        return feed, lambda key: command(b'LPUSH', b'l' + key, b'xxx')
    if test == 'sadd':  # a member already in a small set
        return feed, lambda key: command(b'SADD', b's' + key, b'xxx')
    return feed, lambda key: command(b'GET', key)


def child(kind, test, n, trace):
    """Run n requests; with `trace`, print the bytecodes they ran (by function if asked)."""
    feed, request = feeder(kind, test)
    for i in range(KEYS):  # every key exists, as in a steady state
        feed(command(b'SET', b'key:%012d' % i, b'1'))
        feed(request(b'key:%012d' % i))
    rng = random.Random(1)
    # as many made for every n: only the requests sent differ between two runs
    reads = [request(b'key:%012d' % rng.randrange(KEYS)) for _ in range(LONG)][:n]
    counts = collections.Counter()
    if trace:

        def tracer(frame, event, arg):
            frame.f_trace_opcodes = True
            if event == 'opcode':
                code = frame.f_code
                counts[f'{os.path.relpath(code.co_filename)}:{code.co_name}'] += 1
            return tracer

        sys.settrace(tracer)
    for data in reads:
        feed(data)
    sys.settrace(None)
    if trace:
        print(sum(counts.values()) / n)
        for name, count in counts.most_common(25 if trace == 'functions' else 0):
            print(f'{count / n:8.1f}  {name}')


def run_child(kind, test, n, trace=None, valgrind=False):
    cmd = [sys.executable, __file__, '--child', kind, test, str(n)]
    if trace:
        cmd += ['--trace', trace]
    if valgrind:
        cmd = ['valgrind', '--tool=cachegrind', '--cache-sim=no', '--cachegrind-out-file=/dev/null']
        cmd += [sys.executable, __file__, '--child', kind, test, str(n)]
    env = dict(os.environ, PYTHONHASHSEED='0')  # the same dict layouts on every run
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=os.path.dirname(HERE))
    if p.returncode:
        sys.exit(f'{" ".join(cmd)} failed:\n{p.stderr}')
    if valgrind:  # "==123== I   refs:      2,121,799,918"
        line = next(x for x in p.stderr.splitlines() if 'I   refs' in x)
        return int(line.split()[-1].replace(',', ''))
    return p.stdout


def instructions(kind, test):
    long = run_child(kind, test, LONG, valgrind=True)
    return (long - run_child(kind, test, SHORT, valgrind=True)) / (LONG - SHORT)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('tests', nargs='*', default=list(TESTS), help=' '.join(TESTS))
    ap.add_argument('--by-function', action='store_true', help="where our bytecodes go")
    ap.add_argument('--child', nargs=3, metavar=('KIND', 'TEST', 'N'), help=argparse.SUPPRESS)
    ap.add_argument('--trace', help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, test, n = args.child
        return child(kind, test, int(n), args.trace)

    for test in args.tests:
        if test not in TESTS:
            ap.error(f'unknown test {test}: one of {" ".join(TESTS)}')
    valgrind = shutil.which('valgrind') is not None
    if not valgrind:
        print('(valgrind is not installed: bytecodes only)')
    kinds = ('ours bytecodes', 'floor bytecodes', 'ours instructions', 'floor instructions')
    print('| test | ' + ' | '.join(kinds) + ' | ratio |')
    print('|---|---|---|---|---|---|')
    for test in args.tests:
        ours = run_child('ours', test, 2000, 'functions' if args.by_function else 'total')
        floored = test in FLOOR_TESTS
        floor = f"{float(run_child('floor', test, 2000, 'total')):,.0f}" if floored else '-'
        cells = ['-', '-', '-']
        if valgrind:
            mine = instructions('ours', test)
            cells = [f'{mine:,.0f}', '-', '-']
            if floored:
                theirs = instructions('floor', test)
                cells[1:] = [f'{theirs:,.0f}', f'{mine / theirs:.2f}x']
        first, *rest = ours.splitlines()
        print(f'| {test} | {float(first):,.0f} | {floor} | ' + ' | '.join(cells) + ' |')
        for line in rest:
            print('    ' + line)


if __name__ == '__main__':
    main()
