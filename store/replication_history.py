"""A replica's replication history is its master's (PSYNC2), so that its own replicas, and
itself after a promotion or a failover, continue where they were.

- After a full sync (`follow`), this server's replication id and offset are the master's,
  and its backlog is the master's stream as applied here (`proxied`: the bytes of every
  complete command the link applied, fed as they are to this server's own replicas, as
  Redis's replicationFeedStreamFromMasterStream does; no PING or SELECT of its own).
  The payload of a replica of this replica carries repl-stream-db, the database the
  master's stream has selected, which the stream itself will not say again.
- When the master's id changes under a continued link (+CONTINUE <new id>), or this
  server is promoted (REPLICAOF NO ONE, FAILOVER), the old id becomes `replid2`, valid up
  to `second_offset` (shiftReplicationId), and this server's replicas are disconnected
  so that they learn the new id; their PSYNC with the old one continues (+CONTINUE).
- A master told to follow another first tries to continue its own history with it
  (replicationCacheMasterUsingMyself): its old replicas may have become masters of it.
"""

from __future__ import annotations

import os
import time
from typing import Any

NO_ID = '0' * 40


def follow(repl: Any, replid: str, offset: int) -> None:
    """A full sync is loaded: the master's history from `offset` on is this server's."""
    repl.replid, repl.offset = replid, offset
    repl.replid2, repl.second_offset = NO_ID, -1
    repl.backlog = bytearray()
    repl.backlog_start = offset
    repl.no_replicas_since = time.time()
    repl.proxy = True


def start_proxy(repl: Any) -> None:
    """This server follows a master from now on: replicas get the master's stream, not
    what the AOF's propagation makes of the commands applied here."""
    if repl.proxy:
        return
    repl.proxy = True
    if repl.active:
        repl.server.persistence.aof.write_replicas()
        repl.active = False
        repl.server.persistence.aof.replication_stopped()


def shift(repl: Any, new_id: str | None = None) -> None:
    """shiftReplicationId: the current id stays valid as replid2 up to this offset; the
    replicas are disconnected to learn the new one."""
    repl.replid2, repl.second_offset = repl.replid, repl.offset + 1
    repl.replid = new_id if new_id is not None else os.urandom(20).hex()
    for r in repl.syncing + repl.replicas:
        r.conn.abort()


def promoted(repl: Any) -> bool:
    """A replica becomes a master keeping its history (False when it has none): a new id,
    the backlog kept, and from now on its own propagation feeds the replicas, starting
    with a SELECT."""
    if not repl.proxy or repl.backlog is None:
        repl.proxy = False
        return False
    repl.proxy = False
    shift(repl)
    aof = repl.server.persistence.aof
    aof.write_replicas()
    aof.selected_db = -1
    repl.active = True
    aof.replication_started()
    repl.no_replicas_since = time.time()
    return True


def accepts(repl: Any, replid: str, offset: int) -> bool:
    """Whether PSYNC <replid> <offset> names this server's history: its id, or its
    previous one up to where it ended."""
    if replid == repl.replid:
        return True
    previous: bool = replid == repl.replid2 and offset <= repl.second_offset
    return previous


def save_aux(repl: Any) -> dict[bytes, bytes]:
    """rdbPopulateSaveInfo: the replication aux fields an RDB file saved now carries, so
    that a restart continues this history (nothing when there is none)."""
    if repl.backlog is None:
        return {}
    link = repl.server.replica_link
    if link is None:
        db = max(repl.server.persistence.aof.selected_db, 0)
    elif link.conn is not None:
        db = link.conn.db
    else:
        return {}
    return aux_fields(repl, db)


def aux_fields(repl: Any, db: int) -> dict[bytes, bytes]:
    """The replication aux fields of an RDB made now (rdbSaveInfo): this history's id
    and offset, and `db`, the database the stream that follows has selected."""
    return {
        b'repl-stream-db': b'%d' % db,
        b'repl-id': repl.replid.encode(),
        b'repl-offset': b'%d' % repl.offset,
    }


def restore(repl: Any, aux: dict[bytes, bytes], replica: bool) -> None:
    """loadDataFromDisk: an RDB file with replication aux fields continues that history.
    A replica resumes it with its master (PSYNC with that id and offset); a master keeps
    it as replid2 and a backlog starting there, for its old replicas to continue."""
    try:
        replid = aux[b'repl-id'].decode('latin-1')
        offset = int(aux[b'repl-offset'])
        db = int(aux[b'repl-stream-db'])
    except (KeyError, ValueError):
        return
    if len(replid) != 40 or offset < 0 or db < 0:
        return
    repl.backlog = bytearray()
    repl.backlog_start = offset
    repl.no_replicas_since = time.time()
    repl.resume_db = db
    if replica:
        repl.replid, repl.offset = replid, offset
        repl.proxy = True
        return
    repl.replid2, repl.second_offset = replid, offset + 1
    repl.offset = offset
    repl.active = True
    repl.server.persistence.aof.replication_started()
