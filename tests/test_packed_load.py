"""Small aggregates left packed by a start-up load (store/types/packed.py), as a user sees
them: after a restart from an RDB file holding every compact type, every command family
reads and writes the loaded keys as before the restart (WRONGTYPE, OBJECT ENCODING,
DUMP/RESTORE, MEMORY USAGE, SCAN TYPE, COPY/RENAME/MOVE, SWAPDB, BGSAVE and DEBUG RELOAD
included), memory accounting stays consistent, and a blob that a buggy writer made (valid
checksum, bad content) gets an error reply instead of taking the server down."""

import time

import pytest
import redis

from conftest import read_value, spawn_store, stop, wait_until
from store.persistence.rdb_blobs import listpack, lp_elem
from store.persistence.rdb_encoder import RdbEncoder
from store.rdb import crc64, rdb_string
from store.types.packed import Packed


def populate(r):
    p = r.pipeline(transaction=False)
    p.set('str', 'hello')
    p.hset('hash', mapping={'f1': 'v1', 'f2': 2, 'f3': 'x' * 30})
    p.rpush('list', 'a', 'b', 1, 2, 'c' * 40)
    p.sadd('intset', 1, 2, 3, -7, 1 << 40)
    p.sadd('set', 'a', 'b', 'c')
    p.zadd('zset', {'a': 1.5, 'b': -2, 'c': 3, 'd': float('inf')})
    p.hset('bighash', mapping={f'f{i}': 'v' for i in range(600)})
    p.zadd('bigzset', {f'm{i}': i for i in range(200)})
    p.hset('ttlhash', 'f', 'v')
    p.expire('ttlhash', 3600)
    p.execute()


PACKED = [b'hash', b'list', b'intset', b'zset', b'ttlhash']


def snapshot(r):
    """What a client reads of every key: type, value, encoding, TTL."""
    out = {}
    for key in sorted(r.keys()):
        kind = r.type(key)
        value = read_value(r, key, kind)
        out[key] = (kind, value, r.object('encoding', key), r.ttl(key) > 0)
    return out


@pytest.fixture
def loaded(make_server, tmp_path):
    """(client, server, dataset before the restart, used_memory of the empty server):
    a server restarted from an RDB file of every compact type, nothing read yet."""
    srv = make_server()
    r = srv.client()
    empty = r.info('memory')['used_memory']
    populate(r)
    before = snapshot(r)
    r.save()
    srv.stop()
    srv = make_server()
    return srv.client(), srv, before, empty


def packed_keys(srv, db=0):
    ks = srv.server.keyspace
    return {k for s in ks.shards for k, v in s.data[db].items() if type(v) is Packed}


def test_small_aggregates_stay_packed_and_read_back_exactly(loaded):
    r, srv, before, _ = loaded
    assert packed_keys(srv) == set(PACKED)
    for key in PACKED:  # what a client asks first, one key at a time
        kind, value, enc, _ = before[key]
        assert r.type(key) == kind
        assert r.object('encoding', key) == enc
    assert snapshot(r) == before
    assert packed_keys(srv) == set()


def test_every_family_reads_and_writes_loaded_keys(loaded):
    r, srv, _, _ = loaded
    with pytest.raises(redis.ResponseError, match='WRONGTYPE'):
        r.get('hash')
    with pytest.raises(redis.ResponseError, match='WRONGTYPE'):
        r.lpush('zset', 'x')
    assert r.hget('hash', 'f2') == b'2'
    assert r.hset('hash', 'f4', 'v4') == 1
    assert r.lpop('list') == b'a'
    assert r.rpush('list', 'z') == 5
    assert r.sismember('intset', 1 << 40)
    assert r.sadd('intset', 'notanint') == 1
    assert r.object('encoding', 'intset') == b'hashtable'
    assert r.zscore('zset', 'b') == -2
    assert r.zincrby('zset', 1, 'a') == 2.5
    assert r.object('idletime', 'ttlhash') is not None
    assert r.ttl('ttlhash') > 3000


def test_dump_restore_copy_rename_move_swapdb(loaded):
    r, srv, before, _ = loaded
    payload = r.dump('hash')
    r.restore('hash2', 0, payload)
    assert sorted(r.hgetall('hash2').items()) == before[b'hash'][1]
    assert r.copy('zset', 'zset2')
    assert r.zrange('zset2', 0, -1, withscores=True) == before[b'zset'][1]
    r.rename('list', 'list2')
    assert r.lrange('list2', 0, -1) == before[b'list'][1]
    assert r.move('intset', 1)
    r.swapdb(0, 1)
    assert sorted(r.smembers('intset')) == before[b'intset'][1]
    assert r.object('encoding', 'intset') == b'intset'


def test_scan_type_and_memory_usage(loaded):
    r, srv, before, _ = loaded
    assert sorted(r.scan_iter(_type='hash')) == [b'bighash', b'hash', b'ttlhash']
    assert sorted(r.scan_iter(_type='zset')) == [b'bigzset', b'zset']
    srv2_usage = r.memory_usage('list')
    assert srv2_usage and srv2_usage > 0


def test_memory_accounting_after_touching_every_key_and_flushall(loaded):
    r, srv, before, empty = loaded
    ks = srv.server.keyspace
    loaded_used = r.info('memory')['used_memory']
    snapshot(r)  # every key materialized: charges moved to the real values'
    charged = sum(len(s.charged[0]) for s in ks.shards)
    assert charged == len([k for k in before if before[k][0] != b'string'])
    ks.settle()
    touched = r.info('memory')['used_memory']
    ks.recount()  # what the size model says from scratch
    assert r.info('memory')['used_memory'] == touched
    assert abs(touched - loaded_used) < 0.2 * (loaded_used - empty)
    r.flushall()
    assert r.info('memory')['used_memory'] == empty


def test_flushall_before_any_read_returns_used_memory(loaded):
    r, srv, _, empty = loaded
    assert packed_keys(srv)
    r.flushall()
    assert r.info('memory')['used_memory'] == empty


def test_bgsave_and_debug_reload_keep_packed_keys(loaded, make_server):
    r, srv, before, _ = loaded
    assert r.execute_command('DEBUG', 'RELOAD')  # saves packed blobs as they were loaded
    assert snapshot(r) == before
    r.execute_command('DEBUG', 'RELOAD')
    r.bgsave()
    while r.info('persistence')['rdb_bgsave_in_progress']:
        time.sleep(0.01)
    srv.stop()
    srv = make_server()
    r = srv.client()
    assert packed_keys(srv) == set(PACKED)
    assert snapshot(r) == before


@pytest.mark.parametrize('preamble', ['yes', 'no'])
def test_aof_rewrite_of_packed_keys(tmp_path, preamble):
    """The rewrite that turning appendonly on starts, right after a load (subprocesses:
    an AOF's fsync thread belongs to its process)."""
    d = str(tmp_path)
    proc, port = spawn_store('--dir', d)
    try:
        r = redis.Redis(port=port)
        populate(r)
        before = snapshot(r)
        r.save()
        stop(proc)
        proc, port = spawn_store('--dir', d, '--aof-use-rdb-preamble', preamble)
        r = redis.Redis(port=port)
        r.config_set('appendonly', 'yes')
        wait_until(
            lambda: (
                not r.info('persistence')['aof_rewrite_in_progress']
                and not r.info('persistence')['aof_rewrite_scheduled']
                and r.info('persistence')['aof_last_bgrewrite_status'] == 'ok'
            )
        )
        stop(proc)
        proc, port = spawn_store('--dir', d, '--appendonly', 'yes')
        assert snapshot(redis.Redis(port=port)) == before
    finally:
        stop(proc)


def bad_rdb(blob):
    """A file with a hash whose listpack header is sound but whose entries are not, under
    a valid checksum: what only a buggy writer makes."""
    enc = RdbEncoder()
    body = enc.header() + b'\xfe\x00' + b'\x10' + rdb_string(b'bad') + rdb_string(blob)
    body += b'\x00' + rdb_string(b'ok') + rdb_string(b'fine')
    return body + enc.footer(crc64(body))


def test_a_bad_blob_under_a_valid_checksum_fails_the_listpack_assertion_when_read(tmp_path):
    """A listpack that passed the file's checksum but does not decode (a writer's bug) is
    what redis-server meets reading a corrupt listpack it did not sanitize: lpNext's
    assertion fails, the bug report is written and the process ends. Other keys are
    served until then."""
    good = listpack([lp_elem(b'f'), lp_elem(b'v')])
    blob = good[:4] + b'\x04\x00' + good[6:]  # a count of 4 over 2 entries
    (tmp_path / 'dump.rdb').write_bytes(bad_rdb(blob))
    proc, port = spawn_store('--dir', str(tmp_path))
    try:
        r = redis.Redis(port=port)
        assert r.get('ok') == b'fine'
        with pytest.raises(redis.ConnectionError):
            r.hgetall('bad')
        proc.wait(60)
        log = proc.stdout.read()
        assert "'lpValidateNext(lp, &p, lpbytes)' is not true" in log
        assert '=== REDIS BUG REPORT END.' in log
    finally:
        stop(proc)


def test_a_bad_blob_without_a_checksum_is_refused_at_load(make_server, tmp_path):
    good = listpack([lp_elem(b'f'), lp_elem(b'v')])
    data = bad_rdb(good[:4] + b'\x04\x00' + good[6:])
    (tmp_path / 'dump.rdb').write_bytes(data[:-8] + bytes(8))  # rdbchecksum no
    with pytest.raises(Exception):  # noqa: B017, PT011 - the embedded start fails
        make_server()
