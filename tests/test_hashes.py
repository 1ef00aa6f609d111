"""Hash commands, as differential tests against redis-server 7.0.

The same commands go to our server and to the reference and the replies are compared:
through redis-py in RESP2 and RESP3 (`both_resp`) for values and errors, and as exact
bytes through RawConn (`raw_pair`) where the reply type matters (HGETALL is a map in
RESP3, HRANDFIELD WITHVALUES pairs, nulls). A listpack hash shows its fields in insertion
order on both servers, so those replies are compared as they are; a hashtable's order is
Redis's hash order, compared as a set. HRANDFIELD is random: its replies are compared by
shape (reply types and lengths) and checked for membership and uniqueness.
"""

import random

import pytest
import redis

from conftest import assert_same, assert_same_events, capture_events, raw_same, run_all
from store.commands import aggregates

LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)


# -- helpers --------------------------------------------------------------------------


def both_run(pair, commands):
    """Run setup commands on both servers through raw connections."""
    for c in pair:
        for cmd in commands:
            c.cmd(*cmd)


THRESHOLDS = ('hash-max-listpack-entries', 'hash-max-listpack-value')


@pytest.fixture
def thresholds(both):
    """set(entries, value): CONFIG SET the listpack thresholds on both servers; the old
    values are restored after the test."""
    saved = [{p: c.config_get(p)[p] for p in THRESHOLDS} for c in both]

    def set_(entries, value):
        for c in both:
            c.config_set('hash-max-listpack-entries', entries)
            c.config_set('hash-max-listpack-value', value)

    yield set_
    for c, old in zip(both, saved):
        for p, v in old.items():
            c.config_set(p, v)


def parse(buf, i=0):
    """One RESP2/RESP3 reply from buf[i:]: (value, end). Arrays, sets and maps become
    (kind, items) tuples so their type is kept; bulk strings bytes, nulls None."""
    nl = buf.index(b'\r\n', i)
    kind, head, end = buf[i : i + 1], buf[i + 1 : nl], nl + 2
    if kind == b'$':
        n = int(head)
        if n < 0:
            return None, end
        return buf[end : end + n], end + n + 2
    if kind in b'*~%':
        n = int(head)
        if n < 0:
            return None, end
        items = []
        for _ in range(n * 2 if kind == b'%' else n):
            v, end = parse(buf, end)
            items.append(v)
        return (kind, items), end
    if kind == b':':
        return int(head), end
    if kind == b'_':
        return None, end
    return (kind, head), end


def shape(value):
    """The reply with every bulk string replaced by 'B': what two random replies of the
    same command must share."""
    if isinstance(value, bytes):
        return 'B'
    if isinstance(value, tuple) and isinstance(value[1], list):
        return (value[0], [shape(v) for v in value[1]])
    return value


def reply(conn, *cmd):
    return parse(conn.cmd(*cmd))[0]


# -- setting and reading fields ---------------------------------------------------------


def test_set_and_get(both_resp):
    assert_same(
        both_resp,
        [
            ('hset', 'h', 'a', '1'),
            ('hset', 'h', 'a', '2', 'b', '3', 'c', ''),
            ('hset', 'h', 'a', '2'),
            ('hset', 'h', 'x', '1', 'x', '2'),
            ('hget', 'h', 'a'),
            ('hget', 'h', 'x'),
            ('hget', 'h', 'c'),
            ('hget', 'h', 'nope'),
            ('hget', 'nokey', 'a'),
            ('hmset', 'h', 'd', '4', 'e', '5'),
            ('hmset', 'm', 'd', '4'),
            ('hmget', 'h', 'a', 'nope', 'c', 'd', 'a'),
            ('hmget', 'nokey', 'a', 'b'),
            ('hsetnx', 'h', 'a', 'zz'),
            ('hsetnx', 'h', 'f', 'zz'),
            ('hsetnx', 'n', 'f', 'v'),
            ('hget', 'h', 'a'),
            ('hget', 'h', 'f'),
            ('hexists', 'h', 'a'),
            ('hexists', 'h', 'nope'),
            ('hexists', 'nokey', 'a'),
            ('hlen', 'h'),
            ('hlen', 'nokey'),
            ('hstrlen', 'h', 'a'),
            ('hstrlen', 'h', 'c'),
            ('hstrlen', 'h', 'nope'),
            ('hstrlen', 'nokey', 'a'),
            ('hset', 'h', 'num', '-12345678901234'),
            ('hstrlen', 'h', 'num'),
            ('hset', 'h', b'\x00bin\xff', b'\r\n\x00'),
            ('hget', 'h', b'\x00bin\xff'),
            ('hgetall', 'h'),
            ('hkeys', 'h'),
            ('hvals', 'h'),
            ('hgetall', 'nokey'),
            ('hkeys', 'nokey'),
            ('hvals', 'nokey'),
            ('type', 'h'),
        ],
    )


def test_hset_returns_new_field_count_and_hmset_ok(both):
    ours, theirs = both
    for c in both:
        assert c.execute_command('hset', 'h', 'a', '1', 'b', '2', 'a', '3') == 2
        assert c.execute_command('hmset', 'h', 'a', '1', 'z', '2') in (b'OK', True)
    assert ours.hgetall('h') == theirs.hgetall('h')


def test_arity_errors(both_resp):
    assert_same(
        both_resp,
        [
            ('hset', 'h'),
            ('hset', 'h', 'f'),
            ('hset', 'h', 'f', 'v', 'g'),
            ('hmset', 'h', 'f'),
            ('hmset', 'h', 'f', 'v', 'g'),
            ('HSET', 'h', 'f', 'v', 'g'),
            ('HmSeT', 'h', 'f', 'v', 'g'),
            ('hsetnx', 'h', 'f'),
            ('hsetnx', 'h', 'f', 'v', 'x'),
            ('hget', 'h'),
            ('hget', 'h', 'f', 'g'),
            ('hmget', 'h'),
            ('hgetall',),
            ('hgetall', 'h', 'x'),
            ('hdel', 'h'),
            ('hexists', 'h'),
            ('hlen',),
            ('hlen', 'h', 'x'),
            ('hstrlen', 'h'),
            ('hkeys',),
            ('hvals', 'h', 'x'),
            ('hincrby', 'h', 'f'),
            ('hincrby', 'h', 'f', '1', '2'),
            ('hincrbyfloat', 'h', 'f'),
            ('hrandfield',),
            ('hscan', 'h'),
            ('exists', 'h'),
        ],
    )


def test_wrongtype_both_ways(both_resp):
    assert_same(
        both_resp,
        [
            ('set', 's', 'x'),
            ('hset', 's', 'f', 'v'),
            ('hmset', 's', 'f', 'v'),
            ('hsetnx', 's', 'f', 'v'),
            ('hget', 's', 'f'),
            ('hmget', 's', 'f'),
            ('hgetall', 's'),
            ('hkeys', 's'),
            ('hvals', 's'),
            ('hdel', 's', 'f'),
            ('hlen', 's'),
            ('hstrlen', 's', 'f'),
            ('hexists', 's', 'f'),
            ('hincrby', 's', 'f', '1'),
            ('hincrbyfloat', 's', 'f', '1'),
            ('hrandfield', 's'),
            ('hrandfield', 's', '0'),
            ('hrandfield', 's', '-3', 'withvalues'),
            ('hscan', 's', '0'),
            ('get', 's'),
            ('hset', 'h', 'f', 'v'),
            ('get', 'h'),
            ('append', 'h', 'x'),
            ('incr', 'h'),
            ('strlen', 'h'),
            ('setrange', 'h', '0', 'x'),
            ('getrange', 'h', '0', '1'),
            ('type', 'h'),
            ('hget', 'h', 'f'),
            ('set', 'h', 'str'),
            ('type', 'h'),
            ('hget', 'h', 'f'),
        ],
    )


def test_hdel_and_emptied_hash_disappears(both_resp):
    assert_same(
        both_resp,
        [
            ('hdel', 'nokey', 'a'),
            ('hset', 'h', 'a', '1', 'b', '2', 'c', '3'),
            ('hdel', 'h', 'nope'),
            ('hdel', 'h', 'a', 'a', 'nope'),
            ('hgetall', 'h'),
            ('hdel', 'h', 'b', 'c', 'b', 'x'),
            ('exists', 'h'),
            ('type', 'h'),
            ('hlen', 'h'),
            ('hset', 'h', 'x', '1'),
            ('expire', 'h', '1000'),
            ('hdel', 'h', 'x'),
            ('exists', 'h'),
            ('hset', 'h', 'y', '1'),
            ('ttl', 'h'),
        ],
    )


def test_writes_keep_the_ttl(both):
    commands = [
        ('hset', 'h', 'a', '1'),
        ('expire', 'h', '1000'),
        ('hset', 'h', 'b', '2'),
        ('hsetnx', 'h', 'c', '2'),
        ('hincrby', 'h', 'n', '2'),
        ('hincrbyfloat', 'h', 'n', '2.5'),
        ('hdel', 'h', 'a'),
    ]
    for c in both:
        run_all(c, commands)
        assert 990 <= c.ttl('h') <= 1000


def test_expired_hash_is_gone(both):
    for c in both:
        c.hset('h', 'a', '1')
        c.pexpireat('h', 1)
    assert_same(both, [('hget', 'h', 'a'), ('hlen', 'h'), ('hset', 'h', 'b', '1'), ('hkeys', 'h')])


# -- counters ---------------------------------------------------------------------------


def test_hincrby(both_resp):
    assert_same(
        both_resp,
        [
            ('hincrby', 'h', 'n', '5'),
            ('hincrby', 'h', 'n', '-10'),
            ('hincrby', 'h', 'n', '0'),
            ('hincrby', 'new', 'f', '-7'),
            ('hset', 'h', 'max', str(LLONG_MAX), 'min', str(LLONG_MIN)),
            ('hincrby', 'h', 'max', '1'),
            ('hincrby', 'h', 'max', '-1'),
            ('hincrby', 'h', 'max', str(LLONG_MIN)),
            ('hincrby', 'h', 'min', '-1'),
            ('hincrby', 'h', 'min', str(LLONG_MAX)),
            ('hincrby', 'h', 'fresh', str(LLONG_MIN)),
            ('hincrby', 'h', 'fresh', '-1'),
            ('hincrby', 'h', 'n', str(LLONG_MAX + 1)),
            ('hincrby', 'h', 'n', str(LLONG_MIN - 1)),
            ('hincrby', 'h', 'n', 'abc'),
            ('hincrby', 'h', 'n', '1.5'),
            ('hincrby', 'h', 'n', ' 1'),
            ('hincrby', 'h', 'n', '+1'),
            ('hincrby', 'h', 'n', '01'),
            ('hincrby', 'h', 'n', ''),
            ('hset', 'h', 's', 'abc', 'sp', ' 5', 'e', '', 'z', '007', 'fl', '1.0', 'neg0', '-0'),
            ('hincrby', 'h', 's', '1'),
            ('hincrby', 'h', 'sp', '1'),
            ('hincrby', 'h', 'e', '1'),
            ('hincrby', 'h', 'z', '1'),
            ('hincrby', 'h', 'fl', '1'),
            ('hincrby', 'h', 'neg0', '1'),
            ('hincrby', 'nokey2', 'f', 'abc'),
            ('exists', 'nokey2'),
            ('hgetall', 'h'),
        ],
    )


def test_hincrbyfloat(both_resp):
    assert_same(
        both_resp,
        [
            ('hincrbyfloat', 'h', 'f', '0.1'),
            ('hincrbyfloat', 'h', 'f', '0.2'),
            ('hincrbyfloat', 'h', 'f', '-0.3'),
            ('hincrbyfloat', 'h', 'f', '1e10'),
            ('hincrbyfloat', 'h', 'f', '1.5e-5'),
            ('hincrbyfloat', 'h', 'f', '0x10'),
            ('hincrbyfloat', 'h', 'g', '3.0e3'),
            ('hincrbyfloat', 'h', 'g', '-3000'),
            ('hset', 'h', 'i', '10', 'big', '1e4900', 's', 'abc', 'inf', 'inf', 'sp', ' 1'),
            ('hincrbyfloat', 'h', 'i', '2.5'),
            ('hincrbyfloat', 'h', 'big', '1'),
            ('hincrbyfloat', 'h', 'big', '1e4932'),
            ('hincrbyfloat', 'h', 's', '1'),
            ('hincrbyfloat', 'h', 'inf', '1'),
            ('hincrbyfloat', 'h', 'sp', '1'),
            ('hincrbyfloat', 'h', 'i', 'abc'),
            ('hincrbyfloat', 'h', 'i', ''),
            ('hincrbyfloat', 'h', 'i', ' 1'),
            ('hincrbyfloat', 'h', 'i', '1 '),
            ('hincrbyfloat', 'h', 'i', 'nan'),
            ('hincrbyfloat', 'h', 'i', 'inf'),
            ('hincrbyfloat', 'h', 'i', '-infinity'),
            ('hincrbyfloat', 'h', 'i', '1e5000'),
            ('hincrbyfloat', 'h', 'i', '1e-5000'),
            ('hincrbyfloat', 'nokey', 'f', 'inf'),
            ('hincrbyfloat', 'nokey', 'f', 'abc'),
            ('exists', 'nokey'),
            ('hincrbyfloat', 'nokey', 'f', '5'),
            ('hget', 'h', 'f'),
            ('hget', 'h', 'i'),
            ('hgetall', 'h'),
        ],
    )


# -- encodings and order ----------------------------------------------------------------


def test_encoding_follows_the_thresholds(both, thresholds):
    thresholds(4, 8)
    commands = [
        ('hset', 'a', 'f1', '1', 'f2', '2', 'f3', '3', 'f4', '4'),
        ('object', 'encoding', 'a'),
        ('hset', 'a', 'f5', '5'),
        ('object', 'encoding', 'a'),
        ('hdel', 'a', 'f1', 'f2', 'f3'),
        ('object', 'encoding', 'a'),  # never back to a listpack
        ('hset', 'b', 'f', '12345678'),
        ('object', 'encoding', 'b'),
        ('hset', 'b', 'f', '123456789'),
        ('object', 'encoding', 'b'),
        ('hset', 'c', '123456789', 'v'),
        ('object', 'encoding', 'c'),
        ('hsetnx', 'd', 'f', 'long value!'),
        ('object', 'encoding', 'd'),
        ('hset', 'e', 'f', 'v'),
        ('hsetnx', 'e', 'f', 'long value!'),  # not set: no conversion
        ('object', 'encoding', 'e'),
        ('hincrby', 'g', 'a-long-field', '1'),
        ('object', 'encoding', 'g'),
        ('hincrby', 'h', 'f', '123456789'),
        ('object', 'encoding', 'h'),
        ('hincrbyfloat', 'i', 'f', '1.23456789'),
        ('object', 'encoding', 'i'),
        ('hincrbyfloat', 'j', 'f', '1.5'),
        ('object', 'encoding', 'j'),
        ('hmset', 'k', 'a', '1', 'b', '2', 'c', '3', 'd', '4', 'e', '5'),
        ('object', 'encoding', 'k'),
        ('hset', 'l', 'a', '1', 'a', '2', 'a', '3', 'a', '4', 'a', '5'),
        ('object', 'encoding', 'l'),
    ]
    assert_same(both, commands)
    thresholds(0, 0)
    assert_same(
        both,
        [
            ('object', 'encoding', 'e'),  # a threshold change converts nothing by itself
            ('hset', 'z', 'f', 'v'),
            ('object', 'encoding', 'z'),
            ('hset', 'e', 'f', 'w'),
            ('object', 'encoding', 'e'),
        ],
    )
    thresholds(512, 64)
    assert_same(
        both,
        [
            ('hset', 'y', 'f', 'x' * 64),
            ('object', 'encoding', 'y'),
            ('hset', 'y', 'g', 'x' * 65),
            ('object', 'encoding', 'y'),
            ('hset', 'z', 'g', 'v'),
            ('object', 'encoding', 'z'),
        ],
    )


def test_old_threshold_names_apply(both, thresholds):
    for c in both:
        c.config_set('hash-max-ziplist-entries', 2)
    assert_same(
        both,
        [
            ('hset', 'h', 'a', '1', 'b', '2'),
            ('object', 'encoding', 'h'),
            ('hset', 'h', 'c', '3'),
            ('object', 'encoding', 'h'),
        ],
    )


def test_listpack_order_matches_redis(raw_pair):
    """A listpack lists fields in insertion order: an update keeps a field's place, a
    deleted and re-added field goes to the end (exact bytes, both protocols)."""
    for proto in (2, 3):
        pair = raw_pair(proto)
        raw_same(
            pair,
            [
                ('flushall',),
                ('hset', 'h', 'z', '1', 'a', '2', 'm', '3'),
                ('hset', 'h', 'a', 'changed'),
                ('hdel', 'h', 'z'),
                ('hset', 'h', 'z', 'back', 'b', '4'),
                ('hincrby', 'h', 'c', '1'),
                ('hincrbyfloat', 'h', 'm', '0.5'),
                ('hsetnx', 'h', 'd', '5'),
                ('hgetall', 'h'),
                ('hkeys', 'h'),
                ('hvals', 'h'),
                ('hrandfield', 'h', '100'),
                ('hrandfield', 'h', '6', 'withvalues'),
                ('hscan', 'h', '0'),
                ('hscan', 'h', '12345'),
                ('hscan', 'h', '0', 'match', '[a-m]'),
                ('hscan', 'h', '0', 'count', '1', 'match', '*'),
                ('hgetall', 'nokey'),
                ('hmget', 'h', 'a', 'nope'),
                ('hmget', 'nokey', 'a'),
                ('hget', 'nokey', 'a'),
                ('hrandfield', 'nokey'),
                ('hrandfield', 'nokey', '3'),
                ('hrandfield', 'nokey', '-3', 'withvalues'),
                ('hincrbyfloat', 'h', 'm', '1'),
                ('hset', 'h', 'x', '1'),
                ('hmset', 'h', 'x', '1'),
                ('hscan', 'nokey', '0'),
            ],
        )


def test_hashtable_contents_match_redis(both, thresholds):
    thresholds(16, 64)
    ours, theirs = both
    for c in both:
        c.hset('big', mapping={f'f{i}': i for i in range(100)})
        c.hdel('big', *[f'f{i}' for i in range(0, 100, 3)])
        c.hset('long', 'f', 'x' * 100)
    for key in ('big', 'long'):
        assert ours.object('encoding', key) == theirs.object('encoding', key) == b'hashtable'
        assert ours.hgetall(key) == theirs.hgetall(key)
        assert sorted(ours.hkeys(key)) == sorted(theirs.hkeys(key))
        assert sorted(ours.hvals(key)) == sorted(theirs.hvals(key))
        assert ours.hlen(key) == theirs.hlen(key)


def test_random_operations_match_redis(both, thresholds):
    """Many random writes over a few keys with low thresholds: contents, order (while a
    listpack) and encoding agree with Redis after every step."""
    thresholds(6, 5)
    rng = random.Random(1234)
    ours, theirs = both
    keys = ['h1', 'h2', 'h3']
    fields = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'long-field']
    values = ['1', '-2', 'x', '', '1.5', '123456', '99']
    for step in range(600):
        key = rng.choice(keys)
        op = rng.random()
        f = rng.choice(fields)
        if op < 0.35:
            cmd = ('hset', key, f, rng.choice(values))
        elif op < 0.45:
            cmd = ('hset', key, f, rng.choice(values), rng.choice(fields), rng.choice(values))
        elif op < 0.65:
            cmd = ('hdel', key, f, rng.choice(fields))
        elif op < 0.75:
            cmd = ('hsetnx', key, f, rng.choice(values))
        elif op < 0.85:
            cmd = ('hincrby', key, f, str(rng.randint(-5, 5)))
        else:
            cmd = ('hincrbyfloat', key, f, rng.choice(['0.1', '-1', '2.5']))
        got, want = run_all(ours, [cmd]), run_all(theirs, [cmd])
        assert got == want, (step, cmd)
        enc = theirs.object('encoding', key) if theirs.exists(key) else None
        assert (ours.object('encoding', key) if ours.exists(key) else None) == enc, (step, cmd)
        if enc == b'listpack':
            assert ours.execute_command('hgetall', key) == theirs.execute_command('hgetall', key)
        else:
            assert ours.hgetall(key) == theirs.hgetall(key), (step, cmd)


# -- HRANDFIELD -------------------------------------------------------------------------


def test_hrandfield_errors(both_resp):
    assert_same(
        both_resp,
        [
            ('hset', 'h', 'a', '1', 'b', '2', 'c', '3'),
            ('hrandfield', 'h', str(LLONG_MIN)),
            ('hrandfield', 'h', str(LLONG_MIN), 'withvalues'),
            ('hrandfield', 'h', str(-LLONG_MAX), 'withvalues'),
            ('hrandfield', 'h', str(-(LLONG_MAX // 2) - 1), 'withvalues'),
            ('hrandfield', 'h', str(LLONG_MAX // 2 + 1), 'withvalues'),
            ('hrandfield', 'h', str(LLONG_MAX), 'withvalues'),
            ('hrandfield', 'h', str(LLONG_MAX + 1)),
            ('hrandfield', 'h', str(LLONG_MIN - 1)),
            ('hrandfield', 'h', 'abc'),
            ('hrandfield', 'h', ''),
            ('hrandfield', 'h', '1.5'),
            ('hrandfield', 'h', ' 1'),
            ('hrandfield', 'h', '+1'),
            ('hrandfield', 'h', '01'),
            ('hrandfield', 'h', '1', 'withvalue'),
            ('hrandfield', 'h', '1', 'withvalues', 'x'),
            ('hrandfield', 'h', 'abc', 'withvalues'),
            ('hrandfield', 'h', '3', b'withvalues\x00junk'),
            ('hrandfield', 'h', '3', 'WITHVALUES'),
            ('hrandfield', 'nokey', 'abc'),
            ('hrandfield', 'nokey', '1', 'foo'),
            ('hrandfield', 'nokey', '0'),
            ('hrandfield', 'nokey', '-5', 'withvalues'),
            ('hrandfield', 'nokey'),
            ('hrandfield', 'h', '0'),
            ('hrandfield', 'h', '0', 'withvalues'),
            ('hrandfield', 'h', str(LLONG_MAX)),
            ('hrandfield', 'h', str(LLONG_MAX // 2), 'withvalues'),
        ],
    )


HRANDFIELD_COUNTS = [None, 1, 2, 3, 5, 8, 20, 100, -1, -2, -5, -8, -20, -1000]


@pytest.mark.parametrize('proto', [2, 3])
@pytest.mark.parametrize('encoding', ['listpack', 'hashtable'])
def test_hrandfield_shapes(raw_pair, thresholds, proto, encoding):
    """Every count, with and without WITHVALUES: the same reply shape as Redis's, fields
    (and their values) from the hash, distinct for a positive count."""
    if encoding == 'hashtable':
        thresholds(4, 64)
    pair = raw_pair(proto)
    contents = {b'f%d' % i: b'v%d' % i for i in range(8)}
    setup = [('hset', 'h', *[x for kv in contents.items() for x in kv])]
    both_run(pair, setup)
    for c in pair:
        assert reply(c, 'object', 'encoding', 'h') == encoding.encode()
    for count in HRANDFIELD_COUNTS:
        for withvalues in (False, True) if count is not None else (False,):
            cmd = ('hrandfield', 'h') + (() if count is None else (str(count),))
            cmd += ('withvalues',) if withvalues else ()
            got, want = reply(pair[0], *cmd), reply(pair[1], *cmd)
            assert shape(got) == shape(want), cmd
            if count is None:
                assert got in contents
                continue
            items = got[1]
            if withvalues:
                pairs = (
                    [tuple(p[1]) for p in items]
                    if proto == 3
                    else list(zip(items[::2], items[1::2]))
                )
                assert all(contents[f] == v for f, v in pairs), cmd
                found = [f for f, _ in pairs]
            else:
                found = items
            assert set(found) <= set(contents), cmd
            if count > 0:
                assert len(set(found)) == len(found) == min(count, len(contents)), cmd
            else:
                assert len(found) == -count, cmd


def test_hrandfield_covers_every_field(r):
    """Every field turns up, for each way of picking (a check on the sampling, not on
    its distribution)."""
    r.hset('h', mapping={f'f{i}': i for i in range(10)})
    fields = {f'f{i}'.encode() for i in range(10)}
    for args in ((), (1,), (-3,), (3,), (8,), (-30,)):
        seen = set()
        for _ in range(300):
            got = r.hrandfield('h', *args)
            seen.update(got if isinstance(got, list) else [got])
            if seen == fields:
                break
        assert seen == fields, args


def test_hrandfield_huge_counts(server, both):
    """A count past LONG_MAX/2 with WITHVALUES, and LONG_MIN, are Redis's own errors. A
    huge negative count without WITHVALUES makes redis-server 7.0 build its reply until
    memory runs out; ours answers 'value is out of range' instead, at once and without
    allocating for it (so it is not sent to the reference)."""
    assert_same(
        both,
        [
            ('hset', 'h', 'a', '1', 'b', '2'),
            ('hrandfield', 'h', str(-(LLONG_MAX // 2) - 1), 'withvalues'),
            ('hrandfield', 'h', str(LLONG_MIN)),
        ],
    )
    ours = both[0]
    for count in (-LLONG_MAX, -(LLONG_MAX // 2), -(10**12), -(1 << 40)):
        with pytest.raises(redis.ResponseError, match='^value is out of range$'):
            ours.execute_command('hrandfield', 'h', count)
        with pytest.raises(redis.ResponseError, match='^value is out of range$'):
            ours.execute_command('hrandfield', 'h', max(count, -(LLONG_MAX // 2)), 'withvalues')
    assert ours.ping()
    # Big but reasonable: served, and the same length as Redis's.
    for c in both:
        assert len(c.execute_command('hrandfield', 'h', -200_000)) == 200_000
        assert len(c.execute_command('hrandfield', 'h', -100_000, 'withvalues')) == 200_000


def test_hrandfield_repeated_reply_limit(server, r):
    """The bound is on the reply's size: long values reach it at a smaller count."""
    limit = aggregates.MAX_RANDOM_REPLY_BYTES
    r.hset('h', 'f', 'x' * 1000)
    n = limit // 1100
    assert len(r.execute_command('hrandfield', 'h', -(n // 2), 'withvalues')) == n // 2 * 2
    with pytest.raises(redis.ResponseError, match='^value is out of range$'):
        r.execute_command('hrandfield', 'h', -2 * n, 'withvalues')


# -- HSCAN ------------------------------------------------------------------------------


def test_hscan_errors_and_order_of_checks(both_resp):
    assert_same(
        both_resp,
        [
            ('set', 's', 'x'),
            ('hset', 'h', 'a', '1', 'b', '2'),
            ('hscan', 'h', 'abc'),
            ('hscan', 'h', '-1'),
            ('hscan', 'h', str(2**64)),
            ('hscan', 'h', ' 0'),
            ('hscan', 'h', '0', 'count', '0'),
            ('hscan', 'h', '0', 'count', '-1'),
            ('hscan', 'h', '0', 'count', 'abc'),
            ('hscan', 'h', '0', 'count'),
            ('hscan', 'h', '0', 'match'),
            ('hscan', 'h', '0', 'type', 'string'),
            ('hscan', 'h', '0', 'novalues'),
            ('hscan', 'h', '0', 'count', '1', 'bogus'),
            ('hscan', 'h', '0', 'COUNT', '5', 'MATCH', 'a*'),
            ('hscan', 'nokey', '0'),
            ('hscan', 'nokey', 'abc'),
            ('hscan', 'nokey', '0', 'count', '0'),
            ('hscan', 'nokey', '0', 'bogus'),
            ('hscan', 's', '0'),
            ('hscan', 's', 'abc'),
            ('hscan', 's', '0', 'count', '0'),
            ('hscan', 's', '0', 'bogus'),
        ],
    )


def test_hscan_match_and_count_on_a_hashtable(both, thresholds):
    thresholds(8, 64)
    ours, theirs = both
    mapping = {f'k{i}': i for i in range(300)}
    for c in both:
        c.hset('h', mapping=mapping)
    for match in (None, 'k1*', 'k?', '*[05]', 'nothing*'):
        for count in (1, 10, 1000):
            results = []
            for c in both:
                found = {}
                cursor = 0
                while True:
                    cursor, page = c.hscan('h', cursor, match=match, count=count)
                    found.update(page)
                    if cursor == 0:
                        break
                results.append(found)
            assert results[0] == results[1], (match, count)


def test_hscan_big_hash_each_field_once(server, r):
    """A full HSCAN of a hashtable hash with thousands of fields, while fields are added
    and removed between calls: every field present throughout comes back exactly once,
    and nothing comes back that was never in the hash."""
    n = 5000
    r.hset('h', mapping={f'f{i}': i for i in range(n)})
    assert r.object('encoding', 'h') == b'hashtable'
    stable = {f'f{i}'.encode() for i in range(n) if i % 5}
    ever = {f'f{i}'.encode() for i in range(n)}
    seen = []
    cursor, calls = 0, 0
    while True:
        cursor, page = r.hscan('h', cursor, count=50)
        seen.extend(page)
        for f, v in page.items():
            assert v == f[1:], f
        calls += 1
        # Churn: delete some unstable fields, add new ones.
        doomed = [f'f{i}' for i in range(calls * 5, n, 5)][:3]
        if doomed:
            r.hdel('h', *doomed)
        new = [f'new{calls}-{j}' for j in range(3)]
        r.hset('h', mapping={f: f[1:] for f in new})
        ever.update(f.encode() for f in new)
        if cursor == 0:
            break
        assert calls < 10 * n
    assert calls > 50
    counts = {}
    for f in seen:
        counts[f] = counts.get(f, 0) + 1
    assert all(counts.get(f) == 1 for f in stable), [f for f in stable if counts.get(f) != 1][:5]
    assert all(c == 1 for c in counts.values())
    assert set(counts) <= ever


# -- keyspace events, WATCH, statistics -----------------------------------------------------

EVENT_COMMANDS = [
    ('hset', 'h', 'a', '1'),
    ('hset', 'h', 'a', '1'),
    ('hmset', 'h', 'b', '2', 'c', '3'),
    ('hset', 'h', 'b'),
    ('hsetnx', 'h', 'a', 'x'),
    ('hsetnx', 'h', 'd', '4'),
    ('hsetnx', 'n', 'f', 'v'),
    ('hincrby', 'h', 'i', '5'),
    ('hincrby', 'h', 'd', 'x'),
    ('hset', 'h', 's', 'abc'),
    ('hincrby', 'h', 's', '1'),
    ('hincrbyfloat', 'h', 's', '1'),
    ('hincrby', 'ni', 'f', '1'),
    ('hincrby', 'ni', 'f', str(LLONG_MAX)),
    ('hincrbyfloat', 'h', 'fl', '1.5'),
    ('hincrbyfloat', 'nf', 'f', 'inf'),
    ('hincrbyfloat', 'nf2', 'f', '2'),
    ('hdel', 'h', 'zz'),
    ('hdel', 'nokey', 'zz'),
    ('hdel', 'h', 'a', 'b'),
    ('hdel', 'n', 'f'),
    ('hdel', 'nf2', 'f', 'g'),
    ('hget', 'h', 'c'),
    ('hget', 'nokey', 'c'),
    ('hmget', 'nokey', 'a'),
    ('hgetall', 'nokey'),
    ('hkeys', 'nokey'),
    ('hvals', 'nokey'),
    ('hlen', 'nokey'),
    ('hstrlen', 'nokey', 'a'),
    ('hexists', 'nokey', 'a'),
    ('hrandfield', 'nokey'),
    ('hrandfield', 'nokey', '5'),
    ('hrandfield', 'nokey', 'abc'),
    ('hscan', 'nokey', '0'),
    ('hscan', 'nokey', 'abc'),
    ('hscan', 'nokey', '0', 'count', '0'),
    ('set', 's', 'x'),
    ('hset', 's', 'a', 'b'),
    ('hget', 's', 'a'),
    ('hset', 'h', 'big', 'x' * 100),
    ('expire', 'h', '100'),
    ('hset', 'h', 'a', '1'),
    ('del', 'h'),
]


@pytest.mark.parametrize('flags', ['KEA', 'KEAnm', 'Kh', 'Eg', 'En'])
def test_keyspace_events_match_redis(both, flags):
    events = assert_same_events(both, EVENT_COMMANDS, flags)
    if flags == 'KEAnm':
        assert len(events) > 50


def test_no_events_when_disabled(r):
    assert capture_events(r, EVENT_COMMANDS, '') == []


WATCH_CASES = [
    [('hset', 'h', 'a', '1')],
    [('hset', 'h', 'c', '3')],
    [('hmset', 'h', 'a', '1', 'c', '3')],
    [('hset', 'h', 'a')],
    [('hsetnx', 'h', 'a', 'x')],
    [('hsetnx', 'h', 'z', 'x')],
    [('hsetnx', 'nh', 'f', 'v')],
    [('hset', 'nh', 'f', 'v')],
    [('hdel', 'h', 'zz')],
    [('hdel', 'nh', 'zz')],
    [('hdel', 'h', 'a')],
    [('hdel', 'h', 'a', 'b')],
    [('hincrby', 'h', 'a', '1')],
    [('hincrby', 'nh', 'a', '1')],
    [('hincrby', 'h', 'a', 'abc')],
    [('hincrby', 'h', 's', '1')],
    [('hincrby', 'h', 'a', str(LLONG_MAX))],
    [('hincrbyfloat', 'h', 'a', '1.5')],
    [('hincrbyfloat', 'h', 'a', 'inf')],
    [('hincrbyfloat', 'h', 's', '1')],
    [('hget', 'h', 'a')],
    [('hgetall', 'h')],
    [('hrandfield', 'h', '5')],
    [('hscan', 'h', '0')],
    [('hset', 'str', 'f', 'v')],
]


@pytest.mark.parametrize('case', WATCH_CASES, ids=lambda c: ' '.join(c[0]))
def test_watch_signalling_matches_redis(raw_pair, case):
    pair = raw_pair(2)
    both_run(
        pair, [('flushall',), ('hset', 'h', 'a', '1', 'b', '2', 's', 'x'), ('set', 'str', 'v')]
    )
    raw_same(pair, [('watch', 'h', 'nh', 'str')] + case + [('multi',), ('ping',), ('exec',)])


STATS_COMMANDS = [
    ('hset', 'h', 'a', '1'),
    ('set', 's', 'x'),
    ('hget', 'h', 'a'),
    ('hget', 'nokey', 'a'),
    ('hget', 's', 'a'),
    ('hmget', 'h', 'a', 'b'),
    ('hmget', 'nokey', 'a'),
    ('hgetall', 'h'),
    ('hkeys', 'nokey'),
    ('hvals', 's'),
    ('hlen', 'h'),
    ('hstrlen', 'nokey', 'a'),
    ('hexists', 'h', 'a'),
    ('hrandfield', 'h'),
    ('hrandfield', 'nokey', '3'),
    ('hrandfield', 'h', 'abc'),
    ('hscan', 'h', '0'),
    ('hscan', 'nokey', '0'),
    ('hscan', 's', '0'),
    ('hscan', 'nokey', '0', 'count', '0'),
    ('hset', 'h', 'b', '2'),
    ('hdel', 'h', 'b'),
    ('hincrby', 'h', 'n', '1'),
    ('hincrbyfloat', 'h', 'n', '1'),
    ('hsetnx', 'h', 'n', '1'),
]


def test_keyspace_hits_and_misses_match_redis(both):
    """Read commands count a hit or a miss per key look-up, write commands none."""
    stats = []
    for c in both:
        c.config_resetstat()
        run_all(c, STATS_COMMANDS)
        info = c.info('stats')
        stats.append((info['keyspace_hits'], info['keyspace_misses']))
    assert stats[0] == stats[1]


# -- protocol and hot path --------------------------------------------------------------


@pytest.mark.parametrize('proto', [2, 3])
def test_raw_replies(raw_pair, proto):
    raw_same(
        raw_pair(proto),
        [
            ('hset', 'h', 'f', 'v', 'n', '12'),
            ('hget', 'h', 'f'),
            ('hget', 'h', 'nope'),
            ('hmget', 'h', 'f', 'nope'),
            ('hgetall', 'h'),
            ('hgetall', 'nokey'),
            ('hkeys', 'nokey'),
            ('hvals', 'h'),
            ('hexists', 'h', 'f'),
            ('hlen', 'h'),
            ('hstrlen', 'h', 'n'),
            ('hincrby', 'h', 'n', '3'),
            ('hincrbyfloat', 'h', 'n', '0.25'),
            ('hsetnx', 'h', 'f', 'x'),
            ('hmset', 'h', 'g', 'w'),
            ('hdel', 'h', 'g', 'nope'),
            ('hrandfield', 'nokey'),
            ('hrandfield', 'nokey', '2'),
            ('hrandfield', 'h', '0'),
            ('hrandfield', 'h', '10', 'withvalues'),
            ('hscan', 'h', '0'),
            ('hscan', 'nokey', '0'),
            ('hincrby', 'h', 'f', '1'),
            ('hrandfield', 'h', 'x'),
        ],
    )


def test_pipelined_hot_path(r):
    p = r.pipeline(transaction=False)
    for i in range(2000):
        p.hset('h', f'f{i % 700}', i)
        p.hget('h', f'f{i % 700}')
    out = p.execute()
    assert out[:4] == [1, b'0', 1, b'1']
    assert out[-2:] == [0, b'1999']
    assert r.hlen('h') == 700
    assert r.object('encoding', 'h') == b'hashtable'
