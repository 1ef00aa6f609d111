"""The master's side of a replica waiting for its full synchronization to start
(replication.c's SLAVE_STATE_WAIT_BGSAVE_START and replicationCron's pre-sync newlines).

With repl-diskless-sync yes and repl-diskless-sync-delay N, Redis waits N seconds after a
replica asks for a full sync before it makes the payload, so that replicas arriving
meanwhile share it; it starts at once when repl-diskless-sync-max-replicas are waiting.
Such a replica has no +FULLRESYNC yet: it is still in its handshake. The payload, once
started (Replication.start_waiting), is store/replication_full_sync.py's.

Every second, a replica waiting for its payload to start or to be made gets a newline
(not one whose payload is streamed to it as it is made):
replicas read newlines before the PSYNC reply and before the payload's length as the
master being alive, so their repl-timeout does not fire while a slow payload is made.
"""

from __future__ import annotations

from typing import Any


def diskless_delay(repl: Any) -> int:
    """Seconds a full sync waits before its payload is started (0: none)."""
    cfg = repl.server.config
    return cfg['repl-diskless-sync-delay'] if cfg['repl-diskless-sync'] else 0


def presync_cron(repl: Any, now: float) -> None:
    """Start the delayed payload when its time came, and keep waiting replicas alive."""
    waiting = [r for r in repl.syncing if r.state == 'wait_start']
    if waiting:
        cfg = repl.server.config
        idle = now - min(r.since for r in waiting)
        most = cfg['repl-diskless-sync-max-replicas']
        if idle >= diskless_delay(repl) or (most and len(waiting) >= most):
            repl.start_waiting(waiting)
    if now - repl.last_newline >= 1:
        repl.last_newline = now
        streamed = repl.server.persistence.stream is not None  # (bytes of its payload go)
        for r in repl.syncing:
            if r.state == 'wait_start' or (r.state == 'wait_bgsave' and not streamed):
                if not r.conn.closing:
                    r.conn.send_stream(b'\n')
