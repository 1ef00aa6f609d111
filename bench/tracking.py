"""Client-side caching benchmark (issue 15): CLIENT TRACKING, our server against
redis-server 7.0.15 in the same run, both started with `--bind 127.0.0.1 --save ''
--appendonly no` and nothing else (plus --maxclients when more clients are needed).

    .venv/bin/python bench/tracking.py [--quick] [--repeat 2] [--resp 3|2] [--wait 30]
        [--at REV | --root CHECKOUT]

Every measure starts a fresh server of each kind, and runs --repeat times with the servers
alternating, so that a noisy minute on this shared machine hits both. The client side is
one process (asyncio with uvloop, raw sockets, hiredis) apart from the servers. A tracking
client is, with --resp 3 (the default), one connection after HELLO 3 and CLIENT TRACKING
ON that receives `invalidate` push frames; with --resp 2, a connection with CLIENT
TRACKING ON REDIRECT <id> and the redirect connection SUBSCRIBEd to __redis__:invalidate.

1. Stale window. 100,000 background keys carry TTLs spread uniformly over 1 to 2 hours
   (so none expires during the run); 1,000 cached keys are SET with one shared deadline t
   (PXAT, 2 s ahead), then each of 10 tracking clients GETs all 1,000 (pipelined), which
   must all be answered before t. From then on nobody sends a command: the servers
   themselves must expire the keys. Each invalidation is timestamped (time.time()) when
   its bytes are read; the lag of a (client, key) is arrival - t. Reported per server: how
   many of the 10 x 1,000 invalidations arrived within --wait seconds after t (30 s; the
   wait ends early once all have), and p50/p99/max of their lags, pooled over the repeats.
   Also reported (medians of the runs): the server main thread's CPU time and its time
   waiting for a CPU on the run queue (/proc/<pid>/schedstat, ns counters) from 20 ms
   before t to the last arrival, which tell the server's work from the machine's other load.
   Target for ours: p99 <= 10 ms. redis-server invalidates when its expiry sampler happens
   to find a key (about 20 keys per 100 ms cycle while under 10 % of the sampled keys are
   expired), so most of its figures are the keys it found within the wait.
2. Invalidation fan-out. 100 keys; 1,000 tracking clients each GET all 100; one writer
   (no tracking) runs rounds: it sends 100 SETs, one per key, pipelined; each client counts
   the invalidated keys in the pushes it receives and, once it has all 100 of the round,
   re-reads them with one MGET of the 100 keys (so each stays tracked: this is the
   write/invalidate/re-read cycle of a client-side cache); the next round starts when
   every client has its MGET reply. So every SET invalidates the key for all 1,000
   clients, and a round is 100,000 key invalidations. Reported over --seconds of rounds
   (after a warm-up): key invalidations delivered per second (counted at the clients),
   invalidate messages per second (ours may list several keys in one message; Redis sends
   one per key), the server's CPU (/proc/<pid>/stat) per key invalidation, which includes
   its share of the re-reads (one MGET per 100 invalidations) and of the writer's SETs (one
   per 1,000), and the client process's CPU use (near 100 % means the client, not the
   server, bounded the rate). Target for ours: >= 0.5x redis-server's rate. Ours sends
   the invalidations of the 100 pipelined SETs to a client as one message of 100 keys where
   redis-server sends 100 messages, so the same is run with rounds of one SET (of each key
   in turn; each client re-reads that key with MGET): 1,000 invalidations a round, one
   message each on both servers.
3. BCAST prefixes. 10 clients each register 1,000 prefixes (CLIENT TRACKING ON BCAST
   PREFIX key:p<c>.<i>: ..., 10,000 in all, none overlapping) that no written key matches
   (the keys are key:<12 digits>, so the prefixes share `key:` with them); then
   redis-benchmark -c 50 -P 16 runs `SET key:__rand_int__ v` (-r 100000), sized from a
   short probe run to last about --seconds. Reported: writes per second and the server's
   CPU per write, with 10,000 prefixes (target for ours: >= 2x redis-server's rate) and
   with none (no tracking client at all) for reference.

Each figure in the tables is the median of the runs (all runs are in the JSON), except the
stale-window percentiles, computed over the lags of all runs together. --quick shrinks
every size (10,000 background keys, 100 fan-out clients, 1,000 prefixes, 5 s wait, one
run; about 30 s). Prints Markdown tables with issue 15's targets, writes the figures as
JSON to bench/results/, and ends with the command line that reproduces the run. --at REV
runs our server from `git archive REV` of this repository (a clean snapshot, unaffected by
uncommitted edits); --root from another checkout. Every server started here is stopped at
the end, on error too.
"""

import argparse
import asyncio
import json
import os
import random
import re
import resource
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import hiredis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    ROOT,
    ServerProc,
    command,
    git_state,
    info,
    percentiles,
    redis_benchmark,
    schedstat,
)

try:
    import uvloop
except ImportError:  # plain asyncio works, only slower
    uvloop = None

KINDS = ('ours', 'redis')
PUSH = hiredis.PushNotification  # a list subclass: replies are plain lists


_inbox = []  # (conn, time read, bytes) of this loop turn's reads, parsed after them


def _parse_inbox():
    reads = _inbox[:]
    _inbox.clear()
    for conn, now, data in reads:
        conn.parse(now, data)


class Conn(asyncio.Protocol):
    """A raw RESP connection. Replies are counted (and kept when `keep`); an invalidation
    (a RESP3 `invalidate` push, or a RESP2 `message` on __redis__:invalidate) goes to
    `on_push(now, keys)`, with `now` the time.time() at which its bytes were read and
    `keys` None for a flush. A read is only timestamped when it arrives; the loop turn's
    reads are parsed after all of them (`_parse_inbox`), so the time this process spends
    parsing one client's keys does not count as lag of the clients read after it."""

    def __init__(self, on_push=None, on_reply=None):
        self.reader = hiredis.Reader()
        self.on_push = on_push
        self.on_reply = on_reply
        self.pending = 0
        self.replies = []
        self.keep = True
        self.idle = None
        self.transport = None
        self.lost = None

    def connection_made(self, transport):
        self.transport = transport
        sock = transport.get_extra_info('socket')
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc):
        self.lost = exc or ConnectionError('server closed a benchmark connection')
        if self.idle is not None and not self.idle.done():
            self.idle.set_exception(self.lost)

    def data_received(self, data):
        if not _inbox:
            asyncio.get_running_loop().call_soon(_parse_inbox)
        _inbox.append((self, time.time(), data))

    def parse(self, now, data):
        self.reader.feed(data)
        while (reply := self.reader.gets()) is not False:
            if type(reply) is PUSH:  # RESP3: [invalidate, keys]
                if reply[0] != b'invalidate':
                    raise RuntimeError(f'unexpected push {reply!r:.100}')
                self.on_push(now, reply[1])
                continue
            if type(reply) is list and len(reply) == 3 and reply[0] == b'message':
                self.on_push(now, reply[2])  # RESP2 redirect: [message, channel, keys]
                continue
            self.pending -= 1
            if self.keep:
                self.replies.append(reply)
            if self.on_reply is not None:
                self.on_reply(reply)
            if self.pending == 0 and self.idle is not None and not self.idle.done():
                self.idle.set_result(None)

    def send(self, data, n):
        """Sends `data` holding `n` commands."""
        if self.lost:
            raise self.lost
        self.pending += n
        self.transport.write(data)

    async def wait(self):
        """Until every reply sent for has arrived."""
        if self.pending:
            self.idle = asyncio.get_running_loop().create_future()
            await self.idle
            self.idle = None

    async def call(self, *args):
        self.send(command(*args), 1)
        await self.wait()
        reply = self.replies.pop()
        if isinstance(reply, hiredis.ReplyError):
            raise RuntimeError(f'{args[:3]} answered {reply}')
        return reply

    def close(self):
        self.transport.close()


async def connect(port, **kw):
    loop = asyncio.get_running_loop()
    _, conn = await loop.create_connection(lambda: Conn(**kw), '127.0.0.1', port)
    return conn


async def tracking_client(port, resp, on_push, *tracking_args, on_reply=None):
    """A tracking client: (data connection, redirect connection or None)."""
    if resp == 3:
        conn = await connect(port, on_push=on_push, on_reply=on_reply)
        await conn.call('HELLO', '3')
        await conn.call('CLIENT', 'TRACKING', 'ON', *tracking_args)
        return conn, None
    sink = await connect(port, on_push=on_push)
    sink_id = await sink.call('CLIENT', 'ID')
    await sink.call('SUBSCRIBE', '__redis__:invalidate')
    conn = await connect(port, on_reply=on_reply)
    await conn.call('CLIENT', 'TRACKING', 'ON', 'REDIRECT', sink_id, *tracking_args)
    return conn, sink


def load(port, commands, batch=10000):
    """Sends RESP commands over one blocking socket in pipelines; every reply must be OK."""
    reader = hiredis.Reader()
    with socket.create_connection(('127.0.0.1', port)) as s:
        for i in range(0, len(commands), batch):
            chunk = commands[i : i + batch]
            s.sendall(b''.join(chunk))
            for _ in chunk:
                while (reply := reader.gets()) is False:
                    reader.feed(s.recv(1 << 20))
                if reply != b'OK':
                    raise RuntimeError(f'load: {reply!r}')


# 1. stale window ---------------------------------------------------------------------------


async def stale_window(srv, opts):
    rnd = random.Random(15)
    load(
        srv.port,
        [
            command(b'SET', b'bg:%d' % i, b'v', b'PX', rnd.randint(3_600_000, 7_200_000))
            for i in range(opts.background)
        ],
    )
    nkeys, nclients = opts.cached, opts.stale_clients
    keys = [b'cached:%d' % i for i in range(nkeys)]
    want = nkeys * nclients
    arrivals = [{} for _ in range(nclients)]
    spurious = [0]  # invalidations of keys not read, or null (flush) ones
    messages = [0]
    all_in = asyncio.get_running_loop().create_future()
    count = [0]

    def on_push_for(i):
        seen = arrivals[i]

        def on_push(now, got):
            messages[0] += 1
            if got is None:
                spurious[0] += 1
                return
            for key in got:
                if key in seen or not key.startswith(b'cached:'):
                    spurious[0] += 1
                    continue
                seen[key] = now
                count[0] += 1
            if count[0] >= want and not all_in.done():
                all_in.set_result(None)

        return on_push

    clients = [await tracking_client(srv.port, opts.resp, on_push_for(i)) for i in range(nclients)]
    t_ms = int(time.time() * 1000) + opts.lead_ms
    load(srv.port, [command(b'SET', k, b'v', b'PXAT', t_ms) for k in keys])
    gets = b''.join(command(b'GET', k) for k in keys)
    for conn, _ in clients:
        conn.replies.clear()
        conn.send(gets, nkeys)
    for conn, _ in clients:
        await conn.wait()
    read_by = time.time()
    if read_by * 1000 >= t_ms:
        raise RuntimeError(
            f'the reads ended {read_by * 1000 - t_ms:.0f} ms after t: raise --lead-ms'
        )
    for conn, _ in clients:
        if any(r != b'v' for r in conn.replies):
            raise RuntimeError('a cached key was missing when read')
        conn.replies.clear()
    early = count[0]
    await asyncio.sleep(max(0.0, t_ms / 1000 - 0.02 - time.time()))
    cpu0, wait0 = schedstat(srv.proc.pid)  # 20 ms before t: the idle wait not counted
    try:
        await asyncio.wait_for(all_in, max(0.0, t_ms / 1000 + opts.wait - time.time()))
    except TimeoutError:
        pass
    cpu1, wait1 = schedstat(srv.proc.pid)
    lags = [now - t_ms / 1000 for seen in arrivals for now in seen.values()]
    for conn, sink in clients:
        conn.close()
        if sink is not None:
            sink.close()
    return {
        'wanted': want,
        'delivered': len(lags),
        'before_deadline': early + sum(lag < 0 for lag in lags),
        'spurious': spurious[0],
        'reads_done_before_t_ms': t_ms - read_by * 1000,
        'deadline_ms': t_ms,  # t, to line the server's own timings up with the arrivals
        'messages': messages[0],
        # the server's main thread from t - 20 ms to the last arrival (or the wait's end)
        'server_cpu_ms': (cpu1 - cpu0) * 1000,
        'server_runqueue_wait_ms': (wait1 - wait0) * 1000,
        'lags_ms': [round(lag * 1000, 3) for lag in sorted(lags)],
    }


# 2. invalidation fan-out -------------------------------------------------------------------


async def fanout(srv, opts, per_round):
    """Rounds of `per_round` SETs (pipelined) of the tracked keys, in turn."""
    nkeys, nclients = opts.fanout_keys, opts.fanout_clients
    keys = [b'k:%d' % i for i in range(nkeys)]
    load(srv.port, [command(b'SET', k, b'v') for k in keys])
    mget = command(b'MGET', *keys)
    sets = [
        b''.join(command(b'SET', k, b'v') for k in keys[i : i + per_round])
        for i in range(0, nkeys, per_round)
    ]
    loop = asyncio.get_running_loop()
    state = {'ready': 0, 'keys': 0, 'messages': 0, 'done': None}
    clients = []

    def fail(why):  # an error in a protocol callback would only be logged
        if state['done'] is not None and not state['done'].done():
            state['done'].set_exception(RuntimeError(why))

    def make(i):
        got = []

        def on_push(now, inv):
            if inv is None:
                return fail(f'client {i}: a null invalidation')
            got.extend(inv)
            state['keys'] += len(inv)
            state['messages'] += 1
            if len(got) == per_round:  # the whole round: re-read, which tracks them again
                clients[i][0].send(mget if per_round == nkeys else command(b'MGET', *got), 1)
                got.clear()
            elif len(got) > per_round:
                fail(f'client {i}: more invalidations than keys in a round')

        def on_reply(reply):
            if type(reply) is not list or len(reply) != per_round:
                return fail(f'client {i}: MGET answered {reply!r:.100}')
            state['ready'] += 1
            if state['ready'] == nclients:
                state['done'].set_result(None)

        return on_push, on_reply

    for i in range(nclients):
        on_push, on_reply = make(i)
        conn, sink = await tracking_client(srv.port, opts.resp, on_push)
        conn.keep = False
        conn.send(mget, 1)  # the first read, before on_reply counts rounds
        await conn.wait()
        conn.on_reply = on_reply
        clients.append((conn, sink))
    writer = await connect(srv.port)
    writer.keep = False

    async def rounds(until):
        n = 0
        while True:
            state['ready'] = 0
            state['done'] = loop.create_future()
            writer.send(sets[n % len(sets)], per_round)
            await asyncio.wait_for(state['done'], 60)
            n += 1
            if time.perf_counter() >= until:
                return n

    await rounds(time.perf_counter() + opts.warmup)
    k0, m0 = state['keys'], state['messages']
    c0, p0, t0 = srv.cpu_seconds(), time.process_time(), time.perf_counter()
    n = await rounds(t0 + opts.seconds)
    c1, p1, t1 = srv.cpu_seconds(), time.process_time(), time.perf_counter()
    invalidations, messages = state['keys'] - k0, state['messages'] - m0
    if invalidations != n * per_round * nclients:
        raise RuntimeError(f'{invalidations} invalidations in {n} rounds')
    await writer.wait()
    for conn, sink in clients:
        conn.close()
        if sink is not None:
            sink.close()
    writer.close()
    return {
        'keys_per_round': per_round,
        'rounds': n,
        'seconds': t1 - t0,
        'invalidations_per_s': invalidations / (t1 - t0),
        'messages_per_s': messages / (t1 - t0),
        'keys_per_message': invalidations / max(messages, 1),
        'server_cpu_us_per_invalidation': (c1 - c0) / invalidations * 1e6,
        'server_cpu_busy': (c1 - c0) / (t1 - t0),
        'client_cpu_busy': (p1 - p0) / (t1 - t0),
    }


# 3. BCAST with non-matching prefixes -------------------------------------------------------


def bcast(srv, opts, nprefixes):
    holders = []
    reader = hiredis.Reader()
    per = opts.prefixes_per_client
    for c in range(0, nprefixes // per):
        s = socket.create_connection(('127.0.0.1', srv.port))
        prefixes = [a for i in range(per) for a in (b'PREFIX', b'key:p%d.%d:' % (c, i))]
        s.sendall(
            command(b'HELLO', b'3') + command(b'CLIENT', b'TRACKING', b'ON', b'BCAST', *prefixes)
        )
        for _ in range(2):
            while (reply := reader.gets()) is False:
                reader.feed(s.recv(1 << 20))
            if isinstance(reply, hiredis.ReplyError):
                raise RuntimeError(f'CLIENT TRACKING BCAST: {reply}')
        holders.append(s)
    registered = info(srv.port).get('tracking_total_prefixes')
    if registered is not None and registered != nprefixes:
        raise RuntimeError(f'tracking_total_prefixes {registered}, wanted {nprefixes}')
    test = ['SET', 'key:__rand_int__', 'v']
    # a short probe run sizes the measured one (redis-server does ~1,000 SETs/s with 10,000
    # prefixes here, hundreds of times fewer than without)
    probe_n = opts.bcast_probe[bool(nprefixes)]
    probe = redis_benchmark(srv.port, test, probe_n, 50, 16)
    n = max(probe_n, int(probe * opts.seconds))
    c0 = srv.cpu_seconds()
    rps = redis_benchmark(srv.port, test, n, 50, 16)
    cpu = srv.cpu_seconds() - c0
    for s in holders:
        s.settimeout(0)
        try:
            if s.recv(1 << 16):
                raise RuntimeError('a BCAST client got an invalidation for a non-matching key')
        except BlockingIOError:
            pass
    if holders:  # the prefixes were in force: a matching key is announced
        last = len(holders) - 1
        key = b'key:p%d.%d:x' % (last, per - 1)
        load(srv.port, [command(b'SET', key, b'v')])
        holders[last].settimeout(10)
        while (reply := reader.gets()) is False:
            reader.feed(holders[last].recv(1 << 16))
        if reply != [b'invalidate', [key]]:
            raise RuntimeError(f'SET {key!r} announced as {reply!r:.100}')
    for s in holders:
        s.close()
    return {
        'prefixes': nprefixes,
        'registered': registered,
        'requests': n,
        'writes_per_s': rps,
        'server_cpu_us_per_write': cpu / n * 1e6,
    }


# driver ------------------------------------------------------------------------------------


def run_measure(name, fn, opts, servers_args=()):
    """Runs `fn(srv)` --repeat times on a fresh server of each kind, alternating."""
    runs = {kind: [] for kind in opts.servers}
    for r in range(opts.repeat):
        for kind in opts.servers:
            root = OURS_ROOT if kind == 'ours' else ROOT
            with ServerProc(kind, *servers_args, root=root) as srv:
                res = fn(srv)
            runs[kind].append(res)
            brief = {k: v for k, v in res.items() if k != 'lags_ms'}
            print(f'  {name} run {r + 1} {kind}: {brief}', file=sys.stderr, flush=True)
    return runs


def median_of(runs, kind, field):
    if kind not in runs:
        return None
    return statistics.median(run[field] for run in runs[kind])


def fmt(x):
    if x is None:
        return '-'
    return f'{x:,.0f}' if abs(x) >= 100 else f'{x:.3f}' if abs(x) < 1 else f'{x:.2f}'


NAMES = {'ours': 'ours', 'redis': 'redis-server 7.0.15'}


def tables(res, opts):
    out = []
    if 'stale_window' in res:
        out.append(
            f'Stale window: {opts.cached:,} cached keys sharing one deadline, '
            f'{opts.background:,} background keys with TTLs of 1-2 h, {opts.stale_clients} '
            f'tracking clients (RESP{opts.resp}) each reading every cached key; lag = arrival '
            f'of the invalidation - deadline, over {opts.repeat} run(s), waiting at most '
            f'{opts.wait:g} s.'
        )
        out.append('')
        out.append(
            '| server | delivered within the wait | p50 ms | p99 ms | max ms | '
            'server CPU ms | server run-queue wait ms | target |'
        )
        out.append('|---|---:|---:|---:|---:|---:|---:|---|')
        for kind in opts.servers:
            runs = res['stale_window'][kind]
            p = percentiles([lag / 1000 for run in runs for lag in run['lags_ms']])
            wanted = sum(run['wanted'] for run in runs)
            target = ''
            if kind == 'ours':
                ok = p['n'] == wanted and p['p99_ms'] is not None and p['p99_ms'] <= 10
                target = f'p99 <= 10 ms: {"met" if ok else "NOT met"}'
            out.append(
                f'| {NAMES[kind]} | {p["n"]:,}/{wanted:,} ({p["n"] / wanted:.1%}) | '
                f'{fmt(p["p50_ms"])} | {fmt(p["p99_ms"])} | {fmt(p["max_ms"])} | '
                f'{fmt(statistics.median(run["server_cpu_ms"] for run in runs))} | '
                f'{fmt(statistics.median(run["server_runqueue_wait_ms"] for run in runs))} | '
                f'{target} |'
            )
            res['stale_window'][f'{kind}_summary'] = {**p, 'wanted': wanted}
        out.append('')
    rows = []
    for per_round, runs in res.get('fanout', {}).items():
        label = (
            f'fan-out to {opts.fanout_clients:,} clients x {opts.fanout_keys} keys, '
            f'{per_round} SET(s) a round'
        )
        for field, metric, target in (
            ('invalidations_per_s', 'key invalidations delivered/s', 0.5),
            ('messages_per_s', 'invalidate messages/s', None),
            ('server_cpu_us_per_invalidation', 'server CPU us/invalidation', None),
            ('server_cpu_busy', 'server CPU busy', None),
            ('client_cpu_busy', 'client process CPU busy', None),
        ):
            o, r = (median_of(runs, kind, field) for kind in KINDS)
            rows.append((label, metric, o, r, target))
    if 'bcast' in res:
        for n, runs in res['bcast'].items():
            label = f'BCAST, {int(n):,} non-matching prefixes'
            o, r = (median_of(runs, kind, 'writes_per_s') for kind in KINDS)
            rows.append((label, 'SET/s (-c 50 -P 16)', o, r, 2.0 if int(n) else None))
            o, r = (median_of(runs, kind, 'server_cpu_us_per_write') for kind in KINDS)
            rows.append((label, 'server CPU us/SET', o, r, None))
    if rows:
        out.append(
            f'Fan-out: rounds of {opts.fanout_keys} pipelined SETs (or 1 SET) by the writer, '
            f'each client re-reading the round\'s keys with one MGET once it has their '
            f'invalidations (RESP{opts.resp}). BCAST: prefixes registered by clients of '
            f'{opts.prefixes_per_client:,} each, keys key:<12 digits>. Medians of '
            f'{opts.repeat} run(s).'
        )
        out.append('')
        out.append('| scenario | metric | ours | redis-server | ours/redis | target |')
        out.append('|---|---|---:|---:|---:|---|')
    for label, metric, o, r, target in rows:
        ratio = o / r if o is not None and r else None
        t = ''
        if target is not None and ratio is not None:
            t = f'>= {target:g}x: {"met" if ratio >= target else "NOT met"}'
        if 'busy' in metric:
            o_s, r_s = (f'{x:.0%}' if x is not None else '-' for x in (o, r))
        else:
            o_s, r_s = fmt(o), fmt(r)
        ratio_s = f'{ratio:.2f}x' if ratio is not None else '-'
        out.append(f'| {label} | {metric} | {o_s} | {r_s} | {ratio_s} | {t} |')
    return '\n'.join(out)


def dump_json(res):
    """Indented JSON with each list of numbers (the lags) on one line."""
    text = json.dumps(res, indent=1)
    return re.sub(
        r'\[\s+([-\d.e,\s]+?)\s+\]', lambda m: '[' + ' '.join(m.group(1).split()) + ']', text
    )


OURS_ROOT = ROOT


def main():
    global OURS_ROOT
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--quick', action='store_true', help='small sizes, one run, ~30 s')
    ap.add_argument('--repeat', type=int, default=None, help='runs per server (2; quick 1)')
    ap.add_argument('--resp', type=int, choices=(2, 3), default=3)
    ap.add_argument('--wait', type=float, default=None, help='stale window cap, s (30; quick 5)')
    ap.add_argument('--seconds', type=float, default=None, help='per timed run (3; quick 1)')
    ap.add_argument('--at', help='run our server from `git archive AT` of this repository')
    ap.add_argument('--root', help='run our server from this checkout')
    ap.add_argument('--only', default='stale,fanout,bcast', help='measures to run')
    ap.add_argument('--servers', default='ours,redis', help='for trying the script out')
    opts = ap.parse_args()
    q = opts.quick
    opts.repeat = opts.repeat or (1 if q else 2)
    opts.wait = opts.wait if opts.wait is not None else (5.0 if q else 30.0)
    opts.seconds = opts.seconds or (1.0 if q else 3.0)
    opts.background = 10_000 if q else 100_000
    opts.cached = 1_000
    opts.stale_clients = 10
    opts.lead_ms = 2000
    opts.fanout_keys = 100
    opts.fanout_clients = 100 if q else 1_000
    opts.warmup = 0.3 if q else 1.0
    opts.prefixes = 1_000 if q else 10_000
    opts.prefixes_per_client = 100 if q else 1_000
    opts.bcast_probe = (5_000, 400) if q else (20_000, 800)  # without, with prefixes
    only = set(opts.only.split(','))
    opts.servers = opts.servers.split(',')

    need = opts.fanout_clients * 2 + 200
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, need), hard))
    snapshot = None
    if opts.at:
        snapshot = tempfile.mkdtemp(prefix='tracking-bench-')
        archive = subprocess.run(
            ['git', '-C', ROOT, 'archive', opts.at], capture_output=True, check=True
        )
        subprocess.run(['tar', '-x', '-C', snapshot], input=archive.stdout, check=True)
        OURS_ROOT = snapshot
        ours_at = git_state(ROOT, opts.at)
    elif opts.root:
        OURS_ROOT = os.path.abspath(opts.root)
        ours_at = git_state(OURS_ROOT)
    else:
        ours_at = git_state(ROOT)
    res = {
        'args': {k: v for k, v in vars(opts).items()},
        'started': time.strftime('%Y-%m-%dT%H:%M:%S'),
        'ours_at': ours_at,
        'cpus': os.cpu_count(),
        'loadavg_at_start': os.getloadavg(),
    }
    run = uvloop.run if uvloop else asyncio.run
    maxclients = ('--maxclients', str(need))
    try:
        if 'stale' in only:
            res['stale_window'] = run_measure(
                'stale window', lambda srv: run(stale_window(srv, opts)), opts
            )
        if 'fanout' in only:
            res['fanout'] = {
                str(k): run_measure(
                    f'fan-out {k} SETs a round',
                    lambda srv, k=k: run(fanout(srv, opts, k)),
                    opts,
                    maxclients,
                )
                for k in (opts.fanout_keys, 1)
            }
        if 'bcast' in only:
            res['bcast'] = {
                str(n): run_measure(
                    f'BCAST {n} prefixes', lambda srv, n=n: bcast(srv, opts, n), opts
                )
                for n in (0, opts.prefixes)
            }
    finally:
        if snapshot:
            shutil.rmtree(snapshot, ignore_errors=True)
    res['loadavg_at_end'] = os.getloadavg()
    out = tables(res, opts)
    la = ', '.join(f'{x:.2f}' for x in res['loadavg_at_start'])
    print(f'ours at {ours_at}; CPUs: {os.cpu_count()}; load at start {la}')
    print()
    print(out)
    print()
    os.makedirs(os.path.join(ROOT, 'bench', 'results'), exist_ok=True)
    path = os.path.join(ROOT, 'bench', 'results', f'tracking-{int(time.time())}.json')
    with open(path, 'w') as f:
        f.write(dump_json(res))
    script = os.path.relpath(os.path.abspath(__file__), ROOT)
    exe = os.path.relpath(sys.executable, ROOT) if sys.executable.startswith(ROOT) else 'python'
    argv = [exe, script, '--repeat', str(opts.repeat), '--resp', str(opts.resp)]
    argv += ['--wait', f'{opts.wait:g}', '--seconds', f'{opts.seconds:g}'] + ['--quick'] * q
    argv += ['--at', ours_at] if opts.at else ['--root', opts.root] if opts.root else []
    print(f'results: {os.path.relpath(path, ROOT)}')
    print('reproduce (from the repository root): ' + shlex.join(argv))


if __name__ == '__main__':
    main()
