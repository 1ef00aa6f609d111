"""Blocking list commands: BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP."""

from ..command_table import Family

COMMANDS = Family('list')
