"""XREAD and XREADGROUP (Redis 7.0 t_stream.c), with BLOCK, and the consumer-group reply
helpers the group commands share.

Blocking. When nothing can be served and BLOCK was given, the handler waits in the
server's blocking-operations registry (store/blocking.py) with a `serve` function for its
keys and replies nothing now (an empty Raw); the registry parks the connection, so its
later commands queue behind the blocked one. Any change to a key it waits on (XADD,
XSETID, XGROUP DESTROY, a DEL, an expiry, a FLUSHALL, a type change) makes the registry
call `serve`, in the order clients blocked, before the writer's next command runs; it
answers with entries newer than the ID the client gave (or the group's last ID), NOGROUP
when the group is gone, and for XREADGROUP `-UNBLOCKED the stream key no longer exists`
when the key was deleted or now holds another type, as Redis 7.0 does. Inside EXEC a
blocking read replies at once as on timeout, as Redis does for clients that may not block.
"""

from __future__ import annotations

from typing import Any

from ..args import SYNTAX, int_arg
from ..command_table import Family, keys_after_streams
from ..context import Client
from ..resp import NO_REPLY, NULL_ARRAY, Map, RedisError, string2ll
from ..scripting import is_script_client
from ..types.stream import MAX_ID, Consumer, Group, Stream
from .streams import (
    E_TIMEOUT,
    XREAD_BLOCKED_DEFAULT_COUNT,
    _get_consumer,
    _read_stream,
    _reply_history,
    _reply_range,
    strict_id,
)

COMMANDS = Family('stream', since='5.0.0')


# -- blocking ---------------------------------------------------------------------------

E_NOGROUP_BLOCKED = 'NOGROUP the consumer group this client was blocked on no longer exists'
E_KEY_GONE = 'UNBLOCKED the stream key no longer exists'


def _block(
    c: Client,
    keys: list[bytes],
    ids: list[int],
    count: int,
    group: bytes | None,
    consumer: bytes,
    noack: bool,
    timeout_ms: int,
) -> None:
    """XREAD/XREADGROUP BLOCK with nothing to serve: wait in the blocking registry
    (store/blocking.py) until an entry newer than the key's ID arrives."""
    db = c.db
    after: dict[bytes, int] = {}
    for k, i in zip(keys, ids):
        after.setdefault(k, i)

    def serve(db_: int, key: bytes) -> Any:
        """serveClientsBlockedOnStreamKey for this client: the reply, or None to wait."""
        s = c.ks.lookup(db, key)
        if type(s) is not Stream:
            # Redis 7.0 unblocks XREADGROUP when its stream is deleted or replaced by
            # another type; XREAD keeps waiting for the key to come back.
            return RedisError(E_KEY_GONE) if group is not None else None
        gt = after[key]
        grp: Group | None
        cons: Consumer | None
        grp = cons = None
        if group is not None:
            grp = s.groups.get(group)
            if grp is None:
                return RedisError(E_NOGROUP_BLOCKED)
            gt = grp.last_id
        if s.last_id <= gt:
            return None
        if grp is not None:
            cons = _get_consumer(c, s, grp, consumer, key, db)
        entries = _reply_range(c, s, gt + 1, MAX_ID, count, grp, cons, noack, key, db)
        return [[key, entries]] if c.proto == 2 else Map([(key, entries)])

    wants = Stream if group is None else None  # XREADGROUP ends when its stream goes
    c.server.blocking.block(c, keys, serve, timeout_ms / 1000, NULL_ARRAY, wants)


# -- XREAD / XREADGROUP -----------------------------------------------------------------


def _xread(c: Client, args: list[bytes], xreadgroup: bool) -> Any:
    timeout = -1
    count = 0
    streams_arg = 0
    noack = False
    groupname: bytes | None = None
    consumername = b''  # read only when GROUP gave it, with groupname
    n = len(args)
    i = 1
    while i < n:
        more = n - i - 1
        o = args[i].lower()
        if o == b'block' and more:
            if is_script_client(c):  # no sense blocking in a script (Redis's special case)
                raise RedisError(
                    f'ERR {args[0].decode("utf-8", "surrogateescape")} command is not allowed '
                    'with BLOCK option from scripts'
                )
            i += 1
            ms = string2ll(args[i])
            if ms is None:
                raise RedisError(E_TIMEOUT)
            if ms < 0:
                raise RedisError('ERR timeout is negative')
            timeout = ms
        elif o == b'count' and more:
            i += 1
            count = max(int_arg(args[i]), 0)
        elif o == b'streams' and more:
            streams_arg = i + 1
            nk = n - streams_arg
            if nk % 2:
                raise RedisError(
                    "ERR Unbalanced XREAD list of streams: for each stream key "
                    "an ID or '$' must be specified."
                )
            break
        elif o == b'group' and more >= 2:
            if not xreadgroup:
                raise RedisError(
                    'ERR The GROUP option is only supported by XREADGROUP. '
                    'You called XREAD instead.'
                )
            groupname, consumername = args[i + 1], args[i + 2]
            i += 2
        elif o == b'noack':
            if not xreadgroup:
                raise RedisError(
                    'ERR The NOACK option is only supported by XREADGROUP. '
                    'You called XREAD instead.'
                )
            noack = True
        else:
            raise SYNTAX
        i += 1
    if not streams_arg:
        raise SYNTAX
    if xreadgroup and groupname is None:
        raise RedisError('ERR Missing GROUP option for XREADGROUP')
    nstreams = (n - streams_arg) // 2
    keys = args[streams_arg : streams_arg + nstreams]
    ids: list[int] = []
    groups: list[Group] = []
    streams: list[Stream | None] = []
    for k in range(nstreams):
        key = keys[k]
        arg = args[streams_arg + nstreams + k]
        s = _read_stream(c, key)
        streams.append(s)
        if groupname is not None:
            g = s.groups.get(groupname) if s is not None else None
            if g is None:
                raise RedisError(
                    f"NOGROUP No such key '{key.decode('utf-8', 'replace')}' or consumer "
                    f"group '{groupname.decode('utf-8', 'replace')}' in XREADGROUP with "
                    f"GROUP option"
                )
            groups.append(g)
        if arg == b'$':
            if xreadgroup:
                raise RedisError(
                    'ERR The $ ID is meaningless in the context of XREADGROUP: '
                    'you want to read the history of this consumer by '
                    'specifying a proper ID, or use the > ID to get new '
                    'messages. The $ ID would just return an empty result set.'
                )
            ids.append(s.last_id if s is not None else 0)
        elif arg == b'>':
            if not xreadgroup:
                raise RedisError(
                    'ERR The > ID can be specified only when calling XREADGROUP '
                    'using the GROUP <group> <consumer> option.'
                )
            ids.append(MAX_ID)
        else:
            ids.append(strict_id(arg))
    served = []
    db = c.db
    for k in range(nstreams):
        s = streams[k]
        if s is None:
            continue
        gt = ids[k]
        history = False
        serve = False
        if groups:
            if gt != MAX_ID:
                serve = history = True
            elif s.length:
                last = groups[k].last_id
                if s.last_valid_id() > last:
                    serve = True
                    gt = last
        elif s.length and s.last_valid_id() > gt:
            serve = True
        if not serve:
            continue
        key = keys[k]
        start = gt + 1 if gt < MAX_ID else gt
        entries: Any  # a pending-history array or the Raw of new entries
        if groups:  # (history is only read with a group)
            consumer = _get_consumer(c, s, groups[k], consumername, key, db)
            if history:
                entries = _reply_history(c, s, start, count, consumer)
            else:
                entries = _reply_range(
                    c, s, start, MAX_ID, count, groups[k], consumer, noack, key, db
                )
        else:
            entries = _reply_range(c, s, start, MAX_ID, count, None, None, noack, key, db)
        served.append((key, entries))
    if served:
        if c.proto == 2:
            return [[k, e] for k, e in served]
        return Map(served)
    if timeout != -1:
        if not c.server.blocking.may_block(c):
            return NULL_ARRAY
        _block(
            c,
            keys,
            ids,
            count or XREAD_BLOCKED_DEFAULT_COUNT,
            groupname,
            consumername,
            noack,
            timeout,
        )
        return NO_REPLY
    return NULL_ARRAY


@COMMANDS.command(
    'xread',
    -4,
    flags='readonly blocking movablekeys',
    categories='@read @stream @slow @blocking',
    getkeys=keys_after_streams,
    summary='Return never seen elements in multiple streams, with IDs greater than the ones '
    'reported by the caller for each stream. Can block.',
    key_specs='RO access; keyword STREAMS 1; range -1 1 2',
)
def xread(c: Client, args: list[bytes]) -> Any:
    return _xread(c, args, False)


@COMMANDS.command(
    'xreadgroup',
    -7,
    flags='write blocking movablekeys',
    categories='@write @stream @slow @blocking',
    getkeys=keys_after_streams,
    summary='Return new entries from a stream using a consumer group, or access the history of '
    'the pending entries for a given consumer. Can block.',
    key_specs='RO access; keyword STREAMS 4; range -1 1 2',
)
def xreadgroup(c: Client, args: list[bytes]) -> Any:
    return _xread(c, args, True)
