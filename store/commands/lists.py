"""List commands (Redis 7.0 t_list.c), non-blocking: pushes, pops, ranges, LSET, LINSERT,
LREM, LTRIM, LPOS, LMOVE/RPOPLPUSH and LMPOP. The blocking ones are list_blocking.py,
which builds on the helpers here (`pop_range`, `push_to`, `elements_removed`; LMPOP's
parsing, shared with ZMPOP, is aggregates.mpop_args).

A list is types/list.py's List, a deque of bytes: O(1) at both ends, as Redis's
quicklist. Every handler follows t_list.c's control flow step by step, because the order
of checks is observable: LRANGE, LTRIM and LREM parse their numbers before looking the key
up, LINDEX and LSET look the key up first (a missing key wins over a bad index), LPOP
parses COUNT before the key and answers a missing key with a null array only when COUNT
was given. Read commands (LLEN, LRANGE, LINDEX, LPOS) use `ks.read` (keyspace hits and
misses, `keymiss`), the others `ks.lookup`.

Events are raised in Redis's order: `new` when a push creates the key (dbAdd), then the
command's own event (`lpush`, `rpop`, `ltrim`, ...), then `del` when it emptied the list,
which never stays in the keyspace empty. LMOVE raises the push on its destination first
(`new`, `lpush`/`rpush`) and then the pop on its source (`lpop`/`rpop`, `del`), as Redis's
lmoveGenericCommand does. LTRIM raises `ltrim` even when it removed nothing; LSET, LINSERT
and LREM only when they changed the list.

Costs: pushes and pops O(1) per element; LRANGE walks from the nearer end of the deque
(itertools.islice over it or over reversed(it)), so the first or last few hundred
elements of any list cost what they return, and encodes its reply in one join
(`bulk_array`); LINDEX and LSET index the deque, which
CPython also walks from the nearer end; LREM, LPOS and LINSERT are O(N). LTRIM pops what
it removes one by one when that is little, else rebuilds the deque once. No command
allocates in proportion to a client's number: counts are clamped to the list's length.
"""

from itertools import islice
from typing import Any

from .. import events
from ..args import SYNTAX, WRONGTYPE, int_arg, range_arg
from ..command_table import Family, numkeys_keys
from ..context import Client
from ..resp import BULK_HEADER, CRLF, NULL_ARRAY, OK, Raw, RedisError
from ..types.list import List
from .aggregates import changed, create, drop_if_empty, mpop_args, read_value, write_value

LIST, GENERIC = events.LIST, events.GENERIC

LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)

E_NO_KEY = 'ERR no such key'
E_INDEX = 'ERR index out of range'
E_POSITIVE = 'ERR value is out of range, must be positive'
E_RANK_ZERO = (
    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... "
    'or use negative to start from the end of the list'
)

COMMANDS = Family('list')


# -- argument parsing -------------------------------------------------------------------


def where_arg(b: bytes) -> bool:
    """getListPositionFromObjectOrReply: LEFT (True, the head) or RIGHT (False)."""
    w = b.lower()
    if w == b'left':
        return True
    if w == b'right':
        return False
    raise SYNTAX


# -- shared steps -----------------------------------------------------------------------


def elements_removed(c: Client, key: bytes, lst: List, head: bool) -> None:
    """listElementsRemoved: the pop's event, then `del` if the list is now empty, and the
    key signalled as modified."""
    ks = c.ks
    if ks.notify_flags & LIST:
        ks.notify(LIST, b'lpop' if head else b'rpop', c.db, key)
    if lst:
        ks.updated(c.db, key)
    else:
        drop_if_empty(c, key, lst)


def take(lst: List, head: bool, count: int) -> list[bytes]:
    """Pop up to `count` elements from one end, in the order they are popped (what
    LPOP/RPOP COUNT and LMPOP reply)."""
    pop = lst.popleft if head else lst.pop
    return [pop() for _ in range(min(count, len(lst)))]


def pop_range(c: Client, key: bytes, lst: List, head: bool, count: int) -> list[Any]:
    """listPopRangeAndReplyWithKey: pop up to `count` elements; the reply is
    [key, elements]."""
    popped = take(lst, head, count)
    elements_removed(c, key, lst, head)
    return [key, popped]


def push_to(c: Client, key: bytes, lst: List | None, value: bytes, head: bool) -> None:
    """lmoveHandlePush: push `value` on the destination `lst` (None: create it, raising
    `new`), signal it and raise `lpush`/`rpush`."""
    if lst is None:
        lst = create(c, key, List())
    if head:
        lst.appendleft(value)
    else:
        lst.append(value)
    changed(c, LIST, b'lpush' if head else b'rpush', key)


def bulk_array(items: list[bytes]) -> Raw:
    """An array of bulk strings encoded at once (the same bytes in RESP2 and RESP3): the
    headers, elements and CRLFs are laid out by slice assignment and joined once, about
    twice as fast as the generic encoder for LRANGE's hundreds of elements."""
    n = len(items)
    out = [CRLF] * (3 * n + 1)
    out[0] = b'*%d\r\n' % n
    out[1::3] = [BULK_HEADER[k] if k < 1024 else b'$%d\r\n' % k for k in map(len, items)]
    out[2::3] = items
    return Raw(b''.join(out))


def list_range(lst: List, start: int, end: int) -> list[bytes]:
    """addListRangeReply's elements between two inclusive indexes (negative counting from
    the tail), walked from the nearer end of the deque."""
    llen = len(lst)
    if start < 0:
        start += llen
    if end < 0:
        end += llen
    if start < 0:
        start = 0
    if start > end or start >= llen:
        return []
    if end >= llen:
        end = llen - 1
    if start <= llen - 1 - end:
        return list(islice(lst, start, end + 1))
    out = list(islice(reversed(lst), llen - 1 - end, llen - start))
    out.reverse()
    return out


# -- pushes -------------------------------------------------------------------------------


def _push(c: Client, args: list[bytes], head: bool, xx: bool) -> int:
    """pushGenericCommand. The hot path of LPUSH/RPUSH: one look-up, one event check."""
    ks = c.ks
    db = c.db
    key = args[1]
    lst = ks.lookup(db, key)
    if lst is None:
        if xx:
            return 0
        lst = create(c, key, List())
    elif type(lst) is not List:
        raise WRONGTYPE
    if len(args) == 3:
        if head:
            lst.appendleft(args[2])
        else:
            lst.append(args[2])
    elif head:
        lst.extendleft(args[2:])
    else:
        lst.extend(args[2:])
    ks.changes += 1  # `updated` inline: the lookup marked the list already
    if ks.observed:
        ks.touch(db, key)
    if ks.notify_flags & LIST:
        ks.notify(LIST, b'lpush' if head else b'rpush', db, key)
    return len(lst)


_PUSH = dict(flags='write denyoom fast', keys=(1, 1, 1), categories='@write @list @fast')


@COMMANDS.command(
    'lpush',
    -3,
    summary='Prepend one or multiple elements to a list',
    **_PUSH,
    key_specs='RW insert; index 1; range 0 1 0',
)
def lpush(c: Client, args: list[bytes]) -> int:
    return _push(c, args, True, False)


@COMMANDS.command(
    'rpush',
    -3,
    summary='Append one or multiple elements to a list',
    **_PUSH,
    key_specs='RW insert; index 1; range 0 1 0',
)
def rpush(c: Client, args: list[bytes]) -> int:
    return _push(c, args, False, False)


@COMMANDS.command(
    'lpushx',
    -3,
    summary='Prepend an element to a list, only if the list exists',
    since='2.2.0',
    **_PUSH,
    key_specs='RW insert; index 1; range 0 1 0',
)
def lpushx(c: Client, args: list[bytes]) -> int:
    return _push(c, args, True, True)


@COMMANDS.command(
    'rpushx',
    -3,
    summary='Append an element to a list, only if the list exists',
    since='2.2.0',
    **_PUSH,
    key_specs='RW insert; index 1; range 0 1 0',
)
def rpushx(c: Client, args: list[bytes]) -> int:
    return _push(c, args, False, True)


# -- pops ---------------------------------------------------------------------------------


def _pop(c: Client, args: list[bytes], head: bool) -> Any:
    """popGenericCommand: one element (a bulk reply), or with COUNT an array."""
    n = len(args)
    if n == 2:  # the hot path
        ks = c.ks
        key = args[1]
        lst = ks.lookup(c.db, key)
        if lst is None:
            return None
        if type(lst) is not List:
            raise WRONGTYPE
        value = lst.popleft() if head else lst.pop()
        elements_removed(c, key, lst, head)
        return value
    if n > 3:
        raise RedisError(
            f"ERR wrong number of arguments for '{'lpop' if head else 'rpop'}' command"
        )
    count = range_arg(args[2], 0, LLONG_MAX, E_POSITIVE)
    lst = write_value(c, args[1], List)
    if lst is None:
        return NULL_ARRAY
    if not count:
        return []
    popped = take(lst, head, count)
    elements_removed(c, args[1], lst, head)
    return popped


_POP = dict(flags='write fast', keys=(1, 1, 1), categories='@write @list @fast')


@COMMANDS.command(
    'lpop',
    -2,
    summary='Remove and get the first elements in a list',
    **_POP,
    key_specs='RW access delete; index 1; range 0 1 0',
)
def lpop(c: Client, args: list[bytes]) -> Any:
    return _pop(c, args, True)


@COMMANDS.command(
    'rpop',
    -2,
    summary='Remove and get the last elements in a list',
    **_POP,
    key_specs='RW access delete; index 1; range 0 1 0',
)
def rpop(c: Client, args: list[bytes]) -> Any:
    return _pop(c, args, False)


@COMMANDS.command(
    'lmpop',
    -4,
    flags='write movablekeys',
    getkeys=numkeys_keys(1),
    categories='@write @list @slow',
    summary='Pop elements from a list',
    since='7.0.0',
    key_specs='RW access delete; index 1; keynum 0 1 1',
)
def lmpop(c: Client, args: list[bytes]) -> Any:
    """mpopGenericCommand: pop from the first non-empty list of the keys given."""
    keys, head, count = mpop_args(args, 1, where_arg)
    for key in keys:
        lst = write_value(c, key, List)
        if lst:
            return pop_range(c, key, lst, head, count)
    return NULL_ARRAY


# -- reads --------------------------------------------------------------------------------

_READ = dict(flags='readonly', keys=(1, 1, 1), categories='@read @list @slow')


@COMMANDS.command(
    'llen',
    2,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @list @fast',
    summary='Get the length of a list',
    key_specs='RO; index 1; range 0 1 0',
)
def llen(c: Client, args: list[bytes]) -> int:
    lst = read_value(c, args[1], List)
    return 0 if lst is None else len(lst)


@COMMANDS.command(
    'lrange',
    4,
    summary='Get a range of elements from a list',
    **_READ,
    key_specs='RO access; index 1; range 0 1 0',
)
def lrange(c: Client, args: list[bytes]) -> Any:
    start = int_arg(args[2])
    end = int_arg(args[3])
    lst = read_value(c, args[1], List)
    if lst is None:
        return []
    return bulk_array(list_range(lst, start, end))


@COMMANDS.command(
    'lindex',
    3,
    summary='Get an element from a list by its index',
    **_READ,
    key_specs='RO access; index 1; range 0 1 0',
)
def lindex(c: Client, args: list[bytes]) -> bytes | None:
    lst = read_value(c, args[1], List)
    if lst is None:
        return None
    index = int_arg(args[2])
    if -len(lst) <= index < len(lst):
        return lst[index]
    return None


@COMMANDS.command(
    'lpos',
    -3,
    summary='Return the index of matching elements on a list',
    since='6.0.6',
    **_READ,
    key_specs='RO access; index 1; range 0 1 0',
)
def lpos(c: Client, args: list[bytes]) -> Any:
    """LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]. RANK counts matches
    from the head (negative: from the tail); COUNT 0 means all matches; MAXLEN bounds the
    elements compared."""
    ele = args[2]
    rank, count, maxlen = 1, -1, 0  # count -1: no COUNT option
    n = len(args)
    j = 3
    while j < n:
        opt = args[j].lower()
        more = j + 1 < n
        if opt == b'rank' and more:
            j += 1
            rank = int_arg(args[j])
            if rank == 0:
                raise RedisError(E_RANK_ZERO)
        elif opt == b'count' and more:
            j += 1
            count = range_arg(args[j], 0, LLONG_MAX, "ERR COUNT can't be negative")
        elif opt == b'maxlen' and more:
            j += 1
            maxlen = range_arg(args[j], 0, LLONG_MAX, "ERR MAXLEN can't be negative")
        else:
            raise SYNTAX
        j += 1
    tail = rank < 0
    if rank == LLONG_MIN:
        # Redis negates the rank in a C long: LONG_MIN stays negative, so every match
        # is at or past the rank and COUNT never stops the scan.
        rank = 1
        if count > 0:
            count = 0
    elif tail:
        rank = -rank
    lst = read_value(c, args[1], List)
    if lst is None:
        return None if count == -1 else []
    llen = len(lst)
    scan = reversed(lst) if tail else lst
    if maxlen and maxlen < llen:
        scan = islice(scan, maxlen)
    out = []
    matches = 0
    for index, x in enumerate(scan):
        if x == ele:
            matches += 1
            if matches >= rank:
                pos = llen - index - 1 if tail else index
                if count == -1:
                    return pos
                out.append(pos)
                if count and matches - rank + 1 >= count:
                    break
    return None if count == -1 else out


# -- in-place changes ---------------------------------------------------------------------

_WRITE = dict(flags='write denyoom', keys=(1, 1, 1), categories='@write @list @slow')


@COMMANDS.command(
    'lset',
    4,
    summary='Set the value of an element in a list by its index',
    **_WRITE,
    key_specs='RW update; index 1; range 0 1 0',
)
def lset(c: Client, args: list[bytes]) -> str:
    lst = write_value(c, args[1], List)
    if lst is None:
        raise RedisError(E_NO_KEY)
    index = int_arg(args[2])
    if not -len(lst) <= index < len(lst):
        raise RedisError(E_INDEX)
    lst[index] = args[3]
    changed(c, LIST, b'lset', args[1])
    return OK


@COMMANDS.command(
    'linsert',
    5,
    summary='Insert an element before or after another element in a list',
    since='2.2.0',
    **_WRITE,
    key_specs='RW insert; index 1; range 0 1 0',
)
def linsert(c: Client, args: list[bytes]) -> int:
    where = args[2].lower()
    if where == b'after':
        after = True
    elif where == b'before':
        after = False
    else:
        raise SYNTAX
    lst = write_value(c, args[1], List)
    if lst is None:
        return 0
    try:
        i = lst.index(args[3])
    except ValueError:
        return -1
    lst.insert(i + 1 if after else i, args[4])
    changed(c, LIST, b'linsert', args[1])
    return len(lst)


@COMMANDS.command(
    'lrem',
    4,
    flags='write',
    keys=(1, 1, 1),
    categories='@write @list @slow',
    summary='Remove elements from a list',
    key_specs='RW delete; index 1; range 0 1 0',
)
def lrem(c: Client, args: list[bytes]) -> int:
    """Remove the first |count| occurrences of element, from the tail when count is
    negative, all of them when it is 0: one pass that keeps the other elements."""
    toremove = int_arg(args[2])
    key = args[1]
    lst = write_value(c, key, List)
    if lst is None:
        return 0
    tail = toremove < 0
    limit = -toremove if tail else toremove
    value = args[3]
    scan = iter(reversed(lst) if tail else lst)
    kept = []
    removed = 0
    for x in scan:
        if x == value:
            removed += 1
            if removed == limit:
                break
        else:
            kept.append(x)
    if removed:
        kept.extend(scan)  # what follows the last removal, untouched
        if tail:
            kept.reverse()
        lst.clear()
        lst.extend(kept)
        changed(c, LIST, b'lrem', key)
        drop_if_empty(c, key, lst)
    return removed


@COMMANDS.command(
    'ltrim',
    4,
    flags='write',
    keys=(1, 1, 1),
    categories='@write @list @slow',
    summary='Trim a list to the specified range',
    key_specs='RW delete; index 1; range 0 1 0',
)
def ltrim(c: Client, args: list[bytes]) -> str:
    start = int_arg(args[2])
    end = int_arg(args[3])
    key = args[1]
    lst = write_value(c, key, List)
    if lst is None:
        return OK
    llen = len(lst)
    if start < 0:
        start += llen
    if end < 0:
        end += llen
    if start < 0:
        start = 0
    if start > end or start >= llen:
        ltrim, rtrim = llen, 0
    else:
        if end >= llen:
            end = llen - 1
        ltrim, rtrim = start, llen - end - 1
    kept = llen - ltrim - rtrim
    if 4 * (ltrim + rtrim) <= kept:  # little to remove: pop it
        for _ in range(ltrim):
            lst.popleft()
        for _ in range(rtrim):
            lst.pop()
    elif ltrim + rtrim:
        keep = list(islice(lst, ltrim, ltrim + kept))
        lst.clear()
        lst.extend(keep)
    ks = c.ks
    if ks.notify_flags & LIST:
        ks.notify(LIST, b'ltrim', c.db, key)
    if not drop_if_empty(c, key, lst):
        if ltrim + rtrim:
            ks.updated(c.db, key)
        elif ks.observed:  # nothing removed: signalled all the same, but no change
            ks.touch(c.db, key)
    return OK


# -- moves --------------------------------------------------------------------------------


def lmove_generic(
    c: Client, src: bytes, dst: bytes, head_from: bool, head_to: bool
) -> bytes | None:
    """lmoveGenericCommand: pop from `src` and push on `dst` (which may be `src`); the
    destination's type is checked only once there is something to move. The push's
    events come before the pop's, as in Redis."""
    s = write_value(c, src, List)
    if s is None:
        return None
    d = write_value(c, dst, List)
    value = s.popleft() if head_from else s.pop()
    push_to(c, dst, d, value, head_to)
    ks = c.ks
    if ks.notify_flags & LIST:
        ks.notify(LIST, b'lpop' if head_from else b'rpop', c.db, src)
    if not drop_if_empty(c, src, s):
        ks.updated(c.db, src)
    return value


_MOVE = dict(flags='write denyoom', keys=(1, 2, 1), categories='@write @list @slow')


@COMMANDS.command(
    'lmove',
    5,
    summary='Pop an element from a list, push it to another list and return it',
    since='6.2.0',
    **_MOVE,
    key_specs='RW access delete; index 1; range 0 1 0 | RW insert; index 2; range 0 1 0',
)
def lmove(c: Client, args: list[bytes]) -> bytes | None:
    head_from = where_arg(args[3])
    head_to = where_arg(args[4])
    return lmove_generic(c, args[1], args[2], head_from, head_to)


@COMMANDS.command(
    'rpoplpush',
    3,
    summary='Remove the last element in a list, prepend it to another list and return it',
    since='1.2.0',
    **_MOVE,
    key_specs='RW access delete; index 1; range 0 1 0 | RW insert; index 2; range 0 1 0',
)
def rpoplpush(c: Client, args: list[bytes]) -> bytes | None:
    return lmove_generic(c, args[1], args[2], False, True)
