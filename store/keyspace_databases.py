"""Whole databases: sizes, key lists, RANDOMKEY, FLUSHDB/FLUSHALL and SWAPDB.

A database is one dict per shard (and its expires, access and charge dicts, and its part
of the shard's deadline index); its charge is `db_used[db]`. So FLUSHDB replaces the dicts
with empty ones, and SWAPDB swaps them and the two charges: both O(shards), whatever the
database holds, the keys gone (or moved) for every client at once. FLUSHDB ASYNC hands the
old dicts to lazy free (store/lazyfree.py), freed in steps between commands.

Observers hear of what each changes as Redis's touchAllWatchedKeysInDb decides: the
observed keys are walked (not the database), before the change for what they held and
after it for what they now hold. Both count as one change to the data set (`changes`),
even on an empty database: Redis propagates them always.

`KeyspaceDatabases` is a part of store/keyspace.py's Keyspace (a mixin with no state of
its own: the fields are Keyspace's, declared below for the type checker only).
"""

from __future__ import annotations

import random
from collections.abc import KeysView
from itertools import islice
from typing import TYPE_CHECKING, Any

from .clock import now_ms
from .db_slice import DbSlice, LoadInto
from .lazyfree import DATA, REFS, LazyFree
from .lifecycle import KeyObserver, KeyWatcher


class KeyspaceDatabases:
    if TYPE_CHECKING:  # Keyspace's fields and methods this part uses
        databases: int
        shards: list[DbSlice]
        slot_shard: list[DbSlice]
        watchers: dict[tuple[int, bytes], set[KeyWatcher]]
        hear_modified: tuple[KeyObserver, ...]
        hear_flushed: tuple[KeyObserver, ...]
        lazyfree: LazyFree
        used: int
        db_used: list[int]
        changes: int

        def shard_for(self, key: bytes) -> DbSlice: ...

        expire_paused: bool

        def lookup(self, db: int, key: bytes, buffer: bool = False) -> Any: ...

        def _expire(self, s: DbSlice, db: int, key: bytes) -> None: ...

    def load_into(self, db: int) -> LoadInto:
        return LoadInto(self.slot_shard, db)

    def rebuild_deadline_indexes(self) -> None:
        """After keys were loaded with their deadlines into the shards directly."""
        for s in self.shards:
            s.index.rebuild()

    def dbsize(self, db: int) -> int:
        return sum(s.count(db) for s in self.shards)

    def dbsize_all(self) -> int:
        return sum(s.count_all() for s in self.shards)

    def volatile_count(self, db: int) -> int:
        return sum(s.count_volatile(db) for s in self.shards)

    def keys(self, db: int) -> list[bytes]:
        """Every key of a database (expired ones not yet reaped included): a snapshot
        list, so callers may delete while walking it."""
        out: list[bytes] = []
        for s in self.shards:
            out.extend(s.keys(db))
        return out

    def random_key(self, db: int) -> bytes | None:
        """dbRandomKey: a random key, None when the database is empty. A key found past
        its deadline is expired and another drawn, until a live one comes. Where expiry
        is held (a replica, a pause: the key stays), a database whose keys all have a
        TTL gives the 100th key drawn even if expired, as Redis does on a replica, rather
        than looping for ever. Not an access: no hit or miss is counted."""
        tries = 100
        candidates = [s for s in self.shards if s.count(db)]
        while candidates:
            s = random.choice(candidates)
            data = s.keys(db)
            if not data:
                candidates.remove(s)
                continue
            key = random.choice(list(data)) if len(data) < 64 else _random_dict_key(data)
            deadline = s.deadline(db, key)
            if deadline is None or deadline >= now_ms():
                return key
            if self.expire_paused:
                tries -= 1
                if tries == 0 and self.dbsize(db) == self.volatile_count(db):
                    return key
            else:
                self._expire(s, db, key)
        return None

    def flushdb(self, db: int, lazy: bool = False, tell: bool = True) -> None:
        """Empty a database: its dicts are replaced by empty ones, so the keys are gone
        for every client at once. With `lazy` (FLUSHDB ASYNC, emptyDbAsync) the old dicts
        are freed in steps between commands (store/lazyfree.py), else when dropped here.
        Watchers hear of the keys that existed (touchAllWatchedKeysInDb walks the
        watched keys, not the database); tracking hears of the flush as a whole
        (trackingInvalidateKeysOnFlush), unless not `tell` (FLUSHALL tells it once).
        Counts as a change even when it was empty: Redis propagates FLUSHDB and FLUSHALL
        always."""
        self.changes += 1
        if self.watchers:
            for wdb, key in list(self.watchers):
                if wdb == db and self.shard_for(key).holds(db, key):
                    for o in list(self.watchers.get((db, key)) or ()):
                        o.key_modified(db, key)
        for s in self.shards:
            data, charged, access, expires, near, far = s.flush(db)
            if lazy and data:
                # drained from the end: index buckets and expires first, keys last
                parts = [(data, DATA), (charged, REFS), (access, REFS), (expires, REFS)]
                self.lazyfree.free_db([*parts, (near, REFS), (far, REFS)], len(data), data)
        self.used -= self.db_used[db]
        self.db_used[db] = 0
        if tell:
            for party in self.hear_flushed:
                party.flushed()  # tracking: a null invalidation to every tracking client

    def flushall(self, lazy: bool = False) -> None:
        for db in range(self.databases):
            self.flushdb(db, lazy, False)
        for party in self.hear_flushed:
            party.flushed()  # tracking: one null invalidation per tracking client

    def swapdb(self, a: int, b: int) -> None:
        """Swap two databases' contents. Each observed key either database holds is
        looked at before the swap and reported after it, so observers see what each
        database now holds: a WATCH decides as Redis's touchAllWatchedKeysInDb
        (Connection.swapped: a missing key replaced by a stale one is no change and
        is marked stale), another observer hears of a key its database held or gets live.
        A key a client blocks on is also signalled when the swap brings it, stale or not
        (scanDatabaseForReadyKeys). Tracking clients hear of every key of both databases
        (Redis 7.0 sends nothing, leaving caches stale)."""
        self.changes += 1
        # (db, key, held here, held there, there but expired) of each observed key
        seen: list[tuple[int, bytes, bool, bool, bool]] = []
        arriving: list[tuple[int, bytes]] = []  # keys a database gets, stale ones too
        if self.watchers:
            now = now_ms()
            for wdb, key in list(self.watchers):
                if wdb != a and wdb != b:
                    continue
                other = b if wdb == a else a
                s = self.shard_for(key)
                here, there = s.holds(wdb, key), s.holds(other, key)
                if there:
                    arriving.append((wdb, key))
                if here or there:
                    deadline = s.deadline(other, key) if there else None
                    seen.append((wdb, key, here, there, deadline is not None and deadline < now))
        for s in self.shards:
            s.swap(a, b)
        self.db_used[a], self.db_used[b] = self.db_used[b], self.db_used[a]
        for wdb, key, here, there, stale in seen:
            for o in list(self.watchers.get((wdb, key)) or ()):
                o.swapped(wdb, key, here, there, stale)
        # Blocked clients are served for every key the swap brings, even one past its
        # deadline (scanDatabaseForReadyKeys finds it with dictFind): serving expires it,
        # and its DEL is propagated, while the client goes on waiting.
        for dk in arriving:
            observers = self.watchers.get(dk)
            if observers:
                for o in list(observers):
                    if o.serves_stale_keys:
                        o.key_modified(*dk)
        for party in self.hear_modified:
            for s in self.shards:
                for key in s.keys(a) | s.keys(b):
                    party.modified(key, True)


def _random_dict_key(d: KeysView[bytes]) -> bytes:
    """A random key of a large shard without copying its keys."""
    return next(islice(d, random.randrange(len(d)), None))
