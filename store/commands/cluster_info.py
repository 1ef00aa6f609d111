"""The CLUSTER container and its read-only subcommands (Redis 7.0 cluster.c's
clusterCommand): HELP, INFO, NODES, MYID, SLOTS, SHARDS, LINKS, KEYSLOT, COUNTKEYSINSLOT,
GETKEYSINSLOT, COUNT-FAILURE-REPORTS. The subcommands that change the cluster are in
store/commands/cluster.py, which declares them on this container (and READONLY,
READWRITE, ASKING beside it); the table merges both through that module.

Every subcommand is declared with `subcommand`, which gives a server without cluster
support (`server.cluster` None) Redis's "ERR This instance has cluster support disabled"
for all of them, HELP included, after the container's usual arity and unknown-subcommand
errors. In cluster mode a handler gets the Cluster (store/cluster/service.py) and reads
its state (store/cluster/state.py).

Replies follow clusterCommand exactly: INFO and NODES are verbatim text (a bulk string in
RESP2); SLOTS is one entry per run of slots with one owner (clusterReplyMultiBulkSlots),
its master then its replicas that finished a sync and are not failed, each as [endpoint,
port, id, {other endpoints}]; SHARDS one map per master (its slot runs flattened, then
its nodes with their details); LINKS one map per bus link, a node's outbound link before
its inbound one. Nodes are listed in the table's order (Redis's is its dict's hash order,
which no client relies on). Endpoints are the preferred ones
(cluster-preferred-endpoint-type), ports the plaintext ones for a non-TLS client of a
tls-cluster (store/cluster/routing.py).

Costs: SLOTS, SHARDS and NODES walk the 16384 slots once (a few ms in Python); the rest
are proportional to their reply.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from ..args import int_arg
from ..cluster.messages import SLOTS, TYPE_NAMES
from ..cluster.node import Node, mstime
from ..cluster.routing import client_port, preferred_endpoint, uses_plaintext_port
from ..command_table import Family
from ..context import Client
from ..db_slice import key_slot
from ..resp import Map, RedisError, Verbatim, error_arg, string2ll

if TYPE_CHECKING:
    from ..cluster.service import Cluster

COMMANDS = Family('cluster', since='3.0.0')

E_DISABLED = 'ERR This instance has cluster support disabled'
DISABLED = RedisError(E_DISABLED)

CLUSTER = COMMANDS.container(
    'cluster', -2, categories='@slow', summary='A container for cluster commands'
)

# A subcommand's handler in cluster mode: (client, the cluster, args) -> reply
ClusterHandler = Callable[[Client, 'Cluster', list[bytes]], Any]


def subcommand(
    name: str,
    arity: int,
    flags: str,
    categories: str,
    tips: str,
    since: str,
    summary: str,
) -> Callable[[ClusterHandler], ClusterHandler]:
    """Declare CLUSTER `name` on its handler, as Redis 7.0 declares it (COMMAND INFO and
    DOCS); without cluster support it answers DISABLED."""

    def register(fn: ClusterHandler) -> ClusterHandler:
        def handler(c: Client, args: list[bytes]) -> Any:
            cluster = c.server.cluster
            if cluster is None:
                raise DISABLED
            return fn(c, cluster, args)

        handler.__name__ = handler.__qualname__ = f'cluster_{fn.__name__}'
        CLUSTER.subcommand(
            name,
            arity,
            flags=flags,
            categories=categories,
            tips=tips,
            since=since,
            summary=summary,
        )(handler)
        return fn

    return register


def disabled(c: Client, args: list[bytes]) -> NoReturn:
    raise DISABLED


# -- arguments shared by the subcommands --------------------------------------------------


def slot_arg(b: bytes) -> int:
    """getSlotOrReply."""
    slot = string2ll(b)
    if slot is None or not 0 <= slot < SLOTS:
        raise RedisError('ERR Invalid or out of range slot')
    return slot


def node_arg(cluster: Cluster, b: bytes, error: str = 'ERR Unknown node') -> Node:
    """clusterLookupNode, or `error` followed by the name as given."""
    node = cluster.state.lookup(b) if len(b) == 40 else None
    if node is None:
        raise RedisError(f'{error} {error_arg(b)}')
    return node


def subcommand_syntax_error(args: list[bytes]) -> RedisError:
    """addReplySubcommandSyntaxError: right arity for the table, wrong for the form."""
    return RedisError(
        f"ERR unknown subcommand or wrong number of arguments for "
        f"'{error_arg(args[1], 128)}'. Try CLUSTER HELP."
    )


# -- replication offsets ------------------------------------------------------------------


def replica_offset(server: Any) -> int:
    """replicationGetSlaveOffset: what this replica applied of its master's stream."""
    link = server.replica_link
    return max(link.offset, 0) if link is not None else 0


def node_offset(server: Any, node: Node) -> int:
    """A node's replication offset as SHARDS reports it: myself's own, others' as they
    last said in a PING."""
    if node is server.cluster.state.myself:
        if node.is_replica:
            return replica_offset(server)
        return int(server.replication.offset)
    return node.repl_offset


# -- HELP ---------------------------------------------------------------------------------

CLUSTER_HELP = [
    'CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'ADDSLOTS <slot> [<slot> ...]',
    '    Assign slots to current node.',
    'ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]',
    '    Assign slots which are between <start-slot> and <end-slot> to current node.',
    'BUMPEPOCH',
    '    Advance the cluster config epoch.',
    'COUNT-FAILURE-REPORTS <node-id>',
    '    Return number of failure reports for <node-id>.',
    'COUNTKEYSINSLOT <slot>',
    '    Return the number of keys in <slot>.',
    'DELSLOTS <slot> [<slot> ...]',
    '    Delete slots information from current node.',
    'DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]',
    '    Delete slots information which are between <start-slot> and <end-slot> from current node.',
    'FAILOVER [FORCE|TAKEOVER]',
    '    Promote current replica node to being a master.',
    'FORGET <node-id>',
    '    Remove a node from the cluster.',
    'GETKEYSINSLOT <slot> <count>',
    '    Return key names stored by current node in a slot.',
    'FLUSHSLOTS',
    '    Delete current node own slots information.',
    'INFO',
    '    Return information about the cluster.',
    'KEYSLOT <key>',
    '    Return the hash slot for <key>.',
    'MEET <ip> <port> [<bus-port>]',
    '    Connect nodes into a working cluster.',
    'MYID',
    '    Return the node id.',
    'NODES',
    '    Return cluster configuration seen by node. Output format:',
    '    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...',
    'REPLICATE <node-id>',
    '    Configure current node as replica to <node-id>.',
    'RESET [HARD|SOFT]',
    '    Reset current node (default: soft).',
    'SET-CONFIG-EPOCH <epoch>',
    '    Set config epoch of current node.',
    'SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)',
    '    Set slot state.',
    'REPLICAS <node-id>',
    '    Return <node-id> replicas.',
    'SAVECONFIG',
    '    Force saving cluster configuration on disk.',
    'SLOTS',
    '    Return information about slots range mappings. Each range is made of:',
    '    start, end, master and replicas IP addresses, ports and ids',
    'SHARDS',
    '    Return information about slot range mappings and the nodes associated with them.',
    'LINKS',
    '    Return information about all network links between this node and its peers.',
    '    Output format is an array where each array element is a map containing attributes'
    ' of a link',
    'HELP',
    '    Prints this help.',
]


@subcommand(
    'help',
    2,
    'loading stale',
    '@slow',
    '',
    '5.0.0',
    'Show helpful text about the different subcommands',
)
def help_(c: Client, cluster: Cluster, args: list[bytes]) -> list[str]:
    return CLUSTER_HELP


# -- INFO ---------------------------------------------------------------------------------


@subcommand(
    'info',
    2,
    'stale',
    '@slow',
    'nondeterministic_output',
    '3.0.0',
    'Provides info about Redis Cluster node state',
)
def info(c: Client, cluster: Cluster, args: list[bytes]) -> Verbatim:
    state = cluster.state
    assigned = ok = pfail = fail = 0
    for node in state.nodes.values():  # a node serves numslots slots (the slot table's)
        if not node.numslots:
            continue
        assigned += node.numslots
        if node.failed:
            fail += node.numslots
        elif node.timed_out:
            pfail += node.numslots
        else:
            ok += node.numslots
    me = state.myself
    epoch = me.master.config_epoch if me.is_replica and me.master else me.config_epoch
    lines = [
        f'cluster_state:{"ok" if state.state == 0 else "fail"}',
        f'cluster_slots_assigned:{assigned}',
        f'cluster_slots_ok:{ok}',
        f'cluster_slots_pfail:{pfail}',
        f'cluster_slots_fail:{fail}',
        f'cluster_known_nodes:{len(state.nodes)}',
        f'cluster_size:{state.size}',
        f'cluster_current_epoch:{state.current_epoch}',
        f'cluster_my_epoch:{epoch}',
    ]
    for stats, way in ((state.stats_sent, 'sent'), (state.stats_received, 'received')):
        total = 0
        for kind, count in enumerate(stats):
            if count:
                total += count
                lines.append(f'cluster_stats_messages_{TYPE_NAMES[kind]}_{way}:{count}')
        lines.append(f'cluster_stats_messages_{way}:{total}')
    lines.append(f'total_cluster_links_buffer_limit_exceeded:{state.links_buffer_limit_exceeded}')
    return Verbatim(''.join(line + '\r\n' for line in lines).encode())


# -- NODES, MYID ----------------------------------------------------------------------------


@subcommand(
    'nodes',
    2,
    'stale',
    '@slow',
    'nondeterministic_output',
    '3.0.0',
    'Get Cluster config for the node',
)
def nodes(c: Client, cluster: Cluster, args: list[bytes]) -> Verbatim:
    use_pport = uses_plaintext_port(c.server, c)
    return Verbatim(cluster.state.describe_nodes(0, use_pport).encode())


@subcommand('myid', 2, 'stale', '@slow', '', '3.0.0', 'Return the node id')
def myid(c: Client, cluster: Cluster, args: list[bytes]) -> bytes:
    return cluster.state.myself.name.encode()


# -- SLOTS, SHARDS -------------------------------------------------------------------------


def slot_runs(cluster: Cluster) -> list[tuple[Node, int, int]]:
    """clusterGenNodesSlotsInfo: (owner, first, last) per run of slots one node serves,
    in slot order."""
    runs: list[tuple[Node, int, int]] = []
    slots = cluster.state.slots
    start = 0
    owner = slots[0]
    for j in range(1, SLOTS + 1):
        here = slots[j] if j < SLOTS else None
        if j == SLOTS or here is not owner:
            if owner is not None:
                runs.append((owner, start, j - 1))
            start, owner = j, here
    return runs


def _replica_available(server: Any, node: Node) -> bool:
    """isReplicaAvailable: not failed, and it has replicated something."""
    if node.failed:
        return False
    if node is server.cluster.state.myself:
        return replica_offset(server) != 0
    return node.repl_offset != 0


def _node_entry(c: Client, node: Node) -> list[Any]:
    """addNodeToNodeReply: [preferred endpoint, port, id, {other endpoints}]."""
    server = c.server
    kind = server.config['cluster-preferred-endpoint-type']
    endpoint: bytes | None = preferred_endpoint(node, kind).encode()
    if kind == 'unknown-endpoint':
        endpoint = None
    extra: list[tuple[bytes, bytes]] = []
    if kind != 'ip':
        extra.append((b'ip', node.ip.encode()))
    if kind != 'hostname' and node.hostname:
        extra.append((b'hostname', node.hostname.encode()))
    return [endpoint, client_port(server, c, node), node.name.encode(), Map(extra)]


@subcommand(
    'slots',
    2,
    'stale',
    '@slow',
    'nondeterministic_output',
    '3.0.0',
    'Get array of Cluster slot to node mappings',
)
def slots(c: Client, cluster: Cluster, args: list[bytes]) -> list[Any]:
    server = c.server
    reply: list[Any] = []
    for owner, first, last in slot_runs(cluster):
        entry: list[Any] = [first, last, _node_entry(c, owner)]
        for replica in owner.replicas:
            if _replica_available(server, replica):
                entry.append(_node_entry(c, replica))
        reply.append(entry)
    return reply


def _shard_node(c: Client, node: Node) -> Map:
    """addNodeDetailsToShardReply."""
    server = c.server
    tls = server.config['tls-cluster']
    plaintext_port = node.pport if tls else node.port
    tls_port = node.port if tls else 0
    details: list[tuple[bytes, Any]] = [(b'id', node.name.encode())]
    if plaintext_port:
        details.append((b'port', plaintext_port))
    if tls_port:
        details.append((b'tls-port', tls_port))
    details.append((b'ip', node.ip.encode()))
    endpoint = preferred_endpoint(node, server.config['cluster-preferred-endpoint-type'])
    details.append((b'endpoint', endpoint.encode()))
    if node.hostname:
        details.append((b'hostname', node.hostname.encode()))
    offset = node_offset(server, node)
    details.append((b'role', b'replica' if node.is_replica else b'master'))
    details.append((b'replication-offset', offset))
    if node.failed:
        health = b'fail'
    elif node.is_replica and offset == 0:
        health = b'loading'
    else:
        health = b'online'
    details.append((b'health', health))
    return Map(details)


@subcommand(
    'shards',
    2,
    'stale',
    '@slow',
    'nondeterministic_output',
    '7.0.0',
    'Get array of cluster slots to node mappings',
)
def shards(c: Client, cluster: Cluster, args: list[bytes]) -> list[Map]:
    ranges: dict[Node, list[int]] = {}
    for owner, first, last in slot_runs(cluster):
        ranges.setdefault(owner, []).extend((first, last))
    reply: list[Map] = []
    for node in list(cluster.state.nodes.values()):
        if not node.is_master:
            continue
        serving = [node, *node.replicas]  # clusterGetNodesServingMySlots
        reply.append(
            Map(
                [
                    (b'slots', ranges.get(node, [])),
                    (b'nodes', [_shard_node(c, n) for n in serving]),
                ]
            )
        )
    return reply


# -- LINKS ----------------------------------------------------------------------------------


def _link_entry(link: Any, node: Node) -> Map:
    """addReplyClusterLinkDescription."""
    events = 'r' + ('w' if link.send_buffer_used() else '')
    return Map(
        [
            (b'direction', b'from' if link.inbound else b'to'),
            (b'node', node.name.encode()),
            (b'create-time', int(link.ctime)),
            (b'events', events.encode()),
            (b'send-buffer-allocated', int(link.send_buffer_allocated())),
            (b'send-buffer-used', int(link.send_buffer_used())),
        ]
    )


@subcommand(
    'links',
    2,
    'stale',
    '@slow',
    'nondeterministic_output',
    '7.0.0',
    'Returns a list of all TCP links to and from peer nodes in cluster',
)
def links(c: Client, cluster: Cluster, args: list[bytes]) -> list[Map]:
    reply: list[Map] = []
    for node in list(cluster.state.nodes.values()):
        for link in (node.link, node.inbound_link):
            if link is not None:
                reply.append(_link_entry(link, node))
    return reply


# -- keys and slots ---------------------------------------------------------------------------


@subcommand(
    'keyslot', 3, 'stale', '@slow', '', '3.0.0', 'Returns the hash slot of the specified key'
)
def keyslot(c: Client, cluster: Cluster, args: list[bytes]) -> int:
    return key_slot(args[2])


@subcommand(
    'countkeysinslot',
    3,
    'stale',
    '@slow',
    '',
    '3.0.0',
    'Return the number of local keys in the specified hash slot',
)
def countkeysinslot(c: Client, cluster: Cluster, args: list[bytes]) -> int:
    slot = int_arg(args[2])
    if not 0 <= slot < SLOTS:
        raise RedisError('ERR Invalid slot')
    return cluster.count_keys_in_slot(slot)


@subcommand(
    'getkeysinslot',
    4,
    'stale',
    '@slow',
    'nondeterministic_output',
    '3.0.0',
    'Return local key names in the specified hash slot',
)
def getkeysinslot(c: Client, cluster: Cluster, args: list[bytes]) -> list[bytes]:
    slot = int_arg(args[2])
    count = int_arg(args[3])
    if not 0 <= slot < SLOTS or count < 0:
        raise RedisError('ERR Invalid slot or number of keys')
    return cluster.keys_in_slot(slot, count) if count else []


@subcommand(
    'count-failure-reports',
    3,
    'admin stale',
    '@admin @slow @dangerous',
    'nondeterministic_output',
    '3.0.0',
    'Return the number of failure reports active for a given node',
)
def count_failure_reports(c: Client, cluster: Cluster, args: list[bytes]) -> int:
    node = node_arg(cluster, args[2])
    return node.failure_reports(cluster.state.node_timeout, mstime())
