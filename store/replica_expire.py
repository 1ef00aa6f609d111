"""Keys a writable replica's own clients gave a TTL expire on the replica
(replication.c's slaveKeysWithExpire / expireSlaveKeys).

A replica does not expire its master's keys: it waits for the master's DEL (store/
replica.py stops active expiry, and lazy expiry only hides such keys). But with
replica-read-only no, a client of the replica may write keys with a TTL that the master
knows nothing about; nobody would ever delete them. Redis remembers every key given a TTL
by a client other than the master and, from the cron, deletes those whose deadline passed.

How the TTLs are seen without a cost on the keyspace's hot paths: every deadline set by a
command goes through a shard's `DeadlineIndex.add`. While this server is a replica, each
shard's index gets this tracker's subclass of DeadlineIndex (same slots, `add` recording
the key when the client running is not the master), and gets its class back when the
server is a master again, so a master pays nothing. A key found in the tracker is checked
each cron turn: deleted as an expired key (its `expired` event, the DEL propagated to the
AOF and this server's replicas) once its deadline passed, forgotten once it has no TTL.
"""

from __future__ import annotations

from typing import Any

from .clock import now_ms
from .expiry.index import DeadlineIndex


class ReplicaKeysWithExpire:
    """The keys a replica's clients gave a TTL, per database, and the index hook."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.keys: dict[int, set[bytes]] = {}
        self.installed = False
        tracker = self

        def add(index: Any, db: int, key: bytes, deadline: int, old: int | None = None) -> int:
            link = server.replica_link
            # not while loading: the sync's load files its keys here too (rebuild)
            if (
                link is not None
                and not server.loading
                and not link.is_master(server.current_client)
            ):
                tracker.keys.setdefault(db, set()).add(key)
            return DeadlineIndex.add(index, db, key, deadline, old)

        # a subclass of this server's own (two servers may share the process)
        self.index_class = type(
            'ReplicaTrackedIndex', (DeadlineIndex,), {'__slots__': (), 'add': add}
        )

    def install(self) -> None:
        if self.installed:
            return
        for s in self.server.keyspace.shards:
            s.index.__class__ = self.index_class
        self.installed = True

    def uninstall(self) -> None:
        if not self.installed:
            return
        for s in self.server.keyspace.shards:
            s.index.__class__ = DeadlineIndex
        self.installed = False
        self.keys.clear()

    def cron(self, now: float) -> None:
        """expireSlaveKeys: delete the tracked keys whose deadline passed."""
        if not self.keys:
            return
        ks = self.server.keyspace
        ms = now_ms()
        paused = ks.expire_paused
        for db, keys in list(self.keys.items()):
            for key in list(keys):
                # read raw: a look-up would hide the key once past its deadline
                deadline = ks.shard_for(key).deadlines(db).get(key)
                if deadline is None:
                    keys.discard(key)  # gone, or its TTL removed
                elif deadline < ms:
                    ks.expire_paused = False  # this one is the replica's own to delete
                    try:
                        ks.lookup(db, key)  # lazy expiry's path: events, DEL propagated
                    finally:
                        ks.expire_paused = paused
                    keys.discard(key)
            if not keys:
                del self.keys[db]
