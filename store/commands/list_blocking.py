"""Blocking list commands (Redis 7.0 t_list.c and blocked.c): BLPOP BRPOP BLMOVE
BRPOPLPUSH BLMPOP.

Each first tries what its non-blocking twin does (LPOP, LMOVE, LMPOP; helpers in
lists.py). When every key it names is missing, it waits in the server's
blocking-operations registry (store/blocking.py) with a `serve(db, key)` function and
replies nothing now; the registry parks the connection, so its later commands queue
behind the blocked one.

Serving, as Redis's serveClientsBlockedOnListKey: after any command that touched a key
somebody waits on, and before that command's client runs its next one, `serve` is called
for each waiter in the order the clients blocked (first blocked, first served). It pops
for its client only while the key holds a non-empty list, so one push of several
elements serves several clients, and a key that was deleted, or now holds another type,
leaves the client waiting (Redis 7.0 unblocks only XREADGROUP for those). Served clients
cause the events the same pop would (`lpop`/`rpop`, `del` when emptied; BLMOVE's `new`
and `lpush`/`rpush` on its destination first), and a BLMOVE's push to a destination
others wait on serves them in the same round. A BLMOVE whose destination holds another
type when it is served gets WRONGTYPE and stops waiting; the element stays.

A wait ends by being served, by its timeout (reply: a null array, for BLMOVE too), by
CLIENT UNBLOCK (TIMEOUT: the same null array; ERROR: `-UNBLOCKED ...`), or by disconnect.
Inside MULTI/EXEC a blocking command answers at once as on timeout, except that BLMOVE
and BRPOPLPUSH answer a null bulk there, as Redis does.
"""

from typing import Any

from ..args import WRONGTYPE
from ..command_table import Family, numkeys_keys
from ..context import Client
from ..resp import NO_REPLY, NULL_ARRAY
from ..types.list import List
from .aggregates import drop_if_empty, mpop_args, timeout_arg, write_value
from .lists import (
    LIST,
    elements_removed,
    lmove_generic,
    pop_range,
    push_to,
    where_arg,
)

COMMANDS = Family('list')

# -- BLPOP / BRPOP / BLMPOP -----------------------------------------------------------------


def _pop_one(c: Client, key: bytes, lst: List, head: bool) -> list[bytes]:
    """Pop one element for BLPOP/BRPOP: the reply is [key, element]."""
    value = lst.popleft() if head else lst.pop()
    elements_removed(c, key, lst, head)
    return [key, value]


def _blocking_pop(c: Client, keys: list[bytes], head: bool, timeout_b: bytes, count: int) -> Any:
    """blockingPopGenericCommand: pop from the first non-empty list among `keys`, or
    wait for one. `count` -1 for BLPOP/BRPOP (one element), else BLMPOP's COUNT."""
    timeout = timeout_arg(timeout_b)
    for key in keys:
        lst = write_value(c, key, List)
        if lst:
            if count == -1:
                return _pop_one(c, key, lst, head)
            return pop_range(c, key, lst, head, count)
    blocking = c.server.blocking
    if not blocking.may_block(c):
        return NULL_ARRAY

    def serve(db: int, key: bytes) -> list[Any] | None:
        lst = c.ks.lookup(db, key)
        if type(lst) is not List or not lst:
            return None  # deleted, another type: keep waiting
        if count != -1:
            return pop_range(c, key, lst, head, count)
        # serveClientBlockedOnList: the push that made the key ready already signalled
        # it, so only the pop's event and, if emptied, the deletion follow.
        value = lst.popleft() if head else lst.pop()
        ks = c.ks
        if ks.notify_flags & LIST:
            ks.notify(LIST, b'lpop' if head else b'rpop', db, key)
        drop_if_empty(c, key, lst)
        return [key, value]

    blocking.block(c, keys, serve, timeout, NULL_ARRAY, List)
    return NO_REPLY


_BPOP = dict(
    flags='write noscript blocking',
    keys=(1, -2, 1),
    categories='@write @list @slow @blocking',
    since='2.0.0',
)


@COMMANDS.command(
    'blpop',
    -3,
    summary='Remove and get the first element in a list, or block until one is available',
    **_BPOP,
    key_specs='RW access delete; index 1; range -2 1 0',
)
def blpop(c: Client, args: list[bytes]) -> Any:
    return _blocking_pop(c, args[1:-1], True, args[-1], -1)


@COMMANDS.command(
    'brpop',
    -3,
    summary='Remove and get the last element in a list, or block until one is available',
    **_BPOP,
    key_specs='RW access delete; index 1; range -2 1 0',
)
def brpop(c: Client, args: list[bytes]) -> Any:
    return _blocking_pop(c, args[1:-1], False, args[-1], -1)


@COMMANDS.command(
    'blmpop',
    -5,
    flags='write blocking movablekeys',
    getkeys=numkeys_keys(2),
    categories='@write @list @slow @blocking',
    summary='Pop elements from a list, or block until one is available',
    since='7.0.0',
    key_specs='RW access delete; index 2; keynum 0 1 1',
)
def blmpop(c: Client, args: list[bytes]) -> Any:
    """BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]: the numkeys, side
    and COUNT are checked before the timeout, as in Redis."""
    keys, head, count = mpop_args(args, 2, where_arg)
    return _blocking_pop(c, keys, head, args[1], count)


# -- BLMOVE / BRPOPLPUSH --------------------------------------------------------------------


def _blocking_move(
    c: Client, args: list[bytes], head_from: bool, head_to: bool, timeout: float
) -> Any:
    """blmoveGenericCommand: LMOVE when the source has elements, else wait on it."""
    src, dst = args[1], args[2]
    if write_value(c, src, List) is not None:
        return lmove_generic(c, src, dst, head_from, head_to)
    blocking = c.server.blocking
    if not blocking.may_block(c):
        return None

    def serve(db: int, key: bytes) -> Any:
        s = c.ks.lookup(db, src)
        if type(s) is not List or not s:
            return None
        d = c.ks.lookup(db, dst)
        if d is not None and type(d) is not List:
            return WRONGTYPE  # the client is unblocked with the error, nothing moves
        value = s.popleft() if head_from else s.pop()
        push_to(c, dst, d, value, head_to)
        ks = c.ks
        if ks.notify_flags & LIST:
            ks.notify(LIST, b'lpop' if head_from else b'rpop', db, src)
        drop_if_empty(c, src, s)
        return value

    blocking.block(c, [src], serve, timeout, NULL_ARRAY, List)
    return NO_REPLY


_BMOVE = dict(
    flags='write denyoom noscript blocking',
    keys=(1, 2, 1),
    categories='@write @list @slow @blocking',
    summary='Pop an element from a list, push it to another list and return it; '
    'or block until one is available',
)


@COMMANDS.command(
    'blmove',
    6,
    since='6.2.0',
    **_BMOVE,
    key_specs='RW access delete; index 1; range 0 1 0 | RW insert; index 2; range 0 1 0',
)
def blmove(c: Client, args: list[bytes]) -> Any:
    head_from = where_arg(args[3])
    head_to = where_arg(args[4])
    timeout = timeout_arg(args[5])
    return _blocking_move(c, args, head_from, head_to, timeout)


@COMMANDS.command(
    'brpoplpush',
    4,
    since='2.2.0',
    **_BMOVE,
    key_specs='RW access delete; index 1; range 0 1 0 | RW insert; index 2; range 0 1 0',
)
def brpoplpush(c: Client, args: list[bytes]) -> Any:
    timeout = timeout_arg(args[3])
    return _blocking_move(c, args, False, True, timeout)
