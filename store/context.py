"""What a command handler is given: `Client`, the context its signature names.

Handlers are `def name(c: Client, args: list[bytes]) -> ...`. At run time `c` is the
Connection the command came on (store/connection.py, a layer above, or a script's own
connection); handlers are typed against this protocol instead, which lists what they may
touch: the keyspace (typed, so every `c.ks` call is checked), the session (database,
protocol, name, user, transaction, WATCH, tracking, reply mode, what CLIENT LIST shows)
and the few connection methods a handler calls (flush, park and resume among them, for
MONITOR and CLIENT PAUSE). `server` is the one wide door left: command families that run
the server's services (ACL, CONFIG, replication, scripting) reach them through it, typed
Any for now.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from .lifecycle import KeyWatcher

if TYPE_CHECKING:
    from .keyspace import Keyspace


class Client(KeyWatcher, Protocol):
    """A connection as handlers see it; a KeyWatcher too (WATCH observes its keys)."""

    server: Any
    ks: Keyspace
    db: int  # the selected database
    proto: int  # 2 or 3 (HELLO)
    id: int
    name: str | None
    addr: str
    laddr: str
    created: float
    last_interaction: float
    user: Any  # the ACL user (store/acl_users.py)
    acl_rules: Any
    authenticated: bool
    closing: bool
    gated: bool
    transport: Any
    parser: Any
    out: list[bytes]  # replies not written yet
    out_limit: Any
    reply_mode: str  # CLIENT REPLY
    no_evict: bool
    no_touch: bool
    # MULTI/EXEC and WATCH
    multi: Any
    multi_error: bool
    in_exec: bool
    dirty_cas: bool
    watched: list[tuple[int, bytes]]
    watched_deadlines: list[int | None]
    # pub/sub, tracking, blocking
    subscriptions: int
    pubsub: Any
    tracking: Any
    blocked: Any
    deferred: list[list[bytes]] | None  # commands held while parked (CLIENT PAUSE)
    last_cmd: Any
    last_sub: Any

    def call(self, cmd: Any, args: list[bytes]) -> Any: ...

    def update_gate(self) -> None: ...

    def end_multi(self) -> None: ...

    def unwatch_all(self) -> None: ...

    def set_user(self, user: Any) -> None: ...

    def flush_later(self) -> None: ...

    def flush(self) -> None: ...

    def is_replica(self) -> bool: ...

    def park(self, held: Any = ()) -> None: ...

    def resume(self, reply: Any = None) -> None: ...
