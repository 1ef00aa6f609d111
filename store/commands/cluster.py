"""CLUSTER, READONLY, READWRITE and ASKING on a server without cluster support: every one
of them answers Redis's "ERR This instance has cluster support disabled" (cluster.c's
check before anything else, CLUSTER HELP included), so clients that probe for cluster
mode get the answer a standalone redis-server gives. The subcommands are declared as
Redis 7.0 declares them (COMMAND INFO and DOCS); an unknown one or a wrong number of
arguments gets the container's usual errors first, as in Redis.
"""

from typing import Any, NoReturn

from ..command_table import Family
from ..resp import RedisError

COMMANDS = Family('cluster', since='3.0.0')

DISABLED = RedisError('ERR This instance has cluster support disabled')


def disabled(c: Any, args: list[bytes]) -> NoReturn:
    raise DISABLED


CLUSTER = COMMANDS.container(
    'cluster', -2, categories='@slow', summary='A container for cluster commands'
)

# name, arity, flags, ACL categories, tips, since, summary
SUBCOMMANDS = [
    (
        'addslots',
        -3,
        'admin stale no_async_loading',
        '@admin @slow @dangerous',
        '',
        '3.0.0',
        'Assign new hash slots to receiving node',
    ),
    (
        'addslotsrange',
        -4,
        'admin stale no_async_loading',
        '@admin @slow @dangerous',
        '',
        '7.0.0',
        'Assign new hash slots to receiving node',
    ),
    (
        'bumpepoch',
        2,
        'admin stale no_async_loading',
        '@admin @slow @dangerous',
        'nondeterministic_output',
        '3.0.0',
        'Advance the cluster config epoch',
    ),
    (
        'count-failure-reports',
        3,
        'admin stale',
        '@admin @slow @dangerous',
        'nondeterministic_output',
        '3.0.0',
        'Return the number of failure reports active for a given node',
    ),
    (
        'countkeysinslot',
        3,
        'stale',
        '@slow',
        '',
        '3.0.0',
        'Return the number of local keys in the specified hash slot',
    ),
    (
        'delslots',
        -3,
        'admin stale no_async_loading',
        '@admin @slow @dangerous',
        '',
        '3.0.0',
        'Set hash slots as unbound in receiving node',
    ),
    (
        'delslotsrange',
        -4,
        'admin stale no_async_loading',
        '@admin @slow @dangerous',
        '',
        '7.0.0',
        'Set hash slots as unbound in receiving node',
    ),
    (
        'failover',
        -2,
        'admin stale no_async_loading',
        '@admin @slow @dangerous',
        '',
        '3.0.0',
        'Forces a replica to perform a manual failover of its master.',
    ),
    (
        'flushslots',
        2,
        'admin stale no_async_loading',
        '@admin @slow @dangerous',
        '',
        '3.0.0',
        "Delete a node's own slots information",
    ),
    (
        'forget',
        3,
        'admin stale no_async_loading',
        '@admin @slow @dangerous',
        '',
        '3.0.0',
        'Remove a node from the nodes table',
    ),
    (
        'getkeysinslot',
        4,
        'stale',
        '@slow',
        'nondeterministic_output',
        '3.0.0',
        'Return local key names in the specified hash slot',
    ),
    (
        'help',
        2,
        'loading stale',
        '@slow',
        '',
        '5.0.0',
        'Show helpful text about the different subcommands',
    ),
    (
        'info',
        2,
        'stale',
        '@slow',
        'nondeterministic_output',
        '3.0.0',
        'Provides info about Redis Cluster node state',
    ),
    ('keyslot', 3, 'stale', '@slow', '', '3.0.0', 'Returns the hash slot of the specified key'),
    (
        'links',
        2,
        'stale',
        '@slow',
        'nondeterministic_output',
        '7.0.0',
        'Returns a list of all TCP links to and from peer nodes in cluster',
    ),
    (
        'meet',
        -4,
        'admin stale no_async_loading',
        '@admin @slow @dangerous',
        '',
        '3.0.0',
        'Force a node cluster to handshake with another node',
    ),
    ('myid', 2, 'stale', '@slow', '', '3.0.0', 'Return the node id'),
    (
        'nodes',
        2,
        'stale',
        '@slow',
        'nondeterministic_output',
        '3.0.0',
        'Get Cluster config for the node',
    ),
    (
        'replicas',
        3,
        'admin stale',
        '@admin @slow @dangerous',
        'nondeterministic_output',
        '5.0.0',
        'List replica nodes of the specified master node',
    ),
    (
        'replicate',
        3,
        'admin stale no_async_loading',
        '@admin @slow @dangerous',
        '',
        '3.0.0',
        'Reconfigure a node as a replica of the specified master node',
    ),
    (
        'reset',
        -2,
        'admin noscript stale',
        '@admin @slow @dangerous',
        '',
        '3.0.0',
        'Reset a Redis Cluster node',
    ),
    (
        'saveconfig',
        2,
        'admin stale no_async_loading',
        '@admin @slow @dangerous',
        '',
        '3.0.0',
        'Forces the node to save cluster state on disk',
    ),
    (
        'set-config-epoch',
        3,
        'admin stale no_async_loading',
        '@admin @slow @dangerous',
        '',
        '3.0.0',
        'Set the configuration epoch in a new node',
    ),
    (
        'setslot',
        -4,
        'admin stale no_async_loading',
        '@admin @slow @dangerous',
        '',
        '3.0.0',
        'Bind a hash slot to a specific node',
    ),
    (
        'shards',
        2,
        'stale',
        '@slow',
        'nondeterministic_output',
        '7.0.0',
        'Get array of cluster slots to node mappings',
    ),
    (
        'slaves',
        3,
        'admin stale',
        '@admin @slow @dangerous',
        'nondeterministic_output',
        '3.0.0',
        'List replica nodes of the specified master node',
    ),
    (
        'slots',
        2,
        'stale',
        '@slow',
        'nondeterministic_output',
        '3.0.0',
        'Get array of Cluster slot to node mappings',
    ),
]
for name, arity, flags, categories, tips, since, summary in SUBCOMMANDS:
    CLUSTER.subcommand(
        name, arity, flags=flags, categories=categories, tips=tips, since=since, summary=summary
    )(disabled)

COMMANDS.command(
    'readonly',
    1,
    flags='loading stale fast',
    categories='@fast @connection',
    summary='Enables read queries for a connection to a cluster replica node',
)(disabled)
COMMANDS.command(
    'readwrite',
    1,
    flags='loading stale fast',
    categories='@fast @connection',
    summary='Disables read queries for a connection to a cluster replica node',
)(disabled)
COMMANDS.command(
    'asking',
    1,
    flags='fast',
    categories='@fast @connection',
    summary='Sent by cluster clients after an -ASK redirect',
)(disabled)
