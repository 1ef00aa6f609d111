"""ACL (store/acl.py, store/commands/acl.py): the same users, rules and commands on this
server and on redis-server 7.0.15 must give the same replies, the same denials (errors
and ACL LOG entries) and the same effects on other connections.

Redis lists the single commands of a rule set (after +@all / -@all and the categories)
in its command dict's hash order, which changes from run to run: those are compared as
sets. Everything else is compared as it is."""

import contextlib
import os
import subprocess
import sys

import pytest
import redis

from conftest import free_port, spawn_redis, spawn_store, stop, wait_until


def run_all(client, commands):
    """Each command's raw reply or ('error', message), on one connection of `client`
    that stays open through error replies (redis-py drops a connection after an
    authentication error, and a new one would start as the default user)."""
    pool = client.connection_pool
    conn = pool.get_connection()
    try:
        out = []
        for cmd in commands:
            conn.send_command(*cmd)
            try:
                out.append(conn.read_response())
            except (redis.ResponseError, redis.AuthenticationError) as e:
                out.append(('error', f'{type(e).__name__}: {e}'))
        return out
    finally:
        pool.release(conn)


@pytest.fixture(scope='module')
def ports():
    ours, ours_port = spawn_store()
    theirs, theirs_port = spawn_redis()
    yield ours_port, theirs_port
    stop(ours)
    stop(theirs)


def _reset(client):
    for name in client.execute_command('ACL', 'USERS'):
        if name != b'default':
            client.execute_command('ACL', 'DELUSER', name)
    client.execute_command(
        'ACL', 'SETUSER', 'default', 'reset', 'on', 'nopass', '~*', '&*', '+@all'
    )
    client.execute_command('ACL', 'LOG', 'RESET')
    client.flushall()


@pytest.fixture
def pair(ports):
    """A RESP2 admin client of each server (ours first), users and log reset."""
    clients = [redis.Redis(port=p, protocol=2) for p in ports]
    for c in clients:
        _reset(c)
    yield clients
    for c in clients:
        _reset(c)
        c.close()


# Commands of one server only: CLIENT NO-TOUCH (Redis 7.2) is this server's.
MISSING = {b'client|no-touch'}
NOT_HERE = tuple(sign + name for name in MISSING for sign in (b'+', b'-'))


def normal(value):
    """A reply with the hash-ordered parts made comparable: command rule strings keep
    +@all/-@all and the categories in order, the single commands as a sorted list
    (without the commands of one server only)."""
    if isinstance(value, list):
        return [normal(v) for v in value]
    if isinstance(value, bytes) and value[:5] in (b'+@all', b'-@all'):
        words = value.split()
        head = [w for w in words if w[1:2] == b'@']
        return head, sorted(w for w in words if w[1:2] != b'@' and w not in NOT_HERE)
    if isinstance(value, bytes) and value.startswith(b'user '):
        start = max(value.find(b' +@all'), value.find(b' -@all'))
        if start > 0 and b'(' not in value:
            return value[:start], normal(value[start + 1 :])
    return value


def both_run(pair, commands):
    got = [run_all(c, commands) for c in pair]
    return [(cmd, normal(g), normal(w)) for cmd, g, w in zip(commands, *got)]


def assert_same(pair, commands):
    for cmd, g, w in both_run(pair, commands):
        assert g == w, f'{cmd!r}: ours {g!r} != redis {w!r}'


def as_user(pair, name, password, protocol=2):
    """A client of each server authenticated as `name`."""
    clients = [
        redis.Redis(port=c.connection_pool.connection_kwargs['port'], protocol=protocol)
        for c in pair
    ]
    for c in clients:
        c.execute_command('AUTH', name, password)
    return clients


def log_entries(client):
    """ACL LOG without what differs between two servers (age, client addresses and
    ids, the parts of the client info this server does not keep alike)."""
    out = []
    for entry in client.execute_command('ACL', 'LOG'):
        e = dict(zip(entry[::2], entry[1::2]))
        info = dict(kv.split(b'=', 1) for kv in e[b'client-info'].split() if b'=' in kv)
        out.append(
            (
                e[b'count'],
                e[b'reason'],
                e[b'context'],
                e[b'object'],
                e[b'username'],
                info[b'user'],
                info[b'cmd'],
                info[b'db'],
                info[b'name'],
            )
        )
    return out


# -- rules ---------------------------------------------------------------------------------

RULES = [
    ('ACL', 'LIST'),
    ('ACL', 'GETUSER', 'default'),
    ('ACL', 'SETUSER', 'u1'),
    ('ACL', 'GETUSER', 'u1'),
    (
        'ACL',
        'SETUSER',
        'u2',
        'on',
        '>p1',
        '~a*',
        '%R~b*',
        '&ch*',
        '+get',
        '+set',
        '+config|get',
        '+select|0',
    ),
    ('ACL', 'GETUSER', 'u2'),
    ('ACL', 'SETUSER', 'u2', '%W~b*', '%RW~c*', '>p2', '>p1', '<p2', 'allchannels'),
    ('ACL', 'GETUSER', 'u2'),
    (
        'ACL',
        'SETUSER',
        'u3',
        'on',
        'nopass',
        '+@all',
        '-get',
        '~*',
        '(+get ~k*)',
        '(+set',
        '%W~w*)',
    ),
    ('ACL', 'GETUSER', 'u3'),
    ('ACL', 'SETUSER', 'u4', '+@all', '-@read'),
    ('ACL', 'SETUSER', 'u5', '+@hash', '-hset', 'skip-sanitize-payload'),
    ('ACL', 'SETUSER', 'u6', '+@read', '+@write', '-@dangerous'),
    ('ACL', 'SETUSER', 'u7', '-@all', '+@pubsub', '+@connection', '-@slow', '+client|id'),
    ('ACL', 'SETUSER', 'u8', '#' + 'a' * 64, 'resetchannels', '&x', '&y', 'sanitize-payload'),
    ('ACL', 'SETUSER', 'u9', 'allcommands', 'allkeys', 'nocommands', '-client', '+client|list'),
    ('ACL', 'LIST'),
    ('ACL', 'USERS'),
    ('ACL', 'GETUSER', 'u4'),
    ('ACL', 'GETUSER', 'u5'),
    ('ACL', 'GETUSER', 'u6'),
    ('ACL', 'GETUSER', 'u7'),
    ('ACL', 'GETUSER', 'u8'),
    ('ACL', 'GETUSER', 'u9'),
    ('ACL', 'SETUSER', 'q1', 'on', '(+get ~"x" +set)', '(+get "~y)'),  # quoted, unbalanced
    ('ACL', 'GETUSER', 'q1'),
    ('ACL', 'SETUSER', 'u3', 'clearselectors', 'reset'),
    ('ACL', 'GETUSER', 'u3'),
    ('ACL', 'GETUSER', 'nobody'),
    ('ACL', 'DELUSER', 'u1', 'u2', 'nobody'),
    ('ACL', 'DELUSER', 'u3', 'default'),
    ('ACL', 'USERS'),
]

BAD_RULES = [
    ('ACL', 'SETUSER', 'bad', '%~'),  # a selector naming no permission
    ('ACL', 'SETUSER', 'bad', '%'),
    ('ACL', 'SETUSER', 'bad', 'bogus'),
    ('ACL', 'SETUSER', 'bad', '+nosuch'),
    ('ACL', 'SETUSER', 'bad', '-nosuch'),
    ('ACL', 'SETUSER', 'bad', '+@nosuch'),
    ('ACL', 'SETUSER', 'bad', '~*', '~a'),
    ('ACL', 'SETUSER', 'bad', 'allkeys', '%R~a'),
    ('ACL', 'SETUSER', 'bad', '&*', '&a'),
    ('ACL', 'SETUSER', 'bad', '<nopw'),
    ('ACL', 'SETUSER', 'bad', '!' + 'b' * 64),
    ('ACL', 'SETUSER', 'bad', '#abc'),
    ('ACL', 'SETUSER', 'bad', '#' + 'A' * 64),
    ('ACL', 'SETUSER', 'bad', '+config|get|x'),
    ('ACL', 'SETUSER', 'bad', '+config|'),
    ('ACL', 'SETUSER', 'bad', '+config|nosuch'),
    ('ACL', 'SETUSER', 'bad', '+select|'),
    ('ACL', 'SETUSER', 'bad', '-select|0'),
    ('ACL', 'SETUSER', 'bad', '(+get'),
    ('ACL', 'SETUSER', 'bad', 'on', '(+get', '~a'),
    ('ACL', 'SETUSER', 'bad', '(+get nosuch)'),
    ('ACL', 'SETUSER', 'bad', '%X~a'),
    ('ACL', 'SETUSER', 'bad', '%RR~a'),
    ('ACL', 'SETUSER', 'bad', '~a b'),
    ('ACL', 'SETUSER', 'bad user', 'on'),
    ('ACL', 'SETUSER', 'bad', 'on', '+get', 'bogus'),  # nothing applied: no user made
    ('ACL', 'USERS'),
    ('ACL', 'SETUSER', 'bad', ''),
    ('ACL', 'GETUSER', 'bad'),
]

COMMANDS = [
    ('ACL', 'WHOAMI'),
    ('ACL', 'CAT'),
    ('ACL', 'CAT', 'nosuch'),
    ('ACL', 'CAT', 'a', 'b'),
    ('ACL', 'GENPASS', '0'),
    ('ACL', 'GENPASS', '5000'),
    ('ACL', 'GENPASS', 'x'),
    ('ACL', 'GENPASS', '1', '2'),
    ('ACL', 'LOG', 'x'),
    ('ACL', 'LOG', '-1'),
    ('ACL', 'LOG', '1', '2'),
    ('ACL', 'LOAD'),
    ('ACL', 'SAVE'),
    ('ACL', 'HELP'),
    ('ACL', 'NOSUCH'),
    ('ACL', 'GETUSER'),
    ('ACL', 'DRYRUN', 'nobody', 'get', 'x'),
    ('ACL', 'DRYRUN', 'default', 'nosuch'),
    ('ACL', 'DRYRUN', 'default', 'get', 'x'),
    ('ACL', 'DRYRUN', 'default', 'set', 'x'),  # the command's arity is checked first
    ('ACL', 'DRYRUN', 'default', 'set'),
    ('ACL', 'DRYRUN', 'default', 'get', 'x', 'y'),
    ('ACL', 'DRYRUN', 'default', 'config', 'get'),
    ('ACL', 'DRYRUN', 'default', 'config'),
    ('AUTH', 'pw'),
    ('AUTH', 'nosuch', 'pw'),
    ('AUTH', 'default', 'anything'),
    ('CLIENT', 'KILL', 'USER', 'nosuch'),
]


def test_rules_are_described_as_redis_describes_them(pair):
    assert_same(pair, RULES)


def test_bad_rules_get_redis_errors_and_change_nothing(pair):
    assert_same(pair, BAD_RULES)


def test_acl_subcommands_and_their_errors(pair):
    assert_same(pair, COMMANDS)
    for c in pair:
        assert len(c.execute_command('ACL', 'GENPASS')) == 64
        assert len(c.execute_command('ACL', 'GENPASS', '5')) == 2
    for category in ('hash', 'pubsub', 'admin', 'scripting', 'keyspace'):
        ours, theirs = (set(c.execute_command('ACL', 'CAT', category)) for c in pair)
        assert ours - MISSING == theirs - MISSING, category


def test_getuser_in_resp3(ports):
    clients = [redis.Redis(port=p, protocol=3) for p in ports]
    cmds = [
        ('ACL', 'SETUSER', 'r3', 'on', '>pw', '~k*', '+get', '(+set ~w*)'),
        ('ACL', 'GETUSER', 'r3'),
        ('ACL', 'GETUSER', 'default'),
        ('ACL', 'DELUSER', 'r3'),
    ]
    replies = []
    for c in clients:
        conn = c.connection_pool.get_connection()
        out = []
        for cmd in cmds:
            conn.send_command(*cmd)
            out.append(conn.read_response())
        c.connection_pool.release(conn)
        replies.append(out)
        c.close()
    assert replies[0] == replies[1]


# -- denials -------------------------------------------------------------------------------

RESTRICTED = (
    'on',
    '>pw',
    '~k*',
    '%R~r*',
    '%W~w*',
    '&ch*',
    '+@string',
    '+@connection',
    '-@dangerous',
    '+select|0',
    '+del',
    '+config|get',
    '+eval',
    '+multi',
    '+exec',
    '+subscribe',
    '+psubscribe',
    '+publish',
    '+client|list',
)

DENIALS = [
    ('GET', 'k1'),
    ('GET', 'x1'),
    ('GET', 'r1'),
    ('SET', 'r1', 'v'),
    ('SET', 'w1', 'v'),
    ('GET', 'w1'),
    ('APPEND', 'w1', 'v'),  # read and write: needs both
    ('MSET', 'k1', 'v', 'x1', 'v'),
    ('MGET', 'k1', 'r1', 'w1'),
    ('HSET', 'k1', 'f', 'v'),
    ('DEL', 'k1', 'x1'),
    ('SELECT', '0'),
    ('SELECT', '1'),
    ('CONFIG', 'GET', 'maxmemory'),
    ('CONFIG', 'SET', 'maxmemory', '0'),
    ('KEYS', '*'),
    ('FLUSHALL',),
    ('PUBLISH', 'ch1', 'm'),
    ('PUBLISH', 'other', 'm'),
    ('ACL', 'WHOAMI'),
    ('PING',),
    ('COPY', 'k1', 'w2'),
    ('COPY', 'k1', 'x2'),
]


def test_commands_keys_and_channels_are_denied_as_in_redis(pair):
    for c in pair:
        c.execute_command('ACL', 'SETUSER', 'limited', *RESTRICTED)
    users = as_user(pair, 'limited', 'pw')
    got = [run_all(u, DENIALS) for u in users]
    for cmd, g, w in zip(DENIALS, *got):
        assert g == w, f'{cmd!r}: ours {g!r} != redis {w!r}'
    assert log_entries(pair[0]) == log_entries(pair[1])
    assert log_entries(pair[0])  # the denials were logged
    for u in users:
        u.close()


FAST = ('on', '>pw', '~*', '&*', '+@all', '-@dangerous', '-config|set', '+config|get')


def test_a_user_with_every_key_denied_some_commands(pair):
    """Every key and channel, some commands denied: the allowed ones run without checks
    (a table of its own), the others are denied as Redis denies them, also when the
    rules change while the user is connected, and in a pipeline."""
    for c in pair:
        c.execute_command('ACL', 'SETUSER', 'app', *FAST)
    cmds = [
        ('SET', 'a', '1'),
        ('GET', 'a'),
        ('KEYS', '*'),
        ('FLUSHALL',),
        ('CONFIG', 'GET', 'maxmemory'),
        ('CONFIG', 'SET', 'maxmemory', '0'),
        ('CLIENT', 'ID'),
        ('AUTH', 'app', 'pw'),
        ('MULTI',),
        ('INCR', 'n'),
        ('SWAPDB', '0', '1'),
        ('EXEC',),
        ('EVAL', "return redis.call('KEYS', '*')", 0),
        ('EVAL', "return redis.call('GET', 'a')", 0),
    ]
    users = as_user(pair, 'app', 'pw')
    outcome = []
    for admin, user in zip(pair, users):
        out = run_all(user, cmds)
        out[6] = type(out[6])  # the client id
        admin.execute_command('ACL', 'SETUSER', 'app', '-get', '+keys')
        out += run_all(user, [('GET', 'a'), ('KEYS', 'a'), ('SET', 'b', '2')])
        pipe = user.pipeline(transaction=False)
        for cmd in (('SET', 'c', '3'), ('GET', 'c'), ('FLUSHDB',), ('INCR', 'n')):
            pipe.execute_command(*cmd)
        out.append([str(r) for r in pipe.execute(raise_on_error=False)])
        outcome.append(out)
        user.close()
    assert outcome[0] == outcome[1]
    assert log_entries(pair[0]) == log_entries(pair[1])


def test_sort_by_and_get_need_every_key(pair):
    cmds = [
        ('RPUSH', 'k:list', '3', '1', '2'),
        ('SORT', 'k:list'),
        ('SORT', 'k:list', 'BY', 'nosort'),
        ('SORT', 'k:list', 'BY', 'w_*'),
        ('SORT', 'k:list', 'GET', '#'),
        ('SORT_RO', 'k:list', 'GET', 'k:*'),
    ]
    outcome = []
    for rules in (('~k:*',), ('~*',), ('%W~*', '~k:*'), ('~k:*', '(~* +@all)')):
        for c in pair:
            c.execute_command('ACL', 'SETUSER', 'sorter', 'reset', 'on', '>pw', '+@all', *rules)
        users = as_user(pair, 'sorter', 'pw')
        outcome.append([run_all(u, cmds) for u in users])
        for u in users:
            u.close()
    for rules_outcome in outcome:
        assert rules_outcome[0] == rules_outcome[1]
    assert any(isinstance(r, tuple) for r in outcome[0][0])  # denied under ~k:* alone


def test_dryrun_names_the_command_key_or_channel(pair):
    for c in pair:
        c.execute_command('ACL', 'SETUSER', 'limited', *RESTRICTED)
    assert_same(pair, [('ACL', 'DRYRUN', 'limited', *cmd) for cmd in DENIALS])
    assert log_entries(pair[0]) == log_entries(pair[1]) == []  # a dry run logs nothing


def test_auth_log_and_grouping(pair):
    for c in pair:
        c.execute_command('ACL', 'SETUSER', 'alice', 'on', '>pw', '+@all', '~*')
        c.execute_command('ACL', 'SETUSER', 'off-user', 'off', '>pw', '+@all', '~*')
    cmds = [
        ('AUTH', 'alice', 'wrong'),
        ('auth', 'alice', 'wrong'),
        ('AUTH', 'alice', 'wrong'),
        ('AUTH', 'nobody', 'x'),
        ('AUTH', 'off-user', 'pw'),
        ('HELLO', '3', 'AUTH', 'alice', 'wrong'),
        ('AUTH', 'alice', 'pw'),
        ('ACL', 'WHOAMI'),
        ('ACL', 'LOG', '2'),
    ]
    clients = [redis.Redis(port=c.connection_pool.connection_kwargs['port']) for c in pair]
    got = [run_all(c, cmds[:-1]) for c in clients]
    assert got[0] == got[1]
    assert log_entries(pair[0]) == log_entries(pair[1])
    # AUTH and auth are two objects: the two AUTHs merge
    assert [e[0] for e in log_entries(pair[0])] == [1, 1, 1, 2, 1]
    for c in clients:
        c.close()


def test_multi_denials_abort_exec_and_rules_are_checked_again_at_exec(pair):
    for c in pair:
        c.execute_command('ACL', 'SETUSER', 'tx', *RESTRICTED)
    results = []
    for admin, (user,) in zip(pair, zip(as_user(pair, 'tx', 'pw'))):
        out = run_all(user, [('MULTI',), ('SET', 'k1', 'v'), ('GET', 'x1'), ('EXEC',)])
        out += run_all(user, [('MULTI',), ('SET', 'k1', 'v'), ('GET', 'w1'), ('GET', 'k1')])
        # the rules change while the transaction waits
        admin.execute_command('ACL', 'SETUSER', 'tx', 'resetkeys', '~w*', '-get')
        out += run_all(user, [('EXEC',)])
        results.append(out)
        user.close()
    assert results[0] == results[1]
    assert log_entries(pair[0]) == log_entries(pair[1])


def test_scripts_run_with_the_callers_permissions(pair):
    for c in pair:
        c.execute_command('ACL', 'SETUSER', 'lua', *RESTRICTED)
    cmds = [
        ('EVAL', "return redis.call('GET', KEYS[1])", 1, 'k1'),
        ('EVAL', "return redis.call('GET', KEYS[1])", 1, 'x1'),
        ('EVAL', "return redis.call('GET', 'x1')", 0),
        ('EVAL', "return redis.call('HSET', 'k1', 'f', 'v')", 0),
        ('EVAL', "return redis.call('PUBLISH', 'zz', 'm')", 0),
        ('EVAL', "return redis.pcall('FLUSHALL')", 0),
        (
            'EVAL',
            "return {redis.acl_check_cmd('GET', 'k1'), redis.acl_check_cmd('GET', 'x1'),"
            " redis.acl_check_cmd('HSET', 'k', 'f', 'v')}",
            0,
        ),
        ('EVAL', "return redis.acl_check_cmd('NOSUCH')", 0),
        ('EVAL', "return redis.acl_check_cmd('config', 'get', 'x')", 0),
        ('EVAL', "return redis.acl_check_cmd('config', 'set', 'x', 'y')", 0),
    ]
    users = as_user(pair, 'lua', 'pw')
    got = [run_all(u, cmds) for u in users]
    for cmd, g, w in zip(cmds, *got):
        assert g == w, f'{cmd!r}: ours {g!r} != redis {w!r}'
    assert log_entries(pair[0]) == log_entries(pair[1])
    for u in users:
        u.close()


def test_subscribers_lose_revoked_channels(pair):
    for c in pair:
        c.execute_command('ACL', 'SETUSER', 'sub', 'on', '>pw', '&news.*', '&alerts', '+@all', '~*')
    outcome = []
    for admin in pair:
        port = admin.connection_pool.connection_kwargs['port']
        user = redis.Redis(port=port, username='sub', password='pw')
        replies = run_all(user, [('SUBSCRIBE', 'other')])
        ps = user.pubsub()
        ps.subscribe('alerts')
        pattern = user.pubsub()
        errors = []
        for pat in ('news.*', 'news.x*'):
            try:
                pattern.psubscribe(pat)
                pattern.get_message(timeout=5)
            except redis.ResponseError as e:
                errors.append(str(e))
        wait_until(lambda ps=ps: ps.get_message(timeout=0.1) is not None, 'the subscription')
        before = len(admin.client_list(_type='pubsub'))
        admin.execute_command('ACL', 'SETUSER', 'sub', 'resetchannels', '&news.*')
        wait_until(
            lambda a=admin, n=before: len(a.client_list(_type='pubsub')) == n - 1,
            'the subscriber of a revoked channel to be closed',
        )
        after = len(admin.client_list(_type='pubsub'))
        outcome.append((replies, errors, before, after))
        for c in (ps, pattern, user):
            c.close()
    assert outcome[0] == outcome[1]


def test_subscribers_are_closed_when_allchannels_is_revoked(pair):
    """A user losing allchannels (resetchannels) loses its pattern subscribers at once:
    an empty list of channels does not cover what allchannels allowed."""
    for c in pair:
        c.execute_command('ACL', 'SETUSER', 'psuser', 'on', '>pspass', 'allchannels', '+@all')
    outcome = []
    for admin, user in zip(pair, as_user(pair, 'psuser', 'pspass')):
        user.execute_command('CLIENT', 'SETNAME', 'deathrow')
        ps = user.pubsub()
        ps.psubscribe('foo')
        wait_until(lambda ps=ps: ps.get_message(timeout=0.1) is not None, 'the subscription')
        admin.execute_command('ACL', 'SETUSER', 'psuser', 'resetchannels')
        outcome.append(b'deathrow' in admin.execute_command('CLIENT', 'LIST'))
        ps.close()
        user.close()
    assert outcome == [False, False]


def test_deleting_a_user_closes_its_connections(pair):
    outcome = []
    for admin in pair:
        port = admin.connection_pool.connection_kwargs['port']
        admin.execute_command('ACL', 'SETUSER', 'gone', 'on', '>pw', '+@all', '~*')
        user = redis.Redis(port=port, username='gone', password='pw', single_connection_client=True)
        user.ping()
        names = [c['user'] for c in admin.client_list()]
        killed = run_all(admin, [('CLIENT', 'KILL', 'USER', 'gone')])
        user.execute_command('AUTH', 'gone', 'pw')  # redis-py reconnects
        deleted = admin.execute_command('ACL', 'DELUSER', 'gone')
        wait_until(
            lambda a=admin: all(c['user'] != 'gone' for c in a.client_list()),
            'the deleted user\'s connection to close',
        )
        try:
            user.execute_command('AUTH', 'gone', 'pw')
            after = 'authenticated'
        except (redis.ResponseError, redis.AuthenticationError) as e:
            after = str(e)
        outcome.append((sorted(names), killed, deleted, after))
        user.close()
    assert outcome[0] == outcome[1]
    assert outcome[0][3].startswith('invalid username-password pair')


def test_default_user_password_and_requirepass(pair):
    outcome = []
    for admin in pair:
        port = admin.connection_pool.connection_kwargs['port']
        out = run_all(
            admin, [('CONFIG', 'SET', 'requirepass', 'secret'), ('ACL', 'GETUSER', 'default')]
        )
        fresh = redis.Redis(port=port, protocol=2)  # no HELLO before AUTH
        replies = run_all(
            fresh,
            [
                ('GET', 'x'),
                ('AUTH', 'wrong'),
                ('AUTH', 'secret'),
                ('GET', 'x'),
                ('RESET',),
                ('GET', 'x'),
                ('HELLO', '2', 'AUTH', 'default', 'secret'),
                ('ACL', 'WHOAMI'),
            ],
        )
        replies[6] = replies[6][:6]  # HELLO's server, version and proto (not the client id)
        out += replies
        out += run_all(
            admin,
            [
                ('ACL', 'SETUSER', 'default', 'nopass'),
                ('CONFIG', 'GET', 'requirepass'),
                ('CONFIG', 'SET', 'requirepass', ''),
                ('ACL', 'GETUSER', 'default'),
            ],
        )
        out += run_all(redis.Redis(port=port, protocol=2), [('GET', 'x')])
        outcome.append(out)
        fresh.close()
    assert outcome[0] == outcome[1]


def test_client_list_shows_the_user_and_reset_returns_to_default(pair):
    for admin in pair:
        admin.execute_command('ACL', 'SETUSER', 'bob', 'on', '>pw', '+@all', '~*', '&*')
    users = as_user(pair, 'bob', 'pw')
    seen = []
    for u in users:
        mine = u.client_info()
        u.execute_command('RESET')
        seen.append((mine['user'], u.client_info()['user'], u.execute_command('ACL', 'WHOAMI')))
        u.close()
    assert seen[0] == seen[1] == ('bob', 'default', b'default')


# -- files ----------------------------------------------------------------------------------

BOTH = (spawn_store, spawn_redis)  # this server, then redis-server


@contextlib.contextmanager
def started(spawn, *args, conf=None):
    """A RESP2 client of a server `spawn` starts (with `args`, a config file `conf`),
    which is stopped after."""
    proc, port = spawn(*args, conf=conf)
    client = redis.Redis(port=port, protocol=2)
    try:
        yield client
    finally:
        client.close()
        stop(proc)


def test_acl_file_save_and_load(tmp_path):
    outcome = []
    for spawn in BOTH:
        path = tmp_path / f'{spawn.__name__}.acl'
        path.write_text('user default on nopass ~* &* +@all\nuser a on >pw ~k* +get\n')
        with started(spawn, '--aclfile', str(path)) as c:
            out = [normal(c.execute_command('ACL', 'LIST'))]
            out += run_all(
                c, [('ACL', 'SETUSER', 'b', 'on', '>x', '~*', '+@read'), ('ACL', 'SAVE')]
            )
            saved = path.read_text()
            path.write_text(saved + 'user c on nopass bogus\nuser a on\nnot-a-user\n')
            out += [normal(v) for v in run_all(c, [('ACL', 'LOAD'), ('ACL', 'USERS')])]
            path.write_text(saved.replace('user b', 'user b2'))
            out += [normal(v) for v in run_all(c, [('ACL', 'LOAD'), ('ACL', 'LIST')])]
            out.append(normal(saved.strip().split('\n')))
        outcome.append([str(v).replace(str(path), 'PATH') for v in out])
    assert outcome[0] == outcome[1]


def test_a_relative_acl_file_is_in_dir(tmp_path):
    """aclfile user.acl is read from and written to `dir`, where Redis (which chdirs
    there) finds it."""
    outcome = []
    for spawn in BOTH:
        data = tmp_path / spawn.__name__
        data.mkdir()
        (data / 'user.acl').write_text(
            'user default on nopass ~* &* +@all\nuser bob on >bob +@set\n'
        )
        with started(spawn, '--dir', str(data), '--aclfile', 'user.acl') as c:
            users = c.execute_command('ACL', 'USERS')
            c.execute_command('ACL', 'SETUSER', 'carol', 'on', 'nopass')
            saved = c.execute_command('ACL', 'SAVE')
        outcome.append((users, saved, 'user carol' in (data / 'user.acl').read_text()))
    assert outcome[0] == outcome[1] == ([b'bob', b'default'], b'OK', True)


def test_users_from_the_config_file(tmp_path):
    outcome = []
    for spawn in BOTH:
        conf = tmp_path / f'{spawn.__name__}.conf'
        conf.write_text(
            'user default on >adminpw ~* &* +@all\n'
            'user app on >apppw ~app:* +@read +@write (~tmp:* +get)\n'
        )
        with started(spawn, conf=conf) as c:
            out = run_all(
                c,
                [
                    ('GET', 'x'),
                    ('AUTH', 'app', 'apppw'),
                    ('SET', 'app:1', 'v'),
                    ('SET', 'other', 'v'),
                    ('GET', 'tmp:1'),
                    ('SET', 'tmp:1', 'v'),
                    ('AUTH', 'adminpw'),
                    ('ACL', 'LIST'),
                ],
            )
        outcome.append([normal(v) for v in out])
    assert outcome[0] == outcome[1]


def test_a_bad_user_line_stops_the_start(tmp_path):
    conf = tmp_path / 'bad.conf'
    conf.write_text('user app on +nosuch\n')
    port = free_port()
    out = subprocess.run(
        [sys.executable, '-m', 'store', str(conf), '--port', str(port), '--save', ''],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=os.getcwd(),
    )
    assert out.returncode != 0
    assert "Error loading ACL rule '+nosuch' for the user named 'app'" in out.stdout + out.stderr


def test_config_rewrite_writes_the_users(tmp_path):
    files = []
    for spawn in BOTH:
        conf = tmp_path / f'{spawn.__name__}.conf'
        conf.write_text(
            '# users\nuser old on >pw ~* +@all\nuser gone off\nmaxmemory-policy allkeys-lru\n'
        )
        with started(spawn, conf=conf) as c:
            c.execute_command('ACL', 'SETUSER', 'new', 'on', 'nopass', '~k*', '+get', '(+set ~w*)')
            c.execute_command('ACL', 'DELUSER', 'gone')
            assert c.execute_command('CONFIG', 'REWRITE') == b'OK'
        text = conf.read_text()
        with started(spawn, conf=conf) as c:  # the same users after a restart from it
            users = normal(c.execute_command('ACL', 'LIST'))
        lines = [normal(line.encode()) for line in text.split('\n') if line.startswith('user ')]
        files.append((text.split('\n')[:2], lines, users))
    assert files[0] == files[1]


def test_users_from_the_command_line():
    lists = []
    for spawn in BOTH:
        with started(
            spawn, '--user', 'cli', 'on', '>pw', '~k*', '+@read', '--user', 'b', 'off'
        ) as c:
            lists.append(normal(c.execute_command('ACL', 'LIST')))
    assert lists[0] == lists[1]
