"""The `keyevents` PySpark data source and the expiry report, against our server.

One local[2] Spark session is shared by the module (starting one costs ~10 s). Tests that
need the server's own key-event journal start a server with `keyevent-journal-events x`;
the others write journal-shaped entries with XADD, which exercises the same reader.
"""

import contextlib
import csv
import io
import os
import subprocess
import sys
import time

import pytest

from conftest import spawn_store, stop  # noqa: E402
from spark.ids import fmt_id, last_id, parse_id, plan_ranges  # noqa: E402
from store import EmbeddedServer  # noqa: E402

pytestmark = pytest.mark.spark

JOURNAL = '__keyevents__'
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope='module')
def spark():
    from spark import session

    s = session('local[2]', app='test_spark')
    yield s
    s.stop()


@pytest.fixture
def xr(server):
    client = server.client()
    client.flushall()
    yield client
    client.close()


def journal_server(**options):
    """An embedded server journaling `expired` events."""
    return EmbeddedServer(keyevent_journal_events='x', save='', **options).start()


def add_events(client, namespaces, start=0, event='expired'):
    """XADD journal-shaped entries: {namespace: count}; returns the keys written."""
    keys = []
    pipe = client.pipeline(transaction=False)
    now = int(time.time() * 1000)
    for ns, n in namespaces.items():
        for i in range(start, start + n):
            key = f'{ns}:{i}'
            fields = {'db': 0, 'event': event, 'key': key, 'ts': now}
            if event == 'expired':
                fields.update(deadline=now - 3, lag=3)
            pipe.xadd(JOURNAL, fields)
            keys.append(key)
    pipe.execute()
    return keys


def counts(df):
    return {r['namespace']: r['count'] for r in df.groupBy('namespace').count().collect()}


def wait_for(cond, timeout=60, what='condition'):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f'timed out waiting for {what}')


# ---------------------------------------------------------------- id ranges (no Spark)


def test_plan_ranges_cover_each_entry_once_and_balance_bursts(xr):
    # 4 bursts of 1000 entries, each within 5 ms, 50 ms apart, then a quiet tail.
    pipe = xr.pipeline(transaction=False)
    for i in range(4000):
        ms = 1000 + (i // 1000) * 50 + (i % 1000) // 200
        pipe.xadd(JOURNAL, {'event': 'expired', 'key': f'k:{i}'}, id=f'{ms}-*')
    pipe.xadd(JOURNAL, {'event': 'expired', 'key': 'k:last'}, id='9000-0')
    pipe.execute()
    hi = last_id(xr, JOURNAL)
    ranges = plan_ranges(xr, JOURNAL, (0, 1), hi, 4)
    assert 2 <= len(ranges) <= 4
    seen = []
    sizes = []
    for lo, hi_ in ranges:
        got = xr.xrange(JOURNAL, fmt_id(lo), fmt_id(hi_))
        sizes.append(len(got))
        seen += [e[0] for e in got]
    assert len(seen) == len(set(seen)) == 4001
    assert max(sizes) <= 2 * 4001 / len(ranges)
    # a range inside one millisecond splits by sequence number
    one_ms = plan_ranges(xr, JOURNAL, (1000, 0), (1000, 199), 4)
    assert [(a[1], b[1]) for a, b in one_ms] == [(0, 49), (50, 99), (100, 149), (150, 199)]
    # an empty or inverted range plans nothing
    assert plan_ranges(xr, JOURNAL, (9001, 0), (9999, 0), 4) == []
    assert parse_id(b'5-7') == (5, 7) and parse_id('5') == (5, 0)


# ---------------------------------------------------------------- batch reads


def test_batch_read_counts_per_namespace(spark, server, xr):
    add_events(xr, {'user': 3000, 'session': 2000, 'cart': 1000})
    add_events(xr, {'user': 50}, start=10_000, event='del')
    df = (
        spark.read.format('keyevents')
        .option('url', server.url())
        .option('partitions', 4)
        .option('pageSize', 700)
        .load()
    )
    assert df.columns == ['id', 'ts', 'db', 'event', 'key', 'namespace', 'deadline', 'lag_ms']
    rows = df.collect()
    assert len(rows) == len({r.id for r in rows}) == 6050
    expired = df.filter("event = 'expired'")
    assert counts(expired) == {'user': 3000, 'session': 2000, 'cart': 1000}
    r = expired.first()
    assert r.lag_ms == 3 and r.deadline is not None and r.db == 0
    assert df.filter("event = 'del'").filter('deadline is null and lag_ms is null').count() == 50

    only_del = (
        spark.read.format('keyevents').option('url', server.url()).option('events', 'del').load()
    )
    assert counts(only_del) == {'user': 50}
    by_regex = (
        spark.read.format('keyevents')
        .option('url', server.url())
        .option('events', 'expired')
        .option('namespaceRegex', r'^(u|c)\w*:')
        .load()
    )
    assert counts(by_regex) == {'u': 3000, 'c': 1000, '': 2000}


def test_batch_read_of_missing_journal_is_empty(spark, server, xr):
    df = spark.read.format('keyevents').option('url', server.url()).load()
    assert df.count() == 0


# ---------------------------------------------------------------- streaming


def _start_query(spark, url, checkpoint, sink, **options):
    reader = spark.readStream.format('keyevents').option('url', url).option('partitions', 3)
    for k, v in options.items():
        reader = reader.option(k, str(v))

    def collect(df, batch_id):
        sink.append((batch_id, [r.id for r in df.select('id').collect()]))

    return (
        reader.load()
        .writeStream.foreachBatch(collect)
        .option('checkpointLocation', checkpoint)
        .trigger(processingTime='300 milliseconds')
        .start()
    )


def test_stream_restart_from_checkpoint_neither_loses_nor_repeats(spark, server, xr, tmp_path):
    add_events(xr, {'user': 1500, 'session': 900, 'cart': 600})
    checkpoint = str(tmp_path / 'checkpoint')
    sink = []
    q = _start_query(spark, server.url(), checkpoint, sink, maxEventsPerBatch=500)
    wait_for(lambda: sum(len(ids) for _, ids in sink) >= 1000, 60, 'first batches')
    q.stop()  # mid-way: 3000 events, at most ~2 batches in
    done_before = sum(len(ids) for _, ids in sink)
    assert done_before < 3000
    assert all(len(ids) <= 500 for _, ids in sink)
    add_events(xr, {'user': 300}, start=5000)  # more arrive while it is down
    q = _start_query(spark, server.url(), checkpoint, sink, maxEventsPerBatch=500)
    try:
        wait_for(lambda: sum(len(ids) for _, ids in sink) >= 3300, 60, 'all events')
        time.sleep(1)  # anything extra would show up now
    finally:
        q.stop()
    ids = [i for _, batch in sink for i in batch]
    # a batch that ran but was not committed before the stop is replayed with the same ids;
    # foreachBatch sinks see it twice under the same batch id (that is how Spark signals it)
    by_batch = {}
    for batch_id, batch in sink:
        assert by_batch.setdefault(batch_id, batch) == batch
    unique = [i for batch in by_batch.values() for i in batch]
    assert len(unique) == len(set(unique)) == 3300
    assert set(ids) == {e[0].decode() for e in xr.xrange(JOURNAL)}


def test_trim_on_commit_keeps_journal_short(spark, server, xr, tmp_path):
    """With trimOnCommit the journal keeps only what arrived since the last committed batch.
    Spark commits a batch's offsets when it plans the next one, so once a round of events
    has been delivered, the rounds before it are gone from the journal: it holds at most
    the latest round, where without trimming it would hold every round. Rounds wait for the
    query rather than for the clock, so a slow machine only takes longer."""
    sink = []
    written = []
    q = _start_query(spark, server.url(), str(tmp_path / 'ck'), sink, trimOnCommit='true')
    try:
        for round_ in range(5):
            written.extend(add_events(xr, {'user': 1000}, start=round_ * 1000))
            wait_for(lambda: sum(len(ids) for _, ids in sink) >= len(written), 120, 'catch up')
            if round_:
                wait_for(lambda: xr.xlen(JOURNAL) <= 1000, 120, 'earlier rounds trimmed')
    finally:
        q.stop()
    got = [i for _, ids in sink for i in ids]
    assert len(got) == len(set(got)) == len(written) == 5000
    assert xr.xlen(JOURNAL) <= 1000


# ---------------------------------------------------------------- the server's journal

KEYS = {'user': 30, 'session': 20, 'cart': 10}


def write_expiring_keys(client, px=300):
    pipe = client.pipeline(transaction=False)
    for ns, n in KEYS.items():
        for i in range(n):
            pipe.set(f'{ns}:{i}', 'v', px=px)
    pipe.set('user:persistent', 'v')  # never expires
    pipe.set('other:1', 'v', px=3_600_000)  # not within the test, however slow
    pipe.execute()


def test_journal_expired_counts_per_namespace(spark):
    srv = journal_server()
    try:
        r = srv.client()
        write_expiring_keys(r)
        total = sum(KEYS.values())
        wait_for(lambda: r.xlen(JOURNAL) >= total, 60, 'expired events in the journal')
        df = spark.read.format('keyevents').option('url', srv.url()).load()
        expired = df.filter("event = 'expired'")
        assert counts(expired) == KEYS
        rows = expired.collect()
        assert len({row.id for row in rows}) == total
        assert all(
            row.deadline is not None and row.lag_ms is not None and row.lag_ms >= 0 for row in rows
        )
    finally:
        srv.stop()


def test_journal_entries_reply_like_xadded_entries():
    """The journal stores each entry's reply pre-encoded (store/journal.py); its XRANGE and
    XREAD replies must be byte for byte those of the same entries XADDed, in RESP2 and 3."""
    from rawconn import RawConn

    srv = EmbeddedServer(keyevent_journal_events='xg', save='').start()
    try:
        r = srv.client()
        keys = [b'pct%s%d:1', b'crlf\r\n:2', b'bin\xff\x00:3', b'plain:4']
        for k in keys:
            r.set(k, 'v', px=1)
        r.set(b'gone:%', 'v')
        r.delete(b'gone:%')  # a `del`: no deadline/lag
        # an `expire` and an `expired` per key, and the `del`
        wait_for(lambda: r.xlen(JOURNAL) >= 2 * len(keys) + 1, 60, 'journal entries')
        for entry_id, fields in r.xrange(JOURNAL):
            flat = [x for kv in fields.items() for x in kv]
            r.execute_command('XADD', 'copy', entry_id, *flat)
        with RawConn(srv.port) as c:
            for proto in (2, 3):
                c.cmd('HELLO', proto)
                for cmd in (
                    ('XRANGE', '{}', '-', '+'),
                    ('XREVRANGE', '{}', '+', '-', 'COUNT', 3),
                    ('XREAD', 'STREAMS', '{}', '0'),
                ):
                    got = c.cmd(*[a.format(JOURNAL) if a == '{}' else a for a in cmd])
                    want = c.cmd(*[a.format('copy') if a == '{}' else a for a in cmd])
                    assert got.replace(b'$13\r\n__keyevents__', b'$4\r\ncopy') == want, cmd
    finally:
        srv.stop()


def test_expiry_report_cli_prints_exact_counts(tmp_path):
    proc, port = spawn_store('--keyevent-journal-events', 'x')
    try:
        import redis

        r = redis.Redis(port=port)
        write_expiring_keys(r)
        wait_for(lambda: r.xlen(JOURNAL) >= sum(KEYS.values()), 60, 'journal')
        env = dict(os.environ, PYTHONPATH=ROOT)
        out = subprocess.run(
            [
                sys.executable,
                '-m',
                'spark.expiry_report',
                '--url',
                f'redis://127.0.0.1:{port}',
                '--format',
                'csv',
                '--out',
                '/dev/stdout',
                '--master',
                'local[2]',
            ],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
            cwd=str(tmp_path),
        )
        assert out.returncode == 0, out.stderr[-3000:]
        rows = list(csv.DictReader(io.StringIO(out.stdout)))
        assert list(rows[0])[:2] == ['namespace', 'expired']
        assert {row['namespace']: int(row['expired']) for row in rows} == KEYS
        assert 'batch 0:' in out.stderr
    finally:
        stop(proc)


# ---------------------------------------------------------------- report state (no Spark)


def test_report_state_merges_batches_and_survives_a_restart():
    from spark.expiry_report import ReportState, percentile

    rows = [('user', 'expired', 60_000, lag, 10, 61_000, 119_000) for lag in range(100)]
    rows += [
        ('user', 'del', 60_000, None, 5, 60_500, 60_900),
        ('cart', 'expired', 120_000, 7, 3, 121_000, 122_000),
    ]
    st = ReportState()
    st.merge(rows[:50])
    st.merge(rows[50:])
    assert st.summary_rows() == [
        ['cart', 3, 0, 7, 7, 121_000, 122_000],
        ['user', 1000, 5, 49, 98, 60_500, 119_000],
    ]
    assert st.window_rows() == [[60_000, 120_000, 'user', 1000], [120_000, 180_000, 'cart', 3]]
    again = ReportState.from_json(st.to_json())
    assert again.summary_rows() == st.summary_rows()
    assert again.window_rows() == st.window_rows()
    assert percentile({}, 0.5) is None and percentile({5: 1}, 0.99) == 5


# ---------------------------------------------------------------- the chart (no Spark)

T0 = 1_704_164_640_000  # 2024-01-02 03:04:00 UTC
MIN = 60_000


def open_png(path):
    from PIL import Image

    img = Image.open(path)
    img.load()  # decodes every row: fails if truncated
    return img


def test_chart_draws_one_line_per_namespace_with_missing_minutes_as_zero(tmp_path):
    from spark.chart import line_chart_png

    path = tmp_path / 'chart.png'
    series = {
        'user': [(T0, 10), (T0 + MIN, 20), (T0 + 3 * MIN, 40)],  # nothing in minute 2
        'cart': [(T0 + 3 * MIN, 5)],
        '': [(T0 + MIN, 1)],
    }
    fig = line_chart_png(str(path), series, title='expirations', y_label='per minute')
    img = open_png(path)
    assert img.format == 'PNG' and img.size == (960, 480)
    assert os.listdir(tmp_path) == ['chart.png']  # the temporary file was renamed
    ax = fig.axes[0]
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == (
        'expirations',
        'time (UTC)',
        'per minute',
    )
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ['(no namespace)', 'cart', 'user']
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines['user'].get_ydata()) == [10, 20, 0, 40]
    assert list(lines['cart'].get_ydata()) == [0, 0, 0, 5]
    assert [int(x.astype('int64')) for x in lines['cart'].get_xdata()] == [
        T0,
        T0 + MIN,
        T0 + 2 * MIN,
        T0 + 3 * MIN,
    ]
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] >= 40
    # ticks read as UTC wall-clock minutes whatever the machine's time zone
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert '03:05' in ticks and '03:06' in ticks, ticks
    # every line's colour is in the image (drawn, not only declared)
    from matplotlib.colors import to_rgb

    pixels = {rgb for _, rgb in img.convert('RGB').getcolors(maxcolors=img.width * img.height)}
    for line in lines.values():
        assert tuple(round(255 * c) for c in to_rgb(line.get_color())) in pixels, line.get_label()


def test_chart_plots_long_spans_as_given_and_empty_input_says_so(tmp_path):
    from spark.chart import MAX_STEPS, line_chart_png

    far = T0 + (MAX_STEPS + 10) * MIN
    fig = line_chart_png(str(tmp_path / 'long.png'), {'user': [(far, 3), (T0, 7)]})
    (line,) = fig.axes[0].get_lines()
    assert list(line.get_ydata()) == [7, 3]  # not MAX_STEPS zeros in between
    assert open_png(tmp_path / 'long.png').size == (960, 480)

    fig = line_chart_png(
        str(tmp_path / 'empty.png'), {}, title='nothing yet', width=640, height=320
    )
    ax = fig.axes[0]
    assert ax.get_lines() == [] and ax.get_legend() is None
    assert [t.get_text() for t in ax.texts] == ['no events']
    assert open_png(tmp_path / 'empty.png').size == (640, 320)


def test_report_writes_the_chart_next_to_its_tables(tmp_path):
    from spark.expiry_report import ReportState, write_outputs

    st = ReportState()
    st.merge(
        [
            ('user', 'expired', T0 + i * MIN, 1, 100 + i, T0 + i * MIN, T0 + i * MIN + 999)
            for i in range(5)
        ]
        + [('cart', 'expired', T0 + 2 * MIN, 2, 40, T0, T0 + 1)]
    )
    out = tmp_path / 'report'
    write_outputs(st, str(out), 'csv')
    assert sorted(os.listdir(out)) == ['expirations.png', 'summary.csv', 'windows.csv']
    img = open_png(out / 'expirations.png')
    assert img.format == 'PNG' and img.size == (960, 480)
    chart = tmp_path / 'elsewhere.png'
    write_outputs(st, '/dev/stdout', 'csv', chart=str(chart))
    assert open_png(chart).format == 'PNG'


# ---------------------------------------------------------------- across a server restart


def _journal_keys(client):
    """{entry id: (key, ts)} of the journal's `expired` entries, read with XRANGE."""
    return {
        i.decode(): (f[b'key'].decode(), int(f[b'ts']))
        for i, f in client.xrange(JOURNAL)
        if f[b'event'] == b'expired'
    }


def _expire(client, prefix, n, px, start=0):
    """Write n keys `prefix:<start + i>` that expire in px ms; returns their names."""
    keys = [f'{prefix}:{i}' for i in range(start, start + n)]
    pipe = client.pipeline(transaction=False)
    for k in keys:
        pipe.set(k, 'v', px=px)
    pipe.execute()
    return keys


@pytest.mark.parametrize(
    'how',
    [
        # every journal entry is fsynced before any reply that could show it, so even a
        # crash (kill -9) loses nothing a reader may have seen, and duplicates nothing
        pytest.param(('--appendonly', 'yes', '--appendfsync', 'always'), id='aof-kill9'),
        # save points configured: SIGTERM saves the RDB before exiting, as Redis does
        pytest.param(('--save', '3600 1'), id='rdb-sigterm'),
    ],
)
def test_stream_resumes_across_a_server_restart_exactly_once(spark, tmp_path, how):
    """The journal is persisted like any key, so a streaming query over it survives the
    server going down under it: the server stops while the query runs (the query fails or
    is stopped), comes back on the same `dir`, keys that expired while it was down are
    journaled right after start-up, more expire, and the query restarted from its
    checkpoint ends up with every expired key exactly once, by key and by entry id."""
    import redis

    data = tmp_path / 'data'
    data.mkdir()
    crash = '--appendonly' in how
    args = ('--dir', str(data), '--keyevent-journal-events', 'x', *how)
    proc, port = spawn_store(*args)
    url = f'redis://127.0.0.1:{port}'
    checkpoint = str(tmp_path / 'checkpoint')
    sink = []
    produced = []
    queries = []  # stopped at the end whatever happens: the Spark session is shared
    r = redis.Redis('127.0.0.1', port)
    try:
        # before: 600 keys expire; the query reads them 100 per micro-batch
        produced += _expire(r, 'user', 400, 1) + _expire(r, 'cart', 200, 1)
        wait_for(lambda: r.xlen(JOURNAL) >= 600, 60, 'expired events before the restart')
        queries.append(_start_query(spark, url, checkpoint, sink, maxEventsPerBatch=100))
        wait_for(lambda: sum(len(ids) for _, ids in sink) >= 100, 120, 'first batches')
        # these expire while the server is down: the kill comes well before their deadline
        down = _expire(r, 'session', 150, 3000)
        deadline_ms = int(time.time() * 1000) + 3000
        assert r.pttl(down[-1]) > 1000
        before = _journal_keys(r)
        r.close()
        if crash:
            proc.kill()
        else:
            proc.terminate()
        assert proc.wait(60) == (-9 if crash else 0), proc.stdout.read()[-3000:]
        down_ms = int(time.time() * 1000)
        with contextlib.suppress(Exception):  # it may have failed on the lost connection
            queries[0].stop()
        produced += down
        while time.time() * 1000 < deadline_ms + 200:  # their deadlines pass while down
            time.sleep(0.05)

        proc, _ = spawn_store(*args, port=port)
        r = redis.Redis('127.0.0.1', port)
        wait_for(lambda: r.xlen(JOURNAL) >= 750, 60, 'events of keys expired while down')
        after = _journal_keys(r)
        # the entries read before are still there, same ids and keys; the new ones follow
        assert {i: after[i] for i in before} == before
        late = {i: kt for i, kt in after.items() if i not in before}
        assert sorted(k for k, _ in late.values()) == sorted(down)
        assert all(ts >= down_ms for _, ts in late.values())
        assert min(parse_id(i) for i in late) > max(parse_id(i) for i in before)

        produced += _expire(r, 'user', 100, 1, start=400)
        produced += _expire(r, 'order', 100, 1)
        total = len(produced)
        wait_for(lambda: r.xlen(JOURNAL) >= total, 60, 'expired events after the restart')
        queries.append(_start_query(spark, url, checkpoint, sink, maxEventsPerBatch=100))
        wait_for(lambda: len({i for _, ids in sink for i in ids}) >= total, 120, 'all')
        time.sleep(1)  # anything extra would show up now
        queries[1].stop()
        journal = _journal_keys(r)
    finally:
        for q in queries:
            with contextlib.suppress(Exception):
                q.stop()
        r.close()
        stop(proc)
    # a batch that ran but was not committed is replayed under the same batch id, with the
    # same ids: the restarted server must give the very entries the first run saw
    by_batch = {}
    for batch_id, batch in sink:
        assert by_batch.setdefault(batch_id, batch) == batch, batch_id
    ids = [i for batch in by_batch.values() for i in batch]
    assert len(ids) == len(set(ids)) == len(journal) == total
    consumed = sorted(journal[i][0] for i in ids)
    assert consumed == sorted(produced)  # every key expired once, none missing, none twice
