"""DEBUG DIGEST and DEBUG DIGEST-VALUE against redis-server 7.0.15: the same data gives the
same digest on both servers (Redis's suite compares a master's digest with its replica's),
whatever order it was written in."""

import pytest

pytestmark = pytest.mark.differential

FAR = 4102444800000  # 2100-01-01: a deadline both servers keep


def fill_commands():
    """A value of every type and encoding, in two databases, some with a TTL."""
    return [
        ('SELECT', 0),
        ('SET', 'int', '12345'),
        ('SET', 'neg', '-7'),
        ('SET', 'emb', 'hello world'),
        ('SET', 'raw', 'x' * 100),
        ('SET', 'bin', b'\x00\xff\r\n'),
        ('APPEND', 'appended', 'abc'),
        ('SETRANGE', 'ranged', 10, 'z'),
        ('PFADD', 'hll', 'a', 'b', 'c'),
        ('RPUSH', 'list', 'a', 'b', '1', '2', 'a'),
        ('LPUSH', 'biglist', *[f'e{i}' * 20 for i in range(300)]),
        ('SADD', 'intset', 3, 1, 2, -5, 1000000000000),
        ('SADD', 'set', 'c', 'b', 'a', '7'),
        ('ZADD', 'zlp', 1, 'a', 2.5, 'b', -0.0, 'c', '-inf', 'd', 1e17, 'e', 7, 10),
        ('ZADD', 'zsl', *[x for i in range(200) for x in (i / 3, f'm{i}')]),
        ('ZADD', 'zsl', '-0', 'negzero', 'inf', 'top', 0.1, 'tenth'),
        ('HSET', 'hlp', 'f1', 'v1', 'f2', '2', '3', 'v3'),
        ('HSET', 'hht', *[x for i in range(600) for x in (f'f{i}', f'v{i}')]),
        ('XADD', 'stream', '1-1', 'a', '1', 'b', 'two'),
        ('XADD', 'stream', '1-2', 'a', '3', 'c', 'four'),
        ('XADD', 'stream', '5-0', 'x', 'y'),
        ('XDEL', 'stream', '1-2'),
        ('XGROUP', 'CREATE', 'stream', 'g', '0'),
        ('XADD', 'emptystream', '3-3', 'f', 'v'),
        ('XDEL', 'emptystream', '3-3'),
        ('SET', 'ttl', 'v'),
        ('PEXPIREAT', 'ttl', FAR),
        ('PEXPIREAT', 'hlp', FAR),
        ('SELECT', 3),
        ('SET', 'int', '12345'),
        ('RPUSH', 'list', 'a'),
        ('PEXPIREAT', 'list', FAR),
        ('SELECT', 0),
    ]


KEYS = [
    'int',
    'neg',
    'emb',
    'raw',
    'bin',
    'appended',
    'ranged',
    'hll',
    'list',
    'biglist',
    'intset',
    'set',
    'zlp',
    'zsl',
    'hlp',
    'hht',
    'stream',
    'emptystream',
    'ttl',
    'missing',
]


def run(client, commands):
    for cmd in commands:
        client.execute_command(*cmd)


def test_digest_of_every_type_equals_redis(both):
    ours, ref = both
    for c in both:
        run(c, fill_commands())
    digest = [c.execute_command('DEBUG', 'DIGEST') for c in both]
    assert digest[0] == digest[1]
    values = [c.execute_command('DEBUG', 'DIGEST-VALUE', *KEYS) for c in both]
    assert values[0] == values[1]
    assert values[0][-1] == b'0' * 40  # a missing key


def test_digest_of_empty_dataset_is_zeros(both):
    assert [c.execute_command('DEBUG', 'DIGEST') for c in both] == [b'0' * 40] * 2


def test_digest_is_a_status_reply(both_resp):
    ours, ref = both_resp
    for c in both_resp:
        c.set('k', 'v')
    replies = [c.execute_command('DEBUG', 'DIGEST-VALUE', 'k') for c in both_resp]
    assert replies[0] == replies[1]
    assert [c.execute_command('DEBUG', 'DIGEST') for c in both_resp] == [
        ref.execute_command('DEBUG', 'DIGEST')
    ] * 2


def test_digest_ignores_the_order_of_unordered_elements(both):
    ours, ref = both
    ours.sadd('s', 'a', 'b', 'c')
    ours.hset('h', mapping={'x': '1', 'y': '2'})
    ours.zadd('z', {'p': 1, 'q': 2})
    ours.set('k1', 'a')
    ours.set('k2', 'b')
    ref.set('k2', 'b')
    ref.zadd('z', {'q': 2, 'p': 1})
    ref.hset('h', mapping={'y': '2', 'x': '1'})
    ref.sadd('s', 'c', 'b', 'a')
    ref.set('k1', 'a')
    assert ours.execute_command('DEBUG', 'DIGEST') == ref.execute_command('DEBUG', 'DIGEST')
    for key in ('s', 'h', 'z'):
        assert ours.execute_command('DEBUG', 'DIGEST-VALUE', key) == ref.execute_command(
            'DEBUG', 'DIGEST-VALUE', key
        )


def test_digest_changes_with_list_order_and_database(server):
    c = server.client(protocol=2)
    c.flushall()
    c.rpush('l', 'a', 'b')
    ab = c.execute_command('DEBUG', 'DIGEST')
    c.delete('l')
    c.rpush('l', 'b', 'a')
    assert c.execute_command('DEBUG', 'DIGEST') != ab
    c.flushall()
    c.rpush('l', 'a', 'b')
    c.move('l', 1)
    assert c.execute_command('DEBUG', 'DIGEST') != ab
    c.close()
