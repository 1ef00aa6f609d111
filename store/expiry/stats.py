"""Expiry lag: how long keys outlived their deadline, as a compact histogram.

Every expiry (active or lazy) records `now - deadline` in ms. Lags under 1 s are counted
per millisecond; longer ones per power of two, which keeps the histogram small whatever
the lags (a lazily expired key may be found hours late) while p50/p99 stay exact in the
range that matters for on-time expiry. `max` is exact.
"""

EXACT = 1000


def _bucket(lag):
    if lag < EXACT:
        return lag if lag > 0 else 0
    return EXACT + lag.bit_length()


def _bucket_value(b):
    return b if b < EXACT else 1 << (b - EXACT)    # upper bound of a power-of-two bucket


class LagStats:
    __slots__ = ('counts', 'total', 'max')

    def __init__(self):
        self.reset()

    def reset(self):
        self.counts = {}
        self.total = 0
        self.max = 0

    def record(self, lag, n=1):
        b = _bucket(lag)
        self.counts[b] = self.counts.get(b, 0) + n
        self.total += n
        if lag > self.max:
            self.max = lag

    def percentile(self, p):
        if not self.total:
            return 0
        rank = p / 100 * self.total
        seen = 0
        for b in sorted(self.counts):
            seen += self.counts[b]
            if seen >= rank:
                return min(_bucket_value(b), self.max)
        return self.max


def expiry_info_fields(server):
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
