"""The clock every deadline is read against: integer milliseconds since the epoch, as
Redis's mstime(). One definition, so lazy expiry, active expiry, the journal and the
commands agree on what "now" means."""

import time


def now_ms() -> int:
    return time.time_ns() // 1_000_000
