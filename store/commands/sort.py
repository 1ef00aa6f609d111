"""SORT and SORT_RO, as Redis 7.0's sort.c.

`_sort` follows sortCommandGeneric step by step:

1. Options, left to right, each with the arguments it needs: ASC DESC ALPHA, LIMIT
   offset count (two integers, else 'value is not an integer'), STORE key (SORT only),
   BY pattern, GET pattern (repeatable). Anything else is a syntax error. A BY pattern
   without '*' (`nosort`) means "do not sort", and stays so even if another BY follows.
2. The key is looked up for reading (hits and misses counted, even with STORE, as in
   7.0); a list, set or sorted set, else WRONGTYPE; a missing key sorts as an empty
   list. A sorted set is converted to the skiplist encoding for good (Redis does it
   to iterate it), so OBJECT ENCODING changes even for SORT_RO.
3. Not sorting a set with STORE turns into an ALPHA sort, so the stored list does not
   depend on the set's hash order. Without STORE, a set comes out in its iteration
   order: ascending for an intset, hash order otherwise (which no two servers share).
4. LIMIT is clamped to the collection; a list or sorted set that is not sorted is read
   only over the requested range, from the tail with DESC.
5. Weights: the element itself or what BY's pattern finds (a string key, or a hash field
   with `key->field`; anything else counts as missing: weight 0, or sorted first with
   ALPHA). Numeric weights are parsed with C's strtod: leading space allowed, trailing
   bytes, NaN and ERANGE (overflow, underflow, inexact subnormals) are errors, but only
   reported after the whole vector was looked at ('One or more scores can't be
   converted into double').
6. Comparison: numeric weights, ties broken by the elements' bytes; ALPHA compares
   with strcoll, which in the C/C.UTF-8 locale Redis runs in is strcmp (strings end at a
   NUL byte), except with STORE, where it compares the bytes (memcmp then length).
   Python's sort is stable as glibc's qsort (a merge sort) is, and `reverse=True` keeps
   equal elements in their order as Redis's negated comparator does. When BY and a
   LIMIT that cuts the vector are both given, Redis sorts partially with pqsort.c, a
   quicksort that is not stable; `store/pqsort.py` is a port of it, so that equal weights end
   where Redis puts them.
7. Output: the elements, or for each one the GET patterns' values (`#` is the element
   itself, a miss is a null; STORE writes an empty string instead). STORE replaces the
   destination with a list (`new` when it did not exist, then `sortstore`) or, when
   the result is empty, deletes it (`del`).

Every look-up a pattern makes is a read of the keyspace (lazy expiry, keyspace hit or
miss, `keymiss` events), as lookupKeyByPattern does. Cost: O(N log N) plus one look-up
per element and pattern (measured: a numeric SORT of 100,000 list elements takes about
0.4 s against redis-server's 0.05 s, the reply included); nothing is allocated in
proportion to LIMIT's numbers. The strtod emulation is zset_algebra.strtod.

Known difference: Redis 7.0 tests `errno == ERANGE` after strtod without clearing errno,
so in redis-server a numeric SORT of non-integer strings fails while errno is left at
ERANGE by an earlier strtod (a SORT of '1e400', a ZRANGEBYSCORE bound) on that process;
a new connection or a ZADD resets it. That global state is not reproduced here.
"""

from collections.abc import Callable
from itertools import islice
from typing import Any

from .. import events
from ..args import SYNTAX, WRONGTYPE, int_arg, keyword
from ..cnum import strtod
from ..command_table import Family
from ..context import Client
from ..pqsort import pqsort
from ..resp import RedisError
from ..scripting import is_script_client
from ..types.hash import Hash
from ..types.list import List
from ..types.set import Set
from ..types.zset import ZSet
from .aggregates import store_result

_DBL_MIN = 2.2250738585072014e-308  # the smallest normal double
_INF = float('inf')

COMMANDS = Family('generic')

E_NOT_DOUBLE = "ERR One or more scores can't be converted into double"


def _c_string(b: bytes) -> bytes:
    """What C string functions see of `b`: the bytes before the first NUL."""
    return b[: b.index(b'\0')] if b'\0' in b else b


def _lookup_by_pattern(c: Client, pattern: bytes, element: bytes) -> bytes | None:
    """lookupKeyByPattern: the value a GET or BY pattern names for `element`, or None.

    `#` is the element itself. Otherwise the first '*' is replaced by the element to
    form a key; with `->field` after the '*', the key must hold a hash and the field's
    value is returned, without it a string. Any other type counts as missing (no
    WRONGTYPE). '*', '->' and `#` are found as C string functions find them (up to a
    NUL byte); the key and field are built from the whole pattern, as Redis does with
    the pattern's length."""
    spat = _c_string(pattern)
    if spat == b'#':
        return element
    star = spat.find(b'*')
    if star < 0:
        return None
    arrow = spat.find(b'->', star + 1)
    if arrow >= 0 and arrow + 2 < len(spat):
        field = pattern[arrow + 2 :]
        key = pattern[:star] + element + pattern[star + 1 : arrow]
    else:
        field = None
        key = pattern[:star] + element + pattern[star + 1 :]
    value = c.ks.read(c.db, key)
    if value is None:
        return None
    if field is not None:
        return value.get(field) if type(value) is Hash else None
    return value if type(value) is bytes else None


def _elements(
    value: Any, dontsort: bool, desc: bool, start: int, end: int
) -> tuple[list[bytes], int, int]:
    """The vector to sort or, not sorting, to output. A list or sorted set that is not
    sorted is read only over the LIMIT range, from the tail with DESC, and the range is
    rebased to the vector; anything else is read whole. Returns (vector, start, end).
    `value` is a List, Set or ZSet, typed Any: its type is tested once, as `t`, which
    mypy does not narrow `value` by."""
    t = type(value)
    if dontsort and t is not Set:
        count = end - start + 1
        if count <= 0:
            return [], start, end
        if t is List:
            items = reversed(value) if desc else iter(value)
            vector = list(islice(items, start, start + count))
        else:
            n = len(value)
            if desc:
                ranks = value.order.islice(n - start - count, n - start, reverse=True)
            else:
                ranks = value.order.islice(start, start + count)
            vector = [m for _, m in ranks]
        return vector, 0, end - start
    if t is List:
        return list(value), start, end
    if t is Set:
        return value.members(), start, end
    return list(value.scores), start, end


def _sorted(
    c: Client,
    vector: list[bytes],
    sortby: bytes | None,
    alpha: bool,
    desc: bool,
    store: bool,
    start: int,
    end: int,
) -> list[bytes]:
    """The vector in SORT's order (see the module comment): weights looked up for every
    element in vector order, then a stable sort, or Redis's partial quicksort when BY
    and a narrowing LIMIT are both given, so that even the order of ties is Redis's."""
    text = _identity if store else _c_string  # ALPHA: memcmp with STORE, else strcmp
    if alpha:
        if sortby is None:
            vector.sort(key=text, reverse=desc)
            return vector
        weights: list[Any] = []  # ALPHA: texts or None, else numbers
        for element in vector:
            w = _lookup_by_pattern(c, sortby, element)
            weights.append(None if w is None else text(w))
    else:
        weights = []
        bad = False
        for element in vector:
            w = element if sortby is None else _lookup_by_pattern(c, sortby, element)
            score: float | None = 0.0
            if w is not None:
                score = _weight(w)
                if score is None:
                    bad, score = True, 0.0
            weights.append(score)
        if bad:
            raise RedisError(E_NOT_DOUBLE)
    if sortby is not None and (start != 0 or end != len(vector) - 1):
        entries = list(zip(weights, vector))
        pqsort(entries, _comparator(alpha, desc), start, end)
        return [element for _, element in entries]
    if alpha:
        # a missing weight sorts first (last with DESC)
        keyed = [((w is not None, w or b''), e) for w, e in zip(weights, vector)]
        keyed.sort(key=_first, reverse=desc)
        return [element for _, element in keyed]
    # by weight, ties by the element's bytes: two stable sorts with simple keys are much
    # faster than one over (weight, element) tuples. An element's weight depends on the
    # element only (Redis fixes the clock for a command), so a dict can hold them.
    weight_of = dict(zip(vector, weights))
    vector.sort(reverse=desc)
    vector.sort(key=weight_of.__getitem__, reverse=desc)
    return vector


_DECIMAL_BYTES = b'0123456789.-'


def _weight(w: bytes) -> float | None:
    """A numeric weight as SORT reads it (strtod over the C string, all of it), or None
    when Redis reports it as not convertible: trailing bytes, NaN, ERANGE. Plain decimals
    in the normal range, the common case, take a short path through float(), which
    parses them as C does."""
    if not w.translate(None, _DECIMAL_BYTES):
        try:
            v = float(w)
        except ValueError:
            pass
        else:
            if _DBL_MIN <= abs(v) < _INF:
                return v
    v, used, erange = strtod(w)
    if used != len(_c_string(w)) or erange or v != v:
        return None
    return v


def _identity(b: bytes) -> bytes:
    return b


def _first(entry: tuple[tuple[bool, bytes], bytes]) -> tuple[bool, bytes]:
    return entry[0]


def _comparator(alpha: bool, desc: bool) -> Callable[[Any, Any], int]:
    """sortCompare over (weight, element) entries, for pqsort."""

    def compare(x: Any, y: Any) -> int:
        a, b = x[0], y[0]
        if alpha:
            if a is None or b is None:
                r = 0 if a is b else -1 if a is None else 1
            else:
                r = (a > b) - (a < b)
        elif a != b:
            r = 1 if a > b else -1
        else:
            r = (x[1] > y[1]) - (x[1] < y[1])
        return -r if desc else r

    return compare


def _check_key_access(c: Client, args: list[bytes], readonly: bool, option: str) -> None:
    """BY and GET patterns read keys no key spec names: Redis allows them only to a user
    that may read every key with this command."""
    if not c.acl_rules:
        return
    cmd = c.server.commands[b'sort_ro' if readonly else b'sort']
    if not c.server.acl.reads_every_key(c.user, cmd, args):
        raise RedisError(f'ERR {option} option of SORT denied due to insufficient ACL permissions.')


def _sort(c: Client, args: list[bytes], readonly: bool) -> Any:
    """sortCommandGeneric."""
    desc = alpha = dontsort = False
    limit_start, limit_count = 0, -1
    sortby = storekey = None
    gets = []
    j, argc = 2, len(args)
    while j < argc:
        left = argc - j - 1
        opt = keyword(args[j])
        if opt == b'asc':
            desc = False
        elif opt == b'desc':
            desc = True
        elif opt == b'alpha':
            alpha = True
        elif opt == b'limit' and left >= 2:
            limit_start = int_arg(args[j + 1])
            limit_count = int_arg(args[j + 2])
            j += 2
        elif not readonly and opt == b'store' and left >= 1:
            storekey = args[j + 1]
            j += 1
        elif opt == b'by' and left >= 1:
            sortby = args[j + 1]
            if b'*' not in _c_string(sortby):
                dontsort = True
            else:
                if c.server.cluster is not None:  # its keys may be in any slot
                    raise RedisError('ERR BY option of SORT denied in Cluster mode.')
                _check_key_access(c, args, readonly, 'BY')
            j += 1
        elif opt == b'get' and left >= 1:
            if c.server.cluster is not None:  # its keys may be in any slot
                raise RedisError('ERR GET option of SORT denied in Cluster mode.')
            _check_key_access(c, args, readonly, 'GET')
            gets.append(args[j + 1])
            j += 1
        else:
            raise SYNTAX
        j += 1

    ks, db = c.ks, c.db
    value = ks.read(db, args[1])
    t = type(value)
    if value is None:
        value, t = List(), List
    elif t is not List and t is not Set and t is not ZSet:
        raise WRONGTYPE

    if dontsort and t is Set and (storekey is not None or is_script_client(c)):
        # a stored result, or a script's (replicated as its effects), must not be random
        dontsort, alpha, sortby = False, True, None
    if t is ZSet:
        value.listpack = False  # zsetConvert(sortval, OBJ_ENCODING_SKIPLIST)

    n = len(value)
    start = max(limit_start, 0)
    end = n - 1 if limit_count < 0 else start + limit_count - 1
    if start >= n:
        start, end = n - 1, n - 2
    if end >= n:
        end = n - 1
    vector, start, end = _elements(value, dontsort, desc, start, end)

    if not dontsort:
        vector = _sorted(c, vector, sortby, alpha, desc, storekey is not None, start, end)

    picked = vector[start : end + 1] if end >= start else []
    if storekey is None:
        if not gets:
            return picked
        out = []
        for element in picked:
            for pattern in gets:
                out.append(_lookup_by_pattern(c, pattern, element))
        return out

    if gets:
        stored = List()
        for element in picked:
            for pattern in gets:
                v = _lookup_by_pattern(c, pattern, element)
                stored.append(b'' if v is None else v)
    else:
        stored = List(picked)
    return store_result(c, storekey, stored, events.LIST, b'sortstore')


def _sort_keys(args: list[bytes]) -> list[int]:
    """sortGetKeys, for COMMAND GETKEYS: the sorted key, and the key of the last STORE
    that has an argument after it. LIMIT, GET and BY skip their arguments; STORE does
    not (its key is looked at as an option next), as in Redis."""
    keys = [1]
    store = None
    i, n = 2, len(args)
    while i < n:
        opt = keyword(args[i])
        if opt == b'limit':
            i += 2
        elif opt == b'get' or opt == b'by':
            i += 1
        elif opt == b'store' and i + 1 < n:
            store = i + 1
        i += 1
    return keys if store is None else [1, store]


@COMMANDS.command(
    'sort',
    -2,
    flags='write denyoom movablekeys',
    keys=(1, 1, 1),
    getkeys=_sort_keys,
    categories='@write @set @sortedset @list @slow @dangerous',
    summary='Sort the elements in a list, set or sorted set',
    key_specs=(
        'RO access; index 1; range 0 1 0 | RO access; unknown; unknown; '
        "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from "
        'the content of the key we sort | '
        'OW update; unknown; unknown; '
        "For the optional STORE keyword. It is marked 'unknown' because the keyword can appear "
        'anywhere in the argument array'
    ),
)
def sort(c: Client, args: list[bytes]) -> Any:
    return _sort(c, args, readonly=False)


@COMMANDS.command(
    'sort_ro',
    -2,
    flags='readonly movablekeys',
    keys=(1, 1, 1),
    categories='@read @set @sortedset @list @slow @dangerous',
    since='7.0.0',
    summary='Sort the elements in a list, set or sorted set. Read-only variant of SORT.',
    key_specs=(
        'RO access; index 1; range 0 1 0 | RO access; unknown; unknown; '
        "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from "
        'the content of the key we sort'
    ),
)
def sort_ro(c: Client, args: list[bytes]) -> Any:
    return _sort(c, args, readonly=True)
