"""Serving other clients while a script runs past `busy-reply-threshold` (Redis's
processEventsWhileBlocked).

The script runs on the event loop's thread, so the loop cannot run until it returns. Past
the threshold, the engine's count hook calls `poll` about every millisecond: it reads the
other clients' sockets itself (epoll, non-blocking) and feeds what arrives to their
connections. Every connection is gated meanwhile, so the dispatcher answers -BUSY to all
but the `allow_busy` commands (SCRIPT KILL, FUNCTION KILL, SHUTDOWN NOSAVE, ...), which
run at once. Replies leave through the transports, which write immediately when nothing is
queued. The caller's own socket is not read, as Redis protects that client.

Not served while busy: connections that arrive after the script started wait in the
listen backlog until it ends (Redis would accept them and answer -BUSY).
"""

from __future__ import annotations

import os
import select
import time
from typing import Any


class Busy:
    def __init__(self, server: Any) -> None:
        self.server = server
        self.run: Any = None  # the timed-out ScriptRun, while there is one
        self.poller: Any = None
        self.conns: dict[int, Any] = {}  # fd -> connection

    def message(self) -> str:
        kill = 'SCRIPT KILL' if self.run.is_eval else 'FUNCTION KILL'
        return f'BUSY Redis is busy running a script. You can only call {kill} or SHUTDOWN NOSAVE.'

    def begin(self, run: Any) -> None:
        server = self.server
        run.timed_out = True
        self.run = run
        elapsed = int((time.perf_counter() - run.start) * 1000)
        kill = 'SCRIPT KILL' if run.is_eval else 'FUNCTION KILL'
        server.log(
            f'Slow script detected: still in execution after {elapsed} milliseconds. '
            f'You can try killing the script using the {kill} command. '
            f'Script name is: {run.name.decode("utf-8", "replace")}.',
            '#',
        )
        self.poller = select.epoll()
        for conn in server.clients.values():
            if conn is run.caller or conn.transport is None or conn.closing:
                continue
            sock = conn.transport.get_extra_info('socket')
            if sock is None:
                continue
            fd = sock.fileno()
            self.poller.register(fd, select.EPOLLIN)
            self.conns[fd] = conn
            conn.gated = True

    def poll(self) -> None:
        for fd, _ in self.poller.poll(0):
            conn = self.conns[fd]
            try:
                data = os.read(fd, 16 * 1024)
            except BlockingIOError:
                continue
            except OSError:
                data = b''
            if not data:  # closed: the loop notices when it runs again
                self.poller.unregister(fd)
                del self.conns[fd]
                continue
            conn.data_received(data)

    def end(self, run: Any) -> None:
        self.poller.close()
        self.poller = None
        self.run = None
        conns, self.conns = self.conns, {}
        for conn in conns.values():
            conn.update_gate()
