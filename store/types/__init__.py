"""The value-type registry: what TYPE, OBJECT ENCODING and COPY know of a stored value.

Values are bytes (strings) or objects of the type modules' classes (hash.py's Hash,
list.py's List, set.py's Set, zset.py's ZSet, stream.py's Stream). Each class says what
this module needs to know: `redis_type` (TYPE, SCAN TYPE), `encoding` (a name, or a
method giving it: OBJECT ENCODING) and `copy()` (COPY); DUMP and RESTORE use the RDB
codec (persistence/rdb_encoder.py, rdb_loader.py). Command families ask here rather than
testing Python types themselves, and `expect` is the one WRONGTYPE check every family uses.
"""

from collections.abc import Callable
from typing import Any, TypeVar

from ..args import WRONGTYPE
from ..resp import string2ll

T = TypeVar('T')


def type_name(value: Any) -> str:
    """The TYPE of a stored value ('none' for no value)."""
    if value is None:
        return 'none'
    return 'string' if type(value) is bytes else value.redis_type


def string_encoding(value: bytes) -> str:
    """tryObjectEncoding for a string value: 'int' when it is a strict 64-bit integer of at
    most 20 characters, 'embstr' up to 44 bytes, 'raw' beyond. Writes that leave Redis
    another encoding for a short string (APPEND, SETRANGE, INCRBYFLOAT...) are recorded in
    strenc.py, which OBJECT ENCODING asks first."""
    if len(value) <= 20 and string2ll(value) is not None:
        return 'int'
    return 'embstr' if len(value) <= 44 else 'raw'


def encoding_of(value: Any) -> str:
    """OBJECT ENCODING: the name Redis 7.0 gives the value's encoding."""
    if type(value) is bytes:
        return string_encoding(value)
    enc: str | Callable[[], str] = value.encoding
    return enc() if callable(enc) else enc


def copy_value(value: Any) -> Any:
    """COPY duplicates the value: strings are immutable and shared, other types copy
    themselves."""
    return value if type(value) is bytes else value.copy()


class EncodingLimits:
    """The thresholds under which Redis keeps a small aggregate compact (a listpack or an
    intset) and past which it converts it, for good, to a hashtable or skiplist. CONFIG SET
    of `hash-max-listpack-entries` and friends changes them (Server.apply_config); every
    keyspace has its own (`Keyspace.limits`), so embedded servers do not share them."""

    __slots__ = ('hash_entries', 'hash_value', 'set_intset_entries', 'zset_entries', 'zset_value')

    # config parameter -> attribute
    PARAMS = {
        'hash-max-listpack-entries': 'hash_entries',
        'hash-max-listpack-value': 'hash_value',
        'set-max-intset-entries': 'set_intset_entries',
        'zset-max-listpack-entries': 'zset_entries',
        'zset-max-listpack-value': 'zset_value',
    }

    def __init__(self) -> None:
        self.hash_entries, self.hash_value = 512, 64
        self.set_intset_entries = 512
        self.zset_entries, self.zset_value = 128, 64


def expect(value: Any, cls: type[T]) -> T | None:
    """The WRONGTYPE check of every type family: `value` (None for a missing key) when it
    is a `cls`, else the WRONGTYPE error. `expect(ks.read(db, key), Stream)`."""
    if value is None or type(value) is cls:
        return value
    raise WRONGTYPE
