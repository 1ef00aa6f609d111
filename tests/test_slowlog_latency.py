"""SLOWLOG and LATENCY against redis-server 7.0.15, in RESP2 and RESP3: which commands are
logged and how (truncation, redaction, EXEC's commands one by one, scripts' commands from
'?:0'), the replies' shapes and errors, the latency events `command`, `fast-command`,
`expire-cycle` and `eviction-cycle`, LATENCY HISTOGRAM and INFO latencystats, and the
parameters that steer them.

Durations, timestamps and bucket positions depend on the machine: entries are compared
without them, and latency samples only against bounds the sleeps guarantee (a DEBUG SLEEP
of 20 ms is at least 20 ms everywhere)."""

import re
import time

import hiredis
import pytest

from conftest import raw_same, spawn_redis, spawn_store, stop, wait_until
from rawconn import RawConn, pack_all

DEFAULTS = [
    ('slowlog-log-slower-than', '10000'),
    ('slowlog-max-len', '128'),
    ('latency-monitor-threshold', '0'),
    ('latency-tracking', 'yes'),
    ('latency-tracking-info-percentiles', '50 99 99.9'),
]


def parse(raw):
    reader = hiredis.Reader()
    reader.feed(raw)
    return reader.gets()


def call(conn, *args):
    """One command on a RawConn, its reply parsed (an error as ('error', message))."""
    value = parse(conn.cmd(*args))
    if isinstance(value, hiredis.ReplyError):
        return ('error', str(value))
    return value


def restore(port):
    with RawConn(port) as admin:
        for name, value in DEFAULTS:
            admin.cmd('CONFIG', 'SET', name, value)
        admin.cmd('SLOWLOG', 'RESET')
        admin.cmd('LATENCY', 'RESET')


@pytest.fixture
def ports(server, redis_ref):
    """(ours, redis-server) ports, with the slowlog and the monitor at their defaults and
    empty, before and after the test."""
    ps = (server.port, redis_ref[1])
    for p in ps:
        restore(p)
    yield ps
    for p in ps:
        restore(p)


@pytest.fixture(params=[2, 3], ids=['resp2', 'resp3'])
def pair(request, ports):
    """(ours, redis-server) raw connections speaking the parametrized protocol."""
    conns = [RawConn(p, proto=request.param) for p in ports]
    yield conns
    for c in conns:
        c.close()


def each(pair, *args):
    return [call(c, *args) for c in pair]


def entries(conn, count=-1):
    """SLOWLOG GET as comparable rows: (argv, client name), newest first, after checking
    what is machine-dependent for its form: ids consecutive, recent timestamps, durations
    not negative, a peer address."""
    rows = call(conn, 'SLOWLOG', 'GET', count)
    now = time.time()
    out = []
    for i, (eid, ts, us, argv, peer, name) in enumerate(rows):
        assert eid == rows[0][0] - i
        assert now - 600 < ts <= now + 1
        assert us >= 0
        assert peer == b'?:0' or re.fullmatch(rb'127\.0\.0\.1:\d+', peer), peer
        out.append((argv, peer if peer == b'?:0' else b'peer', name))
    return out


def run_logged(pair, commands):
    """SLOWLOG RESET, log everything, run `commands`, then SLOWLOG GET -1 on both."""
    for c in pair:
        c.cmd('CONFIG', 'SET', 'slowlog-log-slower-than', '0')
        c.cmd('SLOWLOG', 'RESET')
        for cmd in commands:
            c.cmd(*cmd)
    got, want = (entries(c) for c in pair)
    assert got == want
    return got


# -- SLOWLOG ---------------------------------------------------------------------------------


def test_everything_is_logged_at_zero(pair):
    got = run_logged(
        pair,
        [
            ('SET', 'k', 'v'),
            ('GET', 'k'),
            ('CLIENT', 'SETNAME', 'me'),
            ('INCR', 'k'),  # an error reply is logged too
            ('CONFIG', 'GET', 'slowlog-max-len'),
        ],
    )
    assert [row[0][0] for row in got] == [b'CONFIG', b'INCR', b'CLIENT', b'GET', b'SET', b'SLOWLOG']
    assert got[0][2] == b'me' and got[3][2] == b''


def test_rejected_commands_are_not_logged(pair):
    got = run_logged(pair, [('GET',), ('NOSUCH', 'x'), ('SLOWLOG', 'NOSUCH'), ('PING',)])
    assert [row[0] for row in got] == [[b'PING'], [b'SLOWLOG', b'RESET']]


def test_truncation(pair):
    """At most 32 arguments, the last saying how many more; strings cut at 128 bytes."""
    long = 'x' * 200
    got = run_logged(
        pair,
        [
            ('RPUSH', 'list', *[str(i) for i in range(40)]),
            ('SET', long, 'y' * 129),
            ('SET', 'k', 'z' * 128),
        ],
    )
    assert got[2][0][-1] == b'... (11 more arguments)' and len(got[2][0]) == 32
    assert got[1][0][1] == b'x' * 128 + b'... (72 more bytes)'


def test_redaction(pair):
    got = run_logged(
        pair,
        [
            ('AUTH', 'secret'),
            ('AUTH', 'user', 'secret'),
            ('AUTH', 'a', 'b', 'c'),  # a syntax error before AUTH looks at them
            ('HELLO', '2', 'AUTH', 'default', 'secret', 'SETNAME', 'named'),
            ('HELLO', '3', 'foo', 'AUTH', 'a', 'b'),
            ('HELLO', '4', 'AUTH', 'a', 'b'),
            ('HELLO', '2', 'AUTH', 'a', 'b', 'foo'),
            ('CONFIG', 'SET', 'requirepass', '', 'masterauth', 'x'),
            ('CONFIG', 'SET', 'masteruser', 'u', 'slowlog-max-len', '128'),
            ('CONFIG', 'SET', 'nosuch', '1', 'masterauth', 'y'),
        ],
    )
    assert sum(row[0].count(b'(redacted)') for row in got) == 11


def test_exec_logs_its_commands(pair):
    """EXEC is skip_slowlog; the commands it runs are logged one by one, after MULTI."""
    got = run_logged(pair, [('MULTI',), ('SET', 'a', '1'), ('GET', 'a'), ('EXEC',)])
    assert [row[0][0] for row in got] == [b'GET', b'SET', b'MULTI', b'SLOWLOG']


def test_script_commands_come_from_the_script_client(pair):
    script = "redis.call('set', KEYS[1], 'v'); return redis.call('get', KEYS[1])"
    got = run_logged(pair, [('EVAL', script, '1', 'k')])
    assert got[1:3] == [([b'get', b'k'], b'?:0', b''), ([b'set', b'k', b'v'], b'?:0', b'')]


def _blocked(conn):
    return int(re.search(rb'blocked_clients:(\d+)', conn.cmd('INFO', 'clients')).group(1))


def test_blocked_commands_are_logged_when_served(ports):
    """As Redis 7.0: a command that blocks is logged when a write serves it (after that
    write), and not at all when its timeout ends the wait."""
    got = []
    for p in ports:
        with RawConn(p) as a, RawConn(p) as b:
            a.cmd('DEL', 'list', 'nolist')
            a.cmd('CONFIG', 'SET', 'slowlog-log-slower-than', '0')
            a.cmd('SLOWLOG', 'RESET')
            assert parse(a.cmd('BLPOP', 'nolist', '0.05')) is None
            before = _blocked(b)
            a.send(pack_all(('BLPOP', 'list', '0')))
            wait_until(lambda b=b, n=before: _blocked(b) > n, 'BLPOP to block')
            b.cmd('RPUSH', 'list', 'x')
            assert parse(a.read_reply()) == [b'list', b'x']
            got.append([row[0] for row in entries(a) if row[0][0] != b'INFO'])
    assert (
        got[0]
        == got[1]
        == [[b'BLPOP', b'list', b'0'], [b'RPUSH', b'list', b'x'], [b'SLOWLOG', b'RESET']]
    )


def test_commands_replayed_from_the_aof_are_not_logged(tmp_path):
    """Loading the AOF runs its commands (and the scripts they hold) without logging
    them, as Redis's call() does for the AOF client; a client's commands after it are."""
    script = "return redis.call('set', 'b', '2')"
    got = []
    for kind, spawn in (('store', spawn_store), ('redis', spawn_redis)):
        d = tmp_path / kind
        d.mkdir()
        args = ('--appendonly', 'yes', '--dir', str(d), '--slowlog-log-slower-than', '0')
        proc, port = spawn(*args)
        try:
            with RawConn(port) as c:
                c.send(pack_all(('MULTI',), ('SET', 'a', '1'), ('EXEC',)))
                c.read_replies(3)
                c.cmd('EVAL', script, '0')
        finally:
            stop(proc)
        proc, port = spawn(*args)
        try:
            with RawConn(port) as c:
                # loaded: not loading, and both keys in (INFO alone can say loading:0 before
                # a redis-server under load has begun reading the AOF)
                wait_until(
                    lambda c=c: (
                        b'loading:0' in c.cmd('INFO', 'persistence')
                        and b'db0:keys=2,' in c.cmd('INFO', 'keyspace')
                    ),
                    'loading',
                )
                assert c.cmd('MGET', 'a', 'b') == b'*2\r\n$1\r\n1\r\n$1\r\n2\r\n', kind
                rows = entries(c)
        finally:
            stop(proc)
        got.append([row[:2] for row in rows if row[0][0] != b'INFO'])
    assert got[0] == got[1] == [([b'MGET', b'a', b'b'], b'peer')]


def test_a_pipelined_config_set_applies_to_the_next_command(ports):
    """The threshold is read per command: a CONFIG SET in the same read as later commands
    governs them (and itself)."""
    got = []
    for p in ports:
        with RawConn(p) as c:
            c.cmd('SLOWLOG', 'RESET')
            c.send(
                pack_all(
                    ('CONFIG', 'SET', 'slowlog-log-slower-than', '0'),
                    ('PING',),
                    ('CONFIG', 'SET', 'slowlog-log-slower-than', '-1'),
                    ('ECHO', 'not logged'),
                )
            )
            c.read_replies(4)
            got.append(entries(c))
    assert got[0] == got[1]
    assert [row[0][0] for row in got[0]] == [b'PING', b'CONFIG']


def test_max_len_len_and_get_counts(pair):
    for c in pair:
        c.cmd('CONFIG', 'SET', 'slowlog-log-slower-than', '0')
        for i in range(5):
            c.cmd('SET', 'k', i)
        c.cmd('CONFIG', 'SET', 'slowlog-max-len', '3')  # trims at once
    assert each(pair, 'SLOWLOG', 'LEN') == [3, 3]
    for count in ('0', '1', '2', '-1', '10'):
        got, want = (entries(c, count) for c in pair)
        assert got == want, count
    for c in pair:
        c.cmd('CONFIG', 'SET', 'slowlog-max-len', '0')
    assert each(pair, 'SLOWLOG', 'LEN') == [0, 0]


def test_off_and_thresholds(pair):
    """-1 logs nothing; a threshold logs only what is at least that slow."""
    for c in pair:
        c.cmd('CONFIG', 'SET', 'slowlog-log-slower-than', '-1')
        c.cmd('SLOWLOG', 'RESET')
        c.cmd('DEBUG', 'SLEEP', '0.01')
    assert each(pair, 'SLOWLOG', 'LEN') == [0, 0]
    for c in pair:
        c.cmd('CONFIG', 'SET', 'slowlog-log-slower-than', '200000')  # 200 ms
        c.cmd('PING')
        c.cmd('DEBUG', 'SLEEP', '0.25')
    got, want = (call(c, 'SLOWLOG', 'GET') for c in pair)
    assert [row[3] for row in got] == [row[3] for row in want] == [[b'DEBUG', b'SLEEP', b'0.25']]
    assert got[0][2] >= 250000


def test_slowlog_replies_and_errors(fresh_raw_pair):
    for proto in (2, 3):
        raw_same(
            fresh_raw_pair(proto),
            [
                ('SLOWLOG', 'RESET'),
                ('SLOWLOG', 'LEN'),
                ('SLOWLOG', 'GET'),
                ('SLOWLOG', 'HELP'),
                ('SLOWLOG',),
                ('SLOWLOG', 'FOO'),
                ('SLOWLOG', 'GET', '-2'),
                ('SLOWLOG', 'GET', 'abc'),
                ('SLOWLOG', 'GET', '1', '2'),
                ('SLOWLOG', 'get', '1', '2'),
                ('SLOWLOG', 'LEN', 'x'),
                ('SLOWLOG', 'RESET', 'x'),
                ('SLOWLOG', 'HELP', 'x'),
            ],
        )


# -- LATENCY ---------------------------------------------------------------------------------


def test_latency_replies_and_errors(fresh_raw_pair):
    for proto in (2, 3):
        raw_same(
            fresh_raw_pair(proto),
            [
                ('LATENCY', 'RESET'),
                ('LATENCY', 'LATEST'),
                ('LATENCY', 'HISTORY', 'command'),
                ('LATENCY', 'GRAPH', 'command'),
                ('LATENCY', 'DOCTOR'),
                ('LATENCY', 'HELP'),
                ('LATENCY',),
                ('LATENCY', 'FOO'),
                ('LATENCY', 'LATEST', 'x'),
                ('LATENCY', 'HISTORY'),
                ('LATENCY', 'GRAPH', 'a', 'b'),
                ('LATENCY', 'DOCTOR', 'x'),
                ('LATENCY', 'RESET', 'a', 'b'),
                ('LATENCY', 'HISTOGRAM', 'nosuch'),
                ('LATENCY', 'HELP', 'x'),
            ],
        )


def _text(reply):
    """A verbatim reply (RESP3) or bulk string (RESP2) as str."""
    return reply.decode() if isinstance(reply, bytes) else reply


def _digits(text):
    return re.sub(r'\d+', 'N', text)


def test_command_events(pair):
    for c in pair:
        c.cmd('CONFIG', 'SET', 'latency-monitor-threshold', '10')
        c.cmd('DEBUG', 'SLEEP', '0.03')
        c.cmd('DEBUG', 'SLEEP', '0.02')  # the same second: only raises the sample
    for latest in each(pair, 'LATENCY', 'LATEST'):
        assert len(latest) == 1
        event, ts, ms, worst = latest[0]
        assert event == b'command' and abs(ts - time.time()) < 600 and 20 <= ms <= worst
        assert worst >= 30
    for history in each(pair, 'LATENCY', 'HISTORY', 'command'):
        assert 1 <= len(history) <= 2 and all(ms >= 20 for _, ms in history)
    graphs = [_text(g) for g in each(pair, 'LATENCY', 'GRAPH', 'command')]
    for g in graphs:
        assert g.startswith('command - high ') and '\n' + '-' * 80 + '\n' in g
    doctors = [_digits(_text(d)) for d in each(pair, 'LATENCY', 'DOCTOR')]
    assert doctors[0] == doctors[1]
    assert 'N. command: N latency spikes' in doctors[0]
    assert each(pair, 'LATENCY', 'RESET', 'COMMAND', 'nosuch') == [1, 1]
    assert each(pair, 'LATENCY', 'LATEST') == [[], []]


def test_graph_of_one_sample_is_redis_s(ports):
    """With one sample the sparkline's shape does not depend on its value."""
    graphs = []
    for p in ports:
        with RawConn(p) as c:
            c.cmd('CONFIG', 'SET', 'latency-monitor-threshold', '10')
            c.cmd('DEBUG', 'SLEEP', '0.02')
            graphs.append(_text(parse(c.cmd('LATENCY', 'GRAPH', 'command'))))
    assert _digits(graphs[0]) == _digits(graphs[1])


def test_fast_command_event(ports):
    """A command flagged `fast` that is slow anyway (MGET of many keys) is a fast-command
    event."""
    n = 200000
    for p in ports:
        with RawConn(p) as c:
            c.cmd('FLUSHALL')
            keys = [f'k{i}' for i in range(n)]
            for i in range(0, n, 10000):
                c.cmd('MSET', *[x for k in keys[i : i + 10000] for x in (k, 'v')])
            c.cmd('CONFIG', 'SET', 'latency-monitor-threshold', '1')
            c.cmd('MGET', *keys)
            events = {row[0] for row in parse(c.cmd('LATENCY', 'LATEST'))}
            assert b'fast-command' in events, p
            c.cmd('FLUSHALL')


def test_expire_cycle_event(ports):
    for p in ports:
        with RawConn(p) as c:
            c.cmd('FLUSHALL')
            for i in range(0, 200000, 10000):
                c.cmd('MSET', *[x for j in range(i, i + 10000) for x in (f'k{j}', 'v')])
            c.cmd('CONFIG', 'SET', 'latency-monitor-threshold', '1')
            for i in range(0, 200000, 10000):
                c.send(pack_all(*[('PEXPIRE', f'k{j}', '50') for j in range(i, i + 10000)]))
                c.read_replies(10000)
            wait_until(lambda c=c: parse(c.cmd('DBSIZE')) == 0, 'the keys to expire')
            history = parse(c.cmd('LATENCY', 'HISTORY', 'expire-cycle'))
            assert history and all(ms >= 1 for _, ms in history), p


def test_eviction_cycle_event(ports):
    for p in ports:
        with RawConn(p) as c:
            c.cmd('FLUSHALL')
            for i in range(0, 200000, 10000):
                c.cmd('MSET', *[x for j in range(i, i + 10000) for x in (f'k{j}', 'v' * 50)])
            c.cmd('CONFIG', 'SET', 'latency-monitor-threshold', '1')
            c.cmd('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-random')
            # no time limit: one cycle evicts ~190,000 keys, well over 1 ms on any machine
            # (with Redis's 0.5 ms limit a cycle reached 1 ms only when it overran)
            c.cmd('CONFIG', 'SET', 'maxmemory-eviction-tenacity', '100')
            try:
                c.cmd('CONFIG', 'SET', 'maxmemory', '1mb')
                events = {row[0] for row in parse(c.cmd('LATENCY', 'LATEST'))}
            finally:
                c.cmd('CONFIG', 'SET', 'maxmemory', '0')
                c.cmd('CONFIG', 'SET', 'maxmemory-policy', 'noeviction')
                c.cmd('CONFIG', 'SET', 'maxmemory-eviction-tenacity', '10')
                c.cmd('FLUSHALL')
            assert b'eviction-cycle' in events, p


# -- histograms --------------------------------------------------------------------------------

# The bucket bounds LATENCY HISTOGRAM reports (hdr_iter_log from 1024 ns, doubling, each
# bucket's highest equivalent value in us).
BUCKETS = {1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056, 2113, 4227, 8454, 16908, 33816}
BUCKETS |= {67633, 135266, 270532, 541065, 1073741}


def _pairs(reply):
    """A map reply as (key, value) pairs in order: RESP2 sends it as a flat array, and a
    RESP3 map parsed into a dict would merge the keys a reply repeats."""
    if isinstance(reply, dict):
        return list(reply.items())
    return list(zip(reply[0::2], reply[1::2]))


def test_histogram(pair):
    """The commands named (a container names its subcommands, an unknown name nothing, a
    name twice answers twice), each with its calls and cumulative buckets."""
    for c in pair:
        c.cmd('CONFIG', 'RESETSTAT')
        for _ in range(3):
            c.cmd('SET', 'k', 'v')
        c.cmd('GET', 'k')
        c.cmd('CONFIG', 'GET', 'maxmemory')
    replies = [c.cmd('LATENCY', 'HISTOGRAM', 'set', 'GET', 'config', 'nosuch') for c in pair]
    for c in pair:
        assert c.cmd('LATENCY', 'HISTOGRAM', 'config|get', 'get', 'CONFIG|GET').count(b'|get') == 2
    got, want = ({k: dict(_pairs(v)) for k, v in _pairs(parse(r))} for r in replies)
    assert set(got) == set(want) == {b'set', b'get', b'config|get', b'config|resetstat'}
    for name, cdf in got.items():
        assert cdf[b'calls'] == want[name][b'calls'], name
        hist = dict(_pairs(cdf[b'histogram_usec']))
        assert set(hist) <= BUCKETS and max(hist.values()) == cdf[b'calls'], name
        assert list(hist.values()) == sorted(hist.values()), name


def _latencystats(conn):
    text = parse(conn.cmd('INFO', 'latencystats'))
    text = text.decode() if isinstance(text, bytes) else text
    return [line for line in text.split('\r\n') if line and not line.startswith('#')]


def test_info_latencystats(ports):
    lines = []
    for p in ports:
        with RawConn(p) as c:
            c.cmd('CONFIG', 'RESETSTAT')
            c.cmd('SET', 'k', 'v')
            c.cmd('CONFIG', 'SET', 'latency-tracking-info-percentiles', '0 50 99.99 100')
            c.cmd('GET', 'k')
            lines.append(sorted(_latencystats(c)))
    assert [line.split(':')[0] for line in lines[0]] == [line.split(':')[0] for line in lines[1]]
    pattern = r'latency_percentiles_usec_[a-z|]+:p0=[\d.]+,p50=[\d.]+,p99.99=[\d.]+,p100=[\d.]+'
    for line in lines[0] + lines[1]:
        assert re.fullmatch(pattern, line) and re.search(r'=\d+\.\d{3}(,|$)', line), line
    assert 'latency_percentiles_usec_set' in {line.split(':')[0] for line in lines[0]}


def test_latency_tracking_off_freezes_the_histograms(ports):
    calls = []
    for p in ports:
        with RawConn(p) as c:
            c.cmd('CONFIG', 'RESETSTAT')
            c.cmd('SET', 'k', 'v')
            c.cmd('CONFIG', 'SET', 'latency-tracking', 'no')
            c.cmd('SET', 'k', 'v')
            off = _latencystats(c)
            frozen = parse(c.cmd('LATENCY', 'HISTOGRAM', 'set'))
            c.cmd('CONFIG', 'SET', 'latency-tracking', 'yes')
            c.cmd('SET', 'k', 'v')
            again = parse(c.cmd('LATENCY', 'HISTOGRAM', 'set'))
            # CONFIG RESETSTAT while off: no histogram until a call with tracking on
            c.cmd('CONFIG', 'SET', 'latency-tracking', 'no')
            c.cmd('CONFIG', 'RESETSTAT')
            c.cmd('SET', 'k', 'v')
            reset = parse(c.cmd('LATENCY', 'HISTOGRAM', 'set'))
            c.cmd('CONFIG', 'SET', 'latency-tracking', 'yes')
            c.cmd('SET', 'k', 'v')
            after = parse(c.cmd('LATENCY', 'HISTOGRAM', 'set'))
            calls.append((off, frozen[1][1], again[1][1], reset, after[1][1]))
    assert calls[0] == calls[1] == ([], 1, 2, [], 1)


# -- the table --------------------------------------------------------------------------------


@pytest.mark.parametrize('name', ['slowlog', 'latency'])
def test_command_info_and_docs(ports, name):
    got = []
    for p in ports:
        with RawConn(p, proto=3) as c:
            info = parse(c.cmd('COMMAND', 'INFO', name))[0]
            docs = parse(c.cmd('COMMAND', 'DOCS', name))[name.encode()]
        subs = {sub[0]: sub[:9] for sub in info[9]}
        sub_docs = {
            k: (v[b'summary'], v[b'since'], v[b'group']) for k, v in docs[b'subcommands'].items()
        }
        got.append((info[:9], subs, sub_docs, docs[b'summary'], docs[b'since'], docs[b'group']))
    ours, theirs = got
    assert ours[0][:6] == theirs[0][:6]
    for key in theirs[1]:
        o, t = ours[1][key], theirs[1][key]
        assert o[:2] == t[:2] and set(o[2]) == set(t[2]), key
        assert set(o[6]) == set(t[6]) and set(o[7]) == set(t[7]), key
    assert set(ours[1]) == set(theirs[1])  # in Redis, in its dict's order
    assert ours[2:] == theirs[2:]


def test_config_parameters(ports):
    for proto in (2, 3):
        with RawConn(ports[0], proto=proto) as ours, RawConn(ports[1], proto=proto) as theirs:
            pair = ours, theirs
            for pattern in ('slowlog-*', 'latency-*'):
                got, want = (
                    dict(_pairs(call(c, 'CONFIG', 'GET', pattern))) for c in (ours, theirs)
                )
                assert got == want
            raw_same(
                pair,
                [
                    ('CONFIG', 'SET', 'slowlog-log-slower-than', '-2'),
                    ('CONFIG', 'SET', 'latency-tracking-info-percentiles', '101'),
                ],
            )
