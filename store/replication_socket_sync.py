"""A diskless full sync's payload, written to the replicas' sockets as it is made (the
`$EOF:` form of repl-diskless-sync yes, Redis's "target: replicas sockets").

Redis forks a child that writes the RDB into a pipe; the parent reads the pipe and writes
each piece to every replica it is for, and reads the next piece only once all of them took
the last one (rdbPipeReadHandler): the slowest replica sets the pace, nothing is kept on
disk or in memory beyond a piece, and the child (and so INFO's rdb_bgsave_in_progress)
lives until the last byte is sent. Here the point-in-time snapshot (store/persistence/
snapshot.py) is the child: `SocketPayload` is what it writes into, and the snapshot takes
its next step only while no replica's transport is over its high-water mark (`blocked`;
Persistence._step waits, and a replica's resume_writing wakes it).

What Redis logs and does at each turn is done here at the same turn:

- a replica that stays blocked for more than repl-timeout is dropped ("Disconnecting
  timedout replica (full sync)", `timed_out`), as replicationCron drops one whose last
  partial write is that old; the others go on;
- when every replica it is for is gone the snapshot is stopped ("last replica dropped,
  killing fork child");
- once all is written, "done reading from pipe, N replicas still up", then each replica
  left gets the end mark and waits online for its first REPLCONF ACK
  (store/replication_full_sync.py).
"""

from __future__ import annotations

import time
from typing import Any


class SocketPayload:
    """The output of a diskless payload's snapshot: each write goes to every replica of
    `replicas` still waiting for it (Redis's rdb_pipe_conns)."""

    def __init__(self, replicas: list[Any], mark: bytes) -> None:
        self.replicas = list(replicas)
        self.mark = mark  # the 40 random characters around the RDB: `$EOF:<mark>` ... mark

    def alive(self) -> list[Any]:
        """The replicas still waiting for this payload (dropped ones are not)."""
        return [
            r
            for r in self.replicas
            if r.state == 'wait_bgsave' and not r.conn.closing and r.conn.transport is not None
        ]

    def write(self, data: bytes) -> None:
        now = time.time()
        for r in self.alive():
            conn = r.conn
            conn.send_stream(data)
            if conn.write_paused and not r.partial_since:
                r.partial_since = now  # repl_last_partial_write: it took only part of it

    def blocked(self) -> bool:
        """Whether a replica has not taken what it was given: the next piece waits."""
        return any(r.conn.write_paused for r in self.alive())

    def timed_out(self, now: float, timeout: int) -> list[Any]:
        """The replicas blocked for more than `timeout` seconds."""
        return [r for r in self.alive() if r.partial_since and now - r.partial_since > timeout]

    def flush(self) -> None:
        """(The snapshot flushes its output at the end; every write is sent already.)"""

    def close(self) -> None:
        """(The snapshot closes its output when it ends; the sockets stay the replicas'.)"""
