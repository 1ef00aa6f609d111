"""The multi-part append-only file, Redis 7.0's layout, readable by redis-server 7.0 and
able to read what it writes: `Aof`, propagation, writing and turning the AOF on and off
(its rewrite is aof_rewrite.py's, its loading aof_load.py's, both mixed in here).

Layout: `dir`/`appenddirname` holds a manifest (`appendfilename`.manifest, aof_manifest.py)
naming one base file (`<name>.N.base.rdb`, an RDB image, or `<name>.N.base.aof`, commands:
aof_encoder.py), the history files a rewrite left (deleted once the new manifest is on
disk) and the incremental files (`<name>.M.incr.aof`) of RESP commands (aof_resp.py),
replayed in order after the base.

Propagation. While the AOF is on, or replicas follow the stream (store/replication.py gets
each batch written here too), the handler of every command whose flags include `write` is
wrapped (`_install`): after the command ran without error it is encoded and queued,
rewritten first where replaying it as sent would not give the same result (relative
expiries made absolute, SPOP as SREM, XADD's `*` as the id it got, blocking commands as
their non-blocking form: propagate_rewrites.py). Nothing is wrapped otherwise, so it costs
nothing then. Keys deleted at their deadline arrive as `expired` (from the keyspace) and
are written as DEL before the command that found them; journal entries (store/journal.py
writes its stream directly) arrive as `journal` and are written after the command that
caused them, as `XADD <key> MAXLEN <n> <id> ...` with the id the entry got. MULTI/EXEC and
scripts mark an execution unit (`begin`/`end`): what it wrote is wrapped in MULTI ... EXEC
when there is more than one command, as Redis 7.0 propagates.

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

from ..rdb import crc64
from ..resp import NULL_ARRAY as _NULL_ARRAY
from ..resp import OK, RedisError
from .aof_encoder import AofEncoder
from .aof_load import AofLoad
from .aof_manifest import Manifest
from .aof_resp import (
    TO_ALL,
    TO_AOF,
    TO_REPLICAS,
    AofOnly,
    ReplicasOnly,
    encode_queued,
    resp_command,
)
from .aof_rewrite import AofRewrite
from .errors import LoadError
from .files import install, remove
from .propagate_rewrites import REWRITES, set_rewrite

_MULTI = b'*1\r\n$5\r\nMULTI\r\n'
_EXEC = b'*1\r\n$4\r\nEXEC\r\n'


# -- the AOF -----------------------------------------------------------------------------


class Aof(AofRewrite, AofLoad):
    """The server's append-only file (server.persistence.aof)."""

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
        return self.server.config['appendfilename']

    def dir_path(self) -> str:
        cfg = self.server.config
        return os.path.join(cfg['dir'], cfg['appenddirname'])

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

    # -- wrapping the write commands ---------------------------------------------------------

    def _install(self) -> None:
        """Wrap every write command's handler (subcommands for containers) and hook the
        keyspace and the journal."""
        if self.installed:
            return
        seen = set()
        for cmd in self.server.commands.values():
            if id(cmd) in seen:
                continue
            seen.add(id(cmd))
            targets = list(cmd.subcommands.values()) if cmd.subcommands else [cmd]
            for t in targets:
                if 'write' in t.flags and t not in self.installed:
                    self.installed[t] = t.handler
                    t.handler = self._wrapped(t)
        self.server.keyspace.aof = self
        self.server.journal.aof = self

    def _uninstall(self) -> None:
        for cmd, handler in self.installed.items():
            cmd.handler = handler
        self.installed = {}
        self.server.keyspace.aof = None
        self.server.journal.aof = None

    def _wrapped(self, cmd: Any) -> Any:
        handler = cmd.handler
        rewrite = REWRITES.get(cmd.name)
        aof = self

        # SET without options is written as sent, as a command without a rewrite is
        plain = 3 if rewrite is set_rewrite else -1

        def run(c: Any, args: list[bytes]) -> Any:
            ks = c.ks
            changes = ks.changes
            aof.depth += 1
            try:
                r = handler(c, args)
            finally:
                aof.depth -= 1
            blocked = c.blocked
            if blocked is not None and blocked.conn is c and blocked.aof is None:
                blocked.aof = (rewrite, args)  # written when served (store/blocking.py)
            elif rewrite is None and ks.changes == changes:
                pass  # it changed nothing: call() propagates only when server.dirty moved
            elif aof.targets != TO_ALL:
                aof.propagate(c, rewrite, args, r)
            elif rewrite is None or (len(args) == plain and r is OK):
                # propagate's common case, inlined. A read holding only this command is
                # written as the client sent it: encoding costs ~0.6 us. Mid-turn in the
                # same database other arguments are queued as they are and encoded with
                # the rest of the turn's commands when written (encode_queued)
                raw = c.raw
                buf = aof.buf
                if raw is not None and raw[0] is args:
                    aof.feed(c.db, raw[1])
                elif buf and c.db == aof.selected_db and aof.unit is None and len(args) < 16:
                    if not aof.timestamps:
                        buf.append(args)
                    else:
                        aof.feed(c.db, resp_command(args))
                else:
                    aof.feed(c.db, resp_command(args))
            else:
                aof.propagate(c, rewrite, args, r)
            if aof.after and not aof.depth:
                aof._flush_after()
            return r

        return run

    def propagate(self, c: Any, rewrite: Any, args: list[bytes], reply: Any) -> None:
        feed = self.feed if self.targets == TO_ALL else self._feed_targets
        if rewrite is None:
            feed(c.db, resp_command(args))
            return
        if reply is _NULL_ARRAY or isinstance(reply, RedisError):
            return
        cmds = rewrite(c, args, reply)
        if cmds is None:
            feed(c.db, resp_command(args))
        else:
            for cmd in cmds:
                feed(c.db, resp_command(cmd))

    def _feed_targets(self, db: int, data: bytes) -> None:
        """feed() for a command that goes to the file only, the replicas only or nowhere
        (`targets`, a script's redis.set_repl: call()'s CMD_CALL_PROPAGATE_AOF/REPL)."""
        targets = self.targets
        if targets == TO_AOF:
            data = AofOnly(data)
        elif targets == TO_REPLICAS:
            data = ReplicasOnly(data)
        else:
            return
        self.replicas_only = True  # the file and the replicas get different bytes
        self.feed(db, data)

    def served(self, conn: Any, pending: Any, reply: Any) -> None:
        """A blocked command was served (store/blocking.py): write what it did."""
        rewrite, args = pending
        if isinstance(reply, RedisError):
            return
        self.propagate(conn, rewrite, args, reply)
        if self.after and not self.depth:
            self._flush_after()

    # -- feeding -------------------------------------------------------------------------

    def feed(self, db: int, data: bytes) -> None:
        if self.unit is not None:
            self.unit.append((db, data))
            return
        buf = self.buf
        if buf and db == self.selected_db and not self.timestamps:  # mid-turn, same db
            buf.append(data)
            self.buf_len += len(data)
            return
        self._append(db, data)

    def _append(self, db: int, data: bytes) -> None:
        buf = self.buf
        if not buf and not self.write_scheduled:
            self.write_scheduled = True
            loop = self.server.loop
            if loop is not None:
                loop.call_soon(self._scheduled_write)
        if self.timestamps:
            now = int(time.time())
            if now != self.last_ts:
                self.last_ts = now
                buf.append(b'#TS:%d\r\n' % now)
        if db != self.selected_db:
            self.selected_db = db
            select = resp_command((b'SELECT', b'%d' % db))
            buf.append(select)
            self.buf_len += len(select)
        buf.append(data)
        self.buf_len += len(data)

    def expired(self, db: int, key: bytes) -> None:
        """A key deleted at its deadline (lazy or active expiry): DEL (UNLINK with
        lazyfree-lazy-expire), written before the command that found it."""
        name = b'UNLINK' if self.server.config['lazyfree-lazy-expire'] else b'DEL'
        self.feed(db, resp_command((name, key)))

    def journal(self, args: list[bytes]) -> None:
        """A journal append (store/journal.py): written after the command that caused it."""
        data = resp_command(args)
        if self.depth:
            self.after.append(data)
        else:
            self.feed(0, data)

    def _flush_after(self) -> None:
        after, self.after = self.after, []
        for data in after:
            self.feed(0, data)

    def begin(self) -> None:
        """An execution unit starts (EXEC, a script or function run)."""
        self.unit_depth += 1
        if self.unit_depth == 1:
            self.unit = []

    def end(self) -> None:
        """The unit ends: its commands, in MULTI ... EXEC when more than one."""
        self.unit_depth -= 1
        if self.unit_depth:
            return
        unit, self.unit = self.unit, None
        if not unit:
            return
        if len(unit) == 1:
            self._append(*unit[0])
            return
        db0 = unit[0][0]
        if db0 != self.selected_db:
            self._append(db0, b'')  # the SELECT before MULTI
        self._append(self.selected_db, _MULTI)
        for db, data in unit:
            self._append(db, data)
        self._append(self.selected_db, _EXEC)

    # -- replication (store/replication.py) ------------------------------------------------

    def replication_started(self) -> None:
        """Replicas get the stream from now on: propagation runs with the AOF off too."""
        self._install()

    def replication_stopped(self) -> None:
        if not self.on and not self.turning_on:
            self._uninstall()

    def write_replicas(self) -> None:
        """Feed the replicas what is queued: before a replica syncs (what was queued is
        in its RDB), and before commands only replicas get."""
        if self.buf:
            self.write()

    def _feed_replicas(self) -> bytes | None:
        """Feed the replicas what of the queue they were not given. Returns the bytes
        when they are the whole queue as the file takes it too, so that write() encodes
        the queue once for both."""
        buf = self.buf
        whole = not self.replicas_fed and not self.replicas_only
        new = buf[self.replicas_fed :] if self.replicas_fed else buf
        self.replicas_fed = len(buf)
        if self.timestamps:  # #TS: annotations are the file's (each its own entry)
            new = [x for x in new if not (type(x) is bytes and x[:4] == b'#TS:')]
            whole = False
        if not new:
            return None
        data = encode_queued(new, replicas=True)
        self.replication.feed(data)
        return data if whole else None

    def to_replicas(self, db: int, args: list[bytes]) -> None:
        """A command the replicas get and the file does not: PUBLISH, so that their
        subscribers get the message too (Redis's PROPAGATE_REPL)."""
        self.feed(db, ReplicasOnly(resp_command(args)))
        self.replicas_only = True

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
