"""Expiry lag: how long keys outlived their deadline, as a compact histogram.

Every expiry (active or lazy) records `now - deadline` in ms. Lags under 1 s are counted
per millisecond; longer ones per power of two, which keeps the histogram small whatever
the lags (a lazily expired key may be found hours late) while p50/p99 stay exact in the
range that matters for on-time expiry. `max` is exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .index import DeadlineIndex

EXACT = 1000


def _bucket(lag: int) -> int:
    if lag < EXACT:
        return lag if lag > 0 else 0
    return EXACT + lag.bit_length()


def _bucket_value(b: int) -> int:
    return b if b < EXACT else 1 << (b - EXACT)  # upper bound of a power-of-two bucket


class LagStats:
    __slots__ = ('counts', 'total', 'max')

    counts: dict[int, int]  # bucket -> expiries
    total: int
    max: int

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.counts = {}
        self.total = 0
        self.max = 0

    def record(self, lag: int, n: int = 1) -> None:
        b = _bucket(lag)
        self.counts[b] = self.counts.get(b, 0) + n
        self.total += n
        if lag > self.max:
            self.max = lag

    def percentile(self, p: float) -> int:
        if not self.total:
            return 0
        # seen/total >= p/100, compared without dividing: p / 100 * total in floating
        # point rounds 7 / 100 * 100 up to 7.000000000000001, one sample too far.
        target = p * self.total
        seen = 0
        for b in sorted(self.counts):
            seen += self.counts[b]
            if seen * 100 >= target:
                return min(_bucket_value(b), self.max)
        return self.max


# What expiry_info_fields reads of the server, as read-only protocols: the expiry layer
# does not import the server (imports point down).


class _Shard(Protocol):
    @property
    def index(self) -> DeadlineIndex: ...


class _Keyspace(Protocol):
    @property
    def expire_lag(self) -> LagStats: ...
    @property
    def shards(self) -> Sequence[_Shard]: ...


class _Journal(Protocol):
    @property
    def appended(self) -> int: ...
    @property
    def dropped(self) -> int: ...


class _Server(Protocol):
    @property
    def keyspace(self) -> _Keyspace: ...
    @property
    def journal(self) -> _Journal: ...


def expiry_info_fields(server: _Server) -> list[tuple[str, int]]:
    """INFO stats fields beyond Redis's: expiry lag percentiles, the deadline index size,
    and the event journal's counters."""
    ks = server.keyspace
    lag = ks.expire_lag
    return [
        ('expired_lag_p50_ms', lag.percentile(50)),
        ('expired_lag_p99_ms', lag.percentile(99)),
        ('expired_lag_max_ms', lag.max),
        ('expires_index_entries', sum(s.index.entries for s in ks.shards)),
        ('expires_index_stale', sum(s.index.stale for s in ks.shards)),
        ('keyevent_journal_appended', server.journal.appended),
        ('keyevent_journal_dropped', server.journal.dropped),
    ]
