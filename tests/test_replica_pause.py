"""CLIENT PAUSE WRITE on a replica holds its master's writes, as Redis postpones the master
client: they are read (slave_read_repl_offset) but not applied (slave_repl_offset, the
ACKed offset) until the pause ends, and then they are applied (unit/pause)."""

import redis

from conftest import spawn_store, stop, wait_until


def test_a_paused_replica_applies_its_masters_writes_once_unpaused():
    mproc, mport = spawn_store('--repl-ping-replica-period', '3600')
    rproc, rport = spawn_store()
    master = redis.Redis(port=mport, decode_responses=True)
    replica = redis.Redis(port=rport, decode_responses=True)
    try:
        replica.replicaof('127.0.0.1', mport)
        wait_until(lambda: replica.info('replication')['master_link_status'] == 'up', 'sync')
        master.set('foo', 'bar')

        def offsets():
            info = replica.info('replication')
            return info['slave_read_repl_offset'], info['slave_repl_offset']

        def applied():
            return offsets()[1] == master.info('replication')['master_repl_offset']

        wait_until(applied, 'the first write applied')
        before = offsets()[1]
        replica.execute_command('CLIENT', 'PAUSE', '100000', 'WRITE')
        master.set('foo2', 'bar2')
        end = master.info('replication')['master_repl_offset']
        wait_until(lambda: offsets()[0] == end, 'the write read')
        assert offsets()[1] == before
        assert replica.get('foo2') is None
        replica.execute_command('CLIENT', 'UNPAUSE')
        wait_until(applied, 'the held write applied')
        assert replica.get('foo2') == 'bar2'
    finally:
        master.close()
        replica.close()
        stop(mproc)
        stop(rproc)
