"""The RDB codec against redis-server 7.0.15, both ways, at the file level: a dump.rdb that
redis-server SAVEs loads here into values that serve exactly what redis-server serves,
and a file RdbEncoder writes loads in redis-server with the same values, encodings, TTLs,
stream metadata, consumer groups and PELs. Plus corrupt files: RdbError naming an offset.
"""

import os
import random
import struct
import time

import pytest
import redis

from conftest import spawn_redis, stop
from store.persistence.rdb_blobs import intset_decode, intset_encode, listpack, lp_decode, lp_elem
from store.persistence.rdb_encoder import RdbEncoder, _stream_nodes
from store.persistence.rdb_loader import RdbLoader
from store.rdb import RdbError, crc64, lzf_compress, lzf_decompress, rdb_len, rdb_string
from store.types import EncodingLimits
from store.types.stream import ENCODED, Stream, encode_entry, make_id
from store.types.zset import sorted_list

LIB = b"#!lua name=rdblib\nredis.register_function('rdbf', function() return 7 end)"
FAR = 4102444800000  # 2100-01-01, a deadline that stays in the future


def populate_commands():
    """Every type and encoding Redis 7.0 writes, across three databases."""
    rnd = random.Random(7)
    cmds = [
        ('SELECT', 0),
        ('SET', 's:int', '12345'),
        ('SET', 's:neg', '-7'),
        ('SET', 's:i64', '-9223372036854775808'),
        ('SET', 's:zero-lead', '0123'),
        ('SET', 's:empty', ''),
        ('SET', 's:long', 'abc' * 400),
        ('SET', 's:rand', bytes(rnd.getrandbits(8) for _ in range(300))),
        ('SET', b'\x00bin\xffkey', b'\r\n\x00'),
        ('SET', 's:ttl', 'v', 'PXAT', FAR),
        ('SET', 's:ttl2', '42', 'PXAT', FAR + 1234),
        ('HSET', 'h:small', 'a', '1', 'b', 'two', 'n', '-5000', 'big', '12345678901', 'e', ''),
        ('HSET', 'h:longval', 'f', 'x' * 100),
        ('HSET', 'h:big', *[x for i in range(600) for x in (f'f{i}', f'v{i}')]),
        ('PEXPIREAT', 'h:small', FAR + 5),
        ('SADD', 'set:ints', 1, 5, -3, 100000, 70000, -40000),
        ('SADD', 'set:i64', 1, 9223372036854775807),
        ('SADD', 'set:strs', 'a', 'b', 'c', '1'),
        ('SADD', 'set:bigint', *range(700)),
        ('ZADD', 'z:small', 1.5, 'a', 0, 'b', -2, 'c', '1e17', 'd', 'inf', 'e', '-inf', 'f'),
        ('ZADD', 'z:small', 3.14159, 'g', 1e300, 'h', -0.0, 'i', 7, '8'),
        ('ZADD', 'z:big', *[x for i in range(200) for x in (i * 0.5, f'm{i}')]),
        ('ZADD', 'z:longmember', 1, 'y' * 100, 2, 'short'),
        ('RPUSH', 'l:small', 'a', '1', '-1', '300', '70000', '5000000000', '', 'b' * 70),
        ('RPUSH', 'l:big', *[f'element-{i}' for i in range(5000)]),
        ('RPUSH', 'l:huge-elem', 'z' * 20000, 'small'),
        ('LPUSH', 'l:ints', *range(1000)),
        ('FUNCTION', 'LOAD', LIB),
    ]
    # streams: several nodes, tombstones, trims, other field sets, groups and PELs
    for i in range(1, 251):
        fields = ('a', i, 'b', 'x' * (i % 7)) if i % 10 else ('other', i)
        cmds.append(('XADD', 'x:big', f'{1000 + i}-{i % 3}', *fields))
    cmds += [
        ('XDEL', 'x:big', '1005-2', '1150-0', '1250-1', '1101-2'),
        ('XTRIM', 'x:big', 'MAXLEN', 230),
        ('XGROUP', 'CREATE', 'x:big', 'g1', '0'),
        ('XGROUP', 'CREATE', 'x:big', 'g0', '$'),
        ('XGROUP', 'CREATE', 'x:big', 'g2', '1100-0', 'ENTRIESREAD', 3),
        ('XREADGROUP', 'GROUP', 'g1', 'alice', 'COUNT', 5, 'STREAMS', 'x:big', '>'),
        ('XREADGROUP', 'GROUP', 'g1', 'bob', 'COUNT', 3, 'STREAMS', 'x:big', '>'),
        ('XREADGROUP', 'GROUP', 'g2', 'carol', 'COUNT', 2, 'STREAMS', 'x:big', '>'),
        ('XGROUP', 'CREATECONSUMER', 'x:big', 'g1', 'idle'),
        ('XACK', 'x:big', 'g1', '1022-1'),
        ('XCLAIM', 'x:big', 'g1', 'bob', 0, '1023-2'),
        ('XADD', 'x:small', '5-1', 'k', 'v'),
        ('XADD', 'x:small', '5-2', 'k', 'w', 'k2', '10'),
        ('XADD', 'x:small', '6-0', 'k', '12345678901234567890'),
        ('XDEL', 'x:small', '5-2'),
        ('XGROUP', 'CREATE', 'x:empty', 'g', '$', 'MKSTREAM'),
        ('XADD', 'x:alldel', '1-1', 'f', 'v'),
        ('XDEL', 'x:alldel', '1-1'),
        ('SELECT', 1),
        ('SET', 'db1:str', 'one', 'PXAT', FAR + 99),
        ('HSET', 'db1:h', 'f', 'v'),
        ('SELECT', 3),
        ('SADD', 'db3:s', 'm'),
        ('SET', 's:int', '3'),
        ('SELECT', 0),
    ]
    return cmds


def run(client, cmds):
    for cmd in cmds:
        client.execute_command(*cmd)


@pytest.fixture
def redis_dir(tmp_path):
    """Start redis-servers in tmp_path; each start(filename, *args) returns a client."""
    procs = []

    def start(dbfilename='dump.rdb', *args):
        proc, port = spawn_redis('--dir', str(tmp_path), '--dbfilename', dbfilename, *args)
        procs.append(proc)
        return redis.Redis(port=port, protocol=2)

    start.dir = tmp_path
    yield start
    for proc in procs:
        stop(proc)


def load(data, limits=None, checksum=True):
    return list(RdbLoader(data, limits or EncodingLimits(), checksum))


def keys_of(records):
    """{(db, key): (value, deadline)} from the loader's records."""
    out = {}
    db = 0
    for rec in records:
        if rec[0] == 'db':
            db = rec[1]
        elif rec[0] == 'key':
            out[db, rec[1]] = (rec[2], rec[3])
    return out


def view(client, dbs=(0, 1, 3), digest=False, times=True):
    """What a client observes of every key: type, encoding, deadline and contents."""
    out = {}
    for db in dbs:
        client.execute_command('SELECT', db)
        for key in sorted(client.keys('*')):
            kind = client.type(key).decode()
            enc = client.object('encoding', key)
            entry = [kind, enc, client.execute_command('PEXPIRETIME', key)]
            if kind == 'string':
                entry.append(client.get(key))
            elif kind == 'list':
                entry.append(client.lrange(key, 0, -1))
            elif kind == 'set':
                entry.append(sorted(client.smembers(key)))
            elif kind == 'hash':
                pairs = list(client.hgetall(key).items())
                entry.append(pairs if enc == b'listpack' else sorted(pairs))
            elif kind == 'zset':
                entry.append(client.zrange(key, 0, -1, withscores=True))
                scan = client.execute_command('ZSCAN', key, 0, 'COUNT', 1000)[1]
                entry.append(scan if enc == b'listpack' else sorted(scan))
            elif kind == 'stream':
                full = client.xinfo_stream(key, full=True)
                full.pop('radix-tree-nodes')
                entry.append(mask_times(full) if not times else full)
                info = client.xinfo_stream(key)
                info.pop('radix-tree-nodes')  # rax internals: types/stream.py estimates them
                entry.append(info)
                entry.append(client.xinfo_groups(key))
            if digest:
                entry.append(client.execute_command('DEBUG', 'DIGEST-VALUE', key))
            out[db, key] = entry
    client.execute_command('SELECT', 0)
    return out


def mask_times(full):
    """XINFO STREAM FULL without delivery and seen times (they differ between servers)."""
    full = dict(full)
    groups = []
    for g in full.get('groups') or []:
        g = dict(g)
        g['pending'] = [[p[0], p[1], None, p[3]] for p in g['pending']]
        consumers = []
        for c in g['consumers']:
            c = dict(c)
            c['seen-time'] = None
            c['pending'] = [[p[0], None, p[2]] for p in c['pending']]
            consumers.append(c)
        g['consumers'] = consumers
        groups.append(g)
    full['groups'] = groups
    return full


def serve(make_server, records):
    """An embedded server of ours holding the loaded keys."""
    srv = make_server()
    ks = srv.server.keyspace

    def put():
        for (db, key), (value, deadline) in keys_of(records).items():
            ks.set(db, key, value, deadline)

    srv.call(put)
    return srv


def encode_file(records, path, compress=True, functions=()):
    """An RDB file of the records' keys written with RdbEncoder, in snapshot order."""
    enc = RdbEncoder(compress=compress)
    by_db = {}
    for (db, key), (value, deadline) in keys_of(records).items():
        by_db.setdefault(db, []).append((key, value, deadline))
    out = [enc.header(), enc.functions(list(functions))]
    for db, items in sorted(by_db.items()):
        out.append(enc.select_db(db, len(items), sum(d is not None for _, _, d in items)))
        out += [enc.key(k, v, d) for k, v, d in items]
    body = b''.join(out)
    data = body + enc.footer(crc64(body))
    path.write_bytes(data)
    return data


@pytest.fixture
def saved(redis_dir):
    """A redis-server populated with every type, its SAVEd dump.rdb, and its view."""
    client = redis_dir()
    run(client, populate_commands())
    client.save()
    data = (redis_dir.dir / 'dump.rdb').read_bytes()
    return client, data


# -- redis-server -> here ---------------------------------------------------------------------


def test_redis_dump_loads_with_every_value(saved, make_server):
    """dump.rdb from redis-server: every key, TTL, encoding and stream detail served by
    our server after loading equals what redis-server serves."""
    ref, data = saved
    records = load(data)
    aux = {r[1]: r[2] for r in records if r[0] == 'aux'}
    assert aux[b'redis-ver'] == b'7.0.15' and aux[b'redis-bits'] == b'64'
    assert [r[1] for r in records if r[0] == 'function'] == [LIB]
    assert [r[1] for r in records if r[0] == 'db'] == [0, 1, 3]
    assert ('resize', 2, 1) in records  # db 1: two keys, one with a TTL
    keys = keys_of(records)
    assert (0, b'x:alldel') in keys and (0, b'x:empty') in keys  # empty streams stay
    assert keys[0, b's:ttl'][1] == FAR
    srv = serve(make_server, records)
    ours = srv.client(protocol=2)
    assert view(ours) == view(ref)


def test_loaded_stream_internals(saved):
    """The stream's bookkeeping as rdb.c wrote it: tombstones of trimmed and deleted
    entries kept in their node, counters, groups' entries-read (-1 when unknown)."""
    ref, data = saved
    s = keys_of(load(data))[0, b'x:big'][0]
    assert isinstance(s, Stream)
    assert s.length == ref.xlen('x:big') == 230
    assert s.entries_added == 250
    assert s.last_id == s.max_deleted == make_id(1250, 1)
    assert s.ntomb == 3 and s.vals[s.ids.index(make_id(1150, 0))] is None
    assert s.start > 0  # the first node's trimmed entries, deleted in place
    assert (s.base + s.start) // 100 == 0 and s.node_count() == 3
    assert [g.entries_read for g in s.groups.values()] == [
        -1 if g['entries-read'] is None else g['entries-read'] for g in ref.xinfo_groups('x:big')
    ]
    g1 = s.groups[b'g1']
    assert sorted(g1.consumers) == [b'alice', b'bob', b'idle']
    assert all(n.consumer.pel.get(i) is n for i, n in g1.pel.iter_from(0))


def test_lru_lfu_opcodes(redis_dir):
    """IDLE and FREQ opcodes come with the key they precede."""
    client = redis_dir('dump.rdb', '--maxmemory-policy', 'allkeys-lfu')
    client.set('k', 'v')
    client.save()
    (rec,) = [r for r in load((redis_dir.dir / 'dump.rdb').read_bytes()) if r[0] == 'key']
    assert rec[1:4] == (b'k', b'v', None) and rec[4] is None and rec[5] is not None
    client.config_set('maxmemory-policy', 'allkeys-lru')
    client.save()
    (rec,) = [r for r in load((redis_dir.dir / 'dump.rdb').read_bytes()) if r[0] == 'key']
    assert rec[4] is not None and rec[5] is None


def test_loaded_encodings_follow_limits(saved):
    """The encoding after loading follows the loading server's thresholds, as
    rdbLoadObject decides it."""
    _, data = saved
    limits = EncodingLimits()
    limits.hash_entries = limits.zset_entries = limits.set_intset_entries = 2
    keys = keys_of(load(data, limits))
    assert keys[0, b'h:small'][0].encoding() == 'hashtable'
    assert keys[0, b'z:small'][0].encoding() == 'skiplist'
    assert keys[0, b'set:ints'][0].encoding() == 'hashtable'
    limits = EncodingLimits()
    limits.hash_value = limits.zset_value = 1
    keys = keys_of(load(data, limits))
    assert keys[0, b'h:small'][0].encoding() == 'listpack'  # listpack form: lengths unchecked
    assert keys[0, b'z:small'][0].encoding() == 'listpack'
    assert keys[0, b'z:big'][0].encoding() == 'skiplist'
    limits.zset_entries = 1000
    keys = keys_of(load(data, limits))
    assert keys[0, b'z:big'][0].encoding() == 'skiplist'  # skiplist form: members checked
    limits.zset_value = 64
    assert keys_of(load(data, limits))[0, b'z:big'][0].encoding() == 'listpack'


# -- here -> redis-server ---------------------------------------------------------------------


@pytest.mark.parametrize('compress', [True, False])
def test_encoded_file_loads_in_redis(saved, redis_dir, compress):
    """The values loaded from redis-server's dump, written back with RdbEncoder, load in
    redis-server with the same values, digests, encodings, TTLs and stream details."""
    ref, data = saved
    records = load(data)
    functions = [r[1] for r in records if r[0] == 'function']
    written = encode_file(records, redis_dir.dir / 'ours.rdb', compress, functions)
    again = keys_of(load(written))
    assert {k: d for k, (_, d) in again.items()} == {k: d for k, (_, d) in keys_of(records).items()}
    other = redis_dir('ours.rdb', '--rdbcompression', 'yes' if compress else 'no')
    assert view(other, digest=True) == view(ref, digest=True)
    assert other.function_list(withcode=True) == ref.function_list(withcode=True)
    if not compress:
        assert b'abc' * 400 in written
    else:
        assert b'abc' * 400 not in written


def test_values_built_here_load_in_redis(make_server, redis_dir):
    """Values our own commands built (stream tombstones, trims, groups, journal-style
    ENCODED entries) written with RdbEncoder serve in redis-server as the same commands
    run on redis-server serve."""
    srv = make_server()
    ours = srv.client(protocol=2)
    ref = redis_dir()
    cmds = [c for c in populate_commands() if c[0] != 'FUNCTION']
    run(ours, cmds)
    run(ref, cmds)
    ks = srv.server.keyspace

    def snapshot():
        out = []
        for db in (0, 1, 3):
            for key in ks.keys(db):
                out.append(('key', key, ks.read(db, key), ks.deadline(db, key), db))
        return out

    flat = srv.call(snapshot)
    records = []
    for _, key, value, deadline, db in flat:
        records += [('db', db), ('key', key, value, deadline, None, None)]
    encode_file(records, redis_dir.dir / 'built.rdb')
    other = redis_dir('built.rdb')
    assert view(other, digest=True, times=False) == view(ref, digest=True, times=False)


def test_encoded_journal_entries(redis_dir):
    """Stream entries whose fields live only in their encoding (the journal's) are
    written with their fields."""
    s = Stream()
    for n in range(1, 150):
        i = make_id(10, n)
        fields = (b'event', b'set', b'key', b'k%d' % n)
        s.append(i, ENCODED, encode_entry(i, fields))
    s.trim_maxlen(120)
    records = [('db', 0), ('key', b'journal', s, None, None, None)]
    encode_file(records, redis_dir.dir / 'j.rdb')
    client = redis_dir('j.rdb')
    got = client.xrange('journal')
    assert len(got) == 120
    assert got[0] == (b'10-30', {b'event': b'set', b'key': b'k30'})
    info = client.xinfo_stream('journal')
    assert info['entries-added'] == 149 and info['recorded-first-entry-id'] == b'10-30'
    back = keys_of(load((redis_dir.dir / 'j.rdb').read_bytes()))[0, b'journal'][0]
    assert back.range(0, make_id(10, 40)) == [
        (make_id(10, n), (b'event', b'set', b'key', b'k%d' % n)) for n in range(30, 41)
    ]


# -- blobs and primitives ---------------------------------------------------------------------


def test_listpack_and_intset_round_trip():
    items = [b'', b'0', b'127', b'128', b'-1', b'-4096', b'4095', b'4096', b'-32769', b'x' * 63]
    items += [b'y' * 64, b'z' * 5000, b'8388608', b'2147483648', b'-9223372036854775808', b'01']
    blob = listpack([lp_elem(x) for x in items])
    assert [x if type(x) is bytes else b'%d' % x for x in lp_decode(blob)] == items
    values = [5, -3, 70000, -(2**40), 2**63 - 1]
    assert intset_decode(intset_encode(values)) == tuple(sorted(values))
    assert intset_encode([1, 2])[:4] == b'\x02\x00\x00\x00'


def test_sorted_list_is_what_sortedlist_builds():
    """The loader's sorted sets skip SortedList's constructor (types/zset.py sorted_list):
    the fields it sets must be the ones sortedcontainers would, and keep working."""
    from sortedcontainers import SortedList

    rnd = random.Random(2)
    for n in (0, 1, 5, 999, 1000, 1001, 2500):
        pairs = sorted((rnd.random(), b'm%d' % i) for i in range(n))
        built, reference = sorted_list(list(pairs)), SortedList(pairs)
        built._check()
        assert vars(built) == vars(reference)
        for sl in (built, reference):
            sl.update([(0.5, b'x'), (2.0, b'y')])
            sl.discard(pairs[0] if pairs else (0.5, b'x'))
        built._check()
        assert list(built) == list(reference) and built.bisect_left((0.5, b'x')) == (
            reference.bisect_left((0.5, b'x'))
        )


def test_charges_computed_while_loading_are_value_size(saved):
    """The charge a reader computes for a small aggregate (sizes.elements_size) is the one
    value_size gives the loaded value, over redis-server's file and our own."""
    from store.memory.sizes import value_size
    from store.types.hash import Hash
    from store.types.list import List
    from store.types.set import Set
    from store.types.zset import ZSet

    enc = RdbEncoder()
    parts = [enc.header(), enc.select_db(0, 0, 0)]
    for n in range(1, 8):
        z = ZSet()
        for i in range(n):
            z.add(b'm%d' % i if i % 2 else b'%d' % i, i * 1.5 - 2)
        values = [
            Hash({b'f%d' % i: b'v' * (i * 30) for i in range(n)}),
            List([b'%d' % i if i % 2 else b'e' * (i * 40) for i in range(n)]),
            Set.built(EncodingLimits(), [b'x' * i for i in range(n)]),
            Set.built(EncodingLimits(), [b'%d' % i for i in range(n)]),
            z,
        ]
        parts += [enc.key(b'k%d:%d' % (n, j), v, None) for j, v in enumerate(values)]
    body = b''.join(parts)
    ours = body + enc.footer(crc64(body))
    for data, least in ((saved[1], 3), (ours, 20)):
        computed = 0
        for rec in RdbLoader(data, EncodingLimits()).batches():
            if rec[0] == 'keys':
                for i, charge in rec[4]:
                    if charge:
                        assert charge == value_size(rec[2][i]), rec[1][i]
                        computed += 1
        assert computed >= least


def test_lzf_matches_redis(ref):
    """rdb_string's LZF output is byte for byte what redis-server's DUMP holds."""
    rnd = random.Random(3)
    for n in (21, 64, 100, 1000, 5000):
        for alphabet in (b'ab', b'abcdefgh', bytes(range(256))):
            data = bytes(rnd.choice(alphabet) for _ in range(n))
            ref.set('k', data)
            payload = ref.dump('k')
            assert payload[1:-10] == rdb_string(data)
            packed = lzf_compress(data, n - 4)
            if packed is not None:
                assert lzf_decompress(packed, n) == data
    assert lzf_decompress(b'\xff\xff', 100) is None
    assert lzf_decompress(b'\x00a', 10**9) is None


# -- corruption ---------------------------------------------------------------------------


def offset_of(err):
    assert 'offset' in str(err)
    return int(str(err).rsplit('offset ', 1)[1].rstrip(')').split(':')[0].split()[0])


def test_truncated_files_raise_with_offset(saved):
    _, data = saved
    rnd = random.Random(1)
    cuts = {0, 5, 9, 10, len(data) - 1, len(data) - 8, len(data) - 9}
    cuts |= {rnd.randrange(len(data)) for _ in range(60)}
    for cut in sorted(cuts):
        with pytest.raises(RdbError) as e:
            load(data[:cut])
        assert offset_of(e.value) <= cut


def test_truncated_long_length_names_an_offset_within_the_data():
    """A file cut inside a 32- or 64-bit length (a long string, a stream's ids)."""
    head = RdbEncoder().header() + b'\xfe\x00'
    for length in (b'\x80' + (70000).to_bytes(4, 'big'), b'\x81' + (70000).to_bytes(8, 'big')):
        data = head + b'\x00\x01k' + length + b'v' * 70000
        for cut in range(len(head) + 4, len(head) + 3 + len(length)):
            with pytest.raises(RdbError) as e:
                load(data[:cut])
            assert offset_of(e.value) <= cut


def test_flipped_byte_is_a_checksum_error(saved):
    _, data = saved
    pos = data.index(b'bin\xffkey')
    bad = data[:pos] + bytes([data[pos] ^ 0x20]) + data[pos + 1 :]
    with pytest.raises(RdbError, match='checksum'):
        load(bad)
    load(bad, checksum=False)  # the flip is inside a string: only the CRC notices
    nocrc = data[:-8] + bytes(8)
    loader = RdbLoader(nocrc, EncodingLimits())
    assert len(list(loader)) == len(load(data)) and loader.checksum_disabled


def test_random_corruption_never_escapes_as_another_exception(saved):
    _, data = saved
    rnd = random.Random(5)
    for _ in range(300):
        bad = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            bad[rnd.randrange(9, len(bad))] = rnd.getrandbits(8)
        try:
            load(bytes(bad), checksum=False)
        except RdbError as e:
            assert 'offset' in str(e)


def test_bad_opcode_version_and_signature():
    enc = RdbEncoder()
    head = enc.header()
    body = head + b'\xfe\x00' + b'\x08\x01k\x01v'  # type 8: no such type
    with pytest.raises(RdbError, match=f'Unknown RDB encoding type 8.*offset {len(head) + 2}'):
        load(body + enc.footer(crc64(body)))
    body = head + b'\xf7'  # module aux data
    with pytest.raises(RdbError, match='module'):
        load(body + enc.footer(crc64(body)))
    body = head + b'\xf6\x01p'
    with pytest.raises(RdbError, match='Pre-release function format'):
        load(body + enc.footer(crc64(body)))
    with pytest.raises(RdbError, match="Can't handle RDB format version 0011"):
        load(b'REDIS0011' + head[9:] + b'\xff' + bytes(8))
    with pytest.raises(RdbError, match='Wrong signature'):
        load(b'RADIS0010\xff' + bytes(8))
    old = b'REDIS0004\xfe\x00\x00\x01k\x01v\xff'  # no checksum before version 5
    assert keys_of(load(old)) == {(0, b'k'): (b'v', None)}


def test_empty_aggregates_are_skipped():
    enc = RdbEncoder()
    body = enc.header() + b'\xfe\x00' + b'\x02\x01s\x00' + b'\x04\x01h\x00' + b'\x00\x01k\x01v'
    assert keys_of(load(body + enc.footer(crc64(body)))) == {(0, b'k'): (b'v', None)}


# -- throughput (reported, not asserted) --------------------------------------------------


def test_throughput_report(capsys):
    """Encoder and loader keys/s over mixed small keys (printed with -s; no assertion on
    speed, only that it all round-trips)."""
    from store.types.hash import Hash
    from store.types.set import Set
    from store.types.zset import ZSet

    n = int(os.environ.get('RDB_BENCH_KEYS', '20000'))
    values = []
    for i in range(n):
        kind = i % 5
        if kind < 2:
            v = b'value-%d' % i
        elif kind == 2:
            v = Hash({b'f1': b'%d' % i, b'name': b'user%d' % i, b'flag': b'1'})
        elif kind == 3:
            v = Set([b'%d' % (i + j) for j in range(4)])
        else:
            v = ZSet()
            for j in range(4):
                v.add(b'm%d' % j, float(j))
        values.append((b'key:%d' % i, v))
    enc = RdbEncoder()
    t0 = time.perf_counter()
    parts = [enc.header(), enc.select_db(0, n, 0)]
    parts += [enc.key(k, v, None) for k, v in values]
    body = b''.join(parts)
    data = body + enc.footer(crc64(body))
    t1 = time.perf_counter()
    loaded = sum(1 for r in RdbLoader(data, EncodingLimits()) if r[0] == 'key')
    t2 = time.perf_counter()
    assert loaded == n
    with capsys.disabled():
        print(
            f'\nRDB codec, {n} mixed small keys: encode {n / (t1 - t0):,.0f} keys/s, '
            f'load {n / (t2 - t1):,.0f} keys/s'
        )


# -- older encodings (RDB 9 and before), loaded here and by redis-server -----------------------


def ziplist(items):
    """A ziplist as Redis 6 wrote them: prevlen, then a small string or integer entry."""
    entries = []
    prev = 0
    for item in items:
        if type(item) is int:
            if 0 <= item <= 12:
                body = bytes([0xF1 + item])
            else:
                body = b'\xc0' + item.to_bytes(2, 'little', signed=True)
        else:
            body = bytes([len(item)]) + item
        entry = bytes([prev]) + body
        entries.append(entry)
        prev = len(entry)
    blob = b''.join(entries)
    tail = 10 + len(blob) - len(entries[-1])
    return struct.pack('<IIH', 10 + len(blob) + 1, tail, len(items)) + blob + b'\xff'


def zipmap(pairs):
    out = bytes([len(pairs)])
    for f, v in pairs:
        out += bytes([len(f)]) + f + bytes([len(v)]) + b'\x00' + v
    return out + b'\xff'


def old_stream(key):
    """RDB_TYPE_STREAM_LISTPACKS (15): no first id, max deleted id, entries added, nor a
    group's entries-read."""
    s = Stream()
    for n in range(1, 6):
        s.append(make_id(7, n), (b'f', b'%d' % n))
    s.delete(make_id(7, 3))
    out = b'\x0f' + rdb_string(key)
    nodes = _stream_nodes(s)
    out += rdb_len(len(nodes))
    for master, blob in nodes:
        out += rdb_string(master.to_bytes(16, 'big')) + rdb_string(blob)
    out += rdb_len(4) + rdb_len(7) + rdb_len(5)  # length, last id
    out += rdb_len(1) + rdb_string(b'grp') + rdb_len(7) + rdb_len(2)  # group at 7-2
    out += rdb_len(1) + make_id(7, 2).to_bytes(16, 'big') + struct.pack('<q', 1000) + b'\x02'
    out += rdb_len(1) + rdb_string(b'cons') + struct.pack('<q', 2000)
    out += rdb_len(1) + make_id(7, 2).to_bytes(16, 'big')
    return out


def test_legacy_encodings_load_as_in_redis(redis_dir, make_server):
    """Zipmap, ziplists, quicklist of ziplists, text-score zsets, plain lists and version-1
    streams (RDB 9 and older writers) load here as redis-server 7.0.15 loads them."""
    body = b'REDIS0009\xfe\x00'
    body += b'\x09' + rdb_string(b'zipmap') + rdb_string(zipmap([(b'a', b'1'), (b'bb', b'x')]))
    body += b'\x0a' + rdb_string(b'zl-list') + rdb_string(ziplist([b'a', 5, 300, b'zz']))
    body += b'\x0c' + rdb_string(b'zl-zset') + rdb_string(ziplist([b'm', 1, b'n', b'2.5']))
    body += b'\x0d' + rdb_string(b'zl-hash') + rdb_string(ziplist([b'f', 1, b'g', b'v']))
    body += b'\x0e' + rdb_string(b'ql') + b'\x02' + rdb_string(ziplist([b'x', 1]))
    body += rdb_string(ziplist([b'y', b'z']))
    body += b'\x03' + rdb_string(b'z-text') + b'\x02' + rdb_string(b'a') + b'\x031.5'
    body += rdb_string(b'b') + b'\xfe'  # +inf
    body += b'\x01' + rdb_string(b'plain-list') + b'\x02' + rdb_string(b'p') + rdb_string(b'7')
    body += b'\xfd' + struct.pack('<i', 2100000000) + b'\x00' + rdb_string(b'old-ttl') + b'\x01v'
    body += old_stream(b'stream-v1')
    body += b'\xff'
    data = body + crc64(body).to_bytes(8, 'little')
    (redis_dir.dir / 'legacy.rdb').write_bytes(data)
    ref = redis_dir('legacy.rdb')
    records = load(data)
    keys = keys_of(records)
    assert keys[0, b'old-ttl'][1] == 2100000000000
    assert keys[0, b'stream-v1'][0].groups[b'grp'].entries_read == -1  # estimated: unknown
    ours = serve(make_server, records).client(protocol=2)
    assert view(ours, dbs=(0,)) == view(ref, dbs=(0,))
    assert len(view(ref, dbs=(0,))) == 9
