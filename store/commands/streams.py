"""Stream commands (Redis 7.0 t_stream.c): XADD, XRANGE, XREVRANGE, XLEN, XDEL, XTRIM,
XREAD, XREADGROUP, XGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO, XSETID.

The data type is store/stream.py. Handlers follow the order of checks of t_stream.c, since
it decides which error a client sees when several arguments are bad.

Blocking (XREAD/XREADGROUP BLOCK). When nothing can be served, the handler registers a
`Waiter` under each (db, key) in the server's `StreamBlocking` registry, sets
`conn.blocked` to it and parks the connection with the same mechanism PUBLISH backpressure
uses: `conn.deferred = []` plus `update_gate()` makes every later command of the
connection (rest of the batch, later reads) queue in `conn.deferred` instead of running,
and the handler replies nothing now (an empty Raw). Writers call `signal_ready(server, db,
key)` (XADD, XGROUP DESTROY, XSETID); the registry serves the waiters of ready keys in
FIFO order from a `call_soon` callback, i.e. after the writer's current batch, the
analogue of Redis's handleClientsBlockedOnKeys. Serving (or the timeout timer, or CLIENT
UNBLOCK through `conn.unblock(error=...)`) sends the reply, clears `conn.deferred` and runs
the deferred commands. Inside EXEC (`conn.in_exec`) a blocking read replies at once as on
timeout, as Redis does for clients that may not block. A disconnect hook drops the waiter.
"""

from .. import events
from ..args import SYNTAX, WRONGTYPE, E_NOT_INT, int_arg
from ..command_table import Family
from ..clock import now_ms
from ..resp import NULL_ARRAY, OK, Map, Raw, RedisError, string2ll
from ..types.stream import (MAX_ID, NACK, U64, Consumer, Group, Stream, format_id)

STREAM, NEW = events.STREAM, events.NEW

E_INVALID_ID = 'ERR Invalid stream ID specified as stream command argument'
E_SMALLER = 'ERR The ID specified in XADD is equal or smaller than the target stream top item'
E_ZERO = 'ERR The ID specified in XADD must be greater than 0-0'
E_EXHAUSTED = ('ERR The stream has exhausted the last possible ID, unable to add more '
               'items')
E_BOTH = 'ERR syntax error, MAXLEN and MINID options at the same time are not compatible'
E_TIMEOUT = 'ERR timeout is not an integer or out of range'
INVALID = RedisError(E_INVALID_ID)
NO_REPLY = Raw(b'')
XREAD_BLOCKED_DEFAULT_COUNT = 1000
NODE_MAX_ENTRIES = 100


# -- argument parsing -------------------------------------------------------------------

COMMANDS = Family('stream', since='5.0.0')


def _string2ull(b):
    """Redis's string2ull: string2ll, else strtoull (leading spaces, a sign, leading zeros;
    a '-' wraps modulo 2^64); None when not a number."""
    v = string2ll(b)
    if v is not None:
        return v if v >= 0 else None
    s = b.lstrip(b' \t\n\v\f\r')
    neg = False
    if s[:1] in (b'+', b'-'):
        neg = s[:1] == b'-'
        s = s[1:]
    if not s or not s.isdigit():
        return None
    v = int(s)
    if v > U64:
        return None
    return (-v) % (1 << 64) if neg else v


def parse_id(b, missing_seq=0, strict=False, partial=False):
    """streamGenericParseIDOrReply: the id as an int, plus whether the sequence was given
    (False only for the `ms-*` form, allowed when `partial`)."""
    if len(b) > 127:
        raise INVALID
    if b == b'-':
        if strict:
            raise INVALID
        return 0, True
    if b == b'+':
        if strict:
            raise INVALID
        return MAX_ID, True
    ms_part, dash, seq_part = b.partition(b'-')
    ms_part = ms_part.split(b'\0', 1)[0] if b'\0' in ms_part else ms_part
    ms = _string2ull(ms_part)
    if ms is None:
        raise INVALID
    if dash:
        if partial and seq_part == b'*':
            return ms << 64, False
        seq = _string2ull(seq_part)
        if seq is None:
            raise INVALID
    else:
        seq = missing_seq
    return ms << 64 | seq, True


def strict_id(b):
    return parse_id(b, 0, True)[0]


def interval_id(b, missing_seq):
    """streamParseIntervalIDOrReply: (id, exclusive)."""
    if len(b) > 1 and b[:1] == b'(':
        return parse_id(b[1:], missing_seq, True)[0], True
    return parse_id(b, missing_seq)[0], False


def _incr(i):
    if i >= MAX_ID:
        return None
    return i + 1


def _count_arg(b):
    return int_arg(b)


# -- lookups and replies ----------------------------------------------------------------

def _read_stream(c, key):
    v = c.ks.read(c.db, key)
    if v is None or type(v) is Stream:
        return v
    raise WRONGTYPE


def _write_stream(c, key):
    v = c.ks.lookup(c.db, key)
    if v is None or type(v) is Stream:
        return v
    raise WRONGTYPE


def _create_stream(c, key):
    s = Stream()
    ks = c.ks
    ks.set(c.db, key, s)
    if ks.notify_flags:
        ks.notify(NEW, b'new', c.db, key)
    return s


def _modified(c, key):
    """signalModifiedKey for an in-place change."""
    if c.ks.watchers:
        c.ks.touch(c.db, key)


def _notify(c, event, key):
    ks = c.ks
    if ks.notify_flags:
        ks.notify(STREAM, event, c.db, key)


def _entries(items):
    return [[format_id(i), list(f)] for i, f in items]


def _raw_entries(encoded):
    """An array of entries from their encode_entry() bytes, as one Raw reply (entries are
    arrays of bulk strings, the same in RESP2 and RESP3)."""
    return Raw(b'*%d\r\n%s' % (len(encoded), b''.join(encoded)))


def _id_or_none(i):
    return None if i is None else format_id(i)


# -- blocking ---------------------------------------------------------------------------

class StreamBlocking:
    """The server's registry of connections blocked on stream keys."""

    def __init__(self, server):
        self.server = server
        self.waiters = {}           # (db, key) -> [Waiter] in blocking order
        self.ready = []             # (db, key) signalled since the last serve
        self.handle = None
        server.disconnect_hooks.append(self.on_disconnect)
        server.reset_hooks.append(self.on_disconnect)

    def signal(self, db, key):
        dk = (db, key)
        if dk in self.waiters and dk not in self.ready:
            self.ready.append(dk)
            if self.handle is None:
                self.handle = self.server.loop.call_soon(self.serve)

    def serve(self):
        self.handle = None
        while self.ready:
            ready, self.ready = self.ready, []
            for dk in ready:
                for w in list(self.waiters.get(dk, ())):
                    if w.active:
                        w.try_serve(dk)

    def add(self, w):
        for dk in w.keys:
            self.waiters.setdefault(dk, []).append(w)

    def remove(self, w):
        for dk in w.keys:
            lst = self.waiters.get(dk)
            if lst is not None:
                try:
                    lst.remove(w)
                except ValueError:
                    pass
                if not lst:
                    del self.waiters[dk]

    def on_disconnect(self, conn):
        w = getattr(conn, 'blocked', None)
        if isinstance(w, Waiter):
            w.cancel()


def blocking(server):
    b = getattr(server, 'stream_blocking', None)
    if b is None:
        b = server.stream_blocking = StreamBlocking(server)
    return b


def signal_ready(server, db, key):
    """Tell blocked XREAD/XREADGROUP clients that `key` in `db` changed (for any writer of
    streams, e.g. the keyspace-event journal)."""
    b = getattr(server, 'stream_blocking', None)
    if b is not None and b.waiters:
        b.signal(db, key)


class Waiter:
    __slots__ = ('conn', 'db', 'keys', 'ids', 'count', 'group', 'consumer', 'noack',
                 'timer', 'active', 'registry')

    def __init__(self, conn, keys, ids, count, group, consumer, noack, timeout_ms):
        self.conn = conn
        self.db = conn.db
        self.keys = [(conn.db, k) for k in keys]
        self.ids = {}
        for k, i in zip(keys, ids):
            self.ids.setdefault((conn.db, k), i)
        self.count = count
        self.group = group
        self.consumer = consumer
        self.noack = noack
        self.active = True
        self.registry = blocking(conn.server)
        self.registry.add(self)
        self.timer = None
        if timeout_ms:
            self.timer = conn.server.loop.call_later(timeout_ms / 1000, self.on_timeout)
        conn.blocked = self
        conn.unblock = self.client_unblock
        conn.deferred = []
        conn.update_gate()

    def _finish(self):
        self.active = False
        self.registry.remove(self)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        c = self.conn
        if getattr(c, 'blocked', None) is self:
            c.blocked = None

    def cancel(self):
        if self.active:
            self._finish()

    def _reply(self, value):
        self._finish()
        c = self.conn
        deferred, c.deferred = c.deferred, None
        c.update_gate()
        if c.closing or c.transport is None:
            return
        c._emit(value)
        if deferred:
            c.run(deferred)
        c.flush()

    def on_timeout(self):
        self.timer = None
        if self.active:
            self._reply(NULL_ARRAY)

    def client_unblock(self, error=False):
        if self.active:
            self._reply(RedisError('UNBLOCKED client unblocked via CLIENT UNBLOCK')
                        if error else NULL_ARRAY)

    def try_serve(self, dk):
        """serveClientsBlockedOnStreamKey for one waiter: reply if there is data now."""
        c = self.conn
        db, key = dk
        s = c.ks.lookup(db, key)
        if type(s) is not Stream:
            return
        gt = self.ids[dk]
        group = consumer = None
        if self.group is not None:
            group = s.groups.get(self.group)
            if group is None:
                self._reply(RedisError('NOGROUP the consumer group this client was '
                                       'blocked on no longer exists'))
                return
            gt = group.last_id
        if s.last_id <= gt:
            return
        start = gt + 1
        if group is not None:
            consumer = _get_consumer(c, s, group, self.consumer, key, db)
        entries = _reply_range(c, s, start, MAX_ID, self.count, group, consumer,
                               self.noack, key, db)
        if c.proto == 2:
            value = [[key, entries]]
        else:
            value = Map([(key, entries)])
        self._reply(value)


# -- XADD / XTRIM -----------------------------------------------------------------------

class TrimArgs:
    __slots__ = ('strategy', 'maxlen', 'minid', 'approx', 'limit', 'nomkstream', 'id',
                 'id_given', 'seq_given')


def parse_add_trim(args, xadd):
    """streamParseAddOrTrimArgsOrReply: (TrimArgs, index of the ID for XADD)."""
    t = TrimArgs()
    t.strategy = None
    t.maxlen = -1
    t.minid = 0
    t.approx = False
    t.limit = 0
    t.nomkstream = False
    t.id = 0
    t.id_given = False
    t.seq_given = True
    limit_given = False
    n = len(args)
    i = 2
    while i < n:
        more = n - 1 - i
        opt = args[i]
        lo = opt.lower()
        if xadd and opt == b'*':
            break
        elif (lo == b'maxlen' or lo == b'minid') and more:
            if t.strategy is not None:
                raise RedisError(E_BOTH)
            t.approx = False
            nxt = args[i + 1]
            if more >= 2 and nxt == b'~':
                t.approx = True
                i += 1
            elif more >= 2 and nxt == b'=':
                i += 1
            if lo == b'maxlen':
                t.maxlen = int_arg(args[i + 1])
                if t.maxlen < 0:
                    raise RedisError('ERR The MAXLEN argument must be >= 0.')
            else:
                t.minid = strict_id(args[i + 1])
            i += 1
            t.strategy = lo.decode()
        elif lo == b'limit' and more:
            t.limit = int_arg(args[i + 1])
            if t.limit < 0:
                raise RedisError('ERR The LIMIT argument must be >= 0.')
            limit_given = True
            i += 1
        elif xadd and lo == b'nomkstream':
            t.nomkstream = True
        elif xadd:
            t.id, t.seq_given = parse_id(opt, 0, True, True)
            t.id_given = True
            break
        else:
            raise SYNTAX
        i += 1
    if t.limit and t.strategy is None:
        raise RedisError('ERR syntax error, LIMIT cannot be used without specifying a '
                         'trimming strategy')
    if not xadd and t.strategy is None:
        raise RedisError('ERR syntax error, XTRIM must be called with a trimming strategy')
    if limit_given:
        if not t.approx:
            raise RedisError('ERR syntax error, LIMIT cannot be used without the special ~ '
                             'option')
    elif t.approx:
        t.limit = min(100 * NODE_MAX_ENTRIES, 10000) or 10000
    else:
        t.limit = 0
    return t, i


def _apply_trim(s, t):
    if t.strategy == 'maxlen':
        return s.trim_maxlen(t.maxlen, t.approx, t.limit)
    return s.trim_minid(t.minid, t.approx, t.limit)


@COMMANDS.command('xadd', -5, flags='write denyoom fast', keys=(1, 1, 1),
                  categories='@write @stream @fast')
def xadd(c, args):
    t, idpos = parse_add_trim(args, True)
    nfields = len(args) - idpos - 1
    if nfields < 2 or nfields % 2:
        raise RedisError("ERR wrong number of arguments for 'xadd' command")
    if t.id_given and t.seq_given and t.id == 0:
        raise RedisError(E_ZERO)
    key = args[1]
    s = _write_stream(c, key)
    if s is None:
        if t.nomkstream:
            return None
        s = _create_stream(c, key)
    last = s.last_id
    if last == MAX_ID:
        raise RedisError(E_EXHAUSTED)
    if not t.id_given:
        i = s.next_auto_id(now_ms())
    elif t.seq_given:
        i = t.id
    elif last >> 64 == t.id >> 64:
        if last & U64 == U64:
            raise RedisError(E_SMALLER)
        i = last + 1
    else:
        i = t.id
    if i <= last:
        raise RedisError(E_SMALLER)
    s.append(i, tuple(args[idpos + 1:]))
    _modified(c, key)
    _notify(c, b'xadd', key)
    if t.strategy is not None and _apply_trim(s, t):
        _notify(c, b'xtrim', key)
    signal_ready(c.server, c.db, key)
    return format_id(i)


@COMMANDS.command('xtrim', -4, flags='write', keys=(1, 1, 1), categories='@write @stream @slow')
def xtrim(c, args):
    t, _ = parse_add_trim(args, False)
    s = _write_stream(c, args[1])
    if s is None:
        return 0
    deleted = _apply_trim(s, t)
    if deleted:
        _notify(c, b'xtrim', args[1])
        _modified(c, args[1])
    return deleted


# -- XRANGE / XREVRANGE / XLEN / XDEL ---------------------------------------------------

def _xrange(c, args, rev):
    start_arg, end_arg = (args[3], args[2]) if rev else (args[2], args[3])
    lo, ex = interval_id(start_arg, 0)
    if ex:
        lo = _incr(lo)
        if lo is None:
            raise RedisError('ERR invalid start ID for the interval')
    hi, ex = interval_id(end_arg, U64)
    if ex:
        if hi == 0:
            raise RedisError('ERR invalid end ID for the interval')
        hi -= 1
    count = -1
    j = 4
    while j < len(args):
        if args[j].lower() == b'count' and j + 1 < len(args):
            count = max(int_arg(args[j + 1]), 0)
            j += 2
        else:
            raise SYNTAX
    s = _read_stream(c, args[1])
    if s is None:
        return []
    if count == 0:
        return NULL_ARRAY
    return _raw_entries(s.range_encoded(lo, hi, max(count, 0), rev)[1])


@COMMANDS.command('xrange', -4, flags='readonly', keys=(1, 1, 1), categories='@read @stream @slow')
def xrange_(c, args):
    return _xrange(c, args, False)


@COMMANDS.command('xrevrange', -4, flags='readonly', keys=(1, 1, 1),
                  categories='@read @stream @slow')
def xrevrange(c, args):
    return _xrange(c, args, True)


@COMMANDS.command('xlen', 2, flags='readonly fast', keys=(1, 1, 1),
                  categories='@read @stream @fast')
def xlen(c, args):
    s = _read_stream(c, args[1])
    return 0 if s is None else s.length


@COMMANDS.command('xdel', -3, flags='write fast', keys=(1, 1, 1),
                  categories='@write @stream @fast')
def xdel(c, args):
    key = args[1]
    s = _write_stream(c, key)
    if s is None:
        return 0
    ids = [strict_id(a) for a in args[2:]]
    deleted = 0
    first_entry = False
    for i in ids:
        if s.delete(i):
            if i == s.first_id:
                first_entry = True
            if i > s.max_deleted:
                s.max_deleted = i
            deleted += 1
    if deleted:
        if not s.length:
            s.first_id = 0
        elif first_entry:
            s.first_id = s.first_live_id()
        _modified(c, key)
        _notify(c, b'xdel', key)
    return deleted


@COMMANDS.command('xsetid', -3, flags='write denyoom fast', keys=(1, 1, 1),
                  categories='@write @stream @fast')
def xsetid(c, args):
    key = args[1]
    i = strict_id(args[2])
    entries_added = -1
    max_xdel = 0
    j = 3
    while j < len(args):
        more = len(args) - 1 - j
        opt = args[j].lower()
        if opt == b'entriesadded' and more:
            entries_added = int_arg(args[j + 1])
            if entries_added < 0:
                raise RedisError('ERR entries_added must be positive')
            j += 2
        elif opt == b'maxdeletedid' and more:
            max_xdel = strict_id(args[j + 1])
            if i < max_xdel:
                raise RedisError('ERR The ID specified in XSETID is smaller than the '
                                 'provided max_deleted_entry_id')
            j += 2
        else:
            raise SYNTAX
    s = _write_stream(c, key)
    if s is None:
        raise RedisError('ERR no such key')
    if i < s.last_id:
        raise RedisError('ERR The ID specified in XSETID is smaller than the target '
                         'stream top item')
    if s.length and i < s.last_valid_id():
        raise RedisError('ERR The ID specified in XSETID is smaller than the target '
                         'stream top item')
    if entries_added != -1 and s.length > entries_added:
        raise RedisError('ERR The entries_added specified in XSETID is smaller than the '
                         'target stream length')
    s.last_id = i
    if entries_added != -1:
        s.entries_added = entries_added
    if max_xdel:
        s.max_deleted = max_xdel
    _modified(c, key)
    _notify(c, b'xsetid', key)
    signal_ready(c.server, c.db, key)
    return OK


# -- consumer groups: shared helpers ----------------------------------------------------

def _get_consumer(c, s, group, name, key, db, refresh=True):
    """streamLookupConsumer (refreshing seen-time), creating it when missing (with its
    `xgroup-createconsumer` event)."""
    cons = group.consumers.get(name)
    now = now_ms()
    if cons is None:
        cons = group.consumers[name] = Consumer(name, now)
        ks = c.ks
        if ks.notify_flags:
            ks.notify(STREAM, b'xgroup-createconsumer', db, key)
        _modified_db(c, db, key)
    elif refresh:
        cons.seen_time = now
    return cons


def _modified_db(c, db, key):
    if c.ks.watchers:
        c.ks.touch(db, key)


def _reply_range(c, s, start, end, count, group, consumer, noack, key, db):
    """streamReplyWithRange for new entries: with a group, advance last-delivered-id and
    entries-read, and (unless NOACK) record each entry in the PELs."""
    ids, encoded = s.range_encoded(start, end, count)
    if group is not None and ids:
        now = now_ms()
        for i in ids:
            if i > group.last_id:
                if group.entries_read != -1 and not s.has_tombstones(i):
                    group.entries_read += 1
                elif s.entries_added:
                    group.entries_read = s.estimate_distance(i)
                group.last_id = i
            if not noack:
                nack = group.pel.get(i)
                if nack is not None:
                    if nack.consumer is not consumer:
                        nack.consumer.pel.remove(i)
                        nack.consumer = consumer
                        consumer.pel.add(i, nack)
                    nack.delivery_time = now
                    nack.delivery_count = 1
                else:
                    nack = NACK(consumer, now, 1)
                    group.pel.add(i, nack)
                    consumer.pel.add(i, nack)
        _modified_db(c, db, key)
    return _raw_entries(encoded)


def _reply_history(c, s, start, count, consumer):
    """streamReplyWithRangeFromConsumerPEL: the consumer's pending entries from `start`."""
    out = []
    now = now_ms()
    for i, nack in consumer.pel.iter_from(start):
        if count and len(out) >= count:
            break
        fields = s.get(i)
        if fields is None:                   # deleted: addReplyNullArray, *-1 / _
            out.append([format_id(i), NULL_ARRAY])
        else:
            nack.delivery_time = now
            nack.delivery_count += 1
            out.append([format_id(i), list(fields)])
    return out


# -- XREAD / XREADGROUP -----------------------------------------------------------------

def _xread(c, args, xreadgroup):
    timeout = -1
    count = 0
    streams_arg = 0
    noack = False
    groupname = consumername = None
    n = len(args)
    i = 1
    while i < n:
        more = n - i - 1
        o = args[i].lower()
        if o == b'block' and more:
            i += 1
            timeout = string2ll(args[i])
            if timeout is None:
                raise RedisError(E_TIMEOUT)
            if timeout < 0:
                raise RedisError('ERR timeout is negative')
        elif o == b'count' and more:
            i += 1
            count = max(int_arg(args[i]), 0)
        elif o == b'streams' and more:
            streams_arg = i + 1
            nk = n - streams_arg
            if nk % 2:
                raise RedisError("ERR Unbalanced XREAD list of streams: for each stream key "
                                 "an ID or '$' must be specified.")
            break
        elif o == b'group' and more >= 2:
            if not xreadgroup:
                raise RedisError('ERR The GROUP option is only supported by XREADGROUP. '
                                 'You called XREAD instead.')
            groupname, consumername = args[i + 1], args[i + 2]
            i += 2
        elif o == b'noack':
            if not xreadgroup:
                raise RedisError('ERR The NOACK option is only supported by XREADGROUP. '
                                 'You called XREAD instead.')
            noack = True
        else:
            raise SYNTAX
        i += 1
    if not streams_arg:
        raise SYNTAX
    if xreadgroup and groupname is None:
        raise RedisError('ERR Missing GROUP option for XREADGROUP')
    nstreams = (n - streams_arg) // 2
    keys = args[streams_arg:streams_arg + nstreams]
    ids = []
    groups = []
    streams = []
    for k in range(nstreams):
        key = keys[k]
        arg = args[streams_arg + nstreams + k]
        s = _read_stream(c, key)
        streams.append(s)
        if groupname is not None:
            g = s.groups.get(groupname) if s is not None else None
            if g is None:
                raise RedisError(
                    f"NOGROUP No such key '{key.decode('utf-8', 'replace')}' or consumer "
                    f"group '{groupname.decode('utf-8', 'replace')}' in XREADGROUP with "
                    f"GROUP option")
            groups.append(g)
        if arg == b'$':
            if xreadgroup:
                raise RedisError('ERR The $ ID is meaningless in the context of XREADGROUP: '
                                 'you want to read the history of this consumer by '
                                 'specifying a proper ID, or use the > ID to get new '
                                 'messages. The $ ID would just return an empty result set.')
            ids.append(s.last_id if s is not None else 0)
        elif arg == b'>':
            if not xreadgroup:
                raise RedisError('ERR The > ID can be specified only when calling XREADGROUP '
                                 'using the GROUP <group> <consumer> option.')
            ids.append(MAX_ID)
        else:
            ids.append(strict_id(arg))
    served = []
    db = c.db
    for k in range(nstreams):
        s = streams[k]
        if s is None:
            continue
        gt = ids[k]
        history = False
        serve = False
        if groups:
            if gt != MAX_ID:
                serve = history = True
            elif s.length:
                last = groups[k].last_id
                if s.last_valid_id() > last:
                    serve = True
                    gt = last
        elif s.length and s.last_valid_id() > gt:
            serve = True
        if not serve:
            continue
        key = keys[k]
        start = gt + 1 if gt < MAX_ID else gt
        consumer = None
        if groups:
            consumer = _get_consumer(c, s, groups[k], consumername, key, db)
        if history:
            entries = _reply_history(c, s, start, count, consumer)
        else:
            entries = _reply_range(c, s, start, MAX_ID, count,
                                   groups[k] if groups else None, consumer, noack, key, db)
        served.append((key, entries))
    if served:
        if c.proto == 2:
            return [[k, e] for k, e in served]
        return Map(served)
    if timeout != -1:
        if getattr(c, 'in_exec', False) or c.transport is None:
            return NULL_ARRAY
        Waiter(c, keys, ids, count or XREAD_BLOCKED_DEFAULT_COUNT, groupname, consumername,
               noack, timeout)
        return NO_REPLY
    return NULL_ARRAY


@COMMANDS.command('xread', -4, flags='readonly blocking movablekeys',
                  categories='@read @stream @slow @blocking')
def xread(c, args):
    return _xread(c, args, False)


@COMMANDS.command('xreadgroup', -7, flags='write blocking movablekeys',
                  categories='@write @stream @slow @blocking')
def xreadgroup(c, args):
    return _xread(c, args, True)


# -- XGROUP -----------------------------------------------------------------------------

XGROUP_HELP = [
    'XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    'CREATE <key> <groupname> <id|$> [option]',
    '    Create a new consumer group. Options are:',
    '    * MKSTREAM',
    '      Create the empty stream if it does not exist.',
    '    * ENTRIESREAD entries_read',
    '      Set the group\'s entries_read counter (internal use).',
    'CREATECONSUMER <key> <groupname> <consumer>',
    '    Create a new consumer in the specified group.',
    'DELCONSUMER <key> <groupname> <consumer>',
    '    Remove the specified consumer.',
    'DESTROY <key> <groupname>',
    '    Remove the specified group.',
    'SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]',
    '    Set the current group ID and entries_read counter.',
    'HELP',
    '    Print this help.',
]


def _entries_read_arg(b):
    v = int_arg(b)
    if v < 0 and v != -1:
        raise RedisError('ERR value for ENTRIESREAD must be positive or -1')
    return v


def _xgroup_prepare(c, args, op):
    """The part of xgroupCommand common to the subcommands with a key and group."""
    key, grp = args[2], args[3]
    mkstream = False
    entries_read = -1
    if op == 'create' and 5 <= len(args) <= 8:
        i = 5
        while i < len(args):
            o = args[i].lower()
            if o == b'mkstream':
                mkstream = True
                i += 1
            elif o == b'entriesread' and i + 1 < len(args):
                entries_read = _entries_read_arg(args[i + 1])
                i += 2
            else:
                raise _xgroup_syntax(args)
    elif op == 'setid' and len(args) in (5, 7):
        if len(args) == 7:
            if args[5].lower() != b'entriesread':
                raise _xgroup_syntax(args)
            entries_read = _entries_read_arg(args[6])
    s = _write_stream(c, key)
    if s is None and (op != 'create' or not mkstream):
        raise RedisError('ERR The XGROUP subcommand requires the key to exist. Note that for '
                         'CREATE you may want to use the MKSTREAM option to create an empty '
                         'stream automatically.')
    g = s.groups.get(grp) if s is not None else None
    if g is None and op in ('setid', 'createconsumer', 'delconsumer'):
        raise RedisError(f"NOGROUP No such consumer group '{grp.decode('utf-8', 'replace')}' "
                         f"for key name '{key.decode('utf-8', 'replace')}'")
    return key, grp, s, g, entries_read


def _xgroup_syntax(args):
    return RedisError(f"ERR unknown subcommand or wrong number of arguments for "
                      f"'{args[1].decode('utf-8', 'replace')}'. Try XGROUP HELP.")


XGROUP = COMMANDS.container('xgroup', -2, categories='@slow')


@XGROUP.subcommand('create', -5, flags='write denyoom', keys=(2, 2, 1),
                   categories='@write @stream @slow', since='5.0.0')
def xgroup_create(c, args):
    key, grp, s, g, entries_read = _xgroup_prepare(c, args, 'create')
    if len(args) > 8:
        raise _xgroup_syntax(args)
    if args[4] == b'$':
        i = s.last_id if s is not None else 0
    else:
        i = strict_id(args[4])
    if s is None:
        s = _create_stream(c, key)
        _modified(c, key)
    if grp in s.groups:
        raise RedisError('BUSYGROUP Consumer Group name already exists')
    s.groups[grp] = Group(grp, i, entries_read)
    _modified(c, key)
    _notify(c, b'xgroup-create', key)
    return OK


@XGROUP.subcommand('setid', -5, flags='write', keys=(2, 2, 1), categories='@write @stream @slow', since='5.0.0')
def xgroup_setid(c, args):
    key, grp, s, g, entries_read = _xgroup_prepare(c, args, 'setid')
    if len(args) not in (5, 7):
        raise _xgroup_syntax(args)
    if args[4] == b'$':
        i = s.last_id
    else:
        i = parse_id(args[4])[0]
    g.last_id = i
    g.entries_read = entries_read
    _modified(c, key)
    _notify(c, b'xgroup-setid', key)
    return OK


@XGROUP.subcommand('destroy', 4, flags='write', keys=(2, 2, 1), categories='@write @stream @slow', since='5.0.0')
def xgroup_destroy(c, args):
    key, grp, s, g, _ = _xgroup_prepare(c, args, 'destroy')
    if g is None:
        return 0
    del s.groups[grp]
    _modified(c, key)
    _notify(c, b'xgroup-destroy', key)
    signal_ready(c.server, c.db, key)
    return 1


@XGROUP.subcommand('createconsumer', 5, flags='write denyoom', keys=(2, 2, 1),
                   categories='@write @stream @slow', since='6.2.0')
def xgroup_createconsumer(c, args):
    key, grp, s, g, _ = _xgroup_prepare(c, args, 'createconsumer')
    if args[4] in g.consumers:
        return 0
    _get_consumer(c, s, g, args[4], key, c.db)
    return 1


@XGROUP.subcommand('delconsumer', 5, flags='write', keys=(2, 2, 1),
                   categories='@write @stream @slow', since='5.0.0')
def xgroup_delconsumer(c, args):
    key, grp, s, g, _ = _xgroup_prepare(c, args, 'delconsumer')
    cons = g.consumers.get(args[4])
    if cons is None:
        return 0
    pending = len(cons.pel)
    for i in list(cons.pel.ids):
        g.pel.remove(i)
    del g.consumers[args[4]]
    _modified(c, key)
    _notify(c, b'xgroup-delconsumer', key)
    return pending


@XGROUP.subcommand('help', 2, flags='loading stale', categories='@stream @slow', since='5.0.0')
def xgroup_help(c, args):
    return XGROUP_HELP


# -- XACK / XPENDING / XCLAIM / XAUTOCLAIM ----------------------------------------------

@COMMANDS.command('xack', -4, flags='write fast', keys=(1, 1, 1),
                  categories='@write @stream @fast')
def xack(c, args):
    s = _read_stream(c, args[1])
    g = s.groups.get(args[2]) if s is not None else None
    if g is None:
        return 0
    ids = [strict_id(a) for a in args[3:]]
    acked = 0
    for i in ids:
        nack = g.pel.get(i)
        if nack is not None:
            g.pel.remove(i)
            nack.consumer.pel.remove(i)
            acked += 1
    if acked:
        _modified(c, args[1])
    return acked


def _nogroup(key, grp):
    return RedisError(f"NOGROUP No such key '{key.decode('utf-8', 'replace')}' or consumer "
                      f"group '{grp.decode('utf-8', 'replace')}'")


@COMMANDS.command('xpending', -3, flags='readonly', keys=(1, 1, 1),
                  categories='@read @stream @slow')
def xpending(c, args):
    n = len(args)
    justinfo = n == 3
    if n != 3 and (n < 6 or n > 9):
        raise SYNTAX
    minidle = 0
    consumername = None
    if n >= 6:
        si = 3
        if args[3].lower() == b'idle':
            minidle = int_arg(args[4])
            if n < 8:
                raise SYNTAX
            si += 2
        count = max(int_arg(args[si + 2]), 0)
        lo, ex = interval_id(args[si], 0)
        if ex:
            lo = _incr(lo)
            if lo is None:
                raise RedisError('ERR invalid start ID for the interval')
        hi, ex = interval_id(args[si + 1], U64)
        if ex:
            if hi == 0:
                raise RedisError('ERR invalid end ID for the interval')
            hi -= 1
        if si + 3 < n:
            consumername = args[si + 3]
    s = _read_stream(c, args[1])
    g = s.groups.get(args[2]) if s is not None else None
    if g is None:
        raise _nogroup(args[1], args[2])
    if justinfo:
        if not g.pel:
            return [0, None, None, NULL_ARRAY]
        per = [[name, b'%d' % len(cons.pel)] for name, cons in sorted(g.consumers.items())
               if cons.pel]
        return [len(g.pel), format_id(g.pel.first()), format_id(g.pel.last()), per]
    pel = g.pel
    if consumername is not None:
        cons = g.consumers.get(consumername)
        if cons is None:
            return []
        pel = cons.pel
    now = now_ms()
    out = []
    if count:
        for i, nack in pel.iter_from(lo, hi):
            if minidle and now - nack.delivery_time < minidle:
                continue
            out.append([format_id(i), nack.consumer.name, max(now - nack.delivery_time, 0),
                        nack.delivery_count])
            if len(out) >= count:
                break
    return out


def _transfer(nack, consumer, i):
    """Move pending entry `i` to `consumer`'s PEL (XCLAIM, XAUTOCLAIM)."""
    if nack.consumer is not consumer:
        if nack.consumer is not None:
            nack.consumer.pel.remove(i)
        consumer.pel.add(i, nack)
        nack.consumer = consumer


@COMMANDS.command('xclaim', -6, flags='write fast', keys=(1, 1, 1),
                  categories='@write @stream @fast')
def xclaim(c, args):
    key = args[1]
    s = _read_stream(c, key)
    g = s.groups.get(args[2]) if s is not None else None
    if g is None:
        raise _nogroup(key, args[2])
    minidle = int_arg(args[4], 'ERR Invalid min-idle-time argument for XCLAIM')
    if minidle < 0:
        minidle = 0
    ids = []
    j = 5
    while j < len(args):
        try:
            ids.append(strict_id(args[j]))
        except RedisError:
            break
        j += 1
    now = now_ms()
    force = justid = False
    retrycount = -1
    deliverytime = -1
    last_id = 0
    while j < len(args):
        more = len(args) - 1 - j
        opt = args[j].lower()
        if opt == b'force':
            force = True
        elif opt == b'justid':
            justid = True
        elif opt == b'idle' and more:
            j += 1
            deliverytime = now - int_arg(args[j], 'ERR Invalid IDLE option argument for XCLAIM')
        elif opt == b'time' and more:
            j += 1
            deliverytime = int_arg(args[j], 'ERR Invalid TIME option argument for XCLAIM')
        elif opt == b'retrycount' and more:
            j += 1
            retrycount = int_arg(args[j], 'ERR Invalid RETRYCOUNT option argument for XCLAIM')
        elif opt == b'lastid' and more:
            j += 1
            last_id = strict_id(args[j])
        else:
            raise RedisError(f"ERR Unrecognized XCLAIM option "
                             f"'{args[j].decode('utf-8', 'replace')}'")
        j += 1
    if last_id > g.last_id:
        g.last_id = last_id
    if deliverytime != -1:
        if deliverytime < 0 or deliverytime > now:
            deliverytime = now
    else:
        deliverytime = now
    name = args[3]
    consumer = None
    out = []
    for i in ids:
        nack = g.pel.get(i)
        if s.get(i) is None:
            if nack is not None:
                g.pel.remove(i)
                nack.consumer.pel.remove(i)
            continue
        if force and nack is None:
            nack = NACK(None, now, 1)
            g.pel.add(i, nack)
        if nack is None:
            continue
        if nack.consumer is not None and minidle and now - nack.delivery_time < minidle:
            continue
        if consumer is None:
            consumer = _get_consumer(c, s, g, name, key, c.db)
        _transfer(nack, consumer, i)
        nack.delivery_time = deliverytime
        if retrycount >= 0:
            nack.delivery_count = retrycount
        elif not justid:
            nack.delivery_count += 1
        out.append(format_id(i) if justid else [format_id(i), list(s.get(i))])
    _modified(c, key)
    return out


@COMMANDS.command('xautoclaim', -6, flags='write fast', keys=(1, 1, 1),
                  categories='@write @stream @fast', since='6.2.0')
def xautoclaim(c, args):
    key = args[1]
    minidle = int_arg(args[4], 'ERR Invalid min-idle-time argument for XAUTOCLAIM')
    if minidle < 0:
        minidle = 0
    start, ex = interval_id(args[5], 0)
    if ex:
        start = _incr(start)
        if start is None:
            raise RedisError('ERR invalid start ID for the interval')
    count = 100
    justid = False
    j = 6
    max_count = (2**63 - 1) // 16
    while j < len(args):
        more = len(args) - 1 - j
        opt = args[j].lower()
        if opt == b'count' and more:
            v = string2ll(args[j + 1])
            if v is None:
                raise RedisError(E_NOT_INT)
            if v < 1 or v > max_count:
                raise RedisError('ERR COUNT must be > 0')
            count = v
            j += 1
        elif opt == b'justid':
            justid = True
        else:
            raise SYNTAX
        j += 1
    s = _read_stream(c, key)
    g = s.groups.get(args[2]) if s is not None else None
    if g is None:
        raise _nogroup(key, args[2])
    attempts = count * 10
    now = now_ms()
    consumer = None
    claimed = []
    deleted = []
    pending = g.pel.iter_from(start)
    pos = 0
    while attempts and count and pos < len(pending):
        attempts -= 1
        i, nack = pending[pos]
        pos += 1
        if s.get(i) is None:
            g.pel.remove(i)
            nack.consumer.pel.remove(i)
            deleted.append(format_id(i))
            count -= 1
            continue
        if minidle and now - nack.delivery_time < minidle:
            continue
        if consumer is None:
            consumer = _get_consumer(c, s, g, args[3], key, c.db)
        _transfer(nack, consumer, i)
        nack.delivery_time = now
        if not justid:
            nack.delivery_count += 1
        claimed.append(format_id(i) if justid else [format_id(i), list(s.get(i))])
        count -= 1
    cursor = pending[pos][0] if pos < len(pending) else 0
    _modified(c, key)
    return [format_id(cursor), claimed, deleted]


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


def _xinfo_stream_obj(c, key):
    v = c.ks.read(c.db, key)
    if v is None:
        raise RedisError('ERR no such key')
    if type(v) is not Stream:
        raise WRONGTYPE
    return v


def _radix_nodes(s):
    # rax internal nodes cannot be reproduced; a plausible figure for a tree of keys
    k = s.node_count()
    return k + 1 if k else 1


XINFO = COMMANDS.container('xinfo', -2, categories='@slow')


@XINFO.subcommand('stream', -3, flags='readonly', keys=(2, 2, 1), categories='@read @stream @slow', since='5.0.0')
def xinfo_stream(c, args):
    s = _xinfo_stream_obj(c, args[2])
    full = False
    count = 10
    rest = args[3:]
    if rest:
        if (rest[0].lower() != b'full' or len(rest) == 2 or len(rest) > 3
                or (len(rest) == 3 and rest[1].lower() != b'count')):
            raise RedisError(f"ERR unknown subcommand or wrong number of arguments for "
                             f"'{args[1].decode('utf-8', 'replace')}'. Try XINFO HELP.")
        full = True
        if len(rest) > 1:
            count = int_arg(rest[2])
            if count < 0:
                count = 10
    items = [(b'length', s.length), (b'radix-tree-keys', s.node_count()),
             (b'radix-tree-nodes', _radix_nodes(s)),
             (b'last-generated-id', format_id(s.last_id)),
             (b'max-deleted-entry-id', format_id(s.max_deleted)),
             (b'entries-added', s.entries_added),
             (b'recorded-first-entry-id', format_id(s.first_id))]
    if not full:
        first = s.range(0, MAX_ID, 1)
        last = s.range(0, MAX_ID, 1, rev=True)
        items += [(b'groups', len(s.groups)),
                  (b'first-entry', _entries(first)[0] if first else None),
                  (b'last-entry', _entries(last)[0] if last else None)]
        return Map(items)
    items.append((b'entries', _entries(s.range(0, MAX_ID, count))))
    groups = []
    for name, g in sorted(s.groups.items()):
        pel = []
        for i, nack in g.pel.iter_from(0):
            if count and len(pel) >= count:
                break
            pel.append([format_id(i), nack.consumer.name, nack.delivery_time,
                        nack.delivery_count])
        consumers = []
        for cname, cons in sorted(g.consumers.items()):
            cpel = []
            for i, nack in cons.pel.iter_from(0):
                if count and len(cpel) >= count:
                    break
                cpel.append([format_id(i), nack.delivery_time, nack.delivery_count])
            consumers.append(Map([(b'name', cname), (b'seen-time', cons.seen_time),
                                  (b'pel-count', len(cons.pel)), (b'pending', cpel)]))
        groups.append(Map([(b'name', name), (b'last-delivered-id', format_id(g.last_id)),
                           (b'entries-read', None if g.entries_read == -1 else g.entries_read),
                           (b'lag', s.group_lag(g)), (b'pel-count', len(g.pel)),
                           (b'pending', pel), (b'consumers', consumers)]))
    items.append((b'groups', groups))
    return Map(items)


@XINFO.subcommand('groups', 3, flags='readonly', keys=(2, 2, 1), categories='@read @stream @slow', since='5.0.0')
def xinfo_groups(c, args):
    s = _xinfo_stream_obj(c, args[2])
    out = []
    for name, g in sorted(s.groups.items()):
        out.append(Map([(b'name', name), (b'consumers', len(g.consumers)),
                        (b'pending', len(g.pel)),
                        (b'last-delivered-id', format_id(g.last_id)),
                        (b'entries-read', None if g.entries_read == -1 else g.entries_read),
                        (b'lag', s.group_lag(g))]))
    return out


@XINFO.subcommand('consumers', 4, flags='readonly', keys=(2, 2, 1),
                  categories='@read @stream @slow', since='5.0.0')
def xinfo_consumers(c, args):
    s = _xinfo_stream_obj(c, args[2])
    g = s.groups.get(args[3])
    if g is None:
        raise RedisError(f"NOGROUP No such consumer group '{args[3].decode('utf-8', 'replace')}'"
                         f" for key name '{args[2].decode('utf-8', 'replace')}'")
    now = now_ms()
    return [Map([(b'name', name), (b'pending', len(cons.pel)),
                 (b'idle', max(now - cons.seen_time, 0))])
            for name, cons in sorted(g.consumers.items())]


@XINFO.subcommand('help', 2, flags='loading stale', categories='@stream @slow', since='5.0.0')
def xinfo_help(c, args):
    return XINFO_HELP
