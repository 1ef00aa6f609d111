"""Pub/sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH, PUBSUB.

Replies follow Redis 7.0: one confirmation frame per argument ([kind, channel, count], a
push in RESP3), sent as one Raw reply so EXEC and pipelines see exactly Redis's bytes. The
subscribe-mode rules for RESP2 are in connection.py (`pubsub_ok` in command_table.py); the
machinery is in store/pubsub.
"""

from ..command_table import Command, subcommand
from ..pubsub import CHANNELS, PATTERNS, SHARD_CHANNELS
from ..pubsub.glob import compile_glob
from ..resp import RedisError


def subscribe(c, args):
    return c.server.pubsub.subscribe(c, CHANNELS, args[1:])


def psubscribe(c, args):
    return c.server.pubsub.subscribe(c, PATTERNS, args[1:])


def ssubscribe(c, args):
    return c.server.pubsub.subscribe(c, SHARD_CHANNELS, args[1:])


def unsubscribe(c, args):
    return c.server.pubsub.unsubscribe(c, CHANNELS, args[1:] or None)


def punsubscribe(c, args):
    return c.server.pubsub.unsubscribe(c, PATTERNS, args[1:] or None)


def sunsubscribe(c, args):
    return c.server.pubsub.unsubscribe(c, SHARD_CHANNELS, args[1:] or None)


def publish(c, args):
    return c.server.pubsub.publish_command(c, args, CHANNELS)


def spublish(c, args):
    return c.server.pubsub.publish_command(c, args, SHARD_CHANNELS)


# -- PUBSUB -----------------------------------------------------------------------------------

def _syntax_error(args):
    return RedisError(f"ERR unknown subcommand or wrong number of arguments for "
                      f"'{args[1].decode('utf-8', 'replace')[:128]}'. Try PUBSUB HELP.")


def _channel_list(c, args, kind):
    if len(args) > 3:
        raise _syntax_error(args)
    keys = c.server.pubsub.store.keys(kind)
    if len(args) == 3:
        glob = compile_glob(args[2])
        return [k for k in keys if glob.match(k)]
    return list(keys)


def _numsub(c, args, kind):
    store = c.server.pubsub.store
    out = []
    for ch in args[2:]:
        out.append(ch)
        out.append(store.count_subscribers(ch, kind))
    return out


def pubsub_channels(c, args):
    return _channel_list(c, args, CHANNELS)


def pubsub_shardchannels(c, args):
    return _channel_list(c, args, SHARD_CHANNELS)


def pubsub_numsub(c, args):
    return _numsub(c, args, CHANNELS)


def pubsub_shardnumsub(c, args):
    return _numsub(c, args, SHARD_CHANNELS)


def pubsub_numpat(c, args):
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
    '    Return the currently active shard level channels matching a <pattern> '
    "(default: '*').",
    'SHARDNUMSUB [<shardchannel> ...]',
    '    Return the number of subscribers for the specified shard level channel(s)',
    'HELP',
    '    Prints this help.',
]


def pubsub_help(c, args):
    return HELP


def pubsub(c, args):
    return subcommand(PUBSUB, c, args)


_SUB = dict(categories='@pubsub @slow', group='pubsub')
_CHAN = 'pubsub noscript loading stale'

PUBSUB = Command('pubsub', pubsub, -2, '', categories='@slow', group='pubsub',
                 since='2.8.0', subcommands=[
                     Command('channels', pubsub_channels, -2, 'pubsub loading stale', **_SUB),
                     Command('numpat', pubsub_numpat, 2, 'pubsub loading stale', **_SUB),
                     Command('numsub', pubsub_numsub, -2, 'pubsub loading stale', **_SUB),
                     Command('shardchannels', pubsub_shardchannels, -2,
                             'pubsub loading stale', since='7.0.0', **_SUB),
                     Command('shardnumsub', pubsub_shardnumsub, -2, 'pubsub loading stale',
                             since='7.0.0', **_SUB),
                     Command('help', pubsub_help, 2, 'loading stale', categories='@slow',
                             group='pubsub', since='6.2.0'),
                 ])

COMMANDS = [
    Command('subscribe', subscribe, -2, _CHAN, **_SUB, since='2.0.0'),
    Command('unsubscribe', unsubscribe, -1, _CHAN, **_SUB, since='2.0.0'),
    Command('psubscribe', psubscribe, -2, _CHAN, **_SUB, since='2.0.0'),
    Command('punsubscribe', punsubscribe, -1, _CHAN, **_SUB, since='2.0.0'),
    Command('ssubscribe', ssubscribe, -2, _CHAN, keys=(1, -1, 1), **_SUB, since='7.0.0'),
    Command('sunsubscribe', sunsubscribe, -1, _CHAN, keys=(1, -1, 1), **_SUB,
            since='7.0.0'),
    Command('publish', publish, 3, 'pubsub loading stale fast', categories='@pubsub @fast',
            group='pubsub', since='2.0.0'),
    Command('spublish', spublish, 3, 'pubsub loading stale fast', keys=(1, 1, 1),
            categories='@pubsub @fast', group='pubsub', since='7.0.0'),
    PUBSUB,
]
