"""redis-py's own distributed lock (`r.lock(...)`), used unmodified against our server.

The lock is the most common real-world user of scripting: acquiring is SET NX PX, but
release, extend and reacquire are Lua scripts that redis-py runs with EVALSHA, loading
them with SCRIPT LOAD when the server answers NOSCRIPT. Each scenario runs against our
server and against redis-server, so a test that only passes on one of them shows a
difference, not a quirk of the test. Timing-based scenarios assert orderings and outcomes
(who got the lock, and after what), never how fast anything happened."""

import asyncio
import threading
import time

import pytest
import redis
import redis.asyncio
from redis.exceptions import LockError, LockNotOwnedError
from redis.lock import Lock

from conftest import WAIT, assert_same, in_time, now_ms, wait_until


@pytest.fixture(params=['ours', pytest.param('redis', marks=pytest.mark.differential)])
def target(request, server):
    """(host, port) of the server under test, flushed, with an empty script cache, so each
    test's first script call goes through NOSCRIPT -> SCRIPT LOAD -> EVALSHA as a fresh
    client of a fresh server would. redis-server is only started for its own variant."""
    if request.param == 'ours':
        address = (server.host, server.port)
    else:
        address = request.getfixturevalue('redis_ref')
    with redis.Redis(*address, protocol=2) as admin:
        admin.flushall()
        admin.script_flush()
    return address


@pytest.fixture
def connect(target):
    """Factory of sync RESP2 clients of `target`: one per lock holder, as separate
    processes would have; all closed after the test."""
    made = []

    def make():
        client = redis.Redis(*target, protocol=2)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def test_acquire_owned_locked_release(connect):
    c, other = connect(), connect()
    lock = c.lock('lock:a', timeout=100)
    rival = other.lock('lock:a', timeout=100)
    assert not lock.locked() and not lock.owned()

    assert lock.acquire(blocking=False)
    assert lock.locked() and lock.owned()
    assert c.get('lock:a') == lock.local.token
    assert 0 < c.pttl('lock:a') <= 100_000
    # Another holder sees the lock taken, does not own it, and cannot take it.
    assert rival.locked() and not rival.owned()
    assert not rival.acquire(blocking=False)
    assert c.get('lock:a') == lock.local.token

    lock.release()
    assert not lock.locked() and not lock.owned()
    assert c.exists('lock:a') == 0
    # Once released, it is free for anyone.
    assert rival.acquire(blocking=False)
    assert rival.owned() and not lock.owned()
    rival.release()
    assert c.exists('lock:a') == 0


def test_context_manager(connect):
    c = connect()
    with c.lock('lock:cm', timeout=100) as lock:
        assert lock.owned()
        assert c.exists('lock:cm') == 1
    assert c.exists('lock:cm') == 0


def test_extend_replace_ttl_and_reacquire(connect):
    c = connect()
    lock = c.lock('lock:ttl', timeout=100)
    assert lock.acquire(blocking=False)
    before = c.pttl('lock:ttl')
    assert 0 < before <= 100_000

    # extend adds to what is left: more than the whole first timeout, unless 100 s passed.
    assert lock.extend(100) is True
    assert 100_000 < c.pttl('lock:ttl') <= before + 100_000

    # replace_ttl sets the TTL to the given time.
    assert lock.extend(2, replace_ttl=True) is True
    assert 0 < c.pttl('lock:ttl') <= 2_000

    # reacquire resets it to the lock's timeout.
    assert lock.reacquire() is True
    assert 2_000 < c.pttl('lock:ttl') <= 100_000
    assert lock.owned()

    # A float extension is sent as whole milliseconds.
    assert lock.extend(0.5, replace_ttl=True) is True
    assert 0 < c.pttl('lock:ttl') <= 500
    lock.release()
    assert c.exists('lock:ttl') == 0


def test_not_owned(connect):
    c, other = connect(), connect()
    lock = c.lock('lock:stolen', timeout=100)
    assert lock.acquire(blocking=False)
    # Someone else's value now: the scripts must leave it alone.
    other.set('lock:stolen', 'someone-else', px=100_000)
    assert not lock.owned() and lock.locked()
    with pytest.raises(LockNotOwnedError):
        lock.extend(10)
    with pytest.raises(LockNotOwnedError):
        lock.reacquire()
    with pytest.raises(LockNotOwnedError):
        lock.release()
    assert c.get('lock:stolen') == b'someone-else'
    assert 10_000 < c.pttl('lock:stolen') <= 100_000  # extend and reacquire did not touch it

    # A lock whose key is gone is not owned either.
    lock2 = c.lock('lock:gone', timeout=100)
    assert lock2.acquire(blocking=False)
    other.delete('lock:gone')
    with pytest.raises(LockNotOwnedError):
        lock2.release()
    assert c.exists('lock:gone') == 0

    # A lock never acquired is refused by redis-py itself, before any command.
    with pytest.raises(LockError):
        c.lock('lock:never').release()


def test_extend_refuses_a_key_without_ttl(connect):
    """The extend script returns 0 when PTTL is -1 (the token matches, but the key has
    no TTL): redis-py reports that as not owned."""
    c = connect()
    lock = c.lock('lock:nottl', timeout=100)
    assert lock.acquire(blocking=False)
    c.persist('lock:nottl')
    with pytest.raises(LockNotOwnedError):
        lock.extend(10)
    assert c.ttl('lock:nottl') == -1
    lock.release()
    assert c.exists('lock:nottl') == 0


def test_blocking_acquire_waits_for_release(connect):
    holder_client, waiter_client = connect(), connect()
    holder = holder_client.lock('lock:wait', timeout=WAIT * 2)
    # thread_local=False: the token the thread gets is checked here, in the main thread.
    waiter = waiter_client.lock('lock:wait', timeout=WAIT * 2, sleep=0.01, thread_local=False)
    assert holder.acquire(blocking=False)

    events = []
    result = {}

    def wait_for_lock():
        result['acquired'] = waiter.acquire(blocking=True, blocking_timeout=WAIT)
        events.append('acquired')

    thread = threading.Thread(target=wait_for_lock, daemon=True)
    thread.start()
    # While the holder has it, the waiter keeps trying and does not return.
    time.sleep(0.3)
    assert thread.is_alive() and events == []
    assert holder.owned() and not waiter.owned()

    events.append('released')
    holder.release()
    thread.join(WAIT)
    assert not thread.is_alive()
    assert result['acquired'] is True
    assert events == ['released', 'acquired']
    assert waiter.owned() and not holder.owned()
    waiter.release()


def test_blocking_timeout_gives_up(connect):
    holder_client, waiter_client = connect(), connect()
    holder = holder_client.lock('lock:busy')  # no timeout: held until released
    waiter = waiter_client.lock('lock:busy', sleep=0.05)
    assert holder.acquire(blocking=False)
    token = holder_client.get('lock:busy')

    start = time.monotonic()
    assert waiter.acquire(blocking=True, blocking_timeout=0.5) is False
    # redis-py gives up when the next try would fall after the timeout: not before the
    # timeout less one sleep (a lower bound, true however slow the machine).
    assert time.monotonic() - start >= 0.5 - 0.05 - 0.01
    assert not waiter.owned() and holder.owned()
    assert holder_client.get('lock:busy') == token
    assert holder_client.ttl('lock:busy') == -1
    holder.release()


def test_lock_expires_by_itself(connect):
    c, other = connect(), connect()
    rival = other.lock('lock:exp', timeout=100)

    def setup(deadline):
        """Take the lock with a timeout that ends at `deadline`, and see the rival refused
        while it is held (in_time retries with a longer timeout if this ran past it)."""
        c.delete('lock:exp')
        lock = c.lock('lock:exp', timeout=(deadline - now_ms()) / 1000)
        assert lock.acquire(blocking=False)
        refused = not rival.acquire(blocking=False)
        return lock, refused

    deadline, (lock, refused) = in_time(setup, 300)
    assert refused
    # Nobody releases it: it expires, then the rival gets it.
    wait_until(lambda: rival.acquire(blocking=False), 'the rival taking the expired lock')
    assert now_ms() >= deadline - 2  # not before the timeout (2 ms: clock rounding)
    assert rival.owned() and not lock.owned()
    with pytest.raises(LockNotOwnedError):
        lock.release()
    assert rival.owned()
    rival.release()
    assert c.exists('lock:exp') == 0


def test_scripts_are_reloaded_after_script_flush(connect):
    """redis-py keeps the scripts' SHA1s; after SCRIPT FLUSH, EVALSHA answers NOSCRIPT
    and redis-py loads the script again and retries."""
    c = connect()
    lock = c.lock('lock:flush', timeout=100)
    assert lock.acquire(blocking=False)
    lock.extend(1)
    assert c.script_exists(Lock.lua_extend.sha) == [True]
    c.script_flush()
    assert c.script_exists(Lock.lua_extend.sha, Lock.lua_release.sha) == [False, False]
    lock.extend(1)
    lock.release()
    assert c.exists('lock:flush') == 0
    assert c.script_exists(Lock.lua_extend.sha, Lock.lua_release.sha) == [True, True]


def test_lock_scripts_raw_replies(both):
    """The lock's scripts, run by hand: every reply (NOSCRIPT included) as redis-server's."""
    release, extend, reacquire = (
        Lock.LUA_RELEASE_SCRIPT,
        Lock.LUA_EXTEND_SCRIPT,
        Lock.LUA_REACQUIRE_SCRIPT,
    )
    for c in both:
        c.script_flush()
    ours = both[0]
    shas = {s: ours.script_load(s) for s in (release, extend, reacquire)}
    ours.script_flush()
    rel, ext, rea = (shas[s] for s in (release, extend, reacquire))
    assert_same(
        both,
        [
            ['EVALSHA', rel, 1, 'lk', 'tok'],
            ['SCRIPT', 'LOAD', release],
            ['SCRIPT', 'LOAD', extend],
            ['SCRIPT', 'LOAD', reacquire],
            ['SCRIPT', 'EXISTS', rel, ext, rea, 'f' * 40],
            ['EVALSHA', rel, 1, 'lk', 'tok'],  # no key
            ['EVALSHA', ext, 1, 'lk', 'tok', 1000, '0'],
            ['SET', 'lk', 'tok', 'PX', 100000],
            ['EVALSHA', ext, 1, 'lk', 'nope', 1000, '0'],  # wrong token
            ['EVALSHA', ext, 1, 'lk', 'tok', 100000, '0'],
            ['EVALSHA', ext, 1, 'lk', 'tok', 50000, '1'],
            ['EVALSHA', rea, 1, 'lk', 'tok', 100000],
            ['EVALSHA', rea, 1, 'lk', 'nope', 100000],
            ['PERSIST', 'lk'],
            ['EVALSHA', ext, 1, 'lk', 'tok', 1000, '0'],  # PTTL -1: refused
            ['EVALSHA', rel, 1, 'lk', 'nope'],
            ['GET', 'lk'],
            ['EVALSHA', rel, 1, 'lk', 'tok'],
            ['EXISTS', 'lk'],
            ['EVALSHA', ext, 0, 'lk', 'tok', 1000, '0'],  # no key given: KEYS[1] is nil
        ],
    )


@pytest.fixture
async def aconnect(target):
    made = []

    def make():
        client = redis.asyncio.Redis(host=target[0], port=target[1], protocol=2)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()


async def test_asyncio_lock_acquire_release(aconnect):
    c, other = aconnect(), aconnect()
    lock = c.lock('alock', timeout=100)
    rival = other.lock('alock', timeout=100)
    assert await lock.acquire(blocking=False)
    assert await lock.owned() and await lock.locked()
    assert not await rival.owned()
    assert not await rival.acquire(blocking=False)
    assert await lock.extend(100)
    assert 100_000 < await c.pttl('alock') <= 200_000
    assert await lock.reacquire()
    await lock.release()
    assert not await lock.locked()
    assert await c.exists('alock') == 0

    async with c.lock('alock', timeout=100) as held:
        assert await held.owned()
    assert await c.exists('alock') == 0

    assert await lock.acquire(blocking=False)
    await other.set('alock', 'someone-else')
    with pytest.raises(LockNotOwnedError):
        await lock.release()
    assert await c.get('alock') == b'someone-else'


async def test_asyncio_blocking_acquire_waits_for_release(aconnect):
    holder = aconnect().lock('alock:wait', timeout=WAIT * 2)
    waiter = aconnect().lock('alock:wait', timeout=WAIT * 2, sleep=0.01)
    assert await holder.acquire(blocking=False)
    events = []

    async def wait_for_lock():
        got = await waiter.acquire(blocking=True, blocking_timeout=WAIT)
        events.append('acquired')
        return got

    task = asyncio.create_task(wait_for_lock())
    await asyncio.sleep(0.3)
    assert not task.done() and events == []
    events.append('released')
    await holder.release()
    assert await asyncio.wait_for(task, WAIT) is True
    assert events == ['released', 'acquired']
    assert await waiter.owned() and not await holder.owned()
    await waiter.release()
