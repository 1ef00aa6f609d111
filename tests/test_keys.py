"""Keyspace commands: DEL, UNLINK, EXISTS, TYPE, TOUCH, KEYS, SCAN, RANDOMKEY, RENAME,
RENAMENX, MOVE, COPY, OBJECT, DUMP, RESTORE.

Differential against redis-server where replies are deterministic (KEYS and SCAN results
are compared as sets: their order is the server's own)."""

import collections
import random
import time

import pytest
import redis

from conftest import (
    assert_same,
    assert_same_events,
    assert_ttl,
    capture_events,
    in_time,
    now_ms,
    run_all,
)
from rawconn import RawConn
from store.rdb import crc64, dump_payload

GLOB_KEYS = [
    'hello',
    'hallo',
    'hxllo',
    'hllo',
    'heeeello',
    'a*b',
    'a?b',
    'a[b',
    'ab',
    'foo:1',
    'foo:22',
    'bar',
    'x\\y',
    'key:{tag}',
    'H',
]


def test_arity_errors(both):
    assert_same(
        both,
        [
            ('DEL',),
            ('UNLINK',),
            ('EXISTS',),
            ('TYPE',),
            ('TYPE', 'a', 'b'),
            ('TOUCH',),
            ('KEYS',),
            ('KEYS', 'a', 'b'),
            ('SCAN',),
            ('RANDOMKEY', 'x'),
            ('RENAME', 'a'),
            ('RENAMENX', 'a', 'b', 'c'),
            ('MOVE', 'a'),
            ('COPY', 'a'),
            ('OBJECT',),
            ('OBJECT', 'ENCODING'),
            ('OBJECT', 'ENCODING', 'a', 'b'),
            ('OBJECT', 'HELP', 'x'),
            ('OBJECT', 'FREQ'),
            ('OBJECT', 'nosuch', 'k'),
            ('OBJECT', 'nosuch'),
            ('DUMP',),
            ('DUMP', 'a', 'b'),
            ('RESTORE', 'a', '0'),
        ],
    )


def test_del_unlink_exists_touch(both):
    assert_same(
        both,
        [
            ('SET', 'a', '1'),
            ('SET', 'b', '2'),
            ('SET', 'c', '3'),
            ('EXISTS', 'a'),
            ('EXISTS', 'a', 'a', 'nokey', 'b'),
            ('TOUCH', 'a', 'a', 'nokey'),
            ('DEL', 'a', 'a', 'nokey'),
            ('EXISTS', 'a'),
            ('UNLINK', 'b', 'c', 'b'),
            ('DEL', 'nokey'),
            ('EXISTS', 'b', 'c'),
            ('TOUCH', 'b'),
        ],
    )


def test_expired_keys_are_gone_for_del_and_exists(r):
    r.set('k', 'v', px=10)
    time.sleep(0.03)
    assert r.exists('k') == 0
    r.set('k', 'v', px=10)
    time.sleep(0.03)
    assert r.delete('k') == 0
    assert r.touch('k') == 0


def test_type(both):
    assert_same(
        both,
        [('SET', 'k', 'v'), ('TYPE', 'k'), ('TYPE', 'nokey'), ('SET', 'n', '12'), ('TYPE', 'n')],
    )


def test_type_reply_is_simple_string(server):
    with RawConn(server.port) as c:
        c.send(b'SET tk v\r\nTYPE tk\r\nTYPE nokey\r\nDEL tk\r\n')
        assert c.read_replies(4) == b'+OK\r\n+string\r\n+none\r\n:1\r\n'


@pytest.mark.parametrize(
    'pattern',
    [
        '*',
        'h?llo',
        'h*llo',
        'h[ae]llo',
        'h[^e]llo',
        'h[a-b]llo',
        'a\\*b',
        'a\\?b',
        'a[[]b',
        'foo:*',
        '*:{tag}',
        'x\\\\y',
        'nomatch*',
        '',
        '[',
        'H*',
        'h',
        '*o',
        'h*e*l*o',
    ],
)
def test_keys_patterns(both, pattern):
    ours, theirs = both
    for c in both:
        for k in GLOB_KEYS:
            c.set(k, 'v')
    assert sorted(ours.keys(pattern)) == sorted(theirs.keys(pattern))


@pytest.mark.parametrize(
    'pattern, key',
    [
        ('*?' * 1000, 'a' * 1000),
        ('*?' * 1001, 'a' * 1001),
        ('*a' * 1000 + '*', 'a' * 1000),
        ('*a' * 1001 + '*', 'a' * 1001),
        ('*?' * 50000, 'a' * 50000),
    ],
    ids=['1000-stars', '1001-stars', '1000-and-trailing', '1001-and-trailing', '50000-stars'],
)
def test_keys_gives_up_past_1000_nested_stars(both, pattern, key):
    """Redis's matcher stops recursing (no match) past 1,000 inner stars: KEYS with such a
    pattern finds nothing even where the glob would match."""
    ours, theirs = both
    for c in both:
        c.set(key, 1)
    assert ours.keys(pattern) == theirs.keys(pattern)


def test_keys_skips_expired_and_other_dbs(r):
    r.set('live', 'v')
    r.set('dying', 'v', px=10)
    r.execute_command('SELECT', 1)
    r.set('other', 'v')
    r.execute_command('SELECT', 0)
    time.sleep(0.02)
    assert r.keys('*') == [b'live']
    assert r.keys() == [b'live']


def test_scan_errors(both):
    assert_same(
        both,
        [
            ('SCAN', 'abc'),
            ('SCAN', ' 0'),
            ('SCAN', '0 '),
            ('SCAN', '1.5'),
            ('SCAN', '+'),
            ('SCAN', '18446744073709551616'),
            ('SCAN', '0x10'),
            ('SCAN', '0', 'COUNT', '0'),
            ('SCAN', '0', 'COUNT', '-1'),
            ('SCAN', '0', 'COUNT', 'x'),
            ('SCAN', '0', 'COUNT'),
            ('SCAN', '0', 'MATCH'),
            ('SCAN', '0', 'TYPE'),
            ('SCAN', '0', 'FOO', 'bar'),
            ('SCAN', '0', 'MATCH', '*', 'COUNT'),
            # on an empty db every well-formed cursor ends the scan
            ('SCAN', '0'),
            ('SCAN', ''),
            ('SCAN', '+0'),
            ('SCAN', '-0'),
            ('SCAN', '0', 'count', '5', 'match', 'x', 'type', 'string'),
        ],
    )


def full_scan(client, **kw):
    cursor, seen, calls = 0, [], 0
    while True:
        cursor, batch = client.scan(cursor, **kw)
        seen.extend(batch)
        calls += 1
        if cursor == 0:
            return seen, calls


def test_scan_full_iteration_returns_each_key_once(r):
    keys = [f'key:{i}'.encode() for i in range(500)]
    for k in keys:
        r.set(k, 'v')
    seen, calls = full_scan(r, count=20)
    assert sorted(seen) == sorted(keys)
    assert 20 <= calls <= 60
    seen, calls = full_scan(r, count=1000)
    assert sorted(seen) == sorted(keys) and calls == 1
    seen, _ = full_scan(r)
    assert sorted(seen) == sorted(keys)


def test_scan_match_type_and_count(both):
    ours, theirs = both
    for c in both:
        for k in GLOB_KEYS:
            c.set(k, 'v')
    for kw in (
        {'match': 'h*llo'},
        {'match': 'foo:*', 'count': 3},
        {'_type': 'string'},
        {'_type': 'STRING'},
        {'_type': 'list'},
        {'_type': 'nosuchtype'},
        {'match': 'h[ae]llo', '_type': 'string', 'count': 2},
    ):
        assert sorted(full_scan(ours, **kw)[0]) == sorted(full_scan(theirs, **kw)[0]), kw


def test_scan_count_bounds_examined_keys(r):
    for i in range(100):
        r.set(f'k{i}', 'v')
    cursor, batch = r.scan(0, count=5)
    assert cursor != 0 and 1 <= len(batch) <= 10
    cursor, batch = r.scan(0, match='nomatch', count=5)
    assert cursor != 0 and batch == []


def test_scan_guarantee_under_concurrent_writes(r):
    """Keys present for the whole iteration are returned exactly once, even while other
    keys are deleted and added between calls; deleted keys are never returned."""
    stable = {f's:{i}'.encode() for i in range(300)}
    churn = [f'c:{i}'.encode() for i in range(300)]
    for k in stable:
        r.set(k, 'v')
    for k in churn:
        r.set(k, 'v')
    cursor, seen, step = 0, [], 0
    deleted = set()
    while True:
        cursor, batch = r.scan(cursor, count=15)
        assert not deleted & set(batch)
        seen.extend(batch)
        # delete churn keys (some already returned, some not) and add new ones
        for k in churn[step * 10 : step * 10 + 10]:
            r.delete(k)
            deleted.add(k)
        r.set(f'new:{step}', 'v')
        step += 1
        if cursor == 0:
            break
    stable_seen = [k for k in seen if k in stable]
    assert sorted(stable_seen) == sorted(stable)  # each once
    # a concurrent SCAN 0 in between does not disturb an iteration in progress
    cursor, first = r.scan(0, count=50)
    r.scan(0, count=50)
    for k in stable:
        if k.endswith(b'7'):
            r.delete(k)
    rest, _ = full_scan_from(r, cursor)
    survivors = {k for k in stable if not k.endswith(b'7')}
    assert survivors <= set(first) | set(rest)


def full_scan_from(client, cursor):
    seen, calls = [], 0
    while True:
        cursor, batch = client.scan(cursor, count=50)
        seen.extend(batch)
        calls += 1
        if cursor == 0:
            return seen, calls


def test_scan_skips_expired_and_foreign_cursors(r):
    r.set('dying', 'v', px=10)
    r.set('live', 'v')
    time.sleep(0.02)
    assert full_scan(r)[0] == [b'live']
    # a cursor we never issued is still well-formed: it ends or continues, never errors
    cursor, batch = r.scan(2**64 - 1)
    assert cursor == 0 and batch == []
    assert r.execute_command('SCAN', '-1') == (0, [])


def test_scan_reply_bytes_as_redis(server, redis_ref):
    """SCAN's reply is encoded by SCAN itself: the bytes are Redis's in RESP2 and RESP3,
    for a short key, a key of 2,000 bytes, a binary key and no key; and inside MULTI/EXEC
    and a script, which see the same values."""
    long_key = b'L' * 2000
    commands = [
        ('SCAN', '0'),
        ('SET', 'k', 'v'),
        ('SCAN', '0'),
        ('DEL', 'k'),
        ('SET', long_key, 'v'),
        ('SCAN', '0', 'COUNT', '100'),
        ('DEL', long_key),
        ('SET', b'\x00\r\n\xff', 'v'),
        ('SCAN', '0', 'MATCH', '*'),
        ('MULTI',),
        ('SCAN', '0'),
        ('EXEC',),
        ('EVAL', "return redis.call('SCAN', '0')", '0'),
        ('SCAN', '0', 'MATCH', 'nomatch'),
    ]
    for proto in (2, 3):
        got = []
        for port in (server.port, redis_ref[1]):
            with RawConn(port) as c:
                c.cmd('HELLO', str(proto))
                c.cmd('FLUSHALL')
                got.append([c.cmd(*cmd) for cmd in commands])
                c.cmd('FLUSHALL')
        assert got[0] == got[1], proto


def test_scan_guarantee_while_views_are_built(r):
    """Over 200,000 keys (each shard's snapshot taken as the walk reaches it): keys
    present for the whole walk come back exactly once, with keys deleted and added
    between calls everywhere in the keyspace and another client's SCAN 0 in the middle;
    a key is never returned once deleted; and with COUNT 10 the walk examines about 10
    keys per call."""
    n = 200_000
    pipe = r.pipeline(transaction=False)
    for j in range(0, n, 5000):
        pipe.mset({b'big:%d' % i: b'v' for i in range(j, j + 5000)})
    pipe.execute()
    doomed = [b'big:%d' % i for i in range(0, n, 7)]  # deleted during the walk
    stable = {b'big:%d' % i for i in range(n) if i % 7}
    other = r.connection_pool.get_connection()  # another client
    cursor, seen, step, deleted = 0, [], 0, set()
    while True:
        cursor, batch = r.scan(cursor, count=1000)
        assert not deleted & set(batch)
        seen += batch
        chunk = doomed[step * 300 : step * 300 + 300]
        if chunk:
            r.delete(*chunk)
            deleted.update(chunk)
        r.mset({b'new:%d:%d' % (step, i): b'v' for i in range(50)})
        if step == 60:
            other.send_command('SCAN', '0')
            other.read_response()
        step += 1
        if cursor == 0:
            break
    r.connection_pool.release(other)
    counts = {}
    for k in seen:
        counts[k] = counts.get(k, 0) + 1
    assert {k for k in stable if counts.get(k) != 1} == set()
    assert max(counts.values()) == 1
    # COUNT 10 over the same keyspace: calls return about 10 keys, never fewer than 10
    # but at the end (all keys match), and the walk ends
    r.delete(*[k for k in r.scan_iter(match='new:*', count=1000)])
    cursor, calls, total = 0, 0, 0
    while True:
        cursor, batch = r.scan(cursor)
        calls += 1
        total += len(batch)
        assert 10 <= len(batch) <= 12 or cursor == 0
        if cursor == 0:
            break
    assert total == len(stable) and calls <= len(stable) // 10 + 16


def test_scan_walk_through_churn_restarts_and_retries(r):
    """A walk with the default COUNT over 100,000 keys while the keyspace changes under
    it, as a client sees it: a third of the keys are deleted, half as many new ones added
    (the shard dicts resize) and some set to expire during the walk; another client
    starts its own walk midway and overtakes the first (COUNT 200: it reaches shards
    whose snapshots the first walk had taken before it began); now and then a reply is
    taken as lost and its cursor sent again. Keys present for a whole walk (for the
    second, also the new keys added before it began) come back exactly once in it, and a
    key never comes back once deleted or expired."""
    n, b_start = 100_000, 3_000
    pipe = r.pipeline(transaction=False)
    for j in range(0, n, 10_000):
        pipe.mset({b'k:%d' % i: b'v' for i in range(j, j + 10_000)})
    pipe.execute()
    doomed = [b'k:%d' % i for i in range(0, n, 3)]
    random.Random(13).shuffle(doomed)
    stable = {b'k:%d' % i for i in range(n) if i % 3}
    other = redis.Redis(port=r.connection_pool.connection_kwargs['port'])
    deleted, expiring = set(), {}
    seen = {'a': [], 'b': []}
    cursors = {'a': 0, 'b': None}
    calls = 0
    # expired keys stay in the keyspace until a lookup finds them (SCAN's own filter)
    r.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
    try:
        while cursors['a'] is not None or cursors['b'] is not None:
            for name, client, count in (('a', r, None), ('b', other, 200)):
                if cursors[name] is None:
                    continue
                sent = time.monotonic()
                cursor, batch = client.scan(cursors[name], count=count)
                if calls % 997 == 0:  # as if the reply was lost: the same cursor again
                    assert not deleted & set(batch)
                    cursor, batch = client.scan(cursors[name], count=count)
                assert not deleted & set(batch)
                gone = {k for k in batch if k in expiring and expiring[k] < sent}
                assert not gone
                seen[name] += batch
                cursors[name] = cursor or None
            chunk = doomed[calls * 4 : calls * 4 + 4]
            if chunk:
                r.delete(*chunk)
                deleted.update(chunk)
            r.mset({b'new:%d:%d' % (calls, i): b'v' for i in range(5)})
            if calls % 50 == 0:  # keys that expire during the walk (100 ms, 10 ms of margin)
                pipe = r.pipeline(transaction=False)
                for i in range(10):
                    pipe.set(b'ttl:%d:%d' % (calls, i), b'v', px=100)
                pipe.execute()
                for i in range(10):
                    expiring[b'ttl:%d:%d' % (calls, i)] = time.monotonic() + 0.11
            calls += 1
            if calls == b_start:
                cursors['b'] = 0
    finally:
        r.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '1')
    other.close()
    # b's walk began after the first new keys were added: those are there for all of it
    before_b = {b'new:%d:%d' % (c, i) for c in range(b_start) for i in range(5)}
    for name, present in (('a', stable), ('b', stable | before_b)):
        counts = collections.Counter(seen[name])
        assert {k for k in present if counts[k] != 1} == set(), name
        assert max(counts.values()) == 1, name
    assert len(deleted) == len(doomed)


def test_scan_forgotten_cursor_misses_no_key(r):
    """More walks than the server remembers: the first walk's cursor is forgotten, and
    its next call restarts the shard the cursor names. Keys may then come twice (Redis's
    guarantee allows it), but every key present for the whole walk comes back and a
    deleted one does not."""
    keys = {b'f:%d' % i for i in range(20_000)}
    r.mset(dict.fromkeys(keys, b'v'))
    cursor, seen = r.scan(0, count=500)
    assert cursor != 0
    for _ in range(100):  # other walks, each one call: more cursors than are kept
        assert r.scan(0, count=10)[0] != 0
    # deleted: keys returned already (a fresh snapshot of their shard is shorter before
    # the cursor's index) and keys not returned yet
    gone = set(seen[:300]) | set(sorted(keys - set(seen))[:1000])
    r.delete(*gone)
    rest = []
    while cursor != 0:
        cursor, batch = r.scan(cursor, count=500)
        rest += batch
    assert not gone & set(rest)
    assert set(seen + rest) == (keys - gone) | set(seen)
    # a walk whose cursors are remembered returns each key once
    assert sorted(r.scan_iter(count=500)) == sorted(keys - gone)


def test_scan_first_call_of_a_shard_then_changes(r):
    """A shard's first call reads its keys straight from the keyspace, the snapshot comes
    with the next call: keys it returned then deleted, deleted and set again, keys not
    returned yet deleted, new keys, and the next call's cursor sent twice (a lost reply).
    Keys present all along come back exactly once, deleted ones never after deletion,
    and both replies to the repeated cursor agree."""
    keys = [b'p:%d' % i for i in range(2000)]
    r.mset(dict.fromkeys(keys, b'v'))
    cursor, first = r.scan(0, count=8)
    assert cursor != 0 and len(first) == 8
    r.delete(first[0], first[1])  # returned, then gone
    r.delete(first[2])
    r.set(first[2], b'again')  # returned, gone, back: may come twice
    unseen = [k for k in keys if k not in set(first)]
    gone = set(unseen[:50])  # not returned yet, gone before the next call
    r.delete(*gone)
    r.mset({b'new:%d' % i: b'v' for i in range(100)})
    cursor2, second = r.scan(cursor, count=8)
    assert r.scan(cursor, count=8) == (cursor2, second)  # the same cursor again
    seen = first + second
    cursor = cursor2
    while cursor != 0:
        cursor, batch = r.scan(cursor, count=8)
        seen += batch
    later = second + seen[len(first) + len(second) :]
    assert not (gone | {first[0], first[1]}) & set(later)
    counts = collections.Counter(seen)
    present_all_along = set(keys) - gone - {first[0], first[1], first[2]}
    assert {k for k in present_all_along if counts[k] != 1} == set()


def test_scan_more_walks_at_once_than_are_kept_all_end(r):
    """100 walks taking turns, one call each, more than the server remembers: each one is
    forgotten between two of its calls, yet every walk ends, in at most two calls a
    shard, with every key."""
    keys = {b'w:%d' % i for i in range(3000)}
    r.mset(dict.fromkeys(keys, b'v'))
    walks = [[0, set(), 0] for _ in range(100)]  # cursor, keys seen, calls
    for walk in walks:
        walk[0], batch = r.scan(0, count=20)
        walk[1].update(batch)
        walk[2] = 1
    while any(walk[0] for walk in walks):
        for walk in walks:
            if walk[0]:
                walk[0], batch = r.scan(walk[0], count=20)
                walk[1].update(batch)
                walk[2] += 1
                assert walk[2] <= 2 * 16 + 2, 'a forgotten walk does not end'
    assert all(walk[1] == keys for walk in walks)


def test_randomkey(r):
    assert r.randomkey() is None
    keys = {f'k{i}'.encode() for i in range(20)}
    for k in keys:
        r.set(k, 'v')
    got = {r.randomkey() for _ in range(200)}
    assert got <= keys and len(got) > 5
    r.flushall()
    r.set('dying', 'v', px=10)
    time.sleep(0.02)
    assert r.randomkey() is None


def test_randomkey_expires_what_it_draws_until_a_live_key(both):
    """dbRandomKey: keys past their deadline that RANDOMKEY draws are expired and others
    drawn, however many there are, and no hit or miss is counted."""
    for c in both:
        c.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
    try:
        for c in both:
            p = c.pipeline()
            for i in range(2000):
                p.set(f'k{i}', 'v', px=1)
            p.set('live', 'v')
            p.execute()
        time.sleep(0.02)
        for c in both:
            c.config_resetstat()
            assert c.randomkey() == b'live'
            stats = c.info('stats')
            assert (stats['keyspace_hits'], stats['keyspace_misses']) == (0, 0)
            assert 0 < stats['expired_keys'] <= 2000
    finally:
        for c in both:
            c.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '1')


def test_rename_and_renamenx(both):
    assert_same(
        both,
        [
            ('RENAME', 'nokey', 'x'),
            ('RENAMENX', 'nokey', 'x'),
            ('RENAME', 'nokey', 'nokey'),
            ('RENAMENX', 'nokey', 'nokey'),
            ('SET', 'a', '1'),
            ('RENAME', 'a', 'a'),
            ('RENAMENX', 'a', 'a'),
            ('GET', 'a'),
            ('RENAME', 'a', 'b'),
            ('EXISTS', 'a'),
            ('GET', 'b'),
            ('SET', 'c', '3'),
            ('RENAMENX', 'b', 'c'),
            ('GET', 'b'),
            ('GET', 'c'),
            ('RENAME', 'b', 'c'),
            ('GET', 'c'),
            ('EXISTS', 'b'),
            ('RENAMENX', 'c', 'd'),
            ('GET', 'd'),
            ('EXISTS', 'c'),
        ],
    )


def test_rename_moves_ttl(r):
    r.set('a', '1')
    t0 = now_ms()
    r.expire('a', 100)
    r.set('b', '2')
    r.expire('b', 500)
    assert r.rename('a', 'b')
    assert_ttl(r, 'b', 100, t0)
    r.set('c', '3')
    r.expire('c', 300)
    r.set('d', '4')
    assert r.rename('d', 'c')
    assert r.ttl('c') == -1  # destination's TTL is replaced

    def setup(deadline):
        r.delete('e', 'f')
        r.set('e', '5', pxat=deadline)
        return r.renamenx('e', 'f')

    deadline, renamed = in_time(setup, 20)
    assert renamed == 1
    time.sleep(max(0, deadline + 30 - now_ms()) / 1000)
    assert r.exists('e', 'f') == 0  # the deadline moved with the value
    r.set('g', 'v', px=10)
    time.sleep(0.02)
    with pytest.raises(redis.ResponseError, match='no such key'):
        r.rename('g', 'h')


def test_move(both):
    assert_same(
        both,
        [
            ('MOVE', 'a', '0'),
            ('MOVE', 'a', 'x'),
            ('MOVE', 'a', '16'),
            ('MOVE', 'a', '-1'),
            ('MOVE', 'a', '2147483648'),
            ('MOVE', 'a', '-2147483649'),
            ('MOVE', 'a', '99999999999999999999'),
            ('MOVE', 'nokey', '1'),
            ('SET', 'a', '1'),
            ('MOVE', 'a', '1'),
            ('EXISTS', 'a'),
            ('SELECT', '1'),
            ('GET', 'a'),
            ('SET', 'b', 'in1'),
            ('SELECT', '0'),
            ('SET', 'b', 'in0'),
            ('MOVE', 'b', '1'),
            ('GET', 'b'),
            ('SELECT', '1'),
            ('GET', 'b'),
            ('MOVE', 'a', '1'),
            ('MOVE', 'a', '0'),
            ('SELECT', '0'),
            ('GET', 'a'),
        ],
    )


def test_move_keeps_ttl(r):
    r.set('k', 'v')
    t0 = now_ms()
    r.expire('k', 100)
    assert r.move('k', 3) is True
    r.execute_command('SELECT', 3)
    assert_ttl(r, 'k', 100, t0)
    r.execute_command('SELECT', 0)


def test_copy(both):
    assert_same(
        both,
        [
            ('COPY', 'a', 'a'),
            ('COPY', 'nokey', 'x'),
            ('SET', 'a', '1'),
            ('COPY', 'a', 'a'),
            ('COPY', 'a', 'a', 'DB', '0'),
            ('COPY', 'a', 'a', 'DB', '1'),
            ('COPY', 'a', 'b', 'DB'),
            ('COPY', 'a', 'b', 'FOO'),
            ('COPY', 'a', 'b', 'DB', 'x'),
            ('COPY', 'a', 'b', 'DB', '16'),
            ('COPY', 'a', 'b', 'DB', '-1'),
            ('COPY', 'a', 'b', 'DB', '4294967296'),
            ('COPY', 'a', 'b', 'REPLACE', 'x'),
            ('COPY', 'a', 'b'),
            ('GET', 'b'),
            ('SET', 'a', '2'),
            ('COPY', 'a', 'b'),
            ('GET', 'b'),
            ('COPY', 'a', 'b', 'replace'),
            ('GET', 'b'),
            ('COPY', 'a', 'c', 'db', '2', 'REPLACE'),
            ('SELECT', '2'),
            ('GET', 'c'),
            ('SET', 'c', 'x'),
            ('SELECT', '0'),
            ('COPY', 'a', 'c', 'DB', '2'),
            ('COPY', 'a', 'c', 'DB', '3', 'DB', '2', 'REPLACE'),
            ('SELECT', '2'),
            ('GET', 'c'),
            ('SELECT', '3'),
            ('EXISTS', 'c'),
            ('SELECT', '0'),
            ('EXISTS', 'a'),
        ],
    )


def test_copy_keeps_ttl(r):
    r.set('a', '1')
    t0 = now_ms()
    r.expire('a', 100)
    r.set('b', 'old')
    r.expire('b', 5)
    assert r.copy('a', 'b', replace=True) is True
    assert_ttl(r, 'b', 100, t0)
    r.set('c', 'v')
    assert r.copy('c', 'b', replace=True) is True
    assert r.ttl('b') == -1


def test_object_encoding_refcount(both):
    values = [
        '1',
        '0',
        '-1',
        '9999',
        '10000',
        '-9223372036854775808',
        '9223372036854775807',
        '9223372036854775808',
        '12345678901234567890',
        '01',
        '+1',
        ' 1',
        '1 ',
        '1.5',
        'abc',
        'x' * 44,
        'x' * 45,
        '',
        '-0',
        '3' * 20,
    ]
    cmds = []
    for i, v in enumerate(values):
        cmds += [
            ('SET', f'k{i}', v),
            ('OBJECT', 'ENCODING', f'k{i}'),
            ('OBJECT', 'REFCOUNT', f'k{i}'),
        ]
    cmds += [
        ('OBJECT', 'ENCODING', 'nokey'),
        ('OBJECT', 'REFCOUNT', 'nokey'),
        ('OBJECT', 'IDLETIME', 'nokey'),
        ('OBJECT', 'FREQ', 'nokey'),
        ('OBJECT', 'FREQ', 'k0'),
        ('OBJECT', 'freq', 'k0'),
        ('OBJECT', 'HELP'),
        ('object', 'help'),
    ]
    assert_same(both, cmds)


def test_object_idletime_freq_and_lfu(make_server):
    r = make_server().client()
    r.set('k', 'v')
    assert r.object('idletime', 'k') == 0
    with pytest.raises(redis.ResponseError, match='LFU maxmemory policy is not selected'):
        r.object('freq', 'k')
    r.close()
    r = make_server(maxmemory_policy='allkeys-lfu').client()
    r.set('k', 'v')
    assert 0 <= r.object('freq', 'k') <= 255
    with pytest.raises(redis.ResponseError) as e:
        r.object('idletime', 'k')
    assert str(e.value) == (
        'An LFU maxmemory policy is selected, idle time not tracked. '
        'Please note that when switching between policies at runtime '
        'LRU and LFU data will take some time to adjust.'
    )
    assert r.object('freq', 'nokey') is None
    r.close()


def test_object_refcount_unshared_with_lru_maxmemory(make_server):
    r = make_server(maxmemory='100mb', maxmemory_policy='allkeys-lru').client()
    r.set('k', '5')
    assert r.object('refcount', 'k') == 1
    r.close()


def test_dump_restore_round_trip(r):
    assert r.dump('nokey') is None
    for v in (b'', b'hello', b'12', bytes(range(256)) * 10):
        r.set('src', v)
        payload = r.dump('src')
        assert isinstance(payload, bytes)
        assert r.restore('dst', 0, payload) == b'OK'
        assert r.get('dst') == v and r.ttl('dst') == -1
        r.delete('dst')


def test_restore_ttl_replace_absttl(r):
    r.set('src', 'v')
    payload = r.dump('src')
    t0 = now_ms()
    assert r.restore('a', 100_000, payload)
    pttl = r.pttl('a')
    assert t0 + 100_000 - now_ms() <= pttl <= 100_000
    with pytest.raises(redis.ResponseError) as e:
        r.restore('a', 0, payload)
    assert str(e.value) == 'BUSYKEY Target key name already exists.'
    assert r.restore('a', 0, payload, replace=True)
    assert r.ttl('a') == -1
    at = now_ms() + 50_000
    assert r.restore('b', at, payload, absttl=True)
    assert r.execute_command('PEXPIRETIME', 'b') == at
    # a deadline in the past creates nothing (and with REPLACE deletes the old key)
    assert r.restore('c', 1, payload, absttl=True)
    assert r.exists('c') == 0
    assert r.restore('b', 1000, payload, absttl=True, replace=True)
    assert r.exists('b') == 0
    assert r.execute_command('RESTORE', 'd', 9223372036854775807, payload) == b'OK'
    assert r.exists('d') == 0  # now + ttl wraps in 64 bits, as in Redis
    assert r.restore('e', 0, payload, idletime=10)
    assert r.restore('f', 0, payload, frequency=10)
    assert r.get('e') == r.get('f') == b'v'


def test_restore_rejects_bad_payloads(both):
    """DUMP's payload is Redis's (the RDB encoding, version 10, CRC64), so the same bad
    payloads get the same errors from both servers."""
    ours, theirs = both
    ours.set('src', 'value')
    payload = ours.dump('src')
    body = b'\x00\x40\x64short'  # a string whose length runs past the end
    version = payload[:-10] + b'\x0b\x00'  # RDB 11: newer than 7.0 reads
    cases = [
        b'',
        b'x',
        payload[:-1],
        payload + b'x',
        payload[:1] + bytes([payload[1] ^ 1]) + payload[2:],
        version + crc64(version).to_bytes(8, 'little'),
        dump_payload(body),
    ]
    assert_same(both, [('RESTORE', f'dst{i}', '0', p) for i, p in enumerate(cases)])
    assert_same(both, [('EXISTS', *[f'dst{i}' for i in range(len(cases))])])


def test_restore_argument_errors(both):
    # A payload both reject: the differential checks which error comes first.
    assert_same(
        both,
        [
            ('SET', 'busy', 'v'),
            ('RESTORE', 'k', '0', 'junk', 'FOO'),
            ('RESTORE', 'k', '0', 'junk', 'IDLETIME'),
            ('RESTORE', 'k', '0', 'junk', 'IDLETIME', '-1'),
            ('RESTORE', 'k', '0', 'junk', 'IDLETIME', 'x'),
            ('RESTORE', 'k', '0', 'junk', 'FREQ'),
            ('RESTORE', 'k', '0', 'junk', 'FREQ', '256'),
            ('RESTORE', 'k', '0', 'junk', 'FREQ', '-1'),
            ('RESTORE', 'k', '0', 'junk', 'FREQ', '1', 'IDLETIME', '1'),
            ('RESTORE', 'k', '0', 'junk', 'IDLETIME', '1', 'FREQ', '1'),
            ('RESTORE', 'busy', '0', 'junk'),
            ('RESTORE', 'busy', '-1', 'junk'),
            ('RESTORE', 'busy', '-1', 'junk', 'REPLACE'),
            ('RESTORE', 'k', '-1', 'junk'),
            ('RESTORE', 'k', 'x', 'junk'),
            ('RESTORE', 'k', '0', 'junk'),
            ('RESTORE', 'k', '0', 'junk', 'REPLACE', 'ABSTTL', 'IDLETIME', '5'),
            ('RESTORE', 'busy', '0', 'junk', 'FOO'),
            ('GET', 'busy'),
        ],
    )


def test_resp3(r3):
    r3.set('a', '1')
    assert r3.type('a') == b'string'
    assert r3.execute_command('OBJECT', 'ENCODING', 'nokey') is None
    assert r3.execute_command('RANDOMKEY') == b'a'
    cursor, keys = r3.scan(0)
    assert cursor == 0 and keys == [b'a']
    assert r3.execute_command('DUMP', 'nokey') is None
    assert r3.exists('a', 'a') == 2


def test_watch_invalidated_by_generic_writes(server):
    r = server.client()
    r.flushall()
    for setup, cmd, watched in (
        (('SET', 'a', '1'), ('DEL', 'a'), 'a'),
        (('SET', 'a', '1'), ('RENAME', 'a', 'b'), 'b'),
        (('SET', 'a', '1'), ('RENAME', 'a', 'b'), 'a'),
        (('SET', 'a', '1'), ('MOVE', 'a', '1'), 'a'),
        (('SET', 'a', '1'), ('COPY', 'a', 'c'), 'c'),
        (('SET', 'a', '1'), ('RESTORE', 'a', '0', None, 'REPLACE'), 'a'),
    ):
        r.flushall()
        r.execute_command(*setup)
        if cmd[0] == 'RESTORE':
            cmd = cmd[:3] + (r.dump('a'),) + cmd[4:]
        other = server.client()
        p = r.pipeline()
        p.watch(watched)
        other.execute_command(*cmd)
        p.multi()
        p.get(watched)
        with pytest.raises(redis.WatchError):
            p.execute()
        other.close()
    r.close()


KEY_EVENT_COMMANDS = [
    ('set', 'a', '1'),
    ('set', 'x', '1'),
    ('del', 'a', 'nokey'),
    ('set', 'a', '1'),
    ('rename', 'a', 'b'),
    ('rename', 'b', 'x'),  # overwrites x: no del for it, as in Redis
    ('renamenx', 'x', 'x'),
    ('renamenx', 'x', 'n'),
    ('move', 'n', '1'),
    ('move', 'n', '1'),
    ('set', 'c', '1'),
    ('copy', 'c', 'd'),
    ('copy', 'c', 'd'),
    ('copy', 'c', 'd', 'replace'),
    ('copy', 'c', 'e', 'db', '1'),
    ('unlink', 'c', 'd'),
    ('touch', 'e'),
    ('flushall',),
]


def test_events_match_redis(both):
    events = assert_same_events(both, KEY_EVENT_COMMANDS, 'KEAn')
    assert (b'__keyevent@0__:rename_to', b'x') in events


def test_restore_events(r):
    r.set('a', '1')
    payload = r.dump('a')
    got = capture_events(
        r,
        [('del', 'a'), ('restore', 'a', '0', payload), ('restore', 'a', '0', payload, 'replace')],
        'Kgn',
        pattern='__keyspace@0__:*',
    )
    # RESTORE ... REPLACE deletes the old value and adds the new one (dbAdd: 'new')
    assert [m for ch, m in got] == [b'del', b'new', b'restore', b'new', b'restore']


def test_differential_mixed_sequence(both):
    ours, theirs = both
    cmds = [('SET', f'k{i}', str(i)) for i in range(30)]
    cmds += [
        ('DEL', 'k1', 'k2'),
        ('RENAME', 'k3', 'k1'),
        ('COPY', 'k4', 'k2'),
        ('MOVE', 'k5', '2'),
        ('EXPIRE', 'k6', '100'),
        ('PERSIST', 'k6'),
        ('RENAMENX', 'k7', 'k8'),
    ]
    assert run_all(ours, cmds) == run_all(theirs, cmds)
    assert sorted(ours.keys()) == sorted(theirs.keys())
    assert sorted(full_scan(ours)[0]) == sorted(full_scan(theirs)[0])
