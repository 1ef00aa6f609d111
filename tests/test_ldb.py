"""The Lua debugger (SCRIPT DEBUG SYNC, store/scripting/ldb.py) against redis-server 7.0.15:
a debugging session's every reply compared as bytes, and what it leaves behind."""

import pytest

from conftest import spawn_store, stop
from rawconn import RawConn

SCRIPT = (
    'local a = 1\n'
    "local b = {1, 2, x = 'y'}\n"
    'redis.debug(a, b)\n'
    'redis.breakpoint()\n'
    "redis.call('set', KEYS[1], 'v')\n"
    "return redis.call('get', KEYS[1])\n"
)

# The debugger commands sent one by one while the script is stopped.
CONVERSATION = [
    ('help',),
    ('hello\0world',),
    ('s',),
    ('print',),
    ('p', 'a'),
    ('p', 'KEYS'),
    ('p', 'nosuch'),
    ('trace',),
    ('list',),
    ('l', '3', '1'),
    ('whole',),
    ('b',),
    ('b', '6'),
    ('b', 'x', '99', '-6', '-5'),
    ('b', '6'),
    ('e', "{1, 'a', x = 2}"),
    ('eval', 'error("x")'),
    ('e', 'x = ('),
    ('r', 'set', 'k2', 'x'),
    ('r', 'get', 'k2'),
    ('r', 'incr', 'k2'),
    ('redis', 'nosuch'),
    ('r', 'get'),
    ('redis', *['test'] * 100),
    ('maxlen', '10'),
    ('r', 'get', 'k2'),
    ('maxlen', '0'),
    ('m',),
    ('s',),
    ('s',),  # redis.debug's line, then redis.breakpoint()
    ('c',),  # to the breakpoint at line 6
    ('s',),  # logs the redis.call of a step
]


def test_a_debugging_session_reads_as_redis(raw_pair):
    ours, theirs = raw_pair()
    for c in (ours, theirs):
        assert c.cmd('SCRIPT', 'DEBUG', 'SYNC') == b'+OK\r\n'
    start = ('EVAL', SCRIPT, 1, 'k')
    assert ours.cmd(*start) == theirs.cmd(*start)
    for command in CONVERSATION:
        assert ours.cmd(*command) == theirs.cmd(*command), command
    # the end: the log's <endsession>, the EVAL's reply, and the connection closes
    end = [c.cmd('c') + c.read_reply() for c in (ours, theirs)]
    assert end[0] == end[1] == b'*1\r\n+<endsession>\r\n$1\r\nv\r\n'
    assert ours.closed_by_peer() and theirs.closed_by_peer()


@pytest.mark.parametrize('command', [('a',), ('abort',)])
def test_abort_ends_the_script_with_an_error(raw_pair, command):
    ours, theirs = raw_pair()
    replies = []
    for c in (ours, theirs):
        c.cmd('SCRIPT', 'DEBUG', 'SYNC')
        c.cmd('EVAL', "redis.call('set', 'a', 1)\nreturn 1", 0)
        c.cmd('s')
        replies.append(c.cmd(*command) + c.read_reply())
    assert replies[0] == replies[1]
    assert b'script aborted for user request' in replies[0]


def test_script_debug_no_and_errors(raw_pair):
    ours, theirs = raw_pair()
    for command in [
        ('SCRIPT', 'DEBUG', 'SYNC'),
        ('SCRIPT', 'DEBUG', 'NO'),
        ('EVAL', 'return 1', 0),  # no session after NO
        ('SCRIPT', 'DEBUG', 'MAYBE'),
        ('MULTI',),
        ('SCRIPT', 'DEBUG', 'YES'),
        ('DISCARD',),
    ]:
        assert ours.cmd(*command) == theirs.cmd(*command), command


def test_forked_session_leaves_the_data_alone():
    """SCRIPT DEBUG YES: the session runs in a child process, so the script's writes are
    not the server's; the server goes on serving meanwhile."""
    proc, port = spawn_store()
    try:
        dbg = RawConn(port)
        assert dbg.cmd('SCRIPT', 'DEBUG', 'YES') == b'+OK\r\n'
        stopped = dbg.cmd('EVAL', "redis.call('set', 'x', 1)\nreturn redis.call('get', 'x')", 0)
        assert stopped.startswith(b'*2\r\n+* Stopped at 1')
        other = RawConn(port)
        assert other.cmd('PING') == b'+PONG\r\n'  # not blocked by the session
        assert dbg.cmd('c') + dbg.read_reply() == b'*1\r\n+<endsession>\r\n$1\r\n1\r\n'
        assert other.cmd('EXISTS', 'x') == b':0\r\n'  # the child's write stayed there
    finally:
        stop(proc)
