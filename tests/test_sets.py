"""Set commands, differential against redis-server 7.0.

Replies whose order Redis fixes (an intset lists its members in ascending order, and so do
SUNION, SDIFF and a whole-set SPOP whose result fits an intset) are compared as exact
bytes in RESP2 and RESP3 (`raw_same`); a hashtable's order is each server's own, so those
replies are compared through redis-py, which turns a set reply into a Python set, or
sorted. Random commands (SPOP, SRANDMEMBER) are checked for their properties: sizes,
membership, distinctness, and that every member turns up.
"""

import random
from collections import Counter
from contextlib import contextmanager

import pytest
import redis

from conftest import assert_same, assert_same_events, run_all
from store.commands import aggregates, sets
from store.types import EncodingLimits
from store.types.set import Set

LONG_MAX = 2**63 - 1


def raw_same(raw_pair, commands, protos=(2, 3)):
    """Run `commands` on both servers over raw connections in each protocol (flushing
    first); every reply must be the same bytes. Returns our replies of the last run."""
    for proto in protos:
        ours, theirs = raw_pair(proto)
        ours('FLUSHALL')
        theirs('FLUSHALL')
        got = []
        for cmd in commands:
            g, w = ours(*cmd), theirs(*cmd)
            assert g == w, f'RESP{proto} {cmd!r}: ours {g!r} != redis {w!r}'
            got.append(g)
    return got


@contextmanager
def intset_entries(both, n):
    """set-max-intset-entries = n on both servers for the block, restored after."""
    for c in both:
        c.config_set('set-max-intset-entries', n)
    try:
        yield
    finally:
        for c in both:
            c.config_set('set-max-intset-entries', 512)


RANDOM = ('SPOP', 'SRANDMEMBER')


def same_sorted(both, commands):
    """assert_same with list replies compared sorted (hashtable order is each server's)
    and those of SPOP and SRANDMEMBER with a count by their size only."""
    ours, theirs = both

    def norm(cmd, r):
        if cmd[0].upper() in RANDOM and len(cmd) > 2 and isinstance(r, (list, set)):
            return len(r)
        return sorted(r) if isinstance(r, list) else r

    got = [norm(cmd, r) for cmd, r in zip(commands, run_all(ours, commands))]
    want = [norm(cmd, r) for cmd, r in zip(commands, run_all(theirs, commands))]
    for cmd, g, w in zip(commands, got, want):
        assert g == w, f'{cmd!r}: ours {g!r} != redis {w!r}'
    return got


def encodings(client, *keys):
    return [client.object('encoding', k) for k in keys]


# -- SADD, SREM, SCARD, SISMEMBER, SMISMEMBER, SMEMBERS ---------------------------------------


def test_basic_commands_exact_bytes(raw_pair):
    raw_same(
        raw_pair,
        [
            ('SADD', 's', '3', '1', '2', '1'),
            ('SADD', 's', '2'),
            ('SCARD', 's'),
            ('SCARD', 'nokey'),
            ('SISMEMBER', 's', '1'),
            ('SISMEMBER', 's', '01'),
            ('SISMEMBER', 's', '9'),
            ('SISMEMBER', 'nokey', '1'),
            ('SMISMEMBER', 's', '1', '9', '3', '1'),
            ('SMISMEMBER', 'nokey', 'a', 'b'),
            ('SMEMBERS', 's'),
            ('SMEMBERS', 'nokey'),
            ('TYPE', 's'),
            ('OBJECT', 'ENCODING', 's'),
            ('SADD', 's', '-5', '100', '-9223372036854775808', '9223372036854775807'),
            ('SMEMBERS', 's'),
            ('SREM', 's', '100', 'nothere', '100', '-5'),
            ('SREM', 'nokey', 'a'),
            ('SMEMBERS', 's'),
            ('SREM', 's', '1', '2', '3', '-9223372036854775808', '9223372036854775807', 'x'),
            ('EXISTS', 's'),
            ('SMEMBERS', 's'),
            ('SADD', 'h', 'a', 'b'),
            ('SREM', 'h', 'a', 'b'),
            ('EXISTS', 'h'),
        ],
    )


def test_hashtable_sets(both_resp):
    same_sorted(
        both_resp,
        [
            ('SADD', 'h', 'a', 'b', 'c', '1', 'a'),
            ('SMEMBERS', 'h'),
            ('SCARD', 'h'),
            ('SISMEMBER', 'h', 'b'),
            ('SISMEMBER', 'h', '1'),
            ('SMISMEMBER', 'h', 'a', 'z', '1'),
            ('OBJECT', 'ENCODING', 'h'),
            ('SREM', 'h', 'a', 'z'),
            ('SMEMBERS', 'h'),
            ('SADD', 'bin', b'\x00\xff', b'', b'\r\n'),
            ('SMEMBERS', 'bin'),
            ('SISMEMBER', 'bin', b''),
        ],
    )


# -- encodings -------------------------------------------------------------------------------


def test_intset_only_for_canonical_integers(both):
    members = [
        '01', '+1', '-0', ' 1', '1 ', '1.0', '0x10', '1e3', '9223372036854775808',
        '-9223372036854775809', '', 'a',
    ]  # fmt: skip
    cmds = []
    for i, m in enumerate(members):
        cmds += [('SADD', f'k{i}', '5', m), ('OBJECT', 'ENCODING', f'k{i}')]
    for i, m in enumerate(['0', '-1', '9223372036854775807', '-9223372036854775808']):
        cmds += [('SADD', f'i{i}', m, '7'), ('OBJECT', 'ENCODING', f'i{i}')]
    cmds += [('SADD', 'first', 'x', '1'), ('SREM', 'first', 'x'), ('OBJECT', 'ENCODING', 'first')]
    got = run_all(both[0], cmds)
    assert got == run_all(both[1], cmds)
    assert got.count(b'intset') == 4  # the canonical ones only; a conversion is for good


def test_intset_size_limit(both):
    cmds = [
        ('SADD', 'a', *range(512)),
        ('OBJECT', 'ENCODING', 'a'),
        ('SADD', 'a', '0'),  # an existing member does not convert
        ('OBJECT', 'ENCODING', 'a'),
        ('SADD', 'a', '512'),
        ('OBJECT', 'ENCODING', 'a'),
        ('SREM', 'a', *range(500)),
        ('OBJECT', 'ENCODING', 'a'),  # never back
        ('SADD', 'b', *range(600)),
        ('OBJECT', 'ENCODING', 'b'),
    ]
    assert_same(both, cmds)


@pytest.mark.parametrize('limit', [0, 1, 3])
def test_intset_limit_configured(both, limit):
    with intset_entries(both, limit):
        cmds = [
            ('SADD', 'a', '1'),
            ('OBJECT', 'ENCODING', 'a'),
            ('SADD', 'b', '1', '2', '3'),
            ('OBJECT', 'ENCODING', 'b'),
            ('SADD', 'b', '3'),
            ('OBJECT', 'ENCODING', 'b'),
            ('SADD', 'b', '4'),
            ('OBJECT', 'ENCODING', 'b'),
            ('SMOVE', 'b', 'm', '1'),
            ('OBJECT', 'ENCODING', 'm'),
            ('SADD', 'x', '1', '2'),
            ('SADD', 'y', '2', '3'),
            ('SUNIONSTORE', 'u', 'x', 'y'),
            ('OBJECT', 'ENCODING', 'u'),
            ('SINTERSTORE', 'i', 'x', 'y'),
            ('OBJECT', 'ENCODING', 'i'),
            ('SDIFFSTORE', 'd', 'x', 'y'),
            ('OBJECT', 'ENCODING', 'd'),
        ]
        assert_same(both, cmds)


def test_intset_limit_lowered_under_a_set(both):
    assert_same(both, [('SADD', 'a', '1', '2', '3', '4', '5'), ('SADD', 'c', '1', '2', '3')])
    with intset_entries(both, 3):
        assert_same(
            both,
            [
                ('OBJECT', 'ENCODING', 'a'),
                ('SADD', 'a', '5'),  # nothing added: stays an intset past the limit
                ('OBJECT', 'ENCODING', 'a'),
                ('SREM', 'a', '5'),
                ('OBJECT', 'ENCODING', 'a'),
                ('SADD', 'a', '5'),  # added, and over the limit: converted
                ('OBJECT', 'ENCODING', 'a'),
                ('SADD', 'c', '1'),
                ('OBJECT', 'ENCODING', 'c'),
            ],
        )


def test_new_sets_get_redis_encodings(both):
    """SPOP COUNT leaving few members and the *STORE commands build a new set, which may be
    an intset where the source was a hashtable; SDIFF's second algorithm leaves a hashtable
    where the first set could not be an intset."""
    cmds = [
        # SPOP COUNT: survivors in a new set (count >= 5 * remaining) or popped in place
        ('SADD', 'big', *range(600)),
        ('SPOP', 'big', '598'),
        ('OBJECT', 'ENCODING', 'big'),
        ('SCARD', 'big'),
        ('SADD', 'big2', *range(600)),
        ('SPOP', 'big2', '10'),
        ('OBJECT', 'ENCODING', 'big2'),
        ('SADD', 'mixed', 'x', *range(20)),
        ('SPOP', 'mixed', '20'),
        ('SCARD', 'mixed'),
        # SDIFF: algorithm 1 (|first| * sets / 2 <= sum of sizes) adds only the result
        ('SADD', 'x', 'a', *range(1, 10)),
        ('SADD', 'y', 'a'),
        ('SADD', 'z', 'b'),
        ('SADD', 'w', 'c'),
        ('SDIFFSTORE', 'd1', 'x', 'y'),
        ('OBJECT', 'ENCODING', 'd1'),
        # algorithm 2 copies x (a hashtable because of 'a') and removes from it
        ('SDIFFSTORE', 'd2', 'x', 'y', 'z', 'w'),
        ('OBJECT', 'ENCODING', 'd2'),
        ('SDIFFSTORE', 'd3', 'x', 'y', 'nokey', 'z', 'w'),
        ('OBJECT', 'ENCODING', 'd3'),
        # a hashtable of integers only: the stored results are intsets
        ('SADD', 'ht', 'q', *range(10)),
        ('SREM', 'ht', 'q'),
        ('OBJECT', 'ENCODING', 'ht'),
        ('SUNIONSTORE', 'u', 'ht'),
        ('OBJECT', 'ENCODING', 'u'),
        ('SINTERSTORE', 'i', 'ht', 'ht'),
        ('OBJECT', 'ENCODING', 'i'),
        ('SDIFFSTORE', 'd4', 'ht', 'y'),
        ('OBJECT', 'ENCODING', 'd4'),
        ('SUNIONSTORE', 'u2', 'ht', 'y'),
        ('OBJECT', 'ENCODING', 'u2'),
        ('SADD', 'far', '1000', '1001'),  # not among big2's members, whichever SPOP took
        ('SUNIONSTORE', 'u3', 'big2', 'far'),
        ('OBJECT', 'ENCODING', 'u3'),
    ]
    same_sorted(both, cmds)
    with intset_entries(both, 5):
        assert_same(
            both,
            [
                ('SUNIONSTORE', 'u4', 'u'),
                ('OBJECT', 'ENCODING', 'u4'),
                ('SADD', 'six', *range(6)),
                ('SDIFFSTORE', 'd5', 'six', 'nokey'),
                ('OBJECT', 'ENCODING', 'd5'),
                ('SDIFFSTORE', 'd6', 'six', '1'),
                ('OBJECT', 'ENCODING', 'd6'),
            ],
        )


def test_copy_keeps_the_encoding(both):
    cmds = [
        ('SADD', 'ht', 'q', '1', '2'),
        ('SREM', 'ht', 'q'),
        ('COPY', 'ht', 'c'),
        ('OBJECT', 'ENCODING', 'c'),
        ('SMEMBERS', 'c'),
        ('SADD', 'is', '3', '1'),
        ('COPY', 'is', 'c2'),
        ('OBJECT', 'ENCODING', 'c2'),
        ('SADD', 'c2', 'x'),
        ('SMEMBERS', 'is'),
    ]
    assert_same(both, cmds)


# -- SINTER, SUNION, SDIFF and their STORE and CARD forms -------------------------------------


def test_algebra_of_intsets_exact_bytes(raw_pair):
    raw_same(
        raw_pair,
        [
            ('SADD', 'a', '5', '1', '3', '10', '-2'),
            ('SADD', 'b', '3', '10', '7', '-2'),
            ('SADD', 'c', '10', '-2', '100'),
            ('SINTER', 'a'),
            ('SINTER', 'a', 'b'),
            ('SINTER', 'a', 'b', 'c'),
            ('SINTER', 'a', 'a'),
            ('SINTER', 'a', 'nokey'),
            ('SINTER', 'nokey'),
            ('SUNION', 'a', 'b', 'c'),
            ('SUNION', 'a', 'nokey'),
            ('SUNION', 'nokey'),
            ('SDIFF', 'a', 'b'),
            ('SDIFF', 'a', 'b', 'c'),
            ('SDIFF', 'a', 'a'),
            ('SDIFF', 'a', 'nokey'),
            ('SDIFF', 'nokey', 'a'),
            ('SINTERCARD', '1', 'a'),
            ('SINTERCARD', '2', 'a', 'b'),
            ('SINTERCARD', '2', 'a', 'b', 'LIMIT', '2'),
            ('SINTERCARD', '2', 'a', 'b', 'limit', '0'),
            ('SINTERCARD', '2', 'a', 'b', 'LIMIT', '1', 'LIMIT', '100'),
            ('SINTERCARD', '2', 'a', 'nokey'),
            ('SINTERSTORE', 'd', 'a', 'b'),
            ('SMEMBERS', 'd'),
            ('SUNIONSTORE', 'd', 'a', 'b'),
            ('SMEMBERS', 'd'),
            ('SDIFFSTORE', 'd', 'a', 'b'),
            ('SMEMBERS', 'd'),
            ('SINTERSTORE', 'a', 'a', 'c'),  # the destination is a source
            ('SMEMBERS', 'a'),
            # a hashtable of integers: SUNION and SDIFF build an intset, so sorted
            ('SADD', 'ht', 'q', '9', '4', '-1', '30'),
            ('SREM', 'ht', 'q'),
            ('SUNION', 'ht'),
            ('SUNION', 'ht', 'c'),
            ('SDIFF', 'ht', 'c'),
            ('SINTER', 'ht', 'c'),
        ],
    )


def test_algebra_of_hashtables(both_resp):
    same_sorted(
        both_resp,
        [
            ('SADD', 'a', 'x', 'y', 'z', '1', '2'),
            ('SADD', 'b', 'y', 'z', 'w', '2'),
            ('SADD', 'c', '2', 'z', '5'),
            ('SINTER', 'a', 'b'),
            ('SINTER', 'a', 'b', 'c'),
            ('SINTER', 'c', 'a'),
            ('SUNION', 'a', 'b', 'c'),
            ('SDIFF', 'a', 'b'),
            ('SDIFF', 'a', 'c', 'b'),
            ('SDIFF', 'b', 'a', 'a'),
            ('SINTERCARD', '3', 'a', 'b', 'c'),
            ('SINTERCARD', '2', 'a', 'b', 'LIMIT', '1'),
            ('SINTERSTORE', 'd', 'a', 'b'),
            ('SMEMBERS', 'd'),
            ('OBJECT', 'ENCODING', 'd'),
            ('SUNIONSTORE', 'd', 'a', 'c'),
            ('SMEMBERS', 'd'),
            ('SDIFFSTORE', 'd', 'a', 'b'),
            ('SMEMBERS', 'd'),
            ('SINTERSTORE', 'e', 'c', 'b'),
            ('OBJECT', 'ENCODING', 'e'),
            ('SMEMBERS', 'e'),
        ],
    )


def test_big_algebra(both):
    ours, theirs = both
    rng = random.Random(7)
    a = {f'm{i}' for i in rng.sample(range(5000), 3000)}
    b = {f'm{i}' for i in rng.sample(range(5000), 3000)}
    n = rng.sample(range(5000), 2500)
    for c in both:
        c.sadd('a', *a)
        c.sadd('b', *b)
        c.sadd('n', *n)
    cmds = [
        ('SINTER', 'a', 'b'),
        ('SUNION', 'a', 'b', 'n'),
        ('SDIFF', 'a', 'b'),
        ('SDIFF', 'n', 'a'),
        ('SINTERCARD', '2', 'a', 'b'),
        ('SINTERCARD', '2', 'a', 'b', 'LIMIT', '10'),
        ('SUNIONSTORE', 'u', 'a', 'n'),
        ('OBJECT', 'ENCODING', 'u'),
        ('SDIFFSTORE', 'd', 'n', 'a'),
        ('OBJECT', 'ENCODING', 'd'),
    ]
    got = run_all(ours, cmds)
    assert got == run_all(theirs, cmds)
    assert got[0] == {m.encode() for m in a & b}
    assert got[4] == len(a & b) and got[5] == 10


def test_store_empty_result_deletes_destination(both):
    assert_same(
        both,
        [
            ('SADD', 'a', '1', '2'),
            ('SADD', 'b', '3'),
            ('SET', 'd', 'x'),
            ('SINTERSTORE', 'd', 'a', 'b'),
            ('EXISTS', 'd'),
            ('SET', 'd', 'x'),
            ('SINTERSTORE', 'd', 'a', 'nokey'),
            ('EXISTS', 'd'),
            ('SADD', 'd', 'q'),
            ('SDIFFSTORE', 'd', 'a', 'a'),
            ('EXISTS', 'd'),
            ('SADD', 'd', 'q'),
            ('SUNIONSTORE', 'd', 'nokey', 'nokey2'),
            ('EXISTS', 'd'),
            ('SDIFFSTORE', 'd', 'nokey', 'a'),
            ('SINTERSTORE', 'nothere', 'nokey'),
            ('EXISTS', 'nothere'),
        ],
    )


def test_store_overwrites_any_type_and_drops_ttl(both):
    cmds = [
        ('SADD', 'a', '1', '2'),
        ('SADD', 'b', '2', '3'),
        ('SET', 'str', 'x', 'EX', '1000'),
        ('SUNIONSTORE', 'str', 'a', 'b'),
        ('TYPE', 'str'),
        ('TTL', 'str'),
        ('SMEMBERS', 'str'),
        ('HSET', 'h', 'f', 'v'),
        ('SINTERSTORE', 'h', 'a', 'b'),
        ('TYPE', 'h'),
        ('RPUSH', 'l', 'x'),
        ('SDIFFSTORE', 'l', 'a', 'b'),
        ('TYPE', 'l'),
        ('SMEMBERS', 'l'),
        ('SADD', 's', '9'),
        ('EXPIRE', 's', '1000'),
        ('SUNIONSTORE', 's', 's', 'a'),
        ('TTL', 's'),
    ]
    assert_same(both, cmds)


def test_sintercard_arguments(both):
    assert_same(
        both,
        [
            ('SADD', 'a', '1', '2', '3'),
            ('SET', 'str', 'x'),
            ('SINTERCARD', '0', 'a'),
            ('SINTERCARD', '-1', 'a'),
            ('SINTERCARD', 'abc', 'a'),
            ('SINTERCARD', '9223372036854775808', 'a'),
            ('SINTERCARD', '2', 'a'),
            ('SINTERCARD', '9223372036854775807', 'a'),
            ('SINTERCARD', '1', 'a', 'LIMIT'),
            ('SINTERCARD', '1', 'a', 'LIMIT', '-1'),
            ('SINTERCARD', '1', 'a', 'LIMIT', 'x'),
            ('SINTERCARD', '1', 'a', 'LIMIT', '9223372036854775808'),
            ('SINTERCARD', '1', 'a', 'LIMIT', '9223372036854775807'),
            ('SINTERCARD', '1', 'a', 'foo'),
            ('SINTERCARD', '1', 'a', 'a'),
            ('SINTERCARD', '1', 'str', 'LIMIT', '-1'),  # options before keys
            ('SINTERCARD', '1', 'str', 'LIMIT', '1'),
            ('SINTERCARD', '2', 'nokey', 'str'),
            ('SINTERCARD', '1', 'a', b'LIMIT\x00x', '1'),
        ],
    )


# -- SMOVE -----------------------------------------------------------------------------------


def test_smove(both):
    assert_same(
        both,
        [
            ('SADD', 'src', '1', '2', 'x'),
            ('SADD', 'dst', '2', '9'),
            ('SET', 'str', 'v'),
            ('SMOVE', 'src', 'dst', '1'),
            ('SMOVE', 'src', 'dst', '2'),  # already in dst: removed from src only
            ('SMEMBERS', 'src'),
            ('SMEMBERS', 'dst'),
            ('SMOVE', 'src', 'dst', 'nothere'),
            ('SMOVE', 'src', 'src', 'x'),
            ('SMOVE', 'src', 'src', 'nothere'),
            ('SMOVE', 'nokey', 'str', 'x'),  # a missing source answers first
            ('SMOVE', 'src', 'str', 'x'),
            ('SMOVE', 'str', 'dst', 'x'),
            ('SMOVE', 'str', 'nokey', 'x'),
            ('SMOVE', 'src', 'new', 'x'),  # src emptied and deleted, new created
            ('EXISTS', 'src'),
            ('SMEMBERS', 'new'),
            ('OBJECT', 'ENCODING', 'new'),
            ('SMOVE', 'dst', 'new2', '9'),
            ('OBJECT', 'ENCODING', 'new2'),
            ('SMOVE', 'dst', 'new', '1'),
            ('OBJECT', 'ENCODING', 'new'),
            ('SMEMBERS', 'new'),
            ('SMEMBERS', 'dst'),
        ],
    )


# -- SPOP ------------------------------------------------------------------------------------


def test_spop_arguments_and_missing_keys(raw_pair):
    raw_same(
        raw_pair,
        [
            ('SET', 'str', 'x'),
            ('SADD', 's', '1'),
            ('SPOP', 'nokey'),
            ('SPOP', 'nokey', '0'),
            ('SPOP', 'nokey', '5'),
            ('SPOP', 's', '0'),
            ('SPOP', 's', '-1'),
            ('SPOP', 'nokey', '-1'),
            ('SPOP', 'str', '-1'),  # the count is parsed first
            ('SPOP', 's', 'abc'),
            ('SPOP', 's', '1.5'),
            ('SPOP', 's', '9223372036854775808'),
            ('SPOP', 's', '-9223372036854775808'),
            ('SPOP', 'str'),
            ('SPOP', 'str', '0'),
            ('SPOP', 'str', '1'),
            ('SPOP', 's', '1', '2'),
            ('SPOP', 's', '1', 'x'),
            ('SCARD', 's'),
        ],
    )


def test_spop_whole_set_exact_bytes(raw_pair):
    """A count >= the size returns the whole set, as SUNION of it would (ascending when
    it fits an intset, even from a hashtable), and deletes the key."""
    raw_same(
        raw_pair,
        [
            ('SADD', 's', '5', '1', '-3'),
            ('SPOP', 's', '3'),
            ('EXISTS', 's'),
            ('SADD', 's', '5', '1', '-3'),
            ('SPOP', 's', '9223372036854775807'),
            ('EXISTS', 's'),
            ('SADD', 'ht', 'q', '8', '2', '40'),
            ('SREM', 'ht', 'q'),
            ('SPOP', 'ht', '100'),
            ('SADD', 'one', 'a'),
            ('SPOP', 'one'),
            ('EXISTS', 'one'),
            ('SADD', 'one', 'a'),
            ('SPOP', 'one', '1'),
            ('EXISTS', 'one'),
        ],
    )


@pytest.mark.parametrize('encoding', ['intset', 'hashtable'])
@pytest.mark.parametrize('count', [1, 5, 20, 29, 30, 40])
def test_spop_count_properties(both_resp, encoding, count):
    """Sizes, membership and distinctness of SPOP COUNT, in each of Redis's three cases
    (pop one by one, keep the survivors, whole set), on both servers."""
    members = {str(i) if encoding == 'intset' else f'm{i}' for i in range(30)}
    results = []
    for c in both_resp:
        c.sadd('s', *members)
        popped = c.spop('s', count)
        left = c.smembers('s')
        popped = [m.decode() for m in popped]
        assert len(popped) == len(set(popped)) == min(count, 30)
        assert set(popped) | {m.decode() for m in left} == members
        assert not set(popped) & {m.decode() for m in left}
        results.append((len(popped), len(left), c.exists('s'), c.object('encoding', 's')))
    assert results[0] == results[1]


def test_spop_until_empty_returns_every_member(both):
    for c in both:
        c.sadd('s', *range(50))
        got = [c.spop('s') for _ in range(50)]
        assert sorted(int(m) for m in got) == list(range(50))
        assert c.spop('s') is None
        assert c.exists('s') == 0


def test_spop_keeps_ttl(both):
    for c in both:
        c.sadd('a', *range(100))
        c.expire('a', 1000)
        c.spop('a', 99)  # a new set of the survivor replaces the old one
        assert 0 < c.ttl('a') <= 1000
        c.sadd('b', *range(100))
        c.expire('b', 1000)
        c.spop('b', 3)
        assert 0 < c.ttl('b') <= 1000


def test_spop_distribution():
    """Every member is popped about equally often (a set of 10, 20000 pops: each member
    expects 2000; a bound of +-25% is far outside chance for a uniform draw)."""
    counts = Counter()
    for _ in range(2000):
        s = Set(str(i).encode() for i in range(10))
        s.intset = False
        counts[s.pop_random()] += 1
        for _ in range(9):
            counts[s.pop_random()] += 1
    assert len(counts) == 10
    counts = Counter()
    s = Set(str(i).encode() for i in range(10))
    for _ in range(20000):
        m = s.pop_random()
        counts[m] += 1
        s.add_members([m], EncodingLimits())
    assert all(1500 < n < 2500 for n in counts.values()), counts


# -- SRANDMEMBER -----------------------------------------------------------------------------


def test_srandmember_arguments_exact_bytes(raw_pair):
    raw_same(
        raw_pair,
        [
            ('SET', 'str', 'x'),
            ('SADD', 's', '4', '2', '9'),
            ('SRANDMEMBER', 'nokey'),
            ('SRANDMEMBER', 'nokey', '5'),
            ('SRANDMEMBER', 'nokey', '-5'),
            ('SRANDMEMBER', 'nokey', '0'),
            ('SRANDMEMBER', 'nokey', '-9223372036854775807'),
            ('SRANDMEMBER', 's', '0'),
            ('SRANDMEMBER', 's', '3'),  # the whole set, in its order
            ('SRANDMEMBER', 's', '4'),
            ('SRANDMEMBER', 's', '9223372036854775807'),
            ('SRANDMEMBER', 's', 'abc'),
            ('SRANDMEMBER', 's', '9223372036854775808'),
            ('SRANDMEMBER', 's', '-9223372036854775808'),
            ('SRANDMEMBER', 'nokey', '-9223372036854775808'),
            ('SRANDMEMBER', 'str'),
            ('SRANDMEMBER', 'str', '0'),
            ('SRANDMEMBER', 'str', '-9223372036854775808'),
            ('SRANDMEMBER', 's', '1', '2'),
            ('SADD', 'one', 'x'),
            ('SRANDMEMBER', 'one'),
            ('SRANDMEMBER', 'one', '1'),
            ('SRANDMEMBER', 'one', '-3'),
            ('SRANDMEMBER', 'one', '5'),
        ],
    )


@pytest.mark.parametrize('count', [1, 2, 5, 9, 10, 11, -1, -3, -10, -50])
def test_srandmember_count_properties(both_resp, count):
    members = {f'm{i}'.encode() for i in range(10)}
    shapes = []
    for c in both_resp:
        c.sadd('s', *members)
        got = c.srandmember('s', count)
        assert isinstance(got, list)
        assert set(got) <= members
        if count > 0:
            assert len(got) == len(set(got)) == min(count, 10)
        else:
            assert len(got) == -count
        assert c.scard('s') == 10  # nothing removed
        shapes.append(len(got))
    assert shapes[0] == shapes[1]


def test_srandmember_covers_every_member(server):
    """Draws reach every member, with and without repeats, on small (intset) and big
    (hashtable) sets, also after removals left the draw pool with stale entries."""
    c = server.client(protocol=2)
    c.flushall()
    c.sadd('i', *range(20))
    c.sadd('h', *[f'm{i}' for i in range(1000)])
    c.srandmember('h')
    c.srem('h', *[f'm{i}' for i in range(0, 1000, 2)])  # stale pool entries
    seen = Counter(c.srandmember('i', -4000))
    assert set(seen) == {b'%d' % i for i in range(20)}
    assert all(100 < n < 300 for n in seen.values()), seen
    seen = set()
    for _ in range(1000):  # 10000 draws of 500 members: all seen but with odds ~1e-6
        seen.update(c.srandmember('h', 10))
    assert seen == {f'm{i}'.encode() for i in range(1, 1000, 2)}
    seen = Counter(c.srandmember('h') for _ in range(5000))
    assert set(seen) <= {f'm{i}'.encode() for i in range(1, 1000, 2)}
    assert len(seen) > 450
    c.close()


def test_srandmember_huge_counts(server, redis_ref):
    """A positive count past the size is the whole set; a negative one repeats members,
    served up to MAX_RANDOM_REPLY_BYTES and refused past it (redis-server 7.0.15 builds
    it until memory runs out, so this is not asked of it)."""
    c = server.client(protocol=2)
    ref = redis.Redis(*redis_ref, protocol=2)
    for r in (c, ref):
        r.flushall()
        r.sadd('s', 'a', 'bb', 'ccc')
        assert sorted(r.srandmember('s', LONG_MAX)) == [b'a', b'bb', b'ccc']
        got = r.srandmember('s', -100000)
        assert len(got) == 100000 and set(got) == {b'a', b'bb', b'ccc'}
    for count in (-LONG_MAX, -(10**12), -(aggregates.MAX_RANDOM_REPLY_BYTES // 7)):
        with pytest.raises(redis.ResponseError, match='^value is out of range$'):
            c.srandmember('s', count)
    assert c.scard('s') == 3
    c.close()
    ref.close()


def test_srandmember_resp3_reply_is_an_array(raw_pair):
    ours, theirs = raw_pair(3)
    for r in (ours, theirs):
        r('SADD', 's', 'a', 'b', 'c')
        assert r('SRANDMEMBER', 's', '2').startswith(b'*2\r\n')
        assert r('SRANDMEMBER', 's', '-5').startswith(b'*5\r\n')
        assert r('SRANDMEMBER', 's', '-2').startswith(b'*2\r\n')
        assert r('SPOP', 's', '1').startswith(b'~1\r\n')


# -- errors ------------------------------------------------------------------------------------


COMMAND_NAMES = [cmd.name for cmd in sets.COMMANDS]


def test_arity(both):
    cmds = []
    for cmd in sets.COMMANDS:
        n = cmd.arity if cmd.arity > 0 else -cmd.arity
        cmds.append((cmd.name, *['a'] * (n - 2)))  # one argument short
        if cmd.arity > 0:
            cmds.append((cmd.name, *['a'] * n))  # one too many
    cmds.append(('SADD',))
    assert_same(both, cmds)


def test_wrongtype_in_every_position(both):
    setup = [('SET', 'str', 'x'), ('SADD', 's', '1', '2'), ('SADD', 't', '2', '3')]
    cmds = [
        ('SADD', 'str', 'a'),
        ('SREM', 'str', 'a'),
        ('SMEMBERS', 'str'),
        ('SISMEMBER', 'str', 'a'),
        ('SMISMEMBER', 'str', 'a'),
        ('SCARD', 'str'),
        ('SPOP', 'str'),
        ('SPOP', 'str', '2'),
        ('SRANDMEMBER', 'str'),
        ('SRANDMEMBER', 'str', '-2'),
        ('SMOVE', 'str', 's', '1'),
        ('SMOVE', 's', 'str', '1'),
        ('SSCAN', 'str', '0'),
        ('SSCAN', 'str', '0', 'COUNT', '0'),
    ]
    for name in ('SINTER', 'SUNION', 'SDIFF'):
        cmds += [
            (name, 'str', 's'),
            (name, 's', 'str'),
            (name, 's', 't', 'str'),
            (name, 'nokey', 'str'),
            (name, 'str', 'nokey'),
        ]
        store = name + 'STORE'
        cmds += [
            (store, 'd', 'str', 's'),
            (store, 'd', 's', 'str'),
            (store, 'd', 'nokey', 'str'),
            (store, 'str', 's', 't'),  # a destination of another type is overwritten
            ('TYPE', 'str'),
            ('SET', 'str', 'x'),
            (store, 's', 's', 'str'),  # nothing happens: s keeps its members
            ('SCARD', 's'),
        ]
    cmds += [
        ('SINTERCARD', '2', 'str', 's'),
        ('SINTERCARD', '2', 's', 'str'),
        ('SINTERCARD', '2', 'nokey', 'str'),
        ('SCARD', 's'),
        ('SCARD', 't'),
        ('GET', 'str'),
    ]
    assert_same(both, setup + cmds)


# -- SSCAN -----------------------------------------------------------------------------------


def test_sscan_intset_whole_and_in_order(raw_pair):
    raw_same(
        raw_pair,
        [
            ('SADD', 's', *[str(i * 7 % 100 - 50) for i in range(100)]),
            ('SSCAN', 's', '0'),
            ('SSCAN', 's', '0', 'COUNT', '1'),
            ('SSCAN', 's', '0', 'MATCH', '*5'),
            ('SSCAN', 's', '0', 'MATCH', '-1*', 'COUNT', '2'),
            ('SSCAN', 's', '12345'),
            ('SSCAN', 'nokey', '0'),
            ('SSCAN', 'nokey', '0', 'COUNT', '0'),  # a missing key answers first
            ('SSCAN', 'nokey', '0', 'FOO'),
            ('SSCAN', 'nokey', 'abc'),
            ('SSCAN', 's', 'abc'),
            ('SSCAN', 's', '-1'),
            ('SSCAN', 's', '0', 'COUNT', '0'),
            ('SSCAN', 's', '0', 'COUNT', 'x'),
            ('SSCAN', 's', '0', 'MATCH'),
            ('SSCAN', 's', '0', 'TYPE', 'set'),
        ],
    )


def test_sscan_hashtable_full_iteration_with_changes(server, redis_ref):
    """A big set scanned while members are added and removed: every member present for
    the whole scan is returned exactly once, nothing that was never a member is."""
    for port in (server.port, redis_ref[1]):
        c = redis.Redis(port=port, protocol=2)
        c.flushall()
        stable = {f'm{i}'.encode() for i in range(3000)}
        churn = [f'c{i}'.encode() for i in range(2000)]
        c.sadd('s', *stable)
        c.sadd('s', *churn[:1000])
        assert c.object('encoding', 's') == b'hashtable'
        seen, cursor, steps = [], 0, 0
        while True:
            cursor, items = c.sscan('s', cursor, count=50)
            seen += items
            c.srem('s', *churn[steps * 10 : steps * 10 + 10])
            c.sadd('s', *churn[1000 + steps * 5 : 1000 + steps * 5 + 5], f'new{steps}')
            steps += 1
            if cursor == 0:
                break
        counts = Counter(seen)
        assert all(counts[m] >= 1 for m in stable)
        assert set(seen) <= stable | set(churn) | {f'new{i}'.encode() for i in range(steps)}
        if port == server.port:
            assert all(counts[m] == 1 for m in stable)  # ours never repeats one
        assert c.sscan('s', 0, match='m1*', count=1000)[1]
        c.close()


def test_sscan_match_on_hashtable(both):
    for c in both:
        c.sadd('s', *[f'k{i}' for i in range(1000)], 'other')
    got = []
    for c in both:
        found, cursor = set(), 0
        while True:
            cursor, items = c.sscan('s', cursor, match='k1?', count=100)
            found.update(items)
            if cursor == 0:
                break
        got.append(found)
    assert got[0] == got[1] == {f'k1{i}'.encode() for i in range(10)}


# -- keyspace events and WATCH -----------------------------------------------------------------


def test_keyspace_events(both):
    cmds = [
        ('SADD', 's', '1', '2', 'x'),
        ('SADD', 's', '1'),  # nothing added: no event
        ('SREM', 's', 'nothere'),
        ('SREM', 's', '1'),
        ('SREM', 's', '2', 'x'),  # emptied: srem, then del
        ('SADD', 'a', '1', '2', '3'),
        ('SADD', 'b', '3', '4'),
        ('SMOVE', 'a', 'b', '1'),
        ('SMOVE', 'a', 'b', '3'),  # already there: srem on a only
        ('SMOVE', 'a', 'c', '2'),  # a emptied: srem, del, then new and sadd on c
        ('SMOVE', 'b', 'b', '4'),
        ('SMOVE', 'nokey', 'b', '4'),
        ('SPOP', 'b'),
        ('SPOP', 'b', '0'),
        ('SPOP', 'b', '1'),
        ('SPOP', 'b', '10'),  # the rest: spop, then del
        ('SADD', 'one', 'x'),
        ('SPOP', 'one'),
        ('SADD', 'p', *range(20)),
        ('SPOP', 'p', '3'),
        ('SPOP', 'p', '16'),
        ('SPOP', 'nokey', '3'),
        ('SADD', 'x', '1', '2'),
        ('SADD', 'y', '2', '3'),
        ('SINTERSTORE', 'd', 'x', 'y'),
        ('SINTERSTORE', 'd', 'x', 'y'),
        ('SUNIONSTORE', 'd', 'x', 'y'),
        ('SDIFFSTORE', 'd', 'x', 'y'),
        ('SDIFFSTORE', 'd', 'x', 'x'),  # empty: del
        ('SDIFFSTORE', 'd', 'x', 'x'),  # nothing to delete: no event
        ('SINTERSTORE', 'd', 'x', 'nokey'),
        ('SET', 'str', 'v'),
        ('SUNIONSTORE', 'str', 'x'),
        ('SINTERSTORE', 'str', 'nokey'),
        ('SADD', 'str', 'x'),
        ('SMEMBERS', 'x'),
        ('SINTER', 'x', 'nokey'),
        ('SRANDMEMBER', 'x', '-3'),
    ]
    got = assert_same_events(both, cmds, 'KEA')
    assert (b'__keyevent@0__:del', b's') in got
    assert_same_events(both, cmds, 'KEAn')
    assert_same_events(both, cmds, 'Kgsnm')


def test_keyspace_hits_and_misses(both):
    """Read look-ups count as Redis counts them, also in SPOP and the *STORE commands."""
    cmds = [
        ('SADD', 's', '1', '2'),
        ('SISMEMBER', 's', '1'),
        ('SISMEMBER', 'nokey', '1'),
        ('SMEMBERS', 's'),
        ('SCARD', 'nokey'),
        ('SINTER', 's', 'nokey', 's'),
        ('SINTERSTORE', 'd', 's', 'nokey'),
        ('SUNIONSTORE', 'd', 's', 'nokey'),
        ('SINTERCARD', '2', 's', 'nokey'),
        ('SMOVE', 's', 'nokey', '1'),
        ('SPOP', 'd', '100'),
        ('SRANDMEMBER', 's'),
        ('SSCAN', 's', '0'),
        ('SSCAN', 'nokey', '0'),
        ('SMISMEMBER', 'nokey', 'a'),
    ]
    stats = []
    for c in both:
        c.config_resetstat()
        run_all(c, cmds)
        info = c.info('stats')
        stats.append((info['keyspace_hits'], info['keyspace_misses']))
    assert stats[0] == stats[1]


WRITES = [
    # (setup, watched key, command, whether Redis signals the key)
    ([('SADD', 's', 'a')], 's', ('SADD', 's', 'b'), True),
    ([('SADD', 's', 'a')], 's', ('SADD', 's', 'a'), False),
    ([], 's', ('SADD', 's', 'a'), True),
    ([('SADD', 's', 'a', 'b')], 's', ('SREM', 's', 'a'), True),
    ([('SADD', 's', 'a')], 's', ('SREM', 's', 'a'), True),
    ([('SADD', 's', 'a')], 's', ('SREM', 's', 'z'), False),
    ([('SADD', 's', 'a', 'b')], 's', ('SPOP', 's'), True),
    ([('SADD', 's', 'a', 'b')], 's', ('SPOP', 's', '1'), True),
    ([('SADD', 's', 'a', 'b')], 's', ('SPOP', 's', '5'), True),
    ([('SADD', 's', *range(10))], 's', ('SPOP', 's', '9'), True),
    ([('SADD', 's', 'a')], 's', ('SPOP', 's', '0'), False),
    ([('SADD', 's', 'a')], 's', ('SRANDMEMBER', 's', '-5'), False),
    ([('SADD', 's', 'a'), ('SADD', 'd', 'b')], 's', ('SMOVE', 's', 'd', 'a'), True),
    ([('SADD', 's', 'a'), ('SADD', 'd', 'b')], 'd', ('SMOVE', 's', 'd', 'a'), True),
    ([('SADD', 's', 'a'), ('SADD', 'd', 'a')], 'd', ('SMOVE', 's', 'd', 'a'), False),
    ([('SADD', 's', 'a', 'b')], 'd', ('SMOVE', 's', 'd', 'a'), True),
    ([('SADD', 's', 'a')], 's', ('SMOVE', 's', 'd', 'z'), False),
    ([('SADD', 's', 'a')], 's', ('SMOVE', 's', 's', 'a'), False),
    ([('SADD', 's', 'a')], 'd', ('SINTERSTORE', 'd', 's'), True),
    ([('SADD', 's', 'a'), ('SET', 'd', 'x')], 'd', ('SINTERSTORE', 'd', 's', 'n'), True),
    ([('SADD', 's', 'a')], 'd', ('SINTERSTORE', 'd', 's', 'n'), False),
    ([('SADD', 's', 'a')], 's', ('SINTERSTORE', 'd', 's'), False),
    ([('SADD', 's', 'a')], 'd', ('SUNIONSTORE', 'd', 's'), True),
    ([('SADD', 'd', 'a')], 'd', ('SUNIONSTORE', 'd', 'n'), True),
    ([('SADD', 's', 'a')], 'd', ('SDIFFSTORE', 'd', 's'), True),
    ([('SADD', 'd', 'a')], 'd', ('SDIFFSTORE', 'd', 'd', 'd'), True),
    ([('SADD', 's', 'a')], 'd', ('SDIFFSTORE', 'd', 'n', 's'), False),
]


@pytest.mark.parametrize(('setup', 'watched', 'command', 'signals'), WRITES)
def test_watch_sees_each_write(server, redis_ref, setup, watched, command, signals):
    results = []
    for port in (server.port, redis_ref[1]):
        c, other = redis.Redis(port=port), redis.Redis(port=port)
        c.flushall()
        run_all(c, setup)
        c.execute_command('WATCH', watched)
        run_all(other, [command])
        c.execute_command('MULTI')
        c.execute_command('PING')
        results.append(c.execute_command('EXEC'))
        c.close()
        other.close()
    assert results[0] == results[1]
    assert (results[0] is None) == signals


# -- metadata and the data type ------------------------------------------------------------------


def test_random_pool_invariants():
    """Random mixes of adds, removals and random draws keep the draw pool consistent: a
    draw always returns a current member, and a pop removes exactly that member."""
    rng = random.Random(1)
    limits = EncodingLimits()
    s, model = Set(), set()
    for _ in range(20000):
        op = rng.random()
        m = b'%d' % rng.randrange(300)
        if op < 0.4:
            assert s.add_members([m], limits) == (m not in model)
            model.add(m)
        elif op < 0.6:
            s.difference_update([m])
            model.discard(m)
        elif model and op < 0.8:
            got = s.pop_random()
            assert got in model
            model.remove(got)
        elif model:
            assert s.random_member() in model
            k = rng.randrange(1, len(model) + 1)
            d = s.random_distinct(k) if k < len(model) else s.members()
            assert len(d) == len(set(d)) == k and set(d) <= model
        assert s == model
        if s.pool is not None:
            assert set(s.pool) >= model and len(set(s.pool)) == len(s.pool)
