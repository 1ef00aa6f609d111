"""Random-command differential test: thousands of random commands over a small key space,
all value types mixed, sent in the same order to our server and to redis-server, replies
compared.

How it works:

* Two dedicated servers (ours as `python -m store`, redis-server) get the same small
  encoding thresholds, so a few members are enough to cross every listpack/intset ->
  hashtable/skiplist conversion. A seeded generator draws one step at a time over 12 keys
  (`KEYS`): strings, bitmaps, HyperLogLogs, hashes, lists, sets, sorted sets, geo,
  generic commands (DEL, RENAME, COPY, MOVE, SWAPDB, EXPIRE, OBJECT ENCODING,
  DUMP/RESTORE ...), SORT, and WRONGTYPE access on purpose (a key is usually drawn among
  keys of the right type, as redis-server reports them before each step, and sometimes
  among all). Arguments come from small pools with edge values (huge and negative
  counts, non-numbers, inf/nan scores, long members).
* The generator draws only commands our server knows (COMMAND INFO at the start) and only
  families whose creating command exists, so it is useful while families are still being
  written and complete once they land.
* A reply is compared byte for byte (errors by their full text) unless Redis's own reply
  is not deterministic: hashtable iteration order (compared sorted), SPOP and the
  random-member commands (compared by size and membership in each server's own value; a
  random SPOP is followed by re-syncing our set to redis-server's), RANDOMKEY, SCAN cursors
  (a full iteration is compared as a set), TTLs (within two seconds), DUMP payloads (only
  nil or not: each server RESTOREs its own). A hash restored from a hashtable may load as
  a listpack in Redis's hashtable order: such keys are 'tainted' and their field order
  compared sorted until the key is deleted.
* Where Redis's answer depends on state no client sees, the step avoids it or asks again:
  lex ranges over members of different scores (skiplist levels), SORT ties among members
  of a set or sorted set read in hash order, SORT failing on a stale errno (see
  `sort_again`). Our known differences from Redis are in KNOWN_DIFFERENCES.
* Blocking commands run inside MULTI (where they never block) or directly only when one
  of their keys exists (they answer at once then; a timeout of 1 s bounds a bug).
* Every STATE_EVERY steps and at the end the whole key space of databases 0 and 1 is
  compared (type, encoding, TTL, contents), so a divergence that no reply showed is
  still caught.
* One run sends each plain step through a script (`EVAL "return redis.call(unpack(ARGV))"`),
  so every kind of reply crosses into Lua and back as redis.call and the script's return
  convert it.

A failure names the seed, the step, the command, both replies, and the last commands
that wrote to the same keys. RANDOM_DIFF_SEED (a number, or 'random') and
RANDOM_DIFF_STEPS override the seed and the number of steps, and RANDOM_DIFF_KEEP_GOING=1
collects every mismatch of a run instead of stopping at the first; e.g.

    RANDOM_DIFF_SEED=123 RANDOM_DIFF_STEPS=20000 pytest tests/test_random_diff.py
"""

import collections
import os
import random
import time

import pytest

from conftest import spawn_redis, spawn_store, stop
from rawconn import RawConn, pack

pytestmark = pytest.mark.differential

ENV_SEED = os.environ.get('RANDOM_DIFF_SEED')
ENV_STEPS = os.environ.get('RANDOM_DIFF_STEPS')
KEEP_GOING = bool(os.environ.get('RANDOM_DIFF_KEEP_GOING'))
STATE_EVERY = 400
HISTORY = 16  # earlier writes to the same keys shown with a failure

KEYS = [b'k0', b'k1', b'k2', b'k3', b'k4', b'k5', b'k6', b'k7', b'w_1', b'w_2', b'w_3', b'w_a']
KEYSET = set(KEYS)
TYPES = ('string', 'hash', 'list', 'set', 'zset')

# Small thresholds, so a few members cross every conversion (CONFIG steps change them).
CONFIG = {
    'hash-max-listpack-entries': b'4',
    'hash-max-listpack-value': b'8',
    'set-max-intset-entries': b'4',
    'zset-max-listpack-entries': b'4',
    'zset-max-listpack-value': b'8',
}
CONFIG_CHOICES = {
    'hash-max-listpack-entries': (b'2', b'4', b'8', b'128'),
    'hash-max-listpack-value': (b'4', b'8', b'64'),
    'set-max-intset-entries': (b'2', b'4', b'8', b'512'),
    'zset-max-listpack-entries': (b'2', b'4', b'128'),
    'zset-max-listpack-value': (b'4', b'8', b'64'),
}

# -- argument pools -------------------------------------------------------------------------

STR_VALUES = [b'v', b'0', b'1', b'-1', b'10', b'3.5', b'', b'abc', b'12345678901234567890',
              b'9223372036854775807', b'-9223372036854775808', b'1e3', b' 1', b'0x1',
              b'a string longer than forty-four bytes, so raw!']  # fmt: skip
FIELDS = [b'f0', b'f1', b'f2', b'f3', b'f4', b'1', b'-2', b'long_field_name']
HVALUES = [b'v', b'0', b'1', b'-1', b'10', b'3.5', b'', b'abc', b'9223372036854775807',
           b'-9223372036854775808', b'1e3', b'value longer than 8', b' 1', b'1.5e300']  # fmt: skip
ELEMENTS = [b'a', b'b', b'c', b'1', b'2', b'3', b'', b'-1', b'long element xxxx']
MEMBERS = [b'1', b'2', b'3', b'-5', b'10', b'0', b'a', b'b', b'c', b'007', b'',
           b'9223372036854775807', b'-9223372036854775808', b'9223372036854775808',
           b'long member xxxx']  # fmt: skip
ZMEMBERS = [b'a', b'b', b'c', b'd', b'e', b'1', b'', b'long member zzzz']


class Pool:
    """Argument values: `valid` ones drawn most of the time, `bad` ones (that draw an
    error reply) sometimes."""

    def __init__(self, valid, bad):
        self.valid, self.bad = valid, bad


SCORES = Pool(
    [b'0', b'1', b'-1', b'2', b'2.5', b'-0', b'inf', b'-inf', b'+inf', b'1e3', b'0.1', b'3',
     b'-2.25', b'1e308', b'1.0000000000000002', b'17', b'1e-5'],
    [b'nan', b'abc', b'', b'0x10', b' 1', b'1e400'],
)  # fmt: skip
INCRS = Pool(
    [b'1', b'-1', b'0', b'2.5', b'0.1', b'inf', b'-inf', b'1e308', b'-3'], [b'nan', b'abc']
)
SCORE_RANGES = Pool(
    [b'-inf', b'+inf', b'inf', b'0', b'(0', b'1', b'(1', b'2.5', b'(2.5', b'3', b'(inf',
     b'-1', b'1e3'],
    [b'abc', b'(', b'nan', b'[1'],
)  # fmt: skip
LEX_RANGES = Pool(
    [b'-', b'+', b'[a', b'(a', b'[c', b'(c', b'[', b'(', b'[1', b'(zz', b'[long'], [b'a', b'']
)
INDEXES = Pool(
    [b'0', b'1', b'-1', b'2', b'-2', b'3', b'5', b'-100', b'100', b'9223372036854775807',
     b'-9223372036854775808'],
    [b'abc', b'1.5', b'', b'99999999999999999999'],
)  # fmt: skip
COUNTS = Pool(
    [b'0', b'1', b'2', b'3', b'-1', b'-3', b'10', b'100', b'-100', b'9223372036854775807',
     b'-9223372036854775808'],
    [b'99999999999999999999', b'abc', b''],
)  # fmt: skip
SMALL_COUNTS = [b'0', b'1', b'2', b'3', b'-1', b'-3', b'10', b'100', b'-100']
# counts for commands where a huge negative count means that many replies (SRANDMEMBER,
# HRANDFIELD, ZRANDMEMBER): never a huge valid negative one
RAND_COUNTS = Pool(
    [b'0', b'1', b'2', b'3', b'5', b'-1', b'-3', b'-7', b'10', b'100', b'9223372036854775807'],
    [b'-9223372036854775808', b'abc', b''],
)
INTS = Pool(
    [b'1', b'-1', b'0', b'5', b'100', b'-100', b'9223372036854775807', b'-9223372036854775808'],
    [b'abc', b'1.5', b''],
)
FLOATS = Pool(
    [b'1', b'-1', b'0.5', b'2.5e3', b'1e308', b'-1e308', b'inf', b'0.1'], [b'nan', b'abc']
)
PATTERNS = [b'*', b'k*', b'w_*', b'k[0-3]', b'?1', b'*a*', b'nomatch']
TIMEOUTS_MULTI = [b'0', b'0.5', b'1', b'-1', b'abc', b'1e20', b'0.001']


def command_flags(port, names):
    """COMMAND INFO on a server: name -> its flags, for each of `names` it has."""
    out = {}
    with RawConn(port) as c:
        for name in names:
            info = value(c.cmd('COMMAND', 'INFO', name))[0]
            if isinstance(info, list):
                out[name] = {flag[1].decode() for flag in info[2]}
    return out


# -- reply parsing and normal forms -------------------------------------------------------


def parse(buf, i=0):
    """One RESP2/RESP3 reply from buf[i:]: (value, end). Bulk strings are bytes, integers
    ints, a null bulk None; the other types are tagged tuples, so a normal form compares
    types too: ('+', s) ('-', err) ('nil*',) ('map', items) ('set', items) (',', text)
    ('#', t/f) ('(', digits) ('=', text)."""
    nl = buf.index(b'\r\n', i)
    kind, head, j = buf[i : i + 1], buf[i + 1 : nl], nl + 2
    if kind == b'$':
        n = int(head)
        return (None, j) if n < 0 else (buf[j : j + n], j + n + 2)
    if kind == b':':
        return int(head), j
    if kind in b'*~%>':
        n = int(head)
        if n < 0:
            return ('nil*',), j
        items = []
        for _ in range(n * 2 if kind == b'%' else n):
            v, j = parse(buf, j)
            items.append(v)
        if kind == b'*':
            return items, j
        return ({b'~': 'set', b'%': 'map', b'>': 'push'}[kind], items), j
    if kind in b'=!':
        n = int(head)
        return (kind.decode(), buf[j : j + n]), j + n + 2
    if kind == b'_':
        return None, j
    return (kind.decode(), head), j  # + - , # (


def value(raw):
    return parse(raw)[0]


def _key(x):
    return repr(x)


def unordered(v):
    """An array or set reply compared as a multiset."""
    if isinstance(v, list):
        return sorted(v, key=_key)
    if isinstance(v, tuple) and v[0] in ('set', 'map') and isinstance(v[1], list):
        if v[0] == 'map':
            return ('map', pairs_sorted(v[1]))
        return ('set', sorted(v[1], key=_key))
    return v


def pairs_sorted(items):
    return sorted(zip(items[::2], items[1::2]), key=_key)


def pairs(v):
    """A flat field/value array (or a RESP3 map) compared as a set of pairs."""
    if isinstance(v, list):
        return pairs_sorted(v)
    if isinstance(v, tuple) and v[0] == 'map':
        return ('map', pairs_sorted(v[1]))
    return v


def scan_reply(v, grouped):
    """A [cursor, items] SCAN-family reply with cursor 0: its items as a set."""
    if isinstance(v, list) and len(v) == 2 and isinstance(v[1], list):
        return [v[0], pairs_sorted(v[1]) if grouped else sorted(v[1], key=_key)]
    return v


def sort_groups(args, v):
    """SORT of an unordered set: its groups (one element, or one per GET) sorted."""
    n = max(1, sum(1 for a in args if a.upper() == b'GET'))
    if isinstance(v, list):
        return sorted([tuple(v[i : i + n]) for i in range(0, len(v), n)], key=_key)
    return v


def ttl_close(slack):
    """TTL-like replies: equal when negative (no key, no TTL), else within `slack`."""

    def same(got, want):
        g, w = value(got), value(want)
        if isinstance(g, int) and isinstance(w, int) and g >= 0 and w >= 0:
            return abs(g - w) <= slack
        return got == want

    return same


def encoding_alike(got, want):
    """OBJECT ENCODING, with the known string differences tolerated (KNOWN_DIFFERENCES):
    our strings are immutable bytes whose encoding is derived from their content, while
    Redis remembers how the object was made."""
    if got == want:
        return True
    return (want, got) in _STRING_ENCODINGS_TOLERATED


_STRING_ENCODINGS_TOLERATED = {
    (b'$3\r\nraw\r\n', b'$6\r\nembstr\r\n'),
    (b'$3\r\nraw\r\n', b'$3\r\nint\r\n'),
    (b'$6\r\nembstr\r\n', b'$3\r\nint\r\n'),
}

KNOWN_DIFFERENCES = [
    "OBJECT ENCODING of a string changed in place (APPEND, SETRANGE, SETBIT): Redis says "
    "'raw' for good, we say 'int' or 'embstr' by its content",
    "OBJECT ENCODING of an INCRBYFLOAT result that looks like an integer ('3500'): Redis "
    "says 'embstr' (createStringObjectFromLongDouble), we say 'int'",
]


def same_kind_of_reply(got, want):
    """The same error, or both replies of the same RESP type."""
    if got.startswith(b'-') or want.startswith(b'-'):
        return got == want
    return got[:1] == want[:1]


E_SORT_SCORE = b"-ERR One or more scores can't be converted into double\r\n"
LEX_COMMANDS = {b'ZLEXCOUNT', b'ZRANGEBYLEX', b'ZREVRANGEBYLEX', b'ZREMRANGEBYLEX'}


def nil_alike(got, want):
    """DUMP: each server has its own payload format; only nil-ness is comparable."""
    return (value(got) is None) == (value(want) is None)


# -- steps ---------------------------------------------------------------------------------


class Step:
    """One command for both servers. `norm` maps a parsed reply to what is compared (None:
    the exact bytes); `same(got, want)` replaces the comparison altogether; `run` (a
    method of the Runner) replaces the whole step."""

    __slots__ = ('args', 'norm', 'same', 'run', 'keys', 'mutable')

    def __init__(self, *args, norm=None, same=None, run=None, mutable=True):
        self.args = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        self.norm, self.same, self.run = norm, same, run
        self.keys = [a for a in self.args if a in KEYSET]
        self.mutable = mutable and run is None


class Gen:
    """Draws steps. `types` is redis-server's TYPE of every key before the step."""

    def __init__(self, rng, known):
        self.r = rng
        self.known = known
        self.types = {}
        self.used_ttls = set()
        self.tainted = set()  # (db, key) of hashes whose field order may differ
        self.probe = None  # a read-only command on redis-server: its parsed reply
        self.families = []
        for weight, family, needs in (
            (12, self.strings, 'set'),
            (5, self.bitmaps, 'bitfield'),
            (4, self.hyperloglogs, 'pfadd'),
            (3, self.geo, 'geoadd'),
            (16, self.generic, 'del'),
            (14, self.hashes, 'hset'),
            (16, self.lists, 'rpush'),
            (14, self.sets, 'sadd'),
            (20, self.zsets, 'zadd'),
            (3, self.sort, 'sort'),
        ):
            if needs in known:
                self.families.append((weight, family))

    # pools
    def pick(self, pool):
        if isinstance(pool, Pool):
            pool = pool.valid if not pool.bad or self.r.random() < 0.88 else pool.bad
        return self.r.choice(pool)

    def chance(self, p):
        return self.r.random() < p

    def key(self, kind=None):
        """A key: usually one of type `kind` or a missing one, sometimes any."""
        r = self.r
        if kind is not None and r.random() < 0.85:
            fit = [k for k in KEYS if self.types.get(k) == kind]
            if fit and r.random() < 0.75:
                return r.choice(fit)
            free = [k for k in KEYS if self.types.get(k, 'none') == 'none']
            if free:
                return r.choice(free)
        return r.choice(KEYS)

    def nkeys(self, kind, lo=1, hi=3):
        return [self.key(kind) for _ in range(self.r.randint(lo, hi))]

    def ttl(self, unit=1):
        """A fresh relative TTL, far from any other: deadlines never tie, so GT/LT/NX/XX
        decide the same on both servers however the test is paced."""
        while True:
            j = self.r.randrange(100, 1_000_000)
            if j not in self.used_ttls:
                self.used_ttls.add(j)
                return b'%d' % (j * 1000 * unit)

    def abs_ttl(self, unit=1):
        return b'%d' % ((int(time.time()) + int(self.ttl())) * unit)

    def step(self):
        r = self.r
        if all(t != 'none' for t in self.types.values()) and r.random() < 0.2:
            # every key is taken: free one now and then, or most commands would only
            # meet keys of the wrong type
            return Step(self.pick([b'DEL', b'UNLINK']), self.pick(KEYS))
        family = r.choices([f for _, f in self.families], [w for w, _ in self.families])[0]
        s = family()
        if s.args[0].lower().decode() not in self.known:
            return self.step()
        if s.mutable and r.random() < 0.03:
            s = self.mutate(s)
        return s

    def mutate(self, s):
        """Wrong arity or a stray argument on purpose (never on a blocking command)."""
        args = list(s.args)
        if len(args) > 1 and self.chance(0.5):
            args = args[: self.r.randrange(1, len(args))]
        else:
            args.insert(self.r.randrange(1, len(args) + 1), self.pick([b'junk', b'1', b'']))
        return Step(*args, norm=s.norm, same=s.same)

    def blocking(self, args, keys, timeout_at, valid=True):
        """A blocking command: inside MULTI (never blocks there) or, when its arguments
        are `valid` and one of its keys exists (it answers at once then), directly with a
        1 s timeout."""
        exists = any(self.types.get(k, 'none') != 'none' for k in keys)
        if valid and exists and self.chance(0.5):
            args = list(args)
            args[timeout_at] = b'1'
            return Step(*args, mutable=False)
        args = list(args)
        args[timeout_at] = self.pick(TIMEOUTS_MULTI)
        return Step(*args, run='multi')

    # -- strings --------------------------------------------------------------------------

    def strings(self):
        r, k, v = self.r, self.key('string'), self.pick(STR_VALUES)
        c = r.randrange(17)
        if c == 0:
            opts = []
            if self.chance(0.3):
                opts.append(self.pick([b'NX', b'XX']))
            if self.chance(0.2):
                opts.append(b'GET')
            if self.chance(0.2):
                opts += self.pick([[b'EX', self.ttl()], [b'PX', self.ttl(1000)], [b'KEEPTTL'],
                                   [b'EX', b'-1'], [b'EX', b'abc']])  # fmt: skip
            return Step(b'SET', k, v, *opts)
        if c == 1:
            return Step(b'GET', k)
        if c == 2:
            return Step(b'APPEND', k, v)
        if c == 3:
            return Step(self.pick([b'INCR', b'DECR']), k)
        if c == 4:
            return Step(self.pick([b'INCRBY', b'DECRBY']), k, self.pick(INTS))
        if c == 5:
            return Step(b'INCRBYFLOAT', k, self.pick(FLOATS))
        if c == 6:
            return Step(b'STRLEN', k)
        if c == 7:
            return Step(b'GETRANGE', k, self.pick(INDEXES), self.pick(INDEXES))
        if c == 8:
            off = self.pick([b'0', b'1', b'3', b'10', b'-1', b'abc', b'600000000'])
            return Step(b'SETRANGE', k, off, v)
        if c == 9:
            ks = self.nkeys('string', 1, 3)
            return Step(b'MSET', *[x for key in ks for x in (key, self.pick(STR_VALUES))])
        if c == 10:
            return Step(b'MGET', *self.nkeys('string', 1, 4))
        if c == 11:
            return Step(b'GETDEL', k)
        if c == 12:
            return Step(b'GETSET', k, v)
        if c == 13:
            return Step(b'SETNX', k, v)
        if c == 14:
            opt = self.pick([[], [b'PERSIST'], [b'EX', self.ttl()], [b'PXAT', self.abs_ttl(1000)]])
            return Step(b'GETEX', k, *opt)
        if c == 15:
            return Step(b'SET', k, self.pick([b'1', b'2', b'3', b'a', b'f0']))  # SORT weights
        return Step(b'LCS', k, self.key('string'), *self.pick([[], [b'LEN'], [b'IDX']]))

    # -- bitmaps --------------------------------------------------------------------------

    def bitmaps(self):
        r, k = self.r, self.key('string')
        bit_offsets = [b'0', b'1', b'7', b'8', b'13', b'40', b'-1', b'abc']
        c = r.randrange(6)
        if c == 0:
            return Step(b'SETBIT', k, self.pick(bit_offsets), self.pick([b'0', b'1', b'2']))
        if c == 1:
            return Step(b'BITCOUNT', k, *self.pick([[], [b'0', b'-1'], [b'1', b'9', b'BIT']]))
        if c == 2:
            rng = self.pick([[], [b'1'], [b'0', b'-1'], [b'-2', b'-1'], [b'3', b'17', b'BIT']])
            return Step(b'BITPOS', k, self.pick([b'0', b'1', b'2']), *rng)
        if c == 3:
            op = self.pick([b'AND', b'OR', b'XOR', b'NOT'])
            return Step(b'BITOP', op, self.key('string'), *self.nkeys('string', 1, 3))
        ops = []
        for _ in range(r.randint(0, 3)):
            if self.chance(0.2):
                ops += [b'OVERFLOW', self.pick([b'WRAP', b'SAT', b'FAIL'])]
            typ = self.pick([b'i1', b'u1', b'i5', b'u8', b'i16', b'u63', b'i64', b'u64'])
            off = self.pick([b'0', b'3', b'#1', b'#5', b'12', b'-1'])
            sub = self.pick([b'GET', b'SET', b'INCRBY'])
            ops += [sub, typ, off] + ([] if sub == b'GET' else [self.pick(INTS)])
        return Step(self.pick([b'BITFIELD', b'BITFIELD', b'BITFIELD_RO']), k, *ops)

    def hyperloglogs(self):
        r, k = self.r, self.key('string')
        c = r.randrange(4)
        if c == 0:
            n = self.pick([0, 1, 3, 40])
            return Step(b'PFADD', k, *[b'm%d' % r.randrange(300) for _ in range(n)])
        if c == 1:
            return Step(b'PFCOUNT', *self.nkeys('string', 1, 3))
        if c == 2:
            return Step(b'PFMERGE', k, *self.nkeys('string', 0, 2))
        return Step(b'GET', k)

    def geo(self):
        """Positions as sorted-set scores (the members, of any score, are shared with the
        sorted-set steps)."""
        r, k = self.r, self.key('zset')
        c = r.randrange(4)
        m = self.pick(MEMBERS)
        if c == 0:
            lon, lat = b'%.5f' % r.uniform(-180, 180), b'%.5f' % r.uniform(-85, 85)
            return Step(b'GEOADD', k, *self.pick([[], [b'NX'], [b'XX', b'CH']]), lon, lat, m)
        if c == 1:
            return Step(b'GEOPOS', k, m, self.pick(MEMBERS))
        if c == 2:
            return Step(b'GEODIST', k, m, self.pick(MEMBERS), self.pick([b'km', b'mi']))
        return Step(
            b'GEOSEARCH', k, b'FROMMEMBER', m, b'BYRADIUS', self.pick([b'100', b'20000']),
            b'km', b'ASC', b'WITHDIST',
        )  # fmt: skip

    # -- generic --------------------------------------------------------------------------

    def generic(self):
        r = self.r
        k = self.key(self.pick(TYPES))
        c = r.randrange(27)
        if c == 0:
            return Step(self.pick([b'DEL', b'UNLINK']), *self.nkeys(None, 1, 3))
        if c == 1:
            return Step(b'EXISTS', *self.nkeys(None, 1, 3))
        if c in (2, 3):
            return Step(b'TYPE', k)
        if c == 4:
            return Step(self.pick([b'RENAME', b'RENAMENX']), k, self.key(None))
        if c == 5:
            opts = []
            if self.chance(0.3):
                opts.append(b'REPLACE')
            if self.chance(0.2):
                opts += [b'DB', self.pick([b'0', b'1', b'1', b'16', b'-1', b'abc'])]
            return Step(b'COPY', k, self.key(None), *opts)
        if c == 6:
            return Step(b'MOVE', k, self.pick([b'1', b'1', b'0', b'16', b'abc']))
        if c == 7 and self.chance(0.3):
            return Step(b'SWAPDB', b'0', b'1')
        if c in (7, 8):
            cmd = self.pick([b'EXPIRE', b'PEXPIRE'])
            t = self.ttl(1000 if cmd == b'PEXPIRE' else 1)
            t = self.pick([t, t, t, b'0', b'-1', b'abc', b'9223372036854775807'])
            opt = self.pick([[], [], [b'NX'], [b'XX'], [b'GT'], [b'LT'], [b'NX', b'XX']])
            return Step(cmd, k, t, *opt)
        if c == 9:
            cmd = self.pick([b'EXPIREAT', b'PEXPIREAT'])
            unit = 1000 if cmd == b'PEXPIREAT' else 1
            t = self.pick([self.abs_ttl(unit), self.abs_ttl(unit), b'1', b'0'])
            return Step(cmd, k, t, *self.pick([[], [b'GT'], [b'LT'], [b'XX']]))
        if c == 10:
            return Step(b'PERSIST', k)
        if c == 11:
            cmd = self.pick([b'TTL', b'PTTL', b'EXPIRETIME', b'PEXPIRETIME'])
            return Step(cmd, k, same=ttl_close(2 if cmd in (b'TTL', b'EXPIRETIME') else 2000))
        if c in (12, 13, 14):
            return Step(b'OBJECT', b'ENCODING', k, same=encoding_alike)
        if c in (15, 16, 17):
            return Step(b'DUMP', k, run='dump_restore')
        if c == 18:
            payload = self.pick([b'garbage', b'', b'x' * 20])
            return Step(b'RESTORE', self.key(None), b'0', payload, *self.pick([[], [b'REPLACE']]))
        if c == 19:
            return Step(b'RANDOMKEY', run='randomkey')
        if c == 20:
            return Step(b'SCAN', run='scan')
        if c == 21:
            return Step(b'KEYS', self.pick(PATTERNS), norm=unordered)
        if c == 22:
            return Step(b'DBSIZE')
        if c == 23:
            return Step(b'TOUCH', *self.nkeys(None, 1, 3))
        if c == 24 and self.chance(0.1):
            return Step(b'FLUSHDB')
        if c == 25 and self.chance(0.3):
            name = self.pick(sorted(CONFIG_CHOICES))
            return Step(b'CONFIG', b'SET', name, self.pick(CONFIG_CHOICES[name]))
        return Step(b'EXISTS', k)

    # -- hashes ---------------------------------------------------------------------------

    def fv(self, n):
        return [x for _ in range(n) for x in (self.pick(FIELDS), self.pick(HVALUES))]

    def hash_order(self, key, grouped):
        """Field order is Redis's only for a listpack hash that never came from a
        hashtable: compare sorted otherwise."""
        if (0, key) in self.tainted or self.types.get(key) != 'hash':
            return pairs if grouped else unordered
        return 'hash-order-pairs' if grouped else 'hash-order'

    def hashes(self):
        r, k = self.r, self.key('hash')
        c = r.randrange(19)
        if c in (0, 1, 2):
            return Step(b'HSET', k, *self.fv(r.randint(1, 3)))
        if c == 3:
            return Step(b'HSETNX', k, self.pick(FIELDS), self.pick(HVALUES))
        if c == 4:
            return Step(b'HMSET', k, *self.fv(r.randint(1, 2)))
        if c == 5:
            return Step(b'HGET', k, self.pick(FIELDS))
        if c == 6:
            return Step(b'HMGET', k, *[self.pick(FIELDS) for _ in range(r.randint(1, 3))])
        if c == 7:
            return Step(b'HGETALL', k, norm=self.hash_order(k, True))
        if c in (8, 9):
            return Step(b'HDEL', k, *[self.pick(FIELDS) for _ in range(r.randint(1, 3))])
        if c == 10:
            return Step(b'HEXISTS', k, self.pick(FIELDS))
        if c == 11:
            return Step(b'HLEN', k)
        if c == 12:
            return Step(b'HSTRLEN', k, self.pick(FIELDS))
        if c == 13:
            return Step(self.pick([b'HKEYS', b'HVALS']), k, norm=self.hash_order(k, False))
        if c == 14:
            return Step(b'HINCRBY', k, self.pick(FIELDS), self.pick(INTS))
        if c == 15:
            return Step(b'HINCRBYFLOAT', k, self.pick(FIELDS), self.pick(FLOATS))
        if c == 16:
            args = [b'HRANDFIELD', k]
            if self.chance(0.8):
                args.append(self.pick(RAND_COUNTS))
                if self.chance(0.5):
                    args.append(self.pick([b'WITHVALUES', b'WITHVALUES', b'junk']))
            return Step(*args, run='random_members')
        if c == 17:
            return Step(b'HSCAN', k, run='collection_scan')
        return Step(b'HSET', k, self.pick(FIELDS), self.pick([b'1', b'2', b'a', b'b']))

    # -- lists ----------------------------------------------------------------------------

    def elems(self, lo=1, hi=3):
        return [self.pick(ELEMENTS) for _ in range(self.r.randint(lo, hi))]

    def lists(self):
        r, k = self.r, self.key('list')
        c = r.randrange(24)
        if c in (0, 1, 2):
            return Step(self.pick([b'LPUSH', b'RPUSH']), k, *self.elems())
        if c == 3:
            return Step(self.pick([b'LPUSHX', b'RPUSHX']), k, *self.elems())
        if c in (4, 5):
            args = [self.pick([b'LPOP', b'RPOP']), k]
            if self.chance(0.4):
                args.append(self.pick(COUNTS))
            return Step(*args)
        if c == 6:
            return Step(b'LLEN', k)
        if c in (7, 8):
            return Step(b'LRANGE', k, self.pick(INDEXES), self.pick(INDEXES))
        if c == 9:
            return Step(b'LINDEX', k, self.pick(INDEXES))
        if c == 10:
            return Step(b'LSET', k, self.pick(INDEXES), self.pick(ELEMENTS))
        if c == 11:
            where = self.pick([b'BEFORE', b'AFTER', b'before', b'middle'])
            return Step(b'LINSERT', k, where, self.pick(ELEMENTS), self.pick(ELEMENTS))
        if c == 12:
            return Step(b'LREM', k, self.pick([b'0', b'1', b'-1', b'2', b'-2', b'abc']),
                        self.pick(ELEMENTS))  # fmt: skip
        if c == 13:
            return Step(b'LTRIM', k, self.pick(INDEXES), self.pick(INDEXES))
        if c == 14:
            args = [b'LPOS', k, self.pick(ELEMENTS)]
            for opt, pool in (
                (b'RANK', [b'1', b'-1', b'2', b'-2', b'0', b'-9223372036854775808', b'abc']),
                (b'COUNT', [b'0', b'1', b'2', b'-1', b'abc']),
                (b'MAXLEN', [b'0', b'1', b'3', b'-1', b'abc']),
            ):
                if self.chance(0.3):
                    args += [opt, self.pick(pool)]
            return Step(*args)
        if c == 15:
            ends = [b'LEFT', b'RIGHT', b'left', b'UP']
            return Step(b'LMOVE', k, self.key('list'), self.pick(ends), self.pick(ends))
        if c == 16:
            return Step(b'RPOPLPUSH', k, self.key('list'))
        if c == 17:
            return self.lmpop(b'LMPOP', [])
        if c == 18:
            ks = self.nkeys('list', 1, 3)
            return self.blocking([self.pick([b'BLPOP', b'BRPOP']), *ks, b'0'], ks, len(ks) + 1)
        if c == 19:
            ends = [b'LEFT', b'RIGHT']
            args = [b'BLMOVE', k, self.key('list'), self.pick(ends), self.pick(ends), b'0']
            return self.blocking(args, [k], 5)
        if c == 20:
            return self.blocking([b'BRPOPLPUSH', k, self.key('list'), b'0'], [k], 3)
        if c == 21:
            return self.lmpop(b'BLMPOP', [b'0'])
        return Step(b'RPUSH', k, self.pick([b'1', b'2', b'3', b'a', b'b', b'10']))

    def lmpop(self, cmd, timeout):
        ks = self.nkeys('list', 1, 3)
        numkeys = self.pick([b'%d' % len(ks)] * 4 + [b'0', b'-1', b'%d' % (len(ks) + 1), b'a'])
        args = [cmd, *timeout, numkeys, *ks, self.pick([b'LEFT', b'RIGHT', b'LEFT', b'MIDDLE'])]
        if self.chance(0.5):
            args += [b'COUNT', self.pick(COUNTS)]
        if cmd == b'BLMPOP':
            return self.blocking(args, ks, 1, numkeys == b'%d' % len(ks))
        return Step(*args)

    # -- sets -----------------------------------------------------------------------------

    def members(self, lo=1, hi=3):
        return [self.pick(MEMBERS) for _ in range(self.r.randint(lo, hi))]

    def set_order(self, key):
        return 'set-order' if self.types.get(key) == 'set' else unordered

    def sets(self):
        r, k = self.r, self.key('set')
        c = r.randrange(22)
        if c in (0, 1, 2):
            return Step(b'SADD', k, *self.members())
        if c in (3, 4):
            return Step(b'SREM', k, *self.members())
        if c == 5:
            return Step(b'SMEMBERS', k, norm=self.set_order(k))
        if c == 6:
            return Step(b'SISMEMBER', k, self.pick(MEMBERS))
        if c == 7:
            return Step(b'SMISMEMBER', k, *self.members())
        if c == 8:
            return Step(b'SCARD', k)
        if c in (9, 10):
            args = [b'SPOP', k]
            if self.chance(0.6):
                args.append(self.pick(COUNTS))
            return Step(*args, run='spop')
        if c == 11:
            args = [b'SRANDMEMBER', k]
            if self.chance(0.8):
                args.append(self.pick(RAND_COUNTS))
            return Step(*args, run='random_members')
        if c == 12:
            return Step(b'SMOVE', k, self.key('set'), self.pick(MEMBERS))
        if c == 13:
            return Step(self.pick([b'SINTER', b'SUNION', b'SDIFF']), *self.nkeys('set'),
                        norm=unordered)  # fmt: skip
        if c == 14:
            cmd = self.pick([b'SINTERSTORE', b'SUNIONSTORE', b'SDIFFSTORE'])
            return Step(cmd, self.key('set'), *self.nkeys('set'))
        if c == 15:
            ks = self.nkeys('set')
            numkeys = self.pick([b'%d' % len(ks)] * 3 + [b'0', b'-1', b'%d' % (len(ks) + 1)])
            args = [b'SINTERCARD', numkeys, *ks]
            if self.chance(0.4):
                args += [b'LIMIT', self.pick([b'0', b'1', b'2', b'-1', b'abc'])]
            return Step(*args)
        if c == 16:
            return Step(b'SSCAN', k, run='collection_scan')
        return Step(b'SADD', k, *self.members(1, 5))

    # -- sorted sets ----------------------------------------------------------------------

    def zsets(self):
        """A sorted-set step. Lex ranges assume one score for all members: on a set with
        several, Redis's answer depends on its skiplist's random levels, so there a lex
        read is compared only by the kind of its reply, and a lex write becomes a ZADD XX
        that gives every member the same score (which makes lex ranges defined again)."""
        s = self.zset_step()
        cmd = s.args[0].upper()
        if cmd in LEX_COMMANDS or cmd in (b'ZRANGE', b'ZRANGESTORE') and b'BYLEX' in s.args:
            src = s.args[2] if cmd == b'ZRANGESTORE' and len(s.args) > 2 else s.args[1]
            if self.types.get(src) == 'zset':
                v = self.probe(b'ZRANGE', src, b'0', b'-1', b'WITHSCORES')
                scores = {repr(x[1]) for x in v} if v and isinstance(v[0], list) else set(v[1::2])
                if len(scores) > 1:
                    if cmd in (b'ZREMRANGEBYLEX', b'ZRANGESTORE'):
                        members = v[::2] if not isinstance(v[0], list) else [x[0] for x in v]
                        score = self.pick([b'0', b'1'])
                        return Step(b'ZADD', src, b'XX', *[x for m in members for x in (score, m)])
                    s.same = same_kind_of_reply
        return s

    def zset_step(self):
        r, k = self.r, self.key('zset')
        c = r.randrange(32)
        if c in (0, 1, 2, 3):
            opts = [o for o in (b'NX', b'XX', b'GT', b'LT', b'CH', b'INCR') if self.chance(0.12)]
            pairs_ = []
            for _ in range(r.randint(1, 3)):
                pairs_ += [self.pick(SCORES), self.pick(ZMEMBERS)]
            return Step(b'ZADD', k, *opts, *pairs_)
        if c == 4:
            return Step(b'ZREM', k, *[self.pick(ZMEMBERS) for _ in range(r.randint(1, 3))])
        if c == 5:
            return Step(b'ZCARD', k)
        if c == 6:
            return Step(b'ZSCORE', k, self.pick(ZMEMBERS))
        if c == 7:
            return Step(b'ZMSCORE', k, *[self.pick(ZMEMBERS) for _ in range(r.randint(1, 3))])
        if c == 8:
            return Step(b'ZINCRBY', k, self.pick(INCRS), self.pick(ZMEMBERS))
        if c == 9:
            return Step(b'ZCOUNT', k, self.pick(SCORE_RANGES), self.pick(SCORE_RANGES))
        if c == 10:
            return Step(b'ZLEXCOUNT', k, self.pick(LEX_RANGES), self.pick(LEX_RANGES))
        if c in (11, 12, 13):
            return Step(b'ZRANGE', k, *self.zrange_spec(True))
        if c == 14:
            return Step(b'ZRANGESTORE', self.key('zset'), k, *self.zrange_spec(False))
        if c == 15:
            cmd = self.pick([b'ZREVRANGE', b'ZRANGEBYSCORE', b'ZREVRANGEBYSCORE',
                             b'ZRANGEBYLEX', b'ZREVRANGEBYLEX'])  # fmt: skip
            if cmd == b'ZREVRANGE':
                args = [self.pick(INDEXES), self.pick(INDEXES)]
            elif b'LEX' in cmd:
                args = [self.pick(LEX_RANGES), self.pick(LEX_RANGES)]
            else:
                args = [self.pick(SCORE_RANGES), self.pick(SCORE_RANGES)]
            if b'LEX' not in cmd and self.chance(0.4):
                args.append(b'WITHSCORES')
            if cmd != b'ZREVRANGE' and self.chance(0.3):
                args += [b'LIMIT', self.pick(INDEXES), self.pick(COUNTS)]
            return Step(cmd, k, *args)
        if c == 16:
            return Step(self.pick([b'ZRANK', b'ZREVRANK']), k, self.pick(ZMEMBERS))
        if c == 17:
            cmd = self.pick([b'ZREMRANGEBYSCORE', b'ZREMRANGEBYRANK', b'ZREMRANGEBYLEX'])
            pool = {b'ZREMRANGEBYSCORE': SCORE_RANGES, b'ZREMRANGEBYRANK': INDEXES}.get(
                cmd, LEX_RANGES
            )
            return Step(cmd, k, self.pick(pool), self.pick(pool))
        if c in (18, 19):
            args = [self.pick([b'ZPOPMIN', b'ZPOPMAX']), k]
            if self.chance(0.5):
                args.append(self.pick(COUNTS))
            return Step(*args)
        if c == 20:
            return self.zmpop(b'ZMPOP', [])
        if c == 21:
            ks = self.nkeys('zset', 1, 3)
            cmd = self.pick([b'BZPOPMIN', b'BZPOPMAX'])
            return self.blocking([cmd, *ks, b'0'], ks, len(ks) + 1)
        if c == 22:
            return self.zmpop(b'BZMPOP', [b'0'])
        if c == 23:
            args = [b'ZRANDMEMBER', k]
            if self.chance(0.8):
                args.append(self.pick(RAND_COUNTS))
                if self.chance(0.5):
                    args.append(self.pick([b'WITHSCORES', b'WITHSCORES', b'junk']))
            return Step(*args, run='random_members')
        if c in (24, 25):
            cmd = self.pick([b'ZUNION', b'ZINTER', b'ZDIFF'])
            return Step(cmd, *self.zalgebra(cmd, True))
        if c in (26, 27):
            cmd = self.pick([b'ZUNIONSTORE', b'ZINTERSTORE', b'ZDIFFSTORE'])
            return Step(cmd, self.key('zset'), *self.zalgebra(cmd, False))
        if c == 28:
            ks = self.nkeys(self.pick(['zset', 'zset', 'set']))
            numkeys = self.pick([b'%d' % len(ks)] * 3 + [b'0', b'-1', b'%d' % (len(ks) + 1)])
            args = [b'ZINTERCARD', numkeys, *ks]
            if self.chance(0.4):
                args += [b'LIMIT', self.pick([b'0', b'1', b'2', b'-1', b'abc'])]
            return Step(*args)
        if c == 29:
            return Step(b'ZSCAN', k, run='collection_scan')
        if c == 30:  # one score for all: lex ranges are defined
            members = [self.pick(ZMEMBERS) for _ in range(r.randint(1, 4))]
            return Step(b'ZADD', k, *[x for m in members for x in (b'0', m)])
        return Step(b'ZADD', k, self.pick([b'1', b'2', b'3']), self.pick(ZMEMBERS))

    def zrange_spec(self, withscores):
        mode = self.pick([None, None, b'BYSCORE', b'BYLEX'])
        if mode is None:
            args = [self.pick(INDEXES), self.pick(INDEXES)]
        elif mode == b'BYSCORE':
            args = [self.pick(SCORE_RANGES), self.pick(SCORE_RANGES), mode]
        else:
            args = [self.pick(LEX_RANGES), self.pick(LEX_RANGES), mode]
        if self.chance(0.3):
            args.append(b'REV')
        if self.chance(0.4 if mode else 0.05):  # LIMIT needs BYSCORE or BYLEX
            args += [b'LIMIT', self.pick(INDEXES), self.pick(COUNTS)]
        if withscores and self.chance(0.4):
            args.append(b'WITHSCORES')
        return args

    def zmpop(self, cmd, timeout):
        ks = self.nkeys('zset', 1, 3)
        numkeys = self.pick([b'%d' % len(ks)] * 4 + [b'0', b'-1', b'%d' % (len(ks) + 1)])
        args = [cmd, *timeout, numkeys, *ks, self.pick([b'MIN', b'MAX', b'MIN', b'LOW'])]
        if self.chance(0.5):
            args += [b'COUNT', self.pick(COUNTS)]
        if cmd == b'BZMPOP':
            return self.blocking(args, ks, 1, numkeys == b'%d' % len(ks))
        return Step(*args)

    def zalgebra(self, cmd, withscores):
        ks = self.nkeys(self.pick(['zset', 'zset', 'set']), 1, 3)
        numkeys = self.pick([b'%d' % len(ks)] * 5 + [b'0', b'-1', b'%d' % (len(ks) + 1)])
        args = [numkeys, *ks]
        if cmd not in (b'ZDIFF', b'ZDIFFSTORE') or self.chance(0.1):
            if self.chance(0.3):
                weights = [b'1', b'2', b'-1', b'0', b'0.5', b'inf', b'abc']
                args += [b'WEIGHTS', *[self.pick(weights) for _ in ks]]
            if self.chance(0.3):
                args += [b'AGGREGATE', self.pick([b'SUM', b'MIN', b'MAX', b'AVG'])]
        if withscores and self.chance(0.5):
            args.append(b'WITHSCORES')
        return args

    # -- SORT -----------------------------------------------------------------------------

    def sort(self):
        r = self.r
        k = self.key(self.pick(['list', 'set', 'zset']))
        ro = 'sort_ro' in self.known and self.chance(0.2)
        args = [b'SORT_RO' if ro else b'SORT', k]
        by = None
        if self.chance(0.4):
            by = self.pick([b'nosort', b'w_*', b'w_*->f0', b'nokey_*', b'w_*->'])
            args += [b'BY', by]
        alpha = self.chance(0.4)
        # Redis leaves open the order of a set it does not sort (BY nosort), and when
        # ALPHA compares BY values, the order of ties (sortCompare breaks only numeric
        # ties) among the elements of a set or sorted set, which it reads in hash order:
        # such a reply is compared sorted, and neither cut by LIMIT nor STOREd.
        kind = self.types.get(k)
        unordered_set = (kind == 'set' and by == b'nosort') or (
            kind in ('set', 'zset') and by not in (None, b'nosort') and alpha
        )
        if self.chance(0.3) and not unordered_set:
            args += [b'LIMIT', self.pick([b'0', b'1', b'-1', b'abc']), self.pick(SMALL_COUNTS)]
        gets = 0
        while self.chance(0.3) and gets < 3:
            args += [b'GET', self.pick([b'#', b'w_*', b'w_*->f0', b'nokey_*', b'#->f0'])]
            gets += 1
        if self.chance(0.3):
            args.append(self.pick([b'ASC', b'DESC']))
        if alpha:
            args.append(b'ALPHA')
        if unordered_set:
            return Step(*args, norm='sort-groups')
        if not ro and self.chance(0.3):
            args += [b'STORE', self.key('list')]
        if r.random() < 0.03:
            args.append(self.pick([b'junk', b'LIMIT']))
        return Step(*args)


# -- the runner ---------------------------------------------------------------------------


class Mismatch(AssertionError):
    def __init__(self, text, both_errors, kind):
        super().__init__(text)
        self.both_errors = both_errors
        self.kind = kind  # what makes two mismatches the same one, for KEEP_GOING


# The command, run by a script instead (run(..., via_script=True)): every reply then
# crosses into Lua and back, as redis.call and the script's return convert it.
VIA_SCRIPT = b'return redis.call(unpack(ARGV))'


class Runner:
    def __init__(self, ours_port, ref_port, proto, seed, steps, via_script=False):
        self.via_script = via_script
        self.ours = RawConn(ours_port, proto=proto)
        self.ref = RawConn(ref_port, proto=proto)
        self.proto, self.seed, self.steps = proto, seed, steps
        self.ref_port = ref_port
        self.history = collections.deque(maxlen=3000)
        self.mismatches = {}
        self.n = 0
        known = set(command_flags(ours_port, COMMAND_NAMES)) | {'object', 'config'}
        self.readonly = {
            name.encode()
            for name, flags in command_flags(ref_port, COMMAND_NAMES).items()
            if 'write' not in flags
        }
        self.gen = Gen(random.Random(seed), known)
        self.gen.probe = lambda *args: value(self.ref.cmd(*args))
        self.known = known

    def close(self):
        self.ours.close()
        self.ref.close()

    # raw traffic
    def both(self, *args):
        data = pack(*args)
        self.ours.send(data)
        self.ref.send(data)
        return self.ours.read_reply(), self.ref.read_reply()

    def each(self, ours_args, ref_args):
        self.ours.send(pack(*ours_args))
        self.ref.send(pack(*ref_args))
        return self.ours.read_reply(), self.ref.read_reply()

    def ref_types(self):
        self.ref.send(b''.join(pack(b'TYPE', k) for k in KEYS))
        types = {}
        for k in KEYS:
            v = value(self.ref.read_reply())
            types[k] = v[1].decode() if isinstance(v, tuple) else 'none'
        return types

    def record(self, args, got, want):
        self.history.append((self.n, args, got, want))

    # failure report
    def fail(self, args, got, want, why=''):
        keys = {a for a in args if a in KEYSET}
        glob = (b'SWAPDB', b'FLUSHDB', b'CONFIG', b'SELECT')
        related = [
            h
            for h in self.history
            if h[0] != self.n
            if keys & set(h[1]) or h[1][0].upper() in glob
            if h[1][0].lower() not in self.readonly and not h[3].startswith(b'-')
        ][-HISTORY:]
        lines = [
            f'random-diff mismatch: seed={self.seed} (RANDOM_DIFF_SEED={self.seed}) '
            f'resp{self.proto} step {self.n} of {self.steps}',
            f'command: {fmt_args(args)}',
            f'ours:  {got!r}',
            f'redis: {want!r}',
        ]
        if why:
            lines.append(f'why: {why}')
        lines.append('earlier writes to these keys (step: command -> ours | redis):')
        for n, a, g, w in related:
            same = '' if g == w else '   <-- differ (normalized equal)'
            lines.append(f'  {n}: {fmt_args(a)} -> {g!r:.120} | {w!r:.120}{same}')
        errors = all(isinstance(x, bytes) and x.startswith(b'-') for x in (got, want))
        kind = (args[0].upper(), repr(got)[:40], repr(want)[:40])
        raise Mismatch('\n'.join(lines), errors, kind)

    # normal forms
    def normalize(self, norm, args, raw):
        v = value(raw)
        if len(args) < 2:
            return v
        if norm == 'sort-groups':
            return sort_groups(args, v)
        if norm in ('hash-order', 'hash-order-pairs', 'set-order'):
            enc = value(self.ref.cmd(b'OBJECT', b'ENCODING', args[1]))
            if enc in (b'listpack', b'intset'):
                return v
            return pairs(v) if norm == 'hash-order-pairs' else unordered(v)
        return norm(v)

    def compare(self, s, got, want):
        # through a script, the error has the script's name and line after it
        if (
            got != want
            and want.startswith(E_SORT_SCORE[:-2])
            and s.args[0].upper() in (b'SORT', b'SORT_RO')
        ):
            want = self.sort_again(s, got, want)
        if s.same is not None:
            ok = s.same(got, want)
        elif s.norm is not None and got != want:
            ok = self.normalize(s.norm, s.args, got) == self.normalize(s.norm, s.args, want)
        else:
            ok = got == want
        self.record(s.args, got, want)
        if not ok:
            self.fail(s.args, got, want)

    def sort_again(self, s, got, want):
        """redis-server's numeric SORT tests `errno == ERANGE` after strtod without
        clearing errno first (sortCommandGeneric), so any earlier overflow in its process
        (a score of 1e400, ...) can fail a SORT of valid numbers while the connection
        sends nothing else. A new connection resets errno (redis-server's accept loop
        ends on EAGAIN): ask again then; a SORT that failed changed nothing, so running it
        again is the same step."""
        self.record([b'SORT', b'<failed on a stale errno?>'], got, want)
        with RawConn(self.ref_port) as fresh:
            fresh.cmd(b'PING')
        if self.via_script:
            return self.ref.cmd(b'EVAL', VIA_SCRIPT, b'0', *s.args)
        return self.ref.cmd(*s.args)

    # the run
    def run(self):
        """Run the steps; the first mismatch fails the test, or with RANDOM_DIFF_KEEP_GOING
        set, every mismatch is collected (after one that was not two errors, both servers
        are flushed so the run goes on from equal key spaces) and all are listed at the end."""
        gen = self.gen
        for n in range(1, self.steps + 1):
            self.n = n
            try:
                self.one_step(gen)
                if self.n % STATE_EVERY == 0 or n == self.steps:
                    self.compare_state()
            except Mismatch as e:
                if not KEEP_GOING:
                    raise
                self.mismatches.setdefault(e.kind, [str(e), 0])[1] += 1
                self.both(b'SELECT', b'0')
                if not e.both_errors:
                    self.both(b'FLUSHALL')
                    gen.tainted.clear()
        if self.mismatches:
            listed = [f'({n} like this)\n{text}' for text, n in self.mismatches.values()]
            raise AssertionError(f'{len(listed)} kinds of mismatch:\n\n' + '\n\n'.join(listed))

    def one_step(self, gen):
        gen.types = self.ref_types()
        for k, t in gen.types.items():
            if t != 'hash':
                gen.tainted.discard((0, k))
        s = gen.step()
        if s.run is not None:
            getattr(self, 'run_' + s.run)(s)
        else:
            if self.via_script:
                got, want = self.both(b'EVAL', VIA_SCRIPT, b'0', *s.args)
            else:
                got, want = self.both(*s.args)
            self.compare(s, got, want)
            self.track(s.args, want)

    def track(self, args, want):
        """Follow hashes whose field order may differ (see the module doc) through the
        commands that move values between keys."""
        tainted, cmd = self.gen.tainted, args[0].upper()
        if want.startswith(b'-') or len(args) > 2 and args[1] == args[2]:
            return
        if cmd in (b'RENAME', b'RENAMENX') and want in (b'+OK\r\n', b':1\r\n'):
            tainted.discard((0, args[2]))
            if (0, args[1]) in tainted:
                tainted.add((0, args[2]))
        elif cmd == b'MOVE' and want == b':1\r\n':
            if (0, args[1]) in tainted:
                tainted.add((1, args[1]))
            else:
                tainted.discard((1, args[1]))
        elif cmd == b'COPY' and want == b':1\r\n':
            dst = (1 if b'1' in args[3:] else 0, args[2])
            if (0, args[1]) in tainted:
                tainted.add(dst)
            else:
                tainted.discard(dst)
        elif cmd == b'SWAPDB':
            self.gen.tainted = {(1 - db, k) for db, k in tainted}
        elif cmd == b'FLUSHDB':
            self.gen.tainted = {(db, k) for db, k in tainted if db != 0}

    def run_multi(self, s):
        got, want = b'', b''
        for args in ([b'MULTI'], s.args, [b'EXEC']):
            g, w = self.both(*args)
            got, want = got + g, want + w
        self.record([b'MULTI', *s.args, b'EXEC'], got, want)
        if got != want:
            self.fail(s.args, got, want, 'inside MULTI/EXEC')

    def run_dump_restore(self, s):
        """DUMP a key on each server, RESTORE each its own payload into a key."""
        src = s.args[1]
        enc = value(self.ref.cmd(b'OBJECT', b'ENCODING', src))
        got, want = self.both(b'DUMP', src)
        self.record([b'DUMP', src], got, want)
        if not nil_alike(got, want):
            self.fail([b'DUMP', src], got, want)
        g = self.gen
        dst = g.key(None) if g.chance(0.7) else src
        ttl = g.pick([b'0', b'0', b'0', g.ttl(1000), b'-5'])
        opts = []
        if g.chance(0.75):
            opts.append(b'REPLACE')
        if g.chance(0.15):
            opts.append(b'ABSTTL')
            ttl = g.pick([b'1', g.abs_ttl(1000)])
        if g.chance(0.1):
            opts += g.pick([[b'IDLETIME', b'10'], [b'FREQ', b'5'], [b'IDLETIME', b'-1']])
        pg = value(got) if value(got) is not None else b'payload'
        pw = value(want) if value(want) is not None else b'payload'
        rg, rw = self.each([b'RESTORE', dst, ttl, pg, *opts], [b'RESTORE', dst, ttl, pw, *opts])
        args = [b'RESTORE', dst, ttl, b'<DUMP ' + src + b'>', *opts]
        self.record(args, rg, rw)
        if rg != rw:
            self.fail(args, rg, rw)
        if rw == b'+OK\r\n':
            was_hashtable = enc == b'hashtable' and self.gen.types.get(src) == 'hash'
            if was_hashtable or (0, src) in self.gen.tainted:
                self.gen.tainted.add((0, dst))
            else:
                self.gen.tainted.discard((0, dst))

    def run_randomkey(self, s):
        got, want = self.both(b'RANDOMKEY')
        self.record(s.args, got, want)
        g, w = value(got), value(want)
        if (g is None) != (w is None):
            self.fail(s.args, got, want)
        if g is not None:
            if value(self.ours.cmd(b'EXISTS', g)) != 1:
                self.fail(s.args, got, want, 'our RANDOMKEY is not one of our keys')

    def scan_all(self, conn, first, args, grouped):
        """A whole SCAN/HSCAN/... iteration on one server: the items seen, as a set."""
        seen, cursor = set(), b'0'
        for _ in range(1000):
            reply = value(conn.cmd(*first, cursor, *args))
            if not isinstance(reply, list):
                return reply
            cursor, items = reply
            if grouped:
                seen.update(zip(items[::2], items[1::2]))
            else:
                seen.update(items)
            if cursor == b'0':
                return sorted(seen, key=_key)
        raise AssertionError(f'{first} never finished')

    def run_scan(self, s):
        g = self.gen
        args = []
        if g.chance(0.3):
            args += [b'MATCH', g.pick(PATTERNS)]
        if g.chance(0.5):
            args += [b'COUNT', g.pick([b'1', b'2', b'5', b'100', b'0', b'abc'])]
        if g.chance(0.5):
            args += [b'TYPE', g.pick([b'string', b'hash', b'list', b'set', b'zset', b'none',
                                      b'HASH', b'stream'])]  # fmt: skip
        got = self.scan_all(self.ours, [b'SCAN'], args, False)
        want = self.scan_all(self.ref, [b'SCAN'], args, False)
        full = [b'SCAN', b'<cursor>', *args]
        self.record(full, repr(got).encode(), repr(want).encode())
        if got != want:
            self.fail(full, got, want, 'a full SCAN iteration returned different keys')

    def run_collection_scan(self, s):
        g = self.gen
        cmd, key = s.args[0], s.args[1]
        args = []
        if g.chance(0.3):
            args += [b'MATCH', g.pick([b'*', b'f*', b'*1*', b'a', b'[ab]*', b'long*'])]
        if g.chance(0.6):
            args += [b'COUNT', g.pick([b'1', b'2', b'5', b'100', b'0', b'-1', b'abc'])]
        if g.chance(0.05):
            args.append(g.pick([b'TYPE', b'NOVALUES', b'junk']))
        grouped = cmd != b'SSCAN'
        got = self.scan_all(self.ours, [cmd, key], args, grouped)
        want = self.scan_all(self.ref, [cmd, key], args, grouped)
        full = [cmd, key, b'<cursor>', *args]
        self.record(full, repr(got).encode(), repr(want).encode())
        if got != want:
            self.fail(full, got, want, 'a full iteration returned different items')

    def contents(self, conn, key, kind):
        """The value of `key` on one server, as a comparable dict/list, or None."""
        if kind == 'hash':
            v = value(conn.cmd(b'HGETALL', key))
            items = v[1] if isinstance(v, tuple) else v
            return dict(zip(items[::2], items[1::2]))
        if kind == 'set':
            v = value(conn.cmd(b'SMEMBERS', key))
            return set(v[1] if isinstance(v, tuple) else v)
        if kind == 'zset':
            v = value(conn.cmd(b'ZRANGE', key, b'0', b'-1', b'WITHSCORES'))
            if v and isinstance(v[0], list):  # RESP3: [member, score] pairs
                return {m: sc[1] for m, sc in v}
            return dict(zip(v[::2], v[1::2]))
        return None

    def run_random_members(self, s):
        """SRANDMEMBER / HRANDFIELD / ZRANDMEMBER: the same size and kind of reply, members
        of each server's own value (distinct for a positive count), and everything
        (sorted) when the count covers the whole value."""
        got, want = self.both(*s.args)
        self.record(s.args, got, want)
        if got == want:
            return
        g, w = unwrap_set(value(got)), unwrap_set(value(want))
        kind = {b'SRANDMEMBER': 'set', b'HRANDFIELD': 'hash', b'ZRANDMEMBER': 'zset'}
        kind = kind[s.args[0].upper()]
        if not isinstance(w, (list, bytes)) or type(g) is not type(w):
            self.fail(s.args, got, want)
        with_values = len(s.args) > 3
        ours_value = self.contents(self.ours, s.args[1], kind)
        ref_value = self.contents(self.ref, s.args[1], kind)

        def items(v):
            if isinstance(v, bytes):
                return [v]
            if with_values:
                if v and isinstance(v[0], list):
                    return [tuple(p) for p in v]
                return list(zip(v[::2], v[1::2]))
            return list(v)

        def valid(its, val):
            for it in its:
                if isinstance(it, tuple):
                    score = val.get(it[0]) if isinstance(val, dict) else None
                    shown = it[1][1] if isinstance(it[1], tuple) else it[1]
                    if score is None or (score[1] if isinstance(score, tuple) else score) != shown:
                        return False
                elif it not in val:
                    return False
            return True

        gi, wi = items(g), items(w)
        if len(gi) != len(wi):
            self.fail(s.args, got, want, 'different numbers of random members')
        if not valid(gi, ours_value) or not valid(wi, ref_value):
            self.fail(s.args, got, want, 'a random member that is not in the value')
        count = int(s.args[2]) if len(s.args) > 2 else None
        if count is not None and count > 0 and ref_value is not None:
            if len(set(gi)) != len(gi):
                self.fail(s.args, got, want, 'repeated members for a positive count')
            if count >= len(ref_value) and sorted(gi, key=_key) != sorted(wi, key=_key):
                self.fail(s.args, got, want, 'the whole value differs')

    def run_spop(self, s):
        """SPOP: each server pops members of its own choosing. Check that they are members
        of the set and as many as redis-server popped; then put both sets in the same state,
        chosen by the test's seeded generator (SADD back what a server popped, SREM the
        chosen members), so the key spaces stay equal and a seed replays the same run."""
        key = s.args[1]
        before = None
        if self.gen.types.get(key) == 'set' and 'smembers' in self.known:
            before = self.contents(self.ours, key, 'set'), self.contents(self.ref, key, 'set')
            if before[0] != before[1]:
                self.fail([b'SMEMBERS', key], before[0], before[1], 'set differs before SPOP')
            before = before[1]
        got, want = self.both(*s.args)
        self.record(s.args, got, want)
        g, w = value(got), value(want)
        if before is None or isinstance(w, tuple) and w[0] == '-' or w is None:
            if got != want:
                self.fail(s.args, got, want)
            return
        if type(g) is not type(w):
            self.fail(s.args, got, want)
        gi = [g] if isinstance(g, bytes) else unwrap_set(g)
        wi = [w] if isinstance(w, bytes) else unwrap_set(w)
        if len(gi) != len(wi) or len(set(gi)) != len(gi) or not set(gi) <= before:
            self.fail(s.args, got, want, 'SPOP popped something else than redis-server')
        if len(wi) == len(before):
            if sorted(gi) != sorted(wi):
                self.fail(s.args, got, want, 'SPOP of the whole set')
            return
        after = self.contents(self.ours, key, 'set')
        if after != before - set(gi):
            self.fail(s.args, got, want, 'our set after SPOP is not the set less the popped')
        chosen = set(self.gen.r.sample(sorted(before), len(wi)))
        # SPOP_MOVE_STRATEGY_MUL: when few members remain, Redis builds a new set of them
        # (an intset if they allow it); SINTERSTORE of the set into itself builds it again
        # from the members the generator chose
        rebuilt = len(s.args) > 2 and (len(before) - len(wi)) * 5 <= len(wi)
        for conn, popped in ((self.ours, set(gi)), (self.ref, set(wi))):
            if popped - chosen:
                conn.cmd(b'SADD', key, *sorted(popped - chosen))
            if chosen - popped:
                conn.cmd(b'SREM', key, *sorted(chosen - popped))
            if rebuilt:
                conn.cmd(b'SINTERSTORE', key, key)

    # whole key space
    def compare_state(self):
        for db in (b'1', b'0'):
            self.both(b'SELECT', db)
            for key in KEYS:
                self.compare_key(db, key)

    def compare_key(self, db, key):
        def check(args, same=None):
            got, want = self.both(*args)
            ok = same(got, want) if same else got == want
            if not ok:
                self.fail([b'SELECT', db, b'|', *args], got, want, 'key space comparison')
            return want

        t = value(check([b'TYPE', key]))[1].decode()
        if t == 'none':
            return
        check([b'OBJECT', b'ENCODING', key], encoding_alike)
        check([b'TTL', key], ttl_close(2))
        if t == 'string':
            check([b'GET', key])
        elif t == 'list' and 'lrange' in self.known:
            check([b'LRANGE', key, b'0', b'-1'])
        elif t == 'zset' and 'zrange' in self.known:
            check([b'ZRANGE', key, b'0', b'-1', b'WITHSCORES'])
        elif t == 'set' and 'smembers' in self.known:
            g, w = self.contents(self.ours, key, t), self.contents(self.ref, key, t)
            if g != w:
                self.fail([b'SELECT', db, b'|', b'SMEMBERS', key], g, w, 'key space comparison')
        elif t == 'hash' and 'hgetall' in self.known:
            ordered = (int(db), key) not in self.gen.tainted
            got, want = self.both(b'HGETALL', key)
            enc = value(self.ref.cmd(b'OBJECT', b'ENCODING', key))
            if not (ordered and enc == b'listpack'):
                got, want = pairs(value(got)), pairs(value(want))
            if got != want:
                self.fail([b'SELECT', db, b'|', b'HGETALL', key], got, want, 'key space')


def unwrap_set(v):
    """A RESP3 set reply's items (an array as it is)."""
    return v[1] if isinstance(v, tuple) and v[0] == 'set' else v


def fmt_args(args):
    return ' '.join(repr(a)[1:] if isinstance(a, bytes) else str(a) for a in args)


COMMAND_NAMES = """
set get append incr decr incrby decrby incrbyfloat strlen getrange setrange mset mget
getdel getset setnx getex lcs
del unlink exists type rename renamenx copy move swapdb expire pexpire expireat pexpireat
persist ttl pttl expiretime pexpiretime object dump restore randomkey scan keys dbsize
touch flushdb config
hset hsetnx hmset hget hmget hgetall hdel hexists hlen hstrlen hkeys hvals hincrby
hincrbyfloat hrandfield hscan
lpush rpush lpushx rpushx lpop rpop llen lrange lindex lset linsert lrem ltrim lpos lmove
rpoplpush lmpop blpop brpop blmove brpoplpush blmpop
sadd srem smembers sismember smismember scard spop srandmember smove sinter sunion sdiff
sinterstore sunionstore sdiffstore sintercard sscan
zadd zrem zcard zscore zmscore zincrby zcount zlexcount zrange zrangestore zrevrange
zrangebyscore zrevrangebyscore zrangebylex zrevrangebylex zrank zrevrank zremrangebyscore
zremrangebyrank zremrangebylex zpopmin zpopmax zmpop bzpopmin bzpopmax bzmpop zrandmember
zunion zinter zdiff zunionstore zinterstore zdiffstore zintercard zscan
sort sort_ro
""".split()  # noqa: SIM905


# -- the servers and the tests ------------------------------------------------------------


@pytest.fixture(scope='module')
def servers():
    """Our server (a process of its own) and redis-server, with the same small encoding
    thresholds."""
    config = [x for name, v in CONFIG.items() for x in ('--' + name, v.decode())]
    ours, ours_port = spawn_store(*config)
    ref, ref_port = spawn_redis(*config)
    yield ours_port, ref_port
    stop(ours)
    stop(ref)


def run(servers, proto, default_seed, default_steps, via_script=False):
    if ENV_SEED == 'random':
        seed = random.randrange(10**9)
    else:
        seed = int(ENV_SEED) if ENV_SEED else default_seed
    steps = int(ENV_STEPS) if ENV_STEPS else default_steps
    ours_port, ref_port = servers
    for port in servers:
        with RawConn(port) as c:
            assert c.cmd('FLUSHALL') == b'+OK\r\n'
            for name, v in CONFIG.items():
                assert c.cmd('CONFIG', 'SET', name, v) == b'+OK\r\n'
    runner = Runner(ours_port, ref_port, proto, seed, steps, via_script)
    try:
        families = ', '.join(f.__name__ for _, f in runner.gen.families)
        print(
            f'random-diff: seed {seed}, {steps} steps, RESP{proto}; '
            f'{len(runner.known)} commands known to both, families: {families}'
        )
        runner.run()
    finally:
        runner.close()


def test_random_commands_resp2(servers):
    run(servers, 2, 20240610, 12000)


def test_random_commands_resp3(servers):
    run(servers, 3, 77001, 6000)


@pytest.mark.parametrize('proto', [2, 3], ids=['resp2', 'resp3'])
def test_random_commands_through_a_script(servers, proto):
    """The same random commands, each run by EVAL through redis.call: every reply type
    crosses into Lua and back (scripting/redis_api.py's conversions, sandbox.lua's reply)."""
    run(servers, proto, 424242 + proto, 4000, via_script=True)


@pytest.mark.slow
def test_random_commands_many_seeds(servers):
    """Ten more seeds, a third of them in RESP3 (a few minutes)."""
    for i in range(10):
        run(servers, 2 if i % 3 else 3, 1000 + i, 20000)
