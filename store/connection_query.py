"""The exact parse of one read: what the connection's fast path cannot take.

Reads that do not start a multibulk frame and end with CRLF, frames split across reads,
unauthenticated clients: store/request_parser.py's RequestParser parses them, as Redis
7.0's processInlineBuffer/processMultibulkBuffer would, and the commands run in order.
redis-server checks its limits per read(2) of at most 16 KB, so the read is replayed in
those pieces where that can matter (inline requests, near client-query-buffer-limit,
under maxmemory-clients), and parsed whole otherwise. Over the query buffer limit the
client is closed after the replies of what came before; a protocol error is answered and
closes it, after the commands before it ran (they may have changed the limits: AUTH,
CONFIG SET). Under maxmemory-clients a client receiving a big argument is evicted as its
bytes arrive, as Redis evicts after each read.

Invariants: `Connection.parser` is set only while it holds part of a request (the fast
path resumes once it is empty); many commands parsed at once run in turns
(store/connection_turns.py).

`ConnectionQuery` is a part of store/connection.py's Connection (a mixin with no state
of its own: the fields are Connection's `__slots__`, declared below for the type checker
only).
"""

import time
from typing import TYPE_CHECKING, Any

from .connection_turns import SLICE, TURN_NS
from .memory.report import query_bytes
from .request_parser import ProtocolError, RequestParser

_perf_ns = time.perf_counter_ns


class ConnectionQuery:
    if TYPE_CHECKING:  # Connection's fields and methods this part uses
        server: Any
        parser: RequestParser | None
        out: list[bytes]
        closing: bool
        authenticated: bool
        out_full: bool
        qbuf_big: tuple[int, float] | None
        qbuf_counted: int

        def run(self, frames: list[list[bytes]]) -> None: ...

        def flush(self) -> None: ...

        def describe(self) -> str: ...

        def close_after_reply(self) -> None: ...

        def _run_slices(self, frames: list[list[bytes]], i: int, deadline: int) -> bool: ...

        def _may_yield(self) -> bool: ...

        def _hold(self, item: Any) -> None: ...
    else:  # no slots of its own. Hidden from mypy, which refuses assignments to fields not in
        # a class's __slots__ and cannot tell that these fields are Connection's
        __slots__ = ()

    def _parse_exact(self, data: bytes, deadline: int) -> bool:
        parser = self.parser
        if parser is None:
            parser = self.parser = RequestParser()
        limit = self.server.config['client-query-buffer-limit']
        link = self.server.replica_link
        if link is not None and link.is_master(self):
            limit = 1 << 63  # the master's stream is never cut (CLIENT_MASTER)
        if not deadline:
            deadline = _perf_ns() + TURN_NS
        held = False
        done = 0
        # redis-server's limits apply per read(2) of at most 16 KB: replay those reads where
        # they can matter: inline requests (64 KB without a line end), near the query
        # buffer limit, under maxmemory-clients. Otherwise the read is parsed whole: 16 KB
        # pieces freed between the values parsed out of them left holes in the heap that no
        # value fits (values of 10 KB under maxmemory: +18% RSS, tests/test_big_values_
        # memory.py), where a read of 128 KB or more is mapped and unmapped.
        whole = (
            (parser.multibulklen or data[0] == 42)  # '*': a multibulk request
            and parser.pending() + len(data) < limit >> 1
            and not self.server.evictor.clients_limit
        )
        for chunk in (data,) if whole else parser.reads(data):
            done += len(chunk)
            parser.feed(chunk)
            if parser.pending() > limit:
                # checked before parsing; replies of earlier reads still go out
                self.server.log(
                    f'Closing client that reached max query buffer length: {self.describe()}'
                )
                self.close_after_reply()
                break
            if parser.big is not None and self.server.evictor.clients_limit:
                # maxmemory-clients while a big argument arrives, as its bytes do (Redis
                # checks after each read): its tot-mem counts the room Redis made for the
                # whole argument when it read its header
                self.server.evictor.evict_clients()
                if self.closing:
                    break
            while True:
                error = None
                try:
                    frames = parser.parse(self.server.max_bulk, self.authenticated)
                except ProtocolError as e:
                    frames, error = parser.ready, e
                if whole and len(frames) > SLICE and error is None:  # many commands: in turns
                    held = self._run_slices(frames, 0, deadline)
                    break
                self.run(frames)
                if error is None or self.closing:
                    break
                if frames:  # they may have changed the limits (AUTH, CONFIG SET)
                    continue
                self.server.log_verbose(f'Protocol error ({error}) from client: {self.describe()}')
                self.out.append(b'-ERR Protocol error: %s\r\n' % str(error).encode('latin-1'))
                self.server.stats.error('ERR Protocol error')
                self.close_after_reply()
                break
            if self.closing or held:
                break
            if done < len(data):  # the rest is what redis-server would read next: a turn ends
                self.flush()
                if (self.out_full or _perf_ns() > deadline) and self._may_yield():
                    self._hold(data[done:])
                    held = True
                    break
        if parser.big_seen:  # Redis read it into a query buffer of its size, kept after
            self.qbuf_big = (parser.big_seen + 2, time.time())
            parser.big_seen = 0
        if not parser.buf and not parser.multibulklen:  # not mid-request (args may be [])
            self.parser = None
        evictor = self.server.evictor
        if evictor.maxmemory:
            # the request held counts in used_memory now, as Redis's query buffer does,
            # not at the next measure: the next command meets maxmemory with it
            now_held = query_bytes(self.parser) if self.parser is not None else 0
            if now_held != self.qbuf_counted:
                evictor.clients_grew(now_held - self.qbuf_counted)
                self.qbuf_counted = now_held
        self.flush()
        return held
