"""MEMORY USAGE / STATS / DOCTOR / MALLOC-STATS / PURGE / HELP and INFO memory, against
redis-server 7.0.15 where Redis has a behaviour: errors, reply shapes and field names are
compared exactly; sizes, which are this server's own model (store/memory/sizes.py), are
checked for how they move (with the value's size, the element count, SAMPLES, a client's
unread replies) on both servers."""

import hashlib
import socket

import hiredis
import pytest
import redis

from conftest import WAIT, assert_same, wait_until
from rawconn import RawConn, pack


def usage(client, key, *opts):
    return client.execute_command('MEMORY', 'USAGE', key, *opts)


def used_memory(client):
    return client.info('memory')['used_memory']


# -- MEMORY USAGE --------------------------------------------------------------------------


def _fill(client, kind, key, n, size=8):
    """An aggregate of `n` elements of `size` bytes (beyond the listpack limits for large n,
    so Redis's estimate is sampled too)."""
    items = [b'%0*d' % (size, i) for i in range(n)]
    if kind == 'hash':
        client.hset(key, mapping={f: f for f in items})
    elif kind == 'list':
        client.rpush(key, *items)
    elif kind == 'set':
        client.sadd(key, *items)
    elif kind == 'zset':
        client.zadd(key, {m: i for i, m in enumerate(items)})
    elif kind == 'stream':
        for i in range(n):
            client.xadd(key, {b'f': items[i]})


def test_usage_grows_with_value_size(both):
    for c in both:
        small = (c.set('s', 'x' * 10), usage(c, 's'))[1]
        big = (c.set('s', 'x' * 10_000), usage(c, 's'))[1]
        assert 10_000 <= big - small < 12_000, (c, small, big)


@pytest.mark.parametrize('kind', ['hash', 'list', 'set', 'zset', 'stream'])
def test_usage_grows_with_element_count(both, kind):
    for c in both:
        _fill(c, kind, 'few', 10)
        _fill(c, kind, 'many', 1000)
        few, many = usage(c, 'few', 'SAMPLES', 0), usage(c, 'many', 'SAMPLES', 0)
        assert many > 4 * few, (c, kind, few, many)  # Redis packs stream entries tight


def test_usage_of_missing_key_is_null(both_resp):
    for c in both_resp:
        assert usage(c, 'nosuchkey') is None
        assert usage(c, 'nosuchkey', 'SAMPLES', 3) is None


def test_samples_changes_the_estimate_of_a_non_uniform_hash(both):
    """Half the fields hold 1 byte, half 1,000 bytes, alternating: one sampled field is
    never the average, all of them are the exact sum."""
    for c in both:
        c.hset('h', mapping={f'f{i}': 'x' * (1 if i % 2 == 0 else 1000) for i in range(200)})
        one, every = usage(c, 'h', 'SAMPLES', 1), usage(c, 'h', 'SAMPLES', 0)
        assert one != every, c
        assert every >= 100 * 1000, c
        assert usage(c, 'h', 'SAMPLES', 1000) == every  # more samples than fields: all
        assert usage(c, 'h') == usage(c, 'h', 'SAMPLES', 5)  # the default


def test_usage_errors_match_redis(both):
    for c in both:
        c.set('k', 'v')
    assert_same(
        both,
        [
            ('MEMORY', 'USAGE', 'k', 'SAMPLES'),
            ('MEMORY', 'USAGE', 'k', 'SAMPLES', 'x'),
            ('MEMORY', 'USAGE', 'k', 'SAMPLES', '-1'),
            ('MEMORY', 'USAGE', 'k', 'SAMPLES', '1.5'),
            ('MEMORY', 'USAGE', 'k', 'SAMPLES', '99999999999999999999'),
            ('MEMORY', 'USAGE', 'k', 'FOO'),
            ('MEMORY', 'USAGE', 'k', 'SAMPLES', '2', 'SAMPLES'),
            ('MEMORY', 'USAGE', 'nokey', 'SAMPLES', 'x'),  # options first, then the key
            ('MEMORY', 'USAGE', 'nokey', 'samples', '0', 'samples', '3'),
            ('MEMORY', 'USAGE'),
            ('MEMORY', 'STATS', 'x'),
            ('MEMORY', 'DOCTOR', 'x'),
            ('MEMORY', 'MALLOC-STATS', 'x'),
            ('MEMORY', 'PURGE', 'x'),
            ('MEMORY', 'HELP', 'x'),
            ('MEMORY', 'FOO'),
            ('MEMORY',),
        ],
    )


def test_usage_neither_expires_nor_touches_the_key(both):
    """Redis's MEMORY USAGE reads the dict directly: a key past its deadline that nothing
    has deleted yet still has a size, and is then deleted by the next lookup."""
    for c in both:
        c.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
        try:
            c.set('gone', 'v', px=1)
            c.execute_command('DEBUG', 'SLEEP', '0.01')
            assert usage(c, 'gone') is not None, c
            assert c.dbsize() == 1  # still there: nothing looked it up
            assert c.exists('gone') == 0
            assert usage(c, 'gone') is None
        finally:
            c.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '1')


# -- MEMORY STATS ------------------------------------------------------------------------


def _shape(value):
    """A reply's structure: field names and value types, nested maps included."""
    if isinstance(value, dict):
        return [(k, _shape(v)) for k, v in value.items()]
    if isinstance(value, list):  # RESP2: a flat array of name, value
        return [(k, _shape(v)) for k, v in zip(value[::2], value[1::2])]
    if isinstance(value, bytes):  # RESP2 doubles are bulk strings of a number
        float(value)
    return type(value).__name__


def test_stats_fields_and_types_match_redis(both_resp):
    for c in both_resp:
        c.set('a', 'x' * 100, ex=100)
        c.set('b', 'y')
        c.execute_command('SELECT', 3)  # a second database with keys: one map each
        c.set('c', 'z')
        c.execute_command('SELECT', 0)
    ours, theirs = (c.execute_command('MEMORY', 'STATS') for c in both_resp)
    assert _shape(ours) == _shape(theirs)
    for c in both_resp:
        c.flushall()
    ours, theirs = (c.execute_command('MEMORY', 'STATS') for c in both_resp)
    assert _shape(ours) == _shape(theirs)  # no db.N entries at all


def test_stats_figures_add_up(r):
    r.set('a', 'x' * 1000, ex=100)
    r.hset('h', mapping={f'f{i}': 'v' * 50 for i in range(300)})
    s = r.execute_command('MEMORY', 'STATS')
    s = dict(zip(s[::2], s[1::2]))
    used = s[b'total.allocated']
    assert s[b'keys.count'] == 2
    assert s[b'peak.allocated'] >= used
    assert s[b'dataset.bytes'] == used - s[b'overhead.total']
    assert s[b'keys.bytes-per-key'] == (used - s[b'startup.allocated']) // 2
    db0 = dict(zip(s[b'db.0'][::2], s[b'db.0'][1::2]))
    assert db0[b'overhead.hashtable.expires'] > 0  # one key with a TTL
    assert s[b'dataset.bytes'] > 300 * 50  # the hash's values at least
    assert s[b'overhead.total'] >= s[b'startup.allocated'] + s[b'clients.normal']


# -- INFO memory -------------------------------------------------------------------------


def _info_fields(client):
    return list(client.info('memory'))  # in the order of the lines


def test_info_memory_fields_match_redis(both):
    ours, theirs = (_info_fields(c) for c in both)
    assert ours == theirs


def test_info_memory_agrees_with_stats(r):
    r.set('k', 'v' * 10_000)
    info = r.info('memory')
    s = r.execute_command('MEMORY', 'STATS')
    s = dict(zip(s[::2], s[1::2]))
    assert info['used_memory_startup'] == s[b'startup.allocated']
    assert info['mem_allocator'] == 'libc'
    assert info['used_memory_peak'] >= info['used_memory'] > info['used_memory_startup']
    assert info['used_memory_dataset'] == info['used_memory'] - info['used_memory_overhead']
    assert info['used_memory_rss'] > info['used_memory']  # the interpreter is not counted
    assert info['mem_clients_normal'] > 0


def test_used_memory_follows_the_keyspace(r):
    before = used_memory(r)
    r.set('big', 'x' * 1_000_000)
    grown = used_memory(r)
    assert 1_000_000 <= grown - before < 1_100_000
    r.delete('big')
    assert used_memory(r) - before < 100_000


def _drain(sock, n):
    """Read `n` bytes (in large reads, with the receive buffer grown again) and return
    their SHA-1: RawConn's buffer would copy tens of MB once per small read."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    sock.settimeout(WAIT)
    digest = hashlib.sha1()
    while n:
        data = sock.recv(min(n, 1 << 20))
        assert data, 'connection closed'
        digest.update(data)
        n -= len(data)
    return digest.digest()


def _client_memory_test(port, other):
    """A client pipelines GETs of a 1 MB value and reads nothing: used_memory (read by
    `other`) grows with the replies the server holds for it, and drops once they are read."""
    value = b'x' * 1_000_000
    other.set('big', value)
    before = used_memory(other)
    n = 64
    c = RawConn(port, rcvbuf=4096)
    try:
        c.send(b''.join(pack('GET', 'big') for _ in range(n)))
        wait_until(lambda: used_memory(other) > before + 32_000_000, 'output buffer growth')
        reply = b'$1000000\r\n' + value + b'\r\n'
        assert _drain(c.sock, n * len(reply)) == hashlib.sha1(reply * n).digest()
        wait_until(lambda: used_memory(other) < before + 8_000_000, 'output buffer release')
    finally:
        c.close()


def test_used_memory_counts_unread_replies(server, r):
    _client_memory_test(server.port, r)


def test_redis_counts_unread_replies_too(redis_ref, ref):
    _client_memory_test(redis_ref[1], ref)


def test_unread_replies_show_in_clients_normal(server, r):
    r.set('big', b'x' * 1_000_000)
    base = r.info('memory')['mem_clients_normal']
    c = RawConn(server.port, rcvbuf=4096)
    try:
        c.send(b''.join(pack('GET', 'big') for _ in range(32)))
        wait_until(
            lambda: r.info('memory')['mem_clients_normal'] > base + 16_000_000,
            'mem_clients_normal growth',
        )
        s = r.execute_command('MEMORY', 'STATS')
        assert dict(zip(s[::2], s[1::2]))[b'clients.normal'] > base + 16_000_000
    finally:
        c.close()


# -- DOCTOR, MALLOC-STATS, PURGE, HELP ---------------------------------------------------------


def _raw(port, proto, *args):
    with RawConn(port, proto=proto) as conn:
        return conn.cmd(*args)


@pytest.mark.parametrize('proto', [2, 3])
def test_doctor_on_an_empty_instance_matches_redis(make_server, redis_ref, proto):
    srv = make_server()
    ours = _raw(srv.port, proto, 'MEMORY', 'DOCTOR')
    theirs = _raw(redis_ref[1], proto, 'MEMORY', 'DOCTOR')
    assert ours == theirs
    assert (b'=' if proto == 3 else b'$') == ours[:1]  # verbatim text in RESP3


def test_doctor_reports_a_peak(make_server):
    """Over 5 MB used, after a peak of more than 1.5 times that: the peak paragraph, in
    Redis's report frame."""
    srv = make_server()
    c = srv.client()
    c.execute_command('DEBUG', 'POPULATE', 20_000, 'key', 1000)
    assert used_memory(c) > 20_000_000  # the peak is seen here
    c.delete(*(f'key:{i}' for i in range(7000, 20_000)))
    assert 5 * 1024 * 1024 < used_memory(c) < 12_000_000
    text = c.execute_command('MEMORY', 'DOCTOR').decode()
    assert text.startswith(
        'Sam, I detected a few issues in this Redis instance memory implants:\n\n'
        ' * Peak memory: In the past this instance used more than 150% the memory'
    )
    assert text.endswith("I'm here to keep you safe, Sam. I want to help you.\n")


@pytest.mark.parametrize('proto', [2, 3])
def test_malloc_stats_is_libcs_reply(server, proto):
    """redis-server 7.0.15 built with libc malloc (this server's mem_allocator) replies
    this bulk string in both protocols."""
    got = _raw(server.port, proto, 'MEMORY', 'MALLOC-STATS')
    assert got == b'$45\r\nStats not supported for the current allocator\r\n'


@pytest.mark.parametrize('proto', [2, 3])
def test_purge_and_help_match_redis(server, redis_ref, proto):
    for name in ('PURGE', 'HELP', 'help'):
        ours = _raw(server.port, proto, 'MEMORY', name)
        theirs = _raw(redis_ref[1], proto, 'MEMORY', name)
        assert ours == theirs, name


def test_purge_keeps_the_data(r):
    r.set('k', 'v' * 5000)
    assert r.memory_purge() is True
    assert r.get('k') == b'v' * 5000


# -- the command table ---------------------------------------------------------------------


SUBCOMMANDS = ['doctor', 'usage', 'malloc-stats', 'help', 'purge', 'stats']


def _command_info(port, proto, name):
    """COMMAND INFO <name>'s one entry, parsed; a container's subcommands sorted by name
    (redis-server lists them in its dict's order, which a random hash seed sets)."""
    with RawConn(port, proto=proto) as conn:
        reader = hiredis.Reader()
        reader.feed(conn.cmd('COMMAND', 'INFO', name))
        entry = reader.gets()[0]
    return entry[:9] + [sorted(entry[9], key=lambda sub: sub[0])]


@pytest.mark.parametrize('name', ['memory', *(f'memory|{s}' for s in SUBCOMMANDS)])
@pytest.mark.parametrize('proto', [2, 3])
def test_command_info_matches_redis(server, redis_ref, name, proto):
    """Arity, flags, key positions, categories, tips, key specs and the subcommands."""
    ours = _command_info(server.port, proto, name)
    assert ours == _command_info(redis_ref[1], proto, name)


def _docs(port, name):
    with RawConn(port, proto=3) as conn:
        reader = hiredis.Reader()
        reader.feed(conn.cmd('COMMAND', 'DOCS', name))
        return reader.gets()[name.encode()]


@pytest.mark.parametrize('name', ['memory', *(f'memory|{s}' for s in SUBCOMMANDS)])
def test_command_docs_summary_matches_redis(server, redis_ref, name):
    ours, theirs = _docs(server.port, name), _docs(redis_ref[1], name)
    for field in (b'summary', b'since', b'group'):
        assert ours.get(field) == theirs.get(field), field


@pytest.mark.parametrize('proto', [2, 3])
def test_getkeys(server, redis_ref, proto):
    cmd = ('COMMAND', 'GETKEYS', 'MEMORY', 'USAGE', 'k', 'SAMPLES', '3')
    assert _raw(server.port, proto, *cmd) == _raw(redis_ref[1], proto, *cmd)


def test_memory_usage_in_a_script_and_multi(both):
    for c in both:
        c.set('k', 'v')
        assert c.eval("return redis.call('memory', 'usage', KEYS[1])", 1, 'k') > 0
        p = c.pipeline(transaction=True)
        p.execute_command('MEMORY', 'USAGE', 'k')
        p.execute_command('MEMORY', 'USAGE', 'missing')
        got = p.execute()
        assert got[0] > 0 and got[1] is None
        with pytest.raises(redis.ResponseError):
            c.eval("return redis.call('memory', 'usage', KEYS[1], 'samples', 'x')", 1, 'k')


def test_scan_snapshots_count_in_used_memory(make_server):
    """A SCAN walk reads a snapshot of one shard's keys at a time (8 bytes a key), taken at
    its second call in the shard; walks begun one after another each take their own.
    What the kept walks hold is in used_memory."""
    srv = make_server()
    r = redis.Redis('127.0.0.1', srv.port)
    r.execute_command('DEBUG', 'POPULATE', 200_000)
    before = used_memory(r)
    for _ in range(64):
        cursor, _ = r.scan(0)
        r.scan(cursor)
    per_shard = 8 * 200_000 // 16  # the default 16 shards
    assert used_memory(r) - before > 0.8 * 64 * per_shard
    r.close()
