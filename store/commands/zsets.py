"""Sorted-set commands (Redis 7.0 t_zset.c): ZADD ZINCRBY ZREM ZCARD ZSCORE ZMSCORE ZRANK
ZREVRANK ZRANDMEMBER ZSCAN. Ranges are zset_ranges.py, pops zset_pops.py, the set algebra
zset_algebra.py; the value is store/types/zset.py's ZSet.

Handlers follow t_zset.c's order of checks, which a client can observe: ZADD parses its
options, counts its pairs, rejects conflicting options, then parses every score, and only
then looks the key up (so a bad score beats WRONGTYPE); ZRANDMEMBER parses its count and
WITHSCORES before the key, and answers a count of 0 only after the WRONGTYPE check. Read
commands count keyspace hits and misses (`read_value`), writes do not (`write_value`).
Option names are compared as strcasecmp compares them: case-insensitively, up to a NUL.

Scores. A score argument is parsed as string2d does: C's strtod over the whole argument
(decimal or hexadecimal, 'inf'/'infinity' with a sign), no leading white space, NaN
rejected, and an out-of-range value (overflow to +-inf, underflow to 0) rejected where
strtod sets ERANGE; a subnormal result is accepted. Replies carry scores as floats, which
the encoder renders as Redis's addReplyDouble does (%.17g, 'inf', '-inf'; a bulk string
in RESP2, a double in RESP3). ZINCRBY/ZADD INCR refuse a NaN result (inf + -inf) with
'resulting score is not a number (NaN)' and change nothing.

Encoding. A new key starts as a listpack unless zset-max-listpack-entries is 0 or its first
member is longer than zset-max-listpack-value (ZADD's createZsetListpackObject test);
`ZSet.insert` converts it before the member that would not fit, as zsetAdd does. A listpack
stores -0.0 as 0 and ZSCAN shows its integral scores as integers (see types/zset.py).

Keyspace events, in Redis's order: `new` when ZADD/ZINCRBY creates the key (dbAdd), then
`zadd` (or `zincr` for INCR and ZINCRBY) when a member was added or its score changed;
ZREM raises `zrem` when it removed something, then `del` when the key was emptied. A
command that changes nothing raises nothing and signals no WATCHer.

ZRANDMEMBER. Members are drawn by rank (`order[i]`, O(log n) each), so a pick costs no walk
of the set. A negative count draws with replacement and its reply is proportional to the
client's number; past the set's size it is built as its final bytes, each element encoded
once and repeated, and refused with Redis's own 'ERR value is out of range' beyond
MAX_RANDOM_REPLY_BYTES (Redis 7.0 has no bound and fills its output buffer until memory
runs out), as HRANDFIELD and SRANDMEMBER do here.

ZADD of one member is the hot path: the option loop stops at the first argument that
does not start with a letter, one float() for the score, one look-up, and a dict and
SortedList update (O(log n)).
"""

import random
from typing import Any

from .. import events
from ..args import SYNTAX, WRONGTYPE, int_arg, keyword
from ..cnum import string2d
from ..command_table import Family
from ..context import Client
from ..resp import RedisError, encode
from ..types.zset import ZSet
from .aggregates import (
    E_RANGE,
    changed,
    create,
    drop_if_empty,
    read_value,
    repeated_reply,
    scan_collection,
    write_value,
)

COMMANDS = Family('sorted-set', since='1.2.0')

ZSET = events.ZSET
LONG_MAX = 2**63 - 1

E_NOT_FLOAT = 'ERR value is not a valid float'
E_XX_NX = 'ERR XX and NX options at the same time are not compatible'
E_GT_LT_NX = 'ERR GT, LT, and/or NX options at the same time are not compatible'
E_INCR_PAIR = 'ERR INCR option supports a single increment-element pair'
E_NAN = 'ERR resulting score is not a number (NaN)'
E_COUNT_RANGE = (
    'ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807'
)

INF = float('inf')


# -- scores -------------------------------------------------------------------------------


def score_arg(b: bytes, msg: str = E_NOT_FLOAT) -> float:
    """getDoubleFromObjectOrReply (string2d): the score `b` spells, or RedisError(msg).
    Plain digits (redis-benchmark's '0' among them) skip string2d: float() reads them as
    strtod does, and fewer than 300 of them cannot overflow."""
    if b.isdigit() and len(b) < 300:
        return float(b)
    v = string2d(b)
    if v is None:
        raise RedisError(msg)
    return v


# -- ZADD / ZINCRBY ------------------------------------------------------------------------

NX, XX, GT, LT, INCR, CH = 1, 2, 4, 8, 16, 32
_ZADD_OPTIONS = {b'nx': NX, b'xx': XX, b'gt': GT, b'lt': LT, b'incr': INCR, b'ch': CH}


def _zadd(c: Client, args: list[bytes], flags: int) -> Any:
    """zaddGenericCommand."""
    n = len(args)
    i = 2
    while i < n:
        a = args[i]
        if not a[:1].isalpha():  # a score ('inf' starts with a letter: checked below)
            break
        f = _ZADD_OPTIONS.get(keyword(a))
        if f is None:
            break
        flags |= f
        i += 1
    pairs = n - i
    if pairs % 2 or not pairs:
        raise SYNTAX
    nx, xx, gt, lt, incr = flags & NX, flags & XX, flags & GT, flags & LT, flags & INCR
    if nx and xx:
        raise RedisError(E_XX_NX)
    if (gt and nx) or (lt and nx) or (gt and lt):
        raise RedisError(E_GT_LT_NX)
    if incr and pairs > 2:
        raise RedisError(E_INCR_PAIR)
    scores = [score_arg(args[j]) for j in range(i, n, 2)]
    key = args[1]
    z = write_value(c, key, ZSet)
    if z is None:
        if xx:
            return None if incr else 0
        limits = c.ks.limits
        z = ZSet()
        z.listpack = limits.zset_entries != 0 and len(args[i + 1]) <= limits.zset_value
        create(c, key, z)
    limits = c.ks.limits
    cur_scores = z.scores
    added = updated = processed = 0
    score = 0.0
    for j, score in enumerate(scores):  # zsetAdd for each pair
        member = args[i + 1 + 2 * j]
        cur = cur_scores.get(member)
        if cur is None:
            if xx:
                continue
            z.insert(limits, member, score)
            added += 1
            processed += 1
            continue
        if nx:
            continue
        if incr:
            score += cur
            if score != score:
                raise RedisError(E_NAN)  # single pair: nothing was changed
        if (lt and score >= cur) or (gt and score <= cur):
            continue
        processed += 1
        if score != cur:
            z.update(member, cur, score)
            updated += 1
    if added or updated:
        changed(c, ZSET, b'zincr' if incr else b'zadd', key)
    if incr:
        return score if processed else None
    return added + updated if flags & CH else added


@COMMANDS.command(
    'zadd',
    -4,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @sortedset @fast',
    summary='Add one or more members to a sorted set, or update its score if it already exists',
    key_specs='RW update; index 1; range 0 1 0',
)
def zadd(c: Client, args: list[bytes]) -> Any:
    """ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...].

    The hot path: one pair and no options (its score does not start with a letter) takes
    zsetAdd's steps written out, with the same checks, events and reply as `_zadd`."""
    if len(args) != 4 or args[2][:1] >= b'A':
        return _zadd(c, args, 0)
    score = score_arg(args[2])
    key, member = args[1], args[3]
    ks = c.ks
    z = ks.lookup(c.db, key)
    if z is None:
        limits = ks.limits
        z = ZSet()
        z.listpack = limits.zset_entries != 0 and len(member) <= limits.zset_value
        create(c, key, z)
        cur = None
    elif type(z) is not ZSet:
        raise WRONGTYPE
    else:
        cur = z.scores.get(member)
    if cur is None:
        z.insert(ks.limits, member, score)
        added = 1
    elif score != cur:
        z.update(member, cur, score)
        added = 0
    else:
        return 0
    ks.updated(c.db, key)
    if ks.notify_flags & ZSET:
        ks.notify(ZSET, b'zadd', c.db, key)
    return added


@COMMANDS.command(
    'zincrby',
    4,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @sortedset @fast',
    summary='Increment the score of a member in a sorted set',
    key_specs='RW access update; index 1; range 0 1 0',
)
def zincrby(c: Client, args: list[bytes]) -> Any:
    """ZINCRBY key increment member: ZADD INCR (Redis parses it with ZADD's code, so an
    'nx' in the increment's place is taken for an option and leaves a syntax error)."""
    return _zadd(c, args, INCR)


# -- ZREM -----------------------------------------------------------------------------------


@COMMANDS.command(
    'zrem',
    -3,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@write @sortedset @fast',
    summary='Remove one or more members from a sorted set',
    key_specs='RW delete; index 1; range 0 1 0',
)
def zrem(c: Client, args: list[bytes]) -> Any:
    """ZREM key member [member ...]: stops at the member that empties the set."""
    key = args[1]
    z = write_value(c, key, ZSet)
    if z is None:
        return 0
    deleted = 0
    for member in args[2:]:
        if z.remove(member):
            deleted += 1
            if not z:
                break
    if deleted:
        changed(c, ZSET, b'zrem', key)
        drop_if_empty(c, key, z)
    return deleted


# -- reads ----------------------------------------------------------------------------------


@COMMANDS.command(
    'zcard',
    2,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @sortedset @fast',
    summary='Get the number of members in a sorted set',
    key_specs='RO; index 1; range 0 1 0',
)
def zcard(c: Client, args: list[bytes]) -> Any:
    z = read_value(c, args[1], ZSet)
    return 0 if z is None else len(z.scores)


@COMMANDS.command(
    'zscore',
    3,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @sortedset @fast',
    summary='Get the score associated with the given member in a sorted set',
    key_specs='RO access; index 1; range 0 1 0',
)
def zscore(c: Client, args: list[bytes]) -> Any:
    z = read_value(c, args[1], ZSet)
    return None if z is None else z.scores.get(args[2])


@COMMANDS.command(
    'zmscore',
    -3,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @sortedset @fast',
    since='6.2.0',
    summary='Get the score associated with the given members in a sorted set',
    key_specs='RO access; index 1; range 0 1 0',
)
def zmscore(c: Client, args: list[bytes]) -> Any:
    z = read_value(c, args[1], ZSet)
    if z is None:
        return [None] * (len(args) - 2)
    get = z.scores.get
    return [get(m) for m in args[2:]]


def _rank(c: Client, args: list[bytes], reverse: bool) -> Any:
    z = read_value(c, args[1], ZSet)
    if z is None:
        return None
    rank = z.rank(args[2])
    if rank is None:
        return None
    return len(z.scores) - 1 - rank if reverse else rank


@COMMANDS.command(
    'zrank',
    3,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @sortedset @fast',
    since='2.0.0',
    summary='Determine the index of a member in a sorted set',
    key_specs='RO access; index 1; range 0 1 0',
)
def zrank(c: Client, args: list[bytes]) -> Any:
    return _rank(c, args, False)


@COMMANDS.command(
    'zrevrank',
    3,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @sortedset @fast',
    since='2.0.0',
    summary='Determine the index of a member in a sorted set, with scores ordered from high to low',
    key_specs='RO access; index 1; range 0 1 0',
)
def zrevrank(c: Client, args: list[bytes]) -> Any:
    return _rank(c, args, True)


# -- ZRANDMEMBER ----------------------------------------------------------------------------


def _with_scores(pairs: list[tuple[float, bytes]], withscores: bool, proto: int) -> list[Any]:
    """The reply for (score, member) pairs: members, or with WITHSCORES [member, score]
    pairs in RESP3 and a flat member/score array in RESP2."""
    if not withscores:
        return [m for _, m in pairs]
    if proto == 3:
        return [[m, s] for s, m in pairs]
    out: list[bytes | float] = []
    for s, m in pairs:
        out += (m, s)
    return out


def _repeated_members(c: Client, z: ZSet, count: int, withscores: bool) -> Any:
    """A negative count past the set's size: `count` elements drawn with replacement,
    returned as the reply's bytes (each element encoded once). Refused past
    MAX_RANDOM_REPLY_BYTES (the expected size, from the mean size of an element)."""
    proto = c.proto

    def enc(value: Any) -> bytes:
        return b''.join(encode(value, proto, []))

    if not withscores:
        pieces = [enc(m) for _, m in z.order]
    elif proto == 3:
        pieces = [enc([m, s]) for s, m in z.order]
    else:
        pieces = [enc(m) + enc(s) for s, m in z.order]
    return repeated_reply(pieces, count, count * 2 if withscores and proto == 2 else count, c)


def _random_members(c: Client, key: bytes, count: int, withscores: bool) -> Any:
    """zrandmemberWithCountCommand: a positive count picks distinct members (the whole set,
    highest first as Redis iterates it, when it has no more), a negative one picks with
    replacement."""
    z = read_value(c, key, ZSet)
    if z is None or count == 0:
        return []
    order = z.order
    size = len(order)
    if count < 0 or count == 1:
        n = -count if count < 0 else 1
        if n > size:
            return _repeated_members(c, z, n, withscores)
        randrange = random.randrange
        pairs = [order[randrange(size)] for _ in range(n)]
    elif count >= size:
        pairs = list(order.islice(reverse=True))  # CASE 2: zuiNext walks from the tail
    else:
        picks = random.sample(range(size), count)
        if z.listpack and count * 3 <= size:
            picks.sort()  # CASE 4 on a listpack (lpRandomPairsUnique): in listpack order
        pairs = [order[i] for i in picks]
    return _with_scores(pairs, withscores, c.proto)


@COMMANDS.command(
    'zrandmember',
    -2,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @sortedset @slow',
    tips='nondeterministic_output',
    since='6.2.0',
    summary='Get one or multiple random elements from a sorted set',
    key_specs='RO access; index 1; range 0 1 0',
)
def zrandmember(c: Client, args: list[bytes]) -> Any:
    """ZRANDMEMBER key [count [WITHSCORES]]."""
    n = len(args)
    if n >= 3:
        count = int_arg(args[2])
        if count == -LONG_MAX - 1:  # getRangeLongFromObjectOrReply(-LONG_MAX, LONG_MAX)
            raise RedisError(E_COUNT_RANGE)
        if n > 4 or (n == 4 and keyword(args[3]) != b'withscores'):
            raise SYNTAX
        withscores = n == 4
        if withscores and not -(LONG_MAX // 2) <= count <= LONG_MAX // 2:
            raise RedisError(E_RANGE)  # the RESP2 reply would hold 2 * count elements
        return _random_members(c, args[1], count, withscores)
    z = read_value(c, args[1], ZSet)
    if z is None:
        return None
    return z.order[random.randrange(len(z.order))][1]


# -- ZSCAN ----------------------------------------------------------------------------------


def _listpack_members(z: ZSet) -> list[bytes] | None:
    """A listpack sorted set is returned whole by one ZSCAN call, in rank order."""
    return list(z) if z.listpack else None


def _scan_item(z: ZSet, member: bytes, out: list[bytes]) -> None:
    out += (member, z.scan_score(member))


@COMMANDS.command(
    'zscan',
    -3,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @sortedset @slow',
    tips='nondeterministic_output',
    since='2.8.0',
    summary='Incrementally iterate sorted sets elements and associated scores',
    key_specs='RO access; index 1; range 0 1 0',
)
def zscan(c: Client, args: list[bytes]) -> Any:
    """ZSCAN key cursor [MATCH pattern] [COUNT count]."""
    return scan_collection(c, args, ZSet, _listpack_members, _scan_item)
