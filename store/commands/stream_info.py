"""XINFO STREAM / GROUPS / CONSUMERS / HELP (Redis 7.0 t_stream.c), including the FULL
form of XINFO STREAM.
"""

from __future__ import annotations

from typing import Any

from ..args import WRONGTYPE, int_arg
from ..clock import now_ms
from ..command_table import Family
from ..context import Client
from ..resp import Map, RedisError
from ..types.stream import MAX_ID, Stream, format_id
from .streams import _entries

COMMANDS = Family('stream', since='5.0.0')


# -- XINFO ------------------------------------------------------------------------------

XINFO_HELP = [
    'XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'CONSUMERS <key> <groupname>',
    '    Show consumers of <groupname>.',
    'GROUPS <key>',
    '    Show the stream consumer groups.',
    'STREAM <key> [FULL [COUNT <count>]',
    '    Show information about the stream.',
    'HELP',
    '    Print this help.',
]


def _xinfo_stream_obj(c: Client, key: bytes) -> Stream:
    v = c.ks.read(c.db, key)
    if v is None:
        raise RedisError('ERR no such key')
    if type(v) is not Stream:
        raise WRONGTYPE
    return v


def _radix_nodes(s: Stream) -> int:
    # rax internal nodes cannot be reproduced; a plausible figure for a tree of keys
    k = s.node_count()
    return k + 1 if k else 1


XINFO = COMMANDS.container(
    'xinfo', -2, categories='@slow', summary='A container for stream introspection commands'
)


@XINFO.subcommand(
    'stream',
    -3,
    flags='readonly',
    keys=(2, 2, 1),
    categories='@read @stream @slow',
    since='5.0.0',
    summary='Get information about a stream',
    key_specs='RO access; index 2; range 0 1 0',
)
def xinfo_stream(c: Client, args: list[bytes]) -> Any:
    s = _xinfo_stream_obj(c, args[2])
    full = False
    count = 10
    rest = args[3:]
    if rest:
        if (
            rest[0].lower() != b'full'
            or len(rest) == 2
            or len(rest) > 3
            or (len(rest) == 3 and rest[1].lower() != b'count')
        ):
            raise RedisError(
                f"ERR unknown subcommand or wrong number of arguments for "
                f"'{args[1].decode('utf-8', 'replace')}'. Try XINFO HELP."
            )
        full = True
        if len(rest) > 1:
            count = int_arg(rest[2])
            if count < 0:
                count = 10
    items: list[tuple[bytes, Any]] = [
        (b'length', s.length),
        (b'radix-tree-keys', s.node_count()),
        (b'radix-tree-nodes', _radix_nodes(s)),
        (b'last-generated-id', format_id(s.last_id)),
        (b'max-deleted-entry-id', format_id(s.max_deleted)),
        (b'entries-added', s.entries_added),
        (b'recorded-first-entry-id', format_id(s.first_id)),
    ]
    if not full:
        first = s.range(0, MAX_ID, 1)
        last = s.range(0, MAX_ID, 1, rev=True)
        items += [
            (b'groups', len(s.groups)),
            (b'first-entry', _entries(first)[0] if first else None),
            (b'last-entry', _entries(last)[0] if last else None),
        ]
        return Map(items)
    items.append((b'entries', _entries(s.range(0, MAX_ID, count))))
    groups = []
    for name, g in sorted(s.groups.items()):
        pel: list[list[bytes | int]] = []
        for i, nack in g.pel.iter_from(0):
            if count and len(pel) >= count:
                break
            pel.append([format_id(i), nack.consumer.name, nack.delivery_time, nack.delivery_count])
        consumers = []
        for cname, cons in sorted(g.consumers.items()):
            cpel: list[list[bytes | int]] = []
            for i, nack in cons.pel.iter_from(0):
                if count and len(cpel) >= count:
                    break
                cpel.append([format_id(i), nack.delivery_time, nack.delivery_count])
            consumers.append(
                Map(
                    [
                        (b'name', cname),
                        (b'seen-time', cons.seen_time),
                        (b'pel-count', len(cons.pel)),
                        (b'pending', cpel),
                    ]
                )
            )
        groups.append(
            Map(
                [
                    (b'name', name),
                    (b'last-delivered-id', format_id(g.last_id)),
                    (b'entries-read', None if g.entries_read == -1 else g.entries_read),
                    (b'lag', s.group_lag(g)),
                    (b'pel-count', len(g.pel)),
                    (b'pending', pel),
                    (b'consumers', consumers),
                ]
            )
        )
    items.append((b'groups', groups))
    return Map(items)


@XINFO.subcommand(
    'groups',
    3,
    flags='readonly',
    keys=(2, 2, 1),
    categories='@read @stream @slow',
    since='5.0.0',
    summary='List the consumer groups of a stream',
    key_specs='RO access; index 2; range 0 1 0',
)
def xinfo_groups(c: Client, args: list[bytes]) -> Any:
    s = _xinfo_stream_obj(c, args[2])
    out = []
    for name, g in sorted(s.groups.items()):
        out.append(
            Map(
                [
                    (b'name', name),
                    (b'consumers', len(g.consumers)),
                    (b'pending', len(g.pel)),
                    (b'last-delivered-id', format_id(g.last_id)),
                    (b'entries-read', None if g.entries_read == -1 else g.entries_read),
                    (b'lag', s.group_lag(g)),
                ]
            )
        )
    return out


@XINFO.subcommand(
    'consumers',
    4,
    flags='readonly',
    keys=(2, 2, 1),
    categories='@read @stream @slow',
    summary='List the consumers in a consumer group',
    tips='nondeterministic_output',
    key_specs='RO access; index 2; range 0 1 0',
)
def xinfo_consumers(c: Client, args: list[bytes]) -> Any:
    s = _xinfo_stream_obj(c, args[2])
    g = s.groups.get(args[3])
    if g is None:
        raise RedisError(
            f"NOGROUP No such consumer group '{args[3].decode('utf-8', 'replace')}'"
            f" for key name '{args[2].decode('utf-8', 'replace')}'"
        )
    now = now_ms()
    return [
        Map([(b'name', name), (b'pending', len(cons.pel)), (b'idle', max(now - cons.seen_time, 0))])
        for name, cons in sorted(g.consumers.items())
    ]


@XINFO.subcommand(
    'help',
    2,
    flags='loading stale',
    categories='@stream @slow',
    summary='Show helpful text about the different subcommands',
)
def xinfo_help(c: Client, args: list[bytes]) -> Any:
    return XINFO_HELP
