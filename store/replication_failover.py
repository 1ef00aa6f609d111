"""FAILOVER (replication.c's failoverCommand and updateFailoverStatus), a part of
store/replication.py's Replication.

Writes are paused (a CLIENT PAUSE WRITE of its own) until the target replica, or any
replica, acknowledged the whole stream; then this server becomes the target's replica with
`PSYNC <its replid> <its offset + 1> FAILOVER`, which makes the target a master (here:
`sync`, which promotes this server when it is the target). Its answer ends the failover
and the paused writes run (as a replica's: -READONLY); an error, a lost connection or the
timeout (without FORCE) abort it, and this server is a master again. This server as the
target promotes itself and answers with a full resynchronisation where Redis continues
partially (its replicas do not share their master's history).

States (INFO's master_failover_state): no-failover; waiting-for-sync, writes paused
(server.pause.failover) until the target (or any replica) acknowledged the whole stream,
or the timeout; failover-in-progress, this server a replica of the target, asking it to
take over (store/replica.py ends or aborts it on the answer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .clock import now_ms


class Failover:
    """Replication's FAILOVER (a part of store/replication.py's class; the replicas here
    are its Replica objects)."""

    # Replication's state this part reads and writes (set in Replication.__init__)
    server: Any
    offset: int
    replicas: list[Any]
    syncing: list[Any]
    failover_state: str
    failover_target: tuple[str, int] | None
    failover_end: int
    failover_force: bool
    replicate: Callable[..., bool]
    promote: Callable[..., None]

    def find_replica(self, host: str, port: int) -> Any:
        """findReplica: the replica at host (its announced or peer address) and its
        listening port, online or syncing."""
        for r in self.syncing + self.replicas:
            if r.address().lower() == host.lower() and r.port == port:
                return r
        return None

    def start_failover(self, target: tuple[str, int] | None, timeout_ms: int, force: bool) -> None:
        """FAILOVER, its checks passed: writes paused until a replica caught up."""
        if target is not None:
            self.server.log(f'FAILOVER requested to {target[0]}:{target[1]}.')
        else:
            self.server.log('FAILOVER requested to any replica.')
        self.failover_target = target
        self.failover_end = now_ms() + timeout_ms if timeout_ms else 0
        self.failover_force = force
        self.failover_state = 'waiting-for-sync'
        self.server.pause.failover(True)
        self.server.persistence.aof.write_replicas()  # the stream so far, to be acknowledged

    def failover_check(self) -> None:
        """updateFailoverStatus: past the timeout abort (or, with FORCE, fail over all the
        same); once the target (or any replica) acknowledged the whole stream, become its
        replica and ask it to take over."""
        if self.failover_state != 'waiting-for-sync':
            return
        target = self.failover_target
        if self.failover_end and self.failover_end <= now_ms():
            if self.failover_force and target is not None:
                self.server.log(
                    f'FAILOVER to {target[0]}:{target[1]} time out exceeded, failing over.'
                )
                self._demote(target)
            else:
                self.abort_failover('Replica never caught up before timeout')
            return
        if target is not None:
            r = self.find_replica(*target)
            if r is None or r.ack != self.offset:
                return
        else:
            r = next((x for x in self.replicas if x.ack == self.offset), None)
            if r is None:
                return
            target = self.failover_target = (r.address(), r.port)
        self.server.log(f'Failover target {target[0]}:{target[1]} is synced, failing over.')
        self._demote(target)

    def _demote(self, target: tuple[str, int]) -> None:
        self.failover_state = 'failover-in-progress'
        self.replicate(target[0], target[1], failover=True)

    def abort_failover(self, reason: str) -> None:
        """abortFailover: a master again if it had become the target's replica."""
        if self.failover_state == 'no-failover':
            return
        target = self.failover_target
        if target is not None:
            self.server.log(f'FAILOVER to {target[0]}:{target[1]} aborted: {reason}')
        else:
            self.server.log(f'FAILOVER to any replica aborted: {reason}')
        if self.failover_state == 'failover-in-progress':
            self.promote()
        self.end_failover()

    def end_failover(self) -> None:
        """The failover is over: taken over by the target (it answered PSYNC ...
        FAILOVER) or aborted; the writes paused meanwhile run."""
        self.failover_state = 'no-failover'
        self.failover_target = None
        self.failover_end = 0
        self.failover_force = False
        self.server.pause.failover(False)
