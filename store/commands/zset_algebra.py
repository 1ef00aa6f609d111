"""Sorted-set algebra: ZUNION ZINTER ZDIFF, their STORE forms and ZINTERCARD.

One handler, `_union_inter_diff`, follows Redis 7.0's zunionInterDiffGenericCommand
step by step, because the order of checks is what a client sees when several arguments
are bad:

1. numkeys: not an integer -> 'value is not an integer', < 1 -> 'at least 1 input key is
   needed', more than the arguments left -> syntax error. Nothing is allocated before
   numkeys is known to be covered by real arguments.
2. every input key is looked up (a read: hits and misses counted, even for the STORE
   forms, as in 7.0) and must be a sorted set or a plain set (WRONGTYPE otherwise);
   a plain set's members score 1.
3. only then the options: WEIGHTS (exactly numkeys doubles, Redis's string2d), AGGREGATE
   SUM|MIN|MAX, WITHSCORES (not for the STORE forms), LIMIT (ZINTERCARD only).

Scores follow Redis's double arithmetic: a weighted score that is NaN (0 * inf) counts as
0, and a SUM that turns NaN (inf + -inf) becomes 0; MIN/MAX ignore a NaN operand, since
`nan < x` is false in C as in Python. The inputs are visited from the smallest to the
largest (a stable sort by cardinality, as glibc's qsort is a merge sort), and floating
point sums depend on that order, so it is kept.

A STORE form replaces the destination whatever its type and TTL (setKey: `new` when the
key did not exist, then `zunionstore`/`zinterstore`/`zdiffstore`); an empty result
deletes the destination instead (`del`, only if it existed). The new sorted set gets the
encoding Redis gives it (listpack when small enough, `c.ks.limits`).

Costs: union O(N) dict work plus one O(M log M) sort of the result; intersection O(N*K)
look-ups with N the smallest input; difference O(L) over all inputs. The result is built
as a dict and sorted once, never member by member into the SortedList.
"""

from typing import Any, overload

from sortedcontainers import SortedList

from .. import events
from ..args import SYNTAX, WRONGTYPE, int_arg, keyword
from ..cnum import string2d
from ..command_table import Family, numkeys_keys
from ..context import Client
from ..resp import RedisError
from ..types import EncodingLimits
from ..types.set import Set
from ..types.zset import ZSet
from .aggregates import store_result

COMMANDS = Family('sorted-set', since='2.0.0')

E_WEIGHT = 'ERR weight value is not a float'
E_LIMIT = "ERR LIMIT can't be negative"

UNION, INTER, DIFF = 'union', 'inter', 'diff'
_STORE_EVENT = {UNION: b'zunionstore', INTER: b'zinterstore', DIFF: b'zdiffstore'}
SUM, MIN, MAX = 'sum', 'min', 'max'

# the inputs of a union or intersection: each key's member -> score, and its weight
_Inputs = list[tuple[dict[bytes, float], float]]


# -- the algorithm ----------------------------------------------------------------------


def _scores(value: ZSet | Set | None) -> dict[bytes, float]:
    """member -> score of an input: a sorted set's scores, 1.0 for a plain set's
    members, nothing for a missing key."""
    if value is None:
        return {}
    if type(value) is ZSet:
        return value.scores
    return dict.fromkeys(value, 1.0)


def _aggregate(target: float, value: float, how: str) -> float:
    """zunionInterAggregate."""
    if how is SUM:
        target += value
        return 0.0 if target != target else target
    if how is MIN:
        return value if value < target else target
    return value if value > target else target


def _union(inputs: _Inputs, how: str) -> dict[bytes, float]:
    out: dict[bytes, float] = {}
    for scores, weight in inputs:
        for member, score in scores.items():
            score *= weight
            if score != score:
                score = 0.0
            old = out.get(member)
            out[member] = score if old is None else _aggregate(old, score, how)
    return out


@overload
def _inter(inputs: _Inputs, how: str, limit: None) -> dict[bytes, float]: ...


@overload
def _inter(inputs: _Inputs, how: str, limit: int) -> int: ...


def _inter(inputs: _Inputs, how: str, limit: int | None) -> dict[bytes, float] | int:
    """The intersection (member -> score), or only its size (up to `limit`, 0 for no
    limit) when `limit` is not None."""
    first, weight = inputs[0]
    rest = inputs[1:]
    out: dict[bytes, float] = {}
    count = 0
    if not first:
        return count if limit is not None else out
    for member, score in first.items():
        score *= weight
        if score != score:
            score = 0.0
        for scores, w in rest:
            other = scores.get(member)
            if other is None:
                break
            score = _aggregate(score, other * w, how)
        else:
            if limit is not None:
                count += 1
                if limit and count >= limit:
                    break
            else:
                out[member] = score
    return count if limit is not None else out


def _diff(inputs: _Inputs) -> dict[bytes, float]:
    first = inputs[0][0]
    rest = [scores for scores, _ in inputs[1:]]
    if any(scores is first for scores in rest):
        return {}  # a key given again subtracts everything
    return {m: s for m, s in first.items() if not any(m in scores for scores in rest)}


def _new_zset(limits: EncodingLimits, scores: dict[bytes, float]) -> ZSet:
    """A sorted set holding `scores`, encoded as Redis creates it (a skiplist, then
    zsetConvertToListpackIfNeeded), as ZSet.sized does but with one sort instead of one
    insertion per member. A listpack cannot hold -0.0 (zzlInsertAt stores the integer
    0), so a small result turns -0 scores into 0 where a big one keeps them."""
    z = ZSet()
    z.listpack = len(scores) <= limits.zset_entries and all(
        len(m) <= limits.zset_value for m in scores
    )
    if z.listpack:
        for m, s in scores.items():
            if s == 0:
                scores[m] = 0.0
    z.scores = scores
    z.order = SortedList([(s, m) for m, s in scores.items()])
    return z


def _union_inter_diff(
    c: Client,
    args: list[bytes],
    name: str,
    dst: bytes | None,
    numkeys_at: int,
    op: str,
    cardinality_only: bool = False,
) -> Any:
    """zunionInterDiffGenericCommand."""
    setnum = int_arg(args[numkeys_at])
    if setnum < 1:
        raise RedisError(f"ERR at least 1 input key is needed for '{name}' command")
    if setnum > len(args) - (numkeys_at + 1):
        raise SYNTAX
    ks, db = c.ks, c.db
    first = numkeys_at + 1
    values = []
    for key in args[first : first + setnum]:
        v = ks.read(db, key)
        if v is not None and type(v) is not ZSet and type(v) is not Set:
            raise WRONGTYPE
        values.append(v)
    weights = [1.0] * setnum
    how = SUM
    withscores = False
    limit = 0
    j = first + setnum
    n = len(args)
    while j < n:
        remaining = n - j
        opt = keyword(args[j])
        if (
            op is not DIFF
            and not cardinality_only
            and remaining >= setnum + 1
            and opt == b'weights'
        ):
            j += 1
            for i in range(setnum):
                w = string2d(args[j])
                if w is None:
                    raise RedisError(E_WEIGHT)
                weights[i] = w
                j += 1
        elif op is not DIFF and not cardinality_only and remaining >= 2 and opt == b'aggregate':
            agg = {b'sum': SUM, b'min': MIN, b'max': MAX}.get(keyword(args[j + 1]))
            if agg is None:
                raise SYNTAX
            how = agg
            j += 2
        elif dst is None and not cardinality_only and opt == b'withscores':
            withscores = True
            j += 1
        elif cardinality_only and remaining >= 2 and opt == b'limit':
            limit = int_arg(args[j + 1], E_LIMIT)
            if limit < 0:
                raise RedisError(E_LIMIT)
            j += 2
        else:
            raise SYNTAX

    inputs = [(_scores(v), w) for v, w in zip(values, weights)]
    if op is INTER:
        inputs.sort(key=lambda item: len(item[0]))  # stable, as glibc's qsort
        if cardinality_only:
            return _inter(inputs, how, limit)
        result = _inter(inputs, how, None)
    elif op is UNION:
        inputs.sort(key=lambda item: len(item[0]))
        result = _union(inputs, how)
    else:
        result = _diff(inputs)

    if dst is not None:
        z = _new_zset(c.ks.limits, result) if result else None
        return store_result(c, dst, z, events.ZSET, _STORE_EVENT[op])
    order = sorted([(s, m) for m, s in result.items()])
    if not withscores:
        return [m for _, m in order]
    if c.proto == 2:
        out: list[bytes | float] = []
        for s, m in order:
            out += (m, s)
        return out
    return [[m, s] for s, m in order]


# -- COMMAND GETKEYS ---------------------------------------------------------------------


# -- the commands -----------------------------------------------------------------------

_READ = dict(
    flags='readonly movablekeys',
    keys=(0, 0, 0),
    categories='@read @sortedset @slow',
    getkeys=numkeys_keys(1),
)
_WRITE = dict(
    flags='write denyoom movablekeys',
    keys=(1, 1, 1),
    categories='@write @sortedset @slow',
    getkeys=numkeys_keys(2, store=1),
)


@COMMANDS.command(
    'zunionstore',
    -4,
    **_WRITE,
    summary='Add multiple sorted sets and store the resulting sorted set in a new key',
    key_specs='OW update; index 1; range 0 1 0 | RO access; index 2; keynum 0 1 1',
)
def zunionstore(c: Client, args: list[bytes]) -> Any:
    return _union_inter_diff(c, args, 'zunionstore', args[1], 2, UNION)


@COMMANDS.command(
    'zinterstore',
    -4,
    **_WRITE,
    summary='Intersect multiple sorted sets and store the resulting sorted set in a new key',
    key_specs='OW update; index 1; range 0 1 0 | RO access; index 2; keynum 0 1 1',
)
def zinterstore(c: Client, args: list[bytes]) -> Any:
    return _union_inter_diff(c, args, 'zinterstore', args[1], 2, INTER)


@COMMANDS.command(
    'zdiffstore',
    -4,
    **_WRITE,
    since='6.2.0',
    summary='Subtract multiple sorted sets and store the resulting sorted set in a new key',
    key_specs='OW update; index 1; range 0 1 0 | RO access; index 2; keynum 0 1 1',
)
def zdiffstore(c: Client, args: list[bytes]) -> Any:
    return _union_inter_diff(c, args, 'zdiffstore', args[1], 2, DIFF)


@COMMANDS.command(
    'zunion',
    -3,
    **_READ,
    since='6.2.0',
    summary='Add multiple sorted sets',
    key_specs='RO access; index 1; keynum 0 1 1',
)
def zunion(c: Client, args: list[bytes]) -> Any:
    return _union_inter_diff(c, args, 'zunion', None, 1, UNION)


@COMMANDS.command(
    'zinter',
    -3,
    **_READ,
    since='6.2.0',
    summary='Intersect multiple sorted sets',
    key_specs='RO access; index 1; keynum 0 1 1',
)
def zinter(c: Client, args: list[bytes]) -> Any:
    return _union_inter_diff(c, args, 'zinter', None, 1, INTER)


@COMMANDS.command(
    'zintercard',
    -3,
    **_READ,
    since='7.0.0',
    summary='Intersect multiple sorted sets and return the cardinality of the result',
    key_specs='RO access; index 1; keynum 0 1 1',
)
def zintercard(c: Client, args: list[bytes]) -> Any:
    return _union_inter_diff(c, args, 'zintercard', None, 1, INTER, cardinality_only=True)


@COMMANDS.command(
    'zdiff',
    -3,
    **_READ,
    since='6.2.0',
    summary='Subtract multiple sorted sets',
    key_specs='RO access; index 1; keynum 0 1 1',
)
def zdiff(c: Client, args: list[bytes]) -> Any:
    return _union_inter_diff(c, args, 'zdiff', None, 1, DIFF)
