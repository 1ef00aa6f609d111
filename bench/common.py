"""Shared benchmark plumbing: start our server and redis-server side by side, read their
CPU time and RSS from /proc, run redis-benchmark, load keys quickly over a raw socket.

Both servers run on this machine in the same run, so the ratios between them mean
something even on a noisy shared machine; absolute numbers do not.
"""

import multiprocessing
import os
import queue
import shlex
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


def reproduce(script, *args):
    """Print the command line that runs `script` (a bench file's __file__) with `args`
    again, from the repository root."""
    path = os.path.relpath(os.path.abspath(script), ROOT)
    exe = os.path.relpath(sys.executable, ROOT) if sys.executable.startswith(ROOT) else 'python'
    print('reproduce (from the repository root): ' + shlex.join([exe, path, *map(str, args)]))


def git_state(root, rev=None):
    """The commit a checkout is at, for a results file (never its path, which is this
    machine's): `rev` resolved, else HEAD with a count of uncommitted files."""

    def git(*args):
        return subprocess.run(
            ['git', '-C', root, *args], capture_output=True, text=True
        ).stdout.strip()

    if rev is not None:
        return git('rev-parse', '--short', rev)
    head = git('rev-parse', '--short', 'HEAD')
    if not head:  # a copy made with git archive, say
        return 'not a git checkout'
    dirty = [line for line in git('status', '--porcelain').splitlines() if line.strip()]
    return f'{head} (+{len(dirty)} uncommitted files)' if dirty else head


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
            with socket.create_connection(('127.0.0.1', port), timeout=0.5) as s:
                if s.getsockname() != s.getpeername():  # not a TCP self-connect
                    return
        except OSError:
            pass
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


def percentiles(lats):
    """p50, p99 and max of latencies in seconds, as milliseconds (None when empty)."""
    if not lats:
        return {'n': 0, 'p50_ms': None, 'p99_ms': None, 'max_ms': None}
    s = sorted(lats)
    pick = lambda q: s[min(len(s) - 1, int(q * len(s)))] * 1000  # noqa: E731
    return {'n': len(s), 'p50_ms': pick(0.5), 'p99_ms': pick(0.99), 'max_ms': s[-1] * 1000}


def _ping_loop(port, interval, stop, out):
    """PingProbe's process: one PING at a time, `interval` apart; puts the samples on
    `out` once `stop` is set, as a flat list (send time, latency, send time, ...)."""
    samples = []
    reader = hiredis.Reader()
    ping = command(b'PING')
    with socket.create_connection(('127.0.0.1', port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.settimeout(120)  # a server stalled longer than this is a failed run anyway
        while not stop.is_set():
            t = time.time()
            t0 = time.perf_counter()
            s.sendall(ping)
            while (reply := reader.gets()) is False:
                data = s.recv(65536)
                if not data:
                    raise ConnectionError('server closed the PING connection')
                reader.feed(data)
            samples += (t, time.perf_counter() - t0)
            if reply != b'PONG':
                raise RuntimeError(f'PING answered {reply!r}')
            if interval:
                time.sleep(interval)
    out.put(samples)


class PingProbe:
    """An interactive client: PINGs one at a time, `interval` seconds apart, from its own
    process (so that the GIL of the process generating the load never delays it), and
    records when each PING was sent and how long its reply took. window(t0, t1) gives the
    latencies of the PINGs that were in flight at some point between t0 and t1 (time.time()
    values): a PING sent before a stall began and answered after it counts."""

    def __init__(self, port, interval=0.001):
        ctx = multiprocessing.get_context('spawn')
        self.stop_event, self.out = ctx.Event(), ctx.Queue()
        self.proc = ctx.Process(
            target=_ping_loop, args=(port, interval, self.stop_event, self.out), daemon=True
        )
        self.proc.start()
        self.samples = None

    def stop(self):
        """Stops the probe and returns its samples as (send time, latency) pairs."""
        self.stop_event.set()
        try:
            while True:  # the samples, or the probe's death (its error is on stderr)
                try:
                    flat = self.out.get(timeout=1)
                    break
                except queue.Empty:
                    if not self.proc.is_alive():
                        raise RuntimeError('the PING probe died') from None
        finally:
            self.proc.join(5)
            if self.proc.is_alive():
                self.proc.kill()
        self.samples = list(zip(flat[0::2], flat[1::2]))
        return self.samples

    def window(self, t0, t1):
        return [lat for t, lat in self.samples if t <= t1 and t + lat >= t0]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.samples is None:
            self.stop_event.set()
            self.proc.join(5)
            if self.proc.is_alive():
                self.proc.kill()


def schedstat(pid):
    """(seconds on a CPU, seconds waiting on a run queue) of the process's main thread, from
    /proc/<pid>/schedstat: nanosecond counters, where /proc/<pid>/stat counts in 10 ms ticks;
    the wait says how much of a latency was the machine's other load, not the server."""
    with open(f'/proc/{pid}/schedstat') as f:
        on_cpu, waiting = f.read().split()[:2]
    return int(on_cpu) / 1e9, int(waiting) / 1e9
