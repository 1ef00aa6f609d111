"""MEMORY USAGE / STATS / DOCTOR / MALLOC-STATS / PURGE / HELP (Redis 7.0 object.c's
memoryCommand), answered from the memory accounting (store/memory/report.py) and the size
model keys are charged with (store/memory/sizes.py)."""

from typing import Any

from ..args import SYNTAX, int_arg, lower
from ..command_table import Family
from ..context import Client
from ..memory import report
from ..memory.sizes import KEY_OVERHEAD, bytes_size, value_size
from ..resp import OK, Verbatim

COMMANDS = Family('server', since='4.0.0')

DEFAULT_SAMPLES = 5  # OBJ_COMPUTE_SIZE_DEF_SAMPLES

MEMORY_HELP = [
    'MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'DOCTOR',
    '    Return memory problems reports.',
    'MALLOC-STATS',
    '    Return internal statistics report from the memory allocator.',
    'PURGE',
    '    Attempt to purge dirty pages for reclamation by the allocator.',
    'STATS',
    '    Return information about the memory usage of the server.',
    'USAGE <key> [SAMPLES <count>]',
    '    Return memory in bytes used by <key> and its value. Nested values are',
    '    sampled up to <count> times (default: 5, 0 means sample all).',
    'HELP',
    '    Prints this help.',
]

# The reply of a Redis built without jemalloc (zmalloc's libc build), which this server
# reports being (INFO mem_allocator:libc).
NO_MALLOC_STATS = b'Stats not supported for the current allocator'

_ALL_SHARDS = 'request_policy:all_shards'

MEMORY = COMMANDS.container(
    'memory',
    -2,
    categories='@slow',
    summary='A container for memory diagnostics commands',
)


# Declared in the order redis-server 7.0.15 lists them (COMMAND INFO / DOCS MEMORY).
@MEMORY.subcommand(
    'doctor',
    2,
    categories='@slow',
    tips=f'nondeterministic_output {_ALL_SHARDS} response_policy:special',
    summary='Outputs memory problems report',
)
def memory_doctor(c: Client, args: list[bytes]) -> Any:
    return Verbatim(report.doctor(c.server).encode())


@MEMORY.subcommand(
    'usage',
    -3,
    flags='readonly',
    keys=(2, 2, 1),
    # read without an access (RO, no `access`): it neither touches the key's LRU/LFU
    # information nor expires it, as Redis's dictFind does not
    key_specs='RO; index 2; range 0 1 0',
    categories='@read @slow',
    summary='Estimate the memory usage of a key',
)
def memory_usage(c: Client, args: list[bytes]) -> Any:
    """The key's charge as the keyspace counts it (sizes.py): the key's bytes object and
    its dict entries plus the value, aggregates extrapolated from `samples` elements (0:
    all of them). Options are checked before the key is looked up, as Redis does, and a
    key past its deadline but not yet deleted still has a size (no lazy expiry here)."""
    samples = DEFAULT_SAMPLES
    i = 3
    while i < len(args):
        if lower(args[i]) == 'samples' and i + 1 < len(args):
            samples = int_arg(args[i + 1])
            if samples < 0:
                raise SYNTAX
            i += 2
        else:
            raise SYNTAX
    key = args[2]
    value = c.ks.materialize(c.db, key)
    if value is None:
        return None
    return bytes_size(len(key)) + KEY_OVERHEAD + value_size(value, samples)


@MEMORY.subcommand(
    'malloc-stats',
    2,
    categories='@slow',
    tips=f'nondeterministic_output {_ALL_SHARDS} response_policy:special',
    summary='Show allocator internal stats',
)
def memory_malloc_stats(c: Client, args: list[bytes]) -> Any:
    return NO_MALLOC_STATS


@MEMORY.subcommand(
    'help',
    2,
    flags='loading stale',
    categories='@slow',
    summary='Show helpful text about the different subcommands',
)
def memory_help(c: Client, args: list[bytes]) -> Any:
    return MEMORY_HELP


@MEMORY.subcommand(
    'purge',
    2,
    categories='@slow',
    tips=f'{_ALL_SHARDS} response_policy:all_succeeded',
    summary='Ask the allocator to release memory',
)
def memory_purge(c: Client, args: list[bytes]) -> Any:
    report.purge()
    return OK


@MEMORY.subcommand(
    'stats',
    2,
    categories='@slow',
    tips=f'nondeterministic_output {_ALL_SHARDS} response_policy:special',
    summary='Show memory usage details',
)
def memory_stats(c: Client, args: list[bytes]) -> Any:
    return report.stats(c.server)
