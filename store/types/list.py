"""The list type: a deque of bytes elements.

Redis 7.0 stores every list as a quicklist (a linked list of listpacks), so OBJECT ENCODING
always says `quicklist`; `list-max-listpack-size` only shapes Redis's internal nodes. A deque
gives the same O(1) pushes and pops at both ends; indexing into the middle is O(n), as
in Redis.
"""

from __future__ import annotations

from collections import deque


class List(deque[bytes]):
    __slots__ = ()
    redis_type = 'list'
    encoding = 'quicklist'

    def copy(self) -> List:
        return List(self)
