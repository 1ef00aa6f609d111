"""The DUMP/RESTORE payload codec.

DUMP uses a format of our own, not RDB: a version byte, a tagged encoding of the value and
a CRC32. It only has to round-trip through our RESTORE, and its decoder builds only plain
data types (never pickle), so a RESTORE payload cannot run code. Type modules register
their classes with `register_dump`.
"""

import struct
import zlib
from collections import deque

from ..resp import RedisError
from . import type_name

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
_SEQ_TYPES = {v[0]: k for k, v in _SEQ_TAGS.items()}

# class -> (name, to_state, from_state) and name -> class, for type families' values.
_DUMP_CLASSES = {}
_DUMP_NAMES = {}


def register_dump(cls, name, to_state, from_state):
    """Let DUMP/RESTORE handle `cls`: to_state(value) returns plain data (bytes, int,
    float, None, list, tuple, dict, set, deque) and from_state(state) rebuilds it."""
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

    def value(self):
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
            return _SEQ_TYPES[tag](self.value() for _ in range(n))
        if tag == b'h':
            n = self.u32()
            out = {}
            for _ in range(n):
                k = self.value()
                out[k] = self.value()
            return out
        if tag == b'o':
            cls, from_state = _DUMP_NAMES[self.value()]
            return from_state(self.value())
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


def load_value(payload):
    """The value in a verified payload, or None when it does not decode."""
    reader = _Reader(payload[1:-4])
    try:
        value = reader.value()
    except (ValueError, KeyError, TypeError, struct.error):
        return None
    if reader.pos != len(reader.data) or value is None:
        return None
    return value
