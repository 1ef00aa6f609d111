"""KEYS and SCAN: the commands that walk the whole keyspace (Redis 7.0's keysCommand and
scanGenericCommand for the keyspace; HSCAN, SSCAN and ZSCAN are store/commands/aggregates.py's,
the cursor and options parsing they share store/commands/cursor.py's).

* KEYS filters each shard's keys with C-level calls (list, filter with a compiled regular
  expression equal to the glob: `key_filter`), and skips expired keys without deleting
  them, as Redis does.
* SCAN walks a snapshot of one shard's keys at a time; its cursor names a place in a
  remembered walk (ScanWalks), and a forgotten walk goes on from a new snapshot of its
  shard, so keys may come twice but none present for the whole walk is missed, as Redis
  guarantees.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Container, Iterable
from itertools import islice
from typing import Any

from ..clock import now_ms
from ..command_table import Family
from ..context import Client
from ..glob import compile_glob
from ..resp import BULK_PREFIX, CRLF, Raw, encode
from ..types import type_name
from .cursor import parse_cursor, parse_scan_options

COMMANDS = Family('generic')

# a key predicate: MATCH's glob, or key_filter's cheaper equivalent
KeyMatch = Callable[[bytes], object]
# what a walk read of a shard on its first call there (ScanWalks.find)
Prefix = set[bytes] | bool | None


@COMMANDS.command(
    'keys',
    2,
    flags='readonly',
    categories='@keyspace @read @slow @dangerous',
    tips='request_policy:all_shards nondeterministic_output_order',
    summary='Find all keys matching the given pattern',
)
def keys(c: Client, args: list[bytes]) -> list[bytes] | Raw:
    """Every live key matching the pattern. Expired keys are skipped, not deleted, as in
    Redis 7.0's keysCommand.

    Built for a keyspace of millions of keys: each shard's keys are taken and filtered by
    C-level calls (list, filter with a compiled regular expression), and expired keys are
    looked for only in shards whose earliest deadline has passed."""
    pattern = args[1]
    match = None if pattern == b'*' else key_filter(pattern)
    db = c.db
    now = now_ms()
    out: list[bytes] = []
    for s in c.ks.shards:
        data = s.keys(db)
        if not data:
            continue
        found = list(data) if match is None else list(filter(match, data))
        exp = s.deadlines(db)
        if exp and min(exp.values()) < now:
            dead = {key for key, deadline in exp.items() if deadline < now}
            found = [key for key in found if key not in dead]
        out += found
    limits = c.out_limit
    if limits is not None and limits.drop_for_reply(c, _array_size(out), deferred=True):
        return Raw(b'')  # Redis's loop stops once the client is closed: no reply
    return out


def _array_size(items: list[bytes]) -> int:
    """The RESP size of an array of these bulk strings."""
    return sum(len(k) + len(b'%d' % len(k)) + 5 for k in items) + len(b'%d' % len(items)) + 3


def key_filter(pattern: bytes) -> KeyMatch:
    """A predicate equal to the glob's `match` for non-empty subjects but cheaper per key:
    one compiled regular expression instead of a Python call that runs several. As in
    store/glob.py, the pattern is cut at its stars into fixed-width segments and each
    middle segment is placed at its leftmost occurrence, here by an atomic group
    (`(?>.*?S)`: found once, never backtracked into), so matching stays linear in the
    subject whatever the pattern. An empty subject (the empty key) takes the glob's own
    test."""
    glob = compile_glob(pattern)
    if glob.literal is not None:
        return glob.literal.__eq__ if glob.literal else glob.match
    segments = [rx.pattern for rx, _ in glob.segments]
    if not glob.starred:
        rx, tail = segments[0], True
    else:
        middle = b''.join(b'(?>.*?%s)' % seg for seg in segments[1:-1] if seg)
        tail = bool(segments[-1])
        rx = segments[0] + middle + (b'.*' + segments[-1] if tail else b'')
    compiled = re.compile(rx, re.DOTALL)
    test = compiled.fullmatch if tail else compiled.match
    # The empty key: a regex such as '' or '.*' matches it, the glob never does.
    return test if (test(b'') is not None) == glob.match(b'') else glob.match


class ScanWalks:
    """Per-keyspace state of SCAN: the walks in progress and the shard snapshots they read.

    A walk reads one shard at a time from a snapshot of its keys (`list(data)`, ~40 ns a
    key in C) taken after the walk began, and returns the snapshot's keys that still
    exist, in order. A key present for the whole walk was in the snapshot of its shard,
    so it comes back exactly once; a key added meanwhile may not, a deleted one never
    does. (Ordering keys by hash instead, so that a cursor alone located a walk, cost a
    sort: ~1.5 us a key of CPU against ~0.3 us for a snapshot.)

    Snapshots are shared: `epoch` counts walks begun, and a snapshot taken at epoch e
    serves every walk begun at e or before. A snapshot lives while a walk holds it. A
    walk's first call in a shard that ends inside it reads the first keys straight from
    the dict and takes no snapshot: the next call takes it and goes on past those keys
    (_past_prefix), so a walk given up after one call costs COUNT keys, not a shard.

    A cursor packs the shard, the walk's id and the index + 1 in the shard's snapshot;
    bit 63 is never set, so a cursor with it, or naming a shard past the last, ends the
    walk. A walk remembers its shard and snapshot and the ones before them, so a cursor
    sent again (a reply lost) reads the same keys. The last WALKS_KEPT walks used are
    kept. A cursor of a forgotten walk (or never issued) continues as a new walk of the
    same id, from a new snapshot: at index 0 it starts the shard it names as any walk
    does; past it, that call returns the whole shard (keys of it may come twice, none
    present for the whole walk is missed: Redis's own guarantee), so a walk forgotten
    between every two calls (more walks at once than are kept) still ends, in at most
    two calls a shard.

    Memory: the snapshots the kept walks hold, at most two shards' keys each (`nbytes`,
    counted in used_memory).
    """

    WALKS_KEPT = 64

    def __init__(self, nshards: int) -> None:
        self.nshards = nshards
        self.shard_shift = 63 - max(1, (nshards - 1).bit_length())
        self.id_mask = (1 << (self.shard_shift - 32)) - 1
        self.epoch = 0
        self.last_id = 0
        self.walks: dict[int, _Walk] = {}  # walk id -> _Walk, least recently used first
        # (db, shard) -> latest _Snapshot
        self.snapshots: weakref.WeakValueDictionary[tuple[int, int], _Snapshot] = (
            weakref.WeakValueDictionary()
        )

    def find(self, db: int, cursor: int) -> tuple[_Walk | None, int, _Snapshot | None, int, Prefix]:
        """(walk, shard, snapshot or None, index, prefix) for `cursor`: prefix is the
        walk's first keys of the shard (a set), True for a forgotten walk, whose call
        reads the whole shard, else None. Walk None: past the end."""
        walks = self.walks
        if cursor == 0:
            wid = self.last_id
            while True:  # ids wrap after 2**27 walks (16 shards): skip those still kept
                wid = (wid + 1) & self.id_mask
                if wid and wid not in walks:
                    break
            self.last_id = wid
            return self._new(wid, db), 0, None, 0, None
        shard = cursor >> self.shard_shift
        if shard >= self.nshards:
            return None, 0, None, 0, None
        wid = (cursor >> 32) & self.id_mask
        index = (cursor & 0xFFFFFFFF) - 1
        walk = walks.pop(wid, None)
        if walk is not None and walk.db == db:
            walks[wid] = walk  # most recently used
            if shard == walk.shard:
                return walk, shard, walk.snapshot, index, walk.prefix
            if shard == walk.prev_shard:
                return walk, shard, walk.prev_snapshot, index, walk.prev_prefix
        # forgotten: a walk begun now, from the start of the shard, or the whole shard
        return self._new(wid, db), shard, None, 0, index > 0 or None

    def _new(self, wid: int, db: int) -> _Walk:
        self.epoch += 1
        walks = self.walks
        if len(walks) >= self.WALKS_KEPT:
            del walks[next(iter(walks))]
        walk = walks[wid] = _Walk(wid, db, self.epoch)
        return walk

    def nbytes(self) -> int:
        """What the kept walks' snapshots hold (each list once): part of used_memory."""
        held: dict[int, _Snapshot] = {}
        for walk in self.walks.values():
            for snap in (walk.snapshot, walk.prev_snapshot):
                if snap is not None:
                    held[id(snap)] = snap
        return sum(56 + 8 * len(snap.keys) for snap in held.values())

    def snapshot(self, walk: _Walk, shard: int, data: Iterable[bytes]) -> _Snapshot:
        """A snapshot of `data`, the keys of `shard`, taken after `walk` began."""
        key = (walk.db, shard)
        snap = self.snapshots.get(key)
        if snap is None or snap.epoch < walk.epoch:
            snap = self.snapshots[key] = _Snapshot(list(data), self.epoch)
        return snap

    def cursor(
        self,
        walk: _Walk,
        shard: int,
        snap: _Snapshot | None,
        index: int,
        prefix: set[bytes] | None = None,
    ) -> bytes:
        """The cursor of this place (index AFTER_PREFIX: past `prefix`, the keys a first
        call read from the dict); the walk now stands in `shard`."""
        if shard != walk.shard:
            walk.prev_shard, walk.prev_snapshot = walk.shard, walk.snapshot
            walk.prev_prefix, walk.prefix = walk.prefix, None
            walk.shard = shard
        walk.snapshot = snap
        if prefix is not None:
            walk.prefix = prefix
        return b'%d' % (shard << self.shard_shift | walk.id << 32 | index + 1)


class _Walk:
    """A walk of ScanWalks: the shard it stands in with that shard's snapshot (None until
    taken) and the keys its first call there read from the dict, and the same of the
    shard before."""

    __slots__ = (
        'id',
        'db',
        'epoch',
        'shard',
        'snapshot',
        'prefix',
        'prev_shard',
        'prev_snapshot',
        'prev_prefix',
    )

    id: int
    db: int
    epoch: int
    shard: int
    snapshot: _Snapshot | None
    prefix: set[bytes] | None
    prev_shard: int
    prev_snapshot: _Snapshot | None
    prev_prefix: set[bytes] | None

    def __init__(self, wid: int, db: int, epoch: int) -> None:
        self.id, self.db, self.epoch = wid, db, epoch
        self.shard = self.prev_shard = -1
        self.snapshot = self.prev_snapshot = self.prefix = self.prev_prefix = None


class _Snapshot:
    __slots__ = ('keys', 'epoch', '__weakref__')

    keys: list[bytes]
    epoch: int

    def __init__(self, keys: list[bytes], epoch: int) -> None:
        self.keys, self.epoch = keys, epoch


@COMMANDS.command(
    'scan',
    -2,
    flags='readonly',
    categories='@keyspace @read @slow',
    tips='nondeterministic_output request_policy:special',
    since='2.8.0',
    summary='Incrementally iterate the keys space',
)
def scan(c: Client, args: list[bytes]) -> Raw:
    """SCAN cursor [MATCH pattern] [COUNT count] [TYPE type].

    Guarantee: a full iteration (from cursor 0 until 0 comes back) returns every key that
    exists in the database during the whole iteration, once as long as the server
    remembers the walk (ScanWalks); keys created or deleted meanwhile may or may not be
    returned, and a key is never returned after it was deleted or expired. Several
    iterations may run at once. COUNT is the number of keys examined (before MATCH and
    TYPE filtering), so a call may return fewer keys, even none, with a nonzero cursor.
    Cursors are only meaningful to the server process that issued them.

    The examined keys are filtered as scanGenericCommand filters them, in its order: still
    there, MATCH, TYPE (a lookup that is not an access), then expired keys, which are
    deleted; each filter is a C-level pass, and a key is looked up in the keyspace only
    for TYPE or when it carries an expired deadline. The reply is encoded here, in a few
    C-level steps (it is the same in RESP2 and RESP3): a walk with the default COUNT is a
    hundred thousand calls over a million keys, each one's cost counts.
    """
    ks, db = c.ks, c.db
    walks: ScanWalks = ks.scan_walks
    if walks is None:
        walks = ks.scan_walks = ScanWalks(len(ks.shards))
    cursor = parse_cursor(args[1])  # its errors come first
    match: KeyMatch | None
    if len(args) == 2:
        count, match, typename = 10, None, None
    else:
        count, pattern, typename = parse_scan_options(args, 2, True)
        match = None if pattern is None or pattern == b'*' else key_filter(pattern)
    walk, shard, snap, index, prefix = walks.find(db, cursor)
    if walk is None:
        return Raw(_scan_reply(b'0', []))

    shards, nshards = ks.shards, walks.nshards
    examined = 0
    found: list[bytes] = []
    while True:
        if snap is None:
            while shard < nshards and not shards[shard].count(db):
                shard, index, prefix = shard + 1, 0, None
            if shard == nshards:
                next_cursor = b'0'
                break
            data = shards[shard].keys(db)
            if prefix is None and count - examined < len(data):
                # The walk's first call in this shard, ending inside it: the first keys
                # come straight from the dict and the snapshot waits for the next call,
                # so a walk given up after one call (next(scan_iter())) never takes one
                taken = list(islice(data, count - examined))
                found += _scan_filter(ks, db, shards[shard], taken, match, typename)
                next_cursor = walks.cursor(walk, shard, None, AFTER_PREFIX, set(taken))
                break
            snap = walks.snapshot(walk, shard, data)
            if prefix is True:  # a forgotten walk's call: the rest of this shard
                count, prefix = len(snap.keys), None
        if index == AFTER_PREFIX:  # what the first call read from the dict is done
            # (prefix is a kept walk's set or None: only a cursor of a kept walk says
            # AFTER_PREFIX; True, a forgotten walk's mark, comes with index 0)
            index = _past_prefix(snap.keys, prefix, shards[shard].keys(db)) if prefix else 0  # type: ignore[arg-type]
        hi = index + count - examined
        taken = snap.keys[index:hi]
        found += _scan_filter(ks, db, shards[shard], taken, match, typename)
        if hi < len(snap.keys):
            next_cursor = walks.cursor(walk, shard, snap, hi)
            break
        examined += len(taken)
        shard, snap, index, prefix = shard + 1, None, 0, None
        if examined >= count:
            next_cursor = b'0' if shard == nshards else walks.cursor(walk, shard, None, 0)
            break
    return Raw(_scan_reply(next_cursor, found))


AFTER_PREFIX = 0xFFFFFFFE  # a cursor's index: past the keys a first call read (ScanWalks)


def _past_prefix(keys: list[bytes], prefix: Container[bytes], data: Container[bytes]) -> int:
    """Where a snapshot taken after the walk began continues a first call that read
    `prefix` from the dict: past its leading keys that were read or are gone. Dict order
    only appends, so a key present all along and not read comes after every one read (a
    key read, deleted and added again comes back at the end: it may be returned twice)."""
    i, n = 0, len(keys)
    while i < n and (keys[i] in prefix or keys[i] not in data):
        i += 1
    return i


def _scan_filter(
    ks: Any,
    db: int,
    s: Any,
    taken: list[bytes],
    match: KeyMatch | None,
    typename: str | None,
) -> list[bytes]:
    """The keys of `taken` (from shard `s`) SCAN returns, filtered as scanGenericCommand
    filters them: still there, MATCH, TYPE, then expired keys, which are deleted."""
    keys = list(filter(s.keys(db).__contains__, taken))
    if match is not None:
        keys = list(filter(match, keys))
    if typename is not None:
        keys = [k for k in keys if type_name(ks.read_notouch(db, k)) == typename]
    exp = s.deadlines(db)
    if exp and keys:
        now = now_ms()
        keys = [k for k in keys if exp.get(k, now) >= now or not _expired(ks, db, k)]
    return keys


def _scan_reply(cursor: bytes, keys: list[bytes]) -> bytes:
    """[cursor, [key, ...]] in RESP: the bulk strings of short keys (the common case) as
    one join over their headers and the keys, as resp._encode_many does; any other way
    through the encoder."""
    head = b'*2\r\n$%d\r\n%s\r\n*%d\r\n' % (len(cursor), cursor, len(keys))
    if not keys:
        return head
    pieces = [b''] * (2 * len(keys) + 1)
    try:
        pieces[0:-1:2] = map(BULK_PREFIX.__getitem__, map(len, keys))
    except IndexError:  # a key of 1024 bytes or more
        return head + b''.join(encode(keys, 2, [])[1:])
    pieces[1::2] = keys
    return head + CRLF.join(pieces)


def _expired(ks: Any, db: int, key: bytes) -> bool:
    """expireIfNeeded for a key whose deadline passed: the keyspace deletes it (with its
    event) on a lookup that is not an access; True when it is gone."""
    return ks.lookup_notouch(db, key) is None
