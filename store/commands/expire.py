"""Key expiry commands: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, TTL, PTTL, EXPIRETIME,
PEXPIRETIME, PERSIST.

Why this module looks the way it does: all four setters are one function, `expire` (the
other three call it), a port of Redis 7.0's expireGenericCommand, because the order of
its checks is observable. Options (NX XX GT LT) are validated before the time argument,
the time argument before the key is looked up, and the overflow checks run on the
arithmetic Redis does in 64-bit integers (seconds -> ms, then + basetime), so a client
sees the same error for the same request. A deadline at or before now deletes the key
and raises `del` (not `expire`), as Redis 7.0 does; otherwise the key gets the deadline
and `expire` is raised. Deadlines are absolute integer milliseconds since the epoch and
go through the keyspace primitives (`set_deadline`, `persist`, `delete`), which keep the
shard's deadline index and WATCHers consistent.
"""

from .. import events
from ..args import int_arg
from ..clock import now_ms
from ..command_table import Family
from ..context import Client
from ..resp import RedisError, small_int

LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)
# The seconds a deadline in ms can hold: C's LLONG_MAX / 1000 and LLONG_MIN / 1000, which
# truncate toward zero (computed once: big-int division costs ~0.1 us a call).
SECONDS_MAX = LLONG_MAX // 1000
SECONDS_MIN = -(-LLONG_MIN // 1000)

NX, XX, GT, LT = 1, 2, 4, 8
_FLAGS = {b'nx': NX, b'xx': XX, b'gt': GT, b'lt': LT}


COMMANDS = Family('generic', since='2.6.0')


def parse_expire_flags(args: list[bytes], start: int = 3) -> int:
    """parseExtendedExpireArgumentsOrReply: the NX/XX/GT/LT bit set."""
    flags = 0
    for opt in args[start:]:
        bit = _FLAGS.get(opt.lower())
        if bit is None:
            raise RedisError(f"ERR Unsupported option {opt.decode('utf-8', 'replace')}")
        flags |= bit
    if flags & NX and flags & (XX | GT | LT):
        raise RedisError('ERR NX and XX, GT or LT options at the same time are not compatible')
    if flags & GT and flags & LT:
        raise RedisError('ERR GT and LT options at the same time are not compatible')
    return flags


def _invalid(args: list[bytes]) -> RedisError:
    name = args[0].decode('latin-1').lower()
    return RedisError(f"ERR invalid expire time in '{name}' command")


@COMMANDS.command(
    'expire',
    -3,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@keyspace @write @fast',
    since='1.0.0',
    summary="Set a key's time to live in seconds",
    key_specs='RW update; index 1; range 0 1 0',
)
def expire(c: Client, args: list[bytes], relative: bool = True, seconds: bool = True) -> int:
    """The four setters: `relative` to now (EXPIRE, PEXPIRE) or absolute, in `seconds`
    (EXPIRE, EXPIREAT) or milliseconds. EXPIRE itself, so that the most common one costs
    one call (the other three come here)."""
    flags = parse_expire_flags(args) if len(args) > 3 else 0
    when = small_int(args[2])  # int_arg's first step, inline: a TTL is mostly small
    if when is None:
        when = int_arg(args[2])
    now = now_ms()  # one reading: the base time and checkAlreadyExpired's
    if seconds:
        if when > SECONDS_MAX or when < SECONDS_MIN:
            raise _invalid(args)
        when *= 1000
    if relative:
        when += now  # (Redis checks when > LLONG_MAX - now before adding, in C)
        if when > LLONG_MAX:
            raise _invalid(args)

    ks, db, key = c.ks, c.db, args[1]
    if not flags and when > now:  # the common case: the key looked up and given its TTL
        if not ks.lookup_set_deadline(db, key, when, now):
            return 0
        if ks.notify_flags & events.GENERIC:
            ks.notify(events.GENERIC, b'expire', db, key)
        return 1
    if ks.lookup(db, key) is None:
        return 0
    if flags:
        current: int | None = ks.deadline(db, key)
        if flags & NX and current is not None:
            return 0
        if flags & XX and current is None:
            return 0
        # No TTL counts as an infinite one: GT never succeeds against it, LT always does.
        if flags & GT and (current is None or when <= current):
            return 0
        if flags & LT and current is not None and when >= current:
            return 0

    if when <= now:  # checkAlreadyExpired: delete now, as an explicit DEL
        ks.delete(db, key)
        ks.notify(events.GENERIC, b'del', db, key)
        return 1
    ks.set_deadline(db, key, when)
    if ks.notify_flags & events.GENERIC:
        ks.notify(events.GENERIC, b'expire', db, key)
    return 1


@COMMANDS.command(
    'pexpire',
    -3,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@keyspace @write @fast',
    summary="Set a key's time to live in milliseconds",
    key_specs='RW update; index 1; range 0 1 0',
)
def pexpire(c: Client, args: list[bytes]) -> int:
    return expire(c, args, True, False)


@COMMANDS.command(
    'expireat',
    -3,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@keyspace @write @fast',
    since='1.2.0',
    summary='Set the expiration for a key as a UNIX timestamp',
    key_specs='RW update; index 1; range 0 1 0',
)
def expireat(c: Client, args: list[bytes]) -> int:
    return expire(c, args, False, True)


@COMMANDS.command(
    'pexpireat',
    -3,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@keyspace @write @fast',
    summary='Set the expiration for a key as a UNIX timestamp specified in milliseconds',
    key_specs='RW update; index 1; range 0 1 0',
)
def pexpireat(c: Client, args: list[bytes]) -> int:
    return expire(c, args, False, False)


def ttl_generic(c: Client, key: bytes, in_ms: bool, absolute: bool) -> int:
    """ttlGenericCommand: -2 for no key, -1 for no TTL, else the (rounded) TTL."""
    ks = c.ks
    if ks.read_notouch(c.db, key) is None:  # LOOKUP_NOTOUCH: not an access
        return -2
    deadline: int | None = ks.deadline_of_found(c.db, key)
    if deadline is None:
        return -1
    ttl = deadline if absolute else deadline - now_ms()
    if ttl < 0:
        ttl = 0
    return ttl if in_ms else (ttl + 500) // 1000


@COMMANDS.command(
    'ttl',
    2,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@keyspace @read @fast',
    tips='nondeterministic_output',
    since='1.0.0',
    summary='Get the time to live for a key in seconds',
    key_specs='RO access; index 1; range 0 1 0',
)
def ttl(c: Client, args: list[bytes]) -> int:
    return ttl_generic(c, args[1], in_ms=False, absolute=False)


@COMMANDS.command(
    'pttl',
    2,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@keyspace @read @fast',
    tips='nondeterministic_output',
    summary='Get the time to live for a key in milliseconds',
    key_specs='RO access; index 1; range 0 1 0',
)
def pttl(c: Client, args: list[bytes]) -> int:
    return ttl_generic(c, args[1], in_ms=True, absolute=False)


@COMMANDS.command(
    'expiretime',
    2,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@keyspace @read @fast',
    since='7.0.0',
    summary='Get the expiration Unix timestamp for a key',
    key_specs='RO access; index 1; range 0 1 0',
)
def expiretime(c: Client, args: list[bytes]) -> int:
    return ttl_generic(c, args[1], in_ms=False, absolute=True)


@COMMANDS.command(
    'pexpiretime',
    2,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@keyspace @read @fast',
    since='7.0.0',
    summary='Get the expiration Unix timestamp for a key in milliseconds',
    key_specs='RO access; index 1; range 0 1 0',
)
def pexpiretime(c: Client, args: list[bytes]) -> int:
    return ttl_generic(c, args[1], in_ms=True, absolute=True)


@COMMANDS.command(
    'persist',
    2,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@keyspace @write @fast',
    since='2.2.0',
    summary='Remove the expiration from a key',
    key_specs='RW update; index 1; range 0 1 0',
)
def persist(c: Client, args: list[bytes]) -> int:
    if c.ks.persist(c.db, args[1]):
        c.ks.notify(events.GENERIC, b'persist', c.db, args[1])
        return 1
    return 0


_WRITE = ('write fast', (1, 1, 1), '@keyspace @write @fast')
_READ = ('readonly fast', (1, 1, 1), '@keyspace @read @fast')
