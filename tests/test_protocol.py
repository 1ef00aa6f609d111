"""The request wire protocol, byte for byte against redis-server 7.0.

Every differential test sends the same bytes over raw sockets to our server and to the
reference redis-server and requires identical reply bytes and the same outcome for the
connection (still open, or closed right after the replies). Protocol errors must come
after the replies of the commands that preceded them in the same packet, and nothing after
the error may run; limits (proto-max-bulk-len, client-query-buffer-limit, the 64 KB inline
and header limits) must trip exactly where redis-server trips them.
"""

import pytest

from conftest import spawn_redis, spawn_store, stop, wait_until
from rawconn import RawConn, pack, pack_all
from rawconn import exchange as raw_exchange
from store.request_parser import ProtocolError, RequestParser, split_args


def exchange(port, data, **kw):
    """rawconn.exchange, a reset counted as a close (as a client sees it, the connection
    ended either way)."""
    got, closed = raw_exchange(port, data, **kw)
    return got, bool(closed)


def both(ours_port, ref_port, data, **kw):
    ref = exchange(ref_port, data, **kw)
    return exchange(ours_port, data, want=ref, **kw), ref


def assert_same_wire(ours_port, ref_port, data, expect_closed=None, **kw):
    ours, ref = both(ours_port, ref_port, data, **kw)
    assert ours == ref, f'input {data[:120]!r}:\n ours  {ours!r:.400}\n redis {ref!r:.400}'
    if expect_closed is not None:
        assert ref[1] == expect_closed, f'redis-server itself: {ref!r:.300}'
    return ours


def get(port, key):
    return exchange(port, pack(b'GET', key))[0]


# -- differential cases on default configuration ---------------------------------------

PING = pack(b'PING')
ERR = b'-ERR Protocol error: '

CASES = {
    # malformed multibulk counts
    'mbulk-non-numeric': (PING + b'*abc\r\n' + PING, True),
    'mbulk-over-int-max': (PING + b'*2147483648\r\n' + PING, True),
    'mbulk-plus-sign': (b'*+1\r\n$4\r\nPING\r\n', True),
    'mbulk-leading-zero': (b'*01\r\n$4\r\nPING\r\n', True),
    'mbulk-space': (b'* 1\r\n$4\r\nPING\r\n', True),
    'mbulk-over-llong': (b'*99999999999999999999\r\n', True),
    'mbulk-int-max-waits': (b'*2147483647\r\n$4\r\nPING\r\n', False),
    'mbulk-empty-count': (b'*\r\n' + PING, True),
    # bulk headers
    'expected-dollar-x': (PING + b'*1\r\nx4\r\nPING\r\n' + PING, True),
    'expected-dollar-plus': (b'*2\r\n+a\r\n$3\r\n\r\nb\r\n', True),
    'expected-dollar-star': (b'*1\r\n*1\r\n+a\r\n', True),
    'expected-dollar-colon': (PING + b'*1\r\n:5\r\n', True),
    'expected-dollar-high-byte': (b'*1\r\n\xff\r\n', True),
    'expected-dollar-cr': (b'*1\r\n\r\r\n', True),
    'expected-dollar-lf': (b'*1\r\n\n\r\n', True),
    'bulk-negative': (b'*1\r\n$-1\r\n', True),
    'bulk-non-numeric': (b'*1\r\n$abc\r\n', True),
    'bulk-over-llong': (b'*1\r\n$99999999999999999999\r\n', True),
    'bulk-over-max': (b'*1\r\n$536870913\r\n', True),
    'bulk-at-max-waits': (b'*1\r\n$536870912\r\nab', False),
    'bulk-empty-len': (b'*1\r\n$\r\n', True),
    # limits of 64 KB without a line end
    'too-big-inline': (PING + b'a' * 70000, True),
    'inline-64k-line-ok': (b'ECHO ' + b'a' * 60000 + b'\r\n' + PING, False),
    'inline-100k-line': (b'ECHO ' + b'a' * 100000 + b'\r\n' + PING, True),
    'too-big-mbulk-count': (b'*' + b'1' * 70000, True),
    'too-big-bulk-count': (b'*1\r\n$' + b'1' * 70000, True),
    'too-big-bulk-count-nul': (b'*1\r\n$1\x00' + b'\r\n' * 40000, True),
    # inline quoting
    'unbalanced-double': (b'PING\r\nECHO "abc\r\nPING\r\n', True),
    'unbalanced-single': (b"ECHO 'abc\r\nPING\r\n", True),
    'quote-then-char': (b'ECHO "a"b\r\nPING\r\n', True),
    'single-quote-then-char': (b"ECHO 'a'b\r\nPING\r\n", True),
    'quotes-escapes': (b'ECHO "a\\x41\\n\\"q\\\\" \'it\\\'s\' x\r\n', False),
    'quote-hex-short': (b'ECHO "\\x4" "\\xZZ"\r\nPING\r\n', False),
    'quote-vertical-tab-after': (b'ECHO "a"\x0b\r\n', False),
    'inline-vertical-tab-inside': (b'ECHO a\x0bb\r\nECHO a\x0cb\r\n', False),
    'inline-tabs-and-cr': (b'ECHO\ta\r\nECHO \t b \t\r\nECHO a\rb\r\n', False),
    'inline-nul-waits': (b'PING\x00\r\nPING\r\n', False),
    'mbulk-nul-waits': (b'*1\x00\r\n$4\r\nPING\r\n', False),
    'bulk-header-nul-waits': (b'*1\r\n$4\x00\r\nPING\r\n', False),
    'bulk-payload-nul-ok': (pack(b'ECHO', b'a\x00b\r\nc'), False),
    # ignored frames
    'empty-multibulk': (b'*0\r\n' + PING + b'*-1\r\n*-5\r\n' + PING, False),
    'empty-inline': (b'\r\n\n \r\n\t\n' + PING + b'\n\r\n' + PING, False),
    # lenient spots redis-server has: no check of the byte after CR, nor of the payload's CRLF
    'cr-then-any-byte': (b'*1\rX$4\rYPINGZZ' + PING, False),
    'lf-only-inline': (b'PING\nPING\n', False),
    # binary safety and pipelines
    'binary-crlf-values': (
        pack(b'ECHO', b'\r\n\r\n*1\r\n$4\r\nPING\r\n') + pack(b'ECHO', b''),
        False,
    ),
    'mixed-pipeline': (
        b'PING\r\n'
        + pack(b'ECHO', b'x y')
        + b'ECHO "x y"\r\n'
        + PING
        + b'  \r\n'
        + pack(b'ECHO', b'\x00\xff')
        + b'PING\n',
        False,
    ),
    # hiredis accepts these RESP3 forms; redis-server reads '~' and '>' as inline commands
    'resp3-set-frame': (PING + b'~1\r\n$4\r\nPING\r\n', False),
    'resp3-push-frame': (PING + b'>1\r\n$4\r\nPING\r\n', False),
    'resp3-attribute': (PING + b'*2\r\n|1\r\n+a\r\n+b\r\n$4\r\nECHO\r\n$1\r\nx\r\n', True),
    'resp3-verbatim': (b'*2\r\n$4\r\nECHO\r\n=5\r\ntxt:a\r\n', True),
    'resp3-bignum': (b'*2\r\n$4\r\nECHO\r\n(12\r\n', True),
    'simple-string-arg': (b'*2\r\n$4\r\nECHO\r\n+hi\r\n', True),
    # QUIT stops the pipeline
    'quit-in-pipeline': (PING + b'QUIT\r\n' + PING, True),
    'error-after-quit-not-sent': (b'QUIT\r\n*x\r\n', True),
}


# A multibulk count near INT_MAX holds our server for 5-15 s before it answers.
SLOW_CASES = {'mbulk-int-max-waits', 'mbulk-over-int-max'}


@pytest.mark.parametrize(
    'name',
    [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_CASES else n for n in sorted(CASES)],
)
def test_differential_wire(server, redis_ref, name):
    data, closes = CASES[name]
    assert_same_wire(server.port, redis_ref[1], data, expect_closed=closes)


@pytest.mark.slow  # ~50 exchanges, each ending with a quiet period
def test_cases_run_fast_and_exact_paths_alike(server, redis_ref):
    """Cut every case into two reads at several points: the first read may go through
    hiredis, the second through the exact parser; the result must not change."""
    for name in (
        'binary-crlf-values',
        'mixed-pipeline',
        'resp3-set-frame',
        'expected-dollar-plus',
        'mbulk-non-numeric',
        'empty-multibulk',
        'cr-then-any-byte',
        'unbalanced-double',
    ):
        data = CASES[name][0]
        whole = exchange(server.port, data)
        for cut in sorted({1, 2, 5, len(data) // 2, len(data) - 2, len(data) - 1}):
            if 0 < cut < len(data):
                split = exchange(server.port, [data[:cut], data[cut:]], gap=0.02, want=whole)
                assert split == whole, f'{name} cut at {cut}: {split!r} != {whole!r}'


@pytest.mark.slow
def test_read_ending_inside_a_frame_at_a_line_end(server, redis_ref):
    """A first read that starts with '*' and ends with CRLF but leaves a frame open
    ("*3\\r\\n", or a command and the next one's header lines) must not lose that frame
    start: the second read completes it."""
    data = pack(b'SET', b'pf:k', b'v') + pack(b'GET', b'pf:k') + pack(b'DEL', b'pf:k')
    whole = exchange(redis_ref[1], data)
    assert whole == (b'+OK\r\n$1\r\nv\r\n:1\r\n', False)
    cut = data.find(b'\r\n') + 2
    while cut < len(data):
        split = exchange(server.port, [data[:cut], data[cut:]], gap=0.02, want=whole)
        assert split == whole, f'cut at {cut}: {split!r}'
        cut = data.find(b'\r\n', cut) + 2


def test_commands_before_error_run_and_after_do_not(server, redis_ref):
    ref = redis_ref[1]
    for port in (server.port, ref):
        exchange(port, pack(b'DEL', b'pe:a', b'pe:b', b'pe:c'))
    data = (
        pack(b'SET', b'pe:a', b'1')
        + b'SET pe:b 2\r\n'
        + b'*1\r\n$x\r\n'
        + pack(b'SET', b'pe:c', b'3')
    )
    reply = assert_same_wire(server.port, ref, data, expect_closed=True)
    assert reply[0] == b'+OK\r\n+OK\r\n' + ERR + b'invalid bulk length\r\n'
    for port in (server.port, ref):
        assert get(port, b'pe:a') == b'$1\r\n1\r\n'
        assert get(port, b'pe:b') == b'$1\r\n2\r\n'
        assert get(port, b'pe:c') == b'$-1\r\n'


def test_error_inside_partially_parsed_command(server, redis_ref):
    """The command whose header is malformed never runs, even with arguments parsed."""
    data = b'*3\r\n$3\r\nSET\r\n$6\r\npe:mid\r\n#1\r\n'
    reply = assert_same_wire(server.port, redis_ref[1], data, expect_closed=True)
    assert reply[0] == ERR + b"expected '$', got '#'\r\n"
    assert get(server.port, b'pe:mid') == b'$-1\r\n'


# -- byte at a time ------------------------------------------------------------------

STREAM = (
    b'PING\r\n'
    + pack(b'SET', b'pb:k', b'v\r\n1')
    + b'GET pb:k\r\n'
    + pack(b'ECHO', b'x' * 40)
    + b'*0\r\n\r\n'
    + pack(b'APPEND', b'pb:k', b'\x00')
    + b'ECHO "a b" \'c\'\r\n'
    + pack(b'GET', b'pb:k')
    + b'*1\r\n$3\r\nDEL\r\n'
    + b'DEL pb:k\r\n'
)


def test_parser_byte_at_a_time_matches_whole():
    def run(pieces):
        p = RequestParser()
        out = []
        for piece in pieces:
            p.feed(piece)
            out += p.parse(512 * 1024 * 1024)
        assert p.pending() == 0 and not p.args and p.multibulklen == 0
        return out

    whole = run([STREAM])
    assert run([STREAM[i : i + 1] for i in range(len(STREAM))]) == whole
    assert whole[0] == [b'PING'] and whole[1] == [b'SET', b'pb:k', b'v\r\n1']
    assert len(whole) == 9


def test_parser_error_at_every_split_point():
    bad = pack(b'PING') + b'ECHO x\r\n*2\r\n$4\r\nECHO\r\n!2\r\nab\r\n' + pack(b'PING')
    for cut in range(len(bad) + 1):
        p = RequestParser()
        got = []
        error = None
        for piece in (bad[:cut], bad[cut:]):
            p.feed(piece)
            try:
                got += p.parse(1 << 20)
            except ProtocolError as e:
                got += p.ready
                error = str(e)
                break
        assert got == [[b'PING'], [b'ECHO', b'x']], cut
        assert error == "expected '$', got '!'", cut


def test_socket_byte_at_a_time(server, redis_ref):
    """One byte per read: every frame boundary falls between reads somewhere."""
    pieces = [STREAM[i : i + 1] for i in range(len(STREAM))]
    ref = exchange(redis_ref[1], STREAM)
    ours = exchange(server.port, pieces, gap=0.001, want=ref)
    whole = exchange(server.port, STREAM, want=ref)
    assert ours == whole == ref
    assert not ours[1]
    assert ours[0].startswith(b'+PONG\r\n+OK\r\n$4\r\nv\r\n1\r\n$40\r\n')


def test_socket_byte_at_a_time_then_error(server, redis_ref):
    data = pack(b'ECHO', b'ok') + b'*1\r\n$4\r\nPING\r\n*1\r\n%4\r\n' + PING
    pieces = [data[i : i + 1] for i in range(len(data))]
    ref = exchange(redis_ref[1], data)
    ours = exchange(server.port, pieces, gap=0.001, want=ref)
    assert ours == ref
    assert ours == (b'$2\r\nok\r\n+PONG\r\n' + ERR + b"expected '$', got '%'\r\n", True)


def test_split_args_matches_sdssplitargs():
    assert split_args(b'a b\tc') == [b'a', b'b', b'c']
    assert split_args(b'a\x0bb \x0cc\x0c') == [b'a\x0bb', b'c\x0c']
    assert split_args(b' \x0b\x0c a ') == [b'a']
    assert split_args(b'"a\\x41\\n" \'b\\\'c\'') == [b'aA\n', b"b'c"]
    assert split_args(b'a"b c"d') is None
    assert split_args(b'a"b c" d') == [b'ab c', b'd']
    assert split_args(b'"abc') is None and split_args(b"'abc") is None
    assert split_args(b'ab\x00cd ef') == [b'ab']
    assert split_args(b'"ab\x00c"') is None
    assert split_args(b'') == [] and split_args(b'  ') == []


# -- limits that need their own configuration ----------------------------------------


def _pair(make_server, **options):
    ours = make_server(**options)
    args = []
    for k, v in options.items():
        args += ['--' + k.replace('_', '-'), v]
    proc, port = spawn_redis(*args)
    return ours.port, port, proc


@pytest.fixture
def proto_1mb(make_server):
    """Ours and redis-server with proto-max-bulk-len 1mb."""
    ours, ref, proc = _pair(make_server, proto_max_bulk_len='1mb')
    yield ours, ref
    stop(proc)


@pytest.fixture
def qbuf_1mb(make_server):
    """Ours and redis-server with client-query-buffer-limit 1mb."""
    ours, ref, proc = _pair(make_server, client_query_buffer_limit='1mb')
    yield ours, ref
    stop(proc)


@pytest.mark.differential
def test_proto_max_bulk_len(proto_1mb):
    ours, ref = proto_1mb
    reply = assert_same_wire(
        ours, ref, PING + b'*2\r\n$4\r\nECHO\r\n$1048577\r\n' + PING, expect_closed=True
    )
    assert reply[0] == b'+PONG\r\n' + ERR + b'invalid bulk length\r\n'
    # the header alone is enough, the argument is never waited for
    reply = assert_same_wire(
        ours, ref, b'*3\r\n$3\r\nSET\r\n$4\r\npm:k\r\n$5000000\r\n', expect_closed=True
    )
    assert reply[0] == ERR + b'invalid bulk length\r\n'
    at_limit = pack(b'SET', b'pm:k', b'v' * 1048576) + pack(b'STRLEN', b'pm:k')
    reply = assert_same_wire(ours, ref, at_limit, expect_closed=False)
    assert reply[0] == b'+OK\r\n:1048576\r\n'


def test_proto_max_bulk_len_config_set(make_server, redis_ref):
    srv = make_server()
    ref = spawn_redis()
    try:
        for port in (srv.port, ref[1]):
            exchange(port, b'CONFIG SET proto-max-bulk-len 2mb\r\n')
        data = pack(b'ECHO', b'z' * (2 * 1024 * 1024)) + b'*1\r\n$2097153\r\n'
        reply = assert_same_wire(srv.port, ref[1], data, expect_closed=True)
        assert reply[0].endswith(ERR + b'invalid bulk length\r\n')
        assert reply[0].startswith(b'$2097152\r\nzzz')
    finally:
        stop(ref[0])


@pytest.mark.differential
def test_client_query_buffer_limit_partial_frame(qbuf_1mb):
    """A partial request over the limit: the connection closes, without a reply."""
    ours, ref = qbuf_1mb
    partial = PING + b'*3\r\n$3\r\nSET\r\n$4\r\nqb:k\r\n$1500000\r\n' + b'x' * 1200000
    reply = assert_same_wire(ours, ref, partial, expect_closed=True)
    assert reply[0] == b'+PONG\r\n'
    assert get(ours, b'qb:k') == b'$-1\r\n'
    # an inline request never gets there: its 64 KB limit trips first
    partial_inline = PING + b'ECHO ' + b'a' * 1200000
    reply = assert_same_wire(ours, ref, partial_inline, expect_closed=True)
    assert reply[0] == b'+PONG\r\n' + ERR + b'too big inline request\r\n'


@pytest.mark.differential
def test_client_query_buffer_limit_counts_unparsed_bytes_only(qbuf_1mb):
    """Arguments already parsed leave the query buffer: three 600 KB arguments of one
    command pass a 1 MB limit in Redis 7.0; one 1.1 MB argument does not, even complete."""
    ours, ref = qbuf_1mb
    big = b'x' * 600000
    data = pack(b'MSET', b'qb:a', big, b'qb:b', big, b'qb:c', big) + pack(b'STRLEN', b'qb:c')
    reply = assert_same_wire(ours, ref, data, expect_closed=False)
    assert reply[0] == b'+OK\r\n:600000\r\n'
    data = PING + pack(b'SET', b'qb:d', b'y' * 1100000) + PING
    reply = assert_same_wire(ours, ref, data, expect_closed=True)
    assert reply[0] == b'+PONG\r\n'
    assert get(ours, b'qb:d') == b'$-1\r\n'
    data = pack(b'SET', b'qb:e', b'y' * 1040000) + pack(b'STRLEN', b'qb:e')
    reply = assert_same_wire(ours, ref, data, expect_closed=False)
    assert reply[0] == b'+OK\r\n:1040000\r\n'


@pytest.mark.differential
def test_client_query_buffer_limit_counts_commands_behind_a_blocked_one(qbuf_1mb):
    """Commands pipelined behind a blocked BLPOP wait unparsed in redis-server's query
    buffer, so 2 MB of them pass a 1 MB limit and the client is closed, none of them run;
    here they wait parsed, and count the same way. Under the limit they run once the
    BLPOP is served."""
    ours, ref = qbuf_1mb
    writes = pack_all(*[(b'SET', b'qb:w%d' % i, b'v' * 1000) for i in range(2000)])
    reply = assert_same_wire(ours, ref, pack(b'BLPOP', b'qb:none', b'0') + writes)
    assert reply == (b'', True)
    assert get(ours, b'qb:w0') == b'$-1\r\n'
    for port in (ours, ref):
        with RawConn(port) as blocked, RawConn(port) as other:
            blocked.send(pack(b'BLPOP', b'qb:list', b'0') + pack(b'SET', b'qb:after', b'x'))
            wait_until(lambda: b'blocked_clients:1' in other.cmd(b'INFO', b'clients'))
            assert other.cmd(b'RPUSH', b'qb:list', b'a') == b':1\r\n'
            assert blocked.read_replies(2) == b'*2\r\n$7\r\nqb:list\r\n$1\r\na\r\n+OK\r\n'


@pytest.mark.differential
def test_client_query_buffer_limit_sent_in_small_pieces(qbuf_1mb):
    ours, ref = qbuf_1mb
    data = b'*2\r\n$4\r\nECHO\r\n$1100000\r\n' + b'w' * 1100000 + b'\r\n'
    pieces = [data[i : i + 65536] for i in range(0, len(data), 65536)]
    got_ref = exchange(ref, pieces, gap=0.002)
    got_ours = exchange(ours, pieces, gap=0.002, want=got_ref)
    assert got_ours == got_ref == (b'', True)


@pytest.mark.differential
def test_unauthenticated_limits_and_auth_in_same_packet(make_server):
    srv = make_server(requirepass='pw')
    proc, ref = spawn_redis('--requirepass', 'pw')
    try:
        many = pack(b'MSET', *[b'ua:%d' % (i // 2) for i in range(12)])
        for data, closes in (
            (PING + many, True),
            (pack(b'ECHO', b'q' * 16385), True),
            (pack(b'ECHO', b'q' * 16384), False),
            (pack(b'AUTH', b'pw') + many + pack(b'ECHO', b'q' * 20000), False),
            (b'AUTH pw\r\n' + pack(b'ECHO', b'r' * 20000), False),
            (b'AUTH nope\r\n' + many, True),
        ):
            assert_same_wire(srv.port, ref, data, expect_closed=closes)
    finally:
        stop(proc)


def test_many_inline_commands_past_64k(server, redis_ref):
    """64 KB is a limit on one line, not on a packet of many lines."""
    data = b''.join(b'ECHO %06d\r\n' % i for i in range(12000))
    reply = assert_same_wire(server.port, redis_ref[1], data, expect_closed=False)
    assert reply[0].count(b'\r\n') == 24000


def _vm_peak(pid):
    """The server process's VmPeak (its largest address space so far), in bytes."""
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmPeak:'):
                return int(line.split()[1]) * 1024
    raise KeyError('VmPeak')


# Headers that declare more elements than ever arrive, each reaching a different hiredis
# run: the connection's fast path (a read ending in CRLF), a pipeline and a nested array
# there, and the exact parser's runs of whole frames and of arguments (reads that do not
# end in CRLF).
HUGE = b'2147483647'
HUGE_COUNTS = {
    'mbulk': b'*' + HUGE + b'\r\n',
    'pipelined': pack(b'PING') * 3 + b'*' + HUGE + b'\r\n',
    'nested': b'*1\r\n*' + HUGE + b'\r\n',
    'nested-set': b'*1\r\n~' + HUGE + b'\r\n',
    'nested-push': b'*1\r\n>' + HUGE + b'\r\n',
    'exact-frames': pack(b'PING') * 20 + b'*1\r\n*' + HUGE + b'\r\nx',
    'exact-args': b'*20\r\n' + (b'*' + HUGE + b'\r\n') * 20 + b'x',
}


def test_declared_counts_allocate_nothing_that_has_not_arrived(redis_ref):
    """A 13-byte '*2147483647' (INT_MAX: Redis accepts it and waits for the elements)
    must not make the server set aside room for two billion elements: it froze every
    client for seconds and took the address space to 16 GB. Other clients are served
    while such sockets stay open, the address space does not grow by gigabytes, and each
    socket is answered as redis-server answers it."""
    proc, port = spawn_store()
    socks = []
    try:
        other = RawConn(port)
        assert other.cmd(b'PING') == b'+PONG\r\n'
        before = _vm_peak(proc.pid)
        for name, data in HUGE_COUNTS.items():
            want = exchange(redis_ref[1], data)
            s = RawConn(port)
            s.sock.sendall(data)
            socks.append((name, s, want))
            assert other.cmd(b'PING') == b'+PONG\r\n'
        for name, s, (want, closed) in socks:
            want += b'<EOF>' if closed else b''
            assert s.read_available(want=want) == want, name
        assert other.cmd(b'PING') == b'+PONG\r\n'
        grown = _vm_peak(proc.pid) - before
        assert grown < 1024**3, f'VmPeak grew by {grown / 1024**2:.0f} MB'
    finally:
        for _, s, _ in socks:
            s.close()
        stop(proc)
