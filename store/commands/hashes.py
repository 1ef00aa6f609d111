"""Hash commands (Redis 7.0 t_hash.c): HSET HSETNX HMSET HGET HMGET HGETALL HDEL HEXISTS
HLEN HSTRLEN HKEYS HVALS HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN.

The value is store/types/hash.py's Hash, a dict that remembers whether Redis would still
keep it as a listpack. Every write that adds fields or values calls `Hash.fit` (or
`fit_pair`) with the keyspace's thresholds, so OBJECT ENCODING answers as Redis does, and a
listpack hash lists its fields in Redis's order (insertion order; see types/hash.py).

Handlers follow t_hash.c's order of checks, which a client can observe: HSET counts its
arguments before looking at the key; HINCRBY and HINCRBYFLOAT parse the increment before
the key and refuse an infinite increment before creating anything; HRANDFIELD parses its
count and WITHVALUES before looking the key up, and answers a count of 0 only after the
WRONGTYPE check. Look-ups for read commands count keyspace hits and misses (`read_value`),
write commands do not (`write_value`).

Keyspace events, in Redis's order: `new` when a command creates the key (dbAdd, before the
hash is filled), then `hset` / `hincrby` / `hincrbyfloat` / `hdel`, then `del` when HDEL
emptied the key (aggregates.py). A command that changes nothing (HSETNX of an existing
field, HDEL of missing fields, an error) signals nothing and raises nothing.

HSET of one field and HGET are the hot path: one look-up, one dict operation, the
encoding check inline (`fit_pair`), events only when someone listens.

HRANDFIELD. Python's dict has no random access, so picking fields costs one O(N) pass over
the hash (list(h), or islice for a single field), where Redis's dictGetFairRandomKey is
O(1); a reply is never bigger than the hash except for a negative count past its size,
which repeats fields. That reply is proportional to the client's number, so it is built
as its final bytes, fields encoded once and repeated, and refused with Redis's own
'ERR value is out of range' when it would exceed MAX_RANDOM_REPLY_BYTES. Redis 7.0 has no
such bound: it builds the reply in its output buffer until memory runs out (HRANDFIELD h
-9223372036854775807 took redis-server 7.0.15 down when tried); this server answers the
error instead.

HSCAN shares aggregates.scan_collection, but looks the key up first itself: Redis answers
a missing key (an empty scan) or WRONGTYPE before it parses MATCH/COUNT.
"""

import random
from fractions import Fraction
from itertools import islice
from typing import Any

from .. import events
from ..args import E_NOT_FLOAT, E_OVERFLOW, SYNTAX, WRONGTYPE, int_arg
from ..command_table import Family
from ..context import Client
from ..longdouble import ld_format, ld_round, strtold
from ..resp import BULK_HEADER, OK, Map, Raw, RedisError, c_string, string2ll
from ..types import expect
from ..types.hash import Hash
from .aggregates import (
    E_RANGE,
    changed,
    create,
    drop_if_empty,
    read_value,
    repeated_reply,
    scan_collection,
    write_value,
)
from .cursor import parse_cursor

HASH = events.HASH

LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)

E_HASH_NOT_INT = 'ERR hash value is not an integer'
E_HASH_NOT_FLOAT = 'ERR hash value is not a float'
E_NAN_INCR = 'ERR value is NaN or Infinity'
E_NAN_RESULT = 'ERR increment would produce NaN or Infinity'
E_COUNT_RANGE = (
    'ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807'
)

# The largest HRANDFIELD reply with a negative count bigger than the hash (fields
# repeated) this server builds; see the module comment. Peak memory is a few times this.

COMMANDS = Family('hash', since='2.0.0')


def _hash_arity_error(args: list[bytes]) -> RedisError:
    """addReplyErrorArity for HSET/HMSET given a field without a value."""
    return RedisError(
        f"ERR wrong number of arguments for '{args[0].decode('latin-1').lower()}' command"
    )


# -- HSET, HSETNX, HMSET ----------------------------------------------------------------


@COMMANDS.command(
    'hset',
    -4,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @hash @fast',
    summary='Set the string value of a hash field',
    key_specs='RW update; index 1; range 0 1 0',
)
def hset(c: Client, args: list[bytes]) -> Any:
    """hsetCommand: set every field-value pair; returns how many fields were new."""
    n = len(args)
    if n & 1:
        raise _hash_arity_error(args)
    key = args[1]
    ks = c.ks
    h = ks.lookup(c.db, key)
    if h is None:
        h = create(c, key, Hash())
    elif type(h) is not Hash:
        raise WRONGTYPE
    if n == 4:
        field = args[2]
        created: int = field not in h
        h[field] = args[3]
        if h.listpack:
            h.fit_pair(ks.limits, field, args[3])
    else:
        size = len(h)
        for i in range(2, n, 2):
            h[args[i]] = args[i + 1]
        created = len(h) - size
        h.fit(ks.limits, *args[2:])
    ks.updated(c.db, key)
    if ks.notify_flags & HASH:
        ks.notify(HASH, b'hset', c.db, key)
    return int(created)


@COMMANDS.command(
    'hmset',
    -4,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @hash @fast',
    summary='Set multiple hash fields to multiple values',
    key_specs='RW update; index 1; range 0 1 0',
)
def hmset(c: Client, args: list[bytes]) -> Any:
    hset(c, args)
    return OK


@COMMANDS.command(
    'hsetnx',
    4,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @hash @fast',
    summary='Set the value of a hash field, only if the field does not exist',
    key_specs='RW insert; index 1; range 0 1 0',
)
def hsetnx(c: Client, args: list[bytes]) -> Any:
    key, field, value = args[1], args[2], args[3]
    h = write_value(c, key, Hash)
    if h is None:
        h = create(c, key, Hash())
    elif field in h:
        return 0
    h[field] = value
    h.fit_pair(c.ks.limits, field, value)
    changed(c, HASH, b'hset', key)
    return 1


# -- reads of fields --------------------------------------------------------------------


@COMMANDS.command(
    'hget',
    3,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @hash @fast',
    summary='Get the value of a hash field',
    key_specs='RO access; index 1; range 0 1 0',
)
def hget(c: Client, args: list[bytes]) -> Any:
    h = c.ks.read(c.db, args[1])
    if h is None:
        return None
    if type(h) is not Hash:
        raise WRONGTYPE
    return h.get(args[2])


@COMMANDS.command(
    'hmget',
    -3,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @hash @fast',
    summary='Get the values of all the given hash fields',
    key_specs='RO access; index 1; range 0 1 0',
)
def hmget(c: Client, args: list[bytes]) -> Any:
    h = read_value(c, args[1], Hash)
    if h is None:
        return [None] * (len(args) - 2)
    get = h.get
    return [get(f) for f in args[2:]]


@COMMANDS.command(
    'hexists',
    3,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @hash @fast',
    summary='Determine if a hash field exists',
    key_specs='RO; index 1; range 0 1 0',
)
def hexists(c: Client, args: list[bytes]) -> Any:
    h = read_value(c, args[1], Hash)
    return 0 if h is None else int(args[2] in h)


@COMMANDS.command(
    'hstrlen',
    3,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @hash @fast',
    since='3.2.0',
    summary='Get the length of the value of a hash field',
    key_specs='RO; index 1; range 0 1 0',
)
def hstrlen(c: Client, args: list[bytes]) -> Any:
    h = read_value(c, args[1], Hash)
    return 0 if h is None else len(h.get(args[2], b''))


@COMMANDS.command(
    'hlen',
    2,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@read @hash @fast',
    summary='Get the number of fields in a hash',
    key_specs='RO; index 1; range 0 1 0',
)
def hlen(c: Client, args: list[bytes]) -> Any:
    h = read_value(c, args[1], Hash)
    return 0 if h is None else len(h)


# -- whole hash -------------------------------------------------------------------------


@COMMANDS.command(
    'hgetall',
    2,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @hash @slow',
    tips='nondeterministic_output_order',
    summary='Get all the fields and values in a hash',
    key_specs='RO access; index 1; range 0 1 0',
)
def hgetall(c: Client, args: list[bytes]) -> Any:
    """A map in RESP3 (an empty map for a missing key), a flat array in RESP2."""
    h = read_value(c, args[1], Hash)
    return Map() if h is None else Map(h)


@COMMANDS.command(
    'hkeys',
    2,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @hash @slow',
    tips='nondeterministic_output_order',
    summary='Get all the fields in a hash',
    key_specs='RO access; index 1; range 0 1 0',
)
def hkeys(c: Client, args: list[bytes]) -> Any:
    h = read_value(c, args[1], Hash)
    return [] if h is None else list(h)


@COMMANDS.command(
    'hvals',
    2,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @hash @slow',
    tips='nondeterministic_output_order',
    summary='Get all the values in a hash',
    key_specs='RO access; index 1; range 0 1 0',
)
def hvals(c: Client, args: list[bytes]) -> Any:
    h = read_value(c, args[1], Hash)
    return [] if h is None else list(h.values())


# -- HDEL -------------------------------------------------------------------------------


@COMMANDS.command(
    'hdel',
    -3,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@write @hash @fast',
    summary='Delete one or more hash fields',
    key_specs='RW delete; index 1; range 0 1 0',
)
def hdel(c: Client, args: list[bytes]) -> Any:
    key = args[1]
    h = write_value(c, key, Hash)
    if h is None:
        return 0
    deleted = 0
    for field in args[2:]:
        if h.pop(field, None) is not None:
            deleted += 1
            if not h:
                break  # Redis deletes the key here and looks at no more fields
    if deleted:
        changed(c, HASH, b'hdel', key)
        drop_if_empty(c, key, h)
    return deleted


# -- counters ---------------------------------------------------------------------------


@COMMANDS.command(
    'hincrby',
    4,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @hash @fast',
    summary='Increment the integer value of a hash field by the given number',
    key_specs='RW access update; index 1; range 0 1 0',
)
def hincrby(c: Client, args: list[bytes]) -> Any:
    incr = int_arg(args[3])
    key, field = args[1], args[2]
    h = write_value(c, key, Hash)
    old = None if h is None else h.get(field)
    value: int | None
    if old is None:
        value = 0
    else:
        value = string2ll(old)
        if value is None:
            raise RedisError(E_HASH_NOT_INT)
    value += incr
    if value > LONG_MAX or value < LONG_MIN:
        raise RedisError(E_OVERFLOW)
    if h is None:
        h = create(c, key, Hash())
    new = b'%d' % value
    h[field] = new
    h.fit_pair(c.ks.limits, field, new)
    changed(c, HASH, b'hincrby', key)
    return value


@COMMANDS.command(
    'hincrbyfloat',
    4,
    flags='write denyoom fast',
    keys=(1, 1, 1),
    categories='@write @hash @fast',
    since='2.6.0',
    summary='Increment the float value of a hash field by the given amount',
    key_specs='RW access update; index 1; range 0 1 0',
)
def hincrbyfloat(c: Client, args: list[bytes]) -> Any:
    """Long-double arithmetic as INCRBYFLOAT (store/longdouble.py)."""
    incr = strtold(args[3])
    if incr is None:
        raise RedisError(E_NOT_FLOAT)
    if type(incr) is not Fraction:  # strtold's only floats are +-inf
        raise RedisError(E_NAN_INCR)  # +-inf: refused before the key is looked at
    key, field = args[1], args[2]
    h = write_value(c, key, Hash)
    old = None if h is None else h.get(field)
    if old is None:
        value = Fraction(0)
    else:
        stored = strtold(old)
        if stored is None:
            raise RedisError(E_HASH_NOT_FLOAT)
        if type(stored) is not Fraction:
            raise RedisError(E_NAN_RESULT)  # a stored 'inf' plus anything
        value = stored
    result = ld_round(value + incr)
    if type(result) is not Fraction:  # ld_round's only floats are +-inf
        raise RedisError(E_NAN_RESULT)
    new = ld_format(result)
    if h is None:
        h = create(c, key, Hash())
    h[field] = new
    h.fit_pair(c.ks.limits, field, new)
    changed(c, HASH, b'hincrbyfloat', key)
    return new


# -- HRANDFIELD -------------------------------------------------------------------------


def _bulk(b: bytes) -> bytes:
    n = len(b)
    return (BULK_HEADER[n] if n < 1024 else b'$%d\r\n' % n) + b + b'\r\n'


def _with_values(h: Hash, fields: list[bytes], withvalues: bool, proto: int) -> list[Any]:
    """The reply for `fields` of `h`: fields alone, or with their values (pairs in RESP3,
    a flat array in RESP2), as hrandfieldWithCountCommand replies."""
    if not withvalues:
        return fields
    if proto == 3:
        return [[f, h[f]] for f in fields]
    out: list[bytes] = []
    for f in fields:
        out += (f, h[f])
    return out


def _repeated_fields(c: Client, h: Hash, count: int, withvalues: bool) -> Raw:
    """A negative count past the hash's size: `count` fields drawn with replacement,
    returned as the reply's bytes (each field encoded once). Refused past
    MAX_RANDOM_REPLY_BYTES (the expected size, from the mean size of an element)."""
    proto = c.proto
    if withvalues:
        head = b'*2\r\n' if proto == 3 else b''
        pieces = [head + _bulk(f) + _bulk(v) for f, v in h.items()]
    else:
        pieces = [_bulk(f) for f in h]
    return repeated_reply(pieces, count, count * 2 if withvalues and proto == 2 else count, c)


def _random_fields(c: Client, key: bytes, count: int, withvalues: bool) -> Any:
    """hrandfieldWithCountCommand: a positive count picks distinct fields (the whole hash
    when it has no more), a negative one picks with replacement."""
    h = read_value(c, key, Hash)
    if h is None or count == 0:
        return []
    size = len(h)
    if count < 0 or count == 1:
        n = -count if count < 0 else 1
        if n > size:
            return _repeated_fields(c, h, n, withvalues)
        fields = random.choices(list(h), k=n)
    elif count >= size:
        fields = list(h)  # CASE 2: the whole hash, in its order
    elif h.listpack and count * 3 <= size:
        # CASE 4 on a listpack (lpRandomPairsUnique): distinct fields in listpack order.
        keys = list(h)
        fields = [keys[i] for i in sorted(random.sample(range(size), count))]
    else:
        fields = random.sample(list(h), count)  # CASES 3 and 4: distinct, random order
    return _with_values(h, fields, withvalues, c.proto)


@COMMANDS.command(
    'hrandfield',
    -2,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @hash @slow',
    tips='nondeterministic_output',
    since='6.2.0',
    summary='Get one or multiple random fields from a hash',
    key_specs='RO access; index 1; range 0 1 0',
)
def hrandfield(c: Client, args: list[bytes]) -> Any:
    """HRANDFIELD key [count [WITHVALUES]]."""
    n = len(args)
    if n >= 3:
        count = int_arg(args[2])
        if count == LONG_MIN:  # getRangeLongFromObjectOrReply(-LONG_MAX, LONG_MAX)
            raise RedisError(E_COUNT_RANGE)
        if n > 4 or (n == 4 and c_string(args[3]).lower() != b'withvalues'):
            raise SYNTAX
        withvalues = n == 4
        if withvalues and not -(LONG_MAX // 2) <= count <= LONG_MAX // 2:
            raise RedisError(E_RANGE)  # the RESP2 reply would hold 2 * count elements
        return _random_fields(c, args[1], count, withvalues)
    h = read_value(c, args[1], Hash)
    if h is None:
        return None
    return next(islice(iter(h), random.randrange(len(h)), None))


# -- HSCAN ------------------------------------------------------------------------------


def _listpack_fields(h: Hash) -> list[bytes] | None:
    """A listpack hash is returned whole by one HSCAN call, in its order."""
    return list(h) if h.listpack else None


def _field_and_value(h: Hash, field: bytes, out: list[bytes]) -> None:
    out += (field, h[field])


@COMMANDS.command(
    'hscan',
    -3,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @hash @slow',
    tips='nondeterministic_output',
    since='2.8.0',
    summary='Incrementally iterate hash fields and associated values',
    key_specs='RO access; index 1; range 0 1 0',
)
def hscan(c: Client, args: list[bytes]) -> Any:
    """HSCAN key cursor [MATCH pattern] [COUNT count]. Redis answers a bad cursor, then a
    missing key (an empty scan) or WRONGTYPE, and only then looks at the options."""
    key = args[1]
    parse_cursor(args[2])
    h = c.ks.lookup(c.db, key)
    if h is None or type(h) is not Hash:
        expect(c.ks.read(c.db, key), Hash)  # counts the miss (or hit) and raises WRONGTYPE
        return [b'0', []]
    return scan_collection(c, args, Hash, _listpack_fields, _field_and_value)
