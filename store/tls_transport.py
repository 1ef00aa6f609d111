"""A TLS connection's transport: OpenSSL through Python's ssl memory BIOs, over the TCP
transport (or, while a script runs, a socket read by store/scripting/busy.py).

asyncio's own TLS layer (create_server(ssl=...), uvloop's SSLProtocol) keeps the TLS state
where nothing else can reach it, so a client on tls-port could not be served while a slow
script holds the loop: busy.py reads the sockets itself then, and what it reads of a TLS
client is ciphertext. Here the raw bytes go through `receive`, from the loop or from
busy.py alike, and the Connection sees only plaintext; what it writes is encrypted and
handed to the raw transport at once, which writes it at once when nothing is queued, as
busy.py needs. It also does what redis-server's connection layer does and asyncio's does
not: a failed handshake is reported to the listener (store/listen.py logs it), and a close
sends close_notify and closes the socket without waiting for the client's (connTLSClose).

The handshake's records (session tickets included) go out as they are made, so a
Connection's write buffer holds only its replies' ciphertext.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import Any

READ_SIZE = 256 * 1024  # plaintext taken out of OpenSSL at a time


class TlsTransport(asyncio.Transport):
    """The TLS side of one connection; `wire` is the raw transport's protocol."""

    def __init__(
        self,
        ctx: ssl.SSLContext,
        protocol_factory: Callable[[], Any],
        failed: Callable[[str], None],
    ) -> None:
        super().__init__()
        self.incoming = ssl.MemoryBIO()
        self.outgoing = ssl.MemoryBIO()
        self.sslobj = ctx.wrap_bio(self.incoming, self.outgoing, server_side=True)
        self.protocol_factory = protocol_factory
        self.failed = failed  # called with the reason of a handshake that failed
        self.protocol: Any = None  # the Connection, once the handshake is done
        self.raw: Any = None  # the TCP transport
        self.closing = False

    # -- the raw side (the TCP transport's protocol) ---------------------------------------

    def connection_made(self, raw: Any) -> None:
        self.raw = raw

    def data_received(self, data: bytes) -> None:
        self.receive(data)

    def receive(self, data: bytes) -> None:
        """Ciphertext from the client: the handshake's, or records whose plaintext goes to
        the Connection."""
        self.incoming.write(data)
        if self.protocol is None:
            try:
                self.sslobj.do_handshake()
            except ssl.SSLWantReadError:
                self._flush()
                return
            except (ssl.SSLError, OSError) as e:
                self._flush()
                self.closing = True
                self.raw.abort()
                self.failed(reason(e))
                return
            self._flush()
            self.protocol = self.protocol_factory()
            self.protocol.connection_made(self)
        self._read()

    def _read(self) -> None:
        protocol = self.protocol
        while not self.closing:
            try:
                data = self.sslobj.read(READ_SIZE)
            except ssl.SSLWantReadError:
                break
            except (ssl.SSLError, OSError):
                self.abort()
                return
            if not data:  # the client's close_notify (a memory BIO's read returns b'')
                self._flush()
                if not protocol.eof_received():
                    self.close()
                return
            protocol.data_received(data)
        self._flush()

    def _flush(self) -> None:
        if self.outgoing.pending and not self.raw.is_closing():
            self.raw.write(self.outgoing.read())

    def eof_received(self) -> bool:
        if self.protocol is not None and not self.closing:
            self.protocol.eof_received()
        return False  # the raw transport closes

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        if self.protocol is not None:
            self.protocol.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.protocol is not None:
            self.protocol.pause_writing()

    def resume_writing(self) -> None:
        if self.protocol is not None:
            self.protocol.resume_writing()

    # -- the Connection's side -------------------------------------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self.closing or not data:
            return
        try:
            self.sslobj.write(data)
        except (ssl.SSLError, OSError):
            self.abort()
            return
        self._flush()

    def writelines(self, list_of_data: Any) -> None:
        self.write(b''.join(list_of_data))

    def seal(self, data: bytes) -> bytes:
        """The ciphertext of `data`, for a writer that writes the socket itself (SCRIPT
        DEBUG's session, which holds the loop)."""
        self.sslobj.write(data)
        return self.outgoing.read()

    def unseal(self, data: bytes) -> bytes:
        """The plaintext of ciphertext its reader took from the socket itself."""
        self.incoming.write(data)
        plain = []
        while True:
            try:
                chunk = self.sslobj.read(READ_SIZE)
            except ssl.SSLWantReadError:
                break
            if not chunk:
                break
            plain.append(chunk)
        return b''.join(plain)

    def close(self) -> None:
        """connTLSClose: close_notify sent, the socket closed after what is queued, without
        waiting for the client's close_notify."""
        if self.closing:
            return
        self.closing = True
        try:
            self.sslobj.unwrap()
        except (ssl.SSLError, OSError):
            pass
        self._flush()
        self.raw.close()

    def abort(self) -> None:
        self.closing = True
        self.raw.abort()

    def is_closing(self) -> bool:
        return self.closing or self.raw.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == 'ssl_object':
            return self.sslobj
        if name == 'peercert':
            return self.sslobj.getpeercert()
        if name == 'cipher':
            return self.sslobj.cipher()
        return self.raw.get_extra_info(name, default)

    def get_write_buffer_size(self) -> int:
        return int(self.raw.get_write_buffer_size())

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self.raw.set_write_buffer_limits(high, low)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return tuple(self.raw.get_write_buffer_limits())

    def pause_reading(self) -> None:
        self.raw.pause_reading()

    def resume_reading(self) -> None:
        self.raw.resume_reading()

    def is_reading(self) -> bool:
        return bool(self.raw.is_reading())

    def can_write_eof(self) -> bool:
        return False

    def get_protocol(self) -> Any:
        return self.protocol

    def set_protocol(self, protocol: Any) -> None:
        self.protocol = protocol


def reason(e: BaseException) -> str:
    """OpenSSL's reason for a failed handshake, as Python words it."""
    return str(getattr(e, 'strerror', None) or e) or type(e).__name__
