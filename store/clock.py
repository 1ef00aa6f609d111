"""The clock every deadline is read against: integer milliseconds since the epoch, as
Redis's mstime(). One definition, so lazy expiry, active expiry, the journal and the
commands agree on what "now" means."""

import time

_frozen = 0  # a running script's start time (Redis freezes expiry for a script)


def now_ms() -> int:
    return _frozen or time.time_ns() // 1_000_000


def freeze_now() -> int:
    """freeze(now_ms()) in one call, for a script's start; returns what it replaces."""
    global _frozen
    previous = _frozen
    _frozen = previous or time.time_ns() // 1_000_000
    return previous


def freeze(ms: int) -> int:
    """Make now_ms() answer `ms` until freeze(0): a script sees no key expire while it
    runs, as Redis 7.0 reads expiry against the script's start time. Returns the value it
    replaces, for the caller to put back (a script applied by a replica, whose clock is
    frozen already)."""
    global _frozen
    previous = _frozen
    _frozen = ms
    return previous
