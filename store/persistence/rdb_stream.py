"""An RDB read as its bytes arrive: a replica's diskless load (repl-diskless-load), which
Redis parses straight from the master's socket (rdbLoadRio on a connection rio) instead of
keeping the payload first.

`RdbStream` takes the payload piece by piece (`feed`, then `finish` once the last byte is
in) and reads it with rdb_loader.RdbLoader, whose reading stays what it is for a file: a
record cut by the end of what has arrived fails as a short read (or as any other error a
cut value makes), and the loader says in `safe` where reading can resume after the last
record it handed over. So each pass (`steps`) gives the loader a window of the bytes not
read yet, keeps what it hands over, and on a failure drops the window's bytes up to the
last record kept and waits for more. Only once the payload is complete is a failure the
payload's error.

Invariants:
- `buf` holds the payload's bytes from `loader.base` on; every record before that point is
  in `items` (keys, databases, aux fields: what Persistence.insert_loaded takes) or, for a
  function library, loaded into `functions`, a library context of its own (Redis's
  temporary functionsLibCtx). Nothing here touches the keyspace or the server's functions:
  the caller swaps them in once the whole payload has been read, so a load that fails
  leaves the old data as it was.
- A record is kept whole or not at all: the loader checks a batch of keys before it hands
  it over, and the state a record depends on (a key's EXPIRETIME, IDLE and FREQ opcodes
  read before the window's end, the count of empty keys skipped) is carried to the next
  window or rolled back with it.
- The CRC64 of the bytes dropped is carried in `loader.crc`, so the checksum at the end is
  the whole payload's, computed once over each byte as for a file.

Cost: a pass copies its window (the bytes not read yet) and reads it. A pass that fails
re-reads the bytes after the last record kept, so the next one waits until those have at
least doubled (`wanted`), or the payload is complete: a record of n bytes is read at most
about 2n bytes' worth, and the payload is read and copied O(1) times per byte overall. Keys
come in batches of STREAM_BATCH (one at a time with key-load-delay, which pauses after
each), small so that a failed pass drops little.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..rdb import RdbError, crc64
from ..resp import RedisError
from ..scripting.functions import LibCtx
from ..types.packed import Packed
from .errors import LoadError
from .loading import debug_delay, too_many_databases
from .payload_check import check_payload
from .rdb_loader import KeyAttrs, RdbLoader, Record, unpack

STREAM_BATCH = 256  # keys per batch: what a pass cut in a batch's middle reads again


class RdbStream:
    def __init__(self, server: Any) -> None:
        ks = server.keyspace
        cfg = server.config
        # small aggregates stay packed, as a start-up load leaves them (the keyspace is
        # empty when the records go in); a payload without a checksum after all has them
        # decoded at its end (`_unpack_all`), as the eager load would have
        loader = self.loader = RdbLoader(b'', ks.limits, cfg['rdbchecksum'], lazy=True)
        loader.streamed = True
        # the checks a file's load runs (loading.py)
        loader.integrity = check_payload
        loader.deep = cfg['sanitize-dump-payload'] == 'yes'
        self.config = cfg  # key-load-delay, read at each key as Redis reads it
        self.databases = ks.databases
        self.engine = server.functions
        self.functions = LibCtx()  # the payload's libraries, swapped in at the end
        self.items: list[Record] = []  # the records kept, in payload order
        self.keys = 0  # the keys among them
        self.buf = bytearray()  # the bytes not read yet
        self.complete = False  # the payload's last byte is in `buf`
        self.done = False  # the RDB was read to its end (EOF opcode and checksum)
        self.started = False  # the header was read: a window starts at a record
        self.pending: KeyAttrs = (None, None, None)  # deadline, lru_idle, lfu_freq read ahead
        self.wanted = 1  # bytes in `buf` before the next pass is worth it

    def feed(self, data: bytes) -> None:
        self.buf += data

    def finish(self) -> None:
        self.complete = True

    def ready(self) -> bool:
        """Whether a pass may read further than the last one did."""
        return not self.done and (self.complete or len(self.buf) >= self.wanted)

    def parsed(self) -> int:
        """The payload's bytes read into records kept (INFO's loading_loaded_bytes)."""
        return self.loader.base + self.loader.safe[0]

    def trailing(self) -> int:
        """Bytes of the payload after the RDB's end (none in a payload that is right)."""
        return len(self.buf) if self.done else 0

    def steps(self) -> Iterator[None]:
        """One pass over the bytes received: yields after each record kept (with
        key-load-delay, after each key and its pause), so the caller can serve clients
        between any two. A record the bytes do not hold yet ends the pass quietly; once
        the payload is complete, a failure raises RdbError (or LoadError: a database
        number out of range, a library that does not load)."""
        loader = self.loader
        loader.batch = 1 if self.config['key-load-delay'] else STREAM_BATCH
        window = bytes(self.buf)
        loader.data = window
        loader.end = len(window)
        loader.pos = 0
        loader.resume = (0, *self.pending) if self.started else None
        loader.safe = (0, *self.pending, loader.empty_keys)
        finished = False
        try:
            for item in loader.batches():
                self._keep(item)
                yield
            if loader.checksum_disabled and loader.packed:
                self._unpack_all()
            finished = True
        except RdbError:
            if self.complete:
                raise
        finally:
            self._advance(window, finished)

    def _keep(self, item: Record) -> None:
        kind = item[0]
        if kind == 'keys':
            self.items.append(item)
            self.keys += len(item[1])
            delay = self.config['key-load-delay']
            if delay:
                for _ in item[1]:
                    debug_delay(delay)
        elif kind == 'db':
            if item[1] >= self.databases:
                raise LoadError(too_many_databases(self.databases))
            self.items.append(item)
        elif kind == 'aux':
            self.items.append(item)
        elif kind == 'function':  # rdbFunctionLoad into the temporary context
            try:
                self.engine.create(item[1], False, self.functions)
            except RedisError as e:
                raise LoadError(f'Failed loading library, {e}') from None

    def _unpack_all(self) -> None:
        """The packed values of a payload whose checksum turned out to be 0: decoded now,
        a bad blob failing the load (RdbError), as the eager load fails it."""
        for item in self.items:
            if item[0] != 'keys':
                continue
            values = item[2]
            charges = item[4]
            for n, (i, _) in enumerate(charges):
                if type(values[i]) is Packed:
                    values[i] = unpack(values[i])
                    charges[n] = (i, 0)  # charged from the value itself (batch_charges)
        self.loader.packed = 0

    def _advance(self, window: bytes, finished: bool) -> None:
        """Drop the bytes read into records kept; the next window starts after them."""
        loader = self.loader
        if finished:
            self.done = True
            used = loader.pos
        else:
            used, deadline, idle, freq, empty = loader.safe
            self.pending = (deadline, idle, freq)
            loader.empty_keys = empty  # those skipped since are met again
            del loader.empty_names[empty:]
        if used:
            self.started = True
            if loader.checksum and not finished:
                loader.crc = crc64(memoryview(window)[:used], loader.crc)
            loader.base += used
            del self.buf[:used]  # (a bytearray drops its head without moving the rest)
        loader.safe = (0, *self.pending, loader.empty_keys)
        self.wanted = max(2 * len(self.buf), 1)
