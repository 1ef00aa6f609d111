"""Blocking list commands (store/commands/list_blocking.py), side by side with redis-server:
who is served, in which order, with which reply bytes and which keyspace events; what ends
a wait (a push, its timeout, CLIENT UNBLOCK, a disconnect); and what does not (a key
deleted, replaced by another type, flushed, or pushed and emptied in one transaction).

Every scenario runs against our server and Debian's redis-server and the transcripts are
compared. Nothing depends on timing: a test waits for a client to be blocked by polling
INFO `blocked_clients` (conftest.wait_until), and a key that must leave its waiters
blocked is checked by INFO after the writer's next command, before which Redis (and we)
serve ready keys. Timeouts are checked with generous bounds only.
"""

import time

import pytest

from blocking_scene import Scene, blocked_count, on_both, wait_blocked
from conftest import WAIT
from rawconn import RawConn, pack

pytestmark = pytest.mark.differential


# -- a push serves a blocked client -------------------------------------------------------

SERVED = [
    (('BLPOP', 'k', '0'), [('RPUSH', 'k', 'a')]),
    (('BRPOP', 'k', '0'), [('RPUSH', 'k', 'a', 'b')]),
    (('BLPOP', 'k1', 'k2', '0'), [('LPUSH', 'k2', 'a', 'b')]),
    (('BRPOP', 'k1', 'k2', '1000'), [('RPUSH', 'k2', 'a', 'b')]),
    (('BLMPOP', '0', '2', 'k1', 'k2', 'RIGHT', 'COUNT', '2'), [('RPUSH', 'k2', 'a', 'b', 'c')]),
    (('BLMPOP', '0', '1', 'k', 'LEFT'), [('RPUSH', 'k', 'a', 'b')]),
    (('BLMPOP', '0', '1', 'k', 'LEFT', 'COUNT', '10'), [('RPUSH', 'k', 'a', 'b')]),
    (('BLMOVE', 'k', 'd', 'LEFT', 'RIGHT', '0'), [('RPUSH', 'k', 'a')]),
    (('BLMOVE', 'k', 'd', 'RIGHT', 'LEFT', '0'), [('RPUSH', 'd', 'x'), ('RPUSH', 'k', 'a', 'b')]),
    (('BLMOVE', 'k', 'k', 'RIGHT', 'LEFT', '0'), [('RPUSH', 'k', 'a', 'b')]),
    (('BLMOVE', 'k', 'k', 'LEFT', 'LEFT', '0'), [('RPUSH', 'k', 'a')]),
    (('BRPOPLPUSH', 'k', 'd', '0'), [('LPUSH', 'k', 'a', 'b')]),
    (('BLPOP', 'k', 'k', '0'), [('RPUSH', 'k', 'a', 'b')]),
    (('BLPOP', 'k', '0'), [('MULTI',), ('RPUSH', 'k', 'a', 'b'), ('LPOP', 'k'), ('EXEC',)]),
    (('BLPOP', 'k', '0'), [('RPUSH', 'src', 'x'), ('RENAME', 'src', 'k')]),
    (('BLPOP', 'k', '0'), [('RPUSH', 'src', 'x'), ('LMOVE', 'src', 'k', 'LEFT', 'LEFT')]),
]


@pytest.mark.parametrize('proto', [2, 3], ids=['resp2', 'resp3'])
@pytest.mark.parametrize(
    'blocked, then',
    SERVED,
    ids=[' '.join(b) + ' <- ' + '; '.join(' '.join(c) for c in t) for b, t in SERVED],
)
def test_served_reply_and_events_match_redis(ports, proto, blocked, then):
    """The served client's reply bytes, the events of the push and of the pop it causes,
    and what is left in the keys."""

    def scenario(port):
        with Scene(port, events='KEAn') as s:
            w = s.block(*blocked, proto=proto)
            replies = [s.cmd(*c) for c in then]
            served = w.read_reply(timeout=WAIT)
            left = [s.cmd('LRANGE', k, '0', '-1') for k in ('k', 'k1', 'k2', 'd', 'src')]
            return replies, served, s.events(), left, blocked_count(s.admin)

    replies, served, events, left, still = on_both(ports, scenario)
    assert still == 0
    assert served not in (b'*-1\r\n', b'_\r\n')
    assert events


# -- fairness and several clients served by one push --------------------------------------


def test_first_blocked_first_served(ports):
    def scenario(port):
        with Scene(port) as s:
            ws = [s.block('BLPOP', 'k', '0') for _ in range(3)]
            out = [s.cmd('RPUSH', 'k', 'a', 'b')]
            out += [ws[0].read_reply(timeout=WAIT), ws[1].read_reply(timeout=WAIT)]
            out.append(blocked_count(s.admin))
            out.append(s.cmd('RPUSH', 'k', 'c'))
            out.append(ws[2].read_reply(timeout=WAIT))
            out.append(s.cmd('EXISTS', 'k'))
            return out

    out = on_both(ports, scenario)
    assert out[1:4] == [b'*2\r\n$1\r\nk\r\n$1\r\na\r\n', b'*2\r\n$1\r\nk\r\n$1\r\nb\r\n', 1]


def test_first_blocked_is_served_whatever_its_other_keys(ports):
    def scenario(port):
        with Scene(port) as s:
            w1 = s.block('BLPOP', 'k1', 'k2', '0')
            w2 = s.block('BRPOP', 'k2', '0')
            out = [s.cmd('RPUSH', 'k2', 'x'), w1.read_reply(timeout=WAIT)]
            out += [blocked_count(s.admin), s.cmd('RPUSH', 'k2', 'y'), w2.read_reply(timeout=WAIT)]
            return out

    on_both(ports, scenario)


def test_keys_are_served_in_the_order_they_became_ready(ports):
    """A transaction pushes k2 then k1: the waiter on k2 is served first, and a client
    waiting on both gets k2's element."""

    def scenario(port):
        with Scene(port) as s:
            w1 = s.block('BLPOP', 'k1', '0')
            w2 = s.block('BLPOP', 'k1', 'k2', '0')
            tx = [s.cmd(*c) for c in [('MULTI',), ('RPUSH', 'k2', 'a'), ('RPUSH', 'k1', 'b')]]
            tx.append(s.cmd('EXEC'))
            return tx, w1.read_reply(timeout=WAIT), w2.read_reply(timeout=WAIT)

    _, first, second = on_both(ports, scenario)
    assert first == b'*2\r\n$2\r\nk1\r\n$1\r\nb\r\n'
    assert second == b'*2\r\n$2\r\nk2\r\n$1\r\na\r\n'


def test_one_push_of_several_elements_serves_several_clients(ports):
    def scenario(port):
        with Scene(port, events='KEA') as s:
            ws = [
                s.block('BLPOP', 'k', '0'),
                s.block('BRPOP', 'k', '0'),
                s.block('BLMPOP', '0', '1', 'k', 'LEFT', 'COUNT', '2'),
                s.block('BLMOVE', 'k', 'd', 'LEFT', 'LEFT', '0'),
            ]
            push = s.cmd('RPUSH', 'k', 'a', 'b', 'c', 'd')
            served = [w.read_reply(timeout=WAIT) for w in ws[:3]]
            still = blocked_count(s.admin)
            more = s.cmd('RPUSH', 'k', 'e')
            served.append(ws[3].read_reply(timeout=WAIT))
            return push, served, still, more, s.events(), s.cmd('LRANGE', 'd', '0', '-1')

    push, served, still, *_ = on_both(ports, scenario)
    assert served[2] == b'*2\r\n$1\r\nk\r\n*2\r\n$1\r\nb\r\n$1\r\nc\r\n' and still == 1


def test_served_blmove_serves_the_waiters_of_its_destination(ports):
    """BLMOVE src -> mid is served by a push to src; its push to mid serves the client
    waiting on mid in the same round, and that one's push to out the next."""

    def scenario(port):
        with Scene(port, events='KEAn') as s:
            a = s.block('BLMOVE', 'src', 'mid', 'LEFT', 'RIGHT', '0')
            b = s.block('BRPOPLPUSH', 'mid', 'out', '0')
            c = s.block('BLPOP', 'out', '0')
            d = s.block('BLPOP', 'mid', '0')
            push = s.cmd('RPUSH', 'src', 'x')
            served = [w.read_reply(timeout=WAIT) for w in (a, b, c)]
            still = blocked_count(s.admin)
            keys = [s.cmd('EXISTS', k) for k in ('src', 'mid', 'out')]
            s.cmd('RPUSH', 'mid', 'y')
            served.append(d.read_reply(timeout=WAIT))
            return push, served, still, keys, s.events()

    push, served, still, keys, _ = on_both(ports, scenario)
    assert served[2] == b'*2\r\n$3\r\nout\r\n$1\r\nx\r\n' and still == 1


def test_served_blmove_to_a_key_of_another_type_gets_wrongtype(ports):
    """The element stays in the source and goes to the next client waiting on it."""

    def scenario(port):
        with Scene(port, events='KEA') as s:
            a = s.block('BLMOVE', 'src', 'dst', 'LEFT', 'LEFT', '0')
            b = s.block('BLPOP', 'src', '0')
            s.cmd('SET', 'dst', 'string')
            push = s.cmd('RPUSH', 'src', 'x')
            return push, a.read_reply(timeout=WAIT), b.read_reply(timeout=WAIT), s.events()

    _, a, b, _ = on_both(ports, scenario)
    assert a.startswith(b'-WRONGTYPE') and b == b'*2\r\n$3\r\nsrc\r\n$1\r\nx\r\n'


def test_client_is_served_before_the_pushers_next_command(ports):
    """A pipeline `RPUSH k a; LPOP k` from one client: the blocked client gets the
    element between the two, so the LPOP finds nothing."""

    def scenario(port):
        with Scene(port) as s:
            w = s.block('BLPOP', 'k', '0')
            s.admin.send(pack('RPUSH', 'k', 'a') + pack('LPOP', 'k'))
            mine = [s.admin.read_reply(), s.admin.read_reply()]
            return mine, w.read_reply(timeout=WAIT)

    mine, served = on_both(ports, scenario)
    assert mine == [b':1\r\n', b'$-1\r\n'] and served == b'*2\r\n$1\r\nk\r\n$1\r\na\r\n'


def test_commands_after_a_blocked_one_wait_for_it(ports):
    def scenario(port):
        with Scene(port) as s:
            w = s.block('BLPOP', 'k', '0')
            w.send(pack('INCR', 'n'))
            before = s.cmd('GET', 'n')
            s.cmd('LPUSH', 'k', 'v')
            return before, w.read_reply(timeout=WAIT), w.read_reply(timeout=WAIT)

    before, served, incr = on_both(ports, scenario)
    assert before == b'$-1\r\n' and incr == b':1\r\n'


def test_watch_fails_when_a_served_blmove_pushes_to_the_watched_key(ports):
    def scenario(port):
        with Scene(port) as s, RawConn(port) as watcher:
            a = s.block('BLMOVE', 'src', 'dst', 'LEFT', 'LEFT', '0')
            watcher.cmd('WATCH', 'dst')
            s.cmd('RPUSH', 'src', 'x')
            served = a.read_reply(timeout=WAIT)
            return served, [watcher.cmd(*c) for c in [('MULTI',), ('PING',), ('EXEC',)]]

    _, tx = on_both(ports, scenario)
    assert tx[-1] == b'*-1\r\n'


def test_waiters_in_another_database_are_not_served(ports):
    def scenario(port):
        with Scene(port) as s:
            w = s.block('BLPOP', 'k', '0', setup=[('SELECT', '1')])
            out = [s.cmd('RPUSH', 'k', 'in-db0'), blocked_count(s.admin)]
            out += [s.cmd('SELECT', '1'), s.cmd('RPUSH', 'k', 'in-db1')]
            out += [w.read_reply(timeout=WAIT), s.cmd('LLEN', 'k')]
            return out

    out = on_both(ports, scenario)
    assert out[1] == 1 and out[4] == b'*2\r\n$1\r\nk\r\n$6\r\nin-db1\r\n'


# -- what leaves a client waiting ---------------------------------------------------------

STILL_WAITING = [
    [('SET', 'k', 'string')],
    [('SET', 'k', 'string'), ('DEL', 'k')],
    [('XADD', 'k', '1-1', 'f', 'v')],
    [('RPUSH', 'other', 'x')],
    [('MULTI',), ('RPUSH', 'k', 'a'), ('DEL', 'k'), ('EXEC',)],
    [('MULTI',), ('RPUSH', 'k', 'a', 'b'), ('LTRIM', 'k', '1', '0'), ('EXEC',)],
    [('MULTI',), ('LPUSH', 'k', 'a'), ('RPOPLPUSH', 'k', 'elsewhere'), ('EXEC',)],
    [('FLUSHALL',)],
    [('FLUSHDB',)],
    [('LPUSHX', 'k', 'a')],
]


@pytest.mark.parametrize('writes', STILL_WAITING, ids=lambda w: ' '.join(w[-1]))
@pytest.mark.parametrize(
    'blocked',
    [
        ('BLPOP', 'k', '0'),
        ('BLMOVE', 'k', 'd', 'LEFT', 'LEFT', '0'),
        ('BLMPOP', '0', '1', 'k', 'RIGHT'),
    ],
    ids=['blpop', 'blmove', 'blmpop'],
)
def test_key_deleted_or_of_another_type_keeps_the_client_waiting(ports, blocked, writes):
    """Redis 7.0 serves a list waiter only when its key holds a non-empty list once the
    writing command is done; anything else leaves it waiting for the next push."""

    def scenario(port):
        with Scene(port) as s:
            w = s.block(*blocked)
            out = [s.cmd(*c) for c in writes]
            out.append(blocked_count(s.admin))
            out += [s.cmd('DEL', 'k'), s.cmd('RPUSH', 'k', 'late')]
            out.append(w.read_reply(timeout=WAIT))
            return out

    out = on_both(ports, scenario)
    assert out[len(writes)] == 1


def test_swapdb_serves_a_list_swapped_in(ports):
    """SWAPDB brings a list into the waited database: Redis serves it (its
    scanDatabaseForReadyKeys)."""

    def scenario(port):
        with Scene(port) as s:
            w = s.block('BLPOP', 'k', '0')
            s.cmd('SELECT', '1')
            s.cmd('RPUSH', 'k', 'from-db1')
            out = [s.cmd('SWAPDB', '0', '1')]
            out.append(w.read_reply(timeout=WAIT) if blocked_count(s.admin) == 0 else 'blocked')
            return out

    ours, theirs = (scenario(p) for p in ports)
    assert theirs[1] == b'*2\r\n$1\r\nk\r\n$8\r\nfrom-db1\r\n'
    assert ours == theirs


def test_swapdb_serving_a_stale_key_expires_it(ports):
    """SWAPDB brings a list past its deadline (active expiry off) into the waited
    database: serving it expires it (Redis signals every key the swap brings, stale or
    not), so the key is gone and counted expired, and the client goes on waiting."""

    def scenario(port):
        with Scene(port) as s:
            s.cmd('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
            try:
                s.cmd('SELECT', '1')
                s.cmd('RPUSH', 'k', 'from-db1')
                s.cmd('PEXPIRE', 'k', '50')
                s.block('BLPOP', 'k', '0')
                time.sleep(0.1)
                out = [s.cmd('SWAPDB', '0', '1'), s.cmd('SELECT', '0'), s.cmd('DBSIZE')]
                out.append(blocked_count(s.admin))
                return out
            finally:
                s.cmd('DEBUG', 'SET-ACTIVE-EXPIRE', '1')

    ours, theirs = (scenario(p) for p in ports)
    assert theirs[2] == b':0\r\n' and theirs[3] == 1
    assert ours == theirs


def test_ready_order_counts_only_lists_created(ports):
    """Redis marks a key ready when a list (zset, stream) is added under it, so a waiter
    on k1 and k2 gets k1's element when a transaction sets k2 to a string, pushes k1,
    then replaces k2 by a list: a list waiter's key is signalled only by a write that
    leaves a list (store/blocking.py's `wants`)."""

    def scenario(port):
        with Scene(port) as s:
            w = s.block('BLPOP', 'k1', 'k2', '0')
            s.cmd('MULTI')
            for c in [
                ('SET', 'k2', 'x'),
                ('RPUSH', 'k1', 'a'),
                ('DEL', 'k2'),
                ('RPUSH', 'k2', 'b'),
            ]:
                s.cmd(*c)
            s.cmd('EXEC')
            return w.read_reply(timeout=WAIT)

    ours, theirs = (scenario(p) for p in ports)
    assert theirs == b'*2\r\n$2\r\nk1\r\n$1\r\na\r\n'
    assert ours == theirs


# -- what ends a wait ---------------------------------------------------------------------

BLOCKING = [
    ('BLPOP', 'k', '{t}'),
    ('BRPOP', 'k1', 'k', '{t}'),
    ('BLMOVE', 'k', 'd', 'LEFT', 'RIGHT', '{t}'),
    ('BRPOPLPUSH', 'k', 'd', '{t}'),
    ('BLMPOP', '{t}', '1', 'k', 'LEFT', 'COUNT', '3'),
]


def _with_timeout(cmd, t):
    return tuple(a.replace('{t}', t) for a in cmd)


@pytest.mark.parametrize('proto', [2, 3], ids=['resp2', 'resp3'])
@pytest.mark.parametrize('cmd', BLOCKING, ids=lambda c: c[0])
def test_timeout_replies_null_array(ports, cmd, proto):
    """A wait of 0.2 s ends with a null array (BLMOVE too), no sooner than asked and
    well within a generous bound; nothing is left blocked and a later push stays."""

    def scenario(port):
        with Scene(port) as s, RawConn(port, proto=proto) as w:
            t0 = time.monotonic()
            reply = w.cmd(*_with_timeout(cmd, '0.2'))
            elapsed = time.monotonic() - t0
            assert 0.19 <= elapsed < WAIT, elapsed
            return reply, blocked_count(s.admin), s.cmd('RPUSH', 'k', 'x'), s.cmd('LLEN', 'k')

    reply, *_ = on_both(ports, scenario)
    assert reply == (b'*-1\r\n' if proto == 2 else b'_\r\n')


@pytest.mark.parametrize('timeout', ['0.0001', '0.001', '1e-300', '0x1p-20'])
def test_sub_millisecond_timeouts_wait_one_millisecond(ports, timeout):
    """Redis rounds seconds * 1000 up: a timeout this small still ends, it is not 0."""

    def scenario(port):
        with RawConn(port) as w:
            return [
                w.cmd('BLPOP', 'k', timeout),
                w.cmd('BLMOVE', 'k', 'd', 'LEFT', 'LEFT', timeout),
            ]

    assert on_both(ports, scenario) == [b'*-1\r\n', b'*-1\r\n']


@pytest.mark.parametrize('timeout', ['-0.0001', '-0', '0.0', '9223372036854775'])
def test_timeouts_that_mean_forever(ports, timeout):
    """-0.0001 s rounds up to 0 ms (forever); a timeout past the year 2^63 ms never ends."""

    def scenario(port):
        with Scene(port) as s:
            w = s.block('BLPOP', 'k', timeout)
            s.cmd('RPUSH', 'k', 'x')
            return w.read_reply(timeout=WAIT)

    assert on_both(ports, scenario) == b'*2\r\n$1\r\nk\r\n$1\r\nx\r\n'


@pytest.mark.parametrize('how', ['TIMEOUT', 'ERROR'])
@pytest.mark.parametrize('cmd', BLOCKING, ids=lambda c: c[0])
def test_client_unblock(ports, cmd, how):
    def scenario(port):
        with Scene(port) as s:
            w = s.block(*_with_timeout(cmd, '0'))
            cid = w.client_id
            out = [s.cmd('CLIENT', 'UNBLOCK', cid, how), w.read_reply(timeout=WAIT)]
            out += [s.cmd('CLIENT', 'UNBLOCK', cid, how), w.cmd('PING'), blocked_count(s.admin)]
            out += [s.cmd('RPUSH', 'k', 'x'), s.cmd('LLEN', 'k')]
            return out

    out = on_both(ports, scenario)
    assert out[0] == b':1\r\n' and out[2] == b':0\r\n'
    if how == 'ERROR':
        assert out[1] == b'-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n'
    else:
        assert out[1] == b'*-1\r\n'


def test_disconnect_while_blocked(ports):
    """A client that disconnects while blocked stops waiting: the next client in line is
    served, and once all are gone a push stays in the list."""

    def scenario(port):
        with Scene(port) as s:
            first = s.block('BLPOP', 'k', '0')
            second = s.block('BLMOVE', 'k', 'd', 'LEFT', 'LEFT', '0')
            third = s.block('BLMPOP', '0', '1', 'k', 'LEFT')
            first.close()
            wait_blocked(s.admin, 2)
            out = [s.cmd('RPUSH', 'k', 'a'), second.read_reply(timeout=WAIT)]
            third.close()
            wait_blocked(s.admin, 0)
            out += [s.cmd('RPUSH', 'k', 'b'), s.cmd('LRANGE', 'k', '0', '-1')]
            out.append(s.cmd('LRANGE', 'd', '0', '-1'))
            return out

    out = on_both(ports, scenario)
    assert out[1] == b'$1\r\na\r\n' and out[3] == b'*1\r\n$1\r\nb\r\n'


def test_served_client_in_resp3_and_after_pipelined_commands(ports):
    """A RESP3 client blocked behind nothing, then its pipelined commands run in order."""

    def scenario(port):
        with Scene(port) as s:
            w = s.block('BLMPOP', '0', '2', 'a', 'b', 'RIGHT', 'COUNT', '2', proto=3)
            w.send(pack('LRANGE', 'b', '0', '-1') + pack('BLPOP', 'a', '0.01'))
            s.cmd('RPUSH', 'b', '1', '2', '3')
            return [w.read_reply(timeout=WAIT) for _ in range(3)]

    served, rest, timed_out = on_both(ports, scenario)
    assert served == b'*2\r\n$1\r\nb\r\n*2\r\n$1\r\n3\r\n$1\r\n2\r\n'
    assert rest == b'*1\r\n$1\r\n1\r\n' and timed_out == b'_\r\n'
