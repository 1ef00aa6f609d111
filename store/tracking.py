"""Server-assisted client-side caching (Redis 7.0's tracking.c): the tables behind CLIENT
TRACKING and the invalidation messages they produce.

Two modes, as in Redis:
- Default: a read-only command run by a tracking client remembers its keys in `table`
  (key name -> ids of the clients that read it; not per database, as Redis keys it by
  name). When a key changes (the keyspace's `touch`, Redis's signalModifiedKey: a write,
  DEL, RESTORE, an expiry, an eviction; SWAPDB touches the keys of both databases, where
  Redis 7.0 sends nothing and leaves cached values stale), its entry is dropped and each client that
  read it is sent the key once. OPTIN/OPTOUT gate the remembering with CLIENT CACHING;
  NOLOOP skips a client's own writes. `tracking-table-max-keys` bounds the table: past it,
  keys are dropped with an invalidation (trackingLimitUsedSlots).
- BCAST: a client registers prefixes and hears of every key written under them. `prefixes`
  maps a prefix to its clients and the keys written since the last flush; `lengths` holds
  the distinct prefix lengths, so a write looks up only key[:L] for each length L: the cost
  per write is the number of distinct lengths, whatever the number of prefixes that do not
  match (Redis walks every registered prefix).

The table's value for a key is the frozenset of its readers' ids, one shared object per
distinct set (`Tracking._with`, transitions cached) while it has up to SHARED_MAX ids, and a
set of its own past that (many clients on one key: growing a frozenset would copy it). When
clients read the same keys, their keys hold the same object: a pointer each in the table
(a set of 10 readers was 728 bytes a key), and an expiry batch groups them by identity.

Batching and delivery. Invalidated keys collect in `groups`, runs of consecutive keys
read by the same set of clients (all clients usually read the same keys: a key then
costs an identity test and an append, and each run's keys are encoded once for all its
clients; a new run starts when the set changes, so each client hears of its keys in the
order they changed, as in Redis), flushes' nulls in
`pending`, BCAST keys in their prefixes' states. `handle` is set while anything waits, and
everything leaves in `flush`: after each command, on the hot path (Connection.run) and on
the gated one, where a tracking client's own invalidation follows its reply as in Redis;
at the end of each active-expiry step, in the same loop turn as that step's `expired`
batch. In default mode a client gets one message per key, as Redis 7.0 sends them
(clients read them one by one); each key's message is encoded once for all its clients,
and a client's messages of one flush leave in one write. A BCAST prefix's keys leave in
one message, as in Redis. Messages go through the pub/sub hub's control queue of
the receiving connection (PubSub.push): the same dispatch quota, backpressure and
output-buffer limits as published messages. RESP3: an `invalidate` push; RESP2: a
`message` on `__redis__:invalidate` to the REDIRECT client, sent only while it is
subscribed to something (CLIENT_PUBSUB), as Redis does.

Costs: nothing while no client tracks. The keyspace calls `touch` only while someone
listens (`observed`); the first tracking client makes tracking a listening party of the
key lifecycle (store/lifecycle.py, `Keyspace.listen`), so every write then reaches
`modified`: one dict pop, plus one slice
and lookup per distinct prefix length in BCAST. A tracking connection is gated, so the
remembering happens on the gated path (Connection._call); the hot path pays one test of
`handle` per command. Measured in-process (a server holding 100,000 other keys), an
active-expiry batch of 1,000 keys read by the same 10 clients: `expired` ~0.28 ms
(~0.9 ms while each key had a set of its own, compared with the previous key's), `flush`
~0.3 ms when each client got one message listing its keys; with a message per key, the
keys' encoding (`_one_each`, ~0.3 us a key, once for all clients) and the 10 clients'
frames (~0.02 ms each, one join) measured ~0.5 ms together, out of a server. Remembering a
read costs ~45 ns more than adding to a set of its own did (the type test, and a cached
transition while a key has few readers): 1,000 clients each re-reading 100 keys, 17 ms
per 100,000 reads in-process against 12.5 ms.
"""

from __future__ import annotations

import random
from itertools import islice
from typing import Any

from .args import lower
from .lifecycle import KeyObserver

EMPTY: frozenset[int] = frozenset()
SHARED_MAX = 16  # a key read by more clients has a set of its own (see Tracking._with)

PUSH_HEAD = b'>2\r\n$10\r\ninvalidate\r\n'
MESSAGE_HEAD = b'*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n'
# Scripts and functions: their declared keys are remembered when the script ran a
# read-only command (script_read), whatever keys that command read, as Redis 7.0's call()
# remembers the keys of the script's caller's command.
_SCRIPTS = frozenset(('eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro'))

E_REDIRECT_MISSING = 'ERR The client ID you want redirect to does not exist'


class ClientTracking:
    """One connection's CLIENT TRACKING state (Connection.tracking while it is on)."""

    __slots__ = (
        'bcast',
        'optin',
        'optout',
        'noloop',
        'caching',
        'redirect',
        'broken',
        'prefixes',
        'script_read',
    )

    def __init__(self) -> None:
        self.bcast = self.optin = self.optout = self.noloop = False
        self.caching = False  # CLIENT CACHING given for the next command (or transaction)
        self.redirect = 0  # client id, 0: none
        self.broken = False  # the redirect client went away (flag R)
        self.prefixes: list[bytes] = []  # BCAST prefixes, sorted
        self.script_read = False  # the running script called a read-only command

    def flags(self) -> list[bytes]:
        """CLIENT TRACKINGINFO's flags, in Redis's order."""
        out = [b'on']
        if self.bcast:
            out.append(b'bcast')
        if self.optin:
            out.append(b'optin')
            if self.caching:
                out.append(b'caching-yes')
        if self.optout:
            out.append(b'optout')
            if self.caching:
                out.append(b'caching-no')
        if self.noloop:
            out.append(b'noloop')
        if self.broken:
            out.append(b'broken_redirect')
        return out


class BcastState:
    """A registered prefix: its clients, and the keys written under it since the last
    flush with the connection that wrote each last (for NOLOOP; None: no client)."""

    __slots__ = ('prefix', 'clients', 'keys')

    def __init__(self, prefix: bytes) -> None:
        self.prefix = prefix
        self.clients: dict[Any, None] = {}
        self.keys: dict[bytes, Any] = {}


def _one_each(keys: list[bytes]) -> list[bytes]:
    """Each key as the payload of a message of its own (a one-element array)."""
    heads = _HEADS
    try:
        return [b'*1\r\n' + heads[len(k)] + k + b'\r\n' for k in keys]
    except IndexError:  # a key of 256 bytes or more
        return [b'*1\r\n$%d\r\n%s\r\n' % (len(k), k) for k in keys]


def _keys_body(keys: list[bytes]) -> bytes:
    return b'*%d\r\n%s' % (len(keys), _bulks(keys))


_HEADS = [b'$%d\r\n' % n for n in range(256)]  # a bulk string's header by length


def _bulks(keys: list[bytes]) -> bytes:
    """The keys as RESP bulk strings, back to back: a header looked up and one
    concatenation per key (~0.1 us; formatting each with % took ~0.22 us)."""
    if not keys:
        return b''
    heads = _HEADS
    try:
        return b'\r\n'.join([heads[len(k)] + k for k in keys]) + b'\r\n'
    except IndexError:  # a key of 256 bytes or more
        return b''.join([b'$%d\r\n%s\r\n' % (len(k), k) for k in keys])


class Tracking(KeyObserver):
    """The server's tracking tables (server.tracking)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        # key -> the ids of the clients that read it: a shared frozenset while few clients
        # read the key (`_with`), a set of its own past SHARED_MAX.
        self.table: dict[bytes, frozenset[int] | set[int]] = {}
        self.shared: dict[frozenset[int], frozenset[int]] = {}  # one object per id set
        self.grown: dict[tuple[frozenset[int], int], frozenset[int] | set[int]] = {}
        self.items = 0  # client ids summed over the table (tracking_total_items)
        self.clients = 0  # connections with tracking on (tracking_clients)
        self.prefixes: dict[bytes, BcastState] = {}
        self.lengths: list[int] = []  # distinct prefix lengths, ascending
        # Invalidated keys in runs by the clients that read them: (ids, origin, keys). A
        # key's clients are usually those of many others (all read the same keys), so a
        # batch costs O(keys + runs x clients), each run's keys encoded once.
        self.groups: list[tuple[frozenset[int], Any, list[bytes]]] = []
        # Per client, in order: the keys' encoded messages (one a key) or None (a flush's
        # null).
        self.pending: dict[Any, list[list[bytes] | None]] = {}
        self.bcast_dirty: list[BcastState] = []
        self.handle: Any = None  # the call_soon flush: set while anything waits
        self.remembers: dict[Any, bool] = {}  # Command -> are its keys remembered
        self.over_limit_runs = 0  # trackingLimitUsedSlots' timeout_counter
        self.limit_handle: Any = None  # limit's next run while the table is over the limit
        self.active = False
        server.disconnect_hooks.append(self.disable)
        server.reset_hooks.append(self.disable)

    # -- on and off ---------------------------------------------------------------------

    def _activate(self) -> None:
        if not self.active:
            self.active = True
            self.server.keyspace.listen(self)

    def _maybe_deactivate(self) -> None:
        if self.active and not self.clients and not self.table and not self.prefixes:
            self.active = False
            self.server.keyspace.unlisten(self)

    def enable(
        self,
        conn: Any,
        redirect: int,
        bcast: bool,
        optin: bool,
        optout: bool,
        noloop: bool,
        prefixes: list[bytes],
    ) -> None:
        """enableTracking: the options were checked by CLIENT TRACKING."""
        t = conn.tracking
        if t is None:
            t = conn.tracking = ClientTracking()
            self.clients += 1
            conn.update_gate()
        t.broken = False
        t.redirect = redirect
        t.optin, t.optout, t.noloop = optin, optout, noloop
        self._activate()
        if bcast:
            t.bcast = True
            have = set(t.prefixes)
            added = [p for p in dict.fromkeys(prefixes or [b'']) if p not in have]
            for p in added:
                state = self.prefixes.get(p)
                if state is None:
                    state = self.prefixes[p] = BcastState(p)
                state.clients[conn] = None
            if added:
                t.prefixes = sorted(have.union(added))
                self.lengths = sorted({*self.lengths, *map(len, added)})

    def disable(self, conn: Any) -> None:
        """disableTracking (also on disconnect and RESET). The client's entries in the
        table stay until their keys change, as in Redis."""
        t = conn.tracking
        if t is None:
            return
        for p in t.prefixes:
            state = self.prefixes.get(p)
            if state is not None:
                state.clients.pop(conn, None)
                if not state.clients:
                    del self.prefixes[p]
                    if state in self.bcast_dirty:
                        self.bcast_dirty.remove(state)
        if t.prefixes:
            self.lengths = sorted({len(p) for p in self.prefixes})
        conn.tracking = None
        self.clients -= 1
        self.pending.pop(conn, None)
        conn.update_gate()
        self._maybe_deactivate()

    # -- remembering reads ----------------------------------------------------------------

    def remember(self, conn: Any, cmd: Any, args: list[bytes]) -> None:
        """trackingRememberKeys: after a read-only command of tracking client `conn` in
        default mode, or its script that ran one (script_read), remember the command's
        keys."""
        t = conn.tracking
        if t is None or t.bcast:
            return
        if cmd.subcommands and len(args) > 1:
            cmd = cmd.subcommands.get(lower(args[1]), cmd)
        if cmd.name in _SCRIPTS:
            if not t.script_read:
                return
            t.script_read = False
        elif not self._remembered(cmd):
            return
        if (t.optin and not t.caching) or (t.optout and t.caching):
            return
        try:
            positions = cmd.key_positions(args)
        except Exception:
            return
        table = self.table
        cid = conn.id
        for i in positions:
            if i >= len(args):
                continue
            key = args[i]
            ids = table.get(key)
            if ids is None:
                table[key] = self._with(EMPTY, cid)
                self.items += 1
            elif cid not in ids:
                if isinstance(ids, set):
                    ids.add(cid)
                else:
                    table[key] = self._with(ids, cid)
                self.items += 1
        self.limit()

    def _remembered(self, cmd: Any) -> bool:
        """Whether a command's keys are remembered: read-only, not pub/sub."""
        known = self.remembers.get(cmd)
        if known is None:
            known = self.remembers[cmd] = 'readonly' in cmd.flags and 'pubsub' not in cmd.flags
        return known

    def script_read(self, conn: Any, cmd: Any, args: list[bytes]) -> None:
        """A script of tracking client `conn` ran `cmd`: if it reads, the script's
        declared keys are remembered when the script's command ends (`remember`), as
        Redis remembers the keys of the caller's command, not of the script's calls."""
        t = conn.tracking
        if t is None or t.bcast:
            return
        if cmd.subcommands and len(args) > 1:
            cmd = cmd.subcommands.get(lower(args[1]), cmd)
        if self._remembered(cmd):
            t.script_read = True

    def _with(self, ids: frozenset[int], cid: int) -> frozenset[int] | set[int]:
        """`ids` plus `cid`, as the one shared frozenset of those ids (a set of its own
        once past SHARED_MAX ids). Keys read by the same clients then hold the same
        object: an expiry batch groups them by identity (`expired`), and the table
        costs a pointer per key instead of a set each. Transitions are cached, so when
        clients read keys in the same order, each step costs one dict look-up."""
        grown = self.grown
        new = grown.get((ids, cid))
        if new is None:
            if len(ids) >= SHARED_MAX:
                return {*ids, cid}
            if len(grown) >= 4096:  # ids of clients gone accumulate: start afresh
                grown.clear()
                self.shared.clear()
            new = ids.union((cid,))
            new = self.shared.setdefault(new, new)
            grown[(ids, cid)] = new
        return new

    def command_done(self, conn: Any, cmd: Any) -> None:
        """resetClient: CLIENT CACHING covers the next command, or the next transaction
        (not cleared inside MULTI, nor by another CLIENT subcommand)."""
        t = conn.tracking
        if t is not None and t.caching and conn.multi is None:
            if cmd is None or cmd.name != 'client':
                t.caching = False

    def limit(self) -> None:
        """trackingLimitUsedSlots: over tracking-table-max-keys, drop keys (each with its
        invalidation), up to an effort that grows while the table stays over the limit.
        The keys are picked at random among the oldest entries (Redis walks its radix
        tree at random)."""
        table = self.table
        max_keys = self.server.config['tracking-table-max-keys']
        if not max_keys or len(table) <= max_keys:
            self.over_limit_runs = 0
            return
        effort = 100 * (self.over_limit_runs + 1)
        while effort > 0 and table:
            effort -= 1
            key = next(islice(table, random.randrange(min(len(table), 64)), None))
            self._invalidate(key, None)
            if len(table) <= max_keys:
                self.over_limit_runs = 0
                return
        self.over_limit_runs += 1
        # Redis runs this again in the next beforeSleep, with more effort: the next turn
        # of the loop here, until the table is down to the limit
        loop = self.server.loop
        if loop is not None and self.limit_handle is None:
            self.limit_handle = loop.call_soon(self._limit_again)

    def _limit_again(self) -> None:
        self.limit_handle = None
        self.limit()
        self.flush()

    # -- changes ----------------------------------------------------------------------------

    def modified(self, key: bytes, by_client: bool) -> None:
        """trackingInvalidateKey, from the keyspace's touch (signalModifiedKey). NOLOOP
        skips the current client, as Redis does in default mode; BCAST remembers who
        changed the key, which for a key expired on access (not `by_client`) is no
        client, as Redis's signalModifiedKey(NULL, ...) passes none."""
        origin = self.server.current_client
        if self.lengths:
            self._bcast(key, origin if by_client else None)
        if key in self.table:
            self._invalidate(key, origin)

    def expired(self, db: int, keys: list[bytes]) -> None:
        """`modified` for the keys of one active-expiry batch (no client caused
        them), in one loop: consecutive keys read by the same clients share a run
        without building its frozenset again."""
        if self.lengths:
            for key in keys:
                self._bcast(key, None)
        table = self.table
        groups = self.groups
        run = groups[-1] if groups else None
        items = 0
        for key in keys:
            ids = table.pop(key, None)
            if ids is None:
                continue
            items += len(ids)
            if run is None or run[1] is not None or (run[0] is not ids and run[0] != ids):
                run = (ids if type(ids) is frozenset else frozenset(ids), None, [])
                groups.append(run)
            run[2].append(key)
        self.items -= items
        if groups:
            self._schedule()
        if not table and not self.clients:
            self._maybe_deactivate()

    def _invalidate(self, key: bytes, origin: Any) -> None:
        ids = self.table.pop(key)
        self.items -= len(ids)
        groups = self.groups
        if groups:
            run = groups[-1]
            if run[1] is origin and (run[0] is ids or run[0] == ids):
                run[2].append(key)
            else:
                groups.append((ids if type(ids) is frozenset else frozenset(ids), origin, [key]))
        else:
            groups.append((ids if type(ids) is frozenset else frozenset(ids), origin, [key]))
            self._schedule()
        if not self.table and not self.clients:
            self._maybe_deactivate()

    def _collect(self) -> None:
        """Hand the runs of keys to their clients' pending lists, each run's keys
        encoded once (NOLOOP and tracking state read now: a client that turned tracking
        off meanwhile gets nothing)."""
        groups, self.groups = self.groups, []
        clients = self.server.clients
        pending = self.pending
        for ids, origin, keys in groups:
            item = _one_each(keys)
            for cid in ids:
                c = clients.get(cid)
                if c is None:
                    continue
                t = c.tracking
                if t is None or t.bcast or (t.noloop and c is origin):
                    continue
                items = pending.get(c)
                if items is None:
                    items = pending[c] = []
                items.append(item)

    def _bcast(self, key: bytes, origin: Any) -> None:
        prefixes = self.prefixes
        n = len(key)
        for length in self.lengths:
            if length > n:
                break
            state = prefixes.get(key[:length])
            if state is not None:
                if not state.keys:
                    self.bcast_dirty.append(state)
                    self._schedule()
                # the last change's origin, as Redis's raxInsert overwrites it: NOLOOP
                # skips a key only if its own client changed it last
                state.keys[key] = origin

    def step_ended(self) -> None:
        """The active-expiry step ended: its invalidations leave with its `expired`
        events."""
        self.flush()

    def flushed(self) -> None:
        """trackingInvalidateKeysOnFlush (FLUSHDB, FLUSHALL): a null invalidation to every
        tracking client, BCAST ones included, and the table emptied."""
        if self.groups:
            self._collect()  # keys invalidated before the flush go first
        pending = self.pending
        for c in self.server.clients.values():
            if c.tracking is not None:
                items = pending.get(c)
                if items is None:
                    items = pending[c] = []
                items.append(None)
        if pending:
            self._schedule()
        self.table = {}
        self.items = 0

    # -- delivery ---------------------------------------------------------------------------

    def _schedule(self) -> None:
        if self.handle is None:
            loop = self.server.loop
            if loop is not None:
                self.handle = loop.call_soon(self.flush)

    def flush(self, current: Any = None) -> None:
        """Send what is pending: a message per key for each client (and a null for a
        flush, in its place), then each BCAST prefix's keys to its clients, prefixes in
        order and keys sorted as Redis's radix trees give them. `current`: the connection
        whose command just ran; its messages follow its reply in its output."""
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None
        if self.groups:
            self._collect()
        pending = self.pending
        if pending:
            self.pending = {}
            for c, items in pending.items():
                bodies: list[bytes] = []
                for item in items:
                    if item is None:
                        bodies.append(b'_\r\n' if c.proto == 3 else b'$-1\r\n')
                    else:
                        bodies += item
                self._send_each(c, bodies, current)
        if self.bcast_dirty:
            states, self.bcast_dirty = self.bcast_dirty, []
            states.sort(key=lambda st: st.prefix)
            for state in states:
                keys, state.keys = state.keys, {}
                if not keys:
                    continue
                names = sorted(keys)
                body = _keys_body(names)
                for c in list(state.clients):
                    t = c.tracking
                    if t is None:
                        continue
                    if t.noloop:
                        mine = [k for k in names if keys[k] is not c]
                        if mine:
                            self._send(c, _keys_body(mine), current)
                    else:
                        self._send(c, body, current)

    def _send(self, c: Any, body: bytes, current: Any) -> None:
        """sendTrackingMessage: to the client itself (RESP3) or its REDIRECT client."""
        self._send_each(c, [body], current)

    def _send_each(self, c: Any, bodies: list[bytes], current: Any) -> None:
        """sendTrackingMessage for each body (a message's payload), in one write."""
        t = c.tracking
        if t is None or not bodies:
            return
        if t.redirect:
            target = self.server.clients.get(t.redirect)
            if target is None or target.closing:
                t.broken = True
                if c.proto == 3:  # one for each message that could not go
                    broken = b'>2\r\n$21\r\ntracking-redir-broken\r\n:%d\r\n' % t.redirect
                    self._deliver(c, broken * len(bodies), current)
                return
            if target.proto == 3:
                head = PUSH_HEAD
            elif target.subscriptions:
                head = MESSAGE_HEAD
            else:
                return
        else:
            if c.proto != 3:
                return
            target, head = c, PUSH_HEAD
        self._deliver(target, head + head.join(bodies), current)

    def _deliver(self, target: Any, frame: bytes, current: Any) -> None:
        if target.closing or target.transport is None:
            return
        sub = target.pubsub
        if target is current and (sub is None or not sub.queue):
            target.out.append(frame)  # after the reply already there
            return
        self.server.pubsub.push(target, frame)

    # -- introspection ----------------------------------------------------------------------

    def info_fields(self) -> list[tuple[str, int]]:
        return [
            ('tracking_total_keys', len(self.table)),
            ('tracking_total_items', self.items),
            ('tracking_total_prefixes', len(self.prefixes)),
        ]
