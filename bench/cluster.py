"""Cluster benchmark: local Redis Clusters of 1, 2 and 3 masters of our server beside
redis-server clusters of the same shape, in the same run.

    .venv/bin/python bench/cluster.py [--requests 200000] [--masters 1 2 3] [--idle 10]

1. Throughput: for each shape and kind, the masters are started with cluster-enabled,
   given equal slot ranges (CLUSTER ADDSLOTSRANGE), introduced (CLUSTER MEET) and waited
   for until cluster_state:ok; then `redis-benchmark --cluster -t set,get -c 50` at -P 1
   and -P 16, which spreads its clients over the masters and sends each key to its slot's
   owner. The kinds alternate per test, so drift on a shared machine hits both.
2. Idle cost: a cluster of 3 masters with a replica each, left alone (gossip only) for
   --idle seconds: each node's CPU time over that period, as a share of one core.
3. Failover: in a cluster of 3 masters with a replica each (--node-timeout, default
   2000 ms as Redis's create-cluster), a master killed with SIGKILL: the time from the
   kill until another master reports cluster_state:ok with the killed master's replica
   serving its slots, --failovers times per kind.

Prints Markdown tables (docs/benchmarks.md records them). A process per node: on a
machine with fewer cores than nodes plus redis-benchmark, the nodes share cores, which
limits what more masters can add (the table says how many cores the machine has).
"""

import argparse
import os
import sys
import tempfile
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    ROOT,
    ServerProc,
    free_port,
    git_state,
    redis_benchmark,
    reproduce,
)

SLOTS = 16384
TESTS = ['set', 'get']


def start_nodes(kind, count, node_dir, node_timeout=15000):
    nodes = []
    for _ in range(count):
        d = tempfile.mkdtemp(dir=node_dir)
        cport = free_port()
        args = [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            os.path.join(d, 'nodes.conf'),
            '--cluster-node-timeout',
            str(node_timeout),
            '--cluster-port',  # (port + 10000 may be past 65535 for a free port)
            str(cport),
            '--dir',
            d,
        ]
        if kind == 'ours':
            args += ['--bind', '127.0.0.1']
        node = ServerProc(kind, *args)
        node.cport = cport
        nodes.append(node)
    return nodes


def form_cluster(nodes, replicas_of=None):
    """Equal slot ranges over the masters, every node met, replicas attached; returns
    once every node says cluster_state:ok."""
    clients = [redis.Redis(host='127.0.0.1', port=n.port, decode_responses=True) for n in nodes]
    masters = clients[: len(clients) if replicas_of is None else len(replicas_of)]
    per = SLOTS // len(masters)
    for i, c in enumerate(masters):
        last = SLOTS - 1 if i == len(masters) - 1 else (i + 1) * per - 1
        c.execute_command('CLUSTER', 'ADDSLOTSRANGE', i * per, last)
        c.execute_command('CLUSTER', 'SET-CONFIG-EPOCH', i + 1)
    for c in clients[1:]:
        c.execute_command('CLUSTER', 'MEET', '127.0.0.1', nodes[0].port, nodes[0].cport)
    wait(
        lambda: all(
            len(c.execute_command('CLUSTER', 'NODES').splitlines()) == len(nodes) for c in clients
        )
    )
    if replicas_of:
        ids = [c.execute_command('CLUSTER', 'MYID') for c in masters]
        for c, master in zip(clients[len(masters) :], replicas_of):
            c.execute_command('CLUSTER', 'REPLICATE', ids[master])
    wait(lambda: all('cluster_state:ok' in c.execute_command('CLUSTER', 'INFO') for c in clients))
    for c in clients:
        c.close()


def wait(predicate, timeout=120):
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise TimeoutError('the cluster did not form')
        time.sleep(0.1)


def benchmark(port, test, requests, pipeline, masters):
    # (redis-benchmark --cluster refuses a cluster of one node: one master owns every slot,
    # so plain redis-benchmark sends it every key)
    cluster = ['--cluster'] if masters > 1 else []
    return redis_benchmark(port, test, requests, 50, pipeline, extra=['-r', '100000', *cluster])


def throughput(shapes, requests, work):
    rows = []
    for masters in shapes:
        clusters = {}
        try:
            for kind in ('ours', 'redis'):
                nodes = start_nodes(kind, masters, work)
                clusters[kind] = nodes
                form_cluster(nodes)
            for pipeline in (1, 16):
                for test in TESTS:
                    result = {}
                    for kind, nodes in clusters.items():
                        result[kind] = benchmark(nodes[0].port, test, requests, pipeline, masters)
                    rows.append((masters, test.upper(), pipeline, result))
                    print(f'  {masters} masters {test} -P {pipeline}: {result}', file=sys.stderr)
        finally:
            for nodes in clusters.values():
                for n in nodes:
                    n.stop()
    return rows


def idle_cpu(seconds, work):
    out = {}
    for kind in ('ours', 'redis'):
        nodes = start_nodes(kind, 6, work)
        try:
            form_cluster(nodes, replicas_of=[0, 1, 2])
            time.sleep(2)  # the replicas' first sync done
            before = [n.cpu_seconds() for n in nodes]
            time.sleep(seconds)
            used = [n.cpu_seconds() - b for n, b in zip(nodes, before)]
            out[kind] = [u / seconds * 100 for u in used]
        finally:
            for n in nodes:
                n.stop()
    return out


def failover_time(kind, node_timeout, work):
    """Seconds from a master's SIGKILL to the cluster ok again with its replica promoted."""
    nodes = start_nodes(kind, 6, work, node_timeout)
    try:
        form_cluster(nodes, replicas_of=[0, 1, 2])
        watcher = redis.Redis(host='127.0.0.1', port=nodes[1].port, decode_responses=True)
        replica_id = redis.Redis(
            host='127.0.0.1', port=nodes[3].port, decode_responses=True
        ).execute_command('CLUSTER', 'MYID')

        def role_of(node_id):
            for line in watcher.execute_command('CLUSTER', 'NODES').splitlines():
                fields = line.split()
                if fields[0] == node_id:
                    return 'master' if 'master' in fields[2].split(',') else 'slave'
            return None

        wait(lambda: role_of(replica_id) == 'slave')
        replica = redis.Redis(host='127.0.0.1', port=nodes[3].port, decode_responses=True)
        # a replica that never synced does not fail over (Redis: down since ever)
        wait(lambda: replica.info('replication').get('master_link_status') == 'up')
        replica.close()

        def recovered():
            info = watcher.execute_command('CLUSTER', 'INFO')
            return 'cluster_state:ok' in info and role_of(replica_id) == 'master'

        start = time.monotonic()
        nodes[0].proc.kill()
        end = start + 120
        while not recovered():
            if time.monotonic() > end:
                raise TimeoutError('no failover')
            time.sleep(0.01)
        took = time.monotonic() - start
        watcher.close()
        return took
    finally:
        for n in nodes:
            n.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--requests', type=int, default=200000)
    ap.add_argument('--masters', type=int, nargs='+', default=[1, 2, 3])
    ap.add_argument('--idle', type=float, default=10.0)
    ap.add_argument('--node-timeout', type=int, default=2000)
    ap.add_argument('--failovers', type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        rows = throughput(args.masters, args.requests, work)
        idle = idle_cpu(args.idle, work)
        failovers = {
            kind: [failover_time(kind, args.node_timeout, work) for _ in range(args.failovers)]
            for kind in ('ours', 'redis')
        }
    reproduce(__file__, *sys.argv[1:])
    print(f'\ncommit {git_state(ROOT)}, {os.cpu_count()} cores\n')
    print('| masters | test | pipeline | ours req/s | redis req/s | ratio |')
    print('|---|---|---|---|---|---|')
    for masters, test, pipeline, r in rows:
        ratio = r['ours'] / r['redis'] if r['redis'] else 0
        print(
            f'| {masters} | {test} | {pipeline} | {r["ours"]:.0f} | {r["redis"]:.0f} '
            f'| {ratio:.2f}x |'
        )
    print('\nIdle cluster (3 masters, 3 replicas, gossip only): CPU per node, % of a core\n')
    print('| kind | per node | mean |')
    print('|---|---|---|')
    for kind, cpus in idle.items():
        cells = ' '.join(f'{c:.2f}' for c in cpus)
        print(f'| {kind} | {cells} | {sum(cpus) / len(cpus):.2f} |')
    print(
        f'\nFailover (node timeout {args.node_timeout} ms): seconds from a master\'s SIGKILL '
        'to cluster_state:ok with its replica promoted\n'
    )
    print('| kind | runs | median |')
    print('|---|---|---|')
    for kind, times in failovers.items():
        cells = ' '.join(f'{t:.2f}' for t in times)
        print(f'| {kind} | {cells} | {sorted(times)[len(times) // 2]:.2f} |')


if __name__ == '__main__':
    main()
