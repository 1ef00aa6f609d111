"""Shared benchmark plumbing: start our server and redis-server side by side, read their
CPU time and RSS from /proc, run redis-benchmark, load keys quickly over a raw socket.

Both servers run on this machine in the same run, so the ratios between them mean
something even on a noisy shared machine; absolute numbers do not.
"""

import os
import shutil
import socket
import subprocess
import sys
import threading
import time

import hiredis

TICK = os.sysconf('SC_CLK_TCK')
PAGE = os.sysconf('SC_PAGE_SIZE')
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError(f'server exited: {proc.returncode}')
        try:
            socket.create_connection(('127.0.0.1', port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(port)


class ServerProc:
    """A server subprocess: `ours` (python -m store, from the checkout at `root`),
    `redis` (redis-server) or `floor` (the minimal Python server of bench/floor.py)."""

    def __init__(self, kind, *args, root=ROOT):
        self.kind = kind
        self.port = free_port()
        if kind == 'ours':
            cmd = [sys.executable, '-m', 'store', '--port', str(self.port), '--save', '', *args]
        elif kind == 'floor':
            cmd = [
                sys.executable,
                os.path.join(ROOT, 'bench', 'floor.py'),
                '--serve',
                str(self.port),
            ]
        else:
            exe = shutil.which('redis-server')
            if not exe:
                sys.exit('redis-server not found: apt-get install redis-server redis-tools')
            cmd = [
                exe,
                '--port',
                str(self.port),
                '--bind',
                '127.0.0.1',
                '--save',
                '',
                '--appendonly',
                'no',
                *args,
            ]
        self.proc = subprocess.Popen(
            cmd, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_port(self.port, self.proc)

    def cpu_seconds(self):
        with open(f'/proc/{self.proc.pid}/stat') as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK

    def rss_bytes(self):
        with open(f'/proc/{self.proc.pid}/statm') as f:
            return int(f.read().split()[1]) * PAGE

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def redis_benchmark(port, test, requests, clients=50, pipeline=1, extra=()):
    """Run one redis-benchmark test; returns requests per second. `test` is a test name
    for -t (set, get, ...) or a list: a command line with __rand_int__ placeholders."""
    exe = shutil.which('redis-benchmark')
    if not exe:
        sys.exit('redis-benchmark not found: apt-get install redis-tools')
    what = ['-t', test] if isinstance(test, str) else ['-r', '100000', *test]
    out = subprocess.run(
        [
            exe,
            '-h',
            '127.0.0.1',
            '-p',
            str(port),
            '-n',
            str(requests),
            '-c',
            str(clients),
            '-P',
            str(pipeline),
            '--csv',
            '-q',
            *extra,
            *what,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # Some tests print a set-up row first ("LPUSH (needed to benchmark LRANGE)" before
    # "LRANGE_100 (first 100 elements)"): take the row named after the test.
    want = test.upper() if isinstance(test, str) else ''
    for line in out.splitlines():
        parts = [p.strip('"') for p in line.split('","')]
        if len(parts) >= 2 and parts[0] != 'test' and parts[0].startswith(want):
            return float(parts[1])
    raise RuntimeError(f'no result in redis-benchmark output: {out!r}')


def command(*args):
    parts = [b'*%d\r\n' % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        parts.append(b'$%d\r\n%s\r\n' % (len(a), a))
    return b''.join(parts)


def send_pipelined(port, commands, batch=10000):
    """Send RESP-encoded commands over one connection in batches and read all replies
    (each reply of these commands is one line: +OK, :n or -ERR)."""
    with socket.create_connection(('127.0.0.1', port)) as s:
        for i in range(0, len(commands), batch):
            chunk = commands[i : i + batch]
            s.sendall(b''.join(chunk))
            read_replies(s, len(chunk))


def read_replies(sock, want, errors_ok=True):
    """Read `want` one-line replies (+OK, :n, -ERR); with errors_ok=False an error reply
    fails the run."""
    buf = b''
    while buf.count(b'\r\n') < want:
        data = sock.recv(1 << 20)
        if not data:
            raise ConnectionError('server closed the connection')
        buf += data
    if not errors_ok and (buf.startswith(b'-') or b'\r\n-' in buf):
        raise RuntimeError(f'error reply: {buf[:200]!r}')


class ExpiredEvents(threading.Thread):
    """A raw-socket subscriber on __keyevent@0__:expired that calls `on_batch(time, keys)`
    with the keys of each read, timestamped on arrival."""

    def __init__(self, port, on_batch):
        super().__init__(daemon=True)
        self.on_batch = on_batch
        self.stopped = False
        self.sock = socket.create_connection(('127.0.0.1', port))
        self.sock.sendall(command(b'SUBSCRIBE', b'__keyevent@0__:expired'))
        self.reader = hiredis.Reader()
        while True:  # wait for the subscribe confirmation
            self.reader.feed(self.sock.recv(65536))
            reply = self.reader.gets()
            if reply is not False:
                break

    def run(self):
        self.sock.settimeout(0.2)
        while not self.stopped:
            try:
                data = self.sock.recv(1 << 20)
            except TimeoutError:
                continue
            except OSError:
                return
            if not data:
                return
            now = time.time()
            self.reader.feed(data)
            keys = []
            while True:
                msg = self.reader.gets()
                if msg is False:
                    break
                keys.append(msg[2])
            if keys:
                self.on_batch(now, keys)

    def stop(self):
        self.stopped = True
        self.sock.close()


def vm_rss_bytes(pid):
    """The process's resident set from /proc/<pid>/status (VmRSS), in bytes."""
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f'no VmRSS for pid {pid}')


class RssPeak(threading.Thread):
    """Samples a process's VmRSS every `period` seconds until stop(), which returns the
    peak; a peak between two samples is missed, so the period bounds what it can see."""

    def __init__(self, pid, period=0.05):
        super().__init__(daemon=True)
        self.pid = pid
        self.period = period
        self.peak = vm_rss_bytes(pid)
        self.samples = 1
        self.done = threading.Event()

    def run(self):
        while not self.done.wait(self.period):
            self.peak = max(self.peak, vm_rss_bytes(self.pid))
            self.samples += 1

    def stop(self):
        self.done.set()
        self.join()
        self.peak = max(self.peak, vm_rss_bytes(self.pid))
        return self.peak


def info(port, section='all'):
    """INFO <section> over a raw socket, as a dict of str to int, float or str."""
    with socket.create_connection(('127.0.0.1', port)) as s:
        s.sendall(command(b'INFO', section))
        reader = hiredis.Reader(encoding='utf-8')
        while (reply := reader.gets()) is False:
            reader.feed(s.recv(1 << 20))
    fields = {}
    for line in reply.splitlines():
        if ':' in line and not line.startswith('#'):
            name, value = line.split(':', 1)
            for kind in (int, float):
                try:
                    value = kind(value)
                    break
                except ValueError:
                    pass
            fields[name] = value
    return fields


def send_all(sock, commands, max_bytes=1 << 20):
    """Send an iterable of RESP-encoded commands over `sock` in pipelines of up to
    `max_bytes` and read every reply, whatever its shape (bulk, array, error), with
    hiredis; returns the number of error replies."""
    reader = hiredis.Reader()
    errors = 0

    def flush(chunk):
        nonlocal errors
        sock.sendall(b''.join(chunk))
        want = len(chunk)
        while want:
            reply = reader.gets()
            if reply is False:
                data = sock.recv(1 << 20)
                if not data:
                    raise ConnectionError('server closed the connection')
                reader.feed(data)
                continue
            errors += isinstance(reply, hiredis.ReplyError)
            want -= 1

    chunk, size = [], 0
    for cmd in commands:
        chunk.append(cmd)
        size += len(cmd)
        if size >= max_bytes:
            flush(chunk)
            chunk, size = [], 0
    if chunk:
        flush(chunk)
    return errors
