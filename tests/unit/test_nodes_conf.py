"""store/cluster/nodes_conf.py: nodes.conf as redis-server 7.0.15 reads, writes and locks it.

- Round trips: random tables (roles, flags, addresses with and without hostnames, slot
  ranges, open slots, epochs up to 2**64-1) saved then loaded give the same table and the
  same text.
- Files written by the real redis-server 7.0.15: a cluster of Debian's redis-server
  (tests/cluster_nodes.py) with replicas, hostnames, open slots and a failed node; each
  node's nodes.conf loads into the table that node showed in CLUSTER NODES, and saving it
  again gives redis-server's file back, but for what legitimately differs (see
  `comparable`).
- clusterLoadConfig's details: blank and padding lines, the old address form without a
  bus port, C number parsing, what is corrupt (with Redis's messages) and what is only
  logged.
- Saving: atomic (no temporary file left, the old file kept on failure), and the lock
  refusing a second holder, in this process or another, across saves.
"""

import fcntl
import os
import subprocess
import sys
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_nodes import parse_nodes, start_cluster
from conftest import WAIT, stop, wait_until
from store.cluster import nodes_conf
from store.cluster.messages import SLOTS
from store.cluster.node import (
    FLAG_FAIL,
    FLAG_HANDSHAKE,
    FLAG_MASTER,
    FLAG_MIGRATE_TO,
    FLAG_MYSELF,
    FLAG_NOADDR,
    FLAG_NOFAILOVER,
    FLAG_PFAIL,
    FLAG_SLAVE,
    Node,
    flags_text,
)
from store.cluster.nodes_conf import ConfigPanic, CorruptConfig, LockError
from store.cluster.state import TODO_FSYNC_CONFIG, TODO_SAVE_CONFIG, ClusterState, add_replica

SETTINGS = settings(max_examples=60, deadline=None, database=None)

A = 'a' * 40
B = 'b' * 40
C = 'c' * 40
D = '0123456789abcdefghijklmnopqrstuvwxyz0123'


class Host:
    """ClusterHost: keeps the log."""

    def __init__(self):
        self.logs = []

    def log(self, msg, level='*'):
        self.logs.append((level, msg))

    def count_keys_in_slot(self, slot):
        return 0

    def delete_keys_in_slot(self, slot):
        return 0

    def remove_channels_in_slot(self, slot):
        pass

    def set_master(self, ip, port):
        pass


def fresh():
    return ClusterState(Host(), 15000)


def load_text(text, tmp_path, name='nodes.conf'):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    state = fresh()
    assert nodes_conf.load(str(path), state)
    return state


def ranges(node):
    return node.slot_ranges()


# -- round trips ---------------------------------------------------------------------------

names = st.text('0123456789abcdefghijklmnopqrstuvwxyz', min_size=40, max_size=40)
hostnames = st.one_of(st.just(''), st.text('abcxyz0123456789.-', min_size=1, max_size=20))
epochs = st.one_of(st.integers(0, 20), st.integers(0, 2**64 - 1))


@st.composite
def tables(draw):
    """A ClusterState as a node's table may be: myself and up to 7 others."""
    n = draw(st.integers(1, 8))
    ids = draw(st.lists(names, min_size=n, max_size=n, unique=True))
    state = fresh()
    del state.nodes[state.myself.name]
    nodes = []
    for name in ids:
        flags = draw(st.sampled_from([FLAG_MASTER, FLAG_SLAVE, 0]))
        for extra in (FLAG_PFAIL, FLAG_FAIL, FLAG_NOADDR, FLAG_NOFAILOVER, FLAG_HANDSHAKE):
            if draw(st.integers(0, 5)) == 0:
                flags |= extra
        node = Node(name, flags)
        node.ip = draw(st.sampled_from(['127.0.0.1', '10.1.2.3', '::1', '']))
        node.port = draw(st.integers(0, 65535))
        node.cport = draw(st.integers(0, 65535))
        node.hostname = draw(hostnames)
        node.config_epoch = draw(epochs)
        state.add_node(node)
        nodes.append(node)
    me = nodes[draw(st.integers(0, n - 1))]
    me.flags = (me.flags | FLAG_MYSELF) & ~FLAG_HANDSHAKE
    state.myself = me
    # nodes in handshake are not written: nothing else may name them
    named = [x for x in nodes if not x.in_handshake]
    for node in named:
        if node.is_replica and draw(st.booleans()):
            master = draw(st.sampled_from(named))
            if master is not node:
                node.master = master
                add_replica(master, node)
                node.config_epoch = 0  # loading gives a replica with a master epoch 0
    for _ in range(draw(st.integers(0, 8))):
        owner = draw(st.sampled_from(named))
        first = draw(st.integers(0, SLOTS - 1))
        last = min(SLOTS - 1, first + draw(st.integers(0, 6000)))
        for slot in range(first, last + 1):
            state.add_slot(owner, slot)
    for _ in range(draw(st.integers(0, 4))):
        slot = draw(st.integers(0, SLOTS - 1))
        target = draw(st.sampled_from(named))
        if draw(st.booleans()):
            state.migrating_to[slot] = target
            state.importing_from[slot] = None  # the file shows one mark per slot
        elif state.migrating_to[slot] is None:  # a migrating mark hides an importing one
            state.importing_from[slot] = target
    state.current_epoch = draw(epochs)
    state.last_vote_epoch = draw(epochs)
    return state


def table(state):
    """Everything load restores. MIGRATE_TO is left out: Redis derives it while loading
    (a master gets it with a replica, or with its first slot once masters have
    replicas), so it depends on the order the table was built in."""
    nodes = {
        name: (
            n.flags & ~FLAG_MIGRATE_TO,
            n.ip,
            n.port,
            n.cport,
            n.hostname,
            n.master.name if n.master else None,
            sorted(r.name for r in n.replicas),
            n.config_epoch,
            bytes(n.slots),
            n.numslots,
        )
        for name, n in state.nodes.items()
    }
    return (
        list(state.nodes),
        nodes,
        state.myself.name,
        [n.name if n else None for n in state.slots],
        [n.name if n else None for n in state.migrating_to],
        [n.name if n else None for n in state.importing_from],
        state.current_epoch,
        state.last_vote_epoch,
    )


@SETTINGS
@given(tables())
def test_round_trip(state):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, 'nodes.conf')
        nodes_conf.save(path, state, fsync=False)
        with open(path, encoding='utf-8') as f:
            written = f.read()
        assert written == nodes_conf.text(state)
        assert os.listdir(d) == ['nodes.conf']
        loaded = fresh()
        assert nodes_conf.load(path, loaded)

    # what the saved table becomes: handshake nodes left out, the current epoch raised
    for name in [n.name for n in state.nodes.values() if n.in_handshake]:
        del state.nodes[name]
    state.current_epoch = max(state.current_epoch, state.max_epoch())
    assert table(loaded) == table(state)
    assert loaded.describe_nodes() == state.describe_nodes()
    assert nodes_conf.text(loaded) == nodes_conf.text(state)


# -- files written by redis-server 7.0.15 --------------------------------------------------


def comparable(text):
    """A nodes.conf with what may differ between redis-server's file and ours blanked:
    - the newline padding Redis 7.0 leaves when a rewrite is shorter (we write a new file
      and never pad);
    - ping sent and pong received: times, which loading turns into "now" when nonzero;
    - connected/disconnected: whether a link to the node is up, which a freshly loaded
      table has for none but myself."""
    lines = []
    for line in text.rstrip('\n').split('\n'):
        f = line.split(' ')
        if f[0] != 'vars':
            f[4] = f[5] = '<time>'
            f[7] = '<link>'
        lines.append(' '.join(f))
    return lines


@pytest.mark.slow  # a cluster of 6 redis-servers, a failure detection: about 10 s
@pytest.mark.differential
def test_files_written_by_redis(tmp_path):
    with start_cluster(['redis'] * 6, 1, tmp_path / 'cluster', node_timeout=3000) as c:
        nodes = c.nodes
        # hostnames: each node's line in every table gets ',<hostname>'
        for i, node in enumerate(nodes):
            node.call('CONFIG', 'SET', 'cluster-announce-hostname', f'node-{i}.example')
        want = {n.name: f',node-{i}.example' for i, n in enumerate(nodes)}

        def hostnames_known():
            for node in nodes:
                view = parse_nodes(node.call('CLUSTER', 'NODES'))
                if any(not view[name]['addr'].endswith(h) for name, h in want.items()):
                    return False
            return True

        wait_until(hostnames_known, 'every node knowing every hostname')
        # open slots: the first master migrates two slots, the others import them
        a, b, m3 = c.masters
        assert a.call('CLUSTER', 'SETSLOT', '100', 'MIGRATING', b.name) == 'OK'
        assert a.call('CLUSTER', 'SETSLOT', '101', 'MIGRATING', m3.name) == 'OK'
        assert b.call('CLUSTER', 'SETSLOT', '100', 'IMPORTING', a.name) == 'OK'
        assert m3.call('CLUSTER', 'SETSLOT', '101', 'IMPORTING', a.name) == 'OK'
        # the hostnames reached the tables by gossip, which does not save: save now
        views = {}
        infos = {}
        for node in nodes:
            assert node.call('CLUSTER', 'SAVECONFIG') == 'OK'
            views[node.name] = parse_nodes(node.call('CLUSTER', 'NODES'))
            infos[node.name] = node.call('CLUSTER', 'INFO')
        # a replica stops: the others mark it failed, and save that
        victim = c.replicas[0]
        stop(victim.proc)
        others = [n for n in nodes if n is not victim]
        wait_until(
            lambda: all(
                'fail' in parse_nodes(n.call('CLUSTER', 'NODES'))[victim.name]['flags']
                for n in others
            ),
            'every node marking the stopped replica failed',
        )
        for node in others:
            assert node.call('CLUSTER', 'SAVECONFIG') == 'OK'
            views[node.name] = parse_nodes(node.call('CLUSTER', 'NODES'))
            infos[node.name] = node.call('CLUSTER', 'INFO')
    assert all(n.proc.poll() is not None for n in nodes)

    seen = {'hostname': 0, 'migrating': 0, 'importing': 0, 'fail': 0, 'slave': 0}
    for node in nodes:
        path = node.config_file
        redis_text = path.read_text()
        state = fresh()
        assert nodes_conf.load(str(path), state)
        assert state.host.logs == []
        view = views[node.name]
        assert state.myself.name == node.name
        assert set(state.nodes) == set(view)
        for name, live in view.items():
            n = state.nodes[name]
            assert set(flags_text(n.flags).split(',')) == live['flags'], name
            ip, _, rest = live['addr'].rpartition(':')
            port, _, rest = rest.partition('@')
            cport, _, hostname = rest.partition(',')
            assert (n.ip, n.port, n.cport, n.hostname) == (ip, int(port), int(cport), hostname)
            assert (n.master.name if n.master else None) == live['master']
            epoch = n.master.config_epoch if n.is_replica and n.master else n.config_epoch
            assert epoch == live['epoch']
            assert n.config_epoch == (0 if n.is_replica and n.master else live['epoch'])
            assert [f'{x}-{y}' if x != y else f'{x}' for x, y in ranges(n)] == live['slots']
            if n is state.myself:
                assert state.open_slot_marks().split() == live['marks']
            seen['hostname'] += bool(n.hostname)
            seen['fail'] += n.failed
            seen['slave'] += n.is_replica
        for slot, owner in enumerate(state.slots):
            assert owner is not None and owner.has_slot(slot)
        for master in state.nodes.values():
            assert sorted(r.name for r in master.replicas) == sorted(
                name for name, live in view.items() if live['master'] == master.name
            )
        seen['migrating'] += sum(x is not None for x in state.migrating_to)
        seen['importing'] += sum(x is not None for x in state.importing_from)
        info = dict(line.split(':') for line in infos[node.name].split())
        assert state.current_epoch == int(info['cluster_current_epoch'])
        assert state.myself.config_epoch == (
            0 if state.myself.is_replica else int(info['cluster_my_epoch'])
        )
        assert redis_text.rstrip('\n').endswith(
            f'vars currentEpoch {state.current_epoch} lastVoteEpoch {state.last_vote_epoch}'
        )

        ours = tmp_path / f'ours-{node.port}.conf'
        nodes_conf.save(str(ours), state, fsync=True)
        assert comparable(ours.read_text()) == comparable(redis_text)
    # every feature did show up in the files
    assert seen['hostname'] == 36 and seen['slave'] == 18 and seen['fail'] == 5
    assert seen['migrating'] == 2 and seen['importing'] == 2


# -- clusterLoadConfig's details -----------------------------------------------------------


def test_missing_or_empty_file(tmp_path):
    state = fresh()
    placeholder = state.myself
    assert not nodes_conf.load(str(tmp_path / 'nope.conf'), state)
    (tmp_path / 'empty.conf').write_bytes(b'')
    assert not nodes_conf.load(str(tmp_path / 'empty.conf'), state)
    assert state.myself is placeholder and list(state.nodes) == [placeholder.name]


def test_every_field(tmp_path):
    lines = [
        '',
        f'{B} 10.0.0.2:7001@17001,b.example master,fail - 1700000000000 1700000000001 7'
        ' connected 0-99 200 16383',
        f'{A} 10.0.0.1:7000@17000 myself,slave {B} 0 0 7 connected [5->-{C}] [6-<-{B}]',
        f'{C} :0@0 noaddr,nofailover,fail?,master - 0 0 3 disconnected',
        f'{D} 10.0.0.4:7003 noflags - 0 0 2 disconnected 300-301',
        'VARS currentEpoch 5 lastVoteEpoch 4 someday 1',
        '\n\n\n',  # Redis 7.0's padding after a shorter rewrite
    ]
    text = '\n'.join(lines)
    state = load_text(text, tmp_path)
    a, b, c, d = (state.nodes[x] for x in (A, B, C, D))
    assert list(state.nodes) == [B, A, C, D]  # the file's order
    assert state.myself is a and a.flags & FLAG_MYSELF
    assert a.is_replica and a.master is b and b.replicas == [a]
    assert a.config_epoch == 0  # a replica's epoch is its master's
    assert (b.ip, b.port, b.cport, b.hostname) == ('10.0.0.2', 7001, 17001, 'b.example')
    assert b.failed and b.fail_time > 0 and b.ping_sent > 1700000000001  # "now"
    assert b.pong_received > 1700000000001 and b.config_epoch == 7
    assert ranges(b) == [(0, 99), (200, 200), (16383, 16383)] and b.numslots == 102
    assert state.slots[200] is b and state.slots[100] is None
    assert state.migrating_to[5] is c and state.importing_from[6] is b
    assert c.flags == FLAG_NOADDR | FLAG_NOFAILOVER | FLAG_PFAIL | FLAG_MASTER
    assert (c.ip, c.port, c.cport) == ('', 0, 0)
    # noflags; MIGRATE_TO from its first slot, as masters have replicas (B has A)
    assert d.flags == FLAG_MIGRATE_TO and d.cport == 17003  # no @busport: the port + 10000
    assert ranges(d) == [(300, 301)]
    # vars: any case; unknown ones logged and skipped; currentEpoch raised to the max
    assert state.last_vote_epoch == 4 and state.current_epoch == 7
    assert state.host.logs == [('#', "Skipping unknown cluster config variable 'someday'")]
    assert nodes_conf.text(state).splitlines()[1] == (
        f'{A} 10.0.0.1:7000@17000 myself,slave {B} 0 0 7 connected [5->-{C}] [6-<-{B}]'
    )


def test_nodes_named_before_their_line(tmp_path):
    """A master or a migration target named before its own line (or never given one)
    exists, with no flags, from the first mention."""
    text = f'{A} 1.1.1.1:1@2 myself,slave {B} 0 0 0 connected [7->-{C}]\nvars currentEpoch 0\n'
    state = load_text(text, tmp_path)
    assert list(state.nodes) == [A, B, C]
    assert state.nodes[B].flags & ~FLAG_MIGRATE_TO == 0 and state.nodes[B].replicas
    assert nodes_conf.text(state).splitlines()[1].startswith(f'{B} :0@0 noflags - 0 0 0')


def test_c_number_parsing(tmp_path):
    """atoi and strtoull as C has them: leading digits only, '-1' an unsigned wrap, a
    slot '-1' a range from 0 (atoi('') is 0), a '[' mark's direction anything but '>'
    meaning importing, a later line's claim on a taken slot ignored."""
    text = (
        f'{A} 1.2.3.4:30001x@40001y myself,master - 0 x -1 connected -1 5-3 9\n'
        f'{B} 1.2.3.5:1@2 master - 0 0 18446744073709551616 connected 9-10 [11-?-{A}]\n'
    )
    state = load_text(text, tmp_path)
    a, b = state.nodes[A], state.nodes[B]
    assert (a.ip, a.port, a.cport) == ('1.2.3.4', 30001, 40001)
    assert a.pong_received == 0  # atoi('x') is 0
    assert a.config_epoch == 2**64 - 1 and b.config_epoch == 2**64 - 1  # saturated
    assert ranges(a) == [(0, 1), (9, 9)]  # '5-3' adds nothing
    assert ranges(b) == [(10, 10)]
    assert state.importing_from[11] is a
    assert state.current_epoch == 2**64 - 1


def test_quoted_arguments(tmp_path):
    """Lines are split by sdssplitargs: quotes and escapes, as in redis.conf."""
    text = f'"{A}" \'1.2.3.4:1@2,h\\x41\' "myself,master" - 0 0 1 connected "0-5"\n'
    state = load_text(text, tmp_path)
    assert state.myself.name == A and state.myself.hostname == 'h\\x41'  # '': no escapes
    assert ranges(state.myself) == [(0, 5)]
    text = f'{A} 1.2.3.4:1@2,"h\\x41" myself,master - 0 0 1 connected\n'
    assert load_text(text, tmp_path).myself.hostname == 'hA'  # a quote mid-word opens
    text = f'{A} 1.2.3.4:1@2 "myself,master"x - 0 0 1 connected\n'
    with pytest.raises(CorruptConfig):  # a closing quote must end the argument
        load_text(text, tmp_path)


GOOD = f'{A} 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-16383\n'
CORRUPT_FILES = {
    'short node id': GOOD.replace(A, A[:39]),
    'upper-case node id': GOOD.replace(A, 'A' * 40),
    'bad master id': GOOD.replace('master -', 'slave ' + 'x' * 39),
    'slot past the end': GOOD.replace('0-16383', '0-16384'),
    'negative slot': GOOD.replace('0-16383', '5--1'),
    'no port': GOOD.replace('127.0.0.1:7000@17000', '127.0.0.1'),
    'seven fields': f'{A} 127.0.0.1:7000@17000 myself,master - 0 0 1\n',
    'unbalanced quotes': GOOD.replace('0-16383', '"0-16383'),
    'blanks only': GOOD + '   \n',
    'missing myself': GOOD.replace('myself,master', 'master'),
    'odd vars': GOOD + 'vars currentEpoch 1 lastVoteEpoch\n',
    'open slot past the end': GOOD.replace('0-16383', f'[16384->-{B}]'),
    'open slot, bad name': GOOD.replace('0-16383', f'[5->-{B[:39]}]'),
    'open slot, no bracket': GOOD.replace('0-16383', f'[5->-{B}'),
}


@pytest.mark.parametrize('name', CORRUPT_FILES)
def test_corrupt(tmp_path, name):
    with pytest.raises(CorruptConfig) as e:
        load_text(CORRUPT_FILES[name], tmp_path)
    assert type(e.value) is CorruptConfig
    assert str(e.value) == 'Unrecoverable error: corrupted cluster config file.'


PANICS = {
    'unknown flag': (
        GOOD.replace('myself,master', 'myself,primary'),
        'Unknown flag in redis cluster config file',
    ),
    'empty flag': (GOOD.replace('myself,master', 'myself,'), 'Unknown flag'),
    'two myself': (GOOD + GOOD.replace(A, B), "'server.cluster->myself == NULL' is not true"),
    'open slot without a dash': (GOOD.replace('0-16383', '[5]'), "'p != NULL' is not true"),
}


@pytest.mark.parametrize('name', PANICS)
def test_panics(tmp_path, name):
    """serverPanic and serverAssert: Redis crashes with a bug report; here a CorruptConfig
    too (the caller exits either way), with the panic's text."""
    text, message = PANICS[name]
    with pytest.raises(ConfigPanic, match=message) as e:
        load_text(text, tmp_path)
    assert e.value.where.startswith('cluster.c:')


def test_unknown_vars_are_logged(tmp_path):
    state = load_text(GOOD + 'vars x 1 currentepoch 9 y 2\n', tmp_path)
    assert state.current_epoch == 9
    assert state.host.logs == [
        ('#', "Skipping unknown cluster config variable 'x'"),
        ('#', "Skipping unknown cluster config variable 'y'"),
    ]


def test_unreadable_file(tmp_path):
    """Any error but ENOENT is fatal: OSError, for the caller to log as Redis does."""
    with pytest.raises(OSError):
        nodes_conf.load(str(tmp_path), fresh())  # a directory


# -- saving --------------------------------------------------------------------------------


def test_save_writes_redis_text(tmp_path):
    state = load_text(GOOD + f'{B} 1.1.1.1:2@3 handshake - 0 0 0 disconnected\n', tmp_path)
    path = tmp_path / 'out.conf'
    state.todo = TODO_SAVE_CONFIG | TODO_FSYNC_CONFIG
    nodes_conf.save(str(path), state, fsync=False)
    assert state.todo == TODO_FSYNC_CONFIG  # saved, not fsynced
    assert path.read_text() == GOOD + 'vars currentEpoch 1 lastVoteEpoch 0\n'
    assert path.stat().st_mode & 0o777 == 0o644 & ~current_umask()
    nodes_conf.save(str(path), state, fsync=True)
    assert state.todo == 0
    assert sorted(os.listdir(tmp_path)) == ['nodes.conf', 'out.conf']


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_save_is_atomic(tmp_path):
    """A failed save leaves the old file and no temporary file."""
    state = load_text(GOOD, tmp_path)
    target = tmp_path / 'dir.conf'
    target.mkdir()
    with pytest.raises(OSError):
        nodes_conf.save(str(target), state, fsync=True)  # rename over a directory fails
    assert sorted(os.listdir(tmp_path)) == ['dir.conf', 'nodes.conf']
    with pytest.raises(OSError):
        nodes_conf.save(str(tmp_path / 'no' / 'nodes.conf'), state, fsync=True)
    # a longer file replaced by a shorter one: no padding, nothing of the old left
    path = tmp_path / 'nodes.conf'
    before = path.stat().st_ino
    path.write_text(GOOD * 50)
    nodes_conf.save(str(path), state, fsync=True)
    assert path.read_text() == GOOD + 'vars currentEpoch 1 lastVoteEpoch 0\n'
    assert path.stat().st_ino != before  # a new file, renamed in


# -- the lock ------------------------------------------------------------------------------

LOCKED = (
    'Sorry, the cluster configuration file {} is already used by a different Redis Cluster '
    'node. Please make sure that different nodes use different cluster configuration files.'
)


def try_lock_elsewhere(path):
    """flock the file from another process, as a second node starting on it would."""
    code = (
        'import fcntl, os, sys\n'
        'fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)\n'
        'try:\n'
        '    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n'
        'except BlockingIOError:\n'
        '    sys.exit(1)\n'
    )
    return subprocess.run([sys.executable, '-c', code, str(path)], timeout=WAIT).returncode == 0


def test_lock(tmp_path):
    path = tmp_path / 'nodes.conf'
    fd = nodes_conf.lock(str(path))
    try:
        assert path.exists() and path.stat().st_size == 0  # created for the lock
        assert not nodes_conf.load(str(path), fresh())
        # a second holder: another open file description in this process, or a process
        with pytest.raises(LockError) as e:
            nodes_conf.lock(str(path))
        assert str(e.value) == LOCKED.format(path)
        assert not try_lock_elsewhere(path)
        # saves put a new file under the name: the lock follows it, on the same fd
        state = load_text(GOOD, tmp_path, 'other.conf')
        for _ in range(3):
            nodes_conf.save(str(path), state, fsync=True)
            assert os.path.samestat(os.fstat(fd), os.stat(path))
            assert not try_lock_elsewhere(path)
            with pytest.raises(LockError):
                nodes_conf.lock(str(path))
        assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
        assert sorted(os.listdir(tmp_path)) == ['nodes.conf', 'other.conf']
    finally:
        nodes_conf.unlock(str(path))
    assert try_lock_elsewhere(path)
    fd = nodes_conf.lock(str(path))
    nodes_conf.unlock(str(path))


def test_lock_errors(tmp_path):
    path = tmp_path / 'missing' / 'nodes.conf'
    with pytest.raises(LockError) as e:
        nodes_conf.lock(str(path))
    assert str(e.value) == (
        f"Can't open {path} in order to acquire a lock: No such file or directory"
    )
