"""Pub/sub over TCP: Redis 7.0 replies (byte transcripts diffed against redis-server),
subscribe-mode rules, glob semantics, redis-py sync/asyncio/RESP3, redis-cli, dispatch
quota fairness, backpressure, output-buffer limits and cleanup."""

import shutil
import subprocess
import threading
import time

import hiredis
import pytest
import redis

from conftest import WAIT, close, connect, done, redis_cli, wait_until
from rawconn import RawConn, pack
from store.pubsub import CHANNELS, PATTERNS
from store.pubsub.channel_store import ChannelStore

# -- raw transcripts --------------------------------------------------------------------------


def transcript(port, steps, nclients=2):
    """Run (client index, command or tuple of commands) steps; return what each step
    produced on the wire."""
    clients = [RawConn(port) for _ in range(nclients)]
    log = []
    try:
        for i, cmd in steps:
            clients[i].send_commands(*(cmd if isinstance(cmd, tuple) else (cmd,)))
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
        if w[1] == ['HELLO', '3']:  # its reply carries the client id, which differs
            continue
        assert g == w, f'step {w[0]} {w[1]!r}:\n ours  {g[2]!r}\n redis {w[2]!r}'
    wait_clean(server)


def wait_clean(server):
    """The ChannelStore holds nothing once every test client has gone."""
    wait_until(
        lambda: server.call(lambda: sum(server.server.pubsub.store.counts)) == 0,
        'an empty ChannelStore after the clients left',
    )


RESP2_STEPS = [
    (0, ['UNSUBSCRIBE']),
    (0, ['PUNSUBSCRIBE']),
    (0, ['SUNSUBSCRIBE']),
    (0, ['UNSUBSCRIBE', 'a', 'b']),
    (0, ['PUNSUBSCRIBE', 'p*']),
    (0, ['SUBSCRIBE', 'a', 'b', 'a']),
    (0, ['PSUBSCRIBE', 'a*', 'a*', 'z?']),
    (0, ['SSUBSCRIBE', 'x', 'y']),
    (1, ['PUBLISH', 'a', 'hello']),
    (1, ['SPUBLISH', 'x', 'sh']),
    (1, ['PUBLISH', 'x', 'nobody']),
    (1, ['PUBLISH', 'zz', 'pat']),
    (1, ['PUBSUB', 'NUMPAT']),
    (1, ['PUBSUB', 'NUMSUB', 'a', 'b', 'x', 'none']),
    (1, ['PUBSUB', 'SHARDNUMSUB', 'x', 'a']),
    (1, ['PUBSUB', 'CHANNELS', 'b*']),
    (1, ['PUBSUB', 'SHARDCHANNELS', 'y']),
    (1, ['SPUBLISH', 'a', 'not-sharded']),
    # subscribe mode: only (P|S)(UN)SUBSCRIBE, PING, QUIT, RESET
    (0, ['GET', 'k']),
    (0, ['SET', 'k', 'v']),
    (0, ['PUBLISH', 'a', 'x']),
    (0, ['PUBSUB', 'NUMPAT']),
    (0, ['PING']),
    (0, ['PING', 'arg']),
    (0, ['ping', 'a', 'b']),
    (0, ['NOSUCH']),
    (0, ['SUBSCRIBE']),
    (0, ['SUNSUBSCRIBE', 'y', 'q']),
    (0, ['UNSUBSCRIBE', 'b']),
    (0, ['PUNSUBSCRIBE']),
    (0, ['SUNSUBSCRIBE']),
    (0, ['GET', 'k']),  # still subscribed to 'a'
    (0, ['UNSUBSCRIBE']),
    (0, ['GET', 'k']),
    (0, ['PING']),  # left subscribe mode
    # SUBSCRIBE inside MULTI: EXEC carries the confirmations
    (0, (['MULTI'], ['SUBSCRIBE', 'm1', 'm2'], ['EXEC'])),
    (1, ['PUBLISH', 'm1', 'x']),
    (0, ['RESET']),
    (1, ['PUBLISH', 'm1', 'after-reset']),
    # errors
    (0, ['PUBLISH', 'a']),
    (0, ['PUBSUB']),
    (0, ['PUBSUB', 'CHANNELS', 'a', 'b']),
    (0, ['PUBSUB', 'NUMPAT', 'x']),
    (0, ['PUBSUB', 'nope']),
    (0, ['PUBSUB', 'HELP']),
    (0, ['PUBSUB', 'HELP', 'x']),
    (0, ['SPUBLISH', 'a']),
    (0, ['SSUBSCRIBE']),
    (0, ['PUBSUB', 'NUMSUB']),
    (0, ['PUBSUB', 'SHARDNUMSUB']),
    # a client may publish to itself: the message precedes the PUBLISH reply in Redis
    (0, ['SUBSCRIBE', 'self']),
    (0, ['PUNSUBSCRIBE', 'never']),
    (0, ['QUIT']),
    (1, ['PUBSUB', 'NUMSUB', 'self']),
]

RESP3_STEPS = [
    (0, ['HELLO', '3']),
    (1, ['HELLO', '3']),
    (0, ['UNSUBSCRIBE']),
    (0, ['PUNSUBSCRIBE', 'x']),
    (0, ['SUBSCRIBE', 'z']),
    (0, ['PSUBSCRIBE', 'z*']),
    (0, ['SSUBSCRIBE', 's']),
    (1, ['PUBLISH', 'z', 'm3']),
    (1, ['SPUBLISH', 's', 'sm']),
    (0, ['SET', 'k', 'v']),
    (0, ['GET', 'k']),
    (0, ['PING']),  # RESP3 allows everything
    (0, ['PUBLISH', 'z', 'to-self']),
    (0, (['MULTI'], ['PUBLISH', 'z', 'in-multi'], ['GET', 'k'], ['EXEC'])),
    (0, ['PUBSUB', 'NUMSUB', 'z']),
    (0, ['UNSUBSCRIBE', 'q', 'z']),
    (0, ['PUNSUBSCRIBE']),
    (0, ['UNSUBSCRIBE']),
    (0, ['SUNSUBSCRIBE']),
    (1, ['PUBLISH', 'z', 'nobody']),
    (0, ['SUBSCRIBE', 'z']),
    (0, ['RESET']),
    (1, ['PUBLISH', 'z', 'gone']),
    (0, ['SUBSCRIBE', 'z']),
    (0, ['HELLO', '3']),
    (1, ['PUBLISH', 'z', 'again']),
    (0, ['HELLO', '2']),
    (1, ['PUBLISH', 'z', 'resp2-now']),
    (0, ['GET', 'k']),
]


@pytest.mark.parametrize('steps', [RESP2_STEPS, RESP3_STEPS], ids=['resp2', 'resp3'])
def test_replies_match_redis(server, redis_ref, both, steps):
    assert_same_transcript(server, redis_ref, steps)  # (`both` flushes both servers first)


def test_unsubscribe_all_lists_every_subscription(server):
    c = RawConn(server.port)
    c.send_commands(['SUBSCRIBE', 'a', 'b', 'c'], ['PSUBSCRIBE', 'p1', 'p2'])
    c.sync()
    c.send_commands(['UNSUBSCRIBE'])
    reader = hiredis.Reader()
    reader.feed(c.sync())
    frames = [reader.gets() for _ in range(3)]
    # channels in any order (Redis: hash order); the count steps down over the patterns
    assert sorted(f[1] for f in frames) == [b'a', b'b', b'c']
    assert [(f[0], f[2]) for f in frames] == [
        (b'unsubscribe', 4),
        (b'unsubscribe', 3),
        (b'unsubscribe', 2),
    ]
    c.send_commands(['PUNSUBSCRIBE'])
    # patterns in subscription order, as Redis 7.0's list
    assert c.sync() == (
        b'*3\r\n$12\r\npunsubscribe\r\n$2\r\np1\r\n:1\r\n'
        b'*3\r\n$12\r\npunsubscribe\r\n$2\r\np2\r\n:0\r\n$5\r\nsync3\r\n'
    )
    c.close()
    wait_clean(server)


# -- redis-py ---------------------------------------------------------------------------------


async def get(p):
    """The next message of a redis-py PubSub, sync or asyncio."""
    end = time.monotonic() + WAIT
    while time.monotonic() < end:
        m = await done(p.get_message(timeout=0.1))
        if m is not None:
            return m
    raise AssertionError('no message')


@pytest.mark.parametrize('protocol', [2, 3])
async def test_redis_py_pubsub(server, api, protocol):
    r = connect(server, api, protocol)
    p = r.pubsub()
    try:
        await done(r.flushall())
        await done(p.subscribe('news', 'sport'))
        await done(p.psubscribe('n*'))
        assert [(await get(p))['type'] for _ in range(3)] == [
            'subscribe',
            'subscribe',
            'psubscribe',
        ]
        assert await done(r.publish('news', 'hello')) == 2  # exact + pattern
        assert await done(r.publish('nothing', 'x')) == 1
        assert await done(r.publish('other', 'x')) == 0
        msgs = [await get(p) for _ in range(3)]
        assert msgs[0] == {'type': 'message', 'pattern': None, 'channel': b'news', 'data': b'hello'}
        assert msgs[1] == {
            'type': 'pmessage',
            'pattern': b'n*',
            'channel': b'news',
            'data': b'hello',
        }
        assert msgs[2]['channel'] == b'nothing'
        assert sorted(await done(r.pubsub_channels())) == [b'news', b'sport']
        assert await done(r.pubsub_channels('s*')) == [b'sport']
        assert await done(r.pubsub_numsub('news', 'none')) == [(b'news', 1), (b'none', 0)]
        assert await done(r.pubsub_numpat()) == 1
        await done(p.unsubscribe())
        await done(p.punsubscribe())
    finally:
        await done(p.aclose() if api == 'asyncio' else p.close())
        await close(r)
    wait_clean(server)


def test_redis_py_sharded_pubsub(server, r):
    p = r.pubsub()
    p.ssubscribe('shard')
    assert get_sync(p)['type'] == 'ssubscribe'
    assert r.spublish('shard', 'm') == 1
    assert r.publish('shard', 'm') == 0  # separate namespace
    m = get_sync(p)
    assert (m['type'], m['channel'], m['data']) == ('smessage', b'shard', b'm')
    assert r.pubsub_shardchannels() == [b'shard']
    assert r.pubsub_shardnumsub('shard') == [(b'shard', 1)]
    assert r.pubsub_channels() == []
    p.close()
    wait_clean(server)


def get_sync(p):
    end = time.monotonic() + WAIT
    while time.monotonic() < end:
        m = p.get_message(timeout=0.1)
        if m is not None:
            return m
    raise AssertionError('no message')


def test_redis_py_resp3_push_handler(server):
    received = []
    r3 = server.client(protocol=3)
    p = r3.pubsub(push_handler_func=received.append)
    p.subscribe('c3')
    p.psubscribe('c*')
    pub = server.client()

    def subscribed():
        p.get_message(timeout=0.05)
        return pub.pubsub_numsub('c3') == [(b'c3', 1)] and pub.pubsub_numpat() == 1

    wait_until(subscribed, 'the subscriptions', interval=0)
    assert pub.publish('c3', 'payload') == 2

    def delivered():
        p.get_message(timeout=0.05)
        return len(received) >= 4

    wait_until(delivered, 'the messages', interval=0)
    kinds = [m[0] for m in received]
    assert kinds == [b'subscribe', b'psubscribe', b'message', b'pmessage']
    assert received[2] == [b'message', b'c3', b'payload']
    assert received[3] == [b'pmessage', b'c*', b'c3', b'payload']
    p.close()
    r3.close()
    pub.close()
    wait_clean(server)


def test_redis_cli_commands(server):
    port = str(server.port)
    exe = shutil.which('redis-cli')
    line_buffered = [shutil.which('stdbuf'), '-oL'] if shutil.which('stdbuf') else []
    sub = subprocess.Popen(
        [*line_buffered, exe, '-p', port, 'subscribe', 'cli'], stdout=subprocess.PIPE, text=True
    )
    try:
        assert sub.stdout.readline().strip() == 'subscribe'
        assert sub.stdout.readline().strip() == 'cli'
        assert sub.stdout.readline().strip() == '1'
        assert redis_cli(port, 'publish', 'cli', 'hi there').strip() == '1'
        assert [sub.stdout.readline().strip() for _ in range(3)] == ['message', 'cli', 'hi there']
        assert redis_cli(port, 'pubsub', 'numsub', 'cli').split() == ['cli', '1']
        assert redis_cli(port, 'pubsub', 'channels').split() == ['cli']
        assert redis_cli(port, 'pubsub', 'numpat').strip() == '0'
        assert redis_cli(port, 'spublish', 'cli', 'x').strip() == '0'
    finally:
        sub.terminate()
        sub.wait(5)
    wait_clean(server)
    psub = subprocess.Popen(
        [*line_buffered, exe, '-p', port, '-3', 'psubscribe', 'cl*'],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert [psub.stdout.readline().strip() for _ in range(3)] == ['psubscribe', 'cl*', '1']
        assert redis_cli(port, 'publish', 'cli', 'hey').strip() == '1'
        assert [psub.stdout.readline().strip() for _ in range(4)] == [
            'pmessage',
            'cl*',
            'cli',
            'hey',
        ]
    finally:
        psub.terminate()
        psub.wait(5)
    wait_clean(server)


# -- glob semantics, table-driven against redis-server ----------------------------------------

GLOB_CASES = [
    b'*',
    b'?',
    b'??',
    b'a*',
    b'*a',
    b'*a*',
    b'a?c',
    b'a\\?c',
    b'a\\*',
    b'\\a\\b\\c',
    b'[abc]',
    b'[a-c]x',
    b'[c-a]x',
    b'[^a]*',
    b'[^a-c]?',
    b'[]',
    b'[]]',
    b'[^]*',
    b'[a',
    b'[a-',
    b'[\\]]',
    b'[\\',
    b'a[b\\-d]e',
    b'*[0-9]',
    b'h?llo',
    b'h*llo',
    b'h[ae]llo',
    b'h[^e]llo',
    b'h[a-b]llo',
    b'**',
    b'*?*',
    b'a**b',
    b'\\',
    b'a\\',
    b'[!a]b',
    b'x*y*z',
    b'*.log',
    b'news.*',
    b'news.*.sport',
    b'\xff*',
    b'[\x80-\xff]*',
    b'abc',
    b'',
    b'*\\*',
    b'[-a]',
    b'[a-]',
    b'[^-]*',
    b'?*?',
    b'*a*a*a*a*a*a*b',
]
GLOB_CHANNELS = [
    b'',
    b'a',
    b'b',
    b'ab',
    b'abc',
    b'a?c',
    b'axc',
    b'a*',
    b'abcd',
    b'cx',
    b'bx',
    b'ax',
    b'hello',
    b'hallo',
    b'hillo',
    b'hllo',
    b'heeeello',
    b'habllo',
    b']',
    b'[',
    b'\\',
    b'-',
    b'a-e',
    b'abe',
    b'x1y2z',
    b'xyz',
    b'file.log',
    b'news.tech',
    b'news.x.sport',
    b'\xff\xfe',
    b'\x80',
    b'7',
    b'a7',
    b'*',
    b'?',
    b'ba',
    b'!b',
    b'aaaaaaab',
    b'aaaaaaa',
    b'a\\',
    b'b*',
]


def _glob_results(port):
    r = redis.Redis(port=port)
    sub = redis.Redis(port=port).pubsub()
    sub.subscribe(*GLOB_CHANNELS)
    for _ in GLOB_CHANNELS:  # one confirmation per channel, b'' included
        assert get_sync(sub)['type'] == 'subscribe'
    channels = {}
    for pat in GLOB_CASES:
        channels[pat] = sorted(r.pubsub_channels(pat))
    sub.close()
    # PSUBSCRIBE path: one pattern subscription per client, PUBLISH counts receivers
    publish = {}
    pipe_clients = []
    for pat in GLOB_CASES:
        c = RawConn(port)
        c.send_commands(['PSUBSCRIBE', pat])
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


def test_glob_crafted_pattern_does_not_stall_the_server(server):
    """`*a*a*...*b` against 10 KB of `a`s takes a backtracking matcher (Redis before 7.0.9)
    exponential time: here PUBLISH answers (the client gives up only after WAIT seconds,
    a hang, not a speed; how fast is bench/'s business)."""
    sub = RawConn(server.port)
    sub.send_commands(['PSUBSCRIBE', '*a*a*a*a*a*a*a*a*a*a*b'])
    sub.sync()
    r = server.client(socket_timeout=WAIT)
    channel = b'a' * 10240
    for _ in range(5):
        assert r.publish(channel, 'x') == 0
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
    assert snap == (a, b)  # the old snapshot is untouched
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


class CountingGlob:
    """Stands in for a PatternEntry's compiled glob and records every match it runs."""

    def __init__(self, glob, tested):
        self.glob, self.tested = glob, tested

    def match(self, channel):
        self.tested.append(self.glob.pattern)
        return self.glob.match(channel)


def test_publish_does_not_walk_non_matching_patterns():
    store = ChannelStore()
    sub = _Sub()
    u = store.updater(PATTERNS, sub, True)
    for i in range(10000):
        u.record(b'user:%d:*' % i)
    u.apply()
    tested = []
    for shard in store.patterns:
        for entry in shard.values():
            entry.glob = CountingGlob(entry.glob, tested)
    # Redis would run 10,000 glob matches; the index looks the channel's prefixes up, one
    # dict probe per distinct prefix length ('user:0:' to 'user:9999:'), and tests none
    assert store.by_prefix.lengths == (7, 8, 9, 10)
    for _ in range(1000):
        assert store.matching_patterns(b'orders:42') == []
    assert tested == []
    assert [e.pattern for e in store.matching_patterns(b'user:42:x')] == [b'user:42:*']
    assert len(tested) <= 1


# -- dispatch: quota, fairness, cleanup -------------------------------------------------------


def _find_conn(srv, predicate):
    return srv.call(lambda: next(c for c in srv.server.clients.values() if predicate(c)))


def test_control_queue_drains_quota_before_commands(make_server):
    srv = make_server(async_dispatch_quota=10)
    sub = RawConn(srv.port)
    sub.send_commands(['SUBSCRIBE', 'q'])
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
    replies = [sub.read_reply() for _ in range(1001)]
    pong = replies.index(b'*2\r\n$4\r\npong\r\n$3\r\ncmd\r\n')
    assert pong == 10  # exactly one quota first
    assert replies[-1] == b'*3\r\n$7\r\nmessage\r\n$1\r\nq\r\n$4\r\n0999\r\n'
    assert sum(r.startswith(b'*3\r\n$7\r\nmessage') for r in replies) == 1000
    sub.close()


def test_subscriber_gets_command_replies_during_flood(make_server):
    """A RESP3 client that subscribes and issues commands keeps getting its replies, in
    order and between messages, while a flood of messages arrives without end (a reply
    held behind the flood would never come: the read gives up after WAIT seconds)."""
    srv = make_server()
    stop = threading.Event()
    published = [0]

    def flood():
        pipe_payload = b''.join(pack('PUBLISH', 'flood', 'x' * 64) for _ in range(200))
        with RawConn(srv.port) as s:
            while not stop.is_set():
                s.send(pipe_payload)
                s.read_replies(200)
                published[0] += 200

    c = RawConn(srv.port)
    reader = hiredis.Reader()
    c.send(pack('HELLO', '3') + pack('SUBSCRIBE', 'flood'))
    pushes = 0
    replies = []

    def read_reply():
        nonlocal pushes
        while True:
            item = reader.gets()
            while item is False:
                reader.feed(c.sock.recv(1 << 16))
                item = reader.gets()
            if isinstance(item, list) and item and item[0] in (b'message', b'subscribe'):
                pushes += 1
                continue
            return item

    read_reply()  # HELLO map
    t = threading.Thread(target=flood)
    t.start()
    try:
        while pushes < 2000:
            reader.feed(c.sock.recv(1 << 16))
            while reader.gets() is not False:
                pushes += 1
        for _ in range(100):
            before = pushes
            c.send(pack('INCR', 'ctr'))
            replies.append(read_reply())
            assert pushes >= before
        during = pushes
    finally:
        stop.set()
        t.join()
    assert replies == list(range(1, 101))
    assert during > 2000 and published[0] > 0
    c.close()


def test_disconnect_and_reset_leave_no_trace(server):
    clients = [RawConn(server.port) for _ in range(20)]
    for i, c in enumerate(clients):
        c.send_commands(
            ['SUBSCRIBE', 'common', 'own%d' % i],
            ['PSUBSCRIBE', 'p%d*' % i, 'shared*'],
            ['SSUBSCRIBE', 'sh%d' % i],
        )
        c.sync()
    hub = server.server.pubsub
    assert server.call(lambda: hub.store.counts[:]) == [21, 21, 20]
    assert server.call(lambda: len(hub.store.subscribers(b'common'))) == 20
    for c in clients[:10]:
        c.close()
    for c in clients[10:]:
        c.send_commands(['RESET'])
        c.sync()
    # RESET left subscribe mode, so these run normally
    for c in clients[10:]:
        c.send_commands(['SET', 'k', 'v'])
        assert c.sync().startswith(b'+OK')
    wait_clean(server)
    assert server.call(
        lambda: (
            hub.queued,
            hub.buffered,
            len(hub.buffering),
            hub.store.by_prefix.lengths,
            len(hub.store.unindexed),
        )
    ) == (0, 0, 0, (), 0)
    for c in clients[10:]:
        c.close()


def test_messages_after_full_unsubscribe_are_dropped(make_server):
    srv = make_server()
    sub = RawConn(srv.port)
    sub.send_commands(['SUBSCRIBE', 'd'])
    sub.sync()
    conn = _find_conn(srv, lambda c: c.subscriptions)

    def publish_then_unsubscribe():
        hub = srv.server.pubsub
        hub.publish(b'd', b'queued')
        hub.unsubscribe(conn, CHANNELS, None)  # full unsubscribe before the drain
        return hub.queued, len(conn.pubsub.queue)

    assert srv.call(publish_then_unsubscribe) == (0, 0)
    assert b'queued' not in sub.sync()
    sub.close()


def test_publish_counts_receivers_as_redis(both):
    ours, theirs = both
    results = []
    for port in (
        ours.connection_pool.connection_kwargs['port'],
        theirs.connection_pool.connection_kwargs['port'],
    ):
        a, b = RawConn(port), RawConn(port)
        a.send_commands(['SUBSCRIBE', 'rc'], ['PSUBSCRIBE', 'r*', 'rc', '*'])
        b.send_commands(['PSUBSCRIBE', 'r?'], ['SSUBSCRIBE', 'rc'])
        a.sync(), b.sync()
        r = redis.Redis(port=port)
        results.append(
            [
                r.publish('rc', 'm'),
                r.publish('rx', 'm'),
                r.spublish('rc', 'm'),
                r.publish('zz', 'm'),
                r.pubsub_numpat(),
            ]
        )
        a.close(), b.close(), r.close()
    assert results[0] == results[1] == [5, 3, 1, 1, 4]


def test_keyspace_publish_hook_and_batch(make_server):
    srv = make_server()
    hub = srv.server.pubsub
    assert srv.server.keyspace.events.publisher is hub  # keyspace events take PUBLISH's path
    sub = RawConn(srv.port)
    sub.send_commands(['SUBSCRIBE', '__keyevent@0__:expired'], ['PSUBSCRIBE', '__keyevent@*'])
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
    sub = RawConn(srv.port, rcvbuf=4096)
    sub.send_commands(['SUBSCRIBE', 'bp'])
    sub.sync()
    total = 3000
    payload = b'x' * 10000
    done_ = []

    def publisher():
        r = srv.client()
        for _ in range(total):
            done_.append(r.publish('bp', payload))
        r.close()

    t = threading.Thread(target=publisher, daemon=True)
    t.start()
    wait_until(lambda: _info(srv)['pubsub_blocked_publishers'] == 1, 'a waiting publisher')
    info = _info(srv)
    assert info['pubsub_blocked_publishers'] == 1
    stalled = len(done_)
    assert stalled < total
    # bounded: the limit plus at most one message and the subscriber's transport buffer
    assert info['pubsub_queued_bytes'] < 1024 * 1024 + 600 * 1024
    other = srv.client()
    assert other.ping() and other.set('k', 'v')  # the loop keeps serving
    time.sleep(0.2)
    assert len(done_) == stalled  # still waiting
    # the subscriber reads: the publisher resumes and everything arrives, in order
    received = 0
    buf = b''
    while received < total:
        buf += sub.sock.recv(1 << 20)
        received += buf.count(b'$7\r\nmessage\r\n')
        buf = buf[-20:] if b'$7\r\nmessage\r\n' not in buf[-20:] else b''
    t.join(WAIT)
    assert len(done_) == total and set(done_) == {1}
    info = _info(srv)
    assert info['pubsub_publisher_waits'] >= 1 and info['pubsub_blocked_publishers'] == 0
    sub.close()
    other.close()


def test_output_buffer_hard_limit_disconnects_subscriber(make_server):
    srv = make_server(client_output_buffer_limit='pubsub 256kb 0 0', publish_buffer_limit=0)
    sub = RawConn(srv.port, rcvbuf=4096)
    sub.send_commands(['SUBSCRIBE', 'obl'])
    sub.sync()
    r = srv.client()
    n = 0
    while r.publish('obl', b'y' * 10000) and n < 5000:
        n += 1
    assert n < 5000  # the subscriber went away
    assert r.pubsub_numsub('obl') == [(b'obl', 0)]
    assert _info(srv)['client_output_buffer_limit_disconnections'] == 1
    assert r.ping()
    assert sub.closed_by_peer()  # reset or closed, after its data
    r.close()
    sub.close()


def test_output_buffer_soft_limit_disconnects_after_seconds(make_server):
    """A subscriber over the 64 KB soft limit is dropped once it has stayed over it for
    more than a second: never sooner (it cannot have gone over before t0), however long
    the publishing or the polling takes."""
    srv = make_server(client_output_buffer_limit='pubsub 0 64kb 1', publish_buffer_limit=0)
    sub = RawConn(srv.port, rcvbuf=4096)
    sub.send_commands(['SUBSCRIBE', 'soft'])
    sub.sync()
    r = srv.client()
    t0 = time.monotonic()
    for _ in range(800):  # several MB: past the kernel buffers and 64 KB
        r.publish('soft', b'z' * 10000)
    wait_until(lambda: r.pubsub_numsub('soft') == [(b'soft', 0)], 'the disconnect')
    assert time.monotonic() - t0 >= 1.0
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
        for name in (
            'pubsubshard_channels',
            'pubsub_queued_bytes',
            'pubsub_blocked_publishers',
            'pubsub_publisher_waits',
            'client_output_buffer_limit_disconnections',
        ):
            assert name in info
    finally:
        sub.close()


def test_config_resetstat_zeroes_the_pubsub_counters(server):
    r = server.client()
    sub = r.pubsub()
    sub.subscribe('reset-me')
    try:
        assert sub.get_message(timeout=WAIT)['type'] == 'subscribe'
        assert r.publish('reset-me', 'x') == 1
        assert sub.get_message(timeout=WAIT)['data'] == b'x'
        assert r.info('stats')['pubsub_messages_delivered'] >= 1
        r.config_resetstat()
        stats = r.info('stats')
        assert stats['pubsub_messages_delivered'] == 0
        assert stats['pubsub_publisher_waits'] == 0
        assert stats['client_output_buffer_limit_disconnections'] == 0
    finally:
        sub.close()
        r.close()
