"""Persistence: RDB snapshots, the append-only file, and loading at start-up.

Modules:
- Redis's RDB v10 format, both ways compatible with redis-server 7.0: rdb_types.py (rdb.h's
  opcodes and value types), rdb_blobs.py (listpack, intset, ziplist, zipmap),
  rdb_encoder.py (`RdbEncoder`: values to bytes), rdb_values.py (reading one value) and
  rdb_loader.py (`RdbLoader`: a whole file; the decoder of values left packed).
- snapshot.py: the point-in-time snapshot without fork. It walks the keyspace in small
  steps between commands and, while it runs, serializes a key's old value before any
  access can change it (Dragonfly's design). SAVE, BGSAVE, save points, SHUTDOWN and the
  AOF rewrite all use it; what it writes is decided by its encoder (RDB, or AOF commands).
- aof.py: the multi-part append-only file: its files, writing, fsync policies; with
  aof_propagate.py (propagation of executed writes), aof_resp.py (commands as RESP),
  aof_manifest.py, aof_encoder.py (a base as commands), propagate_rewrites.py (what a
  write is propagated as), aof_rewrite.py and aof_load.py (replay at start-up),
  aof_upgrade.py (a Redis < 7.0 file).
- manager.py: `Persistence`, what the server owns: configuration, save points, the
  commands' entry points, INFO fields; loading.py: loading at start-up.
- payload_check.py: RESTORE's integrity checks (blob_validation.py: Redis's validators of
  the compact blobs; kept_corrupt.py: values kept unsanitized, as Redis keeps them).
- child.py, debug_load.py, errors.py, files.py: the fork child's stand-in, DEBUG LOADAOF and
  REPLICATE, the load error, the file steps every writer shares.
"""
