"""Set commands (Redis 7.0 t_set.c)."""

from ..command_table import Family

COMMANDS = Family('set')
