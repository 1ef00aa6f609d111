"""Every parameter of Redis 7.0.15's configuration, against redis-server: the names CONFIG GET
knows (aliases and hidden test-only ones included), their defaults, what CONFIG SET accepts
and how CONFIG GET renders it, the exact error for every kind of bad value, how several
parameters in one CONFIG SET interact, protected parameters, config-file loading (aliases,
deprecated directives, the errors that stop a server from starting), CONFIG REWRITE round
trips, and docs/config.md covering every parameter.

The servers are this module's own (a reference redis-server in a temporary directory, since
some parameters make it write files there, and an embedded server), so nothing changed here
reaches the shared fixtures."""

import os
import re
import shutil
import socket
import struct
import subprocess
import sys

import pytest
import redis

from conftest import WAIT, free_port, spawn_redis, stop, wait_for_port, wait_until
from store import EmbeddedServer
from store.config import Config
from store.config_params import PARAMS, TABLE
from store.config_values import ConfigError

pytestmark = pytest.mark.differential

# This server's own parameters: CONFIG GET * shows them besides Redis's.
OUR_OWN = {
    'shards',
    'active-expire-budget-us',
    'async-dispatch-quota',
    'publish-buffer-limit',
    'keyevent-journal-events',
    'keyevent-journal-key',
    'keyevent-journal-maxlen',
    'script-memory-limit',
    'announce-redis-version',
}

# Test-only parameters Redis hides from CONFIG GET patterns (an exact name still works).
HIDDEN = {
    'use-exit-on-panic',
    'rdb-key-save-delay',
    'key-load-delay',
    'watchdog-period',
    'loading-process-events-interval-bytes',
    'lua-enable-deprecated-api',
}

# Defaults that differ from a redis-server started with nothing but a port and a directory,
# and why.
DEFAULTS_DIFFER = {
    'port': 'each server listens on a port of its own',
    'dir': "redis-server runs in the test's temporary directory",
    'save': 'no snapshots are taken here, so there are no default save points',
}

# Parameters that move the listeners: tested on their own (test_config_set_moves_listeners),
# not with the generic values, which would bind well-known ports on both servers.
LISTENERS = {'port', 'bind'}

ALIASES = {p.alias: p.name for p in PARAMS if p.alias}

# Values tried on every parameter: numbers at every bound a parameter has, memory units,
# percentages, every enum's names, special formats, and malformed spellings of each.
VALUES = [
    *('', 'abc', '-1', '0', '1', '2', '-2', '5', '99', '100', '101', '1000', '1001'),
    *('65535', '65536', '0777', '777', '2147483647', '2147483648', '-2147483648'),
    *('-2147483649', '4294967295', '4294967296', '9223372036854775807'),
    *('9223372036854775808', '-9223372036854775808', '-9223372036854775809'),
    *('18446744073709551615', '18446744073709551616', '99999999999999999999'),
    *('1k', '1kb', '1K', '1KB', '1kB', '1m', '1mb', '1g', '1gb', '1b', '1B', '1tb', 'k'),
    *('kb', '1.5', '1.5mb', '+1', ' 1', '1 ', '01', '0x10', '-0', '17179869184kb'),
    *('9223372036854775807b', '8388608tb', '18014398509481984kb'),
    *('50%', '0%', '100%', '101%', '-5%', '%', '1%k', '-0%'),
    *('yes', 'no', 'YES', 'No', 'maybe', 'local', 'LOCAL', 'allkeys-lru', 'VOLATILE-LRU'),
    *('Warning', 'nothing', 'everysec', 'relative', 'on-empty-db', 'swapdb', 'optional'),
    *('clients', 'hostname', 'unknown-endpoint', 'panic', 'panic-on-replicas', 'allchannels'),
    *('a/b', 'a\\b', 'foo.rdb', 'x y', 'a-b.c', 'a_b', 'é', 'a' * 255, 'a' * 256),
    *('{title}', '{nope}', '{title', '{port} {unixsocket}', '{port}', '{listen-addr}'),
    *('{server-mode}', '{title}{server-mode}', '{unixsocket}', '{config-file}', '{tls-port}'),
    *('x{title}', '{{', '}}', '{{title}}', 'a}b', '{', '}', '{}', '{title}}', '{TITLE}'),
    *('1 2 3', '0 200 800', '-2000 0 2000', '-2001 0 0', '0 0 2001', '0 0', 'a b c'),
    *('1 2 x', '+1 2 3', ' 1 2 3', '1  2', '0x1 2 3', '2000 -2000 0', '1 2 3 '),
    *('99999999999999999999 0 0', '4294967296 0 0'),
    *('100 10', '100 10 5', '0 1', '1 0', '1 -1', 'x 1', '100  10', '+1 1', '1 +1'),
    *('99999999999999999999 99999999999999999999', '1 4294967297', '1 2147483648', '1 -0'),
    *('\t1 1', '1\t 1', '0x1 1', '1 1 ', '100 10 200 20', '3600 1 300 100 60 10000'),
    *('10 99.9', '50 99 99.9', '-0.5', '1e2', 'nan', 'inf', 'INF', 'Infinity', '0.123456789'),
    *('1e400', '1e-400', '1e-310', '0x1p3', '1_0', '.5', '5.', '100.0000001', '99.99999999'),
    *('  ', '50  99', '1e-7', '12.345678901'),
    *('normal 0 0 0', 'replica 1mb 2mb 3', 'slave 1 2 3', 'pubsub 1kb 2k 30', 'master 1 2 3'),
    *('normal 1 2', 'normal 1 2 -1', 'normal x 2 3', 'normal 1 2 3x', 'NORMAL 1 2 3'),
    *('pubsub 64mb 16mb 30 normal 0 0 0', 'normal 1 2 4294967296', 'normal 1 2 2147483648'),
    *('normal 1 2 99999999999', 'Slave 1 2 3', 'normal 1 2 +3', 'normal 1 2 \t3'),
    *('normal -1 2 3', 'normal  1 2 3', 'normal 1 2 3 ', 'pubsub 18446744073709551616 1 1'),
    *('normal 0777 1k 0', 'normal 1 2 '),
    *('no one', 'localhost 6380', 'KEA', 'Kx', 'AKEn', 'Q', 'gxE$', 'Em', 'An', 'A'),
    *('g$lshzxetdn', 'Ex ', 'K E', 'AKEm', 'Am', '$', 'gKm', 'EKA', 'xxK', 'mn', 'n', 'd', 't'),
    *('save', 'nosave', 'now', 'force', 'default', 'save now', 'nosave force', 'now force'),
    *('save nosave', 'default save', 'SAVE', 'save  now', 'now save', 'force now save'),
    *('default default', 'NOW', 'nosave nosave'),
]

# Values a parameter is not tried with, because redis-server's answer depends on the
# machine: raising maxclients past the open-files limit fails there ("The operating
# system is not able to handle the specified number of clients"), and an absolute OOM
# score below the current one needs privileges.
MACHINE_DEPENDENT = {
    'maxclients': lambda v: v.strip().isdigit() and 10000 < int(v.strip()) < 2**64,
    'oom-score-adj': lambda v: v.lower() == 'absolute',
}


@pytest.fixture(scope='module')
def ref(tmp_path_factory):
    """A redis-server of this module's own, running in a temporary directory."""
    tmp = tmp_path_factory.mktemp('redis-config')
    proc, port = spawn_redis('--dir', str(tmp))
    client = redis.Redis(port=port, protocol=2)
    yield client
    client.close()
    stop(proc)


@pytest.fixture(scope='module')
def ours(tmp_path_factory):
    # its own dir: setting every parameter turns the AOF on, which writes there
    data = tmp_path_factory.mktemp('data')
    with EmbeddedServer(enable_debug_command='yes', save='', dir=str(data)) as srv:
        client = srv.client(protocol=2)
        yield client
        client.close()


def config_get(client, name):
    """CONFIG GET as a dict of bytes, whichever form redis-py hands the reply in."""
    reply = client.execute_command('CONFIG', 'GET', name)
    return reply if isinstance(reply, dict) else dict(zip(reply[0::2], reply[1::2]))


def replies(client, commands):
    """Each command's reply, or the error message, pipelined."""
    pipe = client.pipeline(transaction=False)
    for cmd in commands:
        pipe.execute_command(*cmd)
    out = []
    for cmd, r in zip(commands, pipe.execute(raise_on_error=False)):
        if isinstance(r, redis.ResponseError):
            r = ('error', str(r))
        elif cmd[:2] == ('CONFIG', 'GET') and isinstance(r, list):
            r = dict(zip(r[0::2], r[1::2]))
        out.append(r)
    return out


def redis_names(client, pattern='*'):
    return {k.decode() for k in config_get(client, pattern)}


# -- names and defaults ---------------------------------------------------------------------


def test_config_get_star_names_match_redis(ours, ref):
    theirs = redis_names(ref)
    mine = redis_names(ours)
    assert mine - theirs == OUR_OWN
    assert theirs - mine == set()
    assert theirs == {n for n in TABLE if n not in OUR_OWN and n not in HIDDEN}


def test_config_get_star_in_resp3(ours):
    client = redis.Redis(port=ours.connection_pool.connection_kwargs['port'], protocol=3)
    got = client.config_get('*')
    assert {k for k in got} == {n for n in TABLE if n not in HIDDEN}
    client.close()


def test_hidden_parameters_answer_only_their_exact_name(ours, ref):
    for client in (ours, ref):
        for name in HIDDEN:
            assert set(config_get(client, name)) == {name.encode()}
            assert config_get(client, name.upper()) == {name.upper().encode(): mine(client, name)}
        for pattern in ('*delay*', '*panic*', 'watchdog*', 'loading*', '*'):
            assert not redis_names(client, pattern) & HIDDEN
    assert config_get(ours, '*delay*') == config_get(ref, '*delay*')


def mine(client, name):
    return config_get(client, name)[name.encode()]


def test_alias_patterns_match_redis(ours, ref):
    for pattern in ('*ziplist*', 'slave*', '*slave*', 'lua*', 'min-*', 'cluster-slave*'):
        assert config_get(ours, pattern) == config_get(ref, pattern), pattern


def test_defaults_match_a_fresh_redis_server(tmp_path):
    """A redis-server started with only a port, an address and a directory, against this
    server with its defaults (loopback address and an ephemeral port)."""
    port = free_port()
    proc = subprocess.Popen(
        [shutil.which('redis-server'), '--port', str(port), '--bind', '127.0.0.1'],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        fresh = redis.Redis(port=port, decode_responses=True)
        theirs = {**fresh.config_get('*'), **{n: fresh.config_get(n)[n] for n in HIDDEN}}
        fresh.shutdown(nosave=True)
    except redis.ConnectionError:
        pass  # SHUTDOWN closes the connection
    finally:
        stop(proc)
    with EmbeddedServer(save='') as srv:
        client = srv.client(decode_responses=True)
        mine = {**client.config_get('*'), **{n: client.config_get(n)[n] for n in HIDDEN}}
        client.close()
    assert theirs['save'] == '3600 1 300 100 60 10000' and mine['save'] == ''
    assert mine['dir'] == os.path.realpath('.')
    differ = set(DEFAULTS_DIFFER)
    if int(theirs['maxclients']) < 10000:
        differ.add('maxclients')  # redis-server lowered it to this machine's open-files limit
    for name, value in theirs.items():
        if name not in differ:
            assert mine[name] == value, name
    # Redis's default bind, every address with protected mode refusing the others (the
    # reference runs with --bind 127.0.0.1)
    assert Config().render('bind') == '* -::*'


# -- CONFIG SET then CONFIG GET, for every parameter and alias ---------------------------------


def set_and_get(client, name, values, original, chunk=40):
    """(value, SET's reply, GET's reply) for each value, the original value put back after
    each. Pipelined `chunk` values at a time: their replies stay under the 16 KB that no
    output-buffer limit counts, so a limit being tried (`normal 1 2 3`: a 1-byte hard
    limit) cannot drop the client if a read ends before the original is put back (redis-py
    would then quietly run the batch again from that state)."""
    out = []
    for i in range(0, len(values), chunk):
        commands = []
        for value in values[i : i + chunk]:
            commands += [
                ('CONFIG', 'SET', name, value),
                ('CONFIG', 'GET', name),
                ('CONFIG', 'SET', name, original),
            ]
        out += replies(client, commands)
    return list(zip(values, out[0::3], out[1::3]))


@pytest.mark.parametrize('name', sorted(n for n in TABLE if n not in OUR_OWN | LISTENERS))
def test_set_then_get_matches_redis(ours, ref, name):
    skip = MACHINE_DEPENDENT.get(name, lambda v: False)
    values = [v for v in VALUES if not skip(v)]
    original = mine(ref, name).decode('utf-8', 'surrogateescape')
    if name == 'dir':
        original = '.'  # protected on both servers: every SET fails, this one included
    got = set_and_get(ours, name, values, original)
    want = set_and_get(ref, name, values, original)
    if name == 'dir':  # the servers run in different directories: compare the refusals
        got, want = [g[:2] for g in got], [w[:2] for w in want]
    for g, w in zip(got, want):
        assert g == w, f'CONFIG SET {name} {g[0]!r}: ours {g[1:]} != redis {w[1:]}'
    assert mine(ours, name) == mine(ref, name) or name in ('dir', 'daemonize')


def _accept_queue_sizes(srv):
    """Each TCP listener's accept queue size (listen(2)'s backlog, capped by somaxconn):
    TCP_INFO's tcpi_sacked on a listening socket."""
    sizes = []
    for listener in srv.call(lambda: list(srv.server.listeners)):
        for sock in listener.sockets:
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
                sizes.append(struct.unpack_from('I', info, 28)[0])
    return sizes


def test_listeners_queue_tcp_backlog_connections(make_server):
    """tcp-backlog is the listeners' accept queue, after a CONFIG SET port too (asyncio
    listens again when it takes a socket, with 100 unless told)."""
    srv = make_server(tcp_backlog='300')
    assert _accept_queue_sizes(srv) == [300]
    srv.client().config_set('port', str(free_port()))
    wait_until(lambda: _accept_queue_sizes(srv) == [300], 'the moved listener')


def test_config_set_moves_listeners(make_server, redis_ref):
    """CONFIG SET port listens on the new port (the old one closes); a port that is taken
    fails the whole CONFIG SET with Redis's error, the other values not stored; bind takes
    new addresses on the same port."""
    srv = make_server()
    c = srv.client()
    taken = redis_ref[1]
    maxmemory = c.config_get('maxmemory')['maxmemory']
    with pytest.raises(redis.ResponseError) as e:
        c.execute_command('CONFIG', 'SET', 'maxmemory', '10000001', 'port', str(taken))
    assert str(e.value) == (
        "CONFIG SET failed (possibly related to argument 'port') - "
        'Unable to listen on this port. Check server logs.'
    )
    ref = redis.Redis(port=taken)
    with pytest.raises(redis.ResponseError) as e2:
        ref.execute_command('CONFIG', 'SET', 'maxmemory', '10000001', 'port', str(srv.port))
    assert str(e2.value) == str(e.value)
    assert c.config_get('maxmemory')['maxmemory'] == maxmemory
    assert ref.config_get('port')['port'] == str(taken)
    new, old = free_port(), srv.port
    assert c.execute_command('CONFIG', 'SET', 'port', str(new)) == b'OK'
    moved = redis.Redis(port=new)
    assert moved.ping() and moved.config_get('port')['port'] == str(new)
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=old).ping()
    assert c.ping()  # connected clients stay
    assert moved.execute_command('CONFIG', 'SET', 'bind', '127.0.0.1 -::1') == b'OK'
    assert redis.Redis(port=new).ping()
    assert moved.config_get('bind')['bind'] == '127.0.0.1 -::1'


def test_shards_takes_back_only_its_value(ours):
    """shards is fixed at start-up: CONFIG SET accepts the value it has (so a CONFIG GET *
    fed back to CONFIG SET works, as Redis's suite does) and refuses another."""
    value = mine(ours, 'shards').decode()
    assert ours.execute_command('CONFIG', 'SET', 'shards', value) == b'OK'
    with pytest.raises(redis.ResponseError) as e:
        ours.execute_command('CONFIG', 'SET', 'shards', str(int(value) + 1))
    assert "can't set immutable config" in str(e.value)


@pytest.mark.parametrize('alias', sorted(ALIASES))
def test_alias_sets_and_gets_its_parameter(ours, ref, alias):
    name = ALIASES[alias]
    value = {
        'slaveof': 'no one',
        'lua-time-limit': '1234',
        'list-max-ziplist-size': '-3',
    }.get(alias)
    if value is None:
        flipped = 'no' if mine(ref, alias) == b'yes' else 'yes'
        value = {'bool': flipped, 'int': '7', 'mem': '2kb', 'str': 'host.example'}[
            TABLE[alias].kind
        ]
    commands = [
        ('CONFIG', 'GET', name),
        ('CONFIG', 'SET', alias, value),
        ('CONFIG', 'GET', alias),
        ('CONFIG', 'GET', name),
        ('CONFIG', 'GET', f'{alias}*'),
        ('CONFIG', 'SET', alias.upper(), 'nonsense!'),
    ]
    got, want = replies(ours, commands), replies(ref, commands)
    original = got[0][name.encode()].decode()
    for client in (ours, ref):
        if TABLE[alias].mutable:
            client.execute_command('CONFIG', 'SET', name, original)
    assert got == want
    if TABLE[alias].mutable and TABLE[alias].kind != 'str':
        assert got[2][alias.encode()] == got[3][name.encode()] != original.encode()


# -- invalid values, kind by kind, with Redis's exact words ---------------------------------

INVALID = [
    ('hz', 'abc', "argument couldn't be parsed into an integer"),
    ('hz', '-1', 'argument must be between 0 and 2147483647 inclusive'),
    ('active-expire-effort', '11', 'argument must be between 1 and 10 inclusive'),
    ('active-defrag-cycle-min', '0', 'argument must be between 1 and 99 inclusive'),
    (
        'list-max-listpack-size',
        '2147483648',
        'argument must be between -2147483648 and 2147483647 inclusive',
    ),
    ('maxclients', '0', 'argument must be between 1 and 4294967295 inclusive'),
    (
        'slowlog-log-slower-than',
        '-2',
        'argument must be between -1 and 9223372036854775807 inclusive',
    ),
    ('maxmemory', '1tb', 'argument must be a memory value'),
    ('maxmemory', '-1', 'argument must be a memory value'),
    (
        'proto-max-bulk-len',
        '1000',
        'argument must be between 1048576 and 9223372036854775807 inclusive',
    ),
    (
        'hash-max-ziplist-value',
        '99999999999999999999',
        'argument must be between 0 and 9223372036854775807 inclusive',
    ),
    ('maxmemory-clients', '-5%', 'argument must be a memory or percent value'),
    ('maxmemory-clients', '101%', 'percentage argument must be less or equal to 100'),
    ('appendonly', 'on', "argument must be 'yes' or 'no'"),
    ('appendfsync', 'sometimes', 'argument(s) must be one of the following: everysec, always, no'),
    (
        'oom-score-adj',
        'maybe',
        'argument(s) must be one of the following: no, yes, relative, absolute',
    ),
    (
        'shutdown-on-sigterm',
        'later',
        'argument(s) must be one of the following: default, save, nosave, now, force',
    ),
    (
        'shutdown-on-sigint',
        'save nosave',
        "shutdown options SAVE and NOSAVE can't be used simultaneously",
    ),
    ('save', '100', 'Invalid save parameters'),
    ('save', '0 1', 'Invalid save parameters'),
    (
        'client-output-buffer-limit',
        'normal 1 2',
        'Wrong number of arguments in buffer limit configuration.',
    ),
    (
        'client-output-buffer-limit',
        'master 1 2 3',
        'Invalid client class specified in buffer limit configuration.',
    ),
    (
        'client-output-buffer-limit',
        'pubsub 1mb 2mb -1',
        'Error in hard, soft or soft_seconds setting in buffer limit configuration.',
    ),
    ('oom-score-adj-values', '0 200', 'wrong number of arguments'),
    (
        'oom-score-adj-values',
        '0 200 2001',
        'Invalid oom-score-adj-values, elements must be between -2000 and 2000.',
    ),
    ('notify-keyspace-events', 'KEQ', "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."),
    (
        'latency-tracking-info-percentiles',
        '50 abc',
        'Invalid latency-tracking-info-percentiles parameters',
    ),
    (
        'latency-tracking-info-percentiles',
        '101',
        'latency-tracking-info-percentiles parameters should sit between [0.0,100.0]',
    ),
    ('proc-title-template', '{title}', 'template format is invalid or contains unknown variables'),
    (
        'cluster-announce-hostname',
        'a_b',
        'Hostnames may only contain alphanumeric characters, hyphens or dots',
    ),
    (
        'activedefrag',
        'yes',
        'Active defragmentation cannot be enabled: it requires a Redis '
        'server compiled with a modified Jemalloc like the one shipped by default with the Redis '
        'source distribution',
    ),
    ('tls-port', '6380', 'Unable to update TLS configuration. Check server logs.'),
    ('tls-replication', 'yes', 'Unable to update TLS configuration. Check server logs.'),
    ('daemonize', 'yes', "can't set immutable config"),
    ('slaveof', 'no one', "can't set immutable config"),
    ('dbfilename', 'x.rdb', "can't set protected config"),
]


@pytest.mark.parametrize(('name', 'value', 'message'), INVALID)
def test_invalid_value_error(ours, ref, name, value, message):
    want = f"CONFIG SET failed (possibly related to argument '{name}') - {message}"
    for client in (ours, ref):
        assert replies(client, [('CONFIG', 'SET', name, value)]) == [('error', want)]


# -- several parameters in one CONFIG SET ----------------------------------------------------


def test_config_set_several_parameters_matches_redis(ours, ref):
    commands = [
        # an alias and its parameter are two names, not a duplicate
        ('CONFIG', 'SET', 'hash-max-ziplist-entries', '1', 'hash-max-listpack-entries', '2'),
        ('CONFIG', 'GET', 'hash-max-ziplist-entries'),
        ('CONFIG', 'SET', 'hash-max-listpack-entries', '512'),
        ('CONFIG', 'SET', 'hz', '1', 'HZ', '2'),
        # values are all parsed before any apply step runs
        ('CONFIG', 'SET', 'tls-port', '1', 'hz', 'abc'),
        ('CONFIG', 'SET', 'hz', 'abc', 'tls-port', '1'),
        ('CONFIG', 'SET', 'tls-replication', 'yes', 'tls-cluster', 'yes'),
        ('CONFIG', 'SET', 'hz', '20', 'tls-cluster', 'yes'),
        ('CONFIG', 'GET', 'hz'),
        # names are checked before values; immutable names are quoted as typed
        ('CONFIG', 'SET', 'hz', 'abc', 'SLAVEOF', 'no one'),
        ('CONFIG', 'SET', 'Slave-Read-Only', 'maybe'),
        ('CONFIG', 'SET', 'HASH-MAX-ZIPLIST-ENTRIES', 'abc'),
        ('CONFIG', 'SET', 'repl-ping-slave-period', '0'),
        ('CONFIG', 'SET', 'repl-backlog-size', '100', 'watchdog-period', '10'),
        ('CONFIG', 'GET', 'repl-backlog-size'),
        ('CONFIG', 'GET', 'watchdog-period'),
        ('CONFIG', 'SET', 'repl-backlog-size', '1mb', 'watchdog-period', '0'),
        ('CONFIG', 'SET', 'hz', '1000'),
        ('CONFIG', 'GET', 'hz'),
        ('CONFIG', 'SET', 'hz', '10'),
        # names and keywords compare as strcasecmp does: ASCII letters only
        ('CONFIG', 'SET', 'tcp-\u212aeepalive', '1'),
        ('CONFIG', 'SET', 'maxmemory', '1\u212a'),
        ('CONFIG', 'SET', 'appendonly', 'YE\u017f'),
        ('CONFIG', 'GET', 'tcp-\u212aeepalive'),
    ]
    assert replies(ours, commands) == replies(ref, commands)


# -- protected parameters ------------------------------------------------------------------


def test_protected_parameters_when_enabled(tmp_path):
    """dir and dbfilename, with enable-protected-configs yes on both servers. Redis moves
    into the directory; this server keeps it as a path, resolved the same way."""
    a, b = tmp_path / 'a', tmp_path / 'b'
    a.mkdir()
    b.mkdir()
    (tmp_path / 'file').write_text('x')
    proc, port = spawn_redis('--dir', str(a), '--enable-protected-configs', 'yes')
    theirs = redis.Redis(port=port, protocol=2)
    srv = EmbeddedServer(enable_protected_configs='yes', save='', dir=str(tmp_path)).start()
    mine = srv.client(protocol=2)
    try:
        commands = [
            ('CONFIG', 'SET', 'dir', str(a)),
            ('CONFIG', 'GET', 'dir'),
            ('CONFIG', 'SET', 'dir', '../b'),
            ('CONFIG', 'GET', 'dir'),
            ('CONFIG', 'SET', 'dir', '..'),
            ('CONFIG', 'GET', 'dir'),
            ('CONFIG', 'SET', 'dir', 'nonexistent'),
            ('CONFIG', 'SET', 'dir', 'file'),
            ('CONFIG', 'SET', 'dir', ''),
            ('CONFIG', 'GET', 'dir'),
            ('CONFIG', 'SET', 'dbfilename', 'x.rdb'),
            ('CONFIG', 'GET', 'dbfilename'),
            ('CONFIG', 'SET', 'dbfilename', 'a/b.rdb'),
            ('CONFIG', 'SET', 'dbfilename', 'a\\b.rdb'),
            ('CONFIG', 'SET', 'dbfilename', ''),
            ('CONFIG', 'GET', 'dbfilename'),
            ('CONFIG', 'SET', 'dbfilename', 'dump.rdb', 'dir', str(a)),
        ]
        assert replies(mine, commands) == replies(theirs, commands)
    finally:
        mine.close()
        srv.stop()
        theirs.close()
        stop(proc)


# -- config files ----------------------------------------------------------------------------

ALIAS_FILE = """\
bind 127.0.0.1
# aliases and old names, as redis.conf files from older versions spell them
slave-read-only no
slave-serve-stale-data no
slave-priority 42
slave-announce-ip 10.0.0.7
slave-announce-port 7000
slave-lazy-flush yes
slave-ignore-maxmemory no
slaveof 127.0.0.1 1
masterauth "s3cret"
repl-ping-slave-period 7
min-slaves-to-write 2
min-slaves-max-lag 4
cluster-slave-validity-factor 3
cluster-slave-no-failover yes
hash-max-ziplist-entries 100
hash-max-ziplist-value 1kb
zset-max-ziplist-entries 50
zset-max-ziplist-value 32
list-max-ziplist-size 5
lua-time-limit 100
# directives Redis 7.0 still reads and ignores
list-max-ziplist-entries 5
list-max-ziplist-value 64
lua-replicate-commands yes
# the first save line replaces the default points, later ones add to them
save 100 1
save 200 2
client-output-buffer-limit slave 1mb 2mb 3 pubsub 0 0 0
notify-keyspace-events KEA
maxmemory-clients 5%
maxmemory 1G
unixsocketperm 0700
oom-score-adj-values "10 20 30"
latency-tracking-info-percentiles 90 99.99
shutdown-on-sigterm force now
hz 1000
repl-backlog-size 100
proc-title-template "{title} {port}"
tls-session-cache-size 100
appendfsync no
"""


def test_config_file_with_aliases_loads_as_in_redis(tmp_path):
    path = tmp_path / 'redis.conf'
    path.write_text(ALIAS_FILE)
    rport, sport = free_port(), free_port()
    rproc = subprocess.Popen(
        [shutil.which('redis-server'), str(path), '--port', str(rport), '--dir', str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sproc = subprocess.Popen(
        [sys.executable, '-m', 'store', str(path), '--port', str(sport), '--dir', str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(rport, rproc)
        wait_for_port(sport, sproc)
        theirs = redis.Redis(port=rport, decode_responses=True).config_get('*')
        mine = redis.Redis(port=sport, decode_responses=True).config_get('*')
    finally:
        stop(rproc)
        stop(sproc)
    assert mine['replicaof'] == mine['slaveof'] == '127.0.0.1 1'
    assert mine['save'] == '100 1 200 2'
    for name, value in theirs.items():
        if name not in ('port', 'dir'):
            assert mine[name] == value, name


# Lines that stop redis-server from starting, with the error it prints last.
BAD_LINES = [
    'databases 0',
    'databases abc',
    'io-threads 129',
    'tcp-backlog -1',
    'cluster-port 65536',
    'socket-mark-id -1',
    'socket-mark-id 4294967296',
    'unixsocketperm 778',
    'unixsocketperm 1000',
    'unixsocketperm -1',
    'unixsocketperm 0x1',
    'supervised maybe',
    'syslog-facility foo',
    'enable-debug-command maybe',
    'daemonize maybe',
    'appendfilename a/b',
    'appendfilename ""',
    'appenddirname a/b',
    'appenddirname ""',
    'replicaof localhost',
    'slaveof localhost 70000',
    'replicaof localhost abc',
    'hz 1 2',
    'save 100',
    'notify-keyspace-events',
    'hash-max-ziplist-value 1 2',
    'oom-score-adj-values 1 2',
    'list-max-ziplist-entries 5 6',
    'lua-replicate-commands',
    'nosuch 1',
    'client-output-buffer-limit normal 1 2',
    'shutdown-on-sigint',
    'dir /nonexistent',
    'dir /etc/passwd',
    'activedefrag yes',
    'maxclients 0',
    'maxmemory-clients 200%',
    'cluster-announce-hostname "a b"',
    'proc-title-template "{nope}"',
]


def redis_start_error(path):
    out = subprocess.run(
        [shutil.which('redis-server'), str(path), '--port', '0'],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert out.returncode != 0
    return [line for line in out.stderr.splitlines() if line][-3:]


@pytest.mark.parametrize('line', BAD_LINES)
def test_config_file_errors_match_redis(tmp_path, line):
    path = tmp_path / 'bad.conf'
    path.write_text(f'# a comment\n\n{line}\n')
    want = redis_start_error(path)
    with pytest.raises(ConfigError) as e:
        Config().load_file(str(path))
    assert str(e.value).split('\n') == want


def test_config_file_blank_multi_argument_lines_load(tmp_path):
    """save, bind and latency-tracking-info-percentiles take no words at all; a lone ""
    is no words either."""
    config = Config()
    config.load_lines(['save', 'latency-tracking-info-percentiles ""', 'bind ""'])
    assert [config.render(n) for n in ('save', 'latency-tracking-info-percentiles', 'bind')] == [
        '',
        '',
        '',
    ]


def test_command_line_options_split_multi_argument_words():
    """Embedding options and `--name value` words reach multi-argument parameters either
    as separate arguments or as one string of words."""
    config = Config()
    config.set_from_args('client-output-buffer-limit', ['pubsub 1mb 2mb 3'])
    config.set_from_args('oom-score-adj-values', ['1', '2', '3'])
    assert config.render('client-output-buffer-limit').endswith('pubsub 1048576 2097152 3')
    assert config.render('oom-score-adj-values') == '1 2 3'


# -- CONFIG REWRITE --------------------------------------------------------------------------

CHANGED = [
    ('maxmemory-clients', '5%'),
    ('maxmemory', '3gb'),
    ('shutdown-on-sigint', 'save now'),
    ('oom-score-adj-values', '1 2 3'),
    ('latency-tracking-info-percentiles', '12.5 99'),
    ('client-output-buffer-limit', 'replica 1mb 2mb 3'),
    ('slave-read-only', 'no'),
    ('repl-ping-slave-period', '3'),
    ('notify-keyspace-events', 'Kx'),
    ('proc-title-template', '{title} "quoted"'),
    ('masterauth', 'p a s s'),
    ('appendfsync', 'always'),
    ('save', '60 5 300 7'),
    ('hz', '33'),
    ('slave-priority', '9'),
]


def test_config_rewrite_round_trips_every_parameter(tmp_path):
    path = tmp_path / 'store.conf'
    path.write_text('slave-priority 1\nlatency-tracking-info-percentiles ""\n')
    with EmbeddedServer(save='', dir=str(tmp_path)) as srv:
        srv.server.config.file = str(path)
        client = srv.client(decode_responses=True)
        for name, value in CHANGED:
            client.config_set(name, value)
        client.config_set('latency-tracking-info-percentiles', '')
        client.execute_command('CONFIG', 'REWRITE')
        before = client.config_get('*')
        client.close()
    text = path.read_text()
    assert text.startswith('replica-priority 9\n') and 'slave-priority' not in text
    assert 'latency-tracking-info-percentiles ""\n' in text
    assert 'client-output-buffer-limit replica 1mb 2mb 3\n' in text
    assert 'maxmemory-clients 5%\n' in text
    loaded = Config()
    loaded.load_file(str(path))
    for name, value in before.items():
        if name != 'port':
            assert loaded.render(name) == value, name


def test_debug_config_rewrite_force_all_writes_defaults_too(tmp_path):
    """DEBUG CONFIG-REWRITE-FORCE-ALL writes every parameter, its default included, and
    the file reads back to the same configuration."""
    path = tmp_path / 'store.conf'
    path.write_text('maxmemory 1mb\n')
    with EmbeddedServer(save='', dir=str(tmp_path), enable_debug_command='yes') as srv:
        srv.server.config.file = str(path)
        client = srv.client(decode_responses=True)
        assert client.execute_command('DEBUG', 'CONFIG-REWRITE-FORCE-ALL') == 'OK'
        before = client.config_get('*')
        client.close()
    text = path.read_text()
    assert text.startswith('maxmemory 0\n')  # the file's line, in place, as set now
    assert 'hz 10\n' in text and 'timeout 0\n' in text  # defaults, written all the same
    loaded = Config()
    loaded.load_file(str(path))
    for name, value in before.items():
        if name != 'port':
            assert loaded.render(name) == value, name


# -- docs/config.md --------------------------------------------------------------------------


def test_docs_cover_every_parameter():
    """Every name and alias appears in docs/config.md, and each inert parameter is listed
    under the reason the table gives for it."""
    with open(os.path.join(os.path.dirname(__file__), '..', 'docs', 'config.md')) as f:
        docs = f.read()
    mentioned = set(re.findall(r'`([a-z_\-]+)`', docs))
    assert set(TABLE) - mentioned == set()
    sections = re.split(r'^### ', docs, flags=re.M)
    for param in PARAMS:
        if param.inert:
            section = next(s for s in sections if s.startswith(f'Inert: {param.inert}'))
            assert f'`{param.name}`' in section, param.name
