"""Strings changed in place (store/keyspace.py): SETBIT, BITFIELD, SETRANGE, APPEND and
PFADD write into the stored string rather than copy it, so what a user must observe is
that nothing else sees a write it should not: a reply already queued, a copy of the key,
a script's or a transaction's earlier read, a snapshot taken before the write, the
memory a key is charged. Each is compared with redis-server 7.0.15 where it has the
same command, or with the same string written whole.
"""

import pytest

from conftest import assert_same, spawn_store, stop, wait_until
from rawconn import RawConn, pack_all

BIG = b'x' * 70_000  # past the connection's small-reply path: a bulk reply of its own


def in_place_mix(key):
    """Reads interleaved with every in-place write of one string, each read before the
    next write."""
    return [
        ('SET', key, BIG),
        ('APPEND', key, 'tail'),
        ('GET', key),
        ('SETBIT', key, '7', '0'),
        ('GETRANGE', key, '0', '3'),
        ('GET', key),
        ('SETRANGE', key, '2', 'MID'),
        ('STRLEN', key),
        ('GET', key),
        ('BITFIELD', key, 'INCRBY', 'u8', '#1', '1', 'GET', 'u8', '#1'),
        ('GETBIT', key, '7'),
        ('BITCOUNT', key, '0', '7'),
        ('APPEND', key, 'again'),
        ('SUBSTR', key, '-9', '-1'),
        ('MGET', key, key),
        ('SETBIT', key, str((len(BIG) + 20) * 8), '1'),  # grows it
        ('STRLEN', key),
        ('GET', key),
        ('BITPOS', key, '1', '-3'),
        ('PFADD', 'h', 'a', 'b', 'c'),
        ('GET', 'h'),
        ('PFADD', 'h', 'd'),
        ('PFCOUNT', 'h'),
        ('GET', 'h'),
    ]


def test_pipelined_replies_are_the_values_at_their_turn(raw_pair):
    """One write holding all the commands: the replies are queued until the end of the
    read while later commands change the same string."""
    commands = in_place_mix('k')
    replies = []
    for c in raw_pair(2):
        c.send(pack_all(*commands))
        replies.append(c.read_replies(len(commands)))
    assert replies[0] == replies[1]


def test_transaction_and_script_reads_are_not_changed_by_later_writes(both):
    commands = in_place_mix('k')
    assert_same(both, [('MULTI',), *commands, ('EXEC',)])
    script = """
        local out = {}
        redis.call('SET', KEYS[1], ARGV[1])
        out[#out + 1] = redis.call('GET', KEYS[1])
        redis.call('SETBIT', KEYS[1], 0, 1)
        out[#out + 1] = redis.call('GET', KEYS[1])
        redis.call('APPEND', KEYS[1], 'z')
        redis.call('SETRANGE', KEYS[1], 1, 'Q')
        out[#out + 1] = redis.call('GETRANGE', KEYS[1], 0, 2)
        out[#out + 1] = redis.call('GET', KEYS[1])
        return out
    """
    assert_same(both, [('EVAL', script, '1', 's', 'abc'), ('GET', 's')])


def test_copies_do_not_share_a_buffer(both):
    assert_same(
        both,
        [
            ('SETBIT', 'src', '100', '1'),
            ('APPEND', 'src', 'abc'),  # src is written in place from here on
            ('COPY', 'src', 'dst'),
            ('SETBIT', 'src', '0', '1'),
            ('APPEND', 'dst', 'xyz'),
            ('SETRANGE', 'src', '3', 'S'),
            ('GET', 'src'),
            ('GET', 'dst'),
            ('RENAME', 'dst', 'moved'),
            ('APPEND', 'moved', '!'),
            ('GETSET', 'moved', 'plain'),
            ('APPEND', 'moved', '+'),
            ('GET', 'moved'),
            ('GET', 'src'),
        ],
    )


def test_a_string_grown_in_place_is_charged_as_the_same_string_set_whole(make_server):
    # a server of its own: used_memory also moves when other tests' clients go away
    r = make_server().client(protocol=2)
    for _ in range(200):
        r.append('grown', 'y' * 997)
    r.setbit('bits', 800_000, 1)
    r.bitfield('bits').incrby('u8', 0, 3).execute()
    r.set('whole', r.get('grown'))
    r.append('grown', '.')  # a bytearray again after the GET above
    r.append('whole', '.')
    r.set('bits-whole', r.get('bits'))
    r.setbit('bits', 800_000, 0)
    r.setbit('bits-whole', 800_000, 0)
    usage = [r.memory_usage(k) for k in ('grown', 'whole', 'bits', 'bits-whole')]
    assert usage[0] == usage[1] > 199_400
    assert usage[2] == usage[3] > 100_000
    before = r.info('memory')['used_memory']
    r.delete('grown', 'whole', 'bits', 'bits-whole')
    r.set('again', 'a')
    for _ in range(100):
        r.append('again', 'b' * 1000)
    r.delete('again')
    # the four keys' charges come back, and nothing of the key made and deleted after
    freed = before - r.info('memory')['used_memory']
    assert abs(freed - sum(usage)) < 10_000


def test_bgsave_holds_the_strings_as_they_were_at_its_start(tmp_path):
    """Strings being written in place when BGSAVE starts, then written again (and read,
    which turns them back into bytes) while it runs: the file has the values of the
    start. `rdb-key-save-delay` makes the save slow enough to interleave."""
    proc, port = spawn_store('--dir', str(tmp_path), '--rdb-key-save-delay', '500')
    try:
        c = RawConn(port)
        n = 400
        for i in range(n):
            c.cmd('SET', f'pad{i}', 'p')
            c.cmd('SET', f's{i}', 'v' * 50)
            c.cmd('APPEND', f's{i}', f'-{i}')  # in place: a bytearray when the save starts
            c.cmd('SETBIT', f'b{i}', str(i), '1')
            c.cmd('PFADD', f'h{i}', *[f'e{j}' for j in range(i % 7 + 1)])
        keys = [f'{p}{i}' for i in range(n) for p in 'sbh']
        c.send(pack_all(*[('DUMP', k) for k in keys]))
        want = [c.read_reply() for _ in keys]  # DUMP reads: bytes again...
        for i in range(n):
            c.cmd('APPEND', f's{i}', 'x')  # ...and back in place
            c.cmd('SETBIT', f'b{i}', str(i), '1')  # (no change: still the same value)
        for i in range(n):
            c.cmd('SETRANGE', f's{i}', '0', 'x')
            c.cmd('SETBIT', f'b{i}', str(i + 1), '1')
            c.cmd('PFADD', f'h{i}', 'new')
        c.send(pack_all(*[('DUMP', k) for k in keys]))
        states = [c.read_reply() for _ in keys]
        assert c.cmd('BGSAVE') == b'+Background saving started\r\n'
        for i in range(n):
            c.cmd('SETBIT', f'b{i}', '0', '1')
            c.cmd('APPEND', f's{i}', 'after')
            if i % 2:
                c.cmd('GET', f's{i}')
            c.cmd('SETRANGE', f's{i}', '1', 'after')
            c.cmd('PFADD', f'h{i}', 'after')
        wait_until(lambda: b'rdb_bgsave_in_progress:0' in c.cmd('INFO', 'persistence'))
        assert b'rdb_last_bgsave_status:ok' in c.cmd('INFO', 'persistence')
        c.close()
        stop(proc)
        proc, _ = spawn_store('--dir', str(tmp_path), port=port)
        c = RawConn(port)
        c.send(pack_all(*[('DUMP', k) for k in keys]))
        assert [c.read_reply() for _ in keys] == states
        assert states != want  # (the writes between the two readings did change them)
        c.close()
    finally:
        stop(proc)


@pytest.mark.parametrize('size', [1, 1 << 20])
def test_setbit_and_append_keep_redis_results_at_any_size(both, size):
    """Offsets far into the string grow it in place; replies and values as Redis's."""
    bit = str(size * 8 - 1)
    assert_same(
        both,
        [
            ('SETBIT', 'b', bit, '1'),
            ('SETBIT', 'b', bit, '1'),
            ('SETBIT', 'b', '3', '1'),
            ('BITCOUNT', 'b'),
            ('BITPOS', 'b', '1', '1'),
            ('SETRANGE', 'b', str(size + 5), 'end'),
            ('STRLEN', 'b'),
            ('GETRANGE', 'b', '-8', '-1'),
            ('APPEND', 'b', 'more'),
            ('BITFIELD', 'b', 'SET', 'i16', str(size * 8), '-2', 'GET', 'u4', '0'),
            ('GETRANGE', 'b', '0', '1'),
            ('STRLEN', 'b'),
            ('BITOP', 'NOT', 'n', 'b'),
            ('BITCOUNT', 'n'),
        ],
    )
