"""The guard every read of client bytes passes before hiredis parses it: the aggregate
counts those bytes declare must fit in the bytes themselves.

hiredis.Reader makes the list of an aggregate ('*' array, '~' set, '>' push) the moment
it parses the header, at its declared length (PyList_New(n): up to 2**32 - 1 slots),
before any element has arrived. A 13-byte '*2147483647\\r\\n' thus takes 16 GB of address
space, and freeing that list (list_dealloc reads every slot, faulting in every page)
stalls the whole server for seconds; each nested header allocates again, so one read of
twenty such headers reserves hundreds of gigabytes. redis-server sets aside room for at
most 1024 arguments and grows it as they arrive (processMultibulkBuffer), and so does the
exact parser (request_parser.RequestParser): what hiredis may not see, the exact parser gets.

`counts_fit(data, pos)`: the counts of two digits or more written after a '*', '~' or '>'
from `pos` on add up to no more than the bytes from `pos` on. That bounds what hiredis
sets aside by the size of the read: at most 8 bytes per byte for those, and 9 slots per
4-byte header ('*9\\r\\n') for the one-digit counts it does not add up. Whole frames always
pass (an element takes 3 bytes at least, a bulk string 6); a '*12' inside a payload is
counted too, which only sends the read to the exact parser: correct, slower.

Cost: nothing in the common case of the connection's fast path (one command whose count
is one digit, and no other '*', '~' or '>': parse_bulk_arrays checks that first, with
memchr); otherwise three C scans, about 1 ns a byte each (a 16-command pipeline of SETs:
about 1.5 us a read), and a loop over the multi-digit counts found, if any.
"""

from __future__ import annotations

import re
from typing import Final

# '*', '~' or '>' and two digits: one pattern each, as a literal first byte makes sre scan
# for it (about 1 ns a byte) where a class of three tests every byte (8 ns)
_PREFIXED: Final = tuple(re.compile(re.escape(c) + rb'[0-9][0-9]') for c in (b'*', b'~', b'>'))
_COUNT: Final = re.compile(rb'[*~>]([0-9]{2,})')
_MAX_DIGITS: Final = 18  # more than any read holds bytes: no need to parse it


def counts_fit(data: bytes | bytearray, pos: int = 0) -> bool:
    """Whether the multi-digit aggregate counts in data[pos:] add up to at most its
    length (see the module docstring)."""
    for pattern in _PREFIXED:
        if pattern.search(data, pos) is not None:
            break
    else:
        return True
    room = len(data) - pos
    total = 0
    for m in _COUNT.finditer(data, pos):
        start, end = m.span(1)
        if end - start > _MAX_DIGITS:
            return False
        total += int(data[start:end])
        if total > room:
            return False
    return True
