"""CONFIG SET port and bind: move the server's listening sockets while it runs, as Redis's
changeListenPort and changeBindAddr do.

The new sockets are bound and listening before CONFIG SET returns, synchronously, so a
failure (the address is taken) is known while CONFIG SET can still refuse the whole change:
nothing is stored and the old addresses keep listening (Redis's apply-phase rollback). The
bound sockets are then handed to asyncio (`create_server(sock=...)`), which starts
accepting on the next loop turn; clients that connect meanwhile wait in the backlog.
Connected clients are not touched.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any


def hosts_of(bind: str) -> list[str]:
    """The addresses a `bind` value names, as the server's start-up reads them."""
    hosts = [
        '0.0.0.0' if h == '*' else '::' if h == '-::*' else h.lstrip('-') for h in bind.split()
    ]
    return hosts or ['0.0.0.0']


def _listen(host: str, port: int, backlog: int) -> socket.socket:
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host, port))
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def _open(server: Any, bind: str, port: int) -> list[socket.socket]:
    """Listening sockets on every address of `bind` (all or none: OSError)."""
    socks: list[socket.socket] = []
    try:
        for host in hosts_of(bind):
            socks.append(_listen(host, port, server.config['tcp-backlog']))
            if port == 0:  # ephemeral: every address shares the first one's port
                port = socks[0].getsockname()[1]
    except OSError:
        for sock in socks:
            sock.close()
        raise
    return socks


def _close(server: Any) -> None:
    for old in server.listeners:
        old.close()  # the listening sockets close now; connections stay
    server.listeners = []


def rebind(server: Any, bind: str, port: int) -> None:
    """Listen on `bind` / `port` instead of the current addresses; raises OSError, the
    old addresses still listening, when one cannot be bound. On the same port the old
    sockets close first (they hold the addresses the new ones may take again), and are
    opened again on failure, as changeBindAddr restores them."""
    old_bind, old_port = server.config['bind'], server.port
    if port == old_port:
        _close(server)
        try:
            socks = _open(server, bind, port)
        except OSError:
            _serve(server, _open(server, old_bind, old_port))
            raise
    else:
        socks = _open(server, bind, port)
        _close(server)
    _serve(server, socks)


def _serve(server: Any, socks: list[socket.socket]) -> None:
    server.port = socks[0].getsockname()[1]
    loop = server.loop

    def started(task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is None:
            server.listeners.append(task.result())

    for sock in socks:
        task = loop.create_task(loop.create_server(server.new_connection, sock=sock))
        task.add_done_callback(started)
