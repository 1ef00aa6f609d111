"""The master PINGs its replicas when replicationCron's once-a-second count is a multiple
of repl-ping-replica-period, as Redis does: a replica that attaches gets no PING at once,
and none at all with a period of an hour (Redis's suite sets 3600 and reads the stream
expecting only the commands it ran)."""

import socket
import time

import hiredis


def _attach(port):
    """SYNC on a raw socket, the payload skipped: the socket and a reader of the stream."""
    s = socket.create_connection(('127.0.0.1', port), timeout=10)
    s.sendall(b'SYNC\r\n')
    buf = b''
    while True:
        buf += s.recv(65536)
        buf = buf.lstrip(b'\n')  # newlines keep the link alive while the payload is made
        if b'\r\n' in buf:
            head = buf.index(b'\r\n')
            size = int(buf[1:head])
            if len(buf) >= head + 2 + size:
                reader = hiredis.Reader()
                reader.feed(buf[head + 2 + size :])
                return s, reader


def _read_until(s, reader, last):
    out = []
    while True:
        item = reader.gets()
        if item is False:
            reader.feed(s.recv(65536))
            continue
        out.append(item)
        if item == last:
            return out


def test_no_ping_right_after_a_replica_attaches(make_server):
    # a server of its own: a replica makes a master keep a backlog (ROLE's offset) for good
    server = make_server(repl_diskless_sync='no')
    c = server.client(protocol=2)
    c.config_set('repl-ping-replica-period', 3600)
    s, reader = _attach(server.port)
    try:
        c.set('a', '1')
        time.sleep(2.5)  # two crons of replication's once-a-second count
        c.set('b', '2')
        stream = _read_until(s, reader, [b'SET', b'b', b'2'])
        assert [x for x in stream if x[0].upper() == b'PING'] == []
        assert [x[0].upper() for x in stream] == [b'SELECT', b'SET', b'SET']
    finally:
        s.close()
        c.close()
