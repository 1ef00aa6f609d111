"""Two checkouts of our server side by side: did a change cost anything per command?

    git worktree add /tmp/before <rev>
    .venv/bin/python bench/ab.py /tmp/before .  [--rounds 4] [--requests 200000]

Starts `python -m store` from each checkout and runs redis-benchmark -c 50 (SET, GET, INCR
at -P 1 and -P 16) against them alternately, swapping the order every round so drift on a
shared machine hits both; prints each one's best req/s and least server CPU per request.
bench/core.py compares with redis-server; this compares two versions of ours, where the
machine's noise (+-10% between runs here) is otherwise larger than the change.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ServerProc, redis_benchmark  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('before')
    ap.add_argument('after')
    ap.add_argument('--rounds', type=int, default=4)
    ap.add_argument('--requests', type=int, default=200000)
    opts = ap.parse_args()
    servers = [
        ('before', ServerProc('ours', root=opts.before)),
        ('after', ServerProc('ours', root=opts.after)),
    ]
    best = {}
    try:
        for rnd in range(opts.rounds):
            for test in ('set', 'get', 'incr'):
                for pipeline in (1, 16):
                    for name, srv in servers if rnd % 2 == 0 else servers[::-1]:
                        cpu0 = srv.cpu_seconds()
                        rps = redis_benchmark(srv.port, test, opts.requests, 50, pipeline)
                        us = (srv.cpu_seconds() - cpu0) / opts.requests * 1e6
                        b = best.setdefault((test, pipeline, name), [0.0, float('inf')])
                        b[0], b[1] = max(b[0], rps), min(b[1], us)
    finally:
        for _, srv in servers:
            srv.stop()
    print('| test | -P | before req/s | after req/s | before CPU us/req | after CPU us/req |')
    print('|---|---|---|---|---|---|')
    for test in ('set', 'get', 'incr'):
        for pipeline in (1, 16):
            b, a = best[(test, pipeline, 'before')], best[(test, pipeline, 'after')]
            print(f'| {test} | {pipeline} | {b[0]:.0f} | {a[0]:.0f} | {b[1]:.2f} | {a[1]:.2f} |')


if __name__ == '__main__':
    main()
