"""Keyspace-event classes and the `notify-keyspace-events` flag string.

The bit values and both string conversions follow Redis 7.0's notify.c, so CONFIG GET
renders a flag set back exactly as redis-server does. Commands call
`Keyspace.notify(cls, event, db, key)`; that call returns at once when no class in `cls` is
enabled, so events cost nothing while notifications are off.
"""

KEYSPACE = 1 << 0    # K
KEYEVENT = 1 << 1    # E
GENERIC = 1 << 2     # g
STRING = 1 << 3      # $
LIST = 1 << 4        # l
SET = 1 << 5         # s
HASH = 1 << 6        # h
ZSET = 1 << 7        # z
EXPIRED = 1 << 8     # x
EVICTED = 1 << 9     # e
STREAM = 1 << 10     # t
KEY_MISS = 1 << 11   # m (not part of A, as in Redis)
MODULE = 1 << 13     # d
NEW = 1 << 14        # n (not part of A, as in Redis)
ALL = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE

_CLASS_CHARS = {
    'A': ALL, 'g': GENERIC, '$': STRING, 'l': LIST, 's': SET, 'h': HASH, 'z': ZSET,
    'x': EXPIRED, 'e': EVICTED, 'K': KEYSPACE, 'E': KEYEVENT, 't': STREAM,
    'm': KEY_MISS, 'd': MODULE, 'n': NEW,
}


def flags_from_string(s):
    """keyspaceEventsStringToFlags: the bit set, or None for an unknown character."""
    flags = 0
    for ch in s:
        bit = _CLASS_CHARS.get(ch)
        if bit is None:
            return None
        flags |= bit
    return flags


def flags_to_string(flags):
    """keyspaceEventsFlagsToString: the canonical rendering CONFIG GET returns."""
    out = []
    if flags & ALL == ALL:
        out.append('A')
    else:
        for ch, bit in (('g', GENERIC), ('$', STRING), ('l', LIST), ('s', SET), ('h', HASH),
                        ('z', ZSET), ('x', EXPIRED), ('e', EVICTED), ('t', STREAM),
                        ('d', MODULE), ('n', NEW)):
            if flags & bit:
                out.append(ch)
    if flags & KEYSPACE:
        out.append('K')
    if flags & KEYEVENT:
        out.append('E')
    if flags & KEY_MISS:
        out.append('m')
    return ''.join(out)
