"""Argument parsing shared by command families, with Redis's error strings."""

import math
from typing import Any

from .resp import RedisError, c_string, small_int, string2ll

E_NOT_INT = 'ERR value is not an integer or out of range'
E_NOT_FLOAT = 'ERR value is not a valid float'
E_SYNTAX = 'ERR syntax error'
E_WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
E_DB_RANGE = 'ERR DB index is out of range'
E_OVERFLOW = 'ERR increment or decrement would overflow'

WRONGTYPE = RedisError(E_WRONGTYPE)
SYNTAX = RedisError(E_SYNTAX)


def int_arg(b: bytes, msg: str = E_NOT_INT) -> int:
    """getLongLongFromObjectOrReply: a strict 64-bit integer or RedisError(msg)."""
    v = small_int(b) if type(b) is bytes else None  # string2ll's first step, inline
    if v is None:
        v = string2ll(b)
        if v is None:
            raise RedisError(msg)
    return v


def range_arg(b: bytes, low: int, high: int, msg: str) -> int:
    """getRangeLongFromObjectOrReply: an integer in [low, high]; `msg` for anything else
    (a non-integer too, as Redis replies with the message it was given)."""
    v = int_arg(b, msg)
    if v < low or v > high:
        raise RedisError(msg)
    return v


def float_arg(b: bytes, msg: str = E_NOT_FLOAT) -> float:
    """getLongDoubleFromObjectOrReply: a finite-or-inf float without spaces, else error."""
    try:
        if not b or b[:1].isspace() or b[-1:].isspace():
            raise ValueError
        v = float(b)
    except ValueError:
        raise RedisError(msg) from None
    if math.isnan(v):
        raise RedisError(msg)
    return v


def db_arg(conn: Any, b: bytes) -> int:
    """A database index argument, checked against `databases`."""
    db = int_arg(b)
    if not 0 <= db < conn.ks.databases:
        raise RedisError(E_DB_RANGE)
    return db


def lower(b: bytes) -> str:
    """An option keyword as lower-case str (for comparisons with 'nx', 'ex', ...)."""
    return b.decode('latin-1').lower()


def keyword(b: bytes) -> bytes:
    """An option name as Redis's strcasecmp sees it: lower-cased, cut at a NUL byte."""
    return c_string(b).lower()
