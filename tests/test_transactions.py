"""MULTI / EXEC / DISCARD / WATCH / UNWATCH, differential against redis-server 7.0.15 where
the replies are deterministic, plus redis-py pipelines (sync and asyncio)."""

import time

import pytest
import redis

from conftest import close, connect, done, in_time, now_ms
from rawconn import RawConn, pack, session


def flush(*ports):
    for port in ports:
        with RawConn(port) as c:
            c.cmd('FLUSHALL')


def same_session(ours, theirs, commands):
    flush(ours, theirs)
    got, want = session(ours, commands), session(theirs, commands)
    for cmd, g, w in zip(commands, got, want):
        assert g == w, f'{cmd!r}: ours {g!r} != redis {w!r}'
    return got


def two_client_script(port, steps):
    """Run (conn_index, command) steps over two connections; the raw replies."""
    conns = [RawConn(port), RawConn(port)]
    try:
        return [conns[i].cmd(*cmd) for i, cmd in steps]
    finally:
        for c in conns:
            c.close()


def same_two_clients(server, redis_ref, steps):
    flush(server.port, redis_ref[1])
    got = two_client_script(server.port, steps)
    want = two_client_script(redis_ref[1], steps)
    for step, g, w in zip(steps, got, want):
        assert g == w, f'{step!r}: ours {g!r} != redis {w!r}'
    return got


# -- basics and errors ----------------------------------------------------------------------


def test_multi_exec_discard_match_redis(server, redis_ref):
    got = same_session(
        server.port,
        redis_ref[1],
        [
            ('EXEC',),
            ('DISCARD',),
            ('MULTI', 'x'),
            ('EXEC', 'x'),
            ('MULTI',),
            ('SET', 'a', '1'),
            ('INCR', 'a'),
            ('GET', 'a'),
            ('PING',),
            ('ECHO', 'e'),
            ('EXEC',),
            ('MULTI',),
            ('EXEC',),  # empty transaction
            ('MULTI',),
            ('SET', 'a', '2'),
            ('DISCARD',),
            ('GET', 'a'),
            ('EXEC',),
            ('MULTI',),
            ('MULTI',),
            ('SET', 'a', '3'),
            ('EXEC',),  # nested MULTI: no abort
            ('MULTI',),
            ('WATCH', 'a'),
            ('UNWATCH',),
            ('EXEC',),  # WATCH inside MULTI
            ('MULTI',),
            ('SELECT', '1'),
            ('SET', 'a', 'db1'),
            ('SELECT', '0'),
            ('EXEC',),
            ('GET', 'a'),
            ('SELECT', '1'),
            ('GET', 'a'),
            ('SELECT', '0'),
            ('WATCH',),
            ('UNWATCH', 'x'),
        ],
    )
    assert got[10] == b'*5\r\n+OK\r\n:2\r\n$1\r\n2\r\n+PONG\r\n$1\r\ne\r\n'


def test_queue_time_errors_abort_exec(server, redis_ref):
    same_session(
        server.port,
        redis_ref[1],
        [
            ('MULTI',),
            ('SET', 'k', 'v'),
            ('NOPE', 'x'),
            ('GET', 'k'),
            ('EXEC',),
            ('GET', 'k'),
            ('MULTI',),
            ('SET', 'k'),
            ('EXEC',),  # arity
            ('MULTI',),
            ('CLIENT', 'NOPE'),
            ('EXEC',),  # bad subcommand
            ('MULTI',),
            ('CONFIG', 'GET'),
            ('EXEC',),  # subcommand arity
            ('MULTI',),
            ('GET',),
            ('DISCARD',),
            ('EXEC',),
            ('MULTI',),
            ('set', 'k', 'v'),
            ('GeT', 'k'),
            ('EXEC',),  # mixed case queues
            ('MULTI',),
            ('SAVE',),  # no_multi: refused at once, as SHUTDOWN and SYNC
            ('SHUTDOWN', 'NOSAVE'),
            ('EXEC',),
        ],
    )


def test_runtime_errors_inside_exec(server, redis_ref):
    got = same_session(
        server.port,
        redis_ref[1],
        [
            ('SET', 's', 'abc'),
            ('MULTI',),
            ('INCR', 's'),
            ('SET', 't', '1'),
            ('SELECT', '99'),
            ('CLIENT', 'SETNAME', 'a b'),
            ('INCR', 't'),
            ('EXEC',),
            ('GET', 't'),
        ],
    )
    assert got[7].startswith(b'*5\r\n-ERR value is not an integer')


def test_exec_replies_in_resp3(server, redis_ref):
    # the HELLO reply carries the client id, so it stays outside the comparison
    flush(server.port, redis_ref[1])
    results = []
    for port in (server.port, redis_ref[1]):
        with RawConn(port) as c:
            c.cmd('HELLO', '3')
            results.append(
                [
                    c.cmd(*cmd)
                    for cmd in [
                        ('MULTI',),
                        ('GET', 'nokey'),
                        ('SET', 'k', 'v'),
                        ('INCR', 'k'),
                        ('EXEC',),
                        ('WATCH', 'k'),
                        ('SET', 'k', 'w'),
                        ('MULTI',),
                        ('GET', 'k'),
                        ('EXEC',),
                    ]
                ]
            )
    assert results[0] == results[1]
    assert results[0][-1] == b'_\r\n'


def test_queued_commands_are_not_run_before_exec(server, r):
    with RawConn(server.port) as c:
        assert c.cmd('MULTI') == b'+OK\r\n'
        assert c.cmd('SET', 'q', '1') == b'+QUEUED\r\n'
        assert r.get('q') is None
        assert c.cmd('EXEC') == b'*1\r\n+OK\r\n'
    assert r.get('q') == b'1'


# -- WATCH -------------------------------------------------------------------------------


def test_watch_modified_by_another_client(server, redis_ref):
    got = same_two_clients(
        server,
        redis_ref,
        [
            (0, ('SET', 'w', '1')),
            (0, ('WATCH', 'w')),
            (1, ('SET', 'w', '1')),  # same value still counts
            (0, ('MULTI',)),
            (0, ('SET', 'w', 'mine')),
            (0, ('EXEC',)),
            (0, ('GET', 'w')),
            # after EXEC the watch is gone: the next transaction runs
            (1, ('SET', 'w', '2')),
            (0, ('MULTI',)),
            (0, ('GET', 'w')),
            (0, ('EXEC',)),
            # a watch on one key, a write to another: runs
            (0, ('WATCH', 'w')),
            (1, ('SET', 'other', 'x')),
            (0, ('MULTI',)),
            (0, ('INCR', 'w')),
            (0, ('EXEC',)),
            # UNWATCH forgets
            (0, ('WATCH', 'w')),
            (0, ('UNWATCH',)),
            (1, ('SET', 'w', '9')),
            (0, ('MULTI',)),
            (0, ('GET', 'w')),
            (0, ('EXEC',)),
            # DISCARD forgets too
            (0, ('WATCH', 'w')),
            (0, ('MULTI',)),
            (0, ('DISCARD',)),
            (1, ('SET', 'w', '10')),
            (0, ('MULTI',)),
            (0, ('GET', 'w')),
            (0, ('EXEC',)),
            # a write in another database does not touch the watched key
            (0, ('WATCH', 'w')),
            (1, ('SELECT', '1')),
            (1, ('SET', 'w', 'db1')),
            (0, ('MULTI',)),
            (0, ('GET', 'w')),
            (0, ('EXEC',)),
            # deleting the watched key counts; so does one's own write before MULTI
            (1, ('SELECT', '0')),
            (0, ('WATCH', 'w', 'v')),
            (1, ('DEL', 'w')),
            (0, ('MULTI',)),
            (0, ('GET', 'w')),
            (0, ('EXEC',)),
            (0, ('WATCH', 'v')),
            (0, ('SET', 'v', '1')),
            (0, ('MULTI',)),
            (0, ('GET', 'v')),
            (0, ('EXEC',)),
        ],
    )
    assert got[5] == b'*-1\r\n'
    assert got[6] == b'$1\r\n1\r\n'


def test_watch_and_flush(server, redis_ref):
    got = same_two_clients(
        server,
        redis_ref,
        [
            (0, ('SET', 'f', '1')),
            (0, ('WATCH', 'f', 'missing')),
            (1, ('FLUSHALL',)),
            (0, ('MULTI',)),
            (0, ('PING',)),
            (0, ('EXEC',)),
            # flushing when the watched key does not exist changes nothing
            (0, ('WATCH', 'missing')),
            (1, ('FLUSHDB',)),
            (0, ('MULTI',)),
            (0, ('PING',)),
            (0, ('EXEC',)),
            (0, ('SET', 'f', '1')),
            (0, ('WATCH', 'f')),
            (1, ('SELECT', '2')),
            (1, ('FLUSHDB',)),
            (0, ('MULTI',)),
            (0, ('PING',)),
            (0, ('EXEC',)),
        ],
    )
    assert got[5] == b'*-1\r\n' and got[10] == b'*1\r\n+PONG\r\n'


def test_watch_key_that_expires(server, redis_ref):
    """A watched key whose TTL runs out before EXEC fails the transaction, whether or not
    the key has been reclaimed yet; a key already expired at WATCH time does not."""
    for after in (0.05, 0.5):  # MULTI that long after the deadline
        got = []
        for port in (server.port, redis_ref[1]):
            flush(port)
            with RawConn(port) as c:

                def setup(deadline, c=c):  # WATCH must see the key alive: before its deadline
                    c.cmd('UNWATCH')
                    c.cmd('DEL', 'e')
                    return c.cmd('SET', 'e', 'v', 'PXAT', deadline), c.cmd('WATCH', 'e')

                deadline, replies = in_time(setup, 100)
                assert replies == (b'+OK\r\n', b'+OK\r\n')
                time.sleep(max(0, deadline - now_ms()) / 1000 + after)
                got.append([c.cmd('MULTI'), c.cmd('GET', 'e'), c.cmd('EXEC')])
        assert got[0] == got[1]
        assert got[0][2] == b'*-1\r\n'
    for port in (server.port, redis_ref[1]):
        flush(port)
        with RawConn(port) as c:
            c.cmd('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
            try:
                c.cmd('SET', 'e', 'v', 'PX', '20')
                time.sleep(0.05)
                assert c.cmd('WATCH', 'e') == b'+OK\r\n'  # already logically expired
                assert c.cmd('MULTI') == b'+OK\r\n'
                assert c.cmd('GET', 'e') == b'+QUEUED\r\n'
                assert c.cmd('EXEC') == b'*1\r\n$-1\r\n', port
            finally:
                c.cmd('DEBUG', 'SET-ACTIVE-EXPIRE', '1')
    for port in (server.port, redis_ref[1]):
        flush(port)
        with RawConn(port) as c:  # a long TTL that has not run out: EXEC runs
            c.cmd('SET', 'e', 'v', 'EX', '100')
            c.cmd('WATCH', 'e')
            c.cmd('MULTI')
            c.cmd('GET', 'e')
            assert c.cmd('EXEC') == b'*1\r\n$1\r\nv\r\n'


def test_exec_reads_deadlines_against_its_start(server, redis_ref):
    """A key set with a 1 ms TTL inside a transaction is still there for the transaction's
    later commands, even after a DEBUG SLEEP: Redis reads deadlines against the time EXEC
    started."""
    commands = [
        ('MULTI',),
        ('SET', 'k', 'v', 'PX', '1'),
        ('DEBUG', 'SLEEP', '0.02'),
        ('GET', 'k'),
        ('EXISTS', 'k'),
        ('EXEC',),
    ]
    got = same_session(server.port, redis_ref[1], commands)
    assert got[-1] == b'*4\r\n+OK\r\n+OK\r\n$1\r\nv\r\n:1\r\n'


@pytest.mark.parametrize(
    'setup',
    [
        [('SELECT', '0'), ('SET', 'x', 'a', 'PX', '1')],  # none replaced by a stale key
        [
            ('SELECT', '1'),
            ('SET', 'x', 'a', 'PX', '1'),
            ('SELECT', '0'),
            ('SET', 'x', 'b', 'PX', '1'),
        ],
        [('SELECT', '0'), ('SET', 'x', 'a')],  # none replaced by a live key
        [('SELECT', '1'), ('SET', 'x', 'a'), ('SELECT', '0'), ('SET', 'x', 'b', 'PX', '1')],
        [('SELECT', '1'), ('SET', 'x', 'a', 'PX', '1'), ('SELECT', '0'), ('SET', 'x', 'b')],
    ],
    ids=['none-stale', 'stale-stale', 'none-live', 'live-stale', 'stale-live'],
)
def test_swapdb_touches_watched_keys_as_redis(server, redis_ref, setup):
    """SWAPDB fails a transaction watching a key in db 1 when db 1 held the key or gets a
    live one; a missing (or stale) key replaced by a stale one is no change."""
    got = []
    for port in (server.port, redis_ref[1]):
        flush(port)
        with RawConn(port) as c:
            c.cmd('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
            try:
                for cmd in setup:
                    c.cmd(*cmd)
                time.sleep(0.01)  # the 1 ms TTLs run out
                c.cmd('SELECT', '1')
                c.cmd('WATCH', 'x')
                c.cmd('SWAPDB', '0', '1')
                got.append([c.cmd('MULTI'), c.cmd('PING'), c.cmd('EXEC')])
            finally:
                c.cmd('DEBUG', 'SET-ACTIVE-EXPIRE', '1')
                c.cmd('FLUSHALL')
    assert got[0] == got[1]


def test_watch_of_an_expired_key_deletes_nothing(server, redis_ref):
    """WATCH looks at a key without expiring it (the key stays, no expired_keys), and a
    key already expired when WATCHed changes nothing by being deleted afterwards, also
    when SWAPDB brought it: EXEC runs, as in Redis 7.0."""
    got = []
    for port in (server.port, redis_ref[1]):
        flush(port)
        with RawConn(port) as c:
            c.cmd('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
            try:
                c.cmd('CONFIG', 'RESETSTAT')
                c.cmd('SET', 'x', 'v', 'PX', '1')
                time.sleep(0.01)
                out = [c.cmd('WATCH', 'x'), c.cmd('DBSIZE')]
                out.append(b'expired_keys:0' in c.cmd('INFO', 'stats'))
                out += [c.cmd('EXISTS', 'x'), c.cmd('MULTI'), c.cmd('PING'), c.cmd('EXEC')]
                c.cmd('SET', 'y', 'v', 'PX', '1')  # db 0: a stale y for db 1
                time.sleep(0.01)
                c.cmd('SELECT', '1')
                out += [c.cmd('WATCH', 'y'), c.cmd('SWAPDB', '0', '1'), c.cmd('EXISTS', 'y')]
                out += [c.cmd('MULTI'), c.cmd('PING'), c.cmd('EXEC')]
                got.append(out)
            finally:
                c.cmd('DEBUG', 'SET-ACTIVE-EXPIRE', '1')
                c.cmd('FLUSHALL')
    assert got[0] == got[1]
    assert got[0][1] == b':1\r\n' and got[0][2] is True
    assert got[0][6] == got[0][-1] == b'*1\r\n+PONG\r\n'


def test_exec_with_writes_refused_when_replicas_went_missing(server, redis_ref):
    """min-replicas-to-write set after the transaction queued a write: EXEC is refused
    with EXECABORT ... NOREPLICAS and nothing runs; a transaction of reads still runs."""
    for port in (server.port, redis_ref[1]):
        flush(port)
        with RawConn(port) as c, RawConn(port) as admin:
            c.cmd('SET', 'xx', '1')
            try:
                c.cmd('MULTI')
                c.cmd('INCR', 'xx')
                admin.cmd('CONFIG', 'SET', 'min-replicas-to-write', '2')
                assert c.cmd('EXEC') == (
                    b'-EXECABORT Transaction discarded because of: '
                    b'NOREPLICAS Not enough good replicas to write.\r\n'
                ), port
                assert c.cmd('GET', 'xx') == b'$1\r\n1\r\n'
                c.cmd('MULTI')
                c.cmd('GET', 'xx')
                assert c.cmd('EXEC') == b'*1\r\n$1\r\n1\r\n'
            finally:
                admin.cmd('CONFIG', 'SET', 'min-replicas-to-write', '0')


def test_watch_sees_ttl_changes(server, redis_ref):
    same_two_clients(
        server,
        redis_ref,
        [
            (0, ('SET', 't', 'v')),
            (0, ('WATCH', 't')),
            (1, ('EXPIRE', 't', '100')),
            (0, ('MULTI',)),
            (0, ('GET', 't')),
            (0, ('EXEC',)),
            (0, ('WATCH', 't')),
            (1, ('PERSIST', 't')),
            (0, ('MULTI',)),
            (0, ('GET', 't')),
            (0, ('EXEC',)),
        ],
    )


def test_client_list_shows_dirty_cas(server, r):
    r.set('d', '1')
    with RawConn(server.port) as c:
        cid = int(c.cmd('CLIENT', 'ID')[1:-2])
        c.cmd('WATCH', 'd')
        r.set('d', '2')
        c.cmd('MULTI')
        line = r.execute_command('CLIENT', 'LIST', 'ID', cid).decode()
        assert ' flags=xd ' in line
        assert c.cmd('EXEC') == b'*-1\r\n'


def test_pipelined_transaction_in_one_write(server, redis_ref):
    data = (
        pack('MULTI')
        + pack('SET', 'p', '1')
        + pack('INCR', 'p')
        + pack('NOPE')
        + pack('EXEC')
        + pack('MULTI')
        + pack('INCR', 'p')
        + pack('GET', 'p')
        + pack('EXEC')
        + pack('GET', 'p')
    )
    out = []
    for port in (server.port, redis_ref[1]):
        flush(port)
        with RawConn(port) as c:
            c.send(data)
            out.append(c.read_replies(10) + c.read_available())
    assert out[0] == out[1]
    assert out[0].endswith(b'*2\r\n:1\r\n$1\r\n1\r\n$1\r\n1\r\n')


# -- redis-py pipelines ------------------------------------------------------------------


@pytest.mark.parametrize('protocol', [2, 3])
async def test_redis_py_pipeline_transaction(server, api, protocol):
    r = connect(server, api, protocol)
    try:
        await done(r.flushall())
        p = r.pipeline(transaction=True)
        p.set('a', '1').incr('a').get('a').echo('x')
        assert await done(p.execute()) == [True, 2, b'2', b'x']
        p.set('s', 'abc').incr('s').set('after', '1')
        res = await done(p.execute(raise_on_error=False))
        assert res[0] is True and isinstance(res[1], redis.ResponseError) and res[2] is True
        assert await done(r.get('after')) == b'1'
        p.set('s', 'x').incr('s')
        with pytest.raises(redis.ResponseError):
            await done(p.execute())
    finally:
        await close(r)


@pytest.mark.parametrize('protocol', [2, 3])
async def test_redis_py_watch_error(server, api, protocol):
    r = connect(server, api, protocol)
    other = connect(server, api, protocol)
    try:
        await done(r.set('bal', '10'))
        p = r.pipeline()
        await done(p.watch('bal'))
        assert int(await done(p.get('bal'))) == 10
        await done(other.set('bal', '0'))
        p.multi()
        p.set('bal', '20')
        with pytest.raises(redis.WatchError):
            await done(p.execute())
        await done(p.reset())
        assert await done(r.get('bal')) == b'0'

        def add5(pipe, value):
            pipe.multi()
            pipe.set('bal', int(value) + 5)

        async def incr(pipe):  # transaction() awaits what func returns
            add5(pipe, await pipe.get('bal'))

        func = incr if api == 'asyncio' else lambda pipe: add5(pipe, pipe.get('bal'))
        assert await done(r.transaction(func, 'bal')) == [True]
        assert await done(r.get('bal')) == b'5'
    finally:
        await close(r)
        await close(other)


def test_rejected_exec_aborts_the_transaction(server, redis_ref):
    same_session(
        server.port,
        redis_ref[1],
        [
            ('EXEC', 'x'),
            ('WATCH', 'k'),
            ('MULTI',),
            ('SET', 'x', '1'),
            ('EXEC', '1'),
            ('EXEC',),
            ('GET', 'x'),
            ('exec', 'a', 'b'),
        ],
    )


def test_rejected_exec_when_unauthenticated_or_subscribed(make_server):
    srv = make_server(requirepass='secret')
    with RawConn(srv.port) as c:
        assert c.cmd('EXEC') == (
            b'-EXECABORT Transaction discarded because of: NOAUTH Authentication required.\r\n'
        )
        assert c.cmd('EXEC', 'x') == (
            b"-EXECABORT Transaction discarded because of: wrong "
            b"number of arguments for 'exec' command\r\n"
        )
        c.cmd('AUTH', 'secret')
        c.cmd('SUBSCRIBE', 'ch')
        assert c.cmd('EXEC') == (
            b"-EXECABORT Transaction discarded because of: Can't "
            b"execute 'exec': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / "
            b"PING / QUIT / RESET are allowed in this context\r\n"
        )
