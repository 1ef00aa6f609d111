"""DEBUG's subcommands that describe how values are stored (src/debug.c): OBJECT, SDSLEN,
LISTPACK, QUICKLIST, QUICKLIST-PACKED-THRESHOLD, HTSTATS and HTSTATS-KEY.

This server does not keep Redis's C structures, so these answer from what Redis's would
be for the same data: the encoding names of the value-type registry (store/types/), a
quicklist's node count derived from `list-max-listpack-size` and the element sizes, a
dict's table size from its element count (Redis's dicts grow to the next power of two
when full, so a table that only grew has the smallest power of two >= its size, 4 at
least) and its chains from hashing the members into that table. No table is ever shown
rehashing: Python's dicts rehash in one step. Replies, errors and formats are Redis's;
LISTPACK and QUICKLIST print the structure on stdout, as Redis does (lpRepr,
quicklistRepr), in a shorter form.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from typing import Any

from ..config_values import ConfigError, memtoull
from ..resp import RedisError, Verbatim, string2ll
from ..types import encoding_of
from ..types.hash import Hash
from ..types.list import List
from ..types.set import Set
from ..types.strenc import value_encoding
from ..types.zset import ZSet
from .object_cmd import OBJ_SHARED_INTEGERS, OBJ_SHARED_REFCOUNT

E_NO_SUCH_KEY = 'ERR no such key'
LRU_CLOCK_MAX = (1 << 24) - 1
PACKED_THRESHOLD_DEFAULT = 1 << 30  # quicklist.c packed_threshold: 1GB
LISTPACK_HEADER = 7  # total bytes (4), element count (2), end byte (1)
SIZE_SAFETY_LIMIT = 8192  # quicklist.c: a node of a list with a positive fill stays below
FILL_BYTES = (4096, 8192, 16384, 32768, 65536)  # optimization_level[-fill - 1]


def lookup(c: Any, key: bytes) -> Any:
    """objectCommandLookupOrReply: the live value (no access recorded) or 'no such key'."""
    value = c.ks.lookup_notouch(c.db, key)
    if value is None:
        raise RedisError(E_NO_SUCH_KEY)
    return value


# -- sizes of Redis's encodings ---------------------------------------------------------


def lp_entry_size(element: bytes) -> int:
    """Bytes a listpack entry takes (lpEncodeBacklen and the encodings of listpack.c): an
    integer in the smallest of its integer encodings, a string with its length header,
    plus the back-length."""
    n = string2ll(element) if len(element) <= 20 else None
    if n is not None:
        if 0 <= n <= 127:
            size = 1
        elif -4096 <= n <= 4095:
            size = 2
        elif -(2**15) <= n < 2**15:
            size = 3
        elif -(2**23) <= n < 2**23:
            size = 4
        elif -(2**31) <= n < 2**31:
            size = 5
        else:
            size = 9
    else:
        length = len(element)
        size = length + (1 if length < 64 else 2 if length < 4096 else 5)
    return size + (1 if size < 128 else 2 if size < 16384 else 3 if size < 2097152 else 4)


def quicklist_nodes(value: List, fill: int, packed_threshold: int) -> list[int]:
    """The byte sizes of the nodes Redis's quicklist would hold `value` in, pushed at the
    tail one by one: an element of at least `packed_threshold` bytes is a plain node of
    its own; a packed node takes elements while it stays within `fill` (a count when
    positive, a byte limit from FILL_BYTES when negative)."""
    nodes: list[int] = []
    size = count = 0
    limit = FILL_BYTES[min(-fill, len(FILL_BYTES)) - 1] if fill < 0 else SIZE_SAFETY_LIMIT
    for element in value:
        if len(element) >= packed_threshold:
            if count:
                nodes.append(size)
                size = count = 0
            nodes.append(len(element))
            continue
        entry = lp_entry_size(element)
        if count and (size + entry > limit if fill < 0 else count >= fill or size + entry > limit):
            nodes.append(size)
            size = count = 0
        if not count:
            size = LISTPACK_HEADER
        size += entry
        count += 1
    if count:
        nodes.append(size)
    return nodes


def _rdb_len(n: int) -> int:
    """Bytes of an RDB length prefix (rdbSaveLen)."""
    return 1 if n < 64 else 2 if n < 16384 else 5 if n < 2**32 else 9


def _rdb_string(s: bytes | bytearray) -> int:
    """Bytes rdbSaveRawString writes for `s` (uncompressed): an integer of up to 32 bits
    in 2, 3 or 5 bytes, else its length prefix and bytes."""
    n = string2ll(bytes(s)) if len(s) <= 11 else None
    if n is not None and -(2**31) <= n < 2**31:
        return 2 if -128 <= n < 128 else 3 if -32768 <= n < 32768 else 5
    return _rdb_len(len(s)) + len(s)


def serialized_length(c: Any, value: Any) -> int:
    """About what rdbSavedObjectLen gives (without LZF compression): a string as
    rdbSaveStringObject writes it, a list as its quicklist nodes (each a listpack blob or a
    plain element), a listpack-encoded hash or sorted set as its blob, other aggregates
    as their elements."""
    if type(value) is bytes or type(value) is bytearray:
        return _rdb_string(value)
    if type(value) is List:
        fill = c.server.config['list-max-listpack-size']
        nodes = quicklist_nodes(value, fill, c.server.quicklist_packed_threshold)
        return _rdb_len(len(nodes)) + sum(1 + _rdb_len(n) + n for n in nodes)
    if encoding_of(value) == 'listpack':
        # a hash's (field, value: bytes) or a sorted set's (member, score: float)
        pairs: Iterable[tuple[bytes, Any]] = (
            value.items() if type(value) is Hash else value.scores.items()
        )
        size = LISTPACK_HEADER
        for a, b in pairs:
            size += lp_entry_size(a) + lp_entry_size(b if type(b) is bytes else b'%.17g' % b)
        return _rdb_len(size) + size
    if type(value) is Set and value.intset:
        ints = [int(m) for m in value]
        low, high = min(ints, default=0), max(ints, default=0)
        width = 2 if max(-low - 1, high) < 2**15 else 4 if max(-low - 1, high) < 2**31 else 8
        return _rdb_len(8 + width * len(ints)) + 8 + width * len(ints)
    if type(value) is Set:
        return _rdb_len(len(value)) + sum(_rdb_string(m) for m in value)
    if type(value) is Hash:
        pairs = value.items()
        return _rdb_len(len(value)) + sum(_rdb_string(a) + _rdb_string(b) for a, b in pairs)
    if type(value) is ZSet:
        return _rdb_len(len(value)) + sum(_rdb_string(m) + 8 for m in value.scores)
    return 1


# -- DEBUG OBJECT ----------------------------------------------------------------------


def _address(c: Any, key: bytes, value: Any) -> int:
    """The 'Value at:' address. An aggregate is one object changed in place, so its id is
    the address. A string is immutable bytes here, replaced by each write, where Redis
    changes an unshared integer in place (INCR) or its sds (APPEND, SETRANGE): its
    address is its key's slot in the database, stable while the key lives."""
    if type(value) is bytes or type(value) is bytearray:
        return (hash((c.db, key)) & 0xFFFFFFFFFF) << 4 | 0x7F0000000000
    return id(value)


def _quicklist_extra(c: Any, value: List) -> str:
    config = c.server.config
    fill = config['list-max-listpack-size']
    nodes = quicklist_nodes(value, fill, c.server.quicklist_packed_threshold)
    count = max(len(nodes), 1)
    return (
        f' ql_nodes:{len(nodes)} ql_avg_node:{len(value) / count:.2f}'
        f' ql_listpack_max:{fill} ql_compressed:{int(config["list-compress-depth"] != 0)}'
        f' ql_uncompressed_size:{sum(nodes)}'
    )


def debug_object(c: Any, key: bytes) -> str:
    """DEBUG OBJECT: the status line Redis formats for a value."""
    value = c.ks.materialize(c.db, key)
    if value is None:
        raise RedisError(E_NO_SUCH_KEY)
    enc = value_encoding(c.ks, c.db, key, value)
    refcount = 1
    if type(value) is bytes and enc == 'int' and 0 <= int(value) < OBJ_SHARED_INTEGERS:
        refcount = OBJ_SHARED_REFCOUNT
    idle_s = c.ks.idle_ms(c.db, key) // 1000
    lru = (int(time.time()) - idle_s) & LRU_CLOCK_MAX
    extra = _quicklist_extra(c, value) if type(value) is List else ''
    return (
        f'Value at:{_address(c, key, value):#x} refcount:{refcount} encoding:{enc} '
        f'serializedlength:{serialized_length(c, value)} lru:{lru} '
        f'lru_seconds_idle:{idle_s}{extra}'
    )


# -- the rest ----------------------------------------------------------------------------


def debug_sdslen(c: Any, key: bytes) -> str:
    """DEBUG SDSLEN: a raw or embstr string's sds lengths and allocations, as a
    redis-server built with libc malloc reports them (glibc's malloc_usable_size)."""
    value = c.ks.materialize(c.db, key)
    if value is None:
        raise RedisError(E_NO_SUCH_KEY)
    enc = value_encoding(c.ks, c.db, key, value) if type(value) in (bytes, bytearray) else None
    if enc is None or enc == 'int':
        raise RedisError('ERR Not an sds encoded string.')
    if enc == 'embstr':  # robj (16 bytes), sdshdr8 and the string in one allocation
        val_alloc = _usable(16 + 3 + len(value) + 1) - 16
    else:
        val_alloc = _usable(_sds_header(len(value)) + len(value) + 1)
    key_alloc = _usable(_sds_header(len(key)) + len(key) + 1)
    return (
        f'key_sds_len:{len(key)}, key_sds_avail:0, key_zmalloc: {key_alloc}, '
        f'val_sds_len:{len(value)}, val_sds_avail:0, val_zmalloc: {val_alloc}'
    )


def _sds_header(length: int) -> int:
    """sdsReqType's header size: sdshdr5 (1 byte) below 32, then 8, 16, 32, 64."""
    if length < 32:
        return 1
    return 3 if length < 256 else 5 if length < 65536 else 9 if length < 2**32 else 17


def _usable(size: int) -> int:
    """glibc's malloc_usable_size for a request of `size` bytes (16-byte chunks with an
    8-byte header, 32 bytes at least)."""
    return max(32, (size + 8 + 15) & -16) - 8


def debug_listpack(c: Any, key: bytes) -> str:
    value = lookup(c, key)
    if encoding_of(value) != 'listpack':
        raise RedisError('ERR Not a listpack encoded object.')
    items = list(value.items()) if type(value) is Hash else list(value.scores.items())
    print(f'{{listpack {len(items) * 2} entries}} {items!r}', file=sys.stdout, flush=True)
    return 'Listpack structure printed on stdout'


def debug_quicklist(c: Any, key: bytes, full: int) -> str:
    value = lookup(c, key)
    if type(value) is not List:
        raise RedisError('ERR Not a quicklist encoded object.')
    nodes = quicklist_nodes(
        value, c.server.config['list-max-listpack-size'], c.server.quicklist_packed_threshold
    )
    print(f'{{quicklist count {len(value)} nodes {len(nodes)}}} sizes {nodes}', flush=True)
    if full:
        print(list(value), flush=True)
    return 'Quicklist structure printed on stdout'


def set_packed_threshold(server: Any, arg: bytes) -> str:
    """DEBUG QUICKLIST-PACKED-THRESHOLD <size>: a memory value up to just below 4GB; 0
    restores the 1GB default (quicklistisSetPackedThreshold)."""
    try:
        size = memtoull(arg.decode('latin-1'))
    except ConfigError:
        size = -1
    if size < 0 or size > (1 << 32) - (1 << 20):
        raise RedisError('ERR argument must be a memory value bigger than 1 and smaller than 4gb')
    server.quicklist_packed_threshold = size or PACKED_THRESHOLD_DEFAULT
    return 'OK'


def _table_size(n: int) -> int:
    """_dictNextExp: the table a dict of n elements grew to."""
    size = 4
    while size < n:
        size <<= 1
    return size


def dict_stats(members: Any, n: int, label: str = 'main hash table') -> str:
    """_dictGetStatsHt for a table of `n` members, its slots from hashing them."""
    if not n:
        return f'Hash table 0 stats ({label}):\nNo stats available for empty dictionaries\n'
    size = _table_size(n)
    mask = size - 1
    chains: dict[int, int] = {}
    for m in members:
        slot = hash(m) & mask
        chains[slot] = chains.get(slot, 0) + 1
    slots = len(chains)
    vector = [0] * 50
    vector[0] = size - slots
    for length in chains.values():
        vector[min(length, 49)] += 1
    out = [
        f'Hash table 0 stats ({label}):\n'
        f' table size: {size}\n'
        f' number of elements: {n}\n'
        f' different slots: {slots}\n'
        f' max chain length: {max(chains.values())}\n'
        f' avg chain length (counted): {n / slots:.2f}\n'
        f' avg chain length (computed): {n / slots:.2f}\n'
        f' Chain length distribution:\n'
    ]
    for i, count in enumerate(vector[:49]):
        if count:
            out.append(f'   {i}: {count} ({count / size * 100:.2f}%)\n')
    return ''.join(out)


def debug_htstats(c: Any, arg: bytes) -> Verbatim:
    """DEBUG HTSTATS <dbid>: the stats of a database's key table and expires table."""
    dbid = string2ll(arg)
    if dbid is None:
        raise RedisError('ERR value is not an integer or out of range')
    ks = c.ks
    if not 0 <= dbid < ks.databases:
        raise RedisError('ERR Out of range database')
    keys = [k for s in ks.shards for k in s.keys(dbid)]
    volatile = [k for s in ks.shards for k in s.deadlines(dbid)]
    text = (
        '[Dictionary HT]\n'
        + dict_stats(keys, len(keys))
        + '[Expires HT]\n'
        + dict_stats(volatile, len(volatile))
    )
    return Verbatim(text.encode())


def debug_htstats_key(c: Any, key: bytes) -> Verbatim:
    """DEBUG HTSTATS-KEY <key>: the stats of a value kept in a hash table (a hashtable
    set or hash, a skiplist sorted set's dict)."""
    value = lookup(c, key)
    enc = encoding_of(value)
    if type(value) is ZSet and enc == 'skiplist':
        members: Any = value.scores
    elif type(value) in (Set, Hash) and enc == 'hashtable':
        members = value
    else:
        raise RedisError(
            'ERR The value stored at the specified key is not represented using an hash table'
        )
    return Verbatim(dict_stats(members, len(members)).encode())
