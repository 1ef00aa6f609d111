"""Reading a whole RDB file (rdb.c's rdbLoadRio): `RdbLoader` walks the records of a file
held in memory (ours or redis-server's, versions 1 to 10) and yields them in file order,
keys in batches; each value is read by rdb_values.ValueReader. Also the decoder of values
left packed (`unpack`, types/packed.py's `decode`).

It skips empty aggregates as Redis does (counted, the first 10 keys named, for the load's
log lines), and reports any corruption as RdbError naming the byte offset, never as
another exception and never with a half-built value. Given Redis's integrity checks
(`integrity`: payload_check.check_payload), a value the codec refuses is checked as
rdbLoadObject checks it, and under `deep` (sanitize-dump-payload yes) every aggregate is:
a failed check is RdbCorrupt, with rdb.c's line and message, which ends the start-up as
rdbReportCorruptRDB does. The deep walk costs a copy and a walk of each aggregate's
bytes, only with sanitize-dump-payload yes.

RESTORE reads one value without a key with the same readers (`value`; payload_check.py
checks the payload first, rdb.py its footer), so payloads move both ways between this
server and redis-server, and an empty aggregate is 'Bad data format' there.

How the loader is fast (start-up time is bounded by it): one loop over the records with
the offset in a local; a string record (most keys) is read inline, key and value, with no
call; any other type goes to its reader (`_readers`, one dict look-up). Offsets named on a
read past the end are the end of the data, else the record's (or the blob's) start.
Measured (2-core box shared with other work, CPU time, bench/persistence.py's 1M keys:
70% strings, 30% hashes, lists, sets and sorted sets of 5 elements): decode 3.4 -> 2.5 s,
about 0.7 us a string key and 4-10 us a small aggregate (lp_decode of 10 entries ~2 us,
a sorted set's sort and SortedList ~2 us); the whole load, inserted and charged, 6.3 ->
4.2 s, where redis-server takes 1.0 s.

Lazy loading (`lazy`, the start-up load into an empty keyspace): small aggregates stay
packed (rdb_values.py) only when the file's CRC64 will be checked at its end (`pack`:
checksum on, version >= 5, a non-zero checksum where the footer stands), so a corrupt blob
still fails the load, with the checksum's error rather than the blob's offset; a file
without a checksum decodes now as before. `unpack` decodes with unlimited limits, so the
value comes out in the encoding the eager load would have given it even if the limits
changed since. Measured as above: decode 2.7 -> 1.3 s CPU (250k of the 300k aggregates
packed; sets of strings are RDB hashtables in 7.0), the whole in-process load 4.0 -> 2.4 s.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import Any

from ..rdb import RDB_VERSION, RdbError, crc64
from ..types import EncodingLimits
from ..types.list import List
from ..types.packed import Packed
from .rdb_blobs import _Bad, _lp_decode_bytes, intset_decode, lp_decode
from .rdb_types import (
    I64,
    OP_AUX,
    OP_EOF,
    OP_EXPIRETIME,
    OP_EXPIRETIME_MS,
    OP_FREQ,
    OP_FUNCTION2,
    OP_FUNCTION_PRE_GA,
    OP_IDLE,
    OP_MODULE_AUX,
    OP_RESIZEDB,
    OP_SELECTDB,
    T_HASH,
    T_HASH_LISTPACK,
    T_HASH_ZIPLIST,
    T_HASH_ZIPMAP,
    T_LIST,
    T_LIST_QUICKLIST,
    T_LIST_QUICKLIST_2,
    T_LIST_ZIPLIST,
    T_MODULE,
    T_MODULE_2,
    T_SET,
    T_SET_INTSET,
    T_STREAM_LISTPACKS,
    T_STREAM_LISTPACKS_2,
    T_STRING,
    T_ZSET,
    T_ZSET_2,
    T_ZSET_LISTPACK,
    T_ZSET_ZIPLIST,
)
from .rdb_values import ValueReader

# A record as RdbLoader yields it: its kind ('key', 'keys', 'db', ...), then its fields
Record = tuple[Any, ...]
# A key's attributes read before it: (deadline, lru_idle, lfu_freq), None where absent
KeyAttrs = tuple[int | None, int | None, int | None]
# An `extras` item of a ('keys', ...) record: (index in keys, deadline, lru_idle, lfu_freq)
KeyExtra = tuple[int, int | None, int | None, int | None]

LOAD_BATCH = 1024  # keys per ('keys', ...) batch of RdbLoader.batches


class RdbCorrupt(RdbError):
    """A value of the file that fails Redis's integrity checks (`RdbLoader.integrity`):
    `found` is the check's (rdb.c line, message), with the key and type being read and
    the record's offset, for rdbReportCorruptRDB's lines."""

    def __init__(self, found: tuple[int, str], key: bytes, t: int, offset: int) -> None:
        super().__init__(f'{found[1]} (RDB offset {offset})')
        self.found = found
        self.key = key
        self.type = t
        self.offset = offset


class RdbLoader(ValueReader):
    """Reads an RDB file held in memory. Iterating yields, in file order:

        ('aux', name, value)
        ('function', code)
        ('db', dbnum)
        ('resize', size, expires)
        ('key', key, value, deadline, lru_idle, lfu_freq)

    `pos` is the offset reached (progress, error messages). After the iteration ends,
    `version` is the file's RDB version and `checksum_disabled` says the file carried no
    checksum (Redis logs that it could not check one)."""

    def __init__(
        self,
        data: bytes | memoryview,
        limits: EncodingLimits,
        checksum: bool = True,
        lazy: bool = False,
    ) -> None:
        self.data = data if type(data) is bytes else bytes(data)
        self.end = len(self.data)
        self.limits = limits
        self.checksum = checksum
        self.lazy = lazy  # small aggregates may stay packed (types/packed.py)
        self.pack = False  # they do in this file: lazy, and its checksum is checked
        self.packed = 0  # values left packed
        self.pos = 0
        self.version = 0
        self.checksum_disabled = False
        self.batch = LOAD_BATCH  # keys per batch (batches())
        self.charge = 0  # the last aggregate's charge, where its reader computed it
        # Redis's integrity checks (payload_check.check_payload, given by the caller:
        # payload, deep -> (line, message) or None), run on a value the codec refuses
        # and, with `deep` (sanitize-dump-payload yes), on every aggregate read
        self.integrity: Callable[[bytes, bool], tuple[int, str] | None] | None = None
        self.deep = False
        self.empty_keys = 0  # empty aggregates skipped
        self.empty_names: list[bytes] = []  # the first 10 of them (Redis logs those)
        # Reading a payload as it arrives (rdb_stream.py): `data` is then a window of it,
        # from `base` on, `crc` the CRC64 of the bytes before the window, and `resume`
        # where the window starts (None: at the file's header) with the key attributes
        # read before it. Each record handed over leaves in `safe` where reading may
        # resume after it: (offset in the window, deadline, lru_idle, lfu_freq,
        # empty_keys), so that a record cut by the window's end is read again whole.
        self.base = 0
        self.crc = 0
        self.resume: tuple[int, int | None, int | None, int | None] | None = None
        self.safe: tuple[int, int | None, int | None, int | None, int] = (0, None, None, None, 0)
        # the file's end is not in `data` yet (a stream): values stay packed when lazy and
        # checksum say so, and values packed in a file that turns out to carry no
        # checksum are the caller's to decode (rdb_stream.py)
        self.streamed = False
        # rdbLoadObject's cases: value type -> its reader (each takes the type)
        self._readers: dict[int, Callable[[int], Any]] = {
            T_HASH_LISTPACK: self._hash_listpack,
            T_ZSET_LISTPACK: self._zset_listpack,
            T_LIST_QUICKLIST_2: self._quicklist,
            T_SET_INTSET: self._intset,
            T_SET: self._set,
            T_HASH: self._hash,
            T_LIST: self._plain_list,
            T_ZSET_2: self._zset,
            T_ZSET: self._zset,
            T_HASH_ZIPLIST: self._hash_ziplist,
            T_HASH_ZIPMAP: self._hash_zipmap,
            T_ZSET_ZIPLIST: self._zset_listpack,
            T_LIST_QUICKLIST: self._quicklist,
            T_LIST_ZIPLIST: self._list_ziplist,
            T_STREAM_LISTPACKS_2: self._stream,
            T_STREAM_LISTPACKS: self._stream,
        }

    def __iter__(self) -> Iterator[Record]:
        for rec in self.batches():
            if rec[0] == 'keys':
                keys, values, extras = rec[1], rec[2], rec[3]
                more = {e[0]: e for e in extras}
                for i, key in enumerate(keys):
                    e = more.get(i)
                    if e is None:
                        yield ('key', key, values[i], None, None, None)
                    else:
                        yield ('key', key, values[i], e[1], e[2], e[3])
            else:
                yield rec

    def batches(self) -> Iterator[Record]:
        """The records with the keys in batches, for a loader that inserts them in bulk:
        ('keys', keys, values, extras, charges) in place of runs of ('key', ...) records,
        with `extras` the (index in keys, deadline, lru_idle, lfu_freq) of the keys that
        had any of those, and `charges` the (index, charge) of each aggregate: its
        memory.sizes charge where the reader computed it from what it built the value
        from, else 0. The other records come as `__iter__` gives them, never inside a
        batch's run (a batch ends before each of them)."""
        try:
            yield from self._records()
        except RdbError:
            raise
        except _Bad as e:
            raise RdbError(f'Bad RDB data at offset {self.base + self.pos}: invalid {e}') from None
        except IndexError:
            raise RdbError(f'Short read loading RDB at offset {self.base + self.pos}') from None
        except (ValueError, TypeError, struct.error, OverflowError, KeyError, MemoryError) as e:
            raise RdbError(f'Bad RDB data at offset {self.base + self.pos}: {e}') from None

    # -- records -------------------------------------------------------------------------

    def _records(self) -> Iterator[Record]:
        data = self.data
        end = self.end
        if self.resume is None:
            if end < 9 or data[:5] != b'REDIS':
                raise self._fail('Wrong signature trying to load DB from file')
            try:
                version = int(data[5:9])
            except ValueError:
                version = -1
            if not 1 <= version <= RDB_VERSION or not data[5:9].isdigit():
                raise self._fail(f"Can't handle RDB format version {data[5:9].decode('latin-1')}")
            self.version = version
            # Values stay packed only when the CRC64 at the file's end will be checked
            # before the load completes (so a corrupt blob is still refused at load): a
            # file whose checksum is 0 (rdbchecksum no) or that is not checked decodes
            # everything now.
            self.pack = (
                self.lazy
                and self.checksum
                and version >= 5
                and (
                    self.streamed
                    or (end >= 18 and data[end - 9] == OP_EOF and data[end - 8 :] != bytes(8))
                )
            )
            p = 9
            deadline = lru_idle = lfu_freq = None
        else:
            version = self.version
            p, deadline, lru_idle, lfu_freq = self.resume
        # an EXPIRETIME, IDLE or FREQ opcode came before this key
        extra = deadline is not None or lru_idle is not None or lfu_freq is not None
        keys: list[bytes] = []
        values: list[Any] = []
        extras: list[KeyExtra] = []
        charges: list[tuple[int, int]] = []
        add_key, add_value, add_charge = keys.append, values.append, charges.append
        read_str, read_len, readers = self._str, self._len, self._readers
        check_all = self.deep and self.integrity is not None  # every aggregate checked
        left = batch = self.batch  # keys until this batch is handed over
        # `p` is the offset of the record being read, a local: self.pos is set from it
        # before a method reads and read back after, and on an error (below). A string
        # sliced past the end of the data comes out short without an error: the batch
        # is checked before it is handed over (p > end), and the next record's first
        # byte is past the end then too.
        try:
            while True:
                op = data[p]
                if op == T_STRING:
                    # most records: the key and value read here without a call (one
                    # Python step per key is the loader's floor)
                    c = data[p + 1]
                    if c < 64:
                        e = p + 2 + c
                        key = data[p + 2 : e]
                    else:
                        self.pos = p + 1
                        key = read_str()
                        e = self.pos
                    c = data[e]
                    if c < 64:
                        p = e + 1 + c
                        value = data[e + 1 : p]
                    elif c < 128:
                        p = e + 2 + (((c & 0x3F) << 8) | data[e + 1])
                        value = data[e + 2 : p]
                    else:
                        self.pos = e
                        value = read_str()
                        p = self.pos
                elif op < OP_FUNCTION2:
                    c = data[p + 1]
                    if c < 64:
                        e = p + 2 + c
                        key = data[p + 2 : e]
                        self.pos = e
                    else:
                        self.pos = p + 1
                        key = read_str()
                    read = readers.get(op)
                    if read is None:
                        self.pos = p
                        if op in (T_MODULE, T_MODULE_2):
                            raise self._fail("The RDB file contains module data I can't load")
                        raise self._fail(f'Unknown RDB encoding type {op}')
                    self.charge = 0
                    vstart = self.pos
                    try:
                        value = read(op)
                    except Exception:
                        if self.integrity is not None:
                            self._check(op, key, vstart, None, p)
                        raise
                    if check_all:
                        self._check(op, key, vstart, self.pos, p)
                    p = self.pos
                    if value is None:  # an empty aggregate, skipped as Redis does
                        if self.empty_keys < 10:
                            self.empty_names.append(key)
                        self.empty_keys += 1
                        deadline = lru_idle = lfu_freq = None
                        extra = False
                        continue
                    add_charge((len(keys), self.charge))
                elif op == OP_EXPIRETIME_MS and p + 9 <= end:  # a TTL: a tenth of keys
                    deadline = I64.unpack_from(data, p + 1)[0]
                    extra = True
                    p += 9
                    continue
                else:
                    self.pos = p + 1
                    if op == OP_EXPIRETIME_MS:  # cut short
                        deadline = I64.unpack(self._read(8))[0]
                        extra = True
                    elif op == OP_EXPIRETIME:
                        deadline = int.from_bytes(self._read(4), 'little', signed=True) * 1000
                        extra = True
                    elif op == OP_FREQ:
                        lfu_freq = self._read(1)[0]
                        extra = True
                    elif op == OP_IDLE:
                        lru_idle = read_len()
                        extra = True
                    else:
                        if keys:  # the batch ends before any other record
                            if p > end:
                                raise self._short()
                            self.safe = (p, deadline, lru_idle, lfu_freq, self.empty_keys)
                            yield ('keys', keys, values, extras, charges)
                            keys, values, extras, charges = [], [], [], []
                            add_key, add_value = keys.append, values.append
                            add_charge = charges.append
                            left = batch
                        if op == OP_EOF:
                            break
                        if op == OP_SELECTDB:
                            rec: Record = ('db', read_len())
                        elif op == OP_RESIZEDB:
                            size = read_len()
                            rec = ('resize', size, read_len())
                        elif op == OP_AUX:
                            name = read_str()
                            rec = ('aux', name, read_str())
                        elif op == OP_MODULE_AUX:
                            raise self._fail("The RDB file contains AUX module data I can't load")
                        elif op == OP_FUNCTION_PRE_GA:
                            raise self._fail('Pre-release function format not supported.')
                        else:  # OP_FUNCTION2
                            rec = ('function', read_str())
                        self.safe = (self.pos, deadline, lru_idle, lfu_freq, self.empty_keys)
                        yield rec
                    p = self.pos
                    continue
                add_key(key)
                add_value(value)
                if extra:
                    extras.append((len(keys) - 1, deadline, lru_idle, lfu_freq))
                    deadline = lru_idle = lfu_freq = None
                    extra = False
                left -= 1
                if not left:
                    if p > end:
                        raise self._short()
                    self.safe = (p, None, None, None, self.empty_keys)
                    yield ('keys', keys, values, extras, charges)
                    keys, values, extras, charges = [], [], [], []
                    add_key, add_value = keys.append, values.append
                    add_charge = charges.append
                    left = batch
        except Exception:
            # the offset of the record that failed, unless a method named a later one
            self.pos = min(max(self.pos, p), end)
            raise
        eof_end = self.pos
        if version >= 5:
            stored = int.from_bytes(self._read(8), 'little')
            if stored == 0:
                self.checksum_disabled = True
                # data after the EOF's checksum made the file look checked
                if self.packed and not self.streamed:
                    raise self._fail('Packed values in a file without a checksum')
            elif self.checksum:
                expected = crc64(memoryview(data)[:eof_end], self.crc)
                if expected != stored:
                    raise self._fail(
                        f'Wrong RDB checksum expected: ({expected:x}) but got ({stored:x})'
                    )

    def _fail(self, message: str) -> RdbError:
        return RdbError(f'{message} (RDB offset {self.base + self.pos})')

    def _check(self, t: int, key: bytes, start: int, end: int | None, at: int) -> None:
        """Redis's integrity checks on the value at data[start:end] (to the end of the
        data: it is cut there by its own lengths) of type `t`: RdbCorrupt if one fails."""
        assert self.integrity is not None
        payload = bytes((t,)) + self.data[start : self.end if end is None else end]
        found = self.integrity(payload, self.deep)
        if found is not None and found[1]:  # (an empty quicklist node has no message)
            self.pos = at
            raise RdbCorrupt(found, key, t, self.base + at)

    def value(self) -> Any:
        """rdbLoadObjectType + rdbLoadObject at `pos`: one value without a key (a DUMP
        payload's), or None for an empty aggregate; raises as the readers do."""
        t = self._read(1)[0]
        if t == T_STRING:
            return self._str()
        read = self._readers.get(t)
        if read is None:
            raise self._fail(f'Unknown RDB encoding type {t}')
        return read(t)


# -- packed values (types/packed.py) --------------------------------------------------------


class _Unlimited(EncodingLimits):
    """Limits no packed value exceeds: it was left packed only when within the limits of
    its load, so it decodes to the compact encoding whatever the limits are now."""

    def __init__(self) -> None:
        super().__init__()
        self.hash_entries = self.hash_value = self.set_intset_entries = 1 << 62
        self.zset_entries = self.zset_value = 1 << 62


_UNPACKER = RdbLoader(b'', _Unlimited())


def unpack(p: Packed) -> Any:
    """The value a Packed object stands for, decoded as the eager load would have; raises
    RdbError for a blob that does not decode."""
    t, blob, u = p.type, p.blob, _UNPACKER
    try:
        if t == T_HASH_LISTPACK:
            value: Any = u._compact_hash(_lp_decode_bytes(blob), False)
        elif t == T_ZSET_LISTPACK:
            value = u._zset_items(lp_decode(blob))
        elif t == T_LIST_QUICKLIST_2:
            node = _lp_decode_bytes(blob)
            value = List(node) if node else None
        elif t == T_SET_INTSET:
            value = u._intset_values(intset_decode(blob))
        else:
            value = None
    except RdbError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure of a bad blob is the same error
        raise RdbError(f'packed value of RDB type {t} failed to decode ({e!r})') from None
    if value is None:
        raise RdbError(f'packed value of RDB type {t} is empty')
    return value


Packed.decode = staticmethod(unpack)
