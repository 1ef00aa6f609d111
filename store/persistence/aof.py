"""The multi-part append-only file, Redis 7.0's layout, readable by redis-server 7.0 and
able to read what it writes: `Aof`, its files, writing and turning the AOF on and off (its
propagation is aof_propagate.py's, its rewrite aof_rewrite.py's, its loading aof_load.py's,
all mixed in here).

Layout: `dir`/`appenddirname` holds a manifest (`appendfilename`.manifest, aof_manifest.py)
naming one base file (`<name>.N.base.rdb`, an RDB image, or `<name>.N.base.aof`, commands:
aof_encoder.py), the history files a rewrite left (deleted once the new manifest is on
disk) and the incremental files (`<name>.M.incr.aof`) of RESP commands (aof_resp.py),
replayed in order after the base.

Propagation (wrapping the write commands, feeding the queue, replicas' share of it) is
aof_propagate.py's, mixed in here as well.

Writing. Queued commands leave in one write(2) per loop turn (a callback scheduled when
the queue fills), as Redis writes once in beforeSleep. With appendfsync always the
connection writes and fsyncs them before its replies leave (Connection.flush), so a reply
is never sent for a write that is not on disk; everysec fsyncs in a worker thread once a
second (Redis's bio), so a replied write may reach the kernel a loop turn later, within
what everysec may lose anyway; no leaves fsync to the kernel.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..lifecycle import KeyObserver
from ..rdb import crc64
from ..resp import RedisError
from .aof_encoder import AofEncoder
from .aof_load import AofLoad
from .aof_manifest import Manifest
from .aof_propagate import AofPropagate
from .aof_resp import (
    TO_ALL,
    encode_queued,
    resp_command,
)
from .aof_rewrite import AofRewrite
from .errors import LoadError
from .files import install, remove

# -- the AOF -----------------------------------------------------------------------------


class Aof(AofPropagate, AofRewrite, AofLoad, KeyObserver):
    """The server's append-only file (server.persistence.aof). While it propagates (the
    file is on, or replicas follow) it is a party of the key lifecycle
    (store/lifecycle.py): keys leaving without a command are written as DEL."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.manifest: Manifest | None = None
        self.fd = -1  # the incr file commands are appended to, while open
        self.incr_name = ''  # its name (a temp name while turning on)
        # commands not written yet: encoded (bytes), or plain writes' argument lists
        # queued unencoded mid-turn (see _wrapped); buf_len counts the encoded ones
        self.buf: list[Any] = []
        self.buf_len = 0
        # store/replication.py: replicas get the stream too, each entry of `buf` once
        self.replication: Any = None  # the server's Replication, set by the server
        self.replicas_fed = 0  # entries of `buf` already fed to it
        self.replicas_only = False  # `buf` holds a ReplicasOnly or an AofOnly entry
        self.targets = TO_ALL  # where commands go: a script's redis.set_repl sets it
        self.selected_db = -1  # the database the incr file's last SELECT chose
        self.depth = 0  # command handlers running (journal entries wait for them)
        self.after: list[bytes] = []  # journal entries waiting for their command
        self.unit: list[tuple[int, bytes]] | None = None  # commands of an execution unit
        self.unit_depth = 0
        self.installed: dict[Any, Any] = {}  # wrapped Command -> its own handler
        # the write commands are wrapped: what EXEC, scripts, blocked clients served and
        # the connection's raw bytes ask before handing the AOF what they ran
        self.propagating = False
        self.write_scheduled = False
        self.last_ts = 0  # the second of the last #TS: annotation
        # sizes (auto rewrite, INFO)
        self.current_size = 0
        self.base_size = 0  # aof_rewrite_base_size
        # fsync
        self.unsynced = False
        self.last_fsync = time.time()
        self.fsync_pending = 0
        self.delayed_fsync = 0
        self.executor: ThreadPoolExecutor | None = None
        # write errors
        self.last_write_ok = True
        self.last_write_error = ''
        # rewrite
        self.rewriting = False
        self.rewrite_scheduled = False
        self.rewrite_started = 0.0
        self.last_rewrite_time = -1
        self.last_rewrite_ok = True
        self.rewrites = 0
        self.consecutive_failures = 0
        self.limit_delay_min = 0  # _rewrite_limited's wait, in minutes, and its end
        self.limit_until = 0.0
        self.turning_on = False  # AOF_WAIT_REWRITE: on, but the base is not made yet
        self.started = False  # start-up is over (the manager's first apply_config)
        # configuration read per command, kept here by apply_config
        self.always = server.config['appendfsync'] == 'always'
        self.timestamps = server.config['aof-timestamp-enabled']
        self.flush_sleep = 0  # DEBUG AOF-FLUSH-SLEEP <us>: a pause before each write

    # -- paths ---------------------------------------------------------------------------

    @property
    def name(self) -> str:
        name: str = self.server.config['appendfilename']
        return name

    def dir_path(self) -> str:
        cfg = self.server.config
        parent: str = cfg['dir']
        return os.path.join(parent, cfg['appenddirname'])

    def path(self, name: str) -> str:
        return os.path.join(self.dir_path(), name)

    def manifest_path(self) -> str:
        return self.path(self.name + '.manifest')

    def log(self, msg: str, level: str = '*') -> None:
        self.server.log(msg, level)

    @property
    def on(self) -> bool:
        return self.fd >= 0

    # -- the manager's interface -----------------------------------------------------------

    def apply_config(self, name: str) -> None:
        cfg = self.server.config
        self.always = cfg['appendfsync'] == 'always'
        self.timestamps = cfg['aof-timestamp-enabled']
        if name == 'appendonly':
            if cfg['appendonly'] and not self.on and not self.turning_on:
                self.start()
            elif not cfg['appendonly'] and (self.on or self.turning_on):
                self.stop()
            self.started = True  # the first call ends start-up (manager.load)
        elif name == 'aof-disable-auto-gc' and not cfg[name]:
            self._delete_history()  # updateAofAutoGCEnabled: what waited goes now

    def cron(self, now: float) -> None:
        if self.buf:
            self.write()
        if not self.on:
            if self.rewrite_scheduled and not self.rewriting:
                self._try_scheduled()
            return
        policy = self.server.config['appendfsync']
        if policy == 'everysec' and self.unsynced and now - self.last_fsync >= 1:
            self._fsync_in_background()
        if self.rewriting:
            return
        if self.rewrite_scheduled:
            self._try_scheduled()
            return
        cfg = self.server.config
        perc = cfg['auto-aof-rewrite-percentage']
        if (
            perc
            and not self.turning_on
            and self.server.persistence.snapshot is None  # !hasActiveChildProcess()
            and self.current_size > cfg['auto-aof-rewrite-min-size']
        ):
            base = self.base_size or 1
            growth = self.current_size * 100 // base - 100
            if growth >= perc and not self._rewrite_limited():
                self.log(f'Starting automatic rewriting of AOF on {growth}% growth')
                try:
                    self.start_rewrite()
                except RedisError:
                    pass

    def _sync(self) -> None:
        """Everything queued written, and the incr file fsynced."""
        if self.buf:
            self.write()
        if self.fd >= 0:
            try:
                os.fsync(self.fd)
            except OSError:
                pass

    def close(self) -> None:
        """Shutdown: everything written and fsynced."""
        self._sync()
        if self.executor is not None:
            self.executor.shutdown(wait=True)
            self.executor = None

    def info(self) -> list[tuple[str, Any]]:
        enabled = self.server.config['appendonly']
        fields: list[tuple[str, Any]] = [
            ('aof_enabled', int(bool(enabled))),
            ('aof_rewrite_in_progress', int(self.rewriting)),
            ('aof_rewrite_scheduled', int(self.rewrite_scheduled)),
            ('aof_last_rewrite_time_sec', self.last_rewrite_time),
            (
                'aof_current_rewrite_time_sec',
                int(time.time() - self.rewrite_started) if self.rewriting else -1,
            ),
            ('aof_last_bgrewrite_status', 'ok' if self.last_rewrite_ok else 'err'),
            ('aof_rewrites', self.rewrites),
            ('aof_rewrites_consecutive_failures', self.consecutive_failures),
            ('aof_last_write_status', 'ok' if self.last_write_ok else 'err'),
            ('aof_last_cow_size', 0),
            ('module_fork_in_progress', 0),
            ('module_fork_last_cow_size', 0),
        ]
        if enabled:
            fields += [
                ('aof_current_size', self.current_size),
                ('aof_base_size', self.base_size),
                ('aof_pending_rewrite', int(self.rewrite_scheduled)),
                ('aof_buffer_length', self.buffer_length()),
                ('aof_pending_bio_fsync', self.fsync_pending),
                ('aof_delayed_fsync', self.delayed_fsync),
            ]
        return fields

    def buffer_length(self) -> int:
        """The bytes queued for the next write (queued argument lists as encoded)."""
        return self.buf_len + sum(len(resp_command(x)) for x in self.buf if type(x) is list)

    # -- turning on and off --------------------------------------------------------------

    def _load_manifest(self) -> Manifest:
        """The manifest on disk (empty when there is none), as aofLoadManifestFromDisk."""
        path = self.manifest_path()
        if not os.path.isdir(self.dir_path()) or not os.path.exists(path):
            return Manifest()
        try:
            with open(path, 'rb') as f:
                data = f.read()
        except OSError as e:
            raise LoadError(
                f"Fatal error: can't open the AOF manifest file {path} for reading: {e.strerror}"
            ) from None
        return Manifest.parse(data, self.log)

    def start(self) -> None:
        """appendonly yes: at start-up after loading, continue the last incr file (or
        create the layout); at run time, rewrite to make a base first (startAppendOnly)."""
        if self.manifest is None:
            try:
                self.manifest = self._load_manifest()
            except LoadError as e:
                self.log(str(e).strip(), '#')
                self.manifest = Manifest()
        m = self.manifest
        ks = self.server.keyspace
        if not self.server_started() and m.base is None and not m.incrs:
            if not any(ks.dbsize(db) for db in range(ks.databases)):
                self._create_layout()  # as Redis 7.0 does on a first start
                self._install()
                return
        if self.server_started() or m.base is None and not m.incrs:
            # run time (or data but no AOF): the base is made by a rewrite, as Redis does
            self.turning_on = True
            self._install()
            client = self.server.current_client
            p = self.server.persistence
            if p.snapshot is not None and p.snapshot_kind != 'aof':
                self.rewrite_scheduled = True
                self.log(
                    'AOF was enabled but there is already another background operation. '
                    'An AOF background was scheduled to start when possible.',
                    '#',
                )
            elif client is not None and client.in_exec:  # CONFIG SET appendonly in EXEC
                self.rewrite_scheduled = True
                self.log(
                    'AOF was enabled during a transaction. '
                    'An AOF background was scheduled to start when possible.',
                    '#',
                )
            elif not self.start_rewrite():
                self.rewrite_scheduled = True
            return
        os.makedirs(self.dir_path(), exist_ok=True)
        if not m.incrs:
            m.incr_seq += 1
            m.incrs.append((self._incr_name(m.incr_seq), m.incr_seq))
            self._persist_manifest(m)
        self._open_incr(m.incrs[-1][0])
        self._install()

    def _encoder(self) -> Any:
        cfg = self.server.config
        if cfg['aof-use-rdb-preamble']:
            from .rdb_encoder import RdbEncoder

            return RdbEncoder(cfg['rdbcompression'], cfg['rdbchecksum'], {b'aof-base': b'1'})
        return AofEncoder(cfg['aof-timestamp-enabled'])

    def _create_layout(self) -> None:
        """A first start with nothing loaded: an empty base (the FUNCTION libraries
        only), incr file 1 and the manifest, written at once, as Redis 7.0 does."""
        m = self.manifest
        assert m is not None
        os.makedirs(self.dir_path(), exist_ok=True)
        m.base_seq += 1
        base = self._base_name(m.base_seq)
        self.log(f'Creating AOF base file {base} on server start')
        encoder = self._encoder()
        data = encoder.header() + encoder.functions(self.server.functions.codes())
        data += encoder.footer(crc64(data) if encoder.checksum else 0)
        tmp = self.path('temp-' + base)
        with open(tmp, 'wb') as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path(base))
        m.base = (base, m.base_seq)
        m.incr_seq += 1
        incr = self._incr_name(m.incr_seq)
        m.incrs.append((incr, m.incr_seq))
        self.log(f'Creating AOF incr file {incr} on server start')
        self._open_incr(incr)
        self._persist_manifest(m)
        self.base_size = self.current_size = len(data)

    def server_started(self) -> bool:
        """Whether start-up is over (CONFIG SET appendonly yes at run time)."""
        return self.started

    def stop(self) -> None:
        """appendonly no (stopAppendOnly): flush, fsync, close; a running rewrite stops."""
        self._sync()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.turning_on and self.incr_name:
            remove(self.path(self.incr_name))
        self.turning_on = False
        self.rewrite_scheduled = False
        if self.rewriting:
            p = self.server.persistence
            if p.snapshot is not None and p.snapshot_kind == 'aof':
                # the rewrite is no child here; Redis names the child it kills
                self.log(f'Killing running AOF rewrite child: {os.getpid()}')
                p.kill_snapshot()
            self.rewriting = False
        if not self.replication.active:
            self._uninstall()

    def _base_name(self, seq: int) -> str:
        ext = 'rdb' if self.server.config['aof-use-rdb-preamble'] else 'aof'
        return f'{self.name}.{seq}.base.{ext}'

    def _incr_name(self, seq: int) -> str:
        return f'{self.name}.{seq}.incr.aof'

    def _open_incr(self, name: str) -> None:
        path = self.path(name)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = fd
        self.incr_name = name
        self.selected_db = -1
        self.unsynced = False

    def _persist_manifest(self, m: Manifest) -> None:
        """writeAofManifestFile: temp file, fsync, rename, fsync of the directory."""
        path = self.manifest_path()
        tmp = self.path('temp-' + self.name + '.manifest')
        fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC | os.O_CREAT, 0o644)
        try:
            os.write(fd, m.render())
            os.fsync(fd)
        finally:
            os.close(fd)
        install(tmp, path)

    # -- writing -------------------------------------------------------------------------

    def _scheduled_write(self) -> None:
        self.write_scheduled = False
        if self.buf:
            self.write()

    def write(self) -> None:
        """flushAppendOnlyFile: one write(2) of everything queued; fsync at once with
        appendfsync always."""
        buf = self.buf
        encoded = None
        if self.replication.active and self.replicas_fed < len(buf):
            encoded = self._feed_replicas()
        if self.fd < 0:
            # no file to write to (the AOF off, or turning on with no rewrite running):
            # dropped, as feedAppendOnlyFile drops them; the next rewrite's snapshot has
            # their effects
            buf.clear()
            self.buf_len = self.replicas_fed = 0
            self.replicas_only = False
            return
        data = encoded if encoded is not None else encode_queued(buf)
        if self.flush_sleep:
            time.sleep(self.flush_sleep / 1e6)  # DEBUG AOF-FLUSH-SLEEP, for tests
        buf.clear()
        self.buf_len = self.replicas_fed = 0
        self.replicas_only = False
        try:
            view = memoryview(data)
            while view:
                n = os.write(self.fd, view)
                view = view[n:]
        except OSError as e:
            written = len(data) - len(view)
            self.current_size += written
            self.buf.append(data[written:])
            self.buf_len = len(data) - written
            self.replicas_fed = 1  # the replicas had it
            if self.last_write_ok or e.strerror != self.last_write_error:
                self.log(f'Error writing to the AOF file: {e.strerror}', '#')
            self.last_write_ok = False
            self.last_write_error = e.strerror or ''
            if self.server.config['appendfsync'] == 'always':
                self.log(
                    "Can't recover from AOF write error when the AOF fsync policy is "
                    "'always'. Exiting...",
                    '#',
                )
                os._exit(1)
            return
        if not self.last_write_ok:
            self.log('AOF write error looks solved, Redis can write again.')
            self.last_write_ok = True
        self.current_size += len(data)
        if self.always:
            try:
                os.fsync(self.fd)
            except OSError as e:
                self.log(
                    "Can't persist AOF for fsync error when the AOF fsync policy is "
                    f"'always': {e.strerror}. Exiting...",
                    '#',
                )
                os._exit(1)
            self.last_fsync = time.time()
        else:
            self.unsynced = True

    def _fsync_in_background(self) -> None:
        if self.fsync_pending:
            self.delayed_fsync += 1
            return
        if self.executor is None:
            self.executor = ThreadPoolExecutor(1, thread_name_prefix='aof-fsync')
        fd = os.dup(self.fd)  # the incr file may be switched while the thread runs
        self.unsynced = False
        self.last_fsync = time.time()
        self.fsync_pending = 1

        def work() -> None:
            try:
                os.fsync(fd)
            except OSError:
                pass
            finally:
                os.close(fd)

        fut = self.executor.submit(work)
        fut.add_done_callback(lambda f: setattr(self, 'fsync_pending', 0))
