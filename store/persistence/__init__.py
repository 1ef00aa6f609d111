"""Persistence: RDB snapshots, the append-only file, and loading at start-up.

Modules:
- rdb_codec.py: Redis's RDB v10 format, value by value (`RdbEncoder`) and a whole file
  (`RdbLoader`), both ways compatible with redis-server 7.0.
- snapshot.py: the point-in-time snapshot without fork. It walks the keyspace in small
  steps between commands and, while it runs, serializes a key's old value before any
  access can change it (Dragonfly's design). SAVE, BGSAVE, save points, SHUTDOWN and the
  AOF rewrite all use it; what it writes is decided by its encoder (RDB, or AOF commands).
- aof.py: the multi-part append-only file: propagation of executed writes, fsync policies,
  rewrite, and replay at start-up.
- manager.py: `Persistence`, what the server owns: configuration, save points, the
  commands' entry points, INFO fields, and loading at start-up.
"""
