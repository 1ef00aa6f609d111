"""LATENCY DOCTOR / GRAPH / HISTORY / LATEST / RESET / HISTOGRAM / HELP (Redis 7.0
latency.c's latencyCommand), over the events and histograms store/latency.py keeps."""

from __future__ import annotations

from typing import Any

from ..command_table import Command, Family
from ..context import Client
from ..latency import doctor, graph, histogram_usec, monitor
from ..resp import Map, RedisError, Verbatim, c_string, error_arg
from .admin import unique_commands
from .introspection import lookup_command

COMMANDS = Family('server', since='2.8.13')

LATENCY_HELP = [
    'LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'DOCTOR',
    '    Return a human readable latency analysis report.',
    'GRAPH <event>',
    '    Return an ASCII latency graph for the <event> class.',
    'HISTORY <event>',
    '    Return time-latency samples for the <event> class.',
    'LATEST',
    '    Return the latest latency samples for all events.',
    'RESET [<event> ...]',
    '    Reset latency data of one or more <event> classes.',
    '    (default: reset all data for all event classes)',
    'HISTOGRAM [COMMAND ...]',
    '    Return a cumulative distribution of latencies in the format of a histogram for the '
    'specified command names.',
    '    If no commands are specified then all histograms are replied.',
    'HELP',
    '    Prints this help.',
]

_ADMIN = 'admin noscript loading stale'
_ADMIN_CATS = '@admin @slow @dangerous'
_SPECIAL = 'nondeterministic_output request_policy:all_nodes response_policy:special'

LATENCY = COMMANDS.container(
    'latency', -2, categories='@slow', summary='A container for latency diagnostics commands'
)


def _event(b: bytes) -> str:
    """An event name as the C string the latency dict is looked up with."""
    return c_string(b).decode('utf-8', 'surrogateescape')


# Declared in the order redis-server 7.0.15 lists them (COMMAND INFO LATENCY).
@LATENCY.subcommand(
    'doctor',
    2,
    flags=_ADMIN,
    categories=_ADMIN_CATS,
    tips=_SPECIAL,
    summary='Return a human readable latency analysis report.',
)
def latency_doctor(c: Client, args: list[bytes]) -> Any:
    return Verbatim(doctor(monitor(c.server)).encode())


@LATENCY.subcommand(
    'help',
    2,
    flags='loading stale',
    categories='@slow',
    summary='Show helpful text about the different subcommands.',
)
def latency_help(c: Client, args: list[bytes]) -> Any:
    return LATENCY_HELP


@LATENCY.subcommand(
    'latest',
    2,
    flags=_ADMIN,
    categories=_ADMIN_CATS,
    tips=_SPECIAL,
    summary='Return the latest latency samples for all events.',
)
def latency_latest(c: Client, args: list[bytes]) -> Any:
    out = []
    for event, series in monitor(c.server).events.items():
        t, ms = series.latest()
        out.append([event.encode(), t, ms, series.max])
    return out


@LATENCY.subcommand(
    'history',
    3,
    flags=_ADMIN,
    categories=_ADMIN_CATS,
    tips=_SPECIAL,
    summary='Return timestamp-latency samples for the event.',
)
def latency_history(c: Client, args: list[bytes]) -> Any:
    series = monitor(c.server).events.get(_event(args[2]))
    if series is None:
        return []
    return [[t, ms] for t, ms in series.in_order()]


@LATENCY.subcommand(
    'graph',
    3,
    flags=_ADMIN,
    categories=_ADMIN_CATS,
    tips=_SPECIAL,
    summary='Return a latency graph for the event.',
)
def latency_graph(c: Client, args: list[bytes]) -> Any:
    event = _event(args[2])
    series = monitor(c.server).events.get(event)
    if series is None:
        raise RedisError(f"ERR No samples available for event '{error_arg(args[2])}'")
    return Verbatim(graph(event, series).encode())


def _cdf(hist: list[int]) -> Map:
    """fillCommandCDF: calls, and the cumulative histogram in us."""
    return Map(
        [
            (b'calls', sum(hist)),
            (b'histogram_usec', Map(histogram_usec(hist))),
        ]
    )


@LATENCY.subcommand(
    'histogram',
    -2,
    flags=_ADMIN,
    categories=_ADMIN_CATS,
    tips=_SPECIAL,
    since='7.0.0',
    summary='Return the cumulative distribution of latencies of a subset of commands or all.',
)
def latency_histogram(c: Client, args: list[bytes]) -> Any:
    """Every command with a histogram, or those named (a container names its subcommands;
    an unknown name is skipped; a name given twice answers twice)."""
    mon = monitor(c.server)
    wanted: list[Command]
    if len(args) == 2:
        wanted = unique_commands(c.server)
    else:
        wanted = [cmd for cmd in (lookup_command(c.server, a) for a in args[2:]) if cmd]
    out = []
    for cmd in wanted:
        for each in cmd.all():
            hist = mon.histogram(each)
            if hist is not None:
                out.append((each.name.encode(), _cdf(hist)))
    return Map(out)


@LATENCY.subcommand(
    'reset',
    -2,
    flags=_ADMIN,
    categories=_ADMIN_CATS,
    tips='request_policy:all_nodes response_policy:all_succeeded',
    summary='Reset latency data for one or more events.',
)
def latency_reset(c: Client, args: list[bytes]) -> Any:
    return monitor(c.server).reset_events(args[2:] if len(args) > 2 else None)
