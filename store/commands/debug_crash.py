"""DEBUG's subcommands about crashes and shutdown (debug.c): SEGFAULT, PANIC and ASSERT
(store/crash.py writes the report and ends the process as Redis does) and PAUSE-CRON (the
cron, hence a signal's shutdown, waits). debug.py dispatches to `SUBCOMMANDS`.
"""

import time

from .. import crash
from ..cnum import atoi
from ..resp import OK


def _segfault(c, args):
    crash.debug_segfault(c.server, args)


def _panic(c, args):
    crash.panic(c.server, f'DEBUG PANIC called at Unix time {int(time.time())}', args=args)


def _assert(c, args):
    crash.assert_failed(c.server, '1 == 2', conn=c, args=args)


def _pause_cron(c, args):
    if len(args) != 3:
        return None
    c.server.cron_paused = bool(atoi(args[2]))  # the cron reschedules itself, doing nothing
    return OK


SUBCOMMANDS = {
    'pause-cron': _pause_cron,
    'segfault': _segfault,
    'panic': _panic,
    'assert': _assert,
}
