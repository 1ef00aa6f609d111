"""oom-score-adj: the process's Linux OOM-killer score, as server.c's setOOMScoreAdj sets it.

`oom-score-adj-values` holds three scores: a primary's, a replica's, a background child's.
With `oom-score-adj yes` (or `relative`) the process's /proc/self/oom_score_adj becomes the
score of its class added to the value the process had before Redis first changed it (the
base, read once); with `absolute`, the score itself; either clamped to -1000..1000.
Turning it back to `no` restores the base. It is applied when either parameter changes and
when the server becomes a replica or stops being one (Server.replica_link's setter);
`child` sets a background child's (a snapshot's stand-in process) to the third score.

On a system without /proc/<pid>/oom_score_adj, or without the right to write it, the
failure is logged ("Unable to read/write oom_score_adj: ...") and the score left as is.
"""

from __future__ import annotations

import os
from typing import Any

MASTER, REPLICA, BGCHILD = 0, 1, 2  # CONFIG_OOM_MASTER, _REPLICA, _BGCHILD


class OomScore:
    def __init__(self, server: Any) -> None:
        self.server = server
        self.adjusted = False  # oom_score_adjusted_by_redis
        self.base = 0  # oom_score_adj_base: the score before the first adjustment

    def apply(self, process_class: int | None = None, pid: int | None = None) -> bool:
        """setOOMScoreAdj(process_class) for this process, or for `pid` (a child)."""
        server = self.server
        cfg = server.config
        if process_class is None:
            process_class = REPLICA if server.replica_link is not None else MASTER
        mode = cfg['oom-score-adj']
        if mode != 'no':
            if not self.adjusted:
                try:
                    with open('/proc/self/oom_score_adj') as f:
                        self.base = int(f.read().strip() or 0)
                except (OSError, ValueError) as e:
                    server.log(f'Unable to read oom_score_adj: {_why(e)}', '#')
                    return False
                self.adjusted = True
            val = cfg['oom-score-adj-values'][process_class]
            if mode == 'yes':  # relative
                val += self.base
            val = max(-1000, min(1000, val))
        elif self.adjusted and pid is None:
            self.adjusted = False
            val = self.base
        else:
            return True
        try:
            with open(f'/proc/{pid or "self"}/oom_score_adj', 'w') as f:
                f.write(f'{val}\n')
        except OSError as e:
            server.log(f'Unable to write oom_score_adj: {_why(e)}', '#')
            return False
        return True

    def child(self, pid: int) -> None:
        """A background child's score (Redis sets it in the forked child)."""
        if pid and self.server.config['oom-score-adj'] != 'no':
            self.apply(BGCHILD, pid)


def _why(e: Exception) -> str:
    return os.strerror(e.errno) if isinstance(e, OSError) and e.errno else str(e)
