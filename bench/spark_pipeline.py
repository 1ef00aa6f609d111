"""The analytics path, measured: key-event journal -> `keyevents` data source -> Spark.

1. Throughput: N journal entries (expired events in 3 namespaces) are XADDed to the server,
   then a batch query on local[2] reads them all and aggregates per namespace
   (spark.read.format('keyevents') ... groupBy('namespace').count()). events/s = N / time of
   the query (the session is started and warmed up first; its start-up is not counted).
2. End to end: a server with `--keyevent-journal-events x`; a streaming query with a 1 s
   processing-time trigger counts expired events per namespace (foreachBatch, complete
   mode). Each round sets K keys in a fresh namespace with one deadline; the delay is from
   that deadline to the foreachBatch call whose result first shows all K expirations.

    .venv/bin/python bench/spark_pipeline.py                 # both, against our server
    .venv/bin/python bench/spark_pipeline.py --server redis  # throughput against redis-server
    .venv/bin/python bench/spark_pipeline.py --events 1000000 --rounds 10

Targets: >= 100,000 events/s; end to end <= 3 s.
"""

import argparse
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import ServerProc  # noqa: E402

JOURNAL = '__keyevents__'


def fill_journal(client, n, batch=20_000):
    now = int(time.time() * 1000)
    namespaces = ('user', 'session', 'cart')
    for start in range(0, n, batch):
        pipe = client.pipeline(transaction=False)
        for i in range(start, min(n, start + batch)):
            pipe.execute_command('XADD', JOURNAL, '*', 'db', '0', 'event', 'expired',
                                 'key', f'{namespaces[i % 3]}:{i}', 'ts', now,
                                 'deadline', now - 2, 'lag', '2')
        pipe.execute()


def throughput(spark, kind, n, partitions, repeats, page=20000):
    import redis
    with ServerProc(kind) as srv:
        r = redis.Redis(port=srv.port)
        url = f'redis://127.0.0.1:{srv.port}'
        fill_journal(r, 20_000)
        query = (lambda: spark.read.format('keyevents').option('url', url)
                 .option('partitions', partitions).option('pageSize', page).load().groupBy('namespace').count().collect())
        query()                                            # warm up workers and code paths
        r.delete(JOURNAL)
        t0 = time.time()
        fill_journal(r, n)
        print(f'  filled {n} entries in {time.time() - t0:.1f}s', file=sys.stderr)
        rates = []
        for _ in range(repeats):
            cpu0 = srv.cpu_seconds()
            t0 = time.time()
            rows = query()
            dt = time.time() - t0
            assert sum(row['count'] for row in rows) == n, rows
            rates.append(n / dt)
            print(f'  {kind}: {n} events in {dt:.2f}s = {n / dt:,.0f} events/s '
                  f'(server CPU {srv.cpu_seconds() - cpu0:.2f}s)', file=sys.stderr)
        return max(rates), statistics.median(rates)


class JournalShim:
    """Until the server journals events itself: subscribe to expired events and XADD each
    one (no deadline/lag fields). Only for a preliminary end-to-end figure."""

    def __init__(self, port):
        import redis
        self.r = redis.Redis(port=port)
        self.ps = self.r.pubsub(ignore_subscribe_messages=True)
        self.ps.subscribe('__keyevent@0__:expired')
        self.stopping = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopping:
            msgs = []
            m = self.ps.get_message(timeout=0.05)
            while m is not None:
                msgs.append(m)
                m = self.ps.get_message(timeout=0)
            if msgs:
                pipe = self.r.pipeline(transaction=False)
                now = int(time.time() * 1000)
                for m in msgs:
                    pipe.execute_command('XADD', JOURNAL, '*', 'db', '0', 'event', 'expired',
                                         'key', m['data'], 'ts', now)
                pipe.execute()

    def stop(self):
        self.stopping = True
        self.thread.join(2)


def end_to_end(spark, rounds, keys, lead_ms, trigger, journal_shim=False):
    import redis
    from pyspark.sql import functions as F
    shim = None
    try:
        srv = ServerProc('ours', '--keyevent-journal-events', 'x')
    except RuntimeError:
        if not journal_shim:
            print('  end-to-end: skipped, the server has no --keyevent-journal-events yet '
                  '(--journal-shim measures with a pub/sub stand-in)', file=sys.stderr)
            return None
        srv = ServerProc('ours', '--notify-keyspace-events', 'Ex')
        shim = JournalShim(srv.port)
        print('  (journal stand-in: __keyevent@0__:expired messages XADDed by a client)',
              file=sys.stderr)
    with srv:
        r = redis.Redis(port=srv.port)
        url = f'redis://127.0.0.1:{srv.port}'
        seen = {}                                          # namespace -> time its count was complete
        targets = {}
        ready = threading.Event()

        def on_batch(df, batch_id):
            rows = df.collect()                            # runs the micro-batch
            now = time.time()
            ready.set()
            for row in rows:
                ns = row['namespace']
                if ns in targets and ns not in seen and row['expired'] >= targets[ns]:
                    seen[ns] = now

        events = (spark.readStream.format('keyevents').option('url', url)
                  .option('partitions', 2).option('trimOnCommit', 'true').load())
        counts = (events.filter(F.col('event') == 'expired').groupBy('namespace')
                  .agg(F.count(F.lit(1)).alias('expired')))
        import tempfile
        q = (counts.writeStream.outputMode('complete').foreachBatch(on_batch)
             .option('checkpointLocation', tempfile.mkdtemp(prefix='bench-e2e-'))
             .trigger(processingTime=trigger).start())
        try:
            r.set('warmup:1', 'v', px=10)                  # get a first batch through
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
                print(f'  round {i}: {keys} keys, deadline -> count in output {delay:.2f}s',
                      file=sys.stderr)
                time.sleep(0.37)                           # vary the phase against the trigger
        finally:
            q.stop()
            if shim:
                shim.stop()
        return delays


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--server', choices=['ours', 'redis'], default='ours')
    p.add_argument('--events', type=int, default=500_000)
    p.add_argument('--partitions', type=int, default=4)
    p.add_argument('--repeats', type=int, default=3)
    p.add_argument('--page-size', type=int, default=20000, help='XRANGE COUNT per call')
    p.add_argument('--rounds', type=int, default=8)
    p.add_argument('--keys', type=int, default=1000)
    p.add_argument('--lead-ms', type=int, default=1500, help='deadline distance at SET time')
    p.add_argument('--trigger', default='1 second')
    p.add_argument('--skip', choices=['throughput', 'e2e'])
    p.add_argument('--journal-shim', action='store_true',
                   help='without the server journal: XADD pub/sub expired events instead')
    args = p.parse_args()

    from spark import session
    spark = session('local[2]', app='bench_spark_pipeline',
                    conf={'spark.sql.shuffle.partitions': '2'})
    try:
        if args.skip != 'throughput':
            print(f'throughput: journal -> keyevents -> groupBy(namespace) on local[2], '
                  f'{args.partitions} partitions, server {args.server}', file=sys.stderr)
            best, median = throughput(spark, args.server, args.events, args.partitions,
                                      args.repeats, args.page_size)
            print(f'throughput_events_per_s best={best:,.0f} median={median:,.0f}')
        if args.skip != 'e2e' and args.server == 'ours':
            print(f'end to end: deadline -> streaming count, trigger {args.trigger}',
                  file=sys.stderr)
            delays = end_to_end(spark, args.rounds, args.keys, args.lead_ms, args.trigger,
                                args.journal_shim)
            if delays:
                print(f'end_to_end_s median={statistics.median(delays):.2f} '
                      f'max={max(delays):.2f} min={min(delays):.2f}')
    finally:
        spark.stop()


if __name__ == '__main__':
    main()
