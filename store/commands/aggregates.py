"""What every aggregate-type family (hashes, lists, sets, sorted sets) does the same way:
find its value for a read or a write, create a key, signal and announce a change, delete
a key its command emptied, parse a blocking pop's timeout, build a random reply with
repeats, and HSCAN/SSCAN/ZSCAN.

The order of these steps is Redis's: a command that creates its key raises `new` (dbAdd)
before its own event, a command that empties its key raises its own event (`hdel`,
`lpop`, ...) and then `del`, and an aggregate never stays in the keyspace empty.
"""

import math
import random
from collections.abc import Callable, Collection, Sized
from fractions import Fraction
from typing import Any, TypeVar

from .. import events
from ..args import SYNTAX, keyword, range_arg
from ..context import Client
from ..glob import compile_glob
from ..longdouble import INF, ld_round, strtold
from ..resp import Raw, RedisError
from ..types import expect
from .cursor import POS_BITS, POS_MASK, HashOrder, parse_cursor, parse_scan_options

T = TypeVar('T')
C = TypeVar('C', bound=Collection[bytes])


def read_value(c: Client, key: bytes, cls: type[T]) -> T | None:
    """The `cls` value at `key` for a read command (keyspace hit/miss counted), None when
    missing, WRONGTYPE for another type."""
    return expect(c.ks.read(c.db, key), cls)


def write_value(c: Client, key: bytes, cls: type[T]) -> T | None:
    """The `cls` value at `key` for a write command, None when missing."""
    return expect(c.ks.lookup(c.db, key), cls)


def create(c: Client, key: bytes, value: T) -> T:
    """dbAdd a new aggregate (no TTL) and raise `new`."""
    ks = c.ks
    ks.set(c.db, key, value)
    if ks.notify_flags & events.NEW:
        ks.notify(events.NEW, b'new', c.db, key)
    return value


def store_result(c: Client, dst: bytes, value: Sized | None, cls: int, event: bytes) -> int:
    """The end of a *STORE command (setKey, or dbDelete for an empty result): a non-empty
    `value` replaces the destination, any old value and TTL with it (`new` when the key
    was missing, then `event` of class `cls`); an empty one or None deletes the
    destination (`del`). Returns the reply, the result's size."""
    ks, db = c.ks, c.db
    if value:
        if ks.lookup(db, dst) is None:
            create(c, dst, value)
        else:
            ks.set(db, dst, value)
        if ks.notify_flags & cls:
            ks.notify(cls, event, db, dst)
        return len(value)
    if ks.delete(db, dst) and ks.notify_flags & events.GENERIC:
        ks.notify(events.GENERIC, b'del', db, dst)
    return 0


def changed(c: Client, cls: int, event: bytes, key: bytes) -> None:
    """signalModifiedKey + notifyKeyspaceEvent(cls, event) for an in-place change."""
    ks = c.ks
    ks.updated(c.db, key)
    if ks.notify_flags & cls:
        ks.notify(cls, event, c.db, key)


def drop_if_empty(c: Client, key: bytes, value: object) -> bool:
    """A command emptied `value`: delete its key and raise `del`, as Redis does after the
    command's own event. True if the key was deleted."""
    if value:
        return False
    ks = c.ks
    ks.delete(c.db, key)
    if ks.notify_flags & events.GENERIC:
        ks.notify(events.GENERIC, b'del', c.db, key)
    return True


# -- LMPOP / ZMPOP and their blocking forms ------------------------------------------------

E_NUMKEYS = 'ERR numkeys should be greater than 0'
E_COUNT = 'ERR count should be greater than 0'


def mpop_args(
    args: list[bytes], numkeys_idx: int, side: Callable[[bytes], T]
) -> tuple[list[bytes], T, int]:
    """lmpopGenericCommand's and zmpopGenericCommand's parsing: (keys, which end, count).
    numkeys first, then the end (`side` reads LEFT|RIGHT or MIN|MAX, raising a syntax
    error for anything else), then COUNT (once)."""
    numkeys = range_arg(args[numkeys_idx], 1, LLONG_MAX, E_NUMKEYS)
    where_idx = numkeys_idx + numkeys + 1
    n = len(args)
    if where_idx >= n:
        raise SYNTAX
    end = side(args[where_idx])
    count = -1
    j = where_idx + 1
    while j < n:
        if count == -1 and keyword(args[j]) == b'count' and j + 1 < n:
            j += 1
            count = range_arg(args[j], 1, LLONG_MAX, E_COUNT)
        else:
            raise SYNTAX
        j += 1
    return args[numkeys_idx + 1 : where_idx], end, 1 if count == -1 else count


# -- blocking pops' timeouts (BLPOP, BZPOPMIN, ...) ---------------------------------------

# Timeouts are seconds as a long double, turned into milliseconds the way Redis's
# getTimeoutFromObjectOrReply does: ceil(seconds * 1000) in long double, so 0.0001 waits
# 1 ms and -0.0001 rounds to 0 (forever); a product outside a C long long becomes
# LLONG_MIN, hence "timeout is negative" for inf and 1e30.
E_TIMEOUT = 'ERR timeout is not a float or out of range'
E_TIMEOUT_NEGATIVE = 'ERR timeout is negative'

LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)
FOREVER_MS = 10**12  # ~31 years: a longer wait never ends by its timeout, as in Redis


def timeout_arg(b: bytes) -> float:
    """getTimeoutFromObjectOrReply(UNIT_SECONDS): the timeout in seconds for the blocking
    registry, 0 meaning forever."""
    x = strtold(b)
    if x is None:
        raise RedisError(E_TIMEOUT)
    ms = LLONG_MIN  # (long long) of an out-of-range long double, on x86-64
    if type(x) is Fraction:  # not +-inf, strtold's only floats
        product = ld_round(x * 1000)
        if product != INF and product != -INF:
            ceiled = math.ceil(product)
            if LLONG_MIN <= ceiled <= LLONG_MAX:
                ms = ceiled
    if ms < 0:
        raise RedisError(E_TIMEOUT_NEGATIVE)
    return 0 if ms >= FOREVER_MS else ms / 1000


# -- HRANDFIELD / SRANDMEMBER / ZRANDMEMBER with a negative count -------------------------

# Redis 7.0 builds a reply of any length for a negative count (`SRANDMEMBER s -9e18` runs
# redis-server out of memory, unless an output-buffer limit closes the client part way);
# here a reply expected past this size is refused with 'ERR value is out of range' instead,
# once the client's limit has had its say.
MAX_RANDOM_REPLY_BYTES = 128 << 20
RANDOM_CHUNK = 1 << 16  # items drawn per step while building such a reply
E_RANGE = 'ERR value is out of range'


def repeated_reply(pieces: list[bytes], count: int, length: int, conn: Client) -> Raw:
    """The reply bytes of `count` items drawn with replacement from `pieces` (each item's
    encoded reply elements), as one Raw array of `length` elements: each item is encoded
    once, and the reply is refused past MAX_RANDOM_REPLY_BYTES (its expected size, from
    the mean size of a piece) before anything is drawn. A reply that would take `conn`
    over its output-buffer hard limit drops it first, as Redis's loop stops part way once
    the limit has closed the client (store/output_limit.py)."""
    expected = count * sum(map(len, pieces)) // len(pieces)
    if conn.out_limit is not None and conn.out_limit.drop_for_reply(conn, expected):
        return Raw(b'')
    if count * sum(map(len, pieces)) > MAX_RANDOM_REPLY_BYTES * len(pieces):
        raise RedisError(E_RANGE)
    out = [b'*%d\r\n' % length]
    while count:
        step = min(count, RANDOM_CHUNK)
        out.append(b''.join(random.choices(pieces, k=step)))
        count -= step
    return Raw(b''.join(out))


# -- HSCAN / SSCAN / ZSCAN ------------------------------------------------------------

_VIEWS_KEPT = 64  # collections with a cached HashOrder, most recently scanned last


class CollectionViews:
    """Per-keyspace cache of HashOrder views of big collections, rebuilt at every cursor
    0 (so never older than an iteration using it) and whenever the key holds another
    object; a dropped view is rebuilt on use, which is equally correct."""

    def __init__(self) -> None:
        # (db, key) -> (value, HashOrder)
        self.views: dict[tuple[int, bytes], tuple[object, HashOrder]] = {}

    def get(self, db: int, key: bytes, value: Collection[bytes], fresh: bool | int) -> HashOrder:
        dk = (db, key)
        entry = self.views.pop(dk, None)
        if fresh or entry is None or entry[0] is not value:
            entry = (value, HashOrder(value))
        self.views[dk] = entry
        if len(self.views) > _VIEWS_KEPT:
            del self.views[next(iter(self.views))]
        return entry[1]


def scan_collection(
    c: Client,
    args: list[bytes],
    cls: type[C],
    compact_items: Callable[[C], list[bytes] | None],
    reply_item: Callable[[C, bytes, list[bytes]], None],
) -> list[Any]:
    """HSCAN/SSCAN/ZSCAN key cursor [MATCH pattern] [COUNT count].

    A compact (listpack or intset) collection is returned whole with cursor 0, as Redis
    does: `compact_items(value)` lists its members in Redis's order, or is None for a big
    one, which is walked in hash order of its members (iter(value); cursor.py), COUNT
    examined per call. `reply_item(value, member, out)` appends what the reply shows of a
    member (HSCAN: field and value, ZSCAN: member and score)."""
    cursor = parse_cursor(args[2])
    value = read_value(c, args[1], cls)  # before the options, as Redis
    if value is None:
        return [b'0', []]
    count, pattern, _ = parse_scan_options(args, 3, False)
    items, next_cursor = compact_items(value), 0
    if items is None:
        views = c.ks.collection_views
        if views is None:
            views = c.ks.collection_views = CollectionViews()
        shard = cursor >> POS_BITS  # always 0 for a collection: keep SCAN's cursor shape
        view = views.get(c.db, args[1], value, cursor == 0 or shard)
        items, pos = view.take(cursor & POS_MASK, count)
        next_cursor = 0 if pos is None else pos
    match = None if pattern is None or pattern == b'*' else compile_glob(pattern).match
    out: list[bytes] = []
    for item in items:
        if item in value and (match is None or match(item)):
            reply_item(value, item, out)
    return [b'%d' % next_cursor, out]
