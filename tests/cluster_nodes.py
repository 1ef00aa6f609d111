"""A Redis Cluster of real processes for tests: this server's nodes, Debian's
redis-server's, or a mix.

`start_cluster(kinds, replicas, tmp_path)` starts one process per entry of `kinds`
('ours': `python -m store`; 'redis': /usr/bin/redis-server; the command lines of
conftest's `spawn_store` and `spawn_redis`), each in its own directory under `tmp_path`
(nodes.conf, server.log, stdout.log, data) with `--cluster-enabled yes` and an explicit
`--cluster-port`, then forms the cluster the way an operator does, with the real
`redis-cli --cluster create ... --cluster-replicas N --cluster-yes` (redis-cli picks the
masters and the replicas), and returns once the cluster has settled:

- every node says `cluster_state:ok` in CLUSTER INFO;
- every node's CLUSTER NODES lists every node, none in handshake;
- every node sees the same roles, masters and slot ranges (what `redis-cli --cluster
  check` compares), so a test starts from one agreed configuration.

Every wait polls with a generous bound (conftest's WAIT, a bound for a hang, not a
timing). Client and bus ports are taken from conftest's `free_port`, checked bindable on
127.0.0.1 and distinct from every port already handed out in this process, so two
nodes, or two clusters, never share one; a node that loses its port to another process
between the check and its bind is started again on new ports.

The returned `Cluster` holds the nodes (`ClusterNode`: kind, port, cport, dir, proc,
name, role, master) and stops them with `stop()` (SIGTERM, then SIGKILL after a bound);
it is also a context manager.
"""

import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from conftest import WAIT, free_port, stop, wait_for_port

REDIS_SERVER = '/usr/bin/redis-server'
REDIS_CLI = '/usr/bin/redis-cli'
KINDS = ('ours', 'redis')
CREATE_TIMEOUT = 4 * WAIT  # s: redis-cli waits for the join without a bound of its own
SPAWN_ATTEMPTS = 3

_handed_out: set[int] = set()  # every port given to a node by this process


class ClusterStartError(Exception):
    """The cluster could not be started; the message says where (with the logs)."""


@dataclass
class ClusterNode:
    kind: str  # 'ours' or 'redis'
    port: int
    cport: int
    dir: Path
    proc: subprocess.Popen
    name: str = ''  # its node id (CLUSTER MYID)
    role: str = ''  # 'master' or 'slave', once the cluster has settled
    master: str | None = None  # the master's name, for a replica

    @property
    def config_file(self) -> Path:
        return self.dir / 'nodes.conf'

    @property
    def log_file(self) -> Path:
        return self.dir / 'server.log'

    def client(self, **kw) -> redis.Redis:
        kw.setdefault('decode_responses', True)
        kw.setdefault('socket_timeout', WAIT)
        return redis.Redis(host='127.0.0.1', port=self.port, **kw)

    def call(self, *args):
        """One command on a fresh connection, the reply decoded as text."""
        with self.client() as c:
            return c.execute_command(*args)


@dataclass
class Cluster:
    nodes: list[ClusterNode] = field(default_factory=list)

    @property
    def masters(self) -> list[ClusterNode]:
        return [n for n in self.nodes if n.role == 'master']

    @property
    def replicas(self) -> list[ClusterNode]:
        return [n for n in self.nodes if n.role == 'slave']

    def node(self, name: str) -> ClusterNode:
        return next(n for n in self.nodes if n.name == name)

    def stop(self) -> None:
        for node in self.nodes:  # all at once: none sees another fail before it stops
            if node.proc.poll() is None:
                node.proc.terminate()
        for node in self.nodes:
            stop(node.proc)

    def __enter__(self) -> 'Cluster':
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(('127.0.0.1', port))
        except OSError:
            return False
    return True


def port_pair() -> tuple[int, int]:
    """A client port and a bus port, both free now and never handed out before here."""
    got: list[int] = []
    while len(got) < 2:
        port = free_port()
        if port not in _handed_out and port not in got and bindable(port):
            got.append(port)
    _handed_out.update(got)
    return got[0], got[1]


def parse_nodes(text: str) -> dict[str, dict]:
    """CLUSTER NODES as {name: {addr, flags, master, epoch, link, slots, marks}}."""
    table = {}
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        table[f[0]] = {
            'addr': f[1],
            'flags': set(f[2].split(',')),
            'master': None if f[3] == '-' else f[3],
            'epoch': int(f[6]),
            'link': f[7],
            'slots': [s for s in f[8:] if not s.startswith('[')],
            'marks': [s for s in f[8:] if s.startswith('[')],
        }
    return table


def cluster_info(node: ClusterNode) -> dict[str, str]:
    text = node.call('CLUSTER', 'INFO')
    return dict(line.split(':', 1) for line in text.split() if ':' in line)


def _command(kind: str, port: int, cport: int, d: Path, node_timeout: int) -> list[str]:
    """conftest's spawn_store / spawn_redis command lines, plus the node's cluster
    options; no save points, files in the node's directory."""
    if kind == 'ours':
        head = [sys.executable, '-m', 'store']
    else:
        head = [REDIS_SERVER, '--appendonly', 'no', '--daemonize', 'no']
    return [
        *head,
        '--port',
        str(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--enable-debug-command',
        'yes',
        '--dir',
        str(d),
        '--logfile',
        str(d / 'server.log'),
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        str(d / 'nodes.conf'),
        '--cluster-port',
        str(cport),
        '--cluster-node-timeout',
        str(node_timeout),
    ]


def _spawn(kind: str, where: Path, node_timeout: int) -> ClusterNode:
    """One node, listening on its client and bus ports, in cluster mode. Own Popen
    rather than conftest's spawn_*: a node that fails to come up is stopped here."""
    for attempt in range(SPAWN_ATTEMPTS):
        port, cport = port_pair()
        d = where / f'node-{port}'
        d.mkdir(parents=True)
        with open(d / 'stdout.log', 'wb') as out:
            proc = subprocess.Popen(
                _command(kind, port, cport, d, node_timeout),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        node = ClusterNode(kind, port, cport, d, proc)
        try:
            wait_for_port(port, proc)
            if node.call('INFO', 'cluster').get('cluster_enabled') != 1:
                raise ClusterStartError(f'{kind} node on {port} is not in cluster mode')
            wait_for_port(cport, proc)
        except RuntimeError:  # it exited: most likely a port was taken meanwhile
            stop(proc)
            if attempt < SPAWN_ATTEMPTS - 1:
                continue
            raise ClusterStartError(f'{kind} node on {port} exited:\n{_logs(node)}') from None
        except BaseException:
            stop(proc)
            raise
        return node
    raise AssertionError('unreachable')


def _logs(node: ClusterNode) -> str:
    return ''.join(
        p.read_text(errors='replace')
        for p in (node.dir / 'stdout.log', node.log_file)
        if p.exists()
    )


def _settled(nodes: list[ClusterNode]) -> bool:
    """Every node ok, knowing every node, none in handshake, all views the same."""
    names = {n.name for n in nodes}
    views = []
    for node in nodes:
        try:
            if cluster_info(node).get('cluster_state') != 'ok':
                return False
            table = parse_nodes(node.call('CLUSTER', 'NODES'))
        except redis.RedisError:
            return False
        if set(table) != names or any('handshake' in v['flags'] for v in table.values()):
            return False
        views.append(
            {
                name: (
                    'master' if 'master' in v['flags'] else 'slave',
                    v['master'],
                    tuple(v['slots']),
                )
                for name, v in table.items()
            }
        )
    return all(view == views[0] for view in views)


def start_cluster(kinds: list[str], replicas: int, tmp_path, node_timeout: int = 15000) -> Cluster:
    """Start len(kinds) nodes, form a cluster of len(kinds) // (replicas + 1) masters
    with `replicas` replicas each, and wait until it has settled (see the module)."""
    for kind in kinds:
        assert kind in KINDS, kind
    assert len(kinds) >= 3 * (replicas + 1), 'redis-cli wants at least 3 masters'
    where = Path(tmp_path)
    cluster = Cluster()
    try:
        for kind in kinds:
            cluster.nodes.append(_spawn(kind, where, node_timeout))
        for node in cluster.nodes:
            node.name = node.call('CLUSTER', 'MYID')
        create = subprocess.run(
            [
                REDIS_CLI,
                '--cluster',
                'create',
                *[f'127.0.0.1:{n.port}' for n in cluster.nodes],
                '--cluster-replicas',
                str(replicas),
                '--cluster-yes',
            ],
            capture_output=True,
            text=True,
            timeout=CREATE_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
        if create.returncode != 0 or '[OK] All 16384 slots covered' not in create.stdout:
            raise ClusterStartError(
                f'redis-cli --cluster create failed ({create.returncode}):\n'
                f'{create.stdout}{create.stderr}'
            )
        end = time.monotonic() + WAIT
        while not _settled(cluster.nodes):
            if time.monotonic() > end:
                raise ClusterStartError(f'the cluster did not settle within {WAIT} s')
            time.sleep(0.05)
        for node in cluster.nodes:
            me = parse_nodes(node.call('CLUSTER', 'NODES'))[node.name]
            node.role = 'master' if 'master' in me['flags'] else 'slave'
            node.master = me['master']
    except BaseException:
        cluster.stop()
        raise
    return cluster
