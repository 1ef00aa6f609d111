"""Sorted-set range commands (Redis 7.0 t_zset.c): ZRANGE and its variants (ZRANGESTORE,
ZREVRANGE, Z[REV]RANGEBYSCORE, Z[REV]RANGEBYLEX), ZCOUNT and ZLEXCOUNT, and removal by
range (ZREMRANGEBYSCORE, ZREMRANGEBYRANK, ZREMRANGEBYLEX).

Algorithm. A ZSet keeps `order`, a SortedList of (score, member) tuples in Redis's order
(score, then member bytes). Every range is turned into a span of positions [lo, hi) of
`order` by bisection, and the reply is `order.islice` of that span: O(log n) to find the
span and O(1) more per element returned or removed, never a walk of the set. Offsets and
counts (LIMIT) are arithmetic on the span, so LIMIT 0 1000000000 allocates no more than
the elements that exist, and an offset is skipped without visiting what it skips.

- Score bounds bisect with 1-tuples: `(x,)` sorts before every `(x, member)`, so
  `bisect_left((x,))` is the first position with score >= x, and the first with
  score > x is the first with score >= nextafter(x, +inf) (`_score_index`).
- Lex bounds compare members only; Redis documents them for sets whose members all have
  one score, where members ascend along `order` and bisection with `(score, member)`
  finds them. With mixed scores Redis's answer depends on its encoding: a listpack is
  walked from its head (or tail), which this module repeats exactly (`_lex_first` and
  `_lex_last`; the walk is bounded by zset-max-listpack-entries, as Redis's is); a
  skiplist is searched as if members ascended, so its answer depends on the random
  levels of its nodes, and here a binary search over positions stands in for it.

The commands follow zrangeGenericCommand's order of checks (options, conflicting options,
the range arguments, then the key), since which error wins is observable. Replies:
members, or with WITHSCORES a flat member/score array in RESP2 and [member, score] pairs
in RESP3; scores are floats, which the encoder renders with Redis's %.17g.

Events: ZREMRANGEBY* raise `zremrangeby{score,rank,lex}` when they removed anything, then
`del` if the key was emptied; ZRANGESTORE raises `new` (when it creates the destination)
and `zrangestore`, or, with an empty result, deletes the destination (`del`).
"""

import math
from collections.abc import Callable
from enum import Enum
from itertools import islice, takewhile
from typing import Any, Final

from sortedcontainers import SortedList

from .. import events
from ..args import SYNTAX, int_arg, keyword
from ..cnum import strtod
from ..command_table import Family
from ..context import Client
from ..resp import RedisError, c_string
from ..types import EncodingLimits
from ..types.zset import ZSet
from .aggregates import changed, drop_if_empty, read_value, store_result, write_value

COMMANDS = Family('sorted-set', since='1.2.0')

E_SCORE_RANGE = 'ERR min or max is not a float'
E_LEX_RANGE = 'ERR min or max not valid string range item'
E_LIMIT_RANK = (
    'ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX'
)
E_WITHSCORES_LEX = 'ERR syntax error, WITHSCORES not supported in combination with BYLEX'

RANK, SCORE, LEX = 'rank', 'score', 'lex'
INF = math.inf

Item = tuple[float, bytes]  # an element of ZSet.order: (score, member)
ScoreBound = tuple[float, bool]  # a value and whether it is exclusive
ScoreRange = tuple[ScoreBound, ScoreBound]


# -- parsing the ranges ---------------------------------------------------------------


def _strtod(b: bytes) -> float | None:
    """`strtod(b, &end)` with `*end == '\\0'` required, as zslParseRange checks: the value,
    or None. Nothing at all converts to 0, overflow to +-inf and underflow to 0 are
    accepted (errno is not looked at), NaN is refused."""
    value, end, _ = strtod(b)
    return value if end == len(b) and value == value else None


def parse_score_range(lo: bytes, hi: bytes) -> ScoreRange:
    """zslParseRange: ((min, minex), (max, maxex)), '(' marking an exclusive bound."""
    return _score_bound(lo), _score_bound(hi)


def _score_bound(arg: bytes) -> ScoreBound:
    s = c_string(arg)
    exclusive = s[:1] == b'('
    v = _strtod(s[1:] if exclusive else s)
    if v is None:
        raise RedisError(E_SCORE_RANGE)
    return v, exclusive


def _score_index(order: SortedList, x: float, above: bool) -> int:
    """The first position whose score is > x (`above`) or >= x."""
    if above:
        if x == INF:
            return len(order)
        x = math.nextafter(x, INF)
    i: int = order.bisect_left((x,))
    return i


def score_span(order: SortedList, rng: ScoreRange) -> tuple[int, int]:
    """Positions [lo, hi) of the elements in a score range (hi < lo when it is empty:
    zslIsInRange's min > max, or min == max with an exclusive bound)."""
    (lo, lo_ex), (hi, hi_ex) = rng
    return _score_index(order, lo, lo_ex), _score_index(order, hi, not hi_ex)


class _LexInf(Enum):
    MIN = 0
    MAX = 1


# Lex bounds: bytes, or Redis's shared.minstring / shared.maxstring for '-' and '+'.
LEX_MIN: Final = _LexInf.MIN
LEX_MAX: Final = _LexInf.MAX
LexBound = bytes | _LexInf


class LexRange:
    """zlexrangespec: a bound and whether it is exclusive, at each end, and the two
    membership tests of a member against it (zslLexValueGteMin / zslLexValueLteMax)."""

    __slots__ = ('lo', 'lo_ex', 'hi', 'hi_ex')

    def __init__(self, lo: LexBound, lo_ex: bool, hi: LexBound, hi_ex: bool) -> None:
        self.lo, self.lo_ex, self.hi, self.hi_ex = lo, lo_ex, hi, hi_ex

    def gte_min(self, member: bytes) -> bool:
        lo = self.lo
        if lo is LEX_MIN:
            return True
        if lo is LEX_MAX:
            return False
        return member > lo if self.lo_ex else member >= lo

    def lte_max(self, member: bytes) -> bool:
        hi = self.hi
        if hi is LEX_MAX:
            return True
        if hi is LEX_MIN:
            return False
        return member < hi if self.hi_ex else member <= hi

    def never_empty(self) -> bool:
        """False for a range that is empty whatever the set (sdscmplex(min, max) > 0, or
        == 0 with an exclusive end)."""
        lo, hi = self.lo, self.hi
        if lo is hi:
            cmp = 0
        elif lo is LEX_MIN or hi is LEX_MAX:
            cmp = -1
        elif lo is LEX_MAX or hi is LEX_MIN:
            cmp = 1
        else:
            cmp = (lo > hi) - (lo < hi)
        return cmp < 0 or (cmp == 0 and not (self.lo_ex or self.hi_ex))


def _lex_bound(arg: bytes) -> tuple[LexBound, bool]:
    """zslParseLexRangeItem: '-' and '+' (nothing after them up to a NUL), '(' exclusive
    and '[' inclusive followed by the member bytes."""
    first = arg[:1]
    if first == b'+' or first == b'-':
        if len(arg) > 1 and arg[1] != 0:
            raise RedisError(E_LEX_RANGE)
        return (LEX_MAX if first == b'+' else LEX_MIN), True
    if first == b'(':
        return arg[1:], True
    if first == b'[':
        return arg[1:], False
    raise RedisError(E_LEX_RANGE)


def parse_lex_range(lo: bytes, hi: bytes) -> LexRange:
    """zslParseLexRange: a LexRange, or 'min or max not valid string range item'."""
    return LexRange(*_lex_bound(lo), *_lex_bound(hi))


# -- finding lex ranges ---------------------------------------------------------------


def _in_lex_range(order: SortedList, rng: LexRange) -> bool:
    """zslIsInLexRange: whether any part of the set can be in range (O(1))."""
    return rng.never_empty() and rng.gte_min(order[-1][1]) and rng.lte_max(order[0][1])


def _one_score(order: SortedList) -> bool:
    """Whether every element has the same score (members then ascend along `order`)."""
    same: bool = order[0][0] == order[-1][0]
    return same


def _first_where(order: SortedList, pred: Callable[[bytes], bool], lo: int, hi: int) -> int:
    """Binary search over positions [lo, hi) for the first where `pred(member)` holds,
    assuming it holds from there on (a skiplist search's assumption)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(order[mid][1]):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _lex_first(z: ZSet, rng: LexRange) -> int | None:
    """zslFirstInLexRange / zzlFirstInLexRange: the position of the first element in the
    range, or None."""
    order = z.order
    if not order or not _in_lex_range(order, rng):
        return None
    if _one_score(order):
        lo = rng.lo
        if lo is LEX_MIN:
            i = 0
        else:
            key = (order[0][0], lo)
            i = order.bisect_right(key) if rng.lo_ex else order.bisect_left(key)
    elif z.listpack:  # zzlFirstInLexRange walks from the head
        i = next(i for i, (_, m) in enumerate(order) if rng.gte_min(m))
    else:
        i = _first_where(order, rng.gte_min, 0, len(order))
    return i if rng.lte_max(order[i][1]) else None


def _lex_last(z: ZSet, rng: LexRange) -> int | None:
    """zslLastInLexRange / zzlLastInLexRange: the position of the last element in the
    range, or None."""
    order = z.order
    if not order or not _in_lex_range(order, rng):
        return None
    n = len(order)
    if _one_score(order):
        hi = rng.hi
        if hi is LEX_MAX:
            i = n - 1
        else:
            key = (order[0][0], hi)
            i = (order.bisect_left(key) if rng.hi_ex else order.bisect_right(key)) - 1
    elif z.listpack:  # zzlLastInLexRange walks from the tail
        i = n - 1
        for _, m in order.islice(reverse=True):
            if rng.lte_max(m):
                break
            i -= 1
    else:
        i = _first_where(order, lambda m: not rng.lte_max(m), 0, n) - 1
    return i if rng.gte_min(order[i][1]) else None


def _lex_count_from(order: SortedList, start: int, rng: LexRange) -> int:
    """How many elements from `start` on stay under the range's maximum."""
    return sum(1 for _ in takewhile(lambda e: rng.lte_max(e[1]), order.islice(start)))


def lex_span(z: ZSet, rng: LexRange) -> tuple[int, int]:
    """Positions [lo, hi) that ZREMRANGEBYLEX removes: from the first element in range
    while members stay under the maximum."""
    lo = _lex_first(z, rng)
    if lo is None:
        return 0, 0
    order = z.order
    if _one_score(order):
        hi = _lex_last(z, rng)
        assert hi is not None  # the first element in range makes a last one with one score
        return lo, hi + 1
    return lo, lo + _lex_count_from(order, lo, rng)


# -- selecting elements -----------------------------------------------------------------


def rank_items(z: ZSet, start: int, end: int, reverse: bool) -> list[Item]:
    """genericZrangebyrankCommand: the (score, member) pairs of ranks start..end (negative
    counting from the end), in reply order."""
    n = len(z)
    if start < 0:
        start += n
    if end < 0:
        end += n
    if start < 0:
        start = 0
    if start > end or start >= n:
        return []
    if end >= n:
        end = n - 1
    if reverse:
        return list(z.order.islice(n - 1 - end, n - start, reverse=True))
    return list(z.order.islice(start, end + 1))


def score_items(z: ZSet, rng: ScoreRange, offset: int, limit: int, reverse: bool) -> list[Item]:
    """genericZrangebyscoreCommand: the pairs in a score range after skipping `offset`
    of them, at most `limit` (negative: all); a negative offset selects nothing (Redis
    walks it off the end of the set)."""
    lo, hi = score_span(z.order, rng)
    if offset < 0:
        return []
    if reverse:
        top = hi - offset
        if top <= lo:
            return []
        bottom = lo if limit < 0 else max(lo, top - limit)
        return list(z.order.islice(bottom, top, reverse=True))
    start = lo + offset
    if start >= hi:
        return []
    stop = hi if limit < 0 else min(hi, start + limit)
    return list(z.order.islice(start, stop))


def lex_items(z: ZSet, rng: LexRange, offset: int, limit: int, reverse: bool) -> list[Item]:
    """genericZrangebylexCommand: from the first (last) element in range, skip `offset`
    elements, then take elements while they stay in range, at most `limit`."""
    order = z.order
    if reverse:
        i = _lex_last(z, rng)
        if i is None or offset < 0 or offset > i:
            return []
        items = order.islice(0, i - offset + 1, reverse=True)
        in_range = rng.gte_min
    else:
        i = _lex_first(z, rng)
        if i is None or offset < 0 or i + offset >= len(order):
            return []
        items = order.islice(i + offset)
        in_range = rng.lte_max
    items = takewhile(lambda e: in_range(e[1]), items)
    if limit >= 0:
        items = islice(items, limit)
    return list(items)


def _reply(c: Client, items: list[Item], withscores: bool) -> list[Any]:
    """Members; with scores, flat in RESP2 and [member, score] pairs in RESP3."""
    if not withscores:
        return [m for _, m in items]
    if c.proto == 2:
        out: list[bytes | float] = []
        for s, m in items:
            out += (m, s)
        return out
    return [[m, s] for s, m in items]


# -- ZRANGE and its variants ----------------------------------------------------------


def zrange_generic(
    c: Client,
    args: list[bytes],
    first: int,
    store: bool,
    rangetype: str | None,
    reverse: bool | None,
) -> Any:
    """zrangeGenericCommand: `first` is the position of the source key, `rangetype`
    and `reverse` None when options may set them (ZRANGE, ZRANGESTORE)."""
    withscores = False
    offset, limit = 0, -1
    n = len(args)
    j = first + 3
    while j < n:
        opt = keyword(args[j])
        if not store and opt == b'withscores':
            withscores = True
        elif opt == b'limit' and n - j - 1 >= 2:
            offset, limit = int_arg(args[j + 1]), int_arg(args[j + 2])
            j += 2
        elif reverse is None and opt == b'rev':
            reverse = True
        elif rangetype is None and opt == b'bylex':
            rangetype = LEX
        elif rangetype is None and opt == b'byscore':
            rangetype = SCORE
        else:
            raise SYNTAX
        j += 1
    reverse = bool(reverse)
    rangetype = rangetype or RANK
    if limit != -1 and rangetype is RANK:
        raise RedisError(E_LIMIT_RANK)
    if withscores and rangetype is LEX:
        raise RedisError(E_WITHSCORES_LEX)

    lo, hi = args[first + 1], args[first + 2]
    if reverse and rangetype is not RANK:
        lo, hi = hi, lo  # given as max, min
    if rangetype is RANK:
        start, end = int_arg(lo), int_arg(hi)
    elif rangetype is SCORE:
        score_rng = parse_score_range(lo, hi)
    else:
        lex_rng = parse_lex_range(lo, hi)

    z = read_value(c, args[first], ZSet)
    if z is None:
        items = []
    elif rangetype is RANK:
        items = rank_items(z, start, end, reverse)
    elif rangetype is SCORE:
        items = score_items(z, score_rng, offset, limit, reverse)
    else:
        items = lex_items(z, lex_rng, offset, limit, reverse)
    if store:
        return _store(c, args[1], items, rangetype is RANK)
    return _reply(c, items, withscores)


def _store(c: Client, dst: bytes, items: list[Item], by_rank: bool) -> int:
    """zrangeResultFinalizeStore: the destination becomes a new sorted set of `items`, or
    is deleted if there are none."""
    limits = c.ks.limits
    z = ZSet.sized(limits, _listpack_scores(limits, items, by_rank)) if items else None
    return store_result(c, dst, z, events.ZSET, b'zrangestore')


def _listpack_scores(limits: EncodingLimits, items: list[Item], by_rank: bool) -> list[Item]:
    """`items` with -0.0 stored as 0 where Redis adds them to a listpack. The destination
    starts as a listpack unless a rank range's known length exceeds
    zset-max-listpack-entries (zrangeResultBeginStore), and stays one, storing -0.0 as the
    integer 0, until an element would not fit (zsetAdd converts before adding it): so a
    destination that ends as a skiplist may hold 0 for its first elements and -0.0 for
    later ones, in the order the range emitted them."""
    n = 0
    if not (by_rank and len(items) > limits.zset_entries):
        for _, m in islice(items, limits.zset_entries):
            if len(m) > limits.zset_value:
                break
            n += 1
    if not any(s == 0 for s, _ in islice(items, n)):
        return items
    return [(0.0 if s == 0 else s, m) if i < n else (s, m) for i, (s, m) in enumerate(items)]


_RANGE_READ = dict(
    flags='readonly', keys=(1, 1, 1), categories='@read @sortedset @slow', since='1.2.0'
)


@COMMANDS.command(
    'zrange',
    -4,
    **_RANGE_READ,
    summary='Return a range of members in a sorted set',
    key_specs='RO access; index 1; range 0 1 0',
)
def zrange(c: Client, args: list[bytes]) -> Any:
    return zrange_generic(c, args, 1, False, None, None)


@COMMANDS.command(
    'zrangestore',
    -5,
    flags='write denyoom',
    keys=(1, 2, 1),
    categories='@write @sortedset @slow',
    summary='Store a range of members from sorted set into another key',
    since='6.2.0',
    key_specs='OW update; index 1; range 0 1 0 | RO access; index 2; range 0 1 0',
)
def zrangestore(c: Client, args: list[bytes]) -> Any:
    return zrange_generic(c, args, 2, True, None, None)


@COMMANDS.command(
    'zrevrange',
    -4,
    **_RANGE_READ,
    summary='Return a range of members in a sorted set, by index, with scores ordered from '
    'high to low',
    key_specs='RO access; index 1; range 0 1 0',
)
def zrevrange(c: Client, args: list[bytes]) -> Any:
    return zrange_generic(c, args, 1, False, RANK, True)


@COMMANDS.command(
    'zrangebyscore',
    -4,
    **{**_RANGE_READ, 'since': '1.0.5'},
    summary='Return a range of members in a sorted set, by score',
    key_specs='RO access; index 1; range 0 1 0',
)
def zrangebyscore(c: Client, args: list[bytes]) -> Any:
    return zrange_generic(c, args, 1, False, SCORE, False)


@COMMANDS.command(
    'zrevrangebyscore',
    -4,
    **{**_RANGE_READ, 'since': '2.2.0'},
    summary='Return a range of members in a sorted set, by score, with scores ordered from '
    'high to low',
    key_specs='RO access; index 1; range 0 1 0',
)
def zrevrangebyscore(c: Client, args: list[bytes]) -> Any:
    return zrange_generic(c, args, 1, False, SCORE, True)


@COMMANDS.command(
    'zrangebylex',
    -4,
    **{**_RANGE_READ, 'since': '2.8.9'},
    summary='Return a range of members in a sorted set, by lexicographical range',
    key_specs='RO access; index 1; range 0 1 0',
)
def zrangebylex(c: Client, args: list[bytes]) -> Any:
    return zrange_generic(c, args, 1, False, LEX, False)


@COMMANDS.command(
    'zrevrangebylex',
    -4,
    **{**_RANGE_READ, 'since': '2.8.9'},
    summary='Return a range of members in a sorted set, by lexicographical range, ordered '
    'from higher to lower strings.',
    key_specs='RO access; index 1; range 0 1 0',
)
def zrevrangebylex(c: Client, args: list[bytes]) -> Any:
    return zrange_generic(c, args, 1, False, LEX, True)


# -- counting -------------------------------------------------------------------------


@COMMANDS.command(
    'zcount',
    4,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @sortedset @fast',
    summary='Count the members in a sorted set with scores within the given values',
    since='2.0.0',
    key_specs='RO access; index 1; range 0 1 0',
)
def zcount(c: Client, args: list[bytes]) -> Any:
    rng = parse_score_range(args[2], args[3])
    z = read_value(c, args[1], ZSet)
    if z is None:
        return 0
    lo, hi = score_span(z.order, rng)
    return max(0, hi - lo)


@COMMANDS.command(
    'zlexcount',
    4,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @sortedset @fast',
    summary='Count the number of members in a sorted set between a given lexicographical range',
    since='2.8.9',
    key_specs='RO access; index 1; range 0 1 0',
)
def zlexcount(c: Client, args: list[bytes]) -> Any:
    rng = parse_lex_range(args[2], args[3])
    z = read_value(c, args[1], ZSet)
    if z is None:
        return 0
    first = _lex_first(z, rng)
    if first is None:
        return 0
    order = z.order
    if z.listpack and not _one_score(order):
        return _lex_count_from(order, first, rng)  # the listpack walk
    # The skiplist's rank arithmetic; with mixed scores it can even go negative, as
    # Redis's unsigned count printed as a long long does.
    last = _lex_last(z, rng)
    return len(order) - first if last is None else last - first + 1


# -- removing by range ----------------------------------------------------------------


def _remove_span(z: ZSet, lo: int, hi: int) -> None:
    """Remove the elements at positions [lo, hi) from both of the set's structures."""
    scores = z.scores
    for _, m in z.order.islice(lo, hi):
        del scores[m]
    del z.order[lo:hi]


def zremrange_generic(c: Client, args: list[bytes], rangetype: str, event: bytes) -> int:
    """zremrangeGenericCommand: parse the range, look the key up for writing, remove."""
    key = args[1]
    if rangetype is RANK:
        start, end = int_arg(args[2]), int_arg(args[3])
    elif rangetype is SCORE:
        score_rng = parse_score_range(args[2], args[3])
    else:
        lex_rng = parse_lex_range(args[2], args[3])
    z = write_value(c, key, ZSet)
    if z is None:
        return 0
    if rangetype is RANK:
        n = len(z)
        if start < 0:
            start += n
        if end < 0:
            end += n
        if start < 0:
            start = 0
        if start > end or start >= n:
            return 0
        lo, hi = start, min(end, n - 1) + 1
    elif rangetype is SCORE:
        lo, hi = score_span(z.order, score_rng)
    else:
        lo, hi = lex_span(z, lex_rng)
    if hi <= lo:
        return 0
    _remove_span(z, lo, hi)
    changed(c, events.ZSET, event, key)
    drop_if_empty(c, key, z)
    return hi - lo


_REMRANGE = dict(flags='write', keys=(1, 1, 1), categories='@write @sortedset @slow')


@COMMANDS.command(
    'zremrangebyscore',
    4,
    **_REMRANGE,
    summary='Remove all members in a sorted set within the given scores',
    since='1.2.0',
    key_specs='RW delete; index 1; range 0 1 0',
)
def zremrangebyscore(c: Client, args: list[bytes]) -> Any:
    return zremrange_generic(c, args, SCORE, b'zremrangebyscore')


@COMMANDS.command(
    'zremrangebyrank',
    4,
    **_REMRANGE,
    summary='Remove all members in a sorted set within the given indexes',
    since='2.0.0',
    key_specs='RW delete; index 1; range 0 1 0',
)
def zremrangebyrank(c: Client, args: list[bytes]) -> Any:
    return zremrange_generic(c, args, RANK, b'zremrangebyrank')


@COMMANDS.command(
    'zremrangebylex',
    4,
    **_REMRANGE,
    summary='Remove all members in a sorted set between the given lexicographical range',
    since='2.8.9',
    key_specs='RW delete; index 1; range 0 1 0',
)
def zremrangebylex(c: Client, args: list[bytes]) -> Any:
    return zremrange_generic(c, args, LEX, b'zremrangebylex')
