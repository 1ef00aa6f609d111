"""The AOF rewrite (BGREWRITEAOF, automatic, and turning the AOF on): the `AofRewrite` half
of aof.Aof.

The snapshot (snapshot.py) writes a point-in-time image of the keyspace as of the moment it
starts, so Redis 7.0's multi-part rewrite is simple here: at that same moment a new incr
file is opened (in the manifest at once) and every later write goes there; when the image
is on disk it becomes the new base, the older incr files and the old base become history,
the manifest is replaced (temp file, fsync, rename, fsync of the directory) and the history
deleted (unless aof-disable-auto-gc). While turning the AOF on, writes go to a temp incr
file named when the base is done, and dropped with it if the rewrite fails. After 3 failed
rewrites in a row, automatic ones back off (aofRewriteLimited).
"""

from __future__ import annotations

import os
import time
from typing import Any

from ..resp import RedisError
from .aof_manifest import Manifest
from .files import remove

_E_REWRITE = (
    "ERR Can't execute an AOF background rewriting. Please check the server logs for more "
    'information.'
)


class AofRewrite:
    """Aof's rewrite: a mixin of aof.Aof, whose fields it uses."""

    def rewrite(self: Any) -> str:
        """BGREWRITEAOF's reply, or RedisError."""
        if self.rewriting:
            raise RedisError('ERR Background append only file rewriting already in progress')
        p = self.server.persistence
        if p.snapshot is not None or self.unit_depth:
            self.rewrite_scheduled = True
            return 'Background append only file rewriting scheduled'
        if not self.start_rewrite():
            self.rewrite_scheduled = True
            return 'Background append only file rewriting scheduled'
        return 'Background append only file rewriting started'

    def _rewrite_limited(self: Any) -> bool:
        """aofRewriteLimited: after 3 rewrites failed in a row, automatic ones wait 1
        minute, then 2, 4... up to an hour between tries, each wait logged once."""
        if self.consecutive_failures < 3:
            self.limit_delay_min = 0
            self.limit_until = 0.0
            return False
        if self.limit_until:
            if time.time() < self.limit_until:
                return True
            self.limit_until = 0.0
            return False
        self.limit_delay_min = min(self.limit_delay_min * 2 or 1, 60)
        self.limit_until = time.time() + self.limit_delay_min * 60
        self.log(
            'Background AOF rewrite has repeatedly failed and triggered the limit, '
            f'will retry in {self.limit_delay_min} minutes',
            '#',
        )
        return True

    def _try_scheduled(self: Any) -> None:
        try:
            if self.start_rewrite():
                self.rewrite_scheduled = False
        except RedisError:
            pass

    def start_rewrite(self: Any) -> bool:
        """rewriteAppendOnlyFileBackground: snapshot the keyspace as of now into a temp
        base; from this moment on, writes go to a new incr file. False when another
        snapshot runs (the caller schedules the rewrite)."""
        p = self.server.persistence
        if p.snapshot is not None:
            return False
        if self.manifest is None:
            self.manifest = self._load_manifest()
        try:
            os.makedirs(self.dir_path(), exist_ok=True)
        except OSError as e:
            self.log(f"Can't open or create append-only dir {self.dir_path()}: {e.strerror}", '#')
            raise RedisError(_E_REWRITE) from None
        if self.buf:
            self.write()
        old_fd = self.fd
        new_m = None
        if old_fd >= 0 and not self.turning_on:
            # openNewIncrAofForAppend: a new incr file, in the manifest at once
            new_m = self.manifest.copy()
            new_m.incr_seq += 1
            incr = self._incr_name(new_m.incr_seq)
            new_m.incrs.append((incr, new_m.incr_seq))
        elif self.turning_on:
            incr = 'temp-' + self.name + '.incr'  # named when the base is done
            remove(self.path(incr))
        else:
            incr = ''  # BGREWRITEAOF with the AOF off: a base and no incr file
        tmp = os.path.join(self.server.config['dir'], f'temp-rewriteaof-bg-{os.getpid()}.aof')
        encoder = self._encoder()
        try:
            if old_fd >= 0:
                os.fsync(old_fd)
            started = p.start_snapshot(tmp, encoder, lambda ok: self._rewrite_done(ok, tmp))
            if not started:
                return False
            if incr:
                self._open_incr(incr)
            if new_m is not None:
                self._persist_manifest(new_m)
                self.manifest = new_m
        except OSError as e:
            self.log(f"Can't rewrite append only file in background: {e.strerror}", '#')
            self.last_rewrite_ok = False
            raise RedisError(_E_REWRITE) from None
        self.rewriting = True
        self.rewrite_started = time.time()
        self.log('Background append only file rewriting started')
        return True

    def _rewrite_done(self: Any, ok: bool, tmp: str) -> None:
        """backgroundRewriteDoneHandler: the new base into place, the manifest replaced,
        the history deleted."""
        self.rewriting = False
        self.last_rewrite_time = int(time.time() - self.rewrite_started)
        if not ok:
            remove(tmp)
            self.last_rewrite_ok = False
            self.consecutive_failures += 1
            if not self.server.persistence.child_signal:  # else logged as killed (child.py)
                self.log('Background AOF rewrite terminated with error', '#')
            if self.turning_on:
                self._drop_temp_incr()
                self.rewrite_scheduled = True  # startAppendOnly retries from cron
            return
        try:
            m = self.manifest.copy() if self.manifest is not None else Manifest()
            if m.base is not None:
                m.history.insert(0, m.base)
            m.base_seq += 1
            base = self._base_name(m.base_seq)
            m.base = (base, m.base_seq)
            base_path = self.path(base)
            if self.turning_on:
                m.incr_seq += 1
                incr = self._incr_name(m.incr_seq)
                os.replace(self.path(self.incr_name), self.path(incr))
                self.incr_name = incr
                m.incrs.append((incr, m.incr_seq))
            # markRewrittenIncrAofAsHistory: all but the one being written
            keep = m.incrs[-1:] if self.fd >= 0 else []
            for incr_info in m.incrs[: len(m.incrs) - len(keep)]:
                m.history.insert(0, incr_info)
            m.incrs = keep
            os.replace(tmp, base_path)
            self._persist_manifest(m)
        except OSError as e:
            remove(tmp)
            self.last_rewrite_ok = False
            self.consecutive_failures += 1
            self.log(f'Error trying to rename the temporary AOF base file: {e.strerror}', '#')
            return
        self.manifest = m
        self.turning_on = False
        self.base_size = os.path.getsize(base_path)
        self.current_size = self.base_size + (
            os.path.getsize(self.path(m.incrs[-1][0])) if m.incrs else 0
        )
        self.last_rewrite_ok = True
        self.consecutive_failures = 0
        self.rewrites += 1
        self.log('Background AOF rewrite terminated with success')
        self.log('Background AOF rewrite finished successfully')
        self._delete_history()

    def _drop_temp_incr(self: Any) -> None:
        """aofDelTempIncrAofFile: a rewrite made while turning the AOF on failed, so the
        temp incr file that took the writes since its snapshot goes, and what is queued
        with it (the replicas get theirs first); the next rewrite starts a new one."""
        if self.buf:
            self.write()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.incr_name:
            self.log(f'Removing the temp incr aof file {self.incr_name} in the background')
            remove(self.path(self.incr_name))
            self.incr_name = ''

    def _delete_history(self: Any) -> None:
        """aofDelHistoryFiles: the files the new manifest no longer names."""
        m = self.manifest
        if m is None or not m.history or self.server.config['aof-disable-auto-gc']:
            return
        for name, _ in m.history:
            self.log(f'Removing the history file {name} in the background')
            remove(self.path(name))
        m.history = []
        try:
            self._persist_manifest(m)
        except OSError:
            pass
