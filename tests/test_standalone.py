"""ROLE, WAIT, REPLICAOF and SLAVEOF (store/commands/replication.py), MODULE
(store/commands/modules.py) and the cluster commands (store/commands/cluster.py) against
redis-server 7.0.15, both standalone masters without replicas, modules or cluster support
(replicas: tests/test_replication.py)."""

import pytest
import redis

from conftest import assert_same, free_port, spawn_redis, spawn_store, stop, wait_until
from rawconn import RawConn, pack
from store.commands.cluster import SUBCOMMANDS


def test_replies_and_errors_match_redis(both_resp):
    assert_same(
        both_resp,
        [
            ('ROLE',),
            ('ROLE', 'x'),
            ('WAIT', '0', '0'),
            ('WAIT', '-1', '100'),
            ('WAIT', '0', '9223372036854775807'),
            ('WAIT', 'x', '0'),
            ('WAIT', '01', '0'),
            ('WAIT', '1', 'x'),
            ('WAIT', '1', '-0'),
            ('WAIT', '1', '1.5'),
            ('WAIT', '1', '-1'),
            ('WAIT', '1'),
            ('MULTI',),
            ('WAIT', '1', '0'),  # inside EXEC it may not block: 0 at once
            ('ROLE',),
            ('EXEC',),
            ('MODULE',),
            ('MODULE', 'LIST'),
            ('MODULE', 'LIST', 'x'),
            ('MODULE', 'HELP'),
            ('MODULE', 'FOO'),
            ('MODULE', 'LOAD', '/nonexistent.so'),
            ('MODULE', 'LOADEX', '/nonexistent.so', 'CONFIG', 'a', 'b', 'ARGS', '1'),
            ('MODULE', 'UNLOAD', 'x'),
            ('MODULE', 'UNLOAD'),
            ('EVAL', "return redis.call('WAIT', 0, 0)", '0'),
            ('EVAL', "return redis.call('ROLE')", '0'),
            ('EVAL', "return redis.pcall('MODULE', 'LIST')", '0'),
            ('REPLICAOF', 'NO', 'ONE'),
            ('slaveof', 'no', 'one'),
            ('REPLICAOF', 'NO'),
            ('REPLICAOF', 'localhost', 'x'),
            ('REPLICAOF', 'localhost', '-5'),
            ('SLAVEOF', 'localhost', '65536'),
            ('EVAL', "return redis.pcall('REPLICAOF', 'NO', 'ONE')", '0'),
            ('ROLE',),
        ],
    )


def test_replicaof_a_master_makes_a_replica_until_no_one():
    """REPLICAOF <host> <port> is +OK and ROLE says slave at once, the link retrying while
    nothing answers there (the sync itself: tests/test_replication.py); NO ONE makes a
    master again, with the data it had."""
    proc, port = spawn_store()
    c = redis.Redis(port=port, protocol=2)
    try:
        c.set('k', 'v')
        for cmd in ('REPLICAOF', 'SLAVEOF'):
            assert c.execute_command(cmd, '127.0.0.1', str(free_port())) in (b'OK', True)
            role = c.execute_command('ROLE')
            assert role[0] == b'slave' and role[3] in (b'connect', b'connecting')
            with pytest.raises(redis.ReadOnlyError):
                c.set('k', 'w')
            assert c.execute_command(cmd, 'NO', 'ONE') in (b'OK', True)  # SLAVEOF: True
            assert c.execute_command('ROLE')[0] == b'master' and c.get('k') == b'v'
    finally:
        c.close()
        stop(proc)


def test_wait_for_a_replica_blocks_until_its_timeout_then_answers_0(ports):
    got = []
    for port in ports:
        with RawConn(port) as c, RawConn(port) as admin:
            cid = c.cmd('CLIENT', 'ID')[1:-2]
            c.send(pack('WAIT', '1', '3000') + pack('PING'))  # the PING waits behind it

            def blocked(cid=cid, admin=admin):
                line = admin.cmd('CLIENT', 'LIST', 'ID', cid).decode()
                return ' flags=b ' in line and ' cmd=wait ' in line

            wait_until(blocked, 'the WAIT to block')  # not answered at once
            got.append((c.read_reply(), c.read_reply()))  # ended by its timeout
    assert got == [(b':0\r\n', b'+PONG\r\n')] * 2


@pytest.mark.parametrize('error', [False, True])
def test_client_unblock_ends_a_wait(ports, error):
    got = []
    for port in ports:
        with RawConn(port) as c, RawConn(port) as admin:
            cid = c.cmd('CLIENT', 'ID')[1:-2]
            c.send(pack('WAIT', '1', '0'))
            replies = [admin.cmd('CLIENT', 'UNBLOCK', cid, *(['ERROR'] if error else []))]
            replies.append(c.read_reply())
            replies.append(admin.cmd('CLIENT', 'UNBLOCK', cid))  # not blocked any more
            got.append(replies)
    assert got[0] == got[1]
    assert got[0][1] == (
        b'-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n' if error else b':0\r\n'
    )


def test_module_load_when_enabled_fails_as_for_a_library_redis_cannot_load(tmp_path):
    proc, port = spawn_store('--enable-module-command', 'yes', '--dir', str(tmp_path))
    rproc, rport = spawn_redis('--enable-module-command', 'yes')
    try:
        commands = [
            ('MODULE', 'LOAD', '/nonexistent.so'),
            ('MODULE', 'LOAD', '/nonexistent.so', 'a', 'b'),
            ('MODULE', 'LOADEX', '/nonexistent.so', 'CONFIG', 'a'),
            ('MODULE', 'UNLOAD', 'x'),
            ('MODULE', 'LIST'),
        ]
        with RawConn(port) as ours, RawConn(rport) as theirs:
            assert [ours.cmd(*c) for c in commands] == [theirs.cmd(*c) for c in commands]
    finally:
        stop(proc)
        stop(rproc)


def test_cluster_commands_say_cluster_support_is_disabled(both_resp):
    """Each CLUSTER subcommand with as many arguments as its arity asks (and one too
    many for the fixed ones), unknown subcommands, READONLY, READWRITE, ASKING."""
    commands = [('CLUSTER',), ('CLUSTER', 'FOO'), ('CLUSTER', 'HELP')]
    for name, arity, *_ in SUBCOMMANDS:
        args = ['x'] * (abs(arity) - 2)
        commands.append(('CLUSTER', name, *args))
        if arity > 0:
            commands.append(('CLUSTER', name, *args, 'extra'))
    for name in ('READONLY', 'READWRITE', 'ASKING'):
        commands += [(name,), (name, 'x')]
    assert_same(both_resp, commands)
