"""What a command handler is given: `Client`, the context its signature names.

Handlers are `def name(c: Client, args: list[bytes]) -> ...`. At run time `c` is the
Connection the command came on (store/connection.py, a layer above, or a script's own
connection); handlers are typed against this protocol instead, which lists what they may
touch: the keyspace (typed, so every `c.ks` call is checked), the session (database,
protocol, name, user, transaction, WATCH, tracking, reply mode, what CLIENT LIST shows)
and the few connection methods a handler calls (flush, park and resume among them, for
MONITOR and CLIENT PAUSE).

`server` is `Services`: what handlers reach on the server, listed, so a handler that
reaches for anything else fails the type check until it is added there, where a reviewer
sees the context grow. The services of the layers below this module are typed (CONFIG,
ACL, pub/sub, tracking, blocking, the expiry gate, the cluster); those of the layers above
(persistence, replication, scripting, CLIENT PAUSE, shutdown) are Any.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from .lifecycle import KeyWatcher

if TYPE_CHECKING:
    from .acl import Acl
    from .blocking import BlockingRegistry
    from .cluster.service import Cluster
    from .config import Config
    from .expiry.gate import ExpiryGate
    from .keyspace import Keyspace
    from .pubsub import PubSub
    from .reply_buffer import ReplyBuffers
    from .tracking import Tracking


class Services(Protocol):
    """The server as handlers see it: the services command families run. Those of the
    layers below this module are typed; those above it (persistence, replication,
    scripting, pause, shutdown) are Any here."""

    # CONFIG, ACL, COMMAND, INFO
    config: Config
    acl: Acl
    commands: dict[bytes, Any]
    stats: Any
    port: int
    max_bulk: int  # proto-max-bulk-len
    tls: Any

    def apply_config(self, name: str) -> None: ...

    def users_changed(self, user: Any, deleted: bool = False) -> None: ...

    def log(self, msg: str, level: str = '*') -> None: ...

    # clients: CLIENT, MONITOR, pub/sub, tracking, blocking
    clients: dict[int, Any]
    pubsub: PubSub
    tracking: Tracking
    blocking: BlockingRegistry
    monitors: Any
    reply_buffers: ReplyBuffers
    reset_hooks: list[Callable[[Any], None]]
    pause: Any  # store/commands/client_pause.py

    def kill_pubsub_clients(self, user: Any, new: Any) -> None: ...

    def unregister(self, conn: Any) -> None: ...

    # persistence, replication, expiry, the process (the layers above)
    persistence: Any
    loading: bool
    lastsave: int
    skip_checksum_validation: bool
    replication: Any
    expiry_gate: ExpiryGate
    cron_paused: bool
    shutdown: Any
    migrate_sockets: Any

    @property
    def replica_link(self) -> Any: ...

    # scripting
    scripts: Any
    functions: Any
    busy: Any

    # cluster mode (store/cluster): None in standalone mode
    cluster: Cluster | None


class Client(KeyWatcher, Protocol):
    """A connection as handlers see it; a KeyWatcher too (WATCH observes its keys)."""

    server: Services
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
    # cluster mode: ASKING (for the next command), READONLY (store/cluster/routing.py)
    asking: bool
    readonly: bool

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
