"""MONITOR, CLIENT PAUSE/UNPAUSE and CLIENT LIST's flags for them, against redis-server 7.0.15.

MONITOR lines are compared with their timestamp and client address replaced (the only parts
that differ between two servers). Pause tests check what a client observes: a held command
has no reply while the pause lasts, and gets it, in order, once the pause ends.
"""

import re
import time

from conftest import WAIT, assert_same, wait_until
from rawconn import RawConn, pack

_STAMP = re.compile(rb'\+\d+\.\d{6} \[(\d+) ([\d.:]+|lua)\]')


def normalize(data):
    """A monitor's output with each line's time and address replaced."""

    def stamp(m):
        return b'+T [' + m.group(1) + (b' lua]' if m.group(2) == b'lua' else b' addr]')

    return _STAMP.sub(stamp, data)


def lines_until(mon, marker):
    """Monitor output up to and including the line that shows `marker` (an ECHO sent last,
    so nothing depends on timing)."""
    data = b''
    end = time.monotonic() + WAIT
    while marker not in data:
        assert time.monotonic() < end, 'marker never shown'
        data += mon.read_available()
    return normalize(data).split(b'\r\n')


def monitor_session(port, commands):
    mon, c = RawConn(port), RawConn(port)
    try:
        c.cmd('FLUSHALL')
        c.cmd('FUNCTION', 'FLUSH')
        assert mon.cmd('MONITOR') == b'+OK\r\n'
        replies = [c.cmd(*cmd) for cmd in commands]
        c.cmd('ECHO', 'the-end')
        return lines_until(mon, b'the-end'), replies
    finally:
        mon.close()
        c.close()


def test_monitor_lines_as_redis(ports):
    commands = [
        ('SET', 'k', 'v'),
        ('GET', 'k\x00\x01"\\\n\t é'),
        ('SET', 'b', b'\x7f\x80\xff\r\a\b'),
        ('AUTH', 'secret'),
        ('AUTH', 'u', 'p'),
        ('HELLO', '2', 'AUTH', 'default', 'x'),
        ('HELLO', '3', 'SETNAME', 'foo'),
        ('HELLO', '2'),
        ('HELLO',),
        ('HELLO', '4', 'AUTH', 'a', 'b'),  # checked before its options: not redacted
        ('HELLO', '2', 'FOO', 'AUTH', 'a', 'b'),
        ('auth', 'a', 'b', 'c'),  # a syntax error: not redacted
        ('CLIENT', 'LIST'),  # admin: not shown
        ('CONFIG', 'GET', 'port'),  # admin: not shown
        ('CLIENT', 'ID'),
        ('OBJECT', 'ENCODING', 'k'),
        ('MULTI',),
        ('SET', 'a', '1'),
        ('INCR', 'a'),
        ('EXEC',),
        ('MULTI',),
        ('SET', 'a'),
        ('EXEC',),  # EXECABORT: still shown
        ('MULTI',),
        ('DISCARD',),
        ('NOSUCHCMD', 'a'),  # rejected: not shown
        ('GET',),
        ('SELECT', '3'),
        ('SET', 'x', 'y'),
        ('SELECT', '0'),
        ('MULTI',),
        ('MONITOR',),
        ('EXEC',),  # MONITOR inside EXEC is refused; EXEC is shown
        ('EVAL_RO', 'return 1', '0'),
    ]
    ours, theirs = (monitor_session(p, commands)[0] for p in ports)
    assert ours == theirs
    assert b'+T [3 addr] "SET" "x" "y"' in ours


def test_monitor_shows_script_commands_as_lua(ports):
    """EVAL and FCALL are shown before the commands their script runs, `[db lua]`."""
    commands = [
        ('EVAL', "redis.call('set','x','1'); return redis.call('get', 'x')", '0'),
        (
            'FUNCTION',
            'LOAD',
            "#!lua name=lib\nredis.register_function('f', function(k,a) "
            "redis.call('select', '2') return redis.call('get','a') end)",
        ),
        ('SELECT', '1'),
        ('FCALL', 'f', '0'),
        ('SELECT', '0'),
    ]
    ours, theirs = (monitor_session(p, commands)[0] for p in ports)
    assert ours == theirs
    assert b'+T [2 lua] "select" "2"' in theirs


def test_monitor_client_rules(ports):
    """A monitor is a replica for Redis: keyspace commands are refused, its own commands
    show after their reply, a second MONITOR is ignored, RESET makes it a client again."""
    got = []
    for port in ports:
        with RawConn(port) as mon:
            mon.cmd('MONITOR')
            cmds = [('PING',), ('GET', 'k'), ('SET', 'k', 'v'), ('ECHO', 'x'), ('MONITOR',)]
            mon.sock.sendall(b''.join(pack(*cmd) for cmd in cmds) + pack('ECHO', 'the-end'))
            stream = b'\r\n'.join(lines_until(mon, b'"ECHO" "the-end"'))
            got.append((stream, mon.cmd('RESET'), mon.cmd('GET', 'k')))
    assert got[0] == got[1]
    assert b"-ERR Replica can't interact with the keyspace" in got[0][0]


def test_monitor_sees_other_clients_and_blocked_command_once(ports):
    got = []
    for port in ports:
        mon, c, d = RawConn(port), RawConn(port), RawConn(port)
        c.cmd('FLUSHALL')
        mon.cmd('MONITOR')
        d.sock.sendall(pack('BLPOP', 'bl', '0'))
        wait_until(lambda c=c: b'blocked_clients:1' in c.cmd('INFO', 'clients'))
        c.cmd('LPUSH', 'bl', 'x')
        assert d.read_reply() == b'*2\r\n$2\r\nbl\r\n$1\r\nx\r\n'
        c.cmd('ECHO', 'the-end')
        got.append(lines_until(mon, b'the-end'))
        for x in (mon, c, d):
            x.close()
    assert got[0] == got[1]
    assert sum(b'BLPOP' in line for line in got[0]) == 1


def test_client_list_shows_monitor_flag(server):
    mon = RawConn(server.port)
    mon.cmd('MONITOR')
    with RawConn(server.port) as c:
        listing = c.cmd('CLIENT', 'LIST').decode()
    line = [x for x in listing.split('\n') if 'cmd=monitor' in x]
    assert line and ' flags=O ' in line[0]
    mon.close()


# -- CLIENT PAUSE -----------------------------------------------------------------------------


def held(port, cmd, pre=()):
    """(reply while paused, reply after UNPAUSE) of `cmd` sent by a fresh client."""
    with RawConn(port) as admin, RawConn(port) as c:
        for p in pre:
            c.cmd(*p)
        assert admin.cmd('CLIENT', 'PAUSE', '100000', 'WRITE') == b'+OK\r\n'
        try:
            c.sock.sendall(pack(*cmd))
            c.sock.sendall(pack('ECHO', 'after'))
            time.sleep(0.2)  # a held command must still have no reply (any reply is a failure)
            during = c.read_available()
        finally:
            assert admin.cmd('CLIENT', 'UNPAUSE') == b'+OK\r\n'
        after = b''
        if during == b'':
            after = c.read_reply() + c.read_reply()
        return during, after


def test_pause_write_holds_writes_and_may_replicate(ports):
    cases = [
        ('PING',),
        ('GET', 's'),
        ('SET', 's', '2'),
        ('PUBLISH', 'c', 'm'),
        ('EVAL', 'return 1', '0'),
        ('EVAL_RO', 'return 1', '0'),
        ('EVAL', '#!lua flags=no-writes\nreturn 1', '0'),
        ('EVAL', '#!lua\nreturn 1', '0'),
        ('EXPIRE', 'nokey', '10'),
        ('FUNCTION', 'FLUSH'),
        ('SCRIPT', 'LOAD', 'return 2'),
        ('INFO', 'keyspace'),
    ]
    for cmd in cases:
        ours, theirs = (held(p, cmd) for p in ports)
        assert ours == theirs, cmd


def test_pause_write_and_multi(ports):
    cases = [
        (('SET', 'a', 'b'), [('MULTI',)]),  # queueing a write waits too
        (('EXEC',), [('MULTI',), ('GET', 's')]),
        (('EXEC',), [('MULTI',), ('SET', 's', '3')]),
        (('EXEC',), [('MULTI',), ('PUBLISH', 's', '3')]),
    ]
    for cmd, pre in cases:
        ours, theirs = (held(p, cmd, pre=pre) for p in ports)
        assert ours == theirs, (cmd, pre)


def test_held_commands_run_in_order_after_pause(r, server):
    with RawConn(server.port) as admin, RawConn(server.port) as a, RawConn(server.port) as b:
        admin.cmd('CLIENT', 'PAUSE', '100000', 'WRITE')
        try:
            a.sock.sendall(pack('SET', 'k', 'first') + pack('GET', 'k'))
            time.sleep(0.05)
            b.sock.sendall(pack('SET', 'k', 'second') + pack('GET', 'k'))
            time.sleep(0.1)
            assert a.read_available() == b'' and b.read_available() == b''
        finally:
            admin.cmd('CLIENT', 'UNPAUSE')
        assert a.read_reply() + a.read_reply() == b'+OK\r\n$5\r\nfirst\r\n'
        assert b.read_reply() + b.read_reply() == b'+OK\r\n$6\r\nsecond\r\n'


def test_pause_all_holds_everything_until_timeout(server):
    with RawConn(server.port) as c:
        assert c.cmd('CLIENT', 'PAUSE', '1500', 'ALL') == b'+OK\r\n'
        start = time.monotonic()
        c.sock.sendall(pack('PING'))
        time.sleep(0.1)
        assert c.read_available() == b''  # even the client that paused waits
        assert c.read_reply() == b'+PONG\r\n'
        assert time.monotonic() - start >= 1.49


def test_pause_keeps_expired_keys_until_it_ends(ports):
    """During a pause a key past its deadline reads as gone but is deleted neither on access
    nor by active expiry (DBSIZE still counts it), and is once the pause ends."""
    got = []
    for port in ports:
        with RawConn(port) as c:
            c.cmd('FLUSHALL')
            c.cmd('SET', 'f', 'v')
            c.cmd('MULTI')
            c.cmd('SET', 'e', 'v', 'PX', '50')
            c.cmd('CLIENT', 'PAUSE', '100000', 'WRITE')
            try:
                assert c.cmd('EXEC') == b'*2\r\n+OK\r\n+OK\r\n'
                time.sleep(0.3)  # active expiry would have deleted it by now
                during = [c.cmd(*cmd) for cmd in [('GET', 'e'), ('DBSIZE',), ('EXISTS', 'e')]]
            finally:
                c.cmd('CLIENT', 'UNPAUSE')
            wait_until(lambda: c.cmd('DBSIZE') == b':1\r\n', 'expiry after the pause')
            got.append(during)
    assert got[0] == got[1] == [b'$-1\r\n', b':2\r\n', b':0\r\n']


def test_active_expiry_turned_off_during_a_pause_stays_off_after_it(ports):
    """DEBUG SET-ACTIVE-EXPIRE 0 given while clients are paused still holds once the
    pause ends (the pause does not put back what it found), until SET-ACTIVE-EXPIRE 1."""
    for port in ports:
        with RawConn(port) as c:
            c.cmd('CLIENT', 'PAUSE', '100000', 'WRITE')
            try:
                assert c.cmd('DEBUG', 'SET-ACTIVE-EXPIRE', '0') == b'+OK\r\n'
            finally:
                c.cmd('CLIENT', 'UNPAUSE')
            try:
                c.cmd('SET', 'e', 'v', 'PX', '10')
                time.sleep(0.3)  # active expiry, were it on, would have deleted it by now
                assert c.cmd('DBSIZE') == b':1\r\n', port
            finally:
                c.cmd('DEBUG', 'SET-ACTIVE-EXPIRE', '1')
            wait_until(lambda: c.cmd('DBSIZE') == b':0\r\n', 'active expiry, on again')


def test_paused_client_in_client_list(ports):
    got = []
    for port in ports:
        with RawConn(port) as admin, RawConn(port) as c:
            cid = c.cmd('CLIENT', 'ID')[1:-2].decode()
            admin.cmd('CLIENT', 'PAUSE', '100000', 'WRITE')
            try:
                c.sock.sendall(pack('SET', 'a', 'b'))
                listed = lambda a=admin, i=cid: a.cmd('CLIENT', 'LIST', 'ID', i).decode()  # noqa: E731
                wait_until(lambda listed=listed: ' flags=b ' in listed())
                got.append(re.findall(r' (flags=\S+|cmd=\S+|argv-mem=\S+)', listed()))
            finally:
                admin.cmd('CLIENT', 'UNPAUSE')
            assert c.read_reply() == b'+OK\r\n'
    assert got[0] == got[1] == ['flags=b', 'argv-mem=5', 'cmd=set']


def test_paused_clients_count_as_blocked(ports):
    for port in ports:
        with RawConn(port) as admin, RawConn(port) as c:
            admin.cmd('CLIENT', 'PAUSE', '100000', 'WRITE')
            try:
                c.sock.sendall(pack('SET', 'a', 'b'))
                info = lambda a=admin: a.cmd('INFO', 'clients')  # noqa: E731
                wait_until(lambda info=info: b'blocked_clients:1' in info(), timeout=10)
            finally:
                admin.cmd('CLIENT', 'UNPAUSE')  # the next tests must not find it paused
            assert c.read_reply() == b'+OK\r\n'


# -- CLIENT LIST --------------------------------------------------------------------------------

_TIMING = ('id', 'addr', 'laddr', 'fd', 'age', 'idle', 'rbs', 'rbp')


def client_states(port):
    """CLIENT LIST fields of clients in various states, minus those that depend on timing or
    identity; tot-mem without rbs (the reply buffer shrinks on the cron's schedule)."""
    conns = [RawConn(port) for _ in range(7)]
    fresh, used, multi, sub, psub, partial, watch = conns
    used.cmd('PING')
    multi.cmd('MULTI')
    multi.cmd('SET', 'k', 'v')
    multi.cmd('GET', 'k')
    sub.cmd('SUBSCRIBE', 'x', 'y')
    psub.cmd('PSUBSCRIBE', 'p*')
    partial.sock.sendall(pack('SET', 'k', 'v')[:-5])
    watch.cmd('WATCH', 'a', 'b')
    with RawConn(port) as admin:
        wait_until(lambda: b'qbuf=2 ' in admin.cmd('CLIENT', 'LIST'), 'the partial command')
        listing = [x for x in admin.cmd('CLIENT', 'LIST').decode().split('\n') if 'id=' in x]
    for c in conns:
        c.close()
    out = []
    for line in listing:
        fields = [f.split('=', 1) for f in line.split(' ')]
        d = dict(fields)
        tot = int(d['tot-mem']) - int(d['rbs'])
        out.append([(k, v) for k, v in fields if k not in _TIMING and k != 'tot-mem'] + [tot])
    return out


def test_client_list_fields_as_redis(ports):
    ours, theirs = (client_states(p) for p in ports)
    assert ours == theirs


def test_client_pause_arguments(both):
    assert_same(
        both,
        [
            ('CLIENT', 'PAUSE', '-1'),
            ('CLIENT', 'PAUSE', 'abc'),
            ('CLIENT', 'PAUSE', '10', 'read'),
            ('CLIENT', 'PAUSE', '10', 'write', 'x'),
            ('CLIENT', 'PAUSE', '9223372036854775000'),  # the end wraps: no pause at all
            ('PING',),
            ('CLIENT', 'UNPAUSE'),
            ('CLIENT', 'UNPAUSE'),
        ],
    )
