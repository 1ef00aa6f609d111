"""String commands: GET/SET and their variants, counters, ranges, LCS (the bitmap commands
are bitmaps.py).

A string value is stored as Python `bytes`; any other value type is another Redis type and
gets WRONGTYPE. Every handler follows the control flow of Redis 7.0's t_string.c and
bitops.c step by step, because the order of checks is observable: which error wins when
several arguments are bad, whether a missing key answers before its arguments are parsed
(GETEX, BITCOUNT), which look-ups count as keyspace hits/misses (read commands and the GET
part of SET GET/GETSET/GETDEL/GETEX use `ks.read`, write paths `ks.lookup`).

Keyspace events are raised as Redis raises them, in the same order: `new` when a command
creates the key (Redis's dbAdd), then the command's own event (`set`, `incrby`, `append`,
...), then `expire`/`persist`/`del` for TTL changes. A command that changes nothing raises
nothing (SETBIT of a bit to its current value, SETRANGE with an empty string).

GET, SET, INCR and MSET are the hot path: they check `ks.notify_flags` once and otherwise
take a short branch without events. SET with exactly three arguments never parses options.

INCRBYFLOAT's long-double arithmetic is store/longdouble.py.
"""

from fractions import Fraction
from typing import Any

from .. import events
from ..args import E_OVERFLOW, SYNTAX, WRONGTYPE, int_arg, keyword
from ..clock import now_ms
from ..command_table import Family
from ..context import Client
from ..longdouble import ld_format, ld_round, strtold
from ..resp import OK, RedisError, small_int
from ..types import expect
from ..types.strenc import mark
from .expire import SECONDS_MAX

LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)

E_OFFSET = 'ERR offset is out of range'
E_TOO_BIG = 'ERR string exceeds maximum allowed size (proto-max-bulk-len)'
E_BIT_OFFSET = 'ERR bit offset is not an integer or out of range'
E_BIT_VALUE = 'ERR bit is not an integer or out of range'
E_NOT_FLOAT = 'ERR value is not a valid float'
E_NAN = 'ERR increment would produce NaN or Infinity'

STRING, GENERIC, NEW = events.STRING, events.GENERIC, events.NEW


COMMANDS = Family('string')


def _check_length(c: Client, size: int, append: int) -> None:
    """checkStringLength: the result must fit in proto-max-bulk-len."""
    if size + append > c.server.max_bulk:
        raise RedisError(E_TOO_BIG)


# -- GET / SET ------------------------------------------------------------------------


@COMMANDS.command(
    'get',
    2,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @string @fast',
    summary='Get the value of a key',
    key_specs='RO access; index 1; range 0 1 0',
)
def get(c: Client, args: list[bytes]) -> Any:
    v = c.ks.read(c.db, args[1])
    if v is None or type(v) is bytes:
        return v
    raise WRONGTYPE


# parseExtendedStringArgumentsOrReply flags
NX, XX, GET, KEEPTTL, PERSIST, EX, PX, EXAT, PXAT = (1 << i for i in range(9))
_EXPIRY = EX | PX | EXAT | PXAT
_PLAIN_EXPIRY = {b'EX': EX, b'ex': EX, b'PX': PX, b'px': PX}
_UNIT_MS = {EX: 1000, PX: 1}
_TIME_OPTIONS = {b'ex': EX, b'px': PX, b'exat': EXAT, b'pxat': PXAT}  # one of them at most


def _parse_options(args: list[bytes], start: int, is_set: bool) -> tuple[int, bytes | None]:
    """Parse SET's (is_set) or GETEX's options like Redis: returns (flags, expire argument).
    Repeating an option is accepted; conflicting ones are a syntax error. Redis compares
    option names as C strings, so anything after a NUL byte is ignored."""
    flags = 0
    expire: bytes | None = None
    n = len(args)
    i = start
    while i < n:
        opt = keyword(args[i])
        more = i + 1 < n
        if opt == b'nx' and is_set and not flags & XX:
            flags |= NX
        elif opt == b'xx' and is_set and not flags & NX:
            flags |= XX
        elif opt == b'get' and is_set:
            flags |= GET
        elif opt == b'keepttl' and is_set and not flags & (PERSIST | _EXPIRY):
            flags |= KEEPTTL
        elif opt == b'persist' and not is_set and not flags & (KEEPTTL | _EXPIRY):
            flags |= PERSIST
        elif (
            opt in _TIME_OPTIONS
            and more
            and not flags & (KEEPTTL | PERSIST | _EXPIRY & ~_TIME_OPTIONS[opt])
        ):
            flags |= _TIME_OPTIONS[opt]
            i += 1
            expire = args[i]
        else:
            raise SYNTAX
        i += 1
    return flags, expire


def _deadline(c: Client, arg: bytes, flags: int, name: str) -> int:
    """getExpireMillisecondsOrReply: the absolute deadline in ms for an EX/PX/EXAT/PXAT
    argument, with Redis's range checks (C overflow counts as an invalid time)."""
    ms = int_arg(arg)
    seconds = flags & (EX | EXAT)
    if ms <= 0 or (seconds and ms > SECONDS_MAX):
        raise RedisError(f"ERR invalid expire time in '{name}' command")
    if seconds:
        ms *= 1000
    if flags & (EX | PX):
        ms += now_ms()
        if ms > LLONG_MAX:
            raise RedisError(f"ERR invalid expire time in '{name}' command")
    return ms


def _set_generic(
    c: Client,
    key: bytes,
    value: bytes,
    flags: int,
    deadline: int | None,
    ok_reply: str | int = OK,
    abort_reply: int | None = None,
) -> Any:
    """setGenericCommand after the expire time was validated."""
    ks = c.ks
    db = c.db
    old = None
    if flags & GET:
        old = _read_string(c, key)
    found = ks.lookup(db, key) is not None
    if (flags & NX and found) or (flags & XX and not found):
        return old if flags & GET else abort_reply
    if not found and ks.notify_flags:
        ks.notify(NEW, b'new', db, key)
    if flags & KEEPTTL and found:
        ks.overwrite(db, key, value)
    else:
        ks.set(db, key, value, deadline)
    if ks.notify_flags:
        ks.notify(STRING, b'set', db, key)
        if deadline is not None:
            ks.notify(GENERIC, b'expire', db, key)
    return old if flags & GET else ok_reply


def _set_key_flags(args: list[bytes]) -> str:
    """setGetKeys: with GET the old value is read too."""
    return 'RW access update' if any(a.lower() == b'get' for a in args[3:]) else 'OW update'


@COMMANDS.command(
    'set',
    -3,
    flags='write denyoom',
    keys=(1, 1, 1),
    categories='@write @string @slow',
    summary='Set the string value of a key',
    key_specs=(
        'RW access update variable_flags; index 1; range 0 1 0; '
        'RW and ACCESS due to the optional `GET` argument'
    ),
    key_flags_of=_set_key_flags,
)
def set_(c: Client, args: list[bytes]) -> Any:
    deadline: int | None  # None: no expiry
    if len(args) == 3:
        ks = c.ks
        if ks.notify_flags:
            return _set_generic(c, args[1], args[2], 0, None)
        ks.set(c.db, args[1], args[2])
        return OK
    if len(args) == 5 and not c.ks.notify_flags:
        unit = _PLAIN_EXPIRY.get(args[3])  # SET k v EX|PX n: skip option parsing
        if unit is not None:
            n = args[4]
            if n.isdigit() and n[0] != 48 and len(n) < 13:
                # A positive time far from any overflow: what _deadline would compute.
                deadline = int(n) * _UNIT_MS[unit] + now_ms()
            else:
                deadline = _deadline(c, n, unit, 'set')
            c.ks.set(c.db, args[1], args[2], deadline)
            return OK
    flags, expire = _parse_options(args, 3, True)
    deadline = None if expire is None else _deadline(c, expire, flags, 'set')
    return _set_generic(c, args[1], args[2], flags, deadline)


@COMMANDS.command(
    'setnx',
    3,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @string @fast',
    summary='Set the value of a key, only if the key does not exist',
    key_specs='OW insert; index 1; range 0 1 0',
)
def setnx(c: Client, args: list[bytes]) -> Any:
    return _set_generic(c, args[1], args[2], NX, None, 1, 0)


@COMMANDS.command(
    'setex',
    4,
    flags='write denyoom',
    keys=(1, 1, 1),
    categories='@write @string @slow',
    since='2.0.0',
    summary='Set the value and expiration of a key',
    key_specs='OW update; index 1; range 0 1 0',
)
def setex(c: Client, args: list[bytes]) -> Any:
    return _set_generic(c, args[1], args[3], EX, _deadline(c, args[2], EX, 'setex'))


@COMMANDS.command(
    'psetex',
    4,
    flags='write denyoom',
    keys=(1, 1, 1),
    categories='@write @string @slow',
    since='2.6.0',
    summary='Set the value and expiration in milliseconds of a key',
    key_specs='OW update; index 1; range 0 1 0',
)
def psetex(c: Client, args: list[bytes]) -> Any:
    return _set_generic(c, args[1], args[3], PX, _deadline(c, args[2], PX, 'psetex'))


@COMMANDS.command(
    'getset',
    3,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @string @fast',
    summary='Set the string value of a key and return its old value',
    key_specs='RW access update; index 1; range 0 1 0',
)
def getset(c: Client, args: list[bytes]) -> Any:
    key = args[1]
    old = _read_string(c, key)
    ks = c.ks
    if ks.notify_flags and ks.lookup(c.db, key) is None:
        ks.notify(NEW, b'new', c.db, key)
    ks.set(c.db, key, args[2])
    ks.notify(STRING, b'set', c.db, key)
    return old


@COMMANDS.command(
    'getdel',
    2,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@write @string @fast',
    since='6.2.0',
    summary='Get the value of a key and delete the key',
    key_specs='RW access delete; index 1; range 0 1 0',
)
def getdel(c: Client, args: list[bytes]) -> Any:
    key = args[1]
    old = _read_string(c, key)
    if old is not None and c.ks.delete(c.db, key):
        c.ks.notify(GENERIC, b'del', c.db, key)
    return old


@COMMANDS.command(
    'getex',
    -2,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@write @string @fast',
    since='6.2.0',
    summary='Get the value of a key and optionally set its expiration',
    key_specs='RW access update; index 1; range 0 1 0; RW and UPDATE because it changes the TTL',
)
def getex(c: Client, args: list[bytes]) -> Any:
    flags, expire = _parse_options(args, 2, False)
    key = args[1]
    ks = c.ks
    db = c.db
    v = ks.read(db, key)
    if v is None:
        return None
    if type(v) is not bytes:
        raise WRONGTYPE
    if expire is not None:
        deadline = _deadline(c, expire, flags, 'getex')
        if flags & (EXAT | PXAT) and deadline <= now_ms():
            # An absolute time already in the past deletes the key at once.
            ks.delete(db, key)
            ks.notify(GENERIC, b'del', db, key)
        else:
            ks.set_deadline(db, key, deadline)
            ks.notify(GENERIC, b'expire', db, key)
    elif flags & PERSIST:
        if ks.persist(db, key):
            ks.notify(GENERIC, b'persist', db, key)
    return v


# -- multiple keys --------------------------------------------------------------------


@COMMANDS.command(
    'mget',
    -2,
    flags='readonly fast',
    keys=(1, -1, 1),
    categories='@read @string @fast',
    tips='request_policy:multi_shard',
    summary='Get the values of all the given keys',
    key_specs='RO access; index 1; range -1 1 0',
)
def mget(c: Client, args: list[bytes]) -> Any:
    read = c.ks.read
    db = c.db
    out: list[bytes | None] = []
    for key in args[1:]:
        v = read(db, key)
        out.append(v if type(v) is bytes else None)
    return out


@COMMANDS.command(
    'mset',
    -3,
    flags='write denyoom',
    keys=(1, -1, 2),
    categories='@write @string @slow',
    tips='request_policy:multi_shard response_policy:all_succeeded',
    since='1.0.1',
    summary='Set multiple keys to multiple values',
    key_specs='OW update; index 1; range -1 2 0',
)
def mset(c: Client, args: list[bytes]) -> Any:
    n = len(args)
    if not n & 1:
        raise RedisError("ERR wrong number of arguments for 'mset' command")
    if c.ks.notify_flags:
        for i in range(1, n, 2):
            _set_generic(c, args[i], args[i + 1], 0, None)
    else:
        c.ks.set_pairs(c.db, args)
    return OK


@COMMANDS.command(
    'msetnx',
    -3,
    flags='write denyoom',
    keys=(1, -1, 2),
    categories='@write @string @slow',
    tips='request_policy:multi_shard response_policy:agg_min',
    since='1.0.1',
    summary='Set multiple keys to multiple values, only if none of the keys exist',
    key_specs='OW insert; index 1; range -1 2 0',
)
def msetnx(c: Client, args: list[bytes]) -> Any:
    n = len(args)
    if not n & 1:
        raise RedisError("ERR wrong number of arguments for 'msetnx' command")
    ks = c.ks
    db = c.db
    for i in range(1, n, 2):
        if ks.lookup(db, args[i]) is not None:
            return 0
    for i in range(1, n, 2):
        _set_generic(c, args[i], args[i + 1], 0, None)
    return 1


# -- APPEND, STRLEN, SETRANGE, GETRANGE ---------------------------------------------------


def _lookup_string(c: Client, key: bytes) -> bytes | None:
    """lookupKeyWrite + checkType: the string value for a write command, or None."""
    return expect(c.ks.lookup(c.db, key), bytes)


def _read_string(c: Client, key: bytes) -> bytes | None:
    """lookupKeyRead + checkType: the string value for a read command (and the old value
    for SET GET, GETSET, GETDEL, as getGenericCommand reads it), or None. GET inlines it."""
    return expect(c.ks.read(c.db, key), bytes)


def _read_buffer(c: Client, key: bytes) -> bytes | bytearray | None:
    """_read_string for a command that only looks into the string (STRLEN, GETRANGE,
    GETBIT...): bytes, or the bytearray of one changed in place, not copied."""
    v = c.ks.read(c.db, key, buffer=True)
    if v is None or type(v) is bytes or type(v) is bytearray:
        return v
    raise WRONGTYPE


def _lookup_buffer(c: Client, key: bytes) -> bytearray | None:
    """_lookup_string for a command that changes the string in place (APPEND, SETRANGE,
    SETBIT...): a bytearray, the stored one or a short string's copy (store/keyspace.py),
    or None; `_changed` stores the change."""
    v = c.ks.lookup(c.db, key, buffer=True)
    if v is None or type(v) is bytearray:
        return v
    raise WRONGTYPE


def _changed(c: Client, key: bytes, v: bytearray, event: bytes) -> None:
    """The string `v` changed in place: WATCH and the size model are told, `event`
    raised."""
    ks = c.ks
    ks.string_written(c.db, key, v)
    mark(ks, c.db, key, 'raw')  # a changed sds is raw in Redis (dbUnshareStringValue)
    if ks.notify_flags:
        ks.notify(STRING, event, c.db, key)


def _store(
    c: Client,
    key: bytes,
    value: bytes | bytearray,
    created: bool,
    event: bytes,
    enc: str | None = 'raw',
) -> None:
    """Write back a modified string (keeping its TTL) and raise `new` + `event`. `enc`:
    the encoding Redis gives it (store/types/strenc.py): raw for a string made as a
    buffer, embstr for INCRBYFLOAT's, None where Redis encodes it as SET does."""
    ks = c.ks
    if created:
        ks.set(c.db, key, value)
        if ks.notify_flags:
            ks.notify(NEW, b'new', c.db, key)
    else:
        ks.overwrite(c.db, key, value)
    if enc is not None:
        mark(ks, c.db, key, enc)
    if ks.notify_flags:
        ks.notify(STRING, event, c.db, key)


@COMMANDS.command(
    'append',
    3,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @string @fast',
    since='2.0.0',
    summary='Append a value to a key',
    key_specs='RW insert; index 1; range 0 1 0',
)
def append(c: Client, args: list[bytes]) -> Any:
    key, tail = args[1], args[2]
    v = _lookup_buffer(c, key)
    if v is None:
        _store(c, key, tail, True, b'append', None)  # tryObjectEncoding
        return len(tail)
    _check_length(c, len(v), len(tail))
    v += tail
    _changed(c, key, v, b'append')
    return len(v)


@COMMANDS.command(
    'strlen',
    2,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @string @fast',
    since='2.2.0',
    summary='Get the length of the value stored in a key',
    key_specs='RO; index 1; range 0 1 0',
)
def strlen(c: Client, args: list[bytes]) -> Any:
    v = _read_buffer(c, args[1])
    return 0 if v is None else len(v)


@COMMANDS.command(
    'setrange',
    4,
    flags='write denyoom',
    keys=(1, 1, 1),
    categories='@write @string @slow',
    since='2.2.0',
    summary='Overwrite part of a string at key starting at the specified offset',
    key_specs='RW update; index 1; range 0 1 0',
)
def setrange(c: Client, args: list[bytes]) -> Any:
    key, value = args[1], args[3]
    offset = int_arg(args[2])
    if offset < 0:
        raise RedisError(E_OFFSET)
    v = _lookup_buffer(c, key)
    if v is None:
        if not value:
            return 0
        _check_length(c, offset, len(value))
        new = bytes(offset) + value
        _store(c, key, new, True, b'setrange')
        return len(new)
    if not value:
        return len(v)
    _check_length(c, offset, len(value))
    if offset > len(v):
        v += bytes(offset - len(v))
    v[offset : offset + len(value)] = value
    _changed(c, key, v, b'setrange')
    return len(v)


def _clamp_range(start: int, end: int, n: int) -> tuple[int, int]:
    """Redis's index normalisation for GETRANGE and BITCOUNT: negative indexes count from
    the end of `n` items, then both are clamped into [0, n - 1]."""
    if start < 0:
        start += n
    if end < 0:
        end += n
    return max(start, 0), min(max(end, 0), n - 1)


@COMMANDS.command(
    'substr',
    4,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @string @slow',
    summary='Get a substring of the string stored at a key',
    key_specs='RO access; index 1; range 0 1 0',
)
@COMMANDS.command(
    'getrange',
    4,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @string @slow',
    since='2.4.0',
    summary='Get a substring of the string stored at a key',
    key_specs='RO access; index 1; range 0 1 0',
)
def getrange(c: Client, args: list[bytes]) -> Any:
    start = int_arg(args[2])
    end = int_arg(args[3])
    v = _read_buffer(c, args[1])
    if v is None:
        return b''
    n = len(v)
    if start < 0 and end < 0 and start > end:
        return b''
    start, end = _clamp_range(start, end, n)
    if start > end or n == 0:
        return b''
    return bytes(v[start : end + 1])


# -- counters -------------------------------------------------------------------------


@COMMANDS.command(
    'incr',
    2,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @string @fast',
    summary='Increment the integer value of a key by one',
    key_specs='RW access update; index 1; range 0 1 0',
)
def incr(c: Client, args: list[bytes], by: int = 1) -> int:
    """incrDecrCommand: add `by` to the integer at the key (created as 0). INCR itself, so
    that the most common counter costs one call (DECR, INCRBY and DECRBY come here)."""
    key = args[1]
    ks = c.ks
    db = c.db
    v, shard = ks.lookup_for_update(db, key)
    if v is None:
        ks.set(db, key, b'%d' % by)
        if ks.notify_flags:
            ks.notify(NEW, b'new', db, key)
            ks.notify(STRING, b'incrby', db, key)
        return by
    if type(v) is not bytes:
        raise WRONGTYPE
    n = small_int(v)  # int_arg's first step, inline: a counter is mostly small
    if n is None:
        n = int_arg(v)
    n += by
    if n > LLONG_MAX or n < LLONG_MIN:
        raise RedisError(E_OVERFLOW)
    new = b'%d' % n
    ks.replaced(db, key, new, shard)
    if ks.notify_flags:
        ks.notify(STRING, b'incrby', db, key)
    return n


@COMMANDS.command(
    'decr',
    2,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @string @fast',
    summary='Decrement the integer value of a key by one',
    key_specs='RW access update; index 1; range 0 1 0',
)
def decr(c: Client, args: list[bytes]) -> Any:
    return incr(c, args, -1)


@COMMANDS.command(
    'incrby',
    3,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @string @fast',
    summary='Increment the integer value of a key by the given amount',
    key_specs='RW access update; index 1; range 0 1 0',
)
def incrby(c: Client, args: list[bytes]) -> Any:
    return incr(c, args, int_arg(args[2]))


@COMMANDS.command(
    'decrby',
    3,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @string @fast',
    summary='Decrement the integer value of a key by the given number',
    key_specs='RW access update; index 1; range 0 1 0',
)
def decrby(c: Client, args: list[bytes]) -> Any:
    by = int_arg(args[2])
    if by == LLONG_MIN:
        raise RedisError('ERR decrement would overflow')
    return incr(c, args, -by)


@COMMANDS.command(
    'incrbyfloat',
    3,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @string @fast',
    since='2.6.0',
    summary='Increment the float value of a key by the given amount',
    key_specs='RW access update; index 1; range 0 1 0',
)
def incrbyfloat(c: Client, args: list[bytes]) -> Any:
    key = args[1]
    v = _lookup_string(c, key)
    value = Fraction(0) if v is None else strtold(v)
    if value is None:
        raise RedisError(E_NOT_FLOAT)
    incr = strtold(args[2])
    if incr is None:
        raise RedisError(E_NOT_FLOAT)
    # strtold and ld_round give a Fraction, or a float only for +-inf
    if type(value) is not Fraction or type(incr) is not Fraction:
        raise RedisError(E_NAN)  # inf + anything is inf or NaN
    result = ld_round(value + incr)
    if type(result) is not Fraction:
        raise RedisError(E_NAN)
    new = ld_format(result)
    _store(c, key, new, v is None, b'incrbyfloat', 'embstr')  # createStringObject
    return new
