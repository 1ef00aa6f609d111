"""Command families, one module each; the server merges their COMMANDS tables."""

from . import (admin, bitmaps, client, config_cmd, debug, expire, info, introspection, keys, pubsub,
               session, stream_groups, stream_info, stream_read, streams, strings,
               transactions)

MODULES = [client, strings, bitmaps, keys, expire, transactions, session, config_cmd, introspection,
           info, debug, admin, pubsub, streams, stream_read, stream_groups, stream_info]
