"""The generic (keyspace) commands on every value type: TYPE, EXISTS, DEL/UNLINK, OBJECT
ENCODING and its conversions, COPY, RENAME/RENAMENX, MOVE, SWAPDB, EXPIRE/PERSIST/TTL,
DUMP/RESTORE (with the encoding Redis re-derives on load), SCAN ... TYPE, RANDOMKEY, their
keyspace events, WATCH, and clients blocked on a key that one of them writes.

Differential against redis-server in RESP2 and RESP3. DUMP payloads are each server's own
format (ours is not RDB), so a DUMP is only ever RESTOREd into the server that made it and
the results are compared."""

import pytest
import redis

from conftest import (
    WAIT,
    assert_same,
    assert_same_events,
    assert_ttl,
    capture_events,
    now_ms,
    run_all,
)
from rawconn import RawConn
from store.persistence.rdb_blobs import listpack
from store.rdb import dump_payload, rdb_len, rdb_string

LIMITS = (
    'hash-max-listpack-entries',
    'hash-max-listpack-value',
    'set-max-intset-entries',
    'zset-max-listpack-entries',
    'zset-max-listpack-value',
)
DEFAULTS = {
    'hash-max-listpack-entries': '512',
    'hash-max-listpack-value': '64',
    'set-max-intset-entries': '512',
    'zset-max-listpack-entries': '128',
    'zset-max-listpack-value': '64',
}
LONG = 'x' * 100

# One key of every type and encoding (with the default thresholds).
VALUES = [
    ('SET', 'str', 'v'),
    ('SET', 'num', '12'),
    ('HSET', 'h_lp', 'f1', 'v1', 'f2', 'v2', 'f3', '3'),
    ('HSET', 'h_ht', 'f1', 'v1', 'long', LONG),
    ('RPUSH', 'l', 'a', 'b', 'c', '1'),
    ('SADD', 's_int', '3', '1', '-2'),
    ('SADD', 's_ht', 'a', 'b', '1'),
    ('ZADD', 'z_lp', '1', 'a', '2', 'b', '-inf', 'c'),
    ('ZADD', 'z_sl', '1', LONG, '2', 'b'),
    ('XADD', 'st', '1-1', 'f', 'v'),
]
KEYS = [cmd[1] for cmd in VALUES]


@pytest.fixture(autouse=True)
def default_limits(server, redis_ref):
    """Every test leaves the shared servers' thresholds as it found them (the defaults)."""
    yield
    ours = server.client(protocol=2)
    theirs = redis.Redis(*redis_ref, protocol=2)
    for c in (ours, theirs):
        for name, value in DEFAULTS.items():
            c.config_set(name, value)
        c.close()


def assert_pttl(client, key, ms, since_ms):
    """PTTL of `key`, given `ms` to live at some moment after `since_ms`: at most `ms`,
    and at least what is left once the time that has since passed is taken off."""
    pttl = client.pttl(key)
    assert since_ms + ms - now_ms() <= pttl <= ms, (key, pttl)


def set_limits(both, **limits):
    """CONFIG SET thresholds (hash_max_listpack_entries=2, ...) on both servers."""
    for c in both:
        for name, value in limits.items():
            assert c.config_set(name.replace('_', '-'), value)


def populate(both):
    for c in both:
        run_all(c, VALUES)


def contents(c, key):
    """A key's type, encoding and value as a comparable tuple (hash fields in their
    order for a listpack, sorted for a hashtable, whose order is the server's own)."""
    kind = c.type(key)
    kind = kind.decode() if isinstance(kind, bytes) else kind
    if kind == 'none':
        return ('none',)
    enc = c.object('encoding', key)
    if kind == 'string':
        val = c.get(key)
    elif kind == 'hash':
        pairs = c.execute_command('HGETALL', key)
        pairs = list(pairs.items()) if isinstance(pairs, dict) else pairs
        val = sorted(pairs) if enc in ('hashtable', b'hashtable') else pairs
    elif kind == 'list':
        val = c.lrange(key, 0, -1)
    elif kind == 'set':
        val = sorted(c.smembers(key))
    elif kind == 'zset':
        val = c.zrange(key, 0, -1, withscores=True)
    else:
        val = c.xrange(key)
    return (kind, enc, val)


def assert_same_contents(both, keys, db=0):
    ours, theirs = both
    for c in both:
        c.select(db)
    try:
        for key in keys:
            assert contents(ours, key) == contents(theirs, key), key
    finally:
        for c in both:
            c.select(0)


# -- TYPE, EXISTS, DEL, UNLINK, OBJECT ENCODING --------------------------------------------


def test_type_exists_del_unlink_every_type(both_resp):
    populate(both_resp)
    cmds = [('TYPE', k) for k in KEYS]
    cmds += [('OBJECT', 'ENCODING', k) for k in KEYS]
    cmds += [('OBJECT', 'REFCOUNT', k) for k in KEYS]
    cmds += [('OBJECT', 'FREQ', k) for k in KEYS]
    cmds += [('EXISTS', *KEYS), ('EXISTS', 'h_lp', 'h_lp', 'nokey'), ('TOUCH', *KEYS)]
    cmds += [('DEL', 'h_lp', 'l', 's_int', 'z_lp', 'nokey'), ('UNLINK', 'h_ht', 's_ht', 'z_sl')]
    cmds += [('TYPE', k) for k in KEYS]
    cmds += [('EXISTS', *KEYS), ('DBSIZE',)]
    assert_same(both_resp, cmds)


def test_object_encoding_conversions(both_resp):
    """Each aggregate's encoding and when it converts, under the thresholds CONFIG SET
    gives; a conversion is for good (never back when the value shrinks)."""
    set_limits(
        both_resp,
        hash_max_listpack_entries=3,
        hash_max_listpack_value=8,
        set_max_intset_entries=3,
        zset_max_listpack_entries=3,
        zset_max_listpack_value=8,
    )
    enc = lambda k: ('OBJECT', 'ENCODING', k)
    cmds = [
        # hash: by number of fields, by field or value length, never back
        ('HSET', 'h1', 'a', '1', 'b', '2', 'c', '3'),
        enc('h1'),
        ('HSET', 'h1', 'd', '4'),
        enc('h1'),
        ('HDEL', 'h1', 'a', 'b', 'c'),
        enc('h1'),
        ('HSET', 'h2', 'a', '12345678'),
        enc('h2'),
        ('HSET', 'h2', 'b', '123456789'),
        enc('h2'),
        ('HSET', 'h3', '123456789', 'v'),
        enc('h3'),
        ('HSETNX', 'h4', 'f', LONG),
        enc('h4'),
        ('HINCRBY', 'h5', 'f', '1'),
        enc('h5'),
        # list: always a quicklist
        ('RPUSH', 'l1', 'a'),
        enc('l1'),
        ('RPUSH', 'l1', LONG, *'bcdefgh'),
        enc('l1'),
        # set: an intset while all members are integers and few
        ('SADD', 's1', '1', '2', '3'),
        enc('s1'),
        ('SADD', 's1', '4'),
        enc('s1'),
        ('SREM', 's1', '1', '2', '3'),
        enc('s1'),
        ('SADD', 's2', '-9223372036854775808', '9223372036854775807'),
        enc('s2'),
        ('SADD', 's2', '9223372036854775808'),
        enc('s2'),
        ('SADD', 's3', '007'),
        enc('s3'),
        ('SADD', 's4', '1', 'a'),
        enc('s4'),
        ('SADD', 's5', ' 1'),
        enc('s5'),
        # sorted set: by number of members, by member length (not by score)
        ('ZADD', 'z1', '1', 'a', '2', 'b', '3', 'c'),
        enc('z1'),
        ('ZADD', 'z1', '4', 'd'),
        enc('z1'),
        ('ZREM', 'z1', 'a', 'b', 'c'),
        enc('z1'),
        ('ZADD', 'z2', '1e300', '12345678'),
        enc('z2'),
        ('ZADD', 'z2', '1', '123456789'),
        enc('z2'),
        ('ZINCRBY', 'z3', '1', LONG),
        enc('z3'),
        # thresholds raised again: converted values stay converted
    ]
    assert_same(both_resp, cmds)
    set_limits(both_resp, **{n.replace('-', '_'): v for n, v in DEFAULTS.items()})
    assert_same(both_resp, [enc(k) for k in ('h1', 'h2', 's1', 's2', 'z1', 'z2', 'l1')])


# -- COPY ---------------------------------------------------------------------------------


def test_copy_every_type(both_resp):
    populate(both_resp)
    cmds = [('COPY', k, k + '_c') for k in KEYS]
    cmds += [('COPY', k, k, 'DB', '1') for k in KEYS]
    cmds += [('COPY', 'h_lp', 'l', 'REPLACE'), ('COPY', 's_int', 'z_lp'), ('COPY', 'no', 'x')]
    assert_same(both_resp, cmds)
    copies = [k + '_c' for k in KEYS]
    assert_same_contents(both_resp, KEYS + copies)
    assert_same_contents(both_resp, KEYS, db=1)
    # a deep copy: changing the copy leaves the original as it was
    changes = [
        ('HSET', 'h_lp_c', 'f1', 'changed', 'new', '1'),
        ('HDEL', 'h_ht_c', 'long'),
        ('RPUSH', 'l_c', 'more'),
        ('LSET', 'l_c', '0', 'first'),
        ('SADD', 's_int_c', '100'),
        ('SREM', 's_ht_c', 'a'),
        ('ZADD', 'z_lp_c', '100', 'a'),
        ('ZREM', 'z_sl_c', 'b'),
        ('XADD', 'st_c', '2-1', 'g', 'w'),
    ]
    assert_same(both_resp, changes)
    assert_same_contents(both_resp, KEYS + copies)


def test_copy_keeps_the_encoding(both_resp):
    """COPY duplicates the object as it is (dupHashObject, ...): a hashtable that shrank
    stays a hashtable, a listpack over a threshold lowered since stays a listpack."""
    cmds = [
        ('HSET', 'h', 'a', '1', 'long', LONG),
        ('HDEL', 'h', 'long'),
        ('SADD', 's', '1', 'x'),
        ('SREM', 's', 'x'),
        ('ZADD', 'z', '1', LONG, '2', 'b'),
        ('ZREM', 'z', LONG),
        ('HSET', 'h2', 'a', '1', 'b', '2', 'c', '3'),
        ('SADD', 's2', '1', '2', '3'),
        ('ZADD', 'z2', '1', 'a', '2', 'b', '3', 'c'),
        ('CONFIG', 'SET', 'hash-max-listpack-entries', '1'),
        ('CONFIG', 'SET', 'set-max-intset-entries', '1'),
        ('CONFIG', 'SET', 'zset-max-listpack-entries', '1'),
    ]
    for k in ('h', 's', 'z', 'h2', 's2', 'z2'):
        cmds += [('COPY', k, k + '_c'), ('OBJECT', 'ENCODING', k + '_c')]
        cmds += [('COPY', k, k, 'DB', '2'), ('SELECT', '2'), ('OBJECT', 'ENCODING', k)]
        cmds += [('SELECT', '0')]
    assert_same(both_resp, cmds)


# -- RENAME, RENAMENX, MOVE, SWAPDB ---------------------------------------------------------


def test_rename_move_swapdb_every_type(both_resp):
    populate(both_resp)
    t0 = now_ms()
    cmds = [('EXPIRE', 'h_lp', '1000'), ('PEXPIRE', 'z_sl', '2000000')]
    for k in KEYS:
        cmds += [('RENAME', k, k + '_r'), ('TYPE', k), ('TYPE', k + '_r')]
    cmds += [
        ('RENAMENX', 'h_lp_r', 'l_r'),
        ('RENAMENX', 'h_lp_r', 'h_new'),
        ('RENAME', 's_int_r', 'z_lp_r'),  # replaces a value of another type
        ('TYPE', 'z_lp_r'),
        ('RENAME', 'l_r', 'l_r'),
        ('RENAMENX', 'l_r', 'l_r'),
        ('RENAME', 'nokey', 'x'),
    ]
    for k in ('h_ht_r', 'l_r', 's_ht_r', 'z_sl_r', 'st_r'):
        cmds += [('MOVE', k, '3'), ('EXISTS', k)]
    cmds += [('SET', 'str_r', 'other', 'GET'), ('MOVE', 'num_r', '3'), ('SWAPDB', '0', '3')]
    assert_same(both_resp, cmds)
    ours, theirs = both_resp
    assert sorted(ours.keys()) == sorted(theirs.keys())
    keys = [k + '_r' for k in KEYS] + ['h_new']
    assert_same_contents(both_resp, keys)
    assert_same_contents(both_resp, keys, db=3)
    for c in both_resp:  # the TTLs went along (SWAPDB: h_new is in db 3, z_sl_r in 0)
        assert_pttl(c, 'z_sl_r', 2_000_000, t0)
        c.select(3)
        assert_ttl(c, 'h_new', 1000, t0)
        c.select(0)


# -- EXPIRE, PERSIST, TTL -----------------------------------------------------------------


def test_expire_persist_ttl_every_type(both_resp):
    populate(both_resp)
    cmds = []
    for k in KEYS:
        cmds += [
            ('TTL', k),
            ('EXPIRE', k, '1000', 'NX'),
            ('EXPIRE', k, '1000', 'NX'),
            ('PERSIST', k),
            ('PERSIST', k),
            ('TTL', k),
            ('PEXPIREAT', k, '1'),
            ('EXISTS', k),
            ('TTL', k),
        ]
    assert_same(both_resp, cmds)
    populate(both_resp)
    for c in both_resp:
        for k in KEYS:
            t0 = now_ms()
            assert c.expire(k, 500)
            assert_ttl(c, k, 500, t0)
            assert_pttl(c, k, 500_000, t0)
    assert_same(both_resp, [('EXPIRE', k, '-1') for k in KEYS] + [('DBSIZE',)])


# -- DUMP / RESTORE -----------------------------------------------------------------------


def restore_each(both, commands):
    """Run `commands` on each server, where ('DUMP>', key) DUMPs a key and remembers its
    payload, and '<payload>' in a later command stands for it; the replies must agree."""
    out = []
    for c in both:
        payload, replies = None, []
        for cmd in commands:
            if cmd[0] == 'DUMP>':
                payload = c.dump(cmd[1])
                replies.append(payload is None)
                continue
            cmd = tuple(payload if a == '<payload>' else a for a in cmd)
            try:
                replies.append(c.execute_command(*cmd))
            except redis.ResponseError as e:
                replies.append(('error', str(e)))
        out.append(replies)
    ours, theirs = out
    for cmd, got, want in zip(commands, ours, theirs):
        assert got == want, f'{cmd!r}: ours {got!r} != redis {want!r}'


def test_dump_restore_every_type(both_resp):
    populate(both_resp)
    for k in KEYS:
        t0 = now_ms()
        restore_each(
            both_resp,
            [
                ('DUMP>', k),
                ('RESTORE', k + '_r', '0', '<payload>'),
                ('RESTORE', k + '_r', '0', '<payload>'),  # BUSYKEY
                ('RESTORE', 'str', '0', '<payload>', 'REPLACE'),
                ('RESTORE', k + '_t', '100000', '<payload>', 'IDLETIME', '5'),
                ('RESTORE', k + '_a', '1', '<payload>', 'ABSTTL'),  # in the past: not added
                ('EXISTS', k + '_a'),
                ('TYPE', 'str'),
            ],
        )
        assert_same_contents(both_resp, [k, k + '_r', 'str', k + '_t'])
        for c in both_resp:
            assert_pttl(c, k + '_t', 100_000, t0)
            c.delete('str')
            c.set('str', 'v')
    assert_same(both_resp, [('DUMP', 'nokey')])


def test_dump_payloads_are_redis_own(both):
    """DUMP writes what redis-server writes (but for a hashtable's order, which is each
    server's own), and each server RESTOREs the other's payloads to the same value."""
    populate(both)
    ours, theirs = both
    for k in KEYS:
        mine, its = ours.dump(k), theirs.dump(k)
        if ours.object('encoding', k) != b'hashtable':
            assert mine == its, k
        ours.restore(k + '_x', 0, its)
        theirs.restore(k + '_x', 0, mine)
    assert_same_contents(both, [k + '_x' for k in KEYS])
    assert_same(both, [('OBJECT', 'ENCODING', k + '_x') for k in KEYS])


def test_dump_restore_keeps_order_and_values(both):
    """Values that a careless codec would lose: -0 and inf scores, empty and binary
    members, integers outside 64 bits, an intset's order, a listpack hash's order."""
    cmds = [
        ('ZADD', 'z', '-0', 'neg0', 'inf', 'top', '-inf', 'bottom', '1.5', '', '3', '\x00\xff'),
        ('HSET', 'h', 'z', '1', 'a', '', '', 'empty field', 'm', '\x00'),
        ('SADD', 's', '10', '-3', '9223372036854775807', '0'),
        ('SADD', 's2', '18446744073709551616', '-1'),
        ('RPUSH', 'l', '', '\x00', 'x', '', '-0'),
        # a skiplist keeps -0; loaded as a listpack it holds 0 (zzlInsertAt's double2ll)
        ('ZADD', 'zneg', '1', LONG),
        ('ZADD', 'zneg', '-0', 'a'),
        ('ZREM', 'zneg', LONG),
        ('ZADD', 'zneg2', '1', LONG),
        ('ZADD', 'zneg2', '-0', 'a'),
    ]
    for c in both:
        run_all(c, cmds)
    for k in ('z', 'h', 's', 's2', 'l', 'zneg', 'zneg2'):
        restore_each(both, [('DUMP>', k), ('RESTORE', k + '_r', '0', '<payload>')])
    assert_same(
        both,
        [
            ('ZRANGE', 'z_r', '0', '-1', 'WITHSCORES'),
            ('ZSCORE', 'z_r', 'neg0'),
            ('HGETALL', 'h_r'),
            ('SMEMBERS', 's_r'),
            ('LRANGE', 'l_r', '0', '-1'),
            ('SCARD', 's2_r'),
            ('ZSCORE', 'zneg', 'a'),
            ('ZSCORE', 'zneg_r', 'a'),
            ('ZRANGE', 'zneg_r', '0', '-1', 'WITHSCORES'),
            ('ZSCAN', 'zneg_r', '0'),
            ('ZSCORE', 'zneg2_r', 'a'),
        ]
        + [('OBJECT', 'ENCODING', k + '_r') for k in ('z', 'h', 's', 's2', 'l', 'zneg', 'zneg2')],
    )


def test_restore_rederives_the_encoding(both):
    """Redis writes a compact value (listpack, intset) as it is and a big one element by
    element, and re-derives the encoding on load from the thresholds in force then,
    differently for the two forms (rdbLoadObject): a listpack/intset converts only when it
    has too many elements, a hashtable/skiplist becomes compact when it is small enough
    in count and in element length."""

    def case(setup, limits, key):
        for c in both:
            c.flushall()
            run_all(c, setup)
            for name, value in limits.items():
                c.config_set(name, value)
        restore_each(
            both,
            [
                ('OBJECT', 'ENCODING', key),
                ('DUMP>', key),
                ('RESTORE', 'r', '0', '<payload>'),
                ('OBJECT', 'ENCODING', 'r'),
            ],
        )
        assert_same_contents(both, ['r'])
        for c in both:
            for name in limits:
                c.config_set(name, DEFAULTS[name])

    # hash: a listpack converts past the number of entries, not by a long value
    case([('HSET', 'h', 'a', '1', 'b', '2', 'c', '3')], {'hash-max-listpack-entries': '2'}, 'h')
    case([('HSET', 'h', 'a', '0123456789')], {'hash-max-listpack-value': '5'}, 'h')
    # hash: a hashtable that is small again loads as a listpack, unless a value is long
    shrunk = [('HSET', 'h', 'a', '1', 'long', LONG), ('HDEL', 'h', 'long')]
    case(shrunk, {}, 'h')
    case([('HSET', 'h', 'a', LONG)], {}, 'h')
    case([*shrunk, ('HSET', 'h', 'b', '0123456789')], {'hash-max-listpack-value': '5'}, 'h')
    case([('HSET', 'h', 'a', '1', 'b', '2', 'c', '3')], {'hash-max-listpack-entries': '1'}, 'h')
    # set: an intset converts past the number of entries; a hashtable of few integers
    # loads as an intset
    case([('SADD', 's', '1', '2', '3')], {'set-max-intset-entries': '2'}, 's')
    case([('SADD', 's', '1', '2', 'a'), ('SREM', 's', 'a')], {}, 's')
    ints = [('SADD', 's', '1', '2', '3', '4', 'a'), ('SREM', 's', 'a')]
    case(ints, {'set-max-intset-entries': '2'}, 's')
    case([('SADD', 's', '1', 'a')], {}, 's')
    # sorted set: like the hash, by number of members and member length
    case([('ZADD', 'z', '1', 'a', '2', 'b', '3', 'c')], {'zset-max-listpack-entries': '2'}, 'z')
    case([('ZADD', 'z', '1', 'abcdefghij')], {'zset-max-listpack-value': '5'}, 'z')
    case([('ZADD', 'z', '1', 'a', '2', LONG), ('ZREM', 'z', LONG)], {}, 'z')
    case([('ZADD', 'z', '1', 'a', '2', LONG)], {}, 'z')
    case([('ZADD', 'z', '1', 'a', '2', 'bcdefghij')], {'zset-max-listpack-value': '5'}, 'z')
    # list: always a quicklist
    case([('RPUSH', 'l', 'a', LONG)], {}, 'l')


def test_restore_bad_payloads(both_resp):
    """A payload cut short or with a byte changed fails the checksum on both servers."""
    populate(both_resp)
    for k in ('h_lp', 'h_ht', 'l', 's_int', 's_ht', 'z_lp', 'z_sl'):
        for c in both_resp:
            payload = c.dump(k)
            flipped = payload[:3] + bytes([payload[3] ^ 0x40]) + payload[4:]
            for bad in (payload[:-1], payload[:5], flipped, payload + b'x'):
                with pytest.raises(redis.ResponseError) as e:
                    c.restore('dst', 0, bad)
                assert str(e.value) == 'DUMP payload version or checksum are wrong'
            with pytest.raises(redis.ResponseError) as e:
                c.restore('dst', -1, payload)
            assert str(e.value) == 'Invalid TTL value, must be >= 0'
            with pytest.raises(redis.ResponseError) as e:
                c.restore(k, 0, payload)
            assert str(e.value) == 'BUSYKEY Target key name already exists.'


def test_restore_of_crafted_payloads_matches_redis(both):
    """Payloads made by hand with a valid footer: empty aggregates, unknown and module
    types and a short string are 'Bad data format' on both servers, bytes after the value
    are ignored as Redis ignores them, and a one-field hash in hashtable form loads as a
    listpack."""

    def payload(kind, body):
        return dump_payload(bytes([kind]) + body)

    cases = [
        payload(2, rdb_len(0)),  # set
        payload(4, rdb_len(0)),  # hash
        payload(5, rdb_len(0)),  # sorted set
        payload(18, rdb_len(0)),  # quicklist without nodes
        payload(16, rdb_string(listpack([]))),  # listpack hash without entries
        payload(7, rdb_len(1)),  # module
        payload(99, b''),
        payload(0, b'\x0aabc'),  # a string cut short
        payload(0, rdb_string(b'value') + b'trailing'),
        payload(4, rdb_len(1) + rdb_string(b'f') + rdb_string(b'v')),
    ]
    commands = []
    for i, p in enumerate(cases):
        k = f'k{i}'
        commands += [('RESTORE', k, '0', p), ('TYPE', k), ('OBJECT', 'ENCODING', k), ('DUMP', k)]
    assert_same(both, [*commands, ('GET', 'k7'), ('GET', 'k9'), ('HGETALL', 'k10')])


# -- SCAN TYPE, RANDOMKEY -----------------------------------------------------------------


def test_scan_type_every_type(both_resp):
    populate(both_resp)
    ours, theirs = both_resp
    for t in ('string', 'hash', 'list', 'set', 'zset', 'stream', 'HASH', 'nosuchtype'):
        for count in ('1', '3', '1000'):
            got, want = set(), set()
            for c, seen in ((ours, got), (theirs, want)):
                cursor = 0
                while True:
                    cursor, keys = c.scan(cursor, count=int(count), _type=t)
                    seen.update(keys)
                    if cursor == 0:
                        break
            assert got == want, (t, count)


def test_randomkey_every_type(both_resp):
    for cmd in VALUES:
        for c in both_resp:
            c.flushall()
            run_all(c, [cmd])
        assert_same(both_resp, [('RANDOMKEY',)])


# -- keyspace events ----------------------------------------------------------------------

EVENT_COMMANDS = [
    *VALUES,
    ('RENAME', 'h_lp', 'h_lp2'),
    ('RENAME', 'l', 'h_ht'),  # over a key of another type: no 'del' for it
    ('RENAMENX', 's_int', 'z_lp'),
    ('RENAMENX', 's_int', 's_int2'),
    ('MOVE', 's_ht', '4'),
    ('MOVE', 'z_sl', '4'),
    ('COPY', 'z_lp', 'z_lp_c'),
    ('COPY', 'h_lp2', 'z_lp_c', 'REPLACE'),
    ('COPY', 's_int2', 's_int2', 'DB', '4'),
    ('EXPIRE', 'h_ht', '1000'),
    ('PEXPIRE', 'z_lp', '5000000'),
    ('PERSIST', 'z_lp'),
    ('EXPIRE', 'h_lp2', '0'),
    ('PEXPIREAT', 's_int2', '1'),
    ('DEL', 'h_ht', 'z_lp', 'nokey'),
    ('UNLINK', 'z_lp_c'),
    ('SWAPDB', '0', '4'),
    ('DEL', 's_ht', 'z_sl', 's_int2'),
]


@pytest.mark.parametrize('flags', ['KEA', 'KEAn', 'Kg', 'En'])
def test_generic_events_on_every_type(both, flags):
    events = assert_same_events(both, EVENT_COMMANDS, flags)
    if flags == 'KEA':
        assert (b'__keyevent@0__:rename_to', b'h_lp2') in events
        assert (b'__keyevent@4__:move_to', b'z_sl') in events


def test_restore_events_every_type(both):
    """RESTORE raises `new` (dbAdd) then `restore`; with REPLACE over a key the old
    value goes silently; an already expired ABSTTL deletes the old key with `del`."""
    populate(both)
    got = []
    for c in both:
        payloads = {k: c.dump(k) for k in ('h_lp', 'h_ht', 'l', 's_int', 'z_sl')}
        cmds = []
        for k, p in payloads.items():
            cmds += [
                ('RESTORE', k + '_r', '0', p),
                ('RESTORE', k, '0', p, 'REPLACE'),
                ('RESTORE', k + '_r', '1', p, 'REPLACE', 'ABSTTL'),
                ('RESTORE', k + '_t', '100000', p),
            ]
        got.append(capture_events(c, cmds, 'KEAn'))
    assert got[0] == got[1]
    assert (b'__keyevent@0__:restore', b'z_sl_r') in got[0]


# -- WATCH and blocked clients --------------------------------------------------------------


def watch_outcomes(client, other, setup, writes):
    """For each write: WATCH its key, let `other` run the write, and EXEC: None when the
    write touched the watched key (the transaction is aborted)."""
    out = []
    for watched, write in writes:
        client.flushall()
        run_all(client, setup)
        pipe = client.pipeline()
        pipe.watch(watched)
        pipe.multi()
        pipe.ping()
        run_all(other, [write])
        try:
            out.append(pipe.execute())
        except redis.WatchError:
            out.append(None)
        pipe.reset()
    return out


def test_watch_sees_generic_writes_to_every_type(server, redis_ref):
    setup = [*VALUES, ('SELECT', '0')]
    writes = [
        ('h_lp', ('DEL', 'h_lp')),
        ('l', ('UNLINK', 'l')),
        ('dst', ('RENAME', 's_int', 'dst')),
        ('s_int', ('RENAME', 's_int', 'dst')),
        ('z_lp', ('RENAMENX', 'z_sl', 'z_lp')),  # not renamed: nothing touched
        ('dst', ('COPY', 'h_ht', 'dst')),
        ('z_sl', ('MOVE', 'z_sl', '1')),
        ('s_ht', ('EXPIRE', 's_ht', '100')),
        ('s_ht', ('PERSIST', 's_ht')),  # no TTL: nothing touched
        ('l', ('RESTORE', 'l', '0', b'garbage', 'REPLACE')),
        ('h_lp', ('SWAPDB', '0', '1')),
        ('nokey', ('SWAPDB', '0', '1')),
    ]
    results = []
    for make in (server.client, lambda protocol: redis.Redis(*redis_ref, protocol=protocol)):
        client, other = make(protocol=2), make(protocol=2)
        results.append(watch_outcomes(client, other, setup, writes))
        client.close()
        other.close()
    assert results[0] == results[1]


def _client_id(conn, cmd):
    """The id of the client whose last command was `cmd`, or b'0'."""
    for line in conn.cmd('CLIENT', 'LIST').split(b'\n'):
        if b'cmd=' + cmd.lower().encode() in line:
            return line.split(b'id=')[1].split(b' ')[0]
    return b'0'


def _bulk(reply):
    head, _, rest = reply.partition(b'\r\n')
    return rest[: int(head[1:])]


def test_watch_sees_swapdb_bring_a_key(server, redis_ref):
    """WATCH of a key only the other database holds: SWAPDB brings it, and touches it."""
    writes = [('dst', ('SWAPDB', '0', '1')), ('dst', ('SWAPDB', '1', '0'))]
    setup = [('SELECT', '1'), ('RPUSH', 'dst', 'x'), ('SELECT', '0')]
    results = []
    for make in (server.client, lambda protocol: redis.Redis(*redis_ref, protocol=protocol)):
        client, other = make(protocol=2), make(protocol=2)
        results.append(watch_outcomes(client, other, setup, writes))
        client.close()
        other.close()
    assert results[0] == results[1] == [None, None]


def blocked_pop_outcome(port, setup, write):
    """Client A blocks in BLPOP dst 0 (db 0); client B runs `setup` and `write` ('<dump
    src>' in it stands for B's DUMP of src). A's reply: what the write served it, or the
    nil of CLIENT UNBLOCK if the write did not serve it."""
    with RawConn(port) as a, RawConn(port) as b:
        a.cmd('FLUSHALL')
        for cmd in setup:
            b.cmd(*cmd)
        if '<dump src>' in write:
            payload = _bulk(b.cmd('DUMP', 'src'))
            write = tuple(payload if x == '<dump src>' else x for x in write)
        a.send_commands(('BLPOP', 'dst', '0'))
        deadline = now_ms() + WAIT * 1000
        while _client_id(b, 'BLPOP') == b'0':
            assert now_ms() < deadline, 'the client never blocked'
        b.cmd(*write)
        b.cmd('CLIENT', 'UNBLOCK', _client_id(b, 'BLPOP'))
        return a.read_reply()


IN_DB1 = [('SELECT', '1'), ('RPUSH', 'dst', 'x')]


@pytest.mark.parametrize(
    'setup, write',
    [
        ([('RPUSH', 'src', 'a', 'b')], ('RENAME', 'src', 'dst')),
        ([('RPUSH', 'src', 'a')], ('RENAMENX', 'src', 'dst')),
        ([('RPUSH', 'src', 'a')], ('COPY', 'src', 'dst')),
        ([('RPUSH', 'src', 'a')], ('RESTORE', 'dst', '0', '<dump src>')),
        (IN_DB1, ('MOVE', 'dst', '0')),
        (IN_DB1, ('COPY', 'dst', 'dst', 'DB', '0')),
        (IN_DB1, ('SWAPDB', '0', '1')),
        (IN_DB1, ('SWAPDB', '1', '0')),
        ([('SADD', 'src', 'a')], ('RENAME', 'src', 'dst')),  # wrong type: still waits
        ([('SET', 'dst', 'v')], ('DEL', 'dst')),
    ],
)
def test_generic_write_serves_a_blocked_client(server, redis_ref, setup, write):
    """A list arriving by RENAME, COPY, RESTORE, MOVE or SWAPDB at a key a client waits
    on serves the client at once, as in Redis."""
    outcomes = [blocked_pop_outcome(port, setup, write) for port in (server.port, redis_ref[1])]
    assert outcomes[0] == outcomes[1]
