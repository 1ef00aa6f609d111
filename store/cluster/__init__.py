"""Redis Cluster mode: a node of a Redis Cluster, on Redis 7.0's own cluster bus, so that
nodes of this server and of redis-server form one cluster, driven by the real
`redis-cli --cluster` and used by the cluster clients people already have.

The modules, bottom to top:

- messages.py: the bus's packets, byte for byte as cluster.h lays them out.
- node.py: a node as this node sees it; its CLUSTER NODES line.
- state.py: the node table, the slot table, epochs, the cluster's state (no I/O).
- nodes_conf.py: nodes.conf, locked, loaded at start, rewritten atomically on change.
- bus.py: the TCP links between nodes, framing.
- gossip.py: what is sent and how a packet is acted on; the 100 ms cron; failure
  detection.
- failover.py: replica elections, manual failover, replica migration.
- routing.py: which node serves a command (-MOVED, -ASK, -CROSSSLOT, ...).
- service.py: `Cluster`, what the server holds as `server.cluster` in cluster mode.

The shard cut is the same as the keyspace's: a key's slot is CRC16 of its {hashtag} mod
16384 (store/db_slice), and the shards keep database 0's keys by slot, so a node lists,
counts and deletes a slot's keys without a scan. More cores on one machine means more
nodes (scripts/cluster starts a local cluster).
"""
