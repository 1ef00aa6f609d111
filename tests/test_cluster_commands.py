"""CLUSTER's subcommands, READONLY / READWRITE / ASKING and the data path of a cluster node
(store/commands/cluster.py, cluster_info.py, store/cluster/routing.py, the connection's
routing check), against redis-server 7.0.15.

Differential tests start one node of ours and one redis-server, each alone with
`--cluster-enabled yes` and its own nodes.conf, and compare the replies of the same
commands (node ids and ports, which differ, are replaced by placeholders). Redirections
that need a second node (-MOVED, -ASK, -TRYAGAIN, a replica's READONLY reads, a blocked
client's redirection, shard channels dropped with their slot) are tested in process: the
other node is a `Node` added to our server's cluster table, and the exact redirection
lines are asserted. The multi-node end-to-end tests are tests/test_cluster_*.py's.
"""

import threading
import time

import pytest
import redis

from conftest import WAIT, free_port, spawn_redis, spawn_store, stop, wait_until
from rawconn import RawConn, pack
from store import EmbeddedServer
from store.cluster import routing
from store.cluster.node import FLAG_MASTER, FLAG_SLAVE, Node
from store.cluster.state import add_replica
from store.db_slice import key_slot

pytestmark = pytest.mark.differential

OTHER = 'b' * 40  # the fake second node's name


# -- a node of ours and a redis-server, each alone in its cluster --------------------------


def _cluster_args(tmp, name):
    d = tmp / name
    d.mkdir()
    cport = free_port()
    args = [
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        str(d / 'nodes.conf'),
        '--cluster-port',
        str(cport),
        '--cluster-node-timeout',
        '3000',
    ]
    return args, d, cport


class Pair:
    """Our node and redis-server's, each alone in its own cluster: `both` (clients),
    `ids` and `ports` (to normalize replies)."""

    def __init__(self, tmp, protocol=2):
        ours_args, ours_dir, ours_cport = _cluster_args(tmp, 'ours')
        redis_args, _, redis_cport = _cluster_args(tmp, 'redis')
        self.procs = []
        # (--bind: loopback only, as every test server)
        proc, ours_port = spawn_store(*ours_args, '--dir', str(ours_dir), '--bind', '127.0.0.1')
        self.procs.append(proc)
        proc, redis_port = spawn_redis(*redis_args)
        self.procs.append(proc)
        self.ports = ((ours_port, ours_cport), (redis_port, redis_cport))
        self.both = (
            redis.Redis('127.0.0.1', ours_port, protocol=protocol),
            redis.Redis('127.0.0.1', redis_port, protocol=protocol),
        )

    def ids(self):
        return [c.execute_command('CLUSTER', 'MYID') for c in self.both]

    def normalized(self, commands):
        """Each side's replies with its node id and ports as placeholders."""
        out = []
        for client, ports in zip(self.both, self.ports):
            myid = client.execute_command('CLUSTER', 'MYID')
            out.append([_replace(_call(client, *cmd), myid, ports) for cmd in commands])
        return out

    def assert_same(self, commands):
        got, want = self.normalized(commands)
        for cmd, g, w in zip(commands, got, want):
            assert g == w, f'{cmd!r}: ours {g!r} != redis {w!r}'

    def wait_ok(self):
        for c in self.both:
            wait_until(
                lambda c=c: b'cluster_state:ok' in c.execute_command('CLUSTER', 'INFO'),
                'cluster_state:ok',
            )

    def close(self):
        for c in self.both:
            c.close()
        for p in self.procs:
            stop(p)


def _replace(value, myid, ports):
    """`value` with the node id `myid` as <id> and its port and bus port as <port> and
    <cport> (the parts that differ between two nodes)."""
    port, cport = ports
    if isinstance(value, bytes | str):
        s = value.decode('utf-8', 'replace') if isinstance(value, bytes) else value
        s = s.replace(myid.decode(), '<id>')
        return s.replace(f'@{cport}', '@<cport>').replace(f':{port}', ':<port>')
    if isinstance(value, int) and value == port:
        return '<port>'
    if isinstance(value, list | tuple):
        return type(value)(_replace(v, myid, ports) for v in value)
    if isinstance(value, dict):
        return {_replace(k, myid, ports): _replace(v, myid, ports) for k, v in value.items()}
    return value


@pytest.fixture(params=[2, 3], ids=['resp2', 'resp3'])
def pair(request, tmp_path):
    p = Pair(tmp_path, request.param)
    yield p
    p.close()


@pytest.fixture
def pair2(tmp_path):
    p = Pair(tmp_path, 2)
    yield p
    p.close()


def _bus_port(line):
    return line.split()[1].split('@')[1]


# -- differential: the single-node subcommands ---------------------------------------------


def test_help_info_and_introspection_of_a_fresh_node(pair):
    pair.assert_same(
        [
            ('CLUSTER', 'HELP'),
            ('CLUSTER', 'INFO'),
            ('CLUSTER', 'MYID'),
            ('CLUSTER', 'NODES'),
            ('CLUSTER', 'SLOTS'),
            ('CLUSTER', 'SHARDS'),
            ('CLUSTER', 'LINKS'),
            ('CLUSTER', 'KEYSLOT', 'foo'),
            ('CLUSTER', 'KEYSLOT', '{user1}:a'),
            ('CLUSTER', 'KEYSLOT', '{}x'),
            ('CLUSTER', 'KEYSLOT', ''),
            ('CLUSTER', 'COUNTKEYSINSLOT', '0'),
            ('CLUSTER', 'COUNTKEYSINSLOT', '16384'),
            ('CLUSTER', 'COUNTKEYSINSLOT', '-1'),
            ('CLUSTER', 'COUNTKEYSINSLOT', 'x'),
            ('CLUSTER', 'GETKEYSINSLOT', '0', '10'),
            ('CLUSTER', 'GETKEYSINSLOT', '0', '-1'),
            ('CLUSTER', 'GETKEYSINSLOT', '16384', '1'),
            ('CLUSTER', 'GETKEYSINSLOT', 'x', '1'),
            ('CLUSTER', 'GETKEYSINSLOT', '1', 'x'),
            ('CLUSTER', 'COUNT-FAILURE-REPORTS', 'x'),
            ('CLUSTER', 'REPLICAS', 'x'),
            ('CLUSTER', 'SLAVES', 'a' * 40),
            ('CLUSTER', 'FOO'),
            ('CLUSTER', 'NODES', 'x'),
            ('READONLY',),
            ('READWRITE',),
            ('ASKING',),
            ('READONLY', 'x'),
            ('ASKING', 'x'),
        ]
    )
    ours, theirs = pair.both
    me = ours.execute_command('CLUSTER', 'MYID')
    assert ours.execute_command('CLUSTER', 'COUNT-FAILURE-REPORTS', me) == 0
    assert ours.execute_command('CLUSTER', 'REPLICAS', me) == []
    assert ours.execute_command('INFO', 'server')['redis_mode'] == 'cluster'
    for client in pair.both:
        hello = client.execute_command('HELLO')
        hello = dict(zip(hello[::2], hello[1::2])) if isinstance(hello, list) else hello
        assert hello[b'mode'] == b'cluster'


def test_slot_assignment_and_its_errors(pair2):
    """ADDSLOTS / DELSLOTS and their RANGE forms check every slot before changing any, with
    Redis's errors, in its order."""
    pair2.assert_same(
        [
            ('CLUSTER', 'ADDSLOTS', '0', '1', '2'),
            ('CLUSTER', 'ADDSLOTS', '0'),
            ('CLUSTER', 'ADDSLOTS', '16384'),
            ('CLUSTER', 'ADDSLOTS', '-1'),
            ('CLUSTER', 'ADDSLOTS', 'x'),
            ('CLUSTER', 'ADDSLOTS', '7', '7'),
            ('CLUSTER', 'ADDSLOTS', '8', '1'),
            ('CLUSTER', 'ADDSLOTS', '9', 'x', '1'),
            ('CLUSTER', 'ADDSLOTSRANGE', '10', '5'),
            ('CLUSTER', 'ADDSLOTSRANGE', '10', '20', '30'),
            ('CLUSTER', 'ADDSLOTSRANGE', '10', '20', '15', '25'),
            ('CLUSTER', 'ADDSLOTSRANGE', '10', '20', '2', '3'),
            ('CLUSTER', 'ADDSLOTSRANGE', '10', '20', '16380', '16384'),
            ('CLUSTER', 'ADDSLOTSRANGE', '10', '20', '100', '200'),
            ('CLUSTER', 'DELSLOTS', '50'),
            ('CLUSTER', 'DELSLOTS', '1', '1'),
            ('CLUSTER', 'DELSLOTS', '1'),
            ('CLUSTER', 'DELSLOTSRANGE', '150', '250'),
            ('CLUSTER', 'DELSLOTSRANGE', '150', '160', '0', '0'),
            ('CLUSTER', 'DELSLOTSRANGE', '150'),
            ('CLUSTER', 'NODES'),
            ('CLUSTER', 'SLOTS'),
            ('CLUSTER', 'SHARDS'),
            ('CLUSTER', 'INFO'),
            ('CLUSTER', 'FLUSHSLOTS'),
            ('CLUSTER', 'SLOTS'),
            ('CLUSTER', 'ADDSLOTSRANGE', '0', '16383'),
            ('CLUSTER', 'SLOTS'),
        ]
    )


def test_setslot_node_table_and_epoch_errors(pair2):
    unknown = 'c' * 40
    commands = [
        ('CLUSTER', 'ADDSLOTS', '0'),
        ('CLUSTER', 'SETSLOT', '0', 'MIGRATING', unknown),
        ('CLUSTER', 'SETSLOT', '1', 'MIGRATING', unknown),
        ('CLUSTER', 'SETSLOT', '0', 'IMPORTING', unknown),
        ('CLUSTER', 'SETSLOT', '1', 'IMPORTING', unknown),
        ('CLUSTER', 'SETSLOT', '1', 'IMPORTING', 'short'),
        ('CLUSTER', 'SETSLOT', '0', 'NODE', unknown),
        ('CLUSTER', 'SETSLOT', '0', 'STABLE'),
        ('CLUSTER', 'SETSLOT', '0', 'STABLE', 'x'),
        ('CLUSTER', 'SETSLOT', '0', 'FOO'),
        ('CLUSTER', 'SETSLOT', '0', 'NODE'),
        ('CLUSTER', 'SETSLOT', '16384', 'STABLE'),
        ('CLUSTER', 'SETSLOT', 'x', 'STABLE'),
        ('CLUSTER', 'FORGET', unknown),
        ('CLUSTER', 'REPLICATE', unknown),
        ('CLUSTER', 'COUNT-FAILURE-REPORTS', unknown),
        ('CLUSTER', 'FAILOVER'),
        ('CLUSTER', 'FAILOVER', 'FORCE'),
        ('CLUSTER', 'FAILOVER', 'TAKEOVER'),
        ('CLUSTER', 'FAILOVER', 'x'),
        ('CLUSTER', 'FAILOVER', 'a', 'b'),
        ('CLUSTER', 'MEET', '127.0.0.1', 'x'),
        ('CLUSTER', 'MEET', '127.0.0.1', '7000', 'x'),
        ('CLUSTER', 'MEET', 'not-an-ip', '7000'),
        ('CLUSTER', 'MEET', '127.0.0.1', '0'),
        ('CLUSTER', 'MEET', '127.0.0.1', '70000'),
        ('CLUSTER', 'MEET', '127.0.0.1', '7000', '0'),
        ('CLUSTER', 'MEET', '127.0.0.1', '7000', '7001', '7002'),
        ('CLUSTER', 'RESET', 'x'),
        ('CLUSTER', 'RESET', 'soft', 'x'),
        ('CLUSTER', 'SET-CONFIG-EPOCH', 'x'),
        ('CLUSTER', 'SET-CONFIG-EPOCH', '-1'),
        ('CLUSTER', 'BUMPEPOCH'),
        ('CLUSTER', 'INFO'),
        ('CLUSTER', 'SET-CONFIG-EPOCH', '5'),
        ('CLUSTER', 'SET-CONFIG-EPOCH', '6'),
        ('CLUSTER', 'BUMPEPOCH'),
        ('CLUSTER', 'INFO'),
        ('CLUSTER', 'SAVECONFIG'),
    ]
    pair2.assert_same(commands)
    sides = []
    for client, ports in zip(pair2.both, pair2.ports):  # commands naming the node itself
        me = client.execute_command('CLUSTER', 'MYID')
        replies = []
        for cmd in [
            ('CLUSTER', 'SETSLOT', '1', 'MIGRATING', me),
            ('CLUSTER', 'SETSLOT', '0', 'IMPORTING', me),
            ('CLUSTER', 'SETSLOT', '0', 'MIGRATING', me),
            ('CLUSTER', 'SETSLOT', '5', 'IMPORTING', me),
            ('CLUSTER', 'NODES'),
            ('CLUSTER', 'SETSLOT', '5', 'NODE', me),
            ('CLUSTER', 'SETSLOT', '0', 'STABLE'),
            ('CLUSTER', 'FORGET', me),
            ('CLUSTER', 'REPLICATE', me),
            ('CLUSTER', 'SLAVES', me),
            ('CLUSTER', 'NODES'),
            ('CLUSTER', 'INFO'),
        ]:
            replies.append(_call(client, *cmd))
        sides.append(_replace(replies, me, ports))
    got, want = sides
    assert got == want


def test_meet_adds_a_node_in_handshake(pair2):
    """MEET of an address nobody answers on: +OK, and a node in handshake that CLUSTER
    NODES lists (a MEET again while it lasts is +OK too)."""
    dead = 5  # (its bus port, 10005, must be a port too)
    for client in pair2.both:
        assert client.execute_command('CLUSTER', 'MEET', '127.0.0.1', str(dead)) == b'OK'
        assert client.execute_command('CLUSTER', 'MEET', '127.0.0.1', str(dead)) == b'OK'
        lines = client.execute_command('CLUSTER', 'NODES').decode().splitlines()
        others = [ln for ln in lines if 'myself' not in ln]
        assert len(others) == 1
        fields = others[0].split()
        assert fields[1] == f'127.0.0.1:{dead}@{dead + 10000}'
        assert fields[2] in ('handshake', 'master,handshake', 'noflags,handshake')


def test_data_path_in_cluster_mode(pair):
    """A single node serving every slot: CROSSSLOT for keys of two slots (MSET, a
    transaction, a script's declared keys), a script confined to its first slot, SELECT of
    another database, MOVE, SWAPDB, COPY ... DB, SORT's BY and GET, REPLICAOF, FAILOVER."""
    pair.assert_same([('CLUSTER', 'ADDSLOTSRANGE', '0', '16383')])
    pair.wait_ok()
    pair.assert_same(
        [
            ('SET', 'foo', 'bar'),
            ('GET', 'foo'),
            ('MSET', 'a', '1', 'b', '2'),
            ('MSET', '{a}1', '1', '{a}2', '2'),
            ('MGET', '{a}1', '{a}2', '{a}1'),
            ('MGET', 'a', 'a'),
            ('DEL', 'a', 'b'),
            ('SELECT', '0'),
            ('SELECT', '1'),
            ('SELECT', '99'),
            ('SELECT', 'x'),
            ('SELECT', '9999999999'),
            ('MOVE', 'foo', '1'),
            ('SWAPDB', '0', '1'),
            ('COPY', 'foo', 'foo2', 'DB', '1'),
            ('COPY', 'foo', '{foo}2', 'DB', '0'),
            ('COPY', 'foo', 'x', 'DB', 'x'),
            ('RPUSH', 'l', '3', '1', '2'),
            ('SORT', 'l'),
            ('SORT', 'l', 'BY', 'nosort'),
            ('SORT', 'l', 'BY', 'w_*'),
            ('SORT', 'l', 'GET', '#'),
            ('SORT', 'l', 'LIMIT', '0', '1', 'GET', 'x'),
            ('REPLICAOF', 'NO', 'ONE'),
            ('REPLICAOF', '127.0.0.1', '1'),
            ('FAILOVER',),
            ('CLUSTER', 'COUNTKEYSINSLOT', str(key_slot(b'foo'))),
            ('CLUSTER', 'GETKEYSINSLOT', str(key_slot(b'foo')), '0'),
            ('EVAL', "return redis.call('get', KEYS[1])", '1', 'foo'),
            ('EVAL', "return redis.call('get', KEYS[1])", '2', 'foo', 'bar'),
            ('EVAL', "redis.call('get', 'a'); return redis.call('get', 'b')", '0'),
            ('EVAL', "#!lua\nredis.call('get', 'a'); return redis.call('get', 'b')", '0'),
            ('EVAL', "#!lua\nreturn redis.call('get', 'b')", '1', 'a'),
            ('EVAL', "#!lua\nreturn redis.pcall('get', 'b')", '1', 'a'),
            ('EVAL', "#!lua\nreturn redis.call('get', '{a}b')", '1', 'a'),
            (
                'FUNCTION',
                'LOAD',
                "#!lua name=lib\nredis.register_function('f', "
                "function(keys) redis.call('get', 'a'); return redis.call('get', 'b') end)",
            ),
            ('FCALL', 'f', '0'),
            ('FCALL', 'f', '1', 'a'),
            ('FUNCTION', 'FLUSH'),
            ('EVAL', "return redis.call('get', 'x')", '1', 'foo'),
            ('EVAL', "return redis.pcall('mget', 'a', 'b')", '0'),
            (
                'EVAL',
                "#!lua flags=allow-cross-slot-keys\nredis.call('get', 'a')\n"
                "return redis.call('get', 'b')",
                '0',
            ),
            ('EVAL', "#!lua flags=no-cluster\nreturn 1", '0'),
            ('EVAL', "#!lua flags=no-writes,no-cluster\nreturn 1", '0'),
            ('SPUBLISH', 'ch', 'm'),
            ('PUBLISH', 'ch', 'm'),
            ('CLUSTER', 'RESET'),
            ('CLUSTER', 'FLUSHSLOTS'),
            ('FLUSHALL',),
            ('CLUSTER', 'INFO'),
        ]
    )


def test_transactions_across_slots(pair2):
    pair2.assert_same([('CLUSTER', 'ADDSLOTSRANGE', '0', '16383')])
    pair2.wait_ok()
    pair2.assert_same(
        [
            ('MULTI',),
            ('SET', 'a', '1'),
            ('SET', 'b', '2'),
            ('EXEC',),
            ('MGET', 'a', 'b'),
            ('MULTI',),
            ('MSET', 'a', '1', 'b', '2'),
            ('SET', '{a}x', '1'),
            ('EXEC',),
            ('MULTI',),
            ('SET', '{a}1', '1'),
            ('GET', '{a}2'),
            ('EXEC',),
            ('WATCH', 'a', 'b'),
            ('MULTI',),
            ('EXEC',),
            ('EXEC',),
            ('INFO', 'errorstats'),
        ]
    )


def test_cluster_down_and_unserved_slots(pair2):
    """A node serving one slot: the cluster is down (full coverage required), so a key
    anywhere gets -CLUSTERDOWN, and a key of an unassigned slot 'Hash slot not served'
    once reads are allowed when down."""
    slot = key_slot(b'foo')
    pair2.assert_same([('CLUSTER', 'ADDSLOTS', str(slot))])
    time.sleep(2.2)  # past the writable delay: the state is fail for another reason
    pair2.assert_same(
        [
            ('GET', 'foo'),
            ('SET', 'foo', 'x'),
            ('GET', 'bar'),
            ('PING',),
            ('MSET', 'foo', '1', 'bar', '2'),
            ('CONFIG', 'SET', 'cluster-allow-reads-when-down', 'yes'),
            ('GET', 'foo'),
            ('SET', 'foo', 'x'),
            ('GET', 'bar'),
            ('EVAL', "return redis.call('get', 'foo')", '0'),
            ('EVAL', "return redis.call('set', 'foo', 'x')", '0'),
            ('EVAL', "return redis.call('get', KEYS[1])", '1', 'foo'),
            ('SPUBLISH', 'foo', 'm'),
            ('CONFIG', 'SET', 'cluster-allow-pubsubshard-when-down', 'no'),
            ('SPUBLISH', 'foo', 'm'),
            ('CONFIG', 'SET', 'cluster-require-full-coverage', 'no'),
        ]
    )
    for c in pair2.both:
        wait_until(lambda c=c: b'cluster_state:ok' in c.execute_command('CLUSTER', 'INFO'))
    pair2.assert_same(
        [
            ('SET', 'foo', 'x'),
            ('GET', 'bar'),
            ('SET', 'bar', 'y'),
            ('INFO', 'errorstats'),
        ]
    )


def test_reset_rules(pair2):
    """RESET needs a master without keys; SOFT keeps the id, HARD takes a new one and
    its epochs back to 0."""
    pair2.assert_same(
        [
            ('CLUSTER', 'ADDSLOTSRANGE', '0', '16383'),
            ('CLUSTER', 'SET-CONFIG-EPOCH', '3'),
        ]
    )
    pair2.wait_ok()
    pair2.assert_same(
        [
            ('SET', 'k', 'v'),
            ('CLUSTER', 'RESET'),
            ('CLUSTER', 'RESET', 'HARD'),
            ('CLUSTER', 'FLUSHSLOTS'),
            ('DEL', 'k'),
            ('CLUSTER', 'RESET', 'SOFT'),
            ('CLUSTER', 'INFO'),
            ('CLUSTER', 'NODES'),
        ]
    )
    before = pair2.ids()
    pair2.assert_same([('CLUSTER', 'RESET', 'HARD'), ('CLUSTER', 'INFO')])
    after = pair2.ids()
    assert all(a != b for a, b in zip(before, after))


# -- in process: a second node in the table ---------------------------------------------------


@pytest.fixture
def node(tmp_path):
    """Our cluster node (in process) with a second node in its table: slots 0-8191 are
    ours, 8192-16383 OTHER's (127.0.0.1:7001, hostname host-b), the cluster ok. Nothing
    listens at OTHER's address: only the redirections to it are tested."""
    srv = EmbeddedServer(
        cluster_enabled=True, dir=str(tmp_path), cluster_port=free_port(), save=''
    ).start()

    def setup():
        state = srv.server.cluster.state
        other = Node(OTHER, FLAG_MASTER)
        other.ip, other.port, other.cport, other.hostname = '127.0.0.1', 7001, 17001, 'host-b'
        state.add_node(other)
        for slot in range(8192):
            state.add_slot(state.myself, slot)
        for slot in range(8192, 16384):
            state.add_slot(other, slot)
        state.state = 0
        routing.attach(srv.server)  # (blocked clients: until the server does it when built)

    srv.call(setup)
    yield srv
    srv.stop()


def _keys(low, high, n=1, tag=''):
    """`n` keys of one slot in [low, high) (another slot for another `tag`)."""
    for i in range(100000):
        key = f'{{{tag}k{i}}}'.encode()
        if low <= key_slot(key) < high:
            return [key + b'%d' % j for j in range(n)]
    raise AssertionError


# redis-py's exceptions for the cluster's errors, whose codes it strips from the message
_CODES = {
    redis.exceptions.MovedError: 'MOVED',
    redis.exceptions.AskError: 'ASK',
    redis.exceptions.TryAgainError: 'TRYAGAIN',
    redis.exceptions.ClusterDownError: 'CLUSTERDOWN',
    redis.exceptions.ClusterCrossSlotError: 'CROSSSLOT',
}


def _call(client, *args):
    """The reply, or ('error', the error line as sent, without its '-')."""
    try:
        return client.execute_command(*args)
    except redis.ResponseError as e:
        code = _CODES.get(type(e))
        return ('error', f'{code} {e}' if code else str(e))


def test_moved_to_the_owner_by_its_preferred_endpoint(node):
    r = node.client()
    (mine,) = _keys(0, 8192)
    (theirs,) = _keys(8192, 16384)
    slot = key_slot(theirs)
    moved = ('error', f'MOVED {slot} 127.0.0.1:7001')
    assert r.set(mine, 'v')
    assert _call(r, 'GET', theirs) == moved
    assert _call(r, 'SET', theirs, 'x') == moved
    assert _call(r, 'OBJECT', 'ENCODING', theirs) == moved  # a container's subcommand
    assert _call(r, 'MGET', mine, theirs) == ('error', routing.E_CROSSSLOT)
    r.config_set('cluster-preferred-endpoint-type', 'hostname')
    assert _call(r, 'GET', theirs) == ('error', f'MOVED {slot} host-b:7001')
    node.call(lambda: setattr(node.server.cluster.state.nodes[OTHER], 'hostname', ''))
    assert _call(r, 'GET', theirs) == ('error', f'MOVED {slot} ?:7001')
    r.config_set('cluster-preferred-endpoint-type', 'unknown-endpoint')
    assert _call(r, 'GET', theirs) == ('error', f'MOVED {slot} :7001')
    slots = r.execute_command('CLUSTER', 'SLOTS')
    assert slots[1][2] == [None, 7001, OTHER.encode(), {b'ip': b'127.0.0.1'}]
    r.config_set('cluster-preferred-endpoint-type', 'ip')
    slots = r.execute_command('CLUSTER', 'SLOTS')
    assert [s[:2] for s in slots] == [[0, 8191], [8192, 16383]]
    assert slots[1][2] == [b'127.0.0.1', 7001, OTHER.encode(), {}]
    stats = r.info('errorstats')
    assert stats['errorstat_MOVED']['count'] == 6
    assert stats['errorstat_CROSSSLOT']['count'] == 1
    assert r.info('commandstats')['cmdstat_get']['rejected_calls'] == 4
    assert r.info('commandstats')['cmdstat_object|encoding']['rejected_calls'] == 1
    # pipelined: each command its own answer, in order
    with RawConn(node.port) as c:
        c.send(pack('GET', theirs) + pack('GET', mine) + pack('PING'))
        assert c.read_replies(3) == f'-MOVED {slot} 127.0.0.1:7001\r\n$1\r\nv\r\n+PONG\r\n'.encode()


def test_a_transaction_with_a_moved_key_is_aborted(node):
    (theirs,) = _keys(8192, 16384)
    (mine,) = _keys(0, 8192)
    slot = key_slot(theirs)
    with RawConn(node.port) as c:
        c.send(pack('MULTI') + pack('GET', theirs) + pack('EXEC'))
        assert c.read_replies(3) == (
            b'+OK\r\n'
            + f'-MOVED {slot} 127.0.0.1:7001\r\n'.encode()
            + b'-EXECABORT Transaction discarded because of previous errors.\r\n'
        )
        # keys of two slots, each served here: EXEC itself answers CROSSSLOT
        (mine2,) = _keys(0, 8192, tag='z')
        assert key_slot(mine2) != key_slot(mine)
        c.send(pack('MULTI') + pack('SET', mine, '1') + pack('SET', mine2, '2') + pack('EXEC'))
        assert c.read_replies(4) == (
            b'+OK\r\n+QUEUED\r\n+QUEUED\r\n-' + routing.E_CROSSSLOT.encode() + b'\r\n'
        )
        assert c.cmd('EXEC') == b'-ERR EXEC without MULTI\r\n'
        assert c.cmd('MGET', mine, mine2) == b'-' + routing.E_CROSSSLOT.encode() + b'\r\n'


def test_ask_and_tryagain_while_migrating(node):
    r = node.client()
    a, b = _keys(0, 8192, 2)
    slot = key_slot(a)
    ask = ('error', f'ASK {slot} 127.0.0.1:7001')
    assert r.execute_command('CLUSTER', 'SETSLOT', slot, 'MIGRATING', OTHER)
    assert f'[{slot}->-{OTHER}]' in r.execute_command('CLUSTER', 'NODES').decode()
    assert _call(r, 'GET', a) == ask
    assert _call(r, 'MGET', b, b) == ask
    assert _call(r, 'SET', a, 'v') == ask  # (the write of a missing key is asked too)
    node.call(node.server.keyspace.set, 0, a, b'v', None)
    assert r.get(a) == b'v'
    assert _call(r, 'MGET', a, b) == ('error', routing.E_TRYAGAIN)
    assert r.execute_command('CLUSTER', 'COUNTKEYSINSLOT', slot) == 1
    assert _call(r, 'CLUSTER', 'SETSLOT', slot, 'NODE', OTHER) == (
        'error',
        f"Can't assign hashslot {slot} to a different node while I still hold keys for "
        'this hash slot.',
    )
    assert r.execute_command('CLUSTER', 'SETSLOT', slot, 'STABLE')
    assert f'[{slot}->-' not in r.execute_command('CLUSTER', 'NODES').decode()
    assert r.mget(a, b) == [b'v', None]


def test_asking_serves_an_importing_slot_once(node):
    r = node.client()
    a, b = _keys(8192, 16384, 2)
    slot = key_slot(a)
    moved = f'-MOVED {slot} 127.0.0.1:7001\r\n'.encode()
    assert r.execute_command('CLUSTER', 'SETSLOT', slot, 'IMPORTING', OTHER)
    assert f'[{slot}-<-{OTHER}]' in r.execute_command('CLUSTER', 'NODES').decode()
    assert _call(r, 'GET', a) == ('error', moved[1:-2].decode())
    with RawConn(node.port) as c:
        c.send(pack('ASKING') + pack('SET', a, 'v') + pack('GET', a) + pack('ASKING'))
        c.send(pack('GET', a))
        assert c.read_replies(5) == b'+OK\r\n+OK\r\n' + moved + b'+OK\r\n$1\r\nv\r\n'
        # ASKING lasts for a whole transaction; a request of several keys missing some:
        # TRYAGAIN (EXEC too, its transaction discarded); RESTORE-ASKING needs no ASKING
        c.send(pack('ASKING') + pack('MULTI') + pack('GET', a) + pack('GET', a) + pack('EXEC'))
        want = b'+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n$1\r\nv\r\n$1\r\nv\r\n'
        assert c.read_replies(5) == want
        c.send(pack('ASKING') + pack('MULTI') + pack('GET', a) + pack('GET', b) + pack('EXEC'))
        assert c.read_replies(5) == (
            b'+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n-' + routing.E_TRYAGAIN.encode() + b'\r\n'
        )
        assert c.cmd('EXEC') == b'-ERR EXEC without MULTI\r\n'
        c.send(pack('ASKING') + pack('MGET', a, b) + pack('RESTORE-ASKING', b, '0', 'x'))
        assert c.read_replies(2) == b'+OK\r\n-' + routing.E_TRYAGAIN.encode() + b'\r\n'
        assert c.read_reply().startswith(b'-ERR DUMP payload')
        c.send(pack('ASKING') + pack('RESET') + pack('GET', a))
        assert c.read_replies(3) == b'+OK\r\n+RESET\r\n' + moved
    # SETSLOT NODE to myself closes the import with a new config epoch
    me = r.execute_command('CLUSTER', 'MYID')
    assert r.execute_command('CLUSTER', 'SETSLOT', slot, 'NODE', me)
    assert r.get(a) == b'v'
    info = r.execute_command('CLUSTER', 'INFO').decode()
    assert 'cluster_my_epoch:1\r\n' in info and 'cluster_current_epoch:1\r\n' in info
    assert f'[{slot}-<-' not in r.execute_command('CLUSTER', 'NODES').decode()


def test_readonly_replica_serves_its_masters_reads(node):
    """A replica (made one by hand: no replication) serves a READONLY client the reads of
    its master's slots, redirects its writes, and READWRITE ends that."""

    def make_replica():
        state = node.server.cluster.state
        me, other = state.myself, state.nodes[OTHER]
        for slot in range(8192):
            state.del_slot(slot)
        me.flags = (me.flags & ~FLAG_MASTER) | FLAG_SLAVE
        me.master = other
        add_replica(other, me)

    node.call(make_replica)
    r = node.client()
    (a,) = _keys(8192, 16384)
    slot = key_slot(a)
    moved = ('error', f'MOVED {slot} 127.0.0.1:7001')
    assert _call(r, 'GET', a) == moved
    assert r.execute_command('READONLY')
    assert r.get(a) is None
    assert b' flags=r ' in r.execute_command('CLIENT', 'LIST')
    assert _call(r, 'SET', a, 'x') == moved
    assert r.eval("return redis.call('get', KEYS[1])", 1, a) is None
    assert r.execute_command('SPUBLISH', a, 'm') == 0
    assert r.execute_command('READWRITE')
    assert _call(r, 'GET', a) == moved
    assert r.execute_command('SPUBLISH', a, 'm') == 0  # shard pub/sub: no READONLY needed
    assert r.execute_command('CLUSTER', 'SLOTS') == [
        # the replica (myself) has replicated nothing yet: not listed
        [8192, 16383, [b'127.0.0.1', 7001, OTHER.encode(), {b'hostname': b'host-b'}]]
    ]
    shards = r.execute_command('CLUSTER', 'SHARDS')
    (shard,) = [s for s in shards if s[b'slots']]
    assert [n[b'role'] for n in shard[b'nodes']] == [b'master', b'replica']
    assert shard[b'nodes'][1][b'health'] == b'loading'
    assert _call(r, 'CLUSTER', 'FORGET', OTHER) == ('error', "Can't forget my master!")
    assert _call(r, 'CLUSTER', 'SETSLOT', '1', 'STABLE') == (
        'error',
        'Please use SETSLOT only with masters.',
    )
    assert _call(r, 'CLUSTER', 'FAILOVER') == (
        'error',
        'Master is down or failed, please use CLUSTER FAILOVER FORCE',
    )
    assert _call(r, 'CLUSTER', 'REPLICAS', r.execute_command('CLUSTER', 'MYID')) == (
        'error',
        'The specified node is not a master',
    )
    replicas = r.execute_command('CLUSTER', 'REPLICAS', OTHER)
    assert len(replicas) == 1 and b' myself,slave ' + OTHER.encode() in replicas[0]
    info = r.execute_command('CLUSTER', 'INFO').decode()
    assert 'cluster_my_epoch:0\r\n' in info


def test_scripts_touch_only_local_keys(node):
    r = node.client()
    (mine,) = _keys(0, 8192)
    (theirs,) = _keys(8192, 16384)
    assert _call(r, 'EVAL', "return redis.call('get', KEYS[1])", '1', theirs) == (
        'error',
        f'MOVED {key_slot(theirs)} 127.0.0.1:7001',
    )
    errors = r.info('errorstats')['errorstat_ERR']['count']  # (redis-py's CLIENT SETINFO)
    script = f"return redis.pcall('get', '{theirs.decode()}')"
    assert _call(r, 'EVAL', script, '0') == (
        'error',
        'Script attempted to access a non local key in a cluster node',
    )
    err = _call(r, 'EVAL', script.replace('pcall', 'call'), '0')
    assert err[1].startswith(
        'Script attempted to access a non local key in a cluster node script: '
    )
    assert r.eval(f"return redis.call('get', '{mine.decode()}')", 0) is None
    assert r.info('errorstats')['errorstat_ERR']['count'] == errors + 2  # once each
    assert r.info('commandstats')['cmdstat_get']['rejected_calls'] == 2
    assert r.info('commandstats')['cmdstat_eval']['rejected_calls'] == 1  # the MOVED


def test_blocked_client_is_redirected_when_its_slot_moves(node):
    r = node.client()
    got = []

    def block(key):
        c = node.client()
        got.append(_call(c, 'BLPOP', key, '0'))
        c.close()

    (a,) = _keys(0, 8192)
    slot = key_slot(a)
    t = threading.Thread(target=block, args=(a,))
    t.start()
    wait_until(lambda: r.info('clients')['blocked_clients'] == 1)
    assert r.execute_command('CLUSTER', 'SETSLOT', slot, 'NODE', OTHER)
    t.join(WAIT)
    assert got == [('error', f'MOVED {slot} 127.0.0.1:7001')]
    (b,) = _keys(0, 8192, tag='x')
    t = threading.Thread(target=block, args=(b,))
    t.start()
    wait_until(lambda: r.info('clients')['blocked_clients'] == 1)
    node.call(setattr, node.server.cluster.state, 'state', 1)
    t.join(WAIT)
    assert got[1] == ('error', 'CLUSTERDOWN The cluster is down')


def _ssub_frame(kind, channel, count):
    return b'*3\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n:%d\r\n' % (
        len(kind),
        kind,
        len(channel),
        channel,
        count,
    )


def test_shard_subscribers_leave_with_their_slot(node):
    """SSUBSCRIBE / SPUBLISH are routed by the channel's slot; a slot this node stops
    serving takes its shard channels' subscribers with it: a sunsubscribe push for each,
    channels in byte order, after the messages already sent."""
    r = node.client()
    mine, mine2 = _keys(0, 8192, 2)  # one slot
    (other_slot,) = _keys(0, 8192, tag='o')
    (theirs,) = _keys(8192, 16384)
    slot = key_slot(mine)
    with RawConn(node.port) as c:
        moved = f'-MOVED {key_slot(theirs)} 127.0.0.1:7001\r\n'.encode()
        assert c.cmd('SSUBSCRIBE', theirs) == moved
        assert (
            c.cmd('SSUBSCRIBE', mine, other_slot) == b'-' + routing.E_CROSSSLOT.encode() + b'\r\n'
        )
        c.send(pack('SSUBSCRIBE', mine2, mine) + pack('SSUBSCRIBE', other_slot))
        assert c.read_replies(3) == (
            _ssub_frame(b'ssubscribe', mine2, 1)
            + _ssub_frame(b'ssubscribe', mine, 2)
            + _ssub_frame(b'ssubscribe', other_slot, 3)
        )
        assert r.execute_command('SPUBLISH', mine, 'hi') == 1
        assert _call(r, 'SPUBLISH', theirs, 'hi') == ('error', moved[1:-2].decode())
        assert r.execute_command('CLUSTER', 'SETSLOT', slot, 'NODE', OTHER)
        assert c.sync() == (
            b'*3\r\n$8\r\nsmessage\r\n$%d\r\n%s\r\n$2\r\nhi\r\n' % (len(mine), mine)
            + _ssub_frame(b'sunsubscribe', mine, 2)
            + _ssub_frame(b'sunsubscribe', mine2, 1)
            + b'*2\r\n$4\r\npong\r\n$5\r\nsync1\r\n'  # (still subscribed to one)
        )
        assert r.execute_command('PUBSUB', 'SHARDCHANNELS') == [other_slot]
        assert r.execute_command('CLUSTER', 'DELSLOTS', key_slot(other_slot))
        assert c.sync() == _ssub_frame(b'sunsubscribe', other_slot, 0) + b'$5\r\nsync2\r\n'
        assert r.execute_command('PUBSUB', 'SHARDCHANNELS') == []
        assert c.cmd('PING') == b'+PONG\r\n'  # out of subscribe mode


def test_standalone_keeps_cluster_support_disabled(server):
    r = server.client()
    for cmd in (('CLUSTER', 'INFO'), ('CLUSTER', 'HELP'), ('READONLY',), ('ASKING',)):
        assert _call(r, *cmd) == ('error', 'This instance has cluster support disabled')
    assert r.execute_command('SELECT', '1') and r.execute_command('SELECT', '0')


def test_keys_in_a_slot(node):
    r = node.client()
    keys = _keys(0, 8192, 5)
    slot = key_slot(keys[0])
    for k in keys:
        r.set(k, 'v')
    assert r.execute_command('CLUSTER', 'COUNTKEYSINSLOT', slot) == 5
    assert sorted(r.execute_command('CLUSTER', 'GETKEYSINSLOT', slot, 10)) == sorted(keys)
    assert len(r.execute_command('CLUSTER', 'GETKEYSINSLOT', slot, 3)) == 3
    assert _call(r, 'CLUSTER', 'FLUSHSLOTS') == (
        'error',
        'DB must be empty to perform CLUSTER FLUSHSLOTS.',
    )
    assert _call(r, 'CLUSTER', 'REPLICATE', OTHER) == (
        'error',
        'To set a master the node must be empty and without assigned slots.',
    )


# -- a mixed cluster: our nodes and redis-server's ---------------------------------------------


@pytest.mark.slow
def test_a_mixed_cluster_agrees_on_its_topology_and_redirects_alike(tmp_path):
    """Three masters and their replicas, ours and redis-server's alternately (formed by
    redis-cli --cluster create): every node gives the same CLUSTER SLOTS and SHARDS
    (but for the offsets and health, which move), the same replicas per master, a link
    each way with every other node, and the same answer to a key (a value, or the same
    -MOVED); a READONLY client of a replica reads its master's keys there; a cluster
    client (redis-py's RedisCluster) writes and reads keys of every slot through any
    node."""
    from cluster_nodes import start_cluster

    kinds = ['ours', 'redis'] * 3
    # (the default node timeout: a shorter one lets a busy machine flag nodes PFAIL,
    # and CLUSTER SLOTS leaves out failed replicas)
    with start_cluster(kinds, 1, tmp_path) as cluster:
        masters = [n for n in cluster.nodes if n.role == 'master']
        keys = ['foo', 'bar', 'hello', '{user}:1']
        seen = []
        for n in cluster.nodes:
            r = redis.Redis('127.0.0.1', n.port)
            shards = sorted(
                (
                    tuple(s[b'slots']),
                    tuple(
                        tuple(kv for kv in node.items() if kv[0] not in _MOVING)
                        for node in s[b'nodes']
                    ),
                )
                for s in r.execute_command('CLUSTER', 'SHARDS')
            )
            slots = r.execute_command('CLUSTER', 'SLOTS')
            replicas = [len(r.execute_command('CLUSTER', 'REPLICAS', m.name)) for m in masters]
            # a link each way with every other node (one may be being made again)
            wait_until(
                lambda r=r: (
                    len(r.execute_command('CLUSTER', 'LINKS')) == 2 * (len(cluster.nodes) - 1)
                ),
                f'the links of a node of kind {n.kind}',
            )
            answers = [_call(r, 'GET', k) for k in keys] if n.role == 'master' else None
            seen.append((shards, [s[:3] for s in slots], replicas))
            if answers is not None:
                for k, a in zip(keys, answers):
                    assert a is None or a[1].startswith(f'MOVED {key_slot(k.encode())} ')
            r.close()
        assert all(s == seen[0] for s in seen), [n.kind for n in cluster.nodes]
        for n in cluster.nodes:
            if n.role != 'slave':
                continue
            r = redis.Redis('127.0.0.1', n.port)
            master = next(m for m in masters if m.name == n.master)
            mine = [k for k in keys if _owner(r, k) == master.name]
            assert _call(r, 'GET', mine[0])[1].startswith('MOVED') if mine else True
            r.execute_command('READONLY')
            for k in keys:
                got = _call(r, 'GET', k)
                assert (got is None) == (k in mine), (n.kind, k, got)
            r.close()
        rc = redis.cluster.RedisCluster('127.0.0.1', masters[0].port)
        for i in range(200):
            rc.set(f'key:{i}', i)
        assert [rc.get(f'key:{i}') for i in range(200)] == [b'%d' % i for i in range(200)]
        rc.close()


_MOVING = (b'replication-offset', b'health')


def _owner(r, key):
    """The id of the master serving `key`, by CLUSTER SLOTS."""
    slot = key_slot(key.encode())
    for first, last, master, *_ in r.execute_command('CLUSTER', 'SLOTS'):
        if first <= slot <= last:
            return master[2].decode()
    return None
