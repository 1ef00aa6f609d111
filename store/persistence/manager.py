"""The persistence manager: what the server owns of persistence.

- Snapshots (snapshot.py) into `dir`/`dbfilename`: SAVE runs one at once, BGSAVE and save
  points step one between commands. Either writes `temp-<pid>.rdb`, fsyncs it and renames
  it over the last good file, so a crash mid-save never damages it. At most one snapshot
  runs at a time; the AOF rewrite takes the same slot (`start_snapshot`), and a BGSAVE
  asked for meanwhile with SCHEDULE waits for it, as in Redis.
- Changes since the last save (`changes()`): Redis's `server.dirty`, the keyspace's
  count of writes that changed the data set (`Keyspace.changes`: a SADD of a member
  already there or a SETBIT of the bit it had counts nothing) plus keys expired.
- Loading at start-up (`load`): from the AOF when `appendonly` is on, else from the RDB
  file. The server already listens meanwhile and answers -LOADING (store/connection.py);
  keyspace events are off and the clock is frozen so that nothing expires while data
  comes in, as Redis's loading does. Keys whose deadline passed while the server was down
  are then expired by active expiry in one go, before the first client command runs, so
  their `expired` events are published and journaled with their true deadlines and lag.
  An RDB file's keys come in batches (rdb_codec.RdbLoader.batches) that go straight into
  the shards' dicts and are charged as they go in, with the cyclic GC off until the end;
  then the loaded objects are moved to the oldest generation without a pass over them.
  Small aggregates stay packed (store/types/packed.py) until a command first reads them:
  the loader is `lazy` into an empty keyspace, the file's checksum is checked before the
  load completes, and the keyspace decodes a packed value on its first lookup.
  Costs for 1M mixed keys (CPU time, shared 2-core box): decode 2.7 -> 1.3 s with packed
  aggregates, inserting 0.5 s (the dict inserts themselves: 0.4 s for 1M keys into one
  dict from C), charging 0.3 s, deadline index rebuild 0.1 s; the whole load 4.0 -> 2.4 s.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import time
from binascii import crc_hqx
from collections.abc import Callable, Iterator
from typing import Any

from .. import clock
from ..db_slice import key_slot
from ..memory.sizes import TTL_OVERHEAD, batch_charges
from ..rdb import dump_payload
from ..resp import RedisError
from .aof import Aof, LoadError
from .child import ChildStandIn
from .debug_load import debug_loadaof, debug_replicate
from .files import install, remove
from .payload_check import check_payload, corrupt_message, footer_valid, restore_value
from .rdb_codec import RdbCorrupt, RdbEncoder, RdbError, RdbLoader
from .snapshot import Snapshot

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
E_BGSAVE_RUNNING = 'ERR Background save already in progress'
E_MISCONF = (
    "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist "
    'to disk. Commands that may modify the data set are disabled, because this instance is '
    'configured to report errors during writes if RDB snapshotting fails '
    '(stop-writes-on-bgsave-error option). Please check the Redis logs for details about the '
    'RDB error.'
)


class Persistence:
    def __init__(self, server: Any) -> None:
        self.server = server
        self.snapshot: Snapshot | None = None  # the running one, BGSAVE's or the rewrite's
        self.snapshot_kind = ''  # 'rdb' or 'aof'
        self.snapshot_done: Callable[[bool], None] | None = None
        self.snapshot_started = 0.0
        self.bgsave_scheduled = False
        self.dirty_offset = self.dirty_seen = 0
        self.dirty_at_save = 0
        self.last_bgsave_ok = True
        self.last_cow_size = 0  # rdb_last_cow_size: the last BGSAVE's copy-on-write bytes
        self.last_bgsave_time = -1
        self.saves = 0
        self.last_save_try = 0.0
        self.loading = False
        # while loading (INFO's loading_* fields): when it started, the bytes of all the
        # files, of the files already loaded, and into the current one
        self.load_started = 0.0
        self.load_total = self.load_done = self.load_pos = 0
        self.load_keys_loaded = self.load_keys_expired = 0
        self.rdb_end = 0  # where the last RDB loaded ended in its file
        self.last_aux: dict[bytes, bytes] = {}
        self.child: ChildStandIn | None = None  # child.py: while a snapshot runs
        self.child_signal = 0  # the signal that killed it, while its failure is handled
        self.aof = Aof(server)
        server.cron_hooks.append(self.cron)

    # -- paths and counters ---------------------------------------------------------------

    def path(self, name: str) -> str:
        return os.path.join(self.server.config['dir'], name)

    def rdb_path(self) -> str:
        return self.path(self.server.config['dbfilename'])

    def changes(self) -> int:
        """Redis's server.dirty: writes done since the server started."""
        ks = self.server.keyspace
        n = ks.changes + ks.expired_keys + self.dirty_offset
        if n < self.dirty_seen:  # CONFIG RESETSTAT zeroed the counters: stay monotonic
            self.dirty_offset += self.dirty_seen - n
            n = self.dirty_seen
        self.dirty_seen = n
        return n

    def changes_since_save(self) -> int:
        return self.changes() - self.dirty_at_save

    def _saved(self, dirty: int) -> None:
        self.dirty_at_save = dirty
        self.server.lastsave = int(time.time())
        self.saves += 1

    def encoder(self) -> RdbEncoder:
        """The RDB file's encoder, with the replication aux fields when there is a
        history to continue after a restart (store/replication_history.py)."""
        from ..replication_history import save_aux

        cfg = self.server.config
        return RdbEncoder(
            cfg['rdbcompression'], cfg['rdbchecksum'], save_aux(self.server.replication)
        )

    # -- DUMP / RESTORE payloads: the value as an RDB file holds it -----------------------

    def dump(self, value: Any) -> bytes:
        """DUMP's payload (createDumpPayload): the value's type and encoding as the RDB
        file has them, then the RDB version and the CRC64, so redis-server RESTOREs it."""
        return dump_payload(RdbEncoder(self.server.config['rdbcompression']).value(value))

    def debug_loadaof(self) -> None:
        """DEBUG LOADAOF (persistence/debug_load.py)."""
        debug_loadaof(self.server)

    def debug_replicate(self, args: list[bytes]) -> None:
        """DEBUG REPLICATE (persistence/debug_load.py)."""
        debug_replicate(self.server, args)

    def footer_valid(self, payload: bytes, skip_checksum: bool = False) -> bool:
        """RESTORE's verifyDumpPayload (persistence/payload_check.py)."""
        return footer_valid(payload, skip_checksum)

    def restore(self, conn: Any, payload: bytes) -> Any:
        """The value of a RESTORE payload whose footer passed, in the encodings the
        keyspace's limits give, after Redis's integrity checks (persistence/payload_check.py);
        None when it does not decode: 'Bad data format'."""
        return restore_value(conn, payload)

    # -- snapshots ------------------------------------------------------------------------

    def _open(self, path: str, encoder: Any = None) -> Snapshot:
        """A snapshot of the keyspace as of now into a new file at `path` (the snapshot
        owns the file until it ends)."""
        out = open(path, 'wb')  # noqa: SIM115 - open across loop turns, closed by _end/save
        try:
            return Snapshot(
                self.server.keyspace,
                encoder if encoder is not None else self.encoder(),
                out,
                self.server.functions.codes(),
            )
        except BaseException:
            out.close()
            raise

    def save(self) -> None:
        """SAVE: write the RDB file now; raises RedisError when it cannot. A running AOF
        rewrite is first completed (two snapshots cannot shadow the keyspace at once)."""
        if self.snapshot is not None:
            if self.snapshot_kind == 'rdb':
                raise RedisError(E_BGSAVE_RUNNING)
            self.complete_running()
        dirty = self.changes()
        final = self.rdb_path()
        tmp = self.path(f'temp-{os.getpid()}.rdb')
        try:
            snap = self._open(tmp)
            try:
                # rdb-key-save-delay: µs per key, as rdbSave's debugDelay (a signal's
                # handler runs meanwhile: a second SIGINT exits, store/shutdown.py)
                delay = self.server.config['rdb-key-save-delay']
                while delay > 0 and snap.step(0.0, 1):
                    time.sleep(delay / 1e6)
                snap.finish()
            finally:
                snap.abort()
                snap.out.close()
            install(tmp, final)
        except OSError as e:
            self.server.log(f'Failed saving the DB: {e.strerror or e}', '#')
            remove(tmp)
            raise RedisError('ERR') from None
        except BaseException:
            remove(tmp)
            raise
        self.server.log('DB saved on disk')
        self._saved(dirty)

    def complete_running(self) -> None:
        """Finish the running background snapshot synchronously."""
        snap = self.snapshot
        if snap is None:
            return
        try:
            snap.finish()
        except Exception as e:
            self.server.log_exception('Snapshot failed', e)
            self._end(snap, False)
            return
        self._end(snap, True)

    def bgsave(self, schedule: bool = False, in_exec: bool = False) -> str:
        """BGSAVE [SCHEDULE]: the reply text, or RedisError. Inside MULTI/EXEC it is
        always scheduled (for the next cron), as in Redis."""
        if self.snapshot is not None and self.snapshot_kind == 'rdb':
            raise RedisError(E_BGSAVE_RUNNING)
        if self.snapshot is not None or in_exec:
            if not (schedule or in_exec):
                raise RedisError(
                    "ERR Another child process is active (AOF?): can't BGSAVE right now. "
                    'Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.'
                )
            self.bgsave_scheduled = True
            return 'Background saving scheduled'
        self._start_bgsave()
        return 'Background saving started'

    def check_writes(self) -> None:
        """stop-writes-on-bgsave-error: after a failed background save, with save points
        set, writes (and PING) are refused with -MISCONF until a save succeeds (Redis's
        writeCommandsDeniedByDiskError); so are they after a failed AOF write."""
        cfg = self.server.config
        denied = None
        if cfg['stop-writes-on-bgsave-error'] and cfg['save'] and not self.last_bgsave_ok:
            denied = E_MISCONF
        elif self.aof.on and not self.aof.last_write_ok:
            denied = f'MISCONF Errors writing to the AOF file: {self.aof.last_write_error}'
        if denied != self.server.write_denied:
            self.server.write_denied = denied
            self.server.update_gates()

    def _start_bgsave(self) -> bool:
        final = self.rdb_path()
        tmp = self.path(f'temp-{os.getpid()}.rdb')
        dirty = self.changes()
        self.last_save_try = time.time()

        def done(ok: bool) -> None:
            self.last_bgsave_time = int(time.time() - self.snapshot_started)
            if ok:
                try:
                    install(tmp, final)
                except OSError as e:
                    self.server.log(f'Error moving temp DB file on the final destination: {e}')
                    ok = False
                else:
                    self.server.log('Background saving terminated with success')
                    self._saved(dirty)
            else:
                remove(tmp)
                if not self.child_signal:  # else logged as terminated by that signal
                    self.server.log('Background saving error', '#')
                if self.child_signal == signal.SIGUSR1:  # Redis's way to stop one quietly
                    ok = True
            self.last_bgsave_ok = ok
            self.check_writes()

        try:
            started = self.start_snapshot(tmp, None, done, kind='rdb')
        except OSError as e:  # where Redis's child would fail: reported as a failed save
            self.server.log(
                f'Failed opening the temp RDB file {os.path.basename(tmp)} (in server root dir '
                f'{self.server.config["dir"]}) for saving: {e.strerror or e}',
                '#',
            )
            self.server.log('Background saving error', '#')
            self.last_bgsave_ok = False
            self.check_writes()
            return True
        if started:
            pid = self.child.pid if self.child is not None else os.getpid()
            if pid != os.getpid():  # named after the child that writes it, as in Redis
                named = self.path(f'temp-{pid}.rdb')
                try:
                    os.rename(tmp, named)  # the open file is written on under its new name
                    tmp = named  # (what `done` installs or removes)
                except OSError:
                    pass
            self.server.log(f'Background saving started by pid {pid}')
        return started

    def start_snapshot(
        self, path: str, encoder: Any, done: Callable[[bool], None], kind: str = 'aof'
    ) -> bool:
        """Start a point-in-time snapshot of the keyspace as of now into `path`, written
        in steps between commands and fsynced; `done(ok)` is called on the loop when it is
        on disk. False when a snapshot is already running."""
        if self.snapshot is not None:
            return False
        self.snapshot = self._open(path, encoder)
        self.snapshot_kind = kind
        self.snapshot_done = done
        self.snapshot_started = time.time()
        self.child = ChildStandIn()  # Redis's fork child, for those who look for it
        self.server.stats.total_forks += 1  # INFO's total_forks counts it as a fork
        self.server.oom.child(self.child.pid)  # the child's oom-score-adj (oom_score.py)
        self.child_signal = 0
        self.server.loop.call_soon(self._step)
        return True

    def _step(self) -> None:
        snap = self.snapshot
        if snap is None or snap.written:
            return
        # Replies of the commands run since the last step leave first: they wait for the
        # end of the loop turn (Server.flush_pending), which comes after this step.
        if self.server.pending_flush:
            self.server.flush_pending()
        # rdb-key-save-delay: µs per key, for tests (as Redis). The loop's timers count
        # whole milliseconds (a shorter call_later fires on the next turn, however fast
        # that comes), so a step writes a millisecond's worth of keys and waits for it.
        delay = self.server.config['rdb-key-save-delay']
        keys = max(1, 1000 // delay) if delay > 0 else 0
        try:
            more = snap.step(0.0, keys) if delay > 0 else snap.step()
            if not more:
                snap.complete()
        except Exception as e:  # a bug or a full disk: the snapshot fails, the server goes on
            self.server.log_exception('Snapshot failed', e)
            self._end(snap, False)
            return
        if more:
            if delay > 0:
                self.server.loop.call_later(keys * delay / 1e6, self._step)
            else:
                self.server.loop.call_soon(self._step)
            return
        # fsync can take long on a big file: off the loop, then finish on it
        fut = self.server.loop.run_in_executor(None, os.fsync, snap.out.fileno())
        fut.add_done_callback(lambda f: self._end(snap, f.exception() is None))

    def _end(self, snap: Snapshot, ok: bool) -> None:
        """The snapshot `snap` is over (`ok`: on disk); no-op when it already ended."""
        if snap is not self.snapshot:
            return
        done = self.snapshot_done
        self.snapshot = self.snapshot_done = None
        if self.snapshot_kind != 'aof':  # a BGSAVE's or a replica's payload: an RDB child
            self.last_cow_size = snap.copied
        if self.child is not None:
            self.child.end()
            self.child = None
        snap.abort()
        snap.out.close()
        if done is not None:
            done(ok)
        if self.bgsave_scheduled and self.snapshot is None:
            self.bgsave_scheduled = False
            self._start_bgsave()

    def flushed_all(self) -> None:
        """After FLUSHALL, as Redis's flushAllDataAndResetRDB: a running BGSAVE is
        dropped and, with save points set, the now empty dataset is saved at once, so a
        restart does not bring the flushed keys back."""
        if self.snapshot is not None and self.snapshot_kind == 'rdb':
            self.kill_snapshot()
        if self.server.config['save']:
            try:
                self.save()  # FLUSHALL's own change is counted already
            except RedisError:
                pass  # logged by save; FLUSHALL itself succeeded

    def kill_snapshot(self) -> None:
        """Stop a running BGSAVE (SHUTDOWN, FLUSHALL in Redis kill the child)."""
        if self.snapshot is not None:
            self._end(self.snapshot, False)

    # -- housekeeping ---------------------------------------------------------------------

    def cron(self, now: float) -> None:
        if self.loading:
            return
        child = self.child
        if child is not None and self.snapshot is not None:
            sig = child.killed_by()
            if sig:  # its child killed: the snapshot fails, as Redis's does
                self.child_signal = sig
                what = 'AOF rewrite' if self.snapshot_kind == 'aof' else 'saving'
                self.server.log(f'Background {what} terminated by signal {sig}', '#')
                self._end(self.snapshot, False)
                self.child_signal = 0
        self.aof.cron(now)
        self.check_writes()
        if self.snapshot is not None:
            return
        if self.bgsave_scheduled:
            self.bgsave_scheduled = False
            self._start_bgsave()
            return
        points = [int(n) for n in self.server.config['save'].split()]
        if not points:
            return
        # rdbSaveBackground is retried after an error only after CONFIG_BGSAVE_RETRY_DELAY
        if not self.last_bgsave_ok and now - self.last_save_try <= 5:
            return
        changes = self.changes_since_save()
        elapsed = now - self.server.lastsave
        for seconds, count in zip(points[::2], points[1::2]):
            if changes >= count and elapsed > seconds:
                self.server.log(f'{count} changes in {seconds} seconds. Saving...')
                self._start_bgsave()
                return

    def shutdown(self, mode: str = 'default') -> bool:
        """Before exit: `save` saves, `nosave` does not, `default` saves when save points
        are configured (SHUTDOWN, SIGTERM). False when the save failed."""
        self.kill_snapshot()
        self.aof.close()
        if mode == 'nosave' or (mode == 'default' and not self.server.config['save']):
            return True
        self.server.log('Saving the final RDB snapshot before exiting.', '#')
        try:
            self.save()
        except RedisError:
            self.server.log('Error trying to save the DB, can\'t exit.', '#')
            return False
        return True

    # -- loading --------------------------------------------------------------------------

    async def load(self) -> None:
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

    async def load_rdb(self, path: str) -> None:
        for _ in self._load_rdb_steps(path):
            await asyncio.sleep(0)

    def load_rdb_now(self, path: str, allow_dup: bool = False, data: bytes | None = None) -> None:
        with self.loading_state():
            for _ in self._load_rdb_steps(path, allow_dup, data):
                pass

    def _load_rdb_steps(
        self, path: str, allow_dup: bool = False, data: bytes | None = None
    ) -> Iterator[None]:
        """Load an RDB file into the (empty) keyspace, yielding every few thousand keys.
        `allow_dup` (RDBFLAGS_ALLOW_DUP, DEBUG RELOAD MERGE): a library of the file
        replaces one of the same name, which is otherwise an error. `data`: the RDB's
        bytes instead of the file's (a replica's diskless load, from the socket)."""
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
        db = 0
        slot_shard = ks.slot_shard
        slot_data = [s.data[0] for s in slot_shard]
        slot_charged = [s.charged[0] for s in slot_shard]
        slot_expires = [s.expires[0] for s in slot_shard]
        db_used = [0] * ks.databases  # what the keys loaded into each database cost
        # Into an empty keyspace (start-up, DEBUG RELOAD) keys go straight into the
        # shards' dicts, deadlines too (the deadline indexes are rebuilt once at the end),
        # each batch charged as it goes in (a recount after the load walked 1M cold
        # objects again: 1.2 s); DEBUG RELOAD NOFLUSH/MERGE loads over existing keys,
        # which ks.set replaces, and recounts.
        fresh = not any(ks.dbsize(n) for n in range(ks.databases))
        # Into an empty keyspace small aggregates stay packed until first used
        # (types/packed.py): the file's checksum is checked before the load completes.
        loader = RdbLoader(data, ks.limits, cfg['rdbchecksum'], lazy=fresh)
        # rdbLoadObject's integrity checks: those Redis always runs, on a value the codec
        # refuses (to report it as Redis does), and all of them on every aggregate with
        # sanitize-dump-payload yes (deep_integrity_validation, as for a RESTORE)
        loader.integrity = check_payload
        loader.deep = cfg['sanitize-dump-payload'] == 'yes'
        # keys already expired (counted for the log line; active expiry removes them after
        # the load): a master's, as rdbLoadRio skips them only when it is one
        now = clock.now_ms() if not cfg['replicaof'] else None
        expired = 0
        earliest = None  # the earliest deadline loaded, for the expiry timer
        loaded = 0
        aux: dict[bytes, bytes] = {}
        self.last_aux = aux  # the file's aux fields (repl-stream-db for a replica)
        delay = cfg['key-load-delay']
        if delay:
            loader.batch = 1  # a pause per key, and a turn of the loop between any two
        next_turn = time.perf_counter() + LOAD_SLICE_S
        # Millions of new objects would trigger the cyclic collector again and again,
        # each pass walking everything loaded so far: off while loading (R measured the
        # load of 1M small aggregates going from ~64k to ~106k keys/s).
        gc_was_on = gc.isenabled()
        gc.disable()
        try:
            for item in loader.batches():
                kind = item[0]
                if kind == 'keys':
                    keys, values, extras = item[1], item[2], item[3]
                    if not fresh:
                        self._load_over(db, keys, values, extras)
                    else:
                        # charged now, while the batch's values are in the CPU's caches
                        size, charges = batch_charges(keys, values, item[4])
                        db_used[db] += size
                        if 123 in b''.join(keys):  # a '{': some key has a hash tag
                            for key, value in zip(keys, values):
                                slot_data[key_slot(key)][key] = value
                            for key, size in charges:
                                slot_charged[key_slot(key)][key] = size
                        else:
                            for key, value in zip(keys, values):
                                slot_data[crc_hqx(key, 0) & 16383][key] = value
                            for key, size in charges:
                                slot_charged[crc_hqx(key, 0) & 16383][key] = size
                        for i, deadline, idle, freq in extras:
                            key = keys[i]
                            if deadline is not None:
                                slot_expires[key_slot(key)][key] = deadline
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
                        time.sleep(delay / 1e6)
                    if time.perf_counter() > next_turn:
                        self.load_pos = loader.pos
                        yield
                        next_turn = time.perf_counter() + LOAD_SLICE_S
                elif kind == 'db':
                    db = item[1]
                    if db >= ks.databases:
                        raise LoadError(
                            f'FATAL: Data file was created with a Redis server configured '
                            f'to handle more than {ks.databases} databases. Exiting'
                        )
                    slot_data = [s.data[db] for s in slot_shard]  # slot -> its dict
                    slot_charged = [s.charged[db] for s in slot_shard]
                    slot_expires = [s.expires[db] for s in slot_shard]
                elif kind == 'aux':
                    aux[item[1]] = item[2]
                elif kind == 'function':
                    try:
                        server.functions.create(item[1], allow_dup)
                    except RedisError as e:
                        raise LoadError(f'Failed loading library: {e}') from None
            if earliest is not None:  # deadlines went into `expires` directly
                for shard in ks.shards:
                    shard.index.rebuild()
                if earliest < ks.timer.next_deadline:
                    ks.timer.reschedule(earliest)
            if fresh and sum(ks.dbsize(n) for n in range(ks.databases)) == loaded:
                for n, size in enumerate(db_used):
                    size += TTL_OVERHEAD * sum(len(s.expires[n]) for s in ks.shards)
                    ks.db_used[n] += size
                    ks.used += size
            else:  # over existing keys, or a file holding a key twice (charged twice)
                ks.recount()
        except RdbCorrupt as e:
            self._report_corrupt(path, e, aux)
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
        self.load_done += len(data)
        self.load_pos = 0
        self.load_keys_loaded = loaded
        self.rdb_end = loader.pos  # an old-style AOF's command tail starts here (aof.py)
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
        server.log(f'DB loaded from disk: {time.time() - started:.3f} seconds')

    def _report_corrupt(self, path: str, e: RdbCorrupt, aux: dict[bytes, bytes]) -> None:
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

    def _load_over(self, db: int, keys: list[bytes], values: list[Any], extras: list) -> None:
        """Loaded keys into a keyspace that has keys already (DEBUG RELOAD NOFLUSH or
        MERGE): a key without a TTL over one without a TTL goes into its shard's dict
        (charged by the recount after the load), anything else through ks.set."""
        ks = self.server.keyspace
        more = {e[0]: e for e in extras}
        for i, key in enumerate(keys):
            e = more.get(i)
            s = ks.shard_for(key)
            if e is None and key not in s.expires[db]:
                s.data[db][key] = values[i]
            else:
                ks.set(db, key, values[i], None if e is None else e[1])
            if e is not None and (e[2] is not None or e[3] is not None):
                ks.set_access(db, key, e[2], e[3])

    def loading_state(self) -> Any:
        return _Loading(self)

    async def expire_after_load(self) -> None:
        """Keys whose deadline passed while the server was down: expired now, through
        active expiry, so each gets its `expired` event with its true deadline and lag."""
        ks = self.server.keyspace
        before = ks.expired_keys
        while ks.expire_due(0.005):
            await asyncio.sleep(0)
        self.load_keys_expired = ks.expired_keys - before
        # Redis skips such keys as it reads them: they count as expired, not as loaded
        self.load_keys_loaded = max(self.load_keys_loaded - self.load_keys_expired, 0)

    # -- INFO -----------------------------------------------------------------------------

    def info(self) -> list[tuple[str, Any]]:
        snap = self.snapshot
        bg = snap is not None and self.snapshot_kind in ('rdb', 'repl')  # replication's too
        return [
            ('loading', int(self.loading)),
            ('async_loading', 0),
            ('current_cow_peak', snap.copied if snap else 0),  # it only grows
            ('current_cow_size', snap.copied if snap else 0),
            ('current_cow_size_age', 0),  # up to date at every INFO
            ('current_fork_perc', _percent(snap) if snap else '0.00'),
            ('current_save_keys_processed', snap.keys_done if snap else 0),
            ('current_save_keys_total', snap.keys_total if snap else 0),
            ('rdb_changes_since_last_save', self.changes_since_save()),
            ('rdb_bgsave_in_progress', int(bg)),
            ('rdb_last_save_time', self.server.lastsave),
            ('rdb_last_bgsave_status', 'ok' if self.last_bgsave_ok else 'err'),
            ('rdb_last_bgsave_time_sec', self.last_bgsave_time),
            (
                'rdb_current_bgsave_time_sec',
                int(time.time() - self.snapshot_started) if bg else -1,
            ),
            ('rdb_saves', self.saves),
            ('rdb_last_cow_size', self.last_cow_size),
            ('rdb_last_load_keys_expired', self.load_keys_expired),
            ('rdb_last_load_keys_loaded', self.load_keys_loaded),
            *self.aof.info(),
            *(self._loading_info() if self.loading else ()),
        ]

    def _loading_info(self) -> list[tuple[str, Any]]:
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
    expire keys while loading)."""

    def __init__(self, p: Persistence) -> None:
        self.p = p

    def __enter__(self) -> None:
        server = self.p.server
        self.p.load_started = time.time()
        self.p.load_total = self.p.load_done = self.p.load_pos = 0
        self.p.loading = server.loading = True
        server.update_gates()
        server.keyspace.set_event_flags(0, 0)
        clock.freeze(1)

    def __exit__(self, *exc: object) -> None:
        server = self.p.server
        clock.freeze(0)
        server.apply_config('notify-keyspace-events')
        self.p.loading = server.loading = False
        server.update_gates()


def _percent(snap: Snapshot) -> str:
    """current_fork_perc: the share of the keys the running snapshot has written."""
    total = snap.keys_total
    return '%.2f' % (snap.keys_done * 100 / total if total else 0.0)
