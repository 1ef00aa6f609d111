"""Streams: XADD/XRANGE/XREAD/XTRIM/XDEL, consumer groups, blocking reads, and the
internal append API, with differential cases against redis-server 7.0."""

import threading
import time

import pytest
import redis

from conftest import WAIT, capture_events, now_ms, raw_same, run_all, wait_until
from rawconn import RawConn, pack
from store.types.stream import Stream, format_id, make_id


def raw(client):
    """Turn off redis-py's reply parsing: tests compare the server's replies as sent."""
    client.response_callbacks.clear()
    return client


@pytest.fixture
def both(both_resp):
    """(ours, redis-server) raw clients speaking the same protocol, RESP2 and RESP3."""
    return [raw(c) for c in both_resp]


def blocked(server, n=1):
    """Wait until `n` clients are blocked (so what follows happens after they block)."""
    c = server.client()
    try:
        wait_until(lambda: c.info('clients')['blocked_clients'] == n, f'{n} blocked clients')
    finally:
        c.close()


@pytest.fixture
def r(r):
    return raw(r)


@pytest.fixture
def r3(r3):
    return raw(r3)


def _normalize(cmd, reply):
    """Zero the idle times of extended XPENDING replies (they depend on timing)."""
    if cmd[0] == 'XPENDING' and len(cmd) > 3 and isinstance(reply, list):
        return [[e[0], e[1], 0, e[3]] for e in reply]
    return reply


def assert_same(both, commands):
    ours, theirs = both
    got, want = run_all(ours, commands), run_all(theirs, commands)
    for cmd, g, w in zip(commands, got, want):
        assert _normalize(cmd, g) == _normalize(cmd, w), f'{cmd!r}: ours {g!r} != redis {w!r}'


# -- differential cases (explicit ids, so both servers agree) ----------------------------

BASIC = [
    ('XADD', 's', '1-1', 'a', '1'),
    ('XADD', 's', '1-1', 'a', '1'),
    ('XADD', 's', '1-0', 'a', '1'),
    ('XADD', 's', '1-*', 'b', '2'),
    ('XADD', 's', '2-*', 'c', '3', 'd', '4'),
    ('XADD', 's', '5', 'e', '5'),
    ('XADD', 's', '0-0', 'x', 'y'),
    ('XADD', 'new', '0-0', 'x', 'y'),
    ('EXISTS', 'new'),
    ('XADD', 'new', '0-*', 'x', 'y'),
    ('XADD', 'new2', '0-1', 'x', 'y'),
    ('XADD', 's', 'abc', 'x', 'y'),
    ('XADD', 's', '1-x', 'x', 'y'),
    ('XADD', 's', '-', 'x', 'y'),
    ('XADD', 's', '+', 'x', 'y'),
    ('XADD', 's', '10-1', 'x'),
    ('XADD', 's', '10-1', 'x', 'y', 'z'),
    ('XADD', 's', 'NOMKSTREAM', '11-1', 'x', 'y'),
    ('XADD', 'missing', 'NOMKSTREAM', '11-1', 'x', 'y'),
    ('EXISTS', 'missing'),
    ('XADD', 's', 'MAXLEN', '-1', '12-1', 'x', 'y'),
    ('XADD', 's', 'MAXLEN', 'x', '12-1', 'x', 'y'),
    ('XADD', 's', 'MAXLEN', '5', 'MINID', '3', '12-1', 'x', 'y'),
    ('XADD', 's', 'LIMIT', '5', '12-1', 'x', 'y'),
    ('XADD', 's', 'MAXLEN', '5', 'LIMIT', '5', '12-1', 'x', 'y'),
    ('XADD', 's', 'MAXLEN', '=', '5', 'LIMIT', '5', '12-1', 'x', 'y'),
    ('XADD', 's', 'MAXLEN', '~', '5', 'LIMIT', '-1', '12-1', 'x', 'y'),
    ('XLEN', 's'),
    ('XLEN', 'nokey'),
    ('XRANGE', 's', '-', '+'),
    ('XRANGE', 's', '-', '+', 'COUNT', '2'),
    ('XRANGE', 's', '-', '+', 'COUNT', '0'),
    ('XRANGE', 's', '-', '+', 'COUNT', '-3'),
    ('XRANGE', 's', '-', '+', 'COUNT'),
    ('XRANGE', 's', '-', '+', 'LIMIT', '2'),
    ('XRANGE', 's', '(1-1', '+'),
    ('XRANGE', 's', '(1-1', '(2-0'),
    ('XRANGE', 's', '1', '2'),
    ('XRANGE', 's', '2', '1'),
    ('XRANGE', 's', '(-', '+'),
    ('XRANGE', 's', '-', '(+'),
    ('XRANGE', 's', '(18446744073709551615-18446744073709551615', '+'),
    ('XRANGE', 's', '-', '(0-0'),
    ('XRANGE', 's', '-', '(0'),
    ('XRANGE', 's', '(', '+'),
    ('XRANGE', 's', '007', '+'),
    ('XRANGE', 's', '+5', '+'),
    ('XRANGE', 's', '18446744073709551616', '+'),
    ('XRANGE', 'nokey', '-', '+'),
    ('XRANGE', 'nokey', '-', '+', 'COUNT', '0'),
    ('XREVRANGE', 's', '+', '-'),
    ('XREVRANGE', 's', '+', '-', 'COUNT', '2'),
    ('XREVRANGE', 's', '(5-0', '(1-1'),
    ('XREVRANGE', 's', '-', '+'),
    ('XDEL', 's', '2-0', '99-0', '2-0'),
    ('XDEL', 's', 'bad'),
    ('XDEL', 'nokey', 'bad'),
    ('XRANGE', 's', '-', '+'),
    ('XREVRANGE', 's', '+', '-', 'COUNT', '1'),
    ('XLEN', 's'),
    ('XINFO', 'STREAM', 'nokey'),
    ('XTRIM', 's', 'MAXLEN', '2'),
    ('XRANGE', 's', '-', '+'),
    ('XTRIM', 's', 'MINID', '5-0'),
    ('XTRIM', 's', 'MINID', '5-0'),
    ('XRANGE', 's', '-', '+'),
    ('XTRIM', 's'),
    ('XTRIM', 's', 'FOO', '1'),
    ('XTRIM', 's', 'MAXLEN', '1', 'LIMIT', '1'),
    ('XTRIM', 's', 'MAXLEN'),
    ('XTRIM', 'nokey', 'MAXLEN', '0'),
    ('XTRIM', 's', 'MINID', '~', '6', 'LIMIT', '10'),
    ('XTRIM', 's', 'MAXLEN', '0'),
    ('XLEN', 's'),
    ('XADD', 's', '1-1', 'a', 'b'),
    ('XADD', 's', '*', 'a', 'b', 'c'),
    ('SET', 'str', 'v'),
    ('XADD', 'str', '1-1', 'a', 'b'),
    ('XRANGE', 'str', '-', '+'),
    ('XLEN', 'str'),
    ('XTRIM', 'str', 'MAXLEN', '1'),
    ('XDEL', 'str', '1-1'),
    ('XREAD', 'STREAMS', 'str', '0'),
    ('TYPE', 's'),
]


def test_basic_differential(both):
    assert_same(both, BASIC)


def _info_without_rax(reply):
    d = dict(zip(reply[::2], reply[1::2])) if isinstance(reply, list) else dict(reply)
    d.pop(b'radix-tree-nodes', None)
    return d


INFO_SETUP = [
    ('XADD', 'i', '1-1', 'a', '1'),
    ('XADD', 'i', '2-1', 'b', '2'),
    ('XADD', 'i', '3-1', 'c', '3'),
    ('XADD', 'i', '4-1', 'd', '4'),
]


@pytest.mark.parametrize(
    'ops',
    [
        [],
        [('XDEL', 'i', '1-1')],
        [('XDEL', 'i', '2-1')],
        [('XDEL', 'i', '1-1', '2-1', '3-1', '4-1')],
        [('XTRIM', 'i', 'MAXLEN', '0')],
        [('XTRIM', 'i', 'MAXLEN', '1')],
        [('XTRIM', 'i', 'MINID', '3')],
        [('XDEL', 'i', '4-1')],
    ],
)
def test_xinfo_stream_differential(both, ops):
    ours, theirs = both
    for c in both:
        run_all(c, INFO_SETUP + ops)
    assert _info_without_rax(ours.execute_command('XINFO', 'STREAM', 'i')) == _info_without_rax(
        theirs.execute_command('XINFO', 'STREAM', 'i')
    )


def test_approx_trim_whole_nodes_differential(both):
    cmds = []
    for i in range(1, 351):
        cmds.append(('XADD', 'big', f'{i}-0', 'f', 'v'))
    cmds += [
        ('XTRIM', 'big', 'MAXLEN', '~', '300'),
        ('XTRIM', 'big', 'MAXLEN', '~', '120'),
        ('XLEN', 'big'),
        ('XRANGE', 'big', '-', '+', 'COUNT', '1'),
        ('XTRIM', 'big', 'MAXLEN', '~', '10', 'LIMIT', '99'),
        ('XTRIM', 'big', 'MINID', '~', '310'),
        ('XLEN', 'big'),
        ('XDEL', 'big', '301-0', '302-0'),
        ('XTRIM', 'big', 'MAXLEN', '=', '5'),
        ('XRANGE', 'big', '-', '+'),
        ('XADD', 'big', 'MAXLEN', '3', '400-0', 'f', 'v'),
        ('XRANGE', 'big', '-', '+'),
        ('XADD', 'big', 'MINID', '400', '401-0', 'f', 'v'),
        ('XRANGE', 'big', '-', '+'),
        ('XLEN', 'big'),
    ]
    assert_same(both, cmds)


GROUPS = [
    ('XGROUP', 'CREATE', 'g', 'grp', '$'),
    ('XGROUP', 'CREATE', 'g', 'grp', '$', 'MKSTREAM'),
    ('XGROUP', 'CREATE', 'g', 'grp', '$', 'MKSTREAM'),
    ('XGROUP', 'CREATE', 'g', 'grp2', '0', 'ENTRIESREAD', '-2'),
    ('XGROUP', 'CREATE', 'g', 'grp2', '0', 'BOGUS'),
    ('XGROUP', 'CREATE', 'g', 'grp2', 'bad'),
    ('XGROUP', 'CREATE', 'g', 'grp2', '0'),
    ('XGROUP', 'CREATE', 'g', 'grp2', '0', 'MKSTREAM', 'ENTRIESREAD', '1', 'X'),
    ('XGROUP', 'FOO', 'g', 'grp2'),
    ('XGROUP', 'SETID', 'g', 'nogrp', '0'),
    ('XGROUP', 'CREATECONSUMER', 'g', 'nogrp', 'c'),
    ('XGROUP', 'DELCONSUMER', 'nokey', 'nogrp', 'c'),
    ('XADD', 'g', '1-0', 'a', '1'),
    ('XADD', 'g', '2-0', 'b', '2'),
    ('XADD', 'g', '3-0', 'c', '3'),
    ('XINFO', 'GROUPS', 'g'),
    ('XREADGROUP', 'GROUP', 'grp', 'alice', 'STREAMS', 'g', '>'),
    ('XREADGROUP', 'GROUP', 'grp2', 'alice', 'COUNT', '2', 'STREAMS', 'g', '>'),
    ('XREADGROUP', 'GROUP', 'grp2', 'bob', 'STREAMS', 'g', '>'),
    ('XREADGROUP', 'GROUP', 'grp2', 'bob', 'STREAMS', 'g', '>'),
    ('XREADGROUP', 'GROUP', 'grp2', 'alice', 'STREAMS', 'g', '0'),
    ('XREADGROUP', 'GROUP', 'grp2', 'alice', 'COUNT', '1', 'STREAMS', 'g', '1-0'),
    ('XREADGROUP', 'GROUP', 'grp2', 'alice', 'STREAMS', 'g', '$'),
    ('XREADGROUP', 'GROUP', 'nogrp', 'alice', 'STREAMS', 'g', '>'),
    ('XREADGROUP', 'GROUP', 'grp2', 'alice', 'STREAMS', 'nokey', '>'),
    ('XREADGROUP', 'GROUP', 'grp2', 'alice', 'STREAMS', 'g'),
    ('XREADGROUP', 'GROUP', 'grp2', 'alice', 'STREAMS', 'g', 'g', '>'),
    ('XREADGROUP', 'COUNT', '1', 'STREAMS', 'g', '>'),
    ('XREAD', 'GROUP', 'grp2', 'alice', 'STREAMS', 'g', '>'),
    ('XREAD', 'NOACK', 'STREAMS', 'g', '0'),
    ('XREAD', 'STREAMS', 'g', '>'),
    ('XREAD', 'STREAMS', 'g'),
    ('XREAD', 'COUNT', '1', 'STREAMS', 'g', 'nokey', '0', '0'),
    ('XREAD', 'STREAMS', 'g', '$'),
    ('XREAD', 'BLOCK', '-1', 'STREAMS', 'g', '$'),
    ('XREAD', 'BLOCK', 'x', 'STREAMS', 'g', '$'),
    ('XREAD', 'FOO', 'STREAMS', 'g', '$'),
    ('XREAD', 'COUNT', '1', 'g', '$'),
    ('XPENDING', 'g', 'grp2'),
    ('XPENDING', 'g', 'grp'),
    ('XPENDING', 'g', 'nogrp'),
    ('XPENDING', 'g', 'grp2', '-', '+'),
    ('XPENDING', 'g', 'grp2', 'IDLE', '0', '-', '+'),
    ('XPENDING', 'g', 'grp2', 'IDLE', 'x', '-', '+', '10'),
    ('XPENDING', 'g', 'grp2', '-', '+', 'x'),
    ('XPENDING', 'g', 'grp2', '(-', '+', '10'),
    ('XPENDING', 'g', 'grp2', '-', '+', '10', 'nobody'),
    ('XACK', 'g', 'grp2', '1-0', 'bad'),
    ('XACK', 'g', 'grp2', '1-0', '1-0', '9-0'),
    ('XACK', 'g', 'nogrp', '1-0'),
    ('XACK', 'nokey', 'grp2', '1-0'),
    ('XPENDING', 'g', 'grp2'),
    ('XREADGROUP', 'GROUP', 'grp2', 'alice', 'STREAMS', 'g', '0'),
    ('XDEL', 'g', '2-0'),
    ('XREADGROUP', 'GROUP', 'grp2', 'alice', 'STREAMS', 'g', '0'),
    ('XINFO', 'GROUPS', 'g'),
    ('XINFO', 'GROUPS', 'nokey'),
    ('XINFO', 'CONSUMERS', 'g', 'nogrp'),
    ('XINFO', 'FOO', 'g'),
    ('XINFO', 'STREAM'),
    ('XINFO', 'STREAM', 'g', 'FULL', 'COUNT'),
    ('XINFO', 'STREAM', 'g', 'FOO'),
    ('XCLAIM', 'g', 'nogrp', 'c', '0', '1-0'),
    ('XCLAIM', 'g', 'grp2', 'c', 'x', '1-0'),
    ('XCLAIM', 'g', 'grp2', 'carol', '0', '3-0', 'BOGUS'),
    ('XCLAIM', 'g', 'grp2', 'carol', '0', '3-0', 'IDLE', 'x'),
    ('XCLAIM', 'g', 'grp2', 'carol', '0', '3-0', 'TIME', 'x'),
    ('XCLAIM', 'g', 'grp2', 'carol', '0', '3-0', 'RETRYCOUNT', 'x'),
    ('XCLAIM', 'g', 'grp2', 'carol', '0', '3-0', 'LASTID', 'x'),
    ('XCLAIM', 'g', 'grp2', 'carol', '0', '3-0', '2-0', 'RETRYCOUNT', '5'),
    ('XPENDING', 'g', 'grp2'),
    ('XCLAIM', 'g', 'grp2', 'dave', '0', '3-0', 'JUSTID'),
    ('XCLAIM', 'g', 'grp2', 'dave', '0', '1-0', 'FORCE', 'JUSTID'),
    ('XCLAIM', 'g', 'grp2', 'dave', '100000', '3-0'),
    ('XCLAIM', 'g', 'grp2', 'dave', '0', '3-0', 'LASTID', '5-0'),
    ('XINFO', 'GROUPS', 'g'),
    ('XGROUP', 'SETID', 'g', 'grp2', '0', 'ENTRIESREAD', '0'),
    ('XINFO', 'GROUPS', 'g'),
    ('XGROUP', 'SETID', 'g', 'grp2', '$'),
    ('XGROUP', 'SETID', 'g', 'grp2', '$', 'FOO', '1'),
    ('XINFO', 'GROUPS', 'g'),
    ('XAUTOCLAIM', 'g', 'grp2', 'erin', '0', '0', 'COUNT', '1'),
    ('XAUTOCLAIM', 'g', 'grp2', 'erin', '0', '0', 'COUNT', '0'),
    ('XAUTOCLAIM', 'g', 'grp2', 'erin', 'x', '0'),
    ('XAUTOCLAIM', 'g', 'grp2', 'erin', '0', '0', 'FOO'),
    ('XAUTOCLAIM', 'g', 'nogrp', 'erin', '0', '0'),
    ('XAUTOCLAIM', 'g', 'grp2', 'erin', '0', '0', 'JUSTID'),
    ('XPENDING', 'g', 'grp2', '-', '+', '10', 'erin'),
    ('XGROUP', 'CREATECONSUMER', 'g', 'grp2', 'frank'),
    ('XGROUP', 'CREATECONSUMER', 'g', 'grp2', 'frank'),
    ('XGROUP', 'DELCONSUMER', 'g', 'grp2', 'erin'),
    ('XGROUP', 'DELCONSUMER', 'g', 'grp2', 'erin'),
    ('XPENDING', 'g', 'grp2'),
    ('XGROUP', 'DESTROY', 'g', 'grp'),
    ('XGROUP', 'DESTROY', 'g', 'grp'),
    ('XGROUP', 'DESTROY', 'nokey', 'grp'),
    ('XREADGROUP', 'GROUP', 'grp2', 'x', 'NOACK', 'STREAMS', 'g', '>'),
    ('XADD', 'g', '6-0', 'z', '6'),
    ('XREADGROUP', 'GROUP', 'grp2', 'x', 'NOACK', 'STREAMS', 'g', '>'),
    ('XPENDING', 'g', 'grp2', '-', '+', '10', 'x'),
    ('XINFO', 'GROUPS', 'g'),
    ('XSETID', 'g', '1-0'),
    ('XSETID', 'g', '10-0'),
    ('XSETID', 'nokey', '10-0'),
    ('XINFO', 'GROUPS', 'g'),
    ('XADD', 'g', '10-0', 'late', '1'),
    ('XADD', 'g', '10-*', 'late', '1'),
    ('XINFO', 'GROUPS', 'g'),
    ('XGROUP', 'HELP', 'x'),
]

MORE = [
    ('XADD', 'm', '18446744073709551615-18446744073709551614', 'a', '1'),
    ('XADD', 'm', '18446744073709551615-*', 'a', '1'),
    ('XADD', 'm', '18446744073709551615-*', 'a', '1'),
    ('XADD', 'm', '*', 'a', '1'),
    ('XADD', 'n', '5-*', 'a', '1'),
    ('XADD', 'n', '4-*', 'a', '1'),
    ('XADD', 'n', '6-3', 'a', '1'),
    ('XADD', 'n', '7-0', 'a', '1'),
    ('XADD', 'n', '8-0', 'a', '1'),
    ('XGROUP', 'CREATE', 'n', 'g', '0', 'ENTRIESREAD', '1'),
    ('XGROUP', 'CREATE', 'n', 'h', '6-3'),
    ('XINFO', 'GROUPS', 'n'),
    ('XREADGROUP', 'GROUP', 'g', 'c', 'COUNT', '2', 'STREAMS', 'n', '>'),
    ('XINFO', 'GROUPS', 'n'),
    ('XDEL', 'n', '7-0'),
    ('XINFO', 'GROUPS', 'n'),
    ('XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', 'n', '>'),
    ('XINFO', 'GROUPS', 'n'),
    ('XCLAIM', 'n', 'g', 'd', '0', '7-0', '5-0'),
    ('XPENDING', 'n', 'g', '-', '+', '10'),
    ('XDEL', 'n', '6-3'),
    ('XAUTOCLAIM', 'n', 'g', 'e', '0', '0-0', 'COUNT', '1'),
    ('XAUTOCLAIM', 'n', 'g', 'e', '0', '(5-0'),
    ('XAUTOCLAIM', 'n', 'g', 'e', '0', '0', 'JUSTID'),
    ('XPENDING', 'n', 'g'),
    ('XPENDING', 'n', 'g', 'IDLE', '100000', '-', '+', '10'),
    ('XPENDING', 'n', 'g', '-', '+', '0'),
    ('XPENDING', 'n', 'g', '(8-0', '+', '10'),
    ('XINFO', 'STREAM', 'n'),
    ('XSETID', 'n', '100-0', 'ENTRIESADDED', '2'),
    ('XSETID', 'n', '100-0', 'ENTRIESADDED', '50', 'MAXDELETEDID', '101-0'),
    ('XSETID', 'n', '100-0', 'ENTRIESADDED', '50', 'MAXDELETEDID', '99-0'),
    ('XINFO', 'STREAM', 'n'),
    ('XINFO', 'GROUPS', 'n'),
    ('XADD', 'n', 'MINID', '=', '9', '100-5', 'a', '1'),
    ('XRANGE', 'n', '-', '+'),
    ('XREADGROUP', 'GROUP', 'h', 'c', 'NOACK', 'STREAMS', 'n', '>'),
    ('XINFO', 'GROUPS', 'n'),
    ('XGROUP', 'SETID', 'n', 'h', '0', 'ENTRIESREAD', '-5'),
    ('XGROUP', 'CREATE', 'n', 'k', '$', 'ENTRIESREAD', '3'),
    ('XINFO', 'GROUPS', 'n'),
]


def test_more_differential(both):
    assert_same(both, MORE)


def test_consumer_groups_differential(both):
    assert_same(both, GROUPS)


def _as_dict(m):
    return dict(m) if isinstance(m, dict) else dict(zip(m[::2], m[1::2]))


def _full_without_times(reply):
    """XINFO STREAM FULL with delivery and seen times zeroed."""
    d = _info_without_rax(reply)
    groups = []
    for g in d[b'groups']:
        g = _as_dict(g)
        for p in g[b'pending']:
            p[2] = 0
        consumers = []
        for cons in g[b'consumers']:
            cons = _as_dict(cons)
            cons[b'seen-time'] = 0
            for p in cons[b'pending']:
                p[1] = 0
            consumers.append(cons)
        g[b'consumers'] = consumers
        groups.append(g)
    d[b'groups'] = groups
    return d


def test_xinfo_full_differential(both):
    setup = [('XADD', 'f', f'{i}-0', 'k', str(i)) for i in range(1, 15)] + [
        ('XGROUP', 'CREATE', 'f', 'g1', '0'),
        ('XGROUP', 'CREATE', 'f', 'g2', '$'),
        ('XREADGROUP', 'GROUP', 'g1', 'c1', 'COUNT', '3', 'STREAMS', 'f', '>'),
        ('XREADGROUP', 'GROUP', 'g1', 'c2', 'COUNT', '12', 'STREAMS', 'f', '>'),
        ('XDEL', 'f', '13-0'),
    ]
    ours, theirs = both
    for c in both:
        run_all(c, setup)
    for extra in ([], ['COUNT', '2'], ['COUNT', '0']):
        a = ours.execute_command('XINFO', 'STREAM', 'f', 'FULL', *extra)
        b = theirs.execute_command('XINFO', 'STREAM', 'f', 'FULL', *extra)
        assert _full_without_times(a) == _full_without_times(b)


def test_wrongtype_and_arity(both):
    assert_same(
        both,
        [
            ('SET', 'str', 'x'),
            ('XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', 'str', '>'),
            ('XGROUP', 'CREATE', 'str', 'g', '$'),
            ('XINFO', 'STREAM', 'str'),
            ('XPENDING', 'str', 'g'),
            ('XACK', 'str', 'g', '1'),
            ('XCLAIM', 'str', 'g', 'c', '0', '1'),
            ('XAUTOCLAIM', 'str', 'g', 'c', '0', '0'),
            ('XADD', 's'),
            ('XLEN',),
            ('XRANGE', 's', '-'),
            ('XREAD', 'STREAMS'),
            ('XGROUP',),
            ('XGROUP', 'DESTROY', 's'),
            ('XINFO',),
        ],
    )


# -- our server only ---------------------------------------------------------------------


def test_auto_ids_increase(r):
    before = now_ms()
    a = r.xadd('s', {'f': 'v'})
    b = r.xadd('s', {'f': 'v'})
    ms_a, seq_a = map(int, a.split(b'-'))
    ms_b, seq_b = map(int, b.split(b'-'))
    assert (ms_b, seq_b) > (ms_a, seq_a)
    assert before <= ms_a <= now_ms()
    assert r.xadd('s', {'f': 'v'}, maxlen=2, approximate=False) is not None
    assert r.xlen('s') == 2
    assert r.type('s') == b'stream'


def test_resp3_replies(r3):
    r3.xadd('s', {'a': '1'}, id='1-1')
    r3.xadd('s', {'b': '2'}, id='2-1')
    assert r3.execute_command('XREAD', 'STREAMS', 's', '0') == {
        b's': [[b'1-1', [b'a', b'1']], [b'2-1', [b'b', b'2']]]
    }
    assert r3.execute_command('XREAD', 'STREAMS', 's', '$') is None
    info = r3.execute_command('XINFO', 'STREAM', 's')
    assert isinstance(info, dict) and info[b'length'] == 2
    assert info[b'first-entry'] == [b'1-1', [b'a', b'1']]
    r3.execute_command('XGROUP', 'CREATE', 's', 'g', '0')
    groups = r3.execute_command('XINFO', 'GROUPS', 's')
    assert groups == [
        {
            b'name': b'g',
            b'consumers': 0,
            b'pending': 0,
            b'last-delivered-id': b'0-0',
            b'entries-read': None,
            b'lag': 2,
        }
    ]


def test_resp2_xread_shape(r):
    r.xadd('s', {'a': '1'}, id='1-1')
    assert r.execute_command('XREAD', 'STREAMS', 's', '0') == [[b's', [[b'1-1', [b'a', b'1']]]]]


def test_blocking_xread_woken_by_xadd(server):
    reader = raw(server.client(protocol=2))
    writer = server.client()
    reader.flushall()
    writer.xadd('s', {'x': '0'}, id='1-0')
    result = {}

    def read():
        result['r'] = reader.execute_command('XREAD', 'BLOCK', '0', 'STREAMS', 's', '$')

    t = threading.Thread(target=read, daemon=True)
    t.start()
    blocked(server)
    assert t.is_alive()  # really blocked
    assert writer.ping()  # the event loop still serves others
    writer.xadd('s', {'y': '1'}, id='2-0')
    t.join(WAIT)
    assert not t.is_alive()
    assert result['r'] == [[b's', [[b'2-0', [b'y', b'1']]]]]
    reader.close()
    writer.close()


def test_blocking_timeout_and_pipelined_commands_wait(server):
    """A PING pipelined behind XREAD BLOCK 300 is answered after XREAD's null reply, and
    not before the 300 ms have passed."""
    with RawConn(server.port) as c:
        t0 = time.monotonic()
        c.send(pack('XREAD', 'BLOCK', '300', 'STREAMS', 'bk', '$') + pack('PING'))
        assert c.read_reply() == b'*-1\r\n'
        assert c.read_reply() == b'+PONG\r\n'
        assert time.monotonic() - t0 >= 0.29


def test_blocking_resp3_timeout_is_null(server):
    c = raw(server.client(protocol=3))
    t0 = time.monotonic()
    assert c.execute_command('XREAD', 'BLOCK', '100', 'STREAMS', 'none', '0') is None
    assert time.monotonic() - t0 >= 0.09  # the timeout is in milliseconds: not 100 s
    c.close()


def test_block_in_multi_does_not_block(r):
    p = r.pipeline(transaction=True)
    p.execute_command('XREAD', 'BLOCK', '0', 'STREAMS', 's', '$')
    p.ping()
    assert p.execute() == [None, b'PONG']


def test_disconnect_while_blocked_cleans_up(server):
    r = server.client()
    with RawConn(server.port) as c:
        c.send(pack('XREAD', 'BLOCK', '0', 'STREAMS', 'dc', '$'))
        blocked(server)
    blocked(server, 0)  # the server notices the close asynchronously
    r.xadd('dc', {'a': 'b'})  # nothing left to wake
    assert r.xlen('dc') == 1
    r.close()


def test_blocking_xreadgroup_and_destroyed_group(server):
    admin = server.client()
    admin.flushall()
    admin.xgroup_create('q', 'g', id='$', mkstream=True)
    out = {}

    def consume(name, key):
        c = raw(server.client(protocol=2))
        try:
            out[key] = c.execute_command(
                'XREADGROUP', 'GROUP', 'g', name, 'BLOCK', '0', 'STREAMS', 'q', '>'
            )
        except redis.ResponseError as e:
            out[key] = str(e)
        c.close()

    t1 = threading.Thread(target=consume, args=('c1', 'first'), daemon=True)
    t1.start()
    blocked(server)  # c1 blocks first
    t2 = threading.Thread(target=consume, args=('c2', 'second'), daemon=True)
    t2.start()
    blocked(server, 2)
    admin.xadd('q', {'job': '1'}, id='5-0')
    t1.join(WAIT)
    assert out['first'] == [[b'q', [[b'5-0', [b'job', b'1']]]]]
    assert t2.is_alive()  # the entry went to c1 only
    assert admin.xpending('q', 'g')['pending'] == 1
    admin.xgroup_destroy('q', 'g')
    t2.join(WAIT)
    assert out['second'] == 'NOGROUP the consumer group this client was blocked on no longer exists'
    admin.close()


def test_xread_multiple_keys_and_dollar(r):
    r.xadd('a', {'f': '1'}, id='1-0')
    r.xadd('b', {'f': '2'}, id='1-0')
    assert r.execute_command('XREAD', 'COUNT', '5', 'STREAMS', 'a', 'b', '0', '0') == [
        [b'a', [[b'1-0', [b'f', b'1']]]],
        [b'b', [[b'1-0', [b'f', b'2']]]],
    ]
    assert r.execute_command('XREAD', 'STREAMS', 'a', 'b', '$', '$') is None


def test_keyspace_events(server):
    c = server.client()
    c.flushall()
    got = capture_events(
        c,
        [
            ('XADD', 'ev', '1-0', 'a', '1'),
            ('XADD', 'ev', 'MAXLEN', '1', '2-0', 'a', '2'),
            ('XDEL', 'ev', '2-0'),
            ('XGROUP', 'CREATE', 'ev', 'g', '0'),
            ('XGROUP', 'CREATECONSUMER', 'ev', 'g', 'c'),
            ('XGROUP', 'SETID', 'ev', 'g', '0'),
            ('XGROUP', 'DELCONSUMER', 'ev', 'g', 'c'),
            ('XGROUP', 'DESTROY', 'ev', 'g'),
            ('XADD', 'ev', '3-0', 'a', '3'),
            ('XTRIM', 'ev', 'MAXLEN', '~', '0'),
        ],
        'KEt',
        pattern='__keyevent@0__:*',
    )
    assert [ch.split(b':', 1)[1] for ch, _ in got] == [
        b'xadd',
        b'xadd',
        b'xtrim',
        b'xdel',
        b'xgroup-create',
        b'xgroup-createconsumer',
        b'xgroup-setid',
        b'xgroup-delconsumer',
        b'xgroup-destroy',
        b'xadd',
        b'xtrim',
    ]
    c.close()


def test_watch_sees_xadd(server):
    r = raw(server.client(protocol=2))
    other = raw(server.client(protocol=2))
    r.flushall()
    r.xadd('w', {'a': '1'}, id='1-0')
    r.execute_command('WATCH', 'w')
    other.xadd('w', {'a': '2'}, id='2-0')
    r.execute_command('MULTI')
    r.execute_command('XLEN', 'w')
    assert r.execute_command('EXEC') is None
    r.close()
    other.close()


# -- the data type directly ---------------------------------------------------------------


def test_stream_internal_append_and_trim():
    s = Stream()
    for n in range(5000):
        s.append_auto((b'event', b'set', b'n', b'%d' % n), 1000)
        s.trim_maxlen(100)
    assert len(s) == 100
    items = s.range(0, (1 << 128) - 1)
    assert [f[3] for _, f in items] == [b'%d' % n for n in range(4900, 5000)]
    assert items[0][0] == make_id(1000, 4900)
    assert format_id(items[-1][0]) == b'1000-4999'
    assert len(s.ids) < 5000  # the dead prefix was compacted
    # exclusive paging by id, then MINID trimming after a commit
    page = s.range(items[9][0] + 1, (1 << 128) - 1, 10)
    assert [i for i, _ in page] == [i for i, _ in items[10:20]]
    assert s.trim_minid(items[50][0]) == 50
    assert len(s) == 50 and s.first_id == items[50][0]
    assert s.append_auto((b'a', b'b'), 2000) == make_id(2000, 0)
    assert s.append_auto((b'a', b'b'), 1500) == make_id(2000, 1)


def test_stream_delete_and_ranges_with_tombstones():
    s = Stream()
    for n in range(1, 11):
        s.append(make_id(n, 0), (b'f', b'%d' % n))
    assert s.delete(make_id(1, 0)) and s.delete(make_id(5, 0))
    assert not s.delete(make_id(5, 0))
    assert [i >> 64 for i, _ in s.range(0, make_id(7, 0))] == [2, 3, 4, 6, 7]
    assert [i >> 64 for i, _ in s.range(0, make_id(99, 0), 2, rev=True)] == [10, 9]
    assert s.trim_maxlen(3) == 5
    assert [i >> 64 for i, _ in s.range(0, make_id(99, 0))] == [8, 9, 10]


def test_client_unblock(server):
    reader = raw(server.client(protocol=2))
    admin = raw(server.client(protocol=2))
    reader.flushall()
    rid = reader.execute_command('CLIENT', 'ID')
    out = {}

    def read():
        try:
            out['r'] = reader.execute_command('XREAD', 'BLOCK', '0', 'STREAMS', 'u', '$')
        except redis.ResponseError as e:
            out['r'] = str(e)

    for how, want in (
        ('TIMEOUT', None),
        ('ERROR', 'UNBLOCKED client unblocked via CLIENT UNBLOCK'),
    ):
        t = threading.Thread(target=read, daemon=True)
        t.start()
        blocked(server)
        assert admin.execute_command('CLIENT', 'UNBLOCK', rid, how) == 1
        t.join(WAIT)
        assert out['r'] == want
    assert admin.execute_command('CLIENT', 'UNBLOCK', rid) == 0
    reader.close()
    admin.close()


def test_large_stream_paging(r):
    """50,000 appends trimmed to 20,000, then paged 500 at a time (how fast: bench/)."""
    s = Stream()
    for n in range(50000):
        s.append_auto((b'db', b'0', b'event', b'set', b'key', b'k%d' % n), 1)
        s.trim_maxlen(20000)
    assert len(s) == 20000
    last = 0
    pages = 0
    while True:
        page = s.range(last + 1, (1 << 128) - 1, 500)
        if not page:
            break
        last = page[-1][0]
        pages += 1
    assert pages == 40
    assert s.trim_minid(last) == 19999 and len(s) == 1


def test_xsetid_may_move_an_empty_stream_back(both):
    for c in both:
        c.xadd('s', {'a': 'b'}, id='5-0')
        c.xdel('s', '5-0')
        assert c.execute_command('XSETID', 's', '1-0')
        c.xadd('t', {'x': 'y'}, id='0-1', maxlen=0)
        assert c.execute_command('XSETID', 't', '0-0', 'ENTRIESADDED', 0, 'MAXDELETEDID', '0-0')
    infos = [(c.xinfo_stream('s'), c.xinfo_stream('t')) for c in both]
    assert infos[0] == infos[1]


def _node_config(c, n):
    c.execute_command('CONFIG', 'SET', 'stream-node-max-entries', str(n))


def test_approximate_trimming_follows_stream_node_max_entries(both):
    """Nodes hold stream-node-max-entries entries as the parameter was when they filled,
    so `~` trimming and LIMIT remove what redis-server removes."""
    try:
        for c in both:
            c.delete('s', 't')
            _node_config(c, 10)
            for _ in range(100):
                c.execute_command('XADD', 's', '*', 'xitem', 'v')
            _node_config(c, 2)
            for _ in range(3):
                c.execute_command('XADD', 't', '*', 'xitem', 'v')
        commands = [
            ('XADD', 's', 'MAXLEN', '~', '55', 'LIMIT', '30', '*', 'xitem', 'v'),
            ('XLEN', 's'),
            ('XADD', 's', 'MAXLEN', '~', '55', 'LIMIT', '30', '*', 'xitem', 'v'),
            ('XLEN', 's'),
            ('XTRIM', 't', 'MAXLEN', '~', '0', 'LIMIT', '1'),
            ('XTRIM', 't', 'MAXLEN', '~', '0', 'LIMIT', '2'),
        ]
        # XADD's replies are ids of each server's clock: the XLENs and XTRIMs are compared
        ours, theirs = (
            [r for i, r in enumerate(run_all(c, commands)) if i not in (0, 2)] for c in both
        )
        assert ours == theirs == [71, 62, 0, 2]
        info = [c.execute_command('XINFO', 'STREAM', 's') for c in both]
        info = [i if isinstance(i, dict) else dict(zip(i[::2], i[1::2])) for i in info]
        assert info[0][b'radix-tree-keys'] == info[1][b'radix-tree-keys'] == 7
    finally:
        for c in both:
            _node_config(c, 100)


def test_stream_nodes_survive_a_reload(make_server):
    """DEBUG RELOAD keeps the nodes the entries were appended in (the RDB holds them):
    after it, a `~` trimming removes the same whole nodes as before."""
    srv = make_server(stream_node_max_entries='10')
    c = srv.client()
    for _ in range(25):
        c.execute_command('XADD', 's', '*', 'f', 'v')
    c.execute_command('DEBUG', 'RELOAD')
    _node_config(c, 100)
    assert c.execute_command('XTRIM', 's', 'MAXLEN', '~', '12') == 10
    assert c.xlen('s') == 15


def test_approximate_trimming_is_propagated_exact(make_server, tmp_path):
    """An XADD or XTRIM with `~` goes to the AOF with `=` and the length (MAXLEN) or the
    first id (MINID) the trimming left, so a reload with other nodes gives the same
    stream (DEBUG LOADAOF after stream-node-max-entries changed)."""
    srv = make_server(appendonly='yes', stream_node_max_entries='100')
    c = srv.client()
    for i in range(100):
        c.execute_command('XADD', 's', f'{i + 1}-0', 'f', 'v')
    c.execute_command('XADD', 's', 'MAXLEN', '~', '100', '*', 'f', 'v')
    assert c.xlen('s') == 101
    assert c.execute_command('XTRIM', 's', 'MINID', '~', '50') == 0
    _node_config(c, 1)
    c.execute_command('DEBUG', 'LOADAOF')
    assert c.xlen('s') == 101
    aof = b''.join(p.read_bytes() for p in (tmp_path / 'appendonlydir').glob('*.incr.aof'))
    assert b'$6\r\nMAXLEN\r\n$1\r\n=\r\n$3\r\n101\r\n' in aof
    assert b'XTRIM' not in aof.upper()  # nothing was trimmed: nothing to propagate


def test_xclaim_of_deleted_entries_is_propagated(make_server):
    """XCLAIM drops the pending entries of deleted entries, and propagates that (as Redis,
    with an XCLAIM ... FORCE JUSTID of each): after DEBUG LOADAOF the PEL is the same."""
    srv = make_server(appendonly='yes')
    c = raw(srv.client())
    for i in range(1, 6):
        c.execute_command('XADD', 'x', f'{i}-0', 'f', 'v')
    c.execute_command('XGROUP', 'CREATE', 'x', 'grp', '0')
    c.execute_command('XREADGROUP', 'GROUP', 'grp', 'Alice', 'STREAMS', 'x', '>')
    c.execute_command('XDEL', 'x', '2-0')
    c.execute_command('XDEL', 'x', '4-0')
    claimed = c.execute_command('XCLAIM', 'x', 'grp', 'Bob', '0', '1-0', '2-0', '3-0', '4-0')
    assert [e[0] for e in claimed] == [b'1-0', b'3-0']
    before = c.execute_command('XPENDING', 'x', 'grp', '-', '+', '10')
    assert [e[0] for e in before] == [b'1-0', b'3-0', b'5-0']
    c.execute_command('DEBUG', 'LOADAOF')
    after = c.execute_command('XPENDING', 'x', 'grp', '-', '+', '10')
    assert [(e[0], e[1]) for e in after] == [(e[0], e[1]) for e in before]


def test_xreadgroup_is_propagated_as_xclaims(make_server, tmp_path):
    """XREADGROUP goes to the AOF as Redis propagates it: an XCLAIM ... FORCE JUSTID for
    each entry delivered (inside the transaction's MULTI/EXEC), XGROUP SETID for a NOACK
    read, nothing for a read of the consumer's history; the reloaded PEL is the same."""
    srv = make_server(appendonly='yes')
    c = raw(srv.client())
    for i in range(1, 4):
        c.execute_command('XADD', 's', f'{i}-0', 'f', 'v')
    c.execute_command('XGROUP', 'CREATE', 's', 'g', '0')
    pipe = c.pipeline(transaction=True)
    pipe.execute_command('XREADGROUP', 'GROUP', 'g', 'c1', 'COUNT', '2', 'STREAMS', 's', '>')
    pipe.execute_command('XREADGROUP', 'GROUP', 'g', 'c1', 'STREAMS', 's', '>')
    pipe.execute()
    c.execute_command('XREADGROUP', 'GROUP', 'g', 'c1', 'STREAMS', 's', '0')
    c.execute_command('XADD', 's', '4-0', 'f', 'v')
    c.execute_command('XREADGROUP', 'GROUP', 'g', 'c2', 'NOACK', 'STREAMS', 's', '>')

    def group():
        info = c.execute_command('XINFO', 'GROUPS', 's')[0]
        info = info if isinstance(info, dict) else dict(zip(info[::2], info[1::2]))
        fields = (b'consumers', b'pending', b'last-delivered-id', b'entries-read')
        return [info[f] for f in fields]

    before = group()
    pending = c.execute_command('XPENDING', 's', 'g', '-', '+', '10')
    c.execute_command('DEBUG', 'LOADAOF')
    # c2, made by the NOACK read, is there too (XGROUP CREATECONSUMER was propagated)
    assert group() == before == [2, 3, b'4-0', 4]
    assert [e[:2] for e in c.execute_command('XPENDING', 's', 'g', '-', '+', '10')] == [
        e[:2] for e in pending
    ]
    aof = b''.join(p.read_bytes() for p in (tmp_path / 'appendonlydir').glob('*.incr.aof'))
    assert aof.upper().count(b'XCLAIM') == 3 and b'XREADGROUP' not in aof.upper()
    assert aof.count(b'CREATECONSUMER') == 1
    assert b'$5\r\nSETID\r\n$1\r\ns\r\n$1\r\ng\r\n$3\r\n4-0\r\n' in aof


@pytest.mark.differential
def test_an_error_naming_an_argument_with_newlines_stays_one_line(raw_pair):
    """addReplyErrorFormat turns CR and LF inside the message into spaces: a group name
    holding them must not break the protocol (the client would read a bad reply)."""
    raw_same(
        raw_pair(),
        [
            ('XCLAIM', '_s', 'a\nb\r\nc', 'c', '0', '0-1'),
            ('XREADGROUP', 'GROUP', 'g\n', 'c', 'STREAMS', '_s', '>'),
            ('PING',),
        ],
    )
