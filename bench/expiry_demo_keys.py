"""Keys for the expiry report's demo chart (docs/expiry-report.png): SET keys in three
namespaces with PXAT deadlines spread over the next few minutes, each namespace with its own
shape, against a server started with `--keyevent-journal-events x`.

    .venv/bin/python bench/expiry_demo_keys.py --url redis://127.0.0.1:7390 --span 300

user: 30,000 spread evenly; session: 45,000 front-loaded (exponential, mean span/5 = 60 s);
cart: 15,000 in a burst around 0.6 span = 180 s (sd span/15). Deadlines start 10 s from
now; seed 1.
"""

import argparse
import random
import time

import redis


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--url', default='redis://127.0.0.1:7390')
    p.add_argument('--span', type=float, default=300, help='seconds the deadlines cover')
    p.add_argument('--seed', type=int, default=1)
    args = p.parse_args()
    r = redis.Redis.from_url(args.url)
    rnd = random.Random(args.seed)
    span = args.span
    t0 = time.time() + 10
    shapes = {
        'user': (30000, lambda: rnd.uniform(0, span)),
        'session': (45000, lambda: min(rnd.expovariate(5 / span), span)),
        'cart': (15000, lambda: min(max(rnd.gauss(span * 0.6, span / 15), 0), span)),
    }
    pipe = r.pipeline(transaction=False)
    for ns, (n, offset) in shapes.items():
        for i in range(n):
            pipe.execute_command('SET', f'{ns}:{i}', 'v', 'PXAT', int((t0 + offset()) * 1000))
    pipe.execute()
    print(
        f'{sum(n for n, _ in shapes.values())} keys; the last deadline is '
        f'{t0 + span - time.time():.0f} s from now'
    )


if __name__ == '__main__':
    main()
