"""Blocking operations (store/blocking.py) through XREAD/XREADGROUP BLOCK, side by side with
redis-server: what ends a wait, with which reply, in which order, and what a client sees
when a key it waits on is deleted, replaced, expired or flushed.

Every exchange is byte-exact (raw sockets), run against our server and Debian's
redis-server alike, and compared. A test waits for a client to be blocked by polling INFO
`blocked_clients` rather than sleeping a fixed time, so a slow machine only makes it slower.
"""

import time

import pytest

from rawconn import RawConn, pack

pytestmark = pytest.mark.differential


@pytest.fixture(params=['ours', 'redis'])
def port(request, server, redis_ref):
    p = server.port if request.param == 'ours' else redis_ref[1]
    with RawConn(p) as admin:
        admin.cmd('FLUSHALL')
    return p


def wait_blocked(admin, n, limit=30.0):
    """Poll INFO until `n` clients are blocked (or fail after a generous `limit`)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        info = admin.cmd('INFO', 'clients').decode()
        if f'blocked_clients:{n}\r' in info:
            return
        time.sleep(0.01)
    raise AssertionError(f'expected {n} blocked clients: {info}')


def exchange(port, setup, blocked, then):
    """Run `setup` commands, send each of `blocked` from its own connection (waiting until
    it blocks), then run `then` from the admin connection; return (replies of `then`,
    the reply each blocked client got, in order)."""
    with RawConn(port) as admin:
        for cmd in setup:
            admin.cmd(*cmd)
        waiters = []
        try:
            for i, cmd in enumerate(blocked):
                w = RawConn(port)
                waiters.append(w)
                w.send(pack(*cmd))
                wait_blocked(admin, i + 1)
            replies = [admin.cmd(*cmd) for cmd in then]
            got = [w.read_reply(timeout=30) for w in waiters]
        finally:
            for w in waiters:
                w.close()
        return replies, got


def test_xreadgroup_unblocked_when_its_stream_is_deleted(server, redis_ref):
    """Redis 7.0 answers a blocked XREADGROUP when its key is deleted; XREAD keeps waiting
    and is served by the next XADD."""
    results = []
    for p in (server.port, redis_ref[1]):
        with RawConn(p) as a:
            a.cmd('FLUSHALL')
        results.append(
            exchange(
                p,
                setup=[('XGROUP', 'CREATE', 's', 'g', '$', 'MKSTREAM')],
                blocked=[
                    ('XREADGROUP', 'GROUP', 'g', 'c1', 'BLOCK', '0', 'STREAMS', 's', '>'),
                    ('XREAD', 'BLOCK', '0', 'STREAMS', 's', '$'),
                ],
                then=[('DEL', 's'), ('XADD', 's', '7-1', 'f', 'v')],
            )
        )
    assert results[0] == results[1]
    _, got = results[0]
    assert got[0] == b'-UNBLOCKED the stream key no longer exists\r\n'
    assert b'7-1' in got[1]


@pytest.mark.parametrize(
    'replace',
    [('SET', 's', 'x'), ('FLUSHALL',), ('FLUSHDB',), ('SWAPDB', '0', '1'), ('PEXPIRE', 's', '1')],
    ids=['set', 'flushall', 'flushdb', 'swapdb', 'expire'],
)
def test_xreadgroup_unblocked_when_its_key_changes_type_or_vanishes(port, replace):
    setup = [('XGROUP', 'CREATE', 's', 'g', '$', 'MKSTREAM')]
    blocked = [('XREADGROUP', 'GROUP', 'g', 'c1', 'BLOCK', '0', 'STREAMS', 's', '>')]
    replies, got = exchange(port, setup, blocked, [replace])
    assert got == [b'-UNBLOCKED the stream key no longer exists\r\n']


def test_group_consumers_served_first_blocked_first(server, redis_ref):
    """One new entry goes to the client that blocked first; the other keeps waiting and
    gets the next entry."""
    results = []
    for p in (server.port, redis_ref[1]):
        with RawConn(p) as a:
            a.cmd('FLUSHALL')
        results.append(
            exchange(
                p,
                setup=[('XGROUP', 'CREATE', 'q', 'g', '$', 'MKSTREAM')],
                blocked=[
                    ('XREADGROUP', 'GROUP', 'g', 'first', 'BLOCK', '0', 'STREAMS', 'q', '>'),
                    ('XREADGROUP', 'GROUP', 'g', 'second', 'BLOCK', '0', 'STREAMS', 'q', '>'),
                ],
                then=[('XADD', 'q', '1-1', 'job', 'a'), ('XADD', 'q', '2-1', 'job', 'b')],
            )
        )
    assert results[0] == results[1]
    _, got = results[0]
    assert b'1-1' in got[0] and b'2-1' in got[1]


def test_blocked_client_served_before_the_writers_next_command(server, redis_ref):
    """A pipeline `XADD; XREADGROUP (no BLOCK)` from one client: the blocked consumer is
    served after the XADD and before the pipeline's read, which then finds nothing."""
    results = []
    for p in (server.port, redis_ref[1]):
        with RawConn(p) as admin:
            admin.cmd('FLUSHALL')
            admin.cmd('XGROUP', 'CREATE', 'q', 'g', '$', 'MKSTREAM')
            with RawConn(p) as waiter:
                waiter.send(
                    pack('XREADGROUP', 'GROUP', 'g', 'w', 'BLOCK', '0', 'STREAMS', 'q', '>')
                )
                wait_blocked(admin, 1)
                admin.send(
                    pack('XADD', 'q', '1-1', 'job', 'a')
                    + pack('XREADGROUP', 'GROUP', 'g', 'other', 'COUNT', '5', 'STREAMS', 'q', '>')
                )
                mine = [admin.read_reply(), admin.read_reply()]
                results.append((mine, waiter.read_reply(timeout=30)))
    assert results[0] == results[1]
    (xadd, read), served = results[0]
    assert read == b'*-1\r\n' and b'1-1' in served


@pytest.mark.parametrize('how', ['TIMEOUT', 'ERROR'])
def test_client_unblock(port, how):
    with RawConn(port) as admin, RawConn(port) as waiter:
        cid = waiter.cmd('CLIENT', 'ID')[1:-2].decode()
        waiter.send(pack('XREAD', 'BLOCK', '0', 'STREAMS', 's', '$'))
        wait_blocked(admin, 1)
        assert admin.cmd('CLIENT', 'UNBLOCK', cid, how) == b':1\r\n'
        reply = waiter.read_reply(timeout=30)
        assert admin.cmd('CLIENT', 'UNBLOCK', cid, how) == b':0\r\n'
        # the connection goes on normally afterwards
        assert waiter.cmd('PING') == b'+PONG\r\n'
    if how == 'TIMEOUT':
        assert reply == b'*-1\r\n'
    else:
        assert reply == b'-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n'


def test_commands_after_a_blocked_one_wait_for_it(port):
    """Commands pipelined behind a blocked XREAD run only once it is served, in order."""
    with RawConn(port) as admin, RawConn(port) as waiter:
        waiter.send(pack('XREAD', 'BLOCK', '0', 'STREAMS', 's', '$') + pack('INCR', 'n'))
        wait_blocked(admin, 1)
        assert admin.cmd('GET', 'n') == b'$-1\r\n'
        admin.cmd('XADD', 's', '1-1', 'f', 'v')
        assert b'1-1' in waiter.read_reply(timeout=30)
        assert waiter.read_reply(timeout=30) == b':1\r\n'


def test_blocking_read_inside_multi_answers_at_once(port):
    with RawConn(port) as c:
        assert c.cmd('MULTI') == b'+OK\r\n'
        assert c.cmd('XREAD', 'BLOCK', '0', 'STREAMS', 's', '$') == b'+QUEUED\r\n'
        assert c.cmd('EXEC') == b'*1\r\n*-1\r\n'


def test_timeout_then_disconnect_leaves_nothing_blocked(port):
    with RawConn(port) as admin:
        with RawConn(port) as w:
            assert w.cmd('XREAD', 'BLOCK', '50', 'STREAMS', 's', '$') == b'*-1\r\n'
        with RawConn(port) as w:
            w.send(pack('XREAD', 'BLOCK', '0', 'STREAMS', 's', '$'))
            wait_blocked(admin, 1)
        wait_blocked(admin, 0)
        assert admin.cmd('XADD', 's', '1-1', 'f', 'v') == b'$3\r\n1-1\r\n'


def test_watch_fails_after_a_served_xreadgroup_changes_the_stream(port):
    """Serving a blocked XREADGROUP moves the group's cursor: a transaction WATCHing the
    stream fails, as it would after the same XREADGROUP run directly."""
    with RawConn(port) as admin, RawConn(port) as watcher, RawConn(port) as w:
        admin.cmd('XGROUP', 'CREATE', 's', 'g', '$', 'MKSTREAM')
        w.send(pack('XREADGROUP', 'GROUP', 'g', 'c', 'BLOCK', '0', 'STREAMS', 's', '>'))
        wait_blocked(admin, 1)
        watcher.cmd('WATCH', 's')
        admin.cmd('XADD', 's', '1-1', 'f', 'v')
        assert b'1-1' in w.read_reply(timeout=30)
        watcher.cmd('MULTI')
        watcher.cmd('PING')
        assert watcher.cmd('EXEC') == b'*-1\r\n'
