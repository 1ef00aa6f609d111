"""The cluster bus's connections (cluster.c's clusterLink, accept, connect, read and write
handlers), on the node's event loop.

Two nodes talk over two TCP connections, one each way: the link a node opens to a peer
(`node.link`, outbound) carries its PINGs and gets PONGs back; the link the peer opened
(`node.inbound_link`) brings the peer's PINGs, answered on it. An accepted link knows its
node only once a packet names a known sender.

Framing: a packet starts with `RCmb` and its total length (store/cluster/messages.py's
`frame_length`); the reader waits for that many bytes, never reserving room for a length
the peer declared but has not sent, then hands the whole packet to the gossip. A bad
signature or a length below the header's closes the link, with Redis's log line.

Writes go to the transport at once (asyncio buffers what the socket does not take).
`send_buffer_used` is that buffer, which the cron compares with
cluster-link-sendbuf-limit, closing a link past it as Redis frees it.
"""

from __future__ import annotations

import asyncio
import socket
from typing import TYPE_CHECKING, Any

from .. import listen
from .messages import MalformedMessage, frame_length
from .node import mstime

if TYPE_CHECKING:
    from .gossip import Gossip
    from .node import Node, PeerLink
    from .state import ClusterHost

HEADER_PREFIX = 8  # signature and total length: enough to know a packet's size


class Link(asyncio.Protocol):
    """clusterLink: one connection of the bus."""

    def __init__(self, bus: Bus, node: Node | None, inbound: bool) -> None:
        self.bus = bus
        self.node = node
        self.inbound = inbound
        self.ctime = mstime()
        self.transport: asyncio.Transport | None = None
        self.rcvbuf = bytearray()
        self.pending: list[bytes] = []  # written before the connection is made
        self.closed = False
        self.peer: tuple[str, int] | None = None  # its address as the socket sees it
        self.local_ip = ''  # our address on this connection (connSockName)

    def __repr__(self) -> str:
        node = self.node.name[:8] if self.node else '?'
        return f'<Link {"from" if self.inbound else "to"} {node}>'

    # -- asyncio ------------------------------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        sock = transport.get_extra_info('socket')
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer = transport.get_extra_info('peername')
        if peer:
            self.peer = (peer[0], peer[1])
        local = transport.get_extra_info('sockname')
        if local:
            self.local_ip = local[0]
        if self.closed:  # freed while connecting
            transport.close()
            return
        if self.pending:
            for data in self.pending:
                transport.write(data)
            self.pending = []
        if not self.inbound:
            self.bus.gossip.link_connected(self)

    def data_received(self, data: bytes) -> None:
        buf = self.rcvbuf
        buf += data
        gossip = self.bus.gossip
        while len(buf) >= HEADER_PREFIX and not self.closed:
            try:
                totlen = frame_length(buf)
            except MalformedMessage:
                self.bus.cluster.log(
                    'Bad message length or signature received from Cluster bus.', '#'
                )
                self.free()
                return
            if len(buf) < totlen:
                return
            packet = bytes(buf[:totlen])
            del buf[:totlen]
            try:
                gossip.process(self, packet)
            except Exception as e:  # a packet must never take the node down
                self.bus.cluster.server.log_exception('Cluster bus packet', e)
                self.free()
                return

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.free()

    # -- writes -------------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        """clusterSendMessage's write: queued on the connection."""
        if self.closed:
            return
        if self.transport is None:
            self.pending.append(data)
        else:
            self.transport.write(data)

    def send_buffer_used(self) -> int:
        if self.transport is None:
            return sum(len(d) for d in self.pending)
        return int(self.transport.get_write_buffer_size())

    def send_buffer_allocated(self) -> int:
        return self.send_buffer_used()

    # -- end ----------------------------------------------------------------------------

    def free(self) -> None:
        """freeClusterLink: closed, and no longer its node's link."""
        if self.closed:
            return
        self.closed = True
        self.bus.forget(self)
        if self.transport is not None:
            self.transport.close()
            self.transport = None
        node = self.node
        if node is not None:
            if node.link is self:
                node.link = None
            elif node.inbound_link is self:
                node.inbound_link = None


class Bus:
    def __init__(self, cluster: ClusterHost, gossip: Gossip) -> None:
        self.cluster = cluster
        self.gossip = gossip
        self.servers: list[asyncio.AbstractServer] = []
        self.all: set[Link] = set()  # every open link, accepted ones before they have a node

    async def listen(self, bind: str, port: int) -> None:
        """The bus port on every address of `bind`, as the client port listens
        (store/listen.py: `*`, `::*`, optional `-` addresses); OSError when taken."""
        loop = asyncio.get_running_loop()
        for sock in listen.open_tcp(self.cluster.server, bind, port):
            self.servers.append(await loop.create_server(self.accept, sock=sock))

    def accept(self) -> Link:
        """clusterAcceptHandler: a link with no node yet."""
        link = Link(self, None, inbound=True)
        self.all.add(link)
        return link

    def connect(self, node: Node) -> Link:
        """The cron's reconnect: a link to `node`'s bus port; its first packet, once
        connected, is a PING (a MEET for a node we were told to meet)."""
        link = Link(self, node, inbound=False)
        node.link = link
        self.all.add(link)
        loop = asyncio.get_running_loop()
        task = loop.create_task(self._connect(link, node.ip, node.cport))
        task.add_done_callback(_ignore_result)
        return link

    async def _connect(self, link: Link, ip: str, port: int) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.create_connection(lambda: link, ip, port)
        except OSError as e:
            node = link.node
            if node is not None:
                self.cluster.log(
                    f'Connection with Node {node.name} at {ip}:{port} failed: {e.strerror or e}',
                    '-',
                )
            link.free()

    def forget(self, link: Link) -> None:
        self.all.discard(link)

    def links(self) -> list[PeerLink]:
        """CLUSTER LINKS: every node's links, outbound then inbound."""
        out: list[PeerLink] = []
        for node in self.cluster.state.nodes.values():
            if node.link is not None:
                out.append(node.link)
            if node.inbound_link is not None:
                out.append(node.inbound_link)
        return out

    def set_inbound(self, node: Node, link: PeerLink) -> None:
        """setClusterNodeToInboundClusterLink: an accepted link learns its node; an older
        inbound link from that node is closed."""
        old = node.inbound_link
        if old is not None and old is not link:
            self.cluster.log(f'Replacing inbound link from node {node.name}', '.')
            old.free()
        node.inbound_link = link
        link.node = node

    def drop_links(self, node: Node) -> None:
        for link in (node.link, node.inbound_link):
            if link is not None:
                link.free()

    async def close(self) -> None:
        for server in self.servers:
            server.close()
        for link in list(self.all):
            link.free()


def _ignore_result(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()
