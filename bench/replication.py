"""What a replica costs its master: SET with no replica and with one, on our server and
redis-server in the same run, each followed by a redis-server replica; and our server as
a replica, beside a redis-server one, of a redis-server master.

    .venv/bin/python bench/replication.py [--requests 200000] [--repeat 1]

For each master (ours, redis-server): redis-benchmark `SET key:__rand_int__` (-c 50,
-r 100000) at -P 1 and -P 16 before any replica connects, then the same with a
redis-server replica attached (`replicaof`); the master's CPU microseconds per request
from /proc. After each run with the replica, `WAIT 1 0` and the time it takes: how far
behind the replica was when the load stopped (its link drained). The replica's DBSIZE
must then equal the master's. Also the time a full sync of the data takes (the replica
started after the runs, until its link is up; both masters with repl-diskless-sync-delay
0). Then a redis-server master with two replicas, ours and a redis-server, under
`SET` at -P 16: how long after the load each replica's offset reaches the master's, and
each replica's CPU microseconds per write it applied. Best of --repeat, servers
alternating. Prints Markdown tables and the command line that reproduces them.
"""

import argparse
import os
import sys
import tempfile
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ServerProc, redis_benchmark, reproduce  # noqa: E402

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


def as_replica(requests, tmp):
    """Our server and a redis-server, both replicas of one redis-server master, under
    the same SET load: (kind -> (seconds behind after the load, CPU us per write))."""
    # disk-based sync for our replica (it offers no capa eof): the payload file in tmp
    master = ServerProc('redis', '--repl-diskless-sync-delay', '0', '--dir', tmp)
    replicas = []
    try:
        for kind in ('ours', 'redis'):
            sub = os.path.join(tmp, 'replica-' + kind)
            os.makedirs(sub, exist_ok=True)
            extra = ('--dir', sub) if kind == 'redis' else ()
            srv = ServerProc(kind, '--replicaof', '127.0.0.1', str(master.port), *extra)
            client = redis.Redis(port=srv.port, protocol=2)
            while client.info('replication')['master_link_status'] != 'up':
                time.sleep(0.01)
            replicas.append((srv, client))
        admin = redis.Redis(port=master.port, protocol=2)
        cpu0 = [srv.cpu_seconds() for srv, _ in replicas]
        redis_benchmark(master.port, SET, requests, 50, 16)
        end = time.perf_counter()
        target = admin.info('replication')['master_repl_offset']
        behind = {}
        while len(behind) < len(replicas):
            for srv, client in replicas:
                if srv.kind not in behind:
                    if client.info('replication')['slave_repl_offset'] >= target:
                        behind[srv.kind] = time.perf_counter() - end
            time.sleep(0.001)
        out = {}
        for (srv, client), c0 in zip(replicas, cpu0):
            assert client.dbsize() == admin.dbsize()
            out[srv.kind] = (behind[srv.kind], (srv.cpu_seconds() - c0) / requests * 1e6)
            client.close()
        admin.close()
        return out
    finally:
        for srv, _ in replicas:
            srv.stop()
        master.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--requests', type=int, default=200000)
    ap.add_argument('--repeat', type=int, default=1)
    args = ap.parse_args()
    results = {}  # (kind, pipeline, with replica) -> (rps, cpu)
    drain = {}  # (kind, pipeline) -> seconds WAIT took after the run
    sync_s = {}
    with tempfile.TemporaryDirectory() as tmp:
        # a diskless sync waits repl-diskless-sync-delay (5 s) for more replicas before it
        # starts, on redis-server and on ours alike: 0 on both, so that the sync times
        # compare the transfers
        masters = [
            ServerProc('ours', '--repl-diskless-sync-delay', '0', '--dir', tmp),
            ServerProc('redis', '--repl-diskless-sync-delay', '0', '--dir', tmp),
        ]
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
        replica_runs = [as_replica(args.requests, tmp) for _ in range(args.repeat)]

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
    print('As replicas of one redis-server master, SET -P 16 on the master (best of the runs):')
    print()
    print('| replica | behind after the load ms | CPU us per write applied |')
    print('|---|---|---|')
    for kind in ('ours', 'redis'):
        behind = min(run[kind][0] for run in replica_runs)
        cpu = min(run[kind][1] for run in replica_runs)
        print(f'| {kind} | {behind * 1000:.1f} | {cpu:.2f} |')
    print()
    reproduce(__file__, '--requests', args.requests, '--repeat', args.repeat)


if __name__ == '__main__':
    main()
