"""The value-type registry: what TYPE, OBJECT ENCODING, COPY and the DUMP codec know of a
stored value.

Values are plain Python objects owned by their type modules (bytes for strings,
types/stream.py's Stream, ...). This module knows them only through small tables:
`TYPE_NAMES` (TYPE, SCAN TYPE), a class's `redis_type` and `encoding` attributes (OBJECT
ENCODING) and the DUMP registry in types/dump.py, so a type module adds its type in a line
and every command family asks here rather than testing Python types itself. `expect`
is the one WRONGTYPE check every family uses.
"""

import copy
from collections import deque

from ..args import WRONGTYPE
from ..resp import string2ll

# Python type of a stored value -> the name TYPE reports. Type families add their classes
# (e.g. TYPE_NAMES[Stream] = 'stream'); `type_name` falls back to a `redis_type`
# attribute and to the builtin containers.
TYPE_NAMES: dict[type, str] = {bytes: 'string'}
_BUILTIN_TYPES = ((dict, 'hash'), (list, 'list'), (deque, 'list'), (set, 'set'))


def type_name(value):
    """The TYPE of a stored value ('none' for no value)."""
    if value is None:
        return 'none'
    name = TYPE_NAMES.get(type(value))
    if name is not None:
        return name
    name = getattr(value, 'redis_type', None)
    if name is not None:
        return name
    for pytype, name in _BUILTIN_TYPES:
        if isinstance(value, pytype):
            return name
    return 'none'


def string_encoding(value):
    """tryObjectEncoding for a string value: 'int' when it is a strict 64-bit integer of at
    most 20 characters, 'embstr' up to 44 bytes, 'raw' beyond."""
    if len(value) <= 20 and string2ll(value) is not None:
        return 'int'
    return 'embstr' if len(value) <= 44 else 'raw'


_BUILTIN_ENCODINGS = (
    (dict, 'hashtable'),
    (list, 'quicklist'),
    (deque, 'quicklist'),
    (set, 'hashtable'),
)


def encoding_of(value):
    """OBJECT ENCODING: a plausible Redis encoding name. Type families can give their
    classes an `encoding` attribute (a string or a no-argument method)."""
    if type(value) is bytes:
        return string_encoding(value)
    enc = getattr(value, 'encoding', None)
    if enc is not None:
        return enc() if callable(enc) else enc
    for pytype, name in _BUILTIN_ENCODINGS:
        if isinstance(value, pytype):
            return name
    return 'raw'


def copy_value(value):
    """COPY duplicates the value: strings are immutable and shared, containers are deep
    copied (a type family may define `copy()` to do it faster)."""
    if type(value) is bytes:
        return value
    dup = getattr(value, 'copy', None)
    if dup is not None and not isinstance(value, (dict, list, set, deque)):
        return dup()
    return copy.deepcopy(value)


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

    def __init__(self):
        self.hash_entries, self.hash_value = 512, 64
        self.set_intset_entries = 512
        self.zset_entries, self.zset_value = 128, 64


def expect(value, cls):
    """The WRONGTYPE check of every type family: `value` (None for a missing key) when it
    is a `cls`, else the WRONGTYPE error. `expect(ks.read(db, key), Stream)`."""
    if value is None or type(value) is cls:
        return value
    raise WRONGTYPE
