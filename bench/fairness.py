"""Fairness benchmark (issue 13): how long an interactive client waits while another client
does something heavy, our server against redis-server 7.0.15 in the same run, both
started with `--bind 127.0.0.1 --save '' --appendonly no` and nothing else.

    .venv/bin/python bench/fairness.py [--quick] [--repeat 3] [--keys 1000000]
        [--value-mb 256] [--root CHECKOUT] [--phases scan,keys,...]

An interactive client (bench/common.py PingProbe: its own process, one PING at a time,
1 ms apart) runs throughout; for each phase below, its PING latency p50/p99/max over the
PINGs in flight at some point of the phase is reported. Each server in turn, in this order:

  (b)  one MSET of 1,000,001 one-byte arguments (`MSET k v k v ...`, 7 MB: issue 13's
       probe, where the cost is the arguments, not the keyspace) on the empty server;
       phase: from its first byte sent to its reply, plus 0.5 s;
  (b') one MSET of 1,000,001 arguments again, now 500,000 distinct new keys of 1 to 5 hex
       digits with one-byte values (8.5 MB), on the empty server (after DEL k): the
       arguments and 500,000 insertions into a growing hash table; the same phase;
  then the other 500,000 keys are loaded by pipelined MSETs of 1,000 pairs;
  baseline: nothing else runs (1,000,000 keys loaded), for 2 s;
  (a)  another client pipelines 1,000,000 GETs (23 MB) without reading any reply, then
       closes: it sends until everything is sent or the server has taken nothing for 1 s
       (a server that stops reading a client whose replies pile up), or 20 s at most;
       phase: from its first byte to 1 s after the close; the server's peak VmRSS growth
       (sampled every 10 ms) is reported too;
  (a') the same with 1,000,000 GETs of one key holding a 100-byte value (SET before, DEL
       after): 102 MB of replies, which redis-server buffers (no output-buffer limit for
       normal clients by default) and a server with backpressure stops reading for;
  (c)  KEYS * over the 1,000,000 keys; its time to the first byte of the reply (the command
       itself) and to the last (with the reply's transfer) are reported too; phase: from
       sending it to the end of the reply, plus 0.5 s;
  (c') a full SCAN of the 1,000,000 keys with the default COUNT (10): one client sends
       SCAN from cursor 0 until the cursor comes back 0, one call at a time (the next
       once the reply is in, as clients iterate); the walk's time, its number of calls,
       and the server's CPU time during it (from /proc: less noisy than the time on a
       shared machine) are reported, and the keys returned are checked (each of the
       1,000,000 at least once); phase: the walk, plus 0.5 s;
  (c'') the same with COUNT 1000;
  (d)  FLUSHALL ASYNC; phase: from sending it until 1 s after INFO's
       lazyfree_pending_objects reads 0 (polled every 20 ms, at most 30 s), and at least
       3 s after its reply (a server may free in steps without saying so in INFO);

then (e): a fresh server of each kind, one SET of a 256 MB value; its VmRSS is sampled
every 5 ms, and the peak growth over the RSS before the SET is reported, with the growth
left once it is done.

Everything above runs --repeat times (3), the servers alternating, and each figure is the
median of the runs (all of them are in the JSON). --phases runs only the phases named
(mset, mset_keys, baseline, gets, gets_big, keys, scan, scan_1000, flush, big_set), for
iterating on one of them: without the MSET phases all the keys are loaded by pipelined MSETs,
and `--phases scan,scan_1000` is a SCAN-only run. --quick divides every count by 10, uses a
32 MB value and runs once (a smoke run, < 1 minute). --root runs our server from another
checkout (a copy of an older commit: the before of a before/after pair). Prints a Markdown
table with issue 13's targets, writes the figures as JSON to bench/results/, and ends with
the command line that reproduces the run. Every server started here is stopped at the end,
on error too.
"""

import argparse
import json
import os
import shlex
import socket
import statistics
import sys
import time

import hiredis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    ROOT,
    PingProbe,
    RssPeak,
    ServerProc,
    command,
    git_state,
    info,
    percentiles,
    send_all,
    vm_rss_bytes,
)

KINDS = ('ours', 'redis')
MB = 1 << 20
OURS_ROOT = ROOT  # --root: run our server from another checkout (a before/after pair)
PING_INTERVAL = 0.001
BASELINE_S = 2.0
TAIL_S = 0.5  # after a phase's last reply: a stall that follows it (freeing) still counts
CLOSE_TAIL_S = 1.0  # after (a)'s close: the server frees what it queued for that client
STUCK_S = 1.0  # (a): the server read nothing for this long: it stopped reading the client
SEND_CAP_S = 20.0
GET_VALUE = 100  # (a'): the value each GET fetches
FLUSH_MIN_S = 3.0  # (d)'s phase lasts at least this long: a server may free in steps
# the phases in table order (big_set, (e), last); --phases picks some
PHASES = ('baseline', 'gets', 'gets_big', 'mset', 'mset_keys', 'keys', 'scan', 'scan_1000')
PHASES += ('flush', 'big_set')


def start(kind, *args):
    """A server with the options both kinds share (ServerProc gives redis-server the bind,
    `--save ''` and `--appendonly no`, and ours `--save ''`)."""
    extra = ('--bind', '127.0.0.1', '--appendonly', 'no') if kind == 'ours' else ()
    return ServerProc(kind, *extra, *args, root=OURS_ROOT)


def key(i):
    return b'%x' % i


def read_reply(sock, reader, first=None):
    """The next reply on `sock`; `first`, when given, is a list that receives the time the
    first byte of it arrived."""
    while (reply := reader.gets()) is False:
        data = sock.recv(4 * MB)
        if not data:
            raise ConnectionError('server closed the connection')
        if first is not None and not first:
            first.append(time.time())
        reader.feed(data)
    return reply


def call(port, *args):
    with socket.create_connection(('127.0.0.1', port)) as s:
        s.sendall(command(*args))
        return read_reply(s, hiredis.Reader())


# -- phases: each returns its figures and the window (time.time() at start and end) ------


def phase_baseline(port, seconds):
    t0 = time.time()
    time.sleep(seconds)
    return {}, (t0, time.time())


def phase_mset(port, payload, nargs):
    """One MSET of `nargs` arguments in one sendall; the time to its reply."""
    with socket.create_connection(('127.0.0.1', port)) as s:
        t0 = time.time()
        s.sendall(payload)
        reply = read_reply(s, hiredis.Reader())
        t1 = time.time()
    if reply != b'OK':
        raise RuntimeError(f'MSET answered {reply!r}')
    time.sleep(TAIL_S)
    return {'args': nargs, 'bytes': len(payload), 'reply_s': t1 - t0}, (t0, t1 + TAIL_S)


def phase_unread_gets(port, payload, ncommands, pid):
    """Pipelines the GETs and never reads a reply; closes once everything is sent or the
    server has taken nothing for STUCK_S. The server's VmRSS is sampled meanwhile: what it
    holds for a client that does not read."""
    sampler = RssPeak(pid, period=0.01)
    pre = sampler.peak
    sampler.start()
    s = socket.create_connection(('127.0.0.1', port))
    s.settimeout(STUCK_S)
    view = memoryview(payload)
    sent, stuck = 0, False
    t0 = time.time()
    try:
        while sent < len(view) and time.time() - t0 < SEND_CAP_S:
            sent += s.send(view[sent : sent + MB])
    except TimeoutError:
        stuck = True
    t_sent = time.time()
    s.close()
    time.sleep(CLOSE_TAIL_S)
    peak = sampler.stop()
    figures = {
        'peak_rss_growth': peak - pre,
        'commands': ncommands,
        'bytes': len(payload),
        'sent_bytes': sent,
        'stuck': stuck,
        'send_s': t_sent - t0 - (STUCK_S if stuck else 0),
    }
    return figures, (t0, t_sent + CLOSE_TAIL_S)


def phase_keys(port, nkeys):
    reader = hiredis.Reader()
    first = []
    with socket.create_connection(('127.0.0.1', port)) as s:
        t0 = time.time()
        s.sendall(command(b'KEYS', b'*'))
        reply = read_reply(s, reader, first)
        t1 = time.time()
    if len(reply) != nkeys:
        raise RuntimeError(f'KEYS * gave {len(reply)} keys, want {nkeys}')
    del reply
    time.sleep(TAIL_S)
    return {'first_byte_s': first[0] - t0, 'reply_s': t1 - t0}, (t0, t1 + TAIL_S)


def phase_scan(port, nkeys, count, pid):
    """A full SCAN walk, one call at a time; COUNT sent only when not the default."""
    reader = hiredis.Reader()
    opts = () if count == 10 else (b'COUNT', b'%d' % count)
    seen = set()
    calls, returned = 0, 0
    with socket.create_connection(('127.0.0.1', port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        cpu0 = cpu_seconds(pid)
        t0 = time.time()
        cursor = b'0'
        while True:
            s.sendall(command(b'SCAN', cursor, *opts))
            cursor, batch = read_reply(s, reader)
            calls += 1
            returned += len(batch)
            seen.update(batch)
            if cursor == b'0':
                break
        t1 = time.time()
        cpu = cpu_seconds(pid) - cpu0
    if len(seen) != nkeys:
        raise RuntimeError(f'SCAN COUNT {count} returned {len(seen)} distinct keys, want {nkeys}')
    del seen
    time.sleep(TAIL_S)
    figures = {'count': count, 'calls': calls, 'returned': returned, 'reply_s': t1 - t0}
    figures['server_cpu_s'] = cpu
    return figures, (t0, t1 + TAIL_S)


def cpu_seconds(pid):
    """User + system CPU time of process `pid` so far, from /proc/<pid>/stat."""
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def phase_flushall_async(port):
    with socket.create_connection(('127.0.0.1', port)) as s:
        reader = hiredis.Reader()
        t0 = time.time()
        s.sendall(command(b'FLUSHALL', b'ASYNC'))
        reply = read_reply(s, reader)
        t1 = time.time()
        if reply != b'OK':
            raise RuntimeError(f'FLUSHALL ASYNC answered {reply!r}')
        pending_at_reply = None
        while time.time() - t1 < 30:
            s.sendall(command(b'INFO', b'memory'))
            text = read_reply(s, reader).decode()
            pending = int(text.split('lazyfree_pending_objects:', 1)[1].split()[0])
            if pending_at_reply is None:
                pending_at_reply = pending
            if not pending:
                break
            time.sleep(0.02)
        t_freed = time.time()
    end = max(t1 + FLUSH_MIN_S, t_freed + CLOSE_TAIL_S)
    time.sleep(max(0.0, end - time.time()))
    figures = {
        'reply_s': t1 - t0,
        'freed_s': t_freed - t0,
        'lazyfree_pending_at_reply': pending_at_reply,
    }
    return figures, (t0, end)


def big_set(kind, value_bytes):
    """(e): one SET of a `value_bytes` value on a fresh server; VmRSS sampled every 5 ms."""
    with start(kind) as srv:
        call(srv.port, b'PING')
        time.sleep(0.3)
        pre = vm_rss_bytes(srv.proc.pid)
        sampler = RssPeak(srv.proc.pid, period=0.005)
        sampler.start()
        value = b'x' * value_bytes
        with socket.create_connection(('127.0.0.1', srv.port)) as s:
            t0 = time.time()
            # header, value and trailer apart: the client never holds a second copy
            s.sendall(b'*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n' % value_bytes)
            s.sendall(value)
            s.sendall(b'\r\n')
            reply = read_reply(s, hiredis.Reader())
            t1 = time.time()
        del value
        time.sleep(0.5)
        peak = sampler.stop()
        after = vm_rss_bytes(srv.proc.pid)
        if reply != b'OK' or call(srv.port, b'STRLEN', b'big') != value_bytes:
            raise RuntimeError(f'{kind}: the big SET answered {reply!r}')
    return {
        'value_bytes': value_bytes,
        'pre_rss': pre,
        'peak_growth': peak - pre,
        'after_growth': after - pre,
        'samples': sampler.samples,
        'reply_s': t1 - t0,
    }


# -- one server ---------------------------------------------------------------------------


def run_server(kind, nkeys, payloads, phases):
    mset_pairs = nkeys // 2
    res = {}
    with start(kind) as srv, PingProbe(srv.port, PING_INTERVAL) as probe:
        windows = {}
        res['version'] = info(srv.port, 'server')['redis_version']
        time.sleep(0.5)  # the probe's process starts and connects

        def run(name, fn, *args):
            if name not in phases:
                return
            print(f'  {kind}: {name} ...', file=sys.stderr)
            res[name], windows[name] = fn(srv.port, *args)

        run('mset', phase_mset, payloads.get('mset'), 2 * mset_pairs + 1)
        if 'mset' in phases:
            if call(srv.port, b'DEL', b'k') != 1 or call(srv.port, b'DBSIZE') != 0:
                raise RuntimeError(f'{kind}: the MSET did not set k alone')
            time.sleep(0.3)
        run('mset_keys', phase_mset, payloads.get('mset_keys'), 2 * mset_pairs + 1)
        if 'mset_keys' in phases and call(srv.port, b'DBSIZE') != mset_pairs:
            raise RuntimeError(f'{kind}: DBSIZE after the MSET is not {mset_pairs}')
        with socket.create_connection(('127.0.0.1', srv.port)) as s:
            errors = send_all(s, payloads['load'])
            if 'mset_keys' not in phases:  # the keys that MSET would have set
                errors += send_all(s, payloads['load_first'])
        if errors or call(srv.port, b'DBSIZE') != nkeys:
            raise RuntimeError(f'{kind}: loading the keys failed')
        time.sleep(0.5)
        run('baseline', phase_baseline, BASELINE_S)
        run('gets', phase_unread_gets, payloads.get('gets'), nkeys, srv.proc.pid)
        if call(srv.port, b'DBSIZE') != nkeys:
            raise RuntimeError(f'{kind}: keys lost after the pipelined GETs')
        if 'gets_big' in phases:
            call(srv.port, b'SET', b'r', b'r' * GET_VALUE)
            time.sleep(0.3)
            run('gets_big', phase_unread_gets, payloads['gets_big'], nkeys, srv.proc.pid)
            if call(srv.port, b'DEL', b'r') != 1 or call(srv.port, b'DBSIZE') != nkeys:
                raise RuntimeError(f'{kind}: keys lost after the pipelined GETs of r')
        run('keys', phase_keys, nkeys)
        run('scan', phase_scan, nkeys, 10, srv.proc.pid)
        run('scan_1000', phase_scan, nkeys, 1000, srv.proc.pid)
        run('flush', phase_flushall_async)
        if 'flush' in phases and call(srv.port, b'DBSIZE') != 0:
            raise RuntimeError(f'{kind}: keys left after FLUSHALL ASYNC')
        probe.stop()
        for name, (t0, t1) in windows.items():
            res[name]['ping'] = percentiles(probe.window(t0, t1))
            # when the worst PING was sent, from the phase's start: tells a stall of the
            # phase's own command from one of the freeing after it
            worst = max((lat, t) for t, lat in probe.samples if t <= t1 and t + lat >= t0)
            res[name]['ping']['max_sent_at_s'] = worst[1] - t0
            res[name]['window_s'] = t1 - t0
    return res


def make_payloads(nkeys, phases):
    half = nkeys // 2

    def load(lo, hi):
        return [
            command(b'MSET', *[x for i in range(j, min(j + 1000, hi)) for x in (key(i), b'v')])
            for j in range(lo, hi, 1000)
        ]

    payloads = {'load': load(half, nkeys)}
    if 'mset' in phases:
        payloads['mset'] = command(b'MSET', *[b'k', b'v'] * half)
    if 'mset_keys' in phases:
        payloads['mset_keys'] = command(b'MSET', *[x for i in range(half) for x in (key(i), b'v')])
    else:
        payloads['load_first'] = load(0, half)
    if 'gets' in phases:
        get = b'*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n'
        payloads['gets'] = b''.join(get % (len(k), k) for k in map(key, range(nkeys)))
    if 'gets_big' in phases:
        payloads['gets_big'] = b'*2\r\n$3\r\nGET\r\n$1\r\nr\r\n' * nkeys
    return payloads


def median_of(runs):
    """One result with, for each figure, the median over the runs (same-shaped dicts)."""
    first = runs[0]
    if isinstance(first, dict):
        return {k: median_of([r[k] for r in runs]) for k in first}
    if isinstance(first, (int, float)) and all(x is not None for x in runs):
        return statistics.median_low(runs)  # a figure one run had, never an average
    return first


# -- report -------------------------------------------------------------------------------


def ms(x):
    return '-' if x is None else f'{x:.2f}' if x < 10 else f'{x:.0f}'


def table(res):
    o, r = res['ours'], res['redis']
    n = res['keys']

    def label(name):
        if name == 'mset':
            f = o['mset']
            return f'(b) one MSET of {f["args"]:,} one-byte arguments ({f["bytes"] / MB:.1f} MB)'
        if name == 'mset_keys':
            f = o['mset_keys']
            return f"(b') one MSET of {f['args'] // 2:,} new keys ({f['bytes'] / MB:.1f} MB)"
        return {
            'baseline': 'baseline: nothing else runs',
            'gets': f'(a) {n:,} pipelined GETs of 1-byte values, replies never read',
            'gets_big': f"(a') {n:,} pipelined GETs of a {GET_VALUE}-byte value, never read",
            'keys': f'(c) KEYS * over {n:,} keys',
            'scan': f"(c') a full SCAN of {n:,} keys, COUNT 10 (the default)",
            'scan_1000': f"(c'') a full SCAN of {n:,} keys, COUNT 1000",
            'flush': f'(d) FLUSHALL ASYNC over {n:,} keys',
        }[name]

    def other(kind, name):
        f = res[kind][name]
        if name in ('gets', 'gets_big'):
            sent = f'{f["sent_bytes"] / MB:.1f} of {f["bytes"] / MB:.1f} MB sent'
            how = (
                f'stopped being read after {f["send_s"]:.2f} s'
                if f['stuck']
                else (f'in {f["send_s"]:.2f} s')
            )
            return f'{sent}, {how}; server RSS +{f["peak_rss_growth"] / MB:.0f} MB at most'
        if name in ('mset', 'mset_keys'):
            return f'reply in {f["reply_s"] * 1000:.0f} ms'
        if name == 'keys':
            first, whole = f['first_byte_s'] * 1000, f['reply_s'] * 1000
            return f'{first:.0f} ms to its 1st byte, {whole:.0f} ms to the last'
        if name in ('scan', 'scan_1000'):
            return (
                f'{f["calls"]:,} calls in {f["reply_s"]:.2f} s; '
                f'server CPU {f["server_cpu_s"]:.2f} s'
            )
        if name == 'flush':
            if not f['lazyfree_pending_at_reply']:
                return f'reply {f["reply_s"] * 1000:.1f} ms; INFO: nothing pending'
            return f'reply {f["reply_s"] * 1000:.1f} ms, all freed {f["freed_s"] * 1000:.0f} ms'
        return f'{f["window_s"]:.1f} s'

    def target(name):
        if name == 'mset':
            ok = o['mset']['ping']['max_ms'] <= 1000
            return f'ours max <= 1 s: {"met" if ok else "missed"}'
        if name == 'flush':
            ok = o['flush']['ping']['max_ms'] <= 20
            return f'ours max <= 20 ms: {"met" if ok else "missed"}'
        if name == 'keys':
            ratio = o['keys']['reply_s'] / r['keys']['reply_s']
            return f'KEYS time ours <= 1.5x: {ratio:.2f}x, {"met" if ratio <= 1.5 else "missed"}'
        if name in ('scan', 'scan_1000'):
            ratio = o[name]['reply_s'] / r[name]['reply_s']
            cpu = o[name]['server_cpu_s'] / r[name]['server_cpu_s']
            met = 'met' if ratio <= 1.5 else 'missed'
            return f'SCAN time ours <= 1.5x: {ratio:.2f}x, {met} (server CPU {cpu:.2f}x)'
        return ''

    lines = [
        '| phase | ours PING p50 / p99 / max | redis PING p50 / p99 / max '
        '| ours: the other client | redis: the other client | target |',
        '|---|---|---|---|---|---|',
    ]
    for name in PHASES[:-1]:
        if name not in o:
            continue
        po, pr = o[name]['ping'], r[name]['ping']
        cells = [label(name)]
        cells += [' / '.join(ms(p[k]) for k in ('p50_ms', 'p99_ms', 'max_ms')) for p in (po, pr)]
        cells += [other('ours', name), other('redis', name), target(name)]
        lines.append('| ' + ' | '.join(cells) + ' |')
    lines.append('')
    lines.append('PING latency in ms over the PINGs in flight during each phase.')
    lines.append('')
    if not res['big_set']['ours']:
        return '\n'.join(lines)
    bo, br = res['big_set']['ours'], res['big_set']['redis']
    v = bo['value_bytes']
    lines.append('| (e) one SET of a value of | ours peak RSS growth | redis peak RSS growth '
                 '| ours after | redis after | target |')  # fmt: skip
    lines.append('|---|---|---|---|---|---|')
    ratio = bo['peak_growth'] / v
    lines.append(
        f'| {v / MB:.0f} MB | {bo["peak_growth"] / MB:.0f} MB ({ratio:.2f}x) '
        f'| {br["peak_growth"] / MB:.0f} MB ({br["peak_growth"] / v:.2f}x) '
        f'| {bo["after_growth"] / MB:.0f} MB | {br["after_growth"] / MB:.0f} MB '
        f'| ours <= 1.5x the value: {"met" if ratio <= 1.5 else "missed"} |'
    )
    return '\n'.join(lines)


def main():
    global OURS_ROOT
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--keys', type=int, default=1_000_000)
    ap.add_argument('--value-mb', type=int, default=256, help='(e): the value SET')
    ap.add_argument('--quick', action='store_true', help='a tenth of the keys, a 32 MB value')
    ap.add_argument('--root', default=ROOT, help='the checkout our server runs from')
    ap.add_argument('--repeat', type=int, help='runs per server (3; 1 with --quick); medians')
    ap.add_argument(
        '--phases', default=','.join(PHASES), help='comma-separated phases to run (all)'
    )
    args = ap.parse_args()
    phases = args.phases.split(',')
    if unknown := set(phases) - set(PHASES):
        ap.error(f'unknown phases: {", ".join(sorted(unknown))}; known: {", ".join(PHASES)}')
    args.repeat = args.repeat or (1 if args.quick else 3)
    OURS_ROOT = os.path.abspath(args.root)
    nkeys = args.keys // 10 if args.quick else args.keys
    value_mb = 32 if args.quick else args.value_mb

    res = {
        'keys': nkeys,
        'args': {k: v for k, v in vars(args).items() if k != 'root'},  # ours_at says it
        'started': time.strftime('%Y-%m-%dT%H:%M:%S'),
        'ours_at': git_state(OURS_ROOT),
        'loadavg_at_start': os.getloadavg(),
    }
    print(f'building the payloads for {nkeys} keys ...', file=sys.stderr)
    payloads = make_payloads(nkeys, phases)
    runs = {kind: [] for kind in KINDS}
    big = {kind: [] for kind in KINDS}
    for i in range(args.repeat):  # servers alternate, so that a noisy minute hits both
        print(f'run {i + 1} of {args.repeat}', file=sys.stderr)
        for kind in KINDS:
            runs[kind].append(run_server(kind, nkeys, payloads, phases))
        for kind in KINDS:
            if 'big_set' not in phases:
                break
            print(f'  {kind}: SET of {value_mb} MB ...', file=sys.stderr)
            big[kind].append(big_set(kind, value_mb * MB))
    del payloads
    res['runs'] = {'phases': runs, 'big_set': big}
    for kind in KINDS:
        res[kind] = median_of(runs[kind])
    res['big_set'] = {kind: big[kind] and median_of(big[kind]) for kind in KINDS}
    res['loadavg_at_end'] = os.getloadavg()

    out = table(res)
    la = ', '.join(f'{x:.2f}' for x in res['loadavg_at_start'])
    print(
        f'ours at {res["ours_at"]}; {nkeys} keys; CPUs: {os.cpu_count()}; load at start {la}; '
        f'each figure the median of {args.repeat} runs'
    )
    print()
    print(out)
    print()
    os.makedirs(os.path.join(ROOT, 'bench', 'results'), exist_ok=True)
    path = os.path.join(ROOT, 'bench', 'results', f'fairness-{int(time.time())}.json')
    with open(path, 'w') as f:
        json.dump(res, f, indent=2)
    script = os.path.relpath(os.path.abspath(__file__), ROOT)
    exe = os.path.relpath(sys.executable, ROOT) if sys.executable.startswith(ROOT) else 'python'
    argv = [exe, script, '--keys', str(args.keys), '--value-mb', str(args.value_mb)]
    argv += ['--repeat', str(args.repeat)] + ['--quick'] * args.quick
    if phases != list(PHASES):
        argv += ['--phases', args.phases]
    if OURS_ROOT != ROOT:
        argv += ['--root', OURS_ROOT]
    print(f'results: {os.path.relpath(path, ROOT)}')
    print('reproduce (from the repository root): ' + shlex.join(argv))


if __name__ == '__main__':
    main()
