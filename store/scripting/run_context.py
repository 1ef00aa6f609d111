"""A script's run (Redis's scriptRunCtx): what EVAL / FCALL check before the script
starts (scriptPrepareForRun, in Redis's order), and the state the engine, the busy
script's other clients (busy.py) and SCRIPT KILL share while it runs.

A script declaring flags (a shebang, a function's flags) is checked once, here: one that
says `no-cluster` is refused by a cluster node; one that may write is refused while used
memory is over maxmemory (unless `allow-oom`), while writes are refused (-READONLY,
-MISCONF, -NOREPLICAS) and by the _RO commands. One
without flags (Redis's compatibility mode) is checked at each call instead
(redis_api.py), and notes here whether memory is over maxmemory at its start, for its
first denyoom call (scriptVerifyOOM).
"""

from __future__ import annotations

import time
from typing import Any

from ..resp import RedisError

_perf = time.perf_counter


def check_numkeys(args: list[bytes], numkeys: int) -> int:
    """EVAL's / FCALL's `numkeys` after Redis's two checks of it, in its order (`args`:
    the command, the script or function, numkeys, the keys, the other arguments)."""
    if numkeys > len(args) - 3:
        raise RedisError("ERR Number of keys can't be greater than number of args")
    if numkeys < 0:
        raise RedisError("ERR Number of keys can't be negative")
    return numkeys


class ScriptRun:
    """The running script (Redis's scriptRunCtx)."""

    __slots__ = (
        'name',
        'caller',
        'read_only',
        'is_eval',
        'start',
        'timed_out',
        'killed',
        'written',
        'oom',
        'cross_slot',
        'slot',
    )

    def __init__(
        self,
        server: Any,
        name: bytes,
        caller: Any,
        flags: frozenset[str] | None,
        ro: bool,
        is_eval: bool,
    ) -> None:
        """scriptPrepareForRun: the run of a script with these flags (None: an EVAL script
        with no shebang, Redis's compatibility mode, checked at each call instead) by
        EVAL_RO / FCALL_RO when `ro`, after its checks in Redis's order (RedisError when
        one refuses). A script that may write is refused while used memory is over
        maxmemory (unless `allow-oom`), while writes are refused (-MISCONF, -NOREPLICAS),
        and by the _RO commands; one without flags notes whether memory is over maxmemory
        now, for its first denyoom call (scriptVerifyOOM)."""
        oom = False
        if flags is not None and 'no-cluster' in flags and server.cluster is not None:
            raise RedisError("ERR Can not run script on cluster, 'no-cluster' flag is set.")
        if flags is None:
            read_only = ro
            evictor = server.evictor
            if evictor.maxmemory:  # (none: never out of memory, without a call)
                oom = evictor.out_of_memory()
        elif 'no-writes' in flags:
            read_only = True
        else:
            if server.readonly_denied is not None:
                raise RedisError(server.readonly_denied)
            if 'allow-oom' not in flags and server.evictor.out_of_memory():
                raise RedisError(
                    'OOM allow-oom flag is not set on the script, can not run it when used '
                    "memory > 'maxmemory'"
                )
            if server.write_denied is not None:
                raise RedisError(server.write_denied)
            if ro:
                raise RedisError('ERR Can not execute a script with write flag using *_ro command.')
            if server.replicas_denied is not None:
                raise RedisError(server.replicas_denied)
            read_only = False
        self.name = name  # the sha for EVAL, the function's name for FCALL
        self.caller = caller
        self.read_only = read_only
        self.is_eval = is_eval
        self.start = _perf()
        self.timed_out = False  # past busy-reply-threshold: other clients get -BUSY
        self.killed: str | None = None  # 'kill' or 'shutdown' once asked to stop
        self.written = False  # a write ran: SCRIPT KILL refuses (UNKILLABLE)
        self.oom = oom  # over maxmemory at the start: no first denyoom call (no shebang)
        # cluster mode (store/cluster/routing.py's script_access_error): the script may
        # touch keys of several slots (allow-cross-slot-keys, or no flags at all: an EVAL
        # script of Redis's compatibility mode), and the slot of the keys it declared or
        # first touched (-1: none yet; the engine sets it when the run starts)
        self.cross_slot = flags is None or 'allow-cross-slot-keys' in flags
        self.slot = -1
