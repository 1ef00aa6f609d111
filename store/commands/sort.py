"""SORT and SORT_RO."""

from ..command_table import Family

COMMANDS = Family('generic')
