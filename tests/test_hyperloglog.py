"""PFADD, PFCOUNT, PFMERGE, PFDEBUG and PFSELFTEST as differential tests against
redis-server 7.0.15.

Not only the replies are compared but the values' bytes (GET) after every write: an HLL is
a string whose sparse encoding depends on the order registers were set in, and the file
and DUMP formats carry it, so ours must be byte for byte Redis's (and redis-server must be
able to go on from it).
"""

import random

import pytest
import redis

from conftest import (
    assert_same,
    assert_same_events,
    raw_same,
    run_all,
    spawn_redis,
    spawn_store,
    stop,
)
from store.types import hll

SPARSE_MAX = 'hll-sparse-max-bytes'


@pytest.fixture
def sparse_max(both):
    """Set hll-sparse-max-bytes on both servers for a test; 3000 (the default) after."""

    def set_both(value):
        for client in both:
            client.config_set(SPARSE_MAX, value)

    yield set_both
    set_both(3000)


def hll_steps(seed, n, keys=('a', 'b', 'c')):
    """A random sequence of HLL commands, each write followed by a GET of its key."""
    rnd = random.Random(seed)
    pool = [f'e{i}' for i in range(rnd.choice([40, 400, 4000]))]
    out = []
    for _ in range(n):
        k = rnd.choice(keys)
        t = rnd.randrange(8)
        if t < 4:
            out.append(('pfadd', k, *rnd.choices(pool, k=rnd.choice([0, 1, 3, 30, 200]))))
        elif t == 4:
            out.append(('pfcount', *rnd.choices((*keys, 'none'), k=rnd.randint(1, 3))))
        elif t == 5:
            out.append(('pfmerge', k, *rnd.choices((*keys, 'none'), k=rnd.randint(0, 3))))
        elif t == 6:
            out.append(('pfdebug', rnd.choice(['encoding', 'DECODE', 'todense']), k))
        else:
            out.append(('del', k))
        out.append(('get', k))
    return out


def test_pfadd_pfcount_pfmerge_and_the_bytes(both):
    cmds = [
        ('pfadd', 'h'),
        ('get', 'h'),
        ('pfcount', 'h'),
        ('pfadd', 'h', 'a', 'b', 'c', 'a'),
        ('pfadd', 'h', 'a'),
        ('get', 'h'),
        ('pfcount', 'h'),
        ('get', 'h'),  # the count is cached in the value
        ('pfadd', 'h2', *[f'x{i}' for i in range(100)]),
        ('pfcount', 'h', 'h2', 'none'),
        ('get', 'h2'),  # a union is not cached
        ('pfmerge', 'm', 'h', 'h2', 'none'),
        ('get', 'm'),
        ('pfcount', 'm'),
        ('pfmerge', 'm'),
        ('pfmerge', 'empty'),
        ('get', 'empty'),
        ('pfcount', 'none'),
        ('pfdebug', 'encoding', 'm'),
        ('pfdebug', 'decode', 'h'),
        ('pfdebug', 'getreg', 'h'),
        ('pfdebug', 'encoding', 'h'),
        ('pfdebug', 'decode', 'h'),
        ('pfdebug', 'todense', 'h'),
        ('pfdebug', 'todense', 'h2'),
        ('pfdebug', 'todense', 'h2'),
        ('get', 'h2'),
        ('pfmerge', 'm2', 'h2', 'm'),  # a dense source makes a dense destination
        ('get', 'm2'),
        ('pfdebug', 'encoding', 'm2'),
        ('pfadd', 'm2', 'new'),
        ('pfcount', 'm2'),
    ]
    assert_same(both, cmds)


def test_large_sets_and_the_estimate(both):
    cmds = []
    for i in range(0, 20000, 500):
        cmds += [('pfadd', 'big', *[f'member:{j}' for j in range(i, i + 500)]), ('pfcount', 'big')]
    cmds += [('pfdebug', 'encoding', 'big'), ('get', 'big')]
    got = run_all(both[0], cmds)
    assert got == run_all(both[1], cmds)
    assert got[-2] == 'dense' or got[-2] == b'dense'
    assert abs(got[-3] - 20000) < 20000 * 0.02  # 0.81% standard error


def test_sparse_limit_decides_the_promotion(both, sparse_max):
    for limit in (30, 300, 3000):
        sparse_max(limit)
        cmds = []
        for i in range(60):
            cmds += [('pfadd', f'p{limit}', f'v{i}'), ('pfdebug', 'encoding', f'p{limit}')]
        cmds += [('get', f'p{limit}')]
        assert_same(both, cmds)


def test_bad_values_and_arguments(server, both):
    for client in both:
        client.hset('hash', 'f', 'v')
        client.set('str', 'not an hll')
        client.set('short', 'HYLL')
        client.set('badenc', b'HYLL\x02' + bytes(11))
        client.set('baddense', b'HYLL\x00' + bytes(11) + bytes(10))
        # sparse, but its opcodes cover 16383 registers, not 16384
        client.set('corrupt', b'HYLL\x01' + bytes(11) + b'\x7f\xfe')
        # sparse, stale cache, and a VAL run that goes past the last register
        client.set('corrupt2', b'HYLL\x01' + bytes(10) + b'\x80' + b'\x7f\xfe\x81')
    cmds = []
    for key in ('hash', 'str', 'short', 'badenc', 'baddense', 'corrupt', 'corrupt2'):
        cmds += [
            ('pfadd', key, 'x'),
            ('pfadd', key),
            ('pfcount', key),
            ('pfcount', key, 'none'),
            ('pfcount', 'none', key),
            ('pfmerge', 'dest', key),
            ('pfmerge', key, 'none'),
            ('pfdebug', 'encoding', key),
            ('pfdebug', 'getreg', key),
            ('pfdebug', 'todense', key),
            ('pfdebug', 'decode', key),
            ('exists', 'dest'),
        ]
    cmds += [
        ('pfadd',),
        ('pfcount',),
        ('pfmerge',),
        ('pfdebug', 'encoding'),
        ('pfdebug', 'encoding', 'none'),
        ('pfadd', 'ok', 'x'),
        ('pfdebug', 'nonsense', 'ok'),
        ('pfdebug', 'encoding', 'ok', 'extra'),
        ('pfselftest',),
        ('pfselftest', 'x'),
    ]
    assert_same(both, cmds)


def test_corrupt_sparse_runs_are_invalid_objects(both):
    """Sparse opcodes past the last register, of any kind, make an invalid HLL (Redis
    7.0.15's overflow checks), and an XZERO cut at the end reads a 0: no crash, no
    billions of registers."""
    header = b'HYLL\x01' + bytes(11)
    xzero = bytes((0x40 | (16383 >> 8), 16383 & 0xFF))
    for client in both:
        client.pfadd('tail', 'a', 'b', 'c')
        client.append('tail', 'hello')
        client.set('xzero', header + xzero * (131072 + 1000) + b'\xff')
        client.set('zero', header + b'\x3f' * 300 + b'\xff')
        client.set('cut', header + xzero * 1 + b'\x7f')
    cmds = []
    for key in ('tail', 'xzero', 'zero', 'cut'):
        cmds += [
            ('pfcount', key),
            ('pfcount', key, key),
            ('pfdebug', 'getreg', key),
            ('pfadd', key, 'x', 'y'),
            ('pfmerge', 'dest', key),
        ]
    cmds.append(('ping',))
    assert_same(both, cmds)


@pytest.mark.parametrize('seed', [1, 2, 3])
def test_random_hll_commands(both, sparse_max, seed):
    sparse_max(random.Random(seed).choice([100, 3000]))
    assert_same(both, hll_steps(seed, 300))


def test_replies_resp2_and_resp3(raw_pair):
    cmds = [
        ('pfadd', 'h', 'a', 'b'),
        ('pfadd', 'h', 'a'),
        ('pfcount', 'h'),
        ('pfcount', 'h', 'none'),
        ('pfmerge', 'm', 'h'),
        ('pfdebug', 'encoding', 'm'),
        ('pfdebug', 'decode', 'm'),
        ('pfdebug', 'todense', 'm'),
        ('pfdebug', 'nope', 'm'),
        ('pfadd', 'none2'),
        ('pfcount', 'none3'),
    ]
    for proto in (2, 3):
        raw_same(raw_pair(proto), [('flushall',), *cmds])


def test_keyspace_events(both):
    assert_same_events(
        both,
        [
            ('pfadd', 'h', 'a'),
            ('pfadd', 'h', 'a'),
            ('pfadd', 'h'),
            ('pfadd', 'e'),
            ('pfcount', 'h'),
            ('pfmerge', 'm', 'h'),
            ('pfmerge', 'm'),
            ('pfdebug', 'todense', 'm'),
            ('pfadd', 'm', 'b'),
        ],
        'KEAn',
    )


@pytest.mark.parametrize(
    'case',
    [
        [('pfadd', 'h', 'a')],  # no register rose
        [('pfadd', 'h', 'zz')],
        [('pfcount', 'h')],  # the cache was valid
        [('pfadd', 'other', 'x'), ('pfcount', 'h', 'other')],
        [('pfmerge', 'h')],
        [('pfdebug', 'todense', 'h')],  # converted in place, silently
    ],
    ids=lambda c: ' '.join(c[-1]),
)
def test_watch_signalling(raw_pair, case):
    pair = raw_pair(2)
    for c in pair:
        for cmd in [('flushall',), ('pfadd', 'h', 'a'), ('pfcount', 'h')]:
            c.cmd(*cmd)
    raw_same(pair, [('watch', 'h')] + case + [('multi',), ('ping',), ('exec',)])
    # a stale cache is written back by PFCOUNT: that is a change WATCH sees
    raw_same(pair, [('pfadd', 'h', 'new'), ('watch', 'h'), ('pfcount', 'h')])
    raw_same(pair, [('multi',), ('ping',), ('exec',)])


def test_an_hll_saved_here_goes_on_in_redis_server(tmp_path):
    """Sparse and dense HLLs written here, saved, loaded by redis-server: it counts them
    the same and adds to them, giving the bytes this server gives for the same additions."""
    proc, port = spawn_store('--dir', str(tmp_path))
    try:
        ours = redis.Redis(port=port)
        ours.pfadd('sparse', *[f's{i}' for i in range(300)])
        ours.pfadd('dense', *[f'd{i}' for i in range(5000)])
        ours.save()
        more = [f'more{i}' for i in range(50)]
        counts = [ours.pfcount('sparse'), ours.pfcount('dense')]
        ours.pfadd('sparse', *more)
        ours.pfadd('dense', *more)
        after = [ours.get('sparse'), ours.get('dense')]
    finally:
        stop(proc)
    rproc, rport = spawn_redis('--dir', str(tmp_path))
    try:
        ref = redis.Redis(port=rport)
        assert ref.execute_command('PFDEBUG', 'ENCODING', 'sparse') == b'sparse'
        assert ref.execute_command('PFDEBUG', 'ENCODING', 'dense') == b'dense'
        assert [ref.pfcount('sparse'), ref.pfcount('dense')] == counts
        ref.pfadd('sparse', *more)
        ref.pfadd('dense', *more)
        assert [ref.get('sparse'), ref.get('dense')] == after
    finally:
        stop(rproc)


@pytest.mark.parametrize('max_bytes', [60, 300, 3000])
def test_add_many_gives_the_bytes_of_adding_one_by_one(max_bytes):
    """PFADD edits a sparse HLL as a list of opcodes (hll.add_many): the same bytes as
    hllAdd element by element, promotions to dense included."""
    rnd = random.Random(max_bytes)
    for _ in range(40):
        h = hll.new()
        for e in [b'%f' % rnd.random() for _ in range(rnd.randint(0, 300))]:
            h, _ = hll.add(h, e, max_bytes)
        elements = [b'%f' % rnd.random() for _ in range(rnd.randint(0, 1500))]
        elements += elements[: rnd.randint(0, 20)]
        one, one_updated = bytearray(h), False
        for e in elements:
            one, changed = hll.add(one, e, max_bytes)
            one_updated = one_updated or changed
        many, many_updated = hll.add_many(bytearray(h), elements, max_bytes)
        for x, updated in ((one, one_updated), (many, many_updated)):
            if updated:
                hll.invalidate(x)
        assert (many_updated, bytes(many)) == (one_updated, bytes(one))


def test_register_bytes_union_and_count_agree_with_the_register_lists():
    """PFCOUNT and PFMERGE read registers a byte each (hll.register_bytes), merge them
    lane by lane in one int (union_bytes) and count from bytes: the same registers,
    maxima and estimate as the per-register functions, sparse and dense, any 6-bit
    values."""
    rnd = random.Random(5)
    for n, max_bytes in ((0, 3000), (10, 3000), (500, 3000), (5000, 3000), (800, 100)):
        h, _ = hll.add_many(hll.new(), [b'%f' % rnd.random() for _ in range(n)], max_bytes)
        regs = hll.registers(h)
        as_bytes = hll.register_bytes(h)
        assert list(as_bytes) == regs
        assert hll.count_bytes(as_bytes) == hll.count(regs)
    for _ in range(5):
        a = [rnd.randrange(64) for _ in range(hll.REGISTERS)]
        b = [rnd.randrange(64) for _ in range(hll.REGISTERS)]
        assert list(hll.union_bytes(bytes(a), bytes(b))) == list(map(max, a, b))
