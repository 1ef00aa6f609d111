"""Replicas of this server (store/replication.py): Debian's redis-server with `replicaof`
syncs from it and follows its writes, partial resync after a dropped link, WAIT, and
redis-cli --rdb backups; REPLCONF's replies compared with redis-server's."""

import os
import signal
import socket
import subprocess
import time
from contextlib import contextmanager

import pytest
import redis

from conftest import (
    WAIT,
    assert_same,
    free_port,
    redis_cli,
    spawn_redis,
    spawn_store,
    stop,
    wait_until,
)
from rawconn import pack

DBS = (0, 3)  # the databases the tests write


@pytest.fixture
def master():
    # no repl-diskless-sync-delay (5 s by default, as in Redis): full syncs start at once,
    # as in Redis's own test suite configuration
    proc, port = spawn_store('--enable-debug-command', 'yes', '--repl-diskless-sync-delay', '0')
    client = redis.Redis(port=port, protocol=2, decode_responses=True)
    yield client
    client.close()
    stop(proc)


def port_of(client):
    return client.connection_pool.connection_kwargs['port']


def start_replica(master_port, tmp_path):
    """redis-server replicating `master_port`; its files in tmp_path. Returns (proc, client)
    once its link is up."""
    proc, port = spawn_redis('--replicaof', '127.0.0.1', str(master_port), '--dir', str(tmp_path))
    client = redis.Redis(port=port, protocol=2, decode_responses=True)
    try:
        wait_until(lambda: client.info('replication')['master_link_status'] == 'up', 'the sync')
    except BaseException:
        stop(proc)  # not left running when the sync fails
        raise
    return proc, client


def dataset(client):
    """Every key of DBS with its type, value and absolute deadline (PEXPIRETIME)."""
    out = {}
    for db in DBS:
        client.execute_command('SELECT', db)
        for key in client.scan_iter(count=1000):
            kind = client.type(key)
            value = {
                'string': lambda k: client.get(k),
                'list': lambda k: client.lrange(k, 0, -1),
                'hash': lambda k: sorted(client.hgetall(k).items()),
                'set': lambda k: sorted(client.smembers(k)),
                'zset': lambda k: client.zrange(k, 0, -1, withscores=True),
                'stream': lambda k: client.xrange(k),
            }[kind](key)
            out[db, key] = (kind, value, client.execute_command('PEXPIRETIME', key))
    client.execute_command('SELECT', 0)
    return out


def write_everything(m, tag):
    """Writes of every kind the stream must carry, in two databases."""
    m.set(f's:{tag}', 'v', ex=1000)
    m.incr(f'n:{tag}')
    m.incrbyfloat(f'f:{tag}', 1.5)
    m.rpush(f'l:{tag}', 'a', 'b', 'c')
    m.hset(f'h:{tag}', mapping={'x': 1, 'y': 2})
    m.sadd(f'set:{tag}', 'a', 'b', 'c', 'd')
    m.spop(f'set:{tag}')  # random: replicated as the SREM of what it popped
    m.zadd(f'z:{tag}', {'a': 1, 'b': 2.5})
    m.xadd(f'x:{tag}', {'f': 'v'})  # '*': replicated with the id it got
    m.expire(f'l:{tag}', 500)  # relative: replicated as an absolute deadline
    pipe = m.pipeline(transaction=True)
    pipe.set(f'tx1:{tag}', 1)
    pipe.set(f'tx2:{tag}', 2)
    pipe.execute()
    m.eval(
        "redis.call('set', KEYS[1], 'lua') return redis.call('incr', KEYS[2])",
        2,
        f'lua:{tag}',
        f'n:{tag}',
    )
    m.execute_command('SELECT', 3)
    m.set(f'db3:{tag}', 'x')
    m.execute_command('SELECT', 0)


def test_a_redis_replica_gets_the_dataset_then_every_write(master, tmp_path):
    write_everything(master, 'before')
    proc, replica = start_replica(port_of(master), tmp_path)
    try:
        assert dataset(replica) == dataset(master)
        write_everything(master, 'after')
        master.set('short', 'lived', px=50)  # deleted at its deadline: DEL reaches the replica
        assert master.wait(1, WAIT * 1000) == 1  # acknowledged up to here
        wait_until(lambda: not master.exists('short'), 'the key to expire')
        assert master.wait(1, WAIT * 1000) == 1
        assert dataset(replica) == dataset(master)
        assert replica.exists('short') == 0
        master.flushall()
        assert master.wait(1, WAIT * 1000) == 1
        assert dataset(replica) == {}
    finally:
        replica.close()
        stop(proc)


def test_the_master_reports_its_replica(master, tmp_path):
    port = port_of(master)
    proc, replica = start_replica(port, tmp_path)
    try:
        replica_port = port_of(replica)
        info = master.info('replication')
        assert info['role'] == 'master' and info['connected_slaves'] == 1
        assert info['slave0']['port'] == replica_port and info['slave0']['state'] == 'online'
        assert info['master_replid'] == replica.info('replication')['master_replid']
        assert info['repl_backlog_active'] == 1
        role = master.execute_command('ROLE')
        assert role[0] == 'master' and role[2][0][:2] == ['127.0.0.1', str(replica_port)]
        lines = master.execute_command('CLIENT', 'LIST', 'TYPE', 'replica')
        assert 'flags=S' in lines
        assert master.info('stats')['sync_full'] == 1
        master.set('k', 'v')
        master.wait(1, WAIT * 1000)

        def caught_up():
            _, offset, [(_, _, acked)] = master.execute_command('ROLE')
            return acked == str(offset)

        wait_until(caught_up, "the replica's acknowledged offset to reach the master's")
    finally:
        replica.close()
        stop(proc)


def test_a_dropped_link_resumes_from_the_backlog(master, tmp_path):
    proc, replica = start_replica(port_of(master), tmp_path)
    try:
        check_a_dropped_link_continues(master, replica)
    finally:
        replica.close()
        stop(proc)


def check_a_dropped_link_continues(master, replica):
    """CLIENT KILL TYPE replica on the master: the replica reconnects and continues from
    the backlog (a partial resync) with what was written while it was away."""
    master.set('a', 1)
    assert master.wait(1, WAIT * 1000) == 1
    assert master.client_kill_filter(_type='replica') == 1
    master.set('b', 2)  # while the replica is away: in the backlog
    wait_until(lambda: master.info('replication')['connected_slaves'] == 1, 'the reconnect')
    assert master.wait(1, WAIT * 1000) == 1
    stats = master.info('stats')
    assert (stats['sync_full'], stats['sync_partial_ok']) == (1, 1)
    assert replica.mget('a', 'b') == ['1', '2']
    master.config_resetstat()
    stats = master.info('stats')
    assert (stats['sync_full'], stats['sync_partial_ok'], stats['sync_partial_err']) == (0, 0, 0)


def test_wait_counts_the_replicas_that_acknowledged(master, tmp_path):
    assert master.wait(0, 0) == 0
    proc, replica = start_replica(port_of(master), tmp_path)
    try:
        master.set('k', 'v')
        assert master.wait(1, 0) == 1  # 0: no timeout, answered when the ACK comes
        assert master.wait(2, 100) == 1  # ended by its timeout, with the count so far
    finally:
        replica.close()
        stop(proc)


def test_redis_cli_rdb_takes_a_backup_redis_server_loads(master, tmp_path):
    write_everything(master, 'x')
    path = tmp_path / 'backup.rdb'
    redis_cli(port_of(master), '--rdb', str(path))
    check = subprocess.run(['redis-check-rdb', str(path)], capture_output=True, text=True)
    assert 'RDB looks OK' in check.stdout
    proc, port = spawn_redis('--dir', str(tmp_path), '--dbfilename', 'backup.rdb')
    try:
        loaded = redis.Redis(port=port, protocol=2, decode_responses=True)
        assert dataset(loaded) == dataset(master)
        loaded.close()
    finally:
        stop(proc)
    # rdb-only: the connection was closed after the payload, nothing stays a replica
    assert master.info('replication')['connected_slaves'] == 0
    assert os.path.getsize(path) > 0


def test_replconf_replies_match_redis(both):
    assert_same(
        both,
        [
            ('REPLCONF',),
            ('REPLCONF', 'listening-port'),
            ('REPLCONF', 'listening-port', '6380'),
            ('REPLCONF', 'listening-port', 'x'),
            ('REPLCONF', 'capa', 'eof', 'capa', 'psync2'),
            ('REPLCONF', 'ip-address', 'x' * 255),
            ('REPLCONF', 'ip-address', 'x' * 256),
            ('REPLCONF', 'rdb-only', '2'),
            ('REPLCONF', 'rdb-only', 'x'),
            ('REPLCONF', 'rdb-only', '0'),
            ('REPLCONF', 'nosuch', '1'),
            ('REPLCONF', 'capa', 'eof', 'nosuch', '1'),
            ('PSYNC', '?'),
            ('SYNC', 'x'),
            ('MULTI',),
            ('SYNC',),
            ('SAVE',),
            ('SHUTDOWN',),
            ('EXEC',),
            ('EVAL', "return redis.pcall('REPLCONF', 'capa', 'eof')", '0'),
            ('EVAL', "return redis.pcall('PSYNC', '?', '-1')", '0'),
        ],
    )


def test_a_replica_that_stops_reading_is_dropped_at_its_class_limit(master):
    """client-output-buffer-limit's replica class counts the stream the replica has not
    read, not its RDB payload (Redis sends that apart)."""
    master.execute_command('DEBUG', 'POPULATE', 200000, 'key', 50)  # a payload of MBs
    master.config_set('client-output-buffer-limit', 'replica 1mb 0 0')
    port = port_of(master)
    with socket.create_connection(('127.0.0.1', port)) as replica:
        replica.sendall(b'*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n')
        assert replica.makefile('rb').read(11) == b'+FULLRESYNC'  # then it reads no more
        wait_until(lambda: master.info('replication')['connected_slaves'] == 1, 'the sync')
        master.set('small', 'x' * 100_000)  # well under the limit: the replica stays
        assert master.info('replication')['connected_slaves'] == 1
        for i in range(100):  # 10 MB: more than the socket buffers take, then the limit
            master.set(f'big{i}', 'x' * 100_000)
        wait_until(lambda: master.info('replication')['connected_slaves'] == 0, 'the drop')
        assert master.info('stats')['client_output_buffer_limit_disconnections'] == 1


def test_min_replicas_to_write_refuses_writes_as_redis_does(both):
    ours, theirs = both
    for c in both:
        c.config_set('min-replicas-to-write', 1)
    try:
        assert_same(
            both,
            [
                ('SET', 'k', 'v'),
                ('GET', 'k'),
                ('PING',),
                ('EVAL', "return redis.call('SET', 'k', 'v')", '0'),
                ('EVAL', "return redis.pcall('SET', 'k', 'v')", '0'),
                ('EVAL', "#!lua\nreturn redis.call('GET', 'k')", '0'),
                ('EVAL', "#!lua flags=no-writes\nreturn redis.call('GET', 'k')", '0'),
                ('EVAL_RO', "#!lua\nreturn 1", '0'),
                ('MULTI',),
                ('SET', 'k', 'v'),
                ('EXEC',),
                ('CONFIG', 'SET', 'min-replicas-max-lag', '0'),  # 0: the guard is off
                ('SET', 'k', 'v'),
                ('CONFIG', 'SET', 'min-replicas-max-lag', '10'),
                ('SET', 'k', 'v'),
            ],
        )
        for c in both:
            assert c.info('replication')['min_slaves_good_slaves'] == 0
            fresh = redis.Redis(port=port_of(c), protocol=2)
            with pytest.raises(redis.ResponseError, match='NOREPLICAS'):
                fresh.set('k', 'v')
            fresh.close()
    finally:
        for c in both:
            c.config_set('min-replicas-to-write', 0)
            c.config_set('min-replicas-max-lag', 10)
    assert ours.set('k', 'v') and theirs.set('k', 'v')


def test_a_good_replica_lets_writes_through(master, tmp_path):
    master.config_set('min-replicas-to-write', 1)
    with pytest.raises(redis.ResponseError, match='NOREPLICAS'):
        master.set('k', 'v')
    proc, replica = start_replica(port_of(master), tmp_path)
    try:
        wait_until(lambda: master.info('replication')['min_slaves_good_slaves'] == 1, 'a good one')
        assert master.set('k', 'v')
        assert master.wait(1, WAIT * 1000) == 1 and replica.get('k') == 'v'
    finally:
        replica.close()
        stop(proc)
    wait_until(lambda: master.info('replication')['connected_slaves'] == 0, 'the replica to go')
    with pytest.raises(redis.ResponseError, match='NOREPLICAS'):
        master.set('k', 'v')


def test_a_replica_asking_to_sync_again_is_ignored(tmp_path):
    args = ('--repl-diskless-sync', 'no')
    servers = [spawn_store(*args), spawn_redis('--dir', str(tmp_path), *args)]
    try:
        for _, port in servers:
            with socket.create_connection(('127.0.0.1', port), timeout=WAIT) as replica:
                stream = replica.makefile('rb')
                replica.sendall(pack('PSYNC', '?', '-1'))
                assert stream.readline().startswith(b'+FULLRESYNC ')
                stream.read(int(stream.readline()[1:]))  # the RDB payload
                replica.sendall(pack('SYNC') + pack('REPLCONF', 'ACK', '0'))
                time.sleep(0.5)
                replica.settimeout(0.5)
                with pytest.raises(TimeoutError):  # no second payload, no reply
                    replica.recv(1)
                c = redis.Redis(port=port)
                assert c.info('replication')['slave0']['state'] == 'online'
    finally:
        for proc, _ in servers:
            stop(proc)


def test_a_subscriber_of_the_replica_gets_what_the_master_publishes(master, tmp_path):
    proc, replica = start_replica(port_of(master), tmp_path)
    try:
        sub = replica.pubsub()
        sub.subscribe('news')
        sub.ssubscribe('shard')
        assert [sub.get_message(timeout=WAIT)['type'] for _ in range(2)] == [
            'subscribe',
            'ssubscribe',
        ]
        assert master.publish('news', 'hello') == 0  # no subscriber on the master itself
        master.execute_command('SPUBLISH', 'shard', 'hi')
        got = [sub.get_message(timeout=WAIT) for _ in range(2)]
        assert [(m['type'], m['channel'], m['data']) for m in got] == [
            ('message', 'news', 'hello'),
            ('smessage', 'shard', 'hi'),
        ]
        sub.close()
        # ... and nothing of it is in the master's data or AOF: the replica's data is equal
        assert master.wait(1, WAIT * 1000) == 1
        assert dataset(replica) == dataset(master)
    finally:
        replica.close()
        stop(proc)


def test_with_the_aof_on_both_get_the_writes_and_only_replicas_the_messages(tmp_path):
    data = tmp_path / 'master'
    data.mkdir()
    proc, port = spawn_store('--appendonly', 'yes', '--dir', str(data))
    master = redis.Redis(port=port, protocol=2, decode_responses=True)
    try:
        rproc, replica = start_replica(port, tmp_path)
        try:
            master.set('k', 'v')
            master.publish('news', 'hello')
            master.incr('n')
            assert master.wait(1, WAIT * 1000) == 1  # the queue was written to both by now
            assert replica.mget('k', 'n') == ['v', '1']
            files = (data / 'appendonlydir').glob('*.incr.aof')
            aof = b''.join(p.read_bytes() for p in files)
            assert b'$3\r\nSET\r\n' in aof and b'INCR' in aof and b'PUBLISH' not in aof
        finally:
            replica.close()
            stop(rproc)
    finally:
        master.close()
        stop(proc)


def fake_replica(port):
    """A connection that syncs as a replica (PSYNC) and then never acknowledges."""
    replica = socket.create_connection(('127.0.0.1', port))
    stream = replica.makefile('rb')
    replica.sendall(b'*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n')
    assert stream.readline().startswith(b'+FULLRESYNC ')
    stream.read(int(stream.readline()[1:]))
    return replica


@pytest.mark.parametrize('now', [False, True])
def test_shutdown_waits_for_replicas_to_acknowledge_unless_now(now):
    proc, port = spawn_store('--shutdown-timeout', '1', '--repl-diskless-sync-delay', '0')
    master = redis.Redis(port=port, protocol=2)
    with fake_replica(port):
        master.set('k', 'v')
        master.shutdown(now=now)
        log = proc.communicate(timeout=WAIT)[0]
    waited = 'Waiting for replicas before shutting down.' in log
    lagging = 'Lagging replica' in log and 'behind master' in log
    # finishShutdown logs a lagging replica with NOW too (checked against redis-server)
    assert (waited, lagging) == (not now, True)
    assert '0 of 1 replicas are in sync when shutting down.' in log
    assert 'Lagging replica 127.0.0.1:<unknown-replica-port> reported offset' in log


def test_the_backlog_outlives_its_replicas_for_repl_backlog_ttl(master, tmp_path):
    port = port_of(master)
    redis_cli(port, '--rdb', str(tmp_path / 'x.rdb'))  # made the backlog, left at once
    time.sleep(0.5)  # some of cron's runs (10 a second): the TTL counts from the sync
    master.set('k', 'v')
    assert master.info('replication')['repl_backlog_active'] == 1
    assert master.info('replication')['repl_backlog_histlen'] > 0
    master.config_set('repl-backlog-ttl', 1)
    wait_until(lambda: master.info('replication')['repl_backlog_active'] == 0, 'the TTL')


def test_the_payload_is_made_between_commands(master, tmp_path):
    """A full sync's payload is a point-in-time snapshot written in steps: clients are
    served while it is made (INFO shows the replica waiting for it), and what they write
    meanwhile follows the payload."""
    master.execute_command('DEBUG', 'POPULATE', 1000)
    master.config_set('rdb-key-save-delay', 1000)  # 1 ms a key: about a second
    port = port_of(master)
    proc, replica_port = spawn_redis('--replicaof', '127.0.0.1', str(port), '--dir', str(tmp_path))
    replica = redis.Redis(port=replica_port, protocol=2, decode_responses=True)
    try:
        wait_until(
            lambda: 'wait_bgsave' in str(master.info('replication').get('slave0')),
            'the replica to wait for its payload',
        )
        master.set('during', 'the sync')
        master.delete('key:0')
        master.config_set('rdb-key-save-delay', 0)
        wait_until(lambda: replica.info('replication')['master_link_status'] == 'up', 'sync')
        assert master.wait(1, WAIT * 1000) == 1
        assert dataset(replica) == dataset(master)
        assert replica.dbsize() == 1000 and replica.get('during') == 'the sync'
    finally:
        replica.close()
        stop(proc)


def test_replicas_syncing_together_share_the_payload(master, tmp_path):
    master.execute_command('DEBUG', 'POPULATE', 500)
    master.config_set('rdb-key-save-delay', 1000)  # the payload takes about half a second
    port = port_of(master)
    procs, replicas = [], []
    try:
        for i in range(2):
            d = tmp_path / str(i)
            d.mkdir()
            proc, rport = spawn_redis('--replicaof', '127.0.0.1', str(port), '--dir', str(d))
            procs.append(proc)
            replicas.append(redis.Redis(port=rport, protocol=2, decode_responses=True))
            if i == 0:
                wait_until(
                    lambda: 'wait_bgsave' in str(master.info('replication').get('slave0')),
                    'the first replica to wait for its payload',
                )
                master.set('between', 'the two')  # pending for the first, copied to the second
        wait_until(lambda: master.info('replication')['connected_slaves'] == 2, 'both')
        master.config_set('rdb-key-save-delay', 0)
        for replica in replicas:
            wait_until(
                lambda r=replica: r.info('replication')['master_link_status'] == 'up', 'sync'
            )
        master.set('after', 'both')
        assert master.wait(2, WAIT * 1000) == 2
        assert master.info('stats')['sync_full'] == 2
        assert dataset(replicas[0]) == dataset(replicas[1]) == dataset(master)
    finally:
        for replica in replicas:
            replica.close()
        for proc in procs:
            stop(proc)


def test_a_normal_class_limit_does_not_apply_to_replicas(master, tmp_path):
    master.execute_command('DEBUG', 'POPULATE', 100000, 'key', 50)  # a payload of MBs
    master.config_set('client-output-buffer-limit', 'normal 100kb 0 0')
    proc, replica = start_replica(port_of(master), tmp_path)
    try:
        assert replica.dbsize() == 100000
        assert master.info('stats')['client_output_buffer_limit_disconnections'] == 0
    finally:
        master.config_set('client-output-buffer-limit', 'normal 0 0 0')
        replica.close()
        stop(proc)


def test_client_eviction_spares_replicas(master, tmp_path):
    """maxmemory-clients evicts normal and pub/sub clients only: with every other client
    spared (NO-EVICT) and their memory over the limit, the replica stays."""
    port = port_of(master)
    proc, replica = start_replica(port, tmp_path)
    try:
        master.client_no_evict('on')
        with socket.create_connection(('127.0.0.1', port)) as big:
            big.sendall(b'CLIENT NO-EVICT on\r\n')
            assert big.recv(5) == b'+OK\r\n'
            big.sendall(b'*2\r\n$3\r\nGET\r\n$1000000\r\n' + b'x' * 300_000)  # held: 300 KB
            master.config_set('maxmemory-clients', 1)  # raised to its floor, 128 KB
            time.sleep(0.5)  # cron's client eviction runs ten times a second
            assert master.info('replication')['connected_slaves'] == 1
            assert master.info('stats')['evicted_clients'] == 0
    finally:
        replica.close()
        stop(proc)


# -- this server as a replica (store/replica.py) --------------------------------------------


@contextmanager
def following(master_port, *args):
    """Our server started as a replica of `master_port` (replicaof on its command line);
    yields a client once its link is up."""
    proc, port = spawn_store('--replicaof', '127.0.0.1', str(master_port), *args)
    client = redis.Redis(port=port, protocol=2, decode_responses=True)
    try:
        wait_until(lambda: client.info('replication')['master_link_status'] == 'up', 'the sync')
        yield client
    finally:
        client.close()
        stop(proc)


@contextmanager
def redis_master(tmp_path, *args, password=None):
    """A redis-server to follow, and a client of it."""
    proc, port = spawn_redis('--dir', str(tmp_path), *args)
    client = redis.Redis(port=port, protocol=2, password=password, decode_responses=True)
    try:
        yield client
    finally:
        client.close()
        stop(proc)


def test_this_server_follows_a_redis_master(tmp_path):
    with redis_master(tmp_path) as master:
        mport = port_of(master)
        write_everything(master, 'before')
        with following(mport) as ours:
            assert dataset(ours) == dataset(master)
            write_everything(master, 'after')
            master.set('short', 'lived', px=50)
            assert master.wait(1, WAIT * 1000) == 1
            wait_until(lambda: master.info('keyspace')['db0']['expires'] > 0, 'the TTLs')
            wait_until(lambda: ours.exists('short') == 0, "the master's DEL")
            assert master.wait(1, WAIT * 1000) == 1
            assert dataset(ours) == dataset(master)
            info = ours.info('replication')
            assert (info['role'], info['master_port'], info['slave_read_only']) == (
                'slave',
                mport,
                1,
            )
            assert ours.execute_command('ROLE')[:4] == ['slave', '127.0.0.1', mport, 'connected']
            assert master.info('replication')['slave0']['port'] == port_of(ours)
            for cmd in (('SET', 'k', 'v'), ('EVAL', "return redis.call('SET', 'k', 'v')", 0)):
                with pytest.raises(
                    redis.ResponseError, match="^You can't write against a read only replica"
                ):
                    ours.execute_command(*cmd)
            assert ours.execute_command('REPLICAOF', 'NO', 'ONE') == 'OK'
            assert ours.set('k', 'v') and ours.execute_command('ROLE')[0] == 'master'
            master.set('more', 'x')  # no longer followed
            assert ours.get('more') is None and ours.get('s:after') == 'v'


def test_a_dropped_link_to_the_master_continues(tmp_path):
    with redis_master(tmp_path) as master, following(port_of(master)) as ours:
        check_a_dropped_link_continues(master, ours)


def test_our_replica_of_our_master_keeps_the_same_event_journal(master):
    """Keys expire on the master only; its journal entries reach the replica as XADD with
    their ids, and the replica writes no journal of its own."""
    master.config_set('keyevent-journal-events', 'A')
    with following(port_of(master), '--keyevent-journal-events', 'A') as ours:
        master.set('k', 'v', px=50)
        master.set('n', 1)
        master.incr('n')
        wait_until(lambda: not master.exists('k'), 'the key to expire')
        assert master.wait(1, WAIT * 1000) == 1
        journal = master.xrange('__keyevents__')
        assert [e[1]['event'] for e in journal] == ['set', 'expire', 'set', 'incrby', 'expired']
        assert ours.xrange('__keyevents__') == journal
        assert dataset(ours) == dataset(master)


def test_a_master_with_a_password_is_followed_with_masterauth(tmp_path):
    with redis_master(tmp_path, '--requirepass', 'secret', password='secret') as master:
        master.set('k', 'v')
        with following(port_of(master), '--masterauth', 'secret') as ours:
            assert ours.get('k') == 'v'


# -- FAILOVER --------------------------------------------------------------------------

FAILOVER_ERRORS = [
    ('FAILOVER',),
    ('FAILOVER', 'ABORT'),
    ('FAILOVER', 'ABORT', 'x'),
    ('FAILOVER', 'TIMEOUT', '0'),
    ('FAILOVER', 'TIMEOUT', '-1'),
    ('FAILOVER', 'TIMEOUT', 'x'),
    ('FAILOVER', 'TIMEOUT', '5', 'TIMEOUT', '6'),
    ('FAILOVER', 'FORCE'),
    ('FAILOVER', 'FORCE', 'FORCE'),
    ('FAILOVER', 'TO', 'a'),
    ('FAILOVER', 'TO', 'a', 'x'),
    ('FAILOVER', 'TO', 'a', '1', 'FORCE'),
    ('FAILOVER', 'foo'),
    ('EVAL', "return redis.pcall('FAILOVER')", '0'),
]


def test_failover_without_replicas_fails_as_redis_does(both):
    assert_same(both, FAILOVER_ERRORS)


def test_failover_checks_its_target_as_redis_does(master, tmp_path):
    """The same requests to a master with one replica: ours and a redis-server."""
    redis_proc, theirs = spawn_redis('--dir', str(tmp_path))
    ref = redis.Redis(port=theirs, protocol=2, decode_responses=True)
    procs = []
    try:
        for m, sub in ((master, 'ours'), (ref, 'ref')):
            os.mkdir(tmp_path / sub)
            proc, replica = start_replica(port_of(m), tmp_path / sub)
            procs.append(proc)
            replica.close()
        requests = [
            ('FAILOVER', 'TO', '127.0.0.1', '1'),
            ('FAILOVER', 'TO', '127.0.0.1', '1', 'TIMEOUT', '10'),
            ('FAILOVER', 'FORCE', 'TIMEOUT', '10'),
            ('FAILOVER', 'TO', '127.0.0.1', '1', 'FORCE'),
            ('FAILOVER', 'ABORT'),
        ]
        assert_same((master, ref), requests)
        with following(port_of(master)) as ours:  # a replica refuses it
            with pytest.raises(redis.ResponseError) as e:
                ours.execute_command('FAILOVER')
            assert str(e.value) == 'FAILOVER is not valid when server is a replica.'
    finally:
        ref.close()
        for proc in procs:
            stop(proc)
        stop(redis_proc)


def test_failover_hands_the_master_role_to_a_redis_replica(master, tmp_path):
    write_everything(master, 'before')
    proc, replica = start_replica(port_of(master), tmp_path)
    try:
        assert master.wait(1, WAIT * 1000) == 1
        before = dataset(master)
        assert master.execute_command('FAILOVER') == 'OK'  # to any replica: the one
        wait_until(
            lambda: (
                replica.info('replication')['role'] == 'master'
                and master.info('replication')['master_link_status'] == 'up'
            ),
            'the failover',
        )
        info = master.info('replication')
        assert info['role'] == 'slave' and info['master_port'] == port_of(replica)
        assert info['master_failover_state'] == 'no-failover'
        # it continued its own history: the new master took it over without a full sync
        assert replica.info('stats')['sync_partial_ok'] == 1
        assert dataset(replica) == before == dataset(master)
        write_everything(replica, 'after')
        assert replica.wait(1, WAIT * 1000) == 1
        assert dataset(master) == dataset(replica)
        with pytest.raises(redis.ReadOnlyError):
            master.set('x', 1)
    finally:
        replica.close()
        stop(proc)


def send(sock, *args):
    """A command written on a raw socket; its reply is read later."""
    sock.sendall(pack(*args))


@contextmanager
def replica_and_writer(master, tmp_path):
    """A redis-server replica of `master` and a raw connection to the master, for writes
    whose replies are read later: yields (its process, a client, its port as text, the
    socket)."""
    proc, replica = start_replica(port_of(master), tmp_path)
    writer = socket.create_connection(('127.0.0.1', port_of(master)), timeout=WAIT)
    try:
        yield proc, replica, str(port_of(replica)), writer
    finally:
        writer.close()
        replica.close()
        stop(proc)


@contextmanager
def stopped(proc):
    """The process stopped (SIGSTOP) meanwhile: a replica that does not acknowledge."""
    proc.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        proc.send_signal(signal.SIGCONT)


def test_writes_wait_for_the_failover_then_get_readonly(master, tmp_path):
    with replica_and_writer(master, tmp_path) as (proc, replica, rport, writer):
        with stopped(proc):
            master.set('k', 'before')
            assert master.execute_command('FAILOVER', 'TO', '127.0.0.1', rport) == 'OK'
            assert master.info('replication')['master_failover_state'] == 'waiting-for-sync'
            send(writer, 'SET', 'k', 'held')
            assert master.get('k') == 'before'  # reads go on
            wait_until(lambda: master.info('clients')['blocked_clients'] == 1, 'the write held')
            master.execute_command('CLIENT', 'UNPAUSE')  # not CLIENT PAUSE's to lift
            for refused, message in (
                (('REPLICAOF', 'NO', 'ONE'), 'REPLICAOF not allowed while failing over.'),
                (('FAILOVER',), 'FAILOVER already in progress.'),
            ):
                with pytest.raises(redis.ResponseError) as e:
                    master.execute_command(*refused)
                assert str(e.value) == message
            assert master.info('clients')['blocked_clients'] == 1
        # the replica acknowledges, takes over; the held write runs on a replica now
        assert writer.recv(100).startswith(b"-READONLY You can't write against a read only")
        wait_until(lambda: replica.info('replication')['role'] == 'master', 'the failover')
        assert replica.get('k') == master.get('k') == 'before'


def test_failover_abort_and_timeout_leave_a_master(master, tmp_path):
    with replica_and_writer(master, tmp_path) as (proc, replica, rport, writer), stopped(proc):
        for how in ('abort', 'timeout'):
            timeout = ('TIMEOUT', '100') if how == 'timeout' else ()
            assert master.execute_command('FAILOVER', 'TO', '127.0.0.1', rport, *timeout)
            send(writer, 'SET', 'k', how)
            wait_until(lambda: master.info('clients')['blocked_clients'] == 1, 'the hold')
            if how == 'abort':
                assert master.execute_command('FAILOVER', 'ABORT') == 'OK'
            wait_until(
                lambda: master.info('replication')['master_failover_state'] == 'no-failover',
                'the abort',
            )
            assert writer.recv(100) == b'+OK\r\n'  # the held write ran on the master
            assert master.get('k') == how and master.info('replication')['role'] == 'master'
        with pytest.raises(redis.ResponseError, match='No failover in progress'):
            master.execute_command('FAILOVER', 'ABORT')


def test_client_pause_and_the_failover_pause_end_apart(master, tmp_path):
    """CLIENT PAUSE ALL over a failover's write pause: when it ends the reads it held
    run, the writes stay held until the failover ends."""
    with replica_and_writer(master, tmp_path) as (proc, replica, rport, writer), stopped(proc):
        reader = socket.create_connection(('127.0.0.1', port_of(master)), timeout=WAIT)
        try:
            master.set('k', 'v')
            assert master.execute_command('FAILOVER', 'TO', '127.0.0.1', rport, 'TIMEOUT', '60000')
            assert master.execute_command('CLIENT', 'PAUSE', '2000', 'ALL')
            send(reader, 'GET', 'k')
            send(writer, 'SET', 'k', 'w')
            assert reader.recv(100) == b'$1\r\nv\r\n'  # once CLIENT PAUSE ended
            assert master.info('clients')['blocked_clients'] == 1  # the write
            assert master.execute_command('FAILOVER', 'ABORT') == 'OK'
            assert writer.recv(100) == b'+OK\r\n'
        finally:
            reader.close()


def test_failover_with_force_goes_on_after_the_timeout(master, tmp_path):
    proc, replica = start_replica(port_of(master), tmp_path)
    rport = str(port_of(replica))
    try:
        with stopped(proc):
            master.set('k', 'v')  # not acknowledged while the replica is stopped
            master.execute_command('FAILOVER', 'TO', '127.0.0.1', rport, 'FORCE', 'TIMEOUT', '100')
            wait_until(
                lambda: (
                    master.info('replication')['master_failover_state'] == 'failover-in-progress'
                ),
                'the timeout',
            )
        wait_until(lambda: replica.info('replication')['role'] == 'master', 'the failover')
        wait_until(lambda: master.info('replication')['master_link_status'] == 'up', 'the link')
        assert master.info('replication')['master_failover_state'] == 'no-failover'
    finally:
        replica.close()
        stop(proc)


def test_a_redis_master_fails_over_to_this_server(tmp_path):
    with redis_master(tmp_path) as master:
        write_everything(master, 'before')
        with following(port_of(master)) as ours:
            assert master.wait(1, WAIT * 1000) == 1
            assert master.execute_command('FAILOVER', 'TO', '127.0.0.1', port_of(ours)) == 'OK'
            wait_until(
                lambda: (
                    ours.info('replication')['role'] == 'master'
                    and master.info('replication')['master_link_status'] == 'up'
                ),
                'the failover',
            )
            assert master.info('replication')['master_failover_state'] == 'no-failover'
            assert dataset(master) == dataset(ours)
            write_everything(ours, 'after')
            assert ours.wait(1, WAIT * 1000) == 1
            assert dataset(master) == dataset(ours)
            with pytest.raises(redis.ReadOnlyError):
                master.set('x', 1)


@contextmanager
def sentinel(tmp_path, master_port):
    """Redis Sentinel (Debian's redis-server --sentinel) monitoring the master at
    `master_port` as `mymaster`, quorum 1; yields a client of it."""
    conf = tmp_path / 'sentinel.conf'
    conf.write_text(
        f'sentinel monitor mymaster 127.0.0.1 {master_port} 1\n'
        'sentinel down-after-milliseconds mymaster 2000\n'
        'sentinel failover-timeout mymaster 10000\n'
    )
    proc, port = spawn_redis('--sentinel', conf=conf)
    client = redis.Redis(port=port, protocol=2, decode_responses=True)
    try:
        yield client
    finally:
        client.close()
        stop(proc)


def sentinel_view(s):
    """(the master's port, the replicas' ports) as the sentinel sees them."""
    master = s.execute_command('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', 'mymaster')
    replicas = s.execute_command('SENTINEL', 'REPLICAS', 'mymaster')
    ports = sorted(int(dict(zip(r[::2], r[1::2]))['port']) for r in replicas)
    return int(master[1]), ports


def test_sentinel_fails_over_from_this_server_to_its_replica(tmp_path):
    """Sentinel finds this server's replica (ours too), promotes it when the master
    stops, and makes the old master its replica when it comes back."""
    mproc, mport = spawn_store()
    try:
        with following(mport) as replica, sentinel(tmp_path, mport) as s:
            rport = port_of(replica)
            master = redis.Redis(port=mport, protocol=2, decode_responses=True)
            master.set('k', 'v')
            assert master.wait(1, WAIT * 1000) == 1
            master.close()
            wait_until(lambda: sentinel_view(s) == (mport, [rport]), 'the replica found')
            stop(mproc)
            wait_until(lambda: sentinel_view(s)[0] == rport, 'the failover')
            wait_until(lambda: replica.info('replication')['role'] == 'master', 'the promotion')
            assert replica.get('k') == 'v'
            replica.set('after', '1')
            mproc, _ = spawn_store(port=mport)  # back: told to follow the new master
            back = redis.Redis(port=mport, protocol=2, decode_responses=True)
            try:
                wait_until(
                    lambda: (
                        back.info('replication').get('master_port') == rport
                        and back.info('replication')['master_link_status'] == 'up'
                    ),
                    'the old master reconfigured as a replica',
                )
                assert back.get('k') == 'v' and back.get('after') == '1'
            finally:
                back.close()
    finally:
        stop(mproc)


@pytest.mark.parametrize('kind', ['store', 'redis'])
def test_clients_blocked_on_a_master_turned_replica_are_unblocked(tmp_path, kind):
    """REPLICAOF host port: clients blocked while it was a master get -UNBLOCKED and are
    disconnected, so the new master's writes cannot serve them here
    (disconnectAllBlockedClients)."""
    with redis_master(tmp_path) as other:
        if kind == 'store':
            proc, port = spawn_store()
        else:
            proc, port = spawn_redis()
        try:
            c = redis.Redis(port=port, protocol=2)
            blocked = redis.Redis(port=port, protocol=2)
            b = blocked.connection_pool.get_connection()
            b.send_command('BLPOP', 'foo', '0')
            wait_until(lambda: c.info('clients')['blocked_clients'] == 1, 'the BLPOP to block')
            c.execute_command('REPLICAOF', '127.0.0.1', port_of(other))
            with pytest.raises(redis.ResponseError, match='^UNBLOCKED force unblock'):
                b.read_response()
            wait_until(lambda: c.info('clients')['connected_clients'] == 1, 'the disconnect')
        finally:
            stop(proc)


def test_the_masters_stream_is_not_cut_at_client_query_buffer_limit(master):
    """A command longer than the replica's client-query-buffer-limit still replicates:
    the limit is not the master client's (redis-server exempts CLIENT_MASTER)."""
    master.config_set('client-query-buffer-limit', 2000000)
    with following(port_of(master), '--client-query-buffer-limit', '1048576') as ours:
        master.set('key', 'x' * 1100000)
        wait_until(lambda: ours.strlen('key') == 1100000, 'the big SET on the replica')


@pytest.mark.parametrize('how', ['addr', 'type'])
def test_killing_the_master_client_continues_with_a_partial_resync(master, how):
    """The master client is listed (flags=M, addr the master's); CLIENT KILL drops the
    link, which reconnects and continues from its offset (+CONTINUE), in the database
    the stream had selected."""
    mport = port_of(master)
    with following(mport) as ours:
        master.execute_command('SELECT', 3)
        master.set('before', '1')
        wait_until(lambda: ours.execute_command('SELECT', 3) and ours.get('before'), 'a write')
        line = [x for x in ours.client_list() if 'M' in x['flags']]
        assert len(line) == 1 and line[0]['addr'] == f'127.0.0.1:{mport}'
        if how == 'addr':
            assert ours.execute_command('CLIENT', 'KILL', f'127.0.0.1:{mport}') == 'OK'
        else:
            assert ours.execute_command('CLIENT', 'KILL', 'TYPE', 'master') == 1
        wait_until(lambda: master.info('stats')['sync_partial_ok'] == 1, 'a partial resync')
        master.set('after', '2')
        wait_until(lambda: ours.get('after') == '2', 'the write after, in db 3')
        assert master.info('stats')['sync_full'] == 1


@pytest.mark.parametrize('kind', ['store', 'redis'])
def test_a_lost_master_link_is_tried_again_at_once(master, kind, tmp_path):
    """A link that was up and is lost is reconnected at once (replicationHandleMasterDis-
    connection's "Reconnecting to MASTER"), not at the next cron turn ("Connecting to
    MASTER", a second later), so that a replica killed every second, as psync2's load
    does, keeps up; the log says so in Redis's words on both servers."""
    mport = port_of(master)
    log = tmp_path / 'redis.log'
    if kind == 'store':
        proc, port = spawn_store('--replicaof', '127.0.0.1', str(mport))
    else:
        proc, port = spawn_redis('--replicaof', '127.0.0.1', str(mport), '--logfile', str(log))
    replica = redis.Redis(port=port, protocol=2, decode_responses=True)
    try:
        wait_until(lambda: replica.info('replication')['master_link_status'] == 'up', 'the sync')
        assert replica.execute_command('CLIENT', 'KILL', 'TYPE', 'master') == 1
        wait_until(lambda: master.info('stats')['sync_partial_ok'] == 1, 'a partial resync')
        wait_until(lambda: replica.info('replication')['master_link_status'] == 'up', 'up')
    finally:
        replica.close()
        stop(proc)
    lines = (proc.stdout.read() if kind == 'store' else log.read_text()).splitlines()
    lost = next(
        i for i, line in enumerate(lines) if line.endswith('# Connection with master lost.')
    )
    after = [line.split(' ', 6)[-1] for line in lines[lost + 1 :]]
    expected = [
        'Caching the disconnected master state.',
        f'Reconnecting to MASTER 127.0.0.1:{mport}',
    ]
    assert [line for line in after if line in expected] == expected
    assert not [line for line in after if line.startswith('Connecting to MASTER')]
    # the partial resync, in Redis's words (not the full sync's "Finished with success")
    sync = [line for line in after if 'artial' in line or 'Finished' in line]
    assert sync[-2:] == [
        'Successful partial resynchronization with master.',
        'MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.',
    ]


@pytest.mark.parametrize('kind', ['store', 'redis'])
def test_a_replica_says_its_link_is_down_once_the_master_has_closed_it(master, kind):
    """When the master drops the link (here CLIENT KILL, which closes the socket before it
    replies), a client that asks the replica next is told master_link_status:down, as
    Redis's read handler frees the master client the moment the socket ends, even when the
    end and the question arrive together (the replica was busy, here in DEBUG SLEEP): the
    link's own task, which would notice only on the loop's next turn, must not decide the
    answer (Redis's async_loading test reads INFO right after the master kills its
    replicas)."""
    mport = port_of(master)
    spawn = spawn_store if kind == 'store' else spawn_redis
    proc, port = spawn('--replicaof', '127.0.0.1', str(mport), '--enable-debug-command', 'yes')
    replica = redis.Redis(port=port, protocol=2, decode_responses=True)
    busy = socket.create_connection(('127.0.0.1', port))
    try:
        for _ in range(3):
            wait_until(lambda: replica.info('replication')['master_link_status'] == 'up', 'up')
            busy.sendall(b'DEBUG SLEEP 0.3\r\n')
            time.sleep(0.05)  # the sleep most likely under way (if not, nothing is tested)
            assert master.execute_command('CLIENT', 'KILL', 'TYPE', 'replica') == 1
            assert replica.info('replication')['master_link_status'] == 'down'
            assert busy.recv(100) == b'+OK\r\n'
    finally:
        busy.close()
        replica.close()
        stop(proc)


@pytest.mark.parametrize('kind', ['store', 'redis'])
def test_keys_a_writable_replicas_clients_set_expire_there(master, kind):
    """replica-read-only no: keys the replica's own clients give a TTL are deleted there at
    their deadline (the master knows nothing of them); the master's own keys still wait
    for the master's DEL (redis-server does the same)."""
    mport = port_of(master)
    master.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
    master.set('mine', 'm', px=100)
    if kind == 'store':
        ctx = following(mport, '--replica-read-only', 'no')
    else:
        ctx = _redis_following(mport)
    with ctx as ours:
        wait_until(lambda: ours.dbsize() == 1, 'the sync')
        ours.execute_command('SELECT', 5)
        ours.set('key1', '1', px=200)
        ours.set('key2', '2', ex=100)
        ours.set('key3', '3')
        ours.pexpire('key3', 200)
        wait_until(lambda: ours.dbsize() == 1, "the replica's own keys to expire")
        assert ours.ttl('key2') > 0
        ours.execute_command('SELECT', 0)
        assert ours.dbsize() == 1 and ours.exists('mine') == 0  # the master's, not deleted


@contextmanager
def _redis_following(master_port):
    proc, port = spawn_redis(
        '--replicaof', '127.0.0.1', str(master_port), '--replica-read-only', 'no'
    )
    client = redis.Redis(port=port, protocol=2, decode_responses=True)
    try:
        wait_until(lambda: client.info('replication')['master_link_status'] == 'up', 'the sync')
        yield client
    finally:
        client.close()
        stop(proc)


@pytest.mark.parametrize('kind', ['store', 'redis'])
def test_debug_replicate_reaches_replicas_and_a_failing_command_is_logged(kind):
    """DEBUG REPLICATE sends a command to the replicas only; one that fails there is
    logged by the replica ('== CRITICAL == This replica is sending an error to its
    master'), which goes on with propagation-error-behavior ignore."""
    if kind == 'store':
        proc, port = spawn_store('--enable-debug-command', 'yes')
    else:
        proc, port = spawn_redis()
    master = redis.Redis(port=port, protocol=2, decode_responses=True)
    rproc, rport = spawn_store(
        '--replicaof', '127.0.0.1', str(port), '--propagation-error-behavior', 'ignore'
    )
    ours = redis.Redis(port=rport, protocol=2, decode_responses=True)
    try:
        wait_until(lambda: ours.info('replication')['master_link_status'] == 'up', 'the sync')
        assert master.execute_command('DEBUG', 'REPLICATE', 'fake-command-1') == 'OK'
        master.set('foo', 'bar2')
        assert master.wait(1, WAIT * 1000) == 1
        assert ours.get('foo') == 'bar2'
        assert master.get('fake-command-1') is None
    finally:
        master.close()
        ours.close()
        stop(proc)
        stop(rproc)
    text = rproc.stdout.read()
    assert text.count('fake-command-1') == 1
    assert '== CRITICAL == This replica is sending an error to its master' in text


def test_a_master_client_killed_inside_a_transaction_syncs_again(master):
    """The offset reached inside MULTI ... EXEC is no place to continue from (the rest of
    the transaction would arrive without its MULTI): the replica syncs again and holds
    what the master holds."""
    with following(port_of(master)) as ours:
        master.set('k', 'v')
        wait_until(lambda: ours.get('k') == 'v', 'the first write')
        master.execute_command('DEBUG', 'REPLICATE', 'MULTI')
        master.execute_command('DEBUG', 'REPLICATE', 'SET', 'x', '1')
        master.set('probe', '1')  # queued in the replica's transaction
        wait_until(lambda: master.wait(1, 1000) == 1, 'the replica to read it')
        ours.execute_command('CLIENT', 'KILL', 'TYPE', 'master')
        master.execute_command('DEBUG', 'REPLICATE', 'SET', 'y', '2')
        master.execute_command('DEBUG', 'REPLICATE', 'EXEC')
        master.set('after', '3')
        wait_until(lambda: ours.get('after') == '3', 'the write after')
        assert master.wait(1, WAIT * 1000) == 1
        assert ours.mget('k', 'probe', 'x', 'y') == ['v', '1', None, None]


def test_a_value_starting_with_a_dash_is_no_error_reply(master):
    """Replies to the master's commands are parsed, not scanned by line: LPOP of '-12'
    is a value, not an error that propagation-error-behavior panic would crash on."""
    with following(port_of(master), '--propagation-error-behavior', 'panic') as ours:
        master.rpush('l', '-12', '-ERR not an error')
        master.lpop('l')
        master.lpop('l')
        master.set('after', '1')
        wait_until(lambda: ours.get('after') == '1', 'the writes to replicate')
        assert ours.ping()


def test_the_error_log_names_the_masters_command_that_failed(master):
    """On a writable replica a key of its own makes the master's INCRBY fail there: the
    log names INCRBY (c->lastcmd), not the REPLCONF GETACK that came in the same read."""
    rproc, rport = spawn_store('--replicaof', '127.0.0.1', str(port_of(master)))
    ours = redis.Redis(port=rport, protocol=2, decode_responses=True)
    try:
        wait_until(lambda: ours.info('replication')['master_link_status'] == 'up', 'the sync')
        ours.config_set('replica-read-only', 'no')
        ours.set('number2', 'foo')
        master.incrby('number2', 1)
        assert master.wait(1, WAIT * 1000) == 1
        assert ours.get('number2') == 'foo' and master.get('number2') == '1'
    finally:
        ours.close()
        stop(rproc)
    text = rproc.stdout.read()
    assert "after processing the command 'incrby'" in text


@pytest.mark.parametrize('kind', ['store', 'redis'])
def test_a_diskless_sync_delay_keeps_the_replica_in_its_handshake(master, kind):
    """repl-diskless-sync yes with a delay: the master answers PSYNC only when the delay
    is over (the replica's ROLE says 'handshake' meanwhile, kept alive by newlines), then
    the replica syncs."""
    master.config_set('repl-diskless-sync', 'yes')
    master.config_set('repl-diskless-sync-delay', 5)
    master.set('k', 'v')
    spawn = spawn_store if kind == 'store' else spawn_redis
    proc, port = spawn()
    replica = redis.Redis(port=port, protocol=2, decode_responses=True)
    try:
        # the newlines (one a second) keep the link alive: without them it would time out
        # (after 3 s: more than 2 whole seconds) before the delay ends; with 1 s a busy
        # machine's late newline was already a timeout, and the replica synced again
        replica.config_set('repl-timeout', 2)
        replica.execute_command('REPLICAOF', '127.0.0.1', port_of(master))
        wait_until(lambda: replica.execute_command('ROLE')[3] == 'handshake', 'the handshake')
        wait_until(lambda: 'slave0' in master.info('replication'), 'the PSYNC')
        assert master.info('replication')['slave0']['state'] == 'wait_bgsave'
        assert replica.execute_command('ROLE')[3] == 'handshake'
        wait_until(lambda: replica.execute_command('ROLE')[3] == 'connected', 'the sync')
        assert replica.get('k') == 'v'
        assert master.info('stats')['sync_full'] == 1
    finally:
        replica.close()
        stop(proc)


def test_a_replica_times_out_a_silent_master_in_the_handshake(master):
    master.config_set('repl-diskless-sync', 'yes')
    master.config_set('repl-diskless-sync-delay', 1000)
    proc, port = spawn_store()
    replica = redis.Redis(port=port, protocol=2, decode_responses=True)
    try:
        replica.config_set('repl-timeout', 2)
        replica.execute_command('REPLICAOF', '127.0.0.1', port_of(master))
        wait_until(lambda: replica.execute_command('ROLE')[3] == 'handshake', 'the handshake')
        # no newlines meanwhile (a client that waits: redis-py's default socket timeout is
        # 5 s, which a 5 s DEBUG SLEEP's reply races, then retries the command)
        with redis.Redis(port=port_of(master), socket_timeout=WAIT) as waits:
            waits.execute_command('DEBUG', 'SLEEP', 5)
    finally:
        replica.close()
        stop(proc)
    assert 'Timeout connecting to the MASTER...' in proc.stdout.read()


@pytest.mark.parametrize('kind', ['store', 'redis'])
def test_a_replicas_replica_shares_the_masters_history(master, kind):
    """A chain master -> ours -> sub-replica: the sub-replica gets the master's stream
    through ours, with the master's replication id and offsets; ours promoted keeps the
    old id as replid2, and the sub-replica continues with a partial resync."""
    mport = port_of(master)
    master.execute_command('SELECT', 3)
    master.set('k', '1')
    with following(mport, '--repl-diskless-sync-delay', '0') as ours:
        oport = ours.connection_pool.connection_kwargs['port']
        if kind == 'store':
            proc, port = spawn_store('--replicaof', '127.0.0.1', str(oport))
        else:
            proc, port = spawn_redis('--replicaof', '127.0.0.1', str(oport))
        sub = redis.Redis(port=port, protocol=2, decode_responses=True)
        try:
            wait_until(lambda: sub.info('replication')['master_link_status'] == 'up', 'sync')
            master.set('k', '2')  # in db 3, which the stream selected before the sub synced
            wait_until(lambda: sub.execute_command('SELECT', 3) and sub.get('k') == '2', 'k')
            assert master.wait(1, WAIT * 1000) == 1
            replid = master.info('replication')['master_replid']
            wait_until(
                lambda: (
                    sub.info('replication')['master_repl_offset']
                    == master.info('replication')['master_repl_offset']
                ),
                'the same offset down the chain',
            )
            assert ours.info('replication')['master_replid'] == replid
            assert sub.info('replication')['master_replid'] == replid
            ours.execute_command('REPLICAOF', 'NO', 'ONE')
            info = ours.info('replication')
            assert info['master_replid2'] == replid and info['master_replid'] != replid
            wait_until(lambda: ours.info('stats')['sync_partial_ok'] == 1, 'a partial resync')
            ours.set('after', 'x')  # db 0: the new master's stream SELECTs it
            sub.execute_command('SELECT', 0)
            wait_until(lambda: sub.get('after') == 'x', 'the write of the new master')
            assert ours.info('stats')['sync_full'] == 1
        finally:
            sub.close()
            stop(proc)


def test_a_replica_moved_to_a_promoted_sibling_continues(master):
    """Two replicas of one master; one is promoted, the other is pointed at it: its PSYNC
    names the old master's history, which the promoted one keeps as replid2 (+CONTINUE,
    no full sync), as the FAILOVER tests of Redis's suite expect."""
    mport = port_of(master)
    with following(mport) as a, following(mport) as b:
        master.set('k', 'v')
        assert master.wait(2, WAIT * 1000) == 2
        a.execute_command('REPLICAOF', 'NO', 'ONE')
        aport = a.connection_pool.connection_kwargs['port']
        b.execute_command('REPLICAOF', '127.0.0.1', aport)
        wait_until(lambda: a.info('stats')['sync_partial_ok'] == 1, 'a partial resync')
        assert a.info('stats')['sync_full'] == 0
        a.set('after', '1')
        wait_until(lambda: b.get('after') == '1', 'the write of the new master')


def test_a_restarted_master_continues_its_history_from_the_rdb(tmp_path):
    """SHUTDOWN saves repl-id and repl-offset in the RDB; the restarted master keeps them
    as replid2 with a backlog from there, so its replica continues (+CONTINUE) instead
    of syncing in full (psync2-master-restart)."""
    mproc, mport = spawn_store(
        '--dir', str(tmp_path), '--save', '3600 1', '--repl-diskless-sync-delay', '0'
    )
    master = redis.Redis(port=mport, protocol=2, decode_responses=True)
    try:
        with following(mport) as ours:
            master.set('k', 'v')
            assert master.wait(1, WAIT * 1000) == 1
            replid = master.info('replication')['master_replid']
            offset = master.info('replication')['master_repl_offset']
            master.shutdown()
            mproc.wait(WAIT)
            mproc, _ = spawn_store(
                '--dir', str(tmp_path), '--save', '3600 1', '--repl-diskless-sync-delay', '0',
                port=mport,
            )  # fmt: skip
            info = master.info('replication')
            assert info['master_replid2'] == replid
            assert info['second_repl_offset'] == offset + 1
            assert info['master_repl_offset'] == offset
            wait_until(lambda: master.info('stats')['sync_partial_ok'] == 1, 'the replica')
            assert master.info('stats')['sync_full'] == 0
            master.set('after', '1')
            wait_until(lambda: ours.get('after') == '1', 'a write after the restart')
    finally:
        master.close()
        stop(mproc)


def test_a_restarted_replica_continues_from_its_rdb(master, tmp_path):
    """CONFIG REWRITE saves the replicaof line; the replica's RDB saved at shutdown carries
    the master's id and offset, so the restarted replica continues (+CONTINUE)."""
    conf = tmp_path / 'replica.conf'
    conf.write_text(f'dir {tmp_path}\n')
    port = free_port()
    proc, port = spawn_store('--save', '900 1', conf=conf, port=port)  # saves at shutdown
    replica = redis.Redis(port=port, protocol=2, decode_responses=True)
    try:
        replica.execute_command('REPLICAOF', '127.0.0.1', port_of(master))
        wait_until(lambda: replica.info('replication')['master_link_status'] == 'up', 'sync')
        master.set('k', 'v')
        assert master.wait(1, WAIT * 1000) == 1
        replica.config_rewrite()
        assert f'replicaof 127.0.0.1 {port_of(master)}' in conf.read_text()
        replica.shutdown()
        proc.wait(WAIT)
        proc, _ = spawn_store('--save', '900 1', conf=conf, port=port)
        wait_until(lambda: master.info('stats')['sync_partial_ok'] == 1, 'a partial resync')
        assert master.info('stats')['sync_full'] == 1
        master.set('after', '1')
        wait_until(lambda: replica.get('after') == '1', 'a write after the restart')
    finally:
        replica.close()
        stop(proc)


def test_killing_the_master_client_under_load_loses_no_write(master):
    """What the link still reads after CLIENT KILL is neither applied nor counted: the
    partial resync sends it again, so nothing is lost (nor applied twice) while writes go
    on (psync2's 'cluster is consistent after load')."""
    import threading

    stop_writing = threading.Event()

    def write():
        w = redis.Redis(port=port_of(master), protocol=2)
        while not stop_writing.is_set():
            pipe = w.pipeline(transaction=False)
            for _ in range(50):
                pipe.incr('x')
            pipe.execute()
        w.close()

    master.config_set('repl-backlog-size', '100mb')  # what was missed is still there
    with following(port_of(master)) as ours:
        writer = threading.Thread(target=write)
        writer.start()
        try:
            for _ in range(15):
                wait_until(lambda: ours.info('replication')['master_link_status'] == 'up', 'up')
                ours.execute_command('CLIENT', 'KILL', 'TYPE', 'master')
                time.sleep(0.05)
        finally:
            stop_writing.set()
            writer.join()
        assert master.wait(1, WAIT * 1000) == 1
        assert ours.get('x') == master.get('x')
        assert master.info('stats')['sync_full'] == 1


@pytest.mark.parametrize('which', ['ours', 'redis'])
def test_the_stream_a_syncing_replica_waits_with_is_one_replication_buffer(which, tmp_path):
    """Replicas waiting for their payload hold the stream since their sync began; Redis
    keeps it once, in the replication buffer they share: mem_total_replication_buffers
    counts it, and used_memory grows by it once, not once a replica
    (replication-buffer 'All replicas share one global replication buffer')."""
    spawn = spawn_store if which == 'ours' else spawn_redis
    proc, port = spawn('--repl-diskless-sync', 'no', '--repl-backlog-size', '16384')
    m = redis.Redis(port=port)
    replicas = []
    try:
        for j in range(10):
            m.set(f'k{j}', 'v')
        m.config_set('rdb-key-save-delay', 1_000_000)  # the payload is not made meanwhile
        for j in range(2):
            d = tmp_path / f'r{j}'
            d.mkdir()
            replicas.append(spawn_redis('--replicaof', '127.0.0.1', str(port), '--dir', str(d)))
        wait_until(lambda: m.info('replication')['connected_slaves'] == 2, 'the syncs')
        before = m.info('memory')['used_memory']
        value = 'x' * 1024
        with m.pipeline(transaction=False) as p:
            for j in range(1024):
                p.set(f'big{j}', value)
            p.execute()
        info = m.info('memory')
        held = info['mem_total_replication_buffers']
        assert held > 1024 * 1024
        assert info['used_memory'] - before - 1024 * 1024 < 2 * held
    finally:
        m.config_set('rdb-key-save-delay', 0)
        m.close()
        for rproc, _ in replicas:
            stop(rproc)
        stop(proc)


@pytest.mark.parametrize('which', ['ours', 'redis'])
def test_a_replica_limit_under_the_backlog_size_is_raised_to_it(which, tmp_path):
    """client-output-buffer-limit replica 512k with repl-backlog-size 100mb: Redis counts
    the replica's hard limit as 100mb (a partial resync would succeed and the limit then
    drop the replica), so a replica that stops reading 2 MB of stream stays."""
    spawn = spawn_store if which == 'ours' else spawn_redis
    proc, port = spawn(
        '--repl-backlog-size', '100mb', '--client-output-buffer-limit', 'replica 512k 0 0'
    )
    m = redis.Redis(port=port)
    rproc, _ = spawn_redis('--replicaof', '127.0.0.1', str(port), '--dir', str(tmp_path))
    try:
        wait_until(lambda: m.info('replication').get('slave0', {}).get('state') == 'online')
        rproc.send_signal(signal.SIGSTOP)
        try:
            for j in range(8):
                m.set(f'big{j}', 'x' * 1_000_000)
            time.sleep(0.2)  # its stream is queued (and checked) as it is written
            assert m.info('replication')['connected_slaves'] == 1
        finally:
            rproc.send_signal(signal.SIGCONT)
    finally:
        m.close()
        stop(rproc)
        stop(proc)


def test_a_replica_pointed_elsewhere_and_back_continues_in_the_database_it_had(tmp_path):
    """REPLICAOF another master keeps the old one cached with its database (Redis's
    cached master): a PSYNC that continues at the first master again goes on in that
    database, which the master's stream does not select again."""
    for master_of in ('ours', 'redis'):
        if master_of == 'ours':
            mproc, mport = spawn_store('--repl-diskless-sync-delay', '0')
        else:
            mproc, mport = spawn_redis('--dir', str(tmp_path), '--repl-diskless-sync-delay', '0')
        m = redis.Redis(port=mport, db=9, decode_responses=True)
        try:
            with following(mport) as ours:
                m.set('a', '1')
                assert m.wait(1, WAIT * 1000) == 1
                ours.execute_command('REPLICAOF', '127.0.0.1', free_port())  # nobody there
                m.set('b', '2')
                ours.execute_command('REPLICAOF', '127.0.0.1', mport)
                wait_until(
                    lambda m=m: m.info('replication').get('slave0', {}).get('state') == 'online',
                    'the replica back',
                )
                assert m.wait(1, WAIT * 1000) == 1
                assert m.info('stats')['sync_partial_ok'] == 1, master_of
                in9 = redis.Redis(port=port_of(ours), db=9, decode_responses=True)
                assert (in9.get('a'), in9.get('b'), ours.dbsize()) == ('1', '2', 0), master_of
        finally:
            m.close()
            stop(mproc)


@pytest.mark.parametrize('cmd', [('PING',), ('GET', 'foo')])
@pytest.mark.parametrize('sync', [('SYNC',), ('PSYNC', '?', '-1')])
def test_a_replica_that_sends_a_command_with_a_reply_is_disconnected(sync, cmd, tmp_path):
    """Replies never go on a replication link: a client that asked for SYNC or PSYNC and
    then sends a command that answers (PING) is logged and disconnected, as Redis's
    _addReplyToBufferOrList does; REPLCONF ACK, which has no reply, is fine."""
    log_path = tmp_path / 'redis.log'
    servers = [spawn_store(), spawn_redis('--logfile', str(log_path))]
    try:
        for _, port in servers:
            s = socket.create_connection(('127.0.0.1', port), timeout=WAIT)
            s.sendall(pack(*sync))
            time.sleep(0.2)
            s.sendall(pack('REPLCONF', 'ACK', '0'))
            time.sleep(0.2)
            assert redis.Redis(port=port).info('replication')['connected_slaves'] == 1, port
            s.sendall(pack(*cmd))
            s.settimeout(WAIT)
            got = b''
            try:
                while chunk := s.recv(65536):
                    got += chunk
            except ConnectionResetError:
                pass
            assert b'PONG' not in got
            c = redis.Redis(port=port)
            assert c.ping()
            wait_until(lambda c=c: c.info('replication')['connected_slaves'] == 0, 'the drop')
            s.close()
        ours_log = servers[0][0]
        stop(ours_log)
        text = ours_log.stdout.read()
        name = cmd[0].lower()
        for where in (text, log_path.read_text()):
            assert f"Replica generated a reply to command '{name}', disconnecting it: id=" in where
            if name == 'get':  # refused first, with processCommand's error, logged
                assert (
                    '== CRITICAL == This master is sending an error to its replica: '
                    f"'Replica can't interact with the keyspace' after processing the command "
                    f"'{name}'"
                ) in where
    finally:
        for proc, _ in servers:
            stop(proc)


def test_a_link_never_up_is_down_since_ever(make_server, redis_ref):
    """INFO's master_link_down_since_seconds is -1 while the replica never reached its
    master (repl_down_since 0), as redis-server says; a cluster replica in that state does
    not fail over (its data is as old as can be)."""
    closed = free_port()
    ours = make_server()
    for client in (ours.client(), redis.Redis(*redis_ref)):
        try:
            client.replicaof('127.0.0.1', closed)
            info = client.info('replication')
            assert info['master_link_status'] == 'down'
            assert info['master_link_down_since_seconds'] == -1
        finally:
            client.replicaof('no', 'one')
            client.close()
