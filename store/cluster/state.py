"""The cluster as this node sees it (cluster.h's clusterState): the node table, who serves
each of the 16384 slots, the slots being migrated, the epochs, and the cluster's own state.

This module holds the data and the transitions cluster.c applies to it, with no I/O: the
bus and the gossip (store/cluster/bus.py, gossip.py) decide when to apply them, and what a
transition needs of the rest of the server (keys in a slot, replication, the log) it asks
through `ClusterHost`. Changes that must reach nodes.conf or the cluster's state set bits
of `todo` (clusterDoBeforeSleep), which the server acts on before its loop sleeps, so a
burst of packets saves the file once.

Invariants: `slots[j]` is the node whose bitmap has bit j, or None; a node's `replicas`
and `master` agree (node.py); `myself` is in `nodes` under its name; `current_epoch` is at
least every known node's config epoch once nodes.conf is loaded.

Costs: a reshard runs the transitions once a slot on every node (SETSLOT, then the
target's PONG), so none walks the 16384 slots in Python. The first invariant lets them
work per node or on whole bitmaps instead: `update_slots_config_with` compares bitmaps as
integers and walks only the slots changing hands, `update_state` sums the nodes'
`numslots`, `describe_nodes` (CLUSTER NODES, each nodes.conf save) groups the slot table
with itertools.groupby and finds open slots by chunks. Measured in-process with 6 nodes
(walking the slots before, in brackets): a PING that moves one slot 0.1 ms (3.2 ms), the
nodes' description 0.3 ms (1.5-2 ms), the state 0.001 ms (0.3-0.5 ms); a reshard of 1000 slots
between 3 idle nodes on 2 cores 17 s (110 s; redis-server's 3 s; 8 s with nodes.conf
written in place as Redis writes it, rather than renamed over: nodes_conf.save).
"""

from __future__ import annotations

import ipaddress
import time
from itertools import groupby
from typing import Any, Protocol

from .messages import SLOTS, SLOTS_BYTES, iter_slots, slot_ranges
from .node import (
    FLAG_FAIL,
    FLAG_HANDSHAKE,
    FLAG_MASTER,
    FLAG_MEET,
    FLAG_MIGRATE_TO,
    FLAG_MYSELF,
    FLAG_PFAIL,
    FLAG_SLAVE,
    Node,
    mstime,
    random_name,
)

CLUSTER_OK = 0
CLUSTER_FAIL = 1

# clusterDoBeforeSleep's flags
TODO_HANDLE_FAILOVER = 1 << 0
TODO_UPDATE_STATE = 1 << 1
TODO_SAVE_CONFIG = 1 << 2
TODO_FSYNC_CONFIG = 1 << 3
TODO_HANDLE_MANUALFAILOVER = 1 << 4

BLACKLIST_TTL = 60  # s: a forgotten node is not re-added from gossip for a minute
MAX_REJOIN_DELAY = 5000
MIN_REJOIN_DELAY = 500
WRITABLE_DELAY = 2000  # ms a restarted master waits before it says ok


class ClusterHost(Protocol):
    """What the cluster's logic (this module, gossip.py, failover.py, bus.py) needs of
    the node it runs in: store/cluster/service.py's Cluster."""

    server: Any  # the Server: its config, log, replication, pause
    state: ClusterState

    def log(self, msg: str, level: str = '*') -> None: ...

    def announced_ports(self) -> tuple[int, int, int]: ...

    def repl_offset(self) -> int: ...

    def del_node(self, node: Node) -> None: ...

    def save_config_or_die(self, fsync: bool) -> None: ...

    def deliver_publish(self, channel: bytes, message: bytes, sharded: bool) -> None: ...

    def count_keys_in_slot(self, slot: int) -> int: ...

    def delete_keys_in_slot(self, slot: int) -> int: ...

    def remove_channels_in_slot(self, slot: int) -> None: ...

    def set_master(self, ip: str, port: int) -> None: ...  # replicationSetMaster

    def wake(self) -> None: ...  # `todo` has work: run it before the loop sleeps


class ClusterState:
    def __init__(self, host: ClusterHost, node_timeout: int) -> None:
        self.host = host
        self.node_timeout = node_timeout  # ms, cluster-node-timeout
        self.require_full_coverage = True
        self.allow_replica_migration = True
        self.myself = Node(flags=FLAG_MYSELF | FLAG_MASTER)
        self.nodes: dict[str, Node] = {self.myself.name: self.myself}
        self.blacklist: dict[str, float] = {}  # name -> unix time it may come back
        self.current_epoch = 0
        self.last_vote_epoch = 0
        self.state = CLUSTER_FAIL
        self.size = 1  # masters serving at least one slot
        self.slots: list[Node | None] = [None] * SLOTS
        self.migrating_to: list[Node | None] = [None] * SLOTS
        self.importing_from: list[Node | None] = [None] * SLOTS
        # slots whose owner stopped claiming them in its PINGs (clusterUpdateSlotsConfigWith)
        self.owner_not_claiming = bytearray(SLOTS_BYTES)
        self.todo = 0
        self.stats_sent = [0] * 11
        self.stats_received = [0] * 11
        self.stats_pfail_nodes = 0
        self.links_buffer_limit_exceeded = 0
        self.first_update = 0  # clusterUpdateState's statics
        self.among_minority_time = 0

    def do_before_sleep(self, flags: int) -> None:
        self.todo |= flags
        self.host.wake()

    # -- the node table ----------------------------------------------------------------

    def lookup(self, name: str | bytes) -> Node | None:
        """clusterLookupNode: None for an unknown or malformed name."""
        if isinstance(name, bytes):
            name = name.decode('latin-1')
        return self.nodes.get(name)

    def add_node(self, node: Node) -> None:
        assert node.name not in self.nodes
        self.nodes[node.name] = node

    def del_node(self, node: Node) -> None:
        """clusterDelNode: its slots are unassigned, open slots towards it closed, its
        failure reports about others dropped, and it leaves the table (its links are the
        caller's to close: freeClusterNode)."""
        for j in range(SLOTS):
            if self.importing_from[j] is node:
                self.importing_from[j] = None
            if self.migrating_to[j] is node:
                self.migrating_to[j] = None
            if self.slots[j] is node:
                self.del_slot(j)
        now = mstime()
        for other in self.nodes.values():
            if other is not node:
                other.del_failure_report(node, self.node_timeout, now)
        for replica in node.replicas:
            replica.master = None
        if node.is_replica and node.master is not None:
            remove_replica(node.master, node)
        del self.nodes[node.name]

    def rename(self, node: Node, name: str) -> None:
        """clusterRenameNode: a handshake node learns its real name."""
        del self.nodes[node.name]
        node.name = name
        self.add_node(node)

    def masters_have_replicas(self) -> bool:
        return any(n.replicas for n in self.nodes.values() if not n.is_replica)

    # -- epochs ------------------------------------------------------------------------

    def max_epoch(self) -> int:
        """clusterGetMaxEpoch."""
        top = max(n.config_epoch for n in self.nodes.values())
        return max(top, self.current_epoch)

    def bump_epoch_without_consensus(self) -> bool:
        """clusterBumpConfigEpochWithoutConsensus: a new config epoch for myself unless
        mine is already the unique greatest."""
        top = self.max_epoch()
        me = self.myself
        if me.config_epoch == 0 or me.config_epoch != top:
            self.current_epoch += 1
            me.config_epoch = self.current_epoch
            self.do_before_sleep(TODO_SAVE_CONFIG | TODO_FSYNC_CONFIG)
            self.host.log(f'New configEpoch set to {me.config_epoch}', '#')
            return True
        return False

    def handle_epoch_collision(self, sender: Node) -> bool:
        """clusterHandleConfigEpochCollision: of two masters with the same config epoch
        the one with the lesser name takes a new one. True when myself did (the caller
        saves nodes.conf at once, as Redis does)."""
        me = self.myself
        if sender.config_epoch != me.config_epoch or not sender.is_master or not me.is_master:
            return False
        if sender.name <= me.name:
            return False
        self.current_epoch += 1
        me.config_epoch = self.current_epoch
        self.host.log(
            f'WARNING: configEpoch collision with node {sender.name}.'
            f' configEpoch set to {me.config_epoch}',
            '-',
        )
        return True

    # -- the blacklist (CLUSTER FORGET) ------------------------------------------------

    def blacklist_add(self, node: Node) -> None:
        self.blacklist_cleanup()
        self.blacklist[node.name] = time.time() + BLACKLIST_TTL

    def blacklist_cleanup(self) -> None:
        now = time.time()
        for name, until in list(self.blacklist.items()):
            if until < now:
                del self.blacklist[name]

    def blacklisted(self, name: str) -> bool:
        self.blacklist_cleanup()
        return name in self.blacklist

    # -- failure detection -------------------------------------------------------------

    def quorum(self) -> int:
        return self.size // 2 + 1

    def failing_by_quorum(self, node: Node) -> bool:
        """markNodeAsFailingIfNeeded's test: PFAIL, not yet FAIL, and reported by a
        majority of the masters (myself counting when a master). The caller marks it and
        broadcasts the FAIL."""
        if not node.timed_out or node.failed:
            return False
        failures = node.failure_reports(self.node_timeout, mstime())
        if self.myself.is_master:
            failures += 1
        return failures >= self.quorum()

    def mark_failed(self, node: Node) -> None:
        self.host.log(f'Marking node {node.name} as failing (quorum reached).')
        node.flags = (node.flags & ~FLAG_PFAIL) | FLAG_FAIL
        node.fail_time = mstime()
        self.do_before_sleep(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)

    def clear_failure_if_needed(self, node: Node) -> None:
        """clearNodeFailureIfNeeded: a replica or a master without slots is back at
        once; a master with slots only when nobody took them over in twice the node
        timeout."""
        now = mstime()
        if node.is_replica or node.numslots == 0:
            kind = 'replica' if node.is_replica else 'master without slots'
            self.host.log(f'Clear FAIL state for node {node.name}: {kind} is reachable again.')
            node.flags &= ~FLAG_FAIL
            self.do_before_sleep(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)
        if node.is_master and node.numslots > 0 and now - node.fail_time > self.node_timeout * 2:
            self.host.log(
                f'Clear FAIL state for node {node.name}: is reachable again and nobody is '
                'serving its slots after some time.'
            )
            node.flags &= ~FLAG_FAIL
            self.do_before_sleep(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)

    # -- handshakes --------------------------------------------------------------------

    def handshake_in_progress(self, ip: str, port: int, cport: int) -> bool:
        return any(
            n.in_handshake and n.ip.lower() == ip.lower() and n.port == port and n.cport == cport
            for n in self.nodes.values()
        )

    def start_handshake(self, ip: str, port: int, cport: int) -> str | None:
        """clusterStartHandshake (CLUSTER MEET): a node in handshake, to be sent a MEET
        by the cron. Returns None, or why not ('EINVAL' for a bad address, 'EAGAIN' when
        a handshake with that address is already running)."""
        try:
            norm = str(ipaddress.ip_address(ip))
        except ValueError:
            return 'EINVAL'
        if not (0 < port <= 65535 and 0 < cport <= 65535):
            return 'EINVAL'
        if self.handshake_in_progress(norm, port, cport):
            return 'EAGAIN'
        node = Node(flags=FLAG_HANDSHAKE | FLAG_MEET)
        node.ip, node.port, node.cport = norm, port, cport
        self.add_node(node)
        return None

    # -- masters and replicas ----------------------------------------------------------

    def set_node_as_master(self, node: Node) -> None:
        """clusterSetNodeAsMaster."""
        if node.is_master:
            return
        if node.master is not None:
            remove_replica(node.master, node)
            if node is not self.myself:
                node.flags |= FLAG_MIGRATE_TO
        node.flags = (node.flags & ~FLAG_SLAVE) | FLAG_MASTER
        node.master = None
        self.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)

    def set_master(self, node: Node) -> None:
        """clusterSetMaster: myself becomes a replica of `node` (the caller resets any
        manual failover)."""
        me = self.myself
        assert node is not me and me.numslots == 0
        if me.is_master:
            me.flags = (me.flags & ~(FLAG_MASTER | FLAG_MIGRATE_TO)) | FLAG_SLAVE
            self.close_all_slots()
        elif me.master is not None:
            remove_replica(me.master, me)
        me.master = node
        add_replica(node, me)
        self.host.set_master(node.ip, node.port)

    # -- slots -------------------------------------------------------------------------

    def set_slot_bit(self, node: Node, slot: int) -> None:
        mask = 1 << (slot & 7)
        if not node.slots[slot >> 3] & mask:
            node.slots[slot >> 3] |= mask
            node.numslots += 1
            # a master that gets its first slot is a target for replica migration, when
            # replicas exist at all
            if node.numslots == 1 and self.masters_have_replicas():
                node.flags |= FLAG_MIGRATE_TO

    def add_slot(self, node: Node, slot: int) -> bool:
        """clusterAddSlot: False when the slot is taken."""
        if self.slots[slot] is not None:
            return False
        self.set_slot_bit(node, slot)
        self.slots[slot] = node
        return True

    def del_slot(self, slot: int) -> bool:
        """clusterDelSlot: the slot is unassigned; when myself or my master served it,
        its shard channels' subscribers are unsubscribed."""
        node = self.slots[slot]
        if node is None:
            return False
        primary = node if node.is_master else node.master
        if primary is not None and (primary is self.myself or self.myself in primary.replicas):
            self.host.remove_channels_in_slot(slot)
        mask = 1 << (slot & 7)
        assert node.slots[slot >> 3] & mask
        node.slots[slot >> 3] &= ~mask
        node.numslots -= 1
        self.slots[slot] = None
        return True

    def del_node_slots(self, node: Node) -> int:
        deleted = 0
        for slot in [s for a, b in slot_ranges(node.slots) for s in range(a, b + 1)]:
            self.del_slot(slot)
            deleted += 1
        return deleted

    def close_all_slots(self) -> None:
        self.migrating_to = [None] * SLOTS
        self.importing_from = [None] * SLOTS

    def slot_unclaimed(self, slot: int) -> bool:
        """isSlotUnclaimed: nobody serves it, or its owner stopped claiming it."""
        return self.slots[slot] is None or bool(
            self.owner_not_claiming[slot >> 3] & (1 << (slot & 7))
        )

    def set_not_claiming(self, slot: int, on: bool) -> None:
        if on:
            self.owner_not_claiming[slot >> 3] |= 1 << (slot & 7)
        else:
            self.owner_not_claiming[slot >> 3] &= ~(1 << (slot & 7))

    def update_slots_config_with(self, sender: Node, epoch: int, slots: bytes) -> None:
        """clusterUpdateSlotsConfigWith: `sender` claims `slots` with config epoch
        `epoch`. Each slot it claims that is unassigned, or served by a node of a lesser
        epoch, becomes its; slots we lose with keys in them are emptied, and a node left
        without slots by its master's loss becomes the sender's replica."""
        me = self.myself
        if sender is me:
            self.host.log('Discarding UPDATE message about myself.', '#')
            return
        curmaster = me if me.is_master else me.master
        newmaster: Node | None = None
        dirty: list[int] = []
        migrated = 0
        # cluster.c walks the 16384 slots; here whole bitmaps are compared at once and
        # only the slots the sender claims but does not serve yet are walked (a PING
        # whose slots differ from what we know differs in a few, during a reshard one):
        # slots it claims and serves are claimed again, slots it serves and no longer
        # claims are marked so (slots[j] is sender exactly when its bitmap has bit j)
        claimed = int.from_bytes(slots, 'little')
        served = int.from_bytes(sender.slots, 'little')
        sender_slots = claimed.bit_count()
        not_claiming = int.from_bytes(self.owner_not_claiming, 'little')
        not_claiming = (not_claiming & ~(claimed & served)) | (served & ~claimed)
        self.owner_not_claiming[:] = not_claiming.to_bytes(SLOTS_BYTES, 'little')
        for j in iter_slots((claimed & ~served).to_bytes(SLOTS_BYTES, 'little')):
            owner = self.slots[j]
            if self.importing_from[j] is not None:
                continue
            if self.slot_unclaimed(j) or (owner is not None and owner.config_epoch < epoch):
                if owner is me and self.host.count_keys_in_slot(j):
                    dirty.append(j)
                if owner is curmaster:
                    newmaster = sender
                    migrated += 1
                self.del_slot(j)
                self.add_slot(sender, j)
                self.set_not_claiming(j, False)
                self.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE | TODO_FSYNC_CONFIG)
        todo = TODO_SAVE_CONFIG | TODO_UPDATE_STATE | TODO_FSYNC_CONFIG
        if (
            newmaster is not None
            and curmaster is not None
            and curmaster.numslots == 0
            and (self.allow_replica_migration or sender_slots == migrated)
        ):
            self.host.log(
                'Configuration change detected. Reconfiguring myself as a replica of '
                f'{sender.name}',
                '#',
            )
            self.set_master(sender)
            self.do_before_sleep(todo)
        elif me.master is not None and me.master.master is not None and me.master.master is not me:
            grand = me.master.master
            self.host.log(
                f"I'm a sub-replica! Reconfiguring myself as a replica of grandmaster {grand.name}",
                '#',
            )
            self.set_master(grand)
            self.do_before_sleep(todo)
        else:
            for j in dirty:
                self.host.delete_keys_in_slot(j)

    # -- the cluster's state -------------------------------------------------------------

    def update_state(self) -> None:
        """clusterUpdateState: ok when every slot is served by a node not failed (with
        cluster-require-full-coverage) and a majority of the masters with slots is
        reachable. A master that comes back waits before it says ok again."""
        self.todo &= ~TODO_UPDATE_STATE
        now = mstime()
        if self.first_update == 0:
            self.first_update = now
        if (
            self.myself.is_master
            and self.state == CLUSTER_FAIL
            and now - self.first_update < WRITABLE_DELAY
        ):
            return
        new_state = CLUSTER_OK
        size = reachable = assigned = 0
        failed_owner = False
        # per node rather than per slot: slots[j] is the node whose bitmap has bit j, so
        # the slots served add up to 16384 when none is unassigned
        for node in self.nodes.values():
            if node.numslots:
                assigned += node.numslots
                if node.flags & FLAG_FAIL:
                    failed_owner = True
            if node.is_master and node.numslots:
                size += 1
                if not node.flags & (FLAG_FAIL | FLAG_PFAIL):
                    reachable += 1
        if self.require_full_coverage and (assigned < SLOTS or failed_owner):
            new_state = CLUSTER_FAIL
        self.size = size
        if reachable < size // 2 + 1:
            new_state = CLUSTER_FAIL
            self.among_minority_time = now
        if new_state != self.state:
            rejoin = min(max(self.node_timeout, MIN_REJOIN_DELAY), MAX_REJOIN_DELAY)
            if (
                new_state == CLUSTER_OK
                and self.myself.is_master
                and now - self.among_minority_time < rejoin
            ):
                return
            self.host.log(
                f'Cluster state changed: {"ok" if new_state == CLUSTER_OK else "fail"}', '#'
            )
            self.state = new_state

    # -- CLUSTER NODES and nodes.conf ----------------------------------------------------

    def describe_nodes(self, skip: int = 0, use_pport: bool = False) -> str:
        """clusterGenNodesDescription: one line per node without a flag of `skip`. The
        slot runs come from the slot table, as clusterGenNodesSlotsInfo builds them."""
        runs: dict[Node, list[tuple[int, int]]] = {}
        start = 0
        for owner, run in groupby(self.slots):  # runs of one owner, at C speed
            end = start + len(list(run))
            if owner is not None:
                runs.setdefault(owner, []).append((start, end - 1))
            start = end
        lines = []
        for node in self.nodes.values():
            if node.flags & skip:
                continue
            marks = self.open_slot_marks() if node is self.myself else ''
            lines.append(node.describe(use_pport, runs.get(node, []), marks) + '\n')
        return ''.join(lines)

    def open_slot_marks(self) -> str:
        """myself's ' [slot->-target]' and ' [slot-<-source]' marks, in slot order (a
        migrating slot shows only its migration)."""
        marks: dict[int, str] = {}
        for j in _open(self.importing_from):
            frm = self.importing_from[j]
            if frm is not None:
                marks[j] = f' [{j}-<-{frm.name}]'
        for j in _open(self.migrating_to):
            to = self.migrating_to[j]
            if to is not None:
                marks[j] = f' [{j}->-{to.name}]'
        return ''.join(marks[j] for j in sorted(marks))

    def reset(self, hard: bool) -> None:
        """clusterReset's table part: every other node forgotten, no slots, and under
        HARD epochs to 0 and a new name. Replication and data are the caller's."""
        me = self.myself
        if me.is_replica:
            self.set_node_as_master(me)
        self.close_all_slots()
        for j in range(SLOTS):
            self.del_slot(j)
        for node in list(self.nodes.values()):
            if node is not me:
                self.del_node(node)
        if hard:
            self.current_epoch = self.last_vote_epoch = 0
            me.config_epoch = 0
            self.host.log('configEpoch set to 0 via CLUSTER RESET HARD', '#')
            del self.nodes[me.name]
            me.name = random_name()
            self.add_node(me)
            self.host.log(f"Node hard reset, now I'm {me.name}")
        self.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE | TODO_FSYNC_CONFIG)


def _open(targets: list[Node | None], chunk: int = 256) -> list[int]:
    """The slots whose entry is a node, in slot order: a chunk of None entries is
    skipped at C speed (count), so a few open slots cost a pass of C, not of Python."""
    out: list[int] = []
    for base in range(0, SLOTS, chunk):
        part = targets[base : base + chunk]
        if part.count(None) != chunk:
            out.extend(base + i for i, node in enumerate(part) if node is not None)
    return out


def add_replica(master: Node, replica: Node) -> bool:
    """clusterNodeAddSlave."""
    if replica in master.replicas:
        return False
    master.replicas.append(replica)
    master.flags |= FLAG_MIGRATE_TO
    return True


def remove_replica(master: Node, replica: Node) -> bool:
    """clusterNodeRemoveSlave."""
    try:
        master.replicas.remove(replica)
    except ValueError:
        return False
    if not master.replicas:
        master.flags &= ~FLAG_MIGRATE_TO
    return True
