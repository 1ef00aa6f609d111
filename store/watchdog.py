"""The software watchdog (debug.c's applyWatchdogPeriod and watchdogSignalHandler): with
`watchdog-period` set (ms, CONFIG SET), SIGALRM is armed for that long and armed again by
every cron tick, so it only fires when the event loop has not come back to the cron for
the whole period. Then the handler logs where the loop is stuck: Redis's "--- WATCHDOG
TIMER EXPIRED ---" lines with the Python stack of the interrupted code, and the loop goes
on (it is a report, not a kill). A loop stuck inside one C call is reported once that call
returns (Python runs signal handlers between bytecodes; a sleep is interrupted at once).

Signals reach only the main thread: a server embedded in another thread has no watchdog.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from types import FrameType
from typing import Any

from .crash import raw, stack_trace


class Watchdog:
    """The server's watchdog: `period` ms, 0 when off (or when signals cannot be had)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.period = 0

    def apply(self) -> None:
        """applyWatchdogPeriod: arm the alarm with the handler, or disarm it at 0 (and
        ignore a pending SIGALRM, as Redis sets SIG_IGN)."""
        if threading.current_thread() is not threading.main_thread():
            return  # (an alarm without the handler would kill the process)
        self.period = self.server.config['watchdog-period']
        if not self.period:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
            return
        signal.signal(signal.SIGALRM, lambda _sig, frame: _expired(self.server, frame))
        self.rearm()

    def rearm(self) -> None:
        """watchdogScheduleSignal, from every cron tick: one SIGALRM a period from now,
        replacing the last."""
        if self.period:
            signal.setitimer(signal.ITIMER_REAL, self.period / 1000)


def _expired(server: Any, frame: FrameType | None) -> None:
    """watchdogSignalHandler: serverLogFromHandler's lines around the stack trace."""
    prefix = f'{os.getpid()}:signal-handler ({int(time.time())}) '
    text = f'{prefix}\n--- WATCHDOG TIMER EXPIRED ---\n{stack_trace(frame)}{prefix}--------\n\n'
    raw(server, text)
