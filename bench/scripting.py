"""Scripting benchmark: EVALSHA on our server against redis-server in the same run.

    .venv/bin/python bench/scripting.py [--requests 100000] [--loop-requests 5000]
        [--clients 50] [--repeat 1]

1. A small script, GET + INCR + EXPIRE on one random key (the shape of a rate limiter or
   a lock's check-and-set), run by redis-benchmark as `EVALSHA <sha> 1 key:__rand_int__`
   at -P 1 and -P 16: the cost of a script call on top of the commands it runs.
2. A script calling redis.call 1,000 times (INCR in a loop) via EVALSHA at -P 1: the cost
   of redis.call itself, Lua -> command -> Lua, with the per-request overhead amortised.

Beside them runs the floor server of bench/floor.py, which embeds Lua through lupa as ours
does and does nothing else a script needs: what ours spends above it is the engine's
own work. Both scripts are loaded with SCRIPT LOAD on all three first (the SHA1s must
match).
Servers are measured in turn, alternating (best of --repeat), with each server's CPU
seconds per request read from /proc/<pid>/stat around the run, as core.py does. The
defaults finish in about a minute. Prints Markdown tables and the command line that
reproduces them.
"""

import argparse
import hashlib
import os
import sys

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ServerProc, redis_benchmark, reproduce  # noqa: E402

SMALL = (
    "local v = redis.call('GET', KEYS[1])\n"
    "redis.call('INCR', KEYS[1])\n"
    "redis.call('EXPIRE', KEYS[1], 100)\n"
    'return v\n'
)
LOOP_CALLS = 1000
LOOP = (
    f'for i = 1, {LOOP_CALLS} do\n'
    "  redis.call('INCR', KEYS[1])\n"
    'end\n'
    "return redis.call('GET', KEYS[1])\n"
)


def admin(srv):
    """One redis-py connection per server, kept for the whole run: redis-py's CLIENT
    SETINFO on connecting is an error reply on 7.0, which must not land between two
    readings of total_error_replies."""
    if not hasattr(srv, 'admin'):
        srv.admin = redis.Redis(port=srv.port, protocol=2, single_connection_client=True)
    return srv.admin


def load(srv, script):
    """SCRIPT LOAD on one server; checks the SHA1 and that one call of the script works
    (redis-benchmark counts error replies as requests, so a broken script would still
    give a figure)."""
    sha = hashlib.sha1(script.encode()).hexdigest()
    c = admin(srv)
    got = c.script_load(script)
    assert got == sha, (srv.kind, got, sha)
    c.evalsha(sha, 1, 'bench:check')
    c.delete('bench:check')
    return sha


def error_replies(srv):
    """total_error_replies from INFO stats, or None where the server has no such field:
    a script that fails during the run makes its figures meaningless."""
    if srv.kind == 'floor':
        return None
    return admin(srv).info('stats').get('total_error_replies')


def measure(servers, name, sha, requests, clients, pipeline, repeat):
    """Best requests/s of `repeat` runs per server (alternating), with that run's server
    CPU microseconds per request."""
    cmd = ['EVALSHA', sha, '1', 'key:__rand_int__']
    best = {srv.kind: {'rps': 0.0, 'cpu': 0.0} for srv in servers}
    for _ in range(repeat):
        for srv in servers:
            errors0 = error_replies(srv)
            cpu0 = srv.cpu_seconds()
            rps = redis_benchmark(srv.port, cmd, requests, clients, pipeline)
            cpu = srv.cpu_seconds() - cpu0
            errors = error_replies(srv)
            if errors0 is not None and errors is not None and errors != errors0:
                sys.exit(f'{srv.kind}: {errors - errors0} error replies during {name}')
            if rps > best[srv.kind]['rps']:
                best[srv.kind] = {'rps': rps, 'cpu': cpu / requests * 1e6}
    print(
        f'  {name} -P {pipeline:<2} '
        + ' | '.join(f'{k} {b["rps"]:>8.0f} rps {b["cpu"]:8.2f} us/req' for k, b in best.items()),
        file=sys.stderr,
    )
    return name, pipeline, best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument(
        '--requests', type=int, default=100000, help='requests per run of the small script'
    )
    ap.add_argument(
        '--loop-requests',
        type=int,
        default=5000,
        help=f'requests per run of the {LOOP_CALLS}-call script',
    )
    ap.add_argument('--clients', type=int, default=50, help='redis-benchmark -c')
    ap.add_argument('--repeat', type=int, default=1, help='runs per cell; best is kept')
    args = ap.parse_args()

    with (
        ServerProc('floor') as floor,
        ServerProc('ours') as ours,
        ServerProc('redis') as ref,
    ):
        servers = [floor, ours, ref]
        small = [load(srv, SMALL) for srv in servers][0]
        loop = [load(srv, LOOP) for srv in servers][0]
        print(f'throughput (redis-benchmark -c {args.clients}):', file=sys.stderr)
        rows = [
            measure(servers, 'GET+INCR+EXPIRE', small, args.requests, args.clients, p, args.repeat)
            for p in (1, 16)
        ]
        rows.append(
            measure(
                servers,
                f'{LOOP_CALLS} x INCR',
                loop,
                args.loop_requests,
                args.clients,
                1,
                args.repeat,
            )
        )
        version = admin(ref).info('server')['redis_version']
        for srv in servers:
            admin(srv).close()

    print(f'redis-server {version}; scripts run with EVALSHA <sha> 1 key:__rand_int__')
    print()
    print(
        '| script | pipeline | ours req/s | redis req/s | ratio | floor req/s | floor/redis | '
        'ours CPU us/req | redis CPU us/req | floor CPU us/req | ours CPU / floor |'
    )
    print('|---|---|---|---|---|---|---|---|---|---|---|')
    for name, pipeline, res in rows:
        o, r, f = res['ours'], res['redis'], res['floor']
        print(
            f'| {name} | {pipeline} | {o["rps"]:.0f} | {r["rps"]:.0f} | '
            f'{o["rps"] / r["rps"]:.2f}x | {f["rps"]:.0f} | {f["rps"] / r["rps"]:.2f}x | '
            f'{o["cpu"]:.2f} | {r["cpu"]:.2f} | {f["cpu"]:.2f} | {o["cpu"] / f["cpu"]:.2f}x |'
        )
    # The 1,000-call script: CPU per redis.call, the figure that says what a call costs.
    name, _, res = rows[-1]
    o, r, f = (res[k]['cpu'] / LOOP_CALLS for k in ('ours', 'redis', 'floor'))
    print()
    print('| script | ours CPU us/redis.call | redis | floor | ours / redis | ours / floor |')
    print('|---|---|---|---|---|---|')
    print(f'| {name} | {o:.3f} | {r:.3f} | {f:.3f} | {o / r:.2f}x | {o / f:.2f}x |')
    print()
    reproduce(
        __file__,
        '--requests',
        args.requests,
        '--loop-requests',
        args.loop_requests,
        '--clients',
        args.clients,
        '--repeat',
        args.repeat,
    )


if __name__ == '__main__':
    main()
