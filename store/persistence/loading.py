"""Loading at start-up, and the loading state (the `Loading` half of manager.Persistence).

- `load`: from the AOF when `appendonly` is on, else from the RDB file. The server already
  listens meanwhile and answers -LOADING (store/connection.py); keyspace events are off and
  the clock is frozen so that nothing expires while data comes in, as Redis's loading
  does (`loading_state`). Keys whose deadline passed while the server was down are then
  expired by active expiry in one go, before the first client command runs, so their
  `expired` events are published and journaled with their true deadlines and lag.
- An RDB file's keys come in batches (rdb_loader.RdbLoader.batches) that go straight into
  the shards' dicts and are charged as they go in, with the cyclic GC off until the end;
  then the loaded objects are moved to the oldest generation without a pass over them.
  Small aggregates stay packed (store/types/packed.py) until a command first reads them:
  the loader is `lazy` into an empty keyspace, the file's checksum is checked before the
  load completes, and the keyspace decodes a packed value on its first lookup. A value
  failing Redis's integrity checks ends the start with rdbReportCorruptRDB's lines and
  redis-check-rdb's report (`_report_corrupt`).
  Costs for 1M mixed keys (CPU time, shared 2-core box): decode 2.7 -> 1.3 s with packed
  aggregates, inserting 0.5 s (the dict inserts themselves: 0.4 s for 1M keys into one
  dict from C), charging 0.3 s, deadline index rebuild 0.1 s; the whole load 4.0 -> 2.4 s.
  The reading (`_load_rdb_steps`) and the filling of the keyspace (`_insert_steps`) are
  apart: a replica's diskless load reads its payload as it arrives (rdb_stream.py) and
  inserts the records at the end (`insert_loaded`), with the same code.
- A replica's async loading (`async_loading_state`): swapdb from the master of its own
  history serves the old data meanwhile, so only `server.loading` (what CONFIG SET's
  DENY_LOADING_CONFIG check reads) and persistence.async_loading are set, and
  store/connection_gate.py refuses the no_async_loading commands alone.
- INFO's loading_* fields while it runs (`_loading_info`).
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
import time
from collections.abc import Generator, Iterator
from typing import Any

from .. import clock
from ..memory.sizes import TTL_OVERHEAD, batch_charges
from ..rdb import RdbError
from ..resp import RedisError
from .errors import LoadError
from .payload_check import check_payload, corrupt_message
from .rdb_loader import KeyExtra, RdbCorrupt, RdbLoader, Record

# redis-check-rdb's names of the value types (rdb_type_string)
_TYPE_NAMES = {
    0: 'string',
    1: 'list-linked',
    2: 'set-hashtable',
    3: 'zset-v1',
    4: 'hash-hashtable',
    5: 'zset-v2',
    6: 'module-value',
    9: 'hash-zipmap',
    10: 'list-ziplist',
    11: 'set-intset',
    12: 'zset-ziplist',
    13: 'hash-ziplist',
    14: 'quicklist',
    15: 'stream',
    16: 'hash-listpack',
    17: 'zset-listpack',
    18: 'quicklist-v2',
}
LOAD_SLICE_S = 0.01  # loading time between two turns of the loop (-LOADING replies)


class Loading:
    """Persistence's loading: a mixin of manager.Persistence, whose fields it uses."""

    # -- loading --------------------------------------------------------------------------

    async def load(self: Any) -> None:
        """Start-up: load the AOF or the RDB file; raises LoadError."""
        cfg = self.server.config
        with self.loading_state():
            if cfg['appendonly']:
                await self.aof.load()  # sets load_total
            elif os.path.exists(self.rdb_path()):
                self.load_total = os.path.getsize(self.rdb_path())
                await self.load_rdb(self.rdb_path())
                from ..replication_history import restore

                restore(self.server.replication, self.last_aux, bool(cfg['replicaof']))
        # the AOF is open before the expiries, so their DELs and journal entries reach it
        self.aof.apply_config('appendonly')
        await self.expire_after_load()
        self.dirty_at_save = self.changes()  # what was loaded is on disk already

    async def load_rdb(self: Any, path: str) -> None:
        for _ in self._load_rdb_steps(path):
            await asyncio.sleep(0)

    def load_rdb_now(
        self: Any, path: str, allow_dup: bool = False, data: bytes | None = None
    ) -> None:
        with self.loading_state():
            for _ in self._load_rdb_steps(path, allow_dup, data):
                pass

    def _load_rdb_steps(
        self: Any, path: str, allow_dup: bool = False, data: bytes | None = None
    ) -> Iterator[None]:
        """Load an RDB file into the (empty) keyspace, yielding every few thousand keys.
        `allow_dup` (RDBFLAGS_ALLOW_DUP, DEBUG RELOAD MERGE): a library of the file
        replaces one of the same name, which is otherwise an error. `data`: the RDB's
        bytes instead of the file's (a replica's load of a payload it kept)."""
        server = self.server
        started = time.time()
        if data is None:
            try:
                with open(path, 'rb') as f:
                    data = f.read()
            except OSError as e:
                raise LoadError(f'Fatal error loading the DB: {e.strerror}. Exiting.') from None
        ks = server.keyspace
        cfg = server.config
        # Into an empty keyspace (start-up, DEBUG RELOAD) small aggregates stay packed until
        # first used (types/packed.py): the file's checksum is checked before the load
        # completes.
        fresh = not any(ks.dbsize(n) for n in range(ks.databases))
        loader = RdbLoader(data, ks.limits, cfg['rdbchecksum'], lazy=fresh)
        # rdbLoadObject's integrity checks: those Redis always runs, on a value the codec
        # refuses (to report it as Redis does), and all of them on every aggregate with
        # sanitize-dump-payload yes (deep_integrity_validation, as for a RESTORE)
        loader.integrity = check_payload
        loader.deep = cfg['sanitize-dump-payload'] == 'yes'
        delay = cfg['key-load-delay']
        if delay:
            loader.batch = 1  # a pause per key, and a turn of the loop between any two
        try:
            loaded, expired = yield from self._insert_steps(
                loader.batches(), loader, allow_dup, delay
            )
        except RdbCorrupt as e:
            self._report_corrupt(path, e, self.last_aux)
            raise LoadError('Terminating server after rdb file reading failure.') from None
        except RdbError as e:
            if str(e).startswith('Wrong RDB checksum'):  # rdbLoadRio's words, then its report
                server.log(str(e).split(' (RDB offset')[0] + '. Aborting now.', '#')
                server.log(
                    'Internal error in RDB reading offset 0, function at rdb.c:0 -> RDB CRC error',
                    '#',
                )
            raise LoadError(
                f'Short read or OOM loading DB. Unrecoverable error, aborting now. ({path}: {e})'
            ) from None
        self.load_done += len(data)
        self.load_pos = 0
        self.rdb_end = loader.pos  # an old-style AOF's command tail starts here (aof.py)
        self.log_loaded(loader, loaded, expired)
        server.log(f'DB loaded from disk: {time.time() - started:.3f} seconds')

    def insert_loaded(self: Any, items: list[Record]) -> int:
        """The records of an RDB read beforehand (rdb_stream.py: a replica's payload,
        read as it arrived) into the empty keyspace, at once; returns the keys loaded.
        Functions are not among them: they were loaded as they were read."""
        for _ in self._insert_steps(iter(items), None, False, 0):
            pass
        loaded: int = self.load_keys_loaded
        return loaded

    def _insert_steps(
        self: Any, items: Iterator[Record], loader: RdbLoader | None, allow_dup: bool, delay: int
    ) -> Generator[None, None, tuple[int, int]]:
        """rdbLoadRio's part that fills the keyspace, from the records as RdbLoader.batches
        gives them (`loader` the one reading them, for INFO's progress), yielding every
        LOAD_SLICE_S; returns (keys loaded, keys already expired). `delay`: key-load-delay,
        a pause after each key (the loader hands them over one at a time then)."""
        server = self.server
        ks = server.keyspace
        cfg = server.config
        db = 0
        into = ks.load_into(0)
        db_used = [0] * ks.databases  # what the keys loaded into each database cost
        # Into an empty keyspace (start-up, DEBUG RELOAD, a replica's sync) keys go
        # straight into the shards' dicts, deadlines too (the deadline indexes are rebuilt
        # once at the end), each batch charged as it goes in (a recount after the load
        # walked 1M cold objects again: 1.2 s); DEBUG RELOAD NOFLUSH/MERGE loads over
        # existing keys, which ks.set replaces, and recounts.
        fresh = not any(ks.dbsize(n) for n in range(ks.databases))
        # keys already expired (counted for the log line; active expiry removes them after
        # the load): a master's, as rdbLoadRio skips them only when it is one
        now = clock.now_ms() if not cfg['replicaof'] else None
        expired = 0
        earliest = None  # the earliest deadline loaded, for the expiry timer
        loaded = 0
        aux: dict[bytes, bytes] = {}
        self.last_aux = aux  # the file's aux fields (repl-stream-db for a replica)
        next_turn = time.perf_counter() + LOAD_SLICE_S
        # Millions of new objects would trigger the cyclic collector again and again,
        # each pass walking everything loaded so far: off while loading (R measured the
        # load of 1M small aggregates going from ~64k to ~106k keys/s).
        gc_was_on = gc.isenabled()
        gc.disable()
        try:
            for item in items:
                kind = item[0]
                if kind == 'keys':
                    keys, values, extras = item[1], item[2], item[3]
                    if not fresh:
                        self._load_over(db, keys, values, extras)
                    else:
                        # charged now, while the batch's values are in the CPU's caches
                        size, charges = batch_charges(keys, values, item[4])
                        db_used[db] += size
                        into.put(keys, values, charges)
                        for i, deadline, idle, freq in extras:
                            key = keys[i]
                            if deadline is not None:
                                into.put_deadline(key, deadline)
                                if earliest is None or deadline < earliest:
                                    earliest = deadline
                            if idle is not None or freq is not None:  # IDLE / FREQ opcodes
                                ks.set_access(db, key, idle, freq)
                    loaded += len(keys)
                    if extras and now is not None:
                        for x in extras:
                            if x[1] is not None and x[1] < now:
                                expired += 1
                    if delay:
                        debug_delay(delay)
                    if time.perf_counter() > next_turn:
                        if loader is not None:
                            self.load_pos = loader.pos
                        yield
                        next_turn = time.perf_counter() + LOAD_SLICE_S
                elif kind == 'db':
                    db = item[1]
                    if db >= ks.databases:
                        raise LoadError(too_many_databases(ks.databases))
                    into = ks.load_into(db)
                elif kind == 'aux':
                    aux[item[1]] = item[2]
                elif kind == 'function':
                    try:
                        server.functions.create(item[1], allow_dup)
                    except RedisError as e:
                        raise LoadError(f'Failed loading library: {e}') from None
            if earliest is not None:  # deadlines went into `expires` directly
                ks.rebuild_deadline_indexes()
                if earliest < ks.timer.next_deadline:
                    ks.timer.reschedule(earliest)
            if fresh and sum(ks.dbsize(n) for n in range(ks.databases)) == loaded:
                for n, size in enumerate(db_used):
                    size += TTL_OVERHEAD * ks.volatile_count(n)
                    ks.db_used[n] += size
                    ks.used += size
            else:  # over existing keys, or a file holding a key twice (charged twice)
                ks.recount()
        finally:
            # What was loaded goes to the oldest generation without a pass over it (freeze
            # moves every tracked object out of the young ones, unfreeze puts them back as
            # old; nothing else in the server freezes objects): else the first young
            # collection after gc.enable walks all of it, then the next one again (~0.3 s
            # for 1M keys, before the first reply). The first full collection, later,
            # still walks it once (~0.9 s for 1M mixed keys), as it would have.
            gc.freeze()
            gc.unfreeze()
            if gc_was_on:
                gc.enable()
        self.load_keys_loaded = loaded
        return loaded, expired

    def log_loaded(self: Any, loader: RdbLoader, loaded: int, expired: int) -> None:
        """rdbLoadRio's last lines: the empty keys it skipped, then the keys loaded."""
        server = self.server
        for key in loader.empty_names:
            server.log(f"rdbLoadObject skipping empty key: {key.decode('utf-8', 'replace')}", '#')
        loaded -= expired  # rdb_last_load_keys_loaded leaves them out
        if loader.empty_keys:
            server.log(
                f'Done loading RDB, keys loaded: {loaded}, keys expired: {expired}, '
                f'empty keys skipped: {loader.empty_keys}.',
                '#',
            )
        else:
            server.log(f'Done loading RDB, keys loaded: {loaded}, keys expired: {expired}.')

    def _report_corrupt(self: Any, path: str, e: RdbCorrupt, aux: dict[bytes, bytes]) -> None:
        """rdbReportCorruptRDB while loading a file: the error logged, then
        redis-check-rdb's report of the file (on stdout, as redis_check_rdb_main prints
        it); the caller then ends the server with status 1."""
        server = self.server
        server.log(corrupt_message(e.found), '#')
        name = os.path.basename(path)
        lines = [f'[offset 0] Checking RDB file {name}']
        for k, v in aux.items():
            lines.append(
                f"[offset 0] AUX FIELD {k.decode('utf-8', 'replace')} = "
                f"'{v.decode('utf-8', 'replace')}'"
            )
        lines += [
            '--- RDB ERROR DETECTED ---',
            f'[offset {e.offset}] {corrupt_message(e.found)}',
            '[additional info] While doing: read-object-value',
            f"[additional info] Reading key '{e.key.decode('utf-8', 'replace')}'",
            f'[additional info] Reading type {e.type} ({_TYPE_NAMES.get(e.type, "unknown")})',
        ]
        try:
            print('\n'.join(lines), file=server.log_stream, flush=True)
        except (OSError, ValueError):
            pass

    def _load_over(
        self: Any, db: int, keys: list[bytes], values: list[Any], extras: list[KeyExtra]
    ) -> None:
        """Loaded keys into a keyspace that has keys already (DEBUG RELOAD NOFLUSH or
        MERGE): a key without a TTL over one without a TTL goes into its shard's dict
        (charged by the recount after the load), anything else through ks.set."""
        ks = self.server.keyspace
        more = {e[0]: e for e in extras}
        into = ks.load_into(db)
        for i, key in enumerate(keys):
            e = more.get(i)
            if e is None and ks.stored(db, key)[1] is None:
                into.put([key], [values[i]], [])
            else:
                ks.set(db, key, values[i], None if e is None else e[1])
            if e is not None and (e[2] is not None or e[3] is not None):
                ks.set_access(db, key, e[2], e[3])

    def loading_state(self: Any) -> Any:
        return _Loading(self)

    def async_loading_state(self: Any) -> Any:
        return _Loading(self, asynchronous=True)

    async def expire_after_load(self: Any) -> None:
        """Keys whose deadline passed while the server was down: expired now, through
        active expiry, so each gets its `expired` event with its true deadline and lag."""
        ks = self.server.keyspace
        before = ks.expired_keys
        while ks.expire_due(0.005):
            await asyncio.sleep(0)
        self.load_keys_expired = ks.expired_keys - before
        # Redis skips such keys as it reads them: they count as expired, not as loaded
        self.load_keys_loaded = max(self.load_keys_loaded - self.load_keys_expired, 0)

    def _loading_info(self: Any) -> list[tuple[str, Any]]:
        """INFO's loading_* fields, as Redis computes them (eta from the rate so far)."""
        total, loaded = self.load_total, self.load_done + self.load_pos
        perc, remaining = 0.0, 1
        if total:
            perc = loaded / total * 100
            remaining = total - loaded
        elif loaded:
            perc, remaining = 100.0, 0
        elapsed = int(time.time() - self.load_started)
        eta = elapsed * remaining // (loaded + 1) if elapsed else 1
        return [
            ('loading_start_time', int(self.load_started)),
            ('loading_total_bytes', total),
            ('loading_rdb_used_mem', 0),
            ('loading_loaded_bytes', loaded),
            ('loading_loaded_perc', f'{perc:.2f}'),
            ('loading_eta_seconds', eta),
        ]


class _Loading:
    """While loading: clients get -LOADING, keyspace events are off, and the clock is
    frozen at 1 ms after the epoch so that no key counts as expired (Redis does not
    expire keys while loading).

    A replica's async loading (`asynchronous`: swapdb from its own master's history, the
    payload is the same data set at a later point) serves the old data meanwhile, so
    neither the clock nor the keyspace events stop, and only the commands flagged
    no_async_loading (and CONFIG SET of the DENY_LOADING_CONFIG parameters) get -LOADING.
    As in Redis, `server.loading` is set too (that is what CONFIG SET, MONITOR, SHUTDOWN
    test), while INFO's `loading` (persistence.loading) stays 0 and `async_loading` is 1."""

    def __init__(self, p: Any, asynchronous: bool = False) -> None:
        self.p = p
        self.asynchronous = asynchronous

    def __enter__(self) -> None:
        p = self.p
        server = p.server
        p.load_started = time.time()
        p.load_total = p.load_done = p.load_pos = 0
        server.loading = True
        if self.asynchronous:
            p.async_loading = True
        else:
            p.loading = True
            server.keyspace.set_event_flags(0, 0)
            clock.freeze(1)
        server.update_gates()

    def __exit__(self, *exc: object) -> None:
        p = self.p
        server = p.server
        if self.asynchronous:
            p.async_loading = False
        else:
            clock.freeze(0)
            server.apply_config('notify-keyspace-events')
            p.loading = False
        server.loading = False
        server.update_gates()


def debug_delay(usec: int) -> None:
    """debugDelay, key-load-delay's pause after each key loaded: `usec` microseconds, or
    for a negative value 1 us once in -usec keys (Redis's way of sleeping less than a
    system call's cost per key)."""
    if usec < 0:
        usec = 1 if random.randrange(-usec) == 0 else 0
    if usec:
        time.sleep(usec / 1e6)


def too_many_databases(databases: int) -> str:
    return (
        f'FATAL: Data file was created with a Redis server configured to handle more '
        f'than {databases} databases. Exiting'
    )
