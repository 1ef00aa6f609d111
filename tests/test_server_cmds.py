"""Server/admin commands: CONFIG, INFO, COMMAND, DEBUG, TIME, DBSIZE, FLUSH*, SWAPDB,
LASTSAVE, SAVE, BGSAVE, SHUTDOWN. Error strings, CONFIG renderings, COMMAND INFO/DOCS and
DEBUG PROTOCOL wire bytes are compared with redis-server 7.0."""

import os
import re
import socket
import subprocess
import sys
import threading
import time

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from conftest import (
    WAIT,
    assert_same,
    close,
    connect,
    done,
    free_port,
    stop,
    wait_for_port,
    wait_until,
)
from rawconn import RawConn


def raw(client, *args):
    """Send a command and return the reply without redis-py's response callbacks (which
    parse every COMMAND subcommand as COMMAND's own reply)."""
    conn = client.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        client.connection_pool.release(conn)


def raw_all(client, commands):
    out = []
    for cmd in commands:
        try:
            out.append(raw(client, *cmd))
        except redis.ResponseError as e:
            out.append(('error', str(e)))
    return out


def assert_same_raw(both, commands):
    ours, theirs = both
    for cmd, g, w in zip(commands, raw_all(ours, commands), raw_all(theirs, commands)):
        if cmd[:2] == ('CONFIG', 'GET') and isinstance(g, list):  # RESP2: order is Redis's
            g, w = dict(zip(g[::2], g[1::2])), dict(zip(w[::2], w[1::2]))
        assert g == w, f'{cmd!r}: ours {g!r} != redis {w!r}'


def wire(port, payload, replies, hello3=False):
    """The exact bytes of the first `replies` replies to `payload` (inline commands),
    after an optional HELLO 3 whose reply is discarded."""
    with RawConn(port, proto=3 if hello3 else 2) as c:
        c.send(payload)
        return c.read_replies(replies)


# -- CONFIG -------------------------------------------------------------------------------


def test_config_get_patterns_aliases_and_case(r):
    assert r.config_get('maxmemory') == {'maxmemory': '0'}
    # Exact names are answered as typed, aliases under the alias.
    assert raw(r, 'CONFIG', 'GET', 'MAXMEMORY') == [b'MAXMEMORY', b'0']
    assert r.config_get('lua-time-limit') == {'lua-time-limit': '5000'}
    # Globs match case-insensitively and cover aliases.
    assert r.config_get('LUA*') == {'lua-time-limit': '5000'}
    got = r.config_get('maxmemory*')
    assert set(got) == {
        'maxmemory',
        'maxmemory-policy',
        'maxmemory-samples',
        'maxmemory-eviction-tenacity',
        'maxmemory-clients',
    }
    # Several patterns; a name matched twice appears once.
    got = raw(r, 'CONFIG', 'GET', 'hz', 'HZ', 'h?', 'nosuch')
    assert got == [b'hz', b'10']
    assert 'port' in r.config_get('*')


def test_config_get_is_a_map_in_resp3(r3, server):
    assert r3.config_get('hz', 'timeout') == {'hz': '10', 'timeout': '0'}
    got = wire(server.port, b'CONFIG GET hz\r\n', 1, hello3=True)
    assert got == b'%1\r\n$2\r\nhz\r\n$2\r\n10\r\n'


def test_config_set_errors_match_redis(both):
    assert_same(
        both,
        [
            ('CONFIG', 'SET', 'nosuch', '1'),
            ('CONFIG', 'SET', 'hz', '10', 'nosuch', '1'),
            ('CONFIG', 'SET', 'daemonize', 'yes'),
            ('CONFIG', 'SET', 'daemonize', 'yes', 'nosuch', '2'),
            ('CONFIG', 'SET', 'nosuch', '2', 'daemonize', 'yes'),
            ('CONFIG', 'SET', 'enable-debug-command', 'no'),
            ('CONFIG', 'SET', 'dir', '/tmp'),
            ('CONFIG', 'SET', 'dbfilename', 'x.rdb'),
            ('CONFIG', 'SET', 'maxmemory', '1', 'MAXMEMORY', '2'),
            ('CONFIG', 'SET', 'hz'),
            ('CONFIG', 'SET', 'hz', '1', 'timeout'),
            ('CONFIG', 'SET', 'hz', 'abc'),
            ('CONFIG', 'SET', 'hz', '-1'),
            ('CONFIG', 'SET', 'maxmemory', 'abc'),
            ('CONFIG', 'SET', 'maxmemory-policy', 'nope'),
            ('CONFIG', 'SET', 'appendonly', 'maybe'),
            ('CONFIG', 'SET', 'lua-time-limit', 'abc'),
            ('CONFIG', 'SET', 'notify-keyspace-events', 'Q'),
            ('CONFIG', 'SET', 'save', '100'),
            ('CONFIG', 'SET', 'client-output-buffer-limit', 'nope 1 2 3'),
            ('CONFIG', 'GET'),
            ('CONFIG',),
            ('CONFIG', 'NOPE'),
            ('CONFIG', 'RESETSTAT', 'x'),
            ('CONFIG', 'HELP'),
        ],
    )


RENDERED = [
    'maxmemory',
    'maxmemory-policy',
    'hz',
    'timeout',
    'notify-keyspace-events',
    'client-output-buffer-limit',
    'save',
    'busy-reply-threshold',
    'lua-time-limit',
    'proto-max-bulk-len',
    'slowlog-max-len',
    'loglevel',
    'lazyfree-lazy-user-flush',
    'tcp-keepalive',
    'maxmemory-samples',
    'active-expire-effort',
    'dynamic-hz',
    'client-query-buffer-limit',
    'databases',
    'enable-protected-configs',
    'requirepass',
    'appendfsync',
]


def test_config_set_renderings_match_redis(both):
    ours, theirs = both
    saved = [c.config_get(*RENDERED) for c in both]
    try:
        assert_same_raw(
            both,
            [
                ('CONFIG', 'GET', *RENDERED),
                (
                    'CONFIG',
                    'SET',
                    'maxmemory',
                    '1gb',
                    'maxmemory-policy',
                    'ALLKEYS-LRU',
                    'hz',
                    '20',
                    'notify-keyspace-events',
                    'KEA',
                    'client-output-buffer-limit',
                    'normal 1mb 2mb 3',
                    'save',
                    '100 10 5 20',
                    'lua-time-limit',
                    '6000',
                    'proto-max-bulk-len',
                    '2mb',
                    'loglevel',
                    'WARNING',
                    'lazyfree-lazy-user-flush',
                    'YES',
                    'dynamic-hz',
                    'no',
                    'timeout',
                    '0',
                ),
                ('CONFIG', 'GET', *RENDERED),
                (
                    'CONFIG',
                    'SET',
                    'maxmemory',
                    '100k',
                    'notify-keyspace-events',
                    'gxE$',
                    'client-output-buffer-limit',
                    'pubsub 64mb 16mb 30 normal 0 0 0',
                ),
                ('CONFIG', 'GET', *RENDERED),
                ('CONFIG', 'SET', 'notify-keyspace-events', '', 'save', ''),
                ('CONFIG', 'GET', *RENDERED),
            ],
        )
    finally:
        for client, values in zip(both, saved):
            client.config_set('lua-time-limit', values['busy-reply-threshold'])
            client.execute_command(
                'CONFIG',
                'SET',
                *[
                    x
                    for k, v in values.items()
                    if k not in ('databases', 'lua-time-limit', 'enable-protected-configs')
                    for x in (k, v)
                ],
            )
        assert ours.config_get(*RENDERED) == saved[0]


def test_config_set_is_atomic_and_applies(r, server):
    with pytest.raises(redis.ResponseError, match="argument 'maxmemory'"):
        r.execute_command('CONFIG', 'SET', 'hz', '20', 'maxmemory', 'lots')
    assert r.config_get('hz') == {'hz': '10'}
    try:
        r.execute_command(
            'CONFIG', 'SET', 'notify-keyspace-events', 'Kx', 'proto-max-bulk-len', '2mb'
        )
        assert server.call(lambda: server.server.keyspace.notify_flags) == (1 | 256)
        assert server.call(lambda: server.server.max_bulk) == 2 * 1024 * 1024
    finally:
        r.execute_command(
            'CONFIG',
            'SET',
            'notify-keyspace-events',
            '',
            'proto-max-bulk-len',
            str(512 * 1024 * 1024),
        )
    assert server.call(lambda: server.server.max_bulk) == 512 * 1024 * 1024
    assert server.call(lambda: server.server.keyspace.notify_flags) == 0


def test_protected_config_allowed_when_enabled(make_server):
    srv = make_server(enable_protected_configs='yes')
    c = srv.client()
    assert c.config_set('dbfilename', 'other.rdb') is True
    assert c.config_get('dbfilename') == {'dbfilename': 'other.rdb'}
    local = make_server(enable_protected_configs='local').client()
    assert local.config_set('dbfilename', 'x.rdb') is True


def test_config_resetstat_clears_server_keyspace_and_command_stats(r):
    r.set('k', 'v')
    r.get('k')
    r.get('missing')
    with pytest.raises(redis.ResponseError):
        r.execute_command('CONFIG', 'GET')
    assert r.info('stats')['keyspace_hits'] >= 1
    assert r.config_resetstat() is True
    stats = r.info('stats')
    assert stats['keyspace_hits'] == 0 and stats['keyspace_misses'] == 0
    assert stats['total_connections_received'] == 0
    assert stats['total_commands_processed'] == 1  # CONFIG RESETSTAT itself
    assert stats['expired_keys'] == 0
    assert list(r.info('commandstats')) == ['cmdstat_config|resetstat', 'cmdstat_info']


def test_config_rewrite_without_file(r):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command('CONFIG', 'REWRITE')
    assert str(e.value) == 'The server is running without a config file'


def test_config_rewrite_updates_file_in_place(make_server, tmp_path):
    path = tmp_path / 'store.conf'
    path.write_text(
        '# my settings\n'
        'hz 15\n'
        '\n\n'
        'maxmemory 1mb\n'
        'save 100 1\n'
        'save 200 2\n'
        'lua-time-limit 100\n'
        'frobnicate yes\n'
    )
    srv = make_server()
    srv.server.config.file = str(path)
    c = srv.client()
    c.execute_command(
        'CONFIG',
        'SET',
        'hz',
        '25',
        'maxmemory',
        '3gb',
        'save',
        '60 5',
        'timeout',
        '7',
        'requirepass',
        'se"cret',
        'lua-time-limit',
        '100',
    )
    try:
        assert c.execute_command('CONFIG', 'REWRITE') == b'OK'
    finally:
        c.execute_command('CONFIG', 'SET', 'requirepass', '')
    assert path.read_text() == (
        '# my settings\n'
        'hz 25\n'
        '\n'
        'maxmemory 3gb\n'
        'save 60 5\n'
        '\n'
        'busy-reply-threshold 100\n'
        '# ??? frobnicate yes\n'
        '# Generated by CONFIG REWRITE\n'
        f'port {srv.port}\n'  # the port bound: CONFIG GET port says it too
        'bind 127.0.0.1\n'  # not Redis's default '* -::*'
        'timeout 7\n'
        'requirepass "se\\"cret"\n'
        f'dir "{tmp_path}"\n'
        'enable-debug-command yes\n'
        # the users, as redis-server writes them (the default user with requirepass's hash)
        'user default on #1c3889797b22fdaeb67269173c6ba36125f4ecbaef8db3022e2ac0fd5087cba9 ~* '
        '&* +@all\n'
    )


def test_config_rewrite_file_is_loadable_by_the_server(tmp_path):
    port = free_port()
    path = tmp_path / 'store.conf'
    path.write_text(f'port {port}\nbind 127.0.0.1\n')
    proc = subprocess.Popen(
        [sys.executable, '-m', 'store', str(path), '--save', ''],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for_port(port, proc)
        c = redis.Redis(port=port)
        c.execute_command(
            'CONFIG',
            'SET',
            'maxmemory-policy',
            'allkeys-lfu',
            'notify-keyspace-events',
            'Ex',
            'client-output-buffer-limit',
            'pubsub 1mb 512kb 10',
        )
        assert c.execute_command('CONFIG', 'REWRITE') == b'OK'
        assert c.info('server')['config_file'] == str(path)
        c.close()
    finally:
        stop(proc)
    text = path.read_text()
    assert 'maxmemory-policy allkeys-lfu\n' in text
    assert 'notify-keyspace-events "xE"\n' in text
    assert 'client-output-buffer-limit pubsub 1mb 512kb 10\n' in text
    proc = subprocess.Popen(
        [sys.executable, '-m', 'store', str(path), '--save', ''],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for_port(port, proc)
        c = redis.Redis(port=port)
        assert c.config_get('maxmemory-policy', 'notify-keyspace-events') == {
            'maxmemory-policy': 'allkeys-lfu',
            'notify-keyspace-events': 'xE',
        }
        assert (
            'pubsub 1048576 524288 10'
            in c.config_get('client-output-buffer-limit')['client-output-buffer-limit']
        )
        c.close()
    finally:
        stop(proc)


# -- INFO ---------------------------------------------------------------------------------

DEFAULT_HEADERS = [
    'Server',
    'Clients',
    'Memory',
    'Persistence',
    'Stats',
    'Replication',
    'CPU',
    'Modules',
    'Errorstats',
    'Cluster',
    'Keyspace',
]


def headers(text):
    return re.findall(r'^# (\w+)\r$', text, re.M)


def test_info_text_layout_and_sections(r):
    r.set('k', 'v')
    text = raw(r, 'INFO').decode()
    assert headers(text) == DEFAULT_HEADERS
    # '# Header' then 'field:value' lines, one empty line between sections, CRLF endings
    # (errorstat_<code> has the error's code as sent, in capitals).
    for block in text.split('\r\n\r\n'):
        lines = block.split('\r\n')
        assert lines[0].startswith('# ')
        field = r'(errorstat_\S+|[a-z0-9_|]+):.*'
        assert all(re.fullmatch(field, line) for line in lines[1:] if line)
    assert text.endswith('db0:keys=1,expires=0,avg_ttl=0\r\n')
    assert headers(raw(r, 'INFO', 'default').decode()) == DEFAULT_HEADERS
    everything = headers(raw(r, 'INFO', 'everything').decode())
    assert everything == [
        'Server',
        'Clients',
        'Memory',
        'Persistence',
        'Stats',
        'Replication',
        'CPU',
        'Modules',
        'Commandstats',
        'Errorstats',
        'Latencystats',
        'Cluster',
        'Keyspace',
    ]
    assert headers(raw(r, 'INFO', 'all').decode()) == everything
    assert headers(raw(r, 'INFO', 'CPU', 'keyspace', 'Server').decode()) == [
        'Server',
        'CPU',
        'Keyspace',
    ]
    assert raw(r, 'INFO', 'nosuch') == b''
    assert raw(r, 'INFO', 'keyspace') == (b'# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n')


def test_info_fields_parse_with_redis_py(r, server):
    r.set('k', 'v', ex=100)
    info = r.info('everything')
    assert info['redis_version'] == '7.0.15'
    assert info['tcp_port'] == server.port
    assert info['process_id'] == os.getpid()
    assert info['role'] == 'master' and info['connected_slaves'] == 0
    assert info['connected_clients'] >= 1
    assert info['used_memory'] > 0 and info['used_memory_human'].endswith(('K', 'M', 'G'))
    assert info['maxmemory'] == 0 and info['maxmemory_policy'] == 'noeviction'
    assert info['cluster_enabled'] == 0 and info['loading'] == 0
    assert info['used_cpu_user'] > 0
    db0 = info['db0']
    assert db0['keys'] == 1 and db0['expires'] == 1 and 90_000 < db0['avg_ttl'] <= 100_000
    assert info['cmdstat_set']['calls'] >= 1


def test_info_stats_counters(r, server):
    r.config_resetstat()
    r.set('a', '1')
    r.get('a')
    r.get('a')
    r.get('nope')
    r.set('gone', 'x', px=1)
    time.sleep(0.05)
    assert r.get('gone') is None
    before = r.info('stats')
    other = server.client()
    other.ping()
    other.close()
    stats = r.info('stats')
    assert stats['keyspace_hits'] == 2 and stats['keyspace_misses'] >= 1
    assert stats['expired_keys'] == 1
    assert stats['total_connections_received'] == before['total_connections_received'] + 1
    assert stats['total_net_input_bytes'] > before['total_net_input_bytes']
    assert stats['total_net_output_bytes'] > before['total_net_output_bytes']
    assert stats['rejected_connections'] == 0 and stats['evicted_keys'] == 0
    assert stats['total_commands_processed'] >= 8
    cmd = r.info('commandstats')
    assert cmd['cmdstat_get']['calls'] == 4
    assert cmd['cmdstat_config|resetstat']['calls'] == 1
    line = raw(r, 'INFO', 'commandstats').decode()
    assert re.search(
        r'\r\ncmdstat_get:calls=4,usec=\d+,usec_per_call=\d+\.\d\d,'
        r'rejected_calls=0,failed_calls=0\r\n',
        line,
    )


def test_info_commandstats_counts_failed_and_rejected_subcommands(r):
    r.config_resetstat()
    with pytest.raises(redis.ResponseError):
        r.execute_command('CONFIG', 'GET')  # arity: rejected
    with pytest.raises(redis.ResponseError):
        r.execute_command('CONFIG', 'SET', 'nosuch', '1')  # failed
    stats = r.info('commandstats')
    assert stats['cmdstat_config|get']['rejected_calls'] == 1
    assert stats['cmdstat_config|set']['failed_calls'] == 1
    assert r.info('stats')['total_error_replies'] == 2
    line = raw(r, 'INFO', 'commandstats').decode()
    assert (
        'cmdstat_config|get:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,'
        'failed_calls=0\r\n' in line
    )


def test_info_instantaneous_ops_per_sec(r):
    r.info('stats')  # starts the sampler (one sample every 100 ms)

    def busy():
        for _ in range(20):
            r.ping()
        return r.info('stats')['instantaneous_ops_per_sec'] > 0

    wait_until(busy, 'a non-zero rate', interval=0.02)


def test_info_resp3_is_verbatim(server, r3):
    r3.set('k', 'v')
    got = wire(server.port, b'INFO keyspace\r\n', 1, hello3=True)
    body = b'# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n'
    assert got == b'=%d\r\ntxt:%s\r\n' % (len(body) + 4, body)
    assert r3.info('keyspace') == {'db0': {'keys': 1, 'expires': 0, 'avg_ttl': 0}}
    assert r3.info()['redis_version'] == '7.0.15'


@pytest.mark.parametrize('protocol', [2, 3])
async def test_redis_py_basics(server, api, protocol):
    c = connect(server, api, protocol)
    try:
        await done(c.flushall())
        await done(c.set('k', 'v'))
        assert (await done(c.info('keyspace')))['db0']['keys'] == 1
        assert await done(c.config_get('hz')) == {'hz': '10'}
        assert await done(c.dbsize()) == 1
        before = int(time.time())
        seconds, micros = await done(c.time())
        assert before <= seconds <= time.time() and 0 <= micros < 1_000_000
    finally:
        await close(c)


# -- COMMAND ------------------------------------------------------------------------------

MINE = [
    'info',
    'time',
    'dbsize',
    'flushdb',
    'flushall',
    'swapdb',
    'lastsave',
    'save',
    'bgsave',
    'shutdown',
    'debug',
    'get',
]


def test_command_info_matches_redis(both_resp):
    ours, theirs = both_resp
    for name in MINE:
        assert raw(ours, 'COMMAND', 'INFO', name) == raw(theirs, 'COMMAND', 'INFO', name), name
    for container in ('config', 'command'):
        got = raw(ours, 'COMMAND', 'INFO', container)[0]
        want = raw(theirs, 'COMMAND', 'INFO', container)[0]
        assert got[:9] == want[:9]
        assert sorted(got[9]) == sorted(want[9])
    assert raw(ours, 'COMMAND', 'INFO', 'nosuch', 'CONFIG|GET') == raw(
        theirs, 'COMMAND', 'INFO', 'nosuch', 'CONFIG|GET'
    )


def _docs(reply):
    """COMMAND DOCS as nested dicts, without 'history' (not kept here)."""

    def as_dict(m):
        return m if isinstance(m, dict) else dict(zip(m[::2], m[1::2]))

    def conv(doc):
        d = as_dict(doc)
        d.pop(b'history', None)
        if b'subcommands' in d:
            d[b'subcommands'] = {k: conv(v) for k, v in as_dict(d[b'subcommands']).items()}
        return d

    return {k: conv(v) for k, v in as_dict(reply).items()}


def test_command_docs_match_redis(both_resp):
    ours, theirs = both_resp
    names = MINE[:-2] + ['config', 'command']
    assert _docs(raw(ours, 'COMMAND', 'DOCS', *names)) == _docs(
        raw(theirs, 'COMMAND', 'DOCS', *names)
    )
    assert raw(ours, 'COMMAND', 'DOCS', 'nosuch') == raw(theirs, 'COMMAND', 'DOCS', 'nosuch')
    everything = _docs(raw(ours, 'COMMAND', 'DOCS'))
    assert set(everything) == {n for n in raw(ours, 'COMMAND', 'LIST') if b'|' not in n}
    assert all(b'group' in d and b'since' in d for d in everything.values())


def test_command_docs_resp3_is_a_map(r3):
    docs = raw(r3, 'COMMAND', 'DOCS', 'config')
    assert docs[b'config'][b'subcommands'][b'config|set'][b'summary'] == (
        b'Set configuration parameters to the given values'
    )


def test_command_list_count_and_full_listing(r):
    everything = raw(r, 'COMMAND')
    count = raw(r, 'COMMAND', 'COUNT')
    assert count == len(everything) == len({e[0] for e in everything})
    names = raw(r, 'COMMAND', 'LIST')
    assert len(names) == len(set(names)) > count
    assert {b'config', b'config|get', b'command|docs', b'info', b'get'} <= set(names)
    assert sorted(raw(r, 'COMMAND', 'LIST', 'FILTERBY', 'PATTERN', 'CONFIG*')) == [
        b'config',
        b'config|get',
        b'config|help',
        b'config|resetstat',
        b'config|rewrite',
        b'config|set',
    ]
    dangerous = raw(r, 'COMMAND', 'LIST', 'FILTERBY', 'aclcat', 'dangerous')
    assert {b'flushall', b'debug', b'config|set'} <= set(dangerous)
    assert b'get' not in dangerous
    assert raw(r, 'COMMAND', 'LIST', 'FILTERBY', 'module', 'x') == []
    parsed = r.command()  # redis-py's own parser
    assert parsed['get']['arity'] == 2 and parsed['get']['first_key_pos'] == 1


def test_command_errors_match_redis(both):
    assert_same_raw(
        both,
        [
            ('COMMAND', 'GETKEYS', 'set', 'a', 'b'),
            ('COMMAND', 'GETKEYS', 'SET', 'a', 'b', 'EX', '10'),
            ('COMMAND', 'GETKEYS', 'get', 'a', 'b'),
            ('COMMAND', 'GETKEYS', 'nosuch', 'a'),
            ('COMMAND', 'GETKEYS', 'ping', 'a'),
            ('COMMAND', 'GETKEYS', 'get'),
            ('COMMAND', 'GETKEYSANDFLAGS', 'get', 'k'),
            ('COMMAND', 'LIST', 'FILTERBY', 'x', 'y'),
            ('COMMAND', 'LIST', 'FILTERBY', 'pattern'),
            ('COMMAND', 'LIST', 'x'),
            ('COMMAND', 'LIST', 'FILTERBY', 'aclcat', 'nosuch'),
            ('COMMAND', 'COUNT', 'x'),
            ('COMMAND', 'NOPE'),
            ('COMMAND', 'HELP'),
            ('COMMAND', 'INFO', 'nosuch'),
        ],
    )


# -- TIME, DBSIZE, FLUSH*, SWAPDB, SAVE ------------------------------------------------------


def test_misc_errors_match_redis(both):
    assert_same(
        both,
        [
            ('TIME', 'x'),
            ('DBSIZE', 'x'),
            ('LASTSAVE', 'x'),
            ('SAVE', 'x'),
            ('FLUSHALL', 'x'),
            ('FLUSHALL', 'ASYNC', 'SYNC'),
            ('FLUSHDB', 'nope'),
            ('FLUSHDB', 'ASYNC'),
            ('FLUSHALL', 'sync'),
            ('FLUSHDB',),
            ('SWAPDB', 'a', '1'),
            ('SWAPDB', '1', 'a'),
            ('SWAPDB', '1', '16'),
            ('SWAPDB', '-1', '0'),
            ('SWAPDB', '99999999999', '0'),
            ('SWAPDB', '1'),
            ('SWAPDB', '3', '3'),
            ('BGSAVE', 'x'),
            ('BGSAVE', 'SCHEDULE', 'x'),
            ('SHUTDOWN', 'x'),
            ('SHUTDOWN', 'ABORT'),
            ('SHUTDOWN', 'NOSAVE', 'SAVE'),
            ('SHUTDOWN', 'ABORT', 'NOW'),
            ('DEBUG',),
            ('DEBUG', 'nope'),
            ('DEBUG', 'SLEEP'),
            ('DEBUG', 'object'),
            ('DEBUG', 'OBJECT', 'nokey'),
            ('DEBUG', 'PROTOCOL', 'nope'),
            ('DEBUG', 'SET-ACTIVE-EXPIRE'),
            ('DEBUG', 'SLEEP', '0'),
        ],
    )


def test_time(r):
    before = int(time.time())
    seconds, micros = r.time()
    assert before <= seconds <= time.time()
    assert 0 <= micros < 1_000_000
    assert all(type(x) is bytes for x in raw(r, 'TIME'))


def test_dbsize_flushdb_flushall(r):
    r.mset({'a': 1, 'b': 2})
    r.execute_command('SELECT', 1)
    r.set('c', 3)
    assert r.dbsize() == 1
    assert r.flushdb(asynchronous=True) is True
    assert r.dbsize() == 0
    r.execute_command('SELECT', 0)
    assert r.dbsize() == 2
    r.execute_command('SELECT', 2)
    r.set('d', 4)
    assert r.flushall() is True
    assert r.dbsize() == 0
    r.execute_command('SELECT', 0)
    assert r.dbsize() == 0


def test_swapdb(r, server):
    r.set('k', 'zero')
    r.set('t', 'ttl', ex=100)
    other = server.client(db=1)
    try:
        assert r.swapdb(0, 1) is True
        assert r.dbsize() == 0
        assert other.get('k') == b'zero' and 90 < other.ttl('t') <= 100
        assert r.swapdb(1, 0) is True
        assert r.get('k') == b'zero' and other.dbsize() == 0
    finally:
        other.flushdb()
        other.close()


def test_lastsave_save_bgsave(r):
    before = r.lastsave()
    assert abs(before.timestamp() - time.time()) < 3600
    time.sleep(1.01)
    assert r.save() is True
    assert r.lastsave() > before
    assert raw(r, 'BGSAVE') == b'Background saving started'
    wait_until(lambda: r.info('persistence')['rdb_bgsave_in_progress'] == 0, 'the BGSAVE')
    assert raw(r, 'BGSAVE', 'SCHEDULE') == b'Background saving started'
    wait_until(lambda: r.info('persistence')['rdb_bgsave_in_progress'] == 0, 'the BGSAVE')
    assert r.info('persistence')['rdb_last_save_time'] == int(r.lastsave().timestamp())


# -- SHUTDOWN -----------------------------------------------------------------------------


def test_shutdown_stops_embedded_server(make_server):
    srv = make_server()
    c = srv.client(retry=Retry(NoBackoff(), 0))  # no reconnecting to a server that left
    c.set('k', 'v')
    port = srv.port
    c.shutdown(nosave=True, now=True)  # redis-py expects the connection to drop
    srv.thread.join(WAIT)
    assert not srv.thread.is_alive()
    with pytest.raises(OSError):
        socket.create_connection(('127.0.0.1', port), timeout=1).close()


def test_shutdown_subprocess_exits_cleanly():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, '-m', 'store', '--port', str(port), '--save', ''],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for_port(port, proc)
        with RawConn(port) as c:
            c.send(b'SHUTDOWN\r\n')
            assert c.read_available(want=b'<EOF>') == b'<EOF>'  # closed without a reply
        assert proc.wait(WAIT) == 0
        assert 'Redis is now ready to exit, bye bye...' in proc.stdout.read()
    finally:
        stop(proc)


# -- DEBUG --------------------------------------------------------------------------------


def test_debug_protocol_wire_bytes_match_redis(server, redis_ref):
    kinds = [
        'string',
        'integer',
        'double',
        'bignum',
        'null',
        'array',
        'set',
        'map',
        'attrib',
        'push',
        'verbatim',
        'true',
        'false',
    ]
    payload = b''.join(b'DEBUG PROTOCOL %s\r\n' % k.encode() for k in kinds)
    for hello3 in (False, True):
        ours = wire(server.port, payload, len(kinds), hello3)
        theirs = wire(redis_ref[1], payload, len(kinds), hello3)
        assert ours == theirs


def test_debug_object(r):
    r.set('n', '123')
    r.set('s', 'hello')
    r.set('big', 'x' * 100)
    assert re.fullmatch(
        r'Value at:0x[0-9a-f]+ refcount:2147483647 encoding:int '
        r'serializedlength:2 lru:\d+ lru_seconds_idle:\d+',
        r.execute_command('DEBUG', 'OBJECT', 'n').decode(),
    )
    assert r.debug_object('s')['encoding'] == 'embstr'
    assert r.debug_object('s')['refcount'] == 1
    assert r.debug_object('big')['encoding'] == 'raw'


def ping_during_sleep(port, seconds):
    """One client runs DEBUG SLEEP `seconds` while another PINGs all the while: returns
    when each PONG arrived, when DEBUG SLEEP was sent and when its reply arrived."""
    a = {}

    def sleeper():
        with RawConn(port) as c:
            a['sent'] = time.monotonic()
            a['reply'] = c.cmd('DEBUG', 'SLEEP', seconds)
            a['done'] = time.monotonic()

    pongs = []
    with RawConn(port) as b:
        assert b.cmd('PING') == b'+PONG\r\n'
        t = threading.Thread(target=sleeper)
        t.start()
        while t.is_alive():
            assert b.cmd('PING') == b'+PONG\r\n'
            pongs.append(time.monotonic())
        t.join()
        assert b.cmd('PING') == b'+PONG\r\n'
        pongs.append(time.monotonic())
    assert a['reply'] == b'+OK\r\n'
    return pongs, a['sent'], a['done']


def test_debug_sleep_blocks_the_server(server):
    """The sleep lies in [sent, done] and lasts `seconds`, so it covers the interval
    (done - seconds, sent + seconds). A server that kept serving would answer the other
    client's PINGs there over and over; one that sleeps answers none sent after the sleep
    began, so at most one PONG (for a PING sent before) can arrive in it. Only the width
    of that interval depends on the machine: when slow round trips leave it too narrow to
    tell, the sleep is doubled."""
    seconds = 0.5
    for _ in range(5):
        pongs, sent, done_at = ping_during_sleep(server.port, seconds)
        lo, hi = done_at - seconds, sent + seconds
        if hi - lo >= seconds / 2:
            break
        seconds *= 2
    else:
        pytest.fail('DEBUG SLEEP never answered within 1.5 times its duration')
    during = [t for t in pongs if lo < t < hi]
    assert len(during) <= 1, f'{len(during)} PONGs during DEBUG SLEEP {seconds}'
    assert pongs[-1] >= done_at  # served again afterwards


def test_debug_set_active_expire(r, server):
    try:
        assert r.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '0') == b'OK'
        r.set('k', 'v', px=20)
        time.sleep(0.15)
        assert r.dbsize() == 1  # nobody touched it: still there
        assert r.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '1') == b'OK'
        wait_until(lambda: r.dbsize() == 0, 'the active expiry')
    finally:
        r.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', '1')
    assert server.call(lambda: server.server.expiry.enabled) is True


def test_debug_misc(r):
    assert r.execute_command('DEBUG', 'DIGEST') == b'0' * 40
    r.set('a', '1')
    d1 = r.execute_command('DEBUG', 'DIGEST')
    r.set('a', '2')
    assert r.execute_command('DEBUG', 'DIGEST') not in (d1, b'0' * 40)
    assert r.execute_command('DEBUG', 'POPULATE', '10', 'p', '3') == b'OK'
    assert r.dbsize() == 11 and r.get('p:7') == b'val'
    help_lines = r.execute_command('DEBUG', 'HELP')
    assert help_lines[0].startswith(b'DEBUG <subcommand>') and help_lines[-1] == (
        b'    Prints this help.'
    )
    with pytest.raises(redis.ResponseError, match='^boom$'):
        r.execute_command('DEBUG', 'ERROR', 'boom')
    assert r.execute_command('DEBUG', 'RELOAD') == b'OK' and r.dbsize() == 11


def test_debug_not_allowed_unless_enabled(make_server):
    c = make_server(enable_debug_command='no').client()
    with pytest.raises(redis.ResponseError) as e:
        c.execute_command('DEBUG', 'SLEEP', '0')
    assert str(e.value) == (
        'DEBUG command not allowed. If the enable-debug-command option is set to "local", '
        'you can run it from a local connection, otherwise you need to set this option in '
        'the configuration file, and then restart the server.'
    )
    with pytest.raises(redis.ResponseError, match='wrong number of arguments'):
        c.execute_command('DEBUG')
    local = make_server(enable_debug_command='local').client()
    assert local.execute_command('DEBUG', 'SLEEP', '0') == b'OK'
