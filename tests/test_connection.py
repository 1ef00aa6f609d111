"""Connection commands and connection-level behaviour: PING, ECHO, SELECT, QUIT, RESET,
HELLO, AUTH/requirepass, RESP3 replies on the wire, idle timeout, maxclients.

Most checks are differential: the same requests go to our server and to redis-server
7.0.15 and the raw reply bytes must be equal."""

import os
import re
import subprocess
import time

import pytest
import redis

from conftest import assert_same, spawn_redis, spawn_store, stop, wait_until
from rawconn import EOF, RawConn, pack, session


@pytest.fixture(scope='module')
def ref_auth():
    """A reference redis-server with requirepass."""
    proc, port = spawn_redis('--requirepass', 'secret')
    yield port
    stop(proc)


def same_session(port_a, port_b, commands, mask=None):
    got, want = session(port_a, commands), session(port_b, commands)
    for cmd, g, w in zip(commands, got, want):
        if mask is not None:
            g, w = mask(g), mask(w)
        assert g == w, f'{cmd!r}: ours {g!r} != redis {w!r}'
    return got


def mask_id(raw):
    """HELLO's client id differs between servers."""
    return re.sub(rb'(\$2\r\nid\r\n):\d+\r\n', rb'\1:ID\r\n', raw)


def send_and_read(port, data, want=None):
    """What the server answers to `data` on a fresh connection, b'<EOF>' appended if it
    closed: read until quiet, after waiting (patiently) for `want` if it is known."""
    with RawConn(port) as c:
        c.send(data)
        return c.read_available(want=want)


def same_reply(ours_port, ref_port, data):
    """The answers of redis-server and of our server to `data`: ours is read expecting
    redis-server's (so a slow moment is not taken for a different answer)."""
    want = send_and_read(ref_port, data)
    return send_and_read(ours_port, data, want), want


# -- PING, ECHO, SELECT ---------------------------------------------------------------------


def test_ping_echo_select_match_redis(both):
    assert_same(
        both,
        [
            ('PING',),
            ('PING', 'hello'),
            ('PING', 'a', 'b'),
            ('ping',),
            ('ECHO', 'x y'),
            ('ECHO', ''),
            ('ECHO',),
            ('ECHO', 'a', 'b'),
            ('SELECT', '1'),
            ('SELECT', '15'),
            ('SELECT', '16'),
            ('SELECT', '-1'),
            ('SELECT', 'abc'),
            ('SELECT', '01'),
            ('SELECT', '+1'),
            ('SELECT', ' 1'),
            ('SELECT', '2147483647'),
            ('SELECT', '2147483648'),
            ('SELECT', '-2147483649'),
            ('SELECT', '1099511627776'),
            ('SELECT', '99999999999999999999'),
            ('SELECT',),
            ('SELECT', '1', '2'),
            ('SELECT', '0'),
        ],
    )


def test_select_keeps_databases_apart(r, server):
    r.set('k', 'db0')
    with RawConn(server.port) as c:
        assert c.cmd('SELECT', '5') == b'+OK\r\n'
        assert c.cmd('GET', 'k') == b'$-1\r\n'
        assert c.cmd('SET', 'k', 'db5') == b'+OK\r\n'
        assert c.cmd('GET', 'k') == b'$3\r\ndb5\r\n'
    assert r.get('k') == b'db0'
    db5 = server.client(db=5)
    assert db5.get('k') == b'db5'
    db5.close()


def test_ping_binary_and_large(r):
    payload = bytes(range(256)) * 300
    assert r.echo(payload) == payload
    with RawConn(r.connection_pool.connection_kwargs['port']) as c:
        assert c.cmd('PING', payload) == b'$%d\r\n%s\r\n' % (len(payload), payload)


# -- QUIT ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    'data',
    [
        pack('QUIT'),
        b'QUIT\r\n',
        pack('PING') + pack('QUIT') + pack('SET', 'after-quit', '1'),
        b'PING\r\nQUIT\r\nSET after-quit 1\r\n',
        pack('QUIT', 'extra', 'args'),
        b'quit\r\n',
        pack('MULTI') + pack('SET', 'after-quit', '1') + pack('QUIT') + pack('EXEC'),
    ],
)
def test_quit_replies_ok_then_closes(server, redis_ref, data):
    want = send_and_read(redis_ref[1], data, EOF)  # it closes: wait for that
    got = send_and_read(server.port, data, want)
    assert got == want
    assert got.endswith(b'+OK\r\n<EOF>')
    for port in (server.port, redis_ref[1]):
        with RawConn(port) as c:
            assert c.cmd('GET', 'after-quit') == b'$-1\r\n'


def test_quit_split_across_reads(server):
    with RawConn(server.port) as c:
        c.send(b'*1\r\n$4\r\nQU')
        time.sleep(0.05)
        c.send(b'IT\r\n')
        assert c.read_available(want=b'+OK\r\n<EOF>') == b'+OK\r\n<EOF>'


def test_quit_with_redis_py(server):
    client = server.client(protocol=2)
    assert client.execute_command('QUIT') in (True, b'OK')
    assert client.ping()  # redis-py reconnects
    client.close()


# -- RESET --------------------------------------------------------------------------------


def test_reset_matches_redis(server, redis_ref):
    cmds = [
        ('SELECT', '3'),
        ('SET', 'rk', 'v'),
        ('CLIENT', 'SETNAME', 'before'),
        ('HELLO', '3'),
        ('MULTI',),
        ('SET', 'x', '1'),
        ('RESET',),
        ('GET', 'rk'),
        ('GET', 'x'),
        ('CLIENT', 'GETNAME'),
        ('EXEC',),
        ('PING',),
        ('HELLO', '3', 'SETNAME', 'n'),
        ('CLIENT', 'NO-EVICT', 'on'),
        ('RESET',),
        ('CLIENT', 'GETNAME'),
        ('SELECT', '3'),
        ('GET', 'rk'),
        ('RESET', 'extra'),
    ]
    for port in (server.port, redis_ref[1]):
        redis.Redis(port=port, protocol=2).flushall()
    same_session(server.port, redis_ref[1], cmds, mask_id)


def test_reset_discards_watch(server, r):
    r.set('w', '1')
    with RawConn(server.port) as c:
        assert c.cmd('WATCH', 'w') == b'+OK\r\n'
        assert c.cmd('RESET') == b'+RESET\r\n'
        r.set('w', '2')  # would fail the transaction if still watched
        assert c.cmd('MULTI') == b'+OK\r\n'
        assert c.cmd('GET', 'w') == b'+QUEUED\r\n'
        assert c.cmd('EXEC') == b'*1\r\n$1\r\n2\r\n'


def test_reset_while_reply_skip_and_no_evict(server, redis_ref):
    data = (
        pack('CLIENT', 'NO-EVICT', 'on')
        + pack('CLIENT', 'REPLY', 'SKIP')
        + pack('RESET')
        + pack('PING')
        + pack('CLIENT', 'REPLY', 'OFF')
        + pack('RESET')
        + pack('PING')
    )
    want = b'+OK\r\n+PONG\r\n+RESET\r\n+PONG\r\n'
    assert send_and_read(server.port, data, want) == want
    assert send_and_read(redis_ref[1], data, want) == want
    with RawConn(server.port) as c:  # RESET keeps NO-EVICT in 7.0
        c.cmd('CLIENT', 'NO-EVICT', 'on')
        c.cmd('RESET')
        assert b' flags=e ' in c.cmd('CLIENT', 'INFO')


# -- HELLO --------------------------------------------------------------------------------


def test_hello_3_map_contents(server):
    with RawConn(server.port) as c:
        cid = int(c.cmd('CLIENT', 'ID')[1:-2])
        raw = c.cmd('HELLO', '3')
    assert raw == b'%7\r\n' + (
        b'$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n'
        b'$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:%d\r\n$4\r\nmode\r\n$10\r\nstandalone'
        b'\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n' % cid
    )


def test_hello_matches_redis(server, redis_ref):
    cmds = [
        ('HELLO',),
        ('HELLO', '2'),
        ('HELLO', '4'),
        ('HELLO', '1'),
        ('HELLO', '-3'),
        ('HELLO', 'x'),
        ('HELLO', '3.0'),
        ('HELLO', '99999999999999999999'),
        ('HELLO', '3', 'BADOPT'),
        ('HELLO', '3', 'auth', 'a'),
        ('HELLO', '3', 'SETNAME'),
        ('HELLO', '3', 'SETNAME', 'a b'),
        ('HELLO', '3', 'SETNAME', ''),
        ('HELLO', '3', 'AUTH', 'default', 'wrong', 'BADOPT'),
        ('HELLO', '3', 'AUTH', 'nobody', 'pw'),
        ('HELLO', '3', 'AUTH', 'default', 'anything', 'SETNAME', 'named'),
        ('CLIENT', 'GETNAME'),
        ('PING',),
        ('GET', 'missing'),
        ('HELLO',),
        ('HELLO', '2', 'SETNAME', 'two'),
        ('CLIENT', 'GETNAME'),
        ('GET', 'missing'),
        ('HELLO', '3', 'SETNAME', 'x', 'SETNAME', 'y'),
        ('CLIENT', 'GETNAME'),
        ('HELLO', '3', 'SETNAME', 'a b', 'BADOPT'),
        ('HELLO', '3', 'BADOPT', 'SETNAME', 'a b'),
        ('HELLO', '3', 'AUTH', 'default', 'pw', 'SETNAME', 'a b'),
    ]
    same_session(server.port, redis_ref[1], cmds, mask_id)


def test_hello_via_redis_py(server):
    client = server.client(protocol=3)
    meta = client.execute_command('HELLO', '3')
    assert meta[b'proto'] == 3 and meta[b'server'] == b'redis'
    assert meta[b'id'] == client.client_id()
    client.close()


# -- AUTH / requirepass -------------------------------------------------------------------


def test_auth_without_password_configured(server, redis_ref):
    same_session(
        server.port,
        redis_ref[1],
        [
            ('AUTH', 'x'),
            ('AUTH', 'default', 'x'),
            ('AUTH', 'nobody', 'x'),
            ('AUTH', 'a', 'b', 'c'),
            ('AUTH',),
            ('PING',),
        ],
    )


@pytest.mark.differential
def test_requirepass_matches_redis(make_server, ref_auth):
    srv = make_server(requirepass='secret')
    cmds = [
        ('PING',),
        ('GET', 'k'),
        ('SET', 'k', 'v'),
        ('NOPE', 'x'),
        ('GET',),
        ('CLIENT', 'ID'),
        ('CLIENT', 'NOPE'),
        ('SELECT', '1'),
        ('MULTI',),
        ('HELLO',),
        ('HELLO', '3'),
        ('HELLO', '3', 'SETNAME', 'a b'),
        ('HELLO', '3', 'SETNAME', 'ok'),
        ('HELLO', '3', 'AUTH', 'default', 'wrong', 'x'),
        ('HELLO', '3', 'AUTH', 'default', 'wrong', 'SETNAME', 'a b'),
        ('HELLO', '2', 'AUTH', 'default', 'wrong'),
        ('AUTH', 'wrong'),
        ('AUTH', 'default', 'wrong'),
        ('AUTH', 'nobody', 'secret'),
        ('PING',),
        ('AUTH', 'secret'),
        ('PING',),
        ('AUTH', 'wrong'),
        ('PING',),  # stays authenticated
        ('RESET',),
        ('PING',),  # RESET logs out
        ('HELLO', '2', 'AUTH', 'default', 'secret', 'SETNAME', 'me'),
        ('CLIENT', 'GETNAME'),
        ('SET', 'k', 'v'),
        ('GET', 'k'),
        ('SET', 'k', ''),
        ('RESET',),
        ('HELLO', '3', 'AUTH', 'default', 'secret'),
        ('GET', 'missing'),
        ('QUIT',),
    ]
    same_session(srv.port, ref_auth, cmds, mask_id)


def test_requirepass_redis_py(make_server):
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    srv = make_server(requirepass='secret')
    no_retry = dict(retry=Retry(NoBackoff(), 0))
    with pytest.raises(redis.AuthenticationError):
        srv.client(protocol=2, **no_retry).ping()
    for proto in (2, 3):
        good = srv.client(password='secret', protocol=proto, **no_retry)
        assert good.ping() and good.set('a', '1') and good.get('a') == b'1'
        good.close()
    for proto in (2, 3):
        with pytest.raises(redis.AuthenticationError):
            srv.client(password='nope', protocol=proto, **no_retry).ping()


@pytest.mark.parametrize(
    'data',
    [
        b'*11\r\n',
        b'*10\r\n',
        b'*1\r\n$16385\r\n',
        b'*1\r\n$16384\r\n',
        pack('PING') + b'*20\r\n$4\r\nPING\r\n',
        b'*2\r\n$4\r\nAUTH\r\n$6\r\nsecret\r\n*11\r\n$4\r\nECHO\r\n' + b'$1\r\nx\r\n' * 10,
        b'*2\r\n$4\r\nAUTH\r\n$6\r\nsecret\r\n*2\r\n$4\r\nECHO\r\n$16385\r\n'
        + b'y' * 16385
        + b'\r\n',
        b'PING\r\n*abc\r\n',
    ],
)
@pytest.mark.differential
def test_unauthenticated_request_limits(make_server, ref_auth, data):
    srv = make_server(requirepass='secret')
    got, want = same_reply(srv.port, ref_auth, data)
    assert got == want
    if data.startswith(b'*11') or data.startswith(b'*1\r\n$16385'):
        assert got.startswith(b'-ERR Protocol error: unauthenticated ')
        assert got.endswith(b'<EOF>')


def set_requirepass(server, value):
    """CONFIG SET requirepass, as the server applies it (the default user's password)."""
    srv = server.server

    def apply():
        srv.config.set_from_args('requirepass', [value])
        srv.apply_config('requirepass')

    server.call(apply)


def test_requirepass_set_later_keeps_existing_clients(server):
    with RawConn(server.port) as before:
        set_requirepass(server, 'pw')
        try:
            # a connection opened before requirepass was set stays authenticated
            assert before.cmd('PING') == b'+PONG\r\n'
            with RawConn(server.port) as after:
                reply = after.cmd('PING')
                assert reply == b'-NOAUTH Authentication required.\r\n'
                assert after.cmd('AUTH', 'pw') == b'+OK\r\n'
                assert after.cmd('PING') == b'+PONG\r\n'
        finally:
            set_requirepass(server, '')


# -- RESP3 on the wire --------------------------------------------------------------------


def test_resp3_raw_replies_match_redis(server, redis_ref):
    cmds = [
        ('HELLO', '3'),
        ('PING',),
        ('PING', 'x'),
        ('ECHO', ''),
        ('GET', 'nokey'),
        ('SET', 'r3', 'v'),
        ('GET', 'r3'),
        ('DBSIZE',),
        ('NOPE',),
        ('SELECT', '99'),
        ('CLIENT', 'GETNAME'),
        ('CLIENT', 'SETNAME', 'resp3'),
        ('CLIENT', 'GETNAME'),
        ('CLIENT', 'TRACKINGINFO'),
        ('CLIENT', 'GETREDIR'),
        ('CLIENT', 'LIST', 'ID', '999999'),
        ('CLIENT', 'HELP'),
        ('MULTI',),
        ('GET', 'r3'),
        ('GET', 'nokey'),
        ('PING',),
        ('EXEC',),
        ('MULTI',),
        ('EXEC',),
        ('EXEC',),
        ('DISCARD',),
        ('WATCH', 'r3'),
        ('SET', 'r3', 'changed'),
        ('MULTI',),
        ('GET', 'r3'),
        ('EXEC',),
        ('HELLO', '2'),
        ('GET', 'nokey'),
        ('WATCH', 'r3'),
        ('SET', 'r3', 'again'),
        ('MULTI',),
        ('EXEC',),
    ]
    for port in (server.port, redis_ref[1]):
        redis.Redis(port=port, protocol=2).flushall()
    same_session(server.port, redis_ref[1], cmds, mask_id)


# -- idle timeout and maxclients ----------------------------------------------------------


def test_idle_timeout_closes_idle_clients(make_server):
    srv = make_server(timeout=1)
    idle = RawConn(srv.port)
    busy = RawConn(srv.port)
    t0 = time.monotonic()  # before the idle client's last command
    assert idle.cmd('PING') == b'+PONG\r\n'
    closed_at = None
    while time.monotonic() - t0 < 60:  # generous: only a server that never closes fails
        assert busy.cmd('PING') == b'+PONG\r\n'  # activity keeps a client open
        if idle.read_available(0.1).endswith(EOF):
            closed_at = time.monotonic() - t0
            break
    # Never before the timeout (t0 precedes the last interaction, so a busy machine only
    # makes this later); the busy client, never idle that long, stays.
    assert closed_at is not None and closed_at >= 0.8, closed_at
    assert busy.cmd('PING') == b'+PONG\r\n'
    idle.close(), busy.close()


def test_no_timeout_by_default(server):
    with RawConn(server.port) as c:
        time.sleep(1.2)
        assert c.cmd('PING') == b'+PONG\r\n'


def _keepalive_timer(port, client):
    """The keep-alive timer `ss` shows on the server's end of `client`'s connection, as
    'keepalive,<time left>', or None; once nothing is left to acknowledge (until then ss
    shows the retransmission timer)."""
    peer = client.connection_pool.get_connection()._sock.getsockname()[1]

    def timer():
        out = subprocess.run(
            ['ss', '-tnoH', 'state', 'established', f'( sport = :{port} and dport = :{peer} )'],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        found = re.search(r'timer:\((\w+),([^,]+),', out)
        return None if found is None else f'{found[1]},{found[2]}'

    wait_until(lambda: not (timer() or '').startswith('on'), 'the reply acknowledged')
    return timer()


@pytest.mark.parametrize('kind', ['store', 'redis'])
def test_tcp_keepalive_probes_new_connections(kind):
    """tcp-keepalive N: each new client connection is probed after N idle seconds (the
    kernel's default is 2 hours); CONFIG SET reaches new connections, 0 turns it off."""
    proc, port = (spawn_store if kind == 'store' else spawn_redis)('--tcp-keepalive', '60')
    try:
        first = redis.Redis(port=port, single_connection_client=True)
        first.ping()
        timer = _keepalive_timer(port, first)
        assert timer is not None and re.fullmatch(r'keepalive,(\d+sec|1min)', timer), timer
        first.config_set('tcp-keepalive', '0')
        second = redis.Redis(port=port, single_connection_client=True)
        second.ping()
        assert _keepalive_timer(port, second) is None
    finally:
        stop(proc)


@pytest.mark.skipif(os.geteuid() != 0, reason='SO_MARK needs CAP_NET_ADMIN')
@pytest.mark.parametrize('kind', ['store', 'redis'])
def test_socket_mark_id_marks_the_listeners(kind):
    proc, port = (spawn_store if kind == 'store' else spawn_redis)('--socket-mark-id', '42')
    try:
        out = subprocess.run(
            ['ss', '-tlnHe', f'( sport = :{port} )'], capture_output=True, text=True, check=True
        ).stdout
        assert out and all('fwmark:0x2a' in line for line in out.splitlines()), out
    finally:
        stop(proc)


def test_maxclients(make_server):
    srv = make_server(maxclients=2)
    a, b = RawConn(srv.port), RawConn(srv.port)
    assert a.cmd('PING') == b'+PONG\r\n' and b.cmd('PING') == b'+PONG\r\n'
    full = b'-ERR max number of clients reached\r\n<EOF>'
    with RawConn(srv.port) as c:
        assert c.read_available(want=full) == full
    a.close()
    deadline = time.monotonic() + 60
    while True:  # the server notices the close asynchronously
        with RawConn(srv.port) as c:
            c.send(pack('PING'))
            got = c.read_reply()  # PONG, or the error if still full
        if got == b'+PONG\r\n' or time.monotonic() > deadline:
            break
        assert got == full.removesuffix(EOF)
    assert got == b'+PONG\r\n'
    b.close()


@pytest.mark.parametrize('which', ['ours', 'redis'])
def test_query_buffer_after_a_big_argument(server, redis_ref, which):
    """Redis reads an argument of 32 KB or more into a query buffer of its size and gives
    the client a new one as big (qbuf-free in CLIENT LIST), which its cron trims back to
    the recent peak once smaller commands follow: more than 32 KB free right after, then
    less, but not none (unit/querybuf's 'when not idle')."""
    port = server.port if which == 'ours' else redis_ref[1]

    def qbuf_total(admin):
        line = next(c for c in admin.client_list() if c['name'] == 'qbig')
        return int(line['qbuf']) + int(line['qbuf-free'])

    with redis.Redis(port=port) as admin, RawConn(port) as c:
        assert c.cmd('CLIENT', 'SETNAME', 'qbig') == b'+OK\r\n'
        assert c.cmd('SET', 'qbig:x', b'A' * 400_000) == b'+OK\r\n'
        first = qbuf_total(admin)
        assert first > 32768
        end = time.monotonic() + 30
        while qbuf_total(admin) >= first and time.monotonic() < end:
            assert c.cmd('SET', 'qbig:x', b'A' * 100) == b'+OK\r\n'
            time.sleep(0.01)
        assert 0 < qbuf_total(admin) < first
        admin.delete('qbig:x')


def test_default_bind_and_the_unix_socket(tmp_path):
    """Redis 7.0 listens on '* -::*' by default and on `unixsocket` when set (clients there
    show its path, port 0, as their addresses); an empty bind closes every TCP listener,
    the unix socket staying (unit/networking's 'Default bind address configuration')."""
    import socket

    path = str(tmp_path / 'redis.sock')
    proc, port = spawn_store('--unixsocket', path)
    try:
        with redis.Redis(unix_socket_path=path) as u:
            assert u.config_get('bind') == {'bind': '* -::*'}
            me = u.client_list()[0]
            assert (me['addr'], me['laddr']) == (f'{path}:0', f'{path}:0')
            assert u.config_set('bind', '') is True
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(('127.0.0.1', port), timeout=5).close()
            assert u.ping() is True
            assert u.config_set('bind', '127.0.0.1') is True
        with redis.Redis(port=port) as r:
            assert r.ping() is True
    finally:
        stop(proc)


def test_replica_link_connects_from_bind_source_addr():
    """bind-source-addr is the address a replica's link connects from: its master lists
    the replica at it (unit/networking 'CONFIG SET bind-source-addr')."""
    master, mport = spawn_store('--protected-mode', 'no')
    replica, rport = spawn_store()
    try:
        with redis.Redis(port=rport) as r, redis.Redis(port=mport) as m:
            assert r.config_set('bind-source-addr', '127.0.0.2') is True
            r.replicaof('127.0.0.1', mport)
            deadline = time.monotonic() + 30
            while r.info('replication')['master_link_status'] != 'up':
                assert time.monotonic() < deadline, 'the link never came up'
                time.sleep(0.05)
            assert m.info('replication')['slave0']['ip'] == '127.0.0.2'
    finally:
        stop(replica)
        stop(master)
