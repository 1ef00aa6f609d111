"""store/cluster/messages.py against a real redis-server 7.0.15 on its cluster bus.

A fake node of our own (a random 40-hex name, a listening socket for its bus port) MEETs
a redis-server started in cluster mode, with messages built by `encode`; everything
redis-server sends back is read with `frame_length` and `decode`: the PONG to the MEET, the
PING it sends when it connects back to the fake node, the PUBLISH it broadcasts. What
redis-server makes of our messages is read with ordinary commands (CLUSTER NODES, INFO,
SHARDS, a subscriber). Redis processes a link's frames in order and answers every PING
with a PONG once the PING is processed, so a PING sent after a message and its PONG
received is the barrier that says the message was handled: no sleeps.

The fake node answers every PING redis-server sends it with a PONG (a thread per accepted
link), as a node does; messages it receives are queued for the test to inspect.

Last, what Redis does with bad frames, since our reader must behave alike: a bad signature
or a totlen below the header length drops the link (clusterReadHandler); any other invalid
frame (version, lengths) is ignored and the link kept (clusterProcessPacket) -- and
`decode` rejects each of them with MalformedMessage.
"""

import queue
import socket
import struct
import threading
import time
from types import SimpleNamespace

import pytest
import redis

from conftest import WAIT, free_port, spawn_redis, stop, wait_for_port, wait_until
from store.cluster import messages as m
from store.cluster.messages import (
    FAIL,
    FLAG0_EXT_DATA,
    HEADER_LEN,
    MEET,
    NODE_MASTER,
    NODE_MYSELF,
    NULL_NAME,
    PING,
    PONG,
    PUBLISH,
    PUBLISHSHARD,
    UPDATE,
    Gossip,
    Header,
    MalformedMessage,
    Ping,
    Publish,
    decode,
    encode,
    encode_fail,
    encode_ping,
    encode_publish,
    encode_update,
    frame_length,
)

pytestmark = pytest.mark.differential

CLUSTER_FAIL_STATE = 1  # clusterState.state: not every slot is served


class Bus:
    """One cluster bus connection: whole frames out and in."""

    def __init__(self, sock):
        self.sock = sock
        sock.settimeout(WAIT)

    def send(self, data):
        self.sock.sendall(data)

    def _exactly(self, n):
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise EOFError('the peer closed the link')
            out += chunk
        return bytes(out)

    def recv_frame(self):
        head = self._exactly(8)
        return head + self._exactly(frame_length(head) - 8)

    def recv(self):
        return decode(self.recv_frame())

    def barrier(self, sender):
        """A PING from `sender` and its PONG: everything sent before has been handled."""
        self.send(encode_ping(Header(PING, sender=sender, myip='127.0.0.1')))
        pong = self.recv()
        assert pong.header.type == PONG
        return pong

    def assert_dropped(self):
        """The peer closes the link (whatever it sent first is read and discarded)."""
        try:
            while self.sock.recv(65536):
                pass
        except ConnectionResetError:
            pass

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class FakeNode:
    """A cluster node of our own: a name, a bus port that accepts redis-server's links
    and answers its PINGs, and the header it sends."""

    def __init__(self):
        self.name = m.random_name()
        self.port = free_port()  # the client port it announces (nothing listens there)
        self.slots = m.slots_bitmap(range(16000, 16100))
        self.hostname = 'fake-host'
        self.listener = socket.socket()
        self.listener.bind(('127.0.0.1', 0))
        self.listener.listen()
        self.listener.settimeout(0.05)
        self.cport = self.listener.getsockname()[1]
        self.received = queue.Queue()  # (raw frame, Message) from redis-server's links
        self.links = []
        self.stopping = False
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def header(self, mtype, **kw):
        fields = dict(
            port=self.port,
            current_epoch=3,
            config_epoch=2,
            offset=12345,
            sender=self.name,
            myslots=self.slots,
            myip='127.0.0.1',
            cport=self.cport,
            flags=NODE_MASTER,
        )
        fields.update(kw)
        return Header(mtype, **fields)

    def ping(self, mtype=PING, gossip=()):
        return encode_ping(self.header(mtype), gossip, self.hostname)

    def connect(self, port):
        bus = Bus(socket.create_connection(('127.0.0.1', port), timeout=WAIT))
        self.links.append(bus)
        return bus

    def _accept(self):
        while not self.stopping:
            try:
                sock, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            bus = Bus(sock)
            self.links.append(bus)
            t = threading.Thread(target=self._serve, args=(bus,), daemon=True)
            self.threads.append(t)
            t.start()

    def _serve(self, bus):
        try:
            while True:
                raw = bus.recv_frame()
                msg = decode(raw)
                self.received.put((raw, msg))
                if msg.header.type in (PING, MEET):
                    bus.send(self.ping(PONG))
        except (OSError, EOFError):
            pass

    def next_received(self, mtype):
        """The next message of type `mtype` redis-server sent to this node."""
        deadline = time.monotonic() + WAIT
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f'no {m.type_name(mtype)} from redis-server within {WAIT} s'
            try:
                raw, msg = self.received.get(timeout=left)
            except queue.Empty:
                continue
            if msg.header.type == mtype:
                return raw, msg

    def close(self):
        self.stopping = True
        for bus in self.links:
            bus.close()
        self.listener.close()
        for t in self.threads:
            t.join(WAIT)


@pytest.fixture
def node(tmp_path):
    """redis-server 7.0.15 in cluster mode on 127.0.0.1, with a hostname to announce; a
    node timeout long enough that no link of the test is judged failing."""
    bus_port = free_port()
    port = free_port()
    while port == bus_port:
        port = free_port()
    proc, port = spawn_redis(
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        str(tmp_path / 'nodes.conf'),
        '--cluster-port',
        str(bus_port),
        '--cluster-announce-hostname',
        'some-host',
        '--cluster-node-timeout',
        '60000',
        '--dir',
        str(tmp_path),
        port=port,
    )
    client = redis.Redis('127.0.0.1', port, protocol=2)
    try:
        wait_for_port(bus_port, proc)
        yield SimpleNamespace(port=port, bus_port=bus_port, r=client)
    finally:
        client.close()
        stop(proc)


@pytest.fixture
def fake():
    f = FakeNode()
    yield f
    f.close()


def nodes(r):
    """CLUSTER NODES as {name: fields}."""
    out = {}
    for line in r.execute_command('CLUSTER', 'NODES').decode().splitlines():
        fields = line.split()
        out[fields[0].encode()] = fields
    return out


def info(r):
    text = r.execute_command('CLUSTER', 'INFO').decode()
    return dict(line.split(':', 1) for line in text.split('\r\n') if ':' in line)


def shard_node(r, name):
    """CLUSTER SHARDS's entry for node `name`, as a dict."""
    for shard in r.execute_command('CLUSTER', 'SHARDS'):
        for n in dict(zip(shard[::2], shard[1::2]))[b'nodes']:
            n = dict(zip(n[::2], n[1::2]))
            if n[b'id'] == name:
                return n
    raise AssertionError(f'{name!r} not in CLUSTER SHARDS')


def join(node, fake):
    """MEET redis-server from `fake` and complete the handshake; returns the fake's link
    to it, the PONG to the MEET (raw, decoded) and the PING it sent back (raw, decoded)."""
    out = fake.connect(node.bus_port)
    out.send(fake.ping(MEET))
    raw_pong = out.recv_frame()
    # the MEET is processed before its PONG is queued: the node is known, maybe still
    # under a random name in handshake
    assert any(
        f[1].startswith(f'127.0.0.1:{fake.port}@{fake.cport}') for f in nodes(node.r).values()
    )
    ping = fake.next_received(PING)  # redis-server connects to fake.cport; fake answers

    def joined():
        fields = nodes(node.r).get(fake.name)
        return fields is not None and fields[2] == 'master'

    wait_until(joined, 'the handshake')
    return out, (raw_pong, decode(raw_pong)), ping


def test_meet_pong_and_ping(node, fake):
    r = node.r
    r.execute_command('CLUSTER', 'ADDSLOTSRANGE', 0, 8191)
    myid = r.execute_command('CLUSTER', 'MYID')
    out, (raw_pong, pong), (raw_ping, ping) = join(node, fake)

    for raw, msg, mtype in ((raw_pong, pong, PONG), (raw_ping, ping, PING)):
        h = msg.header
        assert h.type == mtype
        assert h.sender == myid and m.valid_name(h.sender)
        assert (h.port, h.cport, h.pport) == (node.port, node.bus_port, 0)
        assert h.flags == NODE_MYSELF | NODE_MASTER
        assert h.myslots == m.slots_bitmap(range(8192))
        assert list(m.slot_ranges(h.myslots)) == [(0, 8191)]
        assert h.slaveof == NULL_NAME
        assert h.myip == ''  # no cluster-announce-ip: the receiver takes the peer address
        assert (h.current_epoch, h.config_epoch, h.offset) == (0, 0, 0)
        assert h.state == CLUSTER_FAIL_STATE
        assert h.extensions == 1 and h.mflags == bytes([FLAG0_EXT_DATA, 0, 0])
        # two nodes known (itself and us, in handshake): nobody to gossip about
        assert h.count == 0 and msg.body == Ping([], 'some-host')
        assert len(raw) == HEADER_LEN + 8 + 16
        assert encode(msg) == raw  # byte for byte what redis-server wrote

    # a PING from us now that we are known: redis-server takes our slots, epochs,
    # offset, hostname, and the gossip about a node T it has never heard of
    t_name, t_port, t_cport = m.random_name(), free_port(), free_port()
    t = Gossip(t_name, 0, 0, '127.0.0.1', t_port, t_cport, NODE_MASTER, 0)
    out.send(fake.ping(PING, [t]))
    pong = out.recv()
    assert pong.header.type == PONG and pong.header.sender == myid
    for g in pong.body.gossip:  # three nodes: it may gossip about us, or T
        assert g.nodename in (fake.name, t_name) and g.ip == '127.0.0.1'
        assert g.flags & NODE_MASTER
        if g.nodename == fake.name:
            assert (g.port, g.cport) == (fake.port, fake.cport)
        else:
            assert (g.port, g.cport) == (t_port, t_cport)
    assert pong.header.count == len(pong.body.gossip) <= 1

    known = nodes(r)
    ours = known[fake.name]
    assert ours[1] == f'127.0.0.1:{fake.port}@{fake.cport},fake-host'
    assert ours[2] == 'master' and ours[3] == '-'
    assert ours[6:] == ['2', 'connected', '16000-16099']  # config epoch 2, our slots
    assert known[t_name][1] == f'127.0.0.1:{t_port}@{t_cport}'
    assert known[t_name][2] == 'master'
    assert known[myid][2] == 'myself,master'
    i = info(r)
    assert i['cluster_current_epoch'] == '3' and i['cluster_known_nodes'] == '3'
    shard = shard_node(r, fake.name)
    assert shard[b'replication-offset'] == 12345 and shard[b'hostname'] == b'fake-host'
    assert shard[b'port'] == fake.port and shard[b'ip'] == b'127.0.0.1'


def test_update_and_fail(node, fake):
    r = node.r
    out, _, _ = join(node, fake)
    t_name = m.random_name()
    t = Gossip(t_name, 0, 0, '127.0.0.1', free_port(), free_port(), NODE_MASTER, 0)
    out.send(fake.ping(PING, [t]))
    out.recv()
    assert nodes(r)[t_name][6] == '0'  # (its link: redis-server keeps trying to connect)

    # UPDATE: T serves 10000-10009 at config epoch 7 (unassigned slots: taken as they are)
    out.send(encode_update(fake.header(UPDATE), 7, t_name, m.slots_bitmap(range(10000, 10010))))
    out.barrier(fake.name)
    t_fields = nodes(r)[t_name]
    assert t_fields[6] == '7' and t_fields[8:] == ['10000-10009']
    # an UPDATE that is not newer than what it knows changes nothing
    out.send(encode_update(fake.header(UPDATE), 7, t_name, m.slots_bitmap([10010])))
    out.barrier(fake.name)
    assert nodes(r)[t_name][8:] == ['10000-10009']

    # FAIL about T from a known master: T is failed at once
    assert 'fail' not in nodes(r)[t_name][2].split(',')
    out.send(encode_fail(fake.header(FAIL), t_name))
    out.barrier(fake.name)
    assert nodes(r)[t_name][2] == 'master,fail'
    assert info(r)['cluster_stats_messages_fail_received'] == '1'


def test_publish_both_ways(node, fake):
    r = node.r
    r.execute_command('CLUSTER', 'ADDSLOTSRANGE', 0, 8191)
    sub = r.pubsub()
    sub.subscribe('news')
    shard_channel = next(
        c
        for c in (f'shard-{i}' for i in range(1000))
        if r.execute_command('CLUSTER', 'KEYSLOT', c) < 8192
    )
    sub.ssubscribe(shard_channel)

    def next_message():
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            msg = sub.get_message(timeout=deadline - time.monotonic())
            if msg is not None and msg['type'] in ('message', 'smessage'):
                return msg
        raise AssertionError('no message')

    # before the handshake, from a node it does not know: dropped (the sender is checked)
    stranger = fake.connect(node.bus_port)
    stranger_name = m.random_name()
    stranger.send(encode_publish(Header(PUBLISH, sender=stranger_name), b'news', b'stranger'))
    stranger.barrier(stranger_name)

    out, _, _ = join(node, fake)
    out.send(encode_publish(fake.header(PUBLISH), b'news', b'hello\0\xffworld'))
    msg = next_message()
    assert (msg['type'], msg['channel'], msg['data']) == ('message', b'news', b'hello\0\xffworld')
    out.send(encode_publish(fake.header(PUBLISHSHARD), shard_channel.encode(), b'sharded'))
    msg = next_message()
    assert (msg['channel'], msg['data']) == (shard_channel.encode(), b'sharded')
    assert msg['type'] == 'smessage'
    sub.close()

    # and a PUBLISH on redis-server is broadcast to us over the bus
    assert r.publish('elsewhere', b'from redis\0') == 0
    raw, got = fake.next_received(PUBLISH)
    assert got.body == Publish(b'elsewhere', b'from redis\0')
    assert got.header.sender == r.execute_command('CLUSTER', 'MYID')
    assert len(raw) == HEADER_LEN + 8 + 9 + 11 and encode(got) == raw


def _retotal(b):
    return b[:4] + struct.pack('>I', len(b)) + b[8:]


def test_bad_frames(node, fake):
    r = node.r
    # dropped by clusterReadHandler: not a bus message, or totlen below the header
    hello = m.encode_header_only(Header(m.MFSTART))
    for frame in (
        b'GET / HTTP/1.1\r\nHost: x\r\n\r\n',
        b'RCmb' + struct.pack('>I', 100) + hello[8:100],
        b'RCmb' + struct.pack('>I', HEADER_LEN - 1) + hello[8 : HEADER_LEN - 1],
    ):
        with pytest.raises(MalformedMessage):
            frame_length(frame[:8])
        with pytest.raises(MalformedMessage):
            decode(frame)
        bus = fake.connect(node.bus_port)
        bus.send(frame)
        bus.assert_dropped()

    # ignored by clusterProcessPacket, the link kept: each is a MEET from a node it does
    # not know, which would add that node if it were acted upon
    def meet(**kw):
        return encode_ping(
            Header(MEET, sender=m.random_name(), myip='127.0.0.1', port=1, cport=2, **kw)
        )

    good = meet()
    version_2 = good[:8] + struct.pack('>H', 2) + good[10:]
    too_long = _retotal(good + bytes(m.GOSSIP_LEN))  # count 0, one entry's worth more
    count_too_big = good[:14] + struct.pack('>H', 1) + good[16:]
    with_host = encode_ping(Header(MEET, sender=m.random_name()), [], 'h')
    unpadded = with_host[:HEADER_LEN] + struct.pack('>I', 12) + with_host[HEADER_LEN + 4 :]
    past_end = with_host[:HEADER_LEN] + struct.pack('>I', 24) + with_host[HEADER_LEN + 4 :]
    unknown = _retotal(m.encode_header_only(Header(42, sender=m.random_name())) + b'anything')
    bad = [version_2, too_long, count_too_big, unpadded, past_end]
    for frame in bad:
        with pytest.raises(MalformedMessage):
            decode(frame)
    assert decode(unknown).header.type == 42  # Redis too takes it as well formed

    before = info(r)
    link = fake.connect(node.bus_port)
    # a frame sent in two parts: redis-server waits for totlen bytes, it does not guess
    link.send(version_2[:100])
    link.send(b''.join([version_2[100:], *bad[1:], unknown]))
    stranger = m.random_name()
    pong = link.barrier(stranger)  # a PING from anyone gets a PONG: the link is alive
    assert pong.header.sender == r.execute_command('CLUSTER', 'MYID')
    assert len(nodes(r)) == 1  # no MEET was acted upon
    after = info(r)
    # counted as received before they are checked; only the barrier got a PONG
    sent = int(before.get('cluster_stats_messages_pong_sent', 0))
    assert int(after['cluster_stats_messages_pong_sent']) == sent + 1
    received = int(before.get('cluster_stats_messages_meet_received', 0))
    assert int(after['cluster_stats_messages_meet_received']) == received + len(bad)
    # and the link still carries a good MEET
    link.send(good)
    assert link.recv().header.type == PONG
    assert len(nodes(r)) == 2
