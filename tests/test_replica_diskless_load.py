"""A replica's diskless load (repl-diskless-load swapdb / on-empty-db) reads the master's
payload as it arrives (store/replica_load.py, store/persistence/rdb_stream.py), as Redis 7.0
parses it from the socket: it is in a loading state for the whole transfer, `loading` or,
with swapdb from the master of its own history, `async_loading` (the old data served, only
the no_async_loading commands and DENY_LOADING_CONFIG parameters refused); a cut link
leaves the old data as it was; key-load-delay paces the reading of the socket; the log
lines come in Redis's order. The masters: this server and redis-server.

The replica here is this server (spawned); the master is either. The replica is slow by
itself (key-load-delay, tens of ms per key of 200 KB), so these tests do not depend on
how gradually the master streams its payload."""

import random
import tempfile
import threading
import types

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from conftest import SERVERS_DIR, WAIT, spawn_redis, spawn_store, stop, wait_until
from store.persistence.rdb_blobs import listpack, lp_elem
from store.persistence.rdb_encoder import RdbEncoder
from store.persistence.rdb_loader import RdbLoader, unpack
from store.persistence.rdb_stream import RdbStream
from store.rdb import RdbError, rdb_string
from store.types import EncodingLimits
from store.types.packed import Packed

MASTERS = ['ours', 'redis']
KEYS = 100  # the master's keys, of VALUE bytes each: a 20 MB payload
VALUE = 200_000
RANDOM = random.Random(5).randbytes(10_000)
LIBRARY = (  # no-writes: FCALL runs on a read-only replica too
    '#!lua name=test\nredis.register_function{{function_name="test", '
    'callback=function() return "{}" end, flags={{"no-writes"}}}}'
)


class _Log:
    """What a spawned server writes (its log goes to stdout), read as it comes."""

    def __init__(self, proc):
        self.lines = []
        threading.Thread(target=lambda: self.lines.extend(proc.stdout), daemon=True).start()

    def text(self):
        return ''.join(self.lines)

    def assert_in_order(self, *parts, since=0):
        """Each of `parts` in a line after the previous one's, from line `since` on, giving
        the reader thread time to get the last lines (the server may have logged them just
        before the state the test waited for)."""

        def missing():
            lines, at = self.lines[since:], 0
            for part in parts:
                found = next((i for i in range(at, len(lines)) if part in lines[i]), None)
                if found is None:
                    return f'{part!r} not logged after line {at}:\n' + ''.join(lines)
                at = found + 1
            return None

        try:
            wait_until(lambda: missing() is None, 'the log lines')
        except AssertionError:
            raise AssertionError(missing()) from None


def _client(port):
    # no retries: redis-py retries -LOADING (a ConnectionError) by default
    return redis.Redis(port=port, decode_responses=True, retry=Retry(NoBackoff(), 0))


def _states(r):
    info = r.info('persistence')
    return info['loading'], info['async_loading']


class _Pair:
    """A master (`kind`: ours or redis-server) with KEYS big keys and diskless sync, and
    this server as a replica to be, with data of its own."""

    def __init__(self, kind, *replica_args):
        spawn = spawn_store if kind == 'ours' else spawn_redis
        # redis-server's own dir: a dump.rdb another test left in the shared one is not
        # loaded here
        extra = (
            ('--enable-debug-command', 'yes')
            if kind == 'ours'
            else ('--dir', tempfile.mkdtemp(dir=SERVERS_DIR))
        )
        self.mproc, self.mport = spawn(
            *extra, '--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0',
            '--rdbcompression', 'no',
        )  # fmt: skip
        self.rproc = None
        self.m = _client(self.mport)
        try:
            self.rproc, self.rport = spawn_store('--enable-debug-command', 'yes', *replica_args)
            self.log = _Log(self.rproc)
            self.r = _client(self.rport)
            self.m.execute_command('DEBUG', 'POPULATE', KEYS, 'master', VALUE)
            self.m.function_load(LIBRARY.format('hello2'))
        except BaseException:  # no server left running
            self.close()
            raise

    def follow(self):
        self.r.replicaof('127.0.0.1', self.mport)

    def wait_up(self):
        wait_until(
            lambda: self.r.info('replication')['master_link_status'] == 'up', 'the sync', WAIT
        )

    def close(self):
        self.m.close()
        if self.rproc is not None:
            self.r.close()
            stop(self.rproc)  # first: a master waits shutdown-timeout for a replica in sync
        stop(self.mproc)


@pytest.fixture
def pair(request):
    made = []

    def make(kind, *replica_args):
        p = _Pair(kind, *replica_args)
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()


def _own_data(r):
    r.execute_command('DEBUG', 'POPULATE', 200, 'slave', 10)
    r.set('mykey', 'myvalue')
    r.function_load(LIBRARY.format('hello1'), replace=True)


@pytest.mark.parametrize('kind', MASTERS)
def test_swapdb_from_another_history_loads_and_a_cut_keeps_the_old_data(pair, kind):
    p = pair(kind, '--repl-diskless-load', 'swapdb')
    m, r = p.m, p.r
    _own_data(r)
    m.config_set('rdb-key-save-delay', 10000)  # a slow master (if it streams)
    r.config_set('key-load-delay', 50000)  # a slow replica: 5 s for the payload
    p.follow()
    wait_until(lambda: _states(r) == (1, 0), 'the loading state')
    with pytest.raises(redis.BusyLoadingError):
        r.get('mykey')
    info = r.info('persistence')
    assert info['loading_loaded_bytes'] >= 0 and 'loading_start_time' in info
    assert r.info('replication')['master_sync_in_progress'] == 1
    m.config_set('repl-diskless-sync-delay', 5)  # the next sync waits: see it in between
    assert m.client_kill_filter(_type='replica') == 1
    wait_until(lambda: _states(r) == (0, 0), 'the end of the loading state')
    assert r.get('mykey') == 'myvalue'
    assert r.dbsize() == 201
    assert r.fcall('test', 0) == 'hello1'
    p.log.assert_in_order(
        'receiving streamed RDB from master with EOF to parser',
        'MASTER <-> REPLICA sync: Loading DB in memory',
        'Short read or OOM loading DB',
        'Internal error in RDB reading offset',
        'Failed trying to load the MASTER synchronization DB from socket',
        'MASTER <-> REPLICA sync: Discarding temporary DB in background',
        f'Reconnecting to MASTER 127.0.0.1:{p.mport} after failure',
        'MASTER <-> REPLICA sync started',
    )
    assert 'Flushing old data' not in p.log.text()
    r.replicaof('no', 'one')
    assert r.get('mykey') == 'myvalue' and r.dbsize() == 201


@pytest.mark.parametrize('kind', MASTERS)
def test_swapdb_from_another_history_swaps_in_the_new_data(pair, kind):
    p = pair(kind, '--repl-diskless-load', 'swapdb')
    m, r = p.m, p.r
    _own_data(r)
    r.config_set('key-load-delay', 10000)  # 1 s for the payload
    p.follow()
    wait_until(lambda: _states(r) == (1, 0), 'the loading state')
    p.wait_up()
    assert _states(r) == (0, 0)
    assert r.get('mykey') is None
    assert r.dbsize() == KEYS
    assert r.fcall('test', 0) == 'hello2'
    assert len(r.get('master:7')) == VALUE
    p.log.assert_in_order(
        'receiving streamed RDB from master with EOF to parser',
        'MASTER <-> REPLICA sync: Loading DB in memory',
        f'Done loading RDB, keys loaded: {KEYS}, keys expired: 0.',
        'MASTER <-> REPLICA sync: Swapping active DB with loaded DB',
        'MASTER <-> REPLICA sync: Discarding old DB in background',
        'MASTER <-> REPLICA sync: Finished with success',
    )
    assert 'Flushing old data' not in p.log.text()
    m.set('after', 'x')
    wait_until(lambda: r.get('after') == 'x', 'the stream after the payload')


def _same_history(p, key_load_delay):
    """The replica synced once from its master, has data of its own since (writable), and
    its link is cut after the master's backlog moved on: its next sync is a full one, from
    the master of its own history, read with `key_load_delay`."""
    m, r = p.m, p.r
    r.config_set('replica-read-only', 'no')
    p.follow()
    p.wait_up()
    _own_data(r)
    r.config_set('key-load-delay', key_load_delay)
    m.config_set('repl-backlog-size', 16384)
    pipe = m.pipeline(transaction=True)
    pipe.client_kill_filter(_type='replica')
    for i in range(10):
        pipe.set(f'{i} string_{i}', 'A' * 16384)  # past the backlog
    pipe.execute()


@pytest.mark.parametrize('kind', MASTERS)
def test_swapdb_from_the_same_history_serves_the_old_data_while_loading(pair, kind):
    p = pair(kind, '--repl-diskless-load', 'swapdb')
    m, r = p.m, p.r
    tx = _client(p.rport)  # a transaction queued before, run during the load
    tx.execute_command('MULTI')
    tx.execute_command('BGSAVE')
    since = len(p.log.lines)  # (before the sync starts: its first lines may come at once)
    _same_history(p, 50000)
    m.config_set('rdb-key-save-delay', 10000)
    wait_until(lambda: _states(r) == (0, 1), 'the async loading state')
    assert r.get('mykey') == 'myvalue'
    assert r.fcall('test', 0) == 'hello1'
    assert r.dbsize() == 201 + KEYS  # the first sync's keys, then its own
    r.set('during', 'load')  # a writable replica takes writes meanwhile
    # refused as Redis refuses them: a DENY_LOADING_CONFIG parameter, the commands flagged
    # no_async_loading; the rest of CONFIG SET and the other commands go on
    with pytest.raises(redis.BusyLoadingError, match='Redis is loading the dataset in memory'):
        r.config_set('appendonly', 'no')
    with pytest.raises(redis.BusyLoadingError, match='Redis is loading the dataset in memory'):
        r.replicaof('no', 'one')
    with pytest.raises(redis.BusyLoadingError):
        r.execute_command('BGSAVE')
    with pytest.raises(redis.exceptions.ExecAbortError, match='LOADING Redis is loading'):
        tx.execute_command('EXEC')  # for the command it queued
    tx.close()
    assert r.config_set('maxmemory-samples', 6) is True
    assert _states(r) == (0, 1)  # all of that while loading
    m.config_set('repl-diskless-sync-delay', 5)
    assert m.client_kill_filter(_type='replica') == 1
    wait_until(lambda: _states(r) == (0, 0), 'the end of the async loading state')
    assert r.get('mykey') == 'myvalue'
    assert r.get('during') == 'load'
    assert r.fcall('test', 0) == 'hello1'
    assert r.dbsize() == 202 + KEYS
    p.log.assert_in_order(
        'MASTER <-> REPLICA sync: Loading DB in memory',
        'Failed trying to load the MASTER synchronization DB from socket',
        'MASTER <-> REPLICA sync: Discarding temporary DB in background',
        since=since,
    )


@pytest.mark.parametrize('kind', MASTERS)
def test_swapdb_from_the_same_history_swaps_in_the_new_data(pair, kind):
    p = pair(kind, '--repl-diskless-load', 'swapdb')
    r = p.r
    _same_history(p, 10000)
    since = len(p.log.lines)
    wait_until(lambda: _states(r) == (0, 1), 'the async loading state')
    assert r.get('mykey') == 'myvalue'
    p.wait_up()
    assert _states(r) == (0, 0)
    assert r.get('mykey') is None
    assert r.fcall('test', 0) == 'hello2'
    assert r.dbsize() == KEYS + 10
    p.log.assert_in_order(
        'receiving streamed RDB from master with EOF to parser',
        'MASTER <-> REPLICA sync: Loading DB in memory',
        f'Done loading RDB, keys loaded: {KEYS + 10}, keys expired: 0.',
        'MASTER <-> REPLICA sync: Swapping active DB with loaded DB',
        'MASTER <-> REPLICA sync: Discarding old DB in background',
        'MASTER <-> REPLICA sync: Finished with success',
        since=since,
    )


@pytest.mark.parametrize('kind', MASTERS)
def test_on_empty_db_flushes_then_loads_in_the_loading_state(pair, kind):
    p = pair(kind, '--repl-diskless-load', 'on-empty-db', '--key-load-delay', '10000')
    r = p.r
    p.follow()
    wait_until(lambda: _states(r) == (1, 0), 'the loading state')
    with pytest.raises(redis.BusyLoadingError):
        r.dbsize()
    p.wait_up()
    assert r.dbsize() == KEYS and r.fcall('test', 0) == 'hello2'
    p.log.assert_in_order(
        'receiving streamed RDB from master with EOF to parser',
        'MASTER <-> REPLICA sync: Flushing old data',
        'MASTER <-> REPLICA sync: Loading DB in memory',
        f'Done loading RDB, keys loaded: {KEYS}, keys expired: 0.',
        'MASTER <-> REPLICA sync: Finished with success',
    )
    assert 'Swapping active DB' not in p.log.text()


def test_a_slow_replica_holds_back_a_streaming_master(pair):
    """key-load-delay paces the reading of the socket: redis-server's fork child, which
    writes the payload as fast as the replicas take it, is still at it while the replica
    parses slowly (without the pacing, 40 MB cross loopback in well under a second)."""
    p = pair('redis', '--repl-diskless-load', 'swapdb', '--key-load-delay', '50000')
    m, r = p.m, p.r
    m.execute_command('DEBUG', 'POPULATE', KEYS, 'big', 2 * VALUE)  # 40 MB more
    p.follow()
    wait_until(lambda: _states(r) == (1, 0), 'the loading state')
    wait_until(lambda: r.info('persistence')['loading_loaded_bytes'] > 0, 'some progress')
    assert m.info('persistence')['rdb_bgsave_in_progress'] == 1
    loaded = r.info('persistence')['loading_loaded_bytes']
    wait_until(lambda: r.info('persistence')['loading_loaded_bytes'] > loaded, 'more progress')
    assert m.info('persistence')['rdb_bgsave_in_progress'] == 1
    assert _states(r) == (1, 0)


# -- RdbStream on its own: the payload in pieces ------------------------------------------


@pytest.fixture(scope='module')
def rdb(tmp_path_factory):
    """An RDB file of redis-server's with every kind of record: strings (integers, LZF,
    long), small and big aggregates, a stream, TTLs, LRU/LFU-less keys in three
    databases, a function library."""
    where = tmp_path_factory.mktemp('rdb')
    proc, port = spawn_redis('--dir', str(where))
    try:
        r = redis.Redis(port=port)
        rnd = random.Random(7)
        for db in (0, 3, 15):
            r.select(db)
            pipe = r.pipeline(transaction=False)
            for i in range(400):
                pipe.set(f's{i}', rnd.choice([i, 'x' * rnd.randint(1, 200), 'ab' * 5000]))
                pipe.hset(f'h{i}', mapping={f'f{j}': j for j in range(rnd.choice([2, 200]))})
                pipe.rpush(f'l{i}', *range(rnd.choice([3, 300])))
                pipe.sadd(f'i{i}', *range(rnd.choice([3, 600])))
                pipe.sadd(f'set{i}', *[f'm{j}' for j in range(rnd.choice([3, 200]))])
                pipe.zadd(f'z{i}', {f'm{j}': j / 3 for j in range(rnd.choice([3, 200]))})
                if i % 3 == 0:
                    pipe.pexpire(f's{i}', 10**9)
                    pipe.pexpire(f'z{i}', 10**9)
            for i in range(20):
                pipe.xadd('stream', {'f': i})
            pipe.set('random', RANDOM)  # incompressible: saved as it is
            pipe.execute()
        r.function_load(LIBRARY.format('x'))
        r.save()
    finally:
        stop(proc)
    return (where / 'dump.rdb').read_bytes()


def _fake_server():
    class Functions:
        def create(self, code, replace, ctx):
            ctx.libraries[code] = code

    return types.SimpleNamespace(
        keyspace=types.SimpleNamespace(limits=EncodingLimits(), databases=16),
        config={'rdbchecksum': True, 'sanitize-dump-payload': 'no', 'key-load-delay': 0},
        functions=Functions(),
    )


def _flat(items):
    """The records as (db, key, value's encoding, deadline) and the other records."""
    enc = RdbEncoder(compress=False)
    out = []
    db = 0
    for item in items:
        if item[0] == 'keys':
            extras = {e[0]: e[1] for e in item[3]}
            for i, (key, value) in enumerate(zip(item[1], item[2])):
                if type(value) is Packed:  # left packed, as a start-up load leaves it
                    value = unpack(value)
                v = value if type(value) is bytes else enc.value(value)
                out.append((db, key, v, extras.get(i)))
        elif item[0] == 'db':
            db = item[1]
        elif item[0] == 'aux':
            out.append(item)
    return out


def _feed(data, pieces):
    """An RdbStream given `data` in pieces of the sizes `pieces` yields, read after each."""
    stream = RdbStream(_fake_server())
    at = 0
    while at < len(data):
        n = next(pieces)
        stream.feed(data[at : at + n])
        at += n
        if at >= len(data):
            stream.finish()
        if stream.ready():
            for _ in stream.steps():
                pass
    return stream


@pytest.mark.parametrize('piece', ['one byte', 'random', 'whole'])
def test_a_payload_in_pieces_reads_as_the_whole_file(rdb, piece):
    expected = _flat(RdbLoader(rdb, EncodingLimits()).batches())
    if piece == 'one byte':
        data = rdb[: rdb.index(b's10')] + rdb[-9:]  # (a smaller file: no checksum check)
        stream = RdbStream(_fake_server())
        stream.loader.checksum = False
        for i in range(len(data)):
            stream.feed(data[i : i + 1])
            if i == len(data) - 1:
                stream.finish()
            if stream.ready():
                try:
                    for _ in stream.steps():
                        pass
                except RdbError:
                    break  # the cut file ends inside a key: only at its end is that known
        assert stream.items
        got = _flat(stream.items)
        assert got == expected[: len(got)]
        return
    rnd = random.Random(3)
    if piece == 'random':
        pieces = iter(lambda: rnd.choice([1, 7, 100, 4096, 70_000]), None)
    else:
        pieces = iter([len(rdb)])
    stream = _feed(rdb, pieces)
    assert stream.done and not stream.trailing()
    assert _flat(stream.items) == expected
    assert stream.keys == sum(len(i[1]) for i in stream.items if i[0] == 'keys')
    assert list(stream.functions.libraries) == [LIBRARY.format('x').encode()]
    assert stream.parsed() == len(rdb)


def test_a_bad_payload_fails_only_once_complete(rdb):
    bad = bytearray(rdb)
    bad[len(rdb) // 2] ^= 0xFF  # a byte of a value or of the structure: either way
    stream = RdbStream(_fake_server())
    for at in range(0, len(bad) - 10, 50_000):
        stream.feed(bytes(bad[at : at + 50_000]))
        if stream.ready():
            for _ in stream.steps():  # no error: the rest may still make it whole
                pass
    stream.feed(bytes(bad[at + 50_000 :]))
    stream.finish()
    with pytest.raises(RdbError):
        for _ in stream.steps():
            pass
    assert not stream.done


def test_the_checksum_covers_every_window(rdb):
    bad = bytearray(rdb)
    # the last byte of a long string's value: the structure holds, the checksum does not
    bad[rdb.rindex(RANDOM) + len(RANDOM) - 1] ^= 1
    with pytest.raises(RdbError, match='Wrong RDB checksum'):
        _feed(bytes(bad), iter(lambda: 65536, None))
    assert _flat(_feed(rdb, iter(lambda: 65536, None)).items)  # and the good one


def test_small_aggregates_stay_packed_unless_the_payload_has_no_checksum(rdb):
    """As a start-up load leaves them (types/packed.py): packed while the checksum at the
    end will vouch for them; a payload whose checksum is 0 (rdbchecksum no on the master)
    has them decoded once its end shows it, so a bad blob still fails the load."""
    expected = _flat(RdbLoader(rdb, EncodingLimits()).batches())
    stream = _feed(rdb, iter(lambda: 65536, None))
    packed = [v for i in stream.items if i[0] == 'keys' for v in i[2] if type(v) is Packed]
    assert packed
    unchecked = _feed(rdb[:-8] + bytes(8), iter(lambda: 65536, None))
    assert unchecked.done and unchecked.loader.checksum_disabled
    values = [v for i in unchecked.items if i[0] == 'keys' for v in i[2]]
    assert not any(type(v) is Packed for v in values)
    assert _flat(unchecked.items) == _flat(stream.items) == expected


def test_a_bad_blob_in_a_payload_without_a_checksum_fails_the_load():
    good = listpack([lp_elem(b'f'), lp_elem(b'v')])
    blob = good[:4] + b'\x04\x00' + good[6:]  # a sound header: a count of 4 over 2 entries
    enc = RdbEncoder()
    body = enc.header() + b'\xfe\x00' + b'\x10' + rdb_string(b'bad') + rdb_string(blob)
    body += b'\x00' + rdb_string(b'ok') + rdb_string(b'fine')
    data = body + b'\xff' + bytes(8)  # rdbchecksum no
    with pytest.raises(RdbError, match='packed value'):
        _feed(data, iter(lambda: 7, None))
