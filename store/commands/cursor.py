"""SCAN-family cursors: parsing, options, and the stateless hash-order walk HSCAN, SSCAN
and ZSCAN share (SCAN itself walks snapshots of the keyspace's shards: scan.ScanWalks).

A cursor is a position in a fixed order of a collection's items: by the 56-bit hash of each
item (Python's hash of bytes, fixed for the life of the process). "Continue with the items
whose hash is >= h" needs no per-client iterator on the server, and it keeps SCAN's
guarantee: an item present for the whole iteration is returned exactly once, whatever is
added or deleted meanwhile. `HashOrder` is the sorted view that finds the place in
O(log n); it may be rebuilt at any time as long as it is never older than the start of an
iteration using it (callers rebuild it on every cursor 0).
"""

import re
from bisect import bisect_left
from collections.abc import Iterable

from ..args import SYNTAX, int_arg
from ..resp import RedisError, c_string

POS_BITS = 56
POS_MASK = (1 << POS_BITS) - 1

_CURSOR = re.compile(rb'([+-]?)([0-9]+)')


def parse_cursor(b: bytes) -> int:
    """parseScanCursorOrReply: C's strtoul(s, 10) into an unsigned 64-bit long, with
    nothing left over: '' is 0, a '+' or '-' sign is accepted ('-1' wraps around), spaces
    and overflow are errors."""
    if b.isdigit() and len(b) < 20:  # the common case: below 10**19, no sign
        return int(b)
    if not b:
        return 0
    m = _CURSOR.fullmatch(b)
    if m is None or int(m.group(2)) >= 2**64:
        raise RedisError('ERR invalid cursor')
    v = int(m.group(2))
    return (-v if m.group(1) == b'-' else v) % 2**64


def parse_scan_options(
    args: list[bytes], start: int, allow_type: bool
) -> tuple[int, bytes | None, str | None]:
    """[MATCH pattern] [COUNT count] (and [TYPE type] for SCAN) from args[start:], as
    scanGenericCommand parses them: returns (count, pattern or None, type or None)."""
    count, pattern, typename = 10, None, None
    i = start
    while i < len(args):
        opt = c_string(args[i]).lower()  # Redis's strcasecmp stops at a NUL
        more = len(args) - i
        if opt == b'count' and more >= 2:
            count = int_arg(args[i + 1])
            if count < 1:
                raise SYNTAX
            i += 2
        elif opt == b'match' and more >= 2:
            pattern = args[i + 1]
            i += 2
        elif opt == b'type' and more >= 2 and allow_type:
            typename = args[i + 1].decode('latin-1').lower()
            i += 2
        else:
            raise SYNTAX
    return count, pattern, typename


class HashOrder:
    """Items sorted by their 56-bit hash: `take` walks them from a cursor position."""

    __slots__ = ('hashes', 'items')

    def __init__(self, items: Iterable[bytes]) -> None:
        pairs = sorted([(hash(k) & POS_MASK, k) for k in items])
        self.hashes = [h for h, _ in pairs]
        self.items = [k for _, k in pairs]

    def take(self, pos: int, count: int) -> tuple[list[bytes], int | None]:
        """Up to `count` items from hash position `pos` (more when several share the
        last one's hash, so equal hashes are never split across two calls), and the
        position to continue from, or None at the end."""
        hashes, items = self.hashes, self.items
        lo = bisect_left(hashes, pos)
        hi = min(lo + count, len(items))
        while 0 < hi < len(items) and hashes[hi] == hashes[hi - 1]:
            hi += 1
        return items[lo:hi], (hashes[hi] if hi < len(items) else None)
