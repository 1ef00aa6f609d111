"""Sorted-set pops (store/commands/zset_pops.py), side by side with redis-server 7.0:
ZPOPMIN ZPOPMAX ZMPOP and the blocking BZPOPMIN BZPOPMAX BZMPOP.

Replies are compared byte for byte in RESP2 and RESP3 (their four shapes differ between
the protocols and with or without COUNT), error text included: counts (0, negative,
huge, not a number), numkeys, MIN|MAX, repeated COUNT, timeouts, wrong types, wrong
arity. For the blocking pops: who is served, in which order, with which reply bytes and
which keyspace events; what ends a wait (a ZADD, its timeout, CLIENT UNBLOCK, a
disconnect) and what does not (a key deleted, emptied in a transaction, or replaced by
another type). Nothing depends on timing: a test waits for a client to be blocked by
polling INFO `blocked_clients` (conftest.wait_until); timeouts are checked with generous
bounds only.
"""

import shlex
import time

import pytest

from blocking_scene import Scene, blocked_count, on_both, wait_blocked
from conftest import WAIT, assert_same_events, raw_same
from rawconn import RawConn, pack

pytestmark = pytest.mark.differential

LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)


def cmds(text):
    """One command per line, arguments split as a shell splits them."""
    return [tuple(shlex.split(line)) for line in text.strip().splitlines() if line.strip()]


# -- non-blocking pops, byte for byte -------------------------------------------------------

ZPOP = cmds(f"""
zadd z 1 a 2 b 3 c 4 d 5 e 6 f -0 zero inf top -inf bottom 0.1 tenth
zpopmin z
zpopmax z
zpopmin z 1
zpopmax z 2
zpopmin z 0
zpopmax z 0
zpopmin z -1
zpopmin z x
zpopmin z 1.5
zpopmin z ''
zpopmin z 1 2
zpopmax z 1 foo
zpopmin z {LLONG_MAX}0
zpopmin z 3
exists z
zpopmax z {LLONG_MAX}
exists z
zpopmin z
zpopmin z 5
zpopmin z 0
zpopmax z -1
zpopmin nokey 0
zpopmax nokey x
zadd one 1 x
zpopmax one 1
exists one
zadd two 1 x 2 y
zpopmin two
zpopmin two
exists two
zadd lp 1 a 2 b 3 c
zpopmax lp
object encoding lp
set str x
zpopmin str
zpopmax str 0
zpopmin str x
zpopmin str 1 2
""")

ZMPOP = cmds(f"""
zadd z 1 a 2 b 3 c 4 d
zadd y 10 p 20 q
zmpop 1 z min
zmpop 1 z MAX
zmpop 2 nokey z min count 1
zmpop 2 nokey y max COUNT 10
exists y
zmpop 1 z min count {LLONG_MAX}
exists z
zmpop 2 z y min
zmpop 1 nokey max count 5
zmpop 0 z min
zmpop -1 z min
zmpop x z min
zmpop {LLONG_MAX} z min
zmpop {LLONG_MAX - 1} z min
zmpop 2 z min
zmpop 1 z minx
zmpop 1 z left
zmpop 1 z min count 0
zmpop 1 z min count -1
zmpop 1 z min count x
zmpop 1 z min count 1 count 1
zmpop 1 z min count
zmpop 1 z min foo
zmpop 1 z min count {LLONG_MAX}0
zadd z 1 a
set str x
zmpop 2 str z min
zmpop 2 z str min
zmpop 2 nokey str max count 2
zmpop 1 str min count 0
""")

BLOCKING_NOW = cmds(f"""
zadd z 1 a 2 b 3 c 4 d 5 e 6 f 7 g
zadd y 10 p
bzpopmin z 0
bzpopmax z 0
bzpopmin nokey y 1
bzpopmax nokey z 0.5
bzmpop 0 1 z min
bzmpop 0 2 nokey z max count 2
zadd y 11 q
bzmpop 1 1 y min count 3
exists y
bzpopmin z x
bzpopmin z -1
bzpopmin z inf
bzpopmin z 1e16
bzpopmin z ' 1'
bzpopmin z nan
bzpopmin z {LLONG_MAX}
bzmpop x 1 z min
bzmpop -1 1 z min
bzmpop 0 0 z min
bzmpop x 0 z min
bzmpop x 1 z foo
bzmpop x 1 z min count 0
zadd z 7 g
bzmpop 0 2 z min
set str x
bzpopmin str 0
bzpopmin nokey str 0
bzpopmax str nokey 0
bzmpop 0 1 str min
bzmpop 0 2 nokey str max
bzmpop x 1 str min
bzpopmin str x
""")


@pytest.mark.parametrize('proto', [2, 3], ids=['resp2', 'resp3'])
@pytest.mark.parametrize(
    'commands', [ZPOP, ZMPOP, BLOCKING_NOW], ids=['zpop', 'zmpop', 'blocking-served-at-once']
)
def test_replies_match_redis(fresh_raw_pair, proto, commands):
    raw_same(fresh_raw_pair(proto), commands)


def test_reply_shapes(fresh_raw_pair):
    """The four shapes of genericZpopCommand's reply, as bytes."""
    for proto in (2, 3):
        ours, _ = pair = fresh_raw_pair(proto)
        for c in pair:
            c.cmd('zadd', 'z', '1', 'a', '2', 'b', '3', 'c', '4', 'd', '5', 'e')
        raw_same(pair, cmds('zpopmin z\nzpopmin z 2\nbzpopmin z 0\nzmpop 1 z min count 9'))
    ours, _ = fresh_raw_pair(3)
    ours.cmd('zadd', 'z', '1', 'a', '2', 'b', '3', 'c', '4', 'd')
    assert ours.cmd('zpopmin', 'z') == b'*2\r\n$1\r\na\r\n,1\r\n'
    assert ours.cmd('zpopmin', 'z', '1') == b'*1\r\n*2\r\n$1\r\nb\r\n,2\r\n'
    assert ours.cmd('bzpopmin', 'z', '0') == b'*3\r\n$1\r\nz\r\n$1\r\nc\r\n,3\r\n'
    assert ours.cmd('zmpop', '1', 'z', 'max') == b'*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\nd\r\n,4\r\n'
    assert ours.cmd('zmpop', '1', 'z', 'max') == b'_\r\n'
    assert ours.cmd('zpopmin', 'z', '5') == b'*0\r\n'


def test_wrong_arity(fresh_raw_pair):
    raw_same(
        fresh_raw_pair(2),
        cmds("""
        zpopmin
        zpopmax
        zmpop 1 z
        zmpop 1
        bzpopmin z
        bzpopmax z
        bzmpop 0 1 z
        bzmpop 0 1
        """),
    )


def test_blocking_pops_inside_multi_answer_at_once(fresh_raw_pair):
    """Inside EXEC a blocking pop may not wait: a null array; with elements there it is
    served as usual."""
    for proto in (2, 3):
        raw_same(
            fresh_raw_pair(proto),
            cmds("""
            multi
            bzpopmin z 0
            bzpopmax z 1
            bzmpop 0 1 z min
            bzmpop 0 1 z max count 3
            zadd z 1 a 2 b 3 c
            bzpopmin z 0
            bzpopmax z 0
            bzmpop 0 2 nokey z min count 5
            bzpopmin z 0
            exec
            exists z
            """),
        )


def test_timeout_values_inside_multi(fresh_raw_pair):
    """getTimeoutFromObjectOrReply's answers: errors for what is not a long double or is
    negative after ceil(seconds * 1000) (inf and products past a long long included);
    everything else waits (here: answers at once inside EXEC)."""
    timeouts = [
        'inf', '-inf', '1e16', '9223371000000000', '9223372036854775', '-0', '-0.0001', '0x10',
        ' 1', '1 ', '1e-400', 'abc', '', '1e5000', '-1e-9', '0.0001', 'nan', '1.5e3', '+1',
        '9223372036854775807', '9223372036854775.807', '9223372036854775.808', '-1',
    ]  # fmt: skip
    for proto in (2, 3):
        pair = fresh_raw_pair(proto)
        commands = [('multi',)]
        for t in timeouts:
            commands += [('bzpopmin', 'k', t), ('bzmpop', t, '1', 'k', 'max')]
        raw_same(pair, commands + [('exec',)])


# -- keyspace events and WATCH --------------------------------------------------------------

EVENT_COMMANDS = [
    ('zadd', 'z', '1', 'a', '2', 'b', '3', 'c', '4', 'd'),
    ('zpopmin', 'z'),
    ('zpopmax', 'z', '0'),
    ('zpopmax', 'z', '1'),
    ('zpopmin', 'nokey'),
    ('zadd', 'y', '1', 'a'),
    ('zmpop', '2', 'nokey', 'y', 'min'),
    ('zmpop', '1', 'z', 'max', 'count', '10'),
    ('zadd', 'w', '1', 'a', '2', 'b'),
    ('bzpopmax', 'nokey', 'w', '0'),
    ('bzmpop', '0', '1', 'w', 'min', 'count', '5'),
    ('set', 's', 'x'),
    ('zpopmin', 's'),
    ('zmpop', '1', 's', 'min'),
]


@pytest.mark.parametrize('flags', ['KEA', 'KEAn', 'Kz', 'Eg'])
def test_keyspace_events_match_redis(both, flags):
    events = assert_same_events(both, EVENT_COMMANDS, flags)
    if flags == 'KEA':
        assert len(events) > 15


WATCH_CASES = [
    [('zpopmin', 'z')],
    [('zpopmax', 'z', '0')],
    [('zpopmin', 'k')],
    [('zpopmax', 'z', '9')],
    [('zmpop', '1', 'z', 'min')],
    [('zmpop', '1', 'k', 'min')],
    [('bzpopmin', 'z', '0')],
    [('bzmpop', '0', '1', 'z', 'max', 'count', '2')],
]


@pytest.mark.parametrize('case', WATCH_CASES, ids=lambda c: ' '.join(c[0]))
def test_watch_signalling_matches_redis(fresh_raw_pair, case):
    pair = fresh_raw_pair(2)
    for c in pair:
        c.cmd('zadd', 'z', '1', 'a', '2', 'b', '3', 'c')
    raw_same(pair, [('watch', 'k', 'z')] + case + [('multi',), ('ping',), ('exec',)])


# -- blocking: the scene ----------------------------------------------------------------


# -- a ZADD serves a blocked client ---------------------------------------------------------

SERVED = [
    (('BZPOPMIN', 'k', '0'), [('ZADD', 'k', '1', 'a')]),
    (('BZPOPMAX', 'k', '0'), [('ZADD', 'k', '1', 'a', '2', 'b')]),
    (('BZPOPMIN', 'k1', 'k2', '0'), [('ZADD', 'k2', '1', 'a', '2', 'b')]),
    (('BZPOPMAX', 'k1', 'k2', '1000'), [('ZINCRBY', 'k2', '5', 'a')]),
    (('BZMPOP', '0', '2', 'k1', 'k2', 'MAX', 'COUNT', '2'), [('ZADD', 'k2', '1', 'a', '2', 'b')]),
    (('BZMPOP', '0', '1', 'k', 'MIN'), [('ZADD', 'k', '1', 'a', '2', 'b')]),
    (('BZMPOP', '0', '1', 'k', 'MIN', 'COUNT', '10'), [('ZADD', 'k', '1', 'a', '2', 'b')]),
    (('BZPOPMIN', 'k', 'k', '0'), [('ZADD', 'k', 'inf', 'a', '-0', 'b')]),
    (
        ('BZPOPMIN', 'k', '0'),
        [('MULTI',), ('ZADD', 'k', '1', 'a', '2', 'b'), ('ZPOPMIN', 'k'), ('EXEC',)],
    ),  # fmt: skip
    (('BZPOPMIN', 'k', '0'), [('ZADD', 'src', '1', 'x'), ('RENAME', 'src', 'k')]),
    (('BZPOPMAX', 'k', '0'), [('ZADD', 'k', 'incr', '0.5', 'x')]),
    (('BZPOPMAX', 'k', '0'), [('ZADD', 'k', '1e-310', 'x')]),
]


@pytest.mark.parametrize('proto', [2, 3], ids=['resp2', 'resp3'])
@pytest.mark.parametrize(
    'blocked, then',
    SERVED,
    ids=[' '.join(b) + ' <- ' + '; '.join(' '.join(c) for c in t) for b, t in SERVED],
)
def test_served_reply_and_events_match_redis(ports, proto, blocked, then):
    """The served client's reply bytes, the events of the ZADD and of the pop it causes,
    and what is left in the keys."""

    def scenario(port):
        with Scene(port, events='KEAn') as s:
            w = s.block(*blocked, proto=proto)
            replies = [s.cmd(*c) for c in then]
            served = w.read_reply(timeout=WAIT)
            left = [s.cmd('ZRANGE', k, '0', '-1', 'WITHSCORES') for k in ('k', 'k1', 'k2', 'src')]
            return replies, served, s.events(), left, blocked_count(s.admin)

    replies, served, events, left, still = on_both(ports, scenario)
    assert still == 0
    assert served not in (b'*-1\r\n', b'_\r\n')
    assert events


def test_first_blocked_first_served(ports):
    def scenario(port):
        with Scene(port) as s:
            ws = [s.block('BZPOPMIN', 'k', '0') for _ in range(3)]
            out = [s.cmd('ZADD', 'k', '1', 'a', '2', 'b')]
            out += [ws[0].read_reply(timeout=WAIT), ws[1].read_reply(timeout=WAIT)]
            out.append(blocked_count(s.admin))
            out.append(s.cmd('ZADD', 'k', '3', 'c'))
            out.append(ws[2].read_reply(timeout=WAIT))
            out.append(s.cmd('EXISTS', 'k'))
            return out

    out = on_both(ports, scenario)
    assert out[1:4] == [
        b'*3\r\n$1\r\nk\r\n$1\r\na\r\n$1\r\n1\r\n',
        b'*3\r\n$1\r\nk\r\n$1\r\nb\r\n$1\r\n2\r\n',
        1,
    ]


def test_one_zadd_of_several_members_serves_several_clients(ports):
    def scenario(port):
        with Scene(port, events='KEA') as s:
            ws = [
                s.block('BZPOPMIN', 'k', '0'),
                s.block('BZPOPMAX', 'k', '0'),
                s.block('BZMPOP', '0', '1', 'k', 'MIN', 'COUNT', '2'),
                s.block('BZMPOP', '0', '1', 'k', 'MAX', proto=3),
            ]
            add = s.cmd('ZADD', 'k', '1', 'a', '2', 'b', '3', 'c', '4', 'd')
            served = [w.read_reply(timeout=WAIT) for w in ws[:3]]
            still = blocked_count(s.admin)
            more = s.cmd('ZADD', 'k', '5', 'e')
            served.append(ws[3].read_reply(timeout=WAIT))
            return add, served, still, more, s.events(), s.cmd('EXISTS', 'k')

    add, served, still, *_ = on_both(ports, scenario)
    assert (
        served[2]
        == b'*2\r\n$1\r\nk\r\n*2\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n'
    )
    assert still == 1


def test_keys_are_served_in_the_order_they_became_ready(ports):
    def scenario(port):
        with Scene(port) as s:
            w1 = s.block('BZPOPMIN', 'k1', '0')
            w2 = s.block('BZPOPMIN', 'k1', 'k2', '0')
            tx = [
                s.cmd(*c) for c in [('MULTI',), ('ZADD', 'k2', '1', 'a'), ('ZADD', 'k1', '2', 'b')]
            ]
            tx.append(s.cmd('EXEC'))
            return tx, w1.read_reply(timeout=WAIT), w2.read_reply(timeout=WAIT)

    _, first, second = on_both(ports, scenario)
    assert first == b'*3\r\n$2\r\nk1\r\n$1\r\nb\r\n$1\r\n2\r\n'
    assert second == b'*3\r\n$2\r\nk2\r\n$1\r\na\r\n$1\r\n1\r\n'


def test_client_is_served_before_the_writers_next_command(ports):
    """A pipeline `ZADD k 1 a; ZPOPMIN k` from one client: the blocked client gets the
    member between the two, so the ZPOPMIN finds nothing."""

    def scenario(port):
        with Scene(port) as s:
            w = s.block('BZPOPMIN', 'k', '0')
            s.admin.send(pack('ZADD', 'k', '1', 'a') + pack('ZPOPMIN', 'k'))
            mine = [s.admin.read_reply(), s.admin.read_reply()]
            return mine, w.read_reply(timeout=WAIT)

    mine, served = on_both(ports, scenario)
    assert mine == [b':1\r\n', b'*0\r\n'] and served == b'*3\r\n$1\r\nk\r\n$1\r\na\r\n$1\r\n1\r\n'


def test_commands_after_a_blocked_one_wait_for_it(ports):
    def scenario(port):
        with Scene(port) as s:
            w = s.block('BZPOPMAX', 'k', '0')
            w.send(pack('INCR', 'n'))
            before = s.cmd('GET', 'n')
            s.cmd('ZADD', 'k', '1', 'v')
            return before, w.read_reply(timeout=WAIT), w.read_reply(timeout=WAIT)

    before, served, incr = on_both(ports, scenario)
    assert before == b'$-1\r\n' and incr == b':1\r\n'


def test_watch_fails_when_a_served_pop_empties_the_watched_key(ports):
    def scenario(port):
        with Scene(port) as s, RawConn(port) as watcher:
            a = s.block('BZPOPMIN', 'k', '0')
            s.cmd('ZADD', 'k', '1', 'x')
            served = a.read_reply(timeout=WAIT)
            s.cmd('ZADD', 'k', '1', 'x')
            b = s.block('BZMPOP', '0', '1', 'other', 'MIN')
            watcher.cmd('WATCH', 'other')
            s.cmd('ZADD', 'other', '1', 'x')
            served2 = b.read_reply(timeout=WAIT)
            return served, served2, [watcher.cmd(*c) for c in [('MULTI',), ('PING',), ('EXEC',)]]

    *_, tx = on_both(ports, scenario)
    assert tx[-1] == b'*-1\r\n'


def test_waiters_in_another_database_are_not_served(ports):
    def scenario(port):
        with Scene(port) as s:
            w = s.block('BZPOPMIN', 'k', '0', setup=[('SELECT', '1')])
            out = [s.cmd('ZADD', 'k', '1', 'in-db0'), blocked_count(s.admin)]
            out += [s.cmd('SELECT', '1'), s.cmd('ZADD', 'k', '2', 'in-db1')]
            out += [w.read_reply(timeout=WAIT), s.cmd('ZCARD', 'k')]
            return out

    out = on_both(ports, scenario)
    assert out[1] == 1 and out[4] == b'*3\r\n$1\r\nk\r\n$6\r\nin-db1\r\n$1\r\n2\r\n'


# -- what leaves a client waiting ---------------------------------------------------------

STILL_WAITING = [
    [('SET', 'k', 'string')],
    [('SET', 'k', 'string'), ('DEL', 'k')],
    [('RPUSH', 'k', 'a')],
    [('ZADD', 'other', '1', 'x')],
    [('ZADD', 'k', 'xx', '1', 'a')],
    [('MULTI',), ('ZADD', 'k', '1', 'a'), ('DEL', 'k'), ('EXEC',)],
    [('MULTI',), ('ZADD', 'k', '1', 'a', '2', 'b'), ('ZREMRANGEBYRANK', 'k', '0', '-1'), ('EXEC',)],
    [('MULTI',), ('ZADD', 'k', '1', 'a'), ('ZPOPMIN', 'k'), ('EXEC',)],
    [('FLUSHALL',)],
    [('FLUSHDB',)],
]


@pytest.mark.parametrize('writes', STILL_WAITING, ids=lambda w: ' '.join(w[-1]))
@pytest.mark.parametrize(
    'blocked',
    [('BZPOPMIN', 'k', '0'), ('BZMPOP', '0', '1', 'k', 'MAX', 'COUNT', '2')],
    ids=['bzpopmin', 'bzmpop'],
)
def test_key_deleted_or_of_another_type_keeps_the_client_waiting(ports, blocked, writes):
    """Redis 7.0 serves a sorted-set waiter only when its key holds a non-empty sorted set
    once the writing command is done; anything else leaves it waiting for the next ZADD."""

    def scenario(port):
        with Scene(port) as s:
            w = s.block(*blocked)
            out = [s.cmd(*c) for c in writes]
            out.append(blocked_count(s.admin))
            out += [s.cmd('DEL', 'k'), s.cmd('ZADD', 'k', '1', 'late')]
            out.append(w.read_reply(timeout=WAIT))
            return out

    out = on_both(ports, scenario)
    assert out[len(writes)] == 1


# -- what ends a wait ---------------------------------------------------------------------

BLOCKING = [
    ('BZPOPMIN', 'k', '{t}'),
    ('BZPOPMAX', 'k1', 'k', '{t}'),
    ('BZMPOP', '{t}', '1', 'k', 'MIN', 'COUNT', '3'),
]


def _with_timeout(cmd, t):
    return tuple(a.replace('{t}', t) for a in cmd)


@pytest.mark.parametrize('proto', [2, 3], ids=['resp2', 'resp3'])
@pytest.mark.parametrize('cmd', BLOCKING, ids=lambda c: c[0])
def test_timeout_replies_null_array(ports, cmd, proto):
    """A wait of 0.2 s ends with a null array, no sooner than asked and well within a
    generous bound; nothing is left blocked and a later ZADD stays."""

    def scenario(port):
        with Scene(port) as s, RawConn(port, proto=proto) as w:
            t0 = time.monotonic()
            reply = w.cmd(*_with_timeout(cmd, '0.2'))
            elapsed = time.monotonic() - t0
            assert 0.19 <= elapsed < WAIT, elapsed
            return reply, blocked_count(s.admin), s.cmd('ZADD', 'k', '1', 'x'), s.cmd('ZCARD', 'k')

    reply, *_ = on_both(ports, scenario)
    assert reply == (b'*-1\r\n' if proto == 2 else b'_\r\n')


@pytest.mark.parametrize('timeout', ['0.0001', '0.001', '1e-300', '0x1p-20'])
def test_sub_millisecond_timeouts_wait_one_millisecond(ports, timeout):
    """Redis rounds seconds * 1000 up: a timeout this small still ends, it is not 0."""

    def scenario(port):
        with RawConn(port) as w:
            return [
                w.cmd('BZPOPMIN', 'k', timeout),
                w.cmd('BZMPOP', timeout, '1', 'k', 'MAX'),
            ]

    assert on_both(ports, scenario) == [b'*-1\r\n', b'*-1\r\n']


@pytest.mark.parametrize('timeout', ['-0.0001', '-0', '0.0', '9223372036854775'])
def test_timeouts_that_mean_forever(ports, timeout):
    def scenario(port):
        with Scene(port) as s:
            w = s.block('BZPOPMAX', 'k', timeout)
            s.cmd('ZADD', 'k', '1', 'x')
            return w.read_reply(timeout=WAIT)

    assert on_both(ports, scenario) == b'*3\r\n$1\r\nk\r\n$1\r\nx\r\n$1\r\n1\r\n'


@pytest.mark.parametrize('how', ['TIMEOUT', 'ERROR'])
@pytest.mark.parametrize('cmd', BLOCKING, ids=lambda c: c[0])
def test_client_unblock(ports, cmd, how):
    def scenario(port):
        with Scene(port) as s:
            w = s.block(*_with_timeout(cmd, '0'))
            cid = w.client_id
            out = [s.cmd('CLIENT', 'UNBLOCK', cid, how), w.read_reply(timeout=WAIT)]
            out += [s.cmd('CLIENT', 'UNBLOCK', cid, how), w.cmd('PING'), blocked_count(s.admin)]
            out += [s.cmd('ZADD', 'k', '1', 'x'), s.cmd('ZCARD', 'k')]
            return out

    out = on_both(ports, scenario)
    assert out[0] == b':1\r\n' and out[2] == b':0\r\n'
    if how == 'ERROR':
        assert out[1] == b'-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n'
    else:
        assert out[1] == b'*-1\r\n'


def test_disconnect_while_blocked(ports):
    """A client that disconnects while blocked stops waiting: the next client in line is
    served, and once all are gone a ZADD stays in the set."""

    def scenario(port):
        with Scene(port) as s:
            first = s.block('BZPOPMIN', 'k', '0')
            second = s.block('BZMPOP', '0', '1', 'k', 'MAX')
            third = s.block('BZPOPMAX', 'k', '0')
            first.close()
            wait_blocked(s.admin, 2)
            out = [s.cmd('ZADD', 'k', '1', 'a'), second.read_reply(timeout=WAIT)]
            third.close()
            wait_blocked(s.admin, 0)
            out += [s.cmd('ZADD', 'k', '2', 'b'), s.cmd('ZRANGE', 'k', '0', '-1')]
            return out

    out = on_both(ports, scenario)
    assert out[1] == b'*2\r\n$1\r\nk\r\n*1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n'
    assert out[3] == b'*1\r\n$1\r\nb\r\n'


def test_served_client_in_resp3_and_after_pipelined_commands(ports):
    def scenario(port):
        with Scene(port) as s:
            w = s.block('BZMPOP', '0', '2', 'a', 'b', 'MAX', 'COUNT', '2', proto=3)
            w.send(pack('ZRANGE', 'b', '0', '-1', 'WITHSCORES') + pack('BZPOPMIN', 'a', '0.01'))
            s.cmd('ZADD', 'b', '1', 'x', '2', 'y', '3', 'z')
            return [w.read_reply(timeout=WAIT) for _ in range(3)]

    served, rest, timed_out = on_both(ports, scenario)
    assert served == b'*2\r\n$1\r\nb\r\n*2\r\n*2\r\n$1\r\nz\r\n,3\r\n*2\r\n$1\r\ny\r\n,2\r\n'
    assert rest == b'*1\r\n*2\r\n$1\r\nx\r\n,1\r\n' and timed_out == b'_\r\n'


# -- the command table ----------------------------------------------------------------------
