"""Command families, one module each; the server merges their COMMANDS tables."""

from . import (admin, client, config_cmd, debug, expire, info, introspection, keys, pubsub,
               session, streams, strings, transactions)

MODULES = [client, strings, keys, expire, transactions, session, config_cmd, introspection,
           info, debug, admin, pubsub, streams]
