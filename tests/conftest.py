"""Shared fixtures: our server (embedded, on a free port), Debian's redis-server as the
reference for differential tests, clients for both, and a redis-cli runner; and the
helpers that keep tests independent of the machine's speed (`wait_until`, `in_time`).

Markers (registered in pyproject.toml): tests that use redis-server through these
fixtures are marked `differential` here; `slow` and `spark` are set where they apply, so
`pytest -m "not slow and not spark"` is the quick run."""

import atexit
import inspect
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest
import redis
import redis.asyncio

from rawconn import RawConn
from store import EmbeddedServer

pytest_plugins = ['store.pytest_plugin']  # the `store_server` fixture (test_core)

WAIT = 60  # seconds to wait for something that must happen: a bound, not a timing


def pytest_collection_modifyitems(items):
    for item in items:
        if 'redis_ref' in item.fixturenames:
            item.add_marker(pytest.mark.differential)


# What a server writes in its `dir` (default: the working directory, where pytest runs).
# A test server must write them in a temporary directory: one left here would be loaded by
# the next server started here, ./scripts/serve included.
PERSISTENCE_FILES = ('dump.rdb', 'appendonlydir')


@pytest.fixture(scope='session', autouse=True)
def no_persistence_files_left_here():
    before = {name for name in PERSISTENCE_FILES if os.path.exists(name)}
    yield
    left = {name for name in PERSISTENCE_FILES if os.path.exists(name)} - before
    assert not left, f'a test server wrote {sorted(left)} in {os.getcwd()}: give it a tmp dir'


def now_ms():
    """The clock deadlines are set by (store.clock.now_ms): ms since the epoch."""
    return time.time_ns() // 1_000_000


def assert_ttl(client, key, seconds, since_ms):
    """TTL of `key`, given `seconds` to live at some moment after `since_ms`: at most
    `seconds`, and at least what is left once the time that has since passed is taken
    off (rounded as TTL rounds), however much time that is."""
    ttl = client.ttl(key)
    left = since_ms + seconds * 1000 - now_ms()
    assert (left + 500) // 1000 <= ttl <= seconds, (key, ttl, left)


def read_value(r, key, kind):
    """What a client reads of a key of type `kind` (not a stream): the value, with hash
    fields and set members sorted."""
    if kind == b'string':
        return r.get(key)
    if kind == b'list':
        return r.lrange(key, 0, -1)
    if kind == b'hash':
        return sorted(r.hgetall(key).items())
    if kind == b'set':
        return sorted(r.smembers(key))
    return r.zrange(key, 0, -1, withscores=True)


def wait_until(predicate, what='the condition', timeout=WAIT, interval=0.01):
    """Poll until predicate() is true; fail after `timeout` seconds (a bound for a server
    that never gets there, not a measure of how fast it does)."""
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, f'{what} did not happen within {timeout} s'
        time.sleep(interval)


def in_time(setup, margin_ms):
    """Call setup(deadline), `deadline` an absolute time in ms `margin_ms` from now, and
    return (deadline, what setup returned) once setup has finished before the deadline:
    every key was written, renamed, watched... while none of them could have expired yet.
    On a machine too busy for that, setup runs again with twice the margin (setup starts
    from scratch), so what the test then checks never depends on how fast setup ran."""
    for _ in range(8):
        deadline = now_ms() + margin_ms
        result = setup(deadline)
        if now_ms() < deadline:
            return deadline, result
        margin_ms *= 2
    pytest.fail(f'setup never finished within {margin_ms // 2} ms')


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def wait_for_port(port, proc=None, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f'server exited with {proc.returncode}')
        try:
            with socket.create_connection(('127.0.0.1', port), timeout=0.5) as s:
                # a port in the ephemeral range can connect to itself (TCP simultaneous
                # open) while nothing listens yet: that is not the server
                if s.getsockname() != s.getpeername():
                    return
        except OSError:
            pass
        time.sleep(0.02)
    raise TimeoutError(f'nothing listening on {port}')


# The spawned servers' files (a dump.rdb, a replica's temporary payload) go here, never
# into the checkout the tests run from.
SERVERS_DIR = tempfile.mkdtemp(prefix='store-tests-')
atexit.register(shutil.rmtree, SERVERS_DIR, True)
REDIS_DIR = tempfile.mkdtemp(dir=SERVERS_DIR)  # the reference redis-servers'


def spawn_store(*args, port=None, conf=None):
    """Start `python -m store` as a subprocess, with the config file `conf` if given;
    returns (proc, port). No save points unless `args` give some (`--save ''` first, as
    a config file's first `save` line replaces the defaults), and its files (a SAVE, a
    replica's sync) go to a temporary `dir` unless `args` or `conf` name one: nothing
    lands in the checkout the tests run from."""
    port = port or free_port()
    first = [str(conf)] if conf else []
    # each its own: a dump.rdb one server saved must not be loaded by the next one
    where = [] if conf or '--dir' in args else ['--dir', tempfile.mkdtemp(dir=SERVERS_DIR)]
    proc = subprocess.Popen(
        [sys.executable, '-m', 'store', *first, '--port', str(port), '--save', '', *where, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    wait_for_port(port, proc)
    return proc, port


def spawn_redis(*args, port=None, conf=None):
    """Start Debian's redis-server on a free port (the reference implementation), with
    the config file `conf` if given."""
    exe = shutil.which('redis-server')
    if exe is None:
        pytest.fail('redis-server is not installed; scripts/test installs it')
    port = port or free_port()
    proc = subprocess.Popen(
        [
            exe,
            *([str(conf)] if conf else []),
            '--port',
            str(port),
            '--bind',
            '127.0.0.1',
            '--save',
            '',
            '--appendonly',
            'no',
            '--enable-debug-command',
            'yes',
            '--daemonize',
            'no',
            '--dir',  # its files (a dump.rdb it saves or loads) stay out of the checkout
            REDIS_DIR,
            *args,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for_port(port, proc)
    return proc, port


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope='session')
def server(tmp_path_factory):
    """Our server, embedded in the test process on an ephemeral port; SAVE writes into a
    temporary directory."""
    data = tmp_path_factory.mktemp('data')
    with EmbeddedServer(enable_debug_command='yes', save='', dir=str(data)) as srv:
        yield srv


@pytest.fixture
def r(server):
    """A redis-py client speaking RESP2 (redis-py 8 defaults to RESP3) on a flushed
    server."""
    client = server.client(protocol=2)
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def r3(server):
    """A RESP3 redis-py client on a flushed server."""
    client = server.client(protocol=3)
    client.flushall()
    yield client
    client.close()


@pytest.fixture(params=['sync', 'asyncio'])
def api(request):
    """redis-py's sync or asyncio API: one async test body serves both (see `done`)."""
    return request.param


def connect(server, api, protocol=2, **kw):
    """A redis-py client of `server` for `api` ('sync' or 'asyncio')."""
    cls = redis.asyncio.Redis if api == 'asyncio' else redis.Redis
    return cls(host='127.0.0.1', port=server.port, protocol=protocol, **kw)


async def done(value):
    """The result of a redis-py call of either API: awaited if the asyncio API returned a
    coroutine, as is otherwise."""
    return await value if inspect.isawaitable(value) else value


async def close(client):
    await done(client.aclose() if isinstance(client, redis.asyncio.Redis) else client.close())


@pytest.fixture
def make_server(tmp_path):
    """Factory for a dedicated embedded server with its own config (and, unless given, a
    temporary `dir` and no save points)."""
    started = []

    def make(**options):
        options.setdefault('enable_debug_command', 'yes')
        options.setdefault('save', '')
        options.setdefault('dir', str(tmp_path))
        srv = EmbeddedServer(**options).start()
        started.append(srv)
        return srv

    yield make
    for srv in started:
        srv.stop()


@pytest.fixture(scope='session')
def redis_ref():
    """(host, port) of a reference redis-server for differential tests."""
    proc, port = spawn_redis()
    yield ('127.0.0.1', port)
    stop(proc)


@pytest.fixture
def ref(redis_ref):
    client = redis.Redis(*redis_ref, protocol=2)
    client.flushall()
    yield client
    client.close()


def client_pair(server, redis_ref, protocol):
    ours = server.client(protocol=protocol)
    theirs = redis.Redis(*redis_ref, protocol=protocol)
    for c in (ours, theirs):
        c.flushall()
    return ours, theirs


def _pair(server, redis_ref, protocol):
    pair = client_pair(server, redis_ref, protocol)
    yield pair
    for c in pair:
        c.close()


@pytest.fixture
def both(server, redis_ref):
    """(ours, reference) RESP2 clients, both flushed, for differential tests."""
    yield from _pair(server, redis_ref, 2)


@pytest.fixture
def both3(server, redis_ref):
    """(ours, reference) RESP3 clients, both flushed."""
    yield from _pair(server, redis_ref, 3)


@pytest.fixture(params=[2, 3], ids=['resp2', 'resp3'])
def both_resp(request, server, redis_ref):
    """(ours, reference) clients, both flushed: the test runs once in RESP2, once in
    RESP3."""
    yield from _pair(server, redis_ref, request.param)


def redis_cli(port, *args, input=None):
    """Run redis-cli against `port`; returns its stdout."""
    exe = shutil.which('redis-cli')
    if exe is None:
        pytest.fail('redis-cli is not installed; scripts/test installs it')
    out = subprocess.run(
        [exe, '-p', str(port), *args], input=input, capture_output=True, text=True, timeout=WAIT
    )
    return out.stdout


def run_all(client, commands):
    """Run raw commands, returning each reply or ('error', message): the form differential
    tests compare between our server and redis-server."""
    out = []
    for cmd in commands:
        try:
            out.append(client.execute_command(*cmd))
        except redis.ResponseError as e:
            out.append(('error', str(e)))
    return out


def assert_same(both, commands):
    """Run the same commands on our server and on redis-server; replies must be equal."""
    ours, theirs = both
    got, want = run_all(ours, commands), run_all(theirs, commands)
    for cmd, g, w in zip(commands, got, want):
        assert g == w, f'{cmd!r}: ours {g!r} != redis {w!r}'


def capture_events(client, commands, flags='KEA', pattern='__key*__:*'):
    """Run `commands` on `client` with notify-keyspace-events `flags` and return the
    keyspace events a real subscriber received, as (channel, message) pairs in order. A
    PUBLISH to a sentinel channel after the commands marks the end, so nothing depends on
    timing. Restores notify-keyspace-events afterwards."""
    old = client.config_get('notify-keyspace-events')['notify-keyspace-events']
    client.config_set('notify-keyspace-events', flags)
    sub = client.pubsub()
    try:
        sub.psubscribe(pattern)
        sub.subscribe('capture-events-sentinel')
        for _ in range(2):
            assert sub.get_message(timeout=WAIT)['type'] in ('psubscribe', 'subscribe')
        run_all(client, commands)
        client.publish('capture-events-sentinel', 'end')
        out = []
        while True:
            m = sub.get_message(timeout=WAIT)
            assert m is not None, 'sentinel never arrived'
            if m['channel'] == b'capture-events-sentinel':
                return out
            out.append((m['channel'], m['data']))
    finally:
        client.config_set('notify-keyspace-events', old)
        sub.close()


def assert_same_events(both, commands, flags='KEA'):
    """Keyspace events of `commands` on our server equal redis-server's, in order."""
    ours, theirs = both
    got, want = capture_events(ours, commands, flags), capture_events(theirs, commands, flags)
    assert got == want
    return got


@pytest.fixture
def raw_pair(server, redis_ref, both):
    """Factory of (ours, reference) raw connections (tests/rawconn.py) for a protocol
    version, closed after; both servers are flushed once, at the start of the test (by
    `both`), so data loaded before a pair is made stays."""
    made = []

    def make(proto=2):
        pair = RawConn(server.port, proto=proto), RawConn(redis_ref[1], proto=proto)
        made.extend(pair)
        return pair

    yield make
    for c in made:
        c.close()


@pytest.fixture
def fresh_raw_pair(raw_pair):
    """`raw_pair` whose every new pair starts with both servers flushed."""

    def make(proto=2):
        pair = raw_pair(proto)
        for c in pair:
            c.cmd('FLUSHALL')
        return pair

    return make


def raw_same(pair, commands):
    """Run each command on both raw connections of `pair`: the reply bytes must be equal."""
    ours, theirs = pair
    for cmd in commands:
        got, want = ours.cmd(*cmd), theirs.cmd(*cmd)
        if got != want:  # pytest.fail: no slow diff of long replies
            pytest.fail(f'{cmd!r}: ours {got!r:.2000} != redis {want!r:.2000}')


@pytest.fixture
def ports(server, redis_ref):
    """(ours, redis-server) ports; both flushed, with keyspace events off."""
    ps = (server.port, redis_ref[1])
    for p in ps:
        with RawConn(p) as admin:
            admin.cmd('FLUSHALL')
            admin.cmd('CONFIG', 'SET', 'notify-keyspace-events', '')
    yield ps
    for p in ps:
        with RawConn(p) as admin:
            admin.cmd('CONFIG', 'SET', 'notify-keyspace-events', '')
