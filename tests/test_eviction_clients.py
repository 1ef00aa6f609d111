"""What clients hold against maxmemory (store/memory/eviction.py, store/memory/report.py):
their query buffers, their replies, and the order of client and key eviction, observed
over TCP on our server and on redis-server 7.0.15 started with the same options, as Redis's
unit/maxmemory tests observe them.
"""

import random

import pytest
import redis

from conftest import spawn_redis, stop, wait_until
from rawconn import RawConn

KB = 1024


@pytest.fixture
def pair(make_server, tmp_path):
    """Factory: ours and a redis-server with the same options; [(name, port), ...]."""
    procs = []

    def start(**options):
        ours = make_server(**options)
        args = []
        for name, value in options.items():
            args += ['--' + name.replace('_', '-'), str(value)]
        d = tmp_path / f'redis{len(procs)}'
        d.mkdir()
        proc, port = spawn_redis('--dir', str(d), *args)
        procs.append(proc)
        return [('ours', ours.port), ('redis', port)]

    yield start
    for proc in procs:
        stop(proc)


def fill_50_keys(c):
    """init_test of unit/maxmemory: 50 keys of 100 KB (5 MB), counters reset."""
    c.flushdb()
    c.config_resetstat()
    for j in range(50):
        c.setrange(j, 100_000, 'x')
    assert c.dbsize() == 50


def test_info_reply_in_flight_takes_no_room_from_the_keys(pair):
    """A limit 100 KB above what is used, filled with SETs until INFO's used_memory is
    within 4 KB of it: a SET then still fits (under volatile-lru, with no volatile key,
    nothing could be evicted for it). INFO's own reply, not yet written when the cron
    measured the clients, used to be counted until the next cron: ~5 KB less room, and
    the SET was refused with -OOM (unit/maxmemory, 'only allkeys-* should remove
    non-volatile keys')."""
    rng = random.Random(7)
    for name, port in pair(hz=500):  # a cron every 2 ms: one lands between reply and write
        c = redis.Redis('127.0.0.1', port)
        try:
            for _ in range(3):
                c.flushall()
                limit = c.info('memory')['used_memory'] + 100 * KB
                c.config_set('maxmemory', limit)
                c.config_set('maxmemory-policy', 'volatile-lru')
                n = 0
                while True:
                    c.set('key:%d' % rng.randrange(10**9), 'x')  # no -OOM
                    n += 1
                    if c.info()['used_memory'] + 4096 > limit:  # all of INFO, ~5 KB
                        break
                assert n > 10, name
                c.config_set('maxmemory', 0)
        finally:
            c.close()


def test_unfinished_command_arguments_count_as_client_memory(pair):
    """30 clients each send 249 of the 250 arguments of a command (1000 bytes each) and
    stop: the arguments parsed so far count in the clients' memory (Redis's argv_len_sum),
    7.5 MB over 5 MB of keys under maxmemory 11mb, so keys are evicted."""
    for name, port in pair(maxmemory='11mb', maxmemory_policy='allkeys-lru'):
        c = redis.Redis('127.0.0.1', port)
        conns = [RawConn(port) for _ in range(30)]
        try:
            fill_50_keys(c)
            arg = b'$1000\r\n' + b'x' * 1000 + b'\r\n'
            for conn in conns:
                conn.send(b'*250\r\n' + arg * 249)
            wait_until(
                lambda c=c: c.info('memory')['mem_clients_normal'] > 30 * 249_000,
                f'{name}: the unfinished commands counted',
            )
            wait_until(lambda c=c: c.info('stats')['evicted_keys'] > 0, f'{name}: keys evicted')
            assert c.dbsize() < 50, name
            assert c.info('stats')['evicted_clients'] == 0, name
        finally:
            for conn in conns:
                conn.close()
            c.close()


def test_clients_over_maxmemory_clients_go_before_any_key(pair):
    """maxmemory-clients 3mb under maxmemory 11mb: clients piling up 100 KB MGET replies
    they do not read are evicted, and no key is, though keys and clients together passed
    maxmemory (Redis evicts clients before it evicts keys)."""
    for name, port in pair(maxmemory='11mb', maxmemory_policy='allkeys-lru'):
        c = redis.Redis('127.0.0.1', port)
        c.config_set('maxmemory-clients', '3mb')
        c.execute_command('CLIENT', 'NO-EVICT', 'ON')
        conns = [RawConn(port) for _ in range(20)]
        try:
            fill_50_keys(c)
            mget = b'*2\r\n$4\r\nMGET\r\n$1\r\n1\r\n'
            for _ in range(200):
                for conn in conns:
                    try:
                        conn.send(mget * 5)
                    except OSError:
                        pass  # evicted
                if c.info('stats')['evicted_clients']:
                    break
            assert c.info('stats')['evicted_clients'] > 0, name
            assert c.info('stats')['evicted_keys'] == 0, name
            assert c.dbsize() == 50, name
        finally:
            for conn in conns:
                conn.close()
            c.close()


def test_replica_output_is_not_counted_for_eviction(pair):
    """A replica that stops reading (a raw SYNC that never reads): the stream it has not
    read beyond repl-backlog-size is the replicas' memory (INFO mem_clients_slaves), not
    counted against maxmemory (mem_not_counted_for_evict), so writes that do not grow the
    dataset evict nothing and are not refused (unit/maxmemory, 'replica buffer don't
    induce eviction')."""
    payload = b'A' * 10_000
    setrange = b'*4\r\n$8\r\nSETRANGE\r\n$5\r\nkey:0\r\n$1\r\n0\r\n$10000\r\n' + payload + b'\r\n'
    for name, port in pair(repl_diskless_sync='no', repl_backlog_size='10kb'):
        c = redis.Redis('127.0.0.1', port)
        replica = RawConn(port)
        writer = RawConn(port)
        try:
            for j in range(20):
                c.setrange(f'key:{j}', 100_000, 'x')
            replica.send(b'SYNC\r\n')  # and never reads
            wait_until(
                lambda c=c: c.info('replication')['connected_slaves'] == 1,
                f'{name}: the replica online',
            )
            info = c.info('memory')
            limit = info['used_memory'] - info['mem_not_counted_for_evict'] + 256 * KB
            c.config_set('maxmemory-policy', 'allkeys-random')
            c.config_set('maxmemory', limit)
            for _ in range(30):  # 30 MB of stream, more than the kernel's buffers hold
                writer.send(setrange * 100)
                for _ in range(100):
                    assert writer.read_reply() == b':100001\r\n', name
            info = c.info('memory')
            assert info['mem_clients_slaves'] > 2 * 1024 * KB, name
            assert info['mem_not_counted_for_evict'] > 2 * 1024 * KB, name
            assert info['used_memory'] - info['mem_not_counted_for_evict'] < limit, name
            assert c.info('stats')['evicted_keys'] == 0, name
            assert c.dbsize() == 20, name
        finally:
            c.config_set('maxmemory', 0)
            replica.close()
            writer.close()
            c.close()
