"""The DUMP/RESTORE payload codec.

DUMP uses a format of our own, not RDB: a version byte, a tagged encoding of the value and
a CRC32. It only has to round-trip through our RESTORE, and its decoder builds only plain
data types (never pickle), so a RESTORE payload cannot run code. Classes are registered
with `register_dump`; the aggregate types (hash, list, set, sorted set) are registered at
the end of this module.

Encodings after RESTORE. Redis writes a small aggregate's compact encoding into the
payload as it is (a listpack or an intset) and a big one element by element, and on load
re-derives the encoding from the configured thresholds, differently for the two forms
(Redis 7.0 rdbLoadObject, checked against redis-server):

- hash, listpack form: stays a listpack unless it has more than hash-max-listpack-entries
  fields (long values are not checked); hashtable form: a listpack if it has at most that
  many fields and no field or value is longer than hash-max-listpack-value.
- set, intset form: stays an intset unless it has more than set-max-intset-entries
  members; hashtable form: an intset if it has at most that many, all integers.
- sorted set, listpack form: stays a listpack unless it has more than
  zset-max-listpack-entries members; skiplist form: a listpack if it has at most that
  many and no member is longer than zset-max-listpack-value.
- list: always a quicklist.

So each aggregate's state names its encoding at DUMP time, and its loader takes the
keyspace's EncodingLimits. An empty aggregate is a bad payload, as in Redis (which never
stores one).
"""

import math
import struct
import zlib
from collections import deque

from ..resp import RedisError, string2ll
from . import type_name
from .hash import Hash
from .list import List
from .set import Set
from .zset import ZSet

# Payload: DUMP_VERSION (1 byte), the tagged value, CRC32 of all that (4 bytes, LE).
# Tagged value: one tag byte, then
#   b's' bytes: u32 length + data        b'i' int: u32 length + decimal ASCII
#   b'f' float: IEEE-754 double (LE)     b'n' None
#   b'l' list, b't' tuple, b'q' deque, b'e' set, b'z' frozenset: u32 count + items
#   b'h' dict: u32 count + key/value pairs
#   b'o' registered class: name (as b's') + its state (tagged value)

DUMP_VERSION = 1
_U32 = struct.Struct('<I')
_F64 = struct.Struct('<d')
_SEQ_TAGS = {list: b'l', tuple: b't', deque: b'q', set: b'e', frozenset: b'z'}
_SEQ_TYPES = {v: k for k, v in _SEQ_TAGS.items()}

# class -> (name, to_state, from_state) and name -> class, for type families' values.
_DUMP_CLASSES = {}
_DUMP_NAMES = {}


def register_dump(cls, name, to_state, from_state):
    """Let DUMP/RESTORE handle `cls`: to_state(value) returns plain data (bytes, int,
    float, None, list, tuple, dict, set, deque) and from_state(state, limits) rebuilds it
    under the keyspace's EncodingLimits, raising ValueError for a state it cannot use."""
    _DUMP_CLASSES[cls] = (name.encode(), to_state, from_state)
    _DUMP_NAMES[name.encode()] = (cls, from_state)


def _encode(value, out):
    t = type(value)
    if t is bytes:
        out += b's' + _U32.pack(len(value)) + value
    elif t is int:
        digits = b'%d' % value
        out += b'i' + _U32.pack(len(digits)) + digits
    elif t is float:
        out += b'f' + _F64.pack(value)
    elif value is None:
        out += b'n'
    elif t in _SEQ_TAGS:
        out += _SEQ_TAGS[t] + _U32.pack(len(value))
        for item in value:
            _encode(item, out)
    elif t is dict:
        out += b'h' + _U32.pack(len(value))
        for k, v in value.items():
            _encode(k, out)
            _encode(v, out)
    elif t in _DUMP_CLASSES:
        name, to_state, _ = _DUMP_CLASSES[t]
        out += b'o'
        _encode(name, out)
        _encode(to_state(value), out)
    else:
        raise RedisError(f'ERR DUMP is not supported for values of type {type_name(value)}')


class _Reader:
    __slots__ = ('data', 'pos')

    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, n):
        if self.pos + n > len(self.data):
            raise ValueError('truncated')
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def u32(self):
        return _U32.unpack(self.take(4))[0]

    def value(self, limits):
        tag = self.take(1)
        if tag == b's':
            return bytes(self.take(self.u32()))
        if tag == b'i':
            return int(self.take(self.u32()))
        if tag == b'f':
            return _F64.unpack(self.take(8))[0]
        if tag == b'n':
            return None
        if tag in _SEQ_TYPES:
            n = self.u32()
            return _SEQ_TYPES[tag](self.value(limits) for _ in range(n))
        if tag == b'h':
            n = self.u32()
            out = {}
            for _ in range(n):
                k = self.value(limits)
                out[k] = self.value(limits)
            return out
        if tag == b'o':
            cls, from_state = _DUMP_NAMES[self.value(limits)]
            return from_state(self.value(limits), limits)
        raise ValueError('unknown tag')


def dump_value(value):
    out = bytearray([DUMP_VERSION])
    _encode(value, out)
    out += _U32.pack(zlib.crc32(out))
    return bytes(out)


def verify_payload(payload):
    """verifyDumpPayload: known version and matching checksum."""
    if len(payload) < 5 or payload[0] != DUMP_VERSION:
        return False
    return _U32.unpack(payload[-4:])[0] == zlib.crc32(payload[:-4])


def load_value(payload, limits):
    """The value in a verified payload, or None when it does not decode. `limits` (the
    keyspace's EncodingLimits) decide a restored aggregate's encoding. Only a value a key
    can hold comes out (a string or a registered type): a payload made to hold a bare
    Python list or number, or nested too deep to decode, is not one."""
    reader = _Reader(payload[1:-4])
    try:
        value = reader.value(limits)
    except (ValueError, KeyError, TypeError, struct.error, RecursionError):
        return None
    if reader.pos != len(reader.data):
        return None
    if type(value) is not bytes and type(value) not in _DUMP_CLASSES:
        return None
    return value


# -- the aggregate types ------------------------------------------------------------------
# State: (encoding name, flat items). Loaders check the shape strictly: a payload that
# decodes to anything else is 'Bad data format', never a half-built value.

_LISTPACK, _HASHTABLE, _INTSET, _SKIPLIST = b'listpack', b'hashtable', b'intset', b'skiplist'


def _flat_bytes(items, step):
    """A non-empty list of bytes whose length is a multiple of `step`."""
    if type(items) is not list or not items or len(items) % step:
        raise ValueError('bad items')
    for item in items:
        if type(item) is not bytes:
            raise ValueError('bad item')
    return items


def _encoded(state, *names):
    if type(state) is not tuple or len(state) != 2 or state[0] not in names:
        raise ValueError('bad state')
    return state[0], state[1]


def _hash_state(h):
    flat = []
    for field, value in h.items():
        flat.append(field)
        flat.append(value)
    return (_LISTPACK if h.listpack else _HASHTABLE, flat)


def _hash_load(state, limits):
    enc, flat = _encoded(state, _LISTPACK, _HASHTABLE)
    _flat_bytes(flat, 2)
    h = Hash()
    it = iter(flat)
    for field, value in zip(it, it):
        if field in h:
            raise ValueError('duplicate field')
        h[field] = value
    if enc == _LISTPACK:
        h.listpack = len(h) <= limits.hash_entries
    else:
        cap = limits.hash_value
        h.listpack = len(h) <= limits.hash_entries and all(len(s) <= cap for s in flat)
    return h


def _list_load(state, limits):
    return List(_flat_bytes(state, 1))


def _set_state(s):
    return (_INTSET if s.intset else _HASHTABLE, s.members())


def _set_load(state, limits):
    enc, members = _encoded(state, _INTSET, _HASHTABLE)
    _flat_bytes(members, 1)
    s = Set(members)
    if len(s) != len(members):
        raise ValueError('duplicate member')
    all_ints = all(string2ll(m) is not None for m in members)
    if enc == _INTSET:
        if not all_ints:
            raise ValueError('intset member is not an integer')
        s.intset = len(s) <= limits.set_intset_entries
    else:
        s.intset = all_ints and len(s) <= limits.set_intset_entries
    return s


def _zset_state(z):
    flat = []
    for score, member in z.order:
        flat.append(member)
        flat.append(score)
    return (_LISTPACK if z.listpack else _SKIPLIST, flat)


def _zset_load(state, limits):
    enc, flat = _encoded(state, _LISTPACK, _SKIPLIST)
    if type(flat) is not list or not flat or len(flat) % 2:
        raise ValueError('bad items')
    pairs = list(zip(flat[::2], flat[1::2]))
    for member, score in pairs:
        if type(member) is not bytes or type(score) is not float or math.isnan(score):
            raise ValueError('bad element')
    if enc == _LISTPACK:
        listpack = len(pairs) <= limits.zset_entries
    else:
        cap = limits.zset_value
        listpack = len(pairs) <= limits.zset_entries and all(len(m) <= cap for m, _ in pairs)
    z = ZSet()
    for member, score in pairs:
        if listpack and score == 0:
            score = 0.0  # a listpack stores -0.0 as the integer 0 (zzlInsertAt)
        if not z.add(member, score):
            raise ValueError('duplicate member')
    z.listpack = listpack
    return z


register_dump(Hash, 'hash', _hash_state, _hash_load)
register_dump(List, 'list', list, _list_load)
register_dump(Set, 'set', _set_state, _set_load)
register_dump(ZSet, 'zset', _zset_state, _zset_load)
