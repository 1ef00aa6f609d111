"""TLS as redis-server 7.0 configures it (tls.c), with Python's ssl: the contexts.

`tls-port` listens for TLS clients beside `port` (or alone, with `port 0`). `configure`
builds tlsConfigure's two contexts from the `tls-*` parameters, with its checks and its
log lines: the server side one (certificate, key, CA for client certificates, protocols,
ciphers, DH parameters, server cipher preference) and, when `tls-client-cert-file` and
`-key-file` are set, the one outgoing links (a replica's link to its master under
`tls-replication`) present; else they present the server's. A failure leaves the running
contexts as they were: start-up stops ("Failed to configure TLS. Check logs for more
info."), CONFIG SET fails ("Unable to update TLS configuration. Check server logs.").

Connections on tls-port are made from one context, the listeners' (store/listen.py,
store/tls_transport.py), so new settings reach new connections through its SNI callback,
which OpenSSL calls early in every handshake (with or without a server name): it hands
the handshake to the newest context. What OpenSSL copies into a connection before that
callback, the verify mode (`tls-auth-clients`, read per connection as Redis reads it), is
set on the listeners' context itself.

Python's ssl cannot set TLS 1.3 cipher suites (`tls-ciphersuites`) nor the server's session
cache size and timeout; those parameters are accepted and reported, and docs/config.md
says they do not act.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping
from typing import Any

_PROTOCOLS = {
    'tlsv1': ssl.TLSVersion.TLSv1,
    'tlsv1.1': ssl.TLSVersion.TLSv1_1,
    'tlsv1.2': ssl.TLSVersion.TLSv1_2,
    'tlsv1.3': ssl.TLSVersion.TLSv1_3,
}
_AUTH = {'no': ssl.CERT_NONE, 'optional': ssl.CERT_OPTIONAL, 'yes': ssl.CERT_REQUIRED}

_KEY_PARTS = ('cert-file', 'key-file', 'key-file-pass')

Log = Callable[[str, str], None]


class TlsError(Exception):
    """tlsConfigure failed; the reason is in the log."""


def enabled(values: Mapping[str, Any]) -> bool:
    """Whether TLS has to be configured: applyTlsCfg's condition."""
    return bool(values['tls-port'] or values['tls-replication'] or values['tls-cluster'])


def _versions(text: str, log: Log) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    """parseProtocolsConfig: the lowest and highest of the named protocols (default TLS
    1.2 and 1.3)."""
    if not text:
        return ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3
    chosen = []
    for token in text.split(' '):
        version = _PROTOCOLS.get(token.lower())
        if version is None:
            log(
                'Invalid tls-protocols specified. '
                "Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.",
                '#',
            )
            raise TlsError
        chosen.append(version)
    return min(chosen), max(chosen)


def _context(values: Mapping[str, Any], log: Log, client: bool) -> ssl.SSLContext:
    """createSSLContext: what the server and the client side have in common."""
    prefix = 'tls-client-' if client else 'tls-'
    cert, key = values[prefix + 'cert-file'], values[prefix + 'key-file']
    password = values[prefix + 'key-file-pass'] or None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT if client else ssl.PROTOCOL_TLS_SERVER)
    ctx.check_hostname = False  # Redis checks the chain, not the name
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.minimum_version, ctx.maximum_version = _versions(values['tls-protocols'], log)
    ctx.options |= ssl.OP_NO_COMPRESSION
    try:
        ctx.load_cert_chain(cert, key, password)
    except (OSError, ssl.SSLError) as e:
        # one message for both files: Python does not say which of the two failed
        log(f'Failed to load certificate: {cert}: {_reason(e)}', '#')
        raise TlsError from None
    ca_file, ca_dir = values['tls-ca-cert-file'], values['tls-ca-cert-dir']
    if ca_file or ca_dir:
        try:
            ctx.load_verify_locations(ca_file or None, ca_dir or None)
        except (OSError, ssl.SSLError) as e:
            log(f'Failed to configure CA certificate(s) file/directory: {_reason(e)}', '#')
            raise TlsError from None
    if values['tls-ciphers']:
        try:
            ctx.set_ciphers(values['tls-ciphers'])
        except ssl.SSLError:
            log(f'Failed to configure ciphers: {values["tls-ciphers"]}', '#')
            raise TlsError from None
    return ctx


def _reason(e: BaseException) -> str:
    return str(getattr(e, 'reason', None) or getattr(e, 'strerror', None) or e)


def configure(values: Mapping[str, Any], log: Log) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """tlsConfigure: (server context, client context); TlsError once logged why not."""
    if not values['tls-cert-file']:
        log('No tls-cert-file configured!', '#')
        raise TlsError
    if not values['tls-key-file']:
        log('No tls-key-file configured!', '#')
        raise TlsError
    if (
        values['tls-auth-clients'] != 'no' or values['tls-cluster'] or values['tls-replication']
    ) and not (values['tls-ca-cert-file'] or values['tls-ca-cert-dir']):
        log(
            'Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, '
            'tls-replication or tls-auth-clients are enabled!',
            '#',
        )
        raise TlsError
    ctx = _context(values, log, client=False)
    if not values['tls-session-caching']:
        ctx.options |= ssl.OP_NO_TICKET
    if values['tls-prefer-server-ciphers']:
        ctx.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    else:  # (Python's server contexts prefer the server's order unless told otherwise)
        ctx.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
    dh = values['tls-dh-params-file']
    if dh:
        try:
            ctx.load_dh_params(dh)
        except OSError as e:
            log(f'Failed to load {dh}: {_reason(e)}', '#')
            raise TlsError from None
        except ssl.SSLError as e:
            log(f'Failed to load DH params file: {dh}: {_reason(e)}', '#')
            raise TlsError from None
    if not (values['tls-client-cert-file'] and values['tls-client-key-file']):
        # no client certificate: outgoing links present the server's, as Redis's one
        # context serves both sides then
        values = {**values, **{f'tls-client-{p}': values[f'tls-{p}'] for p in _KEY_PARTS}}
    return ctx, _context(values, log, client=True)


class Tls:
    """The server's TLS state: the contexts in use and the listeners on `tls-port`."""

    def __init__(self) -> None:
        self.server_ctx: ssl.SSLContext | None = None
        self.client_ctx: ssl.SSLContext | None = None
        self.listening: ssl.SSLContext | None = None  # the listeners' own context
        self.listeners: list[Any] = []  # asyncio servers on tls-port

    def install(self, contexts: tuple[ssl.SSLContext, ssl.SSLContext], auth: str) -> None:
        self.server_ctx, self.client_ctx = contexts
        if self.listening is None:
            self.listening = self.server_ctx
            self.listening.sni_callback = self._handshake
        elif self.listening is not self.server_ctx:
            # what OpenSSL copies into a connection before the SNI callback: protocols,
            # ciphers and options come from the listeners' context
            listening, new = self.listening, self.server_ctx
            listening.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
            listening.maximum_version = new.maximum_version
            listening.minimum_version = new.minimum_version
            listening.options = new.options
            listening.set_ciphers(':'.join(c['name'] for c in new.get_ciphers()))
        self.set_auth(auth)

    def set_auth(self, auth: str) -> None:
        """tls-auth-clients, as connCreateAcceptedTLS sets it on each new connection."""
        if self.listening is not None:
            self.listening.verify_mode = _AUTH[auth]

    def _handshake(self, sslobj: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        if self.server_ctx is not None and self.server_ctx is not ctx:
            sslobj.context = self.server_ctx
