"""Sorted-set pops: ZPOPMIN ZPOPMAX ZMPOP and the blocking BZPOPMIN BZPOPMAX BZMPOP."""

from ..command_table import Family

COMMANDS = Family('sorted-set', since='5.0.0')
