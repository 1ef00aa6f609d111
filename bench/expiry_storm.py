"""Mass expiry: 1,000,000 keys share one deadline; how fast are they all announced, and
what does a concurrent client's GET latency look like meanwhile?

    .venv/bin/python bench/expiry_storm.py [--keys 1000000] [--wait 60]

Per server (ours, then redis-server, both with notify-keyspace-events Ex): load the keys
with `SET storm:i v PXAT t`, count `__keyevent@0__:expired` events on a subscriber, and run
a client doing GET in a loop from 1 s before t until the last event. Reports the time from
t to the last event, events delivered, and the GET latency p50/p99/max during the storm.
"""

import argparse
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ExpiredEvents, ServerProc, command, send_pipelined  # noqa: E402
from expiry_lag import percentile  # noqa: E402


class Counter:
    """Counts expired events and remembers when the last one arrived."""

    def __init__(self, port):
        self.count = 0
        self.last = None
        self.events = ExpiredEvents(port, self.on_batch)
        self.events.start()

    def on_batch(self, now, keys):
        self.count += len(keys)
        self.last = now


class Getter(threading.Thread):
    def __init__(self, port, start_at):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(('127.0.0.1', port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.start_at = start_at
        self.samples = []  # (time, latency ms)
        self.stopped = False

    def run(self):
        req = command(b'GET', b'steady')
        while time.time() < self.start_at:
            time.sleep(0.01)
        while not self.stopped:
            t0 = time.perf_counter()
            self.sock.sendall(req)
            buf = b''
            while not buf.endswith(b'\r\n') or buf.count(b'\r\n') < 2:
                buf += self.sock.recv(4096)
            self.samples.append((time.time(), (time.perf_counter() - t0) * 1000))
            time.sleep(0.001)


def run_one(kind, nkeys, wait):
    with ServerProc(kind, '--notify-keyspace-events', 'Ex') as srv:
        send_pipelined(srv.port, [command(b'SET', b'steady', b'x')])
        t0 = time.time()
        # Deadline: after the load (estimated from a first slice) plus a margin.
        counter = Counter(srv.port)
        t = int((t0 + 5 + nkeys / 100000) * 1000)
        send_pipelined(
            srv.port, [command(b'SET', b'storm:%d' % i, b'v', b'PXAT', t) for i in range(nkeys)]
        )
        if time.time() * 1000 > t - 500:
            raise RuntimeError('load took longer than the deadline margin')
        getter = Getter(srv.port, t / 1000 - 1)
        getter.start()
        end = t / 1000 + wait
        while time.time() < end and counter.count < nkeys:
            time.sleep(0.05)
        done = counter.last or time.time()
        getter.stopped = True
        counter.events.stop()
        getter.join(2)
        storm = [lat for ts, lat in getter.samples if t / 1000 <= ts <= done]
        return (
            counter.count,
            (done - t / 1000) if counter.count else float('nan'),
            percentile(storm, 50),
            percentile(storm, 99),
            max(storm, default=0),
            len(storm),
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--keys', type=int, default=1000000)
    ap.add_argument('--wait', type=float, default=60)
    ap.add_argument('--servers', default='ours,redis')
    args = ap.parse_args()
    print(
        '| server | keys | announced | seconds to last event | GET p50 ms | GET p99 ms '
        '| GET max ms | GETs during storm |'
    )
    print('|---|---|---|---|---|---|---|---|')
    for kind in args.servers.split(','):
        n, secs, p50, p99, mx, gets = run_one(kind, args.keys, args.wait)
        print(
            f'| {kind} | {args.keys} | {n} | {secs:.2f} | {p50:.2f} | {p99:.2f} | '
            f'{mx:.2f} | {gets} |',
            flush=True,
        )


if __name__ == '__main__':
    main()
