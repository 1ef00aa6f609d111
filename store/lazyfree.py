"""Lazy freeing: FLUSHALL/FLUSHDB ASYNC, UNLINK and the `lazyfree-lazy-*` parameters.

Redis hands what a lazy deletion drops (a whole database's dicts, or one value worth
freeing in the background) to a bio thread. Here the data leaves the keyspace at once, as
there (the keyspace swaps in empty dicts or deletes the key, and its memory accounting
drops at the same moment), and what it held is queued here and freed in bounded steps
between commands, one step of about STEP_S per event-loop turn, so no other client waits
for a million objects to be deallocated. Another thread does not help: deallocation
needs the GIL, so a freeing thread only takes turns with the loop thread. Measured with
FLUSHALL ASYNC of 1,000,000 keys and another client's PING: freed by a thread, PING waits
up to 300-400 ms (the loop thread rarely gets the GIL back while the freeing runs); in
steps, 5-9 ms.

What is queued is a job: a list of containers drained in order by C-level calls, CHUNK
elements from the end at a time (`popitem`, slice deletion, `pop`: about 0.3 ms) between
two looks at the clock; a dict that frees nothing but references (expires, access) is
cleared at once when it has at most CLEAR_MAX entries, as that is much cheaper (see
`_drain`). A big aggregate met while draining a database becomes a job of its own,
so one hash of a million fields in a flushed database is freed in steps too. The keys
are dropped last: the index buckets, expires and access entries go first, while the keys
they hold are still referenced by the data dict (a decrement each), and the data dict's
entries, which free keys and values, at the end.

A running snapshot (store/persistence/snapshot.py) still reads the dicts of a database
flushed after it started, which it finds by their identity: a job whose data dict is
still one of the snapshot's unwritten units waits until the snapshot has written it.

INFO counts objects as Redis does: `lazyfree_pending_objects` is the number of keys of
the flushed databases plus the number of single values queued, until their job is done;
`lazyfreed_objects` counts them once freed. A single value is queued only when its free
effort (lazyfreeGetFreeEffort: its elements, or its quicklist nodes, or its stream's
radix-tree nodes and consumer-group entries) exceeds LAZYFREE_THRESHOLD; smaller ones are
freed at once and not counted, as in Redis.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from itertools import islice, repeat, starmap
from operator import itemgetter
from typing import Any

from .resp import string2ll
from .types.hash import Hash
from .types.list import List
from .types.set import Set
from .types.stream import Stream
from .types.zset import ZSet

LAZYFREE_THRESHOLD = 64  # free effort above which Redis frees a value in the background
STEP_S = 0.002  # freeing per event-loop turn
CHUNK = 1024  # elements freed between two looks at the clock
CLEAR_MAX = 65536  # a REFS dict this small is cleared at once (1-2 ms)
WAIT_S = 0.01  # how soon to look again while every job waits for the snapshot
QUICKLIST_NODE = 8185  # list-max-listpack-size -2: 8 KB listpacks (7 bytes of header)

# How a container is drained (see `_drain`): DATA is a keyspace data dict, REFS a dict
# whose keys and values live on elsewhere or are small shared ints (expires, access), DICT
# one that owns its entries (a hash's fields), LIST and POP lists and sets or deques, LISTS
# a list of lists (a sorted set's SortedList).
DATA, REFS, DICT, LIST, POP, LISTS = range(6)
_BYTES_ONLY = {bytes}
_second = itemgetter(1)


def free_effort(value: Any) -> int:
    """lazyfreeGetFreeEffort: the allocations freeing `value` takes, as Redis 7.0 counts
    them for its encoding (a compact encoding is one allocation). Lists are estimated by
    8 KB quicklist nodes; a stream counts its entry nodes (Stream.node_count)."""
    t = type(value)
    if t is bytes or t is bytearray:
        return 1
    if t is Hash:
        return 1 if value.listpack else len(value)
    if t is Set:
        return 1 if value.intset else len(value)
    if t is ZSet:
        return 1 if value.listpack else len(value)
    if t is List:
        n = len(value)
        if not n:
            return 1
        sample = list(islice(value, 5))
        entry = sum(map(_listpack_entry, sample)) / len(sample)
        return max(1, -int(-n * entry // QUICKLIST_NODE))
    if t is Stream:
        # its radix tree's nodes: the entry nodes (as stream-node-max-entries made them
        # when their entries were added) and about as many inner ones
        nodes: int = 2 * value.node_count() + 1
        if value.groups:
            first = next(iter(value.groups.values()))
            nodes += len(value.groups) * (1 + len(first.pel))
        return nodes
    return 1


def _listpack_entry(e: bytes) -> int:
    """The bytes of one listpack entry holding `e` (lpEncodeBacklen and friends): an
    integer in its smallest encoding, a string after its length header, plus the
    back-length byte(s)."""
    n = len(e)
    v = string2ll(e) if n <= 20 else None
    if v is not None:
        if 0 <= v < 128:
            return 2
        for size, limit in _LP_INTS:
            if -limit <= v < limit:
                return size
        return 10
    if n < 64:
        return n + 2
    if n < 4096:
        return n + 2 + (1 if n + 2 < 128 else 2)
    return n + 5 + 3


_LP_INTS = ((3, 1 << 12), (4, 1 << 15), (5, 1 << 23), (6, 1 << 31))  # size, bound


def _parts(value: Any) -> list[tuple[Any, int]]:
    """The containers inside an aggregate, each with the way to drain it."""
    t = type(value)
    if t is Hash:
        return [(value, DICT)]
    if t is Set:
        return [(value, POP), (value.pool, LIST)] if value.pool else [(value, POP)]
    if t is List:
        return [(value, POP)]
    if t is ZSet:
        order = value.order
        # (drained from the end) the (score, member) tuples first, while the scores dict
        # still holds the members
        return [(value.scores, DICT), (order._maxes, LIST), (order._lists, LISTS)]
    if t is Stream:
        parts: list[tuple[Any, int]] = []
        for g in value.groups.values():
            for c in g.consumers.values():
                parts += ((c.pel.d, DICT), (c.pel.ids, LIST))
            parts += ((g.pel.d, DICT), (g.pel.ids, LIST))
        return [(value.ids, LIST), (value.vals, LIST), (value.enc, LIST), *parts]
    return []


class _Job:
    __slots__ = ('parts', 'count', 'guard')

    def __init__(self, parts: list[tuple[Any, int]], count: int, guard: Any) -> None:
        self.parts = parts  # (container, how) drained from the end of the list
        self.count = count  # objects it stands for in lazyfree_pending_objects
        self.guard = guard  # a data dict a running snapshot may still read, or None


class LazyFree:
    """The queue of things to free, its step, and its INFO counters. `config` is the
    server's Config (None: every lazyfree-lazy-* parameter is off)."""

    def __init__(self, ks: Any, config: Any = None) -> None:
        self.ks = ks
        self.config = config
        self.jobs: deque[_Job] = deque()
        self.pending = 0  # lazyfree_pending_objects
        self.freed = 0  # lazyfreed_objects
        self.handle: Any = None  # the scheduled step, while one is

    def enabled(self, name: str) -> bool:
        """The lazyfree-lazy-<name> parameter (user-del, user-flush, server-del, expire,
        eviction)."""
        config = self.config
        return config is not None and bool(config.values['lazyfree-lazy-' + name])

    def replaced(self, old: Any) -> None:
        """An aggregate was overwritten by another value (SET, MSET, a STORE command):
        with lazyfree-lazy-server-del it goes as a deleted one does (dbSetValue)."""
        if self.config is not None and self.config.values['lazyfree-lazy-server-del']:
            self.free_value(old)

    def reset_stats(self) -> None:
        """CONFIG RESETSTAT (lazyfreeResetStats)."""
        self.freed = 0

    # -- queueing ---------------------------------------------------------------------

    def free_value(self, value: Any) -> None:
        """A value just deleted: queued when freeing it is worth a job (freeObjAsync),
        else dropped by the caller at once."""
        if type(value) is not bytes and free_effort(value) > LAZYFREE_THRESHOLD:
            self.jobs.append(_Job(_parts(value), 1, None))
            self.pending += 1
            self._schedule()

    def free_db(self, containers: list[tuple[Any, int]], keys: int, data: Any) -> None:
        """The dicts of one shard's part of a flushed database (emptyDbAsync), holding
        `keys` keys; `data` is its data dict, which a running snapshot may still read."""
        self.jobs.append(_Job(containers, keys, data))
        self.pending += keys
        self._schedule()

    # -- freeing ----------------------------------------------------------------------

    def _schedule(self, delay: float = 0.0) -> None:
        if self.handle is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (an embedded keyspace): free it all now
            self.drain()
            return
        if delay:
            self.handle = loop.call_later(delay, self.step)
        else:
            self.handle = loop.call_soon(self.step)

    def step(self, budget_s: float = STEP_S) -> None:
        """Free for about `budget_s` seconds, then let the loop serve clients; the next
        step is scheduled while work remains."""
        self.handle = None
        stop = time.perf_counter() + budget_s
        jobs = self.jobs
        waiting: list[_Job] = []
        while jobs:
            job = jobs[0]
            if job.guard is not None and self._guarded(job.guard):
                waiting.append(jobs.popleft())
                continue
            if self._work(job, stop):
                jobs.popleft()
                self.pending -= job.count
                self.freed += job.count
            if time.perf_counter() > stop:
                break
        if waiting:
            jobs.extend(waiting)
        if jobs:
            self._schedule(WAIT_S if len(waiting) == len(jobs) else 0.0)

    def drain(self) -> None:
        """Free everything queued now, snapshot or not (no loop to wait on)."""
        while self.jobs:
            job = self.jobs.popleft()
            self._work(job, float('inf'))
            self.pending -= job.count
            self.freed += job.count

    def _guarded(self, data: Any) -> bool:
        snapshot = self.ks.snapshot  # the persistence manager while a snapshot runs
        return snapshot is not None and bool(snapshot.reads(data))

    def _work(self, job: _Job, stop: float) -> bool:
        """Drain the job's containers until done (True) or past `stop`."""
        parts = job.parts
        while parts:
            container, how = parts[-1]
            while container:
                self._drain(container, how)
                if time.perf_counter() > stop:
                    return False
            parts.pop()
        return True

    def _drain(self, container: Any, how: int) -> None:
        """Free part of `container`: CHUNK elements from its end (LISTS: 4 sublists of
        about a thousand elements each), or all of it when that is cheap: CHUNK elements
        or fewer, or a REFS dict of up to CLEAR_MAX entries. `clear` walks the table in
        order, where `popitem` probes the hash index for each entry: 15x cheaper for a
        dict whose keys live on elsewhere, about the same where freeing the objects is
        the cost (the data dict, a hash's fields)."""
        n = len(container)
        if how == LISTS:
            del container[-4:]
        elif how == DATA:
            pairs = starmap(container.popitem, repeat((), min(n, CHUNK)))
            values = list(map(_second, pairs))
            if set(map(type, values)) != _BYTES_ONLY:
                self._keep_big(values)
        elif n <= CHUNK or (how == REFS and n <= CLEAR_MAX):
            container.clear()
        elif how == LIST:
            del container[-CHUNK:]
        elif how == POP:
            deque(starmap(container.pop, repeat((), CHUNK)), 0)
        else:  # DICT, REFS
            deque(starmap(container.popitem, repeat((), CHUNK)), 0)

    def _keep_big(self, values: Any) -> None:
        """Queue the big aggregates among `values` (about to be dropped) as jobs of
        their own, so a flushed database's million-field hash is freed in steps too."""
        for value in values:
            t = type(value)
            if t is not bytes and t is not bytearray and len(value) > CHUNK:
                self.jobs.append(_Job(_parts(value), 0, None))
