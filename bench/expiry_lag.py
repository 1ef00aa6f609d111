"""Expiry lag: how late is a key's `expired` event? (the method of valkey-io/valkey#4384)

    .venv/bin/python bench/expiry_lag.py [--background 0,10000,100000,1000000]
                                         [--probes 1000] [--wait 30]
                                         [--before /tmp/before --servers before,ours,redis]

For each N: start our server and redis-server (notify-keyspace-events Ex), load N
background keys with TTL 1 h, subscribe to __keyevent@0__:expired, write `--probes` probe
keys that share one deadline t (`SET probe:i v PXAT t`, t = 2 s ahead), and timestamp each
event's arrival. Reports, per server and N, how many probes were announced within `--wait`
seconds after t, and the p50/p99/max lag (arrival - t) in ms. With --before, `before` is
our server from another checkout (`git worktree add /tmp/before <rev>`), to compare a
change in the same run.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ExpiredEvents, ServerProc, command, send_pipelined  # noqa: E402


def percentile(values, p):
    if not values:
        return float('nan')
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def run_one(kind, background, probes, wait, before=None):
    if kind == 'before':
        srv = ServerProc('ours', '--notify-keyspace-events', 'Ex', root=before)
    else:
        srv = ServerProc(kind, '--notify-keyspace-events', 'Ex')
    with srv:
        if background:
            send_pipelined(
                srv.port,
                [command(b'SET', b'bg:%d' % i, b'v', b'EX', b'3600') for i in range(background)],
            )
        arrivals = {}

        def on_batch(now, keys):
            for key in keys:
                if key.startswith(b'probe:'):
                    arrivals.setdefault(key, now)

        sub = ExpiredEvents(srv.port, on_batch)
        sub.start()
        t = int(time.time() * 1000) + 2000
        send_pipelined(
            srv.port, [command(b'SET', b'probe:%d' % i, b'v', b'PXAT', t) for i in range(probes)]
        )
        end = t / 1000 + wait
        while time.time() < end and len(arrivals) < probes:
            time.sleep(0.05)
        sub.stop()
        lags = [(a * 1000 - t) for a in arrivals.values()]
        return len(lags), percentile(lags, 50), percentile(lags, 99), max(lags, default=0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--background', default='0,10000,100000,1000000')
    ap.add_argument('--probes', type=int, default=1000)
    ap.add_argument('--wait', type=float, default=30)
    ap.add_argument('--servers', default='ours,redis')
    ap.add_argument('--before', help="another checkout's root: the `before` server")
    args = ap.parse_args()
    print('| server | background keys | delivered | p50 lag ms | p99 lag ms | max lag ms |')
    print('|---|---|---|---|---|---|')
    for n in [int(x) for x in args.background.split(',')]:
        for kind in args.servers.split(','):
            got, p50, p99, mx = run_one(kind, n, args.probes, args.wait, args.before)
            print(
                f'| {kind} | {n} | {got}/{args.probes} | {p50:.1f} | {p99:.1f} | {mx:.1f} |',
                flush=True,
            )


if __name__ == '__main__':
    main()
