"""INFO errorstats, total_error_replies and commandstats' failed and rejected calls against
redis-server 7.0.15: each case runs on both servers after CONFIG RESETSTAT, and what INFO
then says about errors must be the same, including for scripts, whose redis.call errors
are counted once (Redis's ignore_error_stats_update)."""

import pytest

from rawconn import RawConn, pack

SCRIPT_ERRORS = {
    'call error': "return redis.call('INCR', 's')",
    'pcall error returned': "return redis.pcall('INCR', 's')",
    'pcall error swallowed': "redis.pcall('INCR', 's') return 1",
    'pcall unknown command': "return redis.pcall('NOSUCH')",
    'pcall wrong arity': "return redis.pcall('GET')",
    'pcall not from scripts': "return redis.pcall('SUBSCRIBE', 'x')",
    'pcall bad argument': "return redis.pcall('GET', {})",
    'pcall no argument': "return redis.pcall()",
    'error_reply': "return redis.error_reply('MY thing')",
    'error table': "return {err='OOPS bad'}",
    'error without code': "return {err='nocode'}",
    'runtime error': 'return nil + 1',
    'errors in an array': "return {1, redis.error_reply('IN array'), redis.pcall('INCR', 's')}",
    'status reply': "return redis.status_reply('FINE')",
    'ignore flag seen by the script': (
        "local t = redis.pcall('INCR', 's') local out = {} "
        'for k, v in pairs(t) do out[#out + 1] = k end table.sort(out) return out'
    ),
}

CASES = {
    'wrong type': [('LPUSH', 's', 'x')],
    'unknown command': [('NOSUCH',)],
    'wrong arity': [('GET',)],
    'unknown subcommand': [('CONFIG', 'FOO')],
    'subcommand arity': [('CONFIG', 'GET')],
    'error inside EXEC': [('MULTI',), ('INCR', 's'), ('SET', 'k', 'v'), ('EXEC',)],
    'EXECABORT': [('MULTI',), ('NOSUCH',), ('EXEC',)],
    'NOSCRIPT': [('EVALSHA', 'a' * 40, '0')],
    'BUSYKEY': [('RESTORE', 's', '0', 'x')],
    'subscribed context': [('SUBSCRIBE', 'c'), ('GET', 's')],
    **{f'script: {name}': [('EVAL', body, '0')] for name, body in SCRIPT_ERRORS.items()},
    'function error': [
        (
            'FUNCTION',
            'LOAD',
            'REPLACE',
            "#!lua name=lib\nredis.register_function('f', "
            "function() return redis.call('INCR', 's') end)",
        ),
        ('FCALL', 'f', '0'),
    ],
}


def error_info(conn):
    """What INFO says about errors: errorstats, total_error_replies and the commands
    with failed or rejected calls."""
    lines = []
    for section in ('errorstats', 'stats', 'commandstats'):
        for line in conn.cmd('INFO', section).decode().split('\r\n'):
            if line.startswith('errorstat_') or line.startswith('total_error_replies'):
                lines.append(line)
            elif line.startswith('cmdstat_'):
                name, fields = line.split(':', 1)
                counts = [f for f in fields.split(',') if f.split('=')[0].endswith('_calls')]
                if any(not f.endswith('=0') for f in counts):
                    lines.append(f'{name} {",".join(counts)}')
    return sorted(lines)  # (commandstats come in each server's own order)


def run_case(port, commands):
    with RawConn(port) as c:
        c.cmd('FLUSHALL')
        c.cmd('FUNCTION', 'FLUSH')
        c.cmd('SET', 's', 'v')
        c.cmd('CONFIG', 'RESETSTAT')
        replies = [c.cmd(*cmd) for cmd in commands]
    with RawConn(port) as c:
        return replies, error_info(c)


@pytest.mark.parametrize('name', list(CASES))
def test_error_counts_match_redis(ports, name):
    ours, theirs = (run_case(port, CASES[name]) for port in ports)
    assert ours == theirs


def test_protocol_errors_and_unblocked_clients_are_counted(ports):
    got = []
    for port in ports:
        with RawConn(port) as admin, RawConn(port) as blocked:
            admin.cmd('CONFIG', 'RESETSTAT')
            cid = blocked.cmd('CLIENT', 'ID')[1:-2]
            blocked.send(pack('BLPOP', 'nolist', '0'))
            admin.cmd('CLIENT', 'UNBLOCK', cid, 'ERROR')
            blocked.read_reply()
            with RawConn(port) as bad:
                bad.send(b'*1\r\n$x\r\n')
                bad.read_reply()
            got.append(error_info(admin))
    assert got[0] == got[1]


def test_every_error_code_is_tracked(ports):
    """Redis 7.0 keeps a count for every code it has seen (7.2 stops at 128)."""
    got = []
    for port in ports:
        with RawConn(port) as c:
            c.cmd('CONFIG', 'RESETSTAT')
            for i in range(130):
                c.cmd('EVAL', f"return redis.error_reply('CODE{i:03d} x')", '0')
            c.cmd('EVAL', "return redis.error_reply('CODE000 again')", '0')
            got.append(error_info(c))
    assert got[0] == got[1]
    assert 'errorstat_CODE000:count=2' in got[0] and 'errorstat_CODE129:count=1' in got[0]
