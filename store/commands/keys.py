"""Keyspace (GENERIC) commands: DEL, UNLINK, EXISTS, TYPE, TOUCH, KEYS, SCAN, RANDOMKEY,
RENAME, RENAMENX, MOVE, COPY, OBJECT, DUMP, RESTORE.

Why it is built this way:

* Commands are ports of Redis 7.0's db.c / object.c / cluster.c handlers, keeping their
  order of checks (it decides which error a client sees) and their keyspace events, in
  Redis's order: a key created by dbAdd raises `new` before the command's own event
  (rename_from/rename_to, move_from/move_to, copy_to, restore).
* Values are plain Python objects owned by the type families. This module knows them only
  through small tables: `TYPE_NAMES` (TYPE, SCAN TYPE), `encoding_of` (OBJECT ENCODING) and
  the DUMP codec registry (`register_dump`), so a family adds its type in one line.
* SCAN has a stateless cursor (see `scan`): it names a shard and a position in a fixed
  order of that shard's keys (by hash), so the guarantee does not depend on any per-client
  iterator surviving on the server.
* DUMP uses a format of our own, not RDB: a version byte, a tagged encoding of the value
  and a CRC32. It only has to round-trip through our RESTORE, and its decoder builds only
  plain data types (never pickle), so a RESTORE payload cannot run code.
"""

import copy
import re
import struct
import zlib
from bisect import bisect_left
from collections import deque

from .. import events
from ..args import SYNTAX, int_arg
from ..command_table import Command, subcommand
from ..keyspace import now_ms
from ..pubsub.glob import compile_glob
from ..resp import OK, RedisError, string2ll

LLONG_MAX = 2**63 - 1
INT_MIN, INT_MAX = -2**31, 2**31 - 1
OBJ_SHARED_REFCOUNT = INT_MAX
OBJ_SHARED_INTEGERS = 10000

E_NO_SUCH_KEY = 'ERR no such key'
E_SAME_OBJECT = 'ERR source and destination objects are the same'
E_BUSYKEY = 'BUSYKEY Target key name already exists.'
E_BAD_PAYLOAD = 'ERR DUMP payload version or checksum are wrong'
E_BAD_FORMAT = 'ERR Bad data format'


# -- value types ------------------------------------------------------------------------

# Python type of a stored value -> the name TYPE reports. Type families add their classes
# (e.g. TYPE_NAMES[Stream] = 'stream'); `type_name` falls back to a `redis_type`
# attribute and to the builtin containers.
TYPE_NAMES = {bytes: 'string'}
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


_BUILTIN_ENCODINGS = ((dict, 'hashtable'), (list, 'quicklist'), (deque, 'quicklist'),
                      (set, 'hashtable'))


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


# -- DEL, UNLINK, EXISTS, TYPE, TOUCH ---------------------------------------------------

def delete(c, args):
    ks, db = c.ks, c.db
    n = 0
    for key in args[1:]:
        if ks.delete(db, key):
            ks.notify(events.GENERIC, b'del', db, key)
            n += 1
    return n


def exists(c, args):
    ks, db = c.ks, c.db
    return sum(1 for key in args[1:] if ks.read(db, key) is not None)


def type_(c, args):
    return type_name(c.ks.read(c.db, args[1]))


def touch(c, args):
    return exists(c, args)


# -- KEYS, SCAN, RANDOMKEY --------------------------------------------------------------

def keys(c, args):
    """Every live key matching the pattern. Expired keys are skipped, not deleted, as in
    Redis 7.0's keysCommand."""
    pattern = args[1]
    match = None if pattern == b'*' else compile_glob(pattern).match
    db = c.db
    now = now_ms()
    out = []
    for s in c.ks.shards:
        exp = s.expires[db]
        for key in s.data[db]:
            if match is not None and not match(key):
                continue
            if exp and exp.get(key, now) < now:
                continue
            out.append(key)
    return out


def parse_cursor(b):
    """parseScanCursorOrReply: C's strtoul(s, 10) into an unsigned 64-bit long, with
    nothing left over: '' is 0, a '+' or '-' sign is accepted ('-1' wraps around), spaces
    and overflow are errors."""
    if not b:
        return 0
    m = _CURSOR.fullmatch(b)
    if m is None or int(m.group(2)) >= 2**64:
        raise RedisError('ERR invalid cursor')
    v = int(m.group(2))
    return (-v if m.group(1) == b'-' else v) % 2**64


_CURSOR = re.compile(rb'([+-]?)([0-9]+)')


POS_BITS = 56                       # a cursor is shard << 56 | position in the shard
POS_MASK = (1 << POS_BITS) - 1


class ScanViews:
    """Disposable per-keyspace cache of each (db, shard)'s keys sorted by hash.

    A cursor is `shard << 56 | h`: continue with the keys of `shard` whose 56-bit hash is
    >= h. Hash order is fixed for the life of the process, so the cursor alone says where
    an iteration is; the sorted view is only a cache to find that place in O(log n).
    A view must never be older than the start of any iteration using it, or a key added
    between the view and the iteration start could be missed; so every SCAN 0 on a db starts
    a new epoch and views from older epochs are rebuilt on use. Any view rebuilt at any
    later time is correct, which is why the cache may be dropped freely.
    """

    def __init__(self):
        self.epoch = {}         # db -> epoch number
        self.views = {}         # (db, shard) -> (epoch, hashes, keys)

    def start(self, db):
        self.epoch[db] = self.epoch.get(db, 0) + 1

    def get(self, ks, db, i):
        epoch = self.epoch.get(db, 0)
        view = self.views.get((db, i))
        if view is None or view[0] != epoch:
            pairs = sorted([(hash(k) & POS_MASK, k) for k in ks.shards[i].data[db]])
            view = self.views[(db, i)] = (epoch, [h for h, _ in pairs], [k for _, k in pairs])
        return view[1], view[2]

    def drop(self, db, i):
        self.views.pop((db, i), None)


def scan(c, args):
    """SCAN cursor [MATCH pattern] [COUNT count] [TYPE type].

    Guarantee: a full iteration (from cursor 0 until 0 comes back) returns every key that
    exists in the database during the whole iteration exactly once; keys created or deleted
    meanwhile may or may not be returned, and a key is never returned after it was deleted
    or expired. Several iterations may run at once. COUNT is the number of keys examined
    (before MATCH and TYPE filtering), so a call may return fewer keys, even none, with a
    nonzero cursor. Cursors are only meaningful to the server process that issued them.
    """
    cursor = parse_cursor(args[1])
    count, pattern, typename = 10, None, None
    i = 2
    while i < len(args):
        opt = args[i].lower()
        more = len(args) - i
        if opt == b'count' and more >= 2:
            count = int_arg(args[i + 1])
            if count < 1:
                raise SYNTAX
            i += 2
        elif opt == b'match' and more >= 2:
            pattern = args[i + 1]
            i += 2
        elif opt == b'type' and more >= 2:
            typename = args[i + 1].decode('latin-1').lower()
            i += 2
        else:
            raise SYNTAX

    ks, db = c.ks, c.db
    views = getattr(ks, 'scan_views', None)
    if views is None:
        views = ks.scan_views = ScanViews()
    if cursor == 0:
        views.start(db)
    shard, pos = cursor >> POS_BITS, cursor & POS_MASK
    nshards = len(ks.shards)
    examined = []
    while shard < nshards and len(examined) < count:
        hashes, names = views.get(ks, db, shard)
        lo = bisect_left(hashes, pos)
        hi = min(lo + count - len(examined), len(names))
        while 0 < hi < len(names) and hashes[hi] == hashes[hi - 1]:
            hi += 1             # never split keys of equal hash across two calls
        examined.extend(names[lo:hi])
        if hi < len(names):
            pos = hashes[hi]
            break
        views.drop(db, shard)
        shard, pos = shard + 1, 0
    next_cursor = 0 if shard >= nshards else shard << POS_BITS | pos

    match = None
    if pattern is not None and pattern != b'*':
        match = compile_glob(pattern).match
    found = []
    for key in examined:
        if key not in ks.shard_for(key).data[db]:
            continue
        if match is not None and not match(key):
            continue
        if typename is not None and type_name(ks.read(db, key)) != typename:
            continue
        if ks.lookup(db, key) is None:
            continue
        found.append(key)
    return [b'%d' % next_cursor, found]


def randomkey(c, args):
    return c.ks.random_key(c.db)


# -- RENAME, RENAMENX, MOVE, COPY -------------------------------------------------------

def rename_generic(c, args, nx):
    ks, db = c.ks, c.db
    src, dst = args[1], args[2]
    value = ks.lookup(db, src)
    if value is None:
        raise RedisError(E_NO_SUCH_KEY)
    if src == dst:
        return 0 if nx else OK
    if nx and ks.lookup(db, dst) is not None:
        return 0
    deadline = ks.deadline(db, src)
    ks.set(db, dst, value, deadline)            # replaces dst and its TTL, as dbDelete+dbAdd
    ks.notify(events.NEW, b'new', db, dst)
    ks.delete(db, src)
    ks.notify(events.GENERIC, b'rename_from', db, src)
    ks.notify(events.GENERIC, b'rename_to', db, dst)
    return 1 if nx else OK


def rename(c, args):
    return rename_generic(c, args, nx=False)


def renamenx(c, args):
    return rename_generic(c, args, nx=True)


def _db_index(c, b):
    """getIntFromObjectOrReply + selectDb: a 32-bit int, then the range check."""
    dbid = int_arg(b)
    if not INT_MIN <= dbid <= INT_MAX:
        raise RedisError('ERR value is out of range, value must between -2147483648 and '
                         '2147483647')
    if not 0 <= dbid < c.ks.databases:
        raise RedisError('ERR DB index is out of range')
    return dbid


def move(c, args):
    ks, src_db, key = c.ks, c.db, args[1]
    dst_db = _db_index(c, args[2])
    if dst_db == src_db:
        raise RedisError(E_SAME_OBJECT)
    value = ks.lookup(src_db, key)
    if value is None:
        return 0
    deadline = ks.deadline(src_db, key)
    if ks.lookup(dst_db, key) is not None:
        return 0
    ks.set(dst_db, key, value, deadline)
    ks.notify(events.NEW, b'new', dst_db, key)
    ks.delete(src_db, key)
    ks.notify(events.GENERIC, b'move_from', src_db, key)
    ks.notify(events.GENERIC, b'move_to', dst_db, key)
    return 1


def copy_(c, args):
    ks, db = c.ks, c.db
    src, dst = args[1], args[2]
    dst_db, replace = db, False
    i = 3
    while i < len(args):
        opt = args[i].lower()
        if opt == b'replace':
            replace = True
        elif opt == b'db' and len(args) - i - 1 >= 1:
            dst_db = _db_index(c, args[i + 1])
            i += 1
        else:
            raise SYNTAX
        i += 1
    if dst_db == db and src == dst:
        raise RedisError(E_SAME_OBJECT)
    value = ks.read(db, src)
    if value is None:
        return 0
    deadline = ks.deadline(db, src)
    if ks.lookup(dst_db, dst) is not None and not replace:
        return 0
    ks.set(dst_db, dst, copy_value(value), deadline)
    ks.notify(events.NEW, b'new', dst_db, dst)
    ks.notify(events.GENERIC, b'copy_to', dst_db, dst)
    return 1


# -- OBJECT -----------------------------------------------------------------------------

E_LFU_IDLE = ('ERR An LFU maxmemory policy is selected, idle time not tracked. Please note '
              'that when switching between policies at runtime LRU and LFU data will take '
              'some time to adjust.')
E_NOT_LFU = ('ERR An LFU maxmemory policy is not selected, access frequency not tracked. '
             'Please note that when switching between policies at runtime LRU and LFU data '
             'will take some time to adjust.')
LFU_INIT_VAL = 5

OBJECT_HELP = [
    'OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'ENCODING <key>',
    '    Return the kind of internal representation used in order to store the value',
    '    associated with a <key>.',
    'FREQ <key>',
    '    Return the access frequency index of the <key>. The returned integer is',
    '    proportional to the logarithm of the recent access frequency of the key.',
    'IDLETIME <key>',
    '    Return the idle time of the <key>, that is the approximated number of',
    '    seconds elapsed since the last access to the key.',
    'REFCOUNT <key>',
    '    Return the number of references of the value associated with the specified',
    '    <key>.',
    'HELP',
    '    Prints this help.',
]


def object_(c, args):
    return subcommand(OBJECT, c, args)


def _object_lookup(c, key):
    """objectCommandLookup: counts hits/misses but raises no keymiss event."""
    ks = c.ks
    value = ks.lookup(c.db, key)
    if value is None:
        ks.misses += 1
    else:
        ks.hits += 1
    return value


def _lfu(c):
    return 'lfu' in c.server.config['maxmemory-policy']


def object_encoding(c, args):
    value = _object_lookup(c, args[2])
    return None if value is None else encoding_of(value).encode()


def object_refcount(c, args):
    value = _object_lookup(c, args[2])
    if value is None:
        return None
    # Redis shares the objects of small integers 0..9999 (refcount INT_MAX) unless
    # maxmemory is set with an LRU/LFU policy (MAXMEMORY_FLAG_NO_SHARED_INTEGERS).
    cfg = c.server.config
    sharing = not (cfg['maxmemory'] and ('lru' in cfg['maxmemory-policy'] or _lfu(c)))
    if (type(value) is bytes and sharing and string_encoding(value) == 'int'
            and 0 <= int(value) < OBJ_SHARED_INTEGERS):
        return OBJ_SHARED_REFCOUNT
    return 1


def object_idletime(c, args):
    value = _object_lookup(c, args[2])
    if value is None:
        return None
    if _lfu(c):
        raise RedisError(E_LFU_IDLE)
    return 0            # access times are not tracked


def object_freq(c, args):
    value = _object_lookup(c, args[2])
    if value is None:
        return None
    if not _lfu(c):
        raise RedisError(E_NOT_LFU)
    return LFU_INIT_VAL     # access frequencies are not tracked


def object_help(c, args):
    return OBJECT_HELP


# -- DUMP, RESTORE ----------------------------------------------------------------------
#
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
        chunk = self.data[self.pos:self.pos + n]
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


def dump(c, args):
    value = c.ks.read(c.db, args[1])
    return None if value is None else dump_value(value)


def restore(c, args):
    """RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f], checks in Redis
    7.0's order: options, existing key, TTL, payload."""
    replace = absttl = False
    idle = freq = None
    i = 4
    while i < len(args):
        opt = args[i].lower()
        more = len(args) - i - 1
        if opt == b'replace':
            replace = True
        elif opt == b'absttl':
            absttl = True
        elif opt == b'idletime' and more >= 1 and freq is None:
            idle = int_arg(args[i + 1])
            if idle < 0:
                raise RedisError('ERR Invalid IDLETIME value, must be >= 0')
            i += 1
        elif opt == b'freq' and more >= 1 and idle is None:
            freq = int_arg(args[i + 1])
            if not 0 <= freq <= 255:
                raise RedisError('ERR Invalid FREQ value, must be >= 0 and <= 255')
            i += 1
        else:
            raise SYNTAX
        i += 1

    ks, db, key = c.ks, c.db, args[1]
    if not replace and ks.lookup(db, key) is not None:
        raise RedisError(E_BUSYKEY)
    ttl = int_arg(args[2])
    if ttl < 0:
        raise RedisError('ERR Invalid TTL value, must be >= 0')
    payload = args[3]
    if not verify_payload(payload):
        raise RedisError(E_BAD_PAYLOAD)
    value = load_value(payload)
    if value is None:
        raise RedisError(E_BAD_FORMAT)

    deleted = replace and ks.delete(db, key)
    if ttl and not absttl:
        ttl += now_ms()
        if ttl > LLONG_MAX:         # Redis adds in 64 bits: the sum wraps negative
            ttl -= 2**64
    if ttl and ttl <= now_ms():     # already expired: nothing to create
        if deleted:
            ks.notify(events.GENERIC, b'del', db, key)
        return OK
    ks.set(db, key, value, ttl or None)
    ks.notify(events.NEW, b'new', db, key)
    ks.notify(events.GENERIC, b'restore', db, key)
    return OK


# -- the table --------------------------------------------------------------------------

_MULTI = 'request_policy:multi_shard response_policy:agg_sum'
_SUB = dict(keys=(2, 2, 1), categories='@keyspace @read @slow')

OBJECT = Command(
    'object', object_, -2, categories='@slow', since='2.2.3',
    summary='A container for object introspection commands', subcommands=[
        Command('encoding', object_encoding, 3, 'readonly', **_SUB, tips='nondeterministic_output',
                since='2.2.3', summary='Inspect the internal encoding of a Redis object'),
        Command('freq', object_freq, 3, 'readonly', **_SUB, tips='nondeterministic_output',
                since='4.0.0',
                summary='Get the logarithmic access frequency counter of a Redis object'),
        Command('idletime', object_idletime, 3, 'readonly', **_SUB,
                tips='nondeterministic_output', since='2.2.3',
                summary='Get the time since a Redis object was last accessed'),
        Command('refcount', object_refcount, 3, 'readonly', **_SUB,
                tips='nondeterministic_output', since='2.2.3',
                summary='Get the number of references to the value of the key'),
        Command('help', object_help, 2, 'loading stale', categories='@keyspace @slow',
                since='6.2.0', summary='Show helpful text about the different subcommands'),
    ])

COMMANDS = [
    Command('del', delete, -2, 'write', (1, -1, 1), '@keyspace @write @slow', tips=_MULTI,
            summary='Delete a key'),
    Command('unlink', delete, -2, 'write fast', (1, -1, 1), '@keyspace @write @fast',
            tips=_MULTI, since='4.0.0',
            summary='Delete a key asynchronously in another thread. Otherwise it is just as '
                    'DEL, but non blocking.'),
    Command('exists', exists, -2, 'readonly fast', (1, -1, 1), '@keyspace @read @fast',
            tips=_MULTI, summary='Determine if a key exists'),
    Command('type', type_, 2, 'readonly fast', (1, 1, 1), '@keyspace @read @fast',
            summary='Determine the type stored at key'),
    Command('touch', touch, -2, 'readonly fast', (1, -1, 1), '@keyspace @read @fast',
            tips=_MULTI, since='3.2.1',
            summary='Alters the last access time of a key(s). Returns the number of existing '
                    'keys specified.'),
    Command('keys', keys, 2, 'readonly', (0, 0, 0), '@keyspace @read @slow @dangerous',
            tips='request_policy:all_shards nondeterministic_output_order',
            summary='Find all keys matching the given pattern'),
    Command('scan', scan, -2, 'readonly', (0, 0, 0), '@keyspace @read @slow',
            tips='nondeterministic_output request_policy:special', since='2.8.0',
            summary='Incrementally iterate the keys space'),
    Command('randomkey', randomkey, 1, 'readonly', (0, 0, 0), '@keyspace @read @slow',
            tips='request_policy:all_shards nondeterministic_output',
            summary='Return a random key from the keyspace'),
    Command('rename', rename, 3, 'write', (1, 2, 1), '@keyspace @write @slow',
            summary='Rename a key'),
    Command('renamenx', renamenx, 3, 'write fast', (1, 2, 1), '@keyspace @write @fast',
            summary='Rename a key, only if the new key does not exist'),
    Command('move', move, 3, 'write fast', (1, 1, 1), '@keyspace @write @fast',
            summary='Move a key to another database'),
    Command('copy', copy_, -3, 'write denyoom', (1, 2, 1), '@keyspace @write @slow',
            since='6.2.0', summary='Copy a key'),
    OBJECT,
    Command('dump', dump, 2, 'readonly', (1, 1, 1), '@keyspace @read @slow',
            tips='nondeterministic_output', since='2.6.0',
            summary='Return a serialized version of the value stored at the specified key.'),
    Command('restore', restore, -4, 'write denyoom', (1, 1, 1),
            '@keyspace @write @slow @dangerous', since='2.6.0',
            summary='Create a key using the provided serialized value, previously obtained '
                    'using DUMP.'),
]
