"""Keyspace (GENERIC) commands: DEL, UNLINK, EXISTS, TYPE, TOUCH, KEYS, SCAN, RANDOMKEY,
RENAME, RENAMENX, MOVE, COPY, OBJECT, DUMP, RESTORE.

Why it is built this way:

* Commands are ports of Redis 7.0's db.c / object.c / cluster.c handlers, keeping their
  order of checks (it decides which error a client sees) and their keyspace events, in
  Redis's order: a key created by dbAdd raises `new` before the command's own event
  (rename_from/rename_to, move_from/move_to, copy_to, restore).
* Values are plain Python objects owned by the type modules; TYPE, OBJECT ENCODING, COPY
  and DUMP/RESTORE ask the type registry (store/types/) about them.
* SCAN has a stateless cursor (see `scan`): it names a shard and a position in a fixed
  order of that shard's keys (by hash), so the guarantee does not depend on any per-client
  iterator surviving on the server.
"""

import re
from bisect import bisect_left
from collections import deque
from itertools import chain, compress

from .. import events
from ..args import SYNTAX, int_arg
from ..clock import now_ms
from ..command_table import Family
from ..glob import compile_glob
from ..resp import BULK_PREFIX, CRLF, OK, Raw, RedisError, encode
from ..types import copy_value, type_name
from ..types.dump import dump_value, load_value, verify_payload
from .cursor import parse_cursor, parse_scan_options

LLONG_MAX = 2**63 - 1
INT_MIN, INT_MAX = -(2**31), 2**31 - 1

E_NO_SUCH_KEY = 'ERR no such key'
E_SAME_OBJECT = 'ERR source and destination objects are the same'
E_BUSYKEY = 'BUSYKEY Target key name already exists.'
E_BAD_PAYLOAD = 'ERR DUMP payload version or checksum are wrong'
E_BAD_FORMAT = 'ERR Bad data format'


# -- DEL, UNLINK, EXISTS, TYPE, TOUCH ---------------------------------------------------

COMMANDS = Family('generic')


@COMMANDS.command(
    'del',
    -2,
    flags='write',
    keys=(1, -1, 1),
    categories='@keyspace @write @slow',
    tips='request_policy:multi_shard response_policy:agg_sum',
    summary='Delete a key',
)
def delete(c, args):
    """DEL frees a big value lazily only with lazyfree-lazy-user-del (store/lazyfree.py)."""
    return _delete(c, args, 'user-del')


@COMMANDS.command(
    'unlink',
    -2,
    flags='write fast',
    keys=(1, -1, 1),
    categories='@keyspace @write @fast',
    tips='request_policy:multi_shard response_policy:agg_sum',
    since='4.0.0',
    summary='Delete a key asynchronously in another thread. Otherwise it is just as '
    'DEL, but non blocking.',
)
def unlink(c, args):
    """UNLINK: the keys go at once, a big value's memory is freed in steps."""
    return _delete(c, args, True)


def _delete(c, args, lazy):
    ks, db = c.ks, c.db
    n = 0
    for key in args[1:]:
        if ks.delete(db, key, lazy):
            ks.notify(events.GENERIC, b'del', db, key)
            n += 1
    return n


@COMMANDS.command(
    'exists',
    -2,
    flags='readonly fast',
    keys=(1, -1, 1),
    categories='@keyspace @read @fast',
    tips='request_policy:multi_shard response_policy:agg_sum',
    summary='Determine if a key exists',
)
def exists(c, args):
    """EXISTS does not count as an access (LOOKUP_NOTOUCH); TOUCH does."""
    ks, db = c.ks, c.db
    return sum(1 for key in args[1:] if ks.read_notouch(db, key) is not None)


@COMMANDS.command(
    'type',
    2,
    flags='readonly fast',
    keys=(1, 1, 1),
    categories='@keyspace @read @fast',
    summary='Determine the type stored at key',
)
def type_(c, args):
    return type_name(c.ks.read_notouch(c.db, args[1]))


@COMMANDS.command(
    'touch',
    -2,
    flags='readonly fast',
    keys=(1, -1, 1),
    categories='@keyspace @read @fast',
    tips='request_policy:multi_shard response_policy:agg_sum',
    since='3.2.1',
    summary='Alters the last access time of a key(s). Returns the number of '
    'existing keys specified.',
)
def touch(c, args):
    ks, db = c.ks, c.db
    return sum(1 for key in args[1:] if ks.read(db, key) is not None)


# -- KEYS, SCAN, RANDOMKEY --------------------------------------------------------------


@COMMANDS.command(
    'keys',
    2,
    flags='readonly',
    categories='@keyspace @read @slow @dangerous',
    tips='request_policy:all_shards nondeterministic_output_order',
    summary='Find all keys matching the given pattern',
)
def keys(c, args):
    """Every live key matching the pattern. Expired keys are skipped, not deleted, as in
    Redis 7.0's keysCommand.

    Built for a keyspace of millions of keys: each shard's keys are taken and filtered by
    C-level calls (list, filter with a compiled regular expression), and expired keys are
    looked for only in shards whose earliest deadline has passed."""
    pattern = args[1]
    match = None if pattern == b'*' else key_filter(pattern)
    db = c.db
    now = now_ms()
    out = []
    for s in c.ks.shards:
        data = s.data[db]
        if not data:
            continue
        found = list(data) if match is None else list(filter(match, data))
        exp = s.expires[db]
        if exp and min(exp.values()) < now:
            dead = {key for key, deadline in exp.items() if deadline < now}
            found = [key for key in found if key not in dead]
        out += found
    return out


def key_filter(pattern):
    """A predicate equal to the glob's `match` for non-empty subjects but cheaper per key:
    one compiled regular expression instead of a Python call that runs several. As in
    store/glob.py, the pattern is cut at its stars into fixed-width segments and each
    middle segment is placed at its leftmost occurrence, here by an atomic group
    (`(?>.*?S)`: found once, never backtracked into), so matching stays linear in the
    subject whatever the pattern. An empty subject (the empty key) takes the glob's own
    test."""
    glob = compile_glob(pattern)
    if glob.literal is not None:
        return glob.literal.__eq__ if glob.literal else glob.match
    segments = [rx.pattern for rx, _ in glob.segments]
    if not glob.starred:
        rx, tail = segments[0], True
    else:
        middle = b''.join(b'(?>.*?%s)' % seg for seg in segments[1:-1] if seg)
        tail = bool(segments[-1])
        rx = segments[0] + middle + (b'.*' + segments[-1] if tail else b'')
    compiled = re.compile(rx, re.DOTALL)
    test = compiled.fullmatch if tail else compiled.match
    # The empty key: a regex such as '' or '.*' matches it, the glob never does.
    return test if (test(b'') is not None) == glob.match(b'') else glob.match


class ScanViews:
    """Per-keyspace state of SCAN: each shard's keys in hash order, built in bounded steps,
    and where each walk in progress stands.

    Order. A cursor is `shard << pos_bits | p`: continue with the keys of `shard` whose
    position (the top pos_bits bits of their 64-bit hash, made unsigned) is >= p. Hash
    order is fixed for the life of the process, so the cursor alone says where a walk is,
    and any snapshot of the shard's keys taken after the walk began, sorted by hash, finds
    that place: a key present for the whole walk is in it, at a position the cursor has
    either passed (the key was returned once before) or not (it will be, once). pos_bits is
    56 for up to 256 shards and fewer beyond, so that a cursor always fits in 64 bits.

    Views. A `ShardView` is such a snapshot (`list(data)`), sorted RUN keys at a time into
    runs, one run per SCAN call (`step`), while the walk is still in the shard before it;
    no sort of a whole shard runs in one step. A walk reads a shard through windows: the
    keys of a range of positions that holds about WINDOW of them, sliced from every run by
    bisection (and from keys not yet in a run by one C-level pass) and merged by one sort
    (timsort merges the sorted slices). A shard reached with no view built ahead (a walk's
    first) gets a window from one pass over its keys, sized to last until its view has
    been taken and sorted in the calls after. Invariant: a view is never older than the
    start of a walk that uses it. Every SCAN 0 on a db drops that db's views (a key created
    after a view was taken and before a later SCAN 0 is missing from it), so every view in
    `views` is younger than every walk in progress; the windows a walk holds are its own.

    Walks. `walks` maps each cursor returned (its bytes, as clients send them back) to
    where its walk stands: the window and the index in it, so the next call starts there
    without parsing the cursor or bisecting. SCAN 0 on a db drops that db's entries too:
    two walks can reach the same cursor, and a window taken before a walk began must not
    serve it. Any cursor without an entry (evicted, retried, from another walk's SCAN 0)
    gets a window built from the current view at the cursor's position: as correct, only
    slower.

    Costs, 1,000,000 keys in 16 shards (the shared 2-CPU VM): a walk with COUNT 10 is
    ~16 us of CPU per call in process (was ~19 with one sorted view per shard), ~5 us of
    it sorting: n log n comparisons of builtin hashes, ~450 ns a key, split between runs
    (1.1 ms for 4,096 keys) and windows (0.7 ms), which no order gives for less (sorting
    by float keys, splitting by hash range with C-level passes: measured, no better). In
    a server under the walk, ~46 us of CPU per call (was ~53; a GET round trip alone is
    ~17). The longest steps: a shard's snapshot (~2.5 ms), and the first window of a shard
    with no view built ahead, which the first call of a walk always is (a pass over the
    shard's keys and a sort: ~15 ms with COUNT 10, ~21 ms with COUNT 1000, whose window is
    bigger; it was a 36 ms sort, and each later shard a 15 ms merge).
    Memory: at most the views of the shard walked and the next (a pointer a key), and
    each kept walk's window.
    """

    RUN = 4096  # keys sorted per step
    WINDOW = 4096  # keys per window, about
    WALKS_KEPT = 64  # entries in `walks` (an abandoned walk leaves one)
    TRASH_KEPT = 32  # runs of dropped views left to free in steps

    def __init__(self, nshards):
        self.pos_bits = 64 - max(8, (nshards - 1).bit_length())
        self.shift = 64 - self.pos_bits  # a key's position: (hash >> shift) + pos0
        self.pos0 = 1 << (self.pos_bits - 1)
        self.end = 1 << self.pos_bits  # past the last position
        self.views = {}  # (db, shard) -> ShardView
        self.work = deque()  # views to sort runs of, (db, shard) to take a snapshot of
        self.trash = []  # the runs of dropped views, freed a run per step
        self.walks = {}  # cursor bytes -> _Walk

    def begin(self, db, cursor):
        """A walk from a cursor without an entry in `walks`; cursor 0 starts one."""
        if cursor == 0:
            for key in [key for key, walk in self.walks.items() if walk.db == db]:
                del self.walks[key]
            for key in [key for key in self.views if key[0] == db]:
                self._drop(key)
        return _Walk(db, cursor >> self.pos_bits, cursor & (self.end - 1))

    def keep(self, cursor, walk):
        walks = self.walks
        if len(walks) >= self.WALKS_KEPT:
            del walks[next(iter(walks))]
        walks[cursor] = walk

    def open_window(self, ks, walk, budget):
        """Give `walk` the window that starts at its position, moving on to the next
        non-empty shard where needed; False once past the last shard. `budget` is the
        number of keys the call may still examine (see ShardView.window)."""
        db, shards = walk.db, ks.shards
        while walk.shard < len(shards):
            data = shards[walk.shard].data[db]
            if data:
                # A window read while keys are still unsorted takes a pass over them: make
                # it big enough to last until `step` has sorted them all into runs.
                view = self.views.get((db, walk.shard))
                unsorted = len(data) + self.RUN if view is None else len(view.pending)
                size = self.WINDOW
                if unsorted:
                    size = max(size, budget * -(-unsorted // self.RUN))
                span = max(1, (self.end * size) // (len(data) if view is None else view.size))
                stop = min(walk.start + span, self.end)
                lo = (walk.start - self.pos0) << self.shift
                hi = (stop - self.pos0) << self.shift
                if view is None:  # no view built ahead (a walk's first shard): one pass
                    # over the shard's keys now, its snapshot and runs in the next calls
                    key = (db, walk.shard)
                    if key in self.work:
                        self.work.remove(key)
                    self.work.appendleft(key)
                    window = sorted(compress(data, map(_inside(lo, hi), map(hash, data))), key=hash)
                else:
                    window = view.window(lo, hi, budget)
                walk.window, walk.index, walk.stop = window, 0, stop
                following = (db, walk.shard + 1)  # taken while this shard is walked
                if following not in self.views and following not in self.work:
                    self.work.append(following)
                return True
            self._drop((db, walk.shard))
            walk.shard, walk.start = walk.shard + 1, 0
        return False

    def close_window(self, walk):
        """The walk is past its window: on to the next one, or to the next shard."""
        walk.window = None
        if walk.stop < self.end:
            walk.start = walk.stop
        else:
            self._drop((walk.db, walk.shard))
            walk.shard, walk.start = walk.shard + 1, 0

    def _drop(self, key):
        if key in self.work:  # a snapshot not taken yet
            self.work.remove(key)
        view = self.views.pop(key, None)
        if view is not None:
            trash = self.trash
            trash += view.runs
            view.runs, view.pending = [], []
            if len(trash) > self.TRASH_KEPT:  # a call that walked shards: free them now
                del trash[: -self.TRASH_KEPT]

    def step(self, ks):
        """One bounded unit of work: free a dropped run, take a snapshot, or sort a run."""
        if not self.work:  # views first: a walk waits for them, freeing can wait
            self.trash.pop()
            return
        work = self.work[0]
        if type(work) is ShardView:
            if work.pending:
                work.sort_run(self.RUN)
            if not work.pending:
                self.work.popleft()
            return
        self.work.popleft()
        db, i = work
        if i < len(ks.shards) and work not in self.views and ks.shards[i].data[db]:
            view = self.views[work] = ShardView(list(ks.shards[i].data[db]))
            self.work.appendleft(view)


class ShardView:
    """A snapshot of one shard's keys: sorted runs, and the keys not yet in a run."""

    __slots__ = ('pending', 'runs', 'size')

    def __init__(self, keys):
        self.pending = keys
        self.runs = []
        self.size = len(keys)

    def sort_run(self, n):
        keys = self.pending
        self.runs.append(sorted(keys[-n:], key=hash))
        del keys[-n:]

    def window(self, lo, hi, budget):
        """The keys whose hash h is lo <= h < hi, sorted by hash. Each run gives a slice
        (two bisections with the builtin hash as the key: no Python call per step); the
        keys not yet in a run one pass of C-level calls, unless the call is to examine a
        good part of them (budget), when they are sorted into a run at once instead (a
        pass per window would then cost more than the sort)."""
        pending = self.pending
        if pending and 4 * budget >= len(pending):
            self.runs.append(sorted(pending, key=hash))
            pending = self.pending = []
        parts = [
            run[bisect_left(run, lo, key=hash) : bisect_left(run, hi, key=hash)]
            for run in self.runs
        ]
        if pending:
            parts.append(compress(pending, map(_inside(lo, hi), map(hash, pending))))
        return sorted(chain.from_iterable(parts), key=hash)


def _inside(lo, hi):
    """A C-level test of lo <= hash < hi, for one pass over unsorted keys."""
    return hi.__gt__ if lo == -(2**63) else range(lo, hi).__contains__


class _Walk:
    """Where a walk stands: in `shard`, from position `start`; once its window is built,
    the window's keys (positions start to stop) and the index of the next one in it."""

    __slots__ = ('db', 'shard', 'start', 'stop', 'window', 'index')

    def __init__(self, db, shard, start):
        self.db, self.shard, self.start = db, shard, start
        self.window = None
        self.index = self.stop = 0


@COMMANDS.command(
    'scan',
    -2,
    flags='readonly',
    categories='@keyspace @read @slow',
    tips='nondeterministic_output request_policy:special',
    since='2.8.0',
    summary='Incrementally iterate the keys space',
)
def scan(c, args):
    """SCAN cursor [MATCH pattern] [COUNT count] [TYPE type].

    Guarantee: a full iteration (from cursor 0 until 0 comes back) returns every key that
    exists in the database during the whole iteration exactly once; keys created or deleted
    meanwhile may or may not be returned, and a key is never returned after it was deleted
    or expired. Several iterations may run at once. COUNT is the number of keys examined
    (before MATCH and TYPE filtering), so a call may return fewer keys, even none, with a
    nonzero cursor. Cursors are only meaningful to the server process that issued them.

    The examined keys are filtered as scanGenericCommand filters them, in its order: still
    there, MATCH, TYPE (a lookup that is not an access), then expired keys, which are
    deleted; each filter is a C-level pass over the examined keys of one window, and a key
    is looked up in the keyspace only for TYPE or when it carries an expired deadline. The
    reply is encoded here, in a few C-level steps (it is the same in RESP2 and RESP3): a
    walk with the default COUNT is a hundred thousand calls over a million keys, each
    one's cost counts. ScanViews has the order, the views and the walks' state.
    """
    ks, db = c.ks, c.db
    try:
        views = ks.scan_views
    except AttributeError:
        views = ks.scan_views = ScanViews(len(ks.shards))
    walk = views.walks.pop(args[1], None)  # where the walk left off (the common case)
    if walk is None or walk.db != db:
        walk, cursor = None, parse_cursor(args[1])  # its errors come first
    elif len(args) == 2 and walk.window is not None:
        # The common case in a straight line: COUNT 10 inside the walk's window, not
        # ending on a position shared with the next key. The same steps as below.
        window, lo = walk.window, walk.index
        hi = lo + 10
        if hi < len(window):
            shift = views.shift
            following = hash(window[hi]) >> shift
            if following != hash(window[hi - 1]) >> shift:
                s = ks.shards[walk.shard]
                keys = list(filter(s.data[db].__contains__, window[lo:hi]))
                exp = s.expires[db]
                if exp and keys:
                    now = now_ms()
                    keys = [k for k in keys if exp.get(k, now) >= now or not _expired(ks, db, k)]
                walk.index = hi
                cursor = b'%d' % (walk.shard << views.pos_bits | following + views.pos0)
                views.keep(cursor, walk)
                if views.work or views.trash:
                    views.step(ks)
                return Raw(_scan_reply(cursor, keys))
    if len(args) == 2:
        count, match, typename = 10, None, None
    else:
        count, pattern, typename = parse_scan_options(args, 2, True)
        match = None if pattern is None or pattern == b'*' else key_filter(pattern)
    if walk is None:
        walk = views.begin(db, cursor)

    shards, shift = ks.shards, views.shift
    examined = 0
    found = []
    opened = False  # a window was built: this call did its share of heavy work
    while True:
        window = walk.window
        if window is None:
            if not views.open_window(ks, walk, count - examined):
                next_cursor = b'0'
                break
            window, opened = walk.window, True
        lo = walk.index
        hi = lo + count - examined
        n = len(window)
        if hi < n:
            following = hash(window[hi]) >> shift
            if following == hash(window[hi - 1]) >> shift:  # never split a position
                hi += 1
                while hi < n and hash(window[hi]) >> shift == following:
                    hi += 1
                if hi < n:
                    following = hash(window[hi]) >> shift
        if hi < n:
            taken = window[lo:hi]
        else:
            taken, hi = (window[lo:] if lo else window), n
        s = shards[walk.shard]
        keys = list(filter(s.data[db].__contains__, taken))
        if match is not None:
            keys = list(filter(match, keys))
        if typename is not None:
            keys = [k for k in keys if type_name(ks.read_notouch(db, k)) == typename]
        exp = s.expires[db]
        if exp and keys:
            now = now_ms()
            keys = [k for k in keys if exp.get(k, now) >= now or not _expired(ks, db, k)]
        found += keys
        if hi < n:
            walk.index = hi
            next_cursor = b'%d' % (walk.shard << views.pos_bits | following + views.pos0)
            views.keep(next_cursor, walk)
            break
        examined += hi - lo
        views.close_window(walk)
        if examined >= count and walk.shard < len(shards):
            next_cursor = b'%d' % (walk.shard << views.pos_bits | walk.start)
            views.keep(next_cursor, walk)
            break
    if (views.work or views.trash) and not opened:
        views.step(ks)
    return Raw(_scan_reply(next_cursor, found))


def _scan_reply(cursor, keys):
    """[cursor, [key, ...]] in RESP: the bulk strings of short keys (the common case) as
    one join over their headers and the keys, as resp._encode_many does; any other way
    through the encoder."""
    head = b'*2\r\n$%d\r\n%s\r\n*%d\r\n' % (len(cursor), cursor, len(keys))
    if not keys:
        return head
    pieces = [b''] * (2 * len(keys) + 1)
    try:
        pieces[0:-1:2] = map(BULK_PREFIX.__getitem__, map(len, keys))
    except IndexError:  # a key of 1024 bytes or more
        return head + b''.join(encode(keys, 2, [])[1:])
    pieces[1::2] = keys
    return head + CRLF.join(pieces)


def _expired(ks, db, key):
    """expireIfNeeded for a key whose deadline passed: the keyspace deletes it (with its
    event) on a lookup that is not an access; True when it is gone."""
    return ks.lookup_notouch(db, key) is None


@COMMANDS.command(
    'randomkey',
    1,
    flags='readonly',
    categories='@keyspace @read @slow',
    tips='request_policy:all_shards nondeterministic_output',
    summary='Return a random key from the keyspace',
)
def randomkey(c, args):
    return c.ks.random_key(c.db)


# -- RENAME, RENAMENX, MOVE, COPY -------------------------------------------------------


def rename_generic(c, args, nx):
    ks, db = c.ks, c.db
    src, dst = args[1], args[2]
    value = ks.lookup(db, src)
    if value is None:
        raise RedisError(E_NO_SUCH_KEY)
    if src == dst:
        return 0 if nx else OK
    if nx and ks.lookup(db, dst) is not None:
        return 0
    deadline = ks.deadline(db, src)
    ks.set(db, dst, value, deadline)  # replaces dst and its TTL, as dbDelete+dbAdd
    ks.notify(events.NEW, b'new', db, dst)
    ks.delete(db, src)
    ks.notify(events.GENERIC, b'rename_from', db, src)
    ks.notify(events.GENERIC, b'rename_to', db, dst)
    return 1 if nx else OK


@COMMANDS.command(
    'rename',
    3,
    flags='write',
    keys=(1, 2, 1),
    categories='@keyspace @write @slow',
    summary='Rename a key',
)
def rename(c, args):
    return rename_generic(c, args, nx=False)


@COMMANDS.command(
    'renamenx',
    3,
    flags='write fast',
    keys=(1, 2, 1),
    categories='@keyspace @write @fast',
    summary='Rename a key, only if the new key does not exist',
)
def renamenx(c, args):
    return rename_generic(c, args, nx=True)


def _db_index(c, b):
    """getIntFromObjectOrReply + selectDb: a 32-bit int, then the range check."""
    dbid = int_arg(b)
    if not INT_MIN <= dbid <= INT_MAX:
        raise RedisError('ERR value is out of range, value must between -2147483648 and 2147483647')
    if not 0 <= dbid < c.ks.databases:
        raise RedisError('ERR DB index is out of range')
    return dbid


@COMMANDS.command(
    'move',
    3,
    flags='write fast',
    keys=(1, 1, 1),
    categories='@keyspace @write @fast',
    summary='Move a key to another database',
)
def move(c, args):
    ks, src_db, key = c.ks, c.db, args[1]
    dst_db = _db_index(c, args[2])
    if dst_db == src_db:
        raise RedisError(E_SAME_OBJECT)
    value = ks.lookup(src_db, key)
    if value is None:
        return 0
    deadline = ks.deadline(src_db, key)
    if ks.lookup(dst_db, key) is not None:
        return 0
    ks.set(dst_db, key, value, deadline)
    ks.notify(events.NEW, b'new', dst_db, key)
    ks.delete(src_db, key)
    ks.notify(events.GENERIC, b'move_from', src_db, key)
    ks.notify(events.GENERIC, b'move_to', dst_db, key)
    return 1


@COMMANDS.command(
    'copy',
    -3,
    flags='write denyoom',
    keys=(1, 2, 1),
    categories='@keyspace @write @slow',
    since='6.2.0',
    summary='Copy a key',
)
def copy_(c, args):
    ks, db = c.ks, c.db
    src, dst = args[1], args[2]
    dst_db, replace = db, False
    i = 3
    while i < len(args):
        opt = args[i].lower()
        if opt == b'replace':
            replace = True
        elif opt == b'db' and len(args) - i - 1 >= 1:
            dst_db = _db_index(c, args[i + 1])
            i += 1
        else:
            raise SYNTAX
        i += 1
    if dst_db == db and src == dst:
        raise RedisError(E_SAME_OBJECT)
    value = ks.read(db, src)
    if value is None:
        return 0
    deadline = ks.deadline(db, src)
    if ks.lookup(dst_db, dst) is not None and not replace:
        return 0
    # a deep copy that keeps the encoding, as Redis's dup*Object (types' copy())
    ks.set(dst_db, dst, copy_value(value), deadline)
    ks.notify(events.NEW, b'new', dst_db, dst)
    ks.notify(events.GENERIC, b'copy_to', dst_db, dst)
    return 1


# -- DUMP, RESTORE ----------------------------------------------------------------------


@COMMANDS.command(
    'dump',
    2,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@keyspace @read @slow',
    tips='nondeterministic_output',
    since='2.6.0',
    summary='Return a serialized version of the value stored at the specified key.',
)
def dump(c, args):
    value = c.ks.read(c.db, args[1])
    return None if value is None else dump_value(value)


@COMMANDS.command(
    'restore',
    -4,
    flags='write denyoom',
    keys=(1, 1, 1),
    categories='@keyspace @write @slow @dangerous',
    since='2.6.0',
    summary='Create a key using the provided serialized value, previously obtained using DUMP.',
)
def restore(c, args):
    """RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f], checks in Redis
    7.0's order: options, existing key, TTL, payload."""
    replace = absttl = False
    idle = freq = None
    i = 4
    while i < len(args):
        opt = args[i].lower()
        more = len(args) - i - 1
        if opt == b'replace':
            replace = True
        elif opt == b'absttl':
            absttl = True
        elif opt == b'idletime' and more >= 1 and freq is None:
            idle = int_arg(args[i + 1])
            if idle < 0:
                raise RedisError('ERR Invalid IDLETIME value, must be >= 0')
            i += 1
        elif opt == b'freq' and more >= 1 and idle is None:
            freq = int_arg(args[i + 1])
            if not 0 <= freq <= 255:
                raise RedisError('ERR Invalid FREQ value, must be >= 0 and <= 255')
            i += 1
        else:
            raise SYNTAX
        i += 1

    ks, db, key = c.ks, c.db, args[1]
    if not replace and ks.lookup(db, key) is not None:
        raise RedisError(E_BUSYKEY)
    ttl = int_arg(args[2])
    if ttl < 0:
        raise RedisError('ERR Invalid TTL value, must be >= 0')
    payload = args[3]
    if not verify_payload(payload):
        raise RedisError(E_BAD_PAYLOAD)
    value = load_value(payload, ks.limits)
    if value is None:
        raise RedisError(E_BAD_FORMAT)

    deleted = replace and ks.delete(db, key)
    if ttl and not absttl:
        ttl += now_ms()
        if ttl > LLONG_MAX:  # Redis adds in 64 bits: the sum wraps negative
            ttl -= 2**64
    if ttl and ttl <= now_ms():  # already expired: nothing to create
        if deleted:
            ks.notify(events.GENERIC, b'del', db, key)
        return OK
    ks.set(db, key, value, ttl or None)
    ks.set_access(db, key, idle, freq)
    ks.notify(events.NEW, b'new', db, key)
    ks.notify(events.GENERIC, b'restore', db, key)
    return OK


_MULTI = 'request_policy:multi_shard response_policy:agg_sum'
_SUB = dict(keys=(2, 2, 1), categories='@keyspace @read @slow')
