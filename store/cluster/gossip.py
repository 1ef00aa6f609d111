"""The cluster bus's protocol: what a node sends and how it acts on what it receives
(cluster.c's clusterProcessPacket, clusterSendPing, clusterProcessGossipSection and
clusterCron), on the packets of store/cluster/messages.py.

Every 100 ms the cron (re)connects a link to every node with an address, pings a node
every second among five drawn at random (the one whose pong is oldest), pings any node
whose pong is older than half the node timeout, flags PFAIL a node that answered neither
ping nor data within the node timeout, and lets a replica run its election
(store/cluster/failover.py). A PING carries the sender's view of itself (slots, epochs,
master, flags) and gossip about a tenth of the nodes it knows (at least 3) plus every
PFAIL node; that is how failure reports reach a majority, which turns PFAIL into FAIL,
and how nodes introduced by CLUSTER MEET on one node become known to all.

A packet is checked (messages.decode: what clusterProcessPacket rejects is logged and
dropped, the link kept), its sender looked up by the link or the name it gives, and the
epochs, the sender's role and slots, failure reports and addresses updated in that
order, as Redis does, so a mixed cluster of this server and redis-server agrees on every
transition.
"""

from __future__ import annotations

import random
from typing import Protocol

from . import messages as m
from .failover import Failover
from .messages import SLOTS_BYTES, valid_name
from .node import (
    FLAG_FAIL,
    FLAG_HANDSHAKE,
    FLAG_MASTER,
    FLAG_MEET,
    FLAG_MIGRATE_TO,
    FLAG_MYSELF,
    FLAG_NOADDR,
    FLAG_NOFAILOVER,
    FLAG_PFAIL,
    FLAG_SLAVE,
    Node,
    PeerLink,
    mstime,
)
from .state import (
    CLUSTER_FAIL,
    TODO_FSYNC_CONFIG,
    TODO_SAVE_CONFIG,
    TODO_UPDATE_STATE,
    ClusterHost,
    add_replica,
    remove_replica,
)


class Connector(Protocol):
    """The bus as the gossip uses it (store/cluster/bus.py's Bus)."""

    def connect(self, node: Node) -> PeerLink: ...

    def set_inbound(self, node: Node, link: PeerLink) -> None: ...


class Gossip:
    def __init__(self, cluster: ClusterHost) -> None:
        self.cluster = cluster
        self.state = cluster.state
        self.bus: Connector | None = None  # the bus it talks over, once listening
        self.failover = Failover(self)
        self.pings_sent = 0  # cluster_pings_sent: marks nodes already gossiped in a PING
        self.iteration = 0
        self.drop_filter = -1  # DEBUG CLUSTERLINK? / test hook: a packet type to drop

    # -- building and sending ------------------------------------------------------------

    def header(self, mtype: int) -> m.Header:
        """clusterBuildMessageHdr: myself as the packet's sender. A replica announces its
        master's slots and config epoch."""
        state = self.state
        me = state.myself
        master = me.master if me.is_replica and me.master is not None else me
        port, pport, cport = self.cluster.announced_ports()
        mflags = bytes(3)
        if me.is_master and self.failover.mf_end:
            mflags = bytes((m.FLAG0_PAUSED, 0, 0))
        return m.Header(
            type=mtype,
            port=port,
            current_epoch=state.current_epoch,
            config_epoch=master.config_epoch,
            offset=self.cluster.repl_offset(),
            sender=me.name.encode(),
            myslots=bytes(master.slots),
            slaveof=me.master.name.encode() if me.master is not None else m.NULL_NAME,
            myip=self.cluster.server.config['cluster-announce-ip'][: m.IP_MAX],
            pport=pport,
            cport=cport,
            flags=me.flags & 0xFFFF,
            state=state.state,
            mflags=mflags,
        )

    def send(self, link: PeerLink | None, data: bytes, mtype: int) -> None:
        """clusterSendMessage."""
        if link is None:
            return
        link.send(data)
        if mtype < m.TYPE_COUNT:
            self.state.stats_sent[mtype] += 1

    def broadcast(self, data: bytes, mtype: int) -> None:
        """clusterBroadcastMessage: to every node but myself and those in handshake."""
        for node in list(self.state.nodes.values()):
            if node.flags & (FLAG_MYSELF | FLAG_HANDSHAKE):
                continue
            self.send(node.link, data, mtype)

    def send_ping(self, link: PeerLink, mtype: int) -> None:
        """clusterSendPing: a PING, PONG or MEET with gossip about a tenth of the nodes
        (3 at least, drawn at random, fresh ones only) and about every PFAIL node."""
        state = self.state
        me = state.myself
        self.pings_sent += 1
        mark = self.pings_sent
        nodes = list(state.nodes.values())
        freshnodes = len(nodes) - 2
        wanted = max(len(nodes) // 10, 3)
        wanted = min(wanted, freshnodes)
        if not link.inbound and mtype == m.PING and link.node is not None:
            link.node.ping_sent = mstime()
        header = self.header(mtype)
        entries: list[m.Gossip] = []
        tries = wanted * 3
        while freshnodes > 0 and len(entries) < wanted and tries > 0:
            tries -= 1
            node = random.choice(nodes)
            if node is me or node.flags & FLAG_PFAIL:
                continue
            if node.flags & (FLAG_HANDSHAKE | FLAG_NOADDR) or (
                node.link is None and node.numslots == 0
            ):
                freshnodes -= 1  # (not quite right, as in Redis, but saves the CPU)
                continue
            if node.last_in_ping_gossip == mark:
                continue
            entries.append(gossip_entry(node))
            node.last_in_ping_gossip = mark
            freshnodes -= 1
        pfail_wanted = state.stats_pfail_nodes
        if pfail_wanted:
            for node in nodes:
                if pfail_wanted <= 0:
                    break
                if node.flags & (FLAG_HANDSHAKE | FLAG_NOADDR) or not node.flags & FLAG_PFAIL:
                    continue
                entries.append(gossip_entry(node))
                pfail_wanted -= 1
        data = m.encode_ping(header, entries, me.hostname or None)
        self.send(link, data, mtype)

    def broadcast_pong(self, local_replicas_only: bool = False) -> None:
        """clusterBroadcastPong: our new configuration, at once, to every node (or to
        the replicas of our shard)."""
        state = self.state
        me = state.myself
        for node in list(state.nodes.values()):
            if node.link is None or node is me or node.in_handshake:
                continue
            if local_replicas_only:
                if not (
                    node.is_replica
                    and node.master is not None
                    and (node.master is me or node.master is me.master)
                ):
                    continue
            self.send_ping(node.link, m.PONG)

    def send_fail(self, name: str) -> None:
        data = m.encode_fail(self.header(m.FAIL), name.encode())
        self.broadcast(data, m.FAIL)

    def send_update(self, link: PeerLink | None, node: Node) -> None:
        """clusterSendUpdate: tell a node with a stale view who serves `node`'s slots."""
        if link is None:
            return
        data = m.encode_update(
            self.header(m.UPDATE), node.config_epoch, node.name.encode(), bytes(node.slots)
        )
        self.send(link, data, m.UPDATE)

    def propagate_publish(self, channel: bytes, message: bytes, sharded: bool) -> None:
        """clusterPropagatePublish: PUBLISH to every node; SPUBLISH to my shard's nodes."""
        mtype = m.PUBLISHSHARD if sharded else m.PUBLISH
        data = m.encode_publish(self.header(mtype), channel, message)
        if not sharded:
            self.broadcast(data, mtype)
            return
        me = self.state.myself
        primary = me if me.is_master else me.master
        if primary is None:
            return
        for node in (primary, *primary.replicas):
            if node is not me:
                self.send(node.link, data, mtype)

    # -- links ---------------------------------------------------------------------------

    def link_connected(self, link: PeerLink) -> None:
        """clusterLinkConnectHandler: the first packet on a new outbound link is a PING,
        or a MEET for a node CLUSTER MEET named. A reconnect keeps the time of the ping
        still unanswered, so a node that keeps dropping links is still detected."""
        node = link.node
        if node is None:
            return
        old_ping_sent = node.ping_sent
        self.send_ping(link, m.MEET if node.flags & FLAG_MEET else m.PING)
        if old_ping_sent:
            node.ping_sent = old_ping_sent
        node.flags &= ~FLAG_MEET

    def sender_of(self, link: PeerLink, header: m.Header) -> Node | None:
        """getNodeFromLinkAndMsg: the link's node once past its handshake, else the node
        the packet names; an accepted link learns its node here."""
        node = link.node
        if node is not None and not node.in_handshake:
            return node
        sender = self.state.lookup(header.sender)
        if sender is not None and node is None and link.inbound and self.bus is not None:
            self.bus.set_inbound(sender, link)
        return sender

    # -- receiving -------------------------------------------------------------------------

    def process(self, link: PeerLink, packet: bytes) -> None:
        """clusterProcessPacket, for one whole packet read from `link`."""
        state = self.state
        cluster = self.cluster
        mtype = int.from_bytes(packet[12:14], 'big') if len(packet) >= 14 else -1
        if 0 <= mtype < m.TYPE_COUNT:
            state.stats_received[mtype] += 1
        try:
            msg = m.decode(packet)
        except m.MalformedMessage as e:
            cluster.log(f'Received invalid {m.type_name(mtype)} packet: {e}', '#')
            return
        if mtype == self.drop_filter:
            cluster.log('Dropping packet that matches debug drop filter', '#')
            return
        hdr = msg.header
        now = mstime()
        sender = self.sender_of(link, hdr)
        if sender is not None:
            sender.data_received = now
        sender_config_epoch = 0
        if sender is not None and not sender.in_handshake:
            sender_current_epoch = hdr.current_epoch
            sender_config_epoch = hdr.config_epoch
            if sender_current_epoch > state.current_epoch:
                state.current_epoch = sender_current_epoch
            if sender_config_epoch > sender.config_epoch:
                sender.config_epoch = sender_config_epoch
                state.do_before_sleep(TODO_SAVE_CONFIG | TODO_FSYNC_CONFIG)
            sender.repl_offset = hdr.offset
            sender.repl_offset_time = now
            self.failover.master_offset_seen(sender, hdr)
        if mtype in m.PING_TYPES:
            body = msg.body
            assert isinstance(body, m.Ping)
            if not self.process_ping(link, hdr, body, sender, sender_config_epoch, now):
                return
        elif mtype == m.FAIL:
            body = msg.body
            assert isinstance(body, m.Fail)
            about = body.nodename.decode('latin-1')
            if sender is None:
                cluster.log(
                    f'Ignoring FAIL message from unknown node {hdr.sender.decode("latin-1")} '
                    f'about {about}'
                )
                return
            failing = state.lookup(about)
            if failing is not None and not failing.flags & (FLAG_FAIL | FLAG_MYSELF):
                cluster.log(
                    f'FAIL message received from {hdr.sender.decode("latin-1")} about {about}'
                )
                failing.flags = (failing.flags | FLAG_FAIL) & ~FLAG_PFAIL
                failing.fail_time = now
                state.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)
        elif mtype in m.PUBLISH_TYPES:
            body = msg.body
            assert isinstance(body, m.Publish)
            if sender is None:
                return
            cluster.deliver_publish(body.channel, body.message, mtype == m.PUBLISHSHARD)
        elif mtype == m.FAILOVER_AUTH_REQUEST:
            if sender is None:
                return
            self.failover.vote_if_needed(sender, hdr)
        elif mtype == m.FAILOVER_AUTH_ACK:
            if sender is None:
                return
            self.failover.vote_received(sender, hdr.current_epoch)
        elif mtype == m.MFSTART:
            if sender is None or sender.master is not state.myself:
                return
            self.failover.manual_failover_requested(sender, link)
        elif mtype == m.UPDATE:
            body = msg.body
            assert isinstance(body, m.Update)
            if sender is None:
                return
            node = state.lookup(body.nodename)
            if node is None or node.config_epoch >= body.config_epoch:
                return
            if node.is_replica:
                state.set_node_as_master(node)
            node.config_epoch = body.config_epoch
            state.do_before_sleep(TODO_SAVE_CONFIG | TODO_FSYNC_CONFIG)
            state.update_slots_config_with(node, body.config_epoch, body.slots)
        elif mtype == m.MODULE:
            return  # no modules here: nobody to deliver it to
        else:
            cluster.log(f'Received unknown packet type: {mtype}', '#')

    def process_ping(
        self,
        link: PeerLink,
        hdr: m.Header,
        body: m.Ping,
        sender: Node | None,
        sender_config_epoch: int,
        now: int,
    ) -> bool:
        """The PING / PONG / MEET part of clusterProcessPacket. False when the link was
        freed (the caller stops)."""
        state = self.state
        cluster = self.cluster
        me = state.myself
        mtype = hdr.type
        if mtype in (m.PING, m.MEET):
            # our address as the peer reached us, unless we announce one
            if (mtype == m.MEET or not me.ip) and not cluster.server.config['cluster-announce-ip']:
                if link.local_ip and link.local_ip != me.ip:
                    me.ip = link.local_ip
                    cluster.log(f'IP address for this node updated to {me.ip}', '#')
                    state.do_before_sleep(TODO_SAVE_CONFIG)
            if sender is None and mtype == m.MEET:
                # a node that met us: known from now on, handshake to learn its name
                met = Node(flags=FLAG_HANDSHAKE)
                met.ip = peer_ip(link, hdr)
                met.port, met.pport, met.cport = hdr.port, hdr.pport, hdr.cport
                state.add_node(met)
                state.do_before_sleep(TODO_SAVE_CONFIG)
                self.process_gossip_section(hdr, body, link, None)
            self.send_ping(link, m.PONG)
        if not link.inbound:
            node = link.node
            assert node is not None
            if node.in_handshake:
                if sender is not None:
                    # a node we know under another address: update it, drop the stand-in
                    cluster.log(
                        f'Handshake: we already know node {sender.name}, updating the address '
                        'if needed.',
                        '-',
                    )
                    if self.update_address_if_needed(sender, link, hdr):
                        state.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)
                    cluster.del_node(node)
                    return False
                state.rename(node, hdr.sender.decode('latin-1'))
                cluster.log(f'Handshake with node {node.name} completed.', '.')
                node.flags &= ~FLAG_HANDSHAKE
                node.flags |= hdr.flags & (FLAG_MASTER | FLAG_SLAVE)
                state.do_before_sleep(TODO_SAVE_CONFIG)
            elif node.name.encode() != hdr.sender:
                # the address now answers with another name: it is not that node
                cluster.log(
                    f'PONG contains mismatching sender ID. About node {node.name} added '
                    f'{now - node.ctime} ms ago, having flags {node.flags}',
                    '.',
                )
                node.flags |= FLAG_NOADDR
                node.ip = ''
                node.port = node.pport = node.cport = 0
                link.free()
                state.do_before_sleep(TODO_SAVE_CONFIG)
                return False
        if sender is not None:
            sender.flags = (sender.flags & ~FLAG_NOFAILOVER) | (hdr.flags & FLAG_NOFAILOVER)
        if (
            sender is not None
            and mtype == m.PING
            and not sender.in_handshake
            and self.update_address_if_needed(sender, link, hdr)
        ):
            state.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)
        if not link.inbound and mtype == m.PONG:
            peer = link.node
            assert peer is not None
            peer.pong_received = now
            peer.ping_sent = 0
            if peer.timed_out:
                peer.flags &= ~FLAG_PFAIL
                state.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)
            elif peer.failed:
                state.clear_failure_if_needed(peer)
        if sender is None:
            return True
        # the sender's role
        if hdr.slaveof == m.NULL_NAME:
            state.set_node_as_master(sender)
        else:
            master = state.lookup(hdr.slaveof)
            if sender.is_master:
                state.del_node_slots(sender)
                sender.flags = (sender.flags & ~(FLAG_MASTER | FLAG_MIGRATE_TO)) | FLAG_SLAVE
                state.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)
            if master is not None and sender.master is not master:
                if sender.master is not None:
                    remove_replica(sender.master, sender)
                add_replica(master, sender)
                sender.master = master
                state.do_before_sleep(TODO_SAVE_CONFIG)
        # the sender's slots (a replica's are its master's)
        sender_master = sender if sender.is_master else sender.master
        dirty = sender_master is not None and bytes(sender_master.slots) != hdr.myslots
        if sender.is_master and dirty:
            state.update_slots_config_with(sender, sender_config_epoch, hdr.myslots)
        if dirty:
            # the sender claims slots a node of a greater epoch serves: tell it (only
            # slots it claims and does not serve in our table can be such, so only those
            # are walked; cluster.c walks all 16384)
            claimed = int.from_bytes(hdr.myslots, 'little')
            served = int.from_bytes(sender.slots, 'little')
            others = (claimed & ~served).to_bytes(SLOTS_BYTES, 'little')
            for slot in m.iter_slots(others):
                owner = state.slots[slot]
                if owner is sender or owner is None or state.slot_unclaimed(slot):
                    continue
                if owner.config_epoch > sender_config_epoch:
                    cluster.log(
                        f'Node {sender.name} has old slots configuration, sending an '
                        f'UPDATE message about {owner.name}',
                        '-',
                    )
                    self.send_update(sender.link, owner)
                    break
        if me.is_master and sender.is_master and sender_config_epoch == me.config_epoch:
            if state.handle_epoch_collision(sender):
                cluster.save_config_or_die(True)
        self.process_gossip_section(hdr, body, link, sender)
        if sender.hostname != (body.hostname or ''):
            sender.hostname = body.hostname or ''
            state.do_before_sleep(TODO_SAVE_CONFIG)
        return True

    def process_gossip_section(
        self, hdr: m.Header, body: m.Ping, link: PeerLink, sender: Node | None
    ) -> None:
        """clusterProcessGossipSection: failure reports from masters, fresher pong
        times, new addresses of failed nodes, and nodes we did not know (from a known
        sender only, and not ones we were told to forget)."""
        state = self.state
        cluster = self.cluster
        me = state.myself
        timeout = state.node_timeout
        now = mstime()
        if sender is None:
            sender = link.node if link.node is not None else state.lookup(hdr.sender)
        for g in body.gossip:
            flags = g.flags
            node = state.lookup(g.nodename)
            if node is not None:
                if sender is not None and sender.is_master and node is not me:
                    if flags & (FLAG_FAIL | FLAG_PFAIL):
                        if node.add_failure_report(sender, now):
                            cluster.log(
                                f'Node {sender.name} reported node {node.name} as not reachable.',
                                '-',
                            )
                        self.mark_failing_if_needed(node)
                    elif node.del_failure_report(sender, timeout, now):
                        cluster.log(
                            f'Node {sender.name} reported node {node.name} is back online.', '-'
                        )
                if (
                    not flags & (FLAG_FAIL | FLAG_PFAIL)
                    and node.ping_sent == 0
                    and node.failure_reports(timeout, now) == 0
                ):
                    pongtime = g.pong_received * 1000
                    if pongtime <= now + 500 and pongtime > node.pong_received:
                        node.pong_received = pongtime
                if (
                    node.flags & (FLAG_FAIL | FLAG_PFAIL)
                    and not flags & FLAG_NOADDR
                    and not flags & (FLAG_FAIL | FLAG_PFAIL)
                    and (
                        node.ip.lower() != g.ip.lower()
                        or node.port != g.port
                        or node.cport != g.cport
                    )
                ):
                    if node.link is not None:
                        node.link.free()
                    node.ip, node.port, node.pport, node.cport = g.ip, g.port, g.pport, g.cport
                    node.flags &= ~FLAG_NOADDR
            elif (
                sender is not None
                and not flags & FLAG_NOADDR
                and valid_name(g.nodename)
                and not state.blacklisted(g.nodename.decode('latin-1'))
            ):
                node = Node(g.nodename.decode('latin-1'), flags & 0xFFFF)
                node.ip, node.port, node.pport, node.cport = g.ip, g.port, g.pport, g.cport
                state.add_node(node)

    def mark_failing_if_needed(self, node: Node) -> None:
        """markNodeAsFailingIfNeeded: PFAIL becomes FAIL with a majority's reports, and
        every node hears of it."""
        if self.state.failing_by_quorum(node):
            self.state.mark_failed(node)
            self.send_fail(node.name)

    def update_address_if_needed(self, node: Node, link: PeerLink, hdr: m.Header) -> bool:
        """nodeUpdateAddressIfNeeded: a known node that PINGs from a new address (a
        restart elsewhere): its outbound link is reconnected there; myself, its replica,
        follows it."""
        if link is node.link:
            return False
        ip = peer_ip(link, hdr)
        if not ip:
            return False
        if (
            node.port == hdr.port
            and node.cport == hdr.cport
            and node.pport == hdr.pport
            and node.ip == ip
        ):
            return False
        node.ip, node.port, node.pport, node.cport = ip, hdr.port, hdr.pport, hdr.cport
        if node.link is not None:
            node.link.free()
        node.flags &= ~FLAG_NOADDR
        self.cluster.log(f'Address updated for node {node.name}, now {node.ip}:{node.port}', '#')
        me = self.state.myself
        if me.is_replica and me.master is node:
            self.cluster.set_master(node.ip, node.port)
        return True

    # -- the cron ----------------------------------------------------------------------

    def cron(self) -> None:
        """clusterCron, every 100 ms."""
        state = self.state
        cluster = self.cluster
        bus = self.bus
        assert bus is not None
        self.iteration += 1
        me = state.myself
        me.hostname = cluster.server.config['cluster-announce-hostname']
        timeout = state.node_timeout
        handshake_timeout = max(timeout, 1000)
        now = mstime()
        state.stats_pfail_nodes = 0
        limit = cluster.server.config['cluster-link-sendbuf-limit']
        for node in list(state.nodes.values()):
            if limit:
                for link in (node.link, node.inbound_link):
                    if link is not None and link.send_buffer_used() > limit:
                        cluster.log(
                            f'Freeing cluster link({"from" if link.inbound else "to"} node '
                            f'{node.name}, used memory: {link.send_buffer_used()}) due to '
                            'exceeding send buffer memory limit.',
                            '#',
                        )
                        link.free()
                        state.links_buffer_limit_exceeded += 1
            if node.flags & (FLAG_MYSELF | FLAG_NOADDR):
                continue
            if node.flags & FLAG_PFAIL:
                state.stats_pfail_nodes += 1
            if node.in_handshake and now - node.ctime > handshake_timeout:
                cluster.del_node(node)
                continue
            if node.link is None:
                bus.connect(node)
        nodes = list(state.nodes.values())
        if self.iteration % 10 == 0:
            # once a second, ping the node of five drawn whose pong is oldest
            best: Node | None = None
            for _ in range(5):
                node = random.choice(nodes)
                if node.link is None or node.ping_sent != 0:
                    continue
                if node.flags & (FLAG_MYSELF | FLAG_HANDSHAKE):
                    continue
                if best is None or best.pong_received > node.pong_received:
                    best = node
            if best is not None and best.link is not None:
                self.send_ping(best.link, m.PING)
        orphaned = max_replicas = this_replicas = 0
        update_state = False
        for node in nodes:
            now = mstime()
            if node.flags & (FLAG_MYSELF | FLAG_NOADDR | FLAG_HANDSHAKE):
                continue
            if me.is_replica and node.is_master and not node.failed:
                ok = node.ok_replicas()
                if ok == 0 and node.numslots > 0 and node.flags & FLAG_MIGRATE_TO:
                    orphaned += 1
                max_replicas = max(max_replicas, ok)
                if me.master is node:
                    this_replicas = ok
            ping_delay = now - node.ping_sent
            data_delay = now - node.data_received
            link = node.link
            if (
                link is not None
                and now - link.ctime > timeout
                and node.ping_sent
                and ping_delay > timeout / 2
                and data_delay > timeout / 2
            ):
                link.free()  # a link that may be stuck: reconnect
                link = None
            if link is not None and node.ping_sent == 0 and now - node.pong_received > timeout / 2:
                self.send_ping(link, m.PING)
                continue
            if self.failover.mf_end and me.is_master and self.failover.mf_replica is node:
                if link is not None:
                    self.send_ping(link, m.PING)
                    continue
            if node.ping_sent == 0:
                continue
            delay = min(ping_delay, data_delay)
            if delay > timeout and not node.flags & (FLAG_PFAIL | FLAG_FAIL):
                cluster.log(f'*** NODE {node.name} possibly failing', '.')
                node.flags |= FLAG_PFAIL
                update_state = True
        if (
            me.is_replica
            and cluster.server.replica_link is None
            and me.master is not None
            and me.master.has_addr
        ):
            cluster.set_master(me.master.ip, me.master.port)
        self.failover.check_manual_timeout()
        if me.is_replica:
            self.failover.handle_manual_failover()
            self.failover.handle_replica_failover()
            if (
                orphaned
                and max_replicas >= 2
                and this_replicas == max_replicas
                and state.allow_replica_migration
            ):
                self.failover.handle_replica_migration(max_replicas)
        if update_state or state.state == CLUSTER_FAIL:
            state.update_state()


def gossip_entry(node: Node) -> m.Gossip:
    """clusterSetGossipEntry."""
    return m.Gossip(
        nodename=node.name.encode(),
        ping_sent=node.ping_sent // 1000,
        pong_received=node.pong_received // 1000,
        ip=node.ip,
        port=node.port,
        cport=node.cport,
        flags=node.flags & 0xFFFF,
        pport=node.pport,
    )


def peer_ip(link: PeerLink, hdr: m.Header) -> str:
    """nodeIp2String: the address the sender announces, else the one its connection
    comes from."""
    if hdr.myip:
        return hdr.myip
    return link.peer[0] if link.peer else ''
