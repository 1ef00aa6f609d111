"""Serving other clients while a script runs past `busy-reply-threshold` (Redis's
processEventsWhileBlocked).

The script runs on the event loop's thread, so the loop cannot run until it returns. Past
the threshold, the engine's count hook calls `poll` about every millisecond: it reads the
other clients' sockets itself (epoll, non-blocking) and feeds what arrives to their
connections. Every connection is gated meanwhile, so the dispatcher answers -BUSY to all
but the `allow_busy` commands (SCRIPT KILL, FUNCTION KILL, SHUTDOWN NOSAVE, ...), which
run at once. Replies leave through the transports, which write immediately when nothing is
queued. The caller's own socket is not read, as Redis protects that client.

New connections are accepted too (an operator opens redis-cli to send SCRIPT KILL): each
gets a Connection on a plain blocking socket (`_SocketTransport`) and is handed to the
event loop, as any accepted socket, when the script ends.
"""

from __future__ import annotations

import os
import select
import socket
import time
from typing import Any

from ..tls_transport import TlsTransport


class _SocketTransport:
    """The few transport methods a Connection uses, on a socket accepted while busy."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.closed = False

    def get_extra_info(self, name: str) -> Any:
        if name == 'peername':
            return self.sock.getpeername()
        if name == 'sockname':
            return self.sock.getsockname()
        if name == 'socket':
            return self.sock
        return None

    def write(self, data: bytes) -> None:
        if not self.closed:
            try:
                self.sock.sendall(data)
            except OSError:
                self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self.sock.shutdown(socket.SHUT_RDWR)  # the peer sees the close now
            except OSError:
                pass

    def is_closing(self) -> bool:
        return self.closed


class Busy:
    def __init__(self, server: Any) -> None:
        self.server = server
        self.run: Any = None  # the timed-out ScriptRun, while there is one
        self.poller: Any = None
        self.conns: dict[int, Any] = {}  # fd -> connection
        self.listeners: dict[int, socket.socket] = {}  # fd -> listening socket (a dup)
        self.accepted: list[tuple[Any, socket.socket]] = []

    def message(self) -> str:
        kill = 'SCRIPT KILL' if self.run.is_eval else 'FUNCTION KILL'
        return f'BUSY Redis is busy running a script. You can only call {kill} or SHUTDOWN NOSAVE.'

    def allows(self, cmd: Any) -> bool:
        """Whether `cmd` runs while busy: the `allow_busy` commands, but only the kill and
        stats of the running kind (FUNCTION KILL gets -BUSY during an EVAL, as in 7.0)."""
        if 'allow_busy' not in cmd.flags:
            return False
        if self.run.is_eval:
            return cmd.name not in ('function|kill', 'function|stats')
        name: str = cmd.name
        return name != 'script|kill'

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
            if sock is not None:
                self._watch(sock.fileno(), conn)
        for listener in server.listeners:
            if listener in server.tls.listeners:
                continue  # (a new TLS client's handshake waits for the loop)
            for s in listener.sockets:
                dup = socket.socket(fileno=os.dup(s.fileno()))
                dup.setblocking(False)
                self.listeners[dup.fileno()] = dup
                self.poller.register(dup.fileno(), select.EPOLLIN)

    def _watch(self, fd: int, conn: Any) -> None:
        self.poller.register(fd, select.EPOLLIN)
        self.conns[fd] = conn
        conn.gated = True

    def poll(self) -> None:
        current = self.server.current_client  # the script's caller, once more after
        for fd, _ in self.poller.poll(0):
            listener = self.listeners.get(fd)
            if listener is not None:
                self._accept(listener)
                continue
            conn = self.conns[fd]
            try:
                data = os.read(fd, 16 * 1024)
            except BlockingIOError:
                continue
            except OSError:
                data = b''
            if not data or conn.closing:  # closed: the loop notices when it runs again
                self.poller.unregister(fd)
                del self.conns[fd]
                if conn.is_replica():  # but a replica is gone now (INFO's connected_slaves,
                    self.server.replication.detach(conn)  # min-replicas-to-write)
                if isinstance(conn.transport, _SocketTransport):
                    conn.transport.close()
                continue
            if isinstance(conn.transport, TlsTransport):
                conn.transport.receive(data)  # ciphertext: the plaintext goes to conn
            else:
                conn.data_received(data)
        if self.server.pending_flush:  # the loop that would write them waits for the script
            self.server.flush_pending()
        self.server.current_client = current

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                sock, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            sock.setblocking(True)
            conn = self.server.new_connection()
            conn.connection_made(_SocketTransport(sock))
            self.accepted.append((conn, sock))
            if not conn.closing:
                self._watch(sock.fileno(), conn)

    def end(self, run: Any) -> None:
        self.poller.close()
        self.poller = None
        self.run = None
        for listener in self.listeners.values():
            listener.close()
        self.listeners = {}
        conns, self.conns = self.conns, {}
        for conn in conns.values():
            conn.update_gate()
        accepted, self.accepted = self.accepted, []
        loop = self.server.loop
        for conn, sock in accepted:
            if conn.transport.closed:
                sock.close()
                conn.connection_lost(None)
            else:  # from now on the event loop's: the same Connection, a real transport
                loop.create_task(loop.connect_accepted_socket(lambda c=conn: c, sock))
