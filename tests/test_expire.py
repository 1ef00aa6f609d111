"""EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST.

Differential against redis-server wherever the reply does not depend on the clock; TTL
values are checked against a window instead."""

import time

import pytest
import redis

from conftest import assert_same, assert_same_events, assert_ttl, in_time, now_ms, wait_until

LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)


def test_arity_and_option_errors(both):
    assert_same(
        both,
        [
            ('SET', 'k', 'v'),
            ('EXPIRE', 'k'),
            ('PEXPIRE',),
            ('EXPIREAT', 'k'),
            ('PEXPIREAT', 'k'),
            ('TTL',),
            ('TTL', 'a', 'b'),
            ('PTTL',),
            ('EXPIRETIME',),
            ('PEXPIRETIME', 'a', 'b'),
            ('PERSIST',),
            ('PERSIST', 'a', 'b'),
            ('EXPIRE', 'k', '100', 'FOO'),
            ('EXPIRE', 'k', '100', 'nx', 'bar'),
            ('EXPIRE', 'k', '100', 'NX', 'XX'),
            ('EXPIRE', 'k', '100', 'NX', 'GT'),
            ('EXPIRE', 'k', '100', 'lt', 'nx'),
            ('EXPIRE', 'k', '100', 'GT', 'LT'),
            ('EXPIRE', 'k', '100', 'XX', 'GT', 'LT'),
            ('EXPIRE', 'k', '100', 'NX', 'NX'),
            ('PEXPIRE', 'k', '100', 'GT', 'lt'),
            ('PEXPIREAT', 'k', '100', 'nx', 'xx'),
            # options are checked before the time argument
            ('EXPIRE', 'k', 'notanumber', 'NX', 'XX'),
            ('EXPIRE', 'k', 'notanumber'),
            ('EXPIRE', 'k', '1.5'),
            ('EXPIRE', 'k', ' 1'),
            ('EXPIRE', 'k', '01'),
            ('PEXPIRE', 'k', '9223372036854775808'),
            ('EXPIRE', 'k', '1', 'FOO', 'NX', 'XX'),
            ('TTL', 'k'),
            ('EXISTS', 'k'),
        ],
    )


def test_overflow_errors(both):
    assert_same(
        both,
        [
            ('SET', 'k', 'v'),
            ('EXPIRE', 'k', str(LLONG_MAX)),
            ('EXPIRE', 'k', str(LLONG_MAX // 1000 + 1)),
            ('EXPIRE', 'k', str(LLONG_MIN)),
            ('EXPIRE', 'k', str(-(LLONG_MAX // 1000) - 2)),
            ('EXPIREAT', 'k', str(LLONG_MAX // 1000 + 1)),
            ('EXPIREAT', 'k', str(LLONG_MIN)),
            ('PEXPIRE', 'k', str(LLONG_MAX)),
            ('PEXPIRE', 'k', str(LLONG_MAX - 1000)),
            # no key: the overflow is still reported (checked before the lookup)
            ('EXPIRE', 'nokey', str(LLONG_MAX)),
            ('PEXPIRE', 'nokey', str(LLONG_MAX)),
            ('TTL', 'k'),
            # the largest accepted values
            ('PEXPIREAT', 'k', str(LLONG_MAX)),
            ('PEXPIRETIME', 'k'),
            ('EXPIRETIME', 'k'),
            ('EXPIREAT', 'k', str(LLONG_MAX // 1000)),
            ('PEXPIRETIME', 'k'),
            ('PERSIST', 'k'),
            ('PERSIST', 'k'),
            ('TTL', 'k'),
        ],
    )


def test_huge_negative_times_delete(both):
    assert_same(
        both,
        [
            ('SET', 'a', 'v'),
            ('EXPIRE', 'a', str(-(LLONG_MAX // 1000))),
            ('EXISTS', 'a'),
            ('SET', 'b', 'v'),
            ('PEXPIRE', 'b', str(LLONG_MIN)),
            ('EXISTS', 'b'),
            ('SET', 'c', 'v'),
            ('PEXPIREAT', 'c', str(LLONG_MIN)),
            ('EXISTS', 'c'),
            ('SET', 'd', 'v'),
            ('EXPIREAT', 'd', str(-(LLONG_MAX // 1000))),
            ('EXISTS', 'd'),
        ],
    )


def test_missing_key_replies(both):
    assert_same(
        both,
        [
            ('EXPIRE', 'nokey', '100'),
            ('PEXPIRE', 'nokey', '100'),
            ('EXPIREAT', 'nokey', '1'),
            ('PEXPIREAT', 'nokey', '1'),
            ('EXPIRE', 'nokey', '-1'),
            ('EXPIRE', 'nokey', '1', 'XX'),
            ('TTL', 'nokey'),
            ('PTTL', 'nokey'),
            ('EXPIRETIME', 'nokey'),
            ('PEXPIRETIME', 'nokey'),
            ('PERSIST', 'nokey'),
            ('SET', 'k', 'v'),
            ('TTL', 'k'),
            ('PTTL', 'k'),
            ('EXPIRETIME', 'k'),
            ('PEXPIRETIME', 'k'),
            ('PERSIST', 'k'),
        ],
    )


def test_nx_xx_gt_lt(both):
    far = now_ms() + 10_000_000
    assert_same(
        both,
        [
            ('SET', 'k', 'v'),
            ('PEXPIREAT', 'k', str(far), 'XX'),
            ('PEXPIRETIME', 'k'),  # no TTL: XX fails
            ('PEXPIREAT', 'k', str(far), 'GT'),
            ('PEXPIRETIME', 'k'),  # GT vs infinite
            ('PEXPIREAT', 'k', str(far), 'LT'),
            ('PEXPIRETIME', 'k'),  # LT vs infinite
            ('PEXPIREAT', 'k', str(far + 5), 'NX'),
            ('PEXPIRETIME', 'k'),  # has TTL: NX fails
            ('PEXPIREAT', 'k', str(far + 5), 'XX'),
            ('PEXPIRETIME', 'k'),
            ('PEXPIREAT', 'k', str(far + 5), 'GT'),
            ('PEXPIRETIME', 'k'),  # equal: GT fails
            ('PEXPIREAT', 'k', str(far + 5), 'LT'),
            ('PEXPIRETIME', 'k'),  # equal: LT fails
            ('PEXPIREAT', 'k', str(far + 9), 'gt'),
            ('PEXPIRETIME', 'k'),
            ('PEXPIREAT', 'k', str(far + 1), 'GT'),
            ('PEXPIRETIME', 'k'),
            ('PEXPIREAT', 'k', str(far + 1), 'LT'),
            ('PEXPIRETIME', 'k'),
            ('PEXPIREAT', 'k', str(far + 3), 'lt'),
            ('PEXPIRETIME', 'k'),
            ('PEXPIREAT', 'k', str(far + 2), 'XX', 'LT'),
            ('PEXPIRETIME', 'k'),
            ('PEXPIREAT', 'k', str(far + 7), 'XX', 'GT'),
            ('PEXPIRETIME', 'k'),
            ('PEXPIREAT', 'k', str(far + 8), 'GT', 'GT', 'xx'),
            ('PEXPIRETIME', 'k'),
            ('PERSIST', 'k'),
            ('PEXPIREAT', 'k', str(far), 'NX'),
            ('PEXPIRETIME', 'k'),
            ('EXPIREAT', 'k', str(far // 1000 + 1), 'NX'),
            ('PEXPIRETIME', 'k'),
            ('EXPIREAT', 'k', str(far // 1000 + 1), 'GT'),
            ('PEXPIRETIME', 'k'),
            ('EXPIRETIME', 'k'),
        ],
    )


def test_lt_with_past_time_on_persistent_key_deletes(both):
    assert_same(
        both,
        [
            ('SET', 'k', 'v'),
            ('EXPIRE', 'k', '-5', 'LT'),
            ('EXISTS', 'k'),
            ('SET', 'k', 'v'),
            ('EXPIRE', 'k', '-5', 'GT'),
            ('EXISTS', 'k'),
            ('SET', 'k', 'v'),
            ('EXPIRE', 'k', '100'),
            ('EXPIRE', 'k', '0', 'LT'),
            ('EXISTS', 'k'),
            ('SET', 'k', 'v'),
            ('EXPIRE', 'k', '100'),
            ('EXPIRE', 'k', '-1', 'GT'),
            ('EXISTS', 'k'),
            ('TTL', 'k'),
        ],
    )


def test_past_and_zero_times_delete_the_key(r):
    for cmd, t in (
        ('EXPIRE', 0),
        ('EXPIRE', -10),
        ('PEXPIRE', 0),
        ('PEXPIRE', -1),
        ('EXPIREAT', 1),
        ('PEXPIREAT', 1),
        ('EXPIREAT', 0),
        ('PEXPIREAT', -5),
        ('PEXPIREAT', now_ms()),
    ):
        r.set('k', 'v')
        assert r.execute_command(cmd, 'k', t) == 1, cmd
        assert r.exists('k') == 0, cmd
        assert r.ttl('k') == -2


def expire_then_ttl(r, cmd, amount):
    """SET k, `cmd k <amount>` (EXPIRE in s or PEXPIRE in ms), then TTL: returns TTL's
    reply, the values it may take, and the time before the expire command. TTL is the
    remaining time rounded to the nearest second, at whatever moment between request and
    reply the server ran each command: a busy machine only widens the range of values;
    on an idle one it is the one value Redis gives."""
    ms = amount if cmd == 'PEXPIRE' else amount * 1000
    r.set('k', 'v')
    t0 = now_ms()
    assert r.execute_command(cmd, 'k', amount) == 1
    ttl = r.ttl('k')
    t2 = now_ms()
    # the deadline is at least t0 + ms and at most ms after TTL looked at the clock,
    # which it did before t2
    allowed = set(range(max(0, (t0 + ms - t2 + 500) // 1000), (ms + 500) // 1000 + 1))
    if t2 >= t0 + ms:
        allowed.add(-2)  # it may have expired meanwhile
    return ttl, allowed, t0


def test_ttl_and_pttl_values_and_rounding(r):
    ttl, allowed, t0 = expire_then_ttl(r, 'EXPIRE', 100)
    assert ttl in allowed and max(allowed) == 100  # 99.99x s rounds to 100
    pttl = r.pttl('k')
    assert t0 + 100_000 - now_ms() <= pttl <= 100_000
    for ms, rounded in ((1499, 1), (1600, 2), (400, 0)):  # (ms - elapsed + 500) // 1000
        ttl, allowed, _ = expire_then_ttl(r, 'PEXPIRE', ms)
        assert ttl in allowed and max(allowed) == rounded, (ms, ttl, allowed)
    r.set('k', 'v')
    t0 = now_ms()
    r.execute_command('PEXPIRE', 'k', 60_000)
    assert t0 + 60_000 <= r.execute_command('PEXPIRETIME', 'k') <= now_ms() + 60_000
    deadline = r.execute_command('PEXPIRETIME', 'k')
    assert r.execute_command('EXPIRETIME', 'k') == (deadline + 500) // 1000


def test_expireat_seconds_and_expiretime(r):
    r.set('k', 'v')
    at = int(time.time()) + 1000
    assert r.execute_command('EXPIREAT', 'k', at) == 1
    assert r.execute_command('EXPIRETIME', 'k') == at
    assert r.execute_command('PEXPIRETIME', 'k') == at * 1000
    ttl = r.ttl('k')
    assert at * 1000 - now_ms() - 1000 <= ttl * 1000 <= 1_000_000
    assert r.execute_command('PEXPIREAT', 'k', at * 1000 + 499) == 1
    assert r.execute_command('EXPIRETIME', 'k') == at
    assert r.execute_command('PEXPIREAT', 'k', at * 1000 + 500) == 1
    assert r.execute_command('EXPIRETIME', 'k') == at + 1


def test_key_expires_lazily_and_actively(r):
    def setup(deadline):
        r.set('lazy', 'v')
        r.set('active', 'v')
        return (
            r.execute_command('PEXPIREAT', 'lazy', deadline),
            r.execute_command('PEXPIREAT', 'active', deadline),
            r.exists('lazy', 'active'),
        )

    _, replies = in_time(setup, 30)
    assert replies == (1, 1, 2)
    # the active expiry removes both (DBSIZE expires nothing itself)
    wait_until(lambda: r.dbsize() == 0, 'the active expiry')
    assert r.get('lazy') is None
    assert r.ttl('lazy') == -2 and r.pttl('lazy') == -2
    assert r.execute_command('EXPIRETIME', 'lazy') == -2


def test_expire_replaces_ttl_and_set_clears_it(r):
    r.set('k', 'v')
    t0 = now_ms()
    r.expire('k', 100)
    r.expire('k', 50)
    assert_ttl(r, 'k', 50, t0)
    r.set('k', 'w')
    assert r.ttl('k') == -1


def test_persist(r):
    r.set('k', 'v')
    assert r.persist('k') == 0

    def setup(deadline):
        r.set('k', 'v')
        r.pexpireat('k', deadline)
        return r.persist('k'), r.ttl('k'), r.persist('k')

    deadline, replies = in_time(setup, 30)
    assert replies == (1, -1, 0)
    time.sleep(max(0, deadline + 30 - now_ms()) / 1000)
    assert r.get('k') == b'v'  # the old deadline did not fire
    r.pexpire('k', 20)
    time.sleep(0.04)
    assert r.persist('k') == 0  # expired before PERSIST saw it
    assert r.exists('k') == 0


def test_expire_on_expired_key_returns_zero(r):
    r.set('k', 'v')
    r.pexpire('k', 10)
    time.sleep(0.03)
    assert r.expire('k', 100) == 0
    assert r.ttl('k') == -2


def test_watch_is_invalidated_by_expire_and_persist(server):
    r = server.client()
    r.flushall()
    r.set('k', 'v')
    for cmd in (('EXPIRE', 'k', 100), ('PERSIST', 'k'), ('PEXPIRE', 'k', '-1')):
        other = server.client()
        p = r.pipeline()
        p.watch('k')
        other.execute_command(*cmd)
        p.multi()
        p.get('k')
        with pytest.raises(redis.WatchError):
            p.execute()
        other.close()
    r.close()


def test_resp3_replies(r3):
    r3.set('k', 'v')
    assert r3.execute_command('EXPIRE', 'k', 10) == 1
    assert r3.ttl('k') in (9, 10)
    assert r3.execute_command('PERSIST', 'k') == 1
    assert r3.ttl('nokey') == -2
    with pytest.raises(redis.ResponseError, match='GT and LT options'):
        r3.execute_command('EXPIRE', 'k', 10, 'GT', 'LT')


def test_events_match_redis(both):
    events = assert_same_events(
        both,
        [
            ('set', 'k', 'v'),
            ('expire', 'k', '100'),
            ('expire', 'k', '100', 'nx'),
            ('persist', 'k'),
            ('persist', 'k'),
            ('pexpire', 'k', '100000', 'gt'),
            ('expire', 'k', '50', 'lt'),
            ('expireat', 'k', '99999999999'),
            ('expire', 'k', '-1'),
            ('set', 'k', 'v'),
            ('pexpireat', 'k', '1'),
            ('expire', 'nokey', '10'),
        ],
    )
    assert (b'__keyevent@0__:del', b'k') in events
