"""What a write is propagated as (to the AOF and the replicas), where replaying it as sent
would not give the same result: `REWRITES`, command name -> rewrite function.

A rewrite function gets (conn, args, reply) after the command ran and returns the list of
commands to write (each a list of bytes), or None to write the command as it was sent.
Commands whose replay gives the same result are written as sent (Redis does the same);
these are the ones that depend on the time, on chance, or on waiting.

Relative expiries become absolute (PEXPIREAT, SET ... PXAT), SPOP becomes SREM, XADD's `*`
the id it got and an approximate trim an exact one, blocking commands their non-blocking
form, XREADGROUP and XCLAIM the XCLAIMs (or XGROUP SETIDs) that reproduce what they
changed, and a command that changed nothing is not propagated. aof.Aof's command wrapper
looks the rewrite up once per wrapped command; nothing here runs for the other writes.
"""

from __future__ import annotations

from typing import Any

import hiredis

from ..resp import OK
from ..types.stream import Stream, exact_trim_args, format_id


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


def set_rewrite(c: Any, args: list[bytes], reply: Any) -> Any:
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


REWRITES: dict[str, Any] = {
    'expire': _expire,
    'pexpire': _expire,
    'expireat': _expire,
    'pexpireat': _expire,
    'set': set_rewrite,
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
