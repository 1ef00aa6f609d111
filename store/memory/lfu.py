"""Redis's LFU counter (evict.c), and what this server adds to order evictions better.

Each key's access information is one int in the shard's access dict:

    tick << 36 | hits << 24 | minutes << 8 | counter

- `counter` (8 bits) and `minutes` (16 bits) are Redis's: the logarithmic access counter
  and the minute of the last access (LFUDecrAndReturn, updateLFU). A new key starts at
  LFU_INIT_VAL (5), so it is not evicted before it had a chance to be used again. An access
  first decays the counter by one per `lfu-decay-time` minutes since the last access, then
  increments it with probability 1 / ((counter - 5) * lfu-log-factor + 1): with the
  default factor 10, about a million accesses take it to 255. OBJECT FREQ reports it, and
  RESTORE FREQ sets it, exactly as Redis does.
- `hits` (12 bits): the accesses themselves, counted one by one up to 4095 and halved
  (rather than decremented) per `lfu-decay-time` minutes without access. Redis's counter
  barely tells a key read once from one read ten times (6 against 6-7), so eviction
  ordered by it alone is close to random among the many keys of the cache's tail; ordered
  by `hits`, it evicts the least used of them.
- `tick` (24 bits): the cron's clock in tenths of a second at the last access, which
  orders keys of equal `hits`: the least recently used goes first (so among keys written
  and never read again, the oldest).

- A key written again soon after eviction took it starts with two hits instead of one
  (`Evicted`): most keys evicted had a single hit, and one that comes back has been asked
  for again, so it is more likely to be used than a key never seen before.

The int stays under 2**60, so it costs what Redis's 24-bit value did here (a 32-byte int:
CPython's ints of one and two 30-bit digits share pymalloc's 32-byte size class).
Measured on bench/eviction.py's Zipf trace (bench/eviction_sim.py): ordering by `hits`
then `tick` raises the hit ratio at the same maxmemory from 75.9% to 76.7%, and
remembering evicted keys (with the evictor's fresher samples) to 77.3-77.5%.
"""

from __future__ import annotations

import random
import time

LFU_INIT_VAL = 5
HITS_MAX = 4095
TICK_MASK = (1 << 24) - 1
_random = random.random


def minutes(now: float | None = None) -> int:
    """LFUGetTimeInMinutes: the 16-bit minute clock (the keyspace caches it as
    `lfu_minutes`, refreshed by the cron, as Redis reads its cached unixtime)."""
    return (int(time.time() if now is None else now) // 60) & 65535


def tick(now: float | None = None) -> int:
    """The access tick: tenths of a second, 24 bits (wraps every 19 days; the keyspace
    caches it as `lfu_tick`, refreshed by the cron)."""
    return int((time.time() if now is None else now) * 10) & TICK_MASK


def hits_for(counter: int, log_factor: int = 10) -> int:
    """The accesses Redis's counter stands for on average (RESTORE FREQ, a loaded FREQ
    record): those it takes to climb from LFU_INIT_VAL to `counter`."""
    if counter < LFU_INIT_VAL:
        return 0
    n = counter - LFU_INIT_VAL
    return min(HITS_MAX, 1 + n + log_factor * n * (n - 1) // 2)


def packed(counter: int, log_factor: int = 10) -> int:
    """The value of a key whose counter is set (RESTORE FREQ), accessed now."""
    return tick() << 36 | hits_for(counter, log_factor) << 24 | minutes() << 8 | counter


def _elapsed(value: int, now: int) -> int:
    ldt = (value >> 8) & 65535
    return now - ldt if now >= ldt else 65535 - ldt + now


def decayed(value: int | None, decay_time: int, now: int) -> int:
    """LFUDecrAndReturn: the counter with the decay since its last access applied (`now`
    is the minute clock)."""
    if value is None:
        return LFU_INIT_VAL
    counter = value & 255
    if decay_time:
        counter = max(0, counter - _elapsed(value, now) // decay_time)
    return counter


def touched(
    value: int | None, log_factor: int, decay_time: int, now: int, at: int, seen: bool = False
) -> int:
    """updateLFU: the value after one access at minute `now` and tick `at` (a key without
    one starts at LFU_INIT_VAL and one hit, two if it was `seen` lately: `Evicted`)."""
    if value is None:
        return at << 36 | (2 if seen else 1) << 24 | now << 8 | LFU_INIT_VAL
    counter = value & 255
    hits = (value >> 24) & HITS_MAX
    if decay_time:
        periods = _elapsed(value, now) // decay_time
        if periods:
            counter = max(0, counter - periods)
            hits >>= min(periods, 12)
    if hits < HITS_MAX:
        hits += 1
    if counter < 255:
        base = counter - LFU_INIT_VAL
        if base < 0:
            base = 0
        if _random() < 1.0 / (base * log_factor + 1):
            counter += 1
    return at << 36 | hits << 24 | now << 8 | counter


def score(value: int | None, decay_time: int, now: int, at: int) -> int:
    """Eviction order, the higher first: the fewest (decayed) hits, then the longest
    since the last access (`now` is the minute clock, `at` the tick)."""
    if value is None:  # a key written while no LFU policy was on: as a new key
        return (HITS_MAX - 1) << 24
    hits = (value >> 24) & HITS_MAX
    if decay_time:
        periods = _elapsed(value, now) // decay_time
        if periods:
            hits >>= min(periods, 12)
    return (HITS_MAX - hits) << 24 | ((at - (value >> 36)) & TICK_MASK)


class Evicted:
    """The keys evicted lately, as a Bloom filter in two generations: a generation takes
    `capacity` keys (12 bits and 3 hashes each: about 1% false positives), then the older
    one is dropped (`full`, `rotate`), so a key is remembered for one to two generations
    of evictions; the evictor sizes a generation for the keys held.
    Membership is what a key written again is asked (`touched(..., seen)`); a false
    positive only gives a new key its second hit early."""

    __slots__ = ('capacity', 'bits', 'size', 'count', 'old', 'old_size')

    def __init__(self, capacity: int) -> None:
        self.bits, self.size = bytearray(), 0
        self.rotate(capacity)

    def nbytes(self) -> int:
        return len(self.bits) + len(self.old)

    def full(self) -> bool:
        return self.count >= self.capacity

    def rotate(self, capacity: int) -> None:
        """Drop the older generation; a new one takes `capacity` keys (4,096 at least)."""
        self.old, self.old_size = self.bits, self.size
        self.capacity = capacity = max(4096, capacity)
        self.size = capacity * 12
        self.bits = bytearray((self.size + 7) >> 3)
        self.count = 0

    def add(self, key: bytes) -> None:
        self.count += 1
        h = hash(key)
        step = (h >> 32) | 1
        bits, size = self.bits, self.size
        for _ in range(3):
            i = h % size
            bits[i >> 3] |= 1 << (i & 7)
            h += step

    def __contains__(self, key: bytes) -> bool:
        h0 = hash(key)
        step = (h0 >> 32) | 1
        for bits, size in ((self.bits, self.size), (self.old, self.old_size)):
            if not size:
                continue
            h = h0
            for _ in range(3):
                i = h % size
                if not bits[i >> 3] & (1 << (i & 7)):
                    break
                h += step
            else:
                return True
        return False
