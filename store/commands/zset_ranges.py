"""Sorted-set range commands: ZRANGE and its variants, counts and removals by range."""

from ..command_table import Family

COMMANDS = Family('sorted-set', since='1.2.0')
