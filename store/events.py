"""Keyspace events (Redis 7.0's notify.c): the event classes, the `notify-keyspace-events`
flag string, and `KeyspaceEvents`, the keyspace's one event sink.

The bit values and both string conversions follow notify.c, so CONFIG GET renders a flag
set back exactly as redis-server does.

The sink is where everything that wants to hear about keys hangs: pub/sub notifications
(`__keyspace@N__:key` / `__keyevent@N__:event`) and the journal (store/journal.py) today,
client-tracking invalidations next. The keyspace is built with it and calls
`notify(cls, event, db, key)` for one event and `batch` for the keys one active-expiry
step (or one eviction run) deleted in a database. Commands test `Keyspace.notify_flags`
(the union of what the publisher and the journal want, kept equal to `flags` here) before
building an event, so events cost nothing while nobody listens.
"""

from __future__ import annotations

from typing import Any, Protocol

KEYSPACE = 1 << 0  # K
KEYEVENT = 1 << 1  # E
GENERIC = 1 << 2  # g
STRING = 1 << 3  # $
LIST = 1 << 4  # l
SET = 1 << 5  # s
HASH = 1 << 6  # h
ZSET = 1 << 7  # z
EXPIRED = 1 << 8  # x
EVICTED = 1 << 9  # e
STREAM = 1 << 10  # t
KEY_MISS = 1 << 11  # m (not part of A, as in Redis)
MODULE = 1 << 13  # d
NEW = 1 << 14  # n (not part of A, as in Redis)
ALL = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE

_CLASS_CHARS = {
    'A': ALL,
    'g': GENERIC,
    '$': STRING,
    'l': LIST,
    's': SET,
    'h': HASH,
    'z': ZSET,
    'x': EXPIRED,
    'e': EVICTED,
    'K': KEYSPACE,
    'E': KEYEVENT,
    't': STREAM,
    'm': KEY_MISS,
    'd': MODULE,
    'n': NEW,
}


def flags_from_string(s: str) -> int | None:
    """keyspaceEventsStringToFlags: the bit set, or None for an unknown character."""
    flags = 0
    for ch in s:
        bit = _CLASS_CHARS.get(ch)
        if bit is None:
            return None
        flags |= bit
    return flags


def flags_to_string(flags: int) -> str:
    """keyspaceEventsFlagsToString: the canonical rendering CONFIG GET returns."""
    out: list[str] = []
    if flags & ALL == ALL:
        out.append('A')
    else:
        for ch, bit in (
            ('g', GENERIC),
            ('$', STRING),
            ('l', LIST),
            ('s', SET),
            ('h', HASH),
            ('z', ZSET),
            ('x', EXPIRED),
            ('e', EVICTED),
            ('t', STREAM),
            ('d', MODULE),
            ('n', NEW),
        ):
            if flags & bit:
                out.append(ch)
    if flags & KEYSPACE:
        out.append('K')
    if flags & KEYEVENT:
        out.append('E')
    if flags & KEY_MISS:
        out.append('m')
    return ''.join(out)


class Publisher(Protocol):
    def publish(self, channel: bytes, message: bytes) -> Any: ...

    def publish_batch(self, channel: bytes, messages: list[bytes]) -> Any: ...


class KeyspaceEvents:
    """The keyspace's event sink: publishes events by `notify-keyspace-events`
    (`publish_flags`) and journals them by `keyevent-journal-events` (`journal_flags`)."""

    def __init__(self, publisher: Publisher, journal: Any) -> None:
        self.publisher = publisher
        self.journal = journal
        self.publish_flags = 0
        self.journal_flags = 0
        self.flags = 0  # the union: what any consumer wants

    def attach(self, keyspace: Any) -> None:
        """Called once by the keyspace being built with this sink: the journal writes
        its stream into that keyspace."""
        self.journal.attach(keyspace)

    def set_flags(self, publish_flags: int, journal_flags: int) -> None:
        # Without K or E nothing is published, as in Redis.
        if not publish_flags & (KEYSPACE | KEYEVENT):
            publish_flags = 0
        self.publish_flags = publish_flags
        self.journal_flags = journal_flags
        self.flags = publish_flags | journal_flags

    def notify(
        self, cls: int, event: bytes, db: int, key: bytes, deadline: int | None = None
    ) -> None:
        """notifyKeyspaceEvent: publish on __keyspace@db__:key and/or __keyevent@db__:event
        when class `cls` is enabled, and journal the event when the journal takes `cls`.
        `deadline` (ms) comes with `expired`."""
        flags = self.publish_flags
        if flags & cls:
            publish = self.publisher.publish
            if flags & KEYSPACE:
                publish(b'__keyspace@%d__:%s' % (db, key), event)
            if flags & KEYEVENT:
                publish(b'__keyevent@%d__:%s' % (db, event), key)
        if self.journal_flags & cls:
            self.journal.append(db, event, key, None, deadline)

    def batch(
        self,
        cls: int,
        event: bytes,
        db: int,
        keys: list[bytes],
        now: int | None = None,
        deadlines: list[int] | None = None,
    ) -> None:
        """The keys of one database that one active-expiry step (`expired`, with their
        deadlines) or one eviction run (`evicted`) deleted: their events leave as one
        batch, a single coalesced dispatch on __keyevent@db__:<event>, and one journal
        append."""
        flags = self.publish_flags
        if flags & cls:
            if flags & KEYSPACE:
                publish = self.publisher.publish
                for key in keys:
                    publish(b'__keyspace@%d__:%s' % (db, key), event)
            if flags & KEYEVENT:
                self.publisher.publish_batch(b'__keyevent@%d__:%s' % (db, event), keys)
        if self.journal_flags & cls:
            self.journal.append_many(db, event, keys, now, deadlines)
