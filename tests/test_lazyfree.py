"""Lazy freeing as a user sees it: FLUSHALL/FLUSHDB ASYNC and UNLINK make the data
disappear at once (DBSIZE, EXISTS, INFO used_memory) while its memory is freed in steps
between commands (INFO lazyfree_pending_objects drains to 0, lazyfreed_objects counts what
was freed as Redis counts it), other clients are served meanwhile, the lazyfree-lazy-*
parameters act as in Redis, and a BGSAVE running when a database is flushed still writes
the data as it was at its start. Replies and counters are compared with redis-server."""

import time

import pytest
import redis

from conftest import assert_same, spawn_redis, spawn_store, stop, wait_until

LAZY_PARAMS = (
    'lazyfree-lazy-eviction',
    'lazyfree-lazy-expire',
    'lazyfree-lazy-server-del',
    'lazyfree-lazy-user-del',
    'lazyfree-lazy-user-flush',
)


def memory(client, field):
    return client.info('memory')[field]


def drained(client):
    wait_until(lambda: memory(client, 'lazyfree_pending_objects') == 0, 'the lazy freeing')
    return memory(client, 'lazyfreed_objects')


def big_hash(client, key, fields=1000):
    client.hset(key, mapping={f'f{i}': i for i in range(fields)})


@pytest.fixture
def lazy_config(both):
    """Restores the lazyfree-lazy-* parameters the test changes on both servers."""
    saved = [c.config_get('lazyfree-*') for c in both]
    yield
    for c, params in zip(both, saved):
        for name, value in params.items():
            c.config_set(name, value)


def test_flush_and_unlink_replies_match_redis(both):
    assert_same(
        both,
        [
            ('DEBUG', 'POPULATE', '100'),
            ('FLUSHALL', 'ASYNC'),
            ('DBSIZE',),
            ('DEBUG', 'POPULATE', '100'),
            ('FLUSHDB', 'async'),
            ('DBSIZE',),
            ('FLUSHALL', 'SYNC'),
            ('FLUSHALL', 'ASYNC', 'x'),
            ('FLUSHALL', 'LAZY'),
            ('FLUSHDB', 'SYNC', 'ASYNC'),
            ('FLUSHDB', 'now'),
            ('HSET', 'h', *[x for i in range(200) for x in (f'f{i}', i)]),
            ('SET', 's', 'v'),
            ('UNLINK', 'h', 's', 'missing', 'h'),
            ('EXISTS', 'h', 's'),
            ('UNLINK',),
            ('DBSIZE',),
        ],
    )


def test_lazyfree_parameters_match_redis(both, lazy_config):
    commands = [('CONFIG', 'GET', name) for name in LAZY_PARAMS]
    commands += [('CONFIG', 'SET', name, 'yes') for name in LAZY_PARAMS]
    commands += [('CONFIG', 'SET', 'lazyfree-lazy-expire', 'on')]
    assert_same(both, commands)
    ours, theirs = both
    assert ours.config_get('lazyfree-*') == theirs.config_get('lazyfree-*')


def test_flushall_async_counts_every_key_as_redis_does(both):
    """lazyfree_pending_objects drains to 0 and lazyfreed_objects grows by the number of
    keys flushed, in every database (emptyDbAsync counts the keys of each)."""
    for c in both:
        start = drained(c)
        c.execute_command('DEBUG', 'POPULATE', 3000)
        c.execute_command('SELECT', 2)
        c.execute_command('DEBUG', 'POPULATE', 500)
        c.execute_command('SELECT', 0)
        assert c.execute_command('FLUSHALL', 'ASYNC') is True
        assert c.dbsize() == 0
        assert drained(c) - start == 3500


def test_unlink_counts_big_values_only_as_redis_does(both):
    """A value is freed lazily (and counted) when its free effort exceeds 64: a hash in
    its hashtable encoding with 1000 fields is, a listpack hash, a string and a small
    list are not."""
    for c in both:
        start = drained(c)
        big_hash(c, 'big')
        c.hset('small', 'f', 'v')
        c.set('str', 'x' * 10000)
        c.rpush('list', *range(100))
        assert c.unlink('big', 'small', 'str', 'list', 'nothing') == 4
        assert c.exists('big', 'small', 'str', 'list') == 0
        assert drained(c) - start == 1


def test_lazy_user_del_server_del_and_expire_as_redis(both, lazy_config):
    """DEL frees lazily only with lazyfree-lazy-user-del; an aggregate overwritten by SET
    with lazyfree-lazy-server-del; an expired one with lazyfree-lazy-expire; FLUSHDB
    without an argument with lazyfree-lazy-user-flush."""
    for c in both:
        start = drained(c)
        big_hash(c, 'a')
        c.delete('a')  # DEL, parameter off: freed at once, not counted
        assert drained(c) == start
        c.config_set('lazyfree-lazy-user-del', 'yes')
        big_hash(c, 'a')
        assert c.delete('a') == 1
        assert drained(c) == start + 1
        c.config_set('lazyfree-lazy-server-del', 'yes')
        c.sadd('set', *range(1000))
        c.set('set', 'now a string')
        assert drained(c) == start + 2
        c.config_set('lazyfree-lazy-expire', 'yes')
        big_hash(c, 'ttl')
        c.pexpire('ttl', 1)
        time.sleep(0.01)
        assert c.exists('ttl') == 0  # expired on access
        assert drained(c) == start + 3
        c.config_set('lazyfree-lazy-user-flush', 'yes')
        c.execute_command('DEBUG', 'POPULATE', 100)
        assert c.flushdb() is True  # no argument: lazy, as the parameter says
        assert drained(c) == start + 3 + 101  # and the string 'set'
        c.execute_command('DEBUG', 'POPULATE', 100)
        c.execute_command('FLUSHDB', 'SYNC')  # SYNC wins over the parameter
        assert drained(c) == start + 3 + 101


def test_used_memory_drops_at_once_and_the_data_is_gone(r):
    base = memory(r, 'used_memory')
    r.execute_command('DEBUG', 'POPULATE', 20000, 'key', 100)
    big_hash(r, 'h', 50000)
    assert memory(r, 'used_memory') > base + 2_000_000
    assert r.execute_command('FLUSHALL', 'ASYNC') is True
    assert r.dbsize() == 0 and r.exists('h', 'key:1') == 0
    assert memory(r, 'used_memory') < base + 100_000
    assert r.keys('*') == [] and r.scan(0)[1] == []
    drained(r)
    r.set('after', 1)  # the keyspace works on as usual
    assert r.get('after') == b'1'


def test_watch_sees_an_async_flush_as_redis_does(both):
    for c in both:
        c.set('w', 1)
        with c.pipeline() as p:
            p.watch('w')
            c.execute_command('FLUSHDB', 'ASYNC')
            p.multi()
            p.set('w', 2)
            with pytest.raises(redis.WatchError):
                p.execute()
        assert c.exists('w') == 0


@pytest.fixture
def own_server():
    """A server process of its own (not embedded: the test's clients then do not take
    turns with it for the GIL, so a round trip costs what it costs a real client)."""
    proc, port = spawn_store('--enable-debug-command', 'yes')
    yield port
    stop(proc)


def test_ping_is_answered_while_a_big_flush_is_still_being_freed(own_server):
    """Ordering, not speed: another client's PING gets its PONG while the flushed
    database is still being freed (lazyfree_pending_objects > 0 right after it)."""
    a, b = redis.Redis(port=own_server), redis.Redis(port=own_server)
    a.execute_command('DEBUG', 'POPULATE', 300_000)
    big_hash(a, 'h', 300_000)
    b.ping()
    a.execute_command('FLUSHALL', 'ASYNC')
    assert b.ping() is True
    assert memory(b, 'lazyfree_pending_objects') > 0
    assert b.dbsize() == 0
    assert drained(b) == 300_001


def test_unlinked_big_value_is_freed_in_steps(own_server):
    """A hash of 300,000 fields goes at once for every client; its memory is freed
    between other clients' commands."""
    a, b = redis.Redis(port=own_server), redis.Redis(port=own_server)
    big_hash(a, 'h', 300_000)
    a.set('other', 'x')
    base = memory(b, 'used_memory')
    assert a.unlink('h') == 1
    assert memory(b, 'lazyfree_pending_objects') == 1
    assert b.exists('h') == 0 and b.get('other') == b'x'
    assert memory(b, 'used_memory') < base - 1_000_000
    assert drained(b) == 1


def test_flushdb_async_during_bgsave_still_saves_the_data_as_it_was(tmp_path):
    """The snapshot still reads the flushed dicts: they are freed only once it has
    written them (a slowed-down BGSAVE, then FLUSHDB ASYNC while it runs)."""
    args = ('--dir', str(tmp_path), '--enable-debug-command', 'yes')
    proc, port = spawn_store(*args, '--rdb-key-save-delay', '100')
    try:
        c = redis.Redis(port=port)
        c.execute_command('DEBUG', 'POPULATE', 3000)
        big_hash(c, 'h', 2000)
        c.rpush('l', *range(500))
        before = sorted(c.keys('*'))
        fields = c.hgetall('h')
        c.bgsave()
        assert c.execute_command('FLUSHDB', 'ASYNC') is True
        assert c.dbsize() == 0
        assert memory(c, 'lazyfree_pending_objects') > 0  # waiting for the snapshot
        wait_until(lambda: c.info('persistence')['rdb_bgsave_in_progress'] == 0, 'the BGSAVE')
        assert c.info('persistence')['rdb_last_bgsave_status'] == 'ok'
        assert drained(c) == 3002
        stop(proc)
        proc, _ = spawn_store(*args, port=port)
        c = redis.Redis(port=port)
        assert sorted(c.keys('*')) == before
        assert c.hgetall('h') == fields and c.llen('l') == 500
    finally:
        stop(proc)
    rproc, rport = spawn_redis('--dir', str(tmp_path))  # the file is one Redis loads
    try:
        assert redis.Redis(port=rport).dbsize() == len(before)
    finally:
        stop(rproc)


@pytest.mark.parametrize(
    'kind, small, big',
    [('list', 5000, 5500), ('stream', 2500, 3200)],
)
def test_free_effort_of_lists_and_streams_as_redis_counts_it(both, kind, small, big):
    """Lists count their 8 KB quicklist nodes and streams their radix-tree nodes, which
    Redis compares with 64: the two sizes are on either side of that line."""
    for c in both:
        got = []
        for n in (small, big):
            start = drained(c)
            p = c.pipeline(transaction=False)
            if kind == 'list':
                for i in range(0, n, 500):
                    p.rpush('k', *['y' * 100] * min(500, n - i))
            else:
                for i in range(n):
                    p.xadd('k', {'f': 'v'}, id=f'{i + 1}-0')
            p.execute()
            c.unlink('k')
            got.append(drained(c) - start)
        assert got == [0, 1]


def test_free_effort_of_a_stream_counts_the_nodes_stream_node_max_entries_made(both):
    """A stream of 1,000 entries made with stream-node-max-entries 5 has 200 nodes: freed
    in the background by UNLINK (lazyfreed_objects 1), where 1,000 entries in nodes of 100
    would not be (unit/lazyfree, 'lazy free a stream with all types of metadata')."""
    for c in both:
        c.config_set('stream-node-max-entries', 5)
        try:
            start = drained(c)
            p = c.pipeline(transaction=False)
            for i in range(1000):
                p.xadd('s', {'foo': i}, id=f'{i + 1}-0')
            p.execute()
            c.xgroup_create('s', 'g', 0)
            c.xreadgroup('g', 'alice', {'s': '>'}, count=2)
            c.unlink('s')
            assert drained(c) - start == 1
        finally:
            c.config_set('stream-node-max-entries', 100)
