"""SORT and SORT_RO, as differential tests against redis-server 7.0.

The same commands go to our server and to the reference, through redis-py in RESP2 and
RESP3 for values and errors and as exact bytes through RawConn where the reply type
matters (GET of a missing key is a null). Lists keep their order on both servers, so
every sort of a list is compared as it is, ties included (Redis's merge sort is stable,
its partial quicksort for BY with LIMIT is ported). A set or sorted set that is not an
intset is read in Redis's hash order, which no other server shares: those sorts are
compared where the order is total (numeric, ALPHA without ties), or as multisets.

One Redis quirk shapes the tests of conversion errors: SORT tests `errno == ERANGE`
after strtod without clearing errno first, so once any strtod in redis-server overflowed
(a SORT of '1e400', a ZRANGEBYSCORE bound) a numeric SORT of non-integer strings fails
until something resets errno, such as a new connection (accept ends with EAGAIN).
`fresh_errno` opens one before such commands.
"""

import pytest
import redis

from conftest import assert_same, assert_same_events, raw_same, run_all, wait_until
from rawconn import RawConn

LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)

NUMBERS = ['3', '1', '2', '10', '-1.5', '2', '0x10', ' 4', '', '1e3', 'inf', '-inf', '-0']
WORDS = ['b', 'a', 'B', 'a\x00z', 'a\x00b', 'ab', '', '\xe9', 'a', '10', '9', 'a b']


# -- helpers --------------------------------------------------------------------------


def setup(pair, commands):
    for c in pair:
        for cmd in commands:
            c.execute_command(*cmd)


def fresh_errno(redis_ref):
    """Have redis-server accept a connection, which leaves errno at EAGAIN: SORT's
    numeric parsing then starts without a stale ERANGE (see the module comment)."""
    c = redis.Redis(*redis_ref)
    c.ping()
    c.close()


def assert_same_sorts(both, redis_ref, commands):
    """assert_same, each command on a redis-server whose errno is not stale."""
    for cmd in commands:
        fresh_errno(redis_ref)
        assert_same(both, [cmd])


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


# -- sorting lists --------------------------------------------------------------------


@pytest.mark.parametrize('name', ['sort', 'sort_ro'])
def test_numeric_and_alpha(both_resp, name):
    setup(both_resp, [['rpush', 'n', *NUMBERS], ['rpush', 'w', *WORDS]])
    commands = []
    for key in ('n', 'w', 'missing'):
        for opts in ([], ['desc'], ['asc'], ['alpha'], ['alpha', 'desc'], ['DESC', 'ASC']):
            commands.append([name, key, *opts])
    commands += [[name, 'n', 'ALPHA', 'desc', 'alpha'], [name, 'n', 'desc', 'asc', 'desc']]
    assert_same(both_resp, commands)


def test_equal_scores_order_by_bytes(both_resp):
    """Numeric ties are broken by the elements' bytes, so SORT is deterministic."""
    setup(both_resp, [['rpush', 'l', '1.0', '1', '01', '0x1', '1e0', ' 1', '2', '.5e1']])
    assert_same(both_resp, [['sort', 'l'], ['sort', 'l', 'desc'], ['sort', 'l', 'limit', 1, 3]])


LIMITS = [
    (0, 0), (0, 1), (0, -1), (1, 2), (2, 100), (-5, 2), (-1, -1), (3, 0), (4, 1),
    (5, 1), (100, 5), (LLONG_MAX, LLONG_MAX), (1, LLONG_MAX), (LLONG_MIN, 2),
    (2, LLONG_MIN), (LLONG_MAX, -1),
]  # fmt: skip


@pytest.mark.parametrize('size', [0, 1, 5])
def test_limit(both_resp, size):
    if size:
        setup(both_resp, [['rpush', 'l', *[str(i * 7 % 5) for i in range(size)]]])
        setup(both_resp, [['zadd', 'z', *[x for i in range(size) for x in (i, f'm{i}')]]])
    commands = []
    for start, count in LIMITS:
        for opts in ([], ['desc'], ['by', 'nosort'], ['by', 'nosort', 'desc'], ['alpha']):
            for key in ('l', 'z'):
                commands.append(['sort', key, 'limit', start, count, *opts])
    assert_same(both_resp, commands)


def test_limit_errors(both_resp):
    setup(both_resp, [['rpush', 'l', '1', '2']])
    assert_same(
        both_resp,
        [
            ['sort', 'l', 'limit', 'x', 1],
            ['sort', 'l', 'limit', 1, 'x'],
            ['sort', 'l', 'limit', 1],
            ['sort', 'l', 'limit'],
            ['sort', 'l', 'limit', '1.5', 1],
            ['sort', 'l', 'limit', '9223372036854775808', 1],
            ['sort', 'l', 'limit', 0, 1, 'limit', 1, 1],
        ],
    )


# -- BY and GET ---------------------------------------------------------------------------

WEIGHTED = [
    ['rpush', 'l', 'a', 'b', 'c', 'd', 'e', 'f'],
    ['set', 'w_a', '3'],
    ['set', 'w_b', '1'],
    ['set', 'w_c', '-2.5'],
    ['set', 'w_d', '1'],
    ['hset', 'h_a', 'f', 'z', 'g', '10'],
    ['hset', 'h_b', 'f', 'y', 'g', '2'],
    ['hset', 'h_c', 'f', 'y'],
    ['hset', 'h_e', 'f', 'x', 'g', '-1'],
    ['hset', 'h_f', 'other', '1'],
    ['set', 'h_d', 'a string, not a hash'],
    ['rpush', 'w_e', 'a list, not a string'],
    ['set', 'h_a->', 'plain'],
    ['set', 'x_a_y', '7'],
    ['set', 'a', '5'],
    ['set', 'c', '4'],
]

PATTERNS = [
    'w_*', 'h_*->f', 'h_*->g', 'h_*->missing', 'h_*->', 'x_*_y', '*', 'nosort', '#',
    'w_*\x00junk', 'h_*->f\x00', '*->', 'h_->f*', 'h_*->g->f', 'no_such_*',
]  # fmt: skip


def test_by_patterns(both_resp):
    """Weights from string keys and hash fields; a missing key, a missing field or a key
    of another type counts as missing (0, or first with ALPHA); a pattern without '*'
    does not sort."""
    setup(both_resp, WEIGHTED)
    commands = []
    for pattern in PATTERNS:
        for opts in ([], ['desc'], ['alpha'], ['alpha', 'desc'], ['limit', 1, 3]):
            commands.append(['sort', 'l', 'by', pattern, *opts])
    commands += [
        ['sort', 'l', 'by', 'nosort', 'by', 'w_*'],  # not sorting sticks
        ['sort', 'l', 'by', 'w_*', 'by', 'h_*->g'],  # the last pattern wins
    ]
    assert_same(both_resp, commands)


def test_get_patterns(both_resp):
    setup(both_resp, WEIGHTED)
    commands = [['sort', 'l', 'alpha', 'get', pattern] for pattern in PATTERNS]
    commands += [
        ['sort', 'l', 'by', 'w_*', 'get', '#', 'get', 'w_*', 'get', 'h_*->f'],
        ['sort', 'l', 'alpha', 'get', '#', 'get', '#', 'limit', 2, 2],
        ['sort', 'l', 'alpha', 'get', '#\x00x', 'get', 'constant'],
        ['sort', 'l', 'by', 'nosort', 'get', 'h_*->g', 'desc'],
        ['sort', 'l', 'get'],
        ['sort', 'missing', 'get', '#'],
    ]
    assert_same(both_resp, commands)


@pytest.mark.parametrize('proto', [2, 3])
def test_reply_bytes(raw_pair, proto):
    """Elements and GET values are bulk strings, a GET miss is a null ($-1 or _)."""
    pair = raw_pair(proto)
    for c in pair:
        for cmd in WEIGHTED:
            c.cmd(*cmd)
    raw_same(
        pair,
        [
            ('sort', 'l', 'alpha'),
            ('sort', 'l', 'by', 'w_*', 'get', '#', 'get', 'w_*', 'get', 'h_*->g'),
            ('sort', 'missing'),
            ('sort', 'l', 'limit', '10', '1'),
            ('sort', 'l', 'alpha', 'store', 'dst'),
            ('sort_ro', 'l', 'by', 'nosort', 'get', 'nothing'),
        ],
    )


def test_alpha_compares_c_strings_but_store_compares_bytes(both_resp):
    """ALPHA compares with strcoll (strcmp in the C locale: a string ends at a NUL), with
    STORE by bytes; equal strings keep the list's order (a stable sort)."""
    words = ['a\x00z', 'b', 'a', 'a\x00b', 'a\x00z', '\xff', 'a\x00', 'A', '']
    setup(both_resp, [['rpush', 'l', *words]])
    for i, w in enumerate(words):
        setup(both_resp, [['set', f'w_{i}', w], ['rpush', 'idx', i]])
    commands = []
    for opts in ([], ['desc']):
        commands += [
            ['sort', 'l', 'alpha', *opts],
            ['sort', 'l', 'alpha', 'store', 'dst', *opts],
            ['lrange', 'dst', 0, -1],
            ['sort', 'idx', 'by', 'w_*', 'alpha', *opts],
            ['sort', 'idx', 'by', 'w_*', 'alpha', 'store', 'dst', *opts],
            ['lrange', 'dst', 0, -1],
        ]
    assert_same(both_resp, commands)


def test_partial_sort_places_ties_as_redis(both):
    """BY with a LIMIT that cuts the vector: Redis's partial quicksort is not stable, so
    equal ALPHA weights (and missing ones) land where its algorithm puts them."""
    n = 60
    setup(both, [['rpush', 'l', *[f'e{i}' for i in range(n)]]])
    setup(both, [['set', f'w_e{i}', f'{i * 7 % 4}'] for i in range(0, n, 3)])
    commands = []
    for start, count in [(0, 10), (5, 20), (30, 30), (59, 1), (0, 59), (1, 59), (10, -1)]:
        for opts in ([], ['desc']):
            commands.append(['sort', 'l', 'by', 'w_*', 'alpha', 'limit', start, count, *opts])
            commands.append(['sort', 'l', 'by', 'w_*', 'limit', start, count, *opts])
    for size in (7, 8, 40, 41):
        commands.append(['sort', 'l', 'by', 'w_*', 'alpha', 'limit', 0, size])
    assert_same(both, commands)


# -- sets and sorted sets -------------------------------------------------------------


def test_sets_and_sorted_sets(both_resp):
    setup(
        both_resp,
        [
            ['sadd', 'ints', '5', '-3', '100', '0', '7'],  # an intset: ascending order
            ['sadd', 'strs', 'b', 'a', 'c', '10', '9'],
            ['zadd', 'z', '3', 'c', '1', 'a', '2', 'b', '2', 'bb', '-1', 'z'],
            ['set', 'w_a', '9'],
            ['set', 'w_c', '-1'],
        ],
    )
    commands = []
    for opts in ([], ['desc'], ['limit', 1, 2], ['by', 'nosort'], ['by', 'nosort', 'desc']):
        commands += [['sort', 'ints', *opts], ['sort', 'z', 'alpha', *opts]]
        if 'nosort' not in opts:  # a hashtable set not sorted is in hash order
            commands += [['sort', 'strs', 'alpha', *opts]]
    commands += [
        ['sort', 'z', 'by', 'nosort', 'limit', 1, 3],
        ['sort', 'z', 'by', 'nosort', 'limit', 1, 3, 'desc'],
        ['sort', 'z', 'by', 'w_*'],
        ['sort', 'z', 'by', 'w_*', 'desc', 'get', '#', 'get', 'w_*'],
        # not sorting a set into STORE sorts it ALPHA, so the stored list is not random
        ['sort', 'strs', 'by', 'nosort', 'store', 'dst'],
        ['lrange', 'dst', 0, -1],
        ['sort', 'ints', 'by', 'nosort', 'desc', 'limit', 1, 2, 'store', 'dst'],
        ['lrange', 'dst', 0, -1],
    ]
    assert_same(both_resp, commands)
    ours, ref = both_resp
    # a hashtable set not sorted comes out in hash order: the same members
    for c in both_resp:
        assert sorted(c.execute_command('sort', 'strs', 'by', 'nosort')) == sorted(
            [b'a', b'b', b'c', b'10', b'9']
        )


def test_sorting_a_sorted_set_converts_it(both):
    """Redis converts a listpack sorted set to a skiplist to sort it, for good, even
    for SORT_RO."""
    setup(both, [['zadd', 'z', 1, 'a', 2, 'b'], ['zadd', 'y', 1, 'a']])
    assert_same(
        both,
        [
            ['object', 'encoding', 'z'],
            ['sort_ro', 'z', 'alpha', 'limit', 0, 0],
            ['object', 'encoding', 'z'],
            ['sort', 'y', 'by', 'nosort'],
            ['object', 'encoding', 'y'],
        ],
    )


# -- bad input ----------------------------------------------------------------------------


def test_syntax_and_type_errors(both_resp):
    setup(both_resp, [['set', 'str', 'x'], ['hset', 'h', 'f', 'v'], ['rpush', 'l', '1']])
    assert_same(
        both_resp,
        [
            ['sort'],
            ['sort_ro'],
            ['sort', 'l', 'bogus'],
            ['sort', 'l', 'by'],
            ['sort', 'l', 'get'],
            ['sort', 'l', 'store'],
            ['sort', 'l', 'alpha\x00x'],  # options end at a NUL, as strcasecmp sees them
            ['sort', 'l', 'DESC', 'Alpha', 'LiMiT', 0, 1],
            ['sort_ro', 'l', 'store', 'dst'],
            ['sort_ro', 'l', 'STORE'],
            ['sort', 'str'],
            ['sort', 'h', 'alpha'],
            ['sort', 'str', 'bogus'],  # options are parsed before the key is looked up
            ['sort', 'str', 'limit', 'x', 'y'],
            ['sort', 'str', 'store', 'dst'],
            ['exists', 'dst'],
        ],
    )


CONVERSION_CASES = [
    ['abc'], ['1', 'nan'], ['1 '], ['1e400'], ['-1e400'], ['1e-400'], ['1e-310'],
    ['1e'], ['0x'], ['1', '2\x003'], ['inf', '-INF', '0x1p-1074', ' 7', '', '5e-324x'],
    ['nan(123)'], ['2.5', '-0', '1e308'], ['0x1p' + '9' * 5000], ['0x1p-1074', '0x3p-1075'],
]  # fmt: skip


@pytest.mark.parametrize('elements', CONVERSION_CASES, ids=repr)
def test_conversion_errors(both_resp, redis_ref, elements):
    """Weights that C's strtod does not take whole, NaN, or that over/underflow (an
    inexact subnormal included): 'One or more scores can't be converted into double',
    after every weight was looked up; from the elements or through BY."""
    setup(both_resp, [['rpush', 'l', *elements, 'ok']])
    setup(both_resp, [['rpush', 'keys', *range(len(elements))]])
    setup(both_resp, [['set', f'w_{i}', e] for i, e in enumerate(elements)])
    setup(both_resp, [['hset', f'h_{i}', 'f', e] for i, e in enumerate(elements)])
    assert_same_sorts(
        both_resp,
        redis_ref,
        [
            ['sort', 'l'],
            ['sort', 'l', 'alpha'],
            ['sort', 'l', 'by', 'nosort'],
            ['sort', 'keys', 'by', 'w_*'],
            ['sort', 'keys', 'by', 'h_*->f', 'desc', 'limit', 0, 1],
            ['sort', 'keys', 'by', 'w_*', 'alpha'],
            ['sort', 'l', 'store', 'dst'],
            ['exists', 'dst'],
        ],
    )


# -- STORE ----------------------------------------------------------------------------


def test_store(both_resp):
    setup(both_resp, WEIGHTED)
    assert_same(
        both_resp,
        [
            ['set', 'dst', 'v', 'ex', 100],
            ['sort', 'l', 'alpha', 'store', 'dst'],
            ['type', 'dst'],
            ['ttl', 'dst'],
            ['lrange', 'dst', 0, -1],
            # GET misses are stored as empty strings
            ['sort', 'l', 'by', 'w_*', 'get', '#', 'get', 'h_*->g', 'store', 'dst'],
            ['lrange', 'dst', 0, -1],
            ['sort', 'l', 'limit', 0, 0, 'store', 'dst'],  # empty: deletes
            ['exists', 'dst'],
            ['sort', 'missing', 'store', 'dst'],
            ['hset', 'dst', 'f', 'v'],
            ['sort', 'l', 'alpha', 'limit', 1, 2, 'store', 'dst', 'store', 'dst2'],
            ['exists', 'dst'],
            ['lrange', 'dst2', 0, -1],
            ['sort', 'l', 'alpha', 'desc', 'store', 'l'],  # the source itself
            ['lrange', 'l', 0, -1],
        ],
    )


@pytest.mark.parametrize('flags', ['KEA', 'KEAn', 'Kl', 'Eg', 'KEm'])
def test_events(both, flags):
    """`new` (n) when STORE creates its key, `sortstore` (l); an empty result deletes
    the destination with `del` (g); every BY and GET look-up that misses raises
    `keymiss` (m); a plain SORT raises nothing else."""
    setup(both, WEIGHTED)
    assert_same_events(
        both,
        [
            ['sort', 'l', 'alpha', 'store', 'dst'],
            ['sort', 'l', 'alpha', 'store', 'dst'],
            ['sort', 'l', 'by', 'w_*', 'get', 'h_*->f', 'get', 'nope_*'],
            ['sort', 'l', 'limit', 0, 0, 'store', 'dst'],
            ['sort', 'l', 'limit', 0, 0, 'store', 'dst'],
            ['sort', 'l', 'alpha', 'store', 'a'],  # overwrites a string: no new
            ['sort', 'missing', 'store', 'dst'],
            ['sort', 'l', 'bogus', 'store', 'dst'],
        ],
        flags,
    )


def test_keyspace_stats(both):
    """The key and every pattern look-up are reads (hits and misses), even with STORE."""
    setup(both, WEIGHTED)
    commands = [
        ['sort', 'l', 'by', 'w_*', 'get', 'h_*->f', 'get', '#'],
        ['sort', 'l', 'by', 'nosort', 'get', 'x_*_y', 'store', 'dst'],
        ['sort', 'missing', 'by', 'w_*'],
        ['sort_ro', 'l', 'alpha', 'by', 'h_*->g'],
    ]
    for c in both:
        c.config_resetstat()
        run_all(c, commands)
    stats = [{k: c.info('stats')[k] for k in ('keyspace_hits', 'keyspace_misses')} for c in both]
    assert stats[0] == stats[1]


WATCH_CASES = [
    ['sort', 'l', 'store', 'k'],
    ['sort', 'l', 'limit', 0, 0, 'store', 'k'],  # deletes k
    ['sort', 'l', 'limit', 0, 0, 'store', 'n'],  # n does not exist: nothing touched
    ['sort', 'k', 'alpha'],
    ['sort', 'l', 'bogus', 'store', 'k'],
]


@pytest.mark.parametrize('case', WATCH_CASES, ids=lambda c: ' '.join(map(str, c)))
def test_watch_signalling(raw_pair, case):
    pair = raw_pair(2)
    for c in pair:
        c.cmd('rpush', 'l', '2', '1')
        c.cmd('rpush', 'k', 'x')
    raw_same(pair, [('watch', 'k', 'n'), case, ('multi',), ('ping',), ('exec',)])


def test_big_list(both):
    """A few thousand elements, numeric and ALPHA, through BY and GET."""
    n = 3000
    for c in both:
        p = c.pipeline(transaction=False)
        p.rpush('l', *[str((i * 7919) % 1000 / 8) for i in range(n)])
        p.rpush('k', *range(n))
        p.mset({f'w_{i}': (i * 31) % 97 for i in range(0, n, 2)})
        p.execute()
    assert_same(
        both,
        [
            ['sort', 'l'],
            ['sort', 'l', 'alpha', 'desc'],
            ['sort', 'k', 'by', 'w_*', 'get', '#', 'get', 'w_*'],
            ['sort', 'k', 'by', 'w_*', 'alpha', 'limit', 100, 50],
            ['sort', 'k', 'by', 'nosort', 'desc', 'limit', 2000, 5],
        ],
    )


def _blocked_count(admin):
    info = admin.cmd('INFO', 'clients').decode()
    return int(info.split('blocked_clients:')[1].split('\r\n')[0])


def test_store_serves_a_blocked_client(server, redis_ref, both):
    """A client blocked in BLPOP on the destination is served the stored list's head."""
    transcripts = []
    for port in (server.port, redis_ref[1]):
        with RawConn(port) as admin, RawConn(port) as waiter:
            admin.cmd('RPUSH', 'l', '3', '1', '2')
            waiter.send_commands(('BLPOP', 'dst', '0'))
            wait_until(lambda admin=admin: _blocked_count(admin) == 1, 'a blocked client')
            stored = admin.cmd('SORT', 'l', 'STORE', 'dst')
            transcripts.append((stored, waiter.read_reply(), admin.cmd('LRANGE', 'dst', 0, -1)))
    assert transcripts[0] == transcripts[1]


GETKEYS = [
    'sort k', 'sort k store d', 'sort k store d1 by x store d2', 'sort k limit store x store',
    'sort k get store by store d', 'sort k store', 'sort k STORE d alpha', 'sort_ro k',
    'sort_ro k store d', 'sort k limit 0 1 store d get # by w_*',
]  # fmt: skip


def test_command_getkeys(raw_pair):
    """COMMAND GETKEYS: the key, and the last STORE's key found as sortGetKeys finds it."""
    raw_same(raw_pair(2), [('command', 'getkeys', *line.split()) for line in GETKEYS])
