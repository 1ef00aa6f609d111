"""List commands (store/commands/lists.py), as differential tests against redis-server 7.0.

Replies are compared byte for byte (raw connections) in RESP2 and RESP3, error text
included: bad, huge and negative counts and indexes, wrong types, wrong arity, options in
every order. Keyspace events are captured by a real subscriber on both servers and
compared in order; WATCH signalling is compared command by command; a seeded random walk
over a few keys compares long mixed sequences. The blocking commands are
tests/test_list_blocking.py.
"""

import random
import shlex

import pytest

from conftest import assert_same_events, capture_events, raw_same

pytestmark = pytest.mark.differential

LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)


def cmds(text):
    """One command per line, arguments split as a shell splits them ('' is an empty
    argument)."""
    return [tuple(shlex.split(line)) for line in text.strip().splitlines() if line.strip()]


# -- replies, byte for byte -------------------------------------------------------------

PUSH_POP = cmds(f"""
lpush l a
rpush l b c
lpush l x y z
lrange l 0 -1
lpushx l 1 2
rpushx l 3
lpushx nokey a
rpushx nokey a b
exists nokey
llen l
llen nokey
lpop l
rpop l
lpop l 0
rpop l 0
lpop l 1
rpop l 2
lpop l -1
rpop l -1
lpop l x
lpop l 9223372036854775807
lpop l 9223372036854775808
lpop nokey
rpop nokey
lpop nokey 0
lpop nokey 5
lpop nokey -1
lpop nokey x
rpush m 1 2 3 4 5
rpop m 3
lpop m {LLONG_MAX}
exists m
rpush e only
rpop e
exists e
object encoding l
type l
""")

RANGES = cmds(f"""
rpush l a b c d e f g h i j
lrange l 0 -1
lrange l 0 0
lrange l -1 -1
lrange l 2 5
lrange l 5 2
lrange l -3 -1
lrange l -100 2
lrange l 8 100
lrange l 10 20
lrange l -100 -50
lrange l 0 {LLONG_MAX}
lrange l {LLONG_MIN} {LLONG_MIN}
lrange l {LLONG_MIN} {LLONG_MAX}
lrange l {LLONG_MAX} {LLONG_MIN}
lrange l 0 {LLONG_MAX}0
lrange l x 1
lrange l 1 x
lrange l 1.5 2
lrange l ' 1' 2
lrange nokey 0 -1
lrange nokey x 1
lindex l 0
lindex l 9
lindex l 10
lindex l -1
lindex l -10
lindex l -11
lindex l {LLONG_MAX}
lindex l {LLONG_MIN}
lindex l x
lindex nokey 0
lindex nokey x
""")

CHANGES = cmds(f"""
rpush l a b c a b c a
lset l 0 A
lset l -1 Z
lset l 7 x
lset l -8 x
lset l {LLONG_MAX} x
lset l x x
lset nokey 0 x
lset nokey x x
lrange l 0 -1
linsert l before b X
linsert l after b Y
linsert l BEFORE A first
linsert l AFTER Z last
linsert l before nothere x
linsert l middle b x
linsert nokey before a x
linsert nokey middle a x
lrange l 0 -1
lrem l 1 a
lrem l -1 c
lrem l 0 b
lrem l 0 nothere
lrem l {LLONG_MIN} a
lrem l {LLONG_MAX} c
lrem l x a
lrem nokey 0 a
lrem nokey x a
lrange l 0 -1
rpush r x x x
lrem r 0 x
exists r
rpush r2 a b a b a b a
lrem r2 2 a
lrange r2 0 -1
lrem r2 -2 b
lrange r2 0 -1
rpush t 1 2 3 4 5 6 7 8 9 10
ltrim t 1 -2
lrange t 0 -1
ltrim t 0 {LLONG_MAX}
ltrim t {LLONG_MIN} {LLONG_MAX}
lrange t 0 -1
ltrim t 2 100
lrange t 0 -1
ltrim t -1 -1
lrange t 0 -1
ltrim t 5 2
exists t
ltrim nokey 0 1
ltrim t x 1
ltrim t 1 x
""")

LPOS = cmds(f"""
rpush l a b c a b c a
lpos l a
lpos l c
lpos l zz
lpos l a rank 1
lpos l a rank 2
lpos l a rank 4
lpos l a rank -1
lpos l a rank -3
lpos l a rank -4
lpos l a rank 0
lpos l a rank {LLONG_MIN}
lpos l a rank {LLONG_MIN} count 1
lpos l a rank {LLONG_MIN} count 0
lpos l a rank {LLONG_MIN + 1} count 1
lpos l a rank {LLONG_MAX}
lpos l a rank 9223372036854775808
lpos l a rank x
lpos l a count 0
lpos l a count 1
lpos l a count 2
lpos l a count 100
lpos l a count {LLONG_MAX}
lpos l a count -1
lpos l a count x
lpos l a rank -1 count 0
lpos l a rank -2 count 2
lpos l a rank 2 count 2 maxlen 4
lpos l a rank -2 maxlen 2
lpos l a maxlen 1
lpos l a maxlen 0
lpos l c maxlen 2
lpos l c maxlen 3
lpos l a maxlen {LLONG_MAX}
lpos l a maxlen -1
lpos l a maxlen x
lpos l zz count 0
lpos l a RANK 2 COUNT 0 MAXLEN 7
lpos l a rank 2 rank 3
lpos l a rank
lpos l a count
lpos l a foo 1
lpos l a rank 0 count -1
lpos l a count -1 rank 0
lpos nokey a
lpos nokey a count 1
lpos nokey a count 0 rank 2
lpos nokey a rank 0
""")

MOVES = cmds("""
rpush u a b c
lmove u u left right
lrange u 0 -1
lmove u u right left
lrange u 0 -1
lmove u v left left
lmove u v LEFT RIGHT
lmove u v right LEFT
exists u
lrange v 0 -1
rpoplpush v w
rpoplpush v v
lrange v 0 -1
lmove nokey v left left
rpoplpush nokey v
lmove v w up left
lmove v w left down
lmove nokey w up left
lrange w 0 -1
rpush one x
rpoplpush one one
lrange one 0 -1
lmpop 1 w left
lmpop 1 w right count 5
exists w
lmpop 2 nokey v left
lmpop 2 nokey v right count 1
lmpop 2 nokey1 nokey2 left
lmpop 2 nokey1 nokey2 left count 5
lmpop 0 v left
lmpop -1 v left
lmpop x v left
lmpop 2 v left
lmpop 3 v left
lmpop 9223372036854775807 v left
lmpop 9223372036854775808 v left
lmpop 1 v
lmpop 1 v middle
lmpop 1 v left count 0
lmpop 1 v left count -1
lmpop 1 v left count x
lmpop 1 v left count
lmpop 1 v left count 1 count 1
lmpop 1 v left foo
lmpop 1 v left count 9223372036854775807
""")

WRONG_TYPE = cmds("""
set s x
rpush l a b
lpush s a
rpush s a
lpushx s a
rpushx s a
lpop s
rpop s
lpop s 0
lpop s 1
lpop s -1
lpop s x
llen s
lrange s 0 -1
lrange s x 1
lindex s 0
lindex s x
lset s 0 x
lset s x x
linsert s before a b
linsert s foo a b
lrem s 1 a
lrem s x a
ltrim s 0 1
ltrim s x 1
lpos s a
lpos s a rank 0
lpos s a count 1
lmove s l left left
lmove l s left left
lmove l s foo left
lmove nokey s left left
rpoplpush s l
rpoplpush l s
lmpop 2 nokey s left
lmpop 2 l s left
lmpop 2 s l left
lrange l 0 -1
blpop nokey s 1
blpop s 0
blpop l s 0
brpop s l 0
brpoplpush s l 0
rpush l a
brpoplpush l s 0
blmove l s left left 0
blmove s l left left 0
blmpop 0 2 nokey s left
blmpop 0 2 s l left
blmpop 0 2 l s left count 5
exists l
""")

# The blocking commands when they need not wait (an element is there, or a bad argument).
BLOCKING_AT_ONCE = cmds("""
rpush l a b c d e f g h i j
blpop l 0
brpop l 0
blpop nokey l 0
brpop nokey l 1.5
blmove l m left right 0
brpoplpush l m 0
blmpop 0 1 l left
blmpop 0 2 nokey l right count 2
lrange m 0 -1
lrange l 0 -1
rpush m p q r s
blpop m x
blpop m -1
blpop m -0.9999
blpop m inf
blpop m -inf
blpop m nan
blpop m 1e30
blpop m 9223372036854775.808
blpop m ' 1'
blpop m '1 '
blpop m ''
blpop m 0x10
blpop m -0
blpop m 9223372036854775
blmove m n left right x
blmove m n up right x
blmove m n left up -1
brpoplpush m n -1
brpoplpush m n x
blmpop x 0 m left
blmpop x 1 m left
blmpop -1 1 m left
blmpop 0 1 m middle
blmpop 0 2 m left
blmpop 0 1 m left count 0
blmpop 0 1 m left count 1 count 2
blmpop 1 1 m left count 1 foo
lrange n 0 -1
""")

ARITY = cmds("""
lpush
lpush l
rpush l
lpushx l
rpushx l
lpop
lpop l 1 2
rpop l 1 2 3
llen
llen l x
lrange l 0
lrange l 0 1 2
lindex l
lindex l 0 1
lset l 0
lset l 0 x y
linsert l before a
linsert l before a b c
lrem l 0
ltrim l 0
lpos l
lmove a b left
rpoplpush a
rpoplpush a b c
lmpop 1 a
blpop l
brpop l
blmove a b left right
brpoplpush a b
blmpop 0 1 a
""")


@pytest.mark.parametrize('proto', [2, 3], ids=['resp2', 'resp3'])
@pytest.mark.parametrize(
    'commands',
    [PUSH_POP, RANGES, CHANGES, LPOS, MOVES, WRONG_TYPE, BLOCKING_AT_ONCE, ARITY],
    ids=['push_pop', 'ranges', 'changes', 'lpos', 'moves', 'wrong_type', 'blocking', 'arity'],
)
def test_replies_match_redis(fresh_raw_pair, proto, commands):
    raw_same(fresh_raw_pair(proto), commands)


def test_blocking_commands_inside_multi_answer_at_once(fresh_raw_pair):
    """Inside EXEC a blocking command may not wait: null array, or a null bulk for BLMOVE
    and BRPOPLPUSH; with an element there it is served as usual."""
    for proto in (2, 3):
        raw_same(
            fresh_raw_pair(proto),
            cmds("""
            multi
            blpop l 0
            brpop l 1
            blmove l m left left 0
            brpoplpush l m 0
            blmpop 0 1 l left
            rpush l a b c d e
            blpop l 0
            blmove l m left left 0
            brpoplpush l m 0
            blmpop 0 1 l left count 5
            blpop l 0
            exec
            lrange m 0 -1
            """),
        )


def test_binary_and_large_elements(fresh_raw_pair):
    big = 'x' * 100_000
    raw_same(
        fresh_raw_pair(2),
        [
            ('rpush', 'l', b'\x00\xff\r\n', '', big, '-0', '01', '1'),
            ('lrange', 'l', '0', '-1'),
            ('lpos', 'l', ''),
            ('lpos', 'l', '1'),
            ('lpos', 'l', '01'),
            ('linsert', 'l', 'before', '', b'\x00'),
            ('lrem', 'l', '0', big),
            ('lindex', 'l', '0'),
            ('lrange', 'l', '0', '-1'),
        ],
    )


def test_long_list_ranges_from_both_ends(fresh_raw_pair):
    """LRANGE/LINDEX/LSET near either end and in the middle of a long list (the deque is
    walked from the nearer end)."""
    pair = fresh_raw_pair(2)
    n = 5000
    for c in pair:
        for i in range(0, n, 500):
            c.cmd('rpush', 'l', *[str(j) for j in range(i, i + 500)])
    probes = []
    for start, end in [
        (0, 99),
        (0, 599),
        (-100, -1),
        (-600, -1),
        (n // 2 - 5, n // 2 + 5),
        (n - 1, n + 100),
        (-n - 5, 3),
        (100, -100),
        (4990, -3),
        (0, -1),
    ]:
        probes.append(('lrange', 'l', str(start), str(end)))
    for i in (0, 1, 63, 64, 65, n // 2, n - 65, n - 1, n, -1, -64, -n, -n - 1):
        probes.append(('lindex', 'l', str(i)))
        probes.append(('lset', 'l', str(i), f'set{i}'))
    probes += [('lrange', 'l', '0', '-1'), ('lpos', 'l', 'set-1', 'rank', '-1')]
    probes += [
        ('ltrim', 'l', '3', '-3'),
        ('ltrim', 'l', '1000', '1200'),
        ('lrange', 'l', '0', '-1'),
    ]
    raw_same(pair, probes)


# -- keyspace events ----------------------------------------------------------------------

EVENT_COMMANDS = [
    ('lpush', 'l', 'a', 'b'),
    ('rpush', 'l', 'c'),
    ('lpushx', 'nokey', 'a'),
    ('rpushx', 'l', 'd', 'e'),
    ('lpop', 'l'),
    ('rpop', 'l', '2'),
    ('lpop', 'l', '0'),
    ('lpop', 'nokey', '3'),
    ('lpop', 'nokey'),
    ('lset', 'l', '0', 'x'),
    ('lset', 'l', '100', 'x'),
    ('linsert', 'l', 'before', 'x', 'y'),
    ('linsert', 'l', 'before', 'nothere', 'y'),
    ('lrem', 'l', '0', 'nothere'),
    ('lrem', 'l', '1', 'y'),
    ('ltrim', 'l', '0', '-1'),
    ('ltrim', 'nokey', '0', '-1'),
    ('rpush', 'l', 'f', 'g'),
    ('ltrim', 'l', '1', '-1'),
    ('lrange', 'l', '0', '-1'),
    ('lrange', 'nokey', '0', '-1'),
    ('lindex', 'nokey', '0'),
    ('llen', 'nokey'),
    ('lpos', 'nokey', 'a'),
    ('lmove', 'l', 'm', 'left', 'right'),
    ('lmove', 'l', 'l', 'left', 'right'),
    ('rpoplpush', 'l', 'm'),
    ('lmove', 'nokey', 'm', 'left', 'left'),
    ('rpush', 'one', 'x'),
    ('rpoplpush', 'one', 'one'),
    ('rpoplpush', 'one', 'two'),
    ('lmpop', '2', 'nokey', 'm', 'left', 'count', '1'),
    ('lmpop', '1', 'm', 'right', 'count', '10'),
    ('rpush', 'r', 'a', 'a'),
    ('lrem', 'r', '0', 'a'),
    ('rpush', 't', 'a'),
    ('ltrim', 't', '1', '0'),
    ('rpush', 'b', '1', '2', '3'),
    ('blpop', 'b', '0'),
    ('brpop', 'nokey', 'b', '0'),
    ('blmove', 'b', 'c', 'right', 'left', '0'),
    ('rpush', 'b', '1', '2', '3'),
    ('brpoplpush', 'b', 'c', '0'),
    ('blmpop', '0', '2', 'nokey', 'b', 'left', 'count', '5'),
    ('set', 's', 'x'),
    ('lpush', 's', 'a'),
    ('lmove', 'c', 's', 'left', 'left'),
    ('lrange', 'c', '0', '-1'),
    ('del', 'c', 'two'),
]


@pytest.mark.parametrize('flags', ['KEA', 'KEAn', 'Kl', 'Eg', 'Em'])
def test_keyspace_events_match_redis(both, flags):
    events = assert_same_events(both, EVENT_COMMANDS, flags)
    if flags == 'KEAn':
        assert len(events) > 80


def test_lmove_raises_the_push_before_the_pop(both):
    """Redis's lmoveGenericCommand notifies the destination's push (and `new`) before the
    source's pop and `del`."""
    ours, _ = both
    events = capture_events(
        ours, [('rpush', 'src', 'a'), ('lmove', 'src', 'dst', 'left', 'right')], 'EAn'
    )
    assert [m for _, m in events] == [b'src', b'src', b'dst', b'dst', b'src', b'src']
    assert [ch.split(b':')[1] for ch, _ in events] == [
        b'new',
        b'rpush',
        b'new',
        b'rpush',
        b'lpop',
        b'del',
    ]


# -- WATCH ----------------------------------------------------------------------------------

WATCH_CASES = [
    [('lpush', 'l', 'x')],
    [('rpush', 'k', 'x')],
    [('lpushx', 'k', 'x')],
    [('rpushx', 'l', 'x')],
    [('lpop', 'l')],
    [('rpop', 'l', '0')],
    [('lpop', 'k', '2')],
    [('llen', 'l')],
    [('lrange', 'l', '0', '-1')],
    [('lindex', 'l', '0')],
    [('lpos', 'l', 'a')],
    [('lset', 'l', '0', 'x')],
    [('lset', 'l', '9', 'x')],
    [('linsert', 'l', 'before', 'a', 'x')],
    [('linsert', 'l', 'before', 'zz', 'x')],
    [('lrem', 'l', '0', 'a')],
    [('lrem', 'l', '0', 'zz')],
    [('ltrim', 'l', '0', '-1')],
    [('ltrim', 'l', '5', '1')],
    [('ltrim', 'k', '0', '1')],
    [('lmove', 'l', 'k', 'left', 'left')],
    [('lmove', 'k', 'l', 'left', 'left')],
    [('rpoplpush', 'l', 'l')],
    [('lmpop', '2', 'k', 'l', 'left')],
    [('lmpop', '1', 'k', 'left')],
    [('blpop', 'l', '0')],
    [('blmove', 'l', 'k', 'left', 'left', '0')],
    [('blmpop', '0', '1', 'l', 'left', 'count', '9')],
]


@pytest.mark.parametrize('case', WATCH_CASES, ids=lambda c: ' '.join(c[0]))
def test_watch_signalling_matches_redis(fresh_raw_pair, case):
    """A WATCHed key is signalled by a command that changed it (the client's own commands
    count too), and only then."""
    pair = fresh_raw_pair(2)
    for c in pair:
        c.cmd('rpush', 'l', 'a', 'b', 'c')
    raw_same(pair, [('watch', 'k', 'l')] + case + [('multi',), ('ping',), ('exec',)])


# -- random walk ----------------------------------------------------------------------------


def _random_command(rng):
    key = rng.choice(['a', 'b', 'c'])
    other = rng.choice(['a', 'b', 'c'])
    ele = rng.choice(['x', 'y', 'z', '1', ''])
    idx = str(rng.choice([0, 1, 2, -1, -2, 5, -5, 100, -100, LLONG_MAX, LLONG_MIN]))
    count = str(rng.choice([0, 1, 2, 3, 10, LLONG_MAX]))
    side = rng.choice(['left', 'right', 'LEFT'])
    return rng.choice(
        [
            ('lpush', key, ele, ele),
            ('rpush', key, ele),
            ('rpush', key, 'x', 'y', 'z', 'x'),
            ('lpushx', key, ele),
            ('rpushx', key, ele, ele),
            ('lpop', key),
            ('rpop', key),
            ('lpop', key, count),
            ('rpop', key, count),
            ('llen', key),
            ('lrange', key, idx, idx),
            ('lrange', key, '0', '-1'),
            ('lindex', key, idx),
            ('lset', key, idx, ele),
            ('linsert', key, rng.choice(['before', 'after']), ele, 'new'),
            ('lrem', key, rng.choice(['0', '1', '-1', '2', '-2']), ele),
            ('ltrim', key, idx, idx),
            ('lpos', key, ele, 'rank', rng.choice(['1', '2', '-1', '-2'])),
            ('lpos', key, ele, 'count', count, 'maxlen', rng.choice(['0', '1', '3'])),
            ('lmove', key, other, side, rng.choice(['left', 'right'])),
            ('rpoplpush', key, other),
            ('lmpop', '2', key, other, side, 'count', count),
            ('blpop', key, other, '0'),
            ('set', key, 'v'),
            ('del', key),
        ]
    )


@pytest.mark.parametrize('seed', [1, 2, 3])
def test_random_walk_matches_redis(fresh_raw_pair, seed):
    rng = random.Random(seed)
    commands = [_random_command(rng) for _ in range(1500)]
    commands = [c for c in commands if c[0] != 'blpop'] + [('lrange', k, '0', '-1') for k in 'abc']
    raw_same(fresh_raw_pair(2), commands)


# -- metadata -------------------------------------------------------------------------------
