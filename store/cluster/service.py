"""The cluster service of a node started with `cluster-enabled yes`: what the server holds
as `server.cluster` (None in standalone mode).

It ties the parts together and to the server, as cluster.c's clusterInit, clusterCron and
clusterBeforeSleep do:

- at start, nodes.conf is locked and loaded, or a new master named at random is written
  (store/cluster/nodes_conf.py); the bus listens on cluster-port (the port + 10000 unless
  set);
- every 100 ms the cron (store/cluster/gossip.py) reconnects links, pings, detects
  failures and runs a replica's elections (store/cluster/failover.py);
- what a packet or a command changed in the table is acted on once, soon after (`todo`
  bits, the loop's next turn): the cluster's state recomputed, nodes.conf saved and
  fsynced.

The server side of what the cluster needs (`ClusterHost`): keys by slot (the shards' slot
index, store/db_slice), replication (REPLICAOF's machinery: a cluster replica is a
replica of its master's address), shard channels, and the log.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from ..pubsub.channel_store import CHANNELS, SHARD_CHANNELS
from ..pubsub.shard_slots import remove_shard_channels_in_slot
from . import nodes_conf
from .node import FLAG_MASTER, FLAG_MYSELF, PORT_INCR, Node
from .state import (
    TODO_FSYNC_CONFIG,
    TODO_HANDLE_FAILOVER,
    TODO_HANDLE_MANUALFAILOVER,
    TODO_SAVE_CONFIG,
    TODO_UPDATE_STATE,
    ClusterState,
)

if TYPE_CHECKING:
    from .bus import Bus
    from .gossip import Gossip

CRON_PERIOD = 0.1  # s: clusterCron runs every 100 ms


class ClusterStartError(Exception):
    """The node cannot start in cluster mode; the message is Redis's log line."""


class Cluster:
    def __init__(self, server: Any) -> None:
        self.server = server
        cfg = server.config
        self.state = ClusterState(self, cfg['cluster-node-timeout'])
        self.apply_config()
        self.config_file = os.path.join(cfg['dir'], cfg['cluster-config-file'])
        self.lock_fd = -1
        self.bus: Bus | None = None
        self.gossip: Gossip | None = None
        self.cron_handle: asyncio.TimerHandle | None = None
        self.todo_scheduled = False

    def apply_config(self) -> None:
        """The cluster-* parameters CONFIG SET may change."""
        cfg = self.server.config
        state = self.state
        state.node_timeout = cfg['cluster-node-timeout']
        state.require_full_coverage = cfg['cluster-require-full-coverage']
        state.allow_replica_migration = cfg['cluster-allow-replica-migration']

    # -- start ---------------------------------------------------------------------------

    def load(self) -> None:
        """clusterInit's first half: lock and load nodes.conf, or create myself."""
        try:
            self.lock_fd = nodes_conf.lock(self.config_file)
            loaded = nodes_conf.load(self.config_file, self.state)
        except (nodes_conf.CorruptConfig, nodes_conf.LockError) as e:
            raise ClusterStartError(str(e)) from None
        except OSError as e:
            raise ClusterStartError(
                f'Loading the cluster node config from {self.config_file}: {e.strerror}'
            ) from None
        me = self.state.myself
        if loaded:
            self.log(f"Node configuration loaded, I'm {me.name}")
        else:
            self.log(f"No cluster configuration found, I'm {me.name}")
            self.save_config_or_die(True)
        me.flags |= FLAG_MYSELF
        if not (me.flags & FLAG_MASTER) and not me.is_replica:
            me.flags |= FLAG_MASTER

    def announced_ports(self) -> tuple[int, int, int]:
        """deriveAnnouncedPorts: the client port, plaintext port and bus port myself
        announces (cluster-announce-* when set)."""
        cfg = self.server.config
        port = self.server.port
        cport = cfg['cluster-port'] or port + PORT_INCR
        return (
            cfg['cluster-announce-port'] or port,
            0,
            cfg['cluster-announce-bus-port'] or cport,
        )

    async def start(self) -> None:
        """clusterInit's second half, once the client port is known: listen on the bus
        port and start the cron."""
        from .bus import Bus
        from .gossip import Gossip

        cfg = self.server.config
        port = self.server.port
        if not cfg['cluster-port'] and port > 65535 - PORT_INCR:
            raise ClusterStartError(
                'Redis port number too high. Cluster communication port is 10,000 port '
                'numbers higher than your Redis port. Your Redis port number must be 55535 '
                'or less.'
            )
        me = self.state.myself
        me.port, me.pport, me.cport = self.announced_ports()
        self.update_myself_ip()
        me.hostname = cfg['cluster-announce-hostname']
        self.gossip = Gossip(self)
        self.bus = self.gossip.bus = Bus(self, self.gossip)
        cport = cfg['cluster-port'] or port + PORT_INCR
        try:
            await self.bus.listen(cfg['bind'], cport)
        except OSError as e:
            raise ClusterStartError(
                f'Failed listening on port {cport} (cluster), aborting. ({e.strerror})'
            ) from None
        self.cron_handle = asyncio.get_running_loop().call_later(CRON_PERIOD, self.cron)

    def update_myself_ip(self) -> None:
        """clusterUpdateMyselfIp: cluster-announce-ip, else what peers tell us (MEET)."""
        ip = self.server.config['cluster-announce-ip']
        if ip:
            self.state.myself.ip = ip

    def verify_with_data(self) -> bool:
        """verifyClusterConfigWithData, after loading the data: keys of slots nobody
        serves make myself their owner, keys of slots another node serves open them as
        importing. False when databases other than 0 hold keys."""
        state = self.state
        if state.myself.is_replica:
            return True
        ks = self.server.keyspace
        if any(ks.dbsize(db) for db in range(1, ks.databases)):
            return False
        changed = False
        for slot in range(16384):
            if not self.count_keys_in_slot(slot):
                continue
            owner = state.slots[slot]
            if owner is state.myself or state.importing_from[slot] is not None:
                continue
            changed = True
            if owner is None:
                self.log(
                    f'I have keys for unassigned slot {slot}. Taking responsibility for it.', '#'
                )
                state.add_slot(state.myself, slot)
            else:
                self.log(
                    f'I have keys for slot {slot}, but the slot is assigned to another node. '
                    'Setting it to importing state.',
                    '#',
                )
                state.importing_from[slot] = owner
        if changed:
            self.save_config_or_die(True)
        return True

    async def close(self) -> None:
        if self.cron_handle is not None:
            self.cron_handle.cancel()
        if self.bus is not None:
            await self.bus.close()

    # -- the cron and the work left for the loop's next turn -------------------------

    def cron(self) -> None:
        try:
            if self.gossip is not None:
                self.gossip.cron()
        except Exception as e:  # the cron must keep running
            self.server.log_exception('Cluster cron', e)
        self.before_sleep()
        self.cron_handle = asyncio.get_running_loop().call_later(CRON_PERIOD, self.cron)

    def wake(self) -> None:
        """Something set `state.todo`: act on it once this turn's work is done."""
        loop = self.server.loop
        if not self.todo_scheduled and loop is not None:  # (before start: the cron will)
            self.todo_scheduled = True
            loop.call_soon(self.before_sleep)

    def before_sleep(self) -> None:
        """clusterBeforeSleep."""
        self.todo_scheduled = False
        state = self.state
        flags, state.todo = state.todo, 0
        failover = self.gossip.failover if self.gossip is not None else None
        if failover is not None:
            if flags & TODO_HANDLE_MANUALFAILOVER:
                if state.myself.is_replica:
                    failover.handle_manual_failover()
                    failover.handle_replica_failover()
            elif flags & TODO_HANDLE_FAILOVER:
                failover.handle_replica_failover()
        if flags & TODO_UPDATE_STATE:
            state.update_state()
        if flags & TODO_SAVE_CONFIG:
            self.save_config_or_die(bool(flags & TODO_FSYNC_CONFIG))

    def save_config(self, fsync: bool) -> None:
        """clusterSaveConfig; raises OSError."""
        self.state.todo &= ~(TODO_SAVE_CONFIG | (TODO_FSYNC_CONFIG if fsync else 0))
        nodes_conf.save(self.config_file, self.state, fsync)

    def save_config_or_die(self, fsync: bool) -> None:
        try:
            self.save_config(fsync)
        except OSError:
            self.log("Fatal: can't update cluster config file.", '#')
            os._exit(1)

    def do_before_sleep(self, flags: int) -> None:
        self.state.do_before_sleep(flags)

    # -- ClusterHost: what the cluster asks of the server -------------------------------

    def log(self, msg: str, level: str = '*') -> None:
        self.server.log(msg, level)

    def count_keys_in_slot(self, slot: int) -> int:
        ks = self.server.keyspace
        return int(ks.slot_shard[slot].count_in_slot(slot))

    def keys_in_slot(self, slot: int, count: int) -> list[bytes]:
        ks = self.server.keyspace
        return list(ks.slot_shard[slot].keys_in_slot(slot, count))

    def delete_keys_in_slot(self, slot: int) -> int:
        """delKeysInSlot: the keys of a slot this node lost, each deleted as the server
        deletes a key (propagateDeletion: DEL, or UNLINK under lazyfree-lazy-server-del,
        to the AOF and the replicas; WATCH and tracking told)."""
        server = self.server
        ks = server.keyspace
        aof = server.persistence.aof
        name = b'UNLINK' if server.config['lazyfree-lazy-server-del'] else b'DEL'
        deleted = 0
        while keys := self.keys_in_slot(slot, 1000):
            for key in keys:
                if ks.delete(0, key):
                    deleted += 1
                    if aof.propagating:
                        aof.feed(
                            0,
                            b'*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n' % (len(name), name, len(key), key),
                        )
        return deleted

    def remove_channels_in_slot(self, slot: int) -> None:
        remove_shard_channels_in_slot(self.server.pubsub, slot)

    def set_master(self, ip: str, port: int) -> None:
        self.server.replication.replicate(ip, port)

    def repl_offset(self) -> int:
        """A master's master_repl_offset, a replica's processed offset (the PINGs'
        `offset`, which elections rank replicas by)."""
        link = self.server.replica_link
        if self.state.myself.is_replica and link is not None:
            return max(int(link.applied_offset()), 0)  # -1 before the first sync
        return int(self.server.replication.offset)

    def deliver_publish(self, channel: bytes, message: bytes, sharded: bool) -> None:
        """A PUBLISH or SPUBLISH another node sent over the bus: to our subscribers."""
        self.server.pubsub.publish(channel, message, SHARD_CHANNELS if sharded else CHANNELS)

    # -- what CLUSTER's subcommands ask -------------------------------------------------

    def meet(self, ip: str, port: int, cport: int) -> str | None:
        """CLUSTER MEET: None, or 'EINVAL' / 'EAGAIN' as clusterStartHandshake fails."""
        err = self.state.start_handshake(ip, port, cport)
        if err is None:
            self.do_before_sleep(TODO_SAVE_CONFIG)
        return err

    def forget(self, node: Node) -> None:
        """CLUSTER FORGET: out of the table, kept out of gossip for a minute."""
        self.state.blacklist_add(node)
        self.del_node(node)
        self.do_before_sleep(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)

    def del_node(self, node: Node) -> None:
        """clusterDelNode with its links closed (freeClusterNode)."""
        if self.bus is not None:
            self.bus.drop_links(node)
        self.state.del_node(node)

    def replicate(self, node: Node) -> None:
        """CLUSTER REPLICATE (checks done by the command)."""
        self.state.set_master(node)
        if self.gossip is not None:
            self.gossip.failover.reset_manual_failover()
        self.do_before_sleep(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)

    def reset(self, hard: bool) -> None:
        """CLUSTER RESET: a replica stops replicating and empties its data first."""
        state = self.state
        if state.myself.is_replica:
            self.server.replication.promote()
            self.server.keyspace.flushall()
        for node in list(state.nodes.values()):
            if node is not state.myself and self.bus is not None:
                self.bus.drop_links(node)
        state.reset(hard)
        if self.gossip is not None:
            self.gossip.failover.reset_manual_failover()
        self.wake()

    def failover(self, force: bool, takeover: bool) -> None:
        """CLUSTER FAILOVER, once the command's checks passed (store/cluster/failover.py)."""
        if self.gossip is not None:
            self.gossip.failover.start_manual(force, takeover)

    def links(self) -> list[Any]:
        """CLUSTER LINKS: every node's links (store/cluster/bus.py's Link)."""
        return list(self.bus.links()) if self.bus is not None else []

    def broadcast_pong(self, local_replicas_only: bool = False) -> None:
        if self.gossip is not None:
            self.gossip.broadcast_pong(local_replicas_only)

    def propagate_publish(self, channel: bytes, message: bytes, sharded: bool) -> None:
        """clusterPropagatePublish: PUBLISH to every node, SPUBLISH to my shard's."""
        if self.gossip is not None:
            self.gossip.propagate_publish(channel, message, sharded)


__all__ = [
    'TODO_FSYNC_CONFIG',
    'TODO_SAVE_CONFIG',
    'TODO_UPDATE_STATE',
    'Cluster',
    'ClusterStartError',
]
