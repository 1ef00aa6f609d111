"""One key lifecycle: the parties that hear of keys' lives, and what they hear.

A key is written, changed and deleted by commands, expires at its deadline (lazily, or in
an active-expiry step), is evicted, and goes with its database (FLUSHDB, FLUSHALL) or
moves with it (SWAPDB). Besides the command that did it, some parties must hear of some
of these points, each for its own reason:

- the append-only file and the replicas' stream (store/persistence/aof_propagate.py): a
  key that leaves without a command deleting it (at its deadline, evicted) is written as
  a DEL before the command that found it (`removing`);
- a point-in-time snapshot written in the background (store/persistence/snapshot.py,
  through the persistence manager): a key about to be read, changed or removed is written
  out first if its turn has not come (`before`, `removing`);
- client tracking (store/tracking.py): a modified key is invalidated (`modified`), an
  active-expiry step's keys in one pass (`expired`, then `step_ended`), a flushed
  database with one null message (`flushed`).

Each such party is a `KeyObserver`, registered with the keyspace when the server is built
(`Keyspace.register`), and tells the keyspace when it starts and stops listening
(`Keyspace.listen` / `unlisten`: the AOF while it propagates, the persistence manager
while a background snapshot runs, tracking while a client tracks); that is the one door,
so no party sets attributes on the keyspace or replaces its methods. The keyspace keeps
the listening parties per point (a tuple each, and the one snapshot for `before`), so a
point nobody hears costs one truth test on the paths that raise it.

Parties interested in particular keys (a WATCHing connection, the blocking-operations
registry) are `KeyWatcher`s, registered per key (`Keyspace.observe`). Keyspace events
(pub/sub notifications and the journal) leave through the other door, store/events.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .db_slice import DbSlice


class KeyObserver:
    """A party to keys' lives. Each method is one point; here it does nothing, and a
    party overrides the points it hears (the keyspace calls only those)."""

    def before(self, shard: DbSlice, db: int, key: bytes) -> None:
        """`key` of `db` in `shard` is about to be read, changed or deleted."""

    def removing(self, shard: DbSlice, db: int, key: bytes) -> None:
        """`key` is about to leave without a command deleting it: at its deadline
        (lazily or actively) or evicted."""

    def modified(self, key: bytes, by_client: bool) -> None:
        """signalModifiedKey: `key` changed; not `by_client` when no client made the
        change (a key expired on access)."""

    def expired(self, db: int, keys: list[bytes]) -> None:
        """An active-expiry step deleted `keys` of `db` (no client made the change)."""

    def step_ended(self) -> None:
        """The active-expiry step that reported `expired` keys ended."""

    def flushed(self) -> None:
        """FLUSHDB or FLUSHALL emptied databases (once per command)."""


POINTS = ('before', 'removing', 'modified', 'expired', 'step_ended', 'flushed')


def hears(party: KeyObserver, point: str) -> bool:
    """Whether `party` overrides `point`."""
    return getattr(type(party), point) is not getattr(KeyObserver, point)


class KeyWatcher(Protocol):
    """A party interested in particular keys (`Keyspace.observe`)."""

    # SWAPDB signals it for a key the swap brings even when past its deadline
    serves_stale_keys: bool

    def key_modified(self, db: int, key: bytes) -> None: ...

    def swapped(self, db: int, key: bytes, here: bool, there: bool, stale: bool) -> None:
        """SWAPDB changed the key's database, which held it (`here`) and now holds the
        other's (`there`; `stale`: past its deadline)."""
        ...
