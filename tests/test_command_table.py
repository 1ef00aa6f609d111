"""Every command and subcommand of every family (store.commands.MODULES, so a family added
later is checked too) against redis-server 7.0.15: COMMAND INFO's arity, flags, key
positions, ACL categories and tips from the reference's parsed reply, its key specs as
sent, COMMAND DOCS's summary, since and group, and COMMAND GETKEYSANDFLAGS.
"""

import hiredis
import pytest

from rawconn import RawConn
from store.commands import MODULES as FAMILIES

IDS = [m.__name__.rsplit('.', 1)[1] for m in FAMILIES]
# Redis 7.2's CLIENT NO-TOUCH, kept here (CHANGELOG): the one command 7.0 lacks.
NEWER = {'client|no-touch'}


def commands(family):
    """The family's commands and subcommands that redis-server 7.0 has."""
    assert family.COMMANDS, 'a family with no commands'
    return [each for top in family.COMMANDS for each in top.all() if each.name not in NEWER]


@pytest.mark.parametrize('family', FAMILIES, ids=IDS)
def test_command_info_matches_redis(family, ref):
    for cmd in commands(family):
        info = ref.execute_command('COMMAND', 'INFO', cmd.name)
        # redis-py parses COMMAND INFO into a dict keyed by name
        d = info[cmd.name] if isinstance(info, dict) else None
        assert d is not None, cmd.name
        assert d['arity'] == cmd.arity, cmd.name
        assert set(d['flags']) == set(cmd.flags), cmd.name
        keys = (d['first_key_pos'], d['last_key_pos'], d['step_count'])
        assert keys == (cmd.first_key, cmd.last_key, cmd.step), cmd.name
        assert set(d['acl_categories']) == set(cmd.categories), cmd.name
        assert {t.decode() for t in d['tips']} == set(cmd.tips), cmd.name


def _docs(port, name):
    """COMMAND DOCS <name> read raw (redis-py's COMMAND parser does not know DOCS), as a
    dict of the command's fields (RESP2: flat arrays)."""
    with RawConn(port, proto=2) as conn:
        reader = hiredis.Reader()
        reader.feed(conn.cmd('COMMAND', 'DOCS', name))
        fields = reader.gets()[1]
    return dict(zip(fields[0::2], fields[1::2]))


@pytest.mark.parametrize('family', FAMILIES, ids=IDS)
def test_command_docs_match_redis(family, server, redis_ref):
    for cmd in commands(family):
        name = cmd.name.encode()
        ours, theirs = _docs(server.port, name), _docs(redis_ref[1], name)
        for field in (b'summary', b'since', b'group'):
            assert ours.get(field) == theirs.get(field), (cmd.name, field)


def _raw(port, *args):
    with RawConn(port, proto=2) as conn:
        return conn.cmd(*args)


@pytest.mark.parametrize('family', FAMILIES, ids=IDS)
def test_key_specs_match_redis(family, server, redis_ref):
    for cmd in commands(family):
        reply = [_raw(port, 'COMMAND', 'INFO', cmd.name) for port in (server.port, redis_ref[1])]
        specs = []
        for r in reply:
            reader = hiredis.Reader()
            reader.feed(r)
            specs.append(reader.gets()[0][8])
        assert specs[0] == specs[1], cmd.name


GETKEYS = [
    ('LMOVE', 'a', 'b', 'LEFT', 'LEFT'),
    ('SET', 'k', 'v', 'GET'),
    ('SET', 'k', 'v', 'EX', '10'),
    ('BITFIELD', 'k', 'GET', 'u8', '0', 'OVERFLOW', 'SAT'),
    ('BITFIELD', 'k', 'GET', 'u8', '0', 'INCRBY', 'u8', '0', '1'),
    ('BITFIELD', 'k', 'GET', 'u8'),
    ('DEL', 'a', 'b', 'c'),
    ('MSET', 'a', '1', 'b', '2'),
    ('RENAME', 'a', 'b'),
    ('COPY', 'a', 'b'),
    ('SMOVE', 'a', 'b', 'm'),
    ('ZUNIONSTORE', 'd', '2', 'a', 'b', 'WEIGHTS', '1', '2'),
    ('ZINTERCARD', '2', 'a', 'b'),
    ('SINTERCARD', '2', 'a', 'b', 'LIMIT', '1'),
    ('LMPOP', '2', 'a', 'b', 'LEFT'),
    ('BLMPOP', '0', '2', 'a', 'b', 'LEFT'),
    ('XREAD', 'COUNT', '2', 'STREAMS', 'a', 'b', '0', '0'),
    ('XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', 'a', '>'),
    ('SORT', 'a', 'BY', 'x', 'STORE', 'd'),
    ('SORT_RO', 'a'),
    ('GEORADIUS', 'g', '0', '0', '1', 'km', 'STORE', 'd'),
    ('GEOSEARCHSTORE', 'd', 'g', 'FROMLONLAT', '0', '0', 'BYRADIUS', '1', 'km'),
    ('EVAL', 'return 1', '2', 'a', 'b', 'x'),
    ('FCALL_RO', 'f', '1', 'a'),
    ('BITOP', 'AND', 'd', 'a', 'b'),
    ('PFMERGE', 'd', 'a', 'b'),
    ('OBJECT', 'ENCODING', 'a'),
    ('MEMORY', 'USAGE', 'a'),
    ('XGROUP', 'CREATE', 's', 'g', '$'),
    ('EXPIRE', 'a', '10'),
    ('GETEX', 'a', 'PERSIST'),
    ('SPUBLISH', 'ch', 'm'),
    ('WATCH', 'a', 'b'),
]


@pytest.mark.parametrize('command', GETKEYS, ids=[' '.join(c) for c in GETKEYS])
def test_getkeysandflags_match_redis(server, redis_ref, command):
    ours, theirs = (
        _raw(p, 'COMMAND', 'GETKEYSANDFLAGS', *command) for p in (server.port, redis_ref[1])
    )
    assert ours == theirs


def test_command_alone_on_the_gated_path(server, redis_ref):
    """COMMAND without a subcommand (its arity allows it) runs as itself wherever it goes:
    in MULTI, in mixed case, for a user with key rules (the gated path). It used to close
    the connection there, which redis-py's RedisCluster hits on its first connection."""
    for port in (server.port, redis_ref[1]):
        conn = RawConn(port)
        try:
            assert len(hiredis_parse(conn.cmd('Command'))) > 200
            assert conn.cmd('MULTI') == b'+OK\r\n'
            assert conn.cmd('COMMAND') == b'+QUEUED\r\n'
            (table,) = hiredis_parse(conn.cmd('EXEC'))
            assert len(table) > 200
        finally:
            conn.close()


def hiredis_parse(data):
    reader = hiredis.Reader()
    reader.feed(data)
    return reader.gets()
