"""Blocking operations: clients waiting on keys (XREAD/XREADGROUP BLOCK today; BLPOP, BLMOVE,
BZPOPMIN, BLMPOP, BZMPOP use the same registry).

Redis's blocked.c, in one registry per server:

- A blocking command that finds nothing to serve calls `block(conn, keys, serve, timeout,
  timeout_reply)`. The connection is parked: later commands it sends queue behind the
  blocked one (`Connection.park`), and its reply is sent when the wait ends.
- Writers do not call in here. The keyspace reports every modified key to its observers
  (`Keyspace.observe`, the hook WATCH uses); the registry observes exactly the keys that
  have waiters, so a write, a deletion, an expiry, a FLUSHALL or a type change all signal
  the key, and unrelated writes cost nothing. A signalled key is served once the command
  that signalled it has finished, before the signalling client's next command runs
  (Redis's handleClientsBlockedOnKeys after each command): the signal gates the running
  connection (`Connection.gated`) so its next command passes the gate, which serves first.
- Serving calls each waiter's `serve(db, key)` in the order the clients blocked (first
  blocked, first served). It returns the reply, or None to keep waiting; a serve function
  decides what a deleted key or a changed type means for its command (XREADGROUP answers
  `-UNBLOCKED the stream key no longer exists`, XREAD keeps waiting).
- A wait ends by being served, by its timeout (a loop timer; `timeout_reply`), by CLIENT
  UNBLOCK (the timeout reply, or `-UNBLOCKED client unblocked via CLIENT UNBLOCK`), or by
  disconnect/RESET (no reply).
- Inside MULTI/EXEC a command may not block: callers check `may_block(conn)` and reply
  as on timeout, as Redis does.
- In cluster mode a client blocked on a key whose slot this node no longer serves is
  unblocked with the redirection Redis sends (-MOVED, -CLUSTERDOWN: cluster.c's
  clusterRedirectBlockedClientIfNeeded, which clientsCron runs for every blocked client
  about once a second): `redirect`, given by the cluster layer (store/cluster/routing.py's
  `attach`), is asked for each waiter once a second while any waits. Off (standalone),
  it costs nothing.

Invariants: a connection has at most one waiter (`conn.blocked`); a waiter is listed under
each of its keys until it ends, and a key is observed while any waiter lists it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .resp import RedisError

Key = tuple[int, bytes]
Serve = Callable[[int, bytes], Any]

E_UNBLOCKED = 'UNBLOCKED client unblocked via CLIENT UNBLOCK'


class Waiter:
    __slots__ = ('conn', 'keys', 'serve', 'timeout_reply', 'wants', 'timer', 'active', 'aof')

    def __init__(
        self,
        conn: Any,
        keys: list[Key],
        serve: Serve,
        timeout_reply: Any,
        wants: type | None,
    ) -> None:
        self.conn = conn
        self.keys = keys
        self.serve = serve
        self.timeout_reply = timeout_reply
        self.wants = wants
        self.timer: Any = None
        self.active = True
        self.aof: Any = None  # what the AOF writes once served (persistence/aof.py)


# cluster mode: (the blocked connection, its first key, whether its command writes) -> the
# error that unblocks it, or None while this node serves the key's slot
Redirect = Callable[[Any, bytes, bool], Any]
REDIRECT_PERIOD = 1.0  # s: clientsCron visits every client about once a second


class BlockingRegistry:
    # SWAPDB signals it for a key the swap brings even when past its deadline (see
    # Keyspace.swapdb): serving looks it up, which expires it, as Redis's does
    serves_stale_keys = True

    def __init__(self, server: Any) -> None:
        self.server = server
        self.waiters: dict[Key, list[Waiter]] = {}  # key -> waiters, first blocked first
        self.ready: list[Key] = []  # signalled keys not served yet
        self.handle: Any = None
        self.redirect: Redirect | None = None  # cluster mode (store/cluster/routing.py)
        self.redirect_handle: Any = None  # the next redirect sweep, while clients wait
        server.disconnect_hooks.append(self.cancel)
        server.reset_hooks.append(self.cancel)

    # -- blocking ----------------------------------------------------------------------------

    @staticmethod
    def may_block(conn: Any) -> bool:
        """False inside EXEC or for a client with no socket, where a blocking command
        answers as on timeout."""
        return not conn.in_exec and conn.transport is not None

    def block(
        self,
        conn: Any,
        keys: list[bytes],
        serve: Serve,
        timeout: float,
        timeout_reply: Any,
        wants: type | None = None,
    ) -> None:
        """Park `conn` until `serve` answers for one of `keys` (in its current database),
        `timeout` seconds pass (0: forever), or it is unblocked. With `wants` (List, ZSet,
        Stream), only a write that leaves a value of that type signals the key, as Redis
        signals a key ready only when a list, zset or stream is added under it; without,
        any change does (XREADGROUP, which a deletion ends)."""
        db = conn.db
        keys_ = list(dict.fromkeys((db, k) for k in keys))
        w = Waiter(conn, keys_, serve, timeout_reply, wants)
        ks = self.server.keyspace
        for dk in w.keys:
            lst = self.waiters.get(dk)
            if lst is None:
                lst = self.waiters[dk] = []
                ks.observe(dk, self)
            lst.append(w)
        if timeout:
            w.timer = self.server.loop.call_later(timeout, self._timed_out, w)
        conn.blocked = w
        conn.park()
        if self.redirect is not None and self.redirect_handle is None:
            self.redirect_handle = self.server.loop.call_later(
                REDIRECT_PERIOD, self._redirect_sweep
            )

    def blocked_clients(self) -> int:
        return sum(1 for c in self.server.clients.values() if c.blocked is not None)

    # -- signals (Keyspace observers' interface) -------------------------------------------------

    def swapped(self, db: int, key: bytes, here: bool, there: bool, stale: bool) -> None:
        """SWAPDB: the key's database held it or now holds it live."""
        if here or not stale:
            self.key_modified(db, key)

    def key_modified(self, db: int, key: bytes) -> None:
        dk = (db, key)
        if dk in self.ready:
            return
        value = self.server.keyspace.value_class(db, key)
        if all(w.wants is not None and w.wants is not value for w in self.waiters[dk]):
            return  # nothing any waiter could be served from
        self.ready.append(dk)
        current = self.server.current_client
        if current is not None:
            current.gated = True  # serve before its next command (Connection._gate)
        if self.handle is None:
            self.handle = self.server.loop.call_soon(self.serve_ready)

    def serve_ready(self) -> None:
        """Serve the waiters of every signalled key, first blocked first; a served
        client's reply may signal more keys, which are served in the same call."""
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None
        while self.ready:
            ready, self.ready = self.ready, []
            for db, key in ready:
                for w in list(self.waiters.get((db, key), ())):
                    if w.active:
                        reply = w.serve(db, key)
                        if reply is not None:
                            if w.aof is not None:
                                aof = self.server.persistence.aof
                                if aof.propagating:
                                    aof.served(w.conn, w.aof, reply)
                            self.end(w, reply)

    def _redirect_sweep(self) -> None:
        """clusterRedirectBlockedClientIfNeeded for every waiting client, first blocked
        first; again in a second while any waits."""
        self.redirect_handle = None
        redirect = self.redirect
        if redirect is None:
            return
        seen: dict[int, Waiter] = {}
        for lst in self.waiters.values():
            for w in lst:
                seen.setdefault(id(w), w)
        for w in seen.values():
            if w.active and w.keys:
                last = w.conn.last_cmd
                writes = last is not None and 'write' in last.flags
                reply = redirect(w.conn, w.keys[0][1], writes)
                if reply is not None:
                    self.end(w, reply)
        if self.waiters:
            self.redirect_handle = self.server.loop.call_later(
                REDIRECT_PERIOD, self._redirect_sweep
            )

    # -- ends of a wait ------------------------------------------------------------------------

    def _timed_out(self, w: Waiter) -> None:
        w.timer = None
        if w.active:
            self.end(w, w.timeout_reply)

    def client_unblock(self, conn: Any, error: bool) -> bool:
        """CLIENT UNBLOCK: True if `conn` was blocked by a blocking command."""
        w = conn.blocked
        if w is None or not w.active:
            return False
        self.end(w, RedisError(E_UNBLOCKED) if error else w.timeout_reply)
        return True

    def cancel(self, conn: Any) -> None:
        """Disconnect or RESET: drop the wait without a reply."""
        w = conn.blocked
        if w is not None and w.active:
            self.end(w, None)

    def end(self, w: Waiter, reply: Any) -> None:
        """End `w`'s wait: its client gets `reply` (None: no reply) and runs on."""
        w.active = False
        ks = self.server.keyspace
        for dk in w.keys:
            lst = self.waiters.get(dk)
            if lst is not None:
                lst.remove(w)
                if not lst:
                    del self.waiters[dk]
                    ks.unobserve(dk, self)
        if w.timer is not None:
            w.timer.cancel()
            w.timer = None
        conn = w.conn
        conn.blocked = None
        if reply is not None:
            conn.resume(reply)
