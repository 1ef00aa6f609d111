"""Redis Cluster end to end: clusters of real processes (tests/cluster_nodes.py), formed by
the real `redis-cli --cluster create`, of this server's nodes alone and mixed with
Debian's redis-server 7.0.15 nodes, used through redis-py's RedisCluster (sync and
asyncio) and redis-cli, checked by `redis-cli --cluster check`; a master killed with
SIGKILL under writes, its replica elected; PUBLISH across nodes; expiry events from the
master that owns the key.

What each test asserts is what a user of the cluster sees. Waits poll with a bound (WAIT),
never a fixed sleep; the failover test uses a short node timeout so that the election
happens within the bound on a slow machine too."""

import asyncio
import os
import signal
import subprocess
import threading

import pytest
import redis
import redis.asyncio
from redis.cluster import ClusterNode as PyClusterNode
from redis.cluster import RedisCluster

from cluster_nodes import REDIS_CLI, cluster_info, parse_nodes, start_cluster
from conftest import WAIT, wait_until

pytestmark = pytest.mark.slow  # 6 processes and redis-cli's join: seconds a test


def check_cluster(cluster):
    """The cluster as an operator checks it: every node's CLUSTER NODES lists every node
    at its address, one replica per master, and `redis-cli --cluster check` passes."""
    nodes = cluster.nodes
    assert len(cluster.masters) == 3 and len(cluster.replicas) == 3
    masters = {n.name for n in cluster.masters}
    assert {n.master for n in cluster.replicas} == masters
    for node in nodes:
        view = parse_nodes(node.call('CLUSTER', 'NODES'))
        assert set(view) == {n.name for n in nodes}
        assert 'myself' in view[node.name]['flags']
        for other in nodes:
            assert view[other.name]['addr'].startswith(f'127.0.0.1:{other.port}@{other.cport}')
    out = subprocess.run(
        [REDIS_CLI, '--cluster', 'check', f'127.0.0.1:{nodes[0].port}'],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert '[OK] All nodes agree about slots configuration.' in out.stdout
    assert '[OK] All 16384 slots covered.' in out.stdout


def cluster_client(cluster, **kw):
    node = cluster.nodes[0]
    return RedisCluster(host='127.0.0.1', port=node.port, decode_responses=True, **kw)


def workload(rc, tag):
    """Every data type through the cluster client, keys spread over every master."""
    for i in range(60):
        rc.set(f'{tag}:s:{i}', i, ex=3600)
    assert [rc.get(f'{tag}:s:{i}') for i in range(60)] == [str(i) for i in range(60)]
    assert 0 < rc.ttl(f'{tag}:s:7') <= 3600
    rc.hset(f'{tag}:h', mapping={'a': 1, 'b': 2})
    rc.rpush(f'{tag}:l', 'x', 'y', 'z')
    rc.sadd(f'{tag}:set', 'm', 'n')
    rc.zadd(f'{tag}:z', {'p': 1.5, 'q': 2})
    rc.xadd(f'{tag}:x', {'f': 'v'}, id='1-1')
    rc.pfadd(f'{tag}:hll', 'a', 'b', 'c')
    rc.setbit(f'{tag}:bits', 7, 1)
    rc.geoadd(f'{tag}:geo', (13.361389, 38.115556, 'Palermo'))
    rc.incrby(f'{tag}:n', 5)
    assert rc.hgetall(f'{tag}:h') == {'a': '1', 'b': '2'}
    assert rc.lrange(f'{tag}:l', 0, -1) == ['x', 'y', 'z']
    assert rc.smembers(f'{tag}:set') == {'m', 'n'}
    assert rc.zrange(f'{tag}:z', 0, -1, withscores=True) == [('p', 1.5), ('q', 2.0)]
    assert rc.xrange(f'{tag}:x') == [('1-1', {'f': 'v'})]
    assert rc.pfcount(f'{tag}:hll') == 3
    assert rc.getbit(f'{tag}:bits', 7) == 1
    assert rc.geopos(f'{tag}:geo', 'Palermo')[0] is not None
    assert rc.get(f'{tag}:n') == '5'
    # multi-key commands within one slot ({hashtag}) run; across slots they are refused
    rc.mset({f'{{{tag}}}:a': 1, f'{{{tag}}}:b': 2})
    assert rc.mget(f'{{{tag}}}:a', f'{{{tag}}}:b') == ['1', '2']
    with pytest.raises(redis.exceptions.RedisClusterException):
        rc.execute_command('MSET', f'{tag}:u', 1, f'{tag}:w', 2)
    pipe = rc.pipeline()
    for i in range(20):
        pipe.incr(f'{tag}:p:{i}')
    assert pipe.execute() == [1] * 20
    assert rc.eval("return redis.call('GET', KEYS[1])", 1, f'{tag}:s:3') == '3'


def test_our_cluster_of_three_masters_and_three_replicas(tmp_path):
    with start_cluster(['ours'] * 6, 1, tmp_path) as cluster:
        check_cluster(cluster)
        info = cluster_info(cluster.nodes[0])
        assert info['cluster_known_nodes'] == '6' and info['cluster_size'] == '3'
        rc = cluster_client(cluster)
        workload(rc, 'ours')
        # each key lives on the master that serves its slot, and on that master's replica
        key = 'ours:s:11'
        slot = rc.keyslot(key)
        owner = next(n for n in cluster.masters if any(a <= slot <= b for a, b in slot_ranges(n)))
        assert owner.client().get(key) == '11'
        replica = next(n for n in cluster.replicas if n.master == owner.name)
        with replica.client() as c:
            c.execute_command('READONLY')
            wait_until(lambda: c.get(key) == '11', 'the replica has the key')
        rc.close()
        # DEBUG CLUSTERLINK KILL closes both links with a node; the cron makes them again
        first, other = cluster.nodes[0], cluster.nodes[1]

        def links_to_other():
            links = first.call('CLUSTER', 'LINKS')
            return sorted(x['direction'] for x in links if x['node'] == other.name)

        wait_until(lambda: links_to_other() == ['from', 'to'], 'both links up')
        assert first.call('DEBUG', 'CLUSTERLINK', 'KILL', 'ALL', other.name) == 'OK'
        wait_until(lambda: links_to_other() == ['from', 'to'], 'both links made again')
        with pytest.raises(redis.ResponseError, match='^Unknown node x$'):
            first.call('DEBUG', 'CLUSTERLINK', 'KILL', 'ALL', 'x')


def slot_ranges(node):
    me = parse_nodes(node.call('CLUSTER', 'NODES'))[node.name]
    out = []
    for part in me['slots']:
        a, _, b = part.partition('-')
        out.append((int(a), int(b or a)))
    return out


def test_mixed_cluster_of_ours_and_redis_server(tmp_path):
    """Masters and replicas of both kinds in one cluster, agreeing on everything."""
    kinds = ['ours', 'redis', 'ours', 'redis', 'ours', 'redis']
    with start_cluster(kinds, 1, tmp_path) as cluster:
        check_cluster(cluster)
        assert {n.kind for n in cluster.masters} == {'ours', 'redis'}
        rc = cluster_client(cluster)
        workload(rc, 'mixed')
        rc.close()


def test_asyncio_cluster_client(tmp_path):
    async def run(port):
        rc = redis.asyncio.RedisCluster(host='127.0.0.1', port=port, decode_responses=True)
        try:
            for i in range(50):
                await rc.set(f'a:{i}', i)
            values = await asyncio.gather(*(rc.get(f'a:{i}') for i in range(50)))
            assert values == [str(i) for i in range(50)]
            await rc.hset('a:h', 'f', 'v')
            assert await rc.hget('a:h', 'f') == 'v'
        finally:
            await rc.aclose()

    with start_cluster(['ours'] * 6, 1, tmp_path) as cluster:
        asyncio.run(run(cluster.nodes[0].port))


def test_publish_reaches_subscribers_on_every_node(tmp_path):
    with start_cluster(['ours', 'ours', 'redis', 'ours', 'ours', 'redis'], 1, tmp_path) as cl:
        subs = []
        for node in cl.nodes:
            p = node.client().pubsub()
            p.subscribe('news')
            assert p.get_message(timeout=WAIT)['type'] == 'subscribe'
            subs.append(p)
        assert cl.nodes[0].call('PUBLISH', 'news', 'hello') == 1  # its own subscriber
        for p in subs:
            msg = p.get_message(timeout=WAIT)
            assert msg is not None and msg['data'] == 'hello', msg
            p.close()


def test_expired_event_comes_from_the_master_that_owns_the_key(tmp_path):
    with start_cluster(['ours'] * 6, 1, tmp_path) as cluster:
        rc = cluster_client(cluster)
        key = 'ev:k'
        slot = rc.keyslot(key)
        owner = next(n for n in cluster.masters if any(a <= slot <= b for a, b in slot_ranges(n)))
        owner.call('CONFIG', 'SET', 'notify-keyspace-events', 'Ex')
        p = owner.client().pubsub()
        p.subscribe('__keyevent@0__:expired')
        p.get_message(timeout=WAIT)
        rc.set(key, 'v', px=100)
        msg = p.get_message(timeout=WAIT)
        while msg is not None and msg['type'] != 'message':
            msg = p.get_message(timeout=WAIT)
        assert msg is not None and msg['data'] == key
        assert rc.get(key) is None
        p.close()
        rc.close()


def test_master_killed_under_writes_its_replica_takes_over(tmp_path):
    """SIGKILL of a master while clients write: its replica is elected, the cluster is ok
    again, and every write the master acknowledged with WAIT 1 before the kill is there."""
    with start_cluster(['ours'] * 6, 1, tmp_path, node_timeout=3000) as cluster:
        rc = cluster_client(cluster)
        victim = cluster.masters[0]
        replica = next(n for n in cluster.replicas if n.master == victim.name)
        ranges = slot_ranges(victim)
        keys = [f'w:{i}' for i in range(2000)]
        mine = [k for k in keys if any(a <= rc.keyslot(k) <= b for a, b in ranges)][:200]
        acked = []
        with victim.client() as c:
            for k in mine:
                c.set(k, k)
                if c.execute_command('WAIT', 1, 0) >= 1:
                    acked.append(k)
        assert acked
        stop_writing = threading.Event()
        errors = []

        def writer():
            i = 0
            while not stop_writing.is_set():
                try:
                    rc.set(f'bg:{i}', i)
                except redis.RedisError as e:  # the outage: MOVED, CLUSTERDOWN, timeouts
                    errors.append(e)
                i += 1

        t = threading.Thread(target=writer)
        t.start()
        try:
            os.kill(victim.proc.pid, signal.SIGKILL)
            victim.proc.wait(WAIT)
            others = [n for n in cluster.nodes if n is not victim]

            def promoted():
                view = parse_nodes(others[-1].call('CLUSTER', 'NODES'))
                return 'master' in view[replica.name]['flags'] and all(
                    cluster_info(n).get('cluster_state') == 'ok' for n in others
                )

            wait_until(promoted, 'the replica promoted and the cluster ok')
        finally:
            stop_writing.set()
            t.join(WAIT)
        with replica.client() as c:
            assert c.execute_command('ROLE')[0] == 'master'
            assert [c.get(k) for k in acked] == acked
        rc.close()
        new = RedisCluster(
            startup_nodes=[PyClusterNode('127.0.0.1', replica.port)], decode_responses=True
        )
        assert new.get(acked[0]) == acked[0]
        new.set('after', 1)
        assert new.get('after') == '1'
        new.close()


def test_redis_cli_follows_redirections(tmp_path):
    with start_cluster(['ours'] * 6, 1, tmp_path) as cluster:
        cli = [REDIS_CLI, '-c', '-p', str(cluster.nodes[0].port)]
        for i in range(10):
            out = subprocess.run(cli + ['SET', f'cli:{i}', str(i)], capture_output=True, text=True)
            assert out.stdout.strip() == 'OK'
        # without -c, a node answers a key it does not serve with -MOVED slot ip:port
        for node in cluster.masters:
            slot = int(node.call('CLUSTER', 'KEYSLOT', 'cli:0'))
            if any(a <= slot <= b for a, b in slot_ranges(node)):
                continue
            owner = next(
                n for n in cluster.masters if any(a <= slot <= b for a, b in slot_ranges(n))
            )
            out = subprocess.run(
                [REDIS_CLI, '-p', str(node.port), 'GET', 'cli:0'], capture_output=True, text=True
            )
            assert out.stdout.strip() == f'MOVED {slot} 127.0.0.1:{owner.port}', out.stdout
