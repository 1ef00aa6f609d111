"""Sorted-set range commands (store/commands/zset_ranges.py) as differential tests against
redis-server 7.0: ZRANGE with every option, ZRANGESTORE, ZREVRANGE, Z[REV]RANGEBYSCORE,
Z[REV]RANGEBYLEX, ZCOUNT, ZLEXCOUNT and ZREMRANGEBY{SCORE,RANK,LEX}.

Replies are compared as exact bytes (RawConn) in RESP2 and RESP3. Sorted sets are loaded
with ZADD on the reference and stored straight into our keyspace as ZSet values (ZADD is
another module's), each encoded as ZADD would create it (ZSet.sized). The sets cover both
encodings: small listpacks with mixed scores (where Redis walks the listpack, so even lex
ranges over mixed scores have one answer) and skiplists of a few hundred members (lex
ranges only over one score: Redis's answer over mixed scores depends on the random levels
of its skiplist nodes).
"""

import random

import pytest
from sortedcontainers import SortedList

from conftest import assert_same_events, capture_events, raw_same
from store.commands import zset_ranges
from store.types import EncodingLimits
from store.types.zset import ZSet

LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)

# key -> [(score, member)]; scores as ZADD takes them.
SMALL = [  # listpack, mixed scores with ties
    ('1', 'a'),
    ('1', 'b'),
    ('2', 'c'),
    ('2', 'd'),
    ('2.5', 'e'),
    ('-inf', 'ninf'),
    ('+inf', 'pinf'),
    ('0', 'zero'),
    ('-1.5', 'neg'),
    ('3', 'f'),
    ('1e-300', 'tiny'),
    ('0.1', '12'),
]
FLAT = [('0', m) for m in ('', 'a', 'aa', 'ab', 'b', 'ba', 'c', 'd\xff', 'e', '1', '10', '2')]
BIG = [(str((i * 7) % 50 / 2), f'm{i:03d}') for i in range(300)]  # skiplist, ties
BIGFLAT = [('5', f'k{i:03d}') for i in range(300)]  # skiplist, one score
SETS = {'small': SMALL, 'flat': FLAT, 'big': BIG, 'bigflat': BIGFLAT}


def _zset(limits, pairs):
    return ZSet.sized(limits, [(float(s), m.encode()) for s, m in pairs])


def load(server, ref, key, pairs, db=0):
    """The sorted set `pairs` at `key` on both servers (replacing what was there), made
    by ZADD."""
    args = []
    for s, m in pairs:
        args += (s, m.encode())
    ours = server.client(protocol=2, db=db)
    try:
        for client in (ours, ref):
            client.execute_command('select', db)
            client.delete(key)
            client.execute_command('zadd', key, *args)
            client.execute_command('select', 0)
    finally:
        ours.close()


def load_all(server, ref):
    for key, pairs in SETS.items():
        load(server, ref, key, pairs)


def make_hash(server, ref, key='h'):
    """A key of another type on both servers."""
    ours = server.client(protocol=2)
    try:
        for client in (ours, ref):
            client.delete(key)
            client.hset(key, 'f', 'v')
    finally:
        ours.close()


@pytest.fixture(params=[2, 3], ids=['resp2', 'resp3'])
def loaded(request, server, both, raw_pair):
    """Raw (ours, reference) connections in RESP2 or RESP3, with SETS loaded on both."""
    load_all(server, both[1])
    return raw_pair(request.param)


# -- ranges by rank -----------------------------------------------------------------

RANKS = [
    (0, -1),
    (0, 0),
    (-1, -1),
    (-1, 0),
    (1, 3),
    (-3, -1),
    (-100, 100),
    (5, 2),
    (-2, -5),
    (11, 11),
    (12, 20),
    (299, 299),
    (300, 300),
    (0, LLONG_MAX),
    (LLONG_MIN, LLONG_MAX),
    (LLONG_MIN, LLONG_MIN),
    (LLONG_MAX, LLONG_MAX),
    (3, -3),
]


def test_rank_ranges(loaded):
    cmds = []
    for key in SETS:
        for start, end in RANKS:
            for opts in ((), ('withscores',), ('WITHSCORES', 'withscores')):
                cmds.append(('zrange', key, start, end, *opts))
                cmds.append(('zrevrange', key, start, end, *opts))
                cmds.append(('zrange', key, start, end, 'rev', *opts))
            cmds.append(('zrange', key, start, end, 'limit', '3', '-1'))  # limit -1 passes
    raw_same(loaded, cmds)


def test_rank_bad_arguments(loaded):
    raw_same(
        loaded,
        [
            ('zrange', 'small', 'x', '1'),
            ('zrange', 'small', '0', 'x'),
            ('zrange', 'small', '1.0', '2'),
            ('zrange', 'small', ' 1', '2'),
            ('zrange', 'small', '1 ', '2'),
            ('zrange', 'small', '+1', '2'),
            ('zrange', 'small', '01', '2'),
            ('zrange', 'small', '', '2'),
            ('zrange', 'small', str(LLONG_MAX + 1), '2'),
            ('zrange', 'small', '0', str(LLONG_MIN - 1)),
            ('zrevrange', 'small', 'a', 'b'),
            ('zrange', 'small', '0', '1', 'limit', '0', '1'),
            ('zrange', 'small', '0', '1', 'limit', '0', '-2'),
            ('zrange', 'small', '0', '1', 'limit', '0'),
            ('zrange', 'small', '0', '1', 'limit'),
            ('zrange', 'small', '0', '1', 'limit', 'x', '1'),
            ('zrange', 'small', '0', '1', 'limit', '0', 'y'),
            ('zrange', 'small', 'x', '1', 'limit', '0', '5'),  # LIMIT error first
            ('zrange', 'small', 'x', '1', 'limit', 'x', '5'),
            ('zrevrange', 'small', '0', '1', 'limit', '0', '1'),
            ('zrevrange', 'small', '0', '1', 'rev'),
            ('zrevrange', 'small', '0', '1', 'byscore'),
            ('zrange', 'small', '0', '1', 'withscore'),
            ('zrange', 'small', '0', '1', 'withscores\0junk'),
            ('zrange', 'small', '0', '1', 'rev\0', 'withscores'),
            ('zrange', 'nokey', 'x', '1'),
            ('zrange', 'nokey', '0', '1'),
            ('zrange', 'nokey', '0', '1', 'withscores'),
        ],
    )


# -- ranges by score ----------------------------------------------------------------

GOOD_SCORES = [
    ('-inf', '+inf'),
    ('(-inf', '(+inf'),
    ('+inf', '-inf'),
    ('-inf', '-inf'),
    ('+inf', '+inf'),
    ('(+inf', '+inf'),
    ('-inf', '(-inf'),
    ('1', '1'),
    ('(1', '1'),
    ('1', '(1'),
    ('(1', '(1'),
    ('1', '2'),
    ('(1', '(2'),
    ('(1', '2'),
    ('2', '1'),
    ('2.5', '2.5'),
    ('-1.5', '0'),
    ('(-1.5', '(0'),
    ('-0', '0'),
    ('(-0', '(0'),
    ('0', '(1e-300'),
    ('(0', '1e-300'),
    ('', ''),
    ('(', '('),
    ('', '('),
    ('0x2', '0X3'),
    ('0x1.8p1', '0x1P2'),
    (' 1', '\t2'),
    ('1e0', '2E0'),
    ('.5', '5.'),
    ('1e400', '1e400'),
    ('-1e400', '(1e-400'),
    ('-INFINITY', 'Inf'),
    ('1\0junk', '2\0'),
    ('\0', '1'),
    ('3', '1000'),
    ('12', '12.5'),
    ('7', '9.5'),
    ('24', '+inf'),
    ('(24.5', '+inf'),
]
BAD_SCORES = [
    ('1 ', '2'),
    ('a', '1'),
    ('1', 'b'),
    ('nan', '1'),
    ('1', '(nan'),
    ('-nan', '1'),
    ('((1', '2'),
    ('[1', '2'),
    ('+', '1'),
    ('-', '1'),
    ('0x', '1'),
    ('1e', '2'),
    ('1e+', '2'),
    ('1_0', '2'),
    ('--1', '2'),
    ('inf1', '2'),
    ('infinit', '1'),
    (' ', '1'),
    ('1', ' '),
    ('(', 'x'),
    ('1,5', '2'),
]
LIMITS = [
    (),
    ('limit', '0', '-1'),
    ('limit', '0', '0'),
    ('limit', '0', '1'),
    ('limit', '1', '2'),
    ('limit', '2', '-5'),
    ('limit', '-1', '5'),
    ('limit', '-1', '-1'),
    ('limit', '5', str(LLONG_MAX)),
    ('limit', str(LLONG_MAX), '1'),
    ('limit', '299', '10'),
    ('limit', '300', '10'),
    ('limit', str(LLONG_MIN), str(LLONG_MIN)),
]


def score_commands(key, lo, hi):
    out = [('zcount', key, lo, hi)]
    for limit in LIMITS:
        out += [
            ('zrangebyscore', key, lo, hi, *limit),
            ('zrevrangebyscore', key, hi, lo, 'withscores', *limit),
            ('zrange', key, lo, hi, 'byscore', *limit, 'withscores'),
            ('zrange', key, hi, lo, *limit, 'byscore', 'rev'),
        ]
    return out


@pytest.mark.parametrize('key', ['small', 'big'])
def test_score_ranges(loaded, key):
    cmds = []
    for lo, hi in GOOD_SCORES:
        cmds += score_commands(key, lo, hi)
    raw_same(loaded, cmds)


def test_score_bad_bounds(loaded):
    cmds = []
    for lo, hi in BAD_SCORES:
        cmds += [
            ('zcount', 'small', lo, hi),
            ('zrangebyscore', 'small', lo, hi),
            ('zrevrangebyscore', 'small', hi, lo),
            ('zrange', 'small', lo, hi, 'byscore'),
            ('zrange', 'small', hi, lo, 'byscore', 'rev'),
            ('zremrangebyscore', 'small', lo, hi),
            ('zrangestore', 'dst', 'small', lo, hi, 'byscore'),
            ('zcount', 'nokey', lo, hi),
        ]
    cmds += [
        ('zrangebyscore', 'small', '0', '1', 'rev'),
        ('zrangebyscore', 'small', '0', '1', 'byscore'),
        ('zrangebyscore', 'small', '0', '1', 'bylex'),
        ('zrangebyscore', 'small', '0', '1', 'limit', '0'),
        ('zrangebyscore', 'small', '0', '1', 'limit', 'a', '1'),
        ('zrangebyscore', 'small', '0', '1', 'limit', '1', '1.5'),
        ('zrangebyscore', 'small', 'x', '1', 'limit', '1', 'y'),  # LIMIT parsed first
        ('zrangebyscore', 'small', 'x', '1', 'junk'),
        ('zrevrangebyscore', 'small', '1', '0', 'rev'),
        ('zrange', 'small', '0', '1', 'byscore', 'byscore'),
        ('zrange', 'small', '0', '1', 'byscore', 'bylex'),
        ('zrange', 'small', '0', '1', 'rev', 'rev'),
        ('zrange', 'small', '[a', '1', 'byscore'),
        ('zrange', 'nokey', 'x', '1', 'byscore'),
        ('zcount', 'small', '0', '1', '2'),
        ('zcount', 'small', '0'),
    ]
    raw_same(loaded, cmds)


# -- ranges by lex ------------------------------------------------------------------

GOOD_LEX = [
    ('-', '+'),
    ('+', '-'),
    ('-', '-'),
    ('+', '+'),
    ('[a', '[b'),
    ('(a', '(b'),
    ('[a', '(a'),
    ('(a', '[a'),
    ('[a', '[a'),
    ('[', '+'),
    ('(', '+'),
    ('-', '['),
    ('-', '('),
    ('[', '['),
    ('(', '['),
    ('[b', '[a'),
    ('[aa', '(b'),
    ('[c', '+'),
    ('(zz', '+'),
    ('-', '[\xff'),
    ('[d', '(d\xff\xff'),
    ('[1', '[2'),
    ('[k100', '(k200'),
    ('(k150', '+'),
    ('-', '[k000'),
    ('-\0junk', '+\0'),
    ('[a\0b', '+'),
    ('[m', '[n'),
    ('[e', '[zero'),
    ('(f', '(pinf'),
]
BAD_LEX = [
    ('a', 'b'),
    ('[a', 'b'),
    ('a', '[b'),
    ('', '+'),
    ('-', ''),
    ('-x', '+'),
    ('-', '+x'),
    ('+x', '-'),
    (']a', '+'),
    ('1', '2'),
    ('\0', '+'),
]


def lex_commands(key, lo, hi):
    out = [('zlexcount', key, lo, hi)]
    for limit in LIMITS:
        out += [
            ('zrangebylex', key, lo, hi, *limit),
            ('zrevrangebylex', key, hi, lo, *limit),
            ('zrange', key, lo, hi, 'bylex', *limit),
            ('zrange', key, hi, lo, *limit, 'rev', 'bylex'),
        ]
    return out


@pytest.mark.parametrize('key', ['flat', 'bigflat', 'small'])
def test_lex_ranges(loaded, key):
    """One score (listpack and skiplist), and mixed scores in a listpack, where Redis
    walks the listpack (lex ranges are only meaningful with one score, but the answer
    over mixed scores is well defined there, so it is compared too)."""
    cmds = []
    for lo, hi in GOOD_LEX:
        cmds += lex_commands(key, lo, hi)
    raw_same(loaded, cmds)


def test_lex_bad_bounds(loaded):
    cmds = []
    for lo, hi in BAD_LEX:
        cmds += [
            ('zlexcount', 'flat', lo, hi),
            ('zrangebylex', 'flat', lo, hi),
            ('zrevrangebylex', 'flat', hi, lo),
            ('zrange', 'flat', lo, hi, 'bylex'),
            ('zremrangebylex', 'flat', lo, hi),
            ('zrangestore', 'dst', 'flat', lo, hi, 'bylex'),
            ('zlexcount', 'nokey', lo, hi),
        ]
    cmds += [
        ('zrangebylex', 'flat', '-', '+', 'withscores'),
        ('zrangebylex', 'flat', 'x', 'y', 'withscores'),  # WITHSCORES error first
        ('zrange', 'flat', '-', '+', 'bylex', 'withscores'),
        ('zrange', 'flat', '-', '+', 'withscores', 'bylex', 'limit', '0', '1'),
        ('zrevrangebylex', 'flat', '+', '-', 'withscores'),
        ('zrangebylex', 'flat', '-', '+', 'rev'),
        ('zrangebylex', 'flat', '-', '+', 'bylex'),
        ('zrangebylex', 'flat', '-', '+', 'limit', '1'),
        ('zrangebylex', 'flat', '-', '+', 'limit', '1', 'x'),
        ('zrange', 'flat', '-', '+', 'bylex', 'byscore'),
        ('zrange', 'flat', '0', '-1', 'bylex'),
        ('zrange', 'nokey', 'x', 'y', 'bylex'),
    ]
    raw_same(loaded, cmds)


# -- ZRANGE option combinations -------------------------------------------------------


def test_zrange_option_orders(loaded):
    """Every combination of ZRANGE's options, in several orders, per range type."""
    bounds = {
        None: ('1', '-2'),
        'byscore': ('(1', '2.5'),
        'bylex': ('[a', '(zz'),
    }
    cmds = []
    for key in ('small', 'big'):
        for by, (lo, hi) in bounds.items():
            for rev in (False, True):
                for withscores in (False, True):
                    for limit in ((), ('limit', '1', '2'), ('LiMiT', '0', '-1')):
                        opts = [('rev',)] if rev else []
                        opts += [('withscores',)] if withscores else []
                        opts += [limit] if limit else []
                        opts += [(by,)] if by else []
                        a, b = (hi, lo) if rev and by else (lo, hi)
                        for order in (opts, opts[::-1]):
                            flat = [x for o in order for x in o]
                            cmds.append(('zrange', key, a, b, *flat))
                            cmds.append(('zrangestore', 'dst', key, a, b, *flat))
                            cmds.append(('zrange', 'dst', '0', '-1', 'withscores'))
    raw_same(loaded, cmds)


# -- writes -------------------------------------------------------------------------


def test_zremrange_commands(server, both, raw_pair):
    for proto in (2, 3):
        pair = raw_pair(proto)
        cases = [
            [('zremrangebyscore', 'small', '1', '2'), ('zrange', 'small', '0', '-1', 'withscores')],
            [('zremrangebyscore', 'small', '(1', '(2')],
            [('zremrangebyscore', 'small', '-inf', '+inf'), ('exists', 'small')],
            [('zremrangebyscore', 'small', '5', '4')],
            [('zremrangebyscore', 'big', '(3', '10'), ('zrange', 'big', '0', '-1', 'withscores')],
            [('zremrangebyrank', 'small', '0', '0'), ('zrange', 'small', '0', '-1')],
            [('zremrangebyrank', 'small', '-3', '-1'), ('zrange', 'small', '0', '-1')],
            [('zremrangebyrank', 'small', '5', '2')],
            [('zremrangebyrank', 'small', '100', '200')],
            [('zremrangebyrank', 'small', str(LLONG_MIN), str(LLONG_MAX)), ('exists', 'small')],
            [('zremrangebyrank', 'big', '10', '-10'), ('zrange', 'big', '0', '-1')],
            [('zremrangebyrank', 'small', 'x', '1')],
            [('zremrangebyrank', 'small', '1', '1.5')],
            [('zremrangebylex', 'flat', '[a', '(b'), ('zrange', 'flat', '0', '-1')],
            [('zremrangebylex', 'flat', '-', '+'), ('exists', 'flat')],
            [('zremrangebylex', 'flat', '+', '-')],
            [('zremrangebylex', 'bigflat', '(k100', '[k250'), ('zrange', 'bigflat', '0', '-1')],
            [('zremrangebylex', 'small', '[b', '[e'), ('zrange', 'small', '0', '-1')],
            [('zremrangebylex', 'small', '-', '(c'), ('zrange', 'small', '0', '-1')],
            [('zremrangebylex', 'nokey', '-', '+'), ('zremrangebyscore', 'nokey', '0', '1')],
            [('zremrangebyrank', 'nokey', '0', '-1')],
        ]
        for case in cases:
            load_all(server, both[1])
            raw_same(pair, case + [('zcount', k, '-inf', '+inf') for k in SETS])


def test_zrangestore(server, both, raw_pair):
    for proto in (2, 3):
        pair = raw_pair(proto)
        load_all(server, both[1])
        raw_same(
            pair,
            [
                ('zrangestore', 'dst', 'small', '0', '-1'),
                ('zrange', 'dst', '0', '-1', 'withscores'),
                ('object', 'encoding', 'dst'),
                ('zrangestore', 'dst', 'big', '0', '-1'),
                ('object', 'encoding', 'dst'),
                ('zrange', 'dst', '0', '-1', 'withscores'),
                ('zrangestore', 'dst', 'big', '0', '127'),
                ('object', 'encoding', 'dst'),
                ('zrangestore', 'dst', 'big', '0', '128'),
                ('object', 'encoding', 'dst'),
                ('zrangestore', 'dst', 'big', '-inf', '+inf', 'byscore', 'limit', '0', '128'),
                ('object', 'encoding', 'dst'),
                ('zrangestore', 'dst', 'big', '-inf', '+inf', 'byscore', 'limit', '0', '129'),
                ('object', 'encoding', 'dst'),
                ('zrangestore', 'dst', 'bigflat', '+', '-', 'bylex', 'rev', 'limit', '0', '50'),
                ('zrange', 'dst', '0', '-1', 'withscores'),
                ('object', 'encoding', 'dst'),
                ('zrangestore', 'dst', 'small', '(2', '+inf', 'byscore', 'rev'),
                ('zrange', 'dst', '0', '-1', 'withscores'),
                ('zrangestore', 'dst', 'small', '5', '1'),  # empty: dst deleted
                ('exists', 'dst'),
                ('zrangestore', 'dst', 'small', '5', '1'),
                ('zrangestore', 'dst', 'nokey', '0', '-1'),
                ('set', 'str', 'v'),
                ('zrangestore', 'str', 'small', '0', '1'),  # any type is replaced
                ('type', 'str'),
                ('zrange', 'str', '0', '-1', 'withscores'),
                ('set', 'str', 'v', 'ex', '1000'),
                ('zrangestore', 'str', 'small', '0', '1'),
                ('ttl', 'str'),  # and its TTL dropped
                ('zrangestore', 'str', 'nokey', '0', '1'),
                ('exists', 'str'),
                ('zrangestore', 'small', 'small', '2', '3'),  # onto itself
                ('zrange', 'small', '0', '-1', 'withscores'),
                ('zrangestore', 'dst', 'small', '0', '-1', 'withscores'),
                ('zrangestore', 'dst', 'small', '0', '-1', 'limit', '0', '1'),
                ('zrangestore', 'dst', 'small'),
                ('zrangestore', 'dst', 'small', '0'),
            ],
        )


def test_zrangestore_encoding_follows_config(server, both, raw_pair):
    pair = raw_pair(2)
    load_all(server, both[1])
    long_member = [('1', 'x' * 65), ('2', 'y')]
    load(server, both[1], 'long', long_member)
    try:
        raw_same(
            pair,
            [
                ('config', 'set', 'zset-max-listpack-entries', '4'),
                ('zrangestore', 'dst', 'small', '0', '3'),
                ('object', 'encoding', 'dst'),
                ('zrangestore', 'dst', 'small', '0', '4'),
                ('object', 'encoding', 'dst'),
                ('zrangestore', 'dst', 'small', '-inf', '(1', 'byscore'),
                ('object', 'encoding', 'dst'),
                ('config', 'set', 'zset-max-listpack-entries', '128'),
                ('zrangestore', 'dst', 'long', '1', '1'),
                ('object', 'encoding', 'dst'),
                ('zrangestore', 'dst', 'long', '0', '-1'),
                ('object', 'encoding', 'dst'),
                ('config', 'set', 'zset-max-listpack-value', '100'),
                ('zrangestore', 'dst', 'long', '0', '-1'),
                ('object', 'encoding', 'dst'),
                ('config', 'set', 'zset-max-listpack-entries', '0'),
                ('zrangestore', 'dst', 'small', '0', '0'),
                ('object', 'encoding', 'dst'),
            ],
        )
    finally:
        for c in pair:
            c.cmd('config', 'set', 'zset-max-listpack-entries', '128')
            c.cmd('config', 'set', 'zset-max-listpack-value', '64')


def test_zrangestore_negative_zero(server, both, raw_pair):
    """A listpack stores -0.0 as the integer 0: a ZRANGESTORE destination holds 0 for the
    elements added while it was still a listpack, -0 for those added after it became a
    skiplist (or all of them, for a rank range known to be too long from the start)."""
    pair = raw_pair(2)
    ref = both[1]
    pairs = [('-0', 'a'), ('-0', 'b'), ('-0', 'c'), ('-0', 'd'), ('1', 'e'), ('-0', 'f' * 70)]
    try:
        ref.config_set('zset-max-listpack-entries', 0)  # the source: -0.0 throughout
        pair[0].cmd('config', 'set', 'zset-max-listpack-entries', '3')
        ks = server.server.keyspace
        z = _zset(ks.limits, pairs)
        server.call(lambda: ks.set(0, b'src', z))
        ref.zadd('src', {m: float(s) for s, m in pairs})
        ref.config_set('zset-max-listpack-entries', 3)
        cmds = [('zrange', 'src', '0', '-1', 'withscores')]
        for rng in [
            ('-inf', '+inf', 'byscore'),
            ('+inf', '-inf', 'byscore', 'rev'),
            ('0', '-1'),
            ('0', '2'),
            ('1', '3', 'rev'),
            ('-', '+', 'bylex'),
            ('+', '-', 'bylex', 'rev'),
            ('-', '(d', 'bylex'),
            ('-inf', '+inf', 'byscore', 'limit', '0', '3'),
        ]:
            cmds += [
                ('zrangestore', 'dst', 'src', *rng),
                ('object', 'encoding', 'dst'),
                ('zrange', 'dst', '0', '-1', 'withscores'),
            ]
        raw_same(pair, cmds)
    finally:
        for c in pair:
            c.cmd('config', 'set', 'zset-max-listpack-entries', '128')


# -- events and WATCH ---------------------------------------------------------------

EVENT_CASES = [
    [('zremrangebyscore', 'small', '1', '2')],
    [('zremrangebyscore', 'small', '100', '200')],
    [('zremrangebyscore', 'small', '-inf', '+inf')],
    [('zremrangebyrank', 'small', '0', '1')],
    [('zremrangebyrank', 'small', '5', '1')],
    [('zremrangebyrank', 'big', '0', '-1')],
    [('zremrangebylex', 'flat', '[a', '[b')],
    [('zremrangebylex', 'flat', '(zz', '+')],
    [('zremrangebylex', 'flat', '-', '+')],
    [('zremrangebylex', 'nokey', '-', '+')],
    [('zrangestore', 'dst', 'small', '0', '1')],
    [('zrangestore', 'dst', 'small', '0', '1'), ('zrangestore', 'dst', 'small', '2', '3')],
    [('zrangestore', 'dst', 'small', '0', '1'), ('zrangestore', 'dst', 'small', '5', '1')],
    [('zrangestore', 'dst', 'small', '5', '1')],
    [('zrangestore', 'dst', 'nokey', '0', '1')],
    [('set', 'str', 'v'), ('zrangestore', 'str', 'small', '0', '1')],
    [('zrangestore', 'small', 'small', '0', '0')],
    [('zrangestore', 'small', 'small', '5', '1')],
    [('zrange', 'small', '0', '-1'), ('zrange', 'nokey', '0', '-1'), ('zcount', 'nokey', 0, 1)],
    [('zlexcount', 'nokey', '-', '+'), ('zrangebyscore', 'nokey', '0', '1')],
    [('zremrangebyscore', 'small', 'x', '1'), ('zrangestore', 'dst', 'small', 'x', '1')],
]


@pytest.mark.parametrize('flags', ['KEA', 'KEAnm'])
@pytest.mark.parametrize('case', EVENT_CASES, ids=lambda c: ' '.join(map(str, c[-1])))
def test_events_match_redis(server, both, case, flags):
    load_all(server, both[1])
    assert_same_events(both, case, flags)


ZADD_SEQUENCE = [
    ('zadd', 'z', '0', 'a', '0', 'b', '-0', 'c', '1', 'd', '2.5', 'e', '+inf', 'f'),
    ('zrange', 'z', '0', '-1', 'withscores'),
    ('zrangebylex', 'z', '[a', '(c'),
    ('zrangestore', 'dst', 'z', '(0', '+inf', 'byscore'),
    ('zrange', 'dst', '-inf', '+inf', 'byscore', 'withscores', 'limit', '1', '5'),
    ('zadd', 'dst', '-1', 'x'),
    ('zremrangebyrank', 'dst', '0', '0'),
    ('zremrangebyscore', 'z', '(0', '2.5'),
    ('zremrangebylex', 'z', '-', '+'),
    ('exists', 'z'),
    ('zrangestore', 'dst', 'z', '0', '-1'),
    ('exists', 'dst'),
]


def test_with_zadd(server, both, raw_pair):
    """Sets made by ZADD on both servers, events included."""
    for proto in (2, 3):
        raw_same(raw_pair(proto), [('flushall',)] + ZADD_SEQUENCE)
    for c in both:
        c.flushall()
    assert_same_events(both, ZADD_SEQUENCE, 'KEAn')


def test_no_events_when_disabled(server, both):
    load_all(server, both[1])
    commands = [cmd for case in EVENT_CASES for cmd in case]
    assert capture_events(both[0], commands, '') == []


WATCH_CASES = [
    [('zremrangebyscore', 'small', '1', '2')],
    [('zremrangebyscore', 'small', '100', '200')],
    [('zremrangebyscore', 'small', '-inf', '+inf')],
    [('zremrangebyrank', 'small', '0', '0')],
    [('zremrangebyrank', 'small', '5', '1')],
    [('zremrangebylex', 'flat', '[a', '[b')],
    [('zremrangebylex', 'flat', '(zz', '+')],
    [('zremrangebylex', 'nokey', '-', '+')],
    [('zrangestore', 'dst', 'small', '0', '1')],
    [('zrangestore', 'dst', 'small', '5', '1')],
    [('zrangestore', 'small', 'small', '5', '1')],
    [('zrangestore', 'flat', 'small', '0', '1')],
    [('zrangestore', 'flat', 'nokey', '0', '1')],
    [('zrangestore', 'nokey2', 'nokey', '0', '1')],
    [('zrange', 'small', '0', '-1')],
    [('zcount', 'small', '-inf', '+inf'), ('zlexcount', 'flat', '-', '+')],
    [('zremrangebyscore', 'small', 'x', '1')],
]


@pytest.mark.parametrize('case', WATCH_CASES, ids=lambda c: ' '.join(c[0]))
def test_watch_signalling_matches_redis(server, both, raw_pair, case):
    pair = raw_pair(2)
    load_all(server, both[1])
    watched = ('small', 'flat', 'dst', 'nokey2')
    raw_same(pair, [('watch', *watched)] + case + [('multi',), ('ping',), ('exec',)])


# -- WRONGTYPE, arity, keyspace statistics ------------------------------------------------


def test_wrongtype(server, both, raw_pair):
    for proto in (2, 3):
        pair = raw_pair(proto)
        make_hash(server, both[1])
        load_all(server, both[1])
        raw_same(
            pair,
            [
                ('zrange', 'h', '0', '-1'),
                ('zrange', 'h', '0', '1', 'byscore'),
                ('zrange', 'h', '-', '+', 'bylex'),
                ('zrange', 'h', 'x', '1'),  # the range is parsed before the key
                ('zrange', 'h', 'x', '1', 'byscore'),
                ('zrange', 'h', 'x', '+', 'bylex'),
                ('zrevrange', 'h', '0', '-1'),
                ('zrangebyscore', 'h', '0', '1'),
                ('zrevrangebyscore', 'h', '1', '0'),
                ('zrangebylex', 'h', '-', '+'),
                ('zrevrangebylex', 'h', '+', '-'),
                ('zcount', 'h', '0', '1'),
                ('zcount', 'h', 'x', '1'),
                ('zlexcount', 'h', '-', '+'),
                ('zlexcount', 'h', 'x', '+'),
                ('zremrangebyscore', 'h', '0', '1'),
                ('zremrangebyscore', 'h', 'x', '1'),
                ('zremrangebyrank', 'h', '0', '1'),
                ('zremrangebyrank', 'h', 'x', '1'),
                ('zremrangebylex', 'h', '-', '+'),
                ('zremrangebylex', 'h', 'x', '+'),
                ('zrangestore', 'dst', 'h', '0', '-1'),
                ('exists', 'dst'),
                ('zrangestore', 'h', 'small', '0', '1'),  # the destination may be any type
                ('type', 'h'),
            ],
        )


def test_arity(loaded):
    raw_same(
        loaded,
        [
            ('zrange', 'small', '0'),
            ('zrange', 'small'),
            ('zrangestore', 'dst', 'small', '0'),
            ('zrevrange', 'small', '0'),
            ('zrangebyscore', 'small', '0'),
            ('zrevrangebyscore', 'small', '0'),
            ('zrangebylex', 'small', '-'),
            ('zrevrangebylex', 'small', '+'),
            ('zcount', 'small', '0'),
            ('zcount', 'small', '0', '1', '2'),
            ('zlexcount', 'small', '-'),
            ('zlexcount', 'small', '-', '+', 'x'),
            ('zremrangebyscore', 'small', '0'),
            ('zremrangebyscore', 'small', '0', '1', '2'),
            ('zremrangebyrank', 'small', '0'),
            ('zremrangebyrank', 'small', '0', '1', '2'),
            ('zremrangebylex', 'small', '-'),
            ('zremrangebylex', 'small', '-', '+', '+'),
            ('zrevrange', 'small', '0', '1', 'withscores', 'x'),
            ('zrange', 'small', '0', '1', 'withscores', 'withscores', 'withscores'),
        ],
    )


def _stats(client):
    info = client.info('stats')
    return info['keyspace_hits'], info['keyspace_misses']


def test_keyspace_hits_and_misses(server, both):
    """Reads count hits and misses (lookupKeyRead), removals do not (lookupKeyWrite)."""
    load_all(server, both[1])
    commands = [
        ('zrange', 'small', '0', '-1'),
        ('zrange', 'nokey', '0', '-1'),
        ('zrangestore', 'dst', 'small', '0', '1'),
        ('zrangestore', 'dst', 'nokey', '0', '1'),
        ('zcount', 'small', '0', '1'),
        ('zlexcount', 'nokey', '-', '+'),
        ('zremrangebyscore', 'small', '0', '1'),
        ('zremrangebyrank', 'nokey', '0', '1'),
        ('zremrangebylex', 'flat', '-', '+'),
    ]
    deltas = []
    for client in both:
        before = _stats(client)
        for cmd in commands:
            client.execute_command(*cmd)
        after = _stats(client)
        deltas.append((after[0] - before[0], after[1] - before[1]))
    assert deltas[0] == deltas[1]


# -- randomized comparison ----------------------------------------------------------


def _random_member(rnd):
    return ''.join(rnd.choice('abcde\xff0') for _ in range(rnd.randint(0, 3)))


def _random_score(rnd):
    return rnd.choice(['-inf', '+inf', '0', '-1', '1', '2', '2.5', '3', '-0.5', '7', '1e10'])


def _random_bound(rnd, lex):
    if lex:
        r = rnd.random()
        if r < 0.1:
            return rnd.choice(['-', '+'])
        return rnd.choice('[(') + _random_member(rnd)
    v = _random_score(rnd)
    return '(' + v if rnd.random() < 0.3 else v


def _random_limit(rnd):
    if rnd.random() < 0.5:
        return ()
    offset = rnd.choice([0, 0, 1, 2, 5, -1, 40, 400])
    count = rnd.choice([-1, 0, 1, 2, 3, 10, 1000, -5])
    return ('limit', offset, count)


def _random_command(rnd, key, lex_ok):
    lex = lex_ok and rnd.random() < 0.5
    lo, hi = _random_bound(rnd, lex), _random_bound(rnd, lex)
    start, end = rnd.randint(-30, 30), rnd.randint(-30, 30)
    ws = ('withscores',) if rnd.random() < 0.5 else ()
    limit = _random_limit(rnd)
    if lex:
        return rnd.choice(
            [
                ('zrangebylex', key, lo, hi, *limit),
                ('zrevrangebylex', key, hi, lo, *limit),
                ('zrange', key, lo, hi, 'bylex', *limit),
                ('zrange', key, hi, lo, 'bylex', 'rev', *limit),
                ('zlexcount', key, lo, hi),
                ('zrangestore', 'dst', key, lo, hi, 'bylex', *limit),
                ('zremrangebylex', key, lo, hi),
            ]
        )
    return rnd.choice(
        [
            ('zrange', key, start, end, *ws),
            ('zrevrange', key, start, end, *ws),
            ('zrange', key, start, end, 'rev', *ws),
            ('zrangebyscore', key, lo, hi, *ws, *limit),
            ('zrevrangebyscore', key, hi, lo, *ws, *limit),
            ('zrange', key, lo, hi, 'byscore', *ws, *limit),
            ('zrange', key, hi, lo, 'byscore', 'rev', *ws, *limit),
            ('zcount', key, lo, hi),
            ('zrangestore', 'dst', key, start, end),
            ('zrangestore', 'dst', key, lo, hi, 'byscore', *limit),
            ('zremrangebyscore', key, lo, hi),
            ('zremrangebyrank', key, start, end),
        ]
    )


@pytest.mark.parametrize('seed', [1, 2, 3])
def test_random_ranges_match_redis(server, both, raw_pair, seed):
    """Random sorted sets, random ranges of every kind, same commands to both servers.
    Lex ranges go to listpacks (mixed scores) and to one-score sets of any size."""
    rnd = random.Random(seed)
    pair = raw_pair(2 if seed % 2 else 3)
    for _ in range(12):
        small = {_random_member(rnd): _random_score(rnd) for _ in range(rnd.randint(1, 20))}
        flat_score = _random_score(rnd)
        flat = {f'{_random_member(rnd)}{i}': flat_score for i in range(rnd.randint(1, 200))}
        big = {f'b{i}': _random_score(rnd) for i in range(rnd.randint(129, 300))}
        sets = {'small': small, 'flat': flat, 'big': big}
        for key, members in sets.items():
            load(server, both[1], key, [(s, m) for m, s in members.items()])
        cmds = []
        for _ in range(120):
            key = rnd.choice(list(sets))
            cmds.append(_random_command(rnd, key, key != 'big'))
        cmds += [('zrange', key, 0, -1, 'withscores') for key in sets]
        cmds += [('zrange', 'dst', 0, -1, 'withscores')]
        raw_same(pair, cmds)


# -- cost: O(log n + returned) ----------------------------------------------------------


class CountingList(SortedList):
    """A SortedList that counts the elements its islice yields and refuses to be
    iterated whole."""

    yielded = 0

    def islice(self, start=None, stop=None, reverse=False):
        for item in super().islice(start, stop, reverse):
            self.yielded += 1
            yield item

    def __iter__(self):
        raise AssertionError('walked the whole set')


class FakeConn:
    """Just what the range functions read of a connection."""

    proto = 2


def _counted_zset(n, flat=False):
    z = ZSet.sized(EncodingLimits(), [])
    items = [(0.0 if flat else float(i), b'm%07d' % i) for i in range(n)]
    z.order = CountingList(items)
    z.scores = {m: s for s, m in items}
    z.listpack = False
    z.order.yielded = 0
    return z


def test_ranges_visit_only_what_they_return():
    n = 200_000
    z = _counted_zset(n)
    rng = zset_ranges.parse_score_range(b'(1000', b'1e300')
    items = zset_ranges.score_items(z, rng, 100_000, LLONG_MAX, False)
    assert len(items) == n - 1001 - 100_000 and z.order.yielded == len(items)
    z.order.yielded = 0
    items = zset_ranges.score_items(z, rng, 5, 3, True)
    assert [m for _, m in items] == [b'm0199994', b'm0199993', b'm0199992']
    assert z.order.yielded == 3
    z.order.yielded = 0
    assert zset_ranges.score_items(z, rng, LLONG_MAX, LLONG_MAX, False) == []
    assert zset_ranges.rank_items(z, 150_000, 150_001, True) == [
        (49_999.0, b'm0049999'),
        (49_998.0, b'm0049998'),
    ]
    assert zset_ranges.rank_items(z, LLONG_MIN, LLONG_MAX, False)[:1] == [(0.0, b'm0000000')]
    z.order.yielded = 0

    flat = _counted_zset(n, flat=True)
    lex = zset_ranges.parse_lex_range(b'[m0100000', b'+')
    items = zset_ranges.lex_items(flat, lex, 10, 2, False)
    assert [m for _, m in items] == [b'm0100010', b'm0100011']
    assert flat.order.yielded == 2
    lex = zset_ranges.parse_lex_range(b'(m0000010', b'(m0000020')
    assert len(zset_ranges.lex_items(flat, lex, 0, -1, True)) == 9
    assert flat.order.yielded <= 2 + 10  # what it returned, and the one that ended it
    assert zset_ranges.lex_span(flat, lex) == (11, 20)


def test_counts_do_not_walk(server):
    n = 200_000
    z = _counted_zset(n)
    flat = _counted_zset(n, flat=True)
    ks = server.server.keyspace
    server.call(lambda: ks.set(0, b'huge', z))
    server.call(lambda: ks.set(0, b'hugeflat', flat))
    r = server.client(protocol=2)
    try:
        assert r.zcount('huge', '-inf', '+inf') == n
        assert r.zcount('huge', '(10', '20') == 10
        assert r.zlexcount('hugeflat', '-', '+') == n
        assert r.zlexcount('hugeflat', '[m0000100', '(m0100000') == 99_900
        assert z.order.yielded == 0 and flat.order.yielded == 0
        got = r.execute_command('zrangebyscore', 'huge', '-inf', '+inf', 'limit', 5, LLONG_MAX)
        assert len(got) == n - 5
        assert r.zremrangebyscore('huge', '(10', '20') == 10
        assert r.zremrangebylex('hugeflat', '(m0000010', '(m0000020') == 9
        assert r.zremrangebyrank('huge', 100, 101) == 2
        assert len(z.scores) == len(z.order) == n - 12
        assert len(flat.scores) == len(flat.order) == n - 9
        assert z.order.yielded <= n - 5 + 12
    finally:
        r.delete('huge', 'hugeflat')
        r.close()


def test_reply_shapes_without_server():
    """WITHSCORES: flat member/score in RESP2, [member, score] pairs in RESP3."""
    items = [(1.5, b'a'), (float('inf'), b'b')]
    c = FakeConn()
    assert zset_ranges._reply(c, items, True) == [b'a', 1.5, b'b', float('inf')]
    c.proto = 3
    assert zset_ranges._reply(c, items, True) == [[b'a', 1.5], [b'b', float('inf')]]
    assert zset_ranges._reply(c, items, False) == [b'a', b'b']
