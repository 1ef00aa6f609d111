"""DEBUG DIGEST and DEBUG DIGEST-VALUE: Redis 7.0's dataset signature (src/debug.c), bit
for bit, so a digest taken here equals redis-server's for the same data. Redis's test
suite compares digests across servers (a master and its replica, a dataset before and
after a reload), so the algorithm, not just its properties, has to be Redis's.

The two primitives, over 20-byte SHA1 digests (held here as 160-bit ints):
- xor(d, data):  d ^= SHA1(data), commutative: the digest of unordered elements (set
  members, hash fields, the keys of a database).
- mix(d, data):  d = SHA1(d ^ SHA1(data)), order-sensitive: list elements, stream entries,
  and the pieces of one element (a hash field then its value).

A value's digest (xorObjectDigest) starts with mix(htonl(type)) (OBJ_STRING 0, LIST 1,
SET 2, ZSET 3, HASH 4, STREAM 6), then:
- string: mix(the bytes);
- list: mix(element) for each, head to tail;
- set: xor(member) for each;
- sorted set: per member, e = mix(mix(0, member), "%.17g" of the score), and xor(e)
  (which hashes e once more, as xorDigest hashes whatever it is given);
- hash: per field, e = mix(mix(0, field), value), and xor(e);
- stream: per live entry, mix("<ms>.<seq>"), then mix(field), mix(value) for each pair;
  consumer groups do not count.
A key with a TTL gets xor("!!expire!!"): whether it has one, not the time.

The dataset digest (computeDatasetDigest): for each non-empty database j in order,
final = mix(final, htonl(j)); then for each key, xor(final, mix(0, key) extended by the
value's digest), the 20 bytes of that digest hashed once more by xor. An empty dataset
gives forty zeros. Both read the dicts as they are: keys past their deadline but not yet
reaped count, as Redis's dictFind finds them.

Costs: two SHA1s per element for mix, one for xor (about 1 us per element); the command
walks everything and blocks the loop while it does, as in Redis.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..types.hash import Hash
from ..types.list import List
from ..types.packed import Packed
from ..types.set import Set
from ..types.stream import SEQ_MASK, Stream
from ..types.zset import ZSet

_sha1 = hashlib.sha1

# redisObject types (server.h)
OBJ_STRING, OBJ_LIST, OBJ_SET, OBJ_ZSET, OBJ_HASH, OBJ_STREAM = 0, 1, 2, 3, 4, 6
EXPIRE_MARK = int.from_bytes(_sha1(b'!!expire!!').digest(), 'big')
ZERO = b'0' * 40


def _h(data: bytes | bytearray) -> int:
    """SHA1(data) as an int, the operand of xorDigest."""
    return int.from_bytes(_sha1(data).digest(), 'big')


def _mix(d: int, data: bytes | bytearray) -> int:
    """mixDigest: SHA1(d ^ SHA1(data))."""
    return int.from_bytes(_sha1((d ^ _h(data)).to_bytes(20, 'big')).digest(), 'big')


def _score_text(score: float) -> bytes:
    """snprintf("%.17g") as Redis's digest formats a score (Python's %g is C's for
    finite values and spells the infinities as glibc does: inf, -inf)."""
    return b'%.17g' % score


def value_digest(d: int, value: Any, volatile: bool) -> int:
    """xorObjectDigest: `d` extended by the digest of `value` (and its TTL's mark)."""
    if type(value) is Packed:
        value = Packed.decode(value)  # decoded for the reading only, left packed
    t = type(value)
    if t is bytes or t is bytearray:
        d = _mix(_mix(d, OBJ_STRING.to_bytes(4, 'big')), value)
    elif t is List:
        d = _mix(d, OBJ_LIST.to_bytes(4, 'big'))
        for element in value:
            d = _mix(d, element)
    elif t is Set:
        d = _mix(d, OBJ_SET.to_bytes(4, 'big'))
        for member in value:
            d ^= _h(member)
    elif t is ZSet:
        d = _mix(d, OBJ_ZSET.to_bytes(4, 'big'))
        for member, score in value.scores.items():
            d ^= _h(_mix(_mix(0, member), _score_text(score)).to_bytes(20, 'big'))
    elif t is Hash:
        d = _mix(d, OBJ_HASH.to_bytes(4, 'big'))
        for field, v in value.items():
            d ^= _h(_mix(_mix(0, field), v).to_bytes(20, 'big'))
    elif t is Stream:
        d = _mix(d, OBJ_STREAM.to_bytes(4, 'big'))
        for i, fields in value.range(0, (1 << 128) - 1):
            d = _mix(d, b'%d.%d' % (i >> 64, i & SEQ_MASK))
            for piece in fields:
                d = _mix(d, piece)
    else:
        raise TypeError(f'no digest for {t.__name__}')
    if volatile:
        d ^= EXPIRE_MARK
    return d


def _hex(d: int) -> str:
    return '%040x' % d


def digest_values(ks: Any, db: int, keys: list[bytes]) -> list[str]:
    """DEBUG DIGEST-VALUE: each key's value digest (the key itself not mixed in), forty
    zeros for a missing key; status replies, as Redis sends them."""
    out = []
    for key in keys:
        s = ks.shard_for(key)
        value = s.values(db).get(key)
        if value is None:
            out.append(ZERO.decode())
        else:
            out.append(_hex(value_digest(0, value, key in s.deadlines(db))))
    return out


def dataset_digest(ks: Any) -> str:
    """DEBUG DIGEST: the digest of every database, as a status reply."""
    final = 0
    for db in range(ks.databases):
        mixed = False
        for s in ks.shards:
            data, expires = s.values(db), s.deadlines(db)
            if data and not mixed:
                final = _mix(final, db.to_bytes(4, 'big'))
                mixed = True
            for key, value in data.items():
                final ^= _h(value_digest(_mix(0, key), value, key in expires).to_bytes(20, 'big'))
    return _hex(final)
