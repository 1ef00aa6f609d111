"""A client's reply buffer as Redis 7.0 sizes it (clientsCronResizeOutputBuffer): CLIENT
LIST's rbs and rbp, part of tot-mem, and INFO's reply_buffer_shrinks / _expands.

A Redis client has a static reply buffer, made at 16 KB, that replies fill before they go to
a list; between two writes it holds up to its size, and `buf_peak` is the most it held since
the peak was last reset. The clients' cron visits each client about ten times a second while
there are few (at least five a tick, every client once a second): it shrinks a buffer whose
peak stayed under half its size to max(1 KB, peak + 1), doubles one that was filled (up to
16 KB), and resets the peak to what the buffer holds every peak-reset-time (5 s; DEBUG
REPLYBUFFER PEAK-RESET-TIME). A new client's peak is its buffer's size and its reset time is
in seconds where the cron compares milliseconds (as in Redis), so its first visit resets the
peak and the second shrinks the buffer of a client that replied little.

This server writes a turn's replies as one bytes object (Connection.flush), which is what a
Redis buffer holds between two writes: its length, up to the size, is the peak's reading,
one comparison per flush. The buffer's bytes are modelled, not allocated (replies are
Python bytes); the model is what lets a client's tot-mem, and so maxmemory-clients, follow
its replies as Redis's does.
"""

from __future__ import annotations

from typing import Any

REPLY_CHUNK = 16384  # PROTO_REPLY_CHUNK_BYTES: a new client's buffer, and the most it grows to
REPLY_MIN = 1024  # PROTO_REPLY_MIN_BYTES: the least it shrinks to
MIN_ITERATIONS = 5  # CLIENTS_CRON_MIN_ITERATIONS


class ReplyBuffers:
    """The clients cron's part that sizes reply buffers, with Redis's rotation over the
    clients (clientsCron) and the two counters of INFO stats."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.resizing = True  # DEBUG REPLYBUFFER RESIZING
        self.peak_reset_ms = 5000  # DEBUG REPLYBUFFER PEAK-RESET-TIME (-1: never)
        self.shrinks = 0
        self.expands = 0
        self.queue: list[Any] = []  # the clients left to visit in this round, last first

    def cron(self, now: float) -> None:
        """clientsCron's share: numclients / hz clients, at least five (or all when fewer)."""
        clients = self.server.clients
        n = len(clients)
        iterations = n // max(self.server.config['hz'], 1)
        if iterations < MIN_ITERATIONS:
            iterations = min(n, MIN_ITERATIONS)
        now_ms = int(now * 1000)
        queue = self.queue
        while iterations > 0:
            if not queue:
                queue.extend(reversed(clients.values()))
                if not queue:
                    return
            conn = queue.pop()
            iterations -= 1
            if not conn.closing:
                self.resize(conn, now_ms)

    def resize(self, conn: Any, now_ms: int) -> None:
        if not self.resizing:
            return
        size, peak = conn.rbs, conn.rb_peak
        if size // 2 >= REPLY_MIN and peak < size // 2:
            conn.rbs = max(REPLY_MIN, peak + 1)
            self.shrinks += 1
        elif size * 2 < REPLY_CHUNK * 2 and peak == size:
            conn.rbs = min(REPLY_CHUNK, size * 2)
            self.expands += 1
        if self.peak_reset_ms >= 0 and now_ms - conn.rb_peak_reset >= self.peak_reset_ms:
            conn.rb_peak = 0  # the buffer's bytes: written at every turn's end here
            conn.rb_peak_reset = now_ms
