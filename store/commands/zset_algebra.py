"""Sorted-set algebra: ZUNION ZINTER ZDIFF, their STORE forms and ZINTERCARD."""

from ..command_table import Family

COMMANDS = Family('sorted-set', since='2.0.0')
