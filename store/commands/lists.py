"""List commands (Redis 7.0 t_list.c), non-blocking."""

from ..command_table import Family

COMMANDS = Family('list')
