"""The server's listening sockets, and CONFIG SET port, tls-port and bind moving them while
it runs, as Redis's changeListenPort and changeBindAddr do.

The new sockets are bound and listening before CONFIG SET returns, synchronously, so a
failure (the address is taken) is known while CONFIG SET can still refuse the whole change:
nothing is stored and the old addresses keep listening (Redis's apply-phase rollback). The
bound sockets are then handed to asyncio (`create_server(sock=...)`), which starts
accepting on the next loop turn; clients that connect meanwhile wait in the backlog.
Connected clients are not touched.
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
from typing import Any

from .tls_transport import TlsTransport


def hosts_of(bind: str) -> list[tuple[str, bool]]:
    """The addresses a `bind` value names, each with whether it is optional (a '-' prefix:
    skipped when the machine does not have it), as listenToPort reads them: '*' is every
    IPv4 address, '::*' every IPv6 one. An empty `bind` names none: no TCP listener."""
    hosts = []
    for h in bind.split():
        optional = h.startswith('-')
        h = h[1:] if optional else h
        hosts.append(('0.0.0.0' if h == '*' else '::' if h == '::*' else h, optional))
    return hosts


# listenToPort skips an address of a protocol the machine lacks, and an optional one it
# does not have (EADDRNOTAVAIL), rather than failing
_UNSUPPORTED = {
    errno.ENOPROTOOPT,
    errno.EPROTONOSUPPORT,
    errno.ESOCKTNOSUPPORT,
    errno.EPFNOSUPPORT,
    errno.EAFNOSUPPORT,
}


def _listen(host: str, port: int, backlog: int, mark: int) -> socket.socket:
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if mark:  # socket-mark-id, for the firewall's rules (anetSetSockMarkId)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, mark)
            except OSError:
                pass  # not allowed (CAP_NET_ADMIN): Redis ignores it too
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host, port))
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def open_tcp(server: Any, bind: str, port: int) -> list[socket.socket]:
    """Listening sockets on every address of `bind` (all or none: OSError), the ones the
    machine cannot have skipped as Redis skips them."""
    socks: list[socket.socket] = []
    try:
        for host, optional in hosts_of(bind):
            try:
                sock = _listen(
                    host, port, server.config['tcp-backlog'], server.config['socket-mark-id']
                )
            except OSError as e:
                if e.errno in _UNSUPPORTED or (optional and e.errno == errno.EADDRNOTAVAIL):
                    continue
                raise
            socks.append(sock)
            if port == 0:  # ephemeral: every address shares the first one's port
                port = socks[0].getsockname()[1]
    except OSError:
        for sock in socks:
            sock.close()
        raise
    return socks


def keep_alive(sock: Any, interval: int) -> None:
    """tcp-keepalive for a client's connection (anetKeepAlive): probes after `interval`
    idle seconds, then every third of it, the peer dead after three unanswered, so a
    vanished peer is noticed in about twice `interval`. Past what Linux allows (32767 s)
    the probes keep the system's timing, as Redis ignores the failure."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, interval)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, max(interval // 3, 1))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 3)
    except OSError:
        pass


def open_unix(path: str, perm: int, backlog: int) -> socket.socket:
    """The `unixsocket` listener: a file left by an earlier run is removed first, and
    `unixsocketperm` (when not 0) applied, as anetUnixServer does."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        if perm:
            os.chmod(path, perm)
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def is_unix(listener: Any) -> bool:
    return any(s.family == socket.AF_UNIX for s in listener.sockets)


def _close(server: Any, plain: bool, tls: bool) -> None:
    """Close the TCP listeners (`plain`) and / or the TLS ones; the unix socket's stays,
    and so do connections."""
    kept = []
    for old in server.listeners:
        if is_unix(old) or not (tls if old in server.tls.listeners else plain):
            kept.append(old)
        else:
            old.close()
    server.listeners = kept
    if tls:
        server.tls.listeners = []


def _open(server: Any, bind: str, port: int, tls_port: int, plain: bool, tls: bool) -> None:
    """Listen on `bind` at `port` (if `plain`) and `tls_port` (if `tls`), all or none:
    OSError, nothing opened. A TLS port of 0 is no TLS listener; a port of 0 is none
    beside a TLS port, and alone one the system picks."""
    plain_socks = open_tcp(server, bind, port) if plain and (port or not tls_port) else []
    try:
        tls_socks = open_tcp(server, bind, tls_port) if tls and tls_port else []
    except OSError:
        for sock in plain_socks:
            sock.close()
        raise
    if plain:
        _serve(server, plain_socks, port)
    serve_tls(server, tls_socks)


def move(server: Any, bind: str, port: int, tls_port: int) -> None:
    """CONFIG SET bind, port, tls-port: listen there instead (changeBindAddr,
    changeListenPort). Only the listeners whose address changes close, and first (the
    new ones may take the same addresses again); if the new addresses cannot all be
    bound, the old ones are opened again and OSError raised, as Redis rolls back."""
    old = server.config['bind'], server.port, server.config['tls-port']
    plain = (bind, port) != old[:2]
    tls = (bind, tls_port) != (old[0], old[2])
    _close(server, plain, tls)
    try:
        _open(server, bind, port, tls_port, plain, tls)
    except OSError:
        _open(server, *old, plain, tls)
        raise


def _serve(server: Any, socks: list[socket.socket], port: int) -> None:
    server.port = socks[0].getsockname()[1] if socks else port
    loop = server.loop

    def started(task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is None:
            server.listeners.append(task.result())

    for sock in socks:
        backlog = server.config['tcp-backlog']  # (asyncio listens again: 100 unless told)
        task = loop.create_task(
            loop.create_server(server.new_connection, sock=sock, backlog=backlog)
        )
        task.add_done_callback(started)


def serve_tls(server: Any, socks: list[socket.socket]) -> None:
    """Accept TLS connections on `socks` (tls-port)."""
    for sock in socks:
        listener = TlsListener(server, sock)
        server.listeners.append(listener)
        server.tls.listeners.append(listener)


class TlsListener:
    """tls-port's accept loop, with the few methods of an asyncio server the server uses.
    Each accepted socket gets a TlsTransport (store/tls_transport.py) whose handshake, once
    done, makes the Connection; one that fails is logged as Redis logs it ("Error accepting
    a client connection: <the reason>") and closes that connection only."""

    def __init__(self, server: Any, sock: socket.socket) -> None:
        self.server = server
        self.sockets = [sock]
        self.accepting: set[asyncio.Task[Any]] = set()  # (a task nothing holds may vanish)
        server.loop.add_reader(sock.fileno(), self._accept)

    def _accept(self) -> None:
        if not self.sockets:
            return
        server = self.server
        while True:
            try:
                sock, _ = self.sockets[0].accept()
            except OSError:  # none left (EAGAIN), or out of descriptors: the next readiness
                return
            if len(server.clients) >= server.config['maxclients']:
                # acceptCommonHandler refuses before the handshake: its error cannot be
                # written yet, so the client sees the connection drop
                server.stats.rejected_connections += 1
                sock.close()
                continue
            sock.setblocking(False)
            tls = TlsTransport(server.tls.listening, server.new_connection, self._failed)
            made = server.loop.connect_accepted_socket(lambda tls=tls: tls, sock)
            task = server.loop.create_task(made)
            self.accepting.add(task)
            task.add_done_callback(self.accepting.discard)

    def _failed(self, reason: str) -> None:
        self.server.log(f'Error accepting a client connection: {reason}', '#')

    def close(self) -> None:
        if self.sockets:
            sock = self.sockets.pop()
            self.server.loop.remove_reader(sock.fileno())
            sock.close()

    async def wait_closed(self) -> None:
        pass
