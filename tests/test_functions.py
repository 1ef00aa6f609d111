"""FUNCTION and FCALL against redis-server 7.0.15: loading libraries (metadata, the
load-time environment, redis.register_function's checks), calling them in RESP2 and RESP3,
FUNCTION LIST / STATS / DELETE / FLUSH / HELP, DUMP payloads restored both ways, RESTORE's
policies and bad payloads, and FUNCTION STATS / KILL while a function keeps the server
busy.

Libraries outlive FLUSHALL, so every test starts from FUNCTION FLUSH on both servers.
Redis lists libraries and functions in its dicts' hash order (seeded at random when it
starts), so where there are several, they are compared sorted."""

import threading

import pytest

from conftest import WAIT, assert_same, raw_same, run_all, wait_until
from rawconn import RawConn
from store.commands import functions as function_commands
from store.rdb import crc64, lzf_compress, lzf_decompress, rdb_string
from store.scripting.functions import libraries_payload


@pytest.fixture
def fb(both):
    """(ours, reference) RESP2 clients with no libraries loaded."""
    for c in both:
        c.function_flush()
    return both


@pytest.fixture
def fb_resp(both_resp):
    for c in both_resp:
        c.function_flush()
    return both_resp


def lib(body, name='lib'):
    return f'#!lua name={name}\n{body}'


def load_each(both, codes):
    """FUNCTION LOAD each code on a fresh library set; replies must be equal."""
    ours, theirs = both
    for code in codes:
        for c in both:
            c.function_flush()
        got, want = (
            run_all(ours, [('FUNCTION', 'LOAD', code)]),
            run_all(theirs, [('FUNCTION', 'LOAD', code)]),
        )
        assert got == want, code


def payload(body, version=10):
    body += version.to_bytes(2, 'little')
    return body + crc64(body).to_bytes(8, 'little')


# -- loading ---------------------------------------------------------------------------------


METADATA = [
    'return 1',
    '#!lua\n',
    '#!lua name=\n',
    '#!lua name=a-b\n',
    '#!lua name=a name=b\n',
    '#!lua foo=a\n',
    '#!lua name=x',
    '#!lua name=x "\n',
    '#!luax name=x\n',
    '#! name=x\n',
    '#!\n',
    '#!lua NAME=x\nredis.register_function("f", function() return 1 end)',
    '#!LUA name=x\nredis.register_function("f", function() return 1 end)',
    '#!lua name=x\0\nredis.register_function("f", function() return 1 end)',
    '#!lua name=lib\n',
    '#!lua name=lib\nsyntax error here',
]

LOAD_ENV = [
    'return math.random()',
    'return type(1)',
    "error('boom')",
    'a = 1',
    "redis.register_function('f1', function() return 1 end)\na = 1",
    "redis.call('ping')",
    'redis.setresp(3)',
    'redis.foo = 1',
    'local x = nil\nx.y = 1',
    'redis.log(1)',
    "redis.log(redis.LOG_WARNING, 'loaded', 1, {})",
    'return redis.REDIS_VERSION .. redis.REDIS_VERSION_NUM .. redis.LOG_DEBUG',
    "local t = {} t.y = 1 redis.register_function('f', function() return t.y end)",
]

REGISTER = [
    "redis.register_function('f', function() end) redis.register_function('f', function() end)",
    "redis.register_function('f', function() end) redis.register_function('F', function() end)",
    "redis.register_function('f-x', function() return 1 end)",
    "redis.register_function('', function() return 1 end)",
    "redis.register_function{function_name='f', callback=function() end, flags={'bad'}}",
    "redis.register_function{function_name='f', callback=function() end, flags='no-writes'}",
    "redis.register_function{function_name='f', callback=function() end, flags={1}}",
    "redis.register_function{function_name='f', callback=function() end, flags={{}}}",
    "redis.register_function{function_name='f', callback=function() end, foo=1}",
    'redis.register_function{function_name=1, callback=function() return 1 end}',
    'redis.register_function{function_name=1.5, callback=function() return 1 end}',
    'redis.register_function{function_name={}, callback=function() return 1 end}',
    'redis.register_function{callback=function() return 1 end}',
    "redis.register_function{function_name='f'}",
    "redis.register_function{function_name='f', callback=1}",
    "redis.register_function{function_name='f', callback=function() end, description=1}",
    "redis.register_function{function_name='f', callback=function() end, description={}}",
    "redis.register_function{[true]='f'}",
    "redis.register_function{[1]='x'}",
    "redis.register_function('f')",
    "redis.register_function('f', 1)",
    "redis.register_function('f', nil)",
    'redis.register_function(1, function() end)',
    'redis.register_function({}, function() end)',
    'redis.register_function()',
    "redis.register_function('a', 'b', 'c')",
    "redis.register_function{FUNCTION_NAME='f', CallBack=function() end, FLAGS={'NO-WRITES'}}",
    "redis.register_function{function_name='f', callback=function() end, flags={}}",
    "redis.register_function{function_name='f', callback=function() end, "
    "flags={'no-writes', 'allow-oom', 'allow-stale', 'no-cluster', 'allow-cross-slot-keys'}}",
]


def test_load_metadata_errors(fb):
    load_each(fb, METADATA)


def test_load_time_environment(fb):
    load_each(fb, [lib(body) for body in LOAD_ENV])


def test_register_function_checks(fb):
    load_each(fb, [lib(body) for body in REGISTER])


def test_load_timeout(fb):
    load_each(fb, [lib('local a = 0 while true do a = a + 1 end')])


def test_load_options_replace_and_collisions(fb):
    f1 = lib("redis.register_function('f1', function() return 1 end)")
    f1b = lib("redis.register_function('f1b', function() return 11 end)")
    f2 = lib("redis.register_function('F1', function() return 2 end)", 'other')
    assert_same(
        fb,
        [
            ('FUNCTION', 'LOAD', 'replace'),
            ('FUNCTION', 'LOAD', 'foo', f1),
            ('FUNCTION', 'LOAD', 'foo', 'bar', f1),
            ('FUNCTION', 'LOAD', f1),
            ('FUNCTION', 'LOAD', f1),
            ('FUNCTION', 'LOAD', 'REPLACE', 'replace', f1),
            ('FCALL', 'f1', '0'),
            ('FUNCTION', 'LOAD', f2),  # F1 collides with f1: names are case-insensitive
            ('FUNCTION', 'LOAD', 'replace', f1b),
            ('FCALL', 'f1', '0'),
            ('FCALL', 'F1B', '0'),
            ('FUNCTION', 'LOAD', f2),
            ('FCALL', 'f1', '0'),
            ('FUNCTION', 'LOAD', 'replace', lib('return', 'other')),  # old one stays
            ('FCALL', 'f1', '0'),
            ('FUNCTION', 'LOAD', 'replace', lib('syntax error', 'other')),
            ('FUNCTION', 'LOAD', 'replace', lib("redis.register_function('f1b', f)", 'other')),
            ('FCALL', 'f1', '0'),
            ('FUNCTION', 'LOAD'),
        ],
    )


# -- FCALL -------------------------------------------------------------------------------------

CALLS = lib(
    """
redis.register_function('echo', function(keys, args) return {keys, args} end)
redis.register_function('keys', function(keys, args) return KEYS end)
redis.register_function('boom', function(keys, args) error('boom') end)
redis.register_function('tbl', function(keys, args) error({err='MY custom'}) end)
redis.register_function('nosuch', function(keys, args) return redis.call('nosuch') end)
redis.register_function('set', function(keys, args) return redis.call('set', keys[1], args[1]) end)
redis.register_function{function_name='ro', flags={'no-writes'},
  callback=function(keys, args) return redis.call('set', keys[1], args[1]) end}
redis.register_function{function_name='get', flags={'no-writes'},
  callback=function(keys, args) return redis.call('get', keys[1]) end}
redis.register_function('reg', function() return redis.register_function('z', function() end) end)
redis.register_function('glob', function() x = 1 end)
redis.register_function('types', function()
  return {1, 2.9, -3.5, 'str', true, false, {ok='fine'}, {1, {2, 3}}, redis.status_reply('st')}
end)
redis.register_function('resp3', function()
  redis.setresp(3)
  return {redis.call('hgetall', 'h'), {double=1.5}, {map={a=1}}, {set={x=true}}, true, false}
end)
redis.register_function('nil', function() return nil end)
redis.register_function('err', function() return redis.error_reply('OOPS bad') end)
redis.register_function('pcall', function() return redis.pcall('incr', 'h') end)
"""
)


def test_fcall_replies(fb_resp, raw_pair):
    ours, theirs = fb_resp
    for c in fb_resp:
        c.function_load(CALLS)
        c.hset('h', 'f', 'v')
    proto = ours.connection_pool.connection_kwargs.get('protocol', 2)
    raw_same(
        raw_pair(int(proto)),
        [
            ('FCALL', 'echo', '2', 'k1', 'k2', 'a1', 'a2'),
            ('FCALL', 'ECHO', '0'),
            ('FCALL_RO', 'get', '1', 'h'),
            ('FCALL', 'set', '1', 'k', 'v'),
            ('FCALL', 'get', '1', 'k'),
            ('FCALL', 'types', '0'),
            ('FCALL', 'resp3', '0'),
            ('FCALL', 'nil', '0'),
            ('FCALL', 'err', '0'),
            ('FCALL', 'pcall', '0'),
            ('FUNCTION', 'LIST', 'LIBRARYNAME', 'nomatch'),
            ('FUNCTION', 'STATS'),
        ],
    )


def test_fcall_errors(fb):
    for c in fb:
        c.function_load(CALLS)
    assert_same(
        fb,
        [
            ('FCALL', 'missing', '0'),
            ('FCALL', 'missing', 'x'),
            ('FCALL', 'echo', 'x'),
            ('FCALL', 'echo', '1.5'),
            ('FCALL', 'echo', '-1'),
            ('FCALL', 'echo', '3', 'a'),
            ('FCALL', 'echo', ' 1', 'a'),
            ('FCALL', 'echo'),
            ('FCALL_RO', 'echo'),
            ('FCALL', 'keys', '0'),
            ('FCALL', 'boom', '0'),
            ('FCALL', 'tbl', '0'),
            ('FCALL', 'nosuch', '0'),
            ('FCALL_RO', 'set', '1', 'k', 'v'),  # a function without no-writes
            ('FCALL_RO', 'ro', '1', 'k', 'v'),
            ('FCALL', 'ro', '1', 'k', 'v'),
            ('FCALL', 'reg', '0'),
            ('FCALL', 'glob', '0'),
            ('GET', 'k'),
        ],
    )


def test_fcall_from_a_script_and_in_multi(fb, raw_pair):
    for c in fb:
        c.function_load(CALLS)
    raw_same(
        raw_pair(),
        [
            ('EVAL', "return redis.call('fcall', 'echo', 0)", '0'),
            ('EVAL', "return redis.pcall('function', 'flush')", '0'),
            ('MULTI',),
            ('FCALL', 'set', '1', 'k', 'v'),
            ('FCALL', 'missing', '0'),
            ('FCALL', 'get', '1', 'k'),
            ('EXEC',),
        ],
    )


# -- FUNCTION LIST / STATS / DELETE / FLUSH / HELP ----------------------------------------------

LIB_A = lib(
    """
redis.register_function{function_name='fa', callback=function() return 1 end,
  description='the first', flags={'no-writes', 'allow-stale'}}
""",
    'liba',
)
LIB_B = lib("redis.register_function('fb', function() return 2 end)", 'libb')
LIB_C = lib(
    """
redis.register_function('fc1', function() return 1 end)
redis.register_function{function_name='fc2', callback=function() return 1 end,
  flags={'allow-cross-slot-keys', 'no-cluster', 'allow-oom'}, description=''}
""",
    'other',
)


def _sorted_list(reply):
    """FUNCTION LIST with its libraries, their functions and flags in a fixed order."""
    out = []
    for entry in reply:
        d = dict(zip(entry[::2], entry[1::2])) if isinstance(entry, list) else dict(entry)
        fns = []
        for fn in d[b'functions']:
            f = dict(zip(fn[::2], fn[1::2])) if isinstance(fn, list) else dict(fn)
            f[b'flags'] = sorted(f[b'flags'])
            fns.append(sorted(f.items()))
        d[b'functions'] = sorted(fns, key=repr)
        out.append(sorted(d.items()))
    return sorted(out, key=repr)


def test_function_list(fb):
    ours, theirs = fb
    for c in fb:
        for code in (LIB_A, LIB_B, LIB_C):
            c.function_load(code)
    for args in (
        (),
        ('WITHCODE',),
        ('LIBRARYNAME', 'lib*'),
        ('libraryname', 'LIB*'),
        ('withcode', 'libraryname', '*b'),
        ('LIBRARYNAME', 'oth?r', 'WITHCODE'),
        ('LIBRARYNAME', 'x'),
    ):
        got = ours.execute_command('FUNCTION', 'LIST', *args)
        want = theirs.execute_command('FUNCTION', 'LIST', *args)
        assert _sorted_list(got) == _sorted_list(want), args
    assert_same(
        fb,
        [
            ('FUNCTION', 'LIST', 'foo'),
            ('FUNCTION', 'LIST', 'libraryname'),
            ('FUNCTION', 'LIST', 'withcode', 'withcode'),
            ('FUNCTION', 'LIST', 'libraryname', 'a', 'libraryname', 'b'),
            ('FUNCTION', 'LIST', 'withcode', 'libraryname'),
        ],
    )


def test_function_list_shape(fb_resp, raw_pair):
    """One library of one function: the exact bytes (maps, null description, set of
    status flags in RESP3; flat arrays in RESP2)."""
    ours, _ = fb_resp
    proto = int(ours.connection_pool.connection_kwargs.get('protocol', 2))
    for c in fb_resp:
        c.function_load(LIB_A)
        c.function_load(LIB_B)
    raw_same(
        raw_pair(proto),
        [
            ('FUNCTION', 'LIST', 'LIBRARYNAME', 'liba'),
            ('FUNCTION', 'LIST', 'LIBRARYNAME', 'libb', 'WITHCODE'),
            ('FUNCTION', 'STATS'),
            ('FUNCTION', 'DELETE', 'liba'),
            ('FUNCTION', 'LIST'),
            ('FUNCTION', 'LIST', 'WITHCODE'),
            ('FUNCTION', 'FLUSH'),
            ('FUNCTION', 'LIST'),
            ('FUNCTION', 'STATS'),
        ],
    )


def test_delete_flush_stats(fb):
    for c in fb:
        for code in (LIB_A, LIB_B, LIB_C):
            c.function_load(code)
    assert_same(
        fb,
        [
            ('FUNCTION', 'STATS'),
            ('FUNCTION', 'DELETE', 'nosuch'),
            ('FUNCTION', 'DELETE', 'LIBA'),  # library names are case-sensitive
            ('FUNCTION', 'DELETE', 'liba'),
            ('FCALL', 'fa', '0'),
            ('FUNCTION', 'STATS'),
            ('FUNCTION', 'DELETE'),
            ('FUNCTION', 'DELETE', 'a', 'b'),
            ('FUNCTION', 'FLUSH', 'foo'),
            ('FUNCTION', 'FLUSH', 'async', 'x'),
            ('FUNCTION', 'FLUSH', 'ASYNC'),
            ('FUNCTION', 'STATS'),
            ('FUNCTION', 'LOAD', LIB_B),
            ('FUNCTION', 'FLUSH', 'sync'),
            ('FUNCTION', 'STATS'),
            ('FUNCTION', 'LOAD', LIB_B),
            ('FUNCTION', 'FLUSH'),
            ('FCALL', 'fb', '0'),
            ('FUNCTION', 'KILL'),
            ('FUNCTION', 'STATS', 'x'),
        ],
    )


def test_help_and_subcommand_errors(fb):
    assert_same(
        fb,
        [
            ('FUNCTION', 'HELP'),
            ('FUNCTION', 'help', 'x'),
            ('FUNCTION', 'foo'),
            ('FUNCTION',),
            ('FUNCTION', 'DUMP', 'x'),
            ('FUNCTION', 'KILL', 'x'),
            ('FUNCTION', 'RESTORE'),
            ('FCALL',),
            ('FCALL', 'f'),
        ],
    )


def test_command_info(ref, server, raw_pair):
    """COMMAND INFO's arity, flags, ACL categories and tips for FCALL, FCALL_RO, FUNCTION
    and its subcommands, from redis-server (key specs: see the module docstring of
    store/commands/introspection.py, which renders none for movable keys)."""
    ours = server.client(protocol=2)
    try:
        for cmd in function_commands.COMMANDS:
            for c in cmd.all():
                want = ref.execute_command('COMMAND', 'INFO', c.name)[c.name]
                got = ours.execute_command('COMMAND', 'INFO', c.name)[c.name]
                for field in ('arity', 'flags', 'first_key_pos', 'last_key_pos', 'step_count'):
                    assert got[field] == want[field], (c.name, field)
                assert set(got['acl_categories']) == set(want['acl_categories']), c.name
                assert sorted(got['tips']) == sorted(want['tips']), c.name
        raw_same(
            raw_pair(),
            [
                ('COMMAND', 'GETKEYS', 'FCALL', 'f', '2', 'a', 'b', 'c'),
                ('COMMAND', 'GETKEYS', 'FCALL_RO', 'f', '1', 'a'),
                ('COMMAND', 'GETKEYS', 'FCALL', 'f', '0', 'a'),
            ],
        )
    finally:
        ours.close()


# -- DUMP / RESTORE ------------------------------------------------------------------------------

BIG = lib(
    'local t = {}\n'
    + '\n'.join(f't[{i}] = {i * i} -- filler {"xyz" * (i % 7)}' for i in range(300))
    + "\nredis.register_function('big', function() return t[12] end)",
    'big',
)
REPEATS = lib(
    "local x = '" + 'a' * 300 + "'\nredis.register_function('rep', function() return #x end)",
    'rep',
)


@pytest.mark.parametrize('code', [LIB_A, LIB_C, BIG, REPEATS], ids=['small', 'two', 'big', 'rep'])
def test_dump_is_redis_bytes(fb, code):
    """One library (no hash order involved): DUMP's payload is redis-server's, LZF
    compression included, and each server restores the other's."""
    ours, theirs = fb
    for c in fb:
        c.function_load(code)
    mine, reference = ours.function_dump(), theirs.function_dump()
    assert mine == reference
    for src, dst in ((ours, theirs), (theirs, ours)):
        dump = src.function_dump()
        dst.function_flush()
        assert dst.function_restore(dump)
        assert dst.function_list(withcode=True)[0][-1] == code.encode()


def test_dump_restore_both_ways_many(fb):
    ours, theirs = fb
    for c in fb:
        for code in (LIB_A, LIB_B, LIB_C, BIG):
            c.function_load(code)
    dumps = {id(c): c.function_dump() for c in fb}
    for src, dst in ((ours, theirs), (theirs, ours)):
        dst.function_flush()
        assert dst.function_restore(dumps[id(src)])
        assert _sorted_list(dst.function_list(withcode=True)) == _sorted_list(
            src.function_list(withcode=True)
        )
        assert dst.fcall('fc1', 0) == 1
    assert_same(fb, [('FUNCTION', 'STATS')])


A = b"#!lua name=a\nredis.register_function('fa', function() return 1 end)"
A2 = b"#!lua name=a\nredis.register_function('fa2', function() return 2 end)"
B = b"#!lua name=b\nredis.register_function('fa', function() return 3 end)"
PRE_GA_CODE = rdb_string(b"redis.register_function('fp', function() return 1 end)")

PAYLOADS = [
    payload(b''),
    payload(b'', 11),
    payload(b'', 9),
    payload(b'\x00'),
    payload(b'\xf5'),
    payload(b'\xf5\x05ab'),
    payload(b'\xf5' + rdb_string(A) + b'\xf5' + rdb_string(A)),
    payload(b'\xf5' + rdb_string(b'123')),
    payload(b'\xf5\xc3\x05\x10abcde'),  # corrupt LZF
    payload(b'\xf5' + rdb_string(A) + b'\x07'),
    payload(b'\xf5' + rdb_string(b'#!lua name=z\nreturn')),
    payload(b'\xf5\xc4'),
    payload(b'\xf5\x80\x00\x00\x00\x02ab'),
    payload(b'\xf5' + rdb_string(B)),
    payload(b'\xf5' + rdb_string(A2)),
    payload(b'\xf5' + rdb_string(A2) + b'\xf5' + rdb_string(B)),
    payload(b'\xf6' + rdb_string(A)),
    payload(b'\xf6' + rdb_string(b'p') + rdb_string(b'LUA') + b'\x00' + PRE_GA_CODE),
    payload(b'\xf6' + rdb_string(b'p') + rdb_string(b'lua') + b'\x01\x04desc' + PRE_GA_CODE),
    payload(b'\xf6' + rdb_string(b'p') + rdb_string(b'lua') + b'\x01'),
    payload(b'\xf6' + rdb_string(b'p') + rdb_string(b'lua') + b'\x82'),
    payload(b'\xf6' + rdb_string(b'p') + rdb_string(b'lua') + b'\xc0'),
    payload(b'\xf6' + rdb_string(b'a') + rdb_string(b'lua') + b'\x00' + PRE_GA_CODE),
    b'0123456789',
    b'x',
    payload(b'\xf5' + rdb_string(A))[:-1] + b'x',
]


@pytest.mark.parametrize('policy', [(), ('APPEND',), ('replace',), ('FLUSH',)])
def test_restore_payloads_and_policies(fb, policy):
    ours, theirs = fb
    for data in PAYLOADS:
        results = []
        for c in fb:
            c.function_flush()
            c.function_load(A.decode())
            results.append(
                (
                    run_all(c, [('FUNCTION', 'RESTORE', data, *policy)]),
                    _sorted_list(c.function_list(withcode=True)),
                )
            )
        assert results[0] == results[1], data


def test_restore_errors(fb):
    dump = fb[1].function_dump()
    assert_same(
        fb,
        [
            ('FUNCTION', 'RESTORE', dump, 'foo'),
            ('FUNCTION', 'RESTORE', dump, 'flush', 'x'),
            ('FUNCTION', 'RESTORE', 'x', 'foo'),
        ],
    )


def test_rdb_encoding_helpers():
    """The encoders the RDB writer will reuse: CRC64 (crc64.c's check value), LZF both
    ways, RDB string encodings."""
    assert crc64(b'123456789') == 0xE9C6D914C4B8D9CA
    data = b'abcabcabcabcabcabcabc' * 20 + bytes(range(256))
    packed = lzf_compress(data, len(data) - 4)
    assert packed is not None and len(packed) < len(data)
    assert lzf_decompress(packed, len(data)) == data
    assert lzf_compress(bytes(range(100)), 96) is None
    assert rdb_string(b'12') == b'\xc0\x0c'
    assert rdb_string(b'-300') == b'\xc1\xd4\xfe'
    assert rdb_string(b'012') == b'\x03012'
    assert rdb_string(b'x' * 100, compress=False) == b'\x40\x64' + b'x' * 100
    assert libraries_payload([])[:2] == b'\x0a\x00'


# -- busy --------------------------------------------------------------------------------------

SPIN = lib(
    """
redis.register_function{function_name='spin', flags={'no-writes'},
  callback=function(keys, args) local i = 0 while true do i = i + 1 end end}
redis.register_function('wspin', function(keys, args)
  redis.call('set', keys[1], 'x') local i = 0 while true do i = i + 1 end end)
""",
    'spin',
)


def _busy_scene(port, fcall, checks):
    """Run `fcall` on one connection until the server is busy, then `checks` on another;
    returns (what the checks saw, the FCALL's reply)."""
    runner, other = RawConn(port), RawConn(port)
    try:
        runner.cmd('CONFIG', 'SET', 'busy-reply-threshold', '50')
        runner.cmd('FUNCTION', 'FLUSH')
        runner.cmd('FUNCTION', 'LOAD', SPIN)
        result = {}
        thread = threading.Thread(target=lambda: result.setdefault('r', runner.cmd(*fcall)))
        thread.start()
        wait_until(lambda: other.cmd('PING').startswith(b'-BUSY'), 'the server busy')
        seen = checks(other)
        thread.join(WAIT)
        return seen, result.get('r')
    finally:
        runner.cmd('CONFIG', 'SET', 'busy-reply-threshold', '5000')
        runner.close()
        other.close()


def _stats_then_kill(conn):
    stats = conn.cmd('FUNCTION', 'STATS')
    # duration_ms is the one value that depends on timing: its digits are replaced.
    head, _, tail = stats.partition(b'duration_ms\r\n')
    tail = b':N' + tail[tail.index(b'\r\n') :]
    return [
        head + b'duration_ms\r\n' + tail,
        conn.cmd('SCRIPT', 'KILL'),
        conn.cmd('GET', 'k'),
        conn.cmd('FUNCTION', 'KILL'),
    ]


def test_stats_and_kill_while_busy(server, redis_ref):
    got = _busy_scene(server.port, ('FCALL', 'spin', '1', 'k', 'arg'), _stats_then_kill)
    want = _busy_scene(redis_ref[1], ('FCALL', 'spin', '1', 'k', 'arg'), _stats_then_kill)
    assert got == want
    assert want[1].startswith(b'-ERR Script killed by user')


RUNTIME = lib(
    """
local rr = redis
redis.register_function('cap', function() return rr.call('ping') end)
redis.register_function('cap2', function() return rr.register_function('x', function() end) end)
redis.register_function('log', function() redis.log(redis.LOG_WARNING, 'x') return 1 end)
redis.register_function('s', function() return string.rep('a', 3) end)
redis.register_function('pc', function() return {pcall(function() x = 1 end)} end)
redis.register_function('argv', function() return ARGV end)
redis.register_function('nul', function() return 'a\\0b' end) -- \0 in the code
""",
    'rt',
)


def test_runtime_environment(fb, raw_pair):
    """At FCALL time the full script environment (no KEYS/ARGV); a `redis` captured while
    loading is still the load-time table."""
    desc = lib(
        "redis.register_function{function_name='d', callback=function() end, description='x\\0y'}",
        'desc',
    )
    for c in fb:
        c.function_load(RUNTIME)
        c.function_load(desc)
    raw_same(
        raw_pair(),
        [('FCALL', name, '0') for name in ('cap', 'cap2', 'log', 's', 'pc', 'argv', 'nul', 'd')]
        + [('FUNCTION', 'LIST', 'LIBRARYNAME', 'desc', 'WITHCODE')],
    )


def test_debug_reload_merge_replaces_libraries(both):
    """DEBUG RELOAD NOFLUSH fails on a library already loaded; with MERGE the file's
    library replaces it (RDBFLAGS_ALLOW_DUP), as in Redis."""
    code = "#!lua name=test\nredis.register_function('test', function() return 'hello' end)"
    assert_same(
        both,
        [
            ('FUNCTION', 'FLUSH'),
            ('FUNCTION', 'LOAD', code),
            ('DEBUG', 'RELOAD', 'NOFLUSH'),
            ('DEBUG', 'RELOAD', 'NOFLUSH', 'MERGE'),
            ('FUNCTION', 'LIST'),
            ('FCALL', 'test', 0),
            ('SET', 'x', 1),
            ('DEBUG', 'RELOAD', 'NOSAVE', 'MERGE'),  # MERGE alone still empties first
            ('GET', 'x'),
            ('FUNCTION', 'FLUSH'),
        ],
    )
