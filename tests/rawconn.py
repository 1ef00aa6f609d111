"""The tests' one raw-socket RESP client: requests as bytes, replies as their exact bytes.

- `RawConn`: a connection that sends requests and reads replies one at a time (`cmd`,
  `read_reply`), a known number of them (`read_replies`, `read_exactly`), everything up to
  a trailing PING (`sync`, for pushes and messages), or whatever arrives (`read_available`).
- `exchange` / `exchange_async`: one request (or a list of pieces) on a fresh connection,
  read until EOF or silence; (reply bytes, closed). The same steps, for a socket and for
  asyncio streams (the fuzzer runs many at once).

Nothing here depends on the machine's speed: a read that knows what is coming waits up to
PATIENCE seconds for it; only "nothing more arrives" is judged from a quiet period, and
only after everything expected has arrived.
"""

import asyncio
import socket
import time

PATIENCE = 120  # seconds to wait for bytes known to be coming (a bound for a hang)
QUIET = 0.25  # seconds without data after which a connection has said all it will
EOF = b'<EOF>'  # appended by read_available when the server closed the connection


def pack(*args):
    """Encode one command as a RESP multibulk request (str, bytes or number arguments)."""
    out = [b'*%d\r\n' % len(args)]
    for a in args:
        if isinstance(a, (int, float)):
            a = str(a)
        if isinstance(a, str):
            a = a.encode()
        out.append(b'$%d\r\n%s\r\n' % (len(a), a))
    return b''.join(out)


def pack_all(*commands):
    """Several commands (each a list or tuple of arguments) as one pipelined write."""
    return b''.join(pack(*c) for c in commands)


def reply_end(buf, i=0):
    """Index just past the RESP2/RESP3 reply starting at buf[i], or None if incomplete."""
    nl = buf.find(b'\r\n', i)
    if nl < 0:
        return None
    kind, head = buf[i : i + 1], buf[i + 1 : nl]
    end = nl + 2
    if kind in b'$=!':  # bulk string, verbatim, bulk error
        n = int(head)
        if n < 0:
            return end
        return end + n + 2 if len(buf) >= end + n + 2 else None
    if kind in b'*~>%|':  # array, set, push, map, attribute
        n = int(head)
        if n < 0:
            return end
        for _ in range(n * (2 if kind in b'%|' else 1)):
            end = reply_end(buf, end)
            if end is None:
                return None
        if kind == b'|':  # an attribute precedes the reply itself
            return reply_end(buf, end) if end < len(buf) else None
        return end
    return end  # one-line types: + - : _ # , (


class RawConn:
    def __init__(self, port, host='127.0.0.1', timeout=PATIENCE, proto=2, rcvbuf=None):
        if rcvbuf:  # must be set before connect to take effect
            self.sock = socket.socket()
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            self.sock.settimeout(timeout)
            self.sock.connect((host, port))
        else:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b''
        self.syncs = 0
        if proto == 3:
            self.cmd('HELLO', '3')

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data):
        self.sock.sendall(data)

    def send_commands(self, *commands):
        self.sock.sendall(pack_all(*commands))

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f'nothing more from the server in time; have {self.buf!r:.200}')
        self.sock.settimeout(left)
        data = self.sock.recv(1 << 16)
        if not data:
            raise ConnectionError(f'connection closed; have {self.buf!r:.200}')
        self.buf += data

    def read_reply(self, timeout=PATIENCE):
        """The exact bytes of the next reply."""
        deadline = time.monotonic() + timeout
        while True:
            n = reply_end(self.buf) if self.buf else None
            if n is not None:
                reply, self.buf = self.buf[:n], self.buf[n:]
                return reply
            self._fill(deadline)

    def read_replies(self, n, timeout=PATIENCE):
        """The next `n` replies, as one bytes string."""
        return b''.join(self.read_reply(timeout) for _ in range(n))

    def read_exactly(self, n, timeout=PATIENCE):
        """The next `n` bytes, whatever replies they hold."""
        deadline = time.monotonic() + timeout
        while len(self.buf) < n:
            self._fill(deadline)
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def cmd(self, *args):
        """Send one command and return its reply's bytes."""
        self.send(pack(*args))
        return self.read_reply()

    __call__ = cmd

    def sync(self):
        """Everything the server sends up to the reply of a `PING <token>` sent now (PING
        is allowed in every mode), so pushes and messages delivered before it are
        included; b'<closed>' is appended if the server closed the connection instead."""
        self.syncs += 1
        token = b'sync%d' % self.syncs
        try:
            self.send(pack('PING', token))
        except OSError:
            return b'<closed>'
        end = b'$%d\r\n%s\r\n' % (len(token), token)
        data, self.buf = self.buf, b''
        self.sock.settimeout(PATIENCE)
        while not data.endswith(end):
            try:
                chunk = self.sock.recv(1 << 16)
            except ConnectionResetError:
                chunk = b''
            if not chunk:
                return data + b'<closed>'
            data += chunk
        return data

    def read_available(self, wait=QUIET, want=None):
        """Everything that arrives until `wait` seconds pass without data (b'' if
        nothing), with b'<EOF>' appended if the server closed the connection.

        `want` is the answer expected (a literal, or what redis-server answered): first
        wait up to PATIENCE seconds for that many bytes and, if it ends in b'<EOF>', for
        the close, so that a slow moment of a busy machine is not taken for a different
        answer; then `wait` more for anything extra."""
        data, self.buf = self.buf, b''
        size = len(want.removesuffix(EOF)) if want is not None else 0
        closes = want is not None and want.endswith(EOF)
        deadline = time.monotonic() + PATIENCE
        while True:
            left = deadline - time.monotonic() if len(data) < size or closes else wait
            if left <= 0:
                return data
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(1 << 16)
            except TimeoutError:
                return data
            except ConnectionResetError:
                return data + EOF
            if not chunk:
                return data + EOF
            data += chunk

    def closed_by_peer(self):
        """Whether the server closes the connection (waiting up to PATIENCE for it)."""
        return self.read_available(want=EOF).endswith(EOF)


def session(port, commands):
    """Run commands one at a time on a fresh connection; the list of raw replies."""
    with RawConn(port) as c:
        return [c.cmd(*cmd) for cmd in commands]


def _pieces(data):
    return [data] if isinstance(data, (bytes, bytearray)) else list(data)


def _patient(got, want):
    """Whether more is known to be coming: fewer bytes than `want`, or its close."""
    return want is not None and (len(got) < len(want[0]) or bool(want[1]))


def exchange(port, data, want=None, quiet=QUIET, gap=0.0):
    """Send `data` (bytes, or a list of pieces read `gap` seconds apart) on a fresh
    connection and read until EOF or `quiet` seconds of silence: (reply bytes, closed).

    `closed` is True when the server closed the connection, 'reset' when a reset was seen
    (bytes arriving at a closed socket draw one, and it can discard replies not yet read),
    else False. `want` (reply bytes, closed) is what another server answered: wait up to
    PATIENCE for that many bytes (and for the close if it closed) before applying `quiet`.
    Between pieces, a close stops the sending: more bytes would only draw a reset."""
    s = socket.create_connection(('127.0.0.1', port), timeout=PATIENCE)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    got = bytearray()
    closed = False
    try:
        try:
            for i, piece in enumerate(_pieces(data)):
                if i and gap:
                    s.settimeout(gap)
                    try:
                        chunk = s.recv(1 << 16)
                    except TimeoutError:
                        chunk = None
                    if chunk == b'':
                        closed = True
                        break
                    got += chunk or b''
                s.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            closed = 'reset'  # closed while we were still sending: read the rest
        deadline = time.monotonic() + PATIENCE
        while closed is not True and time.monotonic() < deadline:
            s.settimeout(PATIENCE if _patient(got, want) else quiet)
            try:
                chunk = s.recv(1 << 16)
            except TimeoutError:
                break
            except ConnectionResetError:
                closed = 'reset'
                break
            if not chunk:
                closed = closed or True
                break
            got += chunk
    finally:
        s.close()
    return bytes(got), closed


async def exchange_async(port, data, want=None, quiet=QUIET, gap=0.0):
    """`exchange` on asyncio streams, for many connections at once: the same steps and
    the same result."""
    reader, writer = await asyncio.open_connection('127.0.0.1', port)
    got = bytearray()
    closed = False
    try:
        try:
            for i, piece in enumerate(_pieces(data)):
                if i and gap:
                    try:
                        chunk = await asyncio.wait_for(reader.read(1 << 16), gap)
                    except TimeoutError:
                        chunk = None
                    if chunk == b'':
                        closed = True
                        break
                    got += chunk or b''
                writer.write(piece)
                await writer.drain()
        except (ConnectionError, OSError):
            closed = 'reset'
        deadline = time.monotonic() + PATIENCE
        while closed is not True and time.monotonic() < deadline:
            try:
                chunk = await asyncio.wait_for(
                    reader.read(1 << 16), PATIENCE if _patient(got, want) else quiet
                )
            except TimeoutError:
                break
            except (ConnectionError, OSError):
                closed = 'reset'
                break
            if not chunk:
                closed = closed or True
                break
            got += chunk
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionError, OSError):
            pass
    return bytes(got), closed
