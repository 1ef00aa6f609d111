"""The AOF manifest (aof.c's aofManifest): which file is the base, which are history and
which are the incr files, in the text format Redis 7.0 reads and writes
(`file <name> seq <n> type b|h|i` per line, names quoted as sdscatrepr quotes them).

`Manifest.parse` is aofLoadManifestFromFile, with its checks and its messages (a bad
manifest is a LoadError, the lines Redis logs before it logged first); `render` is
getAofManifestAsString. Writing it to disk is aof.Aof._persist_manifest's (temp file,
fsync, rename, fsync of the directory).
"""

from __future__ import annotations

from typing import Any

from ..request_parser import split_args
from .errors import LoadError

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
