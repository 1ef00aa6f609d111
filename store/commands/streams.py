"""Stream commands (Redis 7.0 t_stream.c), the entries: XADD, XTRIM, XRANGE, XREVRANGE, XLEN,
XDEL, XSETID, and the argument parsing and look-ups every stream family shares.

The stream family is one module per concern: this one; stream_read.py (XREAD, XREADGROUP
and blocking); stream_groups.py (XGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM); stream_info.py
(XINFO). The data type is store/types/stream.py. Handlers follow the order of checks of
t_stream.c, since it decides which error a client sees when several arguments are bad.
"""

from typing import Any

from .. import events
from ..args import SYNTAX, int_arg
from ..clock import now_ms
from ..command_table import Family
from ..context import Client
from ..resp import NULL_ARRAY, OK, Raw, RedisError, string2ll
from ..types import expect
from ..types.stream import MAX_ID, NACK, U64, Consumer, Group, Stream, format_id

STREAM, NEW = events.STREAM, events.NEW

E_INVALID_ID = 'ERR Invalid stream ID specified as stream command argument'
E_SMALLER = 'ERR The ID specified in XADD is equal or smaller than the target stream top item'
E_ZERO = 'ERR The ID specified in XADD must be greater than 0-0'
E_EXHAUSTED = 'ERR The stream has exhausted the last possible ID, unable to add more items'
E_BOTH = 'ERR syntax error, MAXLEN and MINID options at the same time are not compatible'
E_TIMEOUT = 'ERR timeout is not an integer or out of range'
INVALID = RedisError(E_INVALID_ID)
XREAD_BLOCKED_DEFAULT_COUNT = 1000

COMMANDS = Family('stream', since='5.0.0')


# -- argument parsing -------------------------------------------------------------------


def _string2ull(b: bytes) -> int | None:
    """Redis's string2ull: string2ll, else strtoull (leading spaces, a sign, leading zeros;
    a '-' wraps modulo 2^64); None when not a number."""
    v = string2ll(b)
    if v is not None:
        return v if v >= 0 else None
    s = b.lstrip(b' \t\n\v\f\r')
    neg = False
    if s[:1] in (b'+', b'-'):
        neg = s[:1] == b'-'
        s = s[1:]
    if not s or not s.isdigit():
        return None
    v = int(s)
    if v > U64:
        return None
    return (-v) % (1 << 64) if neg else v


def parse_id(
    b: bytes, missing_seq: int = 0, strict: bool = False, partial: bool = False
) -> tuple[int, bool]:
    """streamGenericParseIDOrReply: the id as an int, plus whether the sequence was given
    (False only for the `ms-*` form, allowed when `partial`)."""
    if len(b) > 127:
        raise INVALID
    if b == b'-':
        if strict:
            raise INVALID
        return 0, True
    if b == b'+':
        if strict:
            raise INVALID
        return MAX_ID, True
    ms_part, dash, seq_part = b.partition(b'-')
    ms_part = ms_part.split(b'\0', 1)[0] if b'\0' in ms_part else ms_part
    ms = _string2ull(ms_part)
    if ms is None:
        raise INVALID
    if dash:
        if partial and seq_part == b'*':
            return ms << 64, False
        seq = _string2ull(seq_part)
        if seq is None:
            raise INVALID
    else:
        seq = missing_seq
    return ms << 64 | seq, True


def strict_id(b: bytes) -> int:
    return parse_id(b, 0, True)[0]


def interval_id(b: bytes, missing_seq: int) -> tuple[int, bool]:
    """streamParseIntervalIDOrReply: (id, exclusive)."""
    if len(b) > 1 and b[:1] == b'(':
        return parse_id(b[1:], missing_seq, True)[0], True
    return parse_id(b, missing_seq)[0], False


def _incr(i: int) -> int | None:
    if i >= MAX_ID:
        return None
    return i + 1


def _count_arg(b: bytes) -> int:
    return int_arg(b)


# -- lookups and replies ----------------------------------------------------------------


def _read_stream(c: Client, key: bytes) -> Stream | None:
    return expect(c.ks.read(c.db, key), Stream)


def _write_stream(c: Client, key: bytes) -> Stream | None:
    return expect(c.ks.lookup(c.db, key), Stream)


def _create_stream(c: Client, key: bytes) -> Stream:
    s = Stream()
    ks = c.ks
    ks.set(c.db, key, s)
    if ks.notify_flags:
        ks.notify(NEW, b'new', c.db, key)
    return s


def _modified(c: Client, key: bytes) -> None:
    """signalModifiedKey for an in-place change."""
    c.ks.updated(c.db, key)


def _notify(c: Client, event: bytes, key: bytes) -> None:
    ks = c.ks
    if ks.notify_flags:
        ks.notify(STREAM, event, c.db, key)


def _entries(items: list[tuple[int, Any]]) -> list[list[Any]]:
    return [[format_id(i), list(f)] for i, f in items]


def _raw_entries(encoded: list[bytes]) -> Raw:
    """An array of entries from their encode_entry() bytes, as one Raw reply (entries are
    arrays of bulk strings, the same in RESP2 and RESP3)."""
    return Raw(b'*%d\r\n%s' % (len(encoded), b''.join(encoded)))


def _id_or_none(i: int | None) -> bytes | None:
    return None if i is None else format_id(i)


# -- consumer groups: shared helpers ----------------------------------------------------


def _get_consumer(
    c: Client,
    s: Stream,
    group: Group,
    name: bytes,
    key: bytes,
    db: int,
    refresh: bool = True,
) -> Consumer:
    """streamLookupConsumer (refreshing seen-time), creating it when missing (with its
    `xgroup-createconsumer` event)."""
    cons = group.consumers.get(name)
    now = now_ms()
    if cons is None:
        cons = group.consumers[name] = Consumer(name, now)
        group.new_consumer = name
        ks = c.ks
        if ks.notify_flags:
            ks.notify(STREAM, b'xgroup-createconsumer', db, key)
        _modified_db(c, db, key)
    elif refresh:
        cons.seen_time = now
    return cons


def _modified_db(c: Client, db: int, key: bytes) -> None:
    c.ks.updated(db, key)


def _reply_range(
    c: Client,
    s: Stream,
    start: int,
    end: int,
    count: int,
    group: Group | None,
    consumer: Consumer | None,
    noack: bool,
    key: bytes,
    db: int,
) -> Raw:
    """streamReplyWithRange for new entries: with a group, advance last-delivered-id and
    entries-read, and (unless NOACK) record each entry in the PELs."""
    ids, encoded = s.range_encoded(start, end, count)
    # (every caller passing a group passes its consumer too: the test only narrows the type)
    if group is not None and consumer is not None and ids:
        now = now_ms()
        for i in ids:
            if i > group.last_id:
                if group.entries_read != -1 and not s.has_tombstones(i):
                    group.entries_read += 1
                elif s.entries_added:
                    group.entries_read = s.estimate_distance(i)
                group.last_id = i
            if not noack:
                nack = group.pel.get(i)
                if nack is not None:
                    if nack.consumer is not consumer:
                        nack.consumer.pel.remove(i)
                        nack.consumer = consumer
                        consumer.pel.add(i, nack)
                    nack.delivery_time = now
                    nack.delivery_count = 1
                else:
                    nack = NACK(consumer, now, 1)
                    group.pel.add(i, nack)
                    consumer.pel.add(i, nack)
        _modified_db(c, db, key)
    return _raw_entries(encoded)


def _reply_history(
    c: Client, s: Stream, start: int, count: int, consumer: Consumer
) -> list[list[Any]]:
    """streamReplyWithRangeFromConsumerPEL: the consumer's pending entries from `start`."""
    out: list[list[Any]] = []
    now = now_ms()
    for i, nack in consumer.pel.iter_from(start):
        if count and len(out) >= count:
            break
        fields = s.get(i)
        if fields is None:  # deleted: addReplyNullArray, *-1 / _
            out.append([format_id(i), NULL_ARRAY])
        else:
            nack.delivery_time = now
            nack.delivery_count += 1
            out.append([format_id(i), list(fields)])
    return out


# -- XADD / XTRIM -----------------------------------------------------------------------


class TrimArgs:
    __slots__ = (
        'strategy',
        'maxlen',
        'minid',
        'approx',
        'limit',
        'nomkstream',
        'id',
        'id_given',
        'seq_given',
    )

    strategy: str | None  # 'maxlen' or 'minid'
    maxlen: int
    minid: int
    approx: bool
    limit: int
    nomkstream: bool
    id: int
    id_given: bool
    seq_given: bool


def _must_obey(c: Client) -> bool:
    """mustObeyClient: the master of this replica, or the AOF being loaded."""
    link = c.server.replica_link
    if link is not None and link.is_master(c):
        return True
    return getattr(c, 'user', None) is c.server.acl.loader


def parse_add_trim(c: Client, args: list[bytes], xadd: bool) -> tuple[TrimArgs, int]:
    """streamParseAddOrTrimArgsOrReply: (TrimArgs, index of the ID for XADD)."""
    t = TrimArgs()
    t.strategy = None
    t.maxlen = -1
    t.minid = 0
    t.approx = False
    t.limit = 0
    t.nomkstream = False
    t.id = 0
    t.id_given = False
    t.seq_given = True
    limit_given = False
    n = len(args)
    i = 2
    while i < n:
        more = n - 1 - i
        opt = args[i]
        lo = opt.lower()
        if xadd and opt == b'*':
            break
        elif (lo == b'maxlen' or lo == b'minid') and more:
            if t.strategy is not None:
                raise RedisError(E_BOTH)
            t.approx = False
            nxt = args[i + 1]
            if more >= 2 and nxt == b'~':
                t.approx = True
                i += 1
            elif more >= 2 and nxt == b'=':
                i += 1
            if lo == b'maxlen':
                t.maxlen = int_arg(args[i + 1])
                if t.maxlen < 0:
                    raise RedisError('ERR The MAXLEN argument must be >= 0.')
            else:
                t.minid = strict_id(args[i + 1])
            i += 1
            t.strategy = lo.decode()
        elif lo == b'limit' and more:
            t.limit = int_arg(args[i + 1])
            if t.limit < 0:
                raise RedisError('ERR The LIMIT argument must be >= 0.')
            limit_given = True
            i += 1
        elif xadd and lo == b'nomkstream':
            t.nomkstream = True
        elif xadd:
            t.id, t.seq_given = parse_id(opt, 0, True, True)
            t.id_given = True
            break
        else:
            raise SYNTAX
        i += 1
    if t.limit and t.strategy is None:
        raise RedisError(
            'ERR syntax error, LIMIT cannot be used without specifying a trimming strategy'
        )
    if not xadd and t.strategy is None:
        raise RedisError('ERR syntax error, XTRIM must be called with a trimming strategy')
    if _must_obey(c):
        t.limit = 0  # the trimming was rewritten exact where it was first run
    elif limit_given:
        if not t.approx:
            raise RedisError('ERR syntax error, LIMIT cannot be used without the special ~ option')
    elif t.approx:
        # at most 100 nodes' worth, capped on both sides (stream-node-max-entries 0 or huge)
        t.limit = 100 * c.server.config['stream-node-max-entries']
        if t.limit <= 0:
            t.limit = 10000
        t.limit = min(t.limit, 1000000)
    else:
        t.limit = 0
    return t, i


def _apply_trim(s: Stream, t: TrimArgs) -> int:
    if t.strategy == 'maxlen':
        return s.trim_maxlen(t.maxlen, t.approx, t.limit)
    return s.trim_minid(t.minid, t.approx, t.limit)


@COMMANDS.command(
    'xadd',
    -5,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @stream @fast',
    summary='Appends a new entry to a stream',
    tips='nondeterministic_output',
    key_specs=(
        'RW update; index 1; range 0 1 0; '
        'UPDATE instead of INSERT because of the optional trimming feature'
    ),
)
def xadd(c: Client, args: list[bytes]) -> Any:
    t, idpos = parse_add_trim(c, args, True)
    nfields = len(args) - idpos - 1
    if nfields < 2 or nfields % 2:
        raise RedisError("ERR wrong number of arguments for 'xadd' command")
    if t.id_given and t.seq_given and t.id == 0:
        raise RedisError(E_ZERO)
    key = args[1]
    s = _write_stream(c, key)
    if s is None:
        if t.nomkstream:
            return None
        s = _create_stream(c, key)
    last = s.last_id
    if last == MAX_ID:
        raise RedisError(E_EXHAUSTED)
    if not t.id_given:
        i = s.next_auto_id(now_ms())
    elif t.seq_given:
        i = t.id
    elif last >> 64 == t.id >> 64:
        if last & U64 == U64:
            raise RedisError(E_SMALLER)
        i = last + 1
    else:
        i = t.id
    if i <= last:
        raise RedisError(E_SMALLER)
    s.append(i, tuple(args[idpos + 1 :]), None, c.server.config['stream-node-max-entries'])
    _modified(c, key)
    _notify(c, b'xadd', key)
    if t.strategy is not None and _apply_trim(s, t):
        _notify(c, b'xtrim', key)
    return format_id(i)


@COMMANDS.command(
    'xtrim',
    -4,
    flags='write',
    keys=(1, 1, 1),
    categories='@write @stream @slow',
    summary="Trims the stream to (approximately if '~' is passed) a certain size",
    tips='nondeterministic_output',
    key_specs='RW delete; index 1; range 0 1 0',
)
def xtrim(c: Client, args: list[bytes]) -> Any:
    t, _ = parse_add_trim(c, args, False)
    s = _write_stream(c, args[1])
    if s is None:
        return 0
    deleted = _apply_trim(s, t)
    if deleted:
        _notify(c, b'xtrim', args[1])
        _modified(c, args[1])
    return deleted


# -- XRANGE / XREVRANGE / XLEN / XDEL ---------------------------------------------------


def _xrange(c: Client, args: list[bytes], rev: bool) -> Any:
    start_arg, end_arg = (args[3], args[2]) if rev else (args[2], args[3])
    lo, ex = interval_id(start_arg, 0)
    if ex:
        nxt = _incr(lo)
        if nxt is None:
            raise RedisError('ERR invalid start ID for the interval')
        lo = nxt
    hi, ex = interval_id(end_arg, U64)
    if ex:
        if hi == 0:
            raise RedisError('ERR invalid end ID for the interval')
        hi -= 1
    count = -1
    j = 4
    while j < len(args):
        if args[j].lower() == b'count' and j + 1 < len(args):
            count = max(int_arg(args[j + 1]), 0)
            j += 2
        else:
            raise SYNTAX
    s = _read_stream(c, args[1])
    if s is None:
        return []
    if count == 0:
        return NULL_ARRAY
    return _raw_entries(s.range_encoded(lo, hi, max(count, 0), rev)[1])


@COMMANDS.command(
    'xrange',
    -4,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @stream @slow',
    summary='Return a range of elements in a stream, with IDs matching the specified IDs interval',
    key_specs='RO access; index 1; range 0 1 0',
)
def xrange_(c: Client, args: list[bytes]) -> Any:
    return _xrange(c, args, False)


@COMMANDS.command(
    'xrevrange',
    -4,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @stream @slow',
    summary='Return a range of elements in a stream, with IDs matching the specified IDs '
    'interval, in reverse order (from greater to smaller IDs) compared to XRANGE',
    key_specs='RO access; index 1; range 0 1 0',
)
def xrevrange(c: Client, args: list[bytes]) -> Any:
    return _xrange(c, args, True)


@COMMANDS.command(
    'xlen',
    2,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @stream @fast',
    summary='Return the number of entries in a stream',
    key_specs='RO; index 1; range 0 1 0',
)
def xlen(c: Client, args: list[bytes]) -> Any:
    s = _read_stream(c, args[1])
    return 0 if s is None else s.length


@COMMANDS.command(
    'xdel',
    -3,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@write @stream @fast',
    summary='Removes the specified entries from the stream. Returns the number of items actually '
    'deleted, that may be different from the number of IDs passed in case certain IDs do '
    'not exist.',
    key_specs='RW delete; index 1; range 0 1 0',
)
def xdel(c: Client, args: list[bytes]) -> Any:
    key = args[1]
    s = _write_stream(c, key)
    if s is None:
        return 0
    ids = [strict_id(a) for a in args[2:]]
    deleted = 0
    first_entry = False
    for i in ids:
        if s.delete(i):
            if i == s.first_id:
                first_entry = True
            if i > s.max_deleted:
                s.max_deleted = i
            deleted += 1
    if deleted:
        if not s.length:
            s.first_id = 0
        elif first_entry:
            s.first_id = s.first_live_id() or 0  # (never None here: the stream has entries)
        _modified(c, key)
        _notify(c, b'xdel', key)
    return deleted


@COMMANDS.command(
    'xsetid',
    -3,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @stream @fast',
    summary='An internal command for replicating stream values',
    key_specs='RW update; index 1; range 0 1 0',
)
def xsetid(c: Client, args: list[bytes]) -> Any:
    key = args[1]
    i = strict_id(args[2])
    entries_added = -1
    max_xdel = 0
    j = 3
    while j < len(args):
        more = len(args) - 1 - j
        opt = args[j].lower()
        if opt == b'entriesadded' and more:
            entries_added = int_arg(args[j + 1])
            if entries_added < 0:
                raise RedisError('ERR entries_added must be positive')
            j += 2
        elif opt == b'maxdeletedid' and more:
            max_xdel = strict_id(args[j + 1])
            if i < max_xdel:
                raise RedisError(
                    'ERR The ID specified in XSETID is smaller than the '
                    'provided max_deleted_entry_id'
                )
            j += 2
        else:
            raise SYNTAX
    s = _write_stream(c, key)
    if s is None:
        raise RedisError('ERR no such key')
    # Only a stream with entries refuses an id below its top (an empty one may go back,
    # which is how AOF rewrites write an empty stream: XADD MAXLEN 0, then XSETID 0-0).
    if s.length and i < s.last_valid_id():
        raise RedisError(
            'ERR The ID specified in XSETID is smaller than the target stream top item'
        )
    if entries_added != -1 and s.length > entries_added:
        raise RedisError(
            'ERR The entries_added specified in XSETID is smaller than the target stream length'
        )
    s.last_id = i
    if entries_added != -1:
        s.entries_added = entries_added
    if max_xdel:
        s.max_deleted = max_xdel
    _modified(c, key)
    _notify(c, b'xsetid', key)
    return OK
