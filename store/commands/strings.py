"""String commands (to be completed)."""

from ..command_table import Command
from ..resp import OK
from ..args import WRONGTYPE


def get(c, args):
    v = c.ks.read(c.db, args[1])
    if v is None or type(v) is bytes:
        return v
    raise WRONGTYPE


def set_(c, args):
    c.ks.set(c.db, args[1], args[2])
    return OK


COMMANDS = [
    Command('get', get, 2, 'readonly fast', (1, 1, 1), '@read @string @fast', 'string'),
    Command('set', set_, -3, 'write denyoom', (1, 1, 1), '@write @string @slow', 'string'),
]
