"""Which node serves a command, and what a client is told when it is not this one
(cluster.c's getNodeByQuery, clusterRedirectClient and clusterRedirectBlockedClientIfNeeded,
Redis 7.0).

Algorithm (getNodeByQuery): the command's keys are found as Redis finds them for routing
(db.c's getKeysFromCommand: a movable-keys command's own finder, else the legacy
first/last/step range, which for SPUBLISH / SSUBSCRIBE / SUNSUBSCRIBE covers the shard
channels); EXEC answers for every command it queued. All keys must hash to one slot
(-CROSSSLOT otherwise; the same key twice is one key). No key at all: this node serves it.
The slot's owner (`state.slots`) serves it, with these exceptions, in Redis's order:

- nobody owns the slot: -CLUSTERDOWN Hash slot not served;
- the cluster is down: -CLUSTERDOWN The cluster is down, unless cluster-allow-reads-when-down
  lets a command that does not write through (-CLUSTERDOWN ... only accepts read commands
  for one that writes), or cluster-allow-pubsubshard-when-down a shard pub/sub command;
- MIGRATE runs here while the slot is open (migrating or importing);
- a slot this node is migrating: keys all here, it runs here; none here, -ASK to the
  target; some here, -TRYAGAIN (shard channels are not counted: they stay here until the
  slot moves);
- a slot this node is importing, from a client that sent ASKING (or RESTORE-ASKING): it
  runs here, but a multi-key request missing some keys gets -TRYAGAIN;
- a replica serves reads of its master's slots to a client that sent READONLY, and shard
  pub/sub commands that do not write;
- otherwise -MOVED to the owner, named by its preferred endpoint
  (cluster-preferred-endpoint-type) and its client port (the plaintext one for a
  non-TLS client of a tls-cluster).

Who calls what:

- `route`: the connection, for every command in cluster mode, hot path included
  (store/connection.py, connection_gate.py; not for the master's link nor the AOF), so its
  common case is written out: a one-key command whose slot this node owns, not open, the
  cluster ok, costs the key's hash and four list/attribute reads. Anything else goes to
  `get_node_by_query`, the full rule. A command's "writes" (getCommandFlags, with a
  script's declared flags, and EXEC's queued commands) is a policy of the command layer
  above, so the caller passes it in (`Writes`); it is asked only when the cluster is down
  or on a replica.
- `script_access_error`: a script's redis.call (scriptVerifyClusterState: only keys this
  node serves, and of one slot unless the script allows cross-slot keys or declares no
  flags at all).
- `blocked_redirect`: the blocking registry, once a second for each blocked client
  (clusterRedirectBlockedClientIfNeeded), through the callable `attach` gives it.
- `redirect_error`, `preferred_endpoint`, `client_port`: CLUSTER SLOTS and friends.

Invariants: nothing here changes the cluster or the keyspace (a key's existence is read
without expiring it, as LOOKUP_NOEXPIRE); redirection errors carry Redis's code (MOVED,
ASK, TRYAGAIN, CROSSSLOT, CLUSTERDOWN) so that clients and errorstats see them as Redis's.
"""

from __future__ import annotations

from binascii import crc_hqx
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..clock import now_ms
from ..db_slice import key_slot
from ..resp import RedisError
from .state import CLUSTER_OK

if TYPE_CHECKING:
    from ..command_table import Command
    from .node import Node

# clusterRedirectClient's codes
REDIR_NONE = 0
REDIR_CROSS_SLOT = 1
REDIR_UNSTABLE = 2
REDIR_ASK = 3
REDIR_MOVED = 4
REDIR_DOWN_STATE = 5
REDIR_DOWN_UNBOUND = 6
REDIR_DOWN_RO_STATE = 7

E_CROSSSLOT = "CROSSSLOT Keys in request don't hash to the same slot"
E_TRYAGAIN = 'TRYAGAIN Multiple keys request during rehashing of slot'
E_DOWN = 'CLUSTERDOWN The cluster is down'
E_DOWN_RO = 'CLUSTERDOWN The cluster is down and only accepts read commands'
E_UNBOUND = 'CLUSTERDOWN Hash slot not served'
_FIXED = {
    REDIR_CROSS_SLOT: E_CROSSSLOT,
    REDIR_UNSTABLE: E_TRYAGAIN,
    REDIR_DOWN_STATE: E_DOWN,
    REDIR_DOWN_RO_STATE: E_DOWN_RO,
    REDIR_DOWN_UNBOUND: E_UNBOUND,
}

PUBSUB_SHARD = frozenset(('ssubscribe', 'sunsubscribe', 'spublish'))

# (server, command, its subcommand or itself, args) -> whether it writes (processCommand's
# getCommandFlags & CMD_WRITE, with a script's own flags: store/commands/gates.py's writes)
Writes = Callable[[Any, 'Command', 'Command', list[bytes]], bool]


def plain_writes(server: Any, cmd: Command, shown: Command, args: list[bytes]) -> bool:
    """`Writes` from the declared flags alone (a script's redis.call)."""
    return 'write' in shown.flags


def preferred_endpoint(node: Node, endpoint_type: str) -> str:
    """getPreferredEndpoint."""
    if endpoint_type == 'ip':
        return node.ip
    if endpoint_type == 'hostname':
        return node.hostname or '?'
    return ''  # unknown-endpoint


def uses_plaintext_port(server: Any, conn: Any) -> bool:
    """A non-TLS client of a tls-cluster is told the plaintext ports (use_pport)."""
    if not server.config['tls-cluster']:
        return False
    transport = getattr(conn, 'transport', None)
    return transport is not None and transport.get_extra_info('ssl_object') is None


def client_port(server: Any, conn: Any, node: Node) -> int:
    return node.pport if node.pport and uses_plaintext_port(server, conn) else node.port


def redirect_error(cluster: Any, conn: Any, node: Node | None, slot: int, code: int) -> RedisError:
    """clusterRedirectClient's error for `code` (MOVED / ASK name `node` and `slot`)."""
    fixed = _FIXED.get(code)
    if fixed is not None:
        return RedisError(fixed)
    assert node is not None and code in (REDIR_ASK, REDIR_MOVED)
    server = cluster.server
    endpoint = preferred_endpoint(node, server.config['cluster-preferred-endpoint-type'])
    port = client_port(server, conn, node)
    kind = 'ASK' if code == REDIR_ASK else 'MOVED'
    return RedisError(f'{kind} {slot} {endpoint}:{port}')


def route(
    cluster: Any, conn: Any, cmd: Command, args: list[bytes], writes: Writes
) -> RedisError | None:
    """processCommand's cluster redirection: None when this node serves the command,
    else the error to reply with. The caller skips it for its master's link and the AOF."""
    if cmd.getkeys is None:
        first = cmd.first_key
        if not first:
            if cmd.subcommands:  # a container: its subcommand has the keys (OBJECT, XINFO)
                return _route_full(cluster, conn, cmd, args, writes)
            if cmd.name == 'exec' and conn.multi is not None:
                return _route_full(cluster, conn, cmd, args, writes)
            return None  # no keys: served here
        if first == cmd.last_key and first < len(args):  # one key: the common case
            key = args[first]
            slot = key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383
            state = cluster.state
            if (
                state.slots[slot] is state.myself
                and state.state == CLUSTER_OK
                and state.migrating_to[slot] is None
                and state.importing_from[slot] is None
            ):
                return None
    return _route_full(cluster, conn, cmd, args, writes)


def _route_full(
    cluster: Any, conn: Any, cmd: Command, args: list[bytes], writes: Writes
) -> RedisError | None:
    node, slot, code = get_node_by_query(cluster, conn, cmd, args, writes)
    if node is cluster.state.myself:
        return None
    return redirect_error(cluster, conn, node, slot, code)


def subcommand_of(cmd: Command, args: list[bytes]) -> Command:
    """c->cmd: a container's subcommand named by args[1] (itself when unknown)."""
    if cmd.subcommands and len(args) > 1:
        return cmd.subcommands.get(args[1].decode('utf-8', 'replace').lower(), cmd)
    return cmd


def get_node_by_query(
    cluster: Any,
    conn: Any,
    cmd: Command,
    args: list[bytes],
    writes: Writes,
    asking: bool | None = None,
) -> tuple[Node | None, int, int]:
    """getNodeByQuery: (the node that serves the command, its slot, the redirection code).
    The node is myself when this node serves it (code REDIR_NONE); None with an error code
    (CROSSSLOT, TRYAGAIN, CLUSTERDOWN); another node with ASK or MOVED. The slot is -1
    when the command has no key. `asking`: the client's ASKING flag, when not
    `conn.asking` (a script's client has its caller's)."""
    state = cluster.state
    myself = state.myself
    shown = subcommand_of(cmd, args)
    if cmd.name == 'exec':
        if conn.multi is None:
            return myself, -1, REDIR_NONE  # EXEC without MULTI: its own error
        queued: Sequence[tuple[Command, list[bytes]]] = [
            (subcommand_of(c, a), a) for c, a in conn.multi
        ]
    else:
        queued = ((shown, args),)
    pubsub_shard = cmd.name in PUBSUB_SHARD
    ks = None
    node: Node | None = None
    first_key: bytes | None = None
    slot = 0
    multiple_keys = migrating = importing = False
    missing = existing = 0
    for qcmd, qargs in queued:
        positions = qcmd.key_positions(qargs)
        if positions and max(positions) >= len(qargs):
            positions = []  # too few arguments: no keys, the command answers its error
        for pos in positions:
            key = qargs[pos]
            this_slot = key_slot(key)
            if first_key is None:
                first_key = key
                slot = this_slot
                node = state.slots[slot]
                if node is None:
                    return None, -1, REDIR_DOWN_UNBOUND
                if node is myself and state.migrating_to[slot] is not None:
                    migrating = True
                elif state.importing_from[slot] is not None:
                    importing = True
            elif key != first_key:
                if this_slot != slot:
                    return None, -1, REDIR_CROSS_SLOT
                multiple_keys = True
            if (migrating or importing) and not pubsub_shard:
                if ks is None:
                    ks = cluster.server.keyspace
                if _live(ks, key):
                    existing += 1
                else:
                    missing += 1
    if node is None:
        return myself, -1, REDIR_NONE  # no key at all
    cmd_writes: bool | None = None
    if state.state != CLUSTER_OK:
        config = cluster.server.config
        if pubsub_shard:
            if not config['cluster-allow-pubsubshard-when-down']:
                return None, -1, REDIR_DOWN_STATE
        elif not config['cluster-allow-reads-when-down']:
            return None, -1, REDIR_DOWN_STATE
        else:
            cmd_writes = cmd.name != 'exec' and writes(cluster.server, cmd, shown, args)
            if cmd_writes:
                return None, -1, REDIR_DOWN_RO_STATE
    if (migrating or importing) and cmd.name == 'migrate':
        return myself, slot, REDIR_NONE
    if migrating and missing:
        if existing:
            return None, -1, REDIR_UNSTABLE
        return state.migrating_to[slot], slot, REDIR_ASK
    if importing:
        if asking is None:
            asking = bool(getattr(conn, 'asking', False))
        if asking or cmd.name == 'restore-asking':  # CMD_ASKING
            if multiple_keys and missing:
                return None, -1, REDIR_UNSTABLE
            return myself, slot, REDIR_NONE
    if (
        (pubsub_shard or getattr(conn, 'readonly', False))
        and myself.is_replica
        and myself.master is node
    ):
        if cmd_writes is None:
            cmd_writes = cmd.name != 'exec' and writes(cluster.server, cmd, shown, args)
        is_write = cmd_writes or (
            cmd.name == 'exec' and any(writes(cluster.server, q, q, a) for q, a in queued)
        )
        if not is_write:
            return myself, slot, REDIR_NONE
    if node is not myself:
        return node, slot, REDIR_MOVED
    return node, slot, REDIR_NONE


def _live(ks: Any, key: bytes) -> bool:
    """lookupKeyReadWithFlags(db 0, NOTOUCH|NOSTATS|NONOTIFY|NOEXPIRE) != NULL: stored
    and not past its deadline, nothing deleted."""
    held, deadline = ks.stored(0, key)
    return held and (deadline is None or deadline > now_ms())


def blocked_redirect(cluster: Any, conn: Any, key: bytes, writes: bool) -> RedisError | None:
    """clusterRedirectBlockedClientIfNeeded for a client blocked on `key` (all of a blocked
    command's keys share its slot, so the first tells): the error that unblocks it, None
    while this node still serves the slot (or imports it). `writes`: its command writes
    (a READONLY client of a replica stays blocked on its master's slots when not)."""
    state = cluster.state
    if state.state != CLUSTER_OK:
        return RedisError(E_DOWN)
    slot = key_slot(key)
    node = state.slots[slot]
    myself = state.myself
    if (
        getattr(conn, 'readonly', False)
        and not writes
        and myself.is_replica
        and myself.master is node
    ):
        node = myself
    if node is not myself and state.importing_from[slot] is None:
        if node is None:
            return RedisError(E_UNBOUND)
        return redirect_error(cluster, conn, node, slot, REDIR_MOVED)
    return None


def script_access_error(
    cluster: Any, caller: Any, cmd: Command, args: list[bytes], run: Any
) -> str | None:
    """scriptVerifyClusterState for a command a script calls: the error message that
    refuses it (the command touches a key this node does not serve, or the cluster is
    down, or, unless the script allows cross-slot keys, a key of another slot than the
    script's first), else None. `run.slot` is the script's slot so far (-1: none yet);
    it is set by the first key. The caller skips its master's link and the AOF."""
    node, slot, code = get_node_by_query(
        cluster, caller, cmd, args, plain_writes, bool(getattr(caller, 'asking', False))
    )
    if node is not cluster.state.myself:
        if code == REDIR_DOWN_RO_STATE:
            return (
                'ERR Script attempted to execute a write command while the cluster is '
                'down and readonly'
            )
        if code == REDIR_DOWN_STATE:
            return 'ERR Script attempted to execute a command while the cluster is down'
        return 'ERR Script attempted to access a non local key in a cluster node'
    if slot != -1 and not run.cross_slot:
        if run.slot == -1:
            run.slot = slot
        elif run.slot != slot:
            return 'ERR Script attempted to access keys that do not hash to the same slot'
    return None


def attach(server: Any) -> None:
    """Hook the routing into the server's parts that cannot import it (layers below):
    blocked clients are redirected once their key's slot moves. Called once the server
    holds its Cluster (`server.cluster`)."""
    cluster = server.cluster
    if cluster is None:
        return

    def redirect(conn: Any, key: bytes, writes: bool) -> RedisError | None:
        return blocked_redirect(cluster, conn, key, writes)

    server.blocking.redirect = redirect
