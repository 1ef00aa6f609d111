"""CLUSTER's subcommands that change the cluster, and READONLY, READWRITE, ASKING (Redis 7.0
cluster.c's clusterCommand, readonlyCommand, readwriteCommand, askingCommand). The CLUSTER
container, its read-only subcommands and the `subcommand` declaration are in
store/commands/cluster_info.py; this module's COMMANDS is that family, merged once.

Without cluster support (`server.cluster` None) every one of them answers Redis's
"ERR This instance has cluster support disabled" (cluster.c's check before anything
else), so clients that probe for cluster mode get a standalone redis-server's answer;
the table's arity and unknown-subcommand errors still come first, as in Redis.

In cluster mode each subcommand parses and checks its arguments in clusterCommand's order
with its error strings, then applies the change to the cluster state
(store/cluster/state.py) or asks the cluster service (store/cluster/service.py: MEET,
FORGET, REPLICATE, FAILOVER, RESET, SAVECONFIG), and leaves what must follow (nodes.conf
saved, the cluster's state recomputed) to the service's before-sleep work
(`do_before_sleep`), so a command answers at once and several changes save the file once.

ADDSLOTS/DELSLOTS (and their RANGE forms) check every slot before changing any: all
arguments parse, none is taken (ADD) or free (DEL), none is given twice; then the slots
change in slot order, an importing mark on a slot this node takes cleared. SETSLOT NODE
moves a slot between owners: a master left without slots by it becomes the new owner's
replica (cluster-allow-replica-migration), and closing an import on myself bumps the
config epoch and tells every node at once (a PONG broadcast).

Costs: the slot commands are linear in their arguments plus one pass over the 16384 slots;
the rest are constant but for the node table's size.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..args import E_SYNTAX, int_arg, lower
from ..cluster.messages import SLOTS
from ..cluster.node import PORT_INCR
from ..cluster.routing import uses_plaintext_port
from ..cluster.state import TODO_FSYNC_CONFIG, TODO_SAVE_CONFIG, TODO_UPDATE_STATE
from ..context import Client
from ..resp import OK, RedisError, error_arg, string2ll
from .cluster_info import (
    CLUSTER,
    COMMANDS,
    DISABLED,
    disabled,
    node_arg,
    slot_arg,
    subcommand,
    subcommand_syntax_error,
)

if TYPE_CHECKING:
    from ..cluster.service import Cluster

__all__ = ['COMMANDS', 'DISABLED', 'SUBCOMMANDS', 'disabled']

_ADMIN = 'admin stale no_async_loading'
_ADMIN_CATEGORIES = '@admin @slow @dangerous'


# -- slots --------------------------------------------------------------------------------


def _check_slots(cluster: Cluster, chosen: bytearray, delete: bool, first: int, last: int) -> None:
    """checkSlotAssignmentsOrReply: each slot free (ADD) or taken (DEL), and not given
    twice."""
    owners = cluster.state.slots
    for slot in range(first, last + 1):
        if delete and owners[slot] is None:
            raise RedisError(f'ERR Slot {slot} is already unassigned')
        if not delete and owners[slot] is not None:
            raise RedisError(f'ERR Slot {slot} is already busy')
        if chosen[slot]:
            raise RedisError(f'ERR Slot {slot} specified multiple times')
        chosen[slot] = 1


def _update_slots(cluster: Cluster, chosen: bytearray, delete: bool) -> str:
    """clusterUpdateSlots, then the before-sleep work: the slots change in slot order; a
    slot this node was importing is its own now."""
    state = cluster.state
    me = state.myself
    for slot in range(SLOTS):
        if chosen[slot]:
            state.importing_from[slot] = None
            if delete:
                state.del_slot(slot)
            else:
                state.add_slot(me, slot)
    cluster.do_before_sleep(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)
    return OK


def _slots(cluster: Cluster, args: list[bytes], delete: bool) -> str:
    """ADDSLOTS / DELSLOTS: every argument parsed, then every slot checked."""
    for a in args[2:]:
        slot_arg(a)
    chosen = bytearray(SLOTS)
    for a in args[2:]:
        slot = slot_arg(a)
        _check_slots(cluster, chosen, delete, slot, slot)
    return _update_slots(cluster, chosen, delete)


def _slot_ranges(cluster: Cluster, args: list[bytes], delete: bool, name: str) -> str:
    """ADDSLOTSRANGE / DELSLOTSRANGE: pairs parsed and checked in order."""
    if len(args) % 2:
        raise RedisError(f"ERR wrong number of arguments for 'cluster|{name}' command")
    chosen = bytearray(SLOTS)
    for i in range(2, len(args), 2):
        first = slot_arg(args[i])
        last = slot_arg(args[i + 1])
        if first > last:
            raise RedisError(
                f'ERR start slot number {first} is greater than end slot number {last}'
            )
        _check_slots(cluster, chosen, delete, first, last)
    return _update_slots(cluster, chosen, delete)


@subcommand(
    'addslots',
    -3,
    _ADMIN,
    _ADMIN_CATEGORIES,
    '',
    '3.0.0',
    'Assign new hash slots to receiving node',
)
def addslots(c: Client, cluster: Cluster, args: list[bytes]) -> str:
    return _slots(cluster, args, False)


@subcommand(
    'addslotsrange',
    -4,
    _ADMIN,
    _ADMIN_CATEGORIES,
    '',
    '7.0.0',
    'Assign new hash slots to receiving node',
)
def addslotsrange(c: Client, cluster: Cluster, args: list[bytes]) -> str:
    return _slot_ranges(cluster, args, False, 'addslotsrange')


@subcommand(
    'delslots',
    -3,
    _ADMIN,
    _ADMIN_CATEGORIES,
    '',
    '3.0.0',
    'Set hash slots as unbound in receiving node',
)
def delslots(c: Client, cluster: Cluster, args: list[bytes]) -> str:
    return _slots(cluster, args, True)


@subcommand(
    'delslotsrange',
    -4,
    _ADMIN,
    _ADMIN_CATEGORIES,
    '',
    '7.0.0',
    'Set hash slots as unbound in receiving node',
)
def delslotsrange(c: Client, cluster: Cluster, args: list[bytes]) -> str:
    return _slot_ranges(cluster, args, True, 'delslotsrange')


@subcommand(
    'flushslots', 2, _ADMIN, _ADMIN_CATEGORIES, '', '3.0.0', "Delete a node's own slots information"
)
def flushslots(c: Client, cluster: Cluster, args: list[bytes]) -> str:
    if c.ks.dbsize(0):
        raise RedisError('ERR DB must be empty to perform CLUSTER FLUSHSLOTS.')
    cluster.state.del_node_slots(cluster.state.myself)
    cluster.do_before_sleep(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)
    return OK


@subcommand(
    'setslot', -4, _ADMIN, _ADMIN_CATEGORIES, '', '3.0.0', 'Bind a hash slot to a specific node'
)
def setslot(c: Client, cluster: Cluster, args: list[bytes]) -> str:
    """CLUSTER SETSLOT <slot> IMPORTING|MIGRATING <node> | STABLE | NODE <node>."""
    state = cluster.state
    me = state.myself
    if me.is_replica:
        raise RedisError('ERR Please use SETSLOT only with masters.')
    slot = slot_arg(args[2])
    action = lower(args[3])
    if action == 'migrating' and len(args) == 5:
        if state.slots[slot] is not me:
            raise RedisError(f"ERR I'm not the owner of hash slot {slot}")
        node = node_arg(cluster, args[4], "ERR I don't know about node")
        if node.is_replica:
            raise RedisError('ERR Target node is not a master')
        state.migrating_to[slot] = node
    elif action == 'importing' and len(args) == 5:
        if state.slots[slot] is me:
            raise RedisError(f"ERR I'm already the owner of hash slot {slot}")
        node = node_arg(cluster, args[4], "ERR I don't know about node")
        if node.is_replica:
            raise RedisError('ERR Target node is not a master')
        state.importing_from[slot] = node
    elif action == 'stable' and len(args) == 4:
        state.importing_from[slot] = None
        state.migrating_to[slot] = None
    elif action == 'node' and len(args) == 5:
        _setslot_node(c, cluster, slot, args[4])
    else:
        raise RedisError(
            'ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP'
        )
    cluster.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)
    return OK


def _setslot_node(c: Client, cluster: Cluster, slot: int, name: bytes) -> None:
    """CLUSTER SETSLOT <slot> NODE <node>: the slot is the node's from now on."""
    state = cluster.state
    me = state.myself
    node = node_arg(cluster, name)
    if node.is_replica:
        raise RedisError('ERR Target node is not a master')
    keys = cluster.count_keys_in_slot(slot)
    if state.slots[slot] is me and node is not me and keys:
        raise RedisError(
            f"ERR Can't assign hashslot {slot} to a different node while I still hold keys "
            'for this hash slot.'
        )
    if not keys and state.migrating_to[slot] is not None:
        state.migrating_to[slot] = None
    was_mine = state.slots[slot] is me
    state.del_slot(slot)
    state.add_slot(node, slot)
    if was_mine and node is not me and me.numslots == 0 and state.allow_replica_migration:
        cluster.log(
            f'Configuration change detected. Reconfiguring myself as a replica of {node.name}',
            '#',
        )
        cluster.replicate(node)
        cluster.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE | TODO_FSYNC_CONFIG)
    if node is me and state.importing_from[slot] is not None:
        # a slot migrated by hand: a new config epoch, so that the cluster takes this
        # node's word for it (a collision is resolved as any other)
        if state.bump_epoch_without_consensus():
            cluster.log(f'configEpoch updated after importing slot {slot}', '#')
        state.importing_from[slot] = None
        cluster.broadcast_pong(False)


# -- epochs -------------------------------------------------------------------------------


@subcommand(
    'bumpepoch',
    2,
    _ADMIN,
    _ADMIN_CATEGORIES,
    'nondeterministic_output',
    '3.0.0',
    'Advance the cluster config epoch',
)
def bumpepoch(c: Client, cluster: Cluster, args: list[bytes]) -> str:
    bumped = cluster.state.bump_epoch_without_consensus()
    return f'{"BUMPED" if bumped else "STILL"} {cluster.state.myself.config_epoch}'


@subcommand(
    'set-config-epoch',
    3,
    _ADMIN,
    _ADMIN_CATEGORIES,
    '',
    '3.0.0',
    'Set the configuration epoch in a new node',
)
def set_config_epoch(c: Client, cluster: Cluster, args: list[bytes]) -> str:
    """Only on a node that knows no other and has no epoch yet: how a new cluster gives
    each master its own epoch without waiting for collisions to be resolved."""
    epoch = int_arg(args[2])
    state = cluster.state
    if epoch < 0:
        raise RedisError(f'ERR Invalid config epoch specified: {epoch}')
    if len(state.nodes) > 1:
        raise RedisError(
            'ERR The user can assign a config epoch only when the node does not know any '
            'other node.'
        )
    if state.myself.config_epoch != 0:
        raise RedisError('ERR Node config epoch is already non-zero')
    state.myself.config_epoch = epoch
    cluster.log(f'configEpoch set to {epoch} via CLUSTER SET-CONFIG-EPOCH', '#')
    if state.current_epoch < epoch:
        state.current_epoch = epoch
    cluster.do_before_sleep(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)
    return OK


# -- the node table -----------------------------------------------------------------------


@subcommand(
    'meet',
    -4,
    _ADMIN,
    _ADMIN_CATEGORIES,
    '',
    '3.0.0',
    'Force a node cluster to handshake with another node',
)
def meet(c: Client, cluster: Cluster, args: list[bytes]) -> str:
    """CLUSTER MEET <ip> <port> [<bus-port>]: a handshake the cron starts; an address
    already in a handshake is +OK too (EAGAIN)."""
    if len(args) > 5:
        raise subcommand_syntax_error(args)
    port = string2ll(args[3])
    if port is None:
        raise RedisError(f'ERR Invalid TCP base port specified: {error_arg(args[3])}')
    if len(args) == 5:
        cport = string2ll(args[4])
        if cport is None:
            raise RedisError(f'ERR Invalid TCP bus port specified: {error_arg(args[4])}')
    else:
        cport = port + PORT_INCR
    ip = args[2].decode('utf-8', 'surrogateescape')
    if cluster.meet(ip, port, cport) == 'EINVAL':
        raise RedisError(
            f'ERR Invalid node address specified: {error_arg(args[2])}:{error_arg(args[3])}'
        )
    return OK


@subcommand(
    'forget', 3, _ADMIN, _ADMIN_CATEGORIES, '', '3.0.0', 'Remove a node from the nodes table'
)
def forget(c: Client, cluster: Cluster, args: list[bytes]) -> str:
    node = node_arg(cluster, args[2])
    me = cluster.state.myself
    if node is me:
        raise RedisError("ERR I tried hard but I can't forget myself...")
    if me.is_replica and me.master is node:
        raise RedisError("ERR Can't forget my master!")
    cluster.forget(node)
    return OK


@subcommand(
    'replicate',
    3,
    _ADMIN,
    _ADMIN_CATEGORIES,
    '',
    '3.0.0',
    'Reconfigure a node as a replica of the specified master node',
)
def replicate(c: Client, cluster: Cluster, args: list[bytes]) -> str:
    node = node_arg(cluster, args[2])
    me = cluster.state.myself
    if node is me:
        raise RedisError("ERR Can't replicate myself")
    if node.is_replica:
        raise RedisError('ERR I can only replicate a master, not a replica.')
    if me.is_master and (me.numslots or c.ks.dbsize(0)):
        raise RedisError('ERR To set a master the node must be empty and without assigned slots.')
    cluster.replicate(node)
    return OK


def _replicas(c: Client, cluster: Cluster, args: list[bytes]) -> list[bytes]:
    """CLUSTER REPLICAS / SLAVES: the master's replicas' CLUSTER NODES lines."""
    node = node_arg(cluster, args[2])
    if node.is_replica:
        raise RedisError('ERR The specified node is not a master')
    use_pport = uses_plaintext_port(c.server, c)
    return [r.describe(use_pport).encode() for r in node.replicas]


@subcommand(
    'replicas',
    3,
    'admin stale',
    _ADMIN_CATEGORIES,
    'nondeterministic_output',
    '5.0.0',
    'List replica nodes of the specified master node',
)
def replicas(c: Client, cluster: Cluster, args: list[bytes]) -> list[bytes]:
    return _replicas(c, cluster, args)


@subcommand(
    'slaves',
    3,
    'admin stale',
    _ADMIN_CATEGORIES,
    'nondeterministic_output',
    '3.0.0',
    'List replica nodes of the specified master node',
)
def slaves(c: Client, cluster: Cluster, args: list[bytes]) -> list[bytes]:
    return _replicas(c, cluster, args)


# -- failover, reset, the config file ------------------------------------------------------


@subcommand(
    'failover',
    -2,
    _ADMIN,
    _ADMIN_CATEGORIES,
    '',
    '3.0.0',
    'Forces a replica to perform a manual failover of its master.',
)
def failover(c: Client, cluster: Cluster, args: list[bytes]) -> str:
    """CLUSTER FAILOVER [FORCE|TAKEOVER]: the checks and the reply here, the failover
    itself the service's (store/cluster/failover.py)."""
    if len(args) > 3:
        raise subcommand_syntax_error(args)
    force = takeover = False
    if len(args) == 3:
        option = lower(args[2])
        if option == 'force':
            force = True
        elif option == 'takeover':
            force = takeover = True
        else:
            raise RedisError(E_SYNTAX)
    me = cluster.state.myself
    if me.is_master:
        raise RedisError('ERR You should send CLUSTER FAILOVER to a replica')
    master = me.master
    if master is None:
        raise RedisError("ERR I'm a replica but my master is unknown to me")
    if not force and (master.failed or master.link is None):
        raise RedisError('ERR Master is down or failed, please use CLUSTER FAILOVER FORCE')
    cluster.failover(force, takeover)
    return OK


@subcommand(
    'reset',
    -2,
    'admin noscript stale',
    _ADMIN_CATEGORIES,
    '',
    '3.0.0',
    'Reset a Redis Cluster node',
)
def reset(c: Client, cluster: Cluster, args: list[bytes]) -> str:
    """CLUSTER RESET [HARD|SOFT]: a master must hold no keys."""
    if len(args) > 3:
        raise subcommand_syntax_error(args)
    hard = False
    if len(args) == 3:
        option = lower(args[2])
        if option == 'hard':
            hard = True
        elif option != 'soft':
            raise RedisError(E_SYNTAX)
    if cluster.state.myself.is_master and c.ks.dbsize(c.db):
        raise RedisError("ERR CLUSTER RESET can't be called with master nodes containing keys")
    cluster.reset(hard)
    return OK


@subcommand(
    'saveconfig',
    2,
    _ADMIN,
    _ADMIN_CATEGORIES,
    '',
    '3.0.0',
    'Forces the node to save cluster state on disk',
)
def saveconfig(c: Client, cluster: Cluster, args: list[bytes]) -> str:
    try:
        cluster.save_config(True)
    except OSError as e:
        raise RedisError(f'ERR error saving the cluster node config: {e.strerror}') from None
    return OK


# The subcommands as COMMAND lists them, in name order; (name, arity, flags, ACL
# categories, tips, since, summary) as declared (tests/test_standalone.py walks them).
CLUSTER.subcommands = dict(sorted(CLUSTER.subcommands.items()))
SUBCOMMANDS = [
    (
        name,
        sub.arity,
        ' '.join(sub.flags),
        ' '.join(sub.categories),
        ' '.join(sub.tips),
        sub.since,
        sub.summary,
    )
    for name, sub in CLUSTER.subcommands.items()
]


# -- READONLY, READWRITE, ASKING -------------------------------------------------------------


@COMMANDS.command(
    'readonly',
    1,
    flags='loading stale fast',
    categories='@fast @connection',
    summary='Enables read queries for a connection to a cluster replica node',
)
def readonly(c: Client, args: list[bytes]) -> str:
    """A replica serves this client the reads of its master's slots."""
    if c.server.cluster is None:
        raise DISABLED
    c.readonly = True
    return OK


@COMMANDS.command(
    'readwrite',
    1,
    flags='loading stale fast',
    categories='@fast @connection',
    summary='Disables read queries for a connection to a cluster replica node',
)
def readwrite(c: Client, args: list[bytes]) -> str:
    if c.server.cluster is None:
        raise DISABLED
    c.readonly = False
    return OK


@COMMANDS.command(
    'asking',
    1,
    flags='fast',
    categories='@fast @connection',
    summary='Sent by cluster clients after an -ASK redirect',
)
def asking(c: Client, args: list[bytes]) -> str:
    """The next command (or transaction) may use a slot this node is importing; the
    connection takes the gated path until it has run (store/connection_gate.py)."""
    if c.server.cluster is None:
        raise DISABLED
    c.asking = True
    c.update_gate()
    return OK
