"""Diskless replication (store/replication.py, store/replica.py): with repl-diskless-sync a
replica announcing capa eof gets the payload streamed as `$EOF:<mark>` + RDB + mark, as
redis-server sends it; a replica loads it with repl-diskless-load without a file, and
swapdb gives the old data back when the load fails."""

import re
import socket
import threading
import time

import pytest
import redis

from conftest import WAIT, spawn_redis, spawn_store, stop, wait_until
from rawconn import pack


def _sync(port, capa_eof):
    """A raw replica: REPLCONF (capa eof if asked), PSYNC ? -1; returns the payload's
    header line, its payload and what followed it."""
    s = socket.create_connection(('127.0.0.1', port), timeout=WAIT)
    f = s.makefile('rb')
    try:
        if capa_eof:
            s.sendall(b'*3\r\n$8\r\nREPLCONF\r\n$4\r\ncapa\r\n$3\r\neof\r\n')
            assert f.readline() == b'+OK\r\n'
        s.sendall(b'*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n')
        assert f.readline().startswith(b'+FULLRESYNC ')
        line = b'\n'
        while line == b'\n':
            line = f.readline()
        if line.startswith(b'$EOF:'):
            mark = line[5:-2]
            data = b''
            while not data.endswith(mark):
                data += f.read1(65536)
            return line, data[: -len(mark)]
        return line, f.read(int(line[1:]))
    finally:
        f.close()
        s.close()


class _Log:
    """What a spawned server writes (its log goes to stdout), read as it comes."""

    def __init__(self, proc):
        self.lines = []
        threading.Thread(target=lambda: self.lines.extend(proc.stdout), daemon=True).start()

    def text(self):
        return ''.join(self.lines)


def _masters(*args):
    common = ('--repl-diskless-sync-delay', '0', *args)
    return [spawn_store(*common), spawn_redis(*common)]


def test_a_replica_with_capa_eof_gets_the_streamed_form_as_from_redis():
    servers = _masters()
    try:
        for _, port in servers:
            redis.Redis(port=port).set('k', 'v')
            line, rdb = _sync(port, capa_eof=True)
            assert re.fullmatch(rb'\$EOF:[0-9a-zA-Z]{40}\r\n', line), line
            assert rdb.startswith(b'REDIS') and b'k' in rdb
            line, rdb = _sync(port, capa_eof=False)  # disk-based: `$<len>`
            assert re.fullmatch(rb'\$\d+\r\n', line), line
            assert rdb.startswith(b'REDIS')
    finally:
        for proc, _ in servers:
            stop(proc)


def test_without_repl_diskless_sync_the_payload_has_its_length():
    servers = _masters('--repl-diskless-sync', 'no')
    try:
        for _, port in servers:
            line, _ = _sync(port, capa_eof=True)
            assert re.fullmatch(rb'\$\d+\r\n', line), line
    finally:
        for proc, _ in servers:
            stop(proc)


def _follow(master_port, replica):
    r = redis.Redis(port=replica, decode_responses=True)
    r.replicaof('127.0.0.1', master_port)
    wait_until(lambda: r.info('replication')['master_link_status'] == 'up', 'the sync')
    return r


def test_streamed_payloads_between_our_master_redis_and_our_replica():
    for load in ('disabled', 'on-empty-db', 'swapdb'):
        mproc, mport = spawn_store('--repl-diskless-sync-delay', '0')
        rproc, rport = spawn_store('--repl-diskless-load', load)
        log = _Log(rproc)
        sproc, sport = spawn_redis('--replicaof', '127.0.0.1', str(mport))
        try:
            m = redis.Redis(port=mport, decode_responses=True)
            m.mset({f'k{i}': str(i) for i in range(1000)})
            ours = _follow(mport, rport)
            m.set('after', 'x')
            wait_until(
                lambda m=m: m.wait(2, 100) == 2,
                f'{load}: the acknowledgements',
            )
            theirs = redis.Redis(port=sport, decode_responses=True)
            for r in (ours, theirs):
                assert r.dbsize() == 1001 and r.get('after') == 'x' and r.get('k7') == '7'
            text = log.text()
            where = 'to disk' if load == 'disabled' else 'to parser'
            assert f'receiving streamed RDB from master with EOF {where}' in text
            info = m.info('replication')
            assert info['slave0']['state'] == info['slave1']['state'] == 'online'
        finally:
            for p in (mproc, rproc, sproc):
                stop(p)


def _bad_master(payload):
    """A master that answers the handshake and sends `payload` as a streamed RDB."""
    srv = socket.socket()
    srv.bind(('127.0.0.1', 0))
    srv.listen(4)
    served = threading.Event()

    def run():
        conns = []
        try:
            while not served.is_set():
                c, _ = srv.accept()
                conns.append(c)
                f = c.makefile('rb')
                while True:
                    head = f.readline()
                    if not head:
                        break
                    args = [f.readline() and f.readline().strip() for _ in range(int(head[1:]))]
                    cmd = args[0].upper()
                    if cmd == b'PING':
                        c.sendall(b'+PONG\r\n')
                    elif cmd == b'PSYNC':
                        mark = b'x' * 40
                        c.sendall(b'+FULLRESYNC %s 0\r\n$EOF:%s\r\n' % (b'a' * 40, mark))
                        c.sendall(payload + mark)
                        served.set()
                        break
                    else:
                        c.sendall(b'+OK\r\n')
        except OSError:
            pass
        finally:
            for c in conns:
                c.close()

    threading.Thread(target=run, daemon=True).start()
    return srv, served


def test_swapdb_restores_the_old_data_when_the_load_fails():
    srv, served = _bad_master(b'REDIS0010' + b'\xff' * 3)  # a truncated, broken RDB
    proc, port = spawn_store('--repl-diskless-load', 'swapdb')
    log = _Log(proc)
    try:
        r = redis.Redis(port=port, decode_responses=True)
        r.set('old', 'data')
        r.replicaof('127.0.0.1', srv.getsockname()[1])
        wait_until(served.is_set, 'the payload')
        wait_until(
            lambda: 'Failed trying to load the MASTER synchronization DB' in log.text(),
            'the failed load',
        )
        r.replicaof('no', 'one')
        assert r.get('old') == 'data' and r.dbsize() == 1
        assert 'receiving streamed RDB from master with EOF to parser' in log.text()
    finally:
        stop(proc)
        srv.close()


def test_a_replicas_payload_counts_as_a_bgsave_in_progress_as_in_redis():
    servers = _masters('--rdb-key-save-delay', '100000')
    socks = []
    try:
        for _, port in servers:
            c = redis.Redis(port=port)
            c.mset({f'k{i}': 'v' for i in range(100)})
            s = socket.create_connection(('127.0.0.1', port), timeout=WAIT)
            socks.append(s)
            s.sendall(b'*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n')
            wait_until(lambda c=c: c.info('persistence')['rdb_bgsave_in_progress'] == 1, 'it')
    finally:
        for s in socks:
            s.close()
        for proc, _ in servers:
            stop(proc)


# -- a streamed payload's life on the master (store/replication_socket_sync.py) ------------


class _Reader:
    """A server's log: ours from its stdout, redis-server's from its --logfile."""

    def __init__(self, proc, path=None):
        self.path = path
        self.log = None if path else _Log(proc)

    def text(self):
        if self.log is not None:
            return self.log.text()
        try:
            with open(self.path) as f:
                return f.read()
        except FileNotFoundError:
            return ''


def _streaming_masters(tmp_path, *args):
    """Our master and redis-server's, each with 30 MB of values (more than the sockets
    hold) and no delay before a diskless payload: [(proc, port, log)]."""
    common = ('--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0', *args)
    ours = spawn_store('--rdbcompression', 'no', '--enable-debug-command', 'yes', *common)
    path = str(tmp_path / 'redis.log')
    theirs = spawn_redis('--rdbcompression', 'no', '--logfile', path, *common)
    out = [(*ours, _Reader(ours[0])), (*theirs, _Reader(theirs[0], path))]
    for _, port, _ in out:
        redis.Redis(port=port).execute_command('DEBUG', 'POPULATE', 300, 'k', 100_000)
    return out


def _raw_replica_started(port):
    """A replica that asks for a full sync with capa eof: (socket, its reader, None)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.settimeout(WAIT)
    s.connect(('127.0.0.1', port))
    f = s.makefile('rb')
    s.sendall(b'*3\r\n$8\r\nREPLCONF\r\n$4\r\ncapa\r\n$3\r\neof\r\n')
    assert f.readline() == b'+OK\r\n'
    s.sendall(b'*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n')
    return s, f, None


def _payload_line(f):
    """Read up to the payload's `$EOF:<mark>` line (newlines before it are the master
    keeping the replica waiting): (the reader, the mark)."""
    line = f.readline()
    while line == b'\n':
        line = f.readline()
    assert line.startswith(b'+FULLRESYNC '), line
    line = f.readline()
    while line == b'\n':
        line = f.readline()
    assert line.startswith(b'$EOF:'), line
    return f, line[5:45]  # (what `f` took past the line is read through it)


def _raw_replica(port):
    """A replica that asks for a full sync with capa eof and reads up to the payload's
    `$EOF:<mark>` line, then stops reading: (socket, its reader, mark)."""
    s, f, _ = _raw_replica_started(port)
    return (s, *_payload_line(f))


def _in_progress(port):
    return redis.Redis(port=port).info('persistence')['rdb_bgsave_in_progress']


def _children(pid):
    with open(f'/proc/{pid}/task/{pid}/children') as f:
        return f.read().split()


DONE_READING = 'Diskless rdb transfer, done reading from pipe, 1 replicas still up.'


def test_a_streamed_payload_goes_at_its_replicas_pace_and_its_child_lives_until_sent(tmp_path):
    masters = _streaming_masters(tmp_path)
    try:
        for proc, port, log in masters:
            s, f, mark = _raw_replica(port)
            time.sleep(1)  # not reading: the payload waits for it, and so does the child
            assert _in_progress(port) == 1
            assert _children(proc.pid), 'the payload has a child process while it is sent'
            tail = b''
            while not tail.endswith(mark):
                tail = (tail + f.read1(1 << 20))[-100:]
            wait_until(lambda port=port: _in_progress(port) == 0, 'the end of the payload')
            wait_until(lambda log=log: DONE_READING in log.text(), 'the log line')
            f.close()
            s.close()  # (the socket closes once its reader is closed too)
    finally:
        for proc, _, _ in masters:
            stop(proc)


def test_a_streamed_payload_stops_when_its_last_replica_leaves(tmp_path):
    masters = _streaming_masters(tmp_path)
    try:
        for _, port, log in masters:
            s, f, _ = _raw_replica(port)
            time.sleep(0.5)
            assert _in_progress(port) == 1
            f.close()
            s.close()  # (the socket closes once its reader is closed too)
            wait_until(lambda port=port: _in_progress(port) == 0, 'the payload stopped')
            text = log.text()
            assert 'Diskless rdb transfer, last replica dropped, killing fork child.' in text
            assert 'Background transfer terminated by signal 10' in text
            assert redis.Redis(port=port).info('persistence')['rdb_last_bgsave_status'] == 'ok'
    finally:
        for proc, _, _ in masters:
            stop(proc)


def test_a_replica_that_stops_reading_its_streamed_payload_times_out(tmp_path):
    masters = _streaming_masters(tmp_path, '--repl-timeout', '2')
    try:
        for _, port, log in masters:
            s, f, _ = _raw_replica(port)
            wait_until(
                lambda log=log: 'Disconnecting timedout replica (full sync)' in log.text(),
                'the timeout',
            )
            wait_until(lambda port=port: _in_progress(port) == 0, 'the payload stopped')
            f.close()
            s.close()  # (the socket closes once its reader is closed too)
    finally:
        for proc, _, _ in masters:
            stop(proc)


def test_flushall_stops_a_payload_and_its_replica_syncs_again(tmp_path):
    masters = _streaming_masters(tmp_path)
    try:
        for _, port, log in masters:
            s, f, _ = _raw_replica(port)
            time.sleep(0.5)
            redis.Redis(port=port).flushall()
            s.settimeout(WAIT)
            with pytest.raises((ConnectionResetError, EOFError)):
                while True:  # what was sent of the payload, then the close
                    if not f.read1(1 << 20):
                        raise EOFError
            wait_until(lambda port=port: _in_progress(port) == 0, 'the payload stopped')
            assert 'Background transfer terminated by signal 10' in log.text()
            f.close()
            s.close()  # (the socket closes once its reader is closed too)
    finally:
        for proc, _, _ in masters:
            stop(proc)


def test_a_disk_payload_nobody_waits_for_is_stopped_unless_save_points_want_it():
    for save in ('', '900 1'):
        servers = [
            spawn_store('--repl-diskless-sync', 'no', '--rdb-key-save-delay', '1000000'),
            spawn_redis('--repl-diskless-sync', 'no', '--rdb-key-save-delay', '1000000'),
        ]
        try:
            for _, port in servers:
                c = redis.Redis(port=port)
                c.config_set('save', save)
                c.mset({f'k{i}': 'v' for i in range(10)})
                s = socket.create_connection(('127.0.0.1', port), timeout=WAIT)
                s.sendall(b'*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n')
                wait_until(lambda port=port: _in_progress(port) == 1, 'the payload started')
                s.close()
                if save:
                    time.sleep(0.5)
                    assert _in_progress(port) == 1  # the save points will use it
                    c.config_set('save', '')  # (no dump.rdb at exit for the next server)
                else:
                    wait_until(lambda port=port: _in_progress(port) == 0, 'the payload stopped')
        finally:
            for proc, _ in servers:
                stop(proc)


def _psync(port, replid, offset):
    """A raw replica's PSYNC: (socket, the first line of the reply)."""
    s = socket.create_connection(('127.0.0.1', port), timeout=WAIT)
    s.sendall(pack('PSYNC', replid, offset))
    line = b''
    while not line.endswith(b'\r\n'):
        line += s.recv(1)
    return s, line


def test_the_backlog_keeps_the_stream_a_syncing_replica_waits_with_as_redis_does():
    """Redis 7's backlog and replicas share one buffer: while a replica waits for its
    payload the backlog outgrows repl-backlog-size, a replica reconnecting meanwhile
    continues from any of it, and once the waiting replica is gone it shrinks back."""
    args = ('--repl-diskless-sync', 'no', '--repl-backlog-size', '16384')
    servers = [spawn_store(*args), spawn_redis(*args)]
    try:
        for _, port in servers:
            m = redis.Redis(port=port)
            m.set('k', 'v')
            first, line = _psync(port, '?', -1)  # syncs, then goes
            replid, offset = line.split()[1:]
            wait_until(lambda port=port: _in_progress(port) == 0, 'the first payload made')
            first.close()
            m.config_set('rdb-key-save-delay', 1_000_000)  # the next payload takes long
            waiting, _ = _psync(port, '?', -1)
            wait_until(lambda port=port: _in_progress(port) == 1, 'the payload started')
            for i in range(100):
                m.set(f'k{i}', 'x' * 10_000)
            assert m.info('replication')['repl_backlog_histlen'] > 1_000_000
            again, line = _psync(port, replid, int(offset) + 1)  # beyond the 16 KB
            assert line.startswith(b'+CONTINUE'), line
            again.close()
            waiting.close()
            wait_until(  # (Redis frees whole 16 KB blocks of it: 22 KB left there)
                lambda m=m: m.info('replication')['repl_backlog_histlen'] < 100_000, 'the shrink'
            )
            m.config_set('rdb-key-save-delay', 0)
    finally:
        for proc, _ in servers:
            stop(proc)


def test_shutdown_while_a_payload_is_made_leaves_no_temporary_file(tmp_path):
    for which, spawn in (('ours', spawn_store), ('redis', spawn_redis)):
        where = tmp_path / which
        where.mkdir()
        proc, port = spawn(
            '--dir', str(where), '--repl-diskless-sync', 'no', '--rdb-key-save-delay', '1000000'
        )
        try:
            c = redis.Redis(port=port)
            c.mset({'a': 'b', 'c': 'd'})
            s = socket.create_connection(('127.0.0.1', port), timeout=WAIT)
            s.sendall(pack('PSYNC', '?', -1))
            wait_until(lambda port=port: _in_progress(port) == 1, 'the payload started')
            # (redis-server's child makes its file a moment after INFO shows it started)
            wait_until(lambda where=where: list(where.glob('temp-*.rdb')), 'the payload file')
            c.shutdown(nosave=True)
            proc.wait(WAIT)
            assert list(where.iterdir()) == [], which
            s.close()
        finally:
            stop(proc)


def test_a_streamed_payload_goes_on_for_the_others_when_its_slowest_replica_leaves(tmp_path):
    masters = _streaming_masters(tmp_path, '--repl-diskless-sync-max-replicas', '2')
    try:
        for _, port, log in masters:
            redis.Redis(port=port).config_set('repl-diskless-sync-delay', 5)
            slow, slow_f, _ = _raw_replica_started(port)
            fast, fast_f, _ = _raw_replica_started(port)
            slow_f, fast_f = _payload_line(slow_f), _payload_line(fast_f)
            time.sleep(0.5)  # neither reads: the payload waits
            assert _in_progress(port) == 1
            slow_f[0].close()
            slow.close()  # the slowest leaves; the other now reads all of it
            tail = b''
            while not tail.endswith(fast_f[1]):
                tail = (tail + fast_f[0].read1(1 << 20))[-100:]
            wait_until(lambda port=port: _in_progress(port) == 0, 'the end of the payload')
            wait_until(lambda log=log: DONE_READING in log.text(), 'the log line')
            fast_f[0].close()
            fast.close()
    finally:
        for proc, _, _ in masters:
            stop(proc)


class _Writer:
    """Write load on a master: a client sending pipelines of mixed writes (strings, a
    counter, lists, hashes, a sorted set, deletions, TTLs) until stopped."""

    def __init__(self, port):
        self.client = redis.Redis(port=port)
        self.batches = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        i = 0
        while not self.done.is_set():
            pipe = self.client.pipeline(transaction=False)
            for _ in range(100):
                i += 1
                pipe.set(f'w{i % 5000}', i)
                pipe.incr('counter')
                pipe.rpush(f'l{i % 50}', i)
                pipe.hset(f'h{i % 50}', f'f{i % 100}', i)
                pipe.zadd('z', {f'm{i % 1000}': i})
                if i % 7 == 0:
                    pipe.delete(f'w{i * 13 % 5000}')
                if i % 11 == 0:
                    pipe.pexpire(f'w{i % 5000}', 3_600_000)
            pipe.execute()
            self.batches += 1

    def stop(self):
        self.done.set()
        self.thread.join(WAIT)
        assert not self.thread.is_alive()


@pytest.mark.parametrize(
    'master_kind, replica_kind, load',
    [
        ('store', 'redis', 'disabled'),
        ('store', 'store', 'swapdb'),
        ('redis', 'store', 'swapdb'),
        ('redis', 'store', 'on-empty-db'),
    ],
)
def test_a_diskless_sync_under_write_load_ends_with_equal_data(
    master_kind, replica_kind, load, tmp_path
):
    """A replica syncing diskless from this server, and this server loading diskless
    from redis-server, while a client keeps writing to the master before, during and
    after the transfer: once the replica has caught up, both hold the same data (DEBUG
    DIGEST, which both compute alike)."""
    spawn = {'store': spawn_store, 'redis': spawn_redis}
    mlog, rlog = tmp_path / 'master.log', tmp_path / 'replica.log'
    mproc, mport = spawn[master_kind](
        *('--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0'),
        *('--logfile', str(mlog), '--enable-debug-command', 'yes'),
    )
    rproc, rport = spawn[replica_kind](
        *('--repl-diskless-load', load, '--logfile', str(rlog), '--enable-debug-command', 'yes')
    )
    writer = None
    try:
        m = redis.Redis(port=mport, decode_responses=True)
        pipe = m.pipeline(transaction=False)
        for i in range(20_000):  # 20 MB: a transfer the writes overlap
            pipe.set(f'big{i}', b'%05d' % i * 200)
        pipe.execute()
        writer = _Writer(mport)
        wait_until(lambda: writer.batches >= 2, 'writes before the sync')
        r = _follow(mport, rport)
        synced = writer.batches
        wait_until(lambda: writer.batches >= synced + 5, 'writes after the sync')
        writer.stop()
        offset = m.info('replication')['master_repl_offset']
        wait_until(
            lambda: r.info('replication')['slave_repl_offset'] >= offset, 'the replica caught up'
        )
        assert r.dbsize() == m.dbsize() > 20_000
        assert r.execute_command('DEBUG', 'DIGEST') == m.execute_command('DEBUG', 'DIGEST')
        assert 'Starting BGSAVE for SYNC with target: replicas sockets' in mlog.read_text()
        where = 'to disk' if load == 'disabled' else 'to parser'
        assert f'receiving streamed RDB from master with EOF {where}' in rlog.read_text()
    finally:
        if writer is not None:
            writer.done.set()
        stop(rproc)
        stop(mproc)
