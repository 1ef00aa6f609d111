"""The Zipf part of bench/eviction.py without the network: the server's own Keyspace and
Evictor replay the same seeded trace (GET, then SET on a miss, 100-byte values) at the
same maxmemory, and the hit ratio is printed. Iterating on the eviction policy takes
seconds here where the real benchmark takes minutes; confirm with bench/eviction.py --zipf.

    .venv/bin/python bench/eviction_sim.py [--policy allkeys-lru] [--maxmemory 19627352]

The trace is bench/eviction.py's (same seed), cached in /tmp. Requests run in batches of 50
GETs then the SETs of the misses, as one of the benchmark's clients sends them; the cron's
refresh (the LRU clock, LFU's minute clock) runs every 100 ms of real time, as the
server's does at hz 10. --tick-requests makes the clock virtual instead (a tick every N
requests), for runs that must not depend on the machine's speed. --shift moves the
measured requests to a disjoint set of keys (rank + --keys): the popular keys all change
at once after the warm-up, and the hit ratio shows how fast the policy adapts.
"""

import argparse
import os
import sys
import time
from array import array

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from eviction import zipf_trace, zkey  # noqa: E402

from store.server import Server  # noqa: E402

VALUE = b'z' * 100


class _Loop:
    """Collects the evictor's `call_soon` (eviction continuing between commands)."""

    def __init__(self):
        self.pending = []

    def call_soon(self, fn, *args):
        self.pending.append((fn, args))

    def run(self):
        while self.pending:
            fn, args = self.pending.pop(0)
            fn(*args)


def trace(nkeys, s, count, seed=12):
    path = f'/tmp/zipf_trace_{nkeys}_{s}_{count}_{seed}.bin'
    if os.path.exists(path):
        out = array('i')
        with open(path, 'rb') as f:
            out.frombytes(f.read())
        return out
    out = zipf_trace(nkeys, s, count, seed)
    with open(path, 'wb') as f:
        f.write(out.tobytes())
    return out


def run(
    policy,
    maxmemory,
    ranks,
    warmup,
    batch=50,
    samples=5,
    clients_overhead=4 * 2560,
    tick_requests=0,
    options=(),
):
    server = Server()
    server.loop = loop = _Loop()
    cfg = server.config
    cfg.set_from_args('maxmemory', [str(maxmemory - clients_overhead)])
    cfg.set_from_args('maxmemory-policy', [policy])
    cfg.set_from_args('maxmemory-samples', [str(samples)])
    for name, value in options:
        cfg.set_from_args(name, [value])
    server.evictor.configure()
    ks, ev = server.keyspace, server.evictor
    read, write, gate = ks.read, ks.set, ev.gate
    keys = [zkey(r) for r in range(max(ranks) + 1)]
    hits = misses = 0
    last = time.monotonic()
    t0 = time.process_time()
    n = len(ranks)
    tick = 0
    for b in range(0, n, batch):
        if b == warmup:
            hits = misses = 0
            t0 = time.process_time()
        if tick_requests:
            if b // tick_requests != tick:
                tick = b // tick_requests
                ev.refresh(1.7e9 + tick * 0.1)
        else:
            now = time.monotonic()
            if now - last >= 0.1:
                last = now
                ev.refresh()
        chunk = [keys[r] for r in ranks[b : b + batch]]
        missed = []
        for k in chunk:
            if ks.used > ks.check_at:
                gate(None, None, [])
            if read(0, k) is None:
                missed.append(k)
        hits += len(chunk) - len(missed)
        misses += len(missed)
        for k in missed:
            if ks.used > ks.check_at:
                gate(None, None, [])
            write(0, k, VALUE)
        loop.run()
    cpu = time.process_time() - t0
    return {
        'hit_ratio': hits / (hits + misses),
        'keys': ks.dbsize(0),
        'evicted': ev.evicted_keys,
        'cpu_us': cpu / (hits + misses) * 1e6,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--policy', action='append', help='default: allkeys-lru and allkeys-lfu')
    ap.add_argument('--maxmemory', type=int, default=19_627_352)
    ap.add_argument('--keys', type=int, default=1_000_000)
    ap.add_argument('--s', type=float, default=0.99)
    ap.add_argument('--warmup', type=int, default=1_000_000)
    ap.add_argument('--requests', type=int, default=2_000_000)
    ap.add_argument('--samples', type=int, default=5)
    ap.add_argument('--tick-requests', type=int, default=0)
    ap.add_argument('--shift', action='store_true', help='measure on other keys than warmed')
    ap.add_argument(
        '--set',
        nargs=2,
        action='append',
        default=[],
        metavar=('PARAM', 'VALUE'),
        help='a configuration parameter, e.g. --set lfu-log-factor 10',
    )
    args = ap.parse_args()
    ranks = trace(args.keys, args.s, args.warmup + args.requests)
    if args.shift:
        ranks = ranks[: args.warmup] + array('i', (r + args.keys for r in ranks[args.warmup :]))
    for policy in args.policy or ['allkeys-lru', 'allkeys-lfu']:
        x = run(
            policy,
            args.maxmemory,
            ranks,
            args.warmup,
            samples=args.samples,
            tick_requests=args.tick_requests,
            options=args.set,
        )
        print(
            f'{policy}: hit ratio {x["hit_ratio"]:.2%}, keys {x["keys"]}, '
            f'evicted {x["evicted"]}, {x["cpu_us"]:.1f} us/request (in-process)',
            flush=True,
        )


if __name__ == '__main__':
    main()
