"""A node of the cluster as this node sees it (cluster.h's clusterNode), and the one line
CLUSTER NODES and nodes.conf give it.

Every node of the table, myself included, is a `Node`: its 40-hex name, its flags (the
bus's CLUSTER_NODE_* bits, which are also what the line's flags field spells), the address
it announced, the slots it serves as a bitmap in the bus's layout (slot j is bit j & 7 of
byte j >> 3, so a PING's `myslots` is compared and copied as one bytes object), its master
or its replicas, its config epoch, the times of the last ping sent and pong received (ms,
0 when none is pending), and the failure reports other masters gave about it.

Invariants (kept by store/cluster/state.py, the only writer of slots and replicas):
`numslots` counts the set bits of `slots`; a node is in its master's `replicas` exactly
when its `master` is that node; `fail_reports` maps a reporting master to the time (ms) of
its latest report, in the order the reports first came.
"""

from __future__ import annotations

import time
from typing import Protocol

from . import messages
from .messages import SLOTS_BYTES, slot_ranges

# cluster.h's CLUSTER_NODE_* flags: a node's state, sent as is in PINGs and gossip
FLAG_MASTER = 1
FLAG_SLAVE = 2
FLAG_PFAIL = 4  # we could not reach it within the node timeout
FLAG_FAIL = 8  # a majority of masters agreed it failed
FLAG_MYSELF = 16
FLAG_HANDSHAKE = 32  # its name is not known yet: a MEET or gossip created it
FLAG_NOADDR = 64
FLAG_MEET = 128  # the next PING to it is a MEET
FLAG_MIGRATE_TO = 256  # a master a replica may migrate to
FLAG_NOFAILOVER = 512
PORT_INCR = 10000  # the bus port is the client port + 10000 unless cluster-port says

# representClusterNodeFlags's table, in its order
FLAG_NAMES = (
    (FLAG_MYSELF, 'myself'),
    (FLAG_MASTER, 'master'),
    (FLAG_SLAVE, 'slave'),
    (FLAG_PFAIL, 'fail?'),
    (FLAG_FAIL, 'fail'),
    (FLAG_HANDSHAKE, 'handshake'),
    (FLAG_NOADDR, 'noaddr'),
    (FLAG_NOFAILOVER, 'nofailover'),
)
FLAG_BY_NAME = {name: flag for flag, name in FLAG_NAMES} | {'noflags': 0}


def mstime() -> int:
    return int(time.time() * 1000)


def random_name() -> str:
    """getRandomHexChars: a new node's name."""
    return messages.random_name().decode()


def flags_text(flags: int) -> str:
    """representClusterNodeFlags: 'myself,master', or 'noflags'."""
    return ','.join(name for flag, name in FLAG_NAMES if flags & flag) or 'noflags'


def ranges_text(ranges: list[tuple[int, int]]) -> str:
    """representSlotInfo: ' 0-5460 5462'."""
    return ''.join(f' {a}' if a == b else f' {a}-{b}' for a, b in ranges)


class PeerLink(Protocol):
    """A bus connection as the gossip sees it (store/cluster/bus.py's Link)."""

    inbound: bool  # accepted from the peer, not opened by us
    node: Node | None  # the peer, once known
    ctime: int  # ms: when it was made
    peer: tuple[str, int] | None  # the peer's address as the socket sees it
    local_ip: str  # our address on it

    def send(self, data: bytes) -> None: ...

    def free(self) -> None: ...

    def send_buffer_used(self) -> int: ...


class Node:
    __slots__ = (
        'name',
        'flags',
        'ctime',
        'config_epoch',
        'slots',
        'numslots',
        'replicas',
        'master',
        'last_in_ping_gossip',
        'ping_sent',
        'pong_received',
        'data_received',
        'fail_time',
        'voted_time',
        'repl_offset_time',
        'orphaned_time',
        'repl_offset',
        'ip',
        'hostname',
        'port',
        'pport',
        'cport',
        'link',
        'inbound_link',
        'fail_reports',
    )

    def __init__(self, name: str | None = None, flags: int = 0) -> None:
        self.name = name or random_name()
        self.flags = flags
        self.ctime = mstime()
        self.config_epoch = 0
        self.slots = bytearray(SLOTS_BYTES)
        self.numslots = 0
        self.replicas: list[Node] = []
        self.master: Node | None = None
        self.last_in_ping_gossip = 0
        self.ping_sent = 0
        self.pong_received = 0
        self.data_received = 0
        self.fail_time = 0
        self.voted_time = 0
        self.repl_offset_time = 0
        self.orphaned_time = 0
        self.repl_offset = 0
        self.ip = ''
        self.hostname = ''
        self.port = 0
        self.pport = 0
        self.cport = 0
        self.link: PeerLink | None = None  # the connection we opened to it
        self.inbound_link: PeerLink | None = None  # the one it opened to us
        self.fail_reports: dict[Node, int] = {}

    def __repr__(self) -> str:
        return f'<Node {self.name[:8]} {self.ip}:{self.port} {flags_text(self.flags)}>'

    # -- flags -------------------------------------------------------------------------

    @property
    def is_master(self) -> bool:
        return bool(self.flags & FLAG_MASTER)

    @property
    def is_replica(self) -> bool:
        return bool(self.flags & FLAG_SLAVE)

    @property
    def in_handshake(self) -> bool:
        return bool(self.flags & FLAG_HANDSHAKE)

    @property
    def has_addr(self) -> bool:
        return not self.flags & FLAG_NOADDR

    @property
    def timed_out(self) -> bool:
        return bool(self.flags & FLAG_PFAIL)

    @property
    def failed(self) -> bool:
        return bool(self.flags & FLAG_FAIL)

    # -- slots -------------------------------------------------------------------------

    def has_slot(self, slot: int) -> bool:
        return bool(self.slots[slot >> 3] & (1 << (slot & 7)))

    def slot_ranges(self) -> list[tuple[int, int]]:
        return slot_ranges(self.slots) if self.numslots else []

    # -- failure reports ---------------------------------------------------------------

    def add_failure_report(self, sender: Node, now: int) -> bool:
        """clusterNodeAddFailureReport: True when `sender` had not reported it yet."""
        new = sender not in self.fail_reports
        self.fail_reports[sender] = now
        return new

    def cleanup_failure_reports(self, node_timeout: int, now: int) -> None:
        """Reports older than twice the node timeout no longer count."""
        limit = node_timeout * 2  # CLUSTER_FAIL_REPORT_VALIDITY_MULT
        for sender, when in list(self.fail_reports.items()):
            if now - when > limit:
                del self.fail_reports[sender]

    def del_failure_report(self, sender: Node, node_timeout: int, now: int) -> bool:
        if self.fail_reports.pop(sender, None) is None:
            return False
        self.cleanup_failure_reports(node_timeout, now)
        return True

    def failure_reports(self, node_timeout: int, now: int) -> int:
        self.cleanup_failure_reports(node_timeout, now)
        return len(self.fail_reports)

    def ok_replicas(self) -> int:
        """clusterCountNonFailingSlaves."""
        return sum(1 for r in self.replicas if not r.failed)

    # -- description -------------------------------------------------------------------

    def describe(
        self,
        use_pport: bool = False,
        ranges: list[tuple[int, int]] | None = None,
        open_slots: str = '',
    ) -> str:
        """clusterGenNodeDescription: the node's CLUSTER NODES line (no newline).
        `ranges` are its slot runs when the caller computed them for every node at once
        (clusterGenNodesSlotsInfo); `open_slots` the migrating/importing marks of myself."""
        port = self.pport if use_pport and self.pport else self.port
        addr = f'{self.ip}:{port}@{self.cport}'
        if self.hostname:
            addr += ',' + self.hostname
        master = self.master
        epoch = master.config_epoch if self.is_replica and master else self.config_epoch
        linked = 'connected' if self.link or self.flags & FLAG_MYSELF else 'disconnected'
        if ranges is None:
            ranges = self.slot_ranges()
        return (
            f'{self.name} {addr} {flags_text(self.flags)} {master.name if master else "-"}'
            f' {self.ping_sent} {self.pong_received} {epoch} {linked}'
            f'{ranges_text(ranges)}{open_slots}'
        )
