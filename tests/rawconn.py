"""A raw-socket client for byte-exact tests: send requests, get each reply's exact bytes."""

import socket
import time

import hiredis


def pack(*args):
    """Encode one command as a RESP multibulk request."""
    out = [b'*%d\r\n' % len(args)]
    for a in args:
        if isinstance(a, int):
            a = str(a)
        if isinstance(a, str):
            a = a.encode()
        out.append(b'$%d\r\n%s\r\n' % (len(a), a))
    return b''.join(out)


class RawConn:
    def __init__(self, port, host='127.0.0.1', timeout=5):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b''

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data):
        self.sock.sendall(data)

    def _reply_end(self):
        """Length of the first complete reply in the buffer, or None."""
        reader = hiredis.Reader()
        # Feed byte-accurately: find the shortest prefix that parses as one reply.
        reader.feed(self.buf)
        if reader.gets() is False:
            return None
        lo, hi = 1, len(self.buf)
        while lo < hi:                   # smallest prefix that still holds a full reply
            mid = (lo + hi) // 2
            r = hiredis.Reader()
            r.feed(self.buf[:mid])
            if r.gets() is False:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def read_reply(self, timeout=5):
        """The exact bytes of the next reply."""
        deadline = time.time() + timeout
        while True:
            n = self._reply_end() if self.buf else None
            if n is not None:
                reply, self.buf = self.buf[:n], self.buf[n:]
                return reply
            self.sock.settimeout(max(0.01, deadline - time.time()))
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError('connection closed')
            self.buf += data

    def cmd(self, *args):
        """Send one command and return its reply's bytes."""
        self.send(pack(*args))
        return self.read_reply()

    def read_available(self, wait=0.2):
        """Everything that arrives within `wait` seconds (b'' if nothing); appends
        b'<EOF>' if the server closed the connection."""
        end = time.time() + wait
        data = self.buf
        self.buf = b''
        while True:
            left = end - time.time()
            if left <= 0:
                return data
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except (socket.timeout, TimeoutError):
                return data
            except ConnectionResetError:
                return data + b'<EOF>'
            if not chunk:
                return data + b'<EOF>'
            data += chunk

    def closed_by_peer(self, wait=2.0):
        return self.read_available(wait).endswith(b'<EOF>')


def session(port, commands):
    """Run commands one at a time on a fresh connection; the list of raw replies."""
    with RawConn(port) as c:
        return [c.cmd(*cmd) for cmd in commands]
