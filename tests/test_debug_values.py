"""DEBUG's subcommands that describe stored values (OBJECT, SDSLEN, LISTPACK, QUICKLIST,
QUICKLIST-PACKED-THRESHOLD, HTSTATS, HTSTATS-KEY), compared with redis-server 7.0.15 where
their replies do not depend on C pointers and allocations."""

import re

import pytest
import redis

from conftest import WAIT, assert_same

pytestmark = pytest.mark.differential


def test_quicklist_packed_threshold_replies_as_redis(both):
    assert_same(
        both,
        [
            ('DEBUG', 'QUICKLIST-PACKED-THRESHOLD', '1b'),
            ('DEBUG', 'QUICKLIST-PACKED-THRESHOLD', '100'),
            ('DEBUG', 'QUICKLIST-PACKED-THRESHOLD', '1kb'),
            ('DEBUG', 'QUICKLIST-PACKED-THRESHOLD', '-1'),
            ('DEBUG', 'QUICKLIST-PACKED-THRESHOLD', '4gb'),
            ('DEBUG', 'QUICKLIST-PACKED-THRESHOLD', 'abc'),
            ('DEBUG', 'QUICKLIST-PACKED-THRESHOLD', '0'),
            ('DEBUG', 'QUICKLIST-PACKED-THRESHOLD'),
        ],
    )


def test_listpack_and_quicklist_replies_as_redis(both):
    assert_same(
        both,
        [
            ('RPUSH', 'l', 'a', 'b'),
            ('HSET', 'h', 'f', 'v'),
            ('ZADD', 'z', 1, 'm'),
            ('SADD', 's', 'x'),
            ('SET', 'str', 'v'),
            ('DEBUG', 'LISTPACK', 'h'),
            ('DEBUG', 'LISTPACK', 'z'),
            ('DEBUG', 'LISTPACK', 'l'),
            ('DEBUG', 'LISTPACK', 's'),
            ('DEBUG', 'LISTPACK', 'nokey'),
            ('DEBUG', 'QUICKLIST', 'l'),
            ('DEBUG', 'QUICKLIST', 'l', '1'),
            ('DEBUG', 'QUICKLIST', 'h'),
            ('DEBUG', 'QUICKLIST', 'nokey'),
            ('DEBUG', 'SDSLEN', 'h'),
            ('DEBUG', 'SDSLEN', 'nokey'),
            ('DEBUG', 'HTSTATS-KEY', 'h'),
            ('DEBUG', 'HTSTATS-KEY', 'z'),
            ('DEBUG', 'HTSTATS-KEY', 'l'),
            ('DEBUG', 'HTSTATS-KEY', 'nokey'),
            ('DEBUG', 'HTSTATS', 'x'),
            ('DEBUG', 'HTSTATS', '16'),
            ('DEBUG', 'HTSTATS', '-1'),
            ('DEBUG', 'SET-SKIP-CHECKSUM-VALIDATION', '0'),
        ],
    )


def test_stringmatch_test_replies_as_redis(server, redis_ref):
    """DEBUG STRINGMATCH-TEST runs Redis's glob fuzzer, seconds of work for redis-server on
    a busy machine: past redis-py's default 5 s socket timeout (it failed CI so with both
    cores busy), so these clients wait as long as the suite waits for anything."""
    ours = server.client(socket_timeout=WAIT)
    theirs = redis.Redis(*redis_ref, socket_timeout=WAIT)
    try:
        assert_same((ours, theirs), [('DEBUG', 'STRINGMATCH-TEST')])
    finally:
        ours.close()
        theirs.close()


STATS = re.compile(
    rb'Hash table 0 stats \(main hash table\):\n'
    rb' table size: (\d+)\n'
    rb' number of elements: (\d+)\n'
    rb' different slots: (\d+)\n'
    rb' max chain length: (\d+)\n'
    rb' avg chain length \(counted\): \d+\.\d\d\n'
    rb' avg chain length \(computed\): \d+\.\d\d\n'
    rb' Chain length distribution:\n'
    rb'(   \d+: \d+ \(\d+\.\d\d%\)\n)+'
)


def test_htstats_key_describes_a_hash_table(r):
    r.sadd('s', *[f'm{i}' for i in range(100)])
    r.zadd('z', {f'm{i}': i for i in range(200)})
    for key, count in (('s', 100), ('z', 200)):
        text = r.execute_command('DEBUG', 'HTSTATS-KEY', key)
        m = STATS.fullmatch(text)
        assert m, text
        size, n, slots, longest = (int(x) for x in m.groups()[:4])
        assert n == count
        assert size >= n and size & (size - 1) == 0
        assert 1 <= slots <= n and longest >= 1


def test_htstats_of_a_database(r):
    r.execute_command('DEBUG', 'POPULATE', 10)
    r.expire('key:1', 100)
    text = r.execute_command('DEBUG', 'HTSTATS', 0)
    head, expires = text.split(b'[Expires HT]\n')
    assert head.startswith(b'[Dictionary HT]\n')
    assert STATS.fullmatch(head[len(b'[Dictionary HT]\n') :]).group(2) == b'10'
    assert STATS.fullmatch(expires).group(2) == b'1'
    r.execute_command('SELECT', 5)
    assert r.execute_command('DEBUG', 'HTSTATS', 5) == (
        b'[Dictionary HT]\nHash table 0 stats (main hash table):\n'
        b'No stats available for empty dictionaries\n'
        b'[Expires HT]\nHash table 0 stats (main hash table):\n'
        b'No stats available for empty dictionaries\n'
    )


def _fields(line):
    return dict(f.split(':', 1) for f in line.decode().split(' ')[1:] if ':' in f)


def test_debug_object_of_a_list_has_quicklist_fields(both):
    for c in both:
        c.rpush('l', *[f'e{i}' for i in range(10)])
    got, want = (_fields(c.execute_command('DEBUG', 'OBJECT', 'l')) for c in both)
    for name in ('encoding', 'ql_nodes', 'ql_avg_node', 'ql_listpack_max', 'ql_compressed'):
        assert got[name] == want[name], name
    assert got['ql_uncompressed_size'] == want['ql_uncompressed_size']


def test_debug_object_address_survives_incr_in_place(r):
    """INCR of an unshared integer changes it in place: DEBUG OBJECT's address stays."""
    r.set('foo', 20000)
    r.incr('foo')
    before = r.execute_command('DEBUG', 'OBJECT', 'foo').split()[1]
    r.incr('foo')
    after = r.execute_command('DEBUG', 'OBJECT', 'foo').split()[1]
    assert before.startswith(b'at:') and before == after


def test_debug_help_is_redis_help_without_jemalloc(both):
    ours, ref = both
    want = [line for line in ref.execute_command('DEBUG', 'HELP') if b'MALLCTL' not in line]
    want = [
        line
        for line in want
        if line
        not in (
            b'    Get or set a malloc tuning integer.',
            b'    Get or set a malloc tuning string.',
        )
    ]
    assert ours.execute_command('DEBUG', 'HELP') == want


def test_sdslen_lengths(r):
    r.set('str', 'hello')
    r.set('big', 'x' * 100)
    r.set('num', 12)
    assert r.execute_command('DEBUG', 'SDSLEN', 'str').startswith(
        b'key_sds_len:3, key_sds_avail:0, key_zmalloc: '
    )
    assert b'val_sds_len:100, val_sds_avail:0, val_zmalloc: ' in r.execute_command(
        'DEBUG', 'SDSLEN', 'big'
    )
    with pytest.raises(redis.ResponseError, match='Not an sds encoded string'):
        r.execute_command('DEBUG', 'SDSLEN', 'num')


def test_change_repl_id_gives_a_new_replication_id(r):
    before = r.info('replication')['master_replid']
    run_id = r.info('server')['run_id']
    assert r.execute_command('DEBUG', 'CHANGE-REPL-ID') == b'OK'
    assert r.info('replication')['master_replid'] not in (before, run_id)
    assert r.info('server')['run_id'] == run_id
