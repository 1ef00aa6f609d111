"""The persistence manager: what the server owns of persistence.

- Snapshots (snapshot.py) into `dir`/`dbfilename`: SAVE runs one at once, BGSAVE and save
  points step one between commands. Either writes `temp-<pid>.rdb`, fsyncs it and renames
  it over the last good file, so a crash mid-save never damages it. At most one snapshot
  runs at a time; the AOF rewrite takes the same slot (`start_snapshot`), and a BGSAVE
  asked for meanwhile with SCHEDULE waits for it, as in Redis.
- Changes since the last save (`changes()`): Redis's `server.dirty`, the keyspace's
  count of writes that changed the data set (`Keyspace.changes`: a SADD of a member
  already there or a SETBIT of the bit it had counts nothing) plus keys expired.
- Loading at start-up and the loading state: loading.py (`Loading`, mixed in here).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..lifecycle import KeyObserver
from ..rdb import dump_payload
from ..resp import RedisError
from .aof import Aof
from .child import ChildStandIn
from .debug_load import debug_loadaof, debug_replicate
from .files import install, remove
from .loading import Loading
from .payload_check import footer_valid, restore_value
from .rdb_encoder import RdbEncoder
from .snapshot import Snapshot

if TYPE_CHECKING:
    from ..db_slice import DbSlice
    from ..keyspace import Keyspace

E_BGSAVE_RUNNING = 'ERR Background save already in progress'
E_MISCONF = (
    "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist "
    'to disk. Commands that may modify the data set are disabled, because this instance is '
    'configured to report errors during writes if RDB snapshotting fails '
    '(stop-writes-on-bgsave-error option). Please check the Redis logs for details about the '
    'RDB error.'
)


class Persistence(Loading, KeyObserver):
    """RDB snapshots, the AOF and loading. While a background snapshot runs, this is the
    party of the key lifecycle (store/lifecycle.py) that hands it the keys commands are
    about to read, change or delete (a SAVE runs with no command beside it)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.snapshot: Snapshot | None = None  # the running one, BGSAVE's or the rewrite's
        self.snapshot_kind = ''  # 'rdb' or 'aof'
        self.snapshot_done: Callable[[bool], None] | None = None
        self.snapshot_started = 0.0
        self.bgsave_scheduled = False
        self.dirty_offset = self.dirty_seen = 0
        self.dirty_at_save: int = 0
        self.last_bgsave_ok = True
        self.last_cow_size = 0  # rdb_last_cow_size: the last BGSAVE's copy-on-write bytes
        self.last_bgsave_time = -1
        self.saves = 0
        self.last_save_try = 0.0
        self.loading = False
        # a replica's diskless load into swapdb from its own history's master: the old data
        # is served meanwhile (INFO async_loading; store/replica.py sets it)
        self.async_loading = False
        # while loading (INFO's loading_* fields): when it started, the bytes of all the
        # files, of the files already loaded, and into the current one
        self.load_started = 0.0
        self.load_total = self.load_done = self.load_pos = 0
        self.load_keys_loaded = self.load_keys_expired = 0
        self.rdb_end = 0  # where the last RDB loaded ended in its file
        self.last_aux: dict[bytes, bytes] = {}
        self.child: ChildStandIn | None = None  # child.py: while a snapshot runs
        self.child_signal = 0  # the signal that killed it, while its failure is handled
        self.stream: Any = None  # a diskless payload's output while it is made
        self.step_blocked = False  # its next step waits for a replica to take more
        self.aof = Aof(server)
        server.cron_hooks.append(self.cron)

    # -- paths and counters ---------------------------------------------------------------

    def path(self, name: str) -> str:
        return os.path.join(self.server.config['dir'], name)

    def rdb_path(self) -> str:
        return self.path(self.server.config['dbfilename'])

    def changes(self) -> int:
        """Redis's server.dirty: writes done since the server started."""
        ks: Keyspace = self.server.keyspace
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

    def before(self, shard: DbSlice, db: int, key: bytes) -> None:
        """A key is about to be read, changed or deleted while the background snapshot
        runs (the keyspace calls this only then): it is written out first if its turn
        has not come (store/persistence/snapshot.py)."""
        snap = self.snapshot
        if snap is not None:
            snap.before(shard, db, key)

    removing = before  # a key at its deadline or evicted: written out before it goes

    def reads(self, data: object) -> bool:
        """Whether the running snapshot has yet to write the dict `data` (lazy free
        frees it only once written)."""
        snap = self.snapshot
        return snap is not None and id(data) in snap.units

    def _open(self, path: str, encoder: Any = None, out: Any = None) -> Snapshot:
        """A snapshot of the keyspace as of now into a new file at `path` (the snapshot
        owns the file until it ends), or into `out`."""
        if out is None:
            out = open(path, 'wb')  # noqa: SIM115 - open across turns, closed by _end/save
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
        self,
        path: str,
        encoder: Any,
        done: Callable[[bool], None],
        kind: str = 'aof',
        out: Any = None,
    ) -> bool:
        """Start a point-in-time snapshot of the keyspace as of now into `path`, written
        in steps between commands and fsynced; `done(ok)` is called on the loop when it is
        on disk. Or into `out`, a diskless payload's replica sockets
        (store/replication_socket_sync.py), stepping only while they take what it
        writes. False when a snapshot is already running."""
        if self.snapshot is not None:
            return False
        self.snapshot = self._open(path, encoder, out)
        self.server.keyspace.listen(self)  # commands run while it is written
        self.stream = out
        self.step_blocked = False
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
        if snap is None:
            return
        stream = self.stream
        if stream is not None:
            if not snap.written and not stream.alive():
                return  # its replicas are gone: it is being stopped (payload_unwanted)
            if stream.blocked():
                self.step_blocked = True  # a replica's resume_writing steps again
                return
        if snap.written:
            if stream is not None:  # its replicas took the last bytes: the payload is sent
                self._end(snap, True)
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
        if more or stream is not None:  # (a stream ends once its last bytes are taken)
            if delay > 0 and more:
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
        self.snapshot = self.snapshot_done = self.stream = None
        if self.snapshot_kind != 'aof':  # a BGSAVE's or a replica's payload: an RDB child
            self.last_cow_size = snap.copied
        if self.child is not None:
            self.child.end()
            self.child = None
        self.server.keyspace.unlisten(self)
        snap.out.close()
        if done is not None:
            done(ok)
        if self.bgsave_scheduled and self.snapshot is None:
            self.bgsave_scheduled = False
            self._start_bgsave()

    def flushed_all(self) -> None:
        """After FLUSHALL, as Redis's flushAllDataAndResetRDB: a running BGSAVE (or a
        replicas' payload, which fails them: they sync again) is dropped and, with save
        points set, the now empty dataset is saved at once, so a restart does not bring
        the flushed keys back."""
        if self.snapshot is not None and self.snapshot_kind != 'aof':
            self.kill_rdb_child(now=True)
        if self.server.config['save']:
            try:
                self.save()  # FLUSHALL's own change is counted already
            except RedisError:
                pass  # logged by save; FLUSHALL itself succeeded

    def kill_snapshot(self) -> None:
        """Stop a running BGSAVE (SHUTDOWN, FLUSHALL in Redis kill the child)."""
        if self.snapshot is not None:
            self._end(self.snapshot, False)

    def kill_rdb_child(self, now: bool = False) -> None:
        """killRDBChild: SIGUSR1 to the child of the running BGSAVE or payload, which
        the cron then finds ended by that signal (`_child_ended`: not an error for a
        BGSAVE); `now`, or without a stand-in process, ended here at once."""
        child = self.child
        if not now and child is not None and child.pid:
            child.kill(signal.SIGUSR1)
        elif self.snapshot is not None:
            self._child_ended(signal.SIGUSR1)

    def resume_step(self) -> None:
        """A replica of the streamed payload took what it was given: the next step."""
        if self.step_blocked:
            self.step_blocked = False
            self.server.loop.call_soon(self._step)

    def _child_ended(self, sig: int) -> None:
        """The snapshot's child was killed by `sig`: the snapshot fails as Redis's does."""
        self.child_signal = sig
        if self.stream is not None:
            what = 'transfer'
        else:
            what = 'AOF rewrite' if self.snapshot_kind == 'aof' else 'saving'
        self.server.log(f'Background {what} terminated by signal {sig}', '#')
        if self.snapshot is not None:
            self._end(self.snapshot, False)
        self.child_signal = 0

    # -- housekeeping ---------------------------------------------------------------------

    def cron(self, now: float) -> None:
        if self.loading:
            return
        child = self.child
        if child is not None and self.snapshot is not None:
            sig = child.killed_by()
            if sig:  # its child killed: the snapshot fails, as Redis's does
                self._child_ended(sig)
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

    # -- INFO -----------------------------------------------------------------------------

    def info(self) -> list[tuple[str, Any]]:
        snap = self.snapshot
        bg = snap is not None and self.snapshot_kind in ('rdb', 'repl')  # replication's too
        return [
            ('loading', int(self.loading)),
            ('async_loading', int(self.async_loading)),
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


def _percent(snap: Snapshot) -> str:
    """current_fork_perc: the share of the keys the running snapshot has written."""
    total = snap.keys_total
    return '%.2f' % (snap.keys_done * 100 / total if total else 0.0)
