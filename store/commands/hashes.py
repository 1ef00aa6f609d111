"""Hash commands (Redis 7.0 t_hash.c)."""

from ..command_table import Family

COMMANDS = Family('hash', since='2.0.0')
