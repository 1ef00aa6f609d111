"""LCS (Redis 7.0 t_string.c lcsCommand): the longest common subsequence of two strings,
with LEN, IDX, MINMATCHLEN and WITHMATCHLEN."""

from typing import Any

from ..args import SYNTAX, int_arg, keyword
from ..command_table import Family
from ..context import Client
from ..resp import Map, RedisError

COMMANDS = Family('string')


@COMMANDS.command(
    'lcs',
    -3,
    flags='readonly',
    keys=(1, 2, 1),
    categories='@read @string @slow',
    since='7.0.0',
    summary='Find longest common substring',
    key_specs='RO access; index 1; range 1 1 0',
)
def lcs(c: Client, args: list[bytes]) -> Any:
    ks = c.ks
    a = ks.read(c.db, args[1])
    b = ks.read(c.db, args[2])
    if (a is not None and type(a) is not bytes) or (b is not None and type(b) is not bytes):
        raise RedisError('ERR The specified keys must contain string values')
    a = a or b''
    b = b or b''
    getlen = getidx = withmatchlen = False
    minmatchlen = 0
    j = 3
    n = len(args)
    while j < n:
        opt = keyword(args[j])
        if opt == b'idx':
            getidx = True
        elif opt == b'len':
            getlen = True
        elif opt == b'withmatchlen':
            withmatchlen = True
        elif opt == b'minmatchlen' and j + 1 < n:
            minmatchlen = max(0, int_arg(args[j + 1]))
            j += 1
        else:
            raise SYNTAX
        j += 1
    if getidx and getlen:
        raise RedisError('ERR If you want both the length and indexes, please just use IDX.')
    alen, blen = len(a), len(b)
    if (alen + 1) * (blen + 1) * 4 > c.server.max_bulk:
        raise RedisError(
            'ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len'
        )
    # rows[i][j] = length of the LCS of a[:i] and b[:j]
    rows = [[0] * (blen + 1)]
    for i in range(1, alen + 1):
        prev = rows[-1]
        row = [0] * (blen + 1)
        ch = a[i - 1]
        for jj in range(1, blen + 1):
            if ch == b[jj - 1]:
                row[jj] = prev[jj - 1] + 1
            else:
                up, left = prev[jj], row[jj - 1]
                row[jj] = up if up > left else left
        rows.append(row)
    total = rows[alen][blen]
    if getlen and not getidx:
        return total
    # Walk back from the end, collecting the LCS and the matching ranges, as Redis does.
    result = bytearray(total)
    idx = total
    matches = []
    arange_start = alen  # alen: no range being tracked
    arange_end = brange_start = brange_end = 0
    i, jj = alen, blen
    while i > 0 and jj > 0:
        emit = False
        if a[i - 1] == b[jj - 1]:
            result[idx - 1] = a[i - 1]
            if arange_start == alen:
                arange_start = arange_end = i - 1
                brange_start = brange_end = jj - 1
            elif arange_start == i and brange_start == jj:
                arange_start -= 1
                brange_start -= 1
            else:
                emit = True
            if arange_start == 0 or brange_start == 0:
                emit = True
            idx -= 1
            i -= 1
            jj -= 1
        else:
            if rows[i - 1][jj] > rows[i][jj - 1]:
                i -= 1
            else:
                jj -= 1
            if arange_start != alen:
                emit = True
        if emit:
            match_len = arange_end - arange_start + 1
            if minmatchlen == 0 or match_len >= minmatchlen:
                m: list[list[int] | int] = [[arange_start, arange_end], [brange_start, brange_end]]
                if withmatchlen:
                    m.append(match_len)
                matches.append(m)
            arange_start = alen
    if getidx:
        return Map([(b'matches', matches), (b'len', total)])
    return bytes(result)
