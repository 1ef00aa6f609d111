"""The analytics path, measured: key-event journal -> `keyevents` data source -> Spark.

1. Throughput: a batch query on local[2] reads N journal entries (expired events in 3
   namespaces) and aggregates per namespace
   (spark.read.format('keyevents') ... groupBy('namespace').count()); events/s = N / time of
   the query (the session is started and a warm-up query run first; start-up not counted).
   Our server (`--keyevent-journal-events x`) writes the journal itself: N keys are SET with
   a PXAT deadline just ahead and the benchmark waits until all N are journaled.
   redis-server has no journal: the same entries are XADDed to it directly, a comparison row
   of the reader only. Both servers run side by side and the rounds alternate between them.
2. End to end: a server with `--keyevent-journal-events x`; a streaming query with a 1 s
   processing-time trigger counts expired events per namespace (foreachBatch, complete
   mode). Each round sets K keys in a fresh namespace with one deadline; the delay is from
   that deadline to the foreachBatch call whose result first shows all K expirations.

    .venv/bin/python bench/spark_pipeline.py                      # both parts, both servers
    .venv/bin/python bench/spark_pipeline.py --skip e2e --servers ours
    .venv/bin/python bench/spark_pipeline.py --events 1000000 --repeats 7 --rounds 10

Targets: >= 100,000 events/s; end to end <= 3 s. Medians and maxima over the rounds are
printed with the load average (the machine is shared; figures move with it).
"""

import argparse
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import ServerProc, command, send_pipelined  # noqa: E402

JOURNAL = '__keyevents__'
NAMESPACES = ('user', 'session', 'cart')


def load():
    return '/'.join(f'{x:.2f}' for x in os.getloadavg())


def xadd_journal(client, n, batch=20_000):
    """For redis-server (no journal): XADD n entries shaped like the server's journal."""
    now = int(time.time() * 1000)
    for start in range(0, n, batch):
        pipe = client.pipeline(transaction=False)
        for i in range(start, min(n, start + batch)):
            pipe.execute_command(
                'XADD',
                JOURNAL,
                '*',
                'db',
                '0',
                'event',
                'expired',
                'key',
                f'{NAMESPACES[i % 3]}:{i}',
                'ts',
                now,
                'deadline',
                now - 2,
                'lag',
                '2',
            )
        pipe.execute()


def expire_into_journal(srv, client, n, tag, lead_ms=500):
    """Ours: SET n keys with one PXAT deadline `lead_ms` ahead, wait until the server has
    expired and journaled them all. Returns the server CPU seconds spent expiring them."""
    base = client.xlen(JOURNAL)
    deadline = int(time.time() * 1000) + lead_ms
    cmds = [
        command('SET', f'{NAMESPACES[i % 3]}:{tag}{i}', 'v', 'PXAT', deadline) for i in range(n)
    ]
    send_pipelined(srv.port, cmds)
    while time.time() * 1000 < deadline:
        time.sleep(0.01)
    cpu0 = srv.cpu_seconds()
    end = time.time() + 120
    while client.xlen(JOURNAL) < base + n:
        if time.time() > end:
            raise TimeoutError(f'journal has {client.xlen(JOURNAL) - base} of {n} entries')
        time.sleep(0.05)
    return srv.cpu_seconds() - cpu0


class Target:
    """One server holding N journal entries, and the query that reads them."""

    def __init__(self, spark, kind, n, partitions, page):
        import redis

        self.kind, self.n = kind, n
        args = ('--keyevent-journal-events', 'x') if kind == 'ours' else ()
        self.srv = ServerProc(kind, *args)
        self.r = redis.Redis(port=self.srv.port)
        url = f'redis://127.0.0.1:{self.srv.port}'
        self.query = lambda: (
            spark.read.format('keyevents')
            .option('url', url)
            .option('partitions', partitions)
            .option('pageSize', page)
            .load()
            .groupBy('namespace')
            .count()
            .collect()
        )
        self.fill(20_000, 'w')
        self.query()  # warm up workers and code paths
        self.r.delete(JOURNAL)
        t0 = time.time()
        cpu = self.fill(n, 'k')
        how = (
            'expired into the journal' if kind == 'ours' else 'XADDed (redis-server has no journal)'
        )
        extra = f', server CPU expiring+journaling {cpu:.2f}s' if cpu is not None else ''
        print(f'  {kind}: {n} entries {how} in {time.time() - t0:.1f}s{extra}', file=sys.stderr)
        self.rates = []

    def fill(self, n, tag):
        if self.kind == 'ours':
            return expire_into_journal(self.srv, self.r, n, tag)
        xadd_journal(self.r, n)
        return None

    def round(self):
        la = load()
        cpu0 = self.srv.cpu_seconds()
        t0 = time.time()
        rows = self.query()
        dt = time.time() - t0
        assert sum(row['count'] for row in rows) == self.n, rows
        self.rates.append(self.n / dt)
        print(
            f'  {self.kind}: {self.n} events in {dt:.2f}s = {self.n / dt:,.0f} events/s '
            f'(server CPU {self.srv.cpu_seconds() - cpu0:.2f}s, load {la})',
            file=sys.stderr,
        )

    def close(self):
        self.srv.stop()


def throughput(spark, kinds, n, partitions, repeats, page):
    targets = []
    try:
        for kind in kinds:
            targets.append(Target(spark, kind, n, partitions, page))
        for _ in range(repeats):
            for t in targets:  # alternate: same conditions
                t.round()
        return {t.kind: t.rates for t in targets}
    finally:
        for t in targets:
            t.close()


def end_to_end(spark, rounds, keys, lead_ms, trigger):
    import redis
    from pyspark.sql import functions as F

    with ServerProc('ours', '--keyevent-journal-events', 'x') as srv:
        r = redis.Redis(port=srv.port)
        url = f'redis://127.0.0.1:{srv.port}'
        seen = {}  # namespace -> time its count was complete
        targets = {}
        ready = threading.Event()

        def on_batch(df, batch_id):
            rows = df.collect()  # runs the micro-batch
            now = time.time()
            ready.set()
            for row in rows:
                ns = row['namespace']
                if ns in targets and ns not in seen and row['expired'] >= targets[ns]:
                    seen[ns] = now

        events = (
            spark.readStream.format('keyevents')
            .option('url', url)
            .option('partitions', 2)
            .option('trimOnCommit', 'true')
            .load()
        )
        counts = (
            events.filter(F.col('event') == 'expired')
            .groupBy('namespace')
            .agg(F.count(F.lit(1)).alias('expired'))
        )
        import tempfile

        q = (
            counts.writeStream.outputMode('complete')
            .foreachBatch(on_batch)
            .option('checkpointLocation', tempfile.mkdtemp(prefix='bench-e2e-'))
            .trigger(processingTime=trigger)
            .start()
        )
        try:
            r.set('warmup:1', 'v', px=10)  # get a first batch through
            ready.wait(60)
            time.sleep(2)
            delays = []
            for i in range(rounds):
                ns = f'round{i}'
                targets[ns] = keys
                deadline = time.time() + lead_ms / 1000
                pipe = r.pipeline(transaction=False)
                for j in range(keys):
                    pipe.execute_command('SET', f'{ns}:{j}', 'v', 'PXAT', int(deadline * 1000))
                pipe.execute()
                end = deadline + 30
                while ns not in seen and time.time() < end:
                    time.sleep(0.01)
                delay = seen[ns] - deadline if ns in seen else float('inf')
                delays.append(delay)
                print(
                    f'  round {i}: {keys} keys, deadline -> count in output {delay:.2f}s '
                    f'(load {load()})',
                    file=sys.stderr,
                )
                time.sleep(0.37)  # vary the phase against the trigger
        finally:
            q.stop()
        return delays


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument(
        '--servers',
        default='ours,redis',
        help='throughput: comma-separated, ours and/or redis (default both)',
    )
    p.add_argument('--events', type=int, default=500_000)
    p.add_argument('--partitions', type=int, default=4)
    p.add_argument('--repeats', type=int, default=5)
    p.add_argument('--page-size', type=int, default=20000, help='XRANGE COUNT per call')
    p.add_argument('--rounds', type=int, default=8)
    p.add_argument('--keys', type=int, default=1000)
    p.add_argument('--lead-ms', type=int, default=1500, help='deadline distance at SET time')
    p.add_argument('--trigger', default='1 second')
    p.add_argument('--skip', choices=['throughput', 'e2e'])
    args = p.parse_args()
    kinds = [k for k in args.servers.split(',') if k]
    if not set(kinds) <= {'ours', 'redis'}:
        p.error('--servers: ours and/or redis')

    from spark import session

    spark = session(
        'local[2]', app='bench_spark_pipeline', conf={'spark.sql.shuffle.partitions': '2'}
    )
    try:
        if args.skip != 'throughput':
            print(
                f'throughput: journal -> keyevents -> groupBy(namespace) on local[2], '
                f'{args.partitions} partitions, {args.events} entries, load {load()}',
                file=sys.stderr,
            )
            results = throughput(
                spark, kinds, args.events, args.partitions, args.repeats, args.page_size
            )
            for kind, rates in results.items():
                label = (
                    'ours (server journal)'
                    if kind == 'ours'
                    else 'redis-server (entries XADDed, no journal)'
                )
                print(
                    f'throughput_events_per_s {label}: median={statistics.median(rates):,.0f} '
                    f'max={max(rates):,.0f} min={min(rates):,.0f} rounds={len(rates)}'
                )
            print(f'load_avg_after_throughput {load()}')
        if args.skip != 'e2e':
            print(
                f'end to end: deadline -> streaming count, trigger {args.trigger}, load {load()}',
                file=sys.stderr,
            )
            delays = end_to_end(spark, args.rounds, args.keys, args.lead_ms, args.trigger)
            print(
                f'end_to_end_s median={statistics.median(delays):.2f} '
                f'max={max(delays):.2f} min={min(delays):.2f} rounds={len(delays)}'
            )
            print(f'load_avg_after_e2e {load()}')
    finally:
        spark.stop()


if __name__ == '__main__':
    main()
