"""RDB persistence as a user sees it: SAVE/BGSAVE/SHUTDOWN/SIGTERM write `dir/dbfilename`, a
restart loads it (answering -LOADING meanwhile), BGSAVE is a point-in-time image while
writes go on, keys that expired while the server was down produce their events after
start-up, and files move both ways between this server and redis-server 7.0.15.

Servers run as subprocesses (`spawn_store`) in a temporary `dir`, so each test restarts
one as a user would."""

import os
import shutil
import signal
import subprocess
import time

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from conftest import read_value, spawn_redis, spawn_store, stop, wait_until


def client(port, **kw):
    return redis.Redis(port=port, **kw)


def populate(r):
    """Every type, in several databases, with and without TTLs."""
    far = int(time.time() * 1000) + 3_600_000
    p = r.pipeline(transaction=False)
    p.set('str', 'hello')
    p.set('int', 12345)
    p.set('big', 'x' * 5000)
    p.set('empty', '')
    p.set(b'bin\x00key', b'\x00\xff' * 30)
    p.set('ttl', 'v', pxat=far)
    p.rpush('list', *[f'e{i}' for i in range(300)])
    p.rpush('smalllist', 'a', 'b', 1, 2)
    p.hset('hash', mapping={'f1': 'v1', 'f2': 2})
    p.hset('bighash', mapping={f'f{i}': 'v' * (i % 90) for i in range(600)})
    p.sadd('intset', 1, 2, 3, -7, 1 << 40)
    p.sadd('set', 'a', 'b', 'c')
    p.sadd('bigset', *range(1000))
    p.zadd('zset', {'a': 1.5, 'b': -2, 'c': float('inf')})
    p.zadd('bigzset', {f'm{i}': i / 3 for i in range(300)})
    p.pexpireat('bigzset', far + 1)
    for i in range(30):
        p.xadd('stream', {'f': i, 'g': 'x' * i}, id=f'{1000 + i}-{i % 3}')
    p.xdel('stream', '1003-0')
    p.xgroup_create('stream', 'g1', id='0')
    p.xgroup_create('stream', 'g2', id='$')
    p.xreadgroup('g1', 'alice', {'stream': '>'}, count=5)
    p.xreadgroup('g1', 'bob', {'stream': '>'}, count=3)
    p.xack('stream', 'g1', '1001-1')
    p.execute()
    r.execute_command('SELECT', 3)
    r.set('in-db-3', 'three')
    r.hset('h3', 'a', 'b')
    r.execute_command('SELECT', 0)
    r.function_load("#!lua name=mylib\nredis.register_function('f1', function() return 1 end)")


def dataset(r):
    """Everything a client can read back, per database: type, value, absolute deadline,
    stream groups and their pending entries; and the function libraries."""
    out = {}
    for db in range(16):
        r.execute_command('SELECT', db)
        for key in r.scan_iter(count=1000):
            kind = r.type(key)
            if kind != b'stream':
                value = read_value(r, key, kind)
            else:
                groups = r.xinfo_groups(key)
                value = (
                    r.xrange(key),
                    r.xinfo_stream(key)['last-generated-id'],
                    [(g['name'], g['last-delivered-id'], g['pending']) for g in groups],
                    [r.xpending_range(key, g['name'], '-', '+', 100) for g in groups],
                )
                for pending in value[3]:
                    for p in pending:
                        p.pop('time_since_delivered')
            out[(db, key)] = (kind, value, r.pexpiretime(key), r.object('encoding', key))
    r.execute_command('SELECT', 0)
    libs = r.execute_command('FUNCTION', 'LIST', 'WITHCODE')
    return out, libs


def restart(proc, port, *args):
    """SHUTDOWN (which saves when save points are set) and start again on the same port."""
    stop(proc)
    return spawn_store(*args, port=port)[0]


def test_save_and_restart_keeps_every_type(tmp_path):
    proc, port = spawn_store('--dir', str(tmp_path))
    try:
        r = client(port)
        populate(r)
        before = dataset(r)
        assert r.save()
        assert os.path.exists(tmp_path / 'dump.rdb')
        assert r.info('persistence')['rdb_changes_since_last_save'] == 0
        proc = restart(proc, port, '--dir', str(tmp_path))
        r = client(port)
        assert dataset(r) == before
        assert r.info('persistence')['rdb_last_load_keys_loaded'] == len(before[0])
    finally:
        stop(proc)


def test_lastsave_and_changes_since_last_save(tmp_path):
    proc, port = spawn_store('--dir', str(tmp_path))
    try:
        r = client(port)
        r.set('a', 1)
        r.incr('a')
        r.set('b', 1, nx=True)
        assert r.info('persistence')['rdb_changes_since_last_save'] == 3
        first = r.lastsave()
        time.sleep(1.1)
        r.save()
        assert r.lastsave() > first
        assert r.info('persistence')['rdb_saves'] == 1
    finally:
        stop(proc)


def test_bgsave_is_a_point_in_time_image(tmp_path):
    """Writes right after BGSAVE (overwrites, deletes, new keys, type changes, TTLs,
    FLUSHDB, SWAPDB) do not leak into the snapshot, which holds the state at its start.
    `rdb-key-save-delay` makes the save slow enough to interleave on any machine."""
    proc, port = spawn_store('--dir', str(tmp_path), '--rdb-key-save-delay', '200')
    try:
        r = client(port)
        p = r.pipeline(transaction=False)
        for i in range(3000):
            p.set(f'k{i}', i)
            if i % 10 == 0:
                p.rpush(f'l{i}', *range(5))
                p.hset(f'h{i}', 'f', i)
        p.execute()
        populate(r)
        r.execute_command('SELECT', 5)
        r.set('db5', 'before')
        r.execute_command('SELECT', 0)
        before = dataset(r)
        assert r.bgsave() == b'Background saving started' or True
        assert r.info('persistence')['rdb_bgsave_in_progress'] == 1
        with pytest.raises(redis.ResponseError, match='Background save already in progress'):
            r.bgsave()
        p = r.pipeline(transaction=False)
        for i in range(0, 3000, 7):
            p.set(f'k{i}', 'changed')
            p.delete(f'k{i + 1}')
            p.set(f'new{i}', 'x')
            p.rpush(f'l{i - i % 10}', 'more')
            p.hset(f'h{i - i % 10}', 'g', 'new')
            p.expire(f'k{i + 2}', 1000)
        p.lpop('list')
        p.xadd('stream', {'after': 1})
        p.xack('stream', 'g1', '1000-0')
        p.execute()
        r.execute_command('SELECT', 3)
        r.flushdb()
        r.execute_command('SWAPDB', 5, 6)
        r.execute_command('SELECT', 0)
        wait_until(lambda: r.info('persistence')['rdb_bgsave_in_progress'] == 0, 'the BGSAVE')
        assert r.info('persistence')['rdb_last_bgsave_status'] == 'ok'
        stop(proc)
        proc, _ = spawn_store('--dir', str(tmp_path), port=port)
        assert dataset(client(port)) == before
    finally:
        stop(proc)
    # redis-server refuses a file that holds a key twice: each key is written once
    rproc, rport = spawn_redis('--dir', str(tmp_path))
    try:
        assert dataset(client(rport)) == before
    finally:
        stop(rproc)


def test_rdb_key_save_delay_paces_a_bgsave_as_redis_does(tmp_path):
    """rdb-key-save-delay is microseconds per key: 2,000 keys at 200 us take at least
    0.4 s however fast the machine (the loop's timers count whole milliseconds, so a
    shorter delay per key once fired on the next turn, and a slowed-down BGSAVE could end
    before the client's next command on a busy machine)."""
    proc, port = spawn_store('--dir', str(tmp_path), '--rdb-key-save-delay', '200')
    try:
        r = client(port)
        r.mset({f'k{i}': i for i in range(2000)})
        start = time.monotonic()
        r.bgsave()
        wait_until(lambda: r.info('persistence')['rdb_bgsave_in_progress'] == 0, 'the BGSAVE')
        assert time.monotonic() - start >= 0.4
        assert r.info('persistence')['rdb_last_bgsave_status'] == 'ok'
    finally:
        stop(proc)


def test_shutdown_saves_with_save_points_and_nosave_does_not(tmp_path):
    proc, port = spawn_store('--dir', str(tmp_path), '--save', '3600 1')
    try:
        r = client(port)
        r.set('a', 'kept')
        r.shutdown(nosave=True)  # redis-py takes the closed connection as success
        proc.wait(10)
        assert not os.path.exists(tmp_path / 'dump.rdb')
        proc, _ = spawn_store('--dir', str(tmp_path), '--save', '3600 1', port=port)
        r = client(port)
        r.set('a', 'kept')
        r.shutdown()
        proc.wait(10)
        proc, _ = spawn_store('--dir', str(tmp_path), port=port)
        assert client(port).get('a') == b'kept'
    finally:
        stop(proc)


def test_sigterm_saves_when_save_points_are_configured(tmp_path):
    proc, port = spawn_store('--dir', str(tmp_path), '--save', '3600 1')
    try:
        client(port).set('a', 'v')
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        proc, _ = spawn_store('--dir', str(tmp_path), port=port)
        assert client(port).get('a') == b'v'
    finally:
        stop(proc)


def test_save_points_start_a_bgsave(tmp_path):
    proc, port = spawn_store('--dir', str(tmp_path), '--save', '1 2')
    try:
        r = client(port)
        r.set('a', 1)
        time.sleep(1.5)
        assert r.info('persistence')['rdb_saves'] == 0  # one change: below the point
        r.set('b', 2)
        wait_until(lambda: r.info('persistence')['rdb_saves'] == 1, 'the automatic save')
        assert os.path.exists(tmp_path / 'dump.rdb')
    finally:
        stop(proc)


def test_keys_expired_while_down_are_expired_at_start_with_their_events(tmp_path):
    proc, port = spawn_store('--dir', str(tmp_path), '--keyevent-journal-events', 'x')
    try:
        r = client(port)
        now = int(time.time() * 1000)
        r.set('gone1', 'v', pxat=now + 300)
        r.set('gone2', 'v', pxat=now + 400)
        r.set('stays', 'v', pxat=now + 3_600_000)
        r.save()
        r.shutdown(nosave=True)
        proc.wait(10)
    finally:
        stop(proc)
    time.sleep(0.6)
    proc, _ = spawn_store('--dir', str(tmp_path), '--keyevent-journal-events', 'x', port=port)
    try:
        r = client(port, decode_responses=True)
        assert r.exists('gone1', 'gone2') == 0
        assert r.exists('stays') == 1
        assert r.info('persistence')['rdb_last_load_keys_expired'] == 2
        assert r.info('persistence')['rdb_last_load_keys_loaded'] == 1  # as redis-server
        events = {f['key']: f for _, f in r.xrange('__keyevents__')}
        assert set(events) == {'gone1', 'gone2'}
        for key, deadline in (('gone1', now + 300), ('gone2', now + 400)):
            assert events[key]['event'] == 'expired'
            assert int(events[key]['deadline']) == deadline
            assert int(events[key]['lag']) >= 500
            assert int(events[key]['ts']) - int(events[key]['lag']) == deadline
    finally:
        stop(proc)


def test_loaded_deadlines_expire_on_time_and_memory_is_recounted(tmp_path):
    """Keys are loaded into the shards in bulk and their deadline index built at the end:
    a loaded TTL still fires by itself (active expiry, no read), a hash-tagged key lands
    in its slot, and used_memory after DEBUG RELOAD is what it was before."""
    proc, port = spawn_store('--dir', str(tmp_path), '--enable-debug-command', 'yes')
    try:
        r = client(port)
        p = r.pipeline(transaction=False)
        for i in range(3000):
            p.set(f'k{i}', 'v' * (i % 90))
            p.hset(f'h{i}', mapping={'f': i, 'g': 'x' * (i % 30)})
        p.execute()
        r.set('{tag}a', 'v', px=600_000)
        deadline = int(time.time() * 1000) + 8000  # a slow CI machine restarts in time
        r.set('soon', 'v', pxat=deadline)
        r.save()
        stop(proc)
        proc, _ = spawn_store('--dir', str(tmp_path), '--enable-debug-command', 'yes', port=port)
        r = client(port)
        assert r.dbsize() == 6002
        assert r.pexpiretime('soon') == deadline
        assert r.get('{tag}a') == b'v' and r.ttl('{tag}a') > 500  # found in its slot
        used = r.info('memory')['used_memory']
        assert r.execute_command('DEBUG', 'RELOAD', 'NOSAVE')
        assert r.info('memory')['used_memory'] == used
        wait_until(lambda: r.dbsize() == 6001, 'the loaded TTL to fire')
        assert r.exists('soon') == 0 and r.info('stats')['expired_keys'] >= 1
    finally:
        stop(proc)


def test_loading_replies_loading_until_the_file_is_in(tmp_path):
    proc, port = spawn_store('--dir', str(tmp_path))
    try:
        r = client(port)
        p = r.pipeline(transaction=False)
        for i in range(5000):
            p.set(f'k{i}', i)
        p.execute()
        r.save()
        stop(proc)
        proc, _ = spawn_store('--dir', str(tmp_path), '--key-load-delay', '400', port=port)
        r = client(port, retry=Retry(NoBackoff(), 0))  # redis-py retries -LOADING by default
        with pytest.raises(redis.BusyLoadingError):
            r.get('k1')
        info = r.info('persistence')
        assert info['loading'] == 1
        assert info['loading_total_bytes'] == os.path.getsize(tmp_path / 'dump.rdb')
        assert 0 <= info['loading_loaded_bytes'] <= info['loading_total_bytes']
        assert abs(info['loading_start_time'] - time.time()) < 60
        wait_until(lambda: r.info('persistence')['loading'] == 0, 'the load')
        assert 'loading_total_bytes' not in r.info('persistence')
        assert r.get('k4999') == b'4999'
        assert r.dbsize() == 5000
    finally:
        stop(proc)


def test_config_set_while_loading(tmp_path):
    """While the data set loads, CONFIG SET takes most parameters but refuses dir,
    appendonly and repl-diskless-load (DENY_LOADING_CONFIG) with -LOADING, ahead of any
    other error in the same call, and nothing of that call is set."""
    proc, port = spawn_store('--dir', str(tmp_path))
    try:
        r = client(port)
        p = r.pipeline(transaction=False)
        for i in range(5000):
            p.set(f'k{i}', i)
        p.execute()
        r.save()
        stop(proc)
        proc, _ = spawn_store(
            '--dir', str(tmp_path), '--key-load-delay', '400', '--enable-protected-configs',
            'yes', port=port,
        )  # fmt: skip
        r = client(port, retry=Retry(NoBackoff(), 0))
        assert r.info('persistence')['loading'] == 1
        assert r.config_set('loglevel', 'debug') is True
        for args in (('dir', 'x'), ('appendonly', 'yes'), ('maxmemory', '1mb', 'nosuch', '1')):
            with pytest.raises(redis.BusyLoadingError):
                r.execute_command('CONFIG', 'SET', *args, 'dir', 'x')
        assert r.config_get('maxmemory')['maxmemory'] == '0'
        assert r.info('persistence')['loading'] == 1  # (all of it while loading)
    finally:
        stop(proc)


def test_debug_reload_keeps_the_data(tmp_path):
    proc, port = spawn_store('--dir', str(tmp_path), '--enable-debug-command', 'yes')
    try:
        r = client(port)
        populate(r)
        before = dataset(r)
        assert r.execute_command('DEBUG', 'RELOAD')
        assert dataset(r) == before
    finally:
        stop(proc)


@pytest.mark.parametrize(
    'damage',
    ['truncated', 'checksum', 'garbage'],
)
def test_a_damaged_rdb_file_stops_the_start_with_a_log_line(tmp_path, damage):
    proc, port = spawn_store('--dir', str(tmp_path))
    r = client(port)
    populate(r)
    r.save()
    stop(proc)
    path = tmp_path / 'dump.rdb'
    data = bytearray(path.read_bytes())
    if damage == 'truncated':
        data = data[: len(data) // 2]
    elif damage == 'checksum':
        data[len(data) // 2] ^= 0xFF
    else:
        data = b'REDIS0010' + b'\xfe\x00\x07garbage'
    path.write_bytes(bytes(data))
    out = subprocess.run(
        [os.sys.executable, '-m', 'store', '--port', '0', '--dir', str(tmp_path), '--save', ''],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    assert 'dump.rdb' in out.stdout


def test_an_rdb_written_here_loads_in_redis_server_and_back(tmp_path):
    ours = tmp_path / 'ours'
    theirs = tmp_path / 'theirs'
    ours.mkdir()
    theirs.mkdir()
    proc, port = spawn_store('--dir', str(ours))
    try:
        r = client(port)
        populate(r)
        before = dataset(r)
        r.save()
    finally:
        stop(proc)
    shutil.copy(ours / 'dump.rdb', theirs / 'dump.rdb')
    rproc, rport = spawn_redis('--dir', str(theirs))
    try:
        ref = client(rport)
        assert dataset(ref) == before
        ref.set('written-by-redis', 'yes')
        ref.save()
    finally:
        stop(rproc)
    shutil.copy(theirs / 'dump.rdb', ours / 'dump.rdb')
    proc, port = spawn_store('--dir', str(ours))
    try:
        r = client(port)
        assert r.get('written-by-redis') == b'yes'
        r.delete('written-by-redis')
        assert dataset(r) == before
    finally:
        stop(proc)


def test_dir_and_dbfilename_are_protected_configs(r):
    for name in ('dir', 'dbfilename'):
        with pytest.raises(redis.ResponseError, match="can't set protected config"):
            r.config_set(name, 'x')


def test_a_failed_bgsave_stops_writes_with_misconf_until_a_save_works(tmp_path):
    data = tmp_path / 'data'
    data.mkdir()
    proc, port = spawn_store('--dir', str(data), '--save', '3600 1')
    try:
        r = client(port)
        r.set('a', 1)
        shutil.rmtree(data)
        r.bgsave()
        wait_until(lambda: r.info('persistence')['rdb_last_bgsave_status'] == 'err', 'failure')
        with pytest.raises(redis.ResponseError, match='^MISCONF Redis is configured to save'):
            r.set('b', 2)
        with pytest.raises(redis.ResponseError, match='^MISCONF'):
            r.ping()
        assert r.get('a') == b'1'  # reads are served
        with pytest.raises(redis.ResponseError, match='^MISCONF'):
            r.eval("return redis.call('set', 'c', 3)", 0)
        assert r.eval("return redis.call('get', 'a')", 0) == b'1'
        data.mkdir()
        r.bgsave()
        wait_until(lambda: r.info('persistence')['rdb_last_bgsave_status'] == 'ok', 'a save')
        assert r.set('b', 2)
    finally:
        stop(proc)


def test_flushall_with_save_points_saves_the_empty_dataset(tmp_path):
    proc, port = spawn_store('--dir', str(tmp_path), '--save', '3600 1')
    try:
        r = client(port)
        r.set('a', 1)
        r.save()
        r.flushall()
        assert r.info('persistence')['rdb_changes_since_last_save'] == 0
        proc.kill()  # no shutdown save: the file FLUSHALL wrote is what a restart finds
        proc.wait(10)
        proc, _ = spawn_store('--dir', str(tmp_path), port=port)
        assert client(port).dbsize() == 0
    finally:
        stop(proc)


def test_a_wrong_checksum_is_logged_as_redis_logs_it(tmp_path):
    """The log says what redis-server says before it exits: the checksums, and 'RDB CRC
    error' (Redis's suite looks for the latter)."""
    proc, port = spawn_store('--dir', str(tmp_path))
    client(port).set('a', 'b')
    client(port).save()
    stop(proc)
    path = tmp_path / 'dump.rdb'
    data = path.read_bytes()
    path.write_bytes(data[:-8] + b'foobar00')
    out = subprocess.run(
        [os.sys.executable, '-m', 'store', '--port', '0', '--dir', str(tmp_path), '--save', ''],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    assert 'but got (30307261626f6f66). Aborting now.' in out.stdout
    assert 'RDB CRC error' in out.stdout


def test_killing_the_background_saves_child_fails_it_as_in_redis(tmp_path):
    """A process stands for Redis's fork child while a BGSAVE runs (pgrep -P finds it);
    killing it fails the save as Redis's does: 'terminated by signal 9', and with save
    points set, writes refused with -MISCONF until a save works."""
    proc, port = spawn_store('--dir', str(tmp_path), '--save', '3600 1')
    r = client(port)
    try:
        r.config_set('rdb-key-save-delay', 10000000)
        r.mset({f'k{i}': i for i in range(10)})
        r.bgsave()
        out = subprocess.run(['pgrep', '-P', str(proc.pid)], capture_output=True, text=True)
        child = int(out.stdout.split()[0])
        os.kill(child, signal.SIGKILL)
        wait_until(lambda: r.info('persistence')['rdb_bgsave_in_progress'] == 0, 'the end')
        assert r.info('persistence')['rdb_last_bgsave_status'] == 'err'
        with pytest.raises(redis.ResponseError, match='^MISCONF'):
            r.set('x', 'y')
        r.config_set('rdb-key-save-delay', 0)
        r.bgsave()
        wait_until(lambda: r.info('persistence')['rdb_last_bgsave_status'] == 'ok', 'a save')
        assert r.set('x', 'y')
        assert subprocess.run(['pgrep', '-P', str(proc.pid)]).returncode == 1  # reaped
    finally:
        stop(proc)
    assert 'Background saving terminated by signal 9' in proc.stdout.read()


# -- odd and corrupt files, loaded as rdb.c's rdbLoadRioWithLoadingCtx loads them ----------


def _rdb_file(records):
    """An RDB v9 file of `records` (type byte, key, raw value bytes) in db 0, with no
    checksum (0: not checked), as Redis's corrupt-dump assets are."""
    from store.rdb import rdb_string

    out = b'REDIS0009\xfe\x00'
    for t, key, value in records:
        out += bytes((t,)) + rdb_string(key, False) + value
    return out + b'\xff' + bytes(8)


def _blob(b):
    from store.rdb import rdb_string

    return rdb_string(b, False)


def _listpack(entries, count=None):
    body = b''
    for e in entries:  # 6-bit strings: 0b10xxxxxx, then the backlen
        body += bytes((0x80 | len(e),)) + e + bytes((1 + len(e),))
    total = 6 + len(body) + 1
    n = len(entries) if count is None else count
    return total.to_bytes(4, 'little') + n.to_bytes(2, 'little') + body + b'\xff'


def _start_and_log(exe, tmp_path, name, *args):
    """Start `exe` on the file `name` in tmp_path; its exit status (None: it started and
    was stopped) and its output."""
    from conftest import free_port

    port = free_port()
    proc = subprocess.Popen(
        [
            *exe,
            '--port',
            str(port),
            '--dir',
            str(tmp_path),
            '--dbfilename',
            name,
            '--save',
            '',
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        rc = proc.wait(5 if exe[0].endswith('redis-server') else 20)
    except subprocess.TimeoutExpired:
        rc = None
        stop(proc)
    return rc, proc.stdout.read()


SERVERS = {
    'ours': [os.sys.executable, '-m', 'store'],
    'redis': [shutil.which('redis-server') or 'redis-server'],
}


@pytest.mark.differential
@pytest.mark.parametrize('which', ['ours', 'redis'])
@pytest.mark.parametrize('sanitize', ['no', 'yes'])
def test_empty_aggregates_are_skipped_and_counted_in_the_log(tmp_path, which, sanitize):
    """rdbLoadRio skips an empty aggregate, logs it and counts it in 'Done loading RDB'."""
    name = f'{which}-{sanitize}.rdb'
    (tmp_path / name).write_bytes(
        _rdb_file(
            [
                (0, b'str', _blob(b'v')),
                (2, b'set', b'\x00'),  # a hashtable set of no members
                (4, b'hash', b'\x00'),
                (16, b'hash_listpack', _blob(_listpack([]))),
            ]
        )
    )
    rc, log = _start_and_log(SERVERS[which], tmp_path, name, '--sanitize-dump-payload', sanitize)
    assert rc is None, log
    for key in ('set', 'hash', 'hash_listpack'):
        assert f'rdbLoadObject skipping empty key: {key}\n' in log
    assert 'Done loading RDB, keys loaded: 1, keys expired: 0, empty keys skipped: 3.' in log


@pytest.mark.differential
@pytest.mark.parametrize('which', ['ours', 'redis'])
def test_a_value_failing_the_integrity_checks_ends_the_load_as_in_redis(tmp_path, which):
    """A hash ziplist is always checked (Redis converts it): a bad header ends the start
    with the check's line, redis-check-rdb's report and 'Terminating server ...'."""
    bad_ziplist = (99).to_bytes(4, 'little') + (10).to_bytes(4, 'little') + b'\x00\x00\xff'
    name = f'{which}.rdb'
    (tmp_path / name).write_bytes(
        _rdb_file([(0, b'str', _blob(b'v')), (13, b'bad', _blob(bad_ziplist))])
    )
    rc, log = _start_and_log(SERVERS[which], tmp_path, name, '--sanitize-dump-payload', 'no')
    assert rc == 1, log
    assert log.count('Hash ziplist integrity check failed.') >= 2
    assert 'function at rdb.c:2275 -> Hash ziplist integrity check failed.' in log
    assert "[additional info] Reading key 'bad'" in log
    assert log.count('Terminating server after rdb file reading failure.') == 1


@pytest.mark.differential
@pytest.mark.parametrize('which', ['ours', 'redis'])
def test_deep_checks_of_a_file_run_with_sanitize_dump_payload_yes(tmp_path, which):
    """A hash listpack holding a field twice passes the header check; deep sanitization
    (sanitize-dump-payload yes) refuses it, and the file with it, as it would a RESTORE."""
    name = f'{which}.rdb'
    dup = _listpack([b'a', b'1', b'a', b'2'])
    (tmp_path / name).write_bytes(_rdb_file([(16, b'dup', _blob(dup))]))
    rc, log = _start_and_log(SERVERS[which], tmp_path, name, '--sanitize-dump-payload', 'yes')
    assert rc == 1, log
    assert 'function at rdb.c:2301 -> Hash listpack integrity check failed.' in log
    assert log.count('Terminating server after rdb file reading failure.') == 1
