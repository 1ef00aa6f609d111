"""Issue 13: one client cannot hold the others up (store/connection_turns.py) and big
requests cost what they must (store/request_parser.py's hiredis runs and big-argument buffers).

- A client pipelining 1,000,000 GETs runs a bounded slice per turn of the loop: another
  client is answered throughout, not only once the pipeline is done.
- A client that never reads its replies stops being read (TCP backpressure): the server's
  memory stays bounded with no output-buffer limit, and it is served in full once it reads.
- A 1,000,001-argument MSET works and a PING sent while it is being read is answered.
- A 256 MB SET arrives intact without the server holding the value several times over.
- Pipelines keep their order and replies across slices (against redis-server): many
  commands in one read, MULTI/EXEC and a blocking command in the middle of one, and
  arguments of every size and byte cut at any point.

Servers run as subprocesses where the test measures RSS or latency (the embedded server
would share the test's interpreter). Latency and RSS figures are printed (pytest -s); the
assertions are orderings and generous bounds, never the machine's speed: bench/fairness.py
has the figures.
"""

import random
import socket
import threading
import time

import pytest

from conftest import WAIT, spawn_store, stop, wait_until
from rawconn import RawConn, pack, pack_all
from store.request_parser import MBULK_BIG_ARG, ProtocolError, RequestParser

MB = 1024 * 1024


def vm(pid, field):
    """A /proc/<pid>/status figure in bytes (VmRSS: resident now, VmHWM: its peak)."""
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


@pytest.fixture
def store_proc():
    proc, port = spawn_store()
    yield proc, port
    stop(proc)


def send_in_thread(sock, data):
    """sendall(data) from a thread (the server may not read it all before we act)."""
    errors = []

    def send():
        try:
            sock.sendall(data)
        except OSError as e:  # the test closed the socket, or the server did
            errors.append(e)

    t = threading.Thread(target=send, daemon=True)
    t.start()
    return t


# -- fair turns ---------------------------------------------------------------------------


@pytest.mark.slow
def test_deep_pipeline_interleaves_with_other_clients(store_proc):
    """A client sends 1,000,000 GETs between two markers and reads nothing; another client
    polls all along. It is answered many times between the markers, and its longest wait
    is a small part of the time the pipeline takes (before, one read after another of the
    pipeline ran while everyone else waited: the longest wait was nearly all of it)."""
    proc, port = store_proc
    pipeline = pack('SET', 'fair:start', '1') + pack('GET', 'fair:k') * 1_000_000
    pipeline += pack('SET', 'fair:done', '1')
    with RawConn(port) as poll, socket.create_connection(('127.0.0.1', port)) as piper:
        sender = send_in_thread(piper, pipeline)
        deadline = time.monotonic() + WAIT * 5
        while poll.cmd('EXISTS', 'fair:start') != b':1\r\n':
            assert time.monotonic() < deadline
        start = time.monotonic()
        waits = []
        while True:
            t = time.monotonic()
            done = poll.cmd('EXISTS', 'fair:done') == b':1\r\n'
            if done:
                break
            waits.append(time.monotonic() - t)
            assert time.monotonic() < deadline
        took = time.monotonic() - start
        sender.join(WAIT)
        print(
            f'pipeline {took:.2f} s; {len(waits)} answers meanwhile, longest wait '
            f'{max(waits, default=0) * 1000:.1f} ms'
        )
        assert len(waits) >= 20
        assert max(waits) < took / 4
        assert poll.cmd('DBSIZE') == b':2\r\n'


@pytest.mark.slow
def test_non_reading_client_is_not_read_past_its_replies(store_proc):
    """300,000 GETs of a 1000-byte value (300 MB of replies) from a client that does not
    read, and no output-buffer limit: the server stops reading it once a bounded amount of
    replies waits, so its RSS grows far less than 300 MB; once the client reads, every reply
    arrives, in order."""
    proc, port = store_proc
    n, value = 300_000, b'v' * 1000
    with RawConn(port) as admin:
        assert admin.cmd('SET', 'fair:v', value) == b'+OK\r\n'
        base = vm(proc.pid, 'VmRSS')
        piper = socket.socket()
        piper.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        piper.connect(('127.0.0.1', port))
        sender = send_in_thread(piper, pack('GET', 'fair:v') * n + pack('PING', 'end'))

        def gets_run():
            info = admin.cmd('INFO', 'commandstats').decode()
            line = next((x for x in info.split('\r\n') if x.startswith('cmdstat_get:')), '')
            return int(line.split('calls=')[1].split(',')[0]) if line else 0

        # wait until the server has stopped making progress on it (or ran it all)
        last, still = -1, 0
        deadline = time.monotonic() + WAIT * 5
        while still < 10 and last < n:
            time.sleep(0.1)
            now = gets_run()
            still = still + 1 if now == last else 0
            last = now
            assert time.monotonic() < deadline
        grown = vm(proc.pid, 'VmRSS') - base
        print(f'ran {last} of {n} GETs before the client read; RSS grew {grown / MB:.0f} MB')
        assert last < n
        assert grown < 200 * MB
        # reading now drains everything, in order
        reply = b'$1000\r\n' + value + b'\r\n'
        got, want = 0, len(reply) * n
        piper.settimeout(WAIT)
        buf = b''
        while got < want:
            chunk = piper.recv(4 * MB)
            assert chunk, 'closed'
            buf += chunk
            whole = len(buf) - len(buf) % len(reply)
            assert buf[:whole] == reply * (whole // len(reply))
            got += whole
            buf = buf[whole:]
        while not buf.endswith(b'$3\r\nend\r\n'):
            buf += piper.recv(4096)
        assert buf == b'$3\r\nend\r\n'
        sender.join(WAIT)
        piper.close()
        assert gets_run() == n


# -- huge commands ------------------------------------------------------------------------


@pytest.mark.slow
def test_million_argument_mset_and_a_ping_during_it(store_proc):
    """MSET of 500,000 pairs (1,000,001 arguments, 7 MB) while another client PINGs in a
    loop: stored, and the PINGs are answered all along (the longest wait is printed: the
    issue's target is 1 s, Redis 80 ms; asserted only as a bound for a hang)."""
    proc, port = store_proc
    pairs = 500_000
    args = ['MSET']
    for i in range(pairs):
        args += [f'm:{i}', f'v{i}']
    request = pack(*args)
    waits = []
    stop_pinging = threading.Event()

    def pinger():
        with RawConn(port) as c:
            while not stop_pinging.is_set():
                t = time.monotonic()
                assert c.cmd('PING') == b'+PONG\r\n'
                waits.append(time.monotonic() - t)

    with socket.create_connection(('127.0.0.1', port)) as msetter:
        msetter.settimeout(WAIT)
        pings = threading.Thread(target=pinger, daemon=True)
        pings.start()
        wait_until(lambda: waits, 'a first PONG')
        before = len(waits)
        sender = send_in_thread(msetter, request)
        assert msetter.recv(100) == b'+OK\r\n'
        during = len(waits) - before
        stop_pinging.set()
        pings.join(WAIT)
        sender.join(WAIT)
    print(f'{during} PINGs answered during the MSET, the longest waited {max(waits) * 1000:.0f} ms')
    assert during >= 1
    assert max(waits) < 30
    with RawConn(port) as c:
        assert c.cmd('DBSIZE') == b':%d\r\n' % pairs
        assert c.cmd('GET', 'm:0') == b'$2\r\nv0\r\n'
        assert c.cmd('GET', 'm:499999') == b'$7\r\nv499999\r\n'


@pytest.mark.slow
def test_256mb_set_is_stored_once(store_proc):
    """One SET of a 256 MB value, sent in 1 MB writes: stored intact (STRLEN, GETRANGE at
    both ends and in the middle), the server's peak RSS growing by well under the 3x it
    took when the value was collected in the parser's buffer and copied out twice."""
    proc, port = store_proc
    size = 256 * MB
    value = bytearray(b'0123456789abcdef' * (size // 16))
    value[:5] = b'first'
    value[size // 2 : size // 2 + 6] = b'middle'
    value[-4:] = b'last'
    value = bytes(value)
    base = vm(proc.pid, 'VmRSS')
    with RawConn(port) as c:
        c.send(b'*3\r\n$3\r\nSET\r\n$8\r\nfair:big\r\n$%d\r\n' % size)
        view = memoryview(value)
        for i in range(0, size, MB):
            c.send(view[i : i + MB])
        c.send(b'\r\n')
        assert c.read_reply() == b'+OK\r\n'
        peak = vm(proc.pid, 'VmHWM') - base
        print(
            f'peak RSS growth {peak / MB:.0f} MB for a {size // MB} MB value ({peak / size:.2f}x)'
        )
        assert peak < 2.5 * size
        assert c.cmd('STRLEN', 'fair:big') == b':%d\r\n' % size
        assert c.cmd('GETRANGE', 'fair:big', '0', '15') == b'$16\r\nfirst56789abcdef\r\n'
        mid = size // 2
        assert c.cmd('GETRANGE', 'fair:big', mid - 2, mid + 7) == b'$10\r\nefmiddle67\r\n'
        assert c.cmd('GETRANGE', 'fair:big', '-8', '-1') == b'$8\r\n89ablast\r\n'
        assert c.cmd('GETRANGE', 'fair:big', 12345678, 12345678 + 15) == (
            b'$16\r\n' + value[12345678 : 12345678 + 16] + b'\r\n'
        )
        assert c.cmd('DEL', 'fair:big') == b':1\r\n'


# -- order and replies across slices, against redis-server ---------------------------------


def both_ways(raw_pair, data, replies, pieces=None):
    """Send `data` on both servers (whole, or cut into `pieces`) and return both servers'
    next `replies` replies."""
    ours, theirs = raw_pair()
    for c in (ours, theirs):
        c.cmd('FLUSHALL')
        if pieces is None:
            c.send(data)
        else:
            for p in pieces:
                c.send(p)
    return ours.read_replies(replies), theirs.read_replies(replies)


def mixed_commands(n):
    cmds = []
    for i in range(n):
        k = f'o:{i % 50}'
        cmds += [
            ('SET', k, i),
            ('INCR', 'o:count'),
            ('GET', k),
            ('ECHO', 'x' * (i % 300)),
            ('RPUSH', 'o:list', i),
        ]
    return cmds


def test_many_commands_in_one_read_keep_order(raw_pair):
    """15,000 commands in one write (many slices, several reads), then the same cut at odd
    offsets, then in writes of whole commands: the same replies in the same order as
    redis-server."""
    cmds = mixed_commands(3000)
    data = pack_all(*cmds)
    ours, theirs = both_ways(raw_pair, data, len(cmds))
    assert ours == theirs
    rng = random.Random(13)
    cuts = sorted(rng.sample(range(1, len(data)), 40))
    pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
    ours, theirs = both_ways(raw_pair, data, len(cmds), pieces)
    assert ours == theirs
    # writes of 2500 whole commands (a read each, mostly: the fast path, sliced)
    pieces = [pack_all(*cmds[i : i + 2500]) for i in range(0, len(cmds), 2500)]
    ours, theirs = both_ways(raw_pair, data, len(cmds), pieces)
    assert ours == theirs


def test_multi_exec_across_slices(raw_pair):
    """MULTI after 700 commands, 2000 queued commands, EXEC, 700 more, in one write."""
    cmds = [('INCR', 'o:a')] * 700 + [('MULTI',)]
    cmds += [('INCR', 'o:a'), ('LPUSH', 'o:l', 'x')] * 1000 + [('EXEC',)]
    cmds += [('GET', 'o:a')] * 700 + [('LLEN', 'o:l')]
    ours, theirs = both_ways(raw_pair, pack_all(*cmds), len(cmds))
    assert ours == theirs
    assert ours.endswith(b':1000\r\n')


def test_blocking_command_in_a_pipeline(raw_pair):
    """600 commands, BLPOP (blocks), 600 more, in one write, and one more command later:
    the first 600 replies come, then nothing until another client pushes; then the BLPOP
    reply and the rest, in order, as redis-server sends them."""
    cmds = [('INCR', 'o:c')] * 600 + [('BLPOP', 'o:q', '0')] + [('INCR', 'o:c')] * 600
    data = pack_all(*cmds)
    ours, theirs = raw_pair()
    results = []
    for c in (ours, theirs):
        c.cmd('FLUSHALL')
        c.send(data)
        first = c.read_replies(600)
        quiet = c.read_available(wait=0.3)
        results.append((first, quiet))
    assert results[0] == results[1]
    assert results[0][1] == b''
    for c in (ours, theirs):  # sent while it waits: still read, and queued behind it
        c.send(pack('INCR', 'o:c'))
    pushers = raw_pair()
    for pusher in pushers:
        assert pusher.cmd('RPUSH', 'o:q', 'item') == b':1\r\n'
    rest = [c.read_replies(602) for c in (ours, theirs)]
    assert rest[0] == rest[1]
    assert rest[0].startswith(b'*2\r\n$3\r\no:q\r\n$4\r\nitem\r\n:601\r\n')
    assert rest[0].endswith(b':1200\r\n:1201\r\n')


def test_client_pause_in_a_pipeline(raw_pair):
    """CLIENT PAUSE WRITE, then 600 reads, 600 INCRs (held from the first) and 600 reads in
    one write, and one more command later: the first 600 replies come, nothing more until
    CLIENT UNPAUSE, then the rest in order, as redis-server sends them."""
    cmds = [('GET', 'o:c')] * 600 + [('INCR', 'o:c')] * 600 + [('GET', 'o:c')] * 600
    data = pack_all(*cmds)
    ours, theirs = raw_pair()
    admins = raw_pair()
    results = []
    try:
        for c, admin in zip((ours, theirs), admins):
            c.cmd('FLUSHALL')
            assert admin.cmd('CLIENT', 'PAUSE', '60000', 'WRITE') == b'+OK\r\n'
            c.send(data)
            first = c.read_replies(600)
            quiet = c.read_available(wait=0.3)
            c.send(pack('ECHO', 'later'))
            quiet += c.read_available(wait=0.3)
            assert admin.cmd('CLIENT', 'UNPAUSE') == b'+OK\r\n'
            results.append((first, quiet, c.read_replies(1201)))
    finally:
        for admin in admins:
            admin.cmd('CLIENT', 'UNPAUSE')
    assert results[0] == results[1]
    assert results[0][1] == b''
    assert results[0][2].endswith(b'$3\r\n600\r\n$5\r\nlater\r\n')


def random_arg(rng, big=0.02):
    r = rng.random()
    if r < big:
        return rng.randbytes(rng.randrange(MBULK_BIG_ARG - 10, MBULK_BIG_ARG + 5000))
    if r < 0.5:
        return b'k%d' % rng.randrange(10**6)
    if r < 0.85:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
    return b'\r\n+=(|~>$*:-' * rng.randrange(1, 4)


def test_arguments_of_every_kind_cut_anywhere(raw_pair):
    """MSETs of many binary values (CRLFs and RESP type bytes in them, a few of 32 KB and
    more), in pieces cut at random: stored as redis-server stores them."""
    rng = random.Random(1313)
    cmds = []
    for i in range(30):
        args = []
        for j in range(rng.choice([1, 3, 40, 2000])):
            args += [b'b:%d:%d' % (i, j), random_arg(rng, 0.005)]
        cmds.append(['MSET', *args])
    keys = [a for c in cmds for a in c[1::2]]
    gets = [['MGET', *keys[i : i + 500]] for i in range(0, len(keys), 500)]
    data = pack_all(*cmds, *gets, ['DBSIZE'])
    cuts = sorted(rng.sample(range(1, len(data)), 200))
    pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
    ours, theirs = both_ways(raw_pair, data, len(cmds) + len(gets) + 1, pieces)
    assert ours == theirs


# -- the parser's hiredis runs against its own loop ----------------------------------------


def parse_all(pieces):
    p = RequestParser()
    out, error = [], None
    for piece in pieces:
        p.feed(piece)
        try:
            out += p.parse(512 * MB)
        except ProtocolError as e:
            out += p.ready
            error = str(e)
            break
    return out, error, (p.pending(), p.multibulklen)


# What hiredis parses but Redis does not take as a bulk argument (Redis: "expected '$'")
ODD_ELEMENTS = (b'+abc\r\n', b'=7\r\ntxt:abc\r\n', b'(12345\r\n', b':5\r\n', b'_\r\n')
# What hiredis parses as a frame where Redis sees inline commands
ODD_FRAMES = (b'~2\r\n$1\r\na\r\n$1\r\nb\r\n', b'>1\r\n$4\r\nPING\r\n', b'|1\r\n+a\r\n+b\r\n')


def random_stream(rng):
    """Frames of binary and big arguments, inline commands, and now and then something
    only hiredis would take (which may end the parse with an error)."""
    stream = []
    for _ in range(60):
        r = rng.random()
        if r < 0.85:
            count = rng.choice([1, 2, 5, 17, 300])
            stream.append(pack(*[random_arg(rng, 0.003) for _ in range(count)]))
        elif r < 0.92:
            stream.append(rng.choice([b'PING\r\n', b'*0\r\n', b'*-1\r\n', b'ECHO "a b"\r\n']))
        elif r < 0.96:
            stream.append(rng.choice(ODD_FRAMES))
        else:
            count = rng.choice([3, 40])
            elements = [pack(b'x%d' % i)[4:] for i in range(count)]
            elements[rng.randrange(1, count)] = rng.choice(ODD_ELEMENTS)
            stream.append(b'*%d\r\n' % count + b''.join(elements))
    return b''.join(stream)


@pytest.mark.parametrize('seed', range(8))
def test_parser_runs_match_the_loop(seed, monkeypatch):
    """The parser with its hiredis runs (frames, and arguments of long commands) against
    its Python loop alone, on streams of binary arguments, big ones, inline commands and
    malformed frames, whole and in pieces: the same commands, the same error at the same
    point, the same bytes left."""
    rng = random.Random(seed)
    data = random_stream(rng)
    with monkeypatch.context() as m:
        m.setattr(RequestParser, '_hiredis_frames', lambda self: False)
        m.setattr(RequestParser, '_hiredis_args', lambda self: False)
        loop = parse_all([data])
    assert parse_all([data]) == loop
    # fed in pieces, less is buffered when an error stops it: compare commands and error
    assert parse_all([data[i : i + 16384] for i in range(0, len(data), 16384)])[:2] == loop[:2]
    pieces, i = [], 0
    while i < len(data):
        n = rng.randrange(1, 3000)
        pieces.append(data[i : i + n])
        i += n
    assert parse_all(pieces)[:2] == loop[:2]


def test_big_argument_is_counted_in_the_query_buffer():
    """While a big argument is read, pending() (CLIENT LIST qbuf, the query-buffer limit)
    counts what arrived of it, as Redis's query buffer does."""
    p = RequestParser()
    p.feed(b'*2\r\n$3\r\nSET\r\n$100000\r\n' + b'a' * 1000)
    assert p.parse(512 * MB) == []
    assert p.pending() == 1000
    p.feed(b'b' * 98000)
    assert p.parse(512 * MB) == [] and p.pending() == 99000
    p.feed(b'c' * 1000 + b'\r')
    assert p.parse(512 * MB) == [] and p.pending() == 100001
    p.feed(b'\n*1\r\n$4\r\nPING\r\n')
    assert p.parse(512 * MB) == [[b'SET', b'a' * 1000 + b'b' * 98000 + b'c' * 1000], [b'PING']]
    assert p.pending() == 0
