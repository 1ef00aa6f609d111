"""Replica elections, manual failover and replica migration (cluster.c's
clusterHandleSlaveFailover, clusterSendFailoverAuthIfNeeded, clusterHandleManualFailover,
clusterHandleSlaveMigration).

Automatic failover: when its master is FAIL, a replica whose data is not too old waits
500-1000 ms plus a second per replica of its master with a greater replication offset
(its rank, so the most up-to-date replica usually asks first), then bumps the current
epoch and asks every master for its vote (FAILOVER_AUTH_REQUEST). A master votes once
per epoch, for a replica of a FAIL master, not twice for replicas of one master within
twice the node timeout, and not when one of the claimed slots has a newer owner. With the
votes of a majority of the masters serving slots, the replica takes its master's slots
under the election's epoch and tells everyone with a PONG. An election that got no
majority in twice the node timeout (at least 2 s) is retried after twice that.

Manual failover (CLUSTER FAILOVER): the replica asks its master to pause writes
(MFSTART); the master then PINGs it with its offset and the PAUSED flag; once the replica
has processed up to that offset it runs the election at once, votes forced (FORCEACK).
FORCE skips the master's agreement; TAKEOVER skips the election too (a new config epoch
without consensus). A manual failover that does not complete in 5 s is abandoned.

Replica migration: a replica of the master with the most working replicas moves to a
master left without any, after 5 s, when its own master keeps more than
cluster-migration-barrier working replicas and it has the least name among those
replicas.
"""

from __future__ import annotations

import random
import time
from typing import Protocol

from . import messages as m
from .node import FLAG_FAIL, FLAG_MIGRATE_TO, FLAG_NOFAILOVER, FLAG_PFAIL, Node, PeerLink, mstime
from .state import (
    TODO_FSYNC_CONFIG,
    TODO_HANDLE_FAILOVER,
    TODO_HANDLE_MANUALFAILOVER,
    TODO_SAVE_CONFIG,
    TODO_UPDATE_STATE,
    ClusterHost,
    ClusterState,
)

MF_TIMEOUT = 5000  # ms a manual failover may take
MIGRATION_DELAY = 5000  # ms a master must stay orphaned before a replica migrates to it
RELOG_PERIOD = 300  # s: the same reason a failover cannot happen is logged this often

CANT_NONE = 0
CANT_DATA_AGE = 1
CANT_WAITING_DELAY = 2
CANT_EXPIRED = 3
CANT_WAITING_VOTES = 4
CANT_MESSAGES = {
    CANT_DATA_AGE: 'Disconnected from master for longer than allowed. Please check the '
    "'cluster-replica-validity-factor' configuration option.",
    CANT_WAITING_DELAY: 'Waiting the delay before I can start a new failover.',
    CANT_EXPIRED: 'Failover attempt expired.',
    CANT_WAITING_VOTES: 'Waiting for votes, but majority still not reached.',
}


class Messenger(Protocol):
    """What the elections send through (store/cluster/gossip.py's Gossip)."""

    cluster: ClusterHost
    state: ClusterState

    def header(self, mtype: int) -> m.Header: ...

    def send(self, link: PeerLink | None, data: bytes, mtype: int) -> None: ...

    def broadcast(self, data: bytes, mtype: int) -> None: ...

    def broadcast_pong(self, local_replicas_only: bool = False) -> None: ...

    def send_ping(self, link: PeerLink, mtype: int) -> None: ...


class Failover:
    def __init__(self, gossip: Messenger) -> None:
        self.gossip = gossip
        self.cluster = gossip.cluster
        self.state = gossip.state
        # the election (a replica's)
        self.auth_time = 0  # ms: when the election starts, or started
        self.auth_count = 0  # votes received
        self.auth_sent = False
        self.auth_rank = 0
        self.auth_epoch = 0
        self.cant_reason = CANT_NONE
        self.last_log_time = 0.0
        # manual failover
        self.mf_end = 0  # ms: its deadline, 0 when none runs
        self.mf_replica: Node | None = None  # (a master's) the replica taking over
        self.mf_master_offset = -1  # (a replica's) the paused master's offset
        self.mf_can_start = False

    # -- a master's side ---------------------------------------------------------------

    def vote_if_needed(self, node: Node, hdr: m.Header) -> None:
        """clusterSendFailoverAuthIfNeeded: a master's vote for `node`'s election."""
        state = self.state
        me = state.myself
        log = self.cluster.log
        if me.is_replica or me.numslots == 0:
            return
        if hdr.current_epoch < state.current_epoch:
            log(
                f'Failover auth denied to {node.name}: reqEpoch ({hdr.current_epoch}) < '
                f'curEpoch({state.current_epoch})',
                '#',
            )
            return
        if state.last_vote_epoch == state.current_epoch:
            log(
                f'Failover auth denied to {node.name}: already voted for epoch '
                f'{state.current_epoch}',
                '#',
            )
            return
        master = node.master
        force_ack = bool(hdr.mflags[0] & m.FLAG0_FORCEACK)
        if node.is_master:
            log(f'Failover auth denied to {node.name}: it is a master node', '#')
            return
        if master is None:
            log(f"Failover auth denied to {node.name}: I don't know its master", '#')
            return
        if not master.failed and not force_ack:
            log(f'Failover auth denied to {node.name}: its master is up', '#')
            return
        now = mstime()
        if now - master.voted_time < state.node_timeout * 2:
            log(
                f"Failover auth denied to {node.name}: can't vote about this master before "
                f'{state.node_timeout * 2 - (now - master.voted_time)} milliseconds',
                '#',
            )
            return
        for slot in m.iter_slots(hdr.myslots):
            owner = state.slots[slot]
            if owner is None or state.slot_unclaimed(slot):
                continue
            if owner.config_epoch <= hdr.config_epoch:
                continue
            log(
                f'Failover auth denied to {node.name}: slot {slot} epoch '
                f'({owner.config_epoch}) > reqEpoch ({hdr.config_epoch})',
                '#',
            )
            return
        state.last_vote_epoch = state.current_epoch
        master.voted_time = now
        state.do_before_sleep(TODO_SAVE_CONFIG | TODO_FSYNC_CONFIG)
        if node.link is not None:
            g = self.gossip
            g.send(
                node.link, m.encode_header_only(g.header(m.FAILOVER_AUTH_ACK)), m.FAILOVER_AUTH_ACK
            )
        log(f'Failover auth granted to {node.name} for epoch {state.current_epoch}', '#')

    def manual_failover_requested(self, replica: Node, link: PeerLink) -> None:
        """MFSTART from a replica of ours: pause writes, and PING it with our offset."""
        self.reset_manual_failover()
        now = mstime()
        self.mf_end = now + MF_TIMEOUT
        self.mf_replica = replica
        self.cluster.server.pause.failover(True)
        self.cluster.log(f'Manual failover requested by replica {replica.name}.', '#')
        self.gossip.send_ping(link, m.PING)

    # -- a replica's side --------------------------------------------------------------

    def vote_received(self, sender: Node, current_epoch: int) -> None:
        """FAILOVER_AUTH_ACK: a vote counts from a master with slots, for this
        election."""
        if sender.is_master and sender.numslots > 0 and current_epoch >= self.auth_epoch:
            self.auth_count += 1
            self.state.do_before_sleep(TODO_HANDLE_FAILOVER)

    def master_offset_seen(self, sender: Node, hdr: m.Header) -> None:
        """A PING from our master paused for our manual failover gives the offset to
        reach before the election."""
        me = self.state.myself
        if (
            self.mf_end
            and me.is_replica
            and me.master is sender
            and hdr.mflags[0] & m.FLAG0_PAUSED
            and self.mf_master_offset == -1
        ):
            self.mf_master_offset = sender.repl_offset
            self.state.do_before_sleep(TODO_HANDLE_MANUALFAILOVER)
            self.cluster.log(
                'Received replication offset for paused master manual failover: '
                f'{self.mf_master_offset}',
                '#',
            )

    def start_manual(self, force: bool, takeover: bool) -> None:
        """CLUSTER FAILOVER [FORCE|TAKEOVER], once the command checked myself is a
        replica of a known master (and, without FORCE, that the master is up)."""
        self.reset_manual_failover()
        self.mf_end = mstime() + MF_TIMEOUT
        log = self.cluster.log
        if takeover:
            log('Taking over the master (user request).', '#')
            self.state.bump_epoch_without_consensus()
            self.replace_master()
        elif force:
            log('Forced failover user request accepted.', '#')
            self.mf_can_start = True
        else:
            log('Manual failover user request accepted.', '#')
            master = self.state.myself.master
            if master is not None and master.link is not None:
                g = self.gossip
                g.send(master.link, m.encode_header_only(g.header(m.MFSTART)), m.MFSTART)

    def reset_manual_failover(self) -> None:
        if self.mf_replica is not None:
            self.cluster.server.pause.failover(False)
        self.mf_end = 0
        self.mf_can_start = False
        self.mf_replica = None
        self.mf_master_offset = -1

    def check_manual_timeout(self) -> None:
        if self.mf_end and self.mf_end < mstime():
            self.cluster.log('Manual failover timed out.', '#')
            self.reset_manual_failover()

    def handle_manual_failover(self) -> None:
        """clusterHandleManualFailover: start once the paused master's stream is in."""
        if not self.mf_end or self.mf_can_start or self.mf_master_offset == -1:
            return
        if self.mf_master_offset == self.cluster.repl_offset():
            self.mf_can_start = True
            self.cluster.log(
                'All master replication stream processed, manual failover can start.', '#'
            )
            self.state.do_before_sleep(TODO_HANDLE_FAILOVER)
            return
        self.state.do_before_sleep(TODO_HANDLE_MANUALFAILOVER)

    def rank(self) -> int:
        """clusterGetSlaveRank: replicas of my master ahead of me (that may fail over)."""
        me = self.state.myself
        master = me.master
        if master is None:
            return 0
        mine = self.cluster.repl_offset()
        return sum(
            1
            for r in master.replicas
            if r is not me and not r.flags & FLAG_NOFAILOVER and r.repl_offset > mine
        )

    def log_cant(self, reason: int) -> None:
        """clusterLogCantFailover: why not, logged when it changes or every 5 minutes,
        and not in the first moments after the master failed."""
        now = time.time()
        if reason == self.cant_reason and now - self.last_log_time < RELOG_PERIOD:
            return
        self.cant_reason = reason
        master = self.state.myself.master
        quiet = self.state.node_timeout + 5000
        if master is not None and master.failed and mstime() - master.fail_time < quiet:
            return
        self.last_log_time = now
        self.cluster.log(f'Currently unable to failover: {CANT_MESSAGES[reason]}', '#')

    def data_age(self) -> int:
        """ms since the master was last heard of (a replica's)."""
        link = self.cluster.server.replica_link
        if link is None:
            return 0
        if link.up():
            return int((time.time() - link.last_io) * 1000)
        # never up: down since ever, as Redis counts it (repl_down_since 0)
        return int(time.time() - link.down_since) * 1000

    def handle_replica_failover(self) -> None:
        """clusterHandleSlaveFailover."""
        state = self.state
        me = state.myself
        cfg = self.cluster.server.config
        now = mstime()
        auth_age = now - self.auth_time
        quorum = state.size // 2 + 1
        manual = self.mf_end != 0 and self.mf_can_start
        state.todo &= ~TODO_HANDLE_FAILOVER
        timeout = state.node_timeout
        auth_timeout = max(timeout * 2, 2000)
        auth_retry = auth_timeout * 2
        master = me.master
        if (
            me.is_master
            or master is None
            or (not master.failed and not manual)
            or (cfg['cluster-replica-no-failover'] and not manual)
            or master.numslots == 0
        ):
            self.cant_reason = CANT_NONE
            return
        age = self.data_age()
        if age > timeout:
            age -= timeout
        factor = cfg['cluster-replica-validity-factor']
        if factor and age > cfg['repl-ping-replica-period'] * 1000 + timeout * factor:
            if not manual:
                self.log_cant(CANT_DATA_AGE)
                return
        if auth_age > auth_retry:
            self.auth_time = now + 500 + random.randrange(500)
            self.auth_count = 0
            self.auth_sent = False
            self.auth_rank = self.rank()
            self.auth_time += self.auth_rank * 1000
            if self.mf_end:
                self.auth_time = now
                self.auth_rank = 0
                state.do_before_sleep(TODO_HANDLE_FAILOVER)
            self.cluster.log(
                f'Start of election delayed for {self.auth_time - now} milliseconds '
                f'(rank #{self.auth_rank}, offset {self.cluster.repl_offset()}).',
                '#',
            )
            self.gossip.broadcast_pong(local_replicas_only=True)
            return
        if not self.auth_sent and not self.mf_end:
            rank = self.rank()
            if rank > self.auth_rank:
                added = (rank - self.auth_rank) * 1000
                self.auth_time += added
                self.auth_rank = rank
                self.cluster.log(
                    f'Replica rank updated to #{rank}, added {added} milliseconds of delay.',
                    '#',
                )
        if now < self.auth_time:
            self.log_cant(CANT_WAITING_DELAY)
            return
        if auth_age > auth_timeout:
            self.log_cant(CANT_EXPIRED)
            return
        if not self.auth_sent:
            state.current_epoch += 1
            self.auth_epoch = state.current_epoch
            self.cluster.log(f'Starting a failover election for epoch {state.current_epoch}.', '#')
            self.request_votes()
            self.auth_sent = True
            state.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE | TODO_FSYNC_CONFIG)
            return
        if self.auth_count >= quorum:
            self.cluster.log("Failover election won: I'm the new master.", '#')
            if me.config_epoch < self.auth_epoch:
                me.config_epoch = self.auth_epoch
                self.cluster.log(
                    f'configEpoch set to {me.config_epoch} after successful failover', '#'
                )
            self.replace_master()
        else:
            self.log_cant(CANT_WAITING_VOTES)

    def request_votes(self) -> None:
        """clusterRequestFailoverAuth: to every node (only masters with slots answer)."""
        g = self.gossip
        header = g.header(m.FAILOVER_AUTH_REQUEST)
        if self.mf_end:
            header.mflags = bytes((header.mflags[0] | m.FLAG0_FORCEACK, 0, 0))
        g.broadcast(m.encode_header_only(header), m.FAILOVER_AUTH_REQUEST)

    def replace_master(self) -> None:
        """clusterFailoverReplaceYourMaster: myself a master with my old master's slots,
        and every node told at once."""
        state = self.state
        me = state.myself
        old = me.master
        if me.is_master or old is None:
            return
        state.set_node_as_master(me)
        self.cluster.server.replication.promote()
        for a, b in old.slot_ranges():
            for slot in range(a, b + 1):
                state.del_slot(slot)
                state.add_slot(me, slot)
        state.update_state()
        self.cluster.save_config_or_die(True)
        self.gossip.broadcast_pong()
        self.reset_manual_failover()

    def handle_replica_migration(self, max_replicas: int) -> None:
        """clusterHandleSlaveMigration."""
        state = self.state
        me = state.myself
        mymaster = me.master
        if state.state != 0 or mymaster is None:
            return
        ok = sum(1 for r in mymaster.replicas if not r.flags & (FLAG_FAIL | FLAG_PFAIL))
        if ok <= self.cluster.server.config['cluster-migration-barrier']:
            return
        candidate = me
        target: Node | None = None
        now = mstime()
        for node in state.nodes.values():
            okr = node.ok_replicas() if node.is_master else 0
            orphaned = (
                not node.is_replica
                and not node.failed
                and bool(node.flags & FLAG_MIGRATE_TO)
                and okr == 0
            )
            if orphaned:
                if target is None and node.numslots > 0:
                    target = node
                if not node.orphaned_time:
                    node.orphaned_time = now
            else:
                node.orphaned_time = 0
            if okr == max_replicas:
                for r in node.replicas:
                    if r.name < candidate.name:
                        candidate = r
        if target is not None and candidate is me and now - target.orphaned_time > MIGRATION_DELAY:
            self.cluster.log(f'Migrating to orphaned master {target.name}', '#')
            state.set_master(target)
