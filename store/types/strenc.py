"""The encoding of a short string where Redis's differs from what its bytes suggest.

A string is stored as bytes and its OBJECT ENCODING derived from them (string_encoding in
store/types/__init__.py: int, embstr, raw), which is what Redis's tryObjectEncoding gives
every string SET, MSET, SETNX, ... store, and what a load from RDB gives. Two kinds of
writes leave another encoding in Redis:
- a string changed in place (APPEND or SETRANGE on an existing key, SETBIT, BITFIELD,
  PFADD, PFCOUNT's cache) or made as a buffer (SETRANGE, SETBIT or BITFIELD on a new key,
  BITOP's result, a new HLL) is a raw sds, whatever its length and digits;
- INCRBYFLOAT stores its result with createStringObject: embstr up to 44 bytes, never int.
Past 44 bytes the bytes say raw anyway, so only short strings need remembering.

`mark(ks, db, key, enc)` records, after such a write, the stored bytes object and the
encoding Redis gives it; `encoding_at` answers with the mark while the key still holds
that very object. Any later write stores another object (bytes are immutable), so a mark
goes stale by itself and nothing on SET's path has to clear it: stale marks are swept
when the table has doubled since the last sweep, so it stays within twice the number of
live marked keys (plus 1024). A key renamed, moved or copied keeps its bytes but loses
its mark (derived again), where Redis keeps the raw sds: a known difference.

Strings of one byte are the exception: CPython keeps a single bytes object for each, so a
later write of the same string (SET k 0, a RESTORE) would store the very object the mark
names. A one-byte string is marked on a copy of its own, made with int.to_bytes (which
does not hand out the shared one), put in the key's place. The empty string, one shared
object too of which no copy can be made, is not marked: it reads embstr, as a new one does.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

from . import encoding_of, string_encoding

EMBSTR_MAX = 44  # OBJ_ENCODING_EMBSTR_SIZE_LIMIT

Marks = dict[tuple[int, bytes], tuple[bytes, str]]
_MARKS: WeakKeyDictionary[Any, Marks] = WeakKeyDictionary()
_SWEEP_AT: WeakKeyDictionary[Any, int] = WeakKeyDictionary()


def _stored(ks: Any, db: int, key: bytes) -> Any:
    return ks.shard_for(key).values(db).get(key)


def mark(ks: Any, db: int, key: bytes, enc: str) -> None:
    """The string just stored under `key` has Redis encoding `enc` ('raw', 'embstr')."""
    value = _stored(ks, db, key)
    if type(value) is not bytes or len(value) > EMBSTR_MAX:
        return  # long: the bytes say raw already (a bytearray is always long)
    if string_encoding(value) == enc:
        return
    if not value:
        return
    if len(value) == 1:  # the shared one-byte object: mark a copy of its own instead
        value = value[0].to_bytes(1, 'big')
        ks.shard_for(key).replace(db, key, value)
    marks = _MARKS.get(ks)
    if marks is None:
        marks = _MARKS[ks] = {}
    marks[db, key] = (value, enc)
    if len(marks) > _SWEEP_AT.get(ks, 1024):
        for k in [k for k, (v, _) in marks.items() if _stored(ks, k[0], k[1]) is not v]:
            del marks[k]
        _SWEEP_AT[ks] = 2 * len(marks) + 1024


def encoding_at(ks: Any, db: int, key: bytes, value: bytes | bytearray) -> str:
    """OBJECT ENCODING of the string `value` stored under `key`."""
    marks = _MARKS.get(ks)
    if marks:
        m = marks.get((db, key))
        if m is not None and m[0] is value:
            return m[1]
    return string_encoding(value) if type(value) is bytes else 'raw'  # a bytearray: raw


def value_encoding(ks: Any, db: int, key: bytes, value: Any) -> str:
    """OBJECT ENCODING of the value stored under `key`, of any type."""
    if type(value) is bytes or type(value) is bytearray:
        return encoding_at(ks, db, key, value)
    return encoding_of(value)
