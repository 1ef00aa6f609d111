"""OBJECT ENCODING / FREQ / IDLETIME / REFCOUNT / HELP (Redis 7.0 object.c): what a stored
value looks like inside, answered from the value-type registry (store/types/)."""

from __future__ import annotations

from typing import Any

from ..command_table import Family
from ..context import Client
from ..resp import RedisError
from ..types.strenc import value_encoding

INT_MAX = 2**31 - 1
OBJ_SHARED_REFCOUNT = INT_MAX
OBJ_SHARED_INTEGERS = 10000

COMMANDS = Family('generic')


E_LFU_IDLE = (
    'ERR An LFU maxmemory policy is selected, idle time not tracked. Please note '
    'that when switching between policies at runtime LRU and LFU data will take '
    'some time to adjust.'
)
E_NOT_LFU = (
    'ERR An LFU maxmemory policy is not selected, access frequency not tracked. '
    'Please note that when switching between policies at runtime LRU and LFU data '
    'will take some time to adjust.'
)
OBJECT_HELP = [
    'OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'ENCODING <key>',
    '    Return the kind of internal representation used in order to store the value',
    '    associated with a <key>.',
    'FREQ <key>',
    '    Return the access frequency index of the <key>. The returned integer is',
    '    proportional to the logarithm of the recent access frequency of the key.',
    'IDLETIME <key>',
    '    Return the idle time of the <key>, that is the approximated number of',
    '    seconds elapsed since the last access to the key.',
    'REFCOUNT <key>',
    '    Return the number of references of the value associated with the specified',
    '    <key>.',
    'HELP',
    '    Prints this help.',
]


OBJECT = COMMANDS.container(
    'object',
    -2,
    categories='@slow',
    since='2.2.3',
    summary='A container for object introspection commands',
)


def _object_lookup(c: Client, key: bytes) -> Any:
    """objectCommandLookup: counts hits/misses but raises no keymiss event."""
    ks = c.ks
    value = ks.lookup_notouch(c.db, key)
    if value is None:
        ks.misses += 1
    else:
        ks.hits += 1
    return value


def _lfu(c: Client) -> bool:
    return 'lfu' in c.server.config['maxmemory-policy']


@OBJECT.subcommand(
    'encoding',
    3,
    flags='readonly',
    keys=(2, 2, 1),
    categories='@keyspace @read @slow',
    tips='nondeterministic_output',
    summary='Inspect the internal encoding of a Redis object',
    key_specs='RO; index 2; range 0 1 0',
)
def object_encoding(c: Client, args: list[bytes]) -> Any:
    value = _object_lookup(c, args[2])
    return None if value is None else value_encoding(c.ks, c.db, args[2], value).encode()


@OBJECT.subcommand(
    'refcount',
    3,
    flags='readonly',
    keys=(2, 2, 1),
    categories='@keyspace @read @slow',
    tips='nondeterministic_output',
    summary='Get the number of references to the value of the key',
    key_specs='RO; index 2; range 0 1 0',
)
def object_refcount(c: Client, args: list[bytes]) -> Any:
    value = _object_lookup(c, args[2])
    if value is None:
        return None
    # Redis shares the objects of small integers 0..9999 (refcount INT_MAX) unless
    # maxmemory is set with an LRU/LFU policy (MAXMEMORY_FLAG_NO_SHARED_INTEGERS).
    cfg = c.server.config
    sharing = not (cfg['maxmemory'] and ('lru' in cfg['maxmemory-policy'] or _lfu(c)))
    if (
        type(value) is bytes
        and sharing
        and value_encoding(c.ks, c.db, args[2], value) == 'int'
        and 0 <= int(value) < OBJ_SHARED_INTEGERS
    ):
        return OBJ_SHARED_REFCOUNT
    return 1


@OBJECT.subcommand(
    'idletime',
    3,
    flags='readonly',
    keys=(2, 2, 1),
    categories='@keyspace @read @slow',
    tips='nondeterministic_output',
    summary='Get the time since a Redis object was last accessed',
    key_specs='RO; index 2; range 0 1 0',
)
def object_idletime(c: Client, args: list[bytes]) -> Any:
    value = _object_lookup(c, args[2])
    if value is None:
        return None
    if _lfu(c):
        raise RedisError(E_LFU_IDLE)
    return c.ks.idle_ms(c.db, args[2]) // 1000


@OBJECT.subcommand(
    'freq',
    3,
    flags='readonly',
    keys=(2, 2, 1),
    categories='@keyspace @read @slow',
    tips='nondeterministic_output',
    since='4.0.0',
    summary='Get the logarithmic access frequency counter of a Redis object',
    key_specs='RO; index 2; range 0 1 0',
)
def object_freq(c: Client, args: list[bytes]) -> Any:
    value = _object_lookup(c, args[2])
    if value is None:
        return None
    if not _lfu(c):
        raise RedisError(E_NOT_LFU)
    return c.ks.frequency(c.db, args[2])


@OBJECT.subcommand(
    'help',
    2,
    flags='loading stale',
    categories='@keyspace @slow',
    since='6.2.0',
    summary='Show helpful text about the different subcommands',
)
def object_help(c: Client, args: list[bytes]) -> Any:
    return OBJECT_HELP
