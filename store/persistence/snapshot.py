"""The point-in-time snapshot, without fork.

A forked child would copy nearly the whole heap: CPython's reference counting writes to
every object it touches, so copy-on-write pages do not stay shared. Instead the snapshot
runs inside the server, between commands, and still writes the keyspace exactly as it was
when it started (Dragonfly's point-in-time snapshot):

- At the start it captures every database dict of every shard (a *unit*: one shard's part
  of one database, with its expires dict) and the FUNCTION libraries. Nothing is copied.
- `step()` serializes a slice of the next unit, then returns to the loop; units are
  written database by database, each database after its SELECTDB header.
- While it runs in the background, the persistence manager, a party of the key lifecycle
  (store/lifecycle.py), hands it what the keyspace's key-access methods call
  `before` once they have routed the key: before any command can change a key of a unit
  not yet written, `before` serializes the key's value as it still is and marks it done,
  so the walk skips it. A key created after the start is marked done while absent, so it
  is never written. Active expiry and eviction call it too (`removing`). One test of
  `snapshot` per access is what this costs while no snapshot runs.
- FLUSHDB/FLUSHALL and SWAPDB replace or swap the keyspace's dicts but never change the
  captured ones, so a unit is found by the identity of its dict: writes to a new dict are
  not the snapshot's concern, and a flushed unit is still written as it was.
- A key serialized early belongs to its unit's database: written at once if that database
  is the one being written, else held until its header is written.

Encoder protocol (rdb_encoder.RdbEncoder, aof.AofEncoder): each method returns the bytes
to write, which the snapshot writes in file order:

    checksum: bool                       # whether footer() wants the CRC64 of the file
    header() -> bytes                    # magic + aux fields (RDB), or nothing
    functions(codes: list[bytes]) -> bytes   # the FUNCTION libraries' source codes
    select_db(db, size, expires) -> bytes    # before a database's keys (sizes at start)
    key(key, value, deadline) -> bytes   # one key; deadline: ms since the epoch or None
    footer(crc: int) -> bytes            # EOF + checksum (RDB), or nothing
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Mapping
from typing import Any

import anycrc

from ..keyspace import Keyspace
from ..memory.sizes import value_size

_CRC = anycrc.Model('CRC64-REDIS')
STEP_S = 0.001  # serialization per loop turn: other clients wait at most about this long
WRITE_BUFFER = 1 << 20


class _Unit:
    __slots__ = ('db', 'data', 'expires', 'done', 'keys', 'pos')

    def __init__(self, db: int, data: Mapping[bytes, Any], expires: Mapping[bytes, int]) -> None:
        self.db = db
        self.data = data
        self.expires = expires
        self.done: set[bytes] = set()  # keys already written (or absent at the start)
        self.keys: list[bytes] | None = None  # the walk's key list, once it reaches here
        self.pos = 0


class Snapshot:
    """One snapshot into an open binary file. `run()` writes it all at once (SAVE);
    `step()` writes a slice and returns True while work remains (BGSAVE)."""

    def __init__(self, ks: Keyspace, encoder: Any, out: Any, functions: list[bytes]) -> None:
        self.ks = ks
        self.encoder = encoder
        self.out = out
        self.crc = 0
        self.buf: list[bytes] = []
        self.buffered = 0
        self.keys_total = sum(ks.dbsize(db) for db in range(ks.databases))
        self.keys_done = 0
        # db -> (units, size, expires at the start); databases with no keys are skipped
        self.dbs: list[tuple[int, list[_Unit], int, int]] = []
        self.units: dict[int, _Unit] = {}  # id(data dict) -> unit not yet fully written
        self.early: dict[int, list[bytes]] = {}  # db -> keys serialized before its turn
        # the memory of the values serialized early because a command reached them first:
        # what the snapshot copies on write (INFO's current_cow_size, a child's copied pages)
        self.copied = 0
        for db in range(ks.databases):
            units = [_Unit(db, s.values(db), s.deadlines(db)) for s in ks.shards if s.count(db)]
            if units:
                size = sum(len(u.data) for u in units)
                expires = sum(len(u.expires) for u in units)
                self.dbs.append((db, units, size, expires))
                for u in units:
                    self.units[id(u.data)] = u
        self.written = False  # the footer is written (complete)
        self.current_db = -1
        self.next_db = 0  # index into self.dbs
        self.unit: _Unit | None = None
        self.pending_units: list[_Unit] = []
        self._write(encoder.header())
        self._write(encoder.functions(functions))

    # -- the hook -------------------------------------------------------------------------

    def before_key(self, db: int, key: bytes) -> None:
        self.before(self.ks.shard_for(key), db, key)

    def before(self, shard: Any, db: int, key: bytes) -> None:
        """`key` of `db` in `shard` is about to be read or changed: if its unit is not
        written yet, write the key as it is now (or mark it absent) first."""
        unit = self.units.get(id(shard.values(db)))
        if unit is None or key in unit.done:
            return
        unit.done.add(key)
        value = unit.data.get(key)
        if value is None:
            return
        chunk = self.encoder.key(key, value, unit.expires.get(key))
        self.keys_done += 1
        self.copied += value_size(value)  # in memory, as a child's copied pages count
        if unit.db == self.current_db:
            self._write(chunk)
        else:
            self.early.setdefault(unit.db, []).append(chunk)

    # -- the walk -------------------------------------------------------------------------

    def step(self, budget_s: float = STEP_S, batch: int = 256) -> bool:
        """Write keys for about `budget_s` seconds, looking at the clock every `batch`
        keys; False once the snapshot is complete (then the caller calls `finish`)."""
        stop = time.perf_counter() + budget_s
        encode = self.encoder.key
        while True:
            unit = self.unit
            if unit is None:
                unit = self._next_unit()
                if unit is None:
                    return False
            keys = unit.keys
            if keys is None:
                keys = unit.keys = list(unit.data)
            data, expires, done = unit.data, unit.expires, unit.done
            pos, end = unit.pos, len(keys)
            while pos < end:
                stop_at = min(pos + batch, end)
                for key in keys[pos:stop_at]:
                    if key not in done:
                        done.add(key)  # so that `before` does not write it again
                        value = data.get(key)
                        if value is not None:
                            self._write(encode(key, value, expires.get(key)))
                            self.keys_done += 1
                pos = stop_at
                if time.perf_counter() > stop:
                    break
            unit.pos = pos
            if pos >= end:
                del self.units[id(unit.data)]
                unit.keys = None
                unit.done.clear()
                self.unit = None
            if time.perf_counter() > stop:
                return True

    def _next_unit(self) -> _Unit | None:
        if not self.pending_units:
            if self.next_db >= len(self.dbs):
                return None
            db, units, size, expires = self.dbs[self.next_db]
            self.next_db += 1
            self.current_db = db
            self._write(self.encoder.select_db(db, size, expires))
            for chunk in self.early.pop(db, ()):
                self._write(chunk)
            self.pending_units = list(reversed(units))
        self.unit = self.pending_units.pop()
        return self.unit

    def run(self) -> None:
        while self.step(3600.0):
            pass

    def complete(self) -> None:
        """After the walk: write the footer; the file is then whole but not yet
        fsynced."""
        self._flush()
        self.out.write(self.encoder.footer(self.crc))
        self.out.flush()
        self.written = True

    def finish(self) -> None:
        """Walk what is left, complete the file and fsync it, all at once (SAVE)."""
        if not self.written:
            self.run()
            self.complete()
        if isinstance(self.out, io.IOBase):  # (not a diskless payload's sockets)
            os.fsync(self.out.fileno())

    # -- output ---------------------------------------------------------------------------

    def _write(self, chunk: bytes) -> None:
        if chunk:
            self.buf.append(chunk)
            self.buffered += len(chunk)
            if self.buffered >= WRITE_BUFFER:
                self._flush()

    def _flush(self) -> None:
        if self.buf:
            data = b''.join(self.buf)
            self.buf.clear()
            self.buffered = 0
            if self.encoder.checksum:
                self.crc = _CRC.calc(data, self.crc)
            self.out.write(data)
