"""EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT, as differential tests against
redis-server 7.0.15.

Every script runs on both servers and the replies are compared as exact bytes (RawConn),
in RESP2 and RESP3: the conversions both ways (Lua values to replies, replies to Lua
values under redis.setresp(2) and (3)), the error wording with its "script: <sha>, on
@user_script:N." suffix, the sandbox (read-only globals, missing globals, the libraries
present), and the redis API's argument checks. The behaviours that are not a single reply
(atomicity, events, WATCH, MULTI, frozen time, the busy state and SCRIPT KILL) have tests
of their own below.
"""

import threading
import time

import pytest
import redis

from conftest import (
    WAIT,
    assert_same_events,
    raw_same,
    spawn_redis,
    spawn_store,
    stop,
    wait_until,
)
from rawconn import RawConn, pack

# Scripts whose reply is compared byte for byte; each runs as EVAL <script> 0.
SCRIPTS = [
    # Lua values to replies
    'return 1',
    'return -1',
    'return 3.99',
    'return -3.99',
    'return 1e300',
    'return -1e300',
    'return 2^63',
    'return 2^53 + 1',
    'return 0/0',
    "return 'hello'",
    "return ''",
    'return true',
    'return false',
    'return nil',
    "return {1, 2, 3, 'x', {4, {5, 'y'}}}",
    'return {1, nil, 3}',
    "return {1, false, 3, true, 'z'}",
    'return {}',
    "return {[1] = 'a', [2] = 'b', x = 'ignored'}",
    "local t = {} t[1] = 'a' t[3] = 'c' return t",
    "return {ok = 'fine'}",
    "return {ok = 'a\\r\\nb'}",
    "return {err = 'plain'}",
    "return {err = 'CODE with words'}",
    "return {err = '-X y'}",
    "return {err = 'a\\r\\nb'}",
    'return {ok = 1}',
    'return {err = 1}',
    "return {double = 3.5}",
    "return {double = 'x'}",
    "return {big_number = '123456789012345678901234567890'}",
    "return {verbatim_string = {format = 'txt', string = 'hello'}}",
    "return {verbatim_string = {format = 'markdown', string = 'hello'}}",
    "return {map = {a = 1}}",
    "return {set = {a = true}}",
    "return {1, {ok = 'nested'}, {err = 'nested error'}}",
    'return function() end',
    'return coroutine.create(function() end) ~= nil',
    # the redis API
    "return redis.status_reply('STATUS')",
    'return redis.status_reply()',
    'return redis.status_reply(1)',
    "return redis.status_reply('a', 'b')",
    "return redis.error_reply('My Error')",
    "return redis.error_reply('-CODE  two spaces')",
    "return redis.error_reply('-NOSPACE')",
    "return redis.error_reply('\\r\\ntrimmed\\r\\n')",
    'return redis.error_reply()',
    'return redis.error_reply(5)',
    "return redis.sha1hex('')",
    "return redis.sha1hex('Pizza & Mandolino')",
    'return redis.sha1hex(12)',
    'return redis.sha1hex({})',
    'return redis.sha1hex()',
    "return redis.sha1hex('a', 'b')",
    'return redis.REDIS_VERSION',
    'return redis.REDIS_VERSION_NUM',
    'return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}',
    'return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA}',
    'return redis.REPL_ALL',
    "return redis.log(redis.LOG_DEBUG, 'from a script', 1, {}, 'end')",
    'return redis.log()',
    "return redis.log(redis.LOG_WARNING)",
    "return redis.log('x', 'msg')",
    "return redis.log(9, 'msg')",
    "return redis.log(-1, 'msg')",
    'return redis.setresp(2)',
    'return redis.setresp(4)',
    'return redis.setresp()',
    'return redis.set_repl(redis.REPL_ALL)',
    'return redis.set_repl(8)',
    'return redis.set_repl()',
    'return redis.replicate_commands()',
    'return redis.breakpoint()',
    "return redis.debug('x')",
    "return redis.acl_check_cmd('get', 'x')",
    "return redis.acl_check_cmd('nosuchcommand')",
    # redis.call and redis.pcall
    "return redis.call('ping')",
    "return redis.call('PING', 'hello')",
    "return redis.call('set', 'k', 'v')",
    "redis.call('set', 'k', 'v') return redis.call('get', 'k')",
    "return redis.call('get', 'missing')",
    "return redis.call('nosuch')",
    "return redis.pcall('nosuch')",
    'return redis.call()',
    'return redis.pcall()',
    "return redis.call('get')",
    "return redis.call('incr', 'a', 'b')",
    # arity of a command called before (remembered): exact, and at least
    "redis.call('get', 'k') return redis.call('GET')",
    "redis.call('get', 'k') return redis.call('get', 'k', 'x')",
    "redis.call('del', 'k') return redis.call('del')",
    "redis.call('del', 'k') return redis.call('del', 'a', 'b', 'c')",
    "return redis.call('subscribe', 'c')",
    "return redis.call('eval', 'return 1', 0)",
    "return redis.call('multi')",
    "return redis.call('client', 'id')",
    "return redis.call('object', 'nosuch', 'k')",
    "return redis.call('object')",
    "return redis.call('config', 'get', 'maxmemory')",
    "return redis.call('set', {}, 'v')",
    "return redis.call('set', 'k', true)",
    "redis.call('set', 'k', 0.1) return redis.call('get', 'k')",
    "redis.call('set', 'k', 1/3) return redis.call('get', 'k')",
    "redis.call('set', 'k', 1e20) return redis.call('get', 'k')",
    "redis.call('set', 'k', 123456789012345678) return redis.call('get', 'k')",
    "redis.call('set', 'k', -2^53) return redis.call('get', 'k')",
    "redis.call('set', 'k', 2^53 + 2) return redis.call('get', 'k')",
    "redis.call('set', 'k', 1/0) return redis.call('get', 'k')",
    "redis.call('set', 'k', -1/0) return redis.call('get', 'k')",
    "redis.call('set', 'k', 0/0) return redis.call('get', 'k')",
    "redis.call('set', 'k', 5) return redis.call('incr', 'k')",
    "redis.call('set', 'k', 'v') return redis.call('incr', 'k')",
    "redis.call('set', 'k', 'v') return redis.pcall('incr', 'k')",
    "redis.call('set', 'k', 'v') return redis.call('lpush', 'k', 'x')",
    "redis.call('set', 'k', 'v') return redis.pcall('lpush', 'k', 'x')",
    "redis.call('set', 'k', 'v') local ok, e = pcall(redis.call, 'lpush', 'k', 'x') return e",
    "local ok, e = pcall(redis.call, 'nosuch') return {tostring(ok), type(e), e}",
    "local ok, e = pcall(error, {err = 'x'}) return {type(e), e}",
    "local ok, e = pcall(error, {err = 5}) return {type(e), e}",
    "local ok, e = pcall(error, {}) return type(e)",
    "local ok, e = pcall(redis.sha1hex) return e",
    "local ok, e = pcall(redis.setresp, 9) return e",
    "local ok, e = pcall(function() redis.call('nosuch') end) return e",
    "local ok, e = xpcall(function() redis.call('nosuch') end, "
    'function(e) return type(e) end) return e',
    "local ok, e = xpcall(function() error({err = 'y'}) end, "
    'function(e) return e.err end) return e',
    "local co = coroutine.create(function() redis.call('nosuch') end) "
    "local ok, e = coroutine.resume(co) return {tostring(ok), type(e)}",
    "local ok, e = pcall(error) return {tostring(ok), type(e)}",
    "return {pcall(function() return 1, 2 end)}",
    "redis.call('rpush', 'l', 'a', 'b') return redis.call('lrange', 'l', 0, -1)",
    "redis.call('hset', 'h', 'f', 'v') return redis.call('hgetall', 'h')",
    "redis.call('sadd', 's', 'm') return redis.call('smembers', 's')",
    "redis.call('zadd', 'z', 1.5, 'm') return redis.call('zrange', 'z', 0, -1, 'withscores')",
    "redis.call('zadd', 'z', 1.5, 'm') return redis.call('zscore', 'z', 'm')",
    "return redis.call('exists', 'nothing')",
    "return redis.call('lpop', 'nolist')",
    "return redis.call('blpop', 'nolist', 0)",
    "return redis.pcall('xread', 'BLOCK', 0, 'STREAMS', 's', '$')",
    # SORT of a set with no order: sorted for a script, as it is replicated as its effects
    "redis.call('sadd', 's', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'l', 'm', 'n', 'o', "
    "'p', 'q', 'r', 's', 't', 'u', 'v', 'z', 'aa', 'aaa', 'azz') "
    "return redis.call('sort', 's', 'by', '_')",
    "redis.call('sadd', 's', 'c', 'b', 'a') return redis.call('sort', 's', 'by', '_', 'get', '#', "
    "'get', '_:*')",
    # a RESP3 attribute is skipped: the script gets the reply after it
    "redis.setresp(3) return redis.call('debug', 'protocol', 'attrib')",
    "return redis.pcall('XREADGROUP', 'GROUP', 'g', 'c', 'BLOCK', 0, 'STREAMS', 's', '>')",
    "return redis.pcall('xread', 'COUNT', 1, 'BLOCK', 'x', 'STREAMS', 's', '$')",
    "return redis.call('xadd', 'st', '1-1', 'f', 'v')",
    "redis.call('xadd', 'st', '1-1', 'f', 'v') return redis.call('xrange', 'st', '-', '+')",
    "return redis.call('type', 'nothing')",
    "return redis.call('select', 3)",
    "redis.call('select', 3) redis.call('set', 'in3', 'x') return redis.call('dbsize')",
    "return redis.call('time')[1] ~= nil",
    "return redis.call('dbsize')",
    # RESP3 inside the script: redis.setresp(3)
    "redis.setresp(3) return redis.call('get', 'missing')",
    "redis.setresp(3) redis.call('hset', 'h', 'f', 'v') return redis.call('hgetall', 'h')",
    "redis.setresp(3) redis.call('sadd', 's', 'm') return redis.call('smembers', 's')",
    "redis.setresp(3) redis.call('zadd', 'z', 1.5, 'm') return redis.call('zscore', 'z', 'm')",
    "redis.setresp(3) return redis.call('exists', 'x') == 0",
    "redis.setresp(3) local t = redis.call('hgetall', 'none') return type(t)",
    "redis.setresp(3) redis.call('hset', 'h', 'f', 'v') return redis.call('hgetall', 'h').map.f",
    "redis.setresp(3) redis.call('zadd', 'z', 2, 'm') return redis.call('zscore', 'z', 'm').double",
    'redis.setresp(3) return true',
    'redis.setresp(3) return false',
    "redis.setresp(3) return {1, true, false, 'x'}",
    "redis.setresp(3) return redis.call('lpop', 'nolist')",
    # errors
    "error('boom')",
    'error({err = "custom"})',
    'error({err = "-CODE x"})',
    'error(nil)',
    'error(12)',
    "error('with\\nnewline')",
    "local x = nil; return x.field",
    "return 1 + {}",
    "local function f() error('deep') end local function g() f() end g()",
    'local function f() return 1 + f() end return f()',
    "return (",
    "return 'unfinished",
    "if then end",
    # the sandbox
    'x = 1',
    'return undefined_global',
    "rawset(_G, 'x', 1)",
    'setmetatable(_G, nil)',
    "string.newfield = 1",
    "redis.call = nil",
    "_G.x = 1",
    'KEYS = {}',
    'local function f() y = 2 end f()',
    "local ok, e = pcall(function() z = 1 end) return e",
    'return type(loadstring)',
    "return loadstring('return 7')()",
    'return type(os)',
    'return type(io)',
    'return type(print)',
    'return type(dofile)',
    'return type(loadfile)',
    'return type(require)',
    'return type(debug)',
    'return type(setfenv)',
    'return type(getfenv)',
    'return type(newproxy)',
    'return type(module)',
    'return {type(bit), type(struct), type(cjson), type(cmsgpack), type(coroutine)}',
    'return {type(string), type(table), type(math), type(redis), type(_G)}',
    "local t = {} for k in pairs(_G) do t[#t + 1] = k end table.sort(t) return t",
    "local t = {} for k in pairs(redis) do t[#t + 1] = k end table.sort(t) return t",
    "local t = {} for k in pairs(string) do t[#t + 1] = k end table.sort(t) return t",
    "local t = {} for k in pairs(math) do t[#t + 1] = k end table.sort(t) return t",
    'return _VERSION',
    'return #KEYS + #ARGV',
    'return tostring(1e15)',
    'return tostring(0.1)',
    "return string.format('%q', 'a\\0b')",
    "return ('abc'):upper()",
    "return table.concat({'a', 'b'}, ',')",
    'return math.floor(3.7)',
    "return select('#', 1, 2, 3)",
    'return unpack({1, 2, 3})',
    'return tonumber(\'0x10\')',
    "math.randomseed(42) return {math.random(100), math.random(5, 10)}",
    'math.randomseed(7) return tostring(math.random())',
    'return math.random(0)',
    'return math.random(3, 1)',
    'return math.random(1, 2, 3)',
    'math.randomseed()',
    "local ok = pcall(error, 'x') return ok",
    "local ok, e = xpcall(function() error('y') end, "
    "function(e) return 'handled: ' .. e end) return e",
    "local ok, e = xpcall(function() redis.call('nosuch') end, function(e) return e end) return e",
    "local co = coroutine.wrap(function() coroutine.yield(1) end) return co()",
    'local x = pairs(1) return 1',  # the error names the caller's line, as luaL_argerror
    'for k in pairs(nil) do end',
    "local t = redis.pcall('GET') local out = {} for k in pairs(t) do out[#out + 1] = k end "
    'table.sort(out) return out',  # the error table's fields
    "return redis.pcall('EVAL', 'return 1', 0)",
    # strings' shared metatable is read-only: no script changes string methods for the next
    "return getmetatable('x').__index == string",
    "getmetatable('x').__index.foo = 1 return 1",
    "local mt = getmetatable('x') mt.__index = {} return 1",
    "rawset(getmetatable('x'), '__index', {}) return 1",
    # _G's metatable: read-only, as Redis's readonly tables make it
    'local g = getmetatable(_G) g.__index = {}',
    "local t = {} for k, v in pairs(getmetatable(_G)) do t[#t + 1] = k .. '=' .. type(v) end "
    'return t',
    # a precompiled chunk is text to Redis's Lua (no undump): a syntax error
    'return loadstring(string.dump(function() return 1 end))()',
    'local f, e = loadstring(string.dump(function() return 1 end)) return e',
    "local f, e = loadstring('\\27abc', 'name') return e",
    'local s = string.dump(function() return 1 end) '
    'local f, e = load(function() local p = s s = nil return p end) return e',
    "return {('x'):upper(), getmetatable('a') == getmetatable('b')}",
]

SHEBANGS = [
    '#!lua\nreturn 1',
    '#!lua\nreturn (',
    '#!lua\nerror("x")',
    '#!lua flags=no-writes\nreturn redis.call("get", "a")',
    '#!lua flags=no-writes\nreturn redis.call("set", "a", "b")',
    '#!lua flags=no-writes,allow-oom,allow-stale,no-cluster,allow-cross-slot-keys\nreturn 2',
    '#!lua flags=\nreturn 3',
    '#!lua flags=bogus\nreturn 1',
    '#!lua flags=no-writes,,allow-oom\nreturn 1',
    '#!lua x=1\nreturn 1',
    '#!luax\nreturn 1',
    '#! lua\nreturn 1',
    '#!lua',
    '#!lua name=x\nreturn 1',
]


@pytest.mark.parametrize('proto', [2, 3], ids=['resp2', 'resp3'])
def test_scripts_reply_as_redis(fresh_raw_pair, proto):
    pair = fresh_raw_pair(proto)
    for script in SCRIPTS:
        for c in pair:
            c.cmd('FLUSHALL')
        raw_same(pair, [('EVAL', script, 0)])


@pytest.mark.parametrize('proto', [2, 3], ids=['resp2', 'resp3'])
def test_shebang_flags(fresh_raw_pair, proto):
    pair = fresh_raw_pair(proto)
    raw_same(pair, [('EVAL', script, 0) for script in SHEBANGS])
    raw_same(pair, [('EVAL_RO', script, 0) for script in SHEBANGS])


def test_may_replicate_commands_are_writes_for_read_only_scripts(fresh_raw_pair):
    """PUBLISH and PFCOUNT (Redis's may-replicate commands) are refused in EVAL_RO and in
    a no-writes script, as writes are; a plain EVAL runs them."""
    pair = fresh_raw_pair()
    publish = "return redis.call('publish', 'ch', 'm')"
    pfcount = "return redis.call('pfcount', 'x')"
    raw_same(
        pair,
        [
            ('EVAL_RO', publish, 0),
            ('EVAL_RO', pfcount, 0),
            ('EVAL', '#!lua flags=no-writes\n' + publish, 0),
            ('EVAL', publish, 0),
            ('EVAL', pfcount, 0),
        ],
    )


def test_keys_and_argv(fresh_raw_pair):
    pair = fresh_raw_pair()
    raw_same(
        pair,
        [
            ('EVAL', 'return {KEYS, ARGV}', 2, 'k1', 'k2', 'a1', 'a2', 'a3'),
            ('EVAL', 'return {#KEYS, #ARGV}', 0),
            ('EVAL', 'return KEYS[1]', 1, 'only'),
            ('EVAL', "return redis.call('set', KEYS[1], ARGV[1])", 1, 'k', 'v'),
            ('EVAL', "return redis.call('get', KEYS[1])", 1, 'k'),
            ('EVAL', 'return 1', -1),
            ('EVAL', 'return 1', 2, 'a'),
            ('EVAL', 'return 1', 'x'),
            ('EVAL', 'return 1', '1.5'),
            ('EVAL', 'return 1', '99999999999999999999'),
            ('EVAL', 'return 1'),
            ('EVAL', "return ARGV[1]", 0, b'bin\x00ary\xff'),
            ('EVAL', 'KEYS[1] = "changed" return KEYS[1]', 1, 'k'),
        ],
    )


def test_evalsha_and_script_commands(fresh_raw_pair):
    pair = fresh_raw_pair()
    body = "return redis.call('incr', KEYS[1])"
    raw_same(
        pair,
        [
            ('SCRIPT', 'LOAD', body),
            ('EVALSHA', 'ea18e4e8a8e94a5d4a33dba6a6ec4a55bf5b20c4', 1, 'k'),
            ('SCRIPT', 'EXISTS', '86f8d93a47b97fd0c00c0fd7a9cab56ca2e9e8ce', 'ffff', 'x'),
            ('EVALSHA', 'nosuchsha', 0),
            ('EVALSHA', 'f' * 40, 0),
            # numkeys is checked before the script is looked up
            ('EVALSHA', 'f' * 40, 2, 'a'),
            ('EVALSHA', 'f' * 40, -1),
            ('EVALSHA', 'f' * 40, 'x'),
            ('EVALSHA', 'f' * 40, '01'),
            ('EVALSHA_RO', 'f' * 40, 1),
            ('SCRIPT', 'LOAD', 'return ('),
            ('SCRIPT', 'LOAD', '#!lua flags=bogus\nreturn 1'),
            ('SCRIPT', 'LOAD'),
            ('SCRIPT', 'FLUSH', 'x'),
            ('SCRIPT', 'FLUSH', 'sync', 'extra'),
            ('SCRIPT', 'KILL'),
            ('SCRIPT', 'HELP'),
            ('SCRIPT', 'NOSUCH'),
            ('SCRIPT', 'DEBUG', 'bogus'),
            ('SCRIPT', 'DEBUG', 'no'),
            ('EVAL_RO', "return redis.call('set', 'a', 'b')", 0),
            ('EVAL_RO', "return redis.call('get', 'a')", 0),
        ],
    )
    ours, theirs = pair
    sha = ours.cmd('SCRIPT', 'LOAD', body)
    assert sha == theirs.cmd('SCRIPT', 'LOAD', body)
    sha = sha.split(b'\r\n')[1]
    raw_same(
        pair,
        [
            ('EVALSHA', sha, 1, 'k'),
            ('EVALSHA', sha.upper(), 1, 'k'),
            ('EVALSHA', sha, 2, 'k'),
            ('EVALSHA', sha, 10001, 'k'),
            ('EVALSHA_RO', sha, 1, 'k'),
            ('EVALSHA_RO', sha, 3, 'k'),
            ('SCRIPT', 'EXISTS', sha, sha.upper(), b'0' * 40),
            ('EVAL', body, 1, 'k'),
            ('SCRIPT', 'FLUSH'),
            ('SCRIPT', 'EXISTS', sha),
            ('EVALSHA', sha, 1, 'k'),
            ('EVAL', body, 1, 'k'),
            ('SCRIPT', 'FLUSH', 'ASYNC'),
            ('EVALSHA', sha, 1, 'k'),
        ],
    )


def test_getkeys(raw_pair):
    raw_same(
        raw_pair(),
        [
            ('COMMAND', 'GETKEYS', 'EVAL', 'return 1', 2, 'a', 'b', 'c'),
            ('COMMAND', 'GETKEYS', 'EVALSHA', 'x' * 40, 1, 'a'),
            ('COMMAND', 'GETKEYS', 'EVAL_RO', 'return 1', 1, 'a', 'b'),
            ('COMMAND', 'GETKEYS', 'EVAL', 'return 1', 0),
        ],
    )


@pytest.mark.parametrize('name', ['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro'])
def test_key_specs(raw_pair, name):
    """COMMAND INFO whole, key specs included (a keynum spec, and Redis's notes)."""
    raw_same(raw_pair(), [('COMMAND', 'INFO', name)])


def test_script_subcommands_info(server, ref):
    """SCRIPT's subcommands (COMMAND INFO of the data families is checked for every
    family in test_command_table.py, which has no subcommands)."""
    ours = server.client()
    for sub in server_subcommands('script'):
        want = ref.execute_command('COMMAND', 'INFO', f'script|{sub}')[f'script|{sub}']
        got = ours.execute_command('COMMAND', 'INFO', f'script|{sub}')[f'script|{sub}']
        for field in ('arity', 'flags', 'acl_categories', 'tips'):
            assert got[field] == want[field], (sub, field)


def server_subcommands(name):
    from store.commands import scripting

    container = next(c for c in scripting.COMMANDS if c.name == name)
    return list(container.subcommands)


# Busy-wait for the given microseconds of server time, inside a script.
SPIN = (
    "local t = redis.call('time') local s = t[1] * 1e6 + t[2] "
    "while true do local u = redis.call('time') "
    'if u[1] * 1e6 + u[2] - s > %d then break end end '
)

# -- atomicity, events, transactions --------------------------------------------------


def test_script_events_arrive_after_it_in_order(both):
    assert_same_events(
        both,
        [
            (
                'EVAL',
                "redis.call('set', KEYS[1], 'v') redis.call('expire', KEYS[1], 100) "
                "redis.call('lpush', KEYS[2], 'a') redis.call('del', KEYS[1]) return 1",
                2,
                'k',
                'l',
            ),
            ('EVAL', "redis.call('incr', 'n') redis.call('nosuch') return 1", 0),
        ],
    )


def test_writes_before_an_error_stay(both):
    for c in both:
        with pytest.raises(redis.ResponseError):
            c.eval("redis.call('set', 'kept', '1') error('then fail')", 0)
        assert c.get('kept') == b'1'


def test_a_long_loop_of_calls_is_counted_without_piling_up(server):
    """Each call's duration waits in a list until the statistics are read or the cron
    folds it (Command.settle); a script's count hook folds them too, so a loop of
    300,000 redis.calls never has most of them waiting (watched from this process, which
    embeds the server, while the script runs), and INFO counts every one."""
    r = server.client(decode_responses=True)
    incr = server.server.commands[b'incr']
    before = incr.calls
    done = threading.Event()
    most = [0]

    def watch():
        while not done.is_set():
            most[0] = max(most[0], len(incr.took))
            time.sleep(0.001)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        r.eval("for i = 1, 300000 do redis.call('incr', KEYS[1]) end", 1, 'loop:n')
    finally:
        done.set()
        watcher.join()
    assert 0 < most[0] < 100000
    assert r.info('commandstats')['cmdstat_incr']['calls'] == before + 300000


def test_script_is_atomic_for_other_clients(server):
    """While a script runs, another client's command waits for it: the writer's
    INCRs can never interleave with the script's reads."""
    r = server.client()
    other = server.client()
    r.set('n', 0)
    script = (
        "local a = redis.call('get', 'n') " + SPIN % 200000 + "return {a, redis.call('get', 'n')}"
    )
    results = []
    t = threading.Thread(target=lambda: results.append(r.eval(script, 0)))
    t.start()
    time.sleep(0.05)
    other.incr('n')
    t.join(WAIT)
    a, b = results[0]
    assert a == b  # nothing ran between the two reads
    assert other.get('n') == b'1'


def test_multi_exec_with_eval_and_watch(both):
    for c in both:
        c.set('w', 'x')
        p = c.pipeline(transaction=True)
        p.eval("return redis.call('incr', KEYS[1])", 1, 'n')
        p.eval("return redis.call('get', KEYS[1])", 1, 'w')
        p.eval('error("in exec")', 0)
        p.set('after', 1)
        res = p.execute(raise_on_error=False)
        assert res[:2] == [1, b'x']
        assert isinstance(res[2], redis.ResponseError)
        assert c.get('after') == b'1'
    # a script's write to a WATCHed key fails the transaction, as any write does
    for c in both:
        with c.pipeline(transaction=True) as p:
            p.watch('w')
            c.eval("return redis.call('set', KEYS[1], 'changed')", 1, 'w')
            p.multi()
            p.get('w')
            with pytest.raises(redis.WatchError):
                p.execute()


def test_expiry_is_frozen_while_a_script_runs(both):
    """A key that expires while the script runs is still there for it (Redis reads
    expiry against the script's start time)."""
    script = (
        "redis.call('set', 'k', 'v', 'px', 50) "
        + SPIN % 150000
        + "return {redis.call('get', 'k'), redis.call('exists', 'k')}"
    )
    for c in both:
        assert c.eval(script, 0) == [b'v', 1]
        wait_until(lambda c=c: c.exists('k') == 0)


def test_select_in_a_script_does_not_change_the_callers_db(both):
    for c in both:
        c.eval("redis.call('select', 5) redis.call('set', 'in5', 'x') return 1", 0)
        assert c.get('in5') is None
        c.execute_command('SELECT', 5)
        assert c.get('in5') == b'x'
        c.execute_command('SELECT', 0)


def test_blocked_client_is_served_by_a_scripts_push(server):
    r = server.client()
    waiter = server.client()
    out = []
    t = threading.Thread(target=lambda: out.append(waiter.blpop('q', timeout=WAIT)))
    t.start()
    wait_until(lambda: r.info('clients')['blocked_clients'] == 1)
    r.eval("redis.call('rpush', 'q', 'a') redis.call('rpush', 'q', 'b') return 1", 0)
    t.join(WAIT)
    assert out == [(b'q', b'a')]
    assert r.lrange('q', 0, -1) == [b'b']


def test_script_commands_count_in_commandstats(server):
    r = server.client()
    r.config_resetstat()
    r.eval("redis.call('set', 'a', 1) redis.call('get', 'a') return redis.call('get', 'a')", 0)
    stats = r.info('commandstats')
    assert stats['cmdstat_eval']['calls'] == 1
    assert stats['cmdstat_set']['calls'] == 1
    assert stats['cmdstat_get']['calls'] == 2


def test_info_counts_scripts_and_functions(server):
    r = server.client()
    r.script_flush()
    r.function_flush()
    memory = r.info('memory')
    assert memory['number_of_cached_scripts'] == 0
    assert memory['number_of_libraries'] == memory['number_of_functions'] == 0
    r.script_load('return 1')
    r.eval('return 2', 0)
    code = "#!lua name=lib\nredis.register_function('f1', function() return 1 end)\n"
    code += "redis.register_function('f2', function() return 2 end)"
    r.function_load(code)
    memory = r.info('memory')
    assert memory['number_of_cached_scripts'] == 2
    assert memory['number_of_libraries'] == 1
    assert memory['number_of_functions'] == 2
    assert memory['used_memory_lua'] > 0
    assert memory['used_memory_scripts'] == len('return 1') + len('return 2') + len(code)
    r.function_flush()


def test_lua_memory_reads_as_redis(make_server):
    """INFO's Lua VM figures start at those of Redis 7.0's fresh states and stay within
    Redis's suite's bound (100 KB) over many runs: the libraries that are C in Redis
    (Lua here) are not counted, and the collected garbage is not either."""
    r = make_server().client()
    memory = r.info('memory')
    assert memory['used_memory_lua'] == memory['used_memory_vm_eval'] == 32768
    assert memory['used_memory_vm_functions'] == 33792
    assert memory['used_memory_vm_total'] == 32768 + 33792
    pipe = r.pipeline(transaction=False)
    for _ in range(3000):
        pipe.eval("return redis.call('incr', KEYS[1])", 1, 'x')
    pipe.execute()
    assert r.info('memory')['used_memory_lua'] < 1024 * 100
    for i in range(300):  # scripts cached: their functions are the state's
        r.eval(f'return {i}', 0)
    assert r.info('memory')['used_memory_lua'] > 32768


# -- long scripts: BUSY, SCRIPT KILL, SHUTDOWN NOSAVE ----------------------------------

LOOP = 'local i = 0 while true do i = i + 1 end'
WRITE_THEN_LOOP = "redis.call('set', 'x', 1) " + LOOP


def _start(port, *cmd):
    """A connected probe (a PING answered, so the server has registered it), then the
    command sent on a new connection without waiting: (caller, probe)."""
    probe = RawConn(port)
    assert probe.cmd('PING') == b'+PONG\r\n'
    conn = RawConn(port)
    conn.send(pack(*cmd))
    wait_until(lambda: probe.cmd('PING').startswith(b'-BUSY'), 'the server to answer BUSY')
    return conn, probe


@pytest.fixture(params=['ours', 'redis'])
def busy_port(request):
    """A server of each kind, in a process of its own (SHUTDOWN ends it), with
    busy-reply-threshold 100 ms."""
    spawn = spawn_store if request.param == 'ours' else spawn_redis
    proc, port = spawn('--busy-reply-threshold', '100')
    yield port
    stop(proc)


def test_script_kill(busy_port):
    caller, probe = _start(busy_port, 'EVAL', LOOP, 0)
    assert probe.cmd('PING') == (
        b'-BUSY Redis is busy running a script. You can only call SCRIPT KILL or '
        b'SHUTDOWN NOSAVE.\r\n'
    )
    assert probe.cmd('FUNCTION', 'KILL').startswith(b'-BUSY')  # the other kind's KILL
    assert probe.cmd('FUNCTION', 'STATS').startswith(b'-BUSY')
    late = RawConn(busy_port)  # connected while busy: answered too
    assert late.cmd('GET', 'x').startswith(b'-BUSY')
    assert late.cmd('SCRIPT', 'KILL') == b'+OK\r\n'
    reply = caller.read_reply()
    assert reply.startswith(b'-ERR Script killed by user with SCRIPT KILL...')
    assert probe.cmd('PING') == b'+PONG\r\n'
    assert caller.cmd('PING') == b'+PONG\r\n'
    assert late.cmd('PING') == b'+PONG\r\n'


def test_a_script_that_wrote_cannot_be_killed(busy_port):
    caller, probe = _start(busy_port, 'EVAL', WRITE_THEN_LOOP, 0)
    assert probe.cmd('SCRIPT', 'KILL').startswith(b'-UNKILLABLE Sorry the script already')
    assert probe.cmd('SHUTDOWN').startswith(b'-BUSY')
    probe.send(pack('SHUTDOWN', 'NOSAVE'))
    assert probe.closed_by_peer()
    assert caller.closed_by_peer()


def test_busy_client_in_multi_gets_busy_and_execabort(busy_port):
    caller, other = _start(busy_port, 'EVAL', LOOP, 0)
    assert other.cmd('MULTI') == b'+OK\r\n'
    assert other.cmd('SET', 'a', 1).startswith(b'-BUSY')
    assert other.cmd('EXEC').startswith(b'-EXECABORT Transaction discarded because of: BUSY')
    RawConn(busy_port).cmd('SCRIPT', 'KILL')
    caller.read_reply()
    assert other.cmd('PING') == b'+PONG\r\n'


def test_pcall_cannot_swallow_a_kill(busy_port):
    script = 'while true do pcall(function() local i = 0 while true do i = i + 1 end end) end'
    caller, probe = _start(busy_port, 'EVAL', script, 0)
    assert probe.cmd('SCRIPT', 'KILL') == b'+OK\r\n'
    assert caller.read_reply().startswith(b'-ERR Script killed by user with SCRIPT KILL...')


@pytest.mark.parametrize(
    'script',
    [
        # Redis's Lua stack runs out at a value nested 7995 deep (a map level counts two)
        "local function f(n) if n == 0 then return 'leaf' end return {f(n - 1)} end return f(7994)",
        "local function f(n) if n == 0 then return 'leaf' end return {f(n - 1)} end return f(7995)",
        "local function f(n) if n == 0 then return {map = {a = 'b'}} end return {f(n - 1)} end "
        'return f(7992)',
        "local function f(n) if n == 0 then return {map = {a = 'b'}} end return {f(n - 1)} end "
        'return f(7993)',
        # big replies of every kind of element
        "local t = {} for i = 1, 20000 do t[i] = {i, tostring(i), i + 0.5, i % 2 == 0, "
        "{ok = 'x'}, {err = 'e'}, {double = i / 3}} end return t",
    ],
    ids=['depth-7994', 'depth-7995', 'map-7992', 'map-7993', 'big'],
)
@pytest.mark.parametrize('proto', [2, 3], ids=['resp2', 'resp3'])
def test_deep_and_big_replies(fresh_raw_pair, script, proto):
    ours, theirs = fresh_raw_pair(proto)
    request = pack('EVAL', script, 0)
    theirs.send(request)
    want = theirs.read_available(wait=0.5)
    ours.send(request)
    assert ours.read_available(want=want) == want


def test_a_memory_hungry_script_fails_and_the_server_goes_on(make_server):
    """Redis sets Lua no limit (such a script takes the machine's memory); here it gets
    Lua's "not enough memory" at `script-memory-limit`, and the next scripts run."""
    r = make_server(script_memory_limit='8mb').client()
    hungry = "local t = {} for i = 1, 1e7 do t[i] = string.rep('x', 100) .. i end return #t"
    with pytest.raises(redis.ResponseError, match='not enough memory'):
        r.eval(hungry, 0)
    assert r.eval("local t = {} for i = 1, 1000 do t[i] = i end return #t", 0) == 1000
    assert r.ping()


# unpack() and the calls it feeds, at the edges of Redis's limits: Redis's patched
# luaB_unpack (no int overflow: lupa's Lua 5.1 crashed on these ranges), its C stack limit
# (arguments and results within 8000 slots), and a redis.call with more arguments than
# lupa passes to Python at once (7997).
BIG = "local a = {} for i = 1, 7999 do a[i] = 'x' end "
UNPACK_SCRIPTS = [
    'return {unpack({1, 2, 3}, -2, 2147483647)}',
    'return {unpack({1, 2, 3}, 0, 2147483647)}',
    'return {unpack({1, 2, 3}, -2147483648, -2)}',
    'return {unpack({1, 2, 3}, 2147483647, -2147483648)}',
    'return {unpack({1, 2, 3}, -1, -2)}',
    'return {unpack({1, 2, 3}, 1, -1)}',
    'return {unpack({1, 2, 3}, -1, 5)}',
    "return {unpack({1, 2, 3}, 2.7, '3')}",
    'return {unpack({1, 2, 3}, 1e10, 1e10 + 2)}',
    'return {unpack({1, 2, 3}, 0/0, 2)}',
    "return {unpack({1, 2, 3}, 1, 2, 'x')}",
    'local r = {unpack()} return r',
    'local r = {unpack(nil)} return r',
    "local r = {unpack({}, 'x')} return r",
    'local r = {unpack({}, 1, true)} return r',
    'local u = unpack local r = {u(1)} return r',
    'local t = {u = unpack} local r = {t:u()} return r',
    'return {pcall(unpack, nil)}',
    BIG + "return select('#', unpack(a))",
    BIG + "a[8000] = 'x' return select('#', unpack(a))",
    BIG + "return select('#', unpack(a, 1))",
    BIG + "return redis.call('lpush', 'l', unpack(a))",
    BIG + "redis.call('lpush', 'l', unpack(a)) return redis.call('llen', 'l')",
    BIG + "return redis.pcall('lpush', 'l', unpack(a))",
    BIG + "local call = redis.call call('rpush', 'l', unpack(a)) return call == redis.call",
    BIG + "return redis.call('get', unpack(a))",
    BIG + "return redis.pcall('get', unpack(a))",
    BIG + "return redis.call('nosuch', unpack(a))",
    BIG + "redis.call('set', unpack(a)) return 1",
    BIG + "return redis.call('lpush', 'l', unpack(a, 1, 7995))",
]


@pytest.mark.parametrize('script', UNPACK_SCRIPTS)
def test_unpack_and_calls_with_many_arguments(fresh_raw_pair, script):
    raw_same(fresh_raw_pair(2), [('EVAL', script, 0)])


def test_deprecated_api_config(make_server):
    """lua-enable-deprecated-api (Redis's CVE fixes): setfenv, getfenv and newproxy are
    globals of the scripts only with it; it is immutable and hidden, as in Redis."""
    r = make_server(lua_enable_deprecated_api='yes').client()
    assert r.config_get('lua-enable-deprecated-api') == {'lua-enable-deprecated-api': 'yes'}
    assert r.config_get('*deprecated*') == {}
    script = (
        'local f = function() return 1 end setfenv(f, {}) getfenv(f) '
        'getmetatable(newproxy(true)).__gc = function() return 1 end return 0'
    )
    assert r.eval(script, 0) == 0
    with pytest.raises(redis.ResponseError, match="can't set immutable config"):
        r.config_set('lua-enable-deprecated-api', 'no')


def test_debug_set_disable_deny_scripts(both):
    """DEBUG SET-DISABLE-DENY-SCRIPTS 1 lets scripts run `noscript` commands (Redis's
    suite uses it to run CLIENT LIST from a script); 0 refuses them again, a command run
    meanwhile included."""
    script = "return type(redis.call('client', 'id'))"
    for c in both:
        c.execute_command('DEBUG', 'SET-DISABLE-DENY-SCRIPTS', 1)
    try:
        assert [c.eval(script, 0) for c in both] == [b'number', b'number']
    finally:
        for c in both:
            c.execute_command('DEBUG', 'SET-DISABLE-DENY-SCRIPTS', 0)
    for c in both:
        with pytest.raises(redis.ResponseError, match='not allowed from script'):
            c.eval(script, 0)


def test_a_replica_leaving_during_a_busy_script_is_gone_for_it(tmp_path):
    """A replica that disconnects while a script runs past busy-reply-threshold is dropped
    then, as Redis's processEventsWhileBlocked frees it: the script sees
    connected_slaves:0 in INFO and its writes pass min-replicas-to-write again."""
    master, port = spawn_store('--busy-reply-threshold', '10')
    replica = None
    try:
        r = redis.Redis(port=port)
        replica, replica_port = spawn_redis('--replicaof', '127.0.0.1', str(port))
        rr = redis.Redis(port=replica_port)
        wait_until(lambda: rr.info('replication')['master_link_status'] == 'up', 'the sync')
        wait_until(lambda: r.info('replication')['connected_slaves'] == 1, 'the replica')
        r.config_set('min-replicas-to-write', 1)
        wait_until(lambda: _writes(r), 'a good replica')
        script = (
            "redis.call('set', KEYS[1], 'script value') "
            "local t = tonumber(redis.call('time')[1]) "
            'while tonumber(redis.call("time")[1]) < t + 20 do '
            "  if string.match(redis.call('info', 'replication'), 'connected_slaves:0') then "
            "    redis.call('set', KEYS[1], 'after') return 1 "
            '  end '
            'end return 0'
        )
        caller = RawConn(port)
        caller.send(pack('EVAL', script, 1, 'x'))
        probe = redis.Redis(port=port)
        wait_until(lambda: _busy(probe), 'the script to be busy')
        rr.replicaof('no', 'one')
        assert caller.read_reply(timeout=30) == b':1\r\n'
        assert r.get('x') == b'after'
    finally:
        stop(master)
        if replica is not None:
            stop(replica)


def _busy(client):
    try:
        client.ping()
    except redis.ResponseError as e:
        return str(e).startswith('BUSY')
    return False


def _writes(client):
    try:
        return client.set('probe', 1)
    except redis.ResponseError:
        return False


STALE_COMMANDS = [
    ('EVAL', "return redis.call('get', 'x')", 1, 'x'),
    ('EVAL', '#!lua flags=no-writes\nreturn 1', 0),
    ('EVAL', '#!lua flags=allow-stale,no-writes\nreturn 1', 0),
    ('EVAL', "#!lua flags=allow-stale,no-writes\nreturn redis.call('get', 'x')", 1, 'x'),
    ('EVAL', "#!lua flags=allow-stale,no-writes\nreturn redis.call('echo', 'foobar')", 0),
    ('EVALSHA', 'a' * 40, 0),
    (
        'FUNCTION',
        'LOAD',
        "#!lua name=lib\nredis.register_function{function_name='f1', "
        "callback=function() return 'hello' end, flags={'no-writes'}}\n"
        "redis.register_function{function_name='f2', callback=function() return 'hello' end, "
        "flags={'allow-stale', 'no-writes'}}\n"
        "redis.register_function{function_name='f3', callback=function() "
        "return redis.call('get', 'x') end, flags={'allow-stale', 'no-writes'}}",
    ),
    ('FCALL', 'f1', 0),
    ('FCALL', 'f2', 0),
    ('FCALL', 'f3', 0),
    ('FCALL', 'nosuch', 0),
    ('GET', 'x'),
    ('PING',),
    ('ECHO', 'x'),
    ('MULTI',),
    ('GET', 'x'),
    ('EXEC',),
]


def test_a_stale_replica_serves_scripts_as_redis():
    """replica-serve-stale-data no, master link down: -MASTERDOWN for what is not `stale`
    (a script's declared flags decide, allow-stale; an EVAL script without flags is
    refused), and an allow-stale script's calls of other commands fail."""
    replies = []
    for spawn in (spawn_store, spawn_redis):
        proc, port = spawn('--replica-serve-stale-data', 'no', '--replicaof', '127.0.0.1', '1')
        try:
            with RawConn(port) as c:
                replies.append([c.cmd(*command) for command in STALE_COMMANDS])
        finally:
            stop(proc)
    for command, ours, theirs in zip(STALE_COMMANDS, *replies):
        assert ours == theirs, command
