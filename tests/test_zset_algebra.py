"""ZUNION ZINTER ZDIFF, their STORE forms and ZINTERCARD, as differential tests against
redis-server 7.0.

The same commands go to our server and to the reference: through redis-py in RESP2 and
RESP3 (`both_resp`) for values and errors, and as exact bytes through RawConn where the
reply's shape matters (WITHSCORES is a flat array in RESP2 and pairs in RESP3, scores
are bulk strings or doubles). Results are sorted sets, so their order is Redis's
(score, member) order on both servers and is compared as it is.
"""

import pytest

from conftest import assert_same, assert_same_events, raw_same, run_all, wait_until
from rawconn import RawConn
from store.cnum import string2d, strtod

COMMANDS = ('zunion', 'zinter', 'zdiff', 'zunionstore', 'zinterstore', 'zdiffstore', 'zintercard')


# -- helpers --------------------------------------------------------------------------


# Inputs of every kind: listpack and skiplist sorted sets, an intset and a hashtable set,
# infinite scores, a string key for WRONGTYPE.
SETUP = [
    ('zadd', 'z1', '1', 'a', '2', 'b', '3', 'c', 'inf', 'top'),
    ('zadd', 'z2', '10', 'b', '-1.5', 'c', '0.5', 'd', '-inf', 'top'),
    ('zadd', 'z3', '-0', 'a', '1e300', 'd', '2.5', 'e'),
    ('sadd', 'si', '1', '2', 'a'),  # a hashtable set (one non-integer)
    ('sadd', 'sn', '1', '2', '3'),  # an intset
    ('set', 'str', 'x'),
    ('rpush', 'list', 'a'),
]


def setup(pair, commands=SETUP):
    """Run setup commands on both servers (redis-py clients or RawConns)."""
    for c in pair:
        if isinstance(c, RawConn):
            for cmd in commands:
                c.cmd(*cmd)
        else:
            run_all(c, commands)


# -- reply parsing ------------------------------------------------------------------------


def _parse(buf, i=0):
    """One RESP3 reply from buf[i:] as (value, end): arrays and maps as lists."""
    nl = buf.index(b'\r\n', i)
    kind, head, end = buf[i : i + 1], buf[i + 1 : nl], nl + 2
    if kind == b'$':
        n = int(head)
        return buf[end : end + n], end + n + 2
    if kind in b'*%':
        items = []
        for _ in range(int(head) * (2 if kind == b'%' else 1)):
            v, end = _parse(buf, end)
            items.append(v)
        return items, end
    return head, end


# -- replies ------------------------------------------------------------------------------

INPUTS = [
    ['z1'],
    ['z1', 'z2'],
    ['z2', 'z1'],
    ['z1', 'z2', 'z3'],
    ['z1', 'si'],
    ['si', 'sn'],
    ['sn', 'z1', 'si'],
    ['z1', 'missing'],
    ['missing', 'z1'],
    ['z1', 'z1'],
    ['missing'],
]


def test_union_inter_diff_replies(both_resp):
    setup(both_resp)
    commands = []
    for keys in INPUTS:
        for op in ('zunion', 'zinter', 'zdiff'):
            base = [op, len(keys), *keys]
            commands += [base, base + ['withscores'], base + ['WITHSCORES', 'withscores']]
        commands.append(['zintercard', len(keys), *keys])
    assert_same(both_resp, commands)


@pytest.mark.parametrize('op', ['zunion', 'zinter'])
def test_weights_and_aggregate(both_resp, op):
    setup(both_resp)
    commands = []
    for keys in INPUTS:
        n = len(keys)
        for weights in (['2'] * n, ['0'] * n, ['-1'] * n, ['inf'] * n, ['-inf'] * n, None):
            for agg in ('sum', 'min', 'max', 'SUM', 'Min', None):
                cmd = [op, n, *keys]
                if weights:
                    cmd += ['weights', *weights]
                if agg:
                    cmd += ['aggregate', agg]
                commands.append(cmd + ['withscores'])
    # options in any order, repeated: the last one wins
    commands += [
        [op, 2, 'z1', 'z2', 'withscores', 'aggregate', 'max', 'weights', '1', '3'],
        [op, 2, 'z1', 'z2', 'weights', '1', '2', 'weights', '3', '0.5', 'withscores'],
        [op, 2, 'z1', 'z2', 'aggregate', 'min', 'aggregate', 'sum', 'withscores'],
    ]
    assert_same(both_resp, commands)


def test_nan_becomes_zero(both_resp):
    """inf + -inf and 0 * inf are NaN in C: Redis counts them as 0 (and MIN/MAX ignore a
    NaN operand); the same must come out here, and the -0 of a negative weight times 0."""
    setup(
        both_resp,
        [
            ('zadd', 'p', 'inf', 'x', '1', 'y', '-1', 'n'),
            ('zadd', 'm', '-inf', 'x', '-inf', 'y', '0', 'n'),
            ('sadd', 's', 'x', 'y'),
        ],
    )
    commands = []
    for op in ('zunion', 'zinter'):
        for agg in ('sum', 'min', 'max'):
            for weights in (['1', '1'], ['0', '1'], ['1', '0'], ['inf', '-inf'], ['-0', '0']):
                tail = ['aggregate', agg, 'withscores']
                commands.append([op, 2, 'p', 'm', 'weights', *weights, *tail])
                commands.append([op, 3, 'p', 'm', 's', 'weights', *weights, 'inf', *tail])
    assert_same(both_resp, commands)


@pytest.mark.parametrize('proto', [2, 3])
def test_reply_bytes(raw_pair, proto):
    """WITHSCORES: one flat array of bulk strings in RESP2, [member, double] pairs in
    RESP3; scores printed as Redis prints them (inf, -inf, %.17g, -0)."""
    pair = raw_pair(proto)
    setup(pair)
    setup(pair, [('zadd', 'f', '0.1', 'a', '1e300', 'b', '-0', 'c', '3', 'd')])
    raw_same(
        pair,
        [
            ('zunion', '2', 'z1', 'z2', 'withscores'),
            ('zunion', '2', 'f', 'z1', 'weights', '3', '-0', 'withscores'),
            ('zinter', '2', 'z1', 'si', 'withscores'),
            ('zdiff', '2', 'z1', 'z2', 'withscores'),
            ('zdiff', '1', 'missing', 'withscores'),
            ('zunion', '1', 'missing'),
            ('zinter', '3', 'z1', 'z2', 'z3'),
            ('zintercard', '2', 'z1', 'z2'),
            ('zunionstore', 'dst', '2', 'z1', 'z2'),
            ('zrange', 'dst', '0', '-1', 'withscores'),
        ],
    )


def test_zintercard_limit(both_resp):
    setup(both_resp)
    commands = [['zintercard', 2, 'z1', 'z2', 'limit', n] for n in (0, 1, 2, 3, 100)]
    commands += [
        ['zintercard', 1, 'z1', 'LIMIT', 2],
        ['zintercard', 1, 'z1', 'limit', 1, 'limit', 0],
        ['zintercard', 2, 'si', 'sn', 'limit', 1],
        ['zintercard', 2, 'z1', 'missing', 'limit', 1],
    ]
    assert_same(both_resp, commands)


# -- bad input ----------------------------------------------------------------------------


def test_arity(both_resp):
    assert_same(
        both_resp,
        [
            ['zunion', 1],
            ['zinter'],
            ['zdiff', 1],
            ['zintercard', 1],
            ['zunionstore', 'd', 1],
            ['zinterstore', 'd'],
            ['zdiffstore', 'd', 1],
        ],
    )


@pytest.mark.parametrize('op', COMMANDS)
def test_numkeys_errors(both_resp, op):
    """numkeys: not an integer, < 1, or more than the arguments there are (checked
    before anything is allocated for it, however big it is)."""
    setup(both_resp)
    pre = [op, 'dst'] if op.endswith('store') else [op]
    commands = [
        pre + [n, 'z1'] for n in ('0', '-1', '-9223372036854775808', 'x', '1.0', ' 1', '', '2', '3')
    ]
    commands += [
        pre + ['9223372036854775807', 'z1'],
        pre + ['9223372036854775808', 'z1'],
        pre + ['2147483648', 'z1', 'z2'],
        pre + ['4294967297', 'z1'],
        pre + ['2', 'z1', 'z2', 'z3'],  # a third key is an unknown option
    ]
    assert_same(both_resp, commands)


def test_wrongtype_comes_before_options(both_resp):
    setup(both_resp)
    commands = []
    for op in ('zunion', 'zinter', 'zdiff', 'zintercard'):
        commands += [
            [op, 2, 'z1', 'str'],
            [op, 2, 'str', 'missing'],
            [op, 2, 'z1', 'list', 'weights', 'x', 'y'],
            [op, 2, 'z1', 'str', 'bogus'],
            [op, 1, 'str', 'limit', '-1'],
        ]
    commands += [
        ['zunionstore', 'dst', 2, 'z1', 'str'],
        ['zinterstore', 'dst', 1, 'list', 'aggregate', 'nope'],
        ['zdiffstore', 'dst', 2, 'z1', 'str'],
        ['exists', 'dst'],
    ]
    assert_same(both_resp, commands)


def test_bad_options(both_resp):
    setup(both_resp)
    commands = []
    for op in ('zunion', 'zinter'):
        commands += [
            [op, 2, 'z1', 'z2', 'weights'],
            [op, 2, 'z1', 'z2', 'weights', '1'],
            [op, 2, 'z1', 'z2', 'weights', '1', '2', '3'],
            [op, 2, 'z1', 'z2', 'aggregate'],
            [op, 2, 'z1', 'z2', 'aggregate', 'avg'],
            [op, 2, 'z1', 'z2', 'aggregate', 'sum\x00'],
            [op, 2, 'z1', 'z2', 'weights\x00x', '1', '2'],
            [op, 2, 'z1', 'z2', 'withscore'],
            [op, 2, 'z1', 'z2', 'limit', '1'],
            [op + 'store', 'dst', 2, 'z1', 'z2', 'withscores'],
            [op + 'store', 'dst', 2, 'z1', 'z2', 'weights', '1', 'x'],
        ]
    commands += [
        ['zdiff', 2, 'z1', 'z2', 'weights', '1', '2'],
        ['zdiff', 2, 'z1', 'z2', 'aggregate', 'sum'],
        ['zdiffstore', 'dst', 2, 'z1', 'z2', 'withscores'],
        ['zintercard', 2, 'z1', 'z2', 'withscores'],
        ['zintercard', 2, 'z1', 'z2', 'weights', '1', '1'],
        ['zintercard', 2, 'z1', 'z2', 'limit'],
        ['exists', 'dst'],
    ]
    assert_same(both_resp, commands)


WEIGHTS = [
    # rejected: not a float, NaN, spaces, overflow, underflow to zero, trailing bytes
    'x', '', 'nan', '-nan', 'NaN(1)', ' 1', '1 ', '1e400', '-1e400', '1e-400', '1_0',
    '1e', '0x', '1\x002', '--1', 'infx', '0x1p' + '9' * 5000, '1e-' + '9' * 5000,
    # accepted: hex floats, infinities, an inexact subnormal, signs, exponents
    '0x10', '0x1.8p1', '-0X.8', 'inf', '-INF', '+Infinity', '1e-310', '5e-324', '+.5',
    '5.', '1E3', '-0', '00012', '0x1p+0000000000000000000000003', '0x.000000001p-1040',
]  # fmt: skip


def test_weight_parsing(both_resp):
    setup(both_resp)
    commands = [['zunion', 2, 'z1', 'z3', 'weights', w, '1', 'withscores'] for w in WEIGHTS]
    commands += [['zinter', 1, 'z1', 'weights', w, 'withscores'] for w in WEIGHTS]
    assert_same(both_resp, commands)


def test_zintercard_limit_errors(both_resp):
    setup(both_resp)
    assert_same(
        both_resp,
        [
            ['zintercard', 1, 'z1', 'limit', v]
            for v in ('-1', 'x', '1.5', '', '9223372036854775808', '-9223372036854775808')
        ]
        + [['zintercard', 1, 'z1', 'limit', '9223372036854775807']],
    )


def test_strtod_matches_c():
    """The C parsing rules the weights above rely on, case by case."""
    assert strtod(b'0x') == (0.0, 1, False)
    assert strtod(b'  12abc') == (12.0, 4, False)
    assert strtod(b'infinityx') == (float('inf'), 8, False)
    assert strtod(b'1e-400') == (0.0, 6, True)
    assert strtod(b'1e-310')[2] is True  # inexact subnormal
    assert strtod(b'0x1p-1074') == (5e-324, 9, False)  # exact subnormal
    assert strtod(b'abc') == (0.0, 0, False)
    assert string2d(b'1\x00') is None
    assert string2d(b'1e-310') == 1e-310
    assert string2d(b'-0') == 0.0


# -- STORE ----------------------------------------------------------------------------


def test_store_replaces_and_deletes(both_resp):
    """STORE replaces a destination of any type and drops its TTL; an empty result
    deletes it."""
    setup(both_resp)
    commands = []
    for op in ('zunionstore', 'zinterstore', 'zdiffstore'):
        commands += [
            ['set', 'dst', 'v', 'ex', '100'],
            [op, 'dst', 2, 'z1', 'z2'],
            ['type', 'dst'],
            ['ttl', 'dst'],
            ['zrange', 'dst', 0, -1, 'withscores'],
            [op, 'dst', 1, 'missing'],
            ['exists', 'dst'],
            [op, 'dst', 1, 'missing'],
            ['rpush', 'dst', 'x'],
            [op, 'dst', 2, 'si', 'sn'],
            ['type', 'dst'],
            ['zrange', 'dst', 0, -1, 'withscores'],
            [op, 'z1', 2, 'z1', 'z2'],  # the destination is an input
            ['zrange', 'z1', 0, -1, 'withscores'],
        ]
    assert_same(both_resp, commands)


def test_store_inter_and_diff_empty(both_resp):
    setup(both_resp)
    assert_same(
        both_resp,
        [
            ['zadd', 'dst', 1, 'x'],
            ['zinterstore', 'dst', 2, 'z1', 'missing'],
            ['exists', 'dst'],
            ['zadd', 'dst', 1, 'x'],
            ['zdiffstore', 'dst', 2, 'z1', 'z1'],
            ['exists', 'dst'],
            ['zunionstore', 'dst', 2, 'missing', 'missing2'],
            ['exists', 'dst'],
        ],
    )


@pytest.fixture
def zset_limits(both):
    """set(entries, value): CONFIG SET the sorted-set listpack thresholds on both
    servers; restored after the test."""
    params = ('zset-max-listpack-entries', 'zset-max-listpack-value')
    saved = [{p: c.config_get(p)[p] for p in params} for c in both]

    def set_(entries, value):
        for c in both:
            c.config_set(params[0], entries)
            c.config_set(params[1], value)

    yield set_
    for c, old in zip(both, saved):
        for p, v in old.items():
            c.config_set(p, v)


def test_destination_encoding(both, zset_limits):
    """The stored set is a listpack when small enough, whatever its inputs were, and
    then holds no -0."""
    ours, ref = both
    zset_limits(4, 8)
    for c in both:
        c.zadd('small', {'a': 1, 'b': 2})
        c.zadd('big', {str(i): i for i in range(10)})
        c.zadd('long', {'x' * 9: 1, 'y': 2})
        c.sadd('ints', *range(6))
        c.zadd('zero', {'x': 0, 'y': -1})
    commands = [
        # a listpack stores -0 as 0, a skiplist keeps it
        ['zunionstore', 'dst', 1, 'zero', 'weights', '-1'],
        ['zscore', 'dst', 'x'],
        ['zscan', 'dst', 0],
        ['zunion', 1, 'zero', 'weights', '-1', 'withscores'],
        ['zunionstore', 'dst', 2, 'zero', 'big', 'weights', '-1', '0'],
        ['zscore', 'dst', 'x'],
        ['zinterstore', 'dst', 2, 'zero', 'zero', 'weights', '-1', '0'],
        ['zscore', 'dst', 'x'],
    ]
    for op, keys in [
        ('zunionstore', ['small']),
        ('zunionstore', ['big']),
        ('zinterstore', ['big', 'ints']),
        ('zdiffstore', ['big', 'ints']),
        ('zdiffstore', ['ints', 'small']),
        ('zunionstore', ['long']),
        ('zdiffstore', ['long', 'small']),
        ('zunionstore', ['small', 'long']),
        ('zinterstore', ['small', 'long']),
    ]:
        commands += [[op, 'dst', len(keys), *keys], ['object', 'encoding', 'dst']]
    assert_same(both, commands)


@pytest.mark.parametrize('flags', ['KEA', 'KEAn', 'Kz', 'Eg'])
def test_store_events(both, flags):
    setup(both)
    assert_same_events(
        both,
        [
            ['zunionstore', 'dst', 2, 'z1', 'z2'],
            ['zinterstore', 'dst', 2, 'z1', 'z2'],
            ['zdiffstore', 'dst', 2, 'z1', 'z2'],
            ['zdiffstore', 'dst', 1, 'missing'],  # deletes: del
            ['zdiffstore', 'dst', 1, 'missing'],  # nothing to delete: no event
            ['zinterstore', 'str', 1, 'z1'],  # overwrites another type: no new
            ['zunion', 2, 'z1', 'z2'],
            ['zintercard', 1, 'z1'],
            ['zunionstore', 'z1', 'x', 'z2'],  # an error: nothing
        ],
        flags,
    )


def test_keymiss_events_and_stats(both):
    """Every input is read as Redis reads it: hits and misses counted, `keymiss` raised
    for a missing input (even for the STORE forms)."""
    setup(both)
    commands = [
        ['zunionstore', 'dst', 3, 'z1', 'missing', 'si'],
        ['zinter', 2, 'missing', 'z1'],
        ['zintercard', 2, 'z2', 'gone'],
    ]
    assert_same_events(both, commands, 'KEm')
    for c in both:
        c.config_resetstat()
        run_all(c, commands)
    stats = [{k: c.info('stats')[k] for k in ('keyspace_hits', 'keyspace_misses')} for c in both]
    assert stats[0] == stats[1]


WATCH_CASES = [
    ['zunionstore', 'k', 1, 'z1'],
    ['zinterstore', 'k', 2, 'z1', 'missing'],  # deletes k
    ['zdiffstore', 'n', 1, 'missing'],  # n does not exist: nothing touched
    ['zunion', 2, 'k', 'z1'],
    ['zunionstore', 'k', 1, 'str'],  # WRONGTYPE: nothing touched
]


@pytest.mark.parametrize('case', WATCH_CASES, ids=lambda c: ' '.join(map(str, c)))
def test_watch_signalling(raw_pair, case):
    pair = raw_pair(2)
    setup(pair, SETUP + [('zadd', 'k', '1', 'x')])
    raw_same(pair, [('watch', 'k', 'n'), case, ('multi',), ('ping',), ('exec',)])


def test_big_inputs(both):
    """A union and intersection of a few thousand members, scores summed in Redis's
    order of inputs (smallest first), compared member by member."""
    ours, ref = both
    for c in both:
        p = c.pipeline(transaction=False)
        p.zadd('a', {f'm{i}': i / 7 for i in range(3000)})
        p.zadd('b', {f'm{i}': 1e16 / (i + 1) for i in range(0, 3000, 2)})
        p.sadd('c', *[f'm{i}' for i in range(0, 3000, 3)])
        p.execute()
    assert_same(
        both,
        [
            ['zunion', 3, 'a', 'b', 'c', 'weights', '1', '-1', '3', 'withscores'],
            ['zinter', 3, 'a', 'b', 'c', 'aggregate', 'max', 'withscores'],
            ['zdiff', 3, 'a', 'b', 'c', 'withscores'],
            ['zunionstore', 'd', 3, 'a', 'b', 'c'],
            ['object', 'encoding', 'd'],
            ['zintercard', 3, 'a', 'b', 'c', 'limit', 100],
        ],
    )


def _blocked_count(admin):
    info = admin.cmd('INFO', 'clients').decode()
    return int(info.split('blocked_clients:')[1].split('\r\n')[0])


@pytest.mark.parametrize('store', ['zunionstore', 'zinterstore', 'zdiffstore'])
def test_store_serves_a_blocked_client(server, redis_ref, both, store):
    """A client blocked in BZPOPMIN on the destination is served the new set's first
    member as the STORE command creates it."""
    transcripts = []
    for port in (server.port, redis_ref[1]):
        with RawConn(port) as admin, RawConn(port) as waiter:
            admin.cmd('ZADD', 'z1', '1', 'a', '2', 'b')
            waiter.send_commands(('BZPOPMIN', 'dst', '0'))
            wait_until(lambda admin=admin: _blocked_count(admin) == 1, 'a blocked client')
            stored = admin.cmd(store, 'dst', '1', 'z1')
            transcripts.append((stored, waiter.read_reply(), admin.cmd('ZRANGE', 'dst', 0, -1)))
    assert transcripts[0] == transcripts[1]


GETKEYS = [
    'zunionstore d 2 a b', 'zunionstore d 1 a b c', 'zunionstore d 0 a', 'zunionstore d -1 a',
    'zunionstore d 2 a', 'zunionstore d 1.0 a', 'zunionstore d 01 a', 'zunionstore d x a',
    'zunionstore d 4294967296 a', 'zunionstore d -4294967295 a', 'zdiffstore d 2 a b',
    'zinterstore d 1 a weights 1', 'zunion 2 a b withscores', 'zunion 3 a b', 'zunion 0 a',
    'zunion +1 a', 'zunion 1.0 a', 'zunion 4294967297 a b', 'zunion 4294967295 a',
    'zunion 99999999999999999999999 a', 'zinter 1 a', 'zdiff 2 a b', 'zintercard 2 a b',
    'zintercard 1 a limit 1',
]  # fmt: skip


def test_command_getkeys(raw_pair):
    """COMMAND GETKEYS: the key specs' positions (destination first) when they fit,
    else db.c's genericGetKeys (numkeys by atoi, the destination last)."""
    raw_same(raw_pair(2), [('command', 'getkeys', *line.split()) for line in GETKEYS])
