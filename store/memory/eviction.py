"""maxmemory: the gate before commands and the eviction policies (Redis's evict.c).

The keyspace charges every write (store/keyspace.py), so the test for "over the limit" is
one comparison the connection makes before each command: `ks.used > ks.check_at`, where
`check_at` is the room `maxmemory` leaves the keyspace after the startup figure and what
clients and queues hold (store/memory/report.py, refreshed by the cron ten times a second),
or -1 while aggregates wait to be re-estimated. Only then does `gate` run: it settles the
estimates, evicts until used memory is under the limit, and refuses the command with
Redis's -OOM reply when nothing more can be evicted and the command may grow memory (a
`denyoom` command, any command queued in MULTI, EXEC of a transaction holding one).

Eviction follows Redis's sampled approximations, with the same parameters:
- a victim is chosen from `maxmemory-samples` keys sampled per database (from every key, or
  from the keys with a TTL for volatile-*) through a pool of the 16 best candidates seen so
  far (EVPOOL_SIZE), scored by idle time (LRU), 255 - the decayed LFU counter (LFU), or
  the deadline (volatile-ttl); the random policies take a sampled key as it comes;
- LRU is segmented, as memcached's is: a key not used since it was created (written once,
  never read: most victims) is scored by its idle time, a key used again by a quarter of
  it (USED_IDLE), so a key read once stays over keys that were only written, until it has
  been idle four times as long. On bench/eviction.py's Zipf trace this holds 75% hits
  where plain LRU (and any approximation of it) holds 73% in the same memory; when the
  popular keys change it adapts a little more slowly (docs/memory.md);
- sampling needs random access, which dicts lack: each shard's keys are copied into a list
  (`_Sampler`) that is rebuilt once a quarter of it is stale (keys gone, or the dict grew a
  quarter past it), so a sample costs O(1) and a rebuild is amortized over the keys
  written since;
- the LRU clock has the cron's resolution (100 ms at hz 10), finer than Redis's 1 s;
- a run frees a little below the limit (0.1% of maxmemory, at most 64 KB), so a stream of
  writes pays a run's fixed costs once per a hundred keys or so, not once per write (the
  victims are the same ones Redis would take next);
- `maxmemory-eviction-tenacity` bounds the time one gate spends (evictionTimeLimitUs:
  50 us per step up to 10, growing 15% a step after, unlimited at 100); eviction that
  does not finish continues between commands, one bounded step per loop turn, and commands
  are not refused meanwhile, as Redis does (EVICT_RUNNING).

Each evicted key is deleted as DEL would (snapshot and AOF told first), counted in INFO
`evicted_keys`, and its `evicted` event leaves with the others of its database in one
batch (events.batch), as the active expiry sends `expired`.
"""

from __future__ import annotations

import random
import time
from bisect import insort
from collections.abc import Mapping
from typing import Any

from ..events import EVICTED
from . import lfu
from .client_usage import tot_mem
from .report import client_memory, overhead, startup

OOM = "OOM command not allowed when used memory > 'maxmemory'."
EVPOOL_SIZE = 16
USED_IDLE = 4  # a key used since it was created counts a quarter of its idle time
INF = float('inf')

OK, RUNNING, FAIL = 0, 1, 2
_MULTI_OK = {b'exec', b'discard', b'quit', b'reset'}
_SCRIPT_CALLS = {b'eval', b'evalsha', b'eval_ro', b'evalsha_ro', b'fcall', b'fcall_ro'}


def _script_may_grow(server: Any, name: bytes, arg: bytes) -> bool:
    """scriptFlagsToCmdFlags: EVAL of a script with a shebang, or FCALL, counts as a
    denyoom command unless the script declares `allow-oom` or `no-writes`; a script
    without a shebang (or one not found) does not."""
    if name.startswith(b'fcall'):
        fn = server.functions.ctx.functions.get(arg.lower())
        flags = None if fn is None else fn.flags
    elif name.startswith(b'evalsha'):
        script = server.scripts.get(arg)
        flags = None if script is None else script.flags
    else:
        flags = server.scripts.flags_of(arg)
    return flags is not None and not ('allow-oom' in flags or 'no-writes' in flags)


def time_limit_s(tenacity: int) -> float:
    """evictionTimeLimitUs, in seconds (inf at 100)."""
    if tenacity <= 10:
        return 50e-6 * tenacity
    if tenacity < 100:
        return 500e-6 * 1.15 ** (tenacity - 10)
    return INF


class _Sampler:
    """Random keys of one dict (a shard's data or expires of one database), drawn from a
    copy of its keys. The copy is made again once a quarter of it is found gone, the dict
    has grown a quarter past it, or evictions took 1/128 of it: keys written since the
    copy cannot be drawn, so a copy that lags spares the newest keys, which under LFU are
    the likeliest to go (fresher copies: 76.9 -> 77.5% hits on bench/eviction_sim.py)."""

    __slots__ = ('src', 'keys', 'stale', 'taken')

    def __init__(self, src: Mapping[bytes, Any]) -> None:
        self.src = src
        self.keys = list(src)
        self.stale = 0
        self.taken = 0

    def fresh(self, src: Mapping[bytes, Any]) -> bool:
        n = len(self.keys)
        return (
            src is self.src
            and self.stale * 4 <= n
            and self.taken * 128 <= n
            and len(src) * 4 <= n * 5
        )

    def sample(self, count: int) -> list[bytes]:
        keys, src = self.keys, self.src
        n = len(keys)
        out: list[bytes] = []
        if not n:
            return out
        for _ in range(count):
            key = keys[int(random.random() * n)]
            if key in src:
                out.append(key)
            else:
                self.stale += 1
        return out


class Evictor:
    def __init__(self, server: Any) -> None:
        self.server = server
        self.ks = server.keyspace
        self.maxmemory = 0
        self.policy = 'noeviction'
        self.samples = 5
        self.step_s = time_limit_s(10)
        self.overhead = 0  # startup + what clients and queues hold, refreshed by cron
        self.pool: list[tuple[float, int, int, bytes]] = []  # (score, db, shard, key)
        self.clock = 0  # the cron's clock in ms, odd: what LRU idle times are measured to
        self.samplers: dict[tuple[int, int, bool], _Sampler] = {}
        self.evicted_keys = 0
        self.evicted_clients = 0
        self.clients_limit = 0  # maxmemory-clients in bytes (0: clients are not evicted)
        self.background: Any = None  # the loop handle of eviction continuing between commands
        # INFO total/current_eviction_exceeded_time: how long used memory stayed over
        self.over_since: float | None = None
        self.over_ms = 0.0

    # -- configuration ---------------------------------------------------------------------

    def configure(self) -> None:
        """Read maxmemory and its policy parameters (startup and CONFIG SET)."""
        cfg = self.server.config
        ks = self.ks
        policy = cfg['maxmemory-policy']
        if policy != self.policy:
            self.pool = []
        self.maxmemory = cfg['maxmemory']
        self.policy = policy
        self.samples = cfg['maxmemory-samples']
        self.step_s = time_limit_s(cfg['maxmemory-eviction-tenacity'])
        ks.lfu = 'lfu' in policy
        if not ks.lfu:
            ks.evicted = None
        elif ks.evicted is None:
            ks.evicted = lfu.Evicted(ks.dbsize_all())
        ks.lru = ks.lru_used = None
        limit = cfg['maxmemory-clients']  # negative: a percentage of maxmemory
        limit = self.maxmemory * -limit // 100 if limit < 0 else limit
        # getClientEvictionLimit: never under 128 KB, so a bad setting cannot lock all out
        self.clients_limit = max(limit, 128 * 1024) if limit else 0
        ks.lfu_log_factor = cfg['lfu-log-factor']
        ks.lfu_decay_time = cfg['lfu-decay-time']
        self.refresh()

    def refresh(self, now: float | None = None) -> None:
        """Cron: advance the LRU clock and recompute the keyspace's room under the limit."""
        ks = self.ks
        now = now or time.time()
        self.clock = int(now * 1000) | 1
        if not ks.lfu and not ks.no_touch:
            ks.lru = self.clock - 1
            ks.lru_used = self.clock
        ks.lfu_minutes = lfu.minutes(now)
        ks.lfu_tick = lfu.tick(now)
        # what the limit is checked against: the AOF buffer and the replicas' share of the
        # replication buffer are not counted, as in Redis (freeMemoryGetNotCountedMemory)
        self._measure()
        if self.maxmemory:
            limit = self.maxmemory - self.overhead
            ks.check_at = -1 if ks.dirty else limit
            ks.dirty_check = -1
        else:
            ks.check_at = ks.dirty_check = INF

    def _measure(self) -> None:
        """Recompute `overhead`, dropping clients over maxmemory-clients first, so the
        memory they held is not what keys are evicted for (Redis's processCommand runs
        evictClients before performEvictions)."""
        server = self.server
        if server.pending_flush:
            # replies of this turn's commands not written yet (the cron can run before the
            # turn's flush_pending): written first, or an INFO reply in a buffer would
            # shrink the room until the next cron, where Redis has written it before it
            # reads the next command
            server.flush_pending()
        parts = overhead(server)
        self.overhead = startup(server) + parts['total'] - parts['not_counted']
        if self.clients_limit:
            # the clients dropped now were in the measure just taken
            self.overhead -= self.evict_clients()

    def clients_grew(self, n: int) -> None:
        """A client's held commands changed by `n` bytes (MULTI's queue, commands behind a
        parked one, a request still arriving grew or went): the room left for the keys
        follows at once, not at the next cron, so a client queueing a transaction in one
        pipeline, or clients sending big requests, meet the limit as Redis's do."""
        self.overhead += n
        if self.maxmemory:
            ks = self.ks
            ks.check_at = -1 if ks.dirty else self.maxmemory - self.overhead

    def used_memory(self) -> int:
        self.ks.settle()
        used: int = self.ks.used
        return used + self.overhead

    def out_of_memory(self) -> bool:
        """Over maxmemory with nothing left to evict (Redis's pre_command_oom_state, which
        scripts read)."""
        if not self.maxmemory:
            return False
        self.ks.settle()
        return self.ks.used > self.maxmemory - self.overhead and self.perform() == FAIL

    # -- the gate ----------------------------------------------------------------------------

    def gate(self, conn: Any, cmd: Any, args: list[bytes]) -> bool:
        """Before a command while `ks.used > ks.check_at`: settle, evict; True when the
        command was refused with -OOM (the reply is queued)."""
        ks = self.ks
        ks.settle()
        if not self.maxmemory:
            ks.check_at = INF
            return False
        limit = self.maxmemory - self.overhead
        if ks.used > limit and self.clients_limit:
            # the clients' buffers may have grown since the cron measured them: drop
            # clients over their limit before evicting keys (O(clients), only while over)
            self._measure()
            limit = self.maxmemory - self.overhead
        ks.check_at = limit
        if ks.used <= limit:
            return False
        result = self.perform()
        tracking = conn.server.tracking
        if tracking.handle is not None:
            # the evicted keys' invalidations go before the command's reply, as Redis
            # sends them while it evicts, before it runs the command
            tracking.flush(conn)
        if result != FAIL:
            return False
        if cmd is None or not self.denies(conn, cmd, args):
            return False
        conn._reject(cmd, OOM)
        return True

    @staticmethod
    def denies(conn: Any, cmd: Any, args: list[bytes]) -> bool:
        """Would processCommand refuse this command when out of memory?"""
        if cmd.subcommands and len(args) > 1:
            cmd = cmd.subcommands.get(args[1].decode('utf-8', 'replace').lower(), cmd)
        if 'denyoom' in cmd.flags:
            return True
        name = args[0].lower()
        if name in _SCRIPT_CALLS and len(args) > 1:
            return _script_may_grow(conn.server, name, args[1])
        if conn.multi is not None:
            if name not in _MULTI_OK:
                return True
            if name == b'exec':
                return any('denyoom' in queued.flags for queued, _ in conn.multi)
        return False

    # -- clients ------------------------------------------------------------------------------

    def evict_clients(self) -> int:
        """maxmemory-clients (Redis 7.0's evictClients): while the clients together use
        more than the limit, drop the one using the most (the oldest of equals), sparing
        CLIENT NO-EVICT ones; a client's use is the tot-mem CLIENT LIST shows
        (memory/client_usage.py). Replicas are neither counted nor evicted
        (clientEvictionAllowed: normal and pub/sub clients only). Checked by the cron, ten
        times a second, by the gate before it evicts keys and as a client that does not
        read its replies gets more. Returns what the dropped clients held in used_memory."""
        server = self.server
        sizes = [
            (tot_mem(c), c) for c in server.clients.values() if not c.closing and not c.is_replica()
        ]
        total = sum(size for size, _ in sizes)
        if total < self.clients_limit:
            return 0
        sizes.sort(key=lambda sc: (-sc[0], sc[1].id))
        freed = 0
        for size, conn in sizes:
            if total < self.clients_limit:
                return freed
            if conn.no_evict:
                continue  # spared, though its memory counts, as in Redis
            server.log_verbose(f'Evicting client: {conn.info_line()}')
            freed += client_memory(conn)
            conn.abort()
            self.evicted_clients += 1
            total -= size
        if total >= self.clients_limit:
            server.log('Over client maxmemory after evicting all evictable clients', '#')
        return freed

    # -- eviction ----------------------------------------------------------------------------

    def perform(self) -> int:
        """performEvictions: evict until under maxmemory or out of time (RUNNING: goes on
        between commands) or out of candidates (FAIL)."""
        ks = self.ks
        limit = self.maxmemory - self.overhead
        if ks.used <= limit:
            self._under()
            return OK
        if self.server.pause.active():
            return OK  # isSafeToPerformEvictions: the dataset stays as it is while paused
        if self.server.replica_link is not None and self.server.config['replica-ignore-maxmemory']:
            return OK  # a replica's data is its master's
        if self.over_since is None:
            self.over_since = time.monotonic()
        if self.policy == 'noeviction':
            return FAIL
        start = time.perf_counter()
        stop = start + self.step_s
        # Freed a little below the limit (0.1% of it, at most 64 KB), so a stream of writes
        # runs this once per a hundred keys or so rather than once per write.
        target = limit - min(self.maxmemory >> 10, 65536)
        batches: dict[int, list[bytes]] = {}
        state = OK
        count = 0
        select = self.select
        dbs = self._candidate_dbs()
        while ks.used > target:
            victim = select(dbs)
            if victim is None:
                if ks.used > limit:
                    state = FAIL
                break
            s, db, key = victim
            self.evict(s, db, key)
            batch = batches.get(db)
            if batch is None:
                batch = batches[db] = []
            batch.append(key)
            count += 1
            if not count & 15 and time.perf_counter() > stop:
                if ks.used > limit:
                    state = RUNNING
                break
        if state == OK:
            self._under()
        self.evicted_keys += count
        events = ks.events
        for db, keys in batches.items():
            events.batch(EVICTED, b'evicted', db, keys)
        if state == RUNNING and self.background is None:
            self.background = self.server.loop.call_soon(self._continue)
        latency = self.server.__dict__.get('latency')  # store/latency.py, once it exists
        if latency is not None:
            latency.timed('eviction-cycle', start)
        return state

    def shrink(self) -> None:
        """CONFIG SET maxmemory below what is used: warn, and evict after the command, as
        Redis 7.0's updateMaxmemory starts its eviction time event: not within the
        command, so a CONFIG SET inside MULTI does not evict under the transaction's
        later commands (they run as queued; the keys go after EXEC)."""
        used = self.used_memory()
        if used <= self.maxmemory:
            return
        self.server.log(
            f'WARNING: the new maxmemory value set via CONFIG SET ({self.maxmemory}) is '
            f'smaller than the current memory usage ({used}). This will result in key '
            'eviction and/or the inability to accept new write commands depending on the '
            'maxmemory-policy.',
            '#',
        )
        if self.background is None:
            self.background = self.server.loop.call_soon(self._continue)

    def reset_stats(self) -> None:
        """CONFIG RESETSTAT: evicted keys and clients, the time spent over maxmemory (a
        period still running counts again from the next eviction)."""
        self.evicted_keys = self.evicted_clients = 0
        self.over_ms = 0.0
        self.over_since = None

    def _under(self) -> None:
        if self.over_since is not None:
            self.over_ms += (time.monotonic() - self.over_since) * 1000
            self.over_since = None

    def current_exceeded_ms(self) -> int:
        return 0 if self.over_since is None else int((time.monotonic() - self.over_since) * 1000)

    def exceeded_ms(self) -> int:
        return int(self.over_ms) + self.current_exceeded_ms()

    def _continue(self) -> None:
        """Eviction that did not finish within a command's time limit goes on, one
        bounded step per loop turn (evictionTimeProc)."""
        self.background = None
        self.ks.settle()
        if self.maxmemory:
            self.perform()

    def evict(self, s: Any, db: int, key: bytes) -> None:
        """Delete one key of shard `s` as DEL would, telling the parties that hear keys
        leave first (a running snapshot writes it out, the AOF a DEL, as Redis does)."""
        ks = self.ks
        if ks.hear_removing:
            ks.removing(s, db, key)
        ks.drop(s, db, key, 'eviction')  # lazyfree-lazy-eviction
        evicted = ks.evicted
        if evicted is not None:
            if evicted.full():
                evicted.rotate(ks.dbsize_all())
            evicted.add(key)
        if ks.observed:
            ks.touch(db, key)

    def _candidate_dbs(self) -> list[int]:
        """The databases holding keys the policy may evict."""
        ks = self.ks
        dbs = [db for db, used in enumerate(ks.db_used) if used > 0]
        if self.policy.startswith('volatile'):
            dbs = [db for db in dbs if ks.volatile_count(db)]
        return dbs

    def select(self, dbs: list[int]) -> tuple[Any, int, bytes] | None:
        """The next victim (shard, db, key) among `dbs` under the policy, or None when no
        key may go."""
        if not dbs:
            return None
        policy = self.policy
        volatile = policy.startswith('volatile')
        journal = self.server.journal.key  # never evicted: the event history it holds
        if policy.endswith('random'):
            for _ in range(100):
                db = random.choice(dbs)
                i, keys = self._sample(db, volatile, 1)
                if keys and (db or keys[0] != journal):
                    return self.ks.shards[i], db, keys[0]
            return None
        pool = self.pool
        shards = self.ks.shards
        for _ in range(100):
            for db in dbs:
                self._populate(db, volatile, policy)
            while pool:
                _, db, i, key = pool.pop()
                s = shards[i]
                if key in (s.deadlines(db) if volatile else s.keys(db)) and (db or key != journal):
                    sampler = self.samplers.get((i, db, volatile))
                    if sampler is not None:
                        sampler.taken += 1
                    return s, db, key
        return None

    def _sample(self, db: int, volatile: bool, count: int) -> tuple[int, list[bytes]]:
        """A random non-empty shard of `db` (its index) and up to `count` random keys of
        it."""
        shards = self.ks.shards
        for _ in range(8):
            i = int(random.random() * len(shards))
            s = shards[i]
            src = s.deadlines(db) if volatile else s.values(db)
            if not src:
                continue
            sampler = self.samplers.get((i, db, volatile))
            if sampler is None or not sampler.fresh(src):
                sampler = self.samplers[(i, db, volatile)] = _Sampler(src)
            keys = sampler.sample(count)
            if keys:
                return i, keys
        return 0, []

    def _populate(self, db: int, volatile: bool, policy: str) -> None:
        """evictionPoolPopulate: score sampled keys and keep the 16 best in the pool,
        as (score, db, shard index, key)."""
        ks = self.ks
        pool = self.pool
        i, keys = self._sample(db, volatile, self.samples)
        if not keys:
            return
        s = ks.shards[i]
        if policy == 'volatile-ttl':
            exp = s.deadlines(db)
            scores = [-exp[key] for key in keys]  # the nearest deadline goes first
        elif ks.lfu:
            # the fewest hits first, the least recent among equals (store/memory/lfu.py)
            access, score = s.accesses(db).get, lfu.score
            decay, now, at = ks.lfu_decay_time, ks.lfu_minutes, ks.lfu_tick
            scores = [score(access(key), decay, now, at) for key in keys]
        else:
            # idle time, times USED_IDLE for a key not used since it was created (even
            # clock); at the same tick that one goes first (1 * USED_IDLE > 0)
            access, born, now = s.accesses(db).get, ks.born, self.clock
            scores = []
            for key in keys:
                at = access(key, born)
                scores.append(now - at if at & 1 else (now - at) * USED_IDLE)
        for score, key in zip(scores, keys):
            if len(pool) < EVPOOL_SIZE or score > pool[0][0]:
                insort(pool, (score, db, i, key))
                if len(pool) > EVPOOL_SIZE:
                    del pool[0]
