"""Sorted-set pops (Redis 7.0 t_zset.c and blocked.c): ZPOPMIN ZPOPMAX ZMPOP and the blocking
BZPOPMIN BZPOPMAX BZMPOP.

All of them end in `_pop`, Redis's genericZpopCommand: the first of the keys that exists
(WRONGTYPE if it is not a sorted set) gives up to COUNT of its lowest or highest elements,
raising `zpopmin` / `zpopmax` once, then `del` when it was emptied. The reply has one of
four shapes, which a client sees byte for byte:

- ZPOPMIN key: [member, score] (flat in RESP3 too);
- ZPOPMIN key count: flat member/score pairs in RESP2, [[member, score], ...] in RESP3;
- BZPOPMIN: [key, member, score], in both protocols;
- ZMPOP, BZMPOP: [key, [[member, score], ...]], in both protocols; a null array when
  no key has elements.

A count of 0 answers an empty array, but only after the key was found and type-checked.

Blocking. BZPOPMIN/BZPOPMAX/BZMPOP pop at once from the first key holding a non-empty
sorted set. When there is none, they wait in the server's blocking-operations registry
(store/blocking.py) with a `serve(db, key)` function and reply nothing now; the registry
parks the connection, so its later commands queue behind the blocked one. After any
command that touched a key somebody waits on, and before its client's next command, the
registry calls `serve` for each waiter in the order the clients blocked (first blocked,
first served), as serveClientsBlockedOnSortedSetKey does: it pops for its client while the
key holds a non-empty sorted set, so a ZADD of several members serves several clients,
and the served pop raises the same events a ZPOPMIN would (`zpopmin`/`zpopmax`, `del`). A
key deleted, emptied or now holding another type leaves the client waiting, as in Redis
7.0. A wait ends by being served, by its timeout (a null array), by CLIENT UNBLOCK
(TIMEOUT: the null array; ERROR: `-UNBLOCKED ...`), or by disconnect. Inside MULTI/EXEC a
blocking pop answers at once as on timeout.

Timeouts are parsed as getTimeoutFromObjectOrReply parses them (list_blocking.timeout_arg,
shared with BLPOP): seconds as a long double, sub-second precision, 'timeout is negative'
for a negative product and for inf.

ZPOPMIN of one element is benchmarked: one look-up, one SortedList.pop at an end.
"""

from typing import Any

from .. import events
from ..args import SYNTAX, keyword, range_arg
from ..command_table import Family
from ..context import Client
from ..resp import NO_REPLY, NULL_ARRAY
from ..types import expect
from ..types.zset import ZSet
from .aggregates import changed, drop_if_empty, mpop_args, timeout_arg

COMMANDS = Family('sorted-set', since='5.0.0')

ZSET = events.ZSET
LONG_MAX = 2**63 - 1

E_POSITIVE = 'ERR value is out of range, must be positive'

_EVENTS = (b'zpopmin', b'zpopmax')


def _pop(
    c: Client, key: bytes, z: ZSet, highest: bool, count: int, emitkey: bool, nested: bool
) -> list[Any]:
    """genericZpopCommand once the key is found (`z`, a non-empty ZSet): pop up to `count`
    elements (-1: one, the form without COUNT), raise the events, and build the reply."""
    if count == 0:
        return []
    pairs = z.pop(1 if count == -1 else min(count, len(z.scores)), highest)
    changed(c, ZSET, _EVENTS[highest], key)
    drop_if_empty(c, key, z)
    if nested:
        items = [[m, s] for s, m in pairs]
        return [key, items] if emitkey else items
    out: list[bytes | float] = [key] if emitkey else []
    for s, m in pairs:
        out += (m, s)
    return out


def _first_zset(c: Client, keys: list[bytes]) -> tuple[bytes, ZSet] | None:
    """The first of `keys` that exists, and its value (WRONGTYPE for another type);
    None when none exists."""
    lookup, db = c.ks.lookup, c.db
    for key in keys:
        z = lookup(db, key)
        if z is not None:
            if type(z) is not ZSet:
                expect(z, ZSet)
            return key, z
    return None


def _zpop(c: Client, args: list[bytes], highest: bool) -> list[Any]:
    """zpopMinMaxCommand: ZPOPMIN/ZPOPMAX key [count]."""
    n = len(args)
    if n > 3:
        raise SYNTAX
    count = -1
    if n == 3:
        count = range_arg(args[2], 0, LONG_MAX, E_POSITIVE)
    key = args[1]
    z = c.ks.lookup(c.db, key)
    if z is None:
        return []
    if type(z) is not ZSet:
        expect(z, ZSet)
    return _pop(c, key, z, highest, count, False, c.proto == 3 and count != -1)


@COMMANDS.command(
    'zpopmin',
    -2,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@write @sortedset @fast',
    summary='Remove and return members with the lowest scores in a sorted set',
    key_specs='RW access delete; index 1; range 0 1 0',
)
def zpopmin(c: Client, args: list[bytes]) -> Any:
    return _zpop(c, args, False)


@COMMANDS.command(
    'zpopmax',
    -2,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@write @sortedset @fast',
    summary='Remove and return members with the highest scores in a sorted set',
    key_specs='RW access delete; index 1; range 0 1 0',
)
def zpopmax(c: Client, args: list[bytes]) -> Any:
    return _zpop(c, args, True)


def _min_max(b: bytes) -> bool:
    """ZMPOP's MIN|MAX: whether the highest scores are popped."""
    where = keyword(b)
    if where == b'min':
        return False
    if where == b'max':
        return True
    raise SYNTAX


@COMMANDS.command(
    'zmpop',
    -4,
    flags='write movablekeys',
    categories='@write @sortedset @slow',
    since='7.0.0',
    summary='Remove and return members with scores in a sorted set',
    key_specs='RW access delete; index 1; keynum 0 1 1',
)
def zmpop(c: Client, args: list[bytes]) -> Any:
    """ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]."""
    keys, highest, count = mpop_args(args, 1, _min_max)
    found = _first_zset(c, keys)
    if found is None:
        return NULL_ARRAY
    key, z = found
    return _pop(c, key, z, highest, count, True, True)


# -- blocking -------------------------------------------------------------------------------


def _blocking_pop(
    c: Client, keys: list[bytes], timeout_b: bytes, highest: bool, count: int, nested: bool
) -> Any:
    """blockingGenericZpopCommand: pop from the first key holding elements, else wait."""
    timeout = timeout_arg(timeout_b)
    lookup, db = c.ks.lookup, c.db
    for key in keys:
        z = lookup(db, key)
        if z is None:
            continue
        if type(z) is not ZSet:
            expect(z, ZSet)
        return _pop(c, key, z, highest, count, True, nested)
    if not c.server.blocking.may_block(c):
        return NULL_ARRAY

    def serve(db_: int, key: bytes) -> list[Any] | None:
        """serveClientsBlockedOnSortedSetKey for this client: the reply, or None to
        keep waiting."""
        z = c.ks.lookup(db_, key)
        if type(z) is not ZSet or not z:
            return None
        return _pop(c, key, z, highest, count, True, nested)

    c.server.blocking.block(c, keys, serve, timeout, NULL_ARRAY, ZSet)
    return NO_REPLY


@COMMANDS.command(
    'bzpopmin',
    -3,
    flags='write noscript blocking fast',
    keys=(1, -2, 1),
    categories='@write @sortedset @fast @blocking',
    summary='Remove and return the member with the lowest score from one or more sorted '
    'sets, or block until one is available',
    key_specs='RW access delete; index 1; range -2 1 0',
)
def bzpopmin(c: Client, args: list[bytes]) -> Any:
    """BZPOPMIN key [key ...] timeout."""
    return _blocking_pop(c, args[1:-1], args[-1], False, -1, False)


@COMMANDS.command(
    'bzpopmax',
    -3,
    flags='write noscript blocking fast',
    keys=(1, -2, 1),
    categories='@write @sortedset @fast @blocking',
    summary='Remove and return the member with the highest score from one or more sorted '
    'sets, or block until one is available',
    key_specs='RW access delete; index 1; range -2 1 0',
)
def bzpopmax(c: Client, args: list[bytes]) -> Any:
    """BZPOPMAX key [key ...] timeout."""
    return _blocking_pop(c, args[1:-1], args[-1], True, -1, False)


@COMMANDS.command(
    'bzmpop',
    -5,
    flags='write blocking movablekeys',
    categories='@write @sortedset @slow @blocking',
    since='7.0.0',
    summary='Remove and return members with scores in a sorted set or block until one is available',
    key_specs='RW access delete; index 2; keynum 0 1 1',
)
def bzmpop(c: Client, args: list[bytes]) -> Any:
    """BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]: the numkeys, side and
    count are checked before the timeout, as zmpopGenericCommand does."""
    keys, highest, count = mpop_args(args, 2, _min_max)
    return _blocking_pop(c, keys, args[1], highest, count, True)
