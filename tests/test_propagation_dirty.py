"""What is propagated: as Redis's call() does, a write command reaches the AOF and the
replicas only when it changed the data set (server.dirty moved), and only then counts in
rdb_changes_since_last_save. Compared with redis-server: the bytes of its AOF after the
same commands, and the moves of its counter."""

import pytest
import redis

from test_aof import Proc, incr_path

# Each family's writes, the ones that change something and the ones that change nothing
# (a member already there, a bit set to what it was, a missing key...), in one sequence.
COMMANDS = [
    # strings and bitmaps
    ('SET', 's', 'v'),
    ('SETBIT', 'b', '0', '0'),
    ('SETBIT', 'b', '0', '0'),
    ('SETBIT', 'b', '0', '1'),
    ('SETBIT', 'b', '0', '1'),
    ('SETBIT', 'b', '90', '0'),
    ('BITFIELD', 'f', 'SET', 'i5', '0', '0'),
    ('BITFIELD', 'f', 'SET', 'i5', '0', '0'),
    ('BITFIELD', 'f', 'SET', 'i5', '0', '1'),
    ('BITFIELD', 'f', 'INCRBY', 'i5', '0', '1'),
    ('SETRANGE', 's', '0', 'v'),
    ('APPEND', 's', 'x'),
    ('INCR', 'n'),
    ('MSETNX', 's', 'a', 'new', 'b'),
    ('SETNX', 's', 'z'),
    # keys
    ('DEL', 'missing'),
    ('UNLINK', 'missing'),
    ('PERSIST', 's'),
    ('PEXPIREAT', 'missing', '99999999999999'),
    ('RENAMENX', 's', 'n'),
    ('MOVE', 'missing', '1'),
    ('COPY', 'missing', 'dst'),
    # sets
    ('SADD', 'set', 'a', 'b'),
    ('SADD', 'set', 'a'),
    ('SADD', 'set', 'a', 'c'),
    ('SREM', 'set', 'zz'),
    ('SREM', 'set', 'c'),
    ('SMOVE', 'set', 'set2', 'zz'),
    ('SMOVE', 'set', 'set2', 'a'),
    ('SMOVE', 'set', 'set2', 'b'),
    # hashes (HSET of the same value is written: hsetCommand counts its fields always)
    ('HSET', 'h', 'f', 'v'),
    ('HSET', 'h', 'f', 'v'),
    ('HSETNX', 'h', 'f', 'w'),
    ('HDEL', 'h', 'nope'),
    ('HINCRBY', 'h', 'n', '0'),
    # lists
    ('RPUSH', 'l', 'a', 'b', 'c'),
    ('LPUSH', 'l', 'z'),
    ('RPUSHX', 'missing', 'a'),
    ('LPUSHX', 'l', 'y'),
    ('LREM', 'l', '0', 'nope'),
    ('LREM', 'l', '0', 'a'),
    ('LINSERT', 'l', 'BEFORE', 'nope', 'x'),
    ('LINSERT', 'l', 'BEFORE', 'b', 'x'),
    ('LSET', 'l', '0', 'q'),
    ('LTRIM', 'l', '0', '-1'),
    ('LTRIM', 'l', '1', '-1'),
    ('LPOP', 'missing'),
    ('RPOPLPUSH', 'missing', 'l'),
    ('LMOVE', 'l', 'l2', 'LEFT', 'RIGHT'),
    # sorted sets
    ('ZADD', 'z', '1', 'a', '2', 'b'),
    ('ZADD', 'z', '1', 'a'),
    ('ZADD', 'z', '3', 'a'),
    ('ZREM', 'z', 'nope'),
    ('ZINCRBY', 'z', '1', 'b'),
    ('ZREMRANGEBYSCORE', 'z', '100', '200'),
    ('ZREMRANGEBYRANK', 'z', '0', '0'),
    ('ZPOPMIN', 'missing'),
    # hyperloglog
    ('PFADD', 'hll', 'a'),
    ('PFADD', 'hll', 'a'),
    # streams
    ('XADD', 'x', '1-1', 'f', 'v'),
    ('XGROUP', 'CREATE', 'x', 'g', '0'),
    ('XGROUP', 'CREATECONSUMER', 'x', 'g', 'c'),
    ('XGROUP', 'CREATECONSUMER', 'x', 'g', 'c'),
    ('XACK', 'x', 'g', '1-1'),
    ('XDEL', 'x', '5-5'),
    ('XGROUP', 'DESTROY', 'x', 'nope'),
    ('XGROUP', 'DELCONSUMER', 'x', 'g', 'c'),
    ('XSETID', 'x', '1-1'),
    # more of each family, all of which change something
    ('MSET', 'm1', '1', 'm2', '2'),
    ('SET', 'e', 'v', 'PXAT', '99999999999999'),
    ('COPY', 'e', 'e2'),
    ('MOVE', 'e2', '1'),
    ('DECRBY', 'n', '5'),
    ('GETDEL', 'e'),
    ('RENAME', 'm1', 'm3'),
    ('HSETNX', 'h', 'g', 'w'),
    ('HDEL', 'h', 'g'),
    ('HINCRBY', 'h', 'n', '2'),
    ('SINTERSTORE', 'set3', 'set2', 'set2'),
    ('SUNIONSTORE', 'set4', 'missing'),
    ('ZREM', 'z', 'b'),
    ('ZADD', 'z2', '1', 'a', '2', 'b', '3', 'c'),
    ('ZPOPMIN', 'z2'),
    ('ZRANGESTORE', 'z3', 'z2', '0', '-1'),
    ('ZUNIONSTORE', 'z4', '1', 'z2'),
    ('ZREMRANGEBYLEX', 'z2', '[a', '[z'),
    ('RPUSH', 'l3', 'a', 'b', 'c', 'd'),
    ('LPOP', 'l3'),
    ('RPOP', 'l3', '2'),
    ('SORT', 'l2', 'ALPHA', 'STORE', 'sorted'),
    ('PFMERGE', 'hll2', 'hll'),
    ('BITOP', 'OR', 'dest', 'b', 'f'),
    ('BITOP', 'OR', 'dest2', 'missing'),
    ('XADD', 'x', '2-1', 'f', 'v'),
    ('XACK', 'x', 'g', '2-1'),
    ('XGROUP', 'SETID', 'x', 'g', '0'),
    ('XTRIM', 'x', 'MAXLEN', '5'),
    ('XTRIM', 'x', 'MAXLEN', '1'),
    ('XDEL', 'x', '2-1'),
    ('FUNCTION', 'LOAD', "#!lua name=lib\nredis.register_function('f', function() end)"),
    ('FUNCTION', 'DELETE', 'lib'),
    # databases
    ('FLUSHDB',),
    ('FLUSHDB',),
    ('SWAPDB', '0', '1'),
    ('FLUSHALL',),
]


def _incr_after(kind, dirpath, commands):
    dirpath.mkdir()
    p = Proc(kind, dirpath, '--appendonly', 'yes')
    try:
        for cmd in commands:
            try:
                p.client.execute_command(*cmd)
            except redis.ResponseError as e:
                pytest.fail(f'{kind}: {cmd}: {e}')
    finally:
        p.stop()
    with open(incr_path(dirpath), 'rb') as f:
        return f.read()


def test_writes_that_change_nothing_are_not_written(tmp_path):
    ours = _incr_after('store', tmp_path / 'ours', COMMANDS)
    theirs = _incr_after('redis', tmp_path / 'theirs', COMMANDS)
    assert _commands(ours) == _commands(theirs)


def _commands(aof):
    """The commands of an AOF's bytes, one line each, for a readable difference."""
    parts = aof.split(b'\r\n')
    out, i = [], 0
    while i < len(parts) - 1:
        n = int(parts[i][1:])
        out.append(b' '.join(parts[i + 2 : i + 2 + 2 * n : 2]).decode())
        i += 1 + 2 * n
    return out


def _dirty_moves(client, commands):
    """rdb_changes_since_last_save's move after each command: 0 or not."""
    moves = []
    for cmd in commands:
        before = client.info('persistence')['rdb_changes_since_last_save']
        client.execute_command(*cmd)
        after = client.info('persistence')['rdb_changes_since_last_save']
        moves.append((cmd, after != before))
    return moves


def test_changes_since_last_save_count_only_changes(both):
    """The bitops test's sequence: a new key counts, a bit set to what it was does not,
    BITFIELD INCRBY always does, a string that only grows does."""
    commands = [
        ('SETBIT', 'foo', '0', '0'),
        ('BITFIELD', 'foo2', 'SET', 'i5', '0', '0'),
        ('SETBIT', 'foo', '0', '0'),
        ('BITFIELD', 'foo2', 'SET', 'i5', '0', '0'),
        ('SETBIT', 'foo', '0', '1'),
        ('SETBIT', 'foo', '0', '1'),
        ('BITFIELD', 'foo2', 'SET', 'i5', '0', '1'),
        ('BITFIELD', 'foo2', 'SET', 'i5', '0', '1'),
        ('BITFIELD', 'foo3', 'INCRBY', 'i5', '0', '1'),
        ('BITFIELD', 'foo3', 'INCRBY', 'i5', '0', '1'),
        ('SETBIT', 'foo', '90', '0'),
        ('BITFIELD', 'foo2', 'SET', 'i5', '90', '0'),
        ('SADD', 'set', 'a'),
        ('SADD', 'set', 'a'),
        ('DEL', 'missing'),
    ]
    ours, theirs = both
    assert _dirty_moves(ours, commands) == _dirty_moves(theirs, commands)
