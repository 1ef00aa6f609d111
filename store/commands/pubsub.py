"""Pub/sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH, PUBSUB.

Replies follow Redis 7.0: one confirmation frame per argument ([kind, channel, count], a
push in RESP3), sent as one Raw reply so EXEC and pipelines see exactly Redis's bytes. The
subscribe-mode rules for RESP2 are in connection.py (`pubsub_ok` in command_table.py); the
machinery is in store/pubsub.
"""

from typing import Any

from ..command_table import Family
from ..context import Client
from ..glob import compile_glob
from ..pubsub import CHANNELS, PATTERNS, SHARD_CHANNELS
from ..pubsub.dispatch import DEFERRED
from ..resp import RedisError

COMMANDS = Family('pubsub', since='2.0.0')


@COMMANDS.command(
    'subscribe',
    -2,
    flags='pubsub noscript loading stale',
    categories='@pubsub @slow',
    summary='Listen for messages published to the given channels',
)
def subscribe(c: Client, args: list[bytes]) -> Any:
    return c.server.pubsub.subscribe(c, CHANNELS, args[1:])


@COMMANDS.command(
    'psubscribe',
    -2,
    flags='pubsub noscript loading stale',
    categories='@pubsub @slow',
    summary='Listen for messages published to channels matching the given patterns',
)
def psubscribe(c: Client, args: list[bytes]) -> Any:
    return c.server.pubsub.subscribe(c, PATTERNS, args[1:])


@COMMANDS.command(
    'ssubscribe',
    -2,
    flags='pubsub noscript loading stale',
    keys=(1, -1, 1),
    categories='@pubsub @slow',
    since='7.0.0',
    summary='Listen for messages published to the given shard channels',
    key_specs='not_key; index 1; range -1 1 0',
)
def ssubscribe(c: Client, args: list[bytes]) -> Any:
    return c.server.pubsub.subscribe(c, SHARD_CHANNELS, args[1:])


@COMMANDS.command(
    'unsubscribe',
    -1,
    flags='pubsub noscript loading stale',
    categories='@pubsub @slow',
    summary='Stop listening for messages posted to the given channels',
)
def unsubscribe(c: Client, args: list[bytes]) -> Any:
    return c.server.pubsub.unsubscribe(c, CHANNELS, args[1:] or None)


@COMMANDS.command(
    'punsubscribe',
    -1,
    flags='pubsub noscript loading stale',
    categories='@pubsub @slow',
    summary='Stop listening for messages posted to channels matching the given patterns',
)
def punsubscribe(c: Client, args: list[bytes]) -> Any:
    return c.server.pubsub.unsubscribe(c, PATTERNS, args[1:] or None)


@COMMANDS.command(
    'sunsubscribe',
    -1,
    flags='pubsub noscript loading stale',
    keys=(1, -1, 1),
    categories='@pubsub @slow',
    since='7.0.0',
    summary='Stop listening for messages posted to the given shard channels',
    key_specs='not_key; index 1; range -1 1 0',
)
def sunsubscribe(c: Client, args: list[bytes]) -> Any:
    return c.server.pubsub.unsubscribe(c, SHARD_CHANNELS, args[1:] or None)


@COMMANDS.command(
    'publish',
    3,
    flags='pubsub loading stale fast',
    categories='@pubsub @fast',
    summary='Post a message to a channel',
)
def publish(c: Client, args: list[bytes]) -> Any:
    return _publish(c, args, CHANNELS)


@COMMANDS.command(
    'spublish',
    3,
    flags='pubsub loading stale fast',
    keys=(1, 1, 1),
    categories='@pubsub @fast',
    since='7.0.0',
    summary='Post a message to a shard channel',
    key_specs='not_key; index 1; range 0 1 0',
)
def spublish(c: Client, args: list[bytes]) -> Any:
    return _publish(c, args, SHARD_CHANNELS)


def _publish(c: Client, args: list[bytes], kind: int) -> Any:
    """PUBLISH / SPUBLISH: delivered here, and to the replicas, whose subscribers get it
    too (a publish held for backpressure is propagated when it runs). A cluster node
    sends it over the bus instead (clusterPropagatePublish): PUBLISH to every node,
    SPUBLISH to the nodes of its shard."""
    n = c.server.pubsub.publish_command(c, args, kind)
    if n is DEFERRED:
        return n
    cluster = c.server.cluster
    if cluster is not None:
        cluster.propagate_publish(args[1], args[2], kind == SHARD_CHANNELS)
    elif c.server.replication.active:
        c.server.persistence.aof.to_replicas(c.db, args)
    return n


# -- PUBSUB -----------------------------------------------------------------------------------


def _syntax_error(args: list[bytes]) -> RedisError:
    return RedisError(
        f"ERR unknown subcommand or wrong number of arguments for "
        f"'{args[1].decode('utf-8', 'replace')[:128]}'. Try PUBSUB HELP."
    )


def _channel_list(c: Client, args: list[bytes], kind: int) -> list[bytes]:
    if len(args) > 3:
        raise _syntax_error(args)
    keys = c.server.pubsub.store.keys(kind)
    if len(args) == 3:
        glob = compile_glob(args[2])
        return [k for k in keys if glob.match(k)]
    return list(keys)


def _numsub(c: Client, args: list[bytes], kind: int) -> list[bytes | int]:
    store = c.server.pubsub.store
    out: list[bytes | int] = []
    for ch in args[2:]:
        out.append(ch)
        out.append(store.count_subscribers(ch, kind))
    return out


PUBSUB = COMMANDS.container(
    'pubsub', -2, categories='@slow', since='2.8.0', summary='A container for Pub/Sub commands'
)


@PUBSUB.subcommand(
    'channels',
    -2,
    flags='pubsub loading stale',
    categories='@pubsub @slow',
    since='2.8.0',
    summary='List active channels',
)
def pubsub_channels(c: Client, args: list[bytes]) -> list[bytes]:
    return _channel_list(c, args, CHANNELS)


@PUBSUB.subcommand(
    'shardchannels',
    -2,
    flags='pubsub loading stale',
    categories='@pubsub @slow',
    since='7.0.0',
    summary='List active shard channels',
)
def pubsub_shardchannels(c: Client, args: list[bytes]) -> list[bytes]:
    return _channel_list(c, args, SHARD_CHANNELS)


@PUBSUB.subcommand(
    'numsub',
    -2,
    flags='pubsub loading stale',
    categories='@pubsub @slow',
    since='2.8.0',
    summary='Get the count of subscribers for channels',
)
def pubsub_numsub(c: Client, args: list[bytes]) -> list[bytes | int]:
    return _numsub(c, args, CHANNELS)


@PUBSUB.subcommand(
    'shardnumsub',
    -2,
    flags='pubsub loading stale',
    categories='@pubsub @slow',
    since='7.0.0',
    summary='Get the count of subscribers for shard channels',
)
def pubsub_shardnumsub(c: Client, args: list[bytes]) -> list[bytes | int]:
    return _numsub(c, args, SHARD_CHANNELS)


@PUBSUB.subcommand(
    'numpat',
    2,
    flags='pubsub loading stale',
    categories='@pubsub @slow',
    since='2.8.0',
    summary='Get the count of unique patterns pattern subscriptions',
)
def pubsub_numpat(c: Client, args: list[bytes]) -> Any:
    return c.server.pubsub.store.counts[PATTERNS]


HELP = [
    'PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'CHANNELS [<pattern>]',
    "    Return the currently active channels matching a <pattern> (default: '*').",
    'NUMPAT',
    '    Return number of subscriptions to patterns.',
    'NUMSUB [<channel> ...]',
    '    Return the number of subscribers for the specified channels, excluding',
    '    pattern subscriptions(default: no channels).',
    'SHARDCHANNELS [<pattern>]',
    '    Return the currently active shard level channels matching a <pattern> (default: \'*\').',
    'SHARDNUMSUB [<shardchannel> ...]',
    '    Return the number of subscribers for the specified shard level channel(s)',
    'HELP',
    '    Prints this help.',
]


@PUBSUB.subcommand(
    'help',
    2,
    flags='loading stale',
    categories='@slow',
    since='6.2.0',
    summary='Show helpful text about the different subcommands',
)
def pubsub_help(c: Client, args: list[bytes]) -> list[str]:
    return HELP


_SUB = dict(categories='@pubsub @slow', group='pubsub')
_CHAN = 'pubsub noscript loading stale'
