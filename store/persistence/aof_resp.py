"""Commands as an incr file and the replicas' stream hold them: RESP arrays of bulk
strings, encoded as they are propagated and parsed as they are replayed.

Encoding is on the path of every propagated write: `resp_command` is one %-format of a
template for up to 15 arguments, and `resp_commands` encodes a loop turn's plain writes,
queued unencoded, in one pass whose steps all iterate in C (`encode_queued` walks the
AOF's queue). The queue's pieces say where they go (`ReplicasOnly`, `AofOnly`, from
PUBLISH and a script's redis.set_repl: `TO_AOF`, `TO_REPLICAS`). `_parse_command` reads
one command back as loadSingleAppendOnlyFile does (a replica reads its master's stream
with it too).
"""

from __future__ import annotations

from itertools import chain
from typing import Any

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


def encode_queued(buf: list[Any], replicas: bool = False) -> bytes:
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
