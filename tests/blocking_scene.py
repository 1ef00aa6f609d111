"""The blocking tests' scene, shared by the list and sorted-set blocking tests: an
admin connection, clients that block one after the other (each waited for through INFO
`blocked_clients`, never a sleep), an optional keyspace-event subscriber, and `on_both`,
which plays a scenario on our server and on redis-server and compares the transcripts.
"""

from conftest import WAIT, wait_until
from rawconn import RawConn, pack


def on_both(ports, scenario):
    """Run `scenario(port)` on both servers; the transcripts must be equal."""
    ours, theirs = (scenario(p) for p in ports)
    assert ours == theirs
    return ours


def blocked_count(admin):
    info = admin.cmd('INFO', 'clients').decode()
    return int(info.split('blocked_clients:')[1].split('\r\n')[0])


def wait_blocked(admin, n):
    wait_until(lambda: blocked_count(admin) == n, f'{n} blocked clients')


class Scene:
    """An admin connection, waiters that block one after the other, and optionally a
    subscriber capturing keyspace events; closed at the end of a `with`."""

    def __init__(self, port, events=None):
        self.port = port
        self.admin = RawConn(port)
        self.waiters = []
        self.sub = None
        if events is not None:
            self.admin.cmd('CONFIG', 'SET', 'notify-keyspace-events', events)
            self.sub = RawConn(port)
            self.sub.cmd('PSUBSCRIBE', '__key*__:*')
            self.sub.cmd('SUBSCRIBE', 'scene-sentinel')

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for c in [self.admin, *self.waiters, *([self.sub] if self.sub else [])]:
            c.close()

    def cmd(self, *args):
        return self.admin.cmd(*args)

    def block(self, *args, proto=2, setup=()):
        """A new client sends `args` (after the `setup` commands) and is waited for until
        it is blocked."""
        before = blocked_count(self.admin)
        w = RawConn(self.port, proto=proto)
        self.waiters.append(w)
        for s in setup:
            w.cmd(*s)
        w.client_id = w.cmd('CLIENT', 'ID')[1:-2].decode()
        w.send(pack(*args))
        wait_blocked(self.admin, before + 1)
        return w

    def events(self):
        """The keyspace events published so far (raw pmessage replies), in order."""
        self.admin.cmd('PUBLISH', 'scene-sentinel', 'end')
        out = []
        while True:
            m = self.sub.read_reply(timeout=WAIT)
            if m.startswith(b'*3\r\n$7\r\nmessage\r\n'):
                return out
            out.append(m)
