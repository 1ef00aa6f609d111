"""Redis's LFU counter (evict.c): an 8-bit logarithmic access counter and the minute it was
last decremented, packed as `minutes << 8 | counter` in the shard's access dict.

A new key starts at LFU_INIT_VAL (5), so it is not evicted before it had a chance to be
used again. An access first decays the counter by one per `lfu-decay-time` minutes since
the last access, then increments it with probability 1 / ((counter - 5) * lfu-log-factor
+ 1): with the default factor 10, about a million accesses take it to 255.
"""

from __future__ import annotations

import random
import time

LFU_INIT_VAL = 5
_random = random.random


def minutes(now: float | None = None) -> int:
    """LFUGetTimeInMinutes: the 16-bit minute clock (the keyspace caches it as
    `lfu_minutes`, refreshed by the cron, as Redis reads its cached unixtime)."""
    return (int(time.time() if now is None else now) // 60) & 65535


def packed(counter: int) -> int:
    return minutes() << 8 | counter


def decayed(value: int | None, decay_time: int, now: int) -> int:
    """LFUDecrAndReturn: the counter with the decay since its last access applied (`now`
    is the minute clock)."""
    if value is None:
        return LFU_INIT_VAL
    counter = value & 255
    if decay_time:
        ldt = value >> 8
        elapsed = now - ldt if now >= ldt else 65535 - ldt + now
        counter = max(0, counter - elapsed // decay_time)
    return counter


def touched(value: int | None, log_factor: int, decay_time: int, now: int) -> int:
    """updateLFU: the packed value after one access (a key without one starts at 5)."""
    if value is None:
        return now << 8 | LFU_INIT_VAL
    counter = decayed(value, decay_time, now)
    if counter < 255:
        base = counter - LFU_INIT_VAL
        if base < 0:
            base = 0
        if _random() < 1.0 / (base * log_factor + 1):
            counter += 1
    return now << 8 | counter
