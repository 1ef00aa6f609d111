"""Every command and subcommand of every family (store.commands.MODULES, so a family added
later is checked too) against redis-server 7.0.15: COMMAND INFO's arity, flags, key
positions, ACL categories and tips from the reference's parsed reply, and COMMAND DOCS's
summary, since and group compared between both servers.
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
