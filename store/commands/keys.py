"""(to be written)"""

COMMANDS = []
