"""String and bitmap commands, mostly as differential tests against redis-server 7.0.

Most tests run the same commands on our server and on the reference and compare replies
(error text included). `raw_same` compares the exact reply bytes in RESP2 and RESP3.
Keys of another type are made on our side by storing a non-bytes value straight into the
keyspace (other type families are separate modules) and with HSET on the reference.
"""

import itertools
import time

import pytest

from conftest import assert_same, assert_same_events, capture_events, now_ms, raw_same, run_all
from store.longdouble import ld_format, ld_round, strtold

FUTURE_S = 4102444800  # 2100-01-01, an EXAT both servers agree on
FUTURE_MS = FUTURE_S * 1000
LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)


# -- helpers --------------------------------------------------------------------------


def make_hash(server, ref, key=b'h'):
    """A non-string key `key` on both servers."""
    ours = server.client(protocol=2)
    try:
        for client in (ours, ref):
            client.delete(key)
            client.hset(key, 'f', 'v')
    finally:
        ours.close()


def assert_same_ttl(both, commands):
    """assert_same, but TTL replies only compared as -2, -1 or positive (the two servers
    may round a far-away deadline to different seconds)."""
    got, want = run_all(both[0], commands), run_all(both[1], commands)
    for cmd, g, w in zip(commands, got, want):
        if cmd[0] == 'ttl' and isinstance(g, int) and isinstance(w, int):
            g, w = min(g, 1), min(w, 1)
        assert g == w, f'{cmd!r}: ours {g!r} != redis {w!r}'


# -- GET / SET ------------------------------------------------------------------------


def test_get_set_basics(r):
    assert r.get('k') is None
    assert r.set('k', b'\x00\xffbin') is True
    assert r.get('k') == b'\x00\xffbin'
    assert r.set('k', '') is True
    assert r.get('k') == b''
    r.set('t', 'v', ex=100)
    assert 0 < r.ttl('t') <= 100
    r.set('t', 'w')
    assert r.ttl('t') == -1


def test_set_plain_and_arity(both):
    assert_same(
        both,
        [
            ('set', 'k', 'v'),
            ('get', 'k'),
            ('set', 'k'),
            ('get',),
            ('get', 'a', 'b'),
            ('set', 'k', 'v', 'bogus'),
            ('SET', 'K', 'V'),
            ('GET', 'K'),
            ('get', 'k'),
        ],
    )


SET_OPTIONS = [
    ('nx',),
    ('xx',),
    ('get',),
    ('keepttl',),
    ('ex', '100'),
    ('px', '100000'),
    ('exat', str(FUTURE_S)),
    ('pxat', str(FUTURE_MS)),
    ('persist',),
]


@pytest.mark.parametrize('existing', [False, True])
def test_set_option_combinations(both, existing):
    cmds = []
    for n in range(4):
        for combo in itertools.permutations(SET_OPTIONS, n):
            opts = [w for o in combo for w in o]
            if existing:
                cmds.append(('set', 'k', 'old', 'px', '500000'))
            else:
                cmds.append(('del', 'k'))
            cmds += [('set', 'k', 'new', *opts), ('get', 'k'), ('ttl', 'k')]
    assert_same_ttl(both, cmds)


def test_set_option_spelling(both):
    assert_same(
        both,
        [
            ('set', 'k', 'v', 'Nx'),
            ('set', 'k', 'v', 'xX'),
            ('set', 'k', 'v', 'nx', 'nx'),
            ('set', 'k', 'v', 'xx', 'xx', 'get', 'get'),
            ('set', 'k', 'v', 'EX', '5', 'ex', '7'),
            ('ttl', 'k'),
            ('set', 'k', 'v', 'nx\x00junk'),
            ('set', 'k', 'v', 'get\x00x'),
            ('set', 'k', 'v', 'keepttl\x00'),
            ('set', 'k', 'v', 'n'),
            ('set', 'k', 'v', 'nxx'),
            ('set', 'k', 'v', 'ex'),
            ('set', 'k', 'v', 'px'),
            ('set', 'k', 'v', 'exat'),
            ('set', 'k', 'v', 'pxat'),
            ('set', 'k', 'v', 'nx', 'ex'),
            ('set', 'k', 'v', 'persist'),
            ('set', 'k', 'v', 'ex', '10', 'keepttl'),
            ('set', 'k', 'v', 'keepttl', 'px', '10'),
            ('set', 'k', 'v', 'get', 'ex', '10', 'get'),
            ('set', 'k', 'v', '', ''),
        ],
    )


@pytest.mark.parametrize('opt', ['ex', 'px', 'exat', 'pxat'])
def test_set_expire_values(both, opt):
    values = [
        '0',
        '-1',
        '1.5',
        'abc',
        '',
        ' 1',
        '01',
        '+5',
        str(LLONG_MAX),
        str(LLONG_MIN),
        str(LLONG_MAX // 1000),
        str(LLONG_MAX // 1000 + 1),
        str(2**64),
        str(LLONG_MAX - 10**9),
        '9223372036854775',
    ]
    cmds = []
    for v in values:
        cmds += [('set', 'k', 'v', opt, v), ('exists', 'k'), ('del', 'k')]
        cmds += [('set', 'k', 'v', 'get', opt, v), ('del', 'k')]
    assert_same(both, cmds)


def test_set_absolute_time_in_the_past(both):
    assert_same(
        both,
        [
            ('set', 'k', 'v', 'exat', '1'),
            ('get', 'k'),
            ('exists', 'k'),
            ('set', 'k', 'v', 'pxat', '1', 'get'),
            ('get', 'k'),
            ('set', 'k', 'v'),
            ('set', 'k', 'w', 'pxat', '100', 'get'),
            ('get', 'k'),
        ],
    )


def test_set_keepttl_and_get(both):
    assert_same(
        both,
        [
            ('set', 'k', 'v', 'ex', '100'),
            ('set', 'k', 'w', 'keepttl'),
            ('ttl', 'k'),
            ('get', 'k'),
            ('set', 'k', 'x', 'keepttl', 'get'),
            ('ttl', 'k'),
            ('set', 'k', 'y'),
            ('ttl', 'k'),
            ('set', 'n', 'v', 'keepttl'),
            ('ttl', 'n'),
            ('set', 'k', 'z', 'nx', 'get'),
            ('get', 'k'),
            ('set', 'q', 'z', 'xx', 'get'),
            ('exists', 'q'),
            ('set', 'q', 'z', 'nx', 'get'),
            ('get', 'q'),
        ],
    )


def test_set_wrongtype(server, both):
    make_hash(server, both[1])
    assert_same(
        both,
        [
            ('get', 'h'),
            ('set', 'h', 'v', 'get'),
            ('set', 'h', 'v', 'ex', '0', 'get'),
            ('set', 'h', 'v', 'bad', 'get'),
            ('getset', 'h', 'v'),
            ('getdel', 'h'),
            ('getex', 'h'),
            ('getex', 'h', 'ex', '0'),
            ('getex', 'h', 'bad'),
            ('append', 'h', 'x'),
            ('strlen', 'h'),
            ('setrange', 'h', '0', 'x'),
            ('setrange', 'h', '-1', 'x'),
            ('getrange', 'h', '0', '1'),
            ('getrange', 'h', 'a', '1'),
            ('substr', 'h', '0', '1'),
            ('incr', 'h'),
            ('decr', 'h'),
            ('incrby', 'h', '2'),
            ('incrby', 'h', 'x'),
            ('decrby', 'h', '2'),
            ('incrbyfloat', 'h', '1'),
            ('incrbyfloat', 'h', 'x'),
            ('setbit', 'h', '1', '1'),
            ('setbit', 'h', '-1', '1'),
            ('getbit', 'h', '1'),
            ('bitcount', 'h'),
            ('bitcount', 'h', '0'),
            ('lcs', 'h', 'x'),
            ('lcs', 'x', 'h'),
            ('mget', 'h', 'nope'),
            ('msetnx', 'h', 'v'),
            ('setnx', 'h', 'v'),
            ('set', 'h', 'v', 'nx'),
            ('set', 'h', 'v', 'xx', 'keepttl'),
            ('get', 'h'),
        ],
    )


def test_set_overwrites_other_type(server, both):
    make_hash(server, both[1])
    assert_same(both, [('set', 'h', 'v'), ('get', 'h')])
    make_hash(server, both[1])
    assert_same(both, [('setex', 'h', '10', 'v'), ('get', 'h'), ('mset', 'h', 'w'), ('get', 'h')])


def test_setnx_setex_psetex(both):
    assert_same(
        both,
        [
            ('setnx', 'k', 'a'),
            ('setnx', 'k', 'b'),
            ('get', 'k'),
            ('setex', 'k', '100', 'v'),
            ('ttl', 'k'),
            ('get', 'k'),
            ('setex', 'k', '0', 'v'),
            ('setex', 'k', '-5', 'v'),
            ('setex', 'k', 'x', 'v'),
            ('setex', 'k', '1.0', 'v'),
            ('setex', 'k', str(LLONG_MAX // 1000 + 1), 'v'),
            ('setex', 'k', str(LLONG_MAX), 'v'),
            ('psetex', 'p', '100000', 'v'),
            ('ttl', 'p'),
            ('psetex', 'p', '0', 'v'),
            ('psetex', 'p', str(LLONG_MAX), 'v'),
            ('psetex', 'p', 'x', 'v'),
            ('setex', 'k', '10'),
            ('psetex', 'k', '10'),
            ('setnx', 'k'),
        ],
    )


def test_getset_getdel(both):
    assert_same(
        both,
        [
            ('getset', 'k', 'a'),
            ('getset', 'k', 'b'),
            ('get', 'k'),
            ('set', 'k', 'v', 'ex', '100'),
            ('getset', 'k', 'w'),
            ('ttl', 'k'),
            ('getdel', 'k'),
            ('getdel', 'k'),
            ('exists', 'k'),
            ('getset', 'k'),
            ('getdel',),
        ],
    )


def test_getex(both):
    cmds = [
        ('getex', 'missing'),
        ('getex', 'missing', 'ex', '0'),
        ('getex', 'missing', 'persist', 'ex', '1'),
        ('getex', 'missing', 'bad'),
    ]
    opts = [
        ('ex', '100'),
        ('px', '100000'),
        ('exat', str(FUTURE_S)),
        ('pxat', str(FUTURE_MS)),
        ('persist',),
        ('keepttl',),
        ('nx',),
        ('get',),
    ]
    for n in range(3):
        for combo in itertools.permutations(opts, n):
            cmds += [
                ('set', 'k', 'v', 'px', '300000'),
                ('getex', 'k', *[w for o in combo for w in o]),
                ('ttl', 'k'),
            ]
    for v in ['0', '-1', 'x', str(LLONG_MAX), str(LLONG_MAX // 1000 + 1), '1']:
        for o in ('ex', 'px', 'exat', 'pxat'):
            if (o, v) == ('px', '1'):
                continue  # expires within a millisecond: timing-dependent
            cmds += [('set', 'k', 'v'), ('getex', 'k', o, v), ('exists', 'k'), ('ttl', 'k')]
    cmds += [
        ('set', 'k', 'v'),
        ('getex', 'k', 'persist'),
        ('ttl', 'k'),
        ('getex', 'k', 'PERSIST', 'PERSIST'),
        ('getex', 'k', 'EX'),
        ('getex', 'k', 'ex', '10', 'ex', '20'),
        ('ttl', 'k'),
    ]
    assert_same_ttl(both, cmds)


def test_absolute_deadlines(server, r):
    ks = server.server.keyspace
    r.execute_command('SET', 'a', 'v', 'EXAT', FUTURE_S)
    r.execute_command('SET', 'b', 'v', 'PXAT', FUTURE_MS + 7)
    r.set('c', 'v')
    r.execute_command('GETEX', 'c', 'EXAT', FUTURE_S + 1)
    t0 = now_ms()
    r.execute_command('SETEX', 'd', 100, 'v')
    r.execute_command('PSETEX', 'e', 100000, 'v')
    t1 = now_ms()
    deadline = lambda k: server.call(lambda: ks.deadline(0, k))
    assert deadline(b'a') == FUTURE_MS
    assert deadline(b'b') == FUTURE_MS + 7
    assert deadline(b'c') == FUTURE_MS + 1000
    assert t0 + 100000 <= deadline(b'd') <= t1 + 100000
    assert t0 + 100000 <= deadline(b'e') <= t1 + 100000


def test_getex_pxat_in_the_past_deletes(r):
    r.set('k', 'v')
    assert r.execute_command('GETEX', 'k', 'PXAT', '1') == b'v'
    assert r.exists('k') == 0
    r.set('k', 'v')
    assert r.execute_command('GETEX', 'k', 'EXAT', str(int(time.time()) - 1)) == b'v'
    assert r.exists('k') == 0


# -- multiple keys --------------------------------------------------------------------


def test_mset_msetnx_mget(server, both):
    make_hash(server, both[1])
    assert_same(
        both,
        [
            ('mset', 'a', '1', 'b', '2'),
            ('mget', 'a', 'b', 'c', 'h'),
            ('mset', 'a'),
            ('mset', 'a', '1', 'b'),
            ('mset',),
            ('mget',),
            ('msetnx', 'a', '1', 'b'),
            ('msetnx', 'c', '3', 'd', '4'),
            ('msetnx', 'c', '3', 'e', '5'),
            ('mget', 'c', 'd', 'e'),
            ('mset', 'x', '1', 'x', '2'),
            ('get', 'x'),
            ('msetnx', 'y', '1', 'y', '2'),
            ('get', 'y'),
            ('set', 't', 'v', 'ex', '100'),
            ('mset', 't', 'w'),
            ('ttl', 't'),
        ],
    )


# -- APPEND, STRLEN, SETRANGE, GETRANGE -------------------------------------------------


def test_append_strlen(both):
    assert_same(
        both,
        [
            ('append', 'k', 'ab'),
            ('append', 'k', ''),
            ('append', 'k', 'cd'),
            ('get', 'k'),
            ('strlen', 'k'),
            ('strlen', 'nope'),
            ('append', 'e', ''),
            ('exists', 'e'),
            ('set', 'n', '123'),
            ('append', 'n', '4'),
            ('incr', 'n'),
            ('strlen', 'n'),
            ('set', 't', 'v', 'ex', '100'),
            ('append', 't', 'w'),
            ('ttl', 't'),
            ('get', 't'),
        ],
    )


def test_append_limit(make_server):
    srv = make_server(proto_max_bulk_len='1mb')
    r = srv.client()
    r.set('k', b'x' * (1024 * 1024 - 1))
    assert r.append('k', 'y') == 1024 * 1024
    with pytest.raises(Exception) as e:
        r.append('k', 'z')
    assert str(e.value) == 'string exceeds maximum allowed size (proto-max-bulk-len)'
    with pytest.raises(Exception) as e:
        r.setrange('j', 1024 * 1024, 'z')
    assert str(e.value) == 'string exceeds maximum allowed size (proto-max-bulk-len)'
    assert r.setrange('j', 1024 * 1024 - 1, 'z') == 1024 * 1024
    with pytest.raises(Exception) as e:
        r.setbit('b', 8 * 1024 * 1024, 1)
    assert str(e.value) == 'bit offset is not an integer or out of range'
    assert r.setbit('b', 8 * 1024 * 1024 - 1, 1) == 0
    assert r.strlen('b') == 1024 * 1024


def test_setrange(both):
    big = str(512 * 1024 * 1024)
    assert_same(
        both,
        [
            ('setrange', 'k', '0', ''),
            ('exists', 'k'),
            ('setrange', 'k', '5', 'ab'),
            ('get', 'k'),
            ('setrange', 'k', '0', 'XYZ'),
            ('get', 'k'),
            ('setrange', 'k', '6', 'longer'),
            ('get', 'k'),
            ('setrange', 'k', '20', 'z'),
            ('get', 'k'),
            ('setrange', 'k', '1', ''),
            ('setrange', 'k', '-1', 'x'),
            ('setrange', 'k', 'x', 'y'),
            ('setrange', 'k', '1.0', 'y'),
            ('setrange', 'k', str(2**63), 'y'),
            ('setrange', 'k', big, 'a'),
            ('setrange', 'k', str(int(big) - 1), 'ab'),
            ('setrange', 'k', str(LLONG_MAX), 'a'),
            ('setrange', 'k', big, ''),
            ('setrange', 'm', big, ''),
            ('setrange', 'm', big, 'a'),
            ('setrange', 'm', '-1', ''),
            ('set', 'n', '12'),
            ('setrange', 'n', '1', '9'),
            ('get', 'n'),
            ('incr', 'n'),
            ('set', 't', 'v', 'ex', '100'),
            ('setrange', 't', '1', 'x'),
            ('ttl', 't'),
        ],
    )


def test_getrange_matrix(both):
    idx = [
        '-100',
        '-6',
        '-5',
        '-2',
        '-1',
        '0',
        '1',
        '4',
        '5',
        '100',
        str(LLONG_MIN),
        str(LLONG_MAX),
    ]
    cmds = [('set', 'e', ''), ('set', 's', 'hello'), ('set', 'n', '-12345')]
    for key in ('s', 'e', 'n', 'missing'):
        for a in idx:
            for b in idx:
                cmds.append(('getrange', key, a, b))
    cmds += [
        ('getrange', 's', 'x', '1'),
        ('getrange', 's', '1', 'y'),
        ('getrange', 'missing', 'x', '1'),
        ('getrange', 's', '0'),
        ('substr', 's', '1', '3'),
        ('substr', 's', '-3', '-1'),
        ('substr', 's', 'a', '1'),
    ]
    assert_same(both, cmds)


# -- counters -------------------------------------------------------------------------


def test_incr_decr(both):
    cmds = [
        ('incr', 'k'),
        ('incr', 'k'),
        ('decr', 'k'),
        ('decr', 'd'),
        ('incrby', 'k', '10'),
        ('incrby', 'k', '-20'),
        ('decrby', 'k', '5'),
        ('decrby', 'k', '-5'),
        ('get', 'k'),
        ('incrby', 'k', 'x'),
        ('incrby', 'k', '1.5'),
        ('incrby', 'k', ''),
        ('decrby', 'k', str(LLONG_MIN)),
        ('decrby', 'k', str(LLONG_MAX)),
        ('incrby', 'k', str(2**63)),
        ('incr', 'k', 'x'),
    ]
    for v in [
        '',
        ' 1',
        '1 ',
        '01',
        '+1',
        '-0',
        '0',
        '-1',
        'abc',
        '1.5',
        '1e3',
        str(LLONG_MAX),
        str(LLONG_MIN),
        str(LLONG_MAX - 1),
        '00',
        '12345678901234567890',
        '-9223372036854775809',
        '\x001',
    ]:
        cmds += [
            ('set', 'v', v),
            ('incr', 'v'),
            ('set', 'v', v),
            ('decr', 'v'),
            ('set', 'v', v),
            ('incrby', 'v', str(LLONG_MAX)),
            ('set', 'v', v),
            ('decrby', 'v', str(LLONG_MAX)),
            ('get', 'v'),
        ]
    cmds += [('set', 't', '5', 'ex', '100'), ('incr', 't'), ('ttl', 't')]
    assert_same(both, cmds)


INCRBYFLOAT_VALUES = [
    '0.1',
    '0.2',
    '1e400',
    '-1e400',
    '1.5',
    '3.0e-5',
    '0x1p3',
    '0x1.8p-2',
    '0X.8P1',
    '1e-4950',
    '1e-5000',
    '1e5000',
    'inf',
    '-inf',
    'Infinity',
    'nan',
    '-nan',
    '1.',
    '.5',
    '5e',
    '  1',
    '1 ',
    '1\x00abc',
    '\x00',
    '',
    '0',
    '-0',
    '-0.0',
    '1e4932',
    '1.18973149535723176502e4932',
    '123456789012345678901234567890',
    '0.000000000000000001',
    '-0.000000000000000005',
    '5e-18',
    '2.5e-17',
    '1.5e-17',
    '7.1e-18',
    '10.50',
    '1_0',
    '0x',
    '0x1p',
    'e5',
    '+.5e+1',
    '1' * 5119,
    '1' * 5120,
    '3.0000000000000000001',
    '-3',
    '17',
    '1e17',
    '1e18',
    '1e19',
    '12345.678e-3',
]


def test_incrbyfloat(both):
    cmds = []
    for i, v in enumerate(INCRBYFLOAT_VALUES):
        cmds += [
            ('incrbyfloat', 'acc%d' % (i % 5), v),
            ('set', 'x', v),
            ('incrbyfloat', 'x', '0.1'),
            ('incrbyfloat', 'n', v),
        ]
    cmds += [
        ('set', 't', '1', 'ex', '100'),
        ('incrbyfloat', 't', '1'),
        ('ttl', 't'),
        ('set', 'a', '0.1'),
        ('incrbyfloat', 'a', '0.2'),
        ('incrbyfloat', 'a', '-0.3'),
        ('incrbyfloat', 'a', '1.1e-17'),
        ('incrbyfloat', 'a', '-1e400'),
        ('incrbyfloat', 'a', '1e4932'),
        ('incrbyfloat', 'a', '1e4932'),
        ('set', 'big', '1.18973149535723176502e4932'),
        ('incrbyfloat', 'big', '1e4932'),
    ]
    assert_same(both, cmds)


def test_long_double_emulation_unit():
    assert ld_format(strtold(b'0.1') + strtold(b'0.2')) == b'0.3'
    assert ld_format(ld_round(strtold(b'0.1') + strtold(b'0.2'))) == b'0.3'
    assert strtold(b' 1') is None and strtold(b'1 ') is None and strtold(b'nan') is None
    assert strtold(b'1e-6000') is None and strtold(b'1e6000') is None
    assert strtold(b'0e-6000') == 0
    assert ld_format(strtold(b'-0')) == b'0'
    assert ld_format(strtold(b'2.5')) == b'2.5'
    assert ld_format(strtold(b'100')) == b'100'


# -- bits -----------------------------------------------------------------------------


def test_setbit_getbit(both):
    cmds = [
        ('setbit', 'b', '7', '1'),
        ('get', 'b'),
        ('setbit', 'b', '7', '1'),
        ('setbit', 'b', '7', '0'),
        ('setbit', 'b', '100', '1'),
        ('strlen', 'b'),
        ('getbit', 'b', '100'),
        ('getbit', 'b', '99'),
        ('getbit', 'b', '10000'),
        ('getbit', 'missing', '5'),
        ('getbit', 'missing', '-1'),
        ('getbit', 'b', str(8 * 512 * 1024 * 1024 - 1)),
        ('getbit', 'b', str(8 * 512 * 1024 * 1024)),
        ('set', 'n', '1'),
        ('getbit', 'n', '2'),
        ('getbit', 'n', '7'),
        ('setbit', 'n', '6', '1'),
        ('get', 'n'),
    ]
    for off in ['-1', 'x', '1.5', '', str(8 * 512 * 1024 * 1024), str(LLONG_MAX), '#1', '+1']:
        cmds += [('setbit', 'b', off, '1'), ('getbit', 'b', off)]
    for val in ['2', '-1', 'x', '', '01', '1.0', '0', '1']:
        cmds += [('setbit', 'b', '3', val), ('setbit', 'nope', 'x', val)]
    cmds += [('set', 't', 'v', 'ex', '100'), ('setbit', 't', '1', '1'), ('ttl', 't'), ('get', 'b')]
    assert_same(both, cmds)


def test_bitcount(both):
    idx = [
        '-100',
        '-9',
        '-8',
        '-3',
        '-1',
        '0',
        '1',
        '2',
        '7',
        '8',
        '9',
        '23',
        '24',
        '100',
        str(LLONG_MIN),
        str(LLONG_MAX),
    ]
    cmds = [('set', 's', 'foobar'), ('set', 'e', ''), ('set', 'n', '1234')]
    for key in ('s', 'e', 'n'):
        cmds.append(('bitcount', key))
        for a in idx:
            for b in idx:
                cmds += [('bitcount', key, a, b), ('bitcount', key, a, b, 'BIT')]
        cmds += [('bitcount', key, '0', '1', 'byte')]
    cmds += [
        ('bitcount', 's', '0'),
        ('bitcount', 's', '0', '1', 'bits'),
        ('bitcount', 's', '0', '1', 'bit', 'x'),
        ('bitcount', 's', 'a', 'b'),
        ('bitcount', 's', '1', 'b'),
        ('bitcount', 's', '-1', '-2', 'nonsense'),
        ('bitcount', 's', '0', '1', 'bit\x00x'),
        ('bitcount', 'missing', '0'),
        ('bitcount', 'missing', 'a', 'b', 'c'),
        ('bitcount', 'missing'),
        ('bitcount',),
    ]
    assert_same(both, cmds)


# -- LCS ------------------------------------------------------------------------------


def test_bitpos(both):
    cmds = [
        ('set', 's', b'\xff\xf0\x00'),
        ('set', 'ones', b'\xff\xff'),
        ('set', 'zeros', b'\x00\x00'),
        ('set', 'e', ''),
        ('set', 'n', '1234'),
    ]
    idx = ['-100', '-9', '-3', '-1', '0', '1', '2', '7', '8', '9', '15', '16', '23', '100']
    for key in ('s', 'ones', 'zeros', 'e', 'n', 'missing'):
        for bit in ('0', '1'):
            cmds.append(('bitpos', key, bit))
            for a in idx:
                cmds.append(('bitpos', key, bit, a))
                for b in idx:
                    cmds += [('bitpos', key, bit, a, b), ('bitpos', key, bit, a, b, 'BIT')]
            cmds.append(('bitpos', key, bit, '0', '-1', 'byte'))
    cmds += [
        ('bitpos', 's', '2'),
        ('bitpos', 's', '-1'),
        ('bitpos', 's', 'x'),
        ('bitpos', 'missing', '2'),
        ('bitpos', 'missing', '1', 'x'),
        ('bitpos', 's', '1', 'x'),
        ('bitpos', 's', '1', '0', 'x'),
        ('bitpos', 's', '1', '0', '1', 'bits'),
        ('bitpos', 's', '1', 'x', '1', 'bits'),
        ('bitpos', 's', '1', '0', 'x', 'bits'),
        ('bitpos', 's', '1', '0', '1', 'bit', 'x'),
        ('bitpos', 's', '1', str(LLONG_MIN), str(LLONG_MAX), 'bit'),
        ('bitpos', 's'),
    ]
    assert_same(both, cmds)


def test_bitop(server, both):
    make_hash(server, both[1])
    values = ['', 'a', 'foobar', b'\xff\x00\xf0', b'\x01', '1234', b'\x00' * 9 + b'\x80']
    cmds = [('set', f'v{i}', v) for i, v in enumerate(values)]
    names = [f'v{i}' for i in range(len(values))] + ['missing']
    for op in ('AND', 'or', 'XoR'):
        for a in names:
            for b in names:
                cmds += [('bitop', op, 'd', a, b), ('get', 'd')]
        cmds += [('bitop', op, 'd', *names), ('get', 'd')]
    for a in names:
        cmds += [('bitop', 'not', 'd', a), ('get', 'd'), ('exists', 'd')]
    cmds += [
        ('set', 'd', 'x', 'ex', '100'),
        ('bitop', 'or', 'd', 'v2'),
        ('ttl', 'd'),
        ('bitop', 'and', 'd', 'missing', 'v1'),
        ('get', 'd'),
        ('bitop', 'and', 'h', 'v1'),
        ('type', 'h'),
        ('bitop', 'or', 'd', 'v1', 'h'),
        ('bitop', 'or', 'd', 'h', 'nope'),
        ('bitop', 'not', 'd', 'v1', 'v2'),
        ('bitop', 'not', 'd', 'h'),
        ('bitop', 'nand', 'd', 'v1'),
        ('bitop', 'and\x00x', 'd', 'v1'),
        ('bitop', 'and', 'd'),
        ('get', 'd'),
    ]
    assert_same(both, cmds)


def test_bitfield(server, both):
    make_hash(server, both[1])
    edges = ['0', '1', '-1', '5', '100', '127', '128', '-128', '-129', '255', '256']
    edges += [str(2**31), str(2**62), str(LLONG_MAX), str(LLONG_MIN), 'x', '1.5']
    cmds = [('set', 's', b'\x00\xff\x0f\xf0abc')]
    for typ in ('i1', 'u1', 'i4', 'u4', 'i8', 'u8', 'i16', 'u63', 'i63', 'i64'):
        for off in ('0', '3', '13', '#1', '#0', '#3'):
            cmds.append(('bitfield', 's', 'get', typ, off))
        for overflow in ('wrap', 'SAT', 'fail'):
            for v in edges:
                cmds += [
                    ('bitfield', 'b', 'overflow', overflow, 'set', typ, '5', v),
                    ('bitfield', 'b', 'overflow', overflow, 'incrby', typ, '5', v),
                    ('bitfield', 'b', 'get', typ, '5'),
                ]
            cmds.append(('get', 'b'))
    cmds += [
        ('bitfield', 's', 'get', 'u8', '0', 'set', 'u8', '0', '255', 'get', 'u8', '0'),
        ('bitfield', 's', 'incrby', 'u2', '100', '1', 'overflow', 'sat', 'incrby', 'u2', '9', '9'),
        ('bitfield', 'new', 'overflow', 'fail', 'incrby', 'u2', '7', '10'),
        ('get', 'new'),
        ('bitfield', 'new', 'get', 'i8', '1000'),
        ('bitfield', 'missing', 'get', 'u8', '0', 'get', 'i64', '#100'),
        ('exists', 'missing'),
        ('bitfield', 's'),
        ('bitfield', 'missing'),
        ('bitfield', 'h'),
        ('bitfield', 'h', 'get', 'u8', '0'),
        ('bitfield', 'h', 'set', 'u8', '0', '1'),
        ('bitfield_ro', 's', 'get', 'u8', '0', 'GET', 'i4', '#1'),
        ('bitfield_ro', 's', 'get', 'u8', '0', 'set', 'u8', '0', '1'),
        ('bitfield_ro', 's', 'incrby', 'u8', '0', '1', 'get', 'x', '0'),
        ('bitfield_ro', 'h', 'get', 'u8', '0'),
        ('bitfield', 's', 'get', 'u64', '0'),
        ('bitfield', 's', 'get', 'i65', '0'),
        ('bitfield', 's', 'get', 'i0', '0'),
        ('bitfield', 's', 'get', 'I8', '0'),
        ('bitfield', 's', 'get', 'u', '0'),
        ('bitfield', 's', 'get', 'u8', '-1'),
        ('bitfield', 's', 'get', 'u8', '#-1'),
        ('bitfield', 's', 'get', 'u8', '##1'),
        ('bitfield', 's', 'get', 'u8', str(8 * 512 * 1024 * 1024)),
        ('bitfield', 's', 'get', 'u8', '#' + str(512 * 1024 * 1024)),
        ('bitfield', 's', 'get', 'u8', '#2305843009213693953'),  # * 8 wraps to 8 in C
        ('bitfield', 's', 'get', 'u8'),
        ('bitfield', 's', 'set', 'u8', '0'),
        ('bitfield', 's', 'set', 'u8', '0', 'x', 'get', 'x', '0'),
        ('bitfield', 's', 'overflow'),
        ('bitfield', 's', 'overflow', 'maybe', 'get', 'u8', '0'),
        ('bitfield', 's', 'overflow', 'sat'),
        ('bitfield', 's', 'frob', 'u8', '0'),
        ('bitfield', 's', 'get\x00x', 'u8', '0'),
        ('set', 't', 'v', 'ex', '100'),
        ('bitfield', 't', 'set', 'u8', '8', '65'),
        ('ttl', 't'),
        ('get', 't'),
        ('get', 's'),
    ]
    assert_same(both, cmds)


def test_bitmap_replies_resp2_and_resp3(raw_pair):
    cmds = [
        ('set', 's', b'\x0f'),
        ('bitfield', 's', 'overflow', 'fail', 'incrby', 'u4', '4', '100', 'get', 'i4', '4'),
        ('bitfield_ro', 's', 'get', 'u4', '0'),
        ('bitfield', 's'),
        ('bitpos', 's', '1'),
        ('bitop', 'not', 'd', 's'),
    ]
    for proto in (2, 3):
        raw_same(raw_pair(proto), [('flushall',), *cmds])


def test_lcs(both):
    cmds = [
        (
            'mset',
            'key1',
            'ohmytext',
            'key2',
            'mynewtext',
            'e',
            '',
            'x',
            'abcabcabc',
            'y',
            'cbacbacba',
            'n',
            '1234',
            'm',
            '2341',
        )
    ]
    pairs = [
        ('key1', 'key2'),
        ('key2', 'key1'),
        ('key1', 'missing'),
        ('missing', 'key1'),
        ('missing', 'missing2'),
        ('e', 'key1'),
        ('x', 'y'),
        ('y', 'x'),
        ('n', 'm'),
        ('key1', 'key1'),
    ]
    variants = [
        (),
        ('LEN',),
        ('IDX',),
        ('IDX', 'WITHMATCHLEN'),
        ('IDX', 'MINMATCHLEN', '4'),
        ('IDX', 'MINMATCHLEN', '4', 'WITHMATCHLEN'),
        ('idx', 'minmatchlen', '-5', 'withmatchlen'),
        ('MINMATCHLEN', '2'),
        ('withmatchlen',),
    ]
    for a, b in pairs:
        for v in variants:
            cmds.append(('lcs', a, b, *v))
    cmds += [
        ('lcs', 'key1', 'key2', 'LEN', 'IDX'),
        ('lcs', 'key1', 'key2', 'bogus'),
        ('lcs', 'key1', 'key2', 'MINMATCHLEN'),
        ('lcs', 'key1', 'key2', 'MINMATCHLEN', 'x'),
        ('lcs', 'key1'),
        ('lcs', 'key1', 'key2', 'idx\x00', 'len'),
    ]
    assert_same(both, cmds)


def test_lcs_random(both):
    import random

    rnd = random.Random(7)
    cmds = []
    for i in range(30):
        a = ''.join(rnd.choice('abc') for _ in range(rnd.randint(0, 40)))
        b = ''.join(rnd.choice('abc') for _ in range(rnd.randint(0, 40)))
        cmds += [
            ('mset', 'a', a, 'b', b),
            ('lcs', 'a', 'b'),
            ('lcs', 'a', 'b', 'idx', 'withmatchlen', 'minmatchlen', str(i % 3)),
        ]
    assert_same(both, cmds)


def test_lcs_memory_limit(make_server):
    srv = make_server(proto_max_bulk_len='1mb')
    r = srv.client()
    r.mset({'a': 'x' * 600, 'b': 'y' * 600})
    with pytest.raises(Exception) as e:
        r.execute_command('LCS', 'a', 'b')
    assert str(e.value) == (
        'Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len'
    )


# -- exact reply bytes, RESP2 and RESP3 -------------------------------------------------

RAW_COMMANDS = [
    ('set', 'k', 'v'),
    ('get', 'k'),
    ('get', 'missing'),
    ('set', 'k', 'v', 'nx'),
    ('set', 'k', 'w', 'get'),
    ('set', 'k', 'w', 'xx'),
    ('set', 'z', 'w', 'xx', 'get'),
    ('getex', 'missing'),
    ('getdel', 'missing'),
    ('getset', 'missing', 'v'),
    ('mget', 'k', 'x'),
    ('mset', 'a', '1'),
    ('msetnx', 'a', '1'),
    ('incr', 'a'),
    ('incrbyfloat', 'a', '0.5'),
    ('setnx', 'a', '1'),
    ('strlen', 'k'),
    ('getrange', 'missing', '0', '1'),
    ('setbit', 'b', '1', '1'),
    ('bitcount', 'b'),
    ('lcs', 'k', 'a'),
    ('lcs', 'k', 'a', 'len'),
    ('mset', 'l1', 'ohmytext', 'l2', 'mynewtext'),
    ('lcs', 'l1', 'l2', 'idx', 'withmatchlen'),
    ('lcs', 'l1', 'l2', 'idx'),
    ('incr',),
    ('set', 'k', 'v', 'ex', '0'),
    ('mset', 'a'),
    ('setex', 'k', '0', 'v'),
]


@pytest.mark.parametrize('proto', [2, 3])
def test_raw_replies(raw_pair, proto):
    raw_same(raw_pair(proto), RAW_COMMANDS)


# -- keyspace events ------------------------------------------------------------------

EVENT_COMMANDS = [
    ('set', 'k', 'v'),
    ('set', 'k', 'v2'),
    ('set', 'k', 'v', 'px', '100000'),
    ('set', 'k', 'v', 'keepttl'),
    ('set', 'm', 'v', 'xx', 'get'),
    ('set', 'm', 'v', 'nx', 'get'),
    ('set', 'k', 'v', 'nx'),
    ('set', 'p', 'v', 'exat', '1'),
    ('get', 'p'),
    ('get', 'nope'),
    ('getex', 'k', 'pxat', '1'),
    ('set', 'g', 'v'),
    ('getex', 'g', 'ex', '100'),
    ('getex', 'g', 'persist'),
    ('getex', 'g', 'persist'),
    ('getex', 'g'),
    ('getex', 'nope', 'ex', '1'),
    ('setbit', 'b', '0', '1'),
    ('setbit', 'b', '0', '1'),
    ('setbit', 'b', '7', '0'),
    ('setbit', 'b', '9', '0'),
    ('getbit', 'nope', '1'),
    ('incr', 'i'),
    ('incr', 'i'),
    ('incrbyfloat', 'i', '1.5'),
    ('incrbyfloat', 'f', '1'),
    ('append', 'i', 'x'),
    ('append', 'ap', 'x'),
    ('setrange', 'i', '0', 'a'),
    ('setrange', 'zz', '0', ''),
    ('setrange', 'i', '0', ''),
    ('setrange', 'sr', '2', 'x'),
    ('getdel', 'i'),
    ('getdel', 'i'),
    ('mset', 'a', '1', 'c', '2', 'a', '3'),
    ('msetnx', 'd', '1', 'e', '2'),
    ('msetnx', 'd', '1', 'f', '1'),
    ('getset', 'a', 'x'),
    ('getset', 'nn', 'x'),
    ('setnx', 'nn', 'y'),
    ('setnx', 'n2', 'y'),
    ('setex', 'nn', '10', 'z'),
    ('psetex', 'q', '10000', 'z'),
    ('decrby', 'dd', '3'),
    ('incr', 'nn'),
    ('set', 'x', 'v', 'ex', '0'),
    ('mget', 'a', 'nope'),
    ('strlen', 'nope'),
    ('getrange', 'nope', '0', '1'),
    ('bitcount', 'nope'),
    ('lcs', 'nope', 'a'),
    ('bitop', 'or', 'bo', 'a', 'nope'),
    ('bitop', 'not', 'bo', 'a'),
    ('bitop', 'and', 'bo', 'nope'),
    ('bitop', 'and', 'bo', 'nope'),
    ('bitfield', 'bf', 'set', 'u8', '0', '1'),
    ('bitfield', 'bf', 'get', 'u8', '0'),
    ('bitfield', 'bf', 'overflow', 'fail', 'incrby', 'u8', '0', '1000'),
    ('bitfield', 'bf2', 'overflow', 'fail', 'incrby', 'u8', '0', '1000'),
    ('bitfield', 'bf', 'overflow', 'fail', 'incrby', 'u8', '80', '1000'),
    ('strlen', 'bf'),
    ('bitfield', 'bf', 'set', 'u8', '0', '1'),
    ('bitfield', 'bf', 'set', 'i8', '0', '257'),
    ('bitfield_ro', 'bf', 'get', 'u8', '0'),
    ('bitpos', 'bf', '1'),
]


def test_keyspace_events_match_redis(both):
    events = assert_same_events(both, EVENT_COMMANDS, 'KEAnm')
    assert len(events) > 80


def test_no_events_when_disabled(r):
    assert capture_events(r, EVENT_COMMANDS, '') == []


# -- WATCH ----------------------------------------------------------------------------

WATCH_CASES = [
    [('set', 'k', 'v')],
    [('setbit', 'k', '0', '0')],
    [('setbit', 'k', '0', '1')],
    [('setbit', 'k', '100', '0')],
    [('setrange', 'k', '0', '')],
    [('setrange', 'k', '0', 'x')],
    [('append', 'k', '')],
    [('getex', 'k')],
    [('getex', 'k', 'persist')],
    [('getex', 'k', 'ex', '100')],
    [('get', 'k')],
    [('set', 'k', 'v', 'nx')],
    [('set', 'k', 'v', 'xx')],
    [('getdel', 'k')],
    [('getdel', 'other')],
    [('incr', 'n')],
    [('incrbyfloat', 'n', '0')],
    [('mset', 'x', '1', 'k', '2')],
    [('msetnx', 'x', '1', 'k', '2')],
    [('setnx', 'k', 'v')],
    [('getset', 'k', 'v')],
    [('bitcount', 'k')],
    [('lcs', 'k', 'n')],
    [('bitop', 'not', 'k', 'n')],
    [('bitop', 'and', 'k', 'missing')],
    [('bitop', 'and', 'n', 'k')],
    [('bitfield', 'k', 'get', 'u8', '0')],
    [('bitfield', 'k', 'set', 'u8', '0', '97')],
    [('bitfield', 'k', 'overflow', 'fail', 'incrby', 'u2', '0', '9')],
    [('bitfield', 'k', 'overflow', 'fail', 'incrby', 'u2', '100', '9')],
    [('bitfield', 'new', 'overflow', 'fail', 'incrby', 'u2', '0', '9')],
    [('bitfield', 'k', 'set', 'u8', '100', '0')],
    [('bitfield_ro', 'k', 'get', 'u8', '0')],
    [('bitpos', 'k', '1')],
]


@pytest.mark.parametrize('case', WATCH_CASES, ids=lambda c: ' '.join(c[0]))
def test_watch_signalling_matches_redis(raw_pair, case):
    pair = raw_pair(2)
    setup = [('flushall',), ('set', 'k', 'a'), ('set', 'n', '5')]
    for c in pair:
        for cmd in setup:
            c.cmd(*cmd)
    raw_same(pair, [('watch', 'k', 'n')] + case + [('multi',), ('ping',), ('exec',)])


# -- misc -----------------------------------------------------------------------------


def test_set_over_expired_key_counts_expiry(server, r):
    ks = server.server.keyspace
    r.psetex('k', 1, 'v')
    time.sleep(0.01)
    before = server.call(lambda: ks.expired_keys)
    r.set('k', 'w')
    after = server.call(lambda: ks.expired_keys)
    assert r.get('k') == b'w' and r.ttl('k') == -1
    assert after - before in (0, 1)  # 0 if the active expiry got there first
    assert server.call(lambda: ks.volatile_count(0)) == 0


def test_resp3_client_types(r3):
    assert r3.set('k', 'v') is True
    assert r3.set('k', 'w', get=True) == b'v'
    assert r3.set('z', 'w', xx=True) is None
    assert r3.incrbyfloat('f', 0.5) == 0.5
    r3.mset({'a': 'ohmytext', 'b': 'mynewtext'})
    reply = r3.execute_command('LCS', 'a', 'b', 'IDX')
    assert reply[b'len'] == 6 and len(reply[b'matches']) == 2


def test_pipelined_hot_path(r):
    p = r.pipeline(transaction=False)
    for i in range(500):
        p.set(f'k{i}', i)
        p.incr(f'k{i}')
        p.set(f'e{i}', i, ex=100)
    p.mset({f'm{i}': i for i in range(100)})
    for i in range(500):
        p.get(f'k{i}')
    out = p.execute()
    assert out[-500:] == [str(i + 1).encode() for i in range(500)]
    assert r.mget('m0', 'm99', 'nope') == [b'0', b'99', None]


def test_encoding_of_strings_changed_in_place(both):
    """OBJECT ENCODING after writes that leave Redis a raw sds (APPEND, SETRANGE, SETBIT,
    BITFIELD, BITOP, PFADD) or an embstr (INCRBYFLOAT), whatever the digits say; a
    later SET or INCR encodes again; PFCOUNT's cache keeps the encoding."""
    cmds = []
    enc = [('OBJECT', 'ENCODING', k) for k in ('k', 'a', 'n', 'b', 'bf', 'x', 'dest', 'h')]
    for step in [
        ('SET', 'k', '1234'),
        ('SETRANGE', 'k', '0', '2'),
        ('GET', 'k'),
        ('OBJECT', 'REFCOUNT', 'k'),
        ('APPEND', 'a', '12'),
        ('APPEND', 'a', '3'),
        ('SETRANGE', 'n', '2', 'x'),
        ('SETBIT', 'b', '3', '1'),
        ('BITFIELD', 'bf', 'SET', 'u8', '0', '5'),
        ('SET', 'x', '1'),
        ('INCRBYFLOAT', 'x', '2'),
        ('BITOP', 'OR', 'dest', 'x'),
        ('PFADD', 'h', 'a'),
        ('PFCOUNT', 'h'),
        ('SET', 'k', '1234'),
        ('SETRANGE', 'k', '0', ''),
        ('INCR', 'a'),
        ('SET', 'n', 'short'),
    ]:
        cmds += [step, *enc]
    assert_same(both, cmds)


def test_encoding_marks_of_one_byte_strings_end_with_the_next_write(both):
    """A one-byte string is one shared bytes object in Python: an INCRBYFLOAT's embstr "3"
    or a SETBIT's raw "\\x10" must not keep their encodings when SET, RESTORE or INCRBYFLOAT
    store the same byte again (derived again, as Redis encodes the new object)."""
    dump = both[1].dump  # (redis-server's payload: both servers RESTORE it)
    both[1].set('d', '0')
    payload = dump('d')
    cmds = []
    for step in [
        ('SET', 'x', '1'),
        ('INCRBYFLOAT', 'x', '2'),
        ('SET', 'y', '3'),
        ('SET', 'x', '3'),
        ('INCRBYFLOAT', 'z', '0'),
        ('RESTORE', 'z', '0', payload, 'REPLACE'),
        ('SETBIT', 'b', '3', '1'),
        ('SET', 'c', '\x10'),
        ('SET', 'b', '\x10'),
    ]:
        cmds += [step] + [('OBJECT', 'ENCODING', k) for k in ('x', 'y', 'z', 'b', 'c')]
    assert_same(both, cmds)
