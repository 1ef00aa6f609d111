"""MIGRATE (store/commands/migrate.py): the same commands run with redis-server 7.0.15 as
the source and with this server as the source, into one target (a redis-server, then
this server), must give the same replies, leave the same keys behind and make the same
keys arrive; the keys moved are DEL in the source's AOF."""

import pytest
import redis

from conftest import capture_events, free_port, spawn_redis, spawn_store, stop

SETUP = [
    ('SET', 's', 'v'),
    ('HSET', 'h', 'f', 'v'),
    ('RPUSH', 'l', 'a', 'b'),
    ('ZADD', 'z', '1', 'm'),
    ('XADD', 'x', '1-1', 'f', 'v'),
    ('SET', 'ttl', 'v', 'PX', '500000'),
    ('SETBIT', 'bits', '100', '1'),
    ('APPEND', 'bits', 'tail'),  # a string changed in place
    ('SET', 'a', '1'),
]


def migrations(target):
    host, port = '127.0.0.1', str(target)
    closed = str(free_port())
    return [
        ('MIGRATE', host, port, '', '0', '5000', 'KEYS', 's', 'h', 'l', 'nokey'),
        ('MIGRATE', host, port, 's', '0', '5000'),  # moved already: NOKEY
        ('MIGRATE', host, port, 'z', '0', '5000', 'COPY'),
        ('MIGRATE', host, port, 'z', '0', '5000'),  # BUSYKEY on the target
        ('MIGRATE', host, port, 'z', '0', '5000', 'REPLACE'),
        ('MIGRATE', host, port, 'ttl', '3', '5000'),
        ('MIGRATE', host, port, 'x', '0', '0'),  # timeout 0: 1000 ms
        ('MIGRATE', host, port, 'bits', '0', '5000', 'COPY', 'REPLACE'),
        ('MIGRATE', host, port, 'a', '0', '5000', 'AUTH', 'pw'),  # no password there
        ('MIGRATE', host, port, 'a', '0', '5000', 'AUTH2', 'u', 'pw'),
        ('MIGRATE', host, port, 'a', '0', '5000', 'KEYS', 'b'),
        ('MIGRATE', host, port, 'a', '0', '5000', 'FOO'),
        ('MIGRATE', host, port, 'a', '0', '5000', 'AUTH'),
        ('MIGRATE', host, port, 'a', 'x', '5000'),
        ('MIGRATE', host, port, 'a', '0', 'x'),
        ('MIGRATE', host, closed, 'a', '0', '200'),
        ('COMMAND', 'GETKEYS', 'MIGRATE', host, port, '', '0', '5', 'COPY', 'KEYS', 'k1', 'k2'),
        ('COMMAND', 'GETKEYSANDFLAGS', 'MIGRATE', host, port, 'k', '0', '5', 'AUTH', 'p'),
    ]


def contents(c):
    """Every key of databases 0 and 3: type, DUMP (the same encoder both ways) and
    whether it has a TTL."""
    out = {}
    for db in (0, 3):
        c.select(db)
        for key in sorted(c.keys('*')):
            out[(db, key)] = (c.type(key), c.dump(key), c.pttl(key) > 0)
    c.select(0)
    return out


def run(source, target_port):
    source.flushall()
    for cmd in SETUP:
        source.execute_command(*cmd)
    replies = []
    for cmd in migrations(target_port):
        if cmd[0] == 'COMMAND':  # as one name: redis-py would parse it as COMMAND's reply
            cmd = (' '.join(cmd[:2]), *cmd[2:])
        try:
            replies.append(source.execute_command(*cmd))
        except redis.ResponseError as e:
            replies.append(('error', str(e)))
    return replies


@pytest.fixture(params=['redis', 'ours'])
def target(request, tmp_path):
    proc, port = (spawn_redis if request.param == 'redis' else spawn_store)(
        *(['--dir', str(tmp_path)] if request.param == 'ours' else [])
    )
    yield redis.Redis(port=port)
    stop(proc)


def test_migrate_matches_redis(both, target):
    port = target.connection_pool.connection_kwargs['port']
    got = []
    for source in both:
        target.flushall()
        replies = run(source, port)
        got.append((replies, contents(source), contents(target)))
    assert got[0] == got[1]
    replies, left, arrived = got[0]
    assert replies[0] == b'OK' and replies[1] == b'NOKEY'
    assert set(arrived) >= {(0, b's'), (0, b'h'), (0, b'l'), (0, b'z'), (3, b'ttl'), (0, b'x')}
    assert set(left) == {(0, b'a'), (0, b'bits')}  # what failed to move, and the COPY


def test_migrate_events_match_redis(both, target):
    port = str(target.connection_pool.connection_kwargs['port'])
    got = []
    for source in both:
        target.flushall()
        source.flushall()
        source.set('k', 'v')
        source.set('c', 'v')
        cmds = [
            ('MIGRATE', '127.0.0.1', port, 'k', '0', '5000'),
            ('MIGRATE', '127.0.0.1', port, 'c', '0', '5000', 'COPY'),
            ('MIGRATE', '127.0.0.1', port, 'nokey', '0', '5000'),
        ]
        got.append(capture_events(source, cmds, 'KEA'))
    assert got[0] == got[1]


def test_moved_keys_leave_the_aof(tmp_path):
    proc, port = spawn_store('--dir', str(tmp_path), '--appendonly', 'yes')
    tproc, tport = spawn_redis()
    try:
        c = redis.Redis(port=port)
        c.set('moved', 'v')
        c.set('copied', 'v')
        c.set('stays', 'v')
        assert c.migrate('127.0.0.1', tport, 'moved', 0, 5000) == b'OK'
        assert c.migrate('127.0.0.1', tport, 'copied', 0, 5000, copy=True) == b'OK'
        stop(proc)
        proc, _ = spawn_store('--dir', str(tmp_path), '--appendonly', 'yes', port=port)
        c = redis.Redis(port=port)
        assert sorted(c.keys('*')) == [b'copied', b'stays']
        assert redis.Redis(port=tport).mget('moved', 'copied') == [b'v', b'v']
    finally:
        stop(proc)
        stop(tproc)


@pytest.mark.differential
def test_connections_are_cached_and_a_dead_one_is_replaced(both, tmp_path):
    """Redis keeps a MIGRATE connection per target (INFO migrate_cached_sockets) and, when
    the cached one died with its target, reconnects once instead of failing."""
    seen = []
    for source in both:
        proc, port = spawn_store('--dir', str(tmp_path))
        try:
            source.flushall()
            source.set('k1', 'v')
            source.set('k2', 'v')
            before = source.info('stats')['migrate_cached_sockets']
            first = source.execute_command('MIGRATE', '127.0.0.1', port, 'k1', 0, 5000)
            cached = source.info('stats')['migrate_cached_sockets']
        finally:
            stop(proc)
        proc, port = spawn_store('--dir', str(tmp_path), port=port)  # the same target, anew
        try:
            second = source.execute_command('MIGRATE', '127.0.0.1', port, 'k2', 0, 5000)
            moved = redis.Redis(port=port).exists('k2')
        finally:
            stop(proc)
        seen.append((first, cached - before, second, moved))
    assert seen[0] == seen[1] == (b'OK', 1, b'OK', 1)
