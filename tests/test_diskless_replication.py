"""Diskless replication (store/replication.py, store/replica.py): with repl-diskless-sync a
replica announcing capa eof gets the payload streamed as `$EOF:<mark>` + RDB + mark, as
redis-server sends it; a replica loads it with repl-diskless-load without a file, and
swapdb gives the old data back when the load fails."""

import re
import socket
import threading

import redis

from conftest import WAIT, spawn_redis, spawn_store, stop, wait_until


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
