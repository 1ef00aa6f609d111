"""RESP wire format: the reply encoder, error replies, and the integers requests carry.

Requests are parsed in store/request_parser.py (hiredis on the fast path, the exact parser
behind it); what they hand on is a list of bytes arguments, whose integers commands read
with `string2ll` / `small_int` below, and whose errors they raise as RedisError.

Replies. Command handlers return plain Python values and the encoder renders them for the
connection's protocol version:

    bytes -> bulk string      None -> null           int -> integer
    str -> simple string      bool -> boolean        float -> double
    list/tuple -> array       Map -> map             Set -> set
    Push -> push              Verbatim -> verbatim    RedisError -> error
    NULL_ARRAY -> *-1 in RESP2 (null in RESP3)        Raw -> bytes sent as they are

RESP2 renders the RESP3-only types the way Redis 7.0 does: maps as flat arrays, sets as
arrays, doubles as bulk strings, booleans as 1/0, verbatim strings as bulk strings.

Types. A request is a list of bytes arguments. A reply value is typed `Any`: the encoder
dispatches on `type(value) is ...` (exact types, cheaper than an isinstance chain), which a
type checker cannot follow through the local `t`; the table above is the contract.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final


class RedisError(Exception):
    """An error reply. Raised by handlers (the dispatcher replies with it) or returned
    inside an array (EXEC results). `msg` starts with the error code, e.g. 'ERR ...'."""

    __slots__ = ('msg',)

    msg: str

    def __init__(self, msg: str) -> None:
        self.msg = msg

    def __repr__(self) -> str:
        return f'RedisError({self.msg!r})'


class CountedError(RedisError):
    """An error reply already counted in INFO errorstats when a script's redis.call got
    it (Redis's ignore_error_stats_update), now the script's own error: the command
    failed, the error is not counted again."""

    __slots__ = ()


def _error_line(msg: str) -> bytes:
    """An error's text as one protocol line, as addReplyErrorFormat makes it: CR and LF
    trimmed from both ends, any left inside turned into spaces (an argument quoted in
    the message, a group name say, may hold them)."""
    if '\n' in msg or '\r' in msg:
        msg = msg.strip('\r\n').replace('\r', ' ').replace('\n', ' ')
    return msg.encode('utf-8', 'surrogateescape')


def c_string(b: bytes) -> bytes:
    """What C's %s sees of an argument: the bytes up to the first NUL."""
    nul = b.find(0)
    return b if nul < 0 else b[:nul]


def error_arg(b: bytes, limit: int | None = None) -> str:
    """An argument as C's %s (or %.128s) prints it in an error: raw bytes up to a NUL,
    CR/LF as spaces (addReplyErrorFormat), kept byte-exact through surrogateescape."""
    b = c_string(b)
    if limit is not None:
        b = b[:limit]
    return b.replace(b'\r', b' ').replace(b'\n', b' ').decode('utf-8', 'surrogateescape')


def unknown_command_error(args: list[bytes]) -> str:
    """processCommand's "unknown command" error, byte for byte: the name and arguments are
    cut as printf's %.128s cuts them (bytes, up to a NUL) and CR/LF become spaces. The
    message is a str holding the raw bytes (surrogateescape, which the encoder undoes)."""
    shown = b''
    for a in args[1:]:
        if len(shown) >= 128:
            break
        shown += b"'%s' " % c_string(a)[: 128 - len(shown)]
    msg = b"ERR unknown command '%s', with args beginning with: %s" % (
        c_string(args[0])[:128],
        shown,
    )
    return msg.replace(b'\r', b' ').replace(b'\n', b' ').decode('utf-8', 'surrogateescape')


class Map(list[tuple[Any, Any]]):
    """A map reply, built from (key, value) pairs or a dict."""

    def __init__(self, items: dict[Any, Any] | Iterable[tuple[Any, Any]] = ()) -> None:
        super().__init__(items.items() if isinstance(items, dict) else items)


class Set(list[Any]):
    """A set reply (RESP3 '~'), an array in RESP2."""


class Push(list[Any]):
    """An out-of-band push (RESP3 '>'), an array in RESP2."""


class Verbatim(bytes):
    """Verbatim text (RESP3 '=txt:'), a bulk string in RESP2."""


class Raw(bytes):
    """Bytes already encoded for the wire; sent unchanged in every protocol."""


class FailedRaw(Raw):
    """An encoded reply with error replies inside (a script's array): its command failed
    `fails` times, as Redis counts them (once for errors counted while it ran, once per
    error a redis.call had counted already)."""

    fails = 0


class DoubleText(bytes):
    """A double already spelled as the reply must show it (addReplyHumanLongDouble's
    "%.17Lf" without trailing zeros, not addReplyDouble's "%.17g"): RESP3 ',', a bulk
    string in RESP2."""


NULL_ARRAY: Final = Raw(b'*-1\r\n')  # replaced by '_' in RESP3 by the encoder
NO_REPLY: Final = Raw(b'')  # nothing now: a blocked command's reply comes later, or none

OK: Final = 'OK'
QUEUED: Final = 'QUEUED'
PONG: Final = 'PONG'


def format_double(d: float) -> bytes:
    """Render a double the way Redis 7.0's addReplyDouble does (%.17g, inf, -inf)."""
    if d != d:
        return b'nan'
    if d == float('inf'):
        return b'inf'
    if d == float('-inf'):
        return b'-inf'
    return b'%.17g' % d


# '$<n>\r\n' for short values: `out += (BULK_HEADER[n], value, CRLF)` costs half of
# formatting b'$%d\r\n%s\r\n', and never copies the value before the final join.
BULK_HEADER: Final = [b'$%d\r\n' % n for n in range(1024)]
CRLF: Final = b'\r\n'
# '$<n>' alone: a run of bulk strings is CRLF.join([prefix, value, prefix, value, ..., b''])
BULK_PREFIX: Final = [b'$%d' % n for n in range(1024)]
BIG_ARRAY: Final = 64  # arrays of at least this many elements are encoded by chunks
ARRAY_CHUNK: Final = 4096
_BYTES_ONLY: Final = {bytes}


def encode(value: Any, proto: int, out: list[bytes]) -> list[bytes]:
    """Append the encoding of `value` for protocol `proto` (2 or 3) to the list `out`."""
    t = type(value)
    if t is bytes or t is bytearray:
        n = len(value)
        out += (BULK_HEADER[n] if n < 1024 else b'$%d\r\n' % n, value, CRLF)
    elif t is int:
        out.append(b':%d\r\n' % value)
    elif value is None:
        out.append(b'_\r\n' if proto == 3 else b'$-1\r\n')
    elif t is str:
        out.append(b'+%s\r\n' % value.encode())
    elif t is list or t is tuple:
        n = len(value)
        out.append(b'*%d\r\n' % n)
        if n < BIG_ARRAY:
            for v in value:
                encode(v, proto, out)
        else:
            _encode_many(value, proto, out)
    elif t is RedisError:
        out.append(b'-%s\r\n' % _error_line(value.msg))
    elif t is Raw or t is FailedRaw:
        if value is NULL_ARRAY and proto == 3:
            out.append(b'_\r\n')
        else:
            out.append(value)
    elif t is bool:
        if proto == 3:
            out.append(b'#t\r\n' if value else b'#f\r\n')
        else:
            out.append(b':1\r\n' if value else b':0\r\n')
    elif t is float:
        s = format_double(value)
        out.append(b',%s\r\n' % s if proto == 3 else b'$%d\r\n%s\r\n' % (len(s), s))
    elif t is Map:
        if proto == 3:
            out.append(b'%%%d\r\n' % len(value))
        else:
            out.append(b'*%d\r\n' % (2 * len(value)))
        for k, v in value:
            encode(k, proto, out)
            encode(v, proto, out)
    elif t is Set or t is Push:
        mark = (b'~' if t is Set else b'>') if proto == 3 else b'*'
        out.append(b'%s%d\r\n' % (mark, len(value)))
        for v in value:
            encode(v, proto, out)
    elif t is Verbatim:
        if proto == 3:
            out.append(b'=%d\r\ntxt:%s\r\n' % (len(value) + 4, value))
        else:
            out.append(b'$%d\r\n%s\r\n' % (len(value), value))
    elif t is DoubleText:
        out.append(b',%s\r\n' % value if proto == 3 else b'$%d\r\n%s\r\n' % (len(value), value))
    elif isinstance(value, RedisError):
        out.append(b'-%s\r\n' % _error_line(value.msg))
    else:
        raise TypeError(f'cannot encode {t.__name__}')
    return out


def _encode_many(items: Any, proto: int, out: list[bytes]) -> None:
    """The elements of a big array (KEYS, LRANGE, SMEMBERS ... of a million elements),
    appended as one bytes object per chunk of ARRAY_CHUNK elements. The connection joins
    its output list, and a join costs a Py_buffer (80 bytes, written and read back) per
    piece: joining three pieces per element at the end took longer than encoding them.
    A chunk of short bulk strings, the common case, is encoded in a few C-level calls;
    any other chunk element by element, then joined while it is small."""
    for i in range(0, len(items), ARRAY_CHUNK):
        chunk = items[i : i + ARRAY_CHUNK]
        if set(map(type, chunk)) == _BYTES_ONLY:
            pieces: list[bytes] = [b''] * (2 * len(chunk) + 1)
            try:
                pieces[0:-1:2] = map(BULK_PREFIX.__getitem__, map(len, chunk))
            except IndexError:  # a value of 1024 bytes or more: the general way
                pass
            else:
                pieces[1::2] = chunk
                out.append(CRLF.join(pieces))
                continue
        part: list[bytes] = []
        for v in chunk:
            encode(v, proto, part)
        out.append(b''.join(part))


def to_bytes(value: Any, proto: int = 2) -> bytes:
    return b''.join(encode(value, proto, []))


# -- integers in requests -----------------------------------------------------------------


# The canonical spellings of the integers requests carry most (counts, TTLs, indexes,
# counters): one dict lookup instead of string2ll's checks and int().
SMALL_INTS: Final = {b'%d' % i: i for i in range(-1024, 10000)}
INT_BYTES: Final = {i: b for b, i in SMALL_INTS.items()}  # and back, the same bytes objects
# Their look-ups for other modules, bound once: CPython 3.11 compiles `NAME.get(x)` on an
# imported NAME as a module attribute load (LOAD_ATTR: not specialised for a dict, a new
# bound method each call), ~20 ns more than calling these.
small_int = SMALL_INTS.get
int_bytes = INT_BYTES.get


def string2ll(b: bytes) -> int | None:
    """Redis's string2ll: a strict decimal integer (no sign '+', spaces or leading zeros)
    within signed 64-bit range; None when `b` is not one."""
    v = SMALL_INTS.get(b) if type(b) is bytes else None  # (a bytearray is unhashable)
    if v is not None:
        return v
    if b.isdigit() and len(b) < 19 and (b[0] != 48 or len(b) == 1):
        return int(b)  # the common case: a small non-negative number
    try:
        v = int(b)
    except ValueError:
        return None
    # int() also takes '+1', ' 1', '1_0' and '01': only the canonical spelling counts.
    if b'%d' % v != b or not -(2**63) <= v < 2**63:
        return None
    return v
