"""The keyspace: databases split across DbSlice shards, with TTLs and lazy expiry.

Every command reaches keys through this object. It routes a key to its shard
(`shard_for`), applies lazy expiry on access (a key whose deadline passed is deleted, and
its `expired` event raised, before the command sees it), keeps each shard's deadline index
in step with every write, signals WATCHers of modified keys, and raises keyspace events.

Deadlines are integer milliseconds since the epoch; a key is expired once
`deadline < now`, as in Redis's keyIsExpired. The active expiry (store/expiry/active.py)
deletes keys at their deadline; the lazy path here makes reads correct in between.
"""

import random

from . import events
from .clock import now_ms
from .db_slice import SLOTS, DbSlice, key_slot, crc_hqx
from .expiry.stats import LagStats


class Keyspace:
    def __init__(self, databases=16, shards=16):
        self.databases = databases
        self.shards = [DbSlice(databases) for _ in range(shards)]
        # slot -> shard, so shard_for is one table look-up after the CRC.
        self.slot_shard = [self.shards[slot % shards] for slot in range(SLOTS)]
        self.watchers = {}          # (db, key) -> set of connections WATCHing it
        # Event classes: `publish_flags` is notify-keyspace-events, `journal_flags` is
        # keyevent-journal-events; `notify_flags` is the union commands test before
        # building an event, so events cost nothing when neither wants them.
        self.publish_flags = 0
        self.journal_flags = 0
        self.notify_flags = 0
        self.publish = None         # publish(channel, message), set by the pub/sub layer
        self.publish_batch = None   # publish_batch(channel, messages), likewise
        self.journal = None         # the Journal, set by the server
        self.expiry = None          # the ActiveExpiry, told about new earliest deadlines
        self.next_deadline = float('inf')
        self.reset_stats()

    def reset_stats(self):
        self.hits = self.misses = 0
        self.expired_keys = 0
        self.expire_lag = LagStats()
        self.expire_cycle_ms = 0.0          # time spent in active-expiry steps
        self.expire_time_cap_reached = 0    # steps that ran out of budget

    # -- routing ---------------------------------------------------------------------

    # Routing is written out inline in the hot methods below. `123 in key` ('{'): an int
    # operand is a memchr, while `b'{' in key` takes a buffer-protocol path ~8x slower.
    def shard_for(self, key):
        if 123 in key:
            return self.slot_shard[key_slot(key)]
        return self.slot_shard[crc_hqx(key, 0) & (SLOTS - 1)]

    # -- reads -----------------------------------------------------------------------

    def read(self, db, key):
        """Look a key up for a read command: lazy expiry, hit/miss stats, `keymiss`."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        v = s.data[db].get(key)
        if v is not None:
            exp = s.expires[db]
            if not exp or key not in exp or exp[key] >= now_ms():
                self.hits += 1
                return v
            self._expire(s, db, key)
        self.misses += 1
        if self.notify_flags & events.KEY_MISS:
            self.notify(events.KEY_MISS, b'keymiss', db, key)
        return None

    def lookup(self, db, key):
        """Look a key up for a write command: lazy expiry only."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        v = s.data[db].get(key)
        if v is not None:
            exp = s.expires[db]
            if exp and key in exp and exp[key] < now_ms():
                self._expire(s, db, key)
                return None
        return v

    def lookup_for_update(self, db, key):
        """lookup for a read-modify-write command (INCR, APPEND): returns the value (or
        None) and the shard dict to store the new value in, routing the key once. The
        caller stores with `data[key] = new` and then calls `updated(db, key)`."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        data = s.data[db]
        v = data.get(key)
        if v is not None:
            exp = s.expires[db]
            if exp and key in exp and exp[key] < now_ms():
                self._expire(s, db, key)
                return None, data
        return v, data

    def updated(self, db, key):
        """A value was replaced in place (lookup_for_update): signal WATCHers."""
        if self.watchers:
            self.touch(db, key)

    def exists(self, db, key):
        return self.lookup(db, key) is not None

    def deadline(self, db, key):
        """The key's deadline in ms, or None when it has none (or does not exist)."""
        if self.lookup(db, key) is None:
            return None
        return self.shard_for(key).expires[db].get(key)

    # -- writes ----------------------------------------------------------------------

    def set(self, db, key, value, deadline=None):
        """Store a value, replacing any TTL with `deadline` (None: no TTL), as SET does."""
        s = self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
        exp = s.expires[db]
        old = exp.get(key)
        if old is not None and old < now_ms():
            # Redis's setKey looks the key up first: an expired old value is
            # expired (counted, 'expired' event) before the new one is added.
            self._expire(s, db, key)
            old = None
        s.data[db][key] = value
        if deadline is not None:
            exp[key] = s.index.add(db, key, deadline, old)
            if deadline < self.next_deadline:
                self.expiry.reschedule(deadline)
        elif old is not None:
            del exp[key]
            s.index.discard()
        if self.watchers:
            self.touch(db, key)

    def set_pairs(self, db, args):
        """MSET: store each key args[1], args[3], ... with the value after it, as `set`
        without a TTL does, routing each key inline rather than calling `set` per key."""
        slot_shard = self.slot_shard
        pairs = iter(args)
        next(pairs)
        for key, value in zip(pairs, pairs):
            s = slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)]
            exp = s.expires[db]
            if exp and key in exp:
                self.set(db, key, value)        # drops (or first expires) the old TTL
            else:
                s.data[db][key] = value
        if self.watchers:
            for i in range(1, len(args), 2):
                self.touch(db, args[i])

    def overwrite(self, db, key, value):
        """Store a value keeping the key's TTL, as APPEND, INCR and SETRANGE do."""
        self.slot_shard[(key_slot(key) if 123 in key else crc_hqx(key, 0) & 16383)
                        ].data[db][key] = value
        if self.watchers:
            self.touch(db, key)

    def delete(self, db, key):
        """Delete a key; True if it existed (an expired key does not count)."""
        s = self.shard_for(key)
        data = s.data[db]
        if key not in data:
            return False
        exp = s.expires[db]
        if key in exp:
            if exp[key] < now_ms():
                self._expire(s, db, key)
                return False
            del exp[key]
            s.index.discard()
        del data[key]
        if self.watchers:
            self.touch(db, key)
        return True

    def set_deadline(self, db, key, deadline):
        """Give an existing key a TTL (the caller checked the key exists)."""
        s = self.shard_for(key)
        exp = s.expires[db]
        exp[key] = s.index.add(db, key, deadline, exp.get(key))
        if deadline < self.next_deadline:
            self.expiry.reschedule(deadline)
        if self.watchers:
            self.touch(db, key)

    def persist(self, db, key):
        """Remove a key's TTL; True if it had one."""
        if self.lookup(db, key) is None:
            return False
        s = self.shard_for(key)
        exp = s.expires[db]
        if key not in exp:
            return False
        del exp[key]
        s.index.discard()
        if self.watchers:
            self.touch(db, key)
        return True

    def _expire(self, s, db, key):
        """Delete a key whose deadline passed: the one place lazy expiries are recorded."""
        del s.data[db][key]
        deadline = s.expires[db].pop(key)
        s.index.discard()
        self.expired_keys += 1
        self.expire_lag.record(now_ms() - deadline)
        if self.watchers:
            self.touch(db, key)
        if self.notify_flags & events.EXPIRED:
            self.notify(events.EXPIRED, b'expired', db, key, deadline)

    def expired_batch(self, db, keys, deadlines, now):
        """Keys of one database the active expiry deleted in one step (already gone from
        the shards; their lags were recorded by the step). Their `expired` events leave
        as one batch: a single coalesced dispatch on __keyevent@db__:expired."""
        self.expired_keys += len(keys)
        if self.watchers:
            for key in keys:
                self.touch(db, key)
        flags = self.publish_flags
        if flags & events.EXPIRED and self.publish is not None:
            if flags & events.KEYSPACE:
                for key in keys:
                    self.publish(b'__keyspace@%d__:%s' % (db, key), b'expired')
            if flags & events.KEYEVENT:
                self.publish_batch(b'__keyevent@%d__:expired' % db, keys)
        if self.journal_flags & events.EXPIRED:
            self.journal.append_many(db, b'expired', keys, now, deadlines)

    # -- whole databases ---------------------------------------------------------------

    def dbsize(self, db):
        return sum(len(s.data[db]) for s in self.shards)

    def volatile_count(self, db):
        return sum(len(s.expires[db]) for s in self.shards)

    def keys(self, db):
        """Every key of a database (expired ones not yet reaped included): a snapshot
        list, so callers may delete while walking it."""
        out = []
        for s in self.shards:
            out.extend(s.data[db])
        return out

    def random_key(self, db):
        """RANDOMKEY: a random live key or None."""
        candidates = [s for s in self.shards if s.data[db]]
        for _ in range(100):
            if not candidates:
                return None
            s = random.choice(candidates)
            data = s.data[db]
            if not data:
                candidates.remove(s)
                continue
            key = random.choice(list(data)) if len(data) < 64 else _random_dict_key(data)
            if self.lookup(db, key) is not None:
                return key
        return None

    def flushdb(self, db):
        if self.watchers:
            for s in self.shards:
                for key in s.data[db]:
                    self.touch(db, key)
        for s in self.shards:
            s.index.clear(db)           # reads expires[db]: before it is replaced
            s.data[db] = {}
            s.expires[db] = {}

    def flushall(self):
        for db in range(self.databases):
            self.flushdb(db)

    def swapdb(self, a, b):
        if self.watchers:
            for db in (a, b):
                for s in self.shards:
                    for key in s.data[db]:
                        self.touch(db, key)
        for s in self.shards:
            s.data[a], s.data[b] = s.data[b], s.data[a]
            s.expires[a], s.expires[b] = s.expires[b], s.expires[a]
            s.index.swap(a, b)

    # -- WATCH -----------------------------------------------------------------------

    def watch(self, conn, db, key):
        self.watchers.setdefault((db, key), set()).add(conn)

    def unwatch(self, conn, watched):
        for dk in watched:
            conns = self.watchers.get(dk)
            if conns is not None:
                conns.discard(conn)
                if not conns:
                    del self.watchers[dk]

    def touch(self, db, key):
        """signalModifiedKey: make every transaction WATCHing the key fail."""
        conns = self.watchers.get((db, key))
        if conns:
            for c in conns:
                c.dirty_cas = True

    # -- keyspace events -------------------------------------------------------------

    def set_event_flags(self, publish_flags, journal_flags):
        # Without K or E nothing is published, as in Redis.
        if not publish_flags & (events.KEYSPACE | events.KEYEVENT):
            publish_flags = 0
        self.publish_flags = publish_flags
        self.journal_flags = journal_flags
        self.notify_flags = publish_flags | journal_flags

    def notify(self, cls, event, db, key, deadline=None):
        """notifyKeyspaceEvent: publish on __keyspace@db__:key and/or __keyevent@db__:event
        when class `cls` is enabled, and journal the event when the journal takes `cls`.
        `event` and `key` are bytes; `deadline` (ms) comes with `expired`."""
        flags = self.publish_flags
        if flags & cls and self.publish is not None:
            if flags & events.KEYSPACE:
                self.publish(b'__keyspace@%d__:%s' % (db, key), event)
            if flags & events.KEYEVENT:
                self.publish(b'__keyevent@%d__:%s' % (db, event), key)
        if self.journal_flags & cls:
            self.journal.append(db, event, key, None, deadline)


def _random_dict_key(d):
    """A random key of a large dict without copying it all."""
    skip = random.randrange(len(d))
    for i, k in enumerate(d):
        if i >= skip:
            return k
