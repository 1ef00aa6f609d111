"""Command families, one module each; the server merges their COMMANDS tables."""

from . import (client, command, config_cmd, connection, debug, expire, info, keys, pubsub,
               server, streams, strings, transactions)

MODULES = [client, strings, keys, expire, transactions, connection, config_cmd, command, info,
           debug, server, pubsub, streams]
