"""CLIENT TRACKING (server-assisted client-side caching, store/tracking.py): the commands'
replies and errors, and the invalidation messages each kind of change produces, against
redis-server 7.0.15 in RESP3 (push frames) and RESP2 (REDIRECT to a subscriber of
__redis__:invalidate); BCAST prefixes, OPTIN/OPTOUT/NOLOOP, the table limit, INFO; and
redis-py's own client-side cache, used unmodified against a server announcing 7.4.0.

Default mode sends one message per invalidated key, in the order the keys changed, as
Redis 7.0 does, so replies are compared byte for byte.

Nothing here depends on the machine's speed: every read either knows what is coming
(`sync`: everything up to a PING's reply) or waits for a condition with a bound."""

import re
import time

import pytest
import redis
from redis.cache import CacheConfig

from conftest import WAIT, in_time, wait_until
from rawconn import RawConn, pack_all

PUSH = b'>2\r\n$10\r\ninvalidate\r\n'
MESSAGE = b'*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n'


def push(*keys):
    return PUSH + b'*%d\r\n' % len(keys) + b''.join(b'$%d\r\n%s\r\n' % (len(k), k) for k in keys)


def pushed_keys(data):
    """The keys of every `invalidate` push in `data` (None for a flush's null)."""
    out = []
    for m in re.finditer(rb'>2\r\n\$10\r\ninvalidate\r\n(?:_\r\n|\*(\d+)\r\n)', data):
        if m.group(1) is None:
            out.append(None)
            continue
        pos = m.end()
        for _ in range(int(m.group(1))):
            nl = data.index(b'\r\n', pos)
            n = int(data[pos + 1 : nl])
            out.append(data[nl + 2 : nl + 2 + n])
            pos = nl + 4 + n
    return out


def strip_sync(data):
    """`sync`'s output without the trailing PING reply."""
    return data[: data.rindex(b'$')]


@pytest.fixture
def pair(fresh_raw_pair):
    """Per server: (tracking RESP3 connection, RESP2 writer), both servers flushed."""

    def make(*options):
        ours_w, theirs_w = fresh_raw_pair(2)
        ours_t, theirs_t = fresh_raw_pair(3)
        for t in (ours_t, theirs_t):
            assert t.cmd('CLIENT', 'TRACKING', 'on', *options) == b'+OK\r\n'
        return [(ours_t, ours_w), (theirs_t, theirs_w)]

    return make


def both_do(sides, setup, reads, change, exact=True):
    """On each server: `setup` by the writer, `reads` by the tracking client, `change`
    by the writer; returns what the tracking client received meanwhile (pushes)."""
    got = []
    for t, w in sides:
        for c in setup:
            w.cmd(*c)
        for c in reads:
            t.cmd(*c)
        for c in change:
            w.cmd(*c)
        got.append(strip_sync(t.sync()))
    ours, theirs = got
    if exact:
        assert ours == theirs
    else:
        assert sorted(pushed_keys(ours), key=repr) == sorted(pushed_keys(theirs), key=repr)
        assert ours.count(PUSH) <= theirs.count(PUSH)
    return ours


# -- the commands ----------------------------------------------------------------------


def test_tracking_commands_replies_match_redis(fresh_raw_pair):
    from conftest import raw_same

    for proto in (2, 3):
        pair = fresh_raw_pair(proto)
        raw_same(
            pair,
            [
                ('CLIENT', 'TRACKINGINFO'),
                ('CLIENT', 'GETREDIR'),
                ('CLIENT', 'CACHING', 'yes'),
                ('CLIENT', 'TRACKING', 'on', 'prefix', 'a'),
                ('CLIENT', 'TRACKING', 'on', 'optin', 'optout'),
                ('CLIENT', 'TRACKING', 'on', 'bcast', 'optin'),
                ('CLIENT', 'TRACKING', 'on', 'redirect', '99999'),
                ('CLIENT', 'TRACKING', 'on', 'redirect', 'x'),
                ('CLIENT', 'TRACKING', 'on', 'redirect'),
                ('CLIENT', 'TRACKING', 'on', 'bogus'),
                ('CLIENT', 'TRACKING', 'maybe'),
                ('CLIENT', 'TRACKING', 'on', 'bcast', 'prefix', 'ab', 'prefix', 'a'),
                ('CLIENT', 'TRACKING', 'on'),
                ('CLIENT', 'TRACKINGINFO'),
                ('CLIENT', 'GETREDIR'),
                ('CLIENT', 'CACHING', 'yes'),
                ('CLIENT', 'CACHING', 'no'),
                ('CLIENT', 'TRACKING', 'on', 'bcast'),
                ('CLIENT', 'TRACKING', 'on', 'optin', 'noloop'),
                ('CLIENT', 'TRACKING', 'on', 'optout'),
                ('CLIENT', 'CACHING', 'maybe'),
                ('CLIENT', 'CACHING', 'yes'),
                ('CLIENT', 'TRACKINGINFO'),
                ('CLIENT', 'GETNAME'),
                ('CLIENT', 'TRACKINGINFO'),
                ('PING',),
                ('CLIENT', 'TRACKINGINFO'),
                ('CLIENT', 'TRACKING', 'off'),
                ('CLIENT', 'TRACKING', 'on', 'bcast', 'prefix', 'b', 'prefix', 'a', 'noloop'),
                ('CLIENT', 'TRACKINGINFO'),
                ('CLIENT', 'TRACKING', 'on', 'bcast', 'prefix', 'ab'),
                ('CLIENT', 'TRACKING', 'on', 'bcast', 'prefix', 'a'),
                ('CLIENT', 'TRACKING', 'on', 'bcast', 'prefix', 'c', 'prefix', 'c'),
                ('CLIENT', 'TRACKING', 'on', 'bcast', 'prefix', 'c'),
                ('CLIENT', 'TRACKINGINFO'),
                ('CLIENT', 'TRACKING', 'on'),
                ('CLIENT', 'TRACKING', 'off'),
                ('CLIENT', 'TRACKING', 'off'),
                ('CLIENT', 'TRACKING', 'on', 'optout'),
                ('CLIENT', 'CACHING', 'no'),
                ('CLIENT', 'TRACKINGINFO'),
                ('CLIENT', 'TRACKING', 'off'),
                ('CLIENT', 'TRACKINGINFO'),
            ],
        )


def test_redirect_getredir_and_client_list_flags(server, redis_ref):
    lines = []
    for port in (server.port, redis_ref[1]):
        with RawConn(port) as target, RawConn(port) as c:
            tid = int(target.cmd('CLIENT', 'ID')[1:-2])
            assert c.cmd('CLIENT', 'TRACKING', 'on', 'redirect', tid) == b'+OK\r\n'
            assert c.cmd('CLIENT', 'GETREDIR') == b':%d\r\n' % tid
            info = c.cmd('CLIENT', 'INFO').decode()
            flags = re.search(r'flags=(\S+)', info).group(1)
            redir = int(re.search(r'redir=(-?\d+)', info).group(1))
            c.cmd('CLIENT', 'TRACKING', 'off')
            c.cmd('CLIENT', 'TRACKING', 'on', 'bcast', 'prefix', 'x')
            bflags = re.search(r'flags=(\S+)', c.cmd('CLIENT', 'INFO').decode()).group(1)
            lines.append((flags, redir == tid, bflags))
    assert lines[0] == lines[1] == ('t', True, 'tB')


# -- invalidations of default mode ---------------------------------------------------------


def test_write_from_another_client_is_invalidated(pair):
    out = both_do(pair(), [('SET', 'k', '1')], [('GET', 'k')], [('SET', 'k', '2')])
    assert out == push(b'k')


def test_invalidation_only_once_until_read_again(pair):
    sides = pair()
    out = both_do(
        sides, [('SET', 'k', '1')], [('GET', 'k')], [('SET', 'k', '2'), ('SET', 'k', '3')]
    )
    assert out == push(b'k')
    assert both_do(sides, [], [('GET', 'k')], [('DEL', 'k')]) == push(b'k')


def test_pipelined_writes_are_invalidated_one_message_per_command(pair):
    # a plain writer's commands run on the hot path: each still gets its own message,
    # as redis-server sends them, not one for the whole pipeline
    got = []
    for t, w in pair():
        w.cmd('MSET', 'a', '0', 'b', '0')
        t.cmd('GET', 'a')
        t.cmd('GET', 'b')
        w.send_commands(('SET', 'a', '1'), ('SET', 'b', '2'))
        assert w.sync().startswith(b'+OK\r\n+OK\r\n')
        got.append(strip_sync(t.sync()))
    assert got[0] == got[1] == push(b'a') + push(b'b')


def test_key_name_is_tracked_across_databases(pair):
    sides = pair()
    change = [('SELECT', '1'), ('SET', 'k', 'x'), ('SELECT', '0')]
    assert both_do(sides, [('SET', 'k', '1')], [('GET', 'k')], change) == push(b'k')


def test_missing_key_read_and_wrongtype_read_are_tracked(pair):
    sides = pair()
    assert both_do(sides, [], [('GET', 'nokey')], [('SET', 'nokey', 'v')]) == push(b'nokey')
    out = both_do(sides, [('RPUSH', 'l', 'a')], [('GET', 'l')], [('RPUSH', 'l', 'b')])
    assert out == push(b'l')


@pytest.mark.parametrize(
    'reads,change',
    [
        ([('MGET', 'a', 'b', 'c')], [('MSET', 'a', '1', 'b', '2')]),
        ([('MGET', 'a', 'b')], [('DEL', 'a', 'b', 'c')]),
        ([('HGETALL', 'h'), ('SMEMBERS', 's')], [('HSET', 'h', 'f', 'v'), ('SADD', 's', 'm')]),
        ([('GET', 'a'), ('EXISTS', 'b')], [('RENAME', 'a', 'b')]),
        ([('STRLEN', 'a')], [('APPEND', 'a', 'x'), ('INCR', 'n')]),
        ([('MGET', 'a', 'b')], [('MULTI',), ('SET', 'a', '1'), ('SET', 'b', '2'), ('EXEC',)]),
        ([('GET', 'a')], [('EXPIRE', 'a', '100')]),
    ],
    ids=['mset', 'del', 'aggregates', 'rename', 'append', 'multi-exec', 'expire'],
)
def test_invalidations_of_each_write(pair, reads, change):
    """One message per key, in the order the keys changed, as redis-server sends them."""
    setup = [('SET', 'a', '0'), ('SET', 'b', '0')]
    out = both_do(pair(), setup, reads, change)
    assert out  # something was invalidated


def test_keys_read_by_different_clients_keep_their_order(fresh_raw_pair):
    """A client hears of its keys in the order they changed, even when the keys between
    them were read by other clients too."""
    got = []
    for w, t, u in zip(fresh_raw_pair(2), fresh_raw_pair(3), fresh_raw_pair(3)):
        for c in (t, u):
            assert c.cmd('CLIENT', 'TRACKING', 'on') == b'+OK\r\n'
        t.cmd('MGET', 'a', 'b', 'c')
        u.cmd('GET', 'b')
        w.cmd('MSET', 'a', '1', 'b', '1', 'c', '1')
        got.append(strip_sync(t.sync()))
    assert got[0] == got[1] == push(b'a') + push(b'b') + push(b'c')


def test_restore_and_swapdb(pair):
    sides = pair()
    dump = {}
    for _t, w in sides:
        w.cmd('SET', 'src', 'v')
        dump[id(w)] = w.cmd('DUMP', 'src')
    for t, w in sides:
        t.cmd('GET', 'r')
        payload = dump[id(w)]
        head = payload.index(b'\r\n')
        w.cmd('RESTORE', 'r', '0', payload[head + 2 : -2])
    ours, theirs = (strip_sync(t.sync()) for t, w in sides)
    assert ours == theirs == push(b'r')
    # SWAPDB: Redis 7.0 sends nothing, and the client's cached value is then stale; this
    # server invalidates the tracked keys of both databases
    t, w = sides[0]
    w.cmd('SET', 'sw', 'db0')
    assert t.cmd('GET', 'sw') == b'$3\r\ndb0\r\n'
    w.cmd('SWAPDB', '0', '1')
    assert pushed_keys(strip_sync(t.sync())) == [b'sw']
    w.cmd('SWAPDB', '0', '1')


def test_own_write_is_invalidated_after_its_reply_unless_noloop(pair):
    for options, expect_push in (((), True), (('noloop',), False)):
        sides = pair(*options)
        got = []
        for t, w in sides:
            w.cmd('SET', 'k', '1')
            t.send(pack_all(('GET', 'k'), ('SET', 'k', '2'), ('GET', 'k')))
            got.append(strip_sync(t.sync()))
        assert got[0] == got[1]
        want = b'$1\r\n1\r\n+OK\r\n' + (push(b'k') if expect_push else b'') + b'$1\r\n2\r\n'
        assert got[0] == want
        # NOLOOP still hears of other clients' writes
        assert both_do(sides, [], [], [('SET', 'k', '3')]) == push(b'k')


def test_script_reads_are_tracked(pair):
    sides = pair()
    script = "return redis.call('get', KEYS[1])"
    out = both_do(sides, [('SET', 'k', '1')], [('EVAL', script, '1', 'k')], [('SET', 'k', '2')])
    assert out == push(b'k')


def test_script_tracks_its_declared_keys_when_it_reads(pair):
    """Redis 7.0 remembers the keys of the script's command (KEYS), not those its calls
    read, and only when it ran a read-only command."""
    sides = pair()
    change = [('MSET', 'k1', '2', 'k2', '2', 'k3', '2')]
    no_read = "redis.call('set', 'k3', 'x')"
    assert both_do(sides, [], [('EVAL', no_read, '2', 'k1', 'k2')], change) == b''
    reads = "redis.call('get', 'k3')"
    out = both_do(sides, [], [('EVAL', reads, '2', 'k1', 'k2')], change)
    assert out == push(b'k1') + push(b'k2')
    out = both_do(sides, [], [('EVAL_RO', reads, '2', 'k1', 'k2')], change)
    assert out == push(b'k1') + push(b'k2')


def test_bcast_noloop_hears_of_its_key_expired_after_its_write(server, redis_ref):
    """NOLOOP skips a BCAST key only if the client itself changed it last: a key it
    set that then expires (no client) is sent, the other key it set is not."""
    got = []
    for port in (server.port, redis_ref[1]):
        with RawConn(port) as w, RawConn(port) as r, RawConn(port) as c:
            w.cmd('FLUSHALL')
            rid = int(r.cmd('CLIENT', 'ID')[1:-2])
            r.cmd('SUBSCRIBE', '__redis__:invalidate')
            c.cmd('CLIENT', 'TRACKING', 'on', 'bcast', 'redirect', rid, 'noloop')
            c.send(pack_all(('MULTI',), ('SET', 'mykey', 'v', 'PX', '1'), ('SET', 'other', 'v')))
            c.send(pack_all(('DEBUG', 'SLEEP', '0.05'), ('GET', 'mykey'), ('EXEC',)))
            replies = c.read_replies(6)
            r.sock.settimeout(WAIT)
            data = r.sock.recv(1 << 16)  # waits for the expiry's message
            got.append((replies, data + strip_sync(r.sync())))
    assert got[0] == got[1]
    # mykey's message, then the sync's PING reply (a subscriber's ['pong', token])
    assert got[0][1].startswith(MESSAGE + b'*1\r\n$5\r\nmykey\r\n*2\r\n$4\r\npong\r\n')


def test_table_limit_is_enforced_without_further_commands(server, redis_ref):
    """Lowering tracking-table-max-keys far below the table's size drops the keys in
    rounds of growing effort with no command to drive them: every one is invalidated."""
    for port in (server.port, redis_ref[1]):
        with RawConn(port) as w, RawConn(port, proto=3) as t:
            w.cmd('FLUSHALL')
            t.cmd('CLIENT', 'TRACKING', 'on')
            t.send(pack_all(*[('GET', f'k{i}') for i in range(250)]))
            t.read_replies(250)
            w.cmd('CONFIG', 'SET', 'tracking-table-max-keys', '1')
            try:
                data = b''
                t.sock.settimeout(WAIT)
                while data.count(PUSH) < 249:
                    data += t.sock.recv(1 << 16)
                assert len(set(pushed_keys(data))) == 249
            finally:
                w.cmd('CONFIG', 'SET', 'tracking-table-max-keys', '1000000')


def test_multi_exec_reads_are_tracked(pair):
    sides = pair()
    reads = [('MULTI',), ('GET', 'a'), ('GET', 'b'), ('EXEC',)]
    out = both_do(sides, [], reads, [('SET', 'a', '1'), ('SET', 'b', '1')])
    assert out == push(b'a') + push(b'b')


def test_flushall_and_flushdb_send_a_null(pair):
    sides = pair()
    assert both_do(sides, [('SET', 'k', '1')], [('GET', 'k')], [('FLUSHALL',)]) == (PUSH + b'_\r\n')
    assert both_do(sides, [], [], [('FLUSHDB',)]) == PUSH + b'_\r\n'
    # the table was emptied: a later write of k sends nothing
    assert both_do(sides, [], [], [('SET', 'k', '1')]) == b''
    # the client's own FLUSHALL: the null follows its reply
    got = [strip_sync(t.sync() if t.cmd('FLUSHALL') == b'+OK\r\n' else b'') for t, w in sides]
    assert got[0] == got[1] == PUSH + b'_\r\n'


def test_flushdb_of_a_watched_key_sends_only_the_null(pair):
    # trackingInvalidateKeysOnFlush: the key WATCHed elsewhere is not invalidated alone
    sides = pair()
    setup = [('SET', 'k', '1'), ('WATCH', 'k')]
    for change in ('FLUSHDB', 'FLUSHALL'):
        assert both_do(sides, setup, [('GET', 'k')], [(change,)]) == PUSH + b'_\r\n'


def test_lazy_expiry_invalidates(pair):
    sides = pair()
    for _t, w in sides:
        w.cmd('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
    try:
        got = []
        for t, w in sides:

            def setup(deadline, t=t, w=w):
                w.cmd('SET', 'k2', 'v')
                t.sync()  # a retry's SET invalidated the last round's read
                t.cmd('GET', 'k2')
                w.cmd('PEXPIREAT', 'k2', str(deadline))  # an invalidation itself
                t.sync()
                return t.cmd('GET', 'k2')  # tracked again, before the deadline

            deadline, read = in_time(setup, 50)
            assert read == b'$1\r\nv\r\n'
            wait_until(lambda d=deadline: time.time() * 1000 > d + 1)
            w.cmd('GET', 'k2')  # found expired by this access: deleted, invalidated
            got.append(strip_sync(t.sync()))
        assert got[0] == got[1] == push(b'k2')
    finally:
        for _t, w in sides:
            w.cmd('DEBUG', 'SET-ACTIVE-EXPIRE', '1')


def test_active_expiry_invalidates_at_the_deadline_with_the_expired_event(server):
    """A tracked key is invalidated by the active-expiry step that deletes it (nobody reads
    it), and the invalidation leaves with that step's `expired` events: a connection that
    both tracks the keys and subscribes to the events gets each step's expired messages
    followed at once by a push for each of those keys."""
    with RawConn(server.port) as w, RawConn(server.port, proto=3) as t:
        w.cmd('CONFIG', 'SET', 'notify-keyspace-events', 'Ex')
        try:
            assert t.cmd('SUBSCRIBE', '__keyevent@0__:expired').startswith(b'>3')
            assert t.cmd('CLIENT', 'TRACKING', 'on') == b'+OK\r\n'
            keys = [b'exp:%d' % i for i in range(20)]

            def setup(deadline):
                w.send(pack_all(*[('SET', k, 'v', 'PXAT', deadline) for k in keys]))
                w.read_replies(len(keys))
                t.sync()  # invalidations of an earlier attempt's keys
                t.send(pack_all(*[('GET', k) for k in keys]))
                return t.read_replies(len(keys))

            _, replies = in_time(setup, 300)
            assert replies == b'$1\r\nv\r\n' * len(keys)
            data = b''
            end = time.monotonic() + WAIT
            while len(set(pushed_keys(data))) < len(keys):
                assert time.monotonic() < end, data
                t.sock.settimeout(WAIT)
                data += t.sock.recv(1 << 16)
            data = strip_sync(data + t.sync())
            # [expired messages][push of those keys], step after step, nothing else
            event = rb'>3\r\n\$7\r\nmessage\r\n\$22\r\n__keyevent@0__:expired\r\n\$\d+\r\n(\S+)\r\n'
            pos = 0
            seen = []
            while pos < len(data):
                expired = []
                while m := re.compile(event).match(data, pos):
                    expired.append(m.group(1))
                    pos = m.end()
                assert expired, data[pos:]
                pushes = b''.join(push(k) for k in expired)
                assert data.startswith(pushes, pos), data[pos:]
                pos += len(pushes)
                seen += expired
            assert sorted(seen) == sorted(keys)
        finally:
            w.cmd('CONFIG', 'SET', 'notify-keyspace-events', '')


def test_eviction_invalidates(make_server):
    srv = make_server(maxmemory='2mb', maxmemory_policy='allkeys-random')
    with RawConn(srv.port) as w, RawConn(srv.port, proto=3) as t:
        assert t.cmd('CLIENT', 'TRACKING', 'on') == b'+OK\r\n'
        keys = [b'ev:%d' % i for i in range(50)]
        for k in keys:
            w.cmd('SET', k, 'x' * 100)
        t.send(pack_all(*[('GET', k) for k in keys]))
        t.read_replies(len(keys))
        big = 'y' * 10000
        for i in range(400):  # well past 2 MB: most keys are evicted
            w.cmd('SET', f'fill:{i}', big)
        evicted = [k for k in keys if w.cmd('EXISTS', k) == b':0\r\n']
        assert evicted
        got = pushed_keys(strip_sync(t.sync()))
        assert set(evicted) <= set(got)


def test_eviction_invalidation_comes_before_the_reply(make_server):
    """Keys evicted before a tracking client's command runs are invalidated before that
    command's reply, as Redis evicts (and sends) before it runs the command."""
    srv = make_server(maxmemory='3mb', maxmemory_policy='volatile-random')
    with RawConn(srv.port, proto=3) as t:
        assert t.cmd('CLIENT', 'TRACKING', 'on') == b'+OK\r\n'
        t.cmd('SETEX', 'volatile-key', '10000', 'x')
        assert t.cmd('GET', 'volatile-key') == b'$1\r\nx\r\n'
        t.cmd('SETBIT', 'big-key', str(8 * 4 * 1024 * 1024), '0')  # past maxmemory
        t.send(pack_all(('GETBIT', 'big-key', '0')))
        out = t.read_replies(2)
        assert out == push(b'volatile-key') + b':0\r\n'


# -- RESP2: REDIRECT to a subscriber ----------------------------------------------------------


def test_resp2_redirect_messages_match_redis(server, redis_ref):
    got = []
    for port in (server.port, redis_ref[1]):
        with RawConn(port) as w, RawConn(port) as r, RawConn(port) as c:
            w.cmd('FLUSHALL')
            rid = int(r.cmd('CLIENT', 'ID')[1:-2])
            r.cmd('SUBSCRIBE', '__redis__:invalidate')
            assert c.cmd('CLIENT', 'TRACKING', 'on', 'redirect', rid) == b'+OK\r\n'
            w.cmd('SET', 'k', '1')
            c.cmd('GET', 'k')
            w.cmd('SET', 'k', '2')
            c.cmd('GET', 'k')
            c.cmd('SET', 'k', '3')  # its own write: to the redirect client too
            c.cmd('GET', 'k')
            w.cmd('FLUSHALL')
            got.append(strip_sync(r.sync()))
    assert got[0] == got[1]
    assert got[0].startswith(MESSAGE + b'*1\r\n$1\r\nk\r\n' + MESSAGE + b'*1\r\n$1\r\nk\r\n')


def test_broken_redirect(server, redis_ref):
    got = []
    for port in (server.port, redis_ref[1]):
        with RawConn(port) as w, RawConn(port, proto=3) as c:
            w.cmd('FLUSHALL')
            r = RawConn(port)
            rid = int(r.cmd('CLIENT', 'ID')[1:-2])
            assert c.cmd('CLIENT', 'TRACKING', 'on', 'redirect', rid) == b'+OK\r\n'
            c.cmd('GET', 'k')
            r.close()
            gone = b'id=%d ' % rid
            wait_until(lambda w=w, gone=gone: gone not in w.cmd('CLIENT', 'LIST'))
            w.cmd('SET', 'k', '1')
            data = strip_sync(c.sync())
            info = c.cmd('CLIENT', 'TRACKINGINFO')
            flags = re.search(r'flags=(\S+)', c.cmd('CLIENT', 'INFO').decode()).group(1)
            rid_reply = b':%d\r\n' % rid
            got.append(
                (data.replace(rid_reply, b':ID\r\n'), info.replace(rid_reply, b':ID\r\n'), flags)
            )
    assert got[0] == got[1]
    assert got[0][0] == b'>2\r\n$21\r\ntracking-redir-broken\r\n:ID\r\n'
    assert got[0][2] == 'tR'


# -- BCAST, OPTIN, OPTOUT ----------------------------------------------------------------------


def test_bcast_prefixes_match_redis(pair):
    sides = pair('bcast', 'prefix', 'user:', 'prefix', 'item:')
    out = both_do(sides, [], [], [('SET', 'user:1', 'a')])
    assert out == push(b'user:1')
    assert both_do(sides, [], [], [('SET', 'other', 'a'), ('SET', 'use', 'b')]) == b''
    out = both_do(sides, [], [], [('MSET', 'item:2', 'a', 'user:9', 'b', 'item:1', 'c')])
    assert out == push(b'item:1', b'item:2') + push(b'user:9')


def test_bcast_without_prefix_and_noloop(pair):
    sides = pair('bcast', 'noloop')
    got = []
    for t, w in sides:
        t.cmd('SET', 'mine', '1')
        w.cmd('SET', 'theirs', '1')
        got.append(strip_sync(t.sync()))
    assert got[0] == got[1] == push(b'theirs')


def test_bcast_cost_ignores_non_matching_prefixes(server):
    with RawConn(server.port) as w, RawConn(server.port, proto=3) as t:
        prefixes = [f'p{i}:' for i in range(2000)]
        args = [x for p in prefixes for x in ('PREFIX', p)]
        assert t.cmd('CLIENT', 'TRACKING', 'on', 'BCAST', *args) == b'+OK\r\n'
        info = w.cmd('INFO', 'stats')
        assert b'tracking_total_prefixes:2000\r\n' in info
        w.cmd('SET', 'p1999:x', '1')
        w.cmd('SET', 'q:x', '1')
        assert strip_sync(t.sync()) == push(b'p1999:x')
        assert len(server.server.tracking.lengths) == 4  # 'pN:' of 1 to 4 digits: 3..6


def test_optin_and_optout(pair):
    sides = pair('optin')
    reads = [('GET', 'a'), ('CLIENT', 'CACHING', 'yes'), ('GET', 'b'), ('GET', 'c')]
    out = both_do(sides, [], reads, [('MSET', 'a', '1', 'b', '1', 'c', '1')], exact=False)
    assert pushed_keys(out) == [b'b']
    for t, _w in sides:
        t.cmd('CLIENT', 'TRACKING', 'off')
        t.cmd('CLIENT', 'TRACKING', 'on', 'optout')
    reads = [('GET', 'a'), ('CLIENT', 'CACHING', 'no'), ('GET', 'b'), ('GET', 'c')]
    out = both_do(sides, [], reads, [('MSET', 'a', '2', 'b', '2', 'c', '2')], exact=False)
    assert sorted(pushed_keys(out)) == [b'a', b'c']


# -- the table limit and INFO ---------------------------------------------------------------


def test_info_fields_and_table_limit(server, redis_ref):
    got = []
    for port in (server.port, redis_ref[1]):
        with RawConn(port) as w, RawConn(port, proto=3) as t, RawConn(port) as b:
            w.cmd('FLUSHALL')
            t.cmd('CLIENT', 'TRACKING', 'on')
            b.cmd('CLIENT', 'TRACKING', 'on', 'bcast', 'prefix', 'x', 'prefix', 'y')
            t.cmd('MGET', 'k1', 'k2', 'k3')

            def fields():
                info = w.cmd('INFO').decode()
                return [
                    int(re.search(f'{f}:(\\d+)', info).group(1))
                    for f in (
                        'tracking_clients',
                        'tracking_total_keys',
                        'tracking_total_items',
                        'tracking_total_prefixes',
                    )
                ]

            before = fields()
            w.cmd('CONFIG', 'SET', 'tracking-table-max-keys', '2')
            assert fields()[1] == 2  # enforced before the next command (INFO) runs
            w.cmd('CONFIG', 'SET', 'tracking-table-max-keys', '1')
            try:
                t.cmd('GET', 'k4')
                w.cmd('PING')  # Redis enforces the limit before a command
                dropped = pushed_keys(strip_sync(t.sync()))
                after = fields()
            finally:
                w.cmd('CONFIG', 'SET', 'tracking-table-max-keys', '1000000')
            got.append((before, after))
            # every key dropped from the table was invalidated (Redis may hold one back
            # until a later command of the tracking client)
            assert 2 <= len(dropped) <= 3
            assert len(set(dropped)) == len(dropped)
    assert got[0] == got[1] == ([2, 3, 3, 2], [2, 1, 1, 2])


# -- redis-py's client-side cache -------------------------------------------------------------


def test_redis_py_client_side_cache(make_server):
    srv = make_server(announce_redis_version='7.4.0')
    cached = redis.Redis(port=srv.port, protocol=3, cache_config=CacheConfig())
    other = redis.Redis(port=srv.port, protocol=2)
    try:
        other.set('k', 'v1')
        assert cached.get('k') == b'v1'

        def gets():
            stats = other.info('commandstats').get('cmdstat_get')
            return stats['calls'] if stats else 0

        n = gets()
        for _ in range(5):
            assert cached.get('k') == b'v1'  # served from the local cache
        assert gets() == n
        other.set('k', 'v2')  # invalidates the cached value
        wait_until(lambda: cached.get('k') == b'v2', 'the invalidation')
        assert gets() > n
        # a key that expires is invalidated at its deadline and read afresh
        other.set('e', 'old', px=300)
        assert cached.get('e') == b'old'
        m = gets()
        assert cached.get('e') == b'old'
        assert gets() == m
        wait_until(lambda: other.exists('e') == 0, 'the expiry')
        wait_until(lambda: cached.get('e') is None, 'the expiry invalidation')
        assert gets() > m
    finally:
        cached.close()
        other.close()


def test_announced_version(make_server, server):
    with RawConn(server.port, proto=3) as c:
        assert b'$6\r\n7.0.15\r\n' in c.cmd('HELLO', '3')
    srv = make_server(announce_redis_version='7.4.0')
    client = redis.Redis(port=srv.port, protocol=2)
    try:
        assert client.info('server')['redis_version'] == '7.4.0'
        hello = client.execute_command('HELLO')
        assert dict(zip(hello[::2], hello[1::2]))[b'version'] == b'7.4.0'
        client.config_set('announce-redis-version', '7.2.4')
        assert client.info('server')['redis_version'] == '7.2.4'
        with pytest.raises(redis.ResponseError):
            client.config_set('announce-redis-version', '7.x')
    finally:
        client.close()
