"""Command families, one module each; the server merges their COMMANDS tables."""

from . import (client, connection, expire, keys, pubsub, server, streams, strings,
               transactions)

MODULES = [client, strings, keys, expire, transactions, connection, server, pubsub, streams]
