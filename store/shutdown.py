"""Shutting down as Redis 7.0 does (server.c's prepareForShutdown, isReadyToShutdown,
finishShutdown, abortShutdown and sigShutdownHandler; db.c's shutdownCommand).

    SIGTERM / SIGINT --> asap (logged) --cron--> prepare(shutdown-on-sig* flags)
    SHUTDOWN [flags] --> the client blocks --> prepare(flags)
    prepare: "User requested shutdown..."; replicas behind (and not NOW, and a non-zero
             shutdown-timeout)? --> wait: writes paused, GETACK sent, INFO shows
             shutdown_in_milliseconds, and the cron finishes once every replica acknowledged
             the whole stream or the timeout passed; else finish now
    finish:  lagging replicas logged, the background save killed, the initial AOF rewrite
             (refused unless FORCE), AOF fsync, the final RDB save (SAVE, or save points and
             not NOSAVE; a failure refused unless FORCE), the listeners closed, "Redis is
             now ready to exit, bye bye...", then the process ends (Server.closed)
    failure: "Errors trying to shut down the server..."; the blocked SHUTDOWN clients get
             -ERR Errors trying to SHUTDOWN. Check logs., writes resume, the server runs on
    SHUTDOWN ABORT: cancels a shutdown waiting for replicas, or a signal's not yet acted on

The signal handlers are Python-level (`signal.signal`), not the event loop's: like Redis's,
they run while the loop is busy (a final save under rdb-key-save-delay), so a second SIGINT
during that save exits at once ("You insist... exiting now.", the temp RDB file removed).
They only log and set a flag, as Redis's do; the cron acts on it.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from . import process
from .resp import RedisError

E_SHUTDOWN = 'ERR Errors trying to SHUTDOWN. Check logs.'
SIGNAL_PARAM: dict[int, str] = {
    signal.SIGINT: 'shutdown-on-sigint',
    signal.SIGTERM: 'shutdown-on-sigterm',
}


class Shutdown:
    def __init__(self, server: Any) -> None:
        self.server = server
        self.asap = False  # a signal asked for a shutdown the cron has not started yet
        self.last_signal = 0
        self.flags: set[str] = set()  # save, nosave, now, force
        self.deadline = 0.0  # time.time() when waiting for replicas ends; 0: not waiting
        self.blocked: list[Any] = []  # SHUTDOWN clients waiting for the outcome
        self.paused = False  # writes paused while waiting for replicas

    # -- signals ---------------------------------------------------------------------------

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self.on_signal)

    def on_signal(self, sig: int, frame: Any = None) -> None:
        """sigShutdownHandler: log and flag; a second SIGINT exits at once."""
        server = self.server
        if self.asap and sig == signal.SIGINT:
            self._log('You insist... exiting now.')
            remove_temp_rdb(server)
            os._exit(1)  # not a clean shutdown: an error status, as Redis exits
        if server.loading:
            msg = 'Received shutdown signal during loading, scheduling shutdown.'
        elif sig == signal.SIGINT:
            msg = 'Received SIGINT scheduling shutdown...'
        elif sig == signal.SIGTERM:
            msg = 'Received SIGTERM scheduling shutdown...'
        else:
            msg = 'Received shutdown signal, scheduling shutdown...'
        self._log(msg)
        self.asap = True
        self.last_signal = sig
        loop = server.loop
        if server.loading and loop is not None:
            # whileBlockedCron's part: no cron runs during a load
            loop.call_soon_threadsafe(self._during_loading)

    def _log(self, msg: str) -> None:
        try:
            self.server.log(msg, '#')
        except Exception:  # noqa: BLE001 - a handler may interrupt a write to the same log
            pass

    def _during_loading(self) -> None:
        if self.asap and self.server.loading:
            # the cron runs during a replica's load, which serves clients: it must not
            # prepare the shutdown again
            self.asap = False
            if self.prepare({'nosave'}) != 'done':
                self.server.log(
                    'SIGTERM received but errors trying to shut down the server, check the '
                    'logs for more information',
                    '#',
                )
                self.last_signal = 0

    # -- the cron's part ---------------------------------------------------------------------

    def cron(self, now: float) -> None:
        if self.asap and not self.initiated():
            param = SIGNAL_PARAM.get(self.last_signal)
            flags = self.server.config[param].split() if param else []
            self.prepare({f for f in flags if f != 'default'})
        elif self.initiated() and (now >= self.deadline or self.ready()):
            self.finish()

    # -- the steps -----------------------------------------------------------------------------

    def initiated(self) -> bool:
        return self.deadline != 0

    def remaining_ms(self) -> int | None:
        """INFO's shutdown_in_milliseconds while waiting for replicas."""
        if not self.initiated():
            return None
        return int((self.deadline - time.time()) * 1000)

    def command(self, conn: Any, flags: set[str]) -> bool:
        """SHUTDOWN: block `conn` and prepare; False when it failed at once (`conn` has
        been answered then) or it is already under way."""
        blocking = self.server.blocking
        blocking.block(conn, [], _no_key, 0, None)
        self.blocked.append(conn.blocked)
        return self.prepare(flags) != 'error'

    def prepare(self, flags: set[str]) -> str:
        """prepareForShutdown: 'done' (the server is closing), 'wait' (for replicas) or
        'error' (the server runs on)."""
        server = self.server
        if self.initiated():
            return 'error'
        if server.loading:
            flags = (flags - {'save'}) | {'nosave'}
        self.flags = flags
        server.log('User requested shutdown...', '#')
        server.notify_systemd('STOPPING=1\n')
        if 'now' not in flags and server.config['shutdown-timeout'] and not self.ready():
            self.deadline = time.time() + server.config['shutdown-timeout']
            if server.pause.kind is None:
                server.replication.request_acks()
            if not server.pause.during_failover:
                server.pause.failover(True)  # pauseClients(PAUSE_DURING_SHUTDOWN, WRITE)
                self.paused = True
            server.log('Waiting for replicas before shutting down.')
            return 'wait'
        return 'done' if self.finish() else 'error'

    def ready(self) -> bool:
        """isReadyToShutdown: every replica acknowledged the whole stream."""
        repl = self.server.replication
        self.server.persistence.aof.write_replicas()
        replicas = repl.syncing + repl.replicas
        return all(r.ack == repl.offset for r in replicas)

    def abort(self) -> bool:
        """abortShutdown: False when no shutdown was initiated nor asked for."""
        if self.initiated():
            self.cancel()
        elif self.asap:
            self.asap = False
        else:
            return False
        self.server.log('Shutdown manually aborted.')
        return True

    def cancel(self) -> None:
        """cancelShutdown: the waiting SHUTDOWN clients get their error, writes resume."""
        self.asap = False
        self.flags = set()
        self.deadline = 0.0
        self.last_signal = 0
        blocked, self.blocked = self.blocked, []
        blocking = self.server.blocking
        for w in blocked:
            if w.active:
                blocking.end(w, RedisError(E_SHUTDOWN))
        if self.paused:
            self.paused = False
            self.server.pause.failover(False)

    def finish(self) -> bool:
        """finishShutdown: True when the server is closing, else it was cancelled."""
        server = self.server
        flags = self.flags
        force = 'force' in flags
        repl = server.replication
        replicas = repl.syncing + repl.replicas
        lagging = 0
        now = time.time()
        for r in replicas:
            if r.ack != repl.offset:
                lagging += 1
                online = r.state == 'online'
                lag = int(now - r.ack_time) if online else 0
                server.log(
                    f'Lagging replica {_replica_name(r)} reported offset '
                    f'{repl.offset - r.ack} behind master, lag={lag}, '
                    f'state={r.state or "wait_bgsave"}.',
                    '#',
                )
        if replicas:
            n = len(replicas)
            server.log(f'{n - lagging} of {n} replicas are in sync when shutting down.')
        p = server.persistence
        if p.snapshot is not None and p.snapshot_kind != 'aof':  # a BGSAVE or replicas'
            server.log('There is a child saving an .rdb. Killing it!', '#')
            p.kill_snapshot()
            remove_temp_rdb(server)
        aof = p.aof
        if p.snapshot is not None and p.snapshot_kind == 'aof':
            if aof.turning_on:
                if not force:
                    server.log("Writing initial AOF, can't exit.", '#')
                    return self._failed()
                server.log('Writing initial AOF. Exit anyway.', '#')
            server.log('There is a child rewriting the AOF. Killing it!', '#')
            p.kill_snapshot()
        if aof.on:
            server.log('Calling fsync() on the AOF file.')
        aof.close()
        if (server.config['save'] and 'nosave' not in flags) or 'save' in flags:
            server.log('Saving the final RDB snapshot before exiting.')
            server.notify_systemd('STATUS=Saving the final RDB snapshot\n')
            try:
                p.save()
            except RedisError:
                if not force:
                    server.log("Error trying to save the DB, can't exit.", '#')
                    server.notify_systemd("STATUS=Error trying to save the DB, can't exit.\n")
                    return self._failed()
                server.log('Error trying to save the DB. Exit anyway.', '#')
        if server.pidfile:
            server.log('Removing the pid file.')
            process.remove(server.pidfile)
        aof.write_replicas()  # flushSlavesOutputBuffers
        for listener in server.listeners:
            listener.close()
        if server.config['unixsocket']:  # closeListeningSockets(unlink_unix_socket=1)
            server.log('Removing the unix socket file.')
            process.remove(server.config['unixsocket'])
        server.log('Redis is now ready to exit, bye bye...', '#')
        self.blocked = []
        server.closed.set()
        return True

    def _failed(self) -> bool:
        self.server.log(
            'Errors trying to shut down the server. Check the logs for more information.', '#'
        )
        self.cancel()
        return False


def remove_temp_rdb(server: Any) -> None:
    """rdbRemoveTempFile: the temp-<pid>.rdb a save of this process writes."""
    try:
        os.unlink(server.persistence.path(f'temp-{os.getpid()}.rdb'))
    except OSError:
        pass


def _replica_name(r: Any) -> str:
    """replicationGetSlaveName: ip:port, the port '<unknown-replica-port>' when the
    replica never sent REPLCONF listening-port."""
    return f'{r.address()}:{r.port or "<unknown-replica-port>"}'


def _no_key(db: int, key: bytes) -> None:
    return None
