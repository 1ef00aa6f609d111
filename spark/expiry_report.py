"""Expiry analytics over the key-event journal, per namespace (the key's prefix before the first
`:`, or the first group of --namespace-regex).

    python -m spark.expiry_report --url redis://127.0.0.1:6379 --format csv --out /dev/stdout
    python -m spark.expiry_report --url ... --out report/ --stream --trigger 10s

Outputs, in --out (a directory; `/dev/stdout` or `-` with csv prints the summary table only):
    summary.{csv,parquet}   namespace,expired,deleted,p50_lag_ms,p99_lag_ms,first_event,last_event
    windows.{csv,parquet}   window_start,window_end,namespace,expired   (one-minute windows)
    expirations.png         expirations per minute per namespace (spark.chart, matplotlib)

How it computes. Spark does the per-event work: each batch of journal events is grouped by
(namespace, event, minute, lag_ms) into counts with first/last event times. That result is
small (namespaces x minutes x distinct lags) and the driver merges it into the report state:
counts per namespace, counts per (namespace, minute), and an exact histogram of lags per
namespace, so p50/p99 are exact nearest-rank percentiles and merging batches is plain
addition. Batch mode reads the journal up to now (spark.read) as one batch and exits. Stream
mode (spark.readStream, foreachBatch) merges every micro-batch and rewrites the outputs each
trigger; the state is saved with the id of the last merged batch next to Spark's checkpoint,
so a batch Spark replays after a restart is recognized and not counted twice.
"""

import argparse
import csv
import io
import json
import logging
import os
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict

log = logging.getLogger('expiry_report')

SUMMARY_COLUMNS = [
    'namespace',
    'expired',
    'deleted',
    'p50_lag_ms',
    'p99_lag_ms',
    'first_event',
    'last_event',
]
WINDOW_COLUMNS = ['window_start', 'window_end', 'namespace', 'expired']
MINUTE_MS = 60_000


# ---------------------------------------------------------------- state (driver side)


class ReportState:
    """Mergeable aggregates; JSON-serializable so a streaming run can resume."""

    def __init__(self):
        self.last_batch = -1
        self.expired = Counter()  # ns -> count
        self.deleted = Counter()
        self.first = {}  # ns -> ms
        self.last = {}
        self.windows = Counter()  # (ns, minute_ms) -> expired count
        self.lags = defaultdict(Counter)  # ns -> {lag_ms: count}
        self.events = 0

    def merge(self, rows):
        """rows: (namespace, event, minute_ms, lag_ms, count, first_ms, last_ms)."""
        for ns, event, minute, lag, n, lo, hi in rows:
            ns = '' if ns is None else ns
            self.events += n
            self.first[ns] = min(self.first.get(ns, lo), lo)
            self.last[ns] = max(self.last.get(ns, hi), hi)
            if event == 'expired':
                self.expired[ns] += n
                self.windows[(ns, minute)] += n
                if lag is not None:
                    self.lags[ns][lag] += n
            elif event == 'del':
                self.deleted[ns] += n

    def summary_rows(self):
        out = []
        for ns in sorted(self.first):
            out.append(
                [
                    ns,
                    self.expired[ns],
                    self.deleted[ns],
                    percentile(self.lags.get(ns), 0.50),
                    percentile(self.lags.get(ns), 0.99),
                    self.first[ns],
                    self.last[ns],
                ]
            )
        return out

    def window_rows(self):
        return [
            [m, m + MINUTE_MS, ns, n]
            for (ns, m), n in sorted(self.windows.items(), key=lambda kv: (kv[0][1], kv[0][0]))
        ]

    def to_json(self):
        return {
            'last_batch': self.last_batch,
            'events': self.events,
            'namespaces': {
                ns: {
                    'expired': self.expired[ns],
                    'deleted': self.deleted[ns],
                    'first': self.first[ns],
                    'last': self.last[ns],
                    'lags': {str(k): v for k, v in self.lags.get(ns, {}).items()},
                }
                for ns in self.first
            },
            'windows': [[ns, m, n] for (ns, m), n in self.windows.items()],
        }

    @classmethod
    def from_json(cls, data):
        st = cls()
        st.last_batch, st.events = data['last_batch'], data['events']
        for ns, d in data['namespaces'].items():
            st.expired[ns], st.deleted[ns] = d['expired'], d['deleted']
            st.first[ns], st.last[ns] = d['first'], d['last']
            st.lags[ns] = Counter({int(k): v for k, v in d['lags'].items()})
        for ns, m, n in data['windows']:
            st.windows[(ns, m)] = n
        return st


def percentile(hist, q):
    """Nearest-rank percentile of a {value: count} histogram; None when empty."""
    if not hist:
        return None
    total = sum(hist.values())
    rank = max(1, -(-int(q * total * 1000) // 1000))  # ceil(q * total) without float fuzz
    acc = 0
    for value in sorted(hist):
        acc += hist[value]
        if acc >= rank:
            return value
    return max(hist)


# ---------------------------------------------------------------- Spark side


def batch_aggregates(df):
    """The per-event work, done by Spark: counts per (namespace, event, minute, lag)."""
    from pyspark.sql import functions as F

    ms = F.unix_millis('ts')
    return (
        df.groupBy(
            'namespace',
            'event',
            (F.floor(ms / MINUTE_MS) * MINUTE_MS).cast('long').alias('minute'),
            'lag_ms',
        )
        .agg(F.count(F.lit(1)).alias('n'), F.min(ms).alias('lo'), F.max(ms).alias('hi'))
        .collect()
    )


# ---------------------------------------------------------------- outputs


def iso(ms):
    if ms is None:
        return ''
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(ms // 1000)) + f'.{ms % 1000:03d}Z'


def _csv_text(columns, rows, time_cols):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator='\n')
    w.writerow(columns)
    for row in rows:
        w.writerow(
            [iso(v) if i in time_cols else ('' if v is None else v) for i, v in enumerate(row)]
        )
    return buf.getvalue()


def _write_atomic(path, data, mode='w'):
    tmp = f'{path}.tmp'
    with open(tmp, mode) as f:
        f.write(data)
    os.replace(tmp, path)


def _write_parquet(path, columns, rows, time_cols, types):
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = []
    for i, typ in enumerate(types):
        values = [row[i] for row in rows]
        arrays.append(pa.array(values, pa.timestamp('ms', tz='UTC') if i in time_cols else typ))
    tmp = f'{path}.tmp'
    pq.write_table(pa.Table.from_arrays(arrays, names=columns), tmp)
    os.replace(tmp, path)


def to_stdout(out):
    return out in ('-', '/dev/stdout')


def write_outputs(state, out, fmt, chart=None):
    import pyarrow as pa

    summary, windows = state.summary_rows(), state.window_rows()
    if to_stdout(out):
        sys.stdout.write(_csv_text(SUMMARY_COLUMNS, summary, {5, 6}))
        sys.stdout.flush()
    else:
        os.makedirs(out, exist_ok=True)
        if fmt == 'csv':
            _write_atomic(
                os.path.join(out, 'summary.csv'), _csv_text(SUMMARY_COLUMNS, summary, {5, 6})
            )
            _write_atomic(
                os.path.join(out, 'windows.csv'), _csv_text(WINDOW_COLUMNS, windows, {0, 1})
            )
        else:
            _write_parquet(
                os.path.join(out, 'summary.parquet'),
                SUMMARY_COLUMNS,
                summary,
                {5, 6},
                [pa.string(), pa.int64(), pa.int64(), pa.int64(), pa.int64(), None, None],
            )
            _write_parquet(
                os.path.join(out, 'windows.parquet'),
                WINDOW_COLUMNS,
                windows,
                {0, 1},
                [None, None, pa.string(), pa.int64()],
            )
        chart = chart or os.path.join(out, 'expirations.png')
    if chart:
        from .chart import line_chart_png

        series = defaultdict(list)
        for start, _end, ns, n in windows:
            series[ns].append((start, n))
        line_chart_png(
            chart,
            dict(series),
            title='expirations per minute by namespace',
            y_label='expired keys per minute',
        )


# ---------------------------------------------------------------- runs


def _reader(spark, args, stream):
    r = (spark.readStream if stream else spark.read).format('keyevents')
    r = r.option('url', args.url).option('key', args.key).option('partitions', args.partitions)
    if args.namespace_regex:
        r = r.option('namespaceRegex', args.namespace_regex)
    if stream:
        if args.max_events_per_batch:
            r = r.option('maxEventsPerBatch', args.max_events_per_batch)
        r = r.option('trimOnCommit', 'true' if args.trim_on_commit else 'false')
    return r.load()


def run_batch(spark, args):
    t0 = time.time()
    df = _reader(spark, args, stream=False)
    rows = batch_aggregates(df)
    state = ReportState()
    state.merge(rows)
    state.last_batch = 0
    log.info(
        'batch 0: %d events, %d namespaces, %d expired, in %.2fs',
        state.events,
        len(state.first),
        sum(state.expired.values()),
        time.time() - t0,
    )
    write_outputs(state, args.out, args.format, args.chart)
    log.info('wrote %s', args.out)
    return state


def run_stream(spark, args):
    if to_stdout(args.out):
        base = args.checkpoint or tempfile.mkdtemp(prefix='expiry-report-')
        checkpoint = os.path.join(base, 'checkpoint')
    else:
        base = args.out
        checkpoint = args.checkpoint or os.path.join(args.out, '_checkpoint')
    os.makedirs(base, exist_ok=True)
    state_path = os.path.join(base if args.checkpoint is None else args.checkpoint, '_state.json')
    state = ReportState()
    if os.path.exists(state_path):
        with open(state_path) as f:
            state = ReportState.from_json(json.load(f))
        log.info('resuming after batch %d (%d events so far)', state.last_batch, state.events)

    def process(df, batch_id):
        t0 = time.time()
        if batch_id <= state.last_batch:
            log.info('batch %d: already merged, skipped (replay after restart)', batch_id)
            return
        rows = batch_aggregates(df)
        state.merge(rows)
        state.last_batch = batch_id
        _write_atomic(state_path, json.dumps(state.to_json()))
        write_outputs(state, args.out, args.format, args.chart)
        log.info(
            'batch %d: %d events, total %d events, %d expired in %d namespaces, %.2fs',
            batch_id,
            sum(r[4] for r in rows),
            state.events,
            sum(state.expired.values()),
            len(state.first),
            time.time() - t0,
        )

    df = _reader(spark, args, stream=True)
    query = (
        df.writeStream.foreachBatch(process)
        .option('checkpointLocation', checkpoint)
        .trigger(processingTime=_trigger(args.trigger))
        .start()
    )
    log.info('streaming from %s every %s; checkpoint %s', args.url, args.trigger, checkpoint)
    try:
        query.awaitTermination(args.timeout)
    except KeyboardInterrupt:
        pass
    finally:
        query.stop()
    return state


def _trigger(text):
    m = re.fullmatch(r'\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*', text)
    if not m:
        return text  # let Spark parse it ("10 seconds")
    n, unit = m.group(1), m.group(2) or 's'
    return f'{n} ' + {'ms': 'milliseconds', 's': 'seconds', 'm': 'minutes', 'h': 'hours'}[unit]


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog='python -m spark.expiry_report', description=__doc__.split('\n')[0]
    )
    p.add_argument('--url', required=True, help='redis://host:port of the server')
    p.add_argument('--key', default='__keyevents__', help='journal stream key')
    p.add_argument(
        '--out',
        default='expiry-report',
        help='output directory, or /dev/stdout (csv: prints the summary)',
    )
    p.add_argument('--format', choices=['parquet', 'csv'], default='parquet')
    p.add_argument('--chart', help='PNG path (default OUT/expirations.png)')
    p.add_argument('--master', default='local[*]')
    p.add_argument('--stream', action='store_true', help='keep updating each trigger')
    p.add_argument('--trigger', default='10s')
    p.add_argument('--timeout', type=float, help='stream mode: stop after this many seconds')
    p.add_argument(
        '--checkpoint', help='stream mode: checkpoint directory (default OUT/_checkpoint)'
    )
    p.add_argument(
        '--trim-on-commit',
        action='store_true',
        help='stream mode: XTRIM the journal after each committed batch',
    )
    p.add_argument('--max-events-per-batch', type=int)
    p.add_argument('--partitions', type=int, default=4)
    p.add_argument(
        '--namespace-regex', help="its first group is the namespace (default: prefix before ':')"
    )
    args = p.parse_args(argv)
    if to_stdout(args.out) and args.format != 'csv':
        p.error('--out /dev/stdout needs --format csv')
    if args.namespace_regex:
        re.compile(args.namespace_regex)
    return args


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format='%(asctime)s %(name)s %(message)s'
    )
    from . import session

    spark = session(args.master, app='expiry_report')
    try:
        (run_stream if args.stream else run_batch)(spark, args)
    finally:
        spark.stop()


if __name__ == '__main__':
    main()
