"""What a replica costs its master: SET with no replica and with one, on our server and
redis-server in the same run, each followed by a redis-server replica.

    .venv/bin/python bench/replication.py [--requests 200000] [--repeat 1]

For each master (ours, redis-server): redis-benchmark `SET key:__rand_int__` (-c 50,
-r 100000) at -P 1 and -P 16 before any replica connects, then the same with a
redis-server replica attached (`replicaof`); the master's CPU microseconds per request
from /proc. After each run with the replica, `WAIT 1 0` and the time it takes: how far
behind the replica was when the load stopped (its link drained). The replica's DBSIZE
must then equal the master's. Also the time a full sync of the data takes (the replica
started after the runs, until its link is up; redis-server with repl-diskless-sync-delay
0). Best of --repeat, servers alternating. Prints Markdown tables and the command line
that reproduces them.
"""

import argparse
import os
import shlex
import sys
import tempfile
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, ServerProc, redis_benchmark  # noqa: E402

SET = ['SET', 'key:__rand_int__', 'xxx']


def start_replica(master, tmp):
    srv = ServerProc('redis', '--replicaof', '127.0.0.1', str(master.port), '--dir', tmp)
    client = redis.Redis(port=srv.port, protocol=2)
    t0 = time.perf_counter()
    while client.info('replication')['master_link_status'] != 'up':
        time.sleep(0.01)
    return srv, client, time.perf_counter() - t0


def run(master, pipeline, requests):
    cpu0 = master.cpu_seconds()
    rps = redis_benchmark(master.port, SET, requests, 50, pipeline)
    return rps, (master.cpu_seconds() - cpu0) / requests * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--requests', type=int, default=200000)
    ap.add_argument('--repeat', type=int, default=1)
    args = ap.parse_args()
    results = {}  # (kind, pipeline, with replica) -> (rps, cpu)
    drain = {}  # (kind, pipeline) -> seconds WAIT took after the run
    sync_s = {}
    with tempfile.TemporaryDirectory() as tmp:
        # redis-server's diskless sync would wait repl-diskless-sync-delay (5 s) for more
        # replicas before it starts: 0, so that the sync times compare the transfers
        masters = [ServerProc('ours'), ServerProc('redis', '--repl-diskless-sync-delay', '0')]
        try:
            for replicated in (False, True):
                replicas = []
                if replicated:
                    for m in masters:
                        sub = os.path.join(tmp, m.kind)
                        os.makedirs(sub, exist_ok=True)
                        srv, client, took = start_replica(m, sub)
                        replicas.append((srv, client))
                for pipeline in (1, 16):
                    for _ in range(args.repeat):
                        for i, m in enumerate(masters):
                            rps, cpu = run(m, pipeline, args.requests)
                            key = (m.kind, pipeline, replicated)
                            if rps > results.get(key, (0, 0))[0]:
                                results[key] = (rps, cpu)
                            if replicated:
                                admin = redis.Redis(port=m.port, protocol=2)
                                t0 = time.perf_counter()
                                assert admin.wait(1, 0) == 1
                                drain[m.kind, pipeline] = time.perf_counter() - t0
                                assert replicas[i][1].dbsize() == admin.dbsize()
                                admin.close()
                for srv, client in replicas:
                    client.close()
                    srv.stop()
            # a full sync of what the runs wrote (100,000 keys)
            for m in masters:
                sub = os.path.join(tmp, m.kind + '-sync')
                os.makedirs(sub, exist_ok=True)
                srv, client, took = start_replica(m, sub)
                sync_s[m.kind] = took
                client.close()
                srv.stop()
            version = redis.Redis(port=masters[1].port).info('server')['redis_version']
        finally:
            for m in masters:
                m.stop()

    print(f'redis-server {version}; SET key:__rand_int__ xxx, -c 50 -r 100000')
    print()
    print(
        '| pipeline | replica | ours req/s | redis req/s | ratio | ours CPU us/req | '
        'redis CPU us/req | WAIT 1 after the run, ours / redis ms |'
    )
    print('|---|---|---|---|---|---|---|---|')
    for pipeline in (1, 16):
        for replicated in (False, True):
            o = results['ours', pipeline, replicated]
            r = results['redis', pipeline, replicated]
            wait = (
                f'{drain["ours", pipeline] * 1000:.1f} / {drain["redis", pipeline] * 1000:.1f}'
                if replicated
                else ''
            )
            print(
                f'| {pipeline} | {"one" if replicated else "none"} | {o[0]:.0f} | {r[0]:.0f} | '
                f'{o[0] / r[0]:.2f}x | {o[1]:.2f} | {r[1]:.2f} | {wait} |'
            )
    print()
    print(
        f'Full sync of the keys written (replica started until its link is up): ours '
        f'{sync_s["ours"] * 1000:.0f} ms, redis {sync_s["redis"] * 1000:.0f} ms'
    )
    print()
    script = os.path.relpath(os.path.abspath(__file__), ROOT)
    exe = os.path.relpath(sys.executable, ROOT) if sys.executable.startswith(ROOT) else 'python'
    print(
        'reproduce (from the repository root): '
        + shlex.join([exe, script, '--requests', str(args.requests), '--repeat', str(args.repeat)])
    )


if __name__ == '__main__':
    main()
