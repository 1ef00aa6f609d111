"""CLIENT: ID, SETNAME/GETNAME, LIST/INFO, KILL, REPLY, NO-EVICT/NO-TOUCH, PAUSE, HELP,
tracking stubs; differential against redis-server where the reply is deterministic."""

import time

import pytest
import redis

from conftest import assert_same, close, connect, done, spawn_store, stop, wait_until
from rawconn import EOF, RawConn, pack, session

# CLIENT LIST fields in redis-server 7.0.15's order.
FIELDS = [
    'id',
    'addr',
    'laddr',
    'fd',
    'name',
    'age',
    'idle',
    'flags',
    'db',
    'sub',
    'psub',
    'ssub',
    'multi',
    'qbuf',
    'qbuf-free',
    'argv-mem',
    'multi-mem',
    'rbs',
    'rbp',
    'obl',
    'oll',
    'omem',
    'tot-mem',
    'events',
    'cmd',
    'user',
    'redir',
    'resp',
]


def parse_line(line):
    return dict(f.split('=', 1) for f in line.split(' '))


def field_names(line):
    return [f.split('=', 1)[0] for f in line.split(' ')]


def info_of(client):
    text = client.execute_command('CLIENT', 'INFO')
    text = text.decode() if isinstance(text, bytes) else text
    assert text.endswith('\n') and text.count('\n') == 1
    return parse_line(text[:-1])


def test_id_is_unique_and_matches_info(server):
    a, b = server.client(), server.client()
    ida, idb = a.client_id(), b.client_id()
    assert ida != idb and ida > 0 and idb > 0
    assert int(info_of(a)['id']) == ida
    assert a.client_id() == ida  # the pool reuses the same connection
    a.close(), b.close()


def test_setname_getname(r, both):
    assert r.client_getname() is None
    assert r.client_setname('worker-1') is True
    assert r.client_getname() == 'worker-1'
    assert info_of(r)['name'] == 'worker-1'
    r.client_setname('')
    assert r.client_getname() is None
    assert info_of(r)['name'] == ''
    assert_same(
        both,
        [
            ('CLIENT', 'GETNAME'),
            ('CLIENT', 'SETNAME', 'a b'),
            ('CLIENT', 'SETNAME', 'a\nb'),
            ('CLIENT', 'SETNAME', b'caf\xc3\xa9'),
            ('CLIENT', 'SETNAME', b'x\x7f'),
            ('CLIENT', 'SETNAME', '!~'),
            ('CLIENT', 'GETNAME'),
            ('CLIENT', 'SETNAME', ''),
            ('CLIENT', 'GETNAME'),
            ('CLIENT', 'SETNAME'),
            ('CLIENT', 'SETNAME', 'a', 'b'),
            ('CLIENT', 'GETNAME', 'x'),
        ],
    )


def test_errors_and_help_match_redis(both):
    assert_same(
        both,
        [
            ('CLIENT',),
            ('CLIENT', 'NOPE'),
            ('CLIENT', 'help'),
            ('CLIENT', 'HELP', 'x'),
            ('CLIENT', 'ID', 'x'),
            ('CLIENT', 'INFO', 'x'),
            ('CLIENT', 'KILL'),
            ('CLIENT', 'GETREDIR'),
            ('CLIENT', 'TRACKINGINFO'),
            ('CLIENT', 'CACHING', 'yes'),
            ('CLIENT', 'TRACKING', 'off'),
            ('CLIENT', 'TRACKING', 'maybe'),
            ('CLIENT', 'NO-EVICT', 'on'),
            ('CLIENT', 'NO-EVICT', 'off'),
            ('CLIENT', 'NO-EVICT', 'maybe'),
            ('CLIENT', 'NO-EVICT'),
            ('CLIENT', 'PAUSE', 'abc'),
            ('CLIENT', 'PAUSE', '-1'),
            ('CLIENT', 'PAUSE', '0'),
            ('CLIENT', 'PAUSE', '0', 'WRITE'),
            ('CLIENT', 'PAUSE', '0', 'all'),
            ('CLIENT', 'PAUSE', '10', 'foo'),
            ('CLIENT', 'PAUSE', '1', '2', '3'),
            ('CLIENT', 'PAUSE'),
            ('CLIENT', 'UNPAUSE'),
            ('CLIENT', 'UNPAUSE', 'x'),
            ('CLIENT', 'UNBLOCK', '1'),
            ('CLIENT', 'UNBLOCK', 'x'),
            ('CLIENT', 'UNBLOCK', '1', 'foo'),
            ('CLIENT', 'UNBLOCK', '999999', 'ERROR'),
            ('CLIENT', 'UNBLOCK', '1', '2', '3'),
            ('CLIENT', 'REPLY', 'maybe'),
            ('CLIENT', 'REPLY'),
            ('CLIENT', 'REPLY', 'on'),
            ('CLIENT', 'LIST', 'TYPE', 'foo'),
            ('CLIENT', 'LIST', 'ID', 'x'),
            ('CLIENT', 'LIST', 'ID', '1', 'x'),
            ('CLIENT', 'LIST', 'ID', '99999'),
            ('CLIENT', 'LIST', 'foo'),
            ('CLIENT', 'LIST', 'ID'),
            ('CLIENT', 'LIST', 'TYPE'),
            ('CLIENT', 'LIST', 'TYPE', 'master'),
            ('CLIENT', 'LIST', 'TYPE', 'replica'),
            ('CLIENT', 'LIST', 'TYPE', 'slave'),
            ('CLIENT', 'LIST', 'TYPE', 'PUBSUB'),
            ('CLIENT', 'KILL', '1.2.3.4:5'),
            ('CLIENT', 'KILL', 'ID', '99999'),
            ('CLIENT', 'KILL', 'ID', 'abc'),
            ('CLIENT', 'KILL', 'ID', '0'),
            ('CLIENT', 'KILL', 'ID', '-3'),
            ('CLIENT', 'KILL', 'ADDR'),
            ('CLIENT', 'KILL', 'foo', 'bar'),
            ('CLIENT', 'KILL', 'TYPE', 'foo'),
            ('CLIENT', 'KILL', 'SKIPME', 'maybe'),
            ('CLIENT', 'KILL', 'USER', 'nobody'),
            ('CLIENT', 'KILL', 'a', 'b', 'c'),
            ('CLIENT', 'KILL', 'ID', '1', 'TYPE'),
            ('CLIENT', 'KILL', 'TYPE', 'master'),
            ('CLIENT', 'KILL', 'TYPE', 'replica'),
            ('CLIENT', 'KILL', 'ADDR', '1.2.3.4:5', 'SKIPME', 'yes'),
            ('CLIENT', 'KILL', 'LADDR', '1.2.3.4:5'),
        ],
    )


def test_list_field_set_and_order_match_redis(server, redis_ref):
    ours = RawConn(server.port)
    theirs = RawConn(redis_ref[1])
    for c in (ours, theirs):
        c.cmd('CLIENT', 'SETNAME', 'fieldcheck')
    lines = {}
    for tag, c in (('ours', ours), ('theirs', theirs)):
        raw = c.cmd('CLIENT', 'INFO')
        body = raw.split(b'\r\n', 1)[1][:-2].decode()
        lines[tag] = body
    assert field_names(lines['theirs'].rstrip('\n')) == FIELDS  # the reference
    assert field_names(lines['ours'].rstrip('\n')) == FIELDS
    ours.close(), theirs.close()


def test_list_values(server, r):
    me = r.client_id()
    other = RawConn(server.port)
    assert other.cmd('SELECT', '3') == b'+OK\r\n'
    assert other.cmd('CLIENT', 'SETNAME', 'other') == b'+OK\r\n'
    other_id = int(other.cmd('CLIENT', 'ID')[1:-2])
    text = r.execute_command('CLIENT', 'LIST').decode()
    assert text.endswith('\n')
    rows = [parse_line(line) for line in text[:-1].split('\n')]
    assert all(list(row) == FIELDS for row in rows)
    by_id = {int(row['id']): row for row in rows}
    mine, theirs = by_id[me], by_id[other_id]
    assert ids_in_order(rows)
    assert mine['cmd'] == 'client|list' and mine['flags'] == 'N' and mine['multi'] == '-1'
    assert mine['laddr'] == f'127.0.0.1:{server.port}'
    assert mine['addr'].startswith('127.0.0.1:')
    assert mine['resp'] == '2' and mine['user'] == 'default' and mine['redir'] == '-1'
    assert int(mine['fd']) > 0 and int(mine['tot-mem']) > 0
    assert mine['argv-mem'] == '10'  # 'client' + 'list'
    assert theirs['name'] == 'other' and theirs['db'] == '3'
    assert theirs['cmd'] == 'client|id'
    assert theirs['addr'] == '127.0.0.1:%d' % other.sock.getsockname()[1]
    assert int(theirs['age']) >= 0 and int(theirs['idle']) >= 0
    # the ID filter keeps argument order and repeats; TYPE filters
    text = r.execute_command('CLIENT', 'LIST', 'ID', other_id, me, 999999, other_id).decode()
    assert [int(parse_line(x)['id']) for x in text[:-1].split('\n')] == [other_id, me, other_id]
    normal = r.execute_command('CLIENT', 'LIST', 'TYPE', 'normal').decode()
    assert {int(parse_line(x)['id']) for x in normal[:-1].split('\n')} >= {me, other_id}
    assert r.execute_command('CLIENT', 'LIST', 'TYPE', 'master') == b''
    other.close()


def replies(port, data, n):
    """The first `n` replies to `data` on a fresh connection, then whatever else arrives
    before the connection falls quiet (b'<EOF>' if it closed)."""
    with RawConn(port) as c:
        c.send(data)
        return c.read_replies(n) + c.read_available()


def ids_in_order(rows):
    ids = [int(row['id']) for row in rows]
    return ids == sorted(ids)


def test_fresh_connection_shows_null_cmd_and_multi_state(server, r):
    with RawConn(server.port) as c:
        cid = int(c.cmd('CLIENT', 'ID')[1:-2])
        with RawConn(server.port) as fresh:
            fresh_id = int(fresh.cmd('CLIENT', 'ID')[1:-2])
            fresh.cmd('PING')
            row = parse_line(r.execute_command('CLIENT', 'LIST', 'ID', fresh_id).decode()[:-1])
            assert row['cmd'] == 'ping'
        assert c.cmd('MULTI') == b'+OK\r\n'
        assert c.cmd('SET', 'k', 'v') == b'+QUEUED\r\n'
        assert c.cmd('GET', 'k') == b'+QUEUED\r\n'
        row = parse_line(r.execute_command('CLIENT', 'LIST', 'ID', cid).decode()[:-1])
        assert row['flags'] == 'x' and row['multi'] == '2' and int(row['multi-mem']) > 0
        c.cmd('DISCARD')
        with RawConn(server.port):
            deadline = time.monotonic() + 60
            while True:  # until the server has accepted the silent connection
                rows = [
                    parse_line(x)
                    for x in r.execute_command('CLIENT', 'LIST').decode()[:-1].split('\n')
                ]
                newest = max(rows, key=lambda row: int(row['id']))
                if int(newest['id']) > fresh_id or time.monotonic() > deadline:
                    break
                time.sleep(0.01)
            assert int(newest['id']) > fresh_id
            assert newest['cmd'] == 'NULL' and newest['qbuf'] == '0'


def test_no_evict_and_no_touch_flags(r):
    assert r.execute_command('CLIENT', 'NO-EVICT', 'on') == b'OK'
    assert info_of(r)['flags'] == 'e'
    assert r.execute_command('CLIENT', 'NO-TOUCH', 'ON') == b'OK'
    assert info_of(r)['flags'] == 'eT'
    r.execute_command('CLIENT', 'NO-EVICT', 'off')
    r.execute_command('CLIENT', 'NO-TOUCH', 'off')
    assert info_of(r)['flags'] == 'N'
    with pytest.raises(redis.ResponseError, match='syntax error'):
        r.execute_command('CLIENT', 'NO-TOUCH', 'x')


def test_info_and_list_are_verbatim_in_resp3(server):
    with RawConn(server.port) as c:
        assert c.cmd('HELLO', '3').startswith(b'%7\r\n')
        raw = c.cmd('CLIENT', 'INFO')
        assert raw.startswith(b'=') and b'\r\ntxt:id=' in raw and raw.endswith(b'\n\r\n')
        size = int(raw[1 : raw.index(b'\r\n')])
        assert size == len(raw) - raw.index(b'\r\n') - 4
        assert b' resp=3\n' in raw
        assert c.cmd('CLIENT', 'LIST', 'TYPE', 'master') == b'=4\r\ntxt:\r\n'
        assert c.cmd('CLIENT', 'TRACKINGINFO') == (
            b'%3\r\n$5\r\nflags\r\n~1\r\n$3\r\noff\r\n$8\r\nredirect\r\n:-1\r\n'
            b'$8\r\nprefixes\r\n*0\r\n'
        )


def test_reply_off_skip_on_raw_socket_match_redis(server, redis_ref):
    script = (
        pack('CLIENT', 'REPLY', 'SKIP')
        + pack('PING', 'a')
        + pack('PING', 'b')
        + pack('CLIENT', 'REPLY', 'OFF')
        + pack('PING', 'c')
        + pack('NOPE')
        + pack('CLIENT', 'REPLY', 'SKIP')
        + pack('PING', 'd')
        + pack('CLIENT', 'REPLY', 'ON')
        + pack('PING', 'e')
        # two SKIPs in a row: the second is skipped and skips the next one
        + pack('CLIENT', 'REPLY', 'SKIP')
        + pack('CLIENT', 'REPLY', 'SKIP')
        + pack('PING', 'f')
        + pack('PING', 'g')
        # SKIP then ON: ON clears the skip and is answered
        + pack('CLIENT', 'REPLY', 'SKIP')
        + pack('CLIENT', 'REPLY', 'ON')
        + pack('PING', 'h')
        # a skipped error, then inline commands through the exact parser
        + pack('CLIENT', 'REPLY', 'SKIP')
        + pack('CLIENT', 'REPLY', 'bogus')
        + b'client reply skip\r\nping i\r\nping j\r\n'
    )
    want = b'$1\r\nb\r\n+OK\r\n$1\r\ne\r\n$1\r\ng\r\n+OK\r\n$1\r\nh\r\n$1\r\nj\r\n'
    results = []
    for port in (server.port, redis_ref[1]):
        with RawConn(port) as c:
            c.send(script)
            results.append(c.read_available(want=want))
    assert results[0] == results[1] == want


def test_reply_off_byte_by_byte_and_split_reads(server):
    """The same rules hold when commands arrive in pieces (the exact parser)."""
    data = (
        pack('CLIENT', 'REPLY', 'OFF')
        + pack('SET', 'k', 'v')
        + pack('GET', 'k')
        + pack('CLIENT', 'REPLY', 'ON')
        + pack('GET', 'k')
    )
    with RawConn(server.port) as c:
        for i in range(0, len(data), 7):
            c.send(data[i : i + 7])
            time.sleep(0.002)
        want = b'+OK\r\n$1\r\nv\r\n'
        assert c.read_available(want=want) == want


def test_reply_inside_multi(server):
    with RawConn(server.port) as c:
        c.send(
            pack('MULTI')
            + pack('CLIENT', 'REPLY', 'SKIP')
            + pack('PING')
            + pack('EXEC')
            + pack('PING', 'skipped')
            + pack('PING', 'shown')
        )
        want = b'+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n+PONG\r\n$5\r\nshown\r\n'
        assert c.read_available(want=want) == want


def test_reply_off_then_quit_closes_silently(server):
    with RawConn(server.port) as c:
        c.send(pack('CLIENT', 'REPLY', 'OFF') + pack('PING') + pack('QUIT'))
        assert c.read_available(want=EOF) == EOF


def test_kill_another_connection_by_id_and_addr(server, r):
    victim = RawConn(server.port)
    vid = int(victim.cmd('CLIENT', 'ID')[1:-2])
    assert r.client_kill_filter(_id=vid) == 1
    assert victim.closed_by_peer()
    assert vid not in [int(c['id']) for c in r.client_list()]
    # killing again finds nobody
    assert r.execute_command('CLIENT', 'KILL', 'ID', vid) == 0
    victim2 = RawConn(server.port)
    victim2.cmd('PING')  # registered by the server before we look for it
    addr = '127.0.0.1:%d' % victim2.sock.getsockname()[1]
    assert r.execute_command('CLIENT', 'KILL', addr) == b'OK'  # old form
    assert victim2.closed_by_peer()
    with pytest.raises(redis.ResponseError, match='^No such client$'):
        r.execute_command('CLIENT', 'KILL', addr)
    victim3 = RawConn(server.port)
    victim3.cmd('PING')
    addr = '127.0.0.1:%d' % victim3.sock.getsockname()[1]
    assert (
        r.execute_command(
            'CLIENT', 'KILL', 'ADDR', addr, 'TYPE', 'normal', 'USER', 'default', 'SKIPME', 'yes'
        )
        == 1
    )
    assert victim3.closed_by_peer()
    assert r.ping()


def test_kill_filters_combine(server, r):
    me = r.client_id()
    a, b = RawConn(server.port), RawConn(server.port)
    a_id = int(a.cmd('CLIENT', 'ID')[1:-2])
    b.cmd('PING')
    # a filter matching nobody kills nobody
    assert r.execute_command('CLIENT', 'KILL', 'ID', a_id, 'TYPE', 'pubsub') == 0
    assert r.execute_command('CLIENT', 'KILL', 'ID', a_id, 'LADDR', '1.1.1.1:1') == 0
    # LADDR matches every TCP client on this port; SKIPME yes (default) spares the caller
    killed = r.execute_command('CLIENT', 'KILL', 'LADDR', f'127.0.0.1:{server.port}')
    assert killed >= 2
    assert a.closed_by_peer() and b.closed_by_peer()
    assert r.client_id() == me  # still the same connection
    a.close(), b.close()


def test_kill_self(server):
    with RawConn(server.port) as c:
        cid = int(c.cmd('CLIENT', 'ID')[1:-2])
        # SKIPME yes (the default) spares the caller
        assert c.cmd('CLIENT', 'KILL', 'ID', cid) == b':0\r\n'
        c.send(pack('CLIENT', 'KILL', 'ID', cid, 'SKIPME', 'no') + pack('PING'))
        assert c.read_available(want=b':1\r\n<EOF>') == b':1\r\n<EOF>'
    with RawConn(server.port) as c:
        addr = '127.0.0.1:%d' % c.sock.getsockname()[1]
        c.send(pack('CLIENT', 'KILL', addr) + pack('SET', 'killed-self', '1'))
        assert c.read_available(want=b'+OK\r\n<EOF>') == b'+OK\r\n<EOF>'
    with RawConn(server.port) as c:
        assert c.cmd('GET', 'killed-self') == b'$-1\r\n'


def test_kill_self_with_replies_off(server):
    with RawConn(server.port) as c:
        c.send(pack('CLIENT', 'REPLY', 'OFF') + pack('CLIENT', 'KILL', 'SKIPME', 'no'))
        assert c.read_available(want=EOF) == EOF


def test_pause_unpause_reply_ok(r):
    assert r.client_pause(10) is True
    assert r.client_pause(10, all=False) is True
    assert r.client_unpause() in (True, b'OK')
    assert r.ping()


def test_help_lists_subcommands(r):
    lines = r.execute_command('CLIENT', 'HELP')
    assert lines[0].startswith(b'CLIENT <subcommand>')
    for sub in (
        'ID',
        'GETNAME',
        'SETNAME <name>',
        'KILL <ip:port>',
        'REPLY (ON|OFF|SKIP)',
        'NO-EVICT (ON|OFF)',
        'HELP',
    ):
        assert sub.encode() in lines


def test_bad_subcommand_inside_multi_aborts_exec(server, redis_ref):
    cmds = [
        ('MULTI',),
        ('CLIENT', 'FOO'),
        ('CLIENT', 'SETNAME'),
        ('CLIENT', 'ID'),
        ('EXEC',),
        ('MULTI',),
        ('CLIENT', 'SETNAME', 'a b'),
        ('CLIENT', 'GETNAME'),
        ('EXEC',),
    ]
    assert session(server.port, cmds) == session(redis_ref[1], cmds)


def test_commandstats_like_counters(server, r):
    cmd = server.server.commands[b'client']
    before = cmd.subcommands['id'].calls
    r.client_id()
    assert cmd.subcommands['id'].calls == before + 1


async def test_redis_py_client_commands(server, api):
    a, b = connect(server, api), connect(server, api)
    try:
        assert await done(a.client_setname('py-a'))
        assert await done(a.client_getname()) == 'py-a'
        aid, bid = await done(a.client_id()), await done(b.client_id())
        names = {c['id']: c['name'] for c in await done(b.client_list())}
        assert names[str(aid)] == 'py-a'
        info = await done(a.client_info())
        assert info['name'] == 'py-a' and info['cmd'] == 'client|info'
        assert await done(b.client_kill_filter(_id=aid)) == 1
        # redis-py retries once on a dropped connection and gets a new id
        assert await done(a.ping())
        assert await done(a.client_id()) not in (aid, bid)
    finally:
        await close(a)
        await close(b)


async def test_redis_py_resp3_client(server, api):
    a = connect(server, api, protocol=3)
    try:
        info = await done(a.client_info())
        assert info['resp'] == '3'
        info = await done(a.execute_command('CLIENT', 'TRACKINGINFO'))
        assert list(info[b'flags']) == [b'off'] and info[b'redirect'] == -1
        assert list(info[b'prefixes']) == []
    finally:
        await close(a)


def test_subscribed_clients(server, redis_ref):
    """RESP2 subscribe mode rejects CLIENT with the subcommand's full name; TYPE pubsub
    lists and kills subscribers; sub/psub/ssub count their subscriptions."""
    data = pack('SUBSCRIBE', 'a', 'b') + pack('CLIENT', 'ID') + pack('CLIENT', 'NOPE')
    out = [replies(port, data, 4) for port in (server.port, redis_ref[1])]
    assert out[0] == out[1]
    assert b"'client|id'" in out[0]
    admin = server.client(protocol=2)
    with RawConn(server.port) as c:
        c.cmd('HELLO', '3')
        c.cmd('SUBSCRIBE', 'a', 'b')
        assert c.read_reply().endswith(b':2\r\n')  # one confirmation per channel
        c.cmd('PSUBSCRIBE', 'p*')
        c.cmd('SSUBSCRIBE', 's')
        row = parse_line(c.cmd('CLIENT', 'INFO').split(b'txt:')[1][:-3].decode())
        assert (row['flags'], row['sub'], row['psub'], row['ssub']) == ('P', '2', '1', '1')
        pubsub = admin.execute_command('CLIENT', 'LIST', 'TYPE', 'pubsub').decode()
        assert [parse_line(x)['id'] for x in pubsub[:-1].split('\n')] == [row['id']]
        assert admin.execute_command('CLIENT', 'KILL', 'TYPE', 'pubsub') == 1
        assert c.closed_by_peer()
    admin.close()


def test_errors_echoing_arguments_stay_one_line(server, redis_ref):
    cmds = [
        ('CLIENT', b'a\r\nb'),
        ('CLIENT', 'LIST', 'TYPE', b'x\ny\x00z'),
        ('CLIENT', 'KILL', 'USER', b'u\r\n\xff'),
        ('CLIENT', 'KILL', 'TYPE', b'\xfe\r'),
        ('CLIENT', b'x' * 200),
        ('CLIENT', 'PAUSE', '1', '2', '3'),
    ]
    assert session(server.port, cmds) == session(redis_ref[1], cmds)
    data = pack('MULTI') + pack('CLIENT', b'a\r\nb') + pack('EXEC')
    out = [replies(port, data, 3) for port in (server.port, redis_ref[1])]
    assert out[0] == out[1]


@pytest.mark.parametrize('which', ['ours', 'redis'])
def test_a_killed_client_sees_the_end_while_the_server_is_busy(which, make_server, redis_ref):
    """CLIENT KILL closes the socket at once, as freeClient does: the killed client sees
    the end of its connection while the server still runs the next command (a DEBUG
    SLEEP sent with the kill), not once the server's loop comes round."""
    port = make_server().port if which == 'ours' else redis_ref[1]
    with RawConn(port) as victim, RawConn(port) as admin:
        vid = int(victim.cmd('CLIENT', 'ID')[1:-2])
        admin.send(pack('CLIENT', 'KILL', 'ID', vid) + pack('DEBUG', 'SLEEP', 3))
        assert victim.closed_by_peer()
        admin.sock.setblocking(False)
        try:
            early = admin.sock.recv(100)
        except BlockingIOError:
            early = b''
        admin.sock.setblocking(True)
        assert early in (b'', b':1\r\n'), 'the sleep had ended before the victim saw the end'
        admin.sock.settimeout(30)
        got = early
        while not got.endswith(b'+OK\r\n'):
            got += admin.sock.recv(100)


def test_killing_the_master_link_shows_at_once_on_the_master():
    """A replica that kills its master client and sleeps (replication-psync's 'backlog
    expired': MULTI, CLIENT KILL, DEBUG SLEEP, EXEC) has left its master meanwhile: the
    master counts no replica before the sleep ends, so its backlog's TTL can run."""
    mproc, mport = spawn_store()
    rproc, rport = spawn_store('--enable-debug-command', 'yes')
    master = redis.Redis(port=mport)
    try:
        with RawConn(rport) as replica:
            replica.cmd('REPLICAOF', '127.0.0.1', mport)
            wait_until(lambda: b'master_link_status:up' in replica.cmd('INFO'), 'sync')
            replica.send(
                pack('MULTI')
                + pack('CLIENT', 'KILL', 'TYPE', 'master')
                + pack('DEBUG', 'SLEEP', 3)
                + pack('EXEC')
            )
            wait_until(lambda: master.info('replication')['connected_slaves'] == 0, 'the drop')
            replica.sock.setblocking(False)
            try:
                got = replica.sock.recv(1000)
            except BlockingIOError:
                got = b''
            assert b'*2' not in got, 'the sleep had ended before the master saw the drop'
    finally:
        master.close()
        stop(mproc)
        stop(rproc)
