"""The multi-part append-only file, Redis 7.0's layout, readable by redis-server 7.0 and
able to read what it writes.

Layout: `dir`/`appenddirname` holds a manifest (`appendfilename`.manifest) naming one base
file (`<name>.N.base.rdb`, an RDB image, or `<name>.N.base.aof`, commands), the history
files a rewrite left (deleted once the new manifest is on disk) and the incremental files
(`<name>.M.incr.aof`) of RESP commands, replayed in order after the base.

Propagation. While the AOF is on, or replicas follow the stream (store/replication.py gets
each batch written here too), the handler of every command whose flags include `write` is
wrapped (`_install`): after the command ran without error it is encoded and queued,
rewritten first where replaying it as sent would not give the same result (relative
expiries made absolute, SPOP as SREM, XADD's `*` as the id it got, blocking commands as
their non-blocking form: `_REWRITES`). Nothing is wrapped otherwise, so it costs nothing
then. Keys deleted at their deadline arrive as `expired` (from the keyspace) and
are written as DEL before the command that found them; journal entries (store/journal.py
writes its stream directly) arrive as `journal` and are written after the command that
caused them, as `XADD <key> MAXLEN <n> <id> ...` with the id the entry got. MULTI/EXEC and
scripts mark an execution unit (`begin`/`end`): what it wrote is wrapped in MULTI ... EXEC
when there is more than one command, as Redis 7.0 propagates.

Writing. Queued commands leave in one write(2) per loop turn (a callback scheduled when
the queue fills), as Redis writes once in beforeSleep. With appendfsync always the
connection writes and fsyncs them before its replies leave (Connection.flush), so a reply
is never sent for a write that is not on disk; everysec fsyncs in a worker thread once a
second (Redis's bio), so a replied write may reach the kernel a loop turn later, within
what everysec may lose anyway; no leaves fsync to the kernel.

Rewrite (BGREWRITEAOF, automatic, turning the AOF on). The snapshot (snapshot.py) writes a
point-in-time image of the keyspace as of the moment it starts, so Redis 7.0's multi-part
rewrite is simple here: at that same moment a new incr file is opened and every later
write goes there; when the image is on disk it becomes the new base, the manifest is
replaced (temp file, fsync, rename, fsync of the directory) and the older files deleted.
"""

from __future__ import annotations

import asyncio
import os
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import chain
from typing import Any

import anycrc
import hiredis

from ..request_parser import split_args
from ..resp import NULL_ARRAY as _NULL_ARRAY
from ..resp import OK, RedisError
from ..types.hash import Hash
from ..types.list import List
from ..types.packed import Packed
from ..types.set import Set
from ..types.stream import MAX_ID, Stream, exact_trim_args, format_id
from ..types.zset import ZSet
from .errors import LoadError
from .files import install, remove

ITEMS_PER_CMD = 64  # AOF_REWRITE_ITEMS_PER_CMD: elements per RPUSH/SADD/... of a rewrite
YIELD_EVERY = 1024  # commands replayed between two turns of the loop (-LOADING replies)
FIX_HINT = 'make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>'


_CRC = anycrc.Model('CRC64-REDIS')
_MULTI = b'*1\r\n$5\r\nMULTI\r\n'
_EXEC = b'*1\r\n$4\r\nEXEC\r\n'


# '*n' and n bulk strings as one %-template: one format instead of one per argument
_TEMPLATES = [b'*%d\r\n' % n + b'$%d\r\n%s\r\n' * n for n in range(16)]


def resp_command(args: list[bytes] | tuple[bytes, ...]) -> bytes:
    """One command as a RESP array of bulk strings (what an incr file holds). Every
    propagated write pays this, so it is one format of a template for up to 15 args."""
    n = len(args)
    if n < 16:
        flat: list[int | bytes] = []
        for a in args:
            flat.append(len(a))
            flat.append(a)
        return _TEMPLATES[n] % tuple(flat)
    return b'*%d\r\n' % n + b''.join([b'$%d\r\n%s\r\n' % (len(a), a) for a in args])


def resp_commands(cmds: list[list[bytes]]) -> bytes:
    """Several commands of at most 15 arguments each, RESP-encoded in one format: the
    templates of their arities joined, filled from their arguments and lengths laid out by
    slicing. Every step iterates in C, so a loop turn's commands cost one pass instead of
    one Python call each (the AOF queues plain writes unencoded and encodes them here)."""
    fmt = b''.join(map(_TEMPLATES.__getitem__, map(len, cmds)))
    items = list(chain.from_iterable(cmds))
    flat: list[int | bytes] = [0] * (2 * len(items))
    flat[0::2] = map(len, items)
    flat[1::2] = items
    return fmt % tuple(flat)


class ReplicasOnly(bytes):
    """An encoded command for the replicas' stream and not the file (PUBLISH)."""


class AofOnly(bytes):
    """An encoded command for the file and not the replicas' stream (a script's command
    after redis.set_repl(redis.REPL_AOF))."""


# Where a command goes (Redis's PROPAGATE_AOF, PROPAGATE_REPL): redis.set_repl's flags
TO_AOF = 1
TO_REPLICAS = 2
TO_ALL = TO_AOF | TO_REPLICAS


def _encode_queued(buf: list[Any], replicas: bool = False) -> bytes:
    """The AOF's queue as bytes: encoded pieces as they are, each run of queued argument
    lists encoded at once (resp_commands), in queue order; ReplicasOnly pieces only for
    the `replicas`."""
    out: list[bytes] = []
    run: list[list[bytes]] = []
    for x in buf:
        t = type(x)
        if t is bytes or (t is ReplicasOnly and replicas) or (t is AofOnly and not replicas):
            if run:
                out.append(resp_commands(run))
                run = []
            out.append(x)
        elif t is list:
            run.append(x)
    if run:
        out.append(resp_commands(run))
    return out[0] if len(out) == 1 else b''.join(out)


# -- the manifest --------------------------------------------------------------------------


class Manifest:
    """aofManifest: the base file, the history files and the incr files, with the sequence
    counters new names are taken from."""

    def __init__(self) -> None:
        self.base: tuple[str, int] | None = None  # (file name, seq)
        self.history: list[tuple[str, int]] = []  # (file name, seq), newest first
        self.incrs: list[tuple[str, int]] = []
        self.base_seq = 0
        self.incr_seq = 0

    def copy(self) -> Manifest:
        m = Manifest()
        m.base, m.history, m.incrs = self.base, list(self.history), list(self.incrs)
        m.base_seq, m.incr_seq = self.base_seq, self.incr_seq
        return m

    def render(self) -> bytes:
        """getAofManifestAsString: base first, then history, then incr files."""
        lines = []
        if self.base is not None:
            lines.append(_manifest_line(self.base[0], self.base[1], 'b'))
        for name, seq in self.history:
            lines.append(_manifest_line(name, seq, 'h'))
        for name, seq in self.incrs:
            lines.append(_manifest_line(name, seq, 'i'))
        return ''.join(lines).encode()

    @classmethod
    def parse(cls, data: bytes, log: Any) -> Manifest:
        """aofLoadManifestFromFile, with its checks and messages; LoadError on a bad one
        (the lines Redis logs before the message are logged through `log`)."""
        m = cls()
        maxseq = 0
        linenum = 0
        lines = data.split(b'\n')
        if lines and lines[-1] == b'':
            lines.pop()
            ends_open = False
        else:
            ends_open = bool(lines)  # the last line has no newline
        if not lines:
            _manifest_error(log, 'Found an empty AOF manifest', None, 0)
        for n, raw in enumerate(lines):
            linenum += 1
            if raw[:1] == b'#':
                continue
            text = raw.decode('utf-8', 'surrogateescape')
            if len(raw) + 1 > 1024 or (ends_open and n == len(lines) - 1):
                _manifest_error(log, 'The AOF manifest file contains too long line', None, linenum)
            line = text.strip(' \t\r\n')
            # sdssplitargs: "double quotes" with \n-style escapes, as names are written
            split = split_args(line.encode('utf-8', 'surrogateescape')) if line else None
            argv = [a.decode('utf-8', 'surrogateescape') for a in split or ()]
            if not line or len(argv) < 6 or len(argv) % 2:
                _manifest_error(log, 'Invalid AOF manifest file format', line, linenum)
            name, seq, ftype = None, 0, ''
            for i in range(0, len(argv), 2):
                k, v = argv[i].lower(), argv[i + 1]
                if k == 'file':
                    name = v
                    if '/' in v:
                        _manifest_error(log, "File can't be a path, just a filename", line, linenum)
                elif k == 'seq':
                    seq = _atoll(v)
                elif k == 'type':
                    ftype = v[:1]
            if not name or not seq or not ftype:
                _manifest_error(log, 'Invalid AOF manifest file format', line, linenum)
            assert name is not None
            if ftype == 'b':
                if m.base is not None:
                    _manifest_error(log, 'Found duplicate base file information', line, linenum)
                m.base = (name, seq)
                m.base_seq = seq
            elif ftype == 'h':
                m.history.append((name, seq))
            elif ftype == 'i':
                if seq <= maxseq:
                    _manifest_error(log, 'Found a non-monotonic sequence number', line, linenum)
                m.incrs.append((name, seq))
                m.incr_seq = maxseq = seq
            else:
                _manifest_error(log, 'Unknown AOF file type', line, linenum)
        return m


def _manifest_line(name: str, seq: int, ftype: str) -> str:
    quoted = name if name and not any(c in name for c in ' \t\r\n"\'\\') else _repr(name)
    return f'file {quoted} seq {seq} type {ftype}\n'


def _repr(s: str) -> str:
    """sdscatrepr, for a file name that needs quoting."""
    out = ['"']
    for ch in s:
        if ch in '\\"':
            out.append('\\' + ch)
        elif ch == '\n':
            out.append('\\n')
        elif ch == '\r':
            out.append('\\r')
        elif ch == '\t':
            out.append('\\t')
        else:
            out.append(ch)
    out.append('"')
    return ''.join(out)


def _atoll(s: str) -> int:
    digits = ''
    for i, ch in enumerate(s.lstrip()):
        if ch.isdigit() or (i == 0 and ch in '+-'):
            digits += ch
        else:
            break
    try:
        return int(digits)
    except ValueError:
        return 0


def _manifest_error(log: Any, err: str, line: str | None, linenum: int) -> None:
    log('\n*** FATAL AOF MANIFEST FILE ERROR ***\n', '#')
    if line is not None:
        log(f'Reading the manifest file, at line {linenum}\n', '#')
        log(f">>> '{line}'\n", '#')
    raise LoadError(err)


# -- the rewrite's command encoder (aof-use-rdb-preamble no) ------------------------------


def _double(d: float) -> bytes:
    """rioWriteBulkDouble's "%.17g" (inf and -inf as ZADD reads them)."""
    if d != d:
        return b'nan'
    return b'%.17g' % d


class AofEncoder:
    """The snapshot encoder (protocol in snapshot.py) writing the base as commands, as
    rewriteAppendOnlyFileRio does: SELECT, then per key the commands that rebuild it (at
    most 64 elements each) and its PEXPIREAT."""

    checksum = False

    def __init__(self, timestamps: bool = False) -> None:
        self.timestamps = timestamps  # aof-timestamp-enabled

    def header(self) -> bytes:
        """The base opens with a #TS: annotation when they are on (rewriteAppendOnlyFileRio
        writes one, forced, before anything else)."""
        return b'#TS:%d\r\n' % int(time.time()) if self.timestamps else b''

    def functions(self, codes: list[bytes]) -> bytes:
        return b''.join(resp_command((b'FUNCTION', b'LOAD', code)) for code in codes)

    def select_db(self, db: int, size: int, expires: int) -> bytes:
        return resp_command((b'SELECT', b'%d' % db))

    def footer(self, crc: int) -> bytes:
        return b''

    def key(self, key: bytes, value: Any, deadline: int | None) -> bytes:
        out: list[bytes] = []
        t = type(value)
        if t is Packed:  # left packed at load (types/packed.py): decoded, not stored
            value = Packed.decode(value)
            t = type(value)
        if t is bytes or t is bytearray:
            out.append(resp_command((b'SET', key, bytes(value))))
        elif isinstance(value, List):
            _batched(out, b'RPUSH', key, list(value))
        elif isinstance(value, Set):
            _batched(out, b'SADD', key, list(value))
        elif isinstance(value, Hash):
            flat: list[bytes] = []
            for f, v in value.items():
                flat += (f, v)
            _batched(out, b'HMSET', key, flat, 2)
        elif isinstance(value, ZSet):
            flat = []
            for score, member in value.order:
                flat += (_double(score), member)
            _batched(out, b'ZADD', key, flat, 2)
        elif isinstance(value, Stream):
            _stream_commands(out, key, value)
        else:
            raise TypeError(f'cannot rewrite a value of type {t.__name__}')
        if deadline is not None:
            out.append(resp_command((b'PEXPIREAT', key, b'%d' % deadline)))
        return b''.join(out)


def _batched(out: list[bytes], name: bytes, key: bytes, items: list[bytes], per: int = 1) -> None:
    step = ITEMS_PER_CMD * per
    for i in range(0, len(items), step):
        out.append(resp_command((name, key, *items[i : i + step])))


def _stream_commands(out: list[bytes], key: bytes, s: Stream) -> None:
    """rewriteStreamObject: the entries, XSETID, the groups, their pending entries (as
    XCLAIM ... FORCE JUSTID) and consumers without any."""
    if len(s):
        for i, fields in s.range(0, MAX_ID):
            out.append(resp_command((b'XADD', key, format_id(i), *fields)))
    else:
        out.append(resp_command((b'XADD', key, b'MAXLEN', b'0', b'0-1', b'x', b'y')))
    out.append(
        resp_command(
            (
                b'XSETID',
                key,
                format_id(s.last_id),
                b'ENTRIESADDED',
                b'%d' % s.entries_added,
                b'MAXDELETEDID',
                format_id(s.max_deleted),
            )
        )
    )
    for name, g in s.groups.items():
        out.append(
            resp_command(
                (
                    b'XGROUP',
                    b'CREATE',
                    key,
                    name,
                    format_id(g.last_id),
                    b'ENTRIESREAD',
                    b'%d' % g.entries_read,
                )
            )
        )
        for cname, consumer in g.consumers.items():
            if not len(consumer.pel):
                out.append(resp_command((b'XGROUP', b'CREATECONSUMER', key, name, cname)))
        for i, nack in g.pel.iter_from(0):
            cname = nack.consumer.name if hasattr(nack.consumer, 'name') else nack.consumer
            out.append(
                resp_command(
                    (
                        b'XCLAIM',
                        key,
                        name,
                        cname,
                        b'0',
                        format_id(i),
                        b'TIME',
                        b'%d' % nack.delivery_time,
                        b'RETRYCOUNT',
                        b'%d' % nack.delivery_count,
                        b'JUSTID',
                        b'FORCE',
                    )
                )
            )


# -- propagation: what a command is written as ----------------------------------------------
#
# A rewrite function gets (conn, args, reply) after the command ran and returns the list of
# commands to write (each a list of bytes), or None to write the command as it was sent.
# Commands whose replay gives the same result are written as sent (Redis does the same);
# these are the ones that depend on the time, on chance, or on waiting.


def _deadline_or_del(c: Any, key: bytes) -> list[list[bytes]]:
    """What an expiry command left: PEXPIREAT with the key's deadline, or DEL when the
    deadline was already past and the command deleted the key (as expireGenericCommand
    propagates)."""
    dl = c.ks.deadline(c.db, key)
    if dl is None:
        if c.ks.lookup(c.db, key) is None:
            return [[b'DEL', key]]
        return [[b'PERSIST', key]]
    return [[b'PEXPIREAT', key, b'%d' % dl]]


def _expire(c: Any, args: list[bytes], reply: Any) -> Any:
    if reply != 1:
        return []  # nothing changed (NX/XX/GT/LT not met, no such key)
    return _deadline_or_del(c, args[1])


_SET_TTL = frozenset((b'ex', b'px', b'exat', b'pxat'))


def _set(c: Any, args: list[bytes], reply: Any) -> Any:
    if len(args) == 3:
        return None
    opts = [a.lower() for a in args[3:]]
    # Whether it set the key (else nothing changed, nothing is propagated), from the
    # reply: OK, or with GET the old value, which NX wants missing and XX present
    if b'get' not in opts:
        done = reply is OK
    elif b'nx' in opts:
        done = reply is None
    else:
        done = b'xx' not in opts or reply is not None
    if not done:
        return []
    if not any(o in _SET_TTL for o in opts):
        if b'get' not in opts:
            return None
        # setGenericCommand propagates SET ... GET without its GET arguments
        return [[*args[:3], *(a for a, o in zip(args[3:], opts) if o != b'get')]]
    dl = c.ks.deadline(c.db, args[1])
    if dl is None:
        return []  # not set (NX/XX not met)
    # setGenericCommand rewrites any SET with a TTL (PXAT too) to exactly these five
    # arguments: NX, XX and GET are done with once the key is set
    return [[b'SET', args[1], args[2], b'PXAT', b'%d' % dl]]


def _setex(c: Any, args: list[bytes], reply: Any) -> Any:
    dl = c.ks.deadline(c.db, args[1])
    if dl is None:
        return None
    return [[b'SET', args[1], args[3], b'PXAT', b'%d' % dl]]


def _getex(c: Any, args: list[bytes], reply: Any) -> Any:
    if reply is None or len(args) < 3:
        return []  # no such key, or a plain read
    opt = args[2].lower()
    if opt == b'persist':
        return [[b'PERSIST', args[1]]]
    return _deadline_or_del(c, args[1])


def _restore(c: Any, args: list[bytes], reply: Any) -> Any:
    opts = [a.lower() for a in args[4:]]
    if args[2] == b'0' or b'absttl' in opts:
        return None
    dl = c.ks.deadline(c.db, args[1])
    if dl is None:
        return None
    return [[args[0], args[1], b'%d' % dl, args[3], *args[4:], b'ABSTTL']]


def _spop(c: Any, args: list[bytes], reply: Any) -> Any:
    if reply is None:
        return []
    members = [reply] if type(reply) is bytes else list(reply)
    if not members:
        return []
    return [[b'SREM', args[1], *members]]


def _incrbyfloat(c: Any, args: list[bytes], reply: Any) -> Any:
    return [[b'SET', args[1], reply, b'KEEPTTL']]


def _hincrbyfloat(c: Any, args: list[bytes], reply: Any) -> Any:
    return [[b'HSET', args[1], args[2], reply]]


def _xadd(c: Any, args: list[bytes], reply: Any) -> Any:
    if reply is None:
        return []  # NOMKSTREAM and no stream
    i = 2
    while i < len(args):
        a = args[i].lower()
        if a == b'nomkstream':
            i += 1
        elif a in (b'maxlen', b'minid'):
            i += 1
            if args[i] in (b'=', b'~'):
                i += 1
            i += 1
        elif a == b'limit':
            i += 2
        else:
            break
    approx = b'~' in args[2:i]
    if args[i] == reply and not approx:
        return None
    out = [*args[:i], reply, *args[i + 1 :]]
    if approx:
        out = exact_trim_args(c.ks.lookup_notouch(c.db, args[1]), out)
    return [out]


def _xtrim(c: Any, args: list[bytes], reply: Any) -> Any:
    if not reply:
        return []  # nothing trimmed: nothing changed (server.dirty unchanged)
    if b'~' not in args[2:5]:
        return None
    return [exact_trim_args(c.ks.lookup_notouch(c.db, args[1]), args)]


def _bpop(name: bytes) -> Any:
    """BLPOP/BRPOP/BZPOPMIN/BZPOPMAX as the pop that served them, from the reply's key."""

    def rewrite(c: Any, args: list[bytes], reply: Any) -> Any:
        if not reply:
            return []
        return [[name, reply[0]]]

    return rewrite


def _brpoplpush(c: Any, args: list[bytes], reply: Any) -> Any:
    if reply is None:
        return []
    return [[b'RPOPLPUSH', args[1], args[2]]]


def _blmove(c: Any, args: list[bytes], reply: Any) -> Any:
    if reply is None:
        return []
    return [[b'LMOVE', *args[1:5]]]


def _mpop(left: bytes, right: bytes, at: int) -> Any:
    """BLMPOP/BZMPOP (and LMPOP/ZMPOP) as LPOP/RPOP/ZPOPMIN/ZPOPMAX key count."""

    def rewrite(c: Any, args: list[bytes], reply: Any) -> Any:
        if not reply:
            return []
        numkeys = int(args[at])
        where = args[at + 1 + numkeys].lower()
        name = left if where in (b'left', b'min') else right
        key, items = reply[0], reply[1]
        return [[name, key, b'%d' % len(items)]]

    return rewrite


def _xreadgroup(c: Any, args: list[bytes], reply: Any) -> Any:
    """What XREADGROUP changed, as Redis propagates it: an XCLAIM for each new entry it
    delivered (streamPropagateXCLAIM), or with NOACK the group's new last id (XGROUP
    SETID ... ENTRIESREAD); a read of a consumer's history changes nothing propagated."""
    if not reply:
        return []
    i = 4  # past GROUP <group> <consumer>
    noack = False
    while i < len(args):
        a = args[i].lower()
        if a == b'streams':
            break
        if a == b'noack':
            noack = True
        i += 2 if a in (b'count', b'block') else 1
    rest = args[i + 1 :]
    n = len(rest) // 2
    keys, ids = rest[:n], rest[n:]
    group = args[2]
    out: list[list[bytes]] = []
    for key, entries in reply:
        s = c.ks.lookup(c.db, key)
        g = s.groups.get(group) if type(s) is Stream else None
        created = g is not None and g.new_consumer == args[3]
        if g is not None:
            g.new_consumer = None
        if not entries or ids[keys.index(key)] != b'>':
            continue
        if not noack:  # (an XCLAIM makes its consumer on the replica)
            out += _claim_commands(c, key, group, _entry_ids(entries))
            continue
        if g is not None:
            if created:  # streamPropagateConsumerCreation
                out.append([b'XGROUP', b'CREATECONSUMER', key, group, args[3]])
            last, read = format_id(g.last_id), b'%d' % g.entries_read
            out.append([b'XGROUP', b'SETID', key, group, last, b'ENTRIESREAD', read])
    return out


def _entry_ids(entries: Any) -> list[bytes]:
    """The ids of a reply's entries: [id, fields] pairs, or their encoding (Raw)."""
    if isinstance(entries, bytes):
        reader = hiredis.Reader()
        reader.feed(entries)
        entries = reader.gets()
    return [e[0] for e in entries if e is not None]


def _claim_commands(c: Any, key: bytes, group: bytes, ids: list[bytes]) -> list[list[bytes]]:
    """streamPropagateXCLAIM for each claimed id: the claim with its delivery time and
    count as they are now, so replay does not depend on idle times."""
    s = c.ks.lookup(c.db, key)
    if type(s) is not Stream:
        return []
    g = s.groups.get(group)
    if g is None:
        return []
    out = []
    for idb in ids:
        ms, _, seq = idb.partition(b'-')
        nack = g.pel.get(int(ms) << 64 | int(seq or b'0'))
        if nack is None:
            continue
        out.append(
            [
                b'XCLAIM',
                key,
                group,
                nack.consumer.name,
                b'0',
                idb,
                b'TIME',
                b'%d' % nack.delivery_time,
                b'RETRYCOUNT',
                b'%d' % nack.delivery_count,
                b'FORCE',
                b'JUSTID',
                b'LASTID',
                format_id(g.last_id),
            ]
        )
    return out


def _claimed_ids(items: Any) -> list[bytes]:
    return [x if type(x) is bytes else x[0] for x in items or () if x is not None]


def _xclaim(c: Any, args: list[bytes], reply: Any) -> Any:
    out = _claim_commands(c, args[1], args[2], _claimed_ids(reply))
    s = c.ks.lookup(c.db, args[1])
    if type(s) is Stream and s.claim_drops:
        # a pending entry whose entry was deleted left the PEL: streamPropagateXCLAIM with
        # the entry as it was, which the replica (lacking the entry too) drops likewise
        last = format_id(s.groups[args[2]].last_id)
        for i, consumer, when, count in s.claim_drops:
            out.append(
                [b'XCLAIM', args[1], args[2], consumer, b'0', format_id(i), b'TIME', b'%d' % when]
                + [b'RETRYCOUNT', b'%d' % count, b'FORCE', b'JUSTID', b'LASTID', last]
            )
        s.claim_drops = []
    return out


def _xautoclaim(c: Any, args: list[bytes], reply: Any) -> Any:
    out = _claim_commands(c, args[1], args[2], _claimed_ids(reply[1]))
    deleted = reply[2] if len(reply) > 2 else []
    if deleted:
        out.append([b'XACK', args[1], args[2], *deleted])
    return out


_REWRITES: dict[str, Any] = {
    'expire': _expire,
    'pexpire': _expire,
    'expireat': _expire,
    'pexpireat': _expire,
    'set': _set,
    'getset': lambda c, args, reply: [[b'SET', args[1], args[2]]],  # getsetCommand
    'setex': _setex,
    'psetex': _setex,
    'getex': _getex,
    'getdel': lambda c, args, reply: [] if reply is None else [[b'DEL', args[1]]],  # getdelCommand
    # DEL and UNLINK that deleted nothing changed nothing (server.dirty): not propagated
    'del': lambda c, args, reply: [] if reply == 0 else None,
    'unlink': lambda c, args, reply: [] if reply == 0 else None,
    'restore': _restore,
    'restore-asking': _restore,
    'migrate': lambda c, args, reply: [],  # written as the DEL of the keys it moved
    'spop': _spop,
    'incrbyfloat': _incrbyfloat,
    'hincrbyfloat': _hincrbyfloat,
    'xadd': _xadd,
    'xtrim': _xtrim,
    'blpop': _bpop(b'LPOP'),
    'brpop': _bpop(b'RPOP'),
    'bzpopmin': _bpop(b'ZPOPMIN'),
    'bzpopmax': _bpop(b'ZPOPMAX'),
    'brpoplpush': _brpoplpush,
    'blmove': _blmove,
    'blmpop': _mpop(b'LPOP', b'RPOP', 2),
    'bzmpop': _mpop(b'ZPOPMIN', b'ZPOPMAX', 2),
    'lmpop': _mpop(b'LPOP', b'RPOP', 1),
    'zmpop': _mpop(b'ZPOPMIN', b'ZPOPMAX', 1),
    'xreadgroup': _xreadgroup,
    'xclaim': _xclaim,
    'xautoclaim': _xautoclaim,
}


# -- the AOF -----------------------------------------------------------------------------


class Aof:
    """The server's append-only file (server.persistence.aof)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.manifest: Manifest | None = None
        self.fd = -1  # the incr file commands are appended to, while open
        self.incr_name = ''  # its name (a temp name while turning on)
        # commands not written yet: encoded (bytes), or plain writes' argument lists
        # queued unencoded mid-turn (see _wrapped); buf_len counts the encoded ones
        self.buf: list[Any] = []
        self.buf_len = 0
        # store/replication.py: replicas get the stream too, each entry of `buf` once
        self.replication: Any = None  # the server's Replication, set by the server
        self.replicas_fed = 0  # entries of `buf` already fed to it
        self.replicas_only = False  # `buf` holds a ReplicasOnly or an AofOnly entry
        self.targets = TO_ALL  # where commands go: a script's redis.set_repl sets it
        self.selected_db = -1  # the database the incr file's last SELECT chose
        self.depth = 0  # command handlers running (journal entries wait for them)
        self.after: list[bytes] = []  # journal entries waiting for their command
        self.unit: list[tuple[int, bytes]] | None = None  # commands of an execution unit
        self.unit_depth = 0
        self.installed: dict[Any, Any] = {}  # wrapped Command -> its own handler
        self.write_scheduled = False
        self.last_ts = 0  # the second of the last #TS: annotation
        # sizes (auto rewrite, INFO)
        self.current_size = 0
        self.base_size = 0  # aof_rewrite_base_size
        # fsync
        self.unsynced = False
        self.last_fsync = time.time()
        self.fsync_pending = 0
        self.delayed_fsync = 0
        self.executor: ThreadPoolExecutor | None = None
        # write errors
        self.last_write_ok = True
        self.last_write_error = ''
        # rewrite
        self.rewriting = False
        self.rewrite_scheduled = False
        self.rewrite_started = 0.0
        self.last_rewrite_time = -1
        self.last_rewrite_ok = True
        self.rewrites = 0
        self.consecutive_failures = 0
        self.limit_delay_min = 0  # _rewrite_limited's wait, in minutes, and its end
        self.limit_until = 0.0
        self.turning_on = False  # AOF_WAIT_REWRITE: on, but the base is not made yet
        self.started = False  # start-up is over (the manager's first apply_config)
        # configuration read per command, kept here by apply_config
        self.always = server.config['appendfsync'] == 'always'
        self.timestamps = server.config['aof-timestamp-enabled']
        self.flush_sleep = 0  # DEBUG AOF-FLUSH-SLEEP <us>: a pause before each write

    # -- paths ---------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.server.config['appendfilename']

    def dir_path(self) -> str:
        cfg = self.server.config
        return os.path.join(cfg['dir'], cfg['appenddirname'])

    def path(self, name: str) -> str:
        return os.path.join(self.dir_path(), name)

    def manifest_path(self) -> str:
        return self.path(self.name + '.manifest')

    def log(self, msg: str, level: str = '*') -> None:
        self.server.log(msg, level)

    @property
    def on(self) -> bool:
        return self.fd >= 0

    # -- the manager's interface -----------------------------------------------------------

    def apply_config(self, name: str) -> None:
        cfg = self.server.config
        self.always = cfg['appendfsync'] == 'always'
        self.timestamps = cfg['aof-timestamp-enabled']
        if name == 'appendonly':
            if cfg['appendonly'] and not self.on and not self.turning_on:
                self.start()
            elif not cfg['appendonly'] and (self.on or self.turning_on):
                self.stop()
            self.started = True  # the first call ends start-up (manager.load)
        elif name == 'aof-disable-auto-gc' and not cfg[name]:
            self._delete_history()  # updateAofAutoGCEnabled: what waited goes now

    def cron(self, now: float) -> None:
        if self.buf:
            self.write()
        if not self.on:
            if self.rewrite_scheduled and not self.rewriting:
                self._try_scheduled()
            return
        policy = self.server.config['appendfsync']
        if policy == 'everysec' and self.unsynced and now - self.last_fsync >= 1:
            self._fsync_in_background()
        if self.rewriting:
            return
        if self.rewrite_scheduled:
            self._try_scheduled()
            return
        cfg = self.server.config
        perc = cfg['auto-aof-rewrite-percentage']
        if (
            perc
            and not self.turning_on
            and self.server.persistence.snapshot is None  # !hasActiveChildProcess()
            and self.current_size > cfg['auto-aof-rewrite-min-size']
        ):
            base = self.base_size or 1
            growth = self.current_size * 100 // base - 100
            if growth >= perc and not self._rewrite_limited():
                self.log(f'Starting automatic rewriting of AOF on {growth}% growth')
                try:
                    self.start_rewrite()
                except RedisError:
                    pass

    def _rewrite_limited(self) -> bool:
        """aofRewriteLimited: after 3 rewrites failed in a row, automatic ones wait 1
        minute, then 2, 4... up to an hour between tries, each wait logged once."""
        if self.consecutive_failures < 3:
            self.limit_delay_min = 0
            self.limit_until = 0.0
            return False
        if self.limit_until:
            if time.time() < self.limit_until:
                return True
            self.limit_until = 0.0
            return False
        self.limit_delay_min = min(self.limit_delay_min * 2 or 1, 60)
        self.limit_until = time.time() + self.limit_delay_min * 60
        self.log(
            'Background AOF rewrite has repeatedly failed and triggered the limit, '
            f'will retry in {self.limit_delay_min} minutes',
            '#',
        )
        return True

    def _try_scheduled(self) -> None:
        try:
            if self.start_rewrite():
                self.rewrite_scheduled = False
        except RedisError:
            pass

    def _sync(self) -> None:
        """Everything queued written, and the incr file fsynced."""
        if self.buf:
            self.write()
        if self.fd >= 0:
            try:
                os.fsync(self.fd)
            except OSError:
                pass

    def close(self) -> None:
        """Shutdown: everything written and fsynced."""
        self._sync()
        if self.executor is not None:
            self.executor.shutdown(wait=True)
            self.executor = None

    def info(self) -> list[tuple[str, Any]]:
        enabled = self.server.config['appendonly']
        fields: list[tuple[str, Any]] = [
            ('aof_enabled', int(bool(enabled))),
            ('aof_rewrite_in_progress', int(self.rewriting)),
            ('aof_rewrite_scheduled', int(self.rewrite_scheduled)),
            ('aof_last_rewrite_time_sec', self.last_rewrite_time),
            (
                'aof_current_rewrite_time_sec',
                int(time.time() - self.rewrite_started) if self.rewriting else -1,
            ),
            ('aof_last_bgrewrite_status', 'ok' if self.last_rewrite_ok else 'err'),
            ('aof_rewrites', self.rewrites),
            ('aof_rewrites_consecutive_failures', self.consecutive_failures),
            ('aof_last_write_status', 'ok' if self.last_write_ok else 'err'),
            ('aof_last_cow_size', 0),
            ('module_fork_in_progress', 0),
            ('module_fork_last_cow_size', 0),
        ]
        if enabled:
            fields += [
                ('aof_current_size', self.current_size),
                ('aof_base_size', self.base_size),
                ('aof_pending_rewrite', int(self.rewrite_scheduled)),
                ('aof_buffer_length', self.buffer_length()),
                ('aof_pending_bio_fsync', self.fsync_pending),
                ('aof_delayed_fsync', self.delayed_fsync),
            ]
        return fields

    def buffer_length(self) -> int:
        """The bytes queued for the next write (queued argument lists as encoded)."""
        return self.buf_len + sum(len(resp_command(x)) for x in self.buf if type(x) is list)

    def rewrite(self) -> str:
        """BGREWRITEAOF's reply, or RedisError."""
        if self.rewriting:
            raise RedisError('ERR Background append only file rewriting already in progress')
        p = self.server.persistence
        if p.snapshot is not None or self.unit_depth:
            self.rewrite_scheduled = True
            return 'Background append only file rewriting scheduled'
        if not self.start_rewrite():
            self.rewrite_scheduled = True
            return 'Background append only file rewriting scheduled'
        return 'Background append only file rewriting started'

    # -- turning on and off --------------------------------------------------------------

    def _load_manifest(self) -> Manifest:
        """The manifest on disk (empty when there is none), as aofLoadManifestFromDisk."""
        path = self.manifest_path()
        if not os.path.isdir(self.dir_path()) or not os.path.exists(path):
            return Manifest()
        try:
            with open(path, 'rb') as f:
                data = f.read()
        except OSError as e:
            raise LoadError(
                f"Fatal error: can't open the AOF manifest file {path} for reading: {e.strerror}"
            ) from None
        return Manifest.parse(data, self.log)

    def start(self) -> None:
        """appendonly yes: at start-up after loading, continue the last incr file (or
        create the layout); at run time, rewrite to make a base first (startAppendOnly)."""
        if self.manifest is None:
            try:
                self.manifest = self._load_manifest()
            except LoadError as e:
                self.log(str(e).strip(), '#')
                self.manifest = Manifest()
        m = self.manifest
        ks = self.server.keyspace
        if not self.server_started() and m.base is None and not m.incrs:
            if not any(ks.dbsize(db) for db in range(ks.databases)):
                self._create_layout()  # as Redis 7.0 does on a first start
                self._install()
                return
        if self.server_started() or m.base is None and not m.incrs:
            # run time (or data but no AOF): the base is made by a rewrite, as Redis does
            self.turning_on = True
            self._install()
            client = self.server.current_client
            p = self.server.persistence
            if p.snapshot is not None and p.snapshot_kind != 'aof':
                self.rewrite_scheduled = True
                self.log(
                    'AOF was enabled but there is already another background operation. '
                    'An AOF background was scheduled to start when possible.',
                    '#',
                )
            elif client is not None and client.in_exec:  # CONFIG SET appendonly in EXEC
                self.rewrite_scheduled = True
                self.log(
                    'AOF was enabled during a transaction. '
                    'An AOF background was scheduled to start when possible.',
                    '#',
                )
            elif not self.start_rewrite():
                self.rewrite_scheduled = True
            return
        os.makedirs(self.dir_path(), exist_ok=True)
        if not m.incrs:
            m.incr_seq += 1
            m.incrs.append((self._incr_name(m.incr_seq), m.incr_seq))
            self._persist_manifest(m)
        self._open_incr(m.incrs[-1][0])
        self._install()

    def _encoder(self) -> Any:
        cfg = self.server.config
        if cfg['aof-use-rdb-preamble']:
            from .rdb_codec import RdbEncoder

            return RdbEncoder(cfg['rdbcompression'], cfg['rdbchecksum'], {b'aof-base': b'1'})
        return AofEncoder(cfg['aof-timestamp-enabled'])

    def _create_layout(self) -> None:
        """A first start with nothing loaded: an empty base (the FUNCTION libraries
        only), incr file 1 and the manifest, written at once, as Redis 7.0 does."""
        m = self.manifest
        assert m is not None
        os.makedirs(self.dir_path(), exist_ok=True)
        m.base_seq += 1
        base = self._base_name(m.base_seq)
        self.log(f'Creating AOF base file {base} on server start')
        encoder = self._encoder()
        data = encoder.header() + encoder.functions(self.server.functions.codes())
        data += encoder.footer(_CRC.calc(data) if encoder.checksum else 0)
        tmp = self.path('temp-' + base)
        with open(tmp, 'wb') as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path(base))
        m.base = (base, m.base_seq)
        m.incr_seq += 1
        incr = self._incr_name(m.incr_seq)
        m.incrs.append((incr, m.incr_seq))
        self.log(f'Creating AOF incr file {incr} on server start')
        self._open_incr(incr)
        self._persist_manifest(m)
        self.base_size = self.current_size = len(data)

    def server_started(self) -> bool:
        """Whether start-up is over (CONFIG SET appendonly yes at run time)."""
        return self.started

    def stop(self) -> None:
        """appendonly no (stopAppendOnly): flush, fsync, close; a running rewrite stops."""
        self._sync()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.turning_on and self.incr_name:
            remove(self.path(self.incr_name))
        self.turning_on = False
        self.rewrite_scheduled = False
        if self.rewriting:
            p = self.server.persistence
            if p.snapshot is not None and p.snapshot_kind == 'aof':
                # the rewrite is no child here; Redis names the child it kills
                self.log(f'Killing running AOF rewrite child: {os.getpid()}')
                p.kill_snapshot()
            self.rewriting = False
        if not self.replication.active:
            self._uninstall()

    def _base_name(self, seq: int) -> str:
        ext = 'rdb' if self.server.config['aof-use-rdb-preamble'] else 'aof'
        return f'{self.name}.{seq}.base.{ext}'

    def _incr_name(self, seq: int) -> str:
        return f'{self.name}.{seq}.incr.aof'

    def _open_incr(self, name: str) -> None:
        path = self.path(name)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = fd
        self.incr_name = name
        self.selected_db = -1
        self.unsynced = False

    def _persist_manifest(self, m: Manifest) -> None:
        """writeAofManifestFile: temp file, fsync, rename, fsync of the directory."""
        path = self.manifest_path()
        tmp = self.path('temp-' + self.name + '.manifest')
        fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC | os.O_CREAT, 0o644)
        try:
            os.write(fd, m.render())
            os.fsync(fd)
        finally:
            os.close(fd)
        install(tmp, path)

    # -- wrapping the write commands ---------------------------------------------------------

    def _install(self) -> None:
        """Wrap every write command's handler (subcommands for containers) and hook the
        keyspace and the journal."""
        if self.installed:
            return
        seen = set()
        for cmd in self.server.commands.values():
            if id(cmd) in seen:
                continue
            seen.add(id(cmd))
            targets = list(cmd.subcommands.values()) if cmd.subcommands else [cmd]
            for t in targets:
                if 'write' in t.flags and t not in self.installed:
                    self.installed[t] = t.handler
                    t.handler = self._wrapped(t)
        self.server.keyspace.aof = self
        self.server.journal.aof = self

    def _uninstall(self) -> None:
        for cmd, handler in self.installed.items():
            cmd.handler = handler
        self.installed = {}
        self.server.keyspace.aof = None
        self.server.journal.aof = None

    def _wrapped(self, cmd: Any) -> Any:
        handler = cmd.handler
        rewrite = _REWRITES.get(cmd.name)
        aof = self

        # SET without options is written as sent, as a command without a rewrite is
        plain = 3 if rewrite is _set else -1

        def run(c: Any, args: list[bytes]) -> Any:
            ks = c.ks
            changes = ks.changes
            aof.depth += 1
            try:
                r = handler(c, args)
            finally:
                aof.depth -= 1
            blocked = c.blocked
            if blocked is not None and blocked.conn is c and blocked.aof is None:
                blocked.aof = (rewrite, args)  # written when served (store/blocking.py)
            elif rewrite is None and ks.changes == changes:
                pass  # it changed nothing: call() propagates only when server.dirty moved
            elif aof.targets != TO_ALL:
                aof.propagate(c, rewrite, args, r)
            elif rewrite is None or (len(args) == plain and r is OK):
                # propagate's common case, inlined. A read holding only this command is
                # written as the client sent it: encoding costs ~0.6 us. Mid-turn in the
                # same database other arguments are queued as they are and encoded with
                # the rest of the turn's commands when written (_encode_queued)
                raw = c.raw
                buf = aof.buf
                if raw is not None and raw[0] is args:
                    aof.feed(c.db, raw[1])
                elif buf and c.db == aof.selected_db and aof.unit is None and len(args) < 16:
                    if not aof.timestamps:
                        buf.append(args)
                    else:
                        aof.feed(c.db, resp_command(args))
                else:
                    aof.feed(c.db, resp_command(args))
            else:
                aof.propagate(c, rewrite, args, r)
            if aof.after and not aof.depth:
                aof._flush_after()
            return r

        return run

    def propagate(self, c: Any, rewrite: Any, args: list[bytes], reply: Any) -> None:
        feed = self.feed if self.targets == TO_ALL else self._feed_targets
        if rewrite is None:
            feed(c.db, resp_command(args))
            return
        if reply is _NULL_ARRAY or isinstance(reply, RedisError):
            return
        cmds = rewrite(c, args, reply)
        if cmds is None:
            feed(c.db, resp_command(args))
        else:
            for cmd in cmds:
                feed(c.db, resp_command(cmd))

    def _feed_targets(self, db: int, data: bytes) -> None:
        """feed() for a command that goes to the file only, the replicas only or nowhere
        (`targets`, a script's redis.set_repl: call()'s CMD_CALL_PROPAGATE_AOF/REPL)."""
        targets = self.targets
        if targets == TO_AOF:
            data = AofOnly(data)
        elif targets == TO_REPLICAS:
            data = ReplicasOnly(data)
        else:
            return
        self.replicas_only = True  # the file and the replicas get different bytes
        self.feed(db, data)

    def served(self, conn: Any, pending: Any, reply: Any) -> None:
        """A blocked command was served (store/blocking.py): write what it did."""
        rewrite, args = pending
        if isinstance(reply, RedisError):
            return
        self.propagate(conn, rewrite, args, reply)
        if self.after and not self.depth:
            self._flush_after()

    # -- feeding -------------------------------------------------------------------------

    def feed(self, db: int, data: bytes) -> None:
        if self.unit is not None:
            self.unit.append((db, data))
            return
        buf = self.buf
        if buf and db == self.selected_db and not self.timestamps:  # mid-turn, same db
            buf.append(data)
            self.buf_len += len(data)
            return
        self._append(db, data)

    def _append(self, db: int, data: bytes) -> None:
        buf = self.buf
        if not buf and not self.write_scheduled:
            self.write_scheduled = True
            loop = self.server.loop
            if loop is not None:
                loop.call_soon(self._scheduled_write)
        if self.timestamps:
            now = int(time.time())
            if now != self.last_ts:
                self.last_ts = now
                buf.append(b'#TS:%d\r\n' % now)
        if db != self.selected_db:
            self.selected_db = db
            select = resp_command((b'SELECT', b'%d' % db))
            buf.append(select)
            self.buf_len += len(select)
        buf.append(data)
        self.buf_len += len(data)

    def expired(self, db: int, key: bytes) -> None:
        """A key deleted at its deadline (lazy or active expiry): DEL (UNLINK with
        lazyfree-lazy-expire), written before the command that found it."""
        name = b'UNLINK' if self.server.config['lazyfree-lazy-expire'] else b'DEL'
        self.feed(db, resp_command((name, key)))

    def journal(self, args: list[bytes]) -> None:
        """A journal append (store/journal.py): written after the command that caused it."""
        data = resp_command(args)
        if self.depth:
            self.after.append(data)
        else:
            self.feed(0, data)

    def _flush_after(self) -> None:
        after, self.after = self.after, []
        for data in after:
            self.feed(0, data)

    def begin(self) -> None:
        """An execution unit starts (EXEC, a script or function run)."""
        self.unit_depth += 1
        if self.unit_depth == 1:
            self.unit = []

    def end(self) -> None:
        """The unit ends: its commands, in MULTI ... EXEC when more than one."""
        self.unit_depth -= 1
        if self.unit_depth:
            return
        unit, self.unit = self.unit, None
        if not unit:
            return
        if len(unit) == 1:
            self._append(*unit[0])
            return
        db0 = unit[0][0]
        if db0 != self.selected_db:
            self._append(db0, b'')  # the SELECT before MULTI
        self._append(self.selected_db, _MULTI)
        for db, data in unit:
            self._append(db, data)
        self._append(self.selected_db, _EXEC)

    # -- replication (store/replication.py) ------------------------------------------------

    def replication_started(self) -> None:
        """Replicas get the stream from now on: propagation runs with the AOF off too."""
        self._install()

    def replication_stopped(self) -> None:
        if not self.on and not self.turning_on:
            self._uninstall()

    def write_replicas(self) -> None:
        """Feed the replicas what is queued: before a replica syncs (what was queued is
        in its RDB), and before commands only replicas get."""
        if self.buf:
            self.write()

    def _feed_replicas(self) -> bytes | None:
        """Feed the replicas what of the queue they were not given. Returns the bytes
        when they are the whole queue as the file takes it too, so that write() encodes
        the queue once for both."""
        buf = self.buf
        whole = not self.replicas_fed and not self.replicas_only
        new = buf[self.replicas_fed :] if self.replicas_fed else buf
        self.replicas_fed = len(buf)
        if self.timestamps:  # #TS: annotations are the file's (each its own entry)
            new = [x for x in new if not (type(x) is bytes and x[:4] == b'#TS:')]
            whole = False
        if not new:
            return None
        data = _encode_queued(new, replicas=True)
        self.replication.feed(data)
        return data if whole else None

    def to_replicas(self, db: int, args: list[bytes]) -> None:
        """A command the replicas get and the file does not: PUBLISH, so that their
        subscribers get the message too (Redis's PROPAGATE_REPL)."""
        self.feed(db, ReplicasOnly(resp_command(args)))
        self.replicas_only = True

    # -- writing -------------------------------------------------------------------------

    def _scheduled_write(self) -> None:
        self.write_scheduled = False
        if self.buf:
            self.write()

    def write(self) -> None:
        """flushAppendOnlyFile: one write(2) of everything queued; fsync at once with
        appendfsync always."""
        buf = self.buf
        encoded = None
        if self.replication.active and self.replicas_fed < len(buf):
            encoded = self._feed_replicas()
        if self.fd < 0:
            # no file to write to (the AOF off, or turning on with no rewrite running):
            # dropped, as feedAppendOnlyFile drops them; the next rewrite's snapshot has
            # their effects
            buf.clear()
            self.buf_len = self.replicas_fed = 0
            self.replicas_only = False
            return
        data = encoded if encoded is not None else _encode_queued(buf)
        if self.flush_sleep:
            time.sleep(self.flush_sleep / 1e6)  # DEBUG AOF-FLUSH-SLEEP, for tests
        buf.clear()
        self.buf_len = self.replicas_fed = 0
        self.replicas_only = False
        try:
            view = memoryview(data)
            while view:
                n = os.write(self.fd, view)
                view = view[n:]
        except OSError as e:
            written = len(data) - len(view)
            self.current_size += written
            self.buf.append(data[written:])
            self.buf_len = len(data) - written
            self.replicas_fed = 1  # the replicas had it
            if self.last_write_ok or e.strerror != self.last_write_error:
                self.log(f'Error writing to the AOF file: {e.strerror}', '#')
            self.last_write_ok = False
            self.last_write_error = e.strerror or ''
            if self.server.config['appendfsync'] == 'always':
                self.log(
                    "Can't recover from AOF write error when the AOF fsync policy is "
                    "'always'. Exiting...",
                    '#',
                )
                os._exit(1)
            return
        if not self.last_write_ok:
            self.log('AOF write error looks solved, Redis can write again.')
            self.last_write_ok = True
        self.current_size += len(data)
        if self.always:
            try:
                os.fsync(self.fd)
            except OSError as e:
                self.log(
                    "Can't persist AOF for fsync error when the AOF fsync policy is "
                    f"'always': {e.strerror}. Exiting...",
                    '#',
                )
                os._exit(1)
            self.last_fsync = time.time()
        else:
            self.unsynced = True

    def _fsync_in_background(self) -> None:
        if self.fsync_pending:
            self.delayed_fsync += 1
            return
        if self.executor is None:
            self.executor = ThreadPoolExecutor(1, thread_name_prefix='aof-fsync')
        fd = os.dup(self.fd)  # the incr file may be switched while the thread runs
        self.unsynced = False
        self.last_fsync = time.time()
        self.fsync_pending = 1

        def work() -> None:
            try:
                os.fsync(fd)
            except OSError:
                pass
            finally:
                os.close(fd)

        fut = self.executor.submit(work)
        fut.add_done_callback(lambda f: setattr(self, 'fsync_pending', 0))

    # -- rewrite -------------------------------------------------------------------------

    def start_rewrite(self) -> bool:
        """rewriteAppendOnlyFileBackground: snapshot the keyspace as of now into a temp
        base; from this moment on, writes go to a new incr file. False when another
        snapshot runs (the caller schedules the rewrite)."""
        p = self.server.persistence
        if p.snapshot is not None:
            return False
        if self.manifest is None:
            self.manifest = self._load_manifest()
        try:
            os.makedirs(self.dir_path(), exist_ok=True)
        except OSError as e:
            self.log(f"Can't open or create append-only dir {self.dir_path()}: {e.strerror}", '#')
            raise RedisError(_E_REWRITE) from None
        if self.buf:
            self.write()
        old_fd = self.fd
        new_m = None
        if old_fd >= 0 and not self.turning_on:
            # openNewIncrAofForAppend: a new incr file, in the manifest at once
            new_m = self.manifest.copy()
            new_m.incr_seq += 1
            incr = self._incr_name(new_m.incr_seq)
            new_m.incrs.append((incr, new_m.incr_seq))
        elif self.turning_on:
            incr = 'temp-' + self.name + '.incr'  # named when the base is done
            remove(self.path(incr))
        else:
            incr = ''  # BGREWRITEAOF with the AOF off: a base and no incr file
        tmp = os.path.join(self.server.config['dir'], f'temp-rewriteaof-bg-{os.getpid()}.aof')
        encoder = self._encoder()
        try:
            if old_fd >= 0:
                os.fsync(old_fd)
            started = p.start_snapshot(tmp, encoder, lambda ok: self._rewrite_done(ok, tmp))
            if not started:
                return False
            if incr:
                self._open_incr(incr)
            if new_m is not None:
                self._persist_manifest(new_m)
                self.manifest = new_m
        except OSError as e:
            self.log(f"Can't rewrite append only file in background: {e.strerror}", '#')
            self.last_rewrite_ok = False
            raise RedisError(_E_REWRITE) from None
        self.rewriting = True
        self.rewrite_started = time.time()
        self.log('Background append only file rewriting started')
        return True

    def _rewrite_done(self, ok: bool, tmp: str) -> None:
        """backgroundRewriteDoneHandler: the new base into place, the manifest replaced,
        the history deleted."""
        self.rewriting = False
        self.last_rewrite_time = int(time.time() - self.rewrite_started)
        if not ok:
            remove(tmp)
            self.last_rewrite_ok = False
            self.consecutive_failures += 1
            if not self.server.persistence.child_signal:  # else logged as killed (child.py)
                self.log('Background AOF rewrite terminated with error', '#')
            if self.turning_on:
                self._drop_temp_incr()
                self.rewrite_scheduled = True  # startAppendOnly retries from cron
            return
        try:
            m = self.manifest.copy() if self.manifest is not None else Manifest()
            if m.base is not None:
                m.history.insert(0, m.base)
            m.base_seq += 1
            base = self._base_name(m.base_seq)
            m.base = (base, m.base_seq)
            base_path = self.path(base)
            if self.turning_on:
                m.incr_seq += 1
                incr = self._incr_name(m.incr_seq)
                os.replace(self.path(self.incr_name), self.path(incr))
                self.incr_name = incr
                m.incrs.append((incr, m.incr_seq))
            # markRewrittenIncrAofAsHistory: all but the one being written
            keep = m.incrs[-1:] if self.fd >= 0 else []
            for incr_info in m.incrs[: len(m.incrs) - len(keep)]:
                m.history.insert(0, incr_info)
            m.incrs = keep
            os.replace(tmp, base_path)
            self._persist_manifest(m)
        except OSError as e:
            remove(tmp)
            self.last_rewrite_ok = False
            self.consecutive_failures += 1
            self.log(f'Error trying to rename the temporary AOF base file: {e.strerror}', '#')
            return
        self.manifest = m
        self.turning_on = False
        self.base_size = os.path.getsize(base_path)
        self.current_size = self.base_size + (
            os.path.getsize(self.path(m.incrs[-1][0])) if m.incrs else 0
        )
        self.last_rewrite_ok = True
        self.consecutive_failures = 0
        self.rewrites += 1
        self.log('Background AOF rewrite terminated with success')
        self.log('Background AOF rewrite finished successfully')
        self._delete_history()

    def _drop_temp_incr(self) -> None:
        """aofDelTempIncrAofFile: a rewrite made while turning the AOF on failed, so the
        temp incr file that took the writes since its snapshot goes, and what is queued
        with it (the replicas get theirs first); the next rewrite starts a new one."""
        if self.buf:
            self.write()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.incr_name:
            self.log(f'Removing the temp incr aof file {self.incr_name} in the background')
            remove(self.path(self.incr_name))
            self.incr_name = ''

    def _delete_history(self) -> None:
        """aofDelHistoryFiles: the files the new manifest no longer names."""
        m = self.manifest
        if m is None or not m.history or self.server.config['aof-disable-auto-gc']:
            return
        for name, _ in m.history:
            self.log(f'Removing the history file {name} in the background')
            remove(self.path(name))
        m.history = []
        try:
            self._persist_manifest(m)
        except OSError:
            pass

    # -- loading -------------------------------------------------------------------------

    async def load(self) -> None:
        """loadAppendOnlyFiles: the base, then the incr files in order; LoadError when
        the server must not start. Then the AOF is opened for appending."""
        await self.load_files()
        self.start()  # open for appending now, so expiries right after loading are written

    async def load_files(self) -> None:
        """The files the manifest names, replayed into the keyspace (start-up, and DEBUG
        LOADAOF with the AOF open, which keeps appending to its incr file)."""
        from .aof_upgrade import upgrade_if_needed

        m = self._load_manifest()
        upgrade_if_needed(self, m)
        self.manifest = m
        files: list[tuple[str, str]] = []
        if m.base is not None:
            files.append(('base', m.base[0]))
        files += [('incr', name) for name, _ in m.incrs]
        total = 0
        for _, name in files:
            try:
                total += os.path.getsize(self.path(name))
            except OSError as e:
                msg = f'Unable to obtain the AOF file {name} length. stat: {e.strerror}'
                raise LoadError(msg) from None
        server = self.server
        server.persistence.load_total = total  # INFO's loading_* fields
        if files and total:
            load_started = time.time()
            for n, (kind, name) in enumerate(files):
                started = time.time()
                last = n == len(files) - 1
                status = await self._load_file(name, last)
                if status != 'empty' or kind == 'base':
                    self.log(
                        f'DB loaded from {kind} file {name}: {time.time() - started:.3f} seconds'
                    )
            self.log(f'DB loaded from append only file: {time.time() - load_started:.3f} seconds')
        self.base_size = os.path.getsize(self.path(m.base[0])) if m.base is not None else 0
        self.current_size = total

    async def _load_file(self, name: str, last: bool) -> str:
        """loadSingleAppendOnlyFile: 'ok', 'empty' or 'truncated'; LoadError otherwise."""
        path = self.path(name)
        try:
            with open(path, 'rb') as f:
                data = f.read()
        except OSError as e:
            msg = f"Fatal error: can't open the append log file {name} for reading: {e.strerror}"
            raise LoadError(msg) from None
        if not data:
            return 'empty'
        server = self.server
        pos = 0
        n = len(data)
        if data[:5] == b'REDIS':
            self.log('Reading RDB base file on AOF loading...')
            try:
                await server.persistence.load_rdb(path)
            except Exception as e:
                self.log(f'Error reading the RDB base file {name}, AOF loading aborted', '#')
                raise LoadError(str(e) or f'Error reading the RDB base file {name}') from None
            pos = server.persistence.rdb_end
            if pos >= n:
                return 'ok'
            # a Redis < 7.0 AOF: the RDB preamble, then commands
            self.log('Reading the remaining AOF tail...')
        from ..connection import Connection

        conn = Connection(server)
        conn.set_user(server.acl.loader)  # replayed commands and scripts are not checked
        table = server.commands
        start = valid_up_to = pos
        valid_before_multi = 0
        queued: list[tuple[Any, list[bytes]]] | None = None
        loops = 0
        truncate_tail = False
        while pos < n:
            loops += 1
            if loops % YIELD_EVERY == 0:
                server.persistence.load_pos = pos
                await asyncio.sleep(0)
            if data[pos] == 35:  # '#': an annotation (#TS:...)
                eol = data.find(b'\n', pos)
                if eol < 0:
                    truncate_tail = True
                    break
                pos = eol + 1
                continue
            parsed = _parse_command(data, pos)
            if parsed is None:
                truncate_tail = True
                break
            if parsed is False:
                msg = f'Bad file format reading the append only file {name}: {FIX_HINT}'
                raise LoadError(msg)
            args, pos = parsed
            cmd = table.get(args[0]) or table.get(args[0].lower())
            if cmd is None:
                msg = (
                    f"Unknown command '{args[0].decode('utf-8', 'replace')}' reading the "
                    f'append only file {name}'
                )
                raise LoadError(msg)
            cname = cmd.name
            if cname == 'multi':
                valid_before_multi = valid_up_to
                queued = []
            elif cname == 'exec':
                if queued is not None:
                    conn.in_exec = True
                    try:
                        for qc, qa in queued:
                            conn.call(qc, qa)
                    finally:
                        conn.in_exec = False
                queued = None
            elif queued is not None:
                queued.append((cmd, args))
            else:
                conn.call(cmd, args)
            valid_up_to = pos
        if not truncate_tail and queued is not None:
            self.log(f'Revert incomplete MULTI/EXEC transaction in AOF file {name}', '#')
            valid_up_to = valid_before_multi
            truncate_tail = True
        elif truncate_tail and queued is not None:
            valid_up_to = valid_before_multi
        server.persistence.load_done += n - start
        server.persistence.load_pos = 0
        if not truncate_tail:
            return 'ok'
        if server.config['aof-load-truncated']:
            self.log(f'!!! Warning: short read while loading the AOF file {name}!!!', '#')
            self.log(f'!!! Truncating the AOF {name} at offset {valid_up_to} !!!', '#')
            try:
                os.truncate(path, valid_up_to)
            except OSError as e:
                self.log(f'Error truncating the AOF file {name}: {e.strerror}', '#')
            else:
                self.log(f'AOF {name} loaded anyway because aof-load-truncated is enabled', '#')
                if not last:
                    msg = 'Fatal error: the truncated file is not the last file'
                    raise LoadError(msg)
                return 'truncated'
        msg = (
            f'Unexpected end of file reading the append only file {name}. You can: '
            '1) Make a backup of your AOF file, then use ./redis-check-aof --fix '
            '<filename.manifest>. 2) Alternatively you can set the \'aof-load-truncated\' '
            'configuration option to yes and restart the server.'
        )
        raise LoadError(msg)


_E_REWRITE = (
    "ERR Can't execute an AOF background rewriting. Please check the server logs for more "
    'information.'
)


def _parse_command(data: bytes, pos: int) -> Any:
    """One RESP command at `pos`: (args, end), None when the data ends inside it (a
    truncated tail), False for a format error (as loadSingleAppendOnlyFile reads it)."""
    if data[pos] != 42:  # '*'
        return False
    eol = data.find(b'\n', pos)
    if eol < 0:
        return None
    try:
        argc = int(data[pos + 1 : eol].strip())
    except ValueError:
        return False
    if argc < 1:
        return False
    pos = eol + 1
    args = []
    n = len(data)
    for _ in range(argc):
        if pos >= n:
            return None
        if data[pos] != 36:  # '$'
            return False
        eol = data.find(b'\n', pos)
        if eol < 0:
            return None
        try:
            length = int(data[pos + 1 : eol].strip())
        except ValueError:
            return False
        start = eol + 1
        end = start + length
        if end + 2 > n:
            return None
        args.append(data[start:end])
        pos = end + 2
    return args, pos
