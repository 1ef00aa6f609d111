"""Memory: what the keyspace and the clients use (sizes.py, the size model the keyspace
charges keys with; report.py, the totals INFO, MEMORY and eviction read) and how the
keyspace gets back under `maxmemory` (eviction.py)."""
