"""The keyspace-event journal: a durable, replayable copy of keyspace events.

Pub/sub notifications are fire-and-forget; a consumer that is down or slow loses them. With
`keyevent-journal-events` set (class letters as in notify-keyspace-events), every event of
those classes is also appended to a Redis Stream, `keyevent-journal-key` (default
`__keyevents__`) in database 0, which readers consume by stream id (XRANGE, XREAD,
consumer groups; spark/ reads it exactly once). Entries have the fields

    db, event, key, ts            ts: ms since the epoch when the event happened
    deadline, lag                 for `expired` only: the key's deadline and ts - deadline

and the stream is trimmed to `keyevent-journal-maxlen` entries as events are added. The
journal writes the stream directly (no command parsing) and never raises keyspace events
about itself, so it cannot feed on its own entries; events whose key is the journal key are
not journaled either. Each entry is stored only as its reply encoding (one template format
per event; store/stream.py `enc` and ENCODED), so reading the journal with XRANGE/XREAD,
the analytics path (spark/), only joins bytes, and an entry costs one bytes object.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from .clock import now_ms
from .types.stream import ENCODED, Stream, format_id


def _bulk(b: bytes) -> bytes:
    return b'$%d\r\n%s\r\n' % (len(b), b)


def _template(fields: tuple[bytes | None, ...]) -> bytes:
    """A %-template that gives encode_entry(id, entry) for an entry made of `fields`
    (flat, bytes) with None where a value varies: fill with (len(id), id, then len(v), v
    for each varying value). One format per event instead of one per field."""
    parts = [b'*2\r\n$%d\r\n%s\r\n', b'*%d\r\n' % len(fields)]
    for f in fields:
        parts.append(b'$%d\r\n%s\r\n' if f is None else _bulk(f).replace(b'%', b'%%'))
    return b''.join(parts)


class JournalLog(Protocol):
    """The append-only file while it propagates (store/persistence/aof_propagate.py)."""

    def journal(self, args: list[bytes]) -> None: ...


class Journal:
    def __init__(self) -> None:
        self.ks: Any = None  # the keyspace it writes into (attach)
        self.key = b'__keyevents__'
        self.maxlen = 1_000_000
        self.appended = 0
        self.dropped = 0  # events lost because the key holds another type
        # The append-only file while it is on (store/persistence/aof.py): each entry is
        # written as XADD <key> MAXLEN <maxlen> <id> <fields>, so a restart restores the
        # very ids a reader checkpointed.
        self.aof: JournalLog | None = None

    def attach(self, keyspace: Any) -> None:
        self.ks = keyspace

    def configure(self, key: str, maxlen: int) -> None:
        self.key = key.encode()
        self.maxlen = maxlen

    def _stream(self) -> Stream | None:
        s = self.ks.lookup(0, self.key)
        if s is None:
            s = Stream()
            self.ks.set(0, self.key, s)
        elif type(s) is not Stream:
            return None
        return s

    def append(
        self, db: int, event: bytes, key: bytes, ts: int | None = None, deadline: int | None = None
    ) -> None:
        """Journal one event; `deadline` (ms) for expired keys."""
        self.append_many(db, event, (key,), ts, None if deadline is None else (deadline,))

    def append_many(
        self,
        db: int,
        event: bytes,
        keys: Sequence[bytes],
        ts: int | None = None,
        deadlines: Sequence[int] | None = None,
    ) -> None:
        """Journal one event for each key (an expiry batch shares `ts`)."""
        if db == 0 and self.key in keys:
            keys = [k for k in keys if k != self.key]
        if not keys:
            return
        stream = self._stream()
        if stream is None:
            self.dropped += len(keys)
            return
        ts = now_ms() if ts is None else ts
        head = (b'db', b'%d' % db, b'event', event, b'key')
        tsb = b'%d' % ts
        aof = self.aof
        if aof is not None:
            xadd = [b'XADD', self.key, b'MAXLEN', b'%d' % self.maxlen, b'', *head]
        # each entry is stored with its reply encoding (store/stream.py: `enc`)
        if deadlines is None:
            tpl = _template(head + (None, b'ts', tsb))
            for key in keys:
                i = stream.next_auto_id(ts)
                idb = format_id(i)
                stream.append(i, ENCODED, tpl % (len(idb), idb, len(key), key))
                if aof is not None:
                    xadd[4] = idb
                    aof.journal([*xadd, key, b'ts', tsb])
        else:
            tpl = _template(head + (None, b'ts', tsb, b'deadline', None, b'lag', None))
            for key, deadline in zip(keys, deadlines):
                i = stream.next_auto_id(ts)
                idb = format_id(i)
                dlb = b'%d' % deadline
                lagb = b'%d' % (ts - deadline)
                stream.append(
                    i, ENCODED, tpl % (len(idb), idb, len(key), key, len(dlb), dlb, len(lagb), lagb)
                )
                if aof is not None:
                    xadd[4] = idb
                    aof.journal([*xadd, key, b'ts', tsb, b'deadline', dlb, b'lag', lagb])
        self.appended += len(keys)
        if len(stream) > self.maxlen:
            stream.trim_maxlen(self.maxlen)
        self.ks.updated(0, self.key)  # wakes XREAD BLOCK readers, fails WATCHers
