"""Keyspace events and the expiry engine, observed over TCP.

notify-keyspace-events rendering and per-command events are differential against
redis-server 7.0; the expiry-specific behaviour (active vs lazy `expired` events, batched
delivery, timeliness, the deadline index kept in step with writes, lag statistics) is
checked on our server with real subscribers and raw sockets.
"""

import random
import socket
import struct
import threading
import time

import hiredis
import pytest
import redis

from conftest import WAIT, assert_same_events, in_time, now_ms, run_all, spawn_store, stop
from rawconn import RawConn, pack

# -- helpers ----------------------------------------------------------------------------


def info_stats(client):
    return client.info('stats')


@pytest.fixture
def fresh(server):
    """A flushed client on the session server; puts back the expiry-related settings a
    test may change (the server is shared by the whole session)."""
    client = server.client(protocol=2)
    client.flushall()
    yield client
    client.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '1')
    client.config_set('notify-keyspace-events', '')
    client.config_set('active-expire-budget-us', '1000')
    client.flushall()
    client.close()


class Events:
    """A real subscriber (redis-py PubSub) on keyspace-event channels, with helpers to
    wait for events that arrive asynchronously (active expiry) and to collect everything
    up to a sentinel PUBLISH (so 'nothing else arrived' does not depend on timing)."""

    SENTINEL = 'expiry-events-sentinel'

    def __init__(self, client, pattern='__key*__:*'):
        self.client = client
        self.sub = client.pubsub()
        self.sub.psubscribe(pattern)
        self.sub.subscribe(self.SENTINEL)
        for _ in range(2):
            assert self.sub.get_message(timeout=WAIT)['type'] in ('psubscribe', 'subscribe')
        self.got = []  # (channel, data) pairs received so far, in order
        self.times = []  # arrival time (time.monotonic()) of each
        self.at_ms = []  # arrival time of each on the clock deadlines are set by (ms)

    def close(self):
        self.sub.close()

    def _pull(self, timeout):
        m = self.sub.get_message(timeout=timeout)
        if m is None:
            return None
        if m['type'] == 'message' and m['channel'] == self.SENTINEL.encode():
            return 'sentinel'
        assert m['type'] == 'pmessage', m
        self.got.append((m['channel'], m['data']))
        self.times.append(time.monotonic())
        self.at_ms.append(now_ms())
        return m

    def wait_for(self, predicate, timeout=WAIT):
        """Read until predicate(self.got) holds; fail after `timeout` seconds."""
        end = time.monotonic() + timeout
        while not predicate(self.got):
            left = end - time.monotonic()
            assert left > 0, f'timed out; got {self.got!r}'
            self._pull(min(left, 0.1))
        return self.got

    def wait_count(self, n, timeout=WAIT):
        return self.wait_for(lambda got: len(got) >= n, timeout)

    def drain(self):
        """Everything up to a sentinel published now (all earlier events included)."""
        self.client.publish(self.SENTINEL, 'end')
        while True:
            m = self._pull(WAIT)
            assert m is not None, 'sentinel never arrived'
            if m == 'sentinel':
                return self.got

    def reset(self):
        """Forget everything received so far (for a setup that starts again)."""
        self.drain()
        self.got.clear()
        self.times.clear()
        self.at_ms.clear()


def wait_reaped(client, timeout=WAIT):
    """Wait until the active expiry has deleted every key of the client's db. DBSIZE
    counts keys whose deadline passed but that nobody deleted yet, and does not expire
    anything itself, so this observes the active path only."""
    end = time.monotonic() + timeout
    while client.dbsize():
        assert time.monotonic() < end, f'{client.dbsize()} keys never expired'
        time.sleep(0.01)


def expired_keys(events, db=0):
    ch = b'__keyevent@%d__:expired' % db
    return [data for channel, data in events if channel == ch]


# -- 1. notify-keyspace-events rendering --------------------------------------------------

FLAG_STRINGS = [
    '',
    'A',
    'KEA',
    'Ex',
    'Kx',
    'KEx',
    'gx$KE',
    'AKEm',
    'n',
    'm',
    'K',
    'E',
    'KE',
    'AK',
    'AE',
    'An',
    'AKEnm',
    'nA',
    'g$lshzxetd',
    'g$lshzxet',
    'g$lshzxetdn',
    'g$lshzxetdnKEm',
    'AAAA',
    'xxKK',
    'EK',
    'mEK',
    'tKE',
    'dKE',
    'eKE',
    'lszh',
    'Ag',
    'KEg$lshzxetdnm',
    'zhsl$g',
    'nmKE',
    'AdEn',
    'xe',
    'Km',
    'Em',
]
BAD_FLAG_STRINGS = ['a', 'KEa', 'Q', ' ', 'K E', 'KE!', 'x\n', 'KEA ', '*', 'M', 'N', 'k']


def test_notify_flags_render_like_redis(both):
    rnd = random.Random(7)
    chars = 'Ag$lshzxeKEtmdn'
    strings = (
        FLAG_STRINGS
        + BAD_FLAG_STRINGS
        + [''.join(rnd.choice(chars) for _ in range(rnd.randrange(1, 9))) for _ in range(150)]
    )
    ours, theirs = both
    try:
        for s in strings:
            cmds = [
                ('config', 'set', 'notify-keyspace-events', s),
                ('config', 'get', 'notify-keyspace-events'),
            ]
            got, want = run_all(ours, cmds), run_all(theirs, cmds)
            assert got == want, f'{s!r}: ours {got!r} != redis {want!r}'
        # The invalid-character error, word for word, and the old value kept.
        cmds = [
            ('config', 'set', 'notify-keyspace-events', 'KEx'),
            ('config', 'set', 'notify-keyspace-events', 'KEx?'),
            ('config', 'get', 'notify-keyspace-events'),
            ('config', 'set', 'notify-keyspace-events', 'K', 'E'),
            ('config', 'get', 'notify-keyspace-events'),
        ]
        got, want = run_all(ours, cmds), run_all(theirs, cmds)
        assert got == want
        assert 'Invalid event class character' in got[1][1]
        assert got[2] == [b'notify-keyspace-events', b'xKE']
    finally:
        for c in both:
            c.config_set('notify-keyspace-events', '')


def test_notify_flags_take_effect_as_rendered(both):
    """Equivalent spellings are the same setting: 'gx$KE' and 'g$xEK' deliver the same
    events, and 'An' still delivers `new` although CONFIG GET shows only 'AKE'."""
    cmds = [('set', 'k', 'v'), ('expire', 'k', '100'), ('del', 'k')]
    a = assert_same_events(both, cmds, 'gx$KE')
    assert a == assert_same_events(both, cmds, 'g$xEK')
    events = assert_same_events(both, cmds, 'AnKE')
    assert (b'__keyevent@0__:new', b'k') in events


# -- 2. events per command, against redis-server ---------------------------------------------


def test_set_and_getex_option_events(both):
    assert_same_events(
        both,
        [
            ('set', 'k', 'v', 'ex', '100'),
            ('set', 'k', 'v2', 'keepttl', 'get'),
            ('set', 'k', 'v3', 'px', '5000', 'get'),
            ('set', 'k', 'v4', 'exat', '99999999999'),
            ('set', 'k', 'v5', 'pxat', '99999999999999', 'xx'),
            ('set', 'n', 'v', 'xx', 'px', '10'),
            ('set', 'k', 'v', 'nx', 'ex', '10'),
            ('set', 'k', 'v', 'ex', '0'),
            ('set', 'k', 'v', 'px', '-5'),
            ('set', 'k', 'v', 'ex', '10', 'px', '10'),
            ('getex', 'k', 'px', '100000'),
            ('getex', 'k', 'exat', '99999999999'),
            ('getex', 'k', 'pxat', '99999999999999'),
            ('getex', 'k', 'ex', '0'),
            ('getex', 'k', 'ex', '-1'),
            ('getex', 'k', 'persist'),
            ('getex', 'k', 'exat', '1'),
            ('getex', 'k', 'persist'),
            ('set', 'k', 'v', 'get', 'pxat', '1'),
            ('exists', 'k'),
            ('set', 'k', 'v', 'keepttl'),
            ('ttl', 'k'),
        ],
        'KEAnm',
    )


def test_expire_with_past_times_deletes(both):
    events = assert_same_events(
        both,
        [
            ('set', 'a', '1'),
            ('expire', 'a', '0'),
            ('set', 'a', '1'),
            ('pexpire', 'a', '-100'),
            ('set', 'a', '1'),
            ('expireat', 'a', '1'),
            ('set', 'a', '1'),
            ('pexpireat', 'a', '0'),
            ('set', 'a', '1', 'ex', '100'),
            ('expire', 'a', '-1', 'gt'),
            ('expire', 'a', '-1', 'lt'),
            ('set', 'a', '1'),
            ('expire', 'a', '-1', 'xx'),
            ('expire', 'a', '-1', 'nx'),
            ('expire', 'missing', '-1'),
        ],
        'KEA',
    )
    assert events.count((b'__keyevent@0__:del', b'a')) >= 4
    assert not [e for e in events if e[0].endswith(b':expired')]


def test_rename_keeps_ttl_and_events(both):
    cmds = [
        ('set', 'a', '1', 'px', '100000'),
        ('set', 'b', '2', 'ex', '50'),
        ('rename', 'a', 'b'),
        ('renamenx', 'b', 'c'),
        ('set', 'p', 'x'),
        ('rename', 'c', 'p'),
    ]
    t0 = now_ms()
    assert_same_events(both, cmds, 'KEAn')
    for c in both:
        assert c.exists('a', 'b', 'c') == 0
        pttl = c.pttl('p')
        assert t0 + 100000 - now_ms() <= pttl <= 100000


def test_move_and_copy_across_dbs(both):
    events = assert_same_events(
        both,
        [
            ('set', 'a', '1', 'px', '100000'),
            ('move', 'a', '3'),
            ('select', '3'),
            ('copy', 'a', 'b', 'db', '0'),
            ('copy', 'a', 'b', 'db', '0'),
            ('copy', 'a', 'b', 'db', '0', 'replace'),
            ('copy', 'a', 'c'),
            ('move', 'c', '0'),
            ('select', '0'),
            ('move', 'b', '3'),
            ('move', 'c', '3'),
            ('select', '0'),
        ],
        'KEAn',
    )
    assert (b'__keyevent@3__:move_to', b'a') in events
    assert (b'__keyspace@0__:b', b'copy_to') in events
    for c in both:
        c.execute_command('select', '3')
        assert 90000 < c.pttl('b') <= 100000 and 90000 < c.pttl('c') <= 100000
        c.execute_command('select', '0')


def test_swapdb_and_flush_emit_no_key_events(both):
    events = assert_same_events(
        both,
        [
            ('set', 'a', '1', 'px', '100000'),
            ('set', 'b', '1'),
            ('swapdb', '0', '1'),
            ('swapdb', '1', '1'),
            ('select', '1'),
            ('set', 'c', '1'),
            ('flushdb',),
            ('select', '0'),
            ('flushall',),
            ('set', 'x', '1'),
            ('flushdb', 'async'),
        ],
        'KEAm',
    )
    # Only the SETs: Redis 7.0 announces nothing per key for SWAPDB/FLUSHDB/FLUSHALL.
    assert [e for e in events if e[0].startswith(b'__keyevent')] == [
        (b'__keyevent@0__:set', b'a'),
        (b'__keyevent@0__:expire', b'a'),
        (b'__keyevent@0__:set', b'b'),
        (b'__keyevent@1__:set', b'c'),
        (b'__keyevent@0__:set', b'x'),
    ]


def test_keymiss_events(both):
    events = assert_same_events(
        both,
        [
            ('get', 'nope'),
            ('getex', 'nope'),
            ('getdel', 'nope'),
            ('strlen', 'nope'),
            ('getrange', 'nope', '0', '1'),
            ('mget', 'a', 'nope'),
            ('exists', 'nope'),
            ('ttl', 'nope'),
            ('pttl', 'nope'),
            ('type', 'nope'),
            ('expiretime', 'nope'),
            ('dump', 'nope'),
            ('object', 'encoding', 'nope'),
            ('xlen', 'nope'),
            ('xrange', 'nope', '-', '+'),
            ('set', 'nope', '1'),
            ('get', 'nope'),
            ('append', 'new', 'x'),
            ('incr', 'new2'),
            ('getbit', 'nope2', '0'),
            ('bitcount', 'nope2'),
            ('lcs', 'nope', 'nope2'),
            ('copy', 'nope3', 'x'),
        ],
        'KEm',
    )
    assert (b'__keyevent@0__:keymiss', b'nope') in events


def test_new_events(both):
    events = assert_same_events(
        both,
        [
            ('set', 'a', '1'),
            ('set', 'a', '2'),
            ('setnx', 'b', '1'),
            ('setnx', 'b', '1'),
            ('mset', 'c', '1', 'a', '3'),
            ('msetnx', 'd', '1', 'e', '1'),
            ('incr', 'f'),
            ('incrbyfloat', 'g', '1'),
            ('append', 'h', 'x'),
            ('setrange', 'i', '1', 'x'),
            ('setbit', 'j', '1', '1'),
            ('getset', 'k', 'v'),
            ('copy', 'a', 'l'),
            ('rename', 'l', 'm'),
            ('move', 'm', '2'),
            ('xadd', 's', '1-1', 'f', 'v'),
            ('xgroup', 'create', 't', 'g', '$', 'mkstream'),
            ('set', 'x', '1', 'px', '1'),
            ('debug', 'sleep', '0.01'),
            ('set', 'x', '2'),
        ],
        'KEn',
    )
    assert events[:2] == [(b'__keyspace@0__:a', b'new'), (b'__keyevent@0__:new', b'a')]


def test_stream_command_events(both):
    assert_same_events(
        both,
        [
            ('xadd', 's', '1-1', 'f', 'v'),
            ('xadd', 's', 'maxlen', '1', '2-1', 'f', 'v'),
            ('xadd', 's', 'maxlen', '5', '3-1', 'f', 'v'),
            ('xadd', 's', '3-1', 'f', 'v'),
            ('xadd', 'none', 'nomkstream', '*', 'f', 'v'),
            ('xtrim', 's', 'maxlen', '1'),
            ('xtrim', 's', 'maxlen', '0'),
            ('xtrim', 's', 'maxlen', '0'),
            ('xadd', 's', '4-1', 'f', 'v'),
            ('xadd', 's', '5-1', 'f', 'v'),
            ('xdel', 's', '4-1', '99-1'),
            ('xdel', 's', '99-1'),
            ('xsetid', 's', '10-1'),
            ('xgroup', 'create', 's', 'g', '0'),
            ('xgroup', 'create', 's', 'g', '0'),
            ('xgroup', 'createconsumer', 's', 'g', 'c1'),
            ('xgroup', 'createconsumer', 's', 'g', 'c1'),
            ('xreadgroup', 'group', 'g', 'c2', 'streams', 's', '>'),
            ('xreadgroup', 'group', 'g', 'c2', 'streams', 's', '>'),
            ('xack', 's', 'g', '5-1'),
            ('xclaim', 's', 'g', 'c3', '0', '5-1'),
            ('xautoclaim', 's', 'g', 'c4', '0', '0'),
            ('xgroup', 'setid', 's', 'g', '$'),
            ('xgroup', 'delconsumer', 's', 'g', 'c1'),
            ('xgroup', 'delconsumer', 's', 'g', 'zz'),
            ('xgroup', 'destroy', 's', 'g'),
            ('xgroup', 'destroy', 's', 'g'),
            ('xgroup', 'create', 'ns', 'g', '$', 'mkstream'),
            ('del', 's'),
        ],
        'KEtgn',
    )


def test_lazy_expiry_events_match_redis(both):
    """With the active expiry off on both servers, an expired key is announced when a
    command touches it, before the command's own events, exactly as redis-server does."""
    for c in both:
        c.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
    try:
        events = assert_same_events(
            both,
            [
                ('set', 'a', '1', 'px', '1'),
                ('set', 'b', '1', 'px', '1'),
                ('set', 'c', '1', 'px', '1'),
                ('set', 'd', '1', 'px', '1'),
                ('set', 'e', '1', 'px', '1'),
                ('set', 'f', '1', 'px', '1'),
                ('debug', 'sleep', '0.01'),
                ('get', 'a'),
                ('get', 'a'),
                ('exists', 'b'),
                ('set', 'c', '2'),
                ('incr', 'd'),
                ('ttl', 'e'),
                ('del', 'f'),
                ('get', 'f'),
            ],
            'KEAm',
        )
    finally:
        for c in both:
            c.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '1')
    assert expired_keys(events) == [b'a', b'b', b'c', b'd', b'e', b'f']
    # GET of an expired key: `expired`, then `keymiss`, then nothing for the second GET.
    i = events.index((b'__keyspace@0__:a', b'expired'))
    assert events[i : i + 7] == [
        (b'__keyspace@0__:a', b'expired'),
        (b'__keyevent@0__:expired', b'a'),
        (b'__keyspace@0__:a', b'keymiss'),
        (b'__keyevent@0__:keymiss', b'a'),
        (b'__keyspace@0__:a', b'keymiss'),
        (b'__keyevent@0__:keymiss', b'a'),
        (b'__keyspace@0__:b', b'expired'),
    ]


# -- 3. keyspace vs keyevent channels -----------------------------------------------------------


@pytest.mark.parametrize(
    'flags,db,want',
    [
        ('Kx', 0, [(b'__keyspace@0__:k', b'expired')]),
        ('Ex', 0, [(b'__keyevent@0__:expired', b'k')]),
        ('KEx', 0, [(b'__keyspace@0__:k', b'expired'), (b'__keyevent@0__:expired', b'k')]),
        ('KEx', 3, [(b'__keyspace@3__:k', b'expired'), (b'__keyevent@3__:expired', b'k')]),
        ('KEA', 3, [(b'__keyspace@3__:k', b'expired'), (b'__keyevent@3__:expired', b'k')]),
        ('KEg$', 0, []),
        ('x', 0, []),
        ('K', 0, []),
    ],
)
def test_expired_channels(both, flags, db, want):
    """Active expiry of one key, on both servers: the same channels and messages."""
    for c in both:
        old = c.config_get('notify-keyspace-events')['notify-keyspace-events']
        c.config_set('notify-keyspace-events', flags)
        ev = Events(c)
        try:
            c.execute_command('select', db)
            c.set('k', 'v', px=20)
            wait_reaped(c)
            got = [e for e in ev.drain() if b'expired' in e[0] + e[1]]
            assert got == want, c
        finally:
            ev.close()
            c.execute_command('select', 0)
            c.config_set('notify-keyspace-events', old)


# -- 4. batched delivery ------------------------------------------------------------------------


def data_segments_in(sock):
    """TCP segments carrying data that this socket received (Linux TCP_INFO
    tcpi_data_segs_in, at offset 152 of struct tcp_info since Linux 4.6)."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    assert len(info) >= 156, 'kernel too old for tcpi_data_segs_in'
    return struct.unpack_from('<I', info, 152)[0]


def test_mass_expiry_is_delivered_in_coalesced_writes():
    """2000 keys all due at once: the subscriber gets each key exactly once, in a few
    large TCP segments rather than one per key.

    What is measured, and why it is robust: the server runs in its own process and sets
    TCP_NODELAY, so each write it makes leaves as its own segment(s) at once. The kernel
    counts the data segments the subscriber's socket received (TCP_INFO
    tcpi_data_segs_in), which does not depend on how fast the reader is (counting recv()
    chunks alone would: a slow reader merges many small writes into one recv). The
    active expiry deletes due keys in steps of about 1 ms of work and hands each step's
    keys over as one batch, written once; the number of steps is known from INFO
    (expired_time_cap_reached_count counts the steps that ran out of budget, so steps =
    delta + 1). A step's write (about 47 bytes a message) spans a couple of loopback
    segments at most, so segments <= 2 * steps + bytes / 16 KB + 4. A server writing once
    per key sends close to 2000 segments (Linux autocorking merges some writes when the
    receiver lags, but measured runs of a per-key writer still gave 86-2000).

    The keys are written with the active expiry off, so however long that takes, all of
    them are still there, and due, when it is switched on."""
    proc, port = spawn_store('--notify-keyspace-events', 'Ex', '--enable-debug-command', 'yes')
    try:
        n = 2000
        sub = RawConn(port)
        assert sub.cmd('SUBSCRIBE', '__keyevent@0__:expired') == (
            b'*3\r\n$9\r\nsubscribe\r\n$22\r\n__keyevent@0__:expired\r\n:1\r\n'
        )
        reader = hiredis.Reader()
        c = redis.Redis(port=port, protocol=2)
        c.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
        p = c.pipeline(transaction=False)
        for i in range(n):
            p.execute_command('SET', f'key:{i}', 'v', 'PX', 1)
        p.execute()
        time.sleep(0.01)  # the last key's millisecond has passed too
        assert c.dbsize() == n  # DBSIZE expires nothing
        cap0 = info_stats(c)['expired_time_cap_reached_count']
        segs0 = data_segments_in(sub.sock)
        c.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '1')
        chunks = nbytes = 0
        keys = []
        while len(keys) < n:
            data = sub.sock.recv(4 << 20)
            assert data, 'connection closed'
            chunks += 1
            nbytes += len(data)
            reader.feed(data)
            while (m := reader.gets()) is not False:
                assert m[:2] == [b'message', b'__keyevent@0__:expired']
                keys.append(m[2])
        segs = data_segments_in(sub.sock) - segs0
        steps = info_stats(c)['expired_time_cap_reached_count'] - cap0 + 1
        assert len(keys) == len(set(keys)) == n
        assert set(keys) == {f'key:{i}'.encode() for i in range(n)}
        assert chunks <= segs <= 2 * steps + nbytes // 16384 + 4, (chunks, segs, steps)
        assert steps <= n // 20, f'{steps} steps for {n} keys due at once'
        # Nothing else follows (no key announced twice).
        c.publish('__keyevent@0__:expired', 'end')
        assert sub.read_reply() == pack('message', '__keyevent@0__:expired', 'end')
        assert c.dbsize() == 0
        sub.close()
        c.close()
    finally:
        stop(proc)


# -- 5. lazy and active paths: exactly one `expired` per key -------------------------------


def test_active_expiry_announces_each_key_once(fresh):
    fresh.config_set('notify-keyspace-events', 'KEx')
    ev = Events(fresh)
    try:
        before = info_stats(fresh)['expired_keys']
        keys = [f'k{i}' for i in range(300)]
        p = fresh.pipeline(transaction=False)
        for i, k in enumerate(keys):  # due 100-160 ms after each is written
            p.execute_command('SET', k, 'v', 'PX', 100 + i % 60)
        p.execute()
        wait_reaped(fresh)  # nobody touches the keys: only the active path runs
        got = ev.drain()
    finally:
        ev.close()
    assert sorted(expired_keys(got)) == sorted(k.encode() for k in keys)
    spaces = [ch for ch, m in got if m == b'expired']
    assert sorted(spaces) == sorted(b'__keyspace@0__:' + k.encode() for k in keys)
    assert len(got) == 600
    assert info_stats(fresh)['expired_keys'] - before == 300


def test_lazy_expiry_then_rearm(fresh):
    fresh.config_set('notify-keyspace-events', 'Ex')
    fresh.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
    ev = Events(fresh)
    try:
        for k in 'abcdef':
            fresh.set(k, 'v', px=20)
        time.sleep(0.15)
        # Past the deadline, with no active expiry: nothing announced, nothing deleted.
        assert ev.drain() == []
        assert fresh.dbsize() == 6
        # Touching a key expires it: exactly one event, however often it is touched.
        assert fresh.get('a') is None
        assert ev.drain() == [(b'__keyevent@0__:expired', b'a')]
        assert fresh.exists('b') == 0 and fresh.ttl('c') == -2
        assert fresh.get('a') is None and fresh.exists('b', 'c') == 0
        assert ev.drain()[1:] == [
            (b'__keyevent@0__:expired', b'b'),
            (b'__keyevent@0__:expired', b'c'),
        ]
        assert fresh.dbsize() == 3
        # Re-arming announces the rest, once each.
        fresh.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '1')
        wait_reaped(fresh)
        got = ev.drain()
    finally:
        ev.close()
    assert got[:3] == [(b'__keyevent@0__:expired', k) for k in (b'a', b'b', b'c')]
    assert sorted(got[3:]) == [(b'__keyevent@0__:expired', k) for k in (b'd', b'e', b'f')]


def test_active_expiry_off_holds_new_keys_too(fresh):
    """Keys written while the active expiry is off are found when it is switched on."""
    fresh.config_set('notify-keyspace-events', 'Ex')
    fresh.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
    ev = Events(fresh)
    try:
        fresh.set('early', 'v', px=10)
        fresh.set('late', 'v', px=600_000)
        time.sleep(0.05)
        fresh.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '1')
        ev.wait_count(1)
        time.sleep(0.05)
        assert ev.drain() == [(b'__keyevent@0__:expired', b'early')]
        assert fresh.exists('late') == 1
    finally:
        ev.close()


def test_touch_racing_the_active_step_never_double_announces(fresh):
    """Clients hammer reads on keys right around their deadlines while the active
    expiry runs: whichever path gets a key first, it is announced exactly once."""
    fresh.config_set('notify-keyspace-events', 'KEx')
    ev = Events(fresh)
    n = 400
    keys = [f'r{i}' for i in range(n)]
    stop_at = time.monotonic() + WAIT  # they stop once every key is gone
    errors = []

    def hammer(port, order):
        c = redis.Redis(port=port, protocol=2)
        try:
            while time.monotonic() < stop_at:
                p = c.pipeline(transaction=False)
                for k in order:
                    p.get(k)
                    p.exists(k)
                    p.pttl(k)
                replies = p.execute()
                if all(v is None for v in replies[0::3]):
                    return
        except Exception as e:  # reported by the main thread
            errors.append(e)
        finally:
            c.close()

    try:
        before = info_stats(fresh)['expired_keys']
        p = fresh.pipeline(transaction=False)
        for i, k in enumerate(keys):  # due 150-250 ms after each is written
            p.execute_command('SET', k, 'v', 'PX', 150 + i % 100)
        p.execute()
        port = fresh.connection_pool.connection_kwargs['port']
        threads = [threading.Thread(target=hammer, args=(port, keys[::step])) for step in (1, -1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert fresh.exists(*keys) == 0
        got = ev.drain()
    finally:
        ev.close()
    events = expired_keys(got)
    assert sorted(events) == sorted(k.encode() for k in keys), 'a key announced 0 or 2 times'
    assert sorted(ch for ch, m in got) == sorted(
        [b'__keyspace@0__:' + k.encode() for k in keys] + [b'__keyevent@0__:expired'] * n
    )
    assert info_stats(fresh)['expired_keys'] - before == n


# -- 6. timeliness and statistics ---------------------------------------------------------------


def test_expiry_is_announced_by_the_timer_never_early(fresh):
    """Nobody touches the keys: each `expired` event comes from the active expiry, and
    never before the deadline (at least 50 ms after t0, which precedes the SET). How late
    it is, is a matter of the machine's load: bench/expiry_lag.py measures it."""
    fresh.config_set('notify-keyspace-events', 'Ex')
    ev = Events(fresh)
    try:
        late = []
        for k in ('t1', 't2', 't3'):
            t0 = time.monotonic()
            fresh.set(k, 'v', px=50)
            ev.wait_for(lambda got, k=k: got and got[-1][1] == k.encode())
            late.append(ev.times[-1] - t0)
        got = ev.drain()
    finally:
        ev.close()
    assert got == [(b'__keyevent@0__:expired', k) for k in (b't1', b't2', b't3')]
    assert min(late) >= 0.049, late


LAG_FIELDS = ('expired_lag_p50_ms', 'expired_lag_p99_ms', 'expired_lag_max_ms')


def test_info_fields_resetstat_and_expired_keys(fresh):
    stats = info_stats(fresh)
    for f in LAG_FIELDS + (
        'expires_index_entries',
        'expired_keys',
        'expired_time_cap_reached_count',
    ):
        assert isinstance(stats[f], int) and stats[f] >= 0, f
    fresh.config_resetstat()
    stats = info_stats(fresh)
    assert [stats[f] for f in ('expired_keys',) + LAG_FIELDS] == [0, 0, 0, 0]
    # Two keys expired lazily and at least 290 ms late (at most as late as the client saw
    # them go: the lag is measured from the deadline) ...
    fresh.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
    t0 = now_ms()
    fresh.set('lazy1', 'v', px=10)
    fresh.set('lazy2', 'v', px=10)
    fresh.set('vol', 'v', px=100000)
    time.sleep(0.3)
    assert fresh.get('lazy1') is None and fresh.exists('lazy2') == 0
    seen = now_ms() - t0
    stats = info_stats(fresh)
    assert stats['expired_keys'] == 2
    assert 250 <= stats['expired_lag_max_ms'] <= seen
    assert stats['expired_lag_p50_ms'] >= 250
    assert stats['expires_index_entries'] >= 1  # 'vol' is still indexed
    # ... and three actively: all counted in expired_keys.
    fresh.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '1')
    fresh.delete('vol')
    for k in ('a1', 'a2', 'a3'):
        fresh.set(k, 'v', px=20)
    wait_reaped(fresh)
    stats = info_stats(fresh)
    assert stats['expired_keys'] == 5
    assert stats['expired_lag_p50_ms'] <= stats['expired_lag_p99_ms'] <= stats['expired_lag_max_ms']
    assert stats['expired_lag_max_ms'] >= 250
    fresh.config_resetstat()
    stats = info_stats(fresh)
    assert [stats[f] for f in ('expired_keys',) + LAG_FIELDS] == [0, 0, 0, 0]
    t0 = now_ms()
    fresh.set('b', 'v', px=10)
    wait_reaped(fresh)
    seen = now_ms() - t0
    stats = info_stats(fresh)
    # Only the new key counts, no later than the client saw it go.
    assert stats['expired_keys'] == 1 and stats['expired_lag_max_ms'] <= seen


@pytest.mark.slow
def test_mass_expiry_hits_the_time_cap_and_keeps_serving():
    """200,000 keys due at once, expired in slices of 100 us of work: the slices hit the
    time cap, and other clients are served between them.

    The keys are loaded with the active expiry off (however long loading takes, they are
    all still there, and due, when it is switched on). A DBSIZE/PING loop then watches the
    expiry: one that did not yield would run as one block, during which DBSIZE waits, so
    the loop would see the keys go all at once; slices let it see DBSIZE part-way many
    times. The server runs in its own process, so the loop and the expiry do not take
    turns on one interpreter lock. (How long a client waits meanwhile is
    bench/expiry_storm.py's measure.)"""
    proc, port = spawn_store('--enable-debug-command', 'yes')
    try:
        c = redis.Redis(port=port, protocol=2)
        c.config_set('active-expire-budget-us', '100')
        n = 200_000
        c.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
        with RawConn(port) as load:
            load.send(b''.join(pack('SET', f'm:{i}', 'v', 'PX', 1) for i in range(n)))
            assert load.read_exactly(5 * n) == b'+OK\r\n' * n
        time.sleep(0.01)  # the last key's millisecond has passed too
        assert c.dbsize() == n  # DBSIZE expires nothing
        cap0 = info_stats(c)['expired_time_cap_reached_count']
        c.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '1')
        sizes = []
        while size := c.dbsize():
            sizes.append(size)
            assert c.ping()
        stats = info_stats(c)
        assert stats['expired_keys'] == n
        assert stats['expired_time_cap_reached_count'] - cap0 >= 10
        assert sizes == sorted(sizes, reverse=True)
        partway = set(sizes) - {n}
        assert len(partway) >= 10, f'DBSIZE saw the expiry part-way {len(partway)} times'
        c.close()
    finally:
        stop(proc)


# -- 7. the deadline index follows every write ----------------------------------------------------


def test_index_follows_persist_del_rename_set(fresh):
    fresh.config_set('notify-keyspace-events', 'Egx')
    ev = Events(fresh)
    names = ('persisted', 'deleted', 'renamed', 'overwritten', 'getexed', 'plain', 'later')

    def setup(deadline):  # every key due at `deadline`, then changed
        fresh.flushall()
        ev.reset()
        for k in names:
            fresh.set(k, 'v', pxat=deadline)
        fresh.persist('persisted')
        fresh.delete('deleted')
        try:
            renamed = fresh.rename('renamed', 'newname')
        except redis.ResponseError as e:  # 'no such key' if setup was too slow
            renamed = e
        fresh.set('overwritten', 'v2')
        fresh.getex('getexed', persist=True)
        fresh.expire('later', 100)  # moved far away
        return renamed

    try:
        deadline, renamed = in_time(setup, 60)
        time.sleep(max(0, deadline + 90 - now_ms()) / 1000)
        wait_reaped_keys(fresh, ['newname', 'plain'])
        got = ev.drain()
    finally:
        ev.close()
    assert renamed is True
    assert sorted(expired_keys(got)) == [b'newname', b'plain']
    assert fresh.mget('persisted', 'overwritten', 'getexed', 'later') == [b'v', b'v2', b'v', b'v']
    assert fresh.ttl('later') > 90


def wait_reaped_keys(client, keys, timeout=WAIT):
    """Wait until the active expiry deleted `keys` (SCAN-free: KEYS does not expire)."""
    end = time.monotonic() + timeout
    keys = {k.encode() for k in keys}
    while keys & set(client.keys('*')) or client.dbsize() > len(client.keys('*')):
        assert time.monotonic() < end
        time.sleep(0.01)


def test_renamed_volatile_key_expires_under_new_name(fresh):
    fresh.config_set('notify-keyspace-events', 'KEx')
    ev = Events(fresh)

    def setup(deadline):
        fresh.flushall()
        ev.reset()
        fresh.set('old', 'v', pxat=deadline)
        try:
            return fresh.rename('old', 'new')
        except redis.ResponseError as e:  # 'no such key' if setup was too slow
            return e

    try:
        deadline, renamed = in_time(setup, 80)
        ev.wait_count(2)
        got = ev.drain()
    finally:
        ev.close()
    assert renamed is True
    assert got == [(b'__keyspace@0__:new', b'expired'), (b'__keyevent@0__:expired', b'new')]
    assert ev.at_ms[0] >= deadline  # at the deadline the key had, not before


def test_moved_key_expires_in_its_new_db(fresh):
    fresh.config_set('notify-keyspace-events', 'KEx')
    ev = Events(fresh)

    def setup(deadline):
        fresh.flushall()
        ev.reset()
        fresh.set('m', 'v', pxat=deadline)
        moved = fresh.move('m', 5)
        fresh.set('m', 'stays')  # same name in db 0, no TTL
        return moved

    try:
        _, moved = in_time(setup, 60)
        ev.wait_count(2)
        time.sleep(0.05)
        got = ev.drain()
    finally:
        ev.close()
    assert moved
    assert got == [(b'__keyspace@5__:m', b'expired'), (b'__keyevent@5__:expired', b'm')]
    assert fresh.get('m') == b'stays'


def test_swapdb_swaps_deadlines(fresh):
    fresh.config_set('notify-keyspace-events', 'Ex')
    db1 = redis.Redis(port=fresh.connection_pool.connection_kwargs['port'], db=1)
    ev = Events(fresh)

    def setup(deadline):
        fresh.flushall()
        ev.reset()
        fresh.set('a', 'v', pxat=deadline)
        fresh.set('p', 'v')
        db1.set('b', 'v', pxat=deadline + 120)
        fresh.swapdb(0, 1)
        return db1.pexpiretime('a'), fresh.pexpiretime('b')

    try:
        deadline, (a_at, b_at) = in_time(setup, 80)
        assert (a_at, b_at) == (deadline, deadline + 120)
        ev.wait_count(2)
        time.sleep(0.03)
        got = ev.drain()
        assert db1.get('p') == b'v' and db1.ttl('p') == -1
    finally:
        ev.close()
        db1.flushdb()
        db1.close()
    assert got == [(b'__keyevent@1__:expired', b'a'), (b'__keyevent@0__:expired', b'b')]


def test_flushdb_leaves_nothing_to_expire(fresh):
    """200 keys due at one deadline are flushed; then 'f0' is written again without a TTL
    and 'f1' with a later deadline. The flushed deadlines fire for nothing: the first and
    only event is f1's, at its own deadline."""
    fresh.config_set('notify-keyspace-events', 'Ex')
    ev = Events(fresh)

    def setup(deadline):
        fresh.flushall()
        ev.reset()
        p = fresh.pipeline(transaction=False)
        for i in range(200):
            p.set(f'f{i}', 'v', pxat=deadline)
        p.execute()
        fresh.flushdb()
        fresh.set('f0', 'again')  # same names, no TTL
        fresh.set('f1', 'again', pxat=deadline + 350)  # same name, a later deadline

    try:
        deadline, _ = in_time(setup, 50)
        ev.wait_count(1)
        assert ev.drain() == [(b'__keyevent@0__:expired', b'f1')]
        assert ev.at_ms[0] >= deadline + 350
        assert fresh.get('f0') == b'again'
    finally:
        ev.close()
    assert info_stats(fresh)['expires_index_entries'] == 0


def test_refreshed_ttl_expires_once_at_the_final_deadline(fresh):
    """PEXPIRE keeps pushing the deadline `ttl` ahead for 0.3 s: the key stays, nothing
    is announced, and it expires once, `ttl` after the last refresh. A refresh proves
    something only if it reached the server before the previous deadline (its reply came
    less than `ttl` after the previous one was sent); on a machine too busy for that, the
    round starts again with a TTL twice as long."""
    fresh.config_set('notify-keyspace-events', 'Ex')
    ev = Events(fresh)
    try:
        ttl = 0.04
        for _ in range(8):
            fresh.flushall()
            ev.reset()
            last = time.monotonic()  # sent before the key's deadline is set
            fresh.set('r', 'v', px=round(ttl * 1000))
            end = last + 0.3
            timely = True
            while timely and time.monotonic() < end:
                sent = time.monotonic()
                refreshed = fresh.pexpire('r', round(ttl * 1000))
                timely = time.monotonic() - last < ttl
                assert refreshed or not timely
                last = sent
                time.sleep(0.005)
            if timely:
                alive, early = fresh.exists('r'), list(ev.drain())
                timely = time.monotonic() - last < ttl
            if timely:
                break
            ttl *= 2
        else:
            pytest.fail('no refresh round was in time')
        assert alive == 1
        assert early == []
        ev.wait_count(1)
        assert ev.times[0] - last >= ttl - 0.002
        time.sleep(0.05)
        assert ev.drain() == [(b'__keyevent@0__:expired', b'r')]
    finally:
        ev.close()


def test_ttl_moved_to_later_windows_keeps_one_index_entry(fresh):
    """A deadline moved on into later 1024 ms index windows (a session's TTL refreshed)
    leaves the key the one entry it had; when that entry's window comes up the key is
    carried on to its current window, not announced, and it expires at its final
    deadline. A round proves something only if every move reached the server before the
    deadline it replaced; on a machine too busy for that it starts again, slower."""
    fresh.config_set('notify-keyspace-events', 'Ex')
    ev = Events(fresh)
    try:
        step = 1100  # ms: each move lands in a later window
        for _ in range(4):
            fresh.flushall()
            ev.reset()
            start = now_ms()
            fresh.set('s', 'v', px=step)
            moved = [fresh.pexpireat('s', start + step * (i + 2)) for i in range(3)]
            final = start + step * 4
            stats = info_stats(fresh)
            if all(moved) and now_ms() < start + step:
                break
            step *= 2
        else:
            pytest.fail('no round was in time')
        assert (stats['expires_index_entries'], stats['expires_index_stale']) == (1, 0)
        time.sleep((final - step // 2 - now_ms()) / 1000)  # the first windows came up
        assert fresh.pexpiretime('s') == final
        assert ev.drain() == []
        stats = info_stats(fresh)
        assert (stats['expires_index_entries'], stats['expires_index_stale']) == (1, 0)
        ev.wait_count(1)
        assert ev.got == [(b'__keyevent@0__:expired', b's')]
        assert ev.at_ms[0] > final
    finally:
        ev.close()


@pytest.mark.slow
def test_index_stays_bounded_under_ttl_refresh(make_server):
    """One key's TTL refreshed 100k times: the stale index entries are compacted, so the
    index holds at most ~2x its live entries (plus the compaction threshold)."""
    srv = make_server()
    c = srv.client(protocol=2)
    c.set('hot', 'v')
    for k in range(10):
        c.set(f'other{k}', 'v', ex=1000)
    base = now_ms() + 1_000_000
    payload = b''.join(pack('PEXPIREAT', 'hot', base + i) for i in range(100_000))
    peak = 0
    with RawConn(srv.port) as conn:
        for part in range(10):
            conn.send(payload[part * len(payload) // 10 : (part + 1) * len(payload) // 10])
            assert conn.read_exactly(40_000) == b':1\r\n' * 10_000
            peak = max(peak, info_stats(c)['expires_index_entries'])
    stats = info_stats(c)
    assert c.pttl('hot') > 999_000
    assert 11 <= stats['expires_index_entries'] <= 2 * 1025 + 11
    assert peak <= 2 * 1025 + 11
    assert 0 <= stats['expires_index_stale'] <= 1025
    c.close()


def test_index_accounting_survives_flushdb(make_server):
    """FLUSHDB drops the flushed database's index entries, live and stale; the stale
    count of the other databases' entries must be kept (INFO expires_index_stale is
    never negative, and everything is gone once the keys expired)."""
    srv = make_server()
    c0 = srv.client(protocol=2)
    c1 = srv.client(protocol=2, db=1)

    def setup(deadline):
        # All keys share the hash tag {t}, hence one shard and one index. In db 1, 999
        # stale entries (keys deleted before their deadline) and one live key, all in the
        # 1024 ms deadline window after `deadline` (so nothing has looked at them yet).
        c0.flushall()
        window = (deadline // 1024 + 1) * 1024
        p = c1.pipeline(transaction=False)
        for i in range(1000):
            p.set(f'{{t}}{i}', 'v', pxat=window + i)
        for i in range(1, 1000):
            p.delete(f'{{t}}{i}')
        p.execute()
        p = c0.pipeline(transaction=False)
        for i in range(500):
            p.set(f'{{t}}:{i}', 'v', px=100_000)
        p.execute()
        return info_stats(c0)

    _, before = in_time(setup, 1024)
    assert before['expires_index_entries'] - before['expires_index_stale'] == 501
    c0.flushdb()
    after = info_stats(c0)
    assert after['expires_index_entries'] - after['expires_index_stale'] == 1
    assert after['expires_index_stale'] == before['expires_index_stale']
    # When the window comes up the stale entries are dropped and the live one expires:
    # nothing is left, and nothing is counted below zero.
    wait_reaped(c1)
    stats = info_stats(c0)
    assert (stats['expires_index_entries'], stats['expires_index_stale']) == (0, 0)
    c0.close()
    c1.close()
