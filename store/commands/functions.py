"""FUNCTION and FCALL (Redis 7.0's functions.c). The libraries live in
store/scripting/functions.py; this module reads the arguments and answers."""

from ..command_table import Family

COMMANDS = Family('scripting', since='7.0.0')
