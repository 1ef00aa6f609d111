"""Consumer-group commands (Redis 7.0 t_stream.c): XGROUP, XACK, XPENDING, XCLAIM,
XAUTOCLAIM. Handlers follow t_stream.c's order of checks.
"""

from typing import Any, Literal, overload

from ..args import E_NOT_INT, SYNTAX, int_arg
from ..clock import now_ms
from ..command_table import Family
from ..context import Client
from ..resp import NULL_ARRAY, OK, RedisError, string2ll
from ..types.stream import NACK, U64, Consumer, Group, Stream, format_id
from .streams import (
    _create_stream,
    _get_consumer,
    _incr,
    _modified,
    _notify,
    _read_stream,
    _write_stream,
    interval_id,
    parse_id,
    strict_id,
)

COMMANDS = Family('stream', since='5.0.0')


# -- XGROUP -----------------------------------------------------------------------------

XGROUP_HELP = [
    'XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'CREATE <key> <groupname> <id|$> [option]',
    '    Create a new consumer group. Options are:',
    '    * MKSTREAM',
    '      Create the empty stream if it does not exist.',
    '    * ENTRIESREAD entries_read',
    '      Set the group\'s entries_read counter (internal use).',
    'CREATECONSUMER <key> <groupname> <consumer>',
    '    Create a new consumer in the specified group.',
    'DELCONSUMER <key> <groupname> <consumer>',
    '    Remove the specified consumer.',
    'DESTROY <key> <groupname>',
    '    Remove the specified group.',
    'SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]',
    '    Set the current group ID and entries_read counter.',
    'HELP',
    '    Print this help.',
]


def _entries_read_arg(b: bytes) -> int:
    v = int_arg(b)
    if v < 0 and v != -1:
        raise RedisError('ERR value for ENTRIESREAD must be positive or -1')
    return v


# Typing only: what the checks below guarantee per subcommand (the stream exists unless
# CREATE; the group exists for SETID, CREATECONSUMER and DELCONSUMER).
@overload
def _xgroup_prepare(
    c: Client, args: list[bytes], op: Literal['create']
) -> tuple[bytes, bytes, Stream | None, Group | None, int]: ...
@overload
def _xgroup_prepare(
    c: Client, args: list[bytes], op: Literal['destroy']
) -> tuple[bytes, bytes, Stream, Group | None, int]: ...
@overload
def _xgroup_prepare(
    c: Client, args: list[bytes], op: Literal['setid', 'createconsumer', 'delconsumer']
) -> tuple[bytes, bytes, Stream, Group, int]: ...
def _xgroup_prepare(
    c: Client, args: list[bytes], op: str
) -> tuple[bytes, bytes, Stream | None, Group | None, int]:
    """The part of xgroupCommand common to the subcommands with a key and group."""
    key, grp = args[2], args[3]
    mkstream = False
    entries_read = -1
    if op == 'create' and 5 <= len(args) <= 8:
        i = 5
        while i < len(args):
            o = args[i].lower()
            if o == b'mkstream':
                mkstream = True
                i += 1
            elif o == b'entriesread' and i + 1 < len(args):
                entries_read = _entries_read_arg(args[i + 1])
                i += 2
            else:
                raise _xgroup_syntax(args)
    elif op == 'setid' and len(args) in (5, 7):
        if len(args) == 7:
            if args[5].lower() != b'entriesread':
                raise _xgroup_syntax(args)
            entries_read = _entries_read_arg(args[6])
    s = _write_stream(c, key)
    if s is None and (op != 'create' or not mkstream):
        raise RedisError(
            'ERR The XGROUP subcommand requires the key to exist. Note that for '
            'CREATE you may want to use the MKSTREAM option to create an empty '
            'stream automatically.'
        )
    g = s.groups.get(grp) if s is not None else None
    if g is None and op in ('setid', 'createconsumer', 'delconsumer'):
        raise RedisError(
            f"NOGROUP No such consumer group '{grp.decode('utf-8', 'replace')}' "
            f"for key name '{key.decode('utf-8', 'replace')}'"
        )
    return key, grp, s, g, entries_read


def _xgroup_syntax(args: list[bytes]) -> RedisError:
    return RedisError(
        f"ERR unknown subcommand or wrong number of arguments for "
        f"'{args[1].decode('utf-8', 'replace')}'. Try XGROUP HELP."
    )


XGROUP = COMMANDS.container(
    'xgroup', -2, categories='@slow', summary='A container for consumer groups commands'
)


@XGROUP.subcommand(
    'create',
    -5,
    flags='write denyoom',
    keys=(2, 2, 1),
    categories='@write @stream @slow',
    summary='Create a consumer group.',
    key_specs='RW insert; index 2; range 0 1 0',
)
def xgroup_create(c: Client, args: list[bytes]) -> Any:
    key, grp, s, g, entries_read = _xgroup_prepare(c, args, 'create')
    if len(args) > 8:
        raise _xgroup_syntax(args)
    if args[4] == b'$':
        i = s.last_id if s is not None else 0
    else:
        i = strict_id(args[4])
    if s is None:
        s = _create_stream(c, key)
        _modified(c, key)
    if grp in s.groups:
        raise RedisError('BUSYGROUP Consumer Group name already exists')
    s.groups[grp] = Group(grp, i, entries_read)
    _modified(c, key)
    _notify(c, b'xgroup-create', key)
    return OK


@XGROUP.subcommand(
    'setid',
    -5,
    flags='write',
    keys=(2, 2, 1),
    categories='@write @stream @slow',
    since='5.0.0',
    summary='Set a consumer group to an arbitrary last delivered ID value.',
    key_specs='RW update; index 2; range 0 1 0',
)
def xgroup_setid(c: Client, args: list[bytes]) -> Any:
    key, grp, s, g, entries_read = _xgroup_prepare(c, args, 'setid')
    if len(args) not in (5, 7):
        raise _xgroup_syntax(args)
    if args[4] == b'$':
        i = s.last_id
    else:
        i = parse_id(args[4])[0]
    g.last_id = i
    g.entries_read = entries_read
    _modified(c, key)
    _notify(c, b'xgroup-setid', key)
    return OK


@XGROUP.subcommand(
    'destroy',
    4,
    flags='write',
    keys=(2, 2, 1),
    categories='@write @stream @slow',
    since='5.0.0',
    summary='Destroy a consumer group.',
    key_specs='RW delete; index 2; range 0 1 0',
)
def xgroup_destroy(c: Client, args: list[bytes]) -> Any:
    key, grp, s, g, _ = _xgroup_prepare(c, args, 'destroy')
    if g is None:
        return 0
    del s.groups[grp]
    _modified(c, key)
    _notify(c, b'xgroup-destroy', key)
    return 1


@XGROUP.subcommand(
    'createconsumer',
    5,
    flags='write denyoom',
    keys=(2, 2, 1),
    categories='@write @stream @slow',
    since='6.2.0',
    summary='Create a consumer in a consumer group.',
    key_specs='RW insert; index 2; range 0 1 0',
)
def xgroup_createconsumer(c: Client, args: list[bytes]) -> Any:
    key, grp, s, g, _ = _xgroup_prepare(c, args, 'createconsumer')
    if args[4] in g.consumers:
        return 0
    _get_consumer(c, s, g, args[4], key, c.db)
    return 1


@XGROUP.subcommand(
    'delconsumer',
    5,
    flags='write',
    keys=(2, 2, 1),
    categories='@write @stream @slow',
    summary='Delete a consumer from a consumer group.',
    key_specs='RW delete; index 2; range 0 1 0',
)
def xgroup_delconsumer(c: Client, args: list[bytes]) -> Any:
    key, grp, s, g, _ = _xgroup_prepare(c, args, 'delconsumer')
    cons = g.consumers.get(args[4])
    if cons is None:
        return 0
    pending = len(cons.pel)
    for i in list(cons.pel.ids):
        g.pel.remove(i)
    del g.consumers[args[4]]
    _modified(c, key)
    _notify(c, b'xgroup-delconsumer', key)
    return pending


@XGROUP.subcommand(
    'help',
    2,
    flags='loading stale',
    categories='@stream @slow',
    summary='Show helpful text about the different subcommands',
)
def xgroup_help(c: Client, args: list[bytes]) -> Any:
    return XGROUP_HELP


# -- XACK / XPENDING / XCLAIM / XAUTOCLAIM ----------------------------------------------


@COMMANDS.command(
    'xack',
    -4,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@write @stream @fast',
    summary='Marks a pending message as correctly processed, effectively removing it from the '
    'pending entries list of the consumer group. Return value of the command is the '
    'number of messages successfully acknowledged, that is, the IDs we were actually able'
    ' to resolve in the PEL.',
    key_specs='RW update; index 1; range 0 1 0',
)
def xack(c: Client, args: list[bytes]) -> Any:
    s = _read_stream(c, args[1])
    g = s.groups.get(args[2]) if s is not None else None
    if g is None:
        return 0
    ids = [strict_id(a) for a in args[3:]]
    acked = 0
    for i in ids:
        nack = g.pel.get(i)
        if nack is not None:
            g.pel.remove(i)
            nack.consumer.pel.remove(i)
            acked += 1
    if acked:
        _modified(c, args[1])
    return acked


def _nogroup(key: bytes, grp: bytes) -> RedisError:
    return RedisError(
        f"NOGROUP No such key '{key.decode('utf-8', 'replace')}' or consumer "
        f"group '{grp.decode('utf-8', 'replace')}'"
    )


@COMMANDS.command(
    'xpending',
    -3,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @stream @slow',
    summary='Return information and entries from a stream consumer group pending entries list, '
    'that are messages fetched but never acknowledged.',
    tips='nondeterministic_output',
    key_specs='RO access; index 1; range 0 1 0',
)
def xpending(c: Client, args: list[bytes]) -> Any:
    n = len(args)
    justinfo = n == 3
    if n != 3 and (n < 6 or n > 9):
        raise SYNTAX
    minidle = 0
    consumername: bytes | None = None
    if n >= 6:
        si = 3
        if args[3].lower() == b'idle':
            minidle = int_arg(args[4])
            if n < 8:
                raise SYNTAX
            si += 2
        count = max(int_arg(args[si + 2]), 0)
        lo, ex = interval_id(args[si], 0)
        if ex:
            nxt = _incr(lo)
            if nxt is None:
                raise RedisError('ERR invalid start ID for the interval')
            lo = nxt
        hi, ex = interval_id(args[si + 1], U64)
        if ex:
            if hi == 0:
                raise RedisError('ERR invalid end ID for the interval')
            hi -= 1
        if si + 3 < n:
            consumername = args[si + 3]
    s = _read_stream(c, args[1])
    g = s.groups.get(args[2]) if s is not None else None
    if g is None:
        raise _nogroup(args[1], args[2])
    if justinfo:
        if not g.pel:
            return [0, None, None, NULL_ARRAY]
        per = [
            [name, b'%d' % len(cons.pel)] for name, cons in sorted(g.consumers.items()) if cons.pel
        ]
        # (the PEL is not empty: its first and last ids, as PEL.first()/last() give them)
        return [len(g.pel), format_id(g.pel.ids[0]), format_id(g.pel.ids[-1]), per]
    pel = g.pel
    if consumername is not None:
        cons = g.consumers.get(consumername)
        if cons is None:
            return []
        pel = cons.pel
    now = now_ms()
    out: list[list[Any]] = []
    if count:
        for i, nack in pel.iter_from(lo, hi):
            if minidle and now - nack.delivery_time < minidle:
                continue
            out.append(
                [
                    format_id(i),
                    nack.consumer.name,
                    max(now - nack.delivery_time, 0),
                    nack.delivery_count,
                ]
            )
            if len(out) >= count:
                break
    return out


def _transfer(nack: NACK, consumer: Consumer, i: int) -> None:
    """Move pending entry `i` to `consumer`'s PEL (XCLAIM, XAUTOCLAIM)."""
    if nack.consumer is not consumer:
        if nack.consumer is not None:
            nack.consumer.pel.remove(i)
        consumer.pel.add(i, nack)
        nack.consumer = consumer


@COMMANDS.command(
    'xclaim',
    -6,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@write @stream @fast',
    summary='Changes (or acquires) ownership of a message in a consumer group, as if the message '
    'was delivered to the specified consumer.',
    tips='nondeterministic_output',
    key_specs='RW update; index 1; range 0 1 0',
)
def xclaim(c: Client, args: list[bytes]) -> Any:
    key = args[1]
    s = _read_stream(c, key)
    g = s.groups.get(args[2]) if s is not None else None
    if s is None or g is None:  # (g is None whenever s is)
        raise _nogroup(key, args[2])
    minidle = int_arg(args[4], 'ERR Invalid min-idle-time argument for XCLAIM')
    if minidle < 0:
        minidle = 0
    ids: list[int] = []
    j = 5
    while j < len(args):
        try:
            ids.append(strict_id(args[j]))
        except RedisError:
            break
        j += 1
    now = now_ms()
    force = justid = False
    retrycount = -1
    deliverytime = -1
    last_id = 0
    while j < len(args):
        more = len(args) - 1 - j
        opt = args[j].lower()
        if opt == b'force':
            force = True
        elif opt == b'justid':
            justid = True
        elif opt == b'idle' and more:
            j += 1
            deliverytime = now - int_arg(args[j], 'ERR Invalid IDLE option argument for XCLAIM')
        elif opt == b'time' and more:
            j += 1
            deliverytime = int_arg(args[j], 'ERR Invalid TIME option argument for XCLAIM')
        elif opt == b'retrycount' and more:
            j += 1
            retrycount = int_arg(args[j], 'ERR Invalid RETRYCOUNT option argument for XCLAIM')
        elif opt == b'lastid' and more:
            j += 1
            last_id = strict_id(args[j])
        else:
            raise RedisError(
                f"ERR Unrecognized XCLAIM option '{args[j].decode('utf-8', 'replace')}'"
            )
        j += 1
    if last_id > g.last_id:
        g.last_id = last_id
    if deliverytime != -1:
        if deliverytime < 0 or deliverytime > now:
            deliverytime = now
    else:
        deliverytime = now
    name = args[3]
    consumer: Consumer | None = None
    out: list[Any] = []
    drops: list[tuple[int, bytes, int, int]]
    s.claim_drops = drops = []
    for i in ids:
        nack = g.pel.get(i)
        if s.get(i) is None:
            if nack is not None:  # the entry is gone: so is its pending entry (propagated)
                drops.append((i, nack.consumer.name, nack.delivery_time, nack.delivery_count))
                g.pel.remove(i)
                nack.consumer.pel.remove(i)
            continue
        if force and nack is None:
            nack = NACK(None, now, 1)
            g.pel.add(i, nack)
        if nack is None:
            continue
        if nack.consumer is not None and minidle and now - nack.delivery_time < minidle:
            continue
        if consumer is None:
            consumer = _get_consumer(c, s, g, name, key, c.db)
        _transfer(nack, consumer, i)
        nack.delivery_time = deliverytime
        if retrycount >= 0:
            nack.delivery_count = retrycount
        elif not justid:
            nack.delivery_count += 1
        out.append(format_id(i) if justid else [format_id(i), list(s.get(i))])
    _modified(c, key)
    return out


@COMMANDS.command(
    'xautoclaim',
    -6,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@write @stream @fast',
    since='6.2.0',
    summary='Changes (or acquires) ownership of messages in a consumer group, as if the messages '
    'were delivered to the specified consumer.',
    tips='nondeterministic_output',
    key_specs='RW delete; index 1; range 0 1 0',
)
def xautoclaim(c: Client, args: list[bytes]) -> Any:
    key = args[1]
    minidle = int_arg(args[4], 'ERR Invalid min-idle-time argument for XAUTOCLAIM')
    if minidle < 0:
        minidle = 0
    start, ex = interval_id(args[5], 0)
    if ex:
        nxt = _incr(start)
        if nxt is None:
            raise RedisError('ERR invalid start ID for the interval')
        start = nxt
    count = 100
    justid = False
    j = 6
    max_count = (2**63 - 1) // 16
    while j < len(args):
        more = len(args) - 1 - j
        opt = args[j].lower()
        if opt == b'count' and more:
            v = string2ll(args[j + 1])
            if v is None:
                raise RedisError(E_NOT_INT)
            if v < 1 or v > max_count:
                raise RedisError('ERR COUNT must be > 0')
            count = v
            j += 1
        elif opt == b'justid':
            justid = True
        else:
            raise SYNTAX
        j += 1
    s = _read_stream(c, key)
    g = s.groups.get(args[2]) if s is not None else None
    if s is None or g is None:  # (g is None whenever s is)
        raise _nogroup(key, args[2])
    attempts = count * 10
    now = now_ms()
    consumer: Consumer | None = None
    claimed: list[Any] = []
    deleted: list[bytes] = []
    pending = g.pel.iter_from(start)
    pos = 0
    while attempts and count and pos < len(pending):
        attempts -= 1
        i, nack = pending[pos]
        pos += 1
        if s.get(i) is None:
            g.pel.remove(i)
            nack.consumer.pel.remove(i)
            deleted.append(format_id(i))
            count -= 1
            continue
        if minidle and now - nack.delivery_time < minidle:
            continue
        if consumer is None:
            consumer = _get_consumer(c, s, g, args[3], key, c.db)
        _transfer(nack, consumer, i)
        nack.delivery_time = now
        if not justid:
            nack.delivery_count += 1
        claimed.append(format_id(i) if justid else [format_id(i), list(s.get(i))])
        count -= 1
    cursor = pending[pos][0] if pos < len(pending) else 0
    _modified(c, key)
    return [format_id(cursor), claimed, deleted]
