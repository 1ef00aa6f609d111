"""Sorted-set commands (Redis 7.0 t_zset.c): members and scores."""

from ..command_table import Family

COMMANDS = Family('sorted-set', since='1.2.0')
