"""The keys of database 0 by hash slot (store/db_slice: DbSlice.slots, kept under
cluster-enabled yes for CLUSTER COUNTKEYSINSLOT, GETKEYSINSLOT and a slot's migration).

Every way a key comes or goes in cluster mode (SET, MSET, INCR, RESTORE, RENAME, FLUSHDB,
lazy and active expiry, eviction, a reload of the RDB file) is driven over TCP on a
server running in process, and after each the index is compared, on the server's own
loop, with the keys database 0 actually holds grouped by CRC16 slot."""

import time

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import wait_until
from store.db_slice import key_slot
from store.embed import EmbeddedServer


@pytest.fixture(scope='module')
def srv(tmp_path_factory):
    data = tmp_path_factory.mktemp('slots')
    with EmbeddedServer(
        cluster_enabled='yes', enable_debug_command='yes', save='', dir=str(data)
    ) as s:
        # a node serves the keys of its slots only (-CLUSTERDOWN Hash slot not served):
        # this one serves them all, once its cluster is ok
        with s.client() as c:
            c.execute_command('CLUSTER', 'ADDSLOTSRANGE', 0, 16383)
            wait_until(lambda: b'cluster_state:ok' in c.execute_command('CLUSTER', 'INFO'))
        yield s


@pytest.fixture
def r(srv):
    client = srv.client(protocol=2)
    client.flushall()
    client.config_set('maxmemory', 0)
    client.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', 1)
    yield client
    client.close()


def index_and_truth(ks):
    """(the index: slot -> keys, database 0's keys grouped by slot, the counts and
    listings the index answers for each slot), read on the server's loop."""
    index, truth = {}, {}
    for s in ks.shards:
        for slot, keys in s.slots.items():
            assert slot not in index  # one shard per slot
            index[slot] = set(keys)
        for key in s.keys(0):
            truth.setdefault(key_slot(key), set()).add(key)
    answers = {
        slot: (ks.slot_shard[slot].count_in_slot(slot), ks.slot_shard[slot].keys_in_slot(slot, 2))
        for slot in truth
    }
    return index, truth, answers


def check(srv):
    index, truth, answers = srv.call(index_and_truth, srv.server.keyspace)
    assert index == truth
    for slot, (count, some) in answers.items():
        assert count == len(truth[slot])
        assert len(some) == min(2, count) and set(some) <= truth[slot]


def test_every_way_a_key_comes_and_goes_keeps_the_index(srv, r):
    r.set('{user:1}:a', 1)
    r.mset({'{user:1}:b': 2, '{user:1}:d': 5})  # (one slot: -CROSSSLOT otherwise)
    r.set('plain', 3)
    r.set('{user:2}:c', 4)
    r.incr('counter')
    r.sadd('{user:1}:set', 'x', 'y')
    check(srv)
    assert (
        srv.call(
            srv.server.keyspace.slot_shard[key_slot(b'user:1')].count_in_slot, key_slot(b'user:1')
        )
        == 4
    )
    r.restore('restored', 0, r.dump('plain'))
    r.rename('{user:1}:a', '{user:1}:renamed')
    r.delete('{user:1}:b')
    r.unlink('{user:1}:set')
    check(srv)
    # (MOVE and SWAPDB are refused in cluster mode, as in Redis: database 0 only)
    with pytest.raises(redis.ResponseError, match='not allowed in cluster mode'):
        r.move('{user:2}:c', 1)
    check(srv)
    r.set('soon', 1, px=1)  # active expiry
    wait_until(
        lambda: (
            r.exists('soon') == 0
            and srv.call(lambda: b'soon' not in srv.server.keyspace.shard_for(b'soon').keys(0))
        ),
        'the expiry',
    )
    check(srv)
    r.execute_command('DEBUG', 'SET-ACTIVE-EXPIRE', 0)
    r.set('lazy', 1, px=1)
    time.sleep(0.01)
    assert r.get('lazy') is None  # lazy expiry
    check(srv)
    r.execute_command('DEBUG', 'RELOAD')  # the RDB load, straight into the shards
    check(srv)
    r.flushdb()
    check(srv)


def test_eviction_keeps_the_index(srv, r):
    r.config_set('maxmemory-policy', 'allkeys-random')
    for i in range(200):
        r.set(f'{{tag{i % 7}}}:{i}', 'v' * 1000)
    used = r.info('memory')['used_memory']
    r.config_set('maxmemory', used - 50_000)
    r.set('one-more', 'v' * 1000)
    assert r.dbsize() < 200
    check(srv)
    r.config_set('maxmemory', 0)
    r.config_set('maxmemory-policy', 'noeviction')


KEYS = st.sampled_from(['a', 'b', '{t}a', '{t}b', '{u}', 'c{t}'])
OPS = st.lists(
    st.one_of(
        st.tuples(st.just('set'), KEYS),
        st.tuples(st.just('setpx'), KEYS),
        st.tuples(st.just('del'), KEYS),
        st.tuples(st.just('rename'), KEYS, KEYS),
        st.tuples(st.just('move'), KEYS),
        st.tuples(
            st.just('swapdb'),
        ),
        st.tuples(
            st.just('flushdb'),
        ),
        st.tuples(st.just('sadd'), KEYS),
    ),
    max_size=12,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
def test_random_sequences_keep_the_index(srv, r, ops):
    r.flushall()
    for op, *keys in ops:
        try:
            if op == 'set':
                r.set(keys[0], 1)
            elif op == 'setpx':
                r.set(keys[0], 1, px=1)
            elif op == 'del':
                r.delete(keys[0])
            elif op == 'rename':
                r.rename(keys[0], keys[1])
            elif op == 'move':
                r.move(keys[0], 1)
            elif op == 'swapdb':
                r.execute_command('SWAPDB', 0, 1)
            elif op == 'flushdb':
                r.flushdb()
            else:
                r.sadd(keys[0], 'm')
        except redis.ResponseError:
            pass  # no such key, WRONGTYPE: nothing changed
    check(srv)
