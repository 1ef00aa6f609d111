"""Pub/sub over TCP: Redis 7.0 replies (byte transcripts diffed against redis-server),
subscribe-mode rules, glob semantics, redis-py sync/asyncio/RESP3, redis-cli, dispatch
quota fairness, backpressure, output-buffer limits and cleanup."""

import asyncio
import socket
import shutil
import subprocess
import threading
import time

import hiredis
import pytest
import redis
import redis.asyncio

from conftest import redis_cli
from rawconn import pack

from store.pubsub import CHANNELS, PATTERNS
from store.pubsub.channel_store import ChannelStore


# -- raw transcripts --------------------------------------------------------------------------

class RawClient:
    """A socket that sends commands and reads everything the server sends up to the
    reply of a trailing `PING <token>` (allowed in every mode), so transcripts include
    pushes/messages delivered before it."""

    def __init__(self, port, rcvbuf=None):
        self.s = socket.socket()
        if rcvbuf:
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.s.connect(('127.0.0.1', port))
        self.s.settimeout(10)
        self.n = 0

    def send(self, *cmds):
        self.s.sendall(b''.join(pack(*c) for c in cmds))

    def sync(self):
        self.n += 1
        tok = b'sync%d' % self.n
        try:
            self.s.sendall(pack('PING', tok))
        except OSError:
            return b'<closed>'
        end = b'$%d\r\n%s\r\n' % (len(tok), tok)
        buf = b''
        while not buf.endswith(end):
            try:
                d = self.s.recv(1 << 16)
            except ConnectionResetError:
                d = b''
            if not d:
                return buf + b'<closed>'
            buf += d
        return buf

    def close(self):
        self.s.close()


def transcript(port, steps, nclients=2):
    """Run (client index, command or tuple of commands) steps; return what each step
    produced on the wire."""
    clients = [RawClient(port) for _ in range(nclients)]
    log = []
    try:
        for i, cmd in steps:
            clients[i].send(*(cmd if isinstance(cmd, tuple) else (cmd,)))
            log.append((i, cmd, clients[i].sync()))
        for i, c in enumerate(clients):
            log.append((i, 'final', c.sync()))
    finally:
        for c in clients:
            c.close()
    return log


def assert_same_transcript(server, redis_ref, steps):
    want = transcript(redis_ref[1], steps)
    got = transcript(server.port, steps)
    for w, g in zip(want, got):
        assert g == w, f'step {w[0]} {w[1]!r}:\n ours  {g[2]!r}\n redis {w[2]!r}'
    wait_clean(server)


def wait_clean(server, timeout=5):
    """The ChannelStore holds nothing once every test client has gone."""
    end = time.time() + timeout
    while time.time() < end:
        if server.call(lambda: sum(server.server.pubsub.store.counts)) == 0:
            return
        time.sleep(0.01)
    raise AssertionError('ChannelStore not empty after clients left')


RESP2_STEPS = [
    (0, ['UNSUBSCRIBE']), (0, ['PUNSUBSCRIBE']), (0, ['SUNSUBSCRIBE']),
    (0, ['UNSUBSCRIBE', 'a', 'b']), (0, ['PUNSUBSCRIBE', 'p*']),
    (0, ['SUBSCRIBE', 'a', 'b', 'a']), (0, ['PSUBSCRIBE', 'a*', 'a*', 'z?']),
    (0, ['SSUBSCRIBE', 'x', 'y']),
    (1, ['PUBLISH', 'a', 'hello']), (1, ['SPUBLISH', 'x', 'sh']),
    (1, ['PUBLISH', 'x', 'nobody']), (1, ['PUBLISH', 'zz', 'pat']),
    (1, ['PUBSUB', 'NUMPAT']), (1, ['PUBSUB', 'NUMSUB', 'a', 'b', 'x', 'none']),
    (1, ['PUBSUB', 'SHARDNUMSUB', 'x', 'a']), (1, ['PUBSUB', 'CHANNELS', 'b*']),
    (1, ['PUBSUB', 'SHARDCHANNELS', 'y']), (1, ['SPUBLISH', 'a', 'not-sharded']),
    # subscribe mode: only (P|S)(UN)SUBSCRIBE, PING, QUIT, RESET
    (0, ['GET', 'k']), (0, ['SET', 'k', 'v']), (0, ['PUBLISH', 'a', 'x']),
    (0, ['PUBSUB', 'NUMPAT']), (0, ['PING']), (0, ['PING', 'arg']), (0, ['ping', 'a', 'b']),
    (0, ['NOSUCH']), (0, ['SUBSCRIBE']),
    (0, ['SUNSUBSCRIBE', 'y', 'q']), (0, ['UNSUBSCRIBE', 'b']), (0, ['PUNSUBSCRIBE']),
    (0, ['SUNSUBSCRIBE']), (0, ['GET', 'k']),                  # still subscribed to 'a'
    (0, ['UNSUBSCRIBE']), (0, ['GET', 'k']), (0, ['PING']),   # left subscribe mode
    # SUBSCRIBE inside MULTI: EXEC carries the confirmations
    (0, (['MULTI'], ['SUBSCRIBE', 'm1', 'm2'], ['EXEC'])), (1, ['PUBLISH', 'm1', 'x']),
    (0, ['RESET']), (1, ['PUBLISH', 'm1', 'after-reset']),
    # errors
    (0, ['PUBLISH', 'a']), (0, ['PUBSUB']), (0, ['PUBSUB', 'CHANNELS', 'a', 'b']),
    (0, ['PUBSUB', 'NUMPAT', 'x']), (0, ['PUBSUB', 'nope']), (0, ['PUBSUB', 'HELP']),
    (0, ['PUBSUB', 'HELP', 'x']), (0, ['SPUBLISH', 'a']), (0, ['SSUBSCRIBE']),
    (0, ['PUBSUB', 'NUMSUB']), (0, ['PUBSUB', 'SHARDNUMSUB']),
    # a client may publish to itself: the message precedes the PUBLISH reply in Redis
    (0, ['SUBSCRIBE', 'self']), (0, ['PUNSUBSCRIBE', 'never']), (0, ['QUIT']),
    (1, ['PUBSUB', 'NUMSUB', 'self']),
]

RESP3_STEPS = [
    (0, ['HELLO', '3']), (1, ['HELLO', '3']),
    (0, ['UNSUBSCRIBE']), (0, ['PUNSUBSCRIBE', 'x']),
    (0, ['SUBSCRIBE', 'z']), (0, ['PSUBSCRIBE', 'z*']), (0, ['SSUBSCRIBE', 's']),
    (1, ['PUBLISH', 'z', 'm3']), (1, ['SPUBLISH', 's', 'sm']),
    (0, ['SET', 'k', 'v']), (0, ['GET', 'k']), (0, ['PING']),   # RESP3 allows everything
    (0, ['PUBLISH', 'z', 'to-self']),
    (0, (['MULTI'], ['PUBLISH', 'z', 'in-multi'], ['GET', 'k'], ['EXEC'])),
    (0, ['PUBSUB', 'NUMSUB', 'z']),
    (0, ['UNSUBSCRIBE', 'q', 'z']), (0, ['PUNSUBSCRIBE']), (0, ['UNSUBSCRIBE']),
    (0, ['SUNSUBSCRIBE']),
    (1, ['PUBLISH', 'z', 'nobody']),
    (0, ['SUBSCRIBE', 'z']), (0, ['RESET']), (1, ['PUBLISH', 'z', 'gone']),
    (0, ['SUBSCRIBE', 'z']), (0, ['HELLO', '3']), (1, ['PUBLISH', 'z', 'again']),
    (0, ['HELLO', '2']), (1, ['PUBLISH', 'z', 'resp2-now']), (0, ['GET', 'k']),
]


def test_resp2_replies_match_redis(server, redis_ref):
    assert_same_transcript(server, redis_ref, RESP2_STEPS)


def test_resp3_replies_match_redis(server, redis_ref):
    # HELLO's reply carries the client id, which differs: compare the rest
    steps = [s for s in RESP3_STEPS]
    want = transcript(redis_ref[1], steps)
    got = transcript(server.port, steps)
    for w, g in zip(want, got):
        if w[1] == ['HELLO', '3']:
            continue
        assert g == w, f'step {w[0]} {w[1]!r}:\n ours  {g[2]!r}\n redis {w[2]!r}'
    wait_clean(server)


def test_unsubscribe_all_lists_every_subscription(server):
    c = RawClient(server.port)
    c.send(['SUBSCRIBE', 'a', 'b', 'c'], ['PSUBSCRIBE', 'p1', 'p2'])
    c.sync()
    c.send(['UNSUBSCRIBE'])
    reader = hiredis.Reader()
    reader.feed(c.sync())
    frames = [reader.gets() for _ in range(3)]
    # channels in any order (Redis: hash order); the count steps down over the patterns
    assert sorted(f[1] for f in frames) == [b'a', b'b', b'c']
    assert [(f[0], f[2]) for f in frames] == [(b'unsubscribe', 4), (b'unsubscribe', 3),
                                              (b'unsubscribe', 2)]
    c.send(['PUNSUBSCRIBE'])
    # patterns in subscription order, as Redis 7.0's list
    assert c.sync() == (b'*3\r\n$12\r\npunsubscribe\r\n$2\r\np1\r\n:1\r\n'
                        b'*3\r\n$12\r\npunsubscribe\r\n$2\r\np2\r\n:0\r\n$5\r\nsync3\r\n')
    c.close()
    wait_clean(server)


# -- redis-py ---------------------------------------------------------------------------------

def get(p, timeout=2):
    end = time.time() + timeout
    while time.time() < end:
        m = p.get_message(timeout=0.1)
        if m is not None:
            return m
    raise AssertionError('no message')


def test_redis_py_sync_pubsub(server, r):
    p = r.pubsub()
    p.subscribe('news', 'sport')
    p.psubscribe('n*')
    assert [get(p)['type'] for _ in range(3)] == ['subscribe', 'subscribe', 'psubscribe']
    assert r.publish('news', 'hello') == 2          # exact + pattern
    assert r.publish('nothing', 'x') == 1
    assert r.publish('other', 'x') == 0
    msgs = [get(p) for _ in range(3)]
    assert msgs[0] == {'type': 'message', 'pattern': None, 'channel': b'news',
                       'data': b'hello'}
    assert msgs[1] == {'type': 'pmessage', 'pattern': b'n*', 'channel': b'news',
                       'data': b'hello'}
    assert msgs[2]['channel'] == b'nothing'
    assert sorted(r.pubsub_channels()) == [b'news', b'sport']
    assert r.pubsub_channels('s*') == [b'sport']
    assert r.pubsub_numsub('news', 'none') == [(b'news', 1), (b'none', 0)]
    assert r.pubsub_numpat() == 1
    p.unsubscribe()
    p.punsubscribe()
    p.close()
    wait_clean(server)


def test_redis_py_sharded_pubsub(server, r):
    p = r.pubsub()
    p.ssubscribe('shard')
    assert get(p)['type'] == 'ssubscribe'
    assert r.spublish('shard', 'm') == 1
    assert r.publish('shard', 'm') == 0          # separate namespace
    m = get(p)
    assert (m['type'], m['channel'], m['data']) == ('smessage', b'shard', b'm')
    assert r.pubsub_shardchannels() == [b'shard']
    assert r.pubsub_shardnumsub('shard') == [(b'shard', 1)]
    assert r.pubsub_channels() == []
    p.close()
    wait_clean(server)


def test_redis_py_resp3_push_handler(server):
    received = []
    r3 = server.client(protocol=3)
    p = r3.pubsub(push_handler_func=received.append)
    p.subscribe('c3')
    p.psubscribe('c*')
    pub = server.client()
    deadline = time.time() + 2
    while pub.pubsub_numsub('c3') != [(b'c3', 1)] and time.time() < deadline:
        p.get_message(timeout=0.05)
    assert pub.publish('c3', 'payload') == 2
    deadline = time.time() + 2
    while len(received) < 4 and time.time() < deadline:
        p.get_message(timeout=0.05)
    kinds = [m[0] for m in received]
    assert kinds == [b'subscribe', b'psubscribe', b'message', b'pmessage']
    assert received[2] == [b'message', b'c3', b'payload']
    assert received[3] == [b'pmessage', b'c*', b'c3', b'payload']
    p.close()
    r3.close()
    pub.close()
    wait_clean(server)


def test_redis_py_asyncio_resp2_and_resp3(server):
    async def main(protocol):
        r = redis.asyncio.Redis(host='127.0.0.1', port=server.port, protocol=protocol)
        p = r.pubsub()
        await p.subscribe('ac')
        await p.psubscribe('a?')
        msgs = []
        while len(msgs) < 2:
            m = await p.get_message(timeout=1)
            if m:
                msgs.append(m)
        assert await r.publish('ac', 'x') == 2
        while len(msgs) < 4:
            m = await p.get_message(timeout=1)
            if m:
                msgs.append(m)
        await p.aclose()
        await r.aclose()
        return [(m['type'], m['data']) for m in msgs]

    for protocol in (2, 3):
        assert asyncio.run(main(protocol)) == [('subscribe', 1), ('psubscribe', 2),
                                               ('message', b'x'), ('pmessage', b'x')]
    wait_clean(server)


def test_redis_cli_commands(server):
    port = str(server.port)
    exe = shutil.which('redis-cli')
    line_buffered = [shutil.which('stdbuf'), '-oL'] if shutil.which('stdbuf') else []
    sub = subprocess.Popen([*line_buffered, exe, '-p', port, 'subscribe', 'cli'],
                           stdout=subprocess.PIPE, text=True)
    try:
        assert sub.stdout.readline().strip() == 'subscribe'
        assert sub.stdout.readline().strip() == 'cli'
        assert sub.stdout.readline().strip() == '1'
        assert redis_cli(port, 'publish', 'cli', 'hi there').strip() == '1'
        assert [sub.stdout.readline().strip() for _ in range(3)] == ['message', 'cli',
                                                                      'hi there']
        assert redis_cli(port, 'pubsub', 'numsub', 'cli').split() == ['cli', '1']
        assert redis_cli(port, 'pubsub', 'channels').split() == ['cli']
        assert redis_cli(port, 'pubsub', 'numpat').strip() == '0'
        assert redis_cli(port, 'spublish', 'cli', 'x').strip() == '0'
    finally:
        sub.terminate()
        sub.wait(5)
    wait_clean(server)
    psub = subprocess.Popen([*line_buffered, exe, '-p', port, '-3', 'psubscribe', 'cl*'],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert [psub.stdout.readline().strip() for _ in range(3)] == ['psubscribe', 'cl*',
                                                                      '1']
        assert redis_cli(port, 'publish', 'cli', 'hey').strip() == '1'
        assert [psub.stdout.readline().strip() for _ in range(4)] == ['pmessage', 'cl*',
                                                                      'cli', 'hey']
    finally:
        psub.terminate()
        psub.wait(5)
    wait_clean(server)


# -- glob semantics, table-driven against redis-server ----------------------------------------

GLOB_CASES = [
    b'*', b'?', b'??', b'a*', b'*a', b'*a*', b'a?c', b'a\\?c', b'a\\*', b'\\a\\b\\c',
    b'[abc]', b'[a-c]x', b'[c-a]x', b'[^a]*', b'[^a-c]?', b'[]', b'[]]', b'[^]*', b'[a',
    b'[a-', b'[\\]]', b'[\\', b'a[b\\-d]e', b'*[0-9]', b'h?llo', b'h*llo', b'h[ae]llo',
    b'h[^e]llo', b'h[a-b]llo', b'**', b'*?*', b'a**b', b'\\', b'a\\', b'[!a]b', b'x*y*z',
    b'*.log', b'news.*', b'news.*.sport', b'\xff*', b'[\x80-\xff]*', b'abc', b'', b'*\\*',
    b'[-a]', b'[a-]', b'[^-]*', b'?*?', b'*a*a*a*a*a*a*b',
]
GLOB_CHANNELS = [
    b'', b'a', b'b', b'ab', b'abc', b'a?c', b'axc', b'a*', b'abcd', b'cx', b'bx', b'ax',
    b'hello', b'hallo', b'hillo', b'hllo', b'heeeello', b'habllo', b']', b'[', b'\\', b'-',
    b'a-e', b'abe', b'x1y2z', b'xyz', b'file.log', b'news.tech', b'news.x.sport',
    b'\xff\xfe', b'\x80', b'7', b'a7', b'*', b'?', b'ba', b'!b', b'aaaaaaab', b'aaaaaaa',
    b'a\\', b'b*',
]


def _glob_results(port):
    r = redis.Redis(port=port)
    sub = redis.Redis(port=port).pubsub()
    sub.subscribe(*[c for c in GLOB_CHANNELS])
    deadline = time.time() + 5
    while len(r.pubsub_channels()) < len(GLOB_CHANNELS) and time.time() < deadline:
        sub.get_message(timeout=0.01)
    channels = {}
    for pat in GLOB_CASES:
        channels[pat] = sorted(r.pubsub_channels(pat))
    sub.close()
    # PSUBSCRIBE path: one pattern subscription per client, PUBLISH counts receivers
    publish = {}
    pipe_clients = []
    for pat in GLOB_CASES:
        c = RawClient(port)
        c.send(['PSUBSCRIBE', pat])
        c.sync()
        pipe_clients.append(c)
    pipe = r.pipeline(transaction=False)
    for ch in GLOB_CHANNELS:
        pipe.publish(ch, b'm')
    counts = pipe.execute()
    for c in pipe_clients:
        c.close()
    publish = dict(zip(GLOB_CHANNELS, counts))
    r.close()
    return channels, publish


def test_glob_semantics_match_redis(server, redis_ref):
    want = _glob_results(redis_ref[1])
    got = _glob_results(server.port)
    for pat in GLOB_CASES:
        assert got[0][pat] == want[0][pat], pat
    assert got[1] == want[1]
    wait_clean(server)


def test_glob_crafted_pattern_is_fast(server):
    sub = RawClient(server.port)
    sub.send(['PSUBSCRIBE', '*a*a*a*a*a*a*a*a*a*a*b'])
    sub.sync()
    r = server.client()
    channel = b'a' * 10240
    best = 1.0
    for _ in range(5):
        t = time.perf_counter()
        assert r.publish(channel, 'x') == 0
        best = min(best, time.perf_counter() - t)
    assert best < 0.005, best
    assert r.pubsub_channels(b'*a*a*a*a*a*a*a*a*a*a*b') == []
    sub.close()
    r.close()
    wait_clean(server)


# -- the ChannelStore -------------------------------------------------------------------------

class _Sub:
    pass


def test_channel_store_copy_on_write_and_index():
    store = ChannelStore()
    a, b = _Sub(), _Sub()
    for sub in (a, b):
        u = store.updater(CHANNELS, sub, True)
        u.record(b'ch')
        u.apply()
    snap = store.subscribers(b'ch')
    assert snap == (a, b)
    u = store.updater(CHANNELS, a, False)
    u.record(b'ch')
    u.apply()
    assert snap == (a, b)                     # the old snapshot is untouched
    assert store.subscribers(b'ch') == (b,)
    u = store.updater(PATTERNS, a, True)
    for p in (b'news.*', b'news.*.x', b'*.log', b'*', b'n?ws'):
        u.record(p)
    u.apply()
    names = sorted(e.pattern for e in store.matching_patterns(b'news.a.x'))
    assert names == [b'*', b'news.*', b'news.*.x']
    assert sorted(e.pattern for e in store.matching_patterns(b'a.log')) == [b'*', b'*.log']
    assert sorted(e.pattern for e in store.matching_patterns(b'nows')) == [b'*', b'n?ws']
    u = store.updater(PATTERNS, a, False)
    for p in (b'news.*', b'news.*.x', b'*.log', b'*', b'n?ws'):
        u.record(p)
    u.apply()
    assert store.counts[PATTERNS] == 0
    assert store.by_prefix.lengths == () and store.by_suffix.lengths == ()
    assert not store.unindexed


def test_publish_does_not_walk_non_matching_patterns():
    store = ChannelStore()
    sub = _Sub()
    u = store.updater(PATTERNS, sub, True)
    for i in range(10000):
        u.record(b'user:%d:*' % i)
    u.apply()
    t = time.perf_counter()
    for _ in range(1000):
        assert store.matching_patterns(b'orders:42') == []
    per = (time.perf_counter() - t) / 1000
    # Redis would run 10,000 glob matches (~100 us+); the index does a few dict probes
    assert per < 20e-6, per
    assert [e.pattern for e in store.matching_patterns(b'user:42:x')] == [b'user:42:*']


# -- dispatch: quota, fairness, cleanup -------------------------------------------------------

def _find_conn(srv, predicate):
    return srv.call(lambda: next(c for c in srv.server.clients.values() if predicate(c)))


def test_control_queue_drains_quota_before_commands(make_server):
    srv = make_server(async_dispatch_quota=10)
    sub = RawClient(srv.port)
    sub.send(['SUBSCRIBE', 'q'])
    sub.sync()
    conn = _find_conn(srv, lambda c: c.subscriptions)

    def flood_then_command():
        hub = srv.server.pubsub
        for i in range(1000):
            hub.publish(b'q', b'%04d' % i)
        assert len(conn.pubsub.queue) == 1000
        # the subscriber's next read arrives before the loop drains the queue
        conn.data_received(pack('PING', 'cmd'))
        return len(conn.pubsub.queue)
    assert srv.call(flood_then_command) == 990
    data = b''
    end = b'*3\r\n$7\r\nmessage\r\n$1\r\nq\r\n$4\r\n0999\r\n'
    while not data.endswith(end):
        data += sub.s.recv(1 << 16)
    pong = data.index(b'$4\r\npong\r\n$3\r\ncmd\r\n')
    assert data[:pong].count(b'message') == 10          # exactly one quota first
    assert data.count(b'message') == 1000
    sub.close()


def test_subscriber_gets_command_replies_during_flood(make_server):
    """A RESP3 client that subscribes and issues commands keeps getting its replies,
    in order and promptly, while a flood of messages arrives."""
    srv = make_server()
    stop = threading.Event()
    published = [0]

    def flood():
        pipe_payload = b''.join(pack('PUBLISH', 'flood', 'x' * 64) for _ in range(200))
        s = socket.create_connection(('127.0.0.1', srv.port))
        while not stop.is_set():
            s.sendall(pipe_payload)
            got = b''
            while got.count(b'\r\n') < 200:
                got += s.recv(1 << 16)
            published[0] += 200
        s.close()

    c = socket.create_connection(('127.0.0.1', srv.port))
    c.settimeout(10)
    reader = hiredis.Reader()
    c.sendall(pack('HELLO', '3') + pack('SUBSCRIBE', 'flood'))
    pushes = 0
    replies = []

    def read_reply():
        nonlocal pushes
        while True:
            item = reader.gets()
            while item is False:
                reader.feed(c.recv(1 << 16))
                item = reader.gets()
            if isinstance(item, list) and item and item[0] in (b'message', b'subscribe'):
                pushes += 1
                continue
            return item

    read_reply()                       # HELLO map
    t = threading.Thread(target=flood)
    t.start()
    try:
        while pushes < 2000:
            reader.feed(c.recv(1 << 16))
            while reader.gets() is not False:
                pushes += 1
        latencies = []
        for i in range(100):
            before = pushes
            t0 = time.perf_counter()
            c.sendall(pack('INCR', 'ctr'))
            replies.append(read_reply())
            latencies.append(time.perf_counter() - t0)
            assert pushes >= before
        during = pushes
    finally:
        stop.set()
        t.join()
    assert replies == list(range(1, 101))
    assert max(latencies) < 2.0, max(latencies)
    assert during > 2000 and published[0] > 0
    c.close()


def test_disconnect_and_reset_leave_no_trace(server):
    clients = [RawClient(server.port) for _ in range(20)]
    for i, c in enumerate(clients):
        c.send(['SUBSCRIBE', 'common', 'own%d' % i], ['PSUBSCRIBE', 'p%d*' % i, 'shared*'],
               ['SSUBSCRIBE', 'sh%d' % i])
        c.sync()
    hub = server.server.pubsub
    assert server.call(lambda: hub.store.counts[:]) == [21, 21, 20]
    assert server.call(lambda: len(hub.store.subscribers(b'common'))) == 20
    for c in clients[:10]:
        c.close()
    for c in clients[10:]:
        c.send(['RESET'])
        c.sync()
    # RESET left subscribe mode, so these run normally
    for c in clients[10:]:
        c.send(['SET', 'k', 'v'])
        assert c.sync().startswith(b'+OK')
    wait_clean(server)
    assert server.call(lambda: (hub.queued, hub.buffered, len(hub.buffering),
                                hub.store.by_prefix.lengths, len(hub.store.unindexed))) == \
        (0, 0, 0, (), 0)
    for c in clients[10:]:
        c.close()


def test_messages_after_full_unsubscribe_are_dropped(make_server):
    srv = make_server()
    sub = RawClient(srv.port)
    sub.send(['SUBSCRIBE', 'd'])
    sub.sync()
    conn = _find_conn(srv, lambda c: c.subscriptions)

    def publish_then_unsubscribe():
        hub = srv.server.pubsub
        hub.publish(b'd', b'queued')
        hub.unsubscribe(conn, CHANNELS, None)       # full unsubscribe before the drain
        return hub.queued, len(conn.pubsub.queue)
    assert srv.call(publish_then_unsubscribe) == (0, 0)
    assert b'queued' not in sub.sync()
    sub.close()


def test_publish_counts_receivers_as_redis(both):
    ours, theirs = both
    results = []
    for port in (ours.connection_pool.connection_kwargs['port'],
                 theirs.connection_pool.connection_kwargs['port']):
        a, b = RawClient(port), RawClient(port)
        a.send(['SUBSCRIBE', 'rc'], ['PSUBSCRIBE', 'r*', 'rc', '*'])
        b.send(['PSUBSCRIBE', 'r?'], ['SSUBSCRIBE', 'rc'])
        a.sync(), b.sync()
        r = redis.Redis(port=port)
        results.append([r.publish('rc', 'm'), r.publish('rx', 'm'), r.spublish('rc', 'm'),
                        r.publish('zz', 'm'), r.pubsub_numpat()])
        a.close(), b.close(), r.close()
    assert results[0] == results[1] == [5, 3, 1, 1, 4]


def test_keyspace_publish_hook_and_batch(make_server):
    srv = make_server()
    hub = srv.server.pubsub
    assert srv.server.keyspace.publish == hub.publish
    assert srv.server.keyspace.publish_batch == hub.publish_batch
    sub = RawClient(srv.port)
    sub.send(['SUBSCRIBE', '__keyevent@0__:expired'], ['PSUBSCRIBE', '__keyevent@*'])
    sub.sync()
    n = srv.call(lambda: hub.publish_batch(b'__keyevent@0__:expired', [b'k1', b'k2', b'k3']))
    assert n == 6
    out = sub.sync()
    assert out.count(b'*3\r\n$7\r\nmessage\r\n$22\r\n__keyevent@0__:expired\r\n') == 3
    assert out.count(b'*4\r\n$8\r\npmessage\r\n') == 3
    assert out.index(b'$2\r\nk1') < out.index(b'$2\r\nk2') < out.index(b'$2\r\nk3')
    sub.close()


# -- backpressure and output buffer limits ----------------------------------------------------

def _info(srv):
    """INFO stats as a client reads it (the pub/sub fields are part of it)."""
    client = srv.client()
    try:
        return client.info('stats')
    finally:
        client.close()


def test_publisher_waits_above_publish_buffer_limit(make_server):
    srv = make_server(publish_buffer_limit='1mb', client_output_buffer_limit='pubsub 0 0 0')
    sub = RawClient(srv.port, rcvbuf=4096)
    sub.send(['SUBSCRIBE', 'bp'])
    sub.sync()
    total = 3000
    payload = b'x' * 10000
    done = []

    def publisher():
        r = srv.client()
        for _ in range(total):
            done.append(r.publish('bp', payload))
        r.close()

    t = threading.Thread(target=publisher, daemon=True)
    t.start()
    deadline = time.time() + 20
    while _info(srv)['pubsub_blocked_publishers'] == 0 and time.time() < deadline:
        time.sleep(0.01)
    info = _info(srv)
    assert info['pubsub_blocked_publishers'] == 1
    stalled = len(done)
    assert stalled < total
    # bounded: the limit plus at most one message and the subscriber's transport buffer
    assert info['pubsub_queued_bytes'] < 1024 * 1024 + 600 * 1024
    other = srv.client()
    assert other.ping() and other.set('k', 'v')       # the loop keeps serving
    time.sleep(0.2)
    assert len(done) == stalled                       # still waiting
    # the subscriber reads: the publisher resumes and everything arrives, in order
    received = 0
    sub.s.settimeout(10)
    buf = b''
    while received < total:
        buf += sub.s.recv(1 << 20)
        received += buf.count(b'$7\r\nmessage\r\n')
        buf = buf[-20:] if b'$7\r\nmessage\r\n' not in buf[-20:] else b''
    t.join(20)
    assert len(done) == total and set(done) == {1}
    info = _info(srv)
    assert info['pubsub_publisher_waits'] >= 1 and info['pubsub_blocked_publishers'] == 0
    sub.close()
    other.close()


def test_output_buffer_hard_limit_disconnects_subscriber(make_server):
    srv = make_server(client_output_buffer_limit='pubsub 256kb 0 0', publish_buffer_limit=0)
    sub = RawClient(srv.port, rcvbuf=4096)
    sub.send(['SUBSCRIBE', 'obl'])
    sub.sync()
    r = srv.client()
    n = 0
    while r.publish('obl', b'y' * 10000) and n < 5000:
        n += 1
    assert n < 5000                                    # the subscriber went away
    assert r.pubsub_numsub('obl') == [(b'obl', 0)]
    assert _info(srv)['client_output_buffer_limit_disconnections'] == 1
    assert r.ping()
    sub.s.settimeout(5)
    with pytest.raises((ConnectionResetError, AssertionError)):
        while sub.s.recv(1 << 20):
            pass
        raise AssertionError('closed')
    r.close()
    sub.close()


def test_output_buffer_soft_limit_disconnects_after_seconds(make_server):
    srv = make_server(client_output_buffer_limit='pubsub 0 64kb 1', publish_buffer_limit=0)
    sub = RawClient(srv.port, rcvbuf=4096)
    sub.send(['SUBSCRIBE', 'soft'])
    sub.sync()
    r = srv.client()
    for _ in range(800):                # several MB: past the kernel buffers and 64 KB
        r.publish('soft', b'z' * 10000)
    assert r.pubsub_numsub('soft') == [(b'soft', 1)]  # over the soft limit, not yet long
    deadline = time.time() + 5
    while r.pubsub_numsub('soft') != [(b'soft', 0)] and time.time() < deadline:
        time.sleep(0.05)
    assert r.pubsub_numsub('soft') == [(b'soft', 0)]
    assert _info(srv)['client_output_buffer_limit_disconnections'] == 1
    r.close()
    sub.close()


def test_config_set_applies_at_once(make_server):
    srv = make_server()
    r = srv.client()
    r.config_set('async-dispatch-quota', 7)
    r.config_set('publish-buffer-limit', '2mb')
    hub = srv.server.pubsub
    assert srv.call(lambda: (hub.quota, hub.limit)) == (7, 2 * 1024 * 1024)
    r.close()


def test_info_stats_reports_pubsub_fields(server):
    sub = server.client().pubsub()
    sub.subscribe('info-a', 'info-b')
    sub.psubscribe('info-*')
    try:
        info = _info(server)
        assert info['pubsub_channels'] >= 2 and info['pubsub_patterns'] >= 1
        for name in ('pubsubshard_channels', 'pubsub_queued_bytes',
                     'pubsub_blocked_publishers', 'pubsub_publisher_waits',
                     'client_output_buffer_limit_disconnections'):
            assert name in info
    finally:
        sub.close()
