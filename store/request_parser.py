"""RESP requests: the exact request parser, the fast path's proof, inline splitting.

The connection parses most traffic with hiredis (store/connection.py): a read that starts
a multibulk frame and ends with CRLF goes to `parse_bulk_arrays`, which keeps hiredis's
frames only when it proves they are what redis-server would parse from the read without
error. Everything else goes to `RequestParser`, the exact parser: a port of Redis 7.0's
processInlineBuffer/processMultibulkBuffer, so errors, limits and the point where the
connection closes match Redis byte for byte (inline commands, frames split across reads,
limits, malformed input). `split_args` is Redis's sdssplitargs, which splits inline
commands (and config lines, ACL files, AOF-free command lines) into arguments.

Invariants. A ProtocolError is raised only after the commands before the malformed one
have been handed out (`RequestParser.ready`); hiredis never parses a byte of client input
whose aggregate counts do not fit in it (store/declared_counts.py), since it allocates
each aggregate at its declared length when it reads the header. Replies are encoded in
store/resp.py.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from itertools import accumulate, chain
from operator import add
from typing import Any, Final

import hiredis

from .declared_counts import counts_fit
from .resp import string2ll

INLINE_MAX_SIZE = 64 * 1024  # PROTO_INLINE_MAX_SIZE
MBULK_BIG_ARG = 32 * 1024  # PROTO_MBULK_BIG_ARG
IOBUF_LEN = 16 * 1024  # PROTO_IOBUF_LEN: how much redis-server reads at a time
INT_MAX = 2**31 - 1


class ProtocolError(Exception):
    """Malformed request: reply '-ERR Protocol error: <msg>' (if msg) and close."""


_ESCAPES: Final = {ord('n'): 10, ord('r'): 13, ord('t'): 9, ord('b'): 8, ord('a'): 7}
_HEX: Final = b'0123456789abcdefABCDEF'


def split_args(line: bytes) -> list[bytes] | None:
    """Redis's sdssplitargs: split an inline command line into arguments, honouring
    "double quotes" with escapes and 'single quotes'. None on unbalanced quotes.

    As in C the line ends at its first NUL; blanks between arguments are isspace(), but
    an unquoted argument ends only at ' ', \\n, \\r or \\t (\\v and \\f belong to it)."""
    nul = line.find(0)
    if nul >= 0:
        line = line[:nul]
    args: list[bytes] = []
    n = len(line)
    i = 0
    while True:
        while i < n and line[i] in b' \n\r\t\v\f':
            i += 1
        if i >= n:
            return args
        cur = bytearray()
        inq = insq = False
        while True:
            if inq:
                if i >= n:
                    return None
                c = line[i]
                if (
                    c == 92
                    and i + 3 < n
                    and line[i + 1] == ord('x')
                    and line[i + 2] in _HEX
                    and line[i + 3] in _HEX
                ):
                    cur.append(int(line[i + 2 : i + 4], 16))
                    i += 3
                elif c == 92 and i + 1 < n:
                    i += 1
                    cur.append(_ESCAPES.get(line[i], line[i]))
                elif c == 34:
                    if i + 1 < n and line[i + 1] not in b' \n\r\t\v\f':
                        return None
                    i += 1
                    break
                else:
                    cur.append(c)
            elif insq:
                if i >= n:
                    return None
                c = line[i]
                if c == 92 and i + 1 < n and line[i + 1] == 39:
                    i += 1
                    cur.append(39)
                elif c == 39:
                    if i + 1 < n and line[i + 1] not in b' \n\r\t\v\f':
                        return None
                    i += 1
                    break
                else:
                    cur.append(c)
            else:
                if i >= n:
                    break
                c = line[i]
                if c in b' \n\r\t':
                    break
                elif c == 34:
                    inq = True
                elif c == 39:
                    insq = True
                else:
                    cur.append(c)
            i += 1
        args.append(bytes(cur))


def parse_bulk_arrays(reader: hiredis.Reader, data: bytes) -> list[list[bytes]] | None:
    """The commands in `data`, parsed by hiredis `reader`, when they provably are what
    redis-server would parse from it without error; otherwise None (the caller then
    discards the reader and uses the exact parser). `data` starts with '*' and ends with
    CRLF.

    hiredis also accepts what a request may not hold: simple strings, RESP3 types
    (verbatim strings, big numbers, sets, pushes, maps) and attributes. Its integers are
    as strict as Redis's (string2ll) and both skip the two bytes after a bulk payload
    unchecked. So the frames are Redis's commands when every frame is an array, every
    element a bulk string, and hiredis consumed the whole read with no frame left open:
    - the common case: none of the type bytes hiredis turns into bytes or top-level arrays
      ('+', '=', '(', '|', '~', '>') occurs anywhere in the read (a few memchr scans),
      every frame is a list of bytes (a join raises on ints, nils, errors, nested arrays),
      and an empty array fed after the read parses back as [] (had hiredis kept the start
      of an unfinished frame, say "*3\r\n", it would become part of that frame);
    - otherwise the canonical layout is walked: a '*' or '$' at every frame and argument
      start, covering the read exactly. Counting CRLFs or bytes is not enough, as simple
      strings, RESP3 types and attributes can cancel out in length and CRLFs.

    hiredis sets aside a list of each aggregate's declared length as it parses the header
    (store/declared_counts.py): a read it may see declares counts that fit in it. The
    common read, one command of fewer than ten arguments and no other '*', '~' or '>', is
    that with no scan (a slice and a memchr: `bytes.find` parses its arguments slowly)."""
    # + = ( | ~ >, as ints: `int in bytes` is a memchr, `bytes in bytes` much slower
    typed = 43 in data or 61 in data or 40 in data or 124 in data or 126 in data or 62 in data
    if typed or data[2] != 13 or 42 in data[3:]:
        if not counts_fit(data):
            return None
    reader.feed(data)
    frames: list[Any] = []
    try:
        frame = reader.gets()
        while frame is not False:
            frames.append(frame)
            frame = reader.gets()
        if not typed:
            for f in frames:
                if type(f) is not list:
                    return None
                b''.join(f)
            reader.feed(b'*0\r\n')
            return frames if reader.gets() == [] else None
    except (hiredis.ProtocolError, TypeError):
        return None
    pos = 0
    try:
        for f in frames:
            if type(f) is not list or data[pos] != 42:
                return None
            n = len(f)
            pos += 4 if n < 10 else len(b'%d' % n) + 3
            for a in f:
                if type(a) is not bytes or data[pos] != 36:
                    return None
                n = len(a)
                pos += n + (6 if n < 10 else 7 if n < 100 else len(b'%d' % n) + 5)
    except IndexError:
        return None
    return frames if pos == len(data) else None


# Canonical wire sizes, for the hiredis runs below: a bulk argument of n bytes takes
# n + ARG_EXTRA[n] bytes ('$<n>\r\n' ... '\r\n'), a '*<n>\r\n' header FRAME_EXTRA[n]. Tables
# (bytes, 32 KB each) so whole runs are sized by C-level map/sum; longer arguments are
# MBULK_BIG_ARG or more and take the Python path.
ARG_EXTRA: Final = bytes(len(b'%d' % n) + 5 for n in range(MBULK_BIG_ARG))
FRAME_EXTRA: Final = bytes(len(b'%d' % n) + 3 for n in range(MBULK_BIG_ARG))
RUN_MIN = 16  # arguments (or bytes / 8 of frames) below which the Python loop is cheaper
_TYPE_BYTES: Final = b'+=(|~>'  # what hiredis turns into bytes or lists besides '*' and '$'


def _prefix_below(lens: list[int], limit: int) -> int:
    """How many of `lens`, from the start, are below `limit`."""
    for i, n in enumerate(lens):
        if n >= limit:
            return i
    return len(lens)


class RequestParser:
    """Incremental exact parser over a growing buffer.

    `feed(data)` appends; `parse(limits)` returns the complete commands (lists of bytes)
    and leaves any partial command buffered. A ProtocolError is raised after the commands
    that preceded the malformed one have been returned through `self.ready`, so the caller
    executes them first and then replies with the error and closes, as Redis does. The
    error is raised before the malformed header is consumed, so parsing again (after the
    preceding commands ran, say an AUTH) re-examines it with the new state.

    Redis searches the buffer with strchr, which stops at a NUL byte: a header or inline
    line with a NUL before its CR/LF is incomplete until the size limits trip.

    `reads(data)` cuts a network read into the reads redis-server would make from a socket
    holding it (16 KB, or the rest of a big bulk argument), since its limits are checked
    per read: feed each one, check `pending()` against client-query-buffer-limit, parse.

    Speed. The Python loop below is the reference; two shortcuts hand it stretches that
    hiredis parses in C, and keep them only when they provably are what the loop would
    have parsed (complete lists of bulk strings in the canonical layout: see
    parse_bulk_arrays for why that is Redis's parse), so errors, limits and close points
    stay the loop's:
    - `_hiredis_frames`: the complete multibulk frames from a frame boundary on (a
      pipeline cut across reads, which the connection's fast path cannot take);
    - `_hiredis_args`: inside a command with many arguments (MSET of a million), the
      complete arguments buffered, parsed by hiredis behind a made-up '*<k>' header.
    Each run is sized from its arguments' lengths (ARG_EXTRA), checked with six memchr
    scans for the type bytes hiredis would also accept, and, when one occurs (binary
    payloads), by checking that every argument starts with '$' where the canonical layout
    puts it. A run that fails the checks is left to the loop, once per `parse` call.
    Unauthenticated clients (smaller limits) always take the loop.

    Big arguments (MBULK_BIG_ARG and more, as Redis's PROTO_MBULK_BIG_ARG) are not
    collected in `buf`: their bytes go straight into a BytesIO of their own (`big`), whose
    getvalue() hands over its internal bytes object as the value (CPython's BytesIO only
    trims it to size: no copy while no buffer view is exported). A 256 MB SET thus holds
    the value once, plus one network read, where `buf` slices held it three times.
    """

    buf: bytearray
    pos: int  # parsed up to here
    multibulklen: int  # arguments still to come of the current command
    bulklen: int  # length of the argument being read, -1 before its header
    args: list[bytes]  # the current command's arguments so far
    ready: list[list[bytes]]  # complete commands of the last `parse`
    big: io.BytesIO | None  # the big argument being collected
    big_left: int  # its bytes still to come (its CRLF then comes through `buf`)
    big_seen: int  # the length of the last big argument completed (0: none), for CLIENT LIST

    def __init__(self) -> None:
        self.buf = bytearray()
        self.pos = 0
        self.multibulklen = 0
        self.bulklen = -1
        self.args = []
        self.ready = []
        self.big = None
        self.big_left = 0
        self.big_seen = 0

    def pending(self) -> int:
        """Bytes buffered but not yet parsed: redis-server's query buffer (arguments of a
        partial command already parsed have left it; a big argument being read is in it)."""
        n = len(self.buf) - self.pos
        if self.big is not None:
            n += self.bulklen - self.big_left
        return n

    def reads(self, data: bytes) -> Iterator[bytes]:
        """Yield `data` in the pieces redis-server's readQueryFromClient would read it."""
        off, end = 0, len(data)
        while off < end:
            readlen = IOBUF_LEN
            if self.multibulklen and self.bulklen >= MBULK_BIG_ARG:
                remaining = self.bulklen + 2 - self.pending()
                if remaining > 0:
                    readlen = remaining
            if off == 0 and readlen >= end:
                yield data
                return
            yield data[off : off + readlen]
            off += readlen

    def _find(self, char: int) -> int:
        """strchr(querybuf + pos, char): -1 when absent or after a NUL."""
        buf = self.buf
        i = buf.find(char, self.pos)
        if i > self.pos and buf.find(0, self.pos, i) >= 0:
            return -1
        return i

    def feed(self, data: bytes) -> None:
        left = self.big_left
        if left:  # `buf` is empty meanwhile: the argument's bytes go to its own buffer
            big = self.big
            assert big is not None
            if len(data) <= left:
                big.write(data)
                self.big_left = left - len(data)
                return
            with memoryview(data) as view:
                big.write(view[:left])
            self.big_left = 0
            data = data[left:]
        self.buf += data

    def parse(self, max_bulk: int, authenticated: bool = True) -> list[list[bytes]]:
        buf = self.buf
        ready = self.ready = []
        frames = authenticated  # hiredis runs of frames, until one fails in this call
        try:
            while self.pos < len(buf):
                if self.multibulklen == 0:
                    if buf[self.pos] != 42:  # not '*': inline
                        if not self._inline():
                            break
                        continue
                    if frames and len(buf) - self.pos >= 8 * RUN_MIN:
                        if self._hiredis_frames():
                            continue
                        frames = False
                if not self._multibulk(max_bulk, authenticated):
                    break
        finally:
            if self.pos:
                del buf[: self.pos]
                self.pos = 0
        return ready

    def _inline(self) -> bool:
        buf = self.buf
        nl = self._find(10)
        if nl < 0:
            if len(buf) - self.pos > INLINE_MAX_SIZE:
                raise ProtocolError('too big inline request')
            return False
        end = nl
        if end != self.pos and buf[end - 1] == 13:
            end -= 1
        args = split_args(bytes(buf[self.pos : end]))
        if args is None:
            raise ProtocolError('unbalanced quotes in request')
        self.pos = nl + 1
        if args:
            self.ready.append(args)
        return True

    def _multibulk(self, max_bulk: int, authenticated: bool) -> bool:
        buf = self.buf
        runs = authenticated  # hiredis runs of arguments, until one fails in this call
        if self.multibulklen == 0:
            cr = self._find(13)
            if cr < 0:
                if len(buf) - self.pos > INLINE_MAX_SIZE:
                    raise ProtocolError('too big mbulk count string')
                return False
            if cr - self.pos > len(buf) - self.pos - 2:
                return False
            ll = string2ll(bytes(buf[self.pos + 1 : cr]))
            if ll is None or ll > INT_MAX:
                raise ProtocolError('invalid multibulk length')
            if ll > 10 and not authenticated:
                raise ProtocolError('unauthenticated multibulk length')
            self.pos = cr + 2
            if ll <= 0:
                return True
            self.multibulklen = ll
            self.args = []
        while self.multibulklen:
            if self.bulklen == -1:
                if runs and self.multibulklen >= RUN_MIN:
                    if self._hiredis_args():
                        continue
                    runs = False
                cr = self._find(13)
                if cr < 0:
                    if len(buf) - self.pos > INLINE_MAX_SIZE:
                        raise ProtocolError('too big bulk count string')
                    return False
                if cr - self.pos > len(buf) - self.pos - 2:
                    return False
                if buf[self.pos] != 36:
                    # addReplyErrorFormat's %c: the raw byte, CR and LF mapped to spaces
                    # (the connection encodes protocol errors as latin-1, byte for byte)
                    c = buf[self.pos]
                    raise ProtocolError(
                        "expected '$', got '%s'" % (' ' if c in (10, 13) else chr(c))
                    )
                ll = string2ll(bytes(buf[self.pos + 1 : cr]))
                if ll is None or ll < 0 or ll > max_bulk:
                    raise ProtocolError('invalid bulk length')
                if ll > 16384 and not authenticated:
                    raise ProtocolError('unauthenticated bulk length')
                self.pos = cr + 2
                self.bulklen = ll
                if ll >= MBULK_BIG_ARG:
                    self._start_big(ll)
            big = self.big
            if big is not None:
                if self.big_left or len(buf) - self.pos < 2:
                    return False
                self.big = None
                self.args.append(big.getvalue())  # its own buffer: exactly full, no copy
                self.big_seen = self.bulklen
                self.pos += 2
            else:
                if len(buf) - self.pos < self.bulklen + 2:
                    return False
                self.args.append(bytes(buf[self.pos : self.pos + self.bulklen]))
                self.pos += self.bulklen + 2
            self.bulklen = -1
            self.multibulklen -= 1
        self.ready.append(self.args)
        self.args = []
        return True

    def _start_big(self, n: int) -> None:
        """Collect an argument of n bytes in a buffer of its own, and move there what of it
        `buf` already holds. The BytesIO grows as bytes arrive, by realloc (mremap for big
        blocks: no copy), rather than being sized up front: that would zero-fill all of it
        at once, a stall of a few hundred ms for 256 MB."""
        big = self.big = io.BytesIO()
        buf, pos = self.buf, self.pos
        k = min(n, len(buf) - pos)
        if k:
            with memoryview(buf) as view, view[pos : pos + k] as part:
                big.write(part)
            self.pos = pos + k
        self.big_left = n - k

    def _hiredis_frames(self) -> bool:
        """Move the complete canonical multibulk frames at `pos` to `ready`, parsed by
        hiredis. False when there was none (the loop then parses what is there)."""
        buf, pos = self.buf, self.pos
        if not counts_fit(buf, pos):  # hiredis would set aside what has not arrived
            return False
        reader = hiredis.Reader()
        reader.feed(buf, pos)  # type: ignore[arg-type]  # its C code takes any buffer
        frames: list[Any] = []
        try:
            frame = reader.gets()
            while frame is not False:
                frames.append(frame)
                frame = reader.gets()
        except hiredis.ProtocolError:
            pass  # the frames before the error stand; the loop meets the error
        if not frames:
            return False
        end = -1
        try:
            if set(map(type, frames)) == {list}:
                args = list(chain.from_iterable(frames))
                if not args or set(map(type, args)) == {bytes}:
                    lens = list(map(len, args))
                    end = (
                        pos
                        + sum(lens)
                        + sum(map(ARG_EXTRA.__getitem__, lens))
                        + sum(map(FRAME_EXTRA.__getitem__, map(len, frames)))
                    )
        except IndexError:  # an argument or a count of MBULK_BIG_ARG or more
            end = -1
        if end < 0 or any(buf.find(c, pos, end) >= 0 for c in _TYPE_BYTES):
            n, end = _walk_frames(buf, pos, frames)
            if not n:
                return False
            del frames[n:]
        self.ready += filter(None, frames)  # '*0' frames are skipped, as the loop skips them
        self.pos = end
        return True

    def _hiredis_args(self) -> bool:
        """Inside a command of many arguments, at an argument boundary: append the complete
        arguments buffered, parsed by hiredis as the elements of a '*<k>' frame. False when
        that did not work out (the loop then parses the next argument)."""
        buf, pos = self.buf, self.pos
        if not counts_fit(buf, pos):  # nested headers: hiredis would set aside their counts
            return False
        # each complete argument holds at least two CRLFs: at most this many are complete
        k = min(self.multibulklen, buf.count(b'\r\n', pos) >> 1)
        while k >= RUN_MIN:
            reader = hiredis.Reader()
            reader.feed(b'*%d\r\n' % k)
            reader.feed(buf, pos)  # type: ignore[arg-type]
            try:
                got = reader.gets()
            except hiredis.ProtocolError:
                return False
            if got is not False:
                break
            k >>= 1  # payloads with CRLFs: fewer arguments are complete
        else:
            return False
        if type(got) is not list or set(map(type, got)) != {bytes}:
            return False
        lens = list(map(len, got))
        n = _prefix_below(lens, MBULK_BIG_ARG) if max(lens) >= MBULK_BIG_ARG else k
        if n < k:
            if n < RUN_MIN:
                return False
            del got[n:], lens[n:]
        sizes = list(map(add, lens, map(ARG_EXTRA.__getitem__, lens)))
        end = pos + sum(sizes)
        if any(buf.find(c, pos, end) >= 0 for c in _TYPE_BYTES):
            starts = bytes(map(buf.__getitem__, accumulate(sizes[:-1], initial=pos)))
            if starts.count(36) != n:  # every argument starts with '$' where it should
                return False
        self.args += got
        self.pos = end
        self.multibulklen -= n
        return True


def _walk_frames(buf: bytearray, pos: int, frames: list[Any]) -> tuple[int, int]:
    """How many of hiredis's `frames` from `pos` are canonical lists of bulk strings (each
    shorter than MBULK_BIG_ARG), and where they end: the loop of parse_bulk_arrays."""
    done, end = 0, pos
    try:
        for f in frames:
            if type(f) is not list or buf[pos] != 42:
                break
            n = len(f)
            pos += len(b'%d' % n) + 3
            for a in f:
                if type(a) is not bytes or buf[pos] != 36 or len(a) >= MBULK_BIG_ARG:
                    return done, end
                n = len(a)
                pos += n + len(b'%d' % n) + 5
            done += 1
            end = pos
    except IndexError:
        pass
    return done, end
