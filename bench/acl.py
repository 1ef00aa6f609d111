"""What an ACL user costs: SET and GET as the default user and as users with rules, on
our server and redis-server in the same run.

    .venv/bin/python bench/acl.py [--requests 200000] [--pipeline 16] [--repeat 1]

Users (the same rules on both servers):

- default: no AUTH, everything allowed;
- full: `~* &* +@all`, AUTH as a user that may run everything;
- app: `~* &* +@all -@dangerous`, some commands denied, every key and channel allowed:
  on this server the commands it may run go through the hot path (a command table of its
  own), the others through the gated path where ACL checks them;
- keys: `~key:* &* +@all`, every command's keys checked against a pattern (the gated
  path on this server for every command).

redis-benchmark `-c 50 -r 100000` with `--user`/`-a` for the users; best of --repeat,
servers alternating, each server's CPU microseconds per request from /proc. Prints a
Markdown table and the command line that reproduces it.
"""

import argparse
import os
import sys

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ServerProc, redis_benchmark, reproduce  # noqa: E402

USERS = {
    'default': None,
    'full': ('~*', '&*', '+@all'),
    'app': ('~*', '&*', '+@all', '-@dangerous'),
    'keys': ('~key:*', '&*', '+@all'),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--requests', type=int, default=200000)
    ap.add_argument('--pipeline', type=int, default=16)
    ap.add_argument('--repeat', type=int, default=1)
    args = ap.parse_args()
    rows = []
    with ServerProc('ours') as ours, ServerProc('redis') as ref:
        servers = [ours, ref]
        for srv in servers:
            admin = redis.Redis(port=srv.port, protocol=2)
            for name, rules in USERS.items():
                if rules is not None:
                    admin.execute_command('ACL', 'SETUSER', name, 'on', '>pw', *rules)
            admin.close()
        for user, rules in USERS.items():
            extra = () if rules is None else ('--user', user, '-a', 'pw')
            for test in ('set', 'get'):
                best = {srv.kind: (0.0, 0.0) for srv in servers}
                for _ in range(args.repeat):
                    for srv in servers:
                        cpu0 = srv.cpu_seconds()
                        rps = redis_benchmark(
                            srv.port, test, args.requests, 50, args.pipeline, extra=extra
                        )
                        cpu = (srv.cpu_seconds() - cpu0) / args.requests * 1e6
                        if rps > best[srv.kind][0]:
                            best[srv.kind] = (rps, cpu)
                rows.append((user, test, best['ours'], best['redis']))
                print(f'  {user} {test}: {best}', file=sys.stderr)
    print(f'redis-benchmark -c 50 -r 100000 -P {args.pipeline}')
    print()
    print('| user | test | ours req/s | redis req/s | ratio | ours CPU us/req | redis CPU us/req |')
    print('|---|---|---|---|---|---|---|')
    for user, test, (o, oc), (r, rc) in rows:
        print(f'| {user} | {test} | {o:.0f} | {r:.0f} | {o / r:.2f}x | {oc:.2f} | {rc:.2f} |')
    print()
    reproduce(
        __file__, '--requests', args.requests, '--pipeline', args.pipeline, '--repeat', args.repeat
    )


if __name__ == '__main__':
    main()
