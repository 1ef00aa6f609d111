"""Sorted-set core commands (store/commands/zsets.py), as differential tests against
redis-server 7.0: ZADD ZINCRBY ZREM ZCARD ZSCORE ZMSCORE ZRANK ZREVRANK ZRANDMEMBER ZSCAN.

Replies are compared byte for byte (raw connections) in RESP2 and RESP3, error text
included: every ZADD option and conflict, scores in every spelling strtod has (and those it
refuses: NaN, overflow, underflow, spaces), inf arithmetic, huge counts, wrong types, wrong
arity. OBJECT ENCODING is compared under lowered thresholds (CONFIG SET on both servers,
restored after). Keyspace events are captured by a real subscriber on both servers;
WATCH signalling is compared command by command. The pops are tests/test_zset_pops.py.
"""

import random
import shlex

import pytest
import redis

from conftest import assert_same_events, raw_same
from rawconn import RawConn

pytestmark = pytest.mark.differential

LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)


@pytest.fixture
def small_limits(server, redis_ref):
    """zset-max-listpack-entries 4 and -value 8 on both servers, restored after."""
    names = ('zset-max-listpack-entries', 'zset-max-listpack-value')
    conns = [RawConn(server.port), RawConn(redis_ref[1])]
    saved = [[c.cmd('CONFIG', 'GET', n).split(b'\r\n')[-2] for n in names] for c in conns]
    for c in conns:
        c.cmd('CONFIG', 'SET', names[0], '4', names[1], '8')
    yield
    for c, values in zip(conns, saved):
        c.cmd('CONFIG', 'SET', names[0], values[0], names[1], values[1])
        c.close()


def cmds(text):
    """One command per line, arguments split as a shell splits them ('' is an empty
    argument)."""
    return [tuple(shlex.split(line)) for line in text.strip().splitlines() if line.strip()]


# -- replies, byte for byte -------------------------------------------------------------

ZADD = cmds("""
zadd z 1 a 2 b 3 c
zadd z 1 a
zadd z ch 5 a
zadd z nx 10 a 11 d
zadd z xx 10 a 11 e
zadd z xx ch 10 a 12 b
zadd z gt 1 a
zadd z gt ch 100 a
zadd z lt ch 1 a 200 b
zadd z gt ch 50 new
zadd z lt 40 new2
zadd z GT lt 1 a
zadd z nx xx 1 a
zadd z xx nx 1 a
zadd z nx gt 1 a
zadd z lt nx 1 a
zadd z nx xx gt 1 a
zadd z incr 1 a 2 b
zadd z nx xx incr 1 a 2 b
zadd z incr 1.5 a
zadd z INCR nx 1 a
zadd z incr xx 1 nomember
zadd z incr gt -5 a
zadd z incr lt -5 a
zadd z incr lt 0 a
zadd z incr gt 0 a
zadd z incr ch 3 a
zadd z ch incr nx 3 brand
zadd z 1
zadd z 1 a 2
zadd z nx
zadd z xx nx
zadd z ch ch
zadd z nx nx 7 a
zadd z Nx 8 a
zadd z chx 1 a
zadd z abc a
zadd z 1 a abc b
zadd z nan a
zadd z incr nan a
zadd z zz nx 1 a
zadd z
zadd z 1 a 1 a 2 a
zadd z ch 1 a 1 a 2 a
zcard z
zrange z 0 -1 withscores
zadd nokey xx 1 a
zadd nokey xx incr 1 a
zadd nokey xx ch 1 a 2 b
exists nokey
zadd nokey2 incr 5 m
zadd nokey3 gt 5 m
zadd nokey4 nx incr 0 m
zrange nokey4 0 -1 withscores
set str x
zadd str 1 a
zadd str abc a
zadd str xx 1 a
zadd str nx xx 1 a
zincrby str 1 a
zincrby str x a
""")

ZINCRBY = cmds("""
zincrby z 1 a
zincrby z 1 a
zincrby z -2.5 a
zincrby z 0 a
zincrby z abc a
zincrby z '' a
zincrby z nx a
zincrby z incr a
zincrby z xx a
zincrby z 1e308 big
zincrby z 1e308 big
zincrby z -inf big
zincrby z inf i
zincrby z -inf i
zincrby z inf i
zincrby z +inf i
zadd z incr -inf i
zscore z i
zadd z -inf j
zadd z incr inf j
zscore z j
zincrby z 0.1 f
zincrby z 0.2 f
zincrby z
zincrby z 1
zincrby z 1 a b
zrange z 0 -1 withscores
""")

SCORES = cmds(f"""
zadd z 0.1 a
zadd z 1e-310 b
zadd z 1e300 c
zadd z -1.5e-5 d
zadd z 0x10 e
zadd z -0x.8p1 f
zadd z 0X1P-2 g
zadd z 123456789012345678 h
zadd z 1e17 i
zadd z 4611686018427387904 j
zadd z 9223372036854775808 k
zadd z 3.0 l
zadd z .5 m
zadd z 5. n
zadd z +7 o
zadd z 1E+3 p
zadd z 00012 q
zadd z -infinity r
zadd z INF s
zadd z +Infinity t
zadd z 4.9e-324 u
zadd z 2.5e-324 v
zadd z 0x1p-1074 w
zadd z 1.7976931348623157e308 x
zadd z 0e999999 y
zadd z -0.0 zz
zadd z {'9' * 299} nines
zadd z {'9' * 309} bad
zadd z {'0' * 400} zeros
zadd z {'0' * 400}1 one
zadd z 1e400 bad
zadd z -1e400 bad
zadd z 1e-400 bad
zadd z 2e-324 bad
zadd z 0x1p-1080 bad
zadd z 0x1p99999 bad
zadd z 1.7976931348623159e308 bad
zadd z ' 1' bad
zadd z '1 ' bad
zadd z '1_0' bad
zadd z 1e bad
zadd z e5 bad
zadd z 1.5.5 bad
zadd z '' bad
zadd z 0x bad
zadd z 0xg bad
zadd z 1p3 bad
zadd z nan bad
zadd z -nan bad
zadd z NaN bad
zadd z infinit bad
zadd z inff bad
zadd z '+ 1' bad
zadd z '\t1' bad
zadd z 1,5 bad
exists bad
zscore z bad
zrange z 0 -1 withscores
zscan z 0
zscore z b
zscore z h
zscore z i
zscore z j
zscore z zz
zmscore z a b c d e f g nosuch h i j k l r s t u v w x y zz
zscore z {'9' * 400}
""")

READS = cmds("""
zadd z 1 a 2 b 3 c 3 d -1 e
zcard z
zcard nokey
zscore z a
zscore z nosuch
zscore nokey a
zmscore z a nosuch b
zmscore nokey a b
zmscore z
zrank z e
zrank z a
zrank z d
zrank z nosuch
zrank nokey a
zrevrank z e
zrevrank z d
zrevrank z c
zrevrank z nosuch
zrevrank nokey a
zrank z
zrank z a b
zrevrank z
zscore z
zscore z a b
zcard
zcard z z
set str x
zcard str
zscore str a
zmscore str a
zrank str a
zrevrank str a
zrandmember str
zrandmember str 0
zrandmember str 1 withscores
zscan str 0
zrem str a
""")

ZREM = cmds("""
zadd z 1 a 2 b 3 c
zrem z nosuch
zrem z a nosuch
zrem z a
zrem nokey a
zrem z
zrem z b c b c
exists z
zadd z 1 a 2 b
zrem z a b nosuch a
exists z
""")

ZRANDMEMBER = cmds(f"""
zadd z 1 a 2 b 3 c 3 d -1 e
zrandmember z 5
zrandmember z 6
zrandmember z {LLONG_MAX}
zrandmember z 5 withscores
zrandmember z 100 WITHSCORES
zrandmember z 0
zrandmember z 0 withscores
zrandmember z -0
zrandmember z {LLONG_MIN}
zrandmember z {LLONG_MIN} withscores
zrandmember z {LLONG_MAX} withscores
zrandmember z {LLONG_MAX // 2 + 1} withscores
zrandmember z {-(LLONG_MAX // 2) - 1} withscores
zrandmember z {LLONG_MAX // 2} withscores
zrandmember z {LLONG_MAX}0
zrandmember z x
zrandmember z 1.5
zrandmember z 1 foo
zrandmember z 1 withscores x
zrandmember z x foo
zrandmember z {LLONG_MIN} foo
zrandmember z {LLONG_MAX // 2 + 1} foo
zrandmember nokey
zrandmember nokey 5
zrandmember nokey -5 withscores
zrandmember nokey {-(LLONG_MAX // 2)} withscores
zrandmember nokey {LLONG_MAX // 2 + 1} withscores
zrandmember nokey x
zrandmember
""")

ZSCAN = cmds("""
zadd z 3 c 1 a 2 b 2 bb 1.5 x -0 zero inf top
zscan z 0
zscan z 0 count 1
zscan z 0 match b*
zscan z 0 MATCH * COUNT 100
zscan z 0 count 0
zscan z 0 count -1
zscan z 0 count x
zscan z 0 match
zscan z 0 foo bar
zscan z x
zscan z -1
zscan z 18446744073709551616
zscan nokey 0
zscan nokey 0 count 0
zscan nokey x
zscan z
""")


@pytest.mark.parametrize('proto', [2, 3], ids=['resp2', 'resp3'])
@pytest.mark.parametrize(
    'commands',
    [ZADD, ZINCRBY, SCORES, READS, ZREM, ZRANDMEMBER, ZSCAN],
    ids=['zadd', 'zincrby', 'scores', 'reads', 'zrem', 'zrandmember', 'zscan'],
)
def test_replies_match_redis(fresh_raw_pair, proto, commands):
    raw_same(fresh_raw_pair(proto), commands)


def test_wrong_arity(fresh_raw_pair):
    raw_same(
        fresh_raw_pair(2),
        cmds("""
        zadd z 1
        zadd z
        zincrby z 1
        zrem z
        zcard
        zscore z
        zmscore z
        zrank z
        zrevrank z a b
        zrandmember
        zscan z
        """),
    )


def test_inf_arithmetic(fresh_raw_pair):
    """inf + -inf is NaN: refused, the score stays; inf stays inf under finite steps."""
    for proto in (2, 3):
        raw_same(
            fresh_raw_pair(proto),
            cmds("""
            zincrby z inf m
            zincrby z 1e308 m
            zincrby z -inf m
            zadd z incr -inf m
            zscore z m
            zincrby z -inf n
            zincrby z inf n
            zincrby z -1e308 n
            zscore z n
            zincrby z 1.7976931348623157e308 o
            zincrby z 1.7976931348623157e308 o
            zincrby z -inf o
            zrange z 0 -1 withscores
            """),
        )


def test_binary_and_large_members(fresh_raw_pair):
    big = 'x' * 100_000
    raw_same(
        fresh_raw_pair(2),
        [
            ('zadd', 'z', '1', b'\x00\xff\r\n', '1', '', '2', big, '0', '-0', '1', b'a\x00'),
            ('zrange', 'z', '0', '-1', 'withscores'),
            ('zscore', 'z', big),
            ('zrank', 'z', b'a\x00'),
            ('zrank', 'z', 'a'),
            ('zrem', 'z', b'\x00\xff\r\n', big),
            ('zrange', 'z', '0', '-1', 'withscores'),
            ('object', 'encoding', 'z'),
        ],
    )


# -- encodings ------------------------------------------------------------------------------


def test_encoding_follows_the_thresholds(fresh_raw_pair, small_limits):
    """A listpack while at most 4 members of at most 8 bytes; converted before the member
    that does not fit, for good; -0 is stored as 0 in a listpack only; ZSCAN shows a
    listpack's integral scores as integers."""
    for proto in (2, 3):
        raw_same(
            fresh_raw_pair(proto),
            cmds("""
            zadd z 1 a 2 b 3 c 4 d
            object encoding z
            zadd z 5 e
            object encoding z
            zrem z a b c d
            object encoding z
            zadd l -0 a 1e17 b 1 c
            object encoding l
            zscore l a
            zscan l 0
            zadd l incr -0 n
            zscore l n
            zadd l 1 a
            zadd l -0 a
            zscore l a
            zadd long 1 aaaaaaaaa
            object encoding long
            zadd short 1 aaaaaaaa
            object encoding short
            zadd short 1 bbbbbbbbb
            object encoding short
            zadd mixed -0 aaaaaaaaa
            zscore mixed aaaaaaaaa
            zadd five -0 a -0 b -0 c -0 d -0 e
            zmscore five a b c d e
            object encoding five
            zadd first 1 a 2 bbbbbbbbb
            object encoding first
            zincrby inc 1 aaaaaaaaa
            object encoding inc
            zadd zero 1 a
            config set zset-max-listpack-entries 0
            zadd zero 2 a
            object encoding zero
            zadd zero 3 b
            object encoding zero
            zadd fresh -0 a
            object encoding fresh
            zscore fresh a
            zscan fresh 0
            config set zset-max-listpack-entries 4
            """),
        )


def test_lowered_thresholds_convert_only_on_insert(fresh_raw_pair, small_limits):
    """A listpack bigger than a lowered threshold stays one until a member is added."""
    raw_same(
        fresh_raw_pair(2),
        cmds("""
        config set zset-max-listpack-entries 128 zset-max-listpack-value 64
        zadd z 1 a 2 b 3 c 4 d 5 e 6 f 7 longmemberxxxx
        config set zset-max-listpack-entries 4 zset-max-listpack-value 8
        object encoding z
        zadd z 9 a
        zincrby z 1 longmemberxxxx
        zadd z 2 f
        zrem z a
        object encoding z
        zadd z 1 g
        object encoding z
        """),
    )


def test_huge_sets_switch_to_skiplist_at_the_default_threshold(fresh_raw_pair):
    pair = fresh_raw_pair(2)
    args = []
    for i in range(128):
        args += [str(i), f'm{i}']
    raw_same(
        pair,
        [
            ('zadd', 'z', *args),
            ('object', 'encoding', 'z'),
            ('zadd', 'z', '1000', 'last'),
            ('object', 'encoding', 'z'),
            ('zadd', 'y', '1', 'x' * 64),
            ('object', 'encoding', 'y'),
            ('zadd', 'y', '1', 'x' * 65),
            ('object', 'encoding', 'y'),
        ],
    )


# -- ZRANDMEMBER ----------------------------------------------------------------------------


def _client(port, proto):
    c = redis.Redis(port=port, protocol=proto)
    c.response_callbacks.clear()
    return c


@pytest.mark.parametrize('proto', [2, 3], ids=['resp2', 'resp3'])
@pytest.mark.parametrize('size', [5, 300], ids=['listpack', 'skiplist'])
def test_zrandmember_random_shapes(server, redis_ref, proto, size):
    """Random picks differ between servers: compare the shapes and what they may hold."""
    members = {f'm{i}'.encode(): float(i) for i in range(size)}
    pairs = []
    for m, s in members.items():
        pairs += [s, m]
    for port in (server.port, redis_ref[1]):
        c = _client(port, proto)
        c.flushall()
        c.execute_command('ZADD', 'z', *pairs)
        one = c.execute_command('ZRANDMEMBER', 'z')
        assert one in members
        for count in (1, 2, 3, size - 1, -1, -3, -size, -3 * size):
            got = c.execute_command('ZRANDMEMBER', 'z', count)
            assert len(got) == abs(count)
            assert set(got) <= set(members)
            if count > 0:
                assert len(set(got)) == count
            ws = c.execute_command('ZRANDMEMBER', 'z', count, 'WITHSCORES')
            if proto == 2:
                assert len(ws) == 2 * abs(count)
                flat = list(zip(ws[::2], ws[1::2]))
                assert all(members[m] == float(s) for m, s in flat)
            else:
                assert len(ws) == abs(count)
                assert all(type(p) is list and members[p[0]] == p[1] for p in ws)
        c.close()


def test_zrandmember_bounds_a_huge_negative_count(r):
    """Redis 7.0 would build a reply of 2**63 elements until memory runs out: this server
    answers Redis's 'value is out of range' beyond MAX_RANDOM_REPLY_BYTES instead, and
    allocates nothing in proportion to the count for a missing key."""
    r.response_callbacks.clear()
    r.execute_command('ZADD', 'z', 1, 'a', 2, 'b')
    for args in ([-LLONG_MAX], [-(LLONG_MAX // 2), 'WITHSCORES'], [-(10**12)]):
        with pytest.raises(redis.ResponseError, match='^value is out of range$'):
            r.execute_command('ZRANDMEMBER', 'z', *args)
    assert r.execute_command('ZRANDMEMBER', 'nokey', -LLONG_MAX) == []
    assert len(r.execute_command('ZRANDMEMBER', 'z', -100_000)) == 100_000
    assert r.execute_command('ZRANDMEMBER', 'z', LLONG_MAX) == [b'b', b'a']


# -- ZSCAN ----------------------------------------------------------------------------------


def test_zscan_of_a_big_zset_returns_each_member_once(r):
    """A skiplist sorted set is walked by cursor; members present during the whole walk
    come back exactly once, with their current score, while others come and go."""
    r.response_callbacks.clear()
    rng = random.Random(7)
    base = {f'm{i}'.encode(): float(i) for i in range(2000)}
    for start in range(0, 2000, 500):
        chunk = list(base.items())[start : start + 500]
        r.execute_command('ZADD', 'z', *[x for m, s in chunk for x in (s, m)])
    assert r.execute_command('OBJECT', 'ENCODING', 'z') == b'skiplist'
    seen = {}
    cursor = b'0'
    extra = 0
    while True:
        cursor, items = r.execute_command('ZSCAN', 'z', cursor, 'COUNT', 37)
        for m, s in zip(items[::2], items[1::2]):
            seen[m] = seen.get(m, 0) + 1
            if m in base:
                assert float(s) == base[m] or float(s) == base[m] + 0.5
        # concurrent changes: new members, removals of new members, score changes
        for _ in range(5):
            extra += 1
            r.execute_command('ZADD', 'z', rng.random(), b'new%d' % extra)
        r.execute_command('ZREM', 'z', b'new%d' % rng.randrange(1, extra + 1))
        m = rng.choice(list(base))
        if r.execute_command('ZSCORE', 'z', m) == b'%d' % base[m]:
            r.execute_command('ZINCRBY', 'z', 0.5, m)
        if cursor == b'0':
            break
    for m in base:
        assert seen.get(m) == 1, m
    assert all(n == 1 for n in seen.values())


def test_zscan_match_on_a_skiplist(r):
    r.response_callbacks.clear()
    r.execute_command('ZADD', 'z', *[x for i in range(300) for x in (i, f'k{i}')])
    found = []
    cursor = b'0'
    while True:
        cursor, items = r.execute_command('ZSCAN', 'z', cursor, 'MATCH', 'k1?', 'COUNT', 50)
        found += items[::2]
        if cursor == b'0':
            break
    assert sorted(found) == sorted(b'k1%d' % i for i in range(10))


# -- keyspace events -----------------------------------------------------------------------

EVENT_COMMANDS = [
    ('zadd', 'z', '1', 'a', '2', 'b'),
    ('zadd', 'z', '1', 'a'),
    ('zadd', 'z', 'ch', '5', 'a'),
    ('zadd', 'z', 'nx', '9', 'a'),
    ('zadd', 'z', 'xx', '9', 'nosuch'),
    ('zadd', 'z', 'incr', '1', 'a'),
    ('zadd', 'z', 'incr', 'gt', '-1', 'a'),
    ('zadd', 'nokey', 'xx', '1', 'a'),
    ('zadd', 'z', 'gt', '1', 'a'),
    ('zincrby', 'z', '0', 'a'),
    ('zincrby', 'z', '2', 'a'),
    ('zincrby', 'new', '2', 'a'),
    ('zincrby', 'z', 'inf', 'i'),
    ('zincrby', 'z', '-inf', 'i'),
    ('zadd', 'z', 'x', 'a'),
    ('zadd', 'z', 'nx', 'xx', '1', 'a'),
    ('zrem', 'z', 'nosuch'),
    ('zrem', 'z', 'a'),
    ('zrem', 'z', 'b', 'i', 'c'),
    ('zrem', 'new', 'a'),
    ('zrem', 'nokey', 'a'),
    ('set', 's', 'x'),
    ('zadd', 's', '1', 'a'),
    ('zrem', 's', 'a'),
    ('zadd', 'r', '1', 'a', '2', 'b'),
    ('zscore', 'r', 'a'),
    ('zrandmember', 'r', '-3'),
    ('zscan', 'r', '0'),
    ('zcard', 'nokey'),
    ('zscore', 'nokey', 'a'),
    ('zrank', 'nokey', 'a'),
]


@pytest.mark.parametrize('flags', ['KEA', 'KEAn', 'Kz', 'Eg', 'Em'])
def test_keyspace_events_match_redis(both, flags):
    events = assert_same_events(both, EVENT_COMMANDS, flags)
    if flags == 'KEAn':
        assert len(events) > 20


# -- WATCH ----------------------------------------------------------------------------------

WATCH_CASES = [
    [('zadd', 'z', '1', 'a')],
    [('zadd', 'z', '5', 'a')],
    [('zadd', 'z', 'nx', '5', 'a')],
    [('zadd', 'z', 'xx', '5', 'nosuch')],
    [('zadd', 'z', 'gt', '0', 'a')],
    [('zadd', 'z', 'lt', '0', 'a')],
    [('zadd', 'k', '1', 'a')],
    [('zadd', 'k', 'xx', '1', 'a')],
    [('zadd', 'z', 'x', 'a')],
    [('zincrby', 'z', '0', 'a')],
    [('zincrby', 'z', '1', 'a')],
    [('zincrby', 'k', '1', 'a')],
    [('zincrby', 'z', 'inf', 'a'), ('zincrby', 'z', '-inf', 'a')],
    [('zrem', 'z', 'nosuch')],
    [('zrem', 'z', 'a')],
    [('zrem', 'z', 'a', 'b', 'c')],
    [('zrem', 'k', 'a')],
    [('zcard', 'z')],
    [('zscore', 'z', 'a')],
    [('zmscore', 'z', 'a')],
    [('zrank', 'z', 'a')],
    [('zrandmember', 'z', '5')],
    [('zscan', 'z', '0')],
]


@pytest.mark.parametrize('case', WATCH_CASES, ids=lambda c: ' '.join(c[0]))
def test_watch_signalling_matches_redis(fresh_raw_pair, case):
    """A WATCHed key is signalled by a command that changed it (the client's own commands
    count too), and only then."""
    pair = fresh_raw_pair(2)
    for c in pair:
        c.cmd('zadd', 'z', '1', 'a', '2', 'b', '3', 'c')
    raw_same(pair, [('watch', 'k', 'z')] + case + [('multi',), ('ping',), ('exec',)])


# -- random walk ----------------------------------------------------------------------------


def _random_command(rng):
    key = rng.choice(['a', 'b', 'c'])
    m = rng.choice(['x', 'y', 'z', '1', ''])
    score = rng.choice(['0', '1', '-1', '2.5', 'inf', '-inf', '1e308', '-0', '0.1', 'x'])
    opts = rng.sample(['nx', 'xx', 'gt', 'lt', 'ch', 'incr'], rng.randrange(3))
    return rng.choice(
        [
            ('zadd', key, score, m),
            ('zadd', key, *opts, score, m),
            ('zadd', key, *opts, score, m, '3', 'w'),
            ('zincrby', key, score, m),
            ('zrem', key, m, 'y'),
            ('zcard', key),
            ('zscore', key, m),
            ('zmscore', key, m, 'x', 'y'),
            ('zrank', key, m),
            ('zrevrank', key, m),
            ('zrange', key, '0', '-1', 'withscores'),
            ('zrandmember', key, '100', 'withscores'),
            ('zpopmin', key),
            ('zpopmax', key, '2'),
            ('set', key, 'str'),
            ('del', key),
            ('object', 'encoding', key),
        ]
    )


@pytest.mark.parametrize('seed', [1, 2, 3])
def test_random_walk_matches_redis(fresh_raw_pair, seed):
    rng = random.Random(seed)
    raw_same(fresh_raw_pair(rng.choice([2, 3])), [_random_command(rng) for _ in range(400)])


# -- the command table ----------------------------------------------------------------------


def test_zrandmember_few_of_a_listpack_come_in_rank_order(server, redis_ref):
    """A positive count of at most a third of a listpack's size is drawn by
    lpRandomPairsUnique, which walks the listpack once: the members come in rank order."""
    members = [b'%c' % ch for ch in b'abcdefghij']
    for port in (server.port, redis_ref[1]):
        c = _client(port, 2)
        c.flushall()
        c.execute_command('ZADD', 'z', *[x for i, m in enumerate(members) for x in (i, m)])
        for _ in range(20):
            got = c.execute_command('ZRANDMEMBER', 'z', 3)
            assert got == sorted(got, key=members.index) and len(set(got)) == 3
        c.close()
