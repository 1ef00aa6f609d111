"""The keyspace-event journal (store/journal.py): keyspace events appended to a stream,
observed over TCP with XRANGE/XLEN/XREAD, CONFIG and real subscribers."""

import threading
import time

import pytest
import redis

from conftest import WAIT, capture_events, now_ms, run_all, wait_until

JOURNAL = b'__keyevents__'


def entries(client, key=JOURNAL):
    """The journal as a list of field dicts, oldest first."""
    return [fields for _, fields in client.xrange(key)]


@pytest.fixture
def journal(make_server):
    """A dedicated server journaling every class ('A'), its client, flushed."""
    srv = make_server(keyevent_journal_events='A')
    client = srv.client(protocol=2)
    yield srv, client
    client.close()


def test_expired_entries_have_deadline_and_lag(make_server):
    srv = make_server(keyevent_journal_events='x')
    c = srv.client(protocol=2)
    c.set('plain', 'v')  # '$' is not journaled
    t0 = now_ms()
    c.set('active', 'v', px=30)
    c.execute_command('select', 3)
    c.set('in3', 'v', px=30)
    c.execute_command('select', 0)
    wait_until(lambda: c.xlen(JOURNAL) == 2, 'the active expiry')
    # A lazy expiry, found at least 140 ms late.
    c.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '0')
    c.set('lazy', 'v', px=10)
    time.sleep(0.15)
    assert c.get('lazy') is None
    got = entries(c)
    assert [(e[b'db'], e[b'event'], e[b'key']) for e in got[:2]] in (
        [(b'0', b'expired', b'active'), (b'3', b'expired', b'in3')],
        [(b'3', b'expired', b'in3'), (b'0', b'expired', b'active')],
    )
    assert [(e[b'db'], e[b'event'], e[b'key']) for e in got[2:]] == [(b'0', b'expired', b'lazy')]
    for e in got:
        assert set(e) == {b'db', b'event', b'key', b'ts', b'deadline', b'lag'}
        ts, deadline, lag = int(e[b'ts']), int(e[b'deadline']), int(e[b'lag'])
        assert lag == ts - deadline and lag >= 0
        assert t0 + 10 <= deadline <= now_ms() and deadline <= ts <= now_ms()
    # (how late the active expiry is, is bench/expiry_lag.py's measure)
    assert int(got[2][b'lag']) >= 140
    c.close()


def test_entries_for_each_class(journal):
    srv, c = journal
    t0 = now_ms()
    run_all(
        c,
        [
            ('set', 'a', '1'),
            ('expire', 'a', '100'),
            ('persist', 'a'),
            ('incr', 'n'),
            ('rename', 'a', 'b'),
            ('del', 'b'),
            ('xadd', 's', '1-1', 'f', 'v'),
            ('select', '2'),
            ('set', 'z', '1'),
            ('get', 'missing'),
            ('select', '0'),
        ],
    )
    got = entries(c)
    assert [(e[b'db'], e[b'event'], e[b'key']) for e in got] == [
        (b'0', b'set', b'a'),
        (b'0', b'expire', b'a'),
        (b'0', b'persist', b'a'),
        (b'0', b'incrby', b'n'),
        (b'0', b'rename_from', b'a'),
        (b'0', b'rename_to', b'b'),
        (b'0', b'del', b'b'),
        (b'0', b'xadd', b's'),
        (b'2', b'set', b'z'),
    ]
    for e in got:
        assert set(e) == {b'db', b'event', b'key', b'ts'}
        assert t0 <= int(e[b'ts']) <= now_ms()
    # Entry ids follow the event time.
    ids = [i for i, _ in c.xrange(JOURNAL)]
    assert ids == sorted(ids) and int(ids[0].split(b'-')[0]) >= t0


def test_n_and_m_classes_are_opt_in(make_server):
    srv = make_server(keyevent_journal_events='$nm')
    c = srv.client(protocol=2)
    c.set('a', '1')
    c.get('nope')
    c.set('a', '2')
    assert [(e[b'event'], e[b'key']) for e in entries(c)] == [
        (b'new', b'a'),
        (b'set', b'a'),
        (b'keymiss', b'nope'),
        (b'set', b'a'),
    ]
    c.close()


def test_maxlen_trims(journal):
    srv, c = journal
    c.config_set('keyevent-journal-maxlen', '100')
    p = c.pipeline(transaction=False)
    for i in range(500):
        p.set(f'k{i}', 'v')
    p.execute()
    assert c.xlen(JOURNAL) == 100
    assert [e[b'key'] for e in entries(c)] == [f'k{i}'.encode() for i in range(400, 500)]
    c.config_set('keyevent-journal-maxlen', '10')
    c.set('last', 'v')
    assert c.xlen(JOURNAL) == 10
    assert c.config_get('keyevent-journal-maxlen') == {'keyevent-journal-maxlen': '10'}


def test_journal_key_can_be_renamed(journal):
    srv, c = journal
    c.set('before', 'v')
    c.config_set('keyevent-journal-key', 'other-journal')
    assert c.config_get('keyevent-journal-key') == {'keyevent-journal-key': 'other-journal'}
    c.set('after', 'v')
    assert [e[b'key'] for e in entries(c)] == [b'before']
    assert [e[b'key'] for e in entries(c, 'other-journal')] == [b'after']
    # Events about the old journal key are now ordinary events.
    c.xtrim(JOURNAL, 0, approximate=False)
    assert [(e[b'event'], e[b'key']) for e in entries(c, 'other-journal')][-1] == (
        b'xtrim',
        JOURNAL,
    )
    # ... and events about the new one are not journaled.
    n = c.xlen('other-journal')
    c.xtrim('other-journal', maxlen=1, approximate=False)
    c.xdel('other-journal', c.xrange('other-journal')[0][0])
    assert c.xlen('other-journal') == 0 and n > 1
    c.set('x', 'v')
    assert [e[b'key'] for e in entries(c, 'other-journal')] == [b'x']


def test_journal_writes_are_not_events(journal):
    """The journal never records events about itself, and its own XADDs are not keyspace
    events: with notify-keyspace-events KEA (and n) a subscriber sees nothing about the
    journal key while events are journaled."""
    srv, c = journal
    c.set('a', '1')
    got = capture_events(
        c,
        [
            ('set', 'b', '1'),
            ('del', 'a'),
            ('xadd', 's', '*', 'f', 'v'),
            ('expire', 'b', '100'),
            ('flushall',),
            ('set', 'c', '1'),
        ],
        'KEAn',
    )
    assert got  # the user's commands were announced
    assert not [ch for ch, m in got if JOURNAL in ch or m == JOURNAL], got
    assert [e[b'key'] for e in entries(c)] == [b'c']  # flushall took the rest
    # User commands on the journal key: not journaled (XTRIM, XDEL, XADD, SETID).
    n = c.xlen(JOURNAL)
    first = c.xrange(JOURNAL)[0][0]
    c.xadd(JOURNAL, {'user': 'entry'})
    c.xdel(JOURNAL, first)
    c.xtrim(JOURNAL, maxlen=1, approximate=False)
    assert c.xlen(JOURNAL) == 1 and n == 1
    assert entries(c) == [{b'user': b'entry'}]
    info = c.info('stats')
    assert info['keyevent_journal_appended'] == 6


def test_journal_events_flags_render_like_notify_flags(make_server, ref):
    srv = make_server()
    c = srv.client(protocol=2)
    try:
        for s in [
            '',
            'A',
            'x',
            'g$',
            'An',
            'Am',
            'Ag',
            'g$lshzxetd',
            'g$lshzxet',
            'nm',
            'xe',
            'tx$',
            'mnA',
            'dtez',
        ]:
            assert c.config_set('keyevent-journal-events', s)
            ref.config_set('notify-keyspace-events', s)
            want = ref.config_get('notify-keyspace-events')['notify-keyspace-events']
            got = c.config_get('keyevent-journal-events')['keyevent-journal-events']
            assert got == want, s
        c.config_set('keyevent-journal-events', 'x$')
        for bad in ('K', 'E', 'KEA', 'xE', 'Kx', 'q', 'x '):
            with pytest.raises(redis.ResponseError, match='Invalid event class character'):
                c.config_set('keyevent-journal-events', bad)
        assert c.config_get('keyevent-journal-events') == {'keyevent-journal-events': '$x'}
    finally:
        ref.config_set('notify-keyspace-events', '')
        c.close()


def test_journal_without_pubsub(make_server):
    """notify-keyspace-events off: no pub/sub traffic at all, journal entries still
    written."""
    srv = make_server(keyevent_journal_events='A')
    c = srv.client(protocol=2)
    assert c.config_get('notify-keyspace-events') == {'notify-keyspace-events': ''}
    got = capture_events(
        c,
        [
            ('set', 'a', '1'),
            ('set', 'b', '1', 'px', '20'),
            ('debug', 'sleep', '0.05'),
            ('get', 'b'),
            ('del', 'a'),
        ],
        '',
        pattern='*',
    )
    assert got == []
    assert [(e[b'event'], e[b'key']) for e in entries(c)] == [
        (b'set', b'a'),
        (b'set', b'b'),
        (b'expire', b'b'),
        (b'expired', b'b'),
        (b'del', b'a'),
    ]
    assert c.info('stats')['pubsub_messages_delivered'] == 2  # only the sentinels
    c.close()


@pytest.mark.parametrize('exists', [False, True])
def test_blocked_xread_is_woken_by_a_journal_entry(make_server, exists):
    srv = make_server(keyevent_journal_events='$x')
    c = srv.client(protocol=2)
    if exists:
        c.set('first', 'v')
    result = {}

    def reader():  # BLOCK 0: only an entry can end the wait
        rc = srv.client(protocol=2)
        result['reply'] = rc.xread({JOURNAL: '$'}, block=0)
        rc.close()

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    wait_until(lambda: c.info('clients')['blocked_clients'] == 1, 'XREAD blocking')
    c.set('wake', 'v', px=30)  # the set wakes it (the expiry comes later)
    th.join(WAIT)
    assert not th.is_alive()
    [[key, items]] = result['reply']
    assert key == JOURNAL and len(items) == 1
    assert items[0][1] == {
        b'db': b'0',
        b'event': b'set',
        b'key': b'wake',
        b'ts': items[0][1][b'ts'],
    }
    c.close()


def test_blocked_xread_is_woken_by_an_active_expiry(make_server):
    srv = make_server(keyevent_journal_events='x')
    c = srv.client(protocol=2)
    result = {}

    def reader():  # BLOCK 0: only an entry can end the wait
        rc = srv.client(protocol=2)
        result['reply'] = rc.xread({JOURNAL: '$'}, block=0)
        result['at'] = time.monotonic()
        rc.close()

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    wait_until(lambda: c.info('clients')['blocked_clients'] == 1, 'XREAD blocking')
    t = time.monotonic()
    c.set('soon', 'v', px=200)  # SET is not journaled ('x' only): the expiry wakes it
    th.join(WAIT)
    assert not th.is_alive()
    [[key, items]] = result['reply']
    assert key == JOURNAL
    assert [(f[b'event'], f[b'key']) for _, f in items] == [(b'expired', b'soon')]
    assert result['at'] - t >= 0.199  # not before the deadline
    c.close()
