"""DEBUG REPLYBUFFER: the reply buffer's resizing knobs (Redis 7.0's debug.c).

    DEBUG REPLYBUFFER PEAK-RESET-TIME <NEVER|RESET|milliseconds>
    DEBUG REPLYBUFFER RESIZING <0|1>

Both are stored on the server (`reply_buffer_peak_reset_ms`, -1 for never, and
`reply_buffer_resizing`); CLIENT LIST's rbs reads the second: with resizing off a client's
buffer stays at the 16 KB it was created with, as clientsCronResizeOutputBuffer then leaves
it. debug.py dispatches here through `SUBCOMMANDS`.
"""

from __future__ import annotations

from typing import Any

from ..args import lower
from ..resp import OK, RedisError

DEFAULT_PEAK_RESET_MS = 5000  # REPLY_BUFFER_DEFAULT_PEAK_RESET_TIME


def _replybuffer(c: Any, args: list[bytes]) -> Any:
    if len(args) != 4:
        return None  # debug.py answers the unknown-subcommand error
    what, value = lower(args[2]), args[3]
    server = c.server
    if what == 'peak-reset-time':
        v = lower(value)
        if v == 'never':
            server.reply_buffer_peak_reset_ms = -1
        elif v == 'reset':
            server.reply_buffer_peak_reset_ms = DEFAULT_PEAK_RESET_MS
        else:
            try:
                server.reply_buffer_peak_reset_ms = int(value)
            except ValueError:
                raise RedisError('ERR value is not an integer or out of range') from None
    elif what == 'resizing':
        try:
            server.reply_buffer_resizing = int(value) != 0  # atoi
        except ValueError:
            server.reply_buffer_resizing = False
    else:
        raise RedisError(
            "ERR unknown subcommand or wrong number of arguments for "
            f"'{args[1].decode('latin-1')[:128]}'. Try DEBUG HELP."
        )
    return OK


SUBCOMMANDS = {'replybuffer': _replybuffer}
