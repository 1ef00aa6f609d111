"""Redis glob matching (stringmatchlen semantics) in time bounded by pattern x subject.

Redis's matcher recurses at every `*` and, for crafted patterns such as
`*a*a*a*a*a*a*a*a*a*a*b` against a long run of `a`s, explores exponentially many splits.
Here a pattern is cut at its `*`s into segments in which every token (a literal byte, `?`,
or a `[...]` class) matches exactly one byte. A glob with stars matches iff the first
segment matches at the start, the last at the end, and the middle ones appear in order in
between; taking the leftmost occurrence of each middle segment is always safe (a later one
only leaves less room for the rest). Each segment is a fixed-width regular expression, so
matching is a handful of C-level searches: O(len(pattern) x len(subject)) at worst, with no
backtracking across stars.

Semantics ported from Redis 7.0 util.c: `?` any byte, `[abc]`, `[^abc]`, `[a-z]` (reversed
ranges allowed), `\\x` escapes (also inside classes), an unterminated `[` runs to the end of
the pattern, and an empty subject matches only an empty pattern. Redis gives up (no match)
when its recursion passes 1,000 stars ("protection against abusive patterns"); every match
goes through each star but a trailing one, so a pattern with more than 1,000 inner stars
(consecutive stars count once) matches nothing here either.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final, Literal, TypeAlias

_ANY: Final = None
MAX_NESTING: Final = 1000
"""util.c's stringmatchlen_impl returns 0 when its star recursion is deeper than this."""
_NEVER: Final = (re.compile(b'(?!)'), 1)

Token: TypeAlias = frozenset[int] | None
"""One byte's matcher: the set of bytes it accepts, or _ANY (None) for '?'."""
Segment: TypeAlias = tuple[re.Pattern[bytes], int]
"""A star-free run of tokens as a fixed-width regex, and its width in bytes."""


def _tokens(pattern: bytes) -> list[Token | Literal['*']]:
    """Split a glob into '*' markers and single-byte matchers (a frozenset of bytes, or
    _ANY for '?')."""
    out: list[Token | Literal['*']] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == 42:  # '*'
            if not out or out[-1] != '*':
                out.append('*')
            i += 1
        elif c == 63:  # '?'
            out.append(_ANY)
            i += 1
        elif c == 91:  # '['
            i += 1
            negate = i < n and pattern[i] == 94  # '^'
            if negate:
                i += 1
            members: set[int] = set()
            while True:
                if i < n and pattern[i] == 92 and n - i >= 2:  # '\' escape
                    members.add(pattern[i + 1])
                    i += 2
                elif i < n and pattern[i] == 93:  # ']'
                    i += 1
                    break
                elif i >= n:
                    break
                elif n - i >= 3 and pattern[i + 1] == 45:  # 'a-z'
                    lo, hi = sorted((pattern[i], pattern[i + 2]))
                    members.update(range(lo, hi + 1))
                    i += 3
                else:
                    members.add(pattern[i])
                    i += 1
            if negate:
                members = set(range(256)) - members
            out.append(frozenset(members))
        else:
            if c == 92 and n - i >= 2:  # '\x'
                i += 1
            out.append(frozenset((pattern[i],)))
            i += 1
    return out


def _segment_regex(tokens: list[Token], nocase: bool) -> Segment:
    parts = []
    for t in tokens:
        if t is _ANY:
            parts.append(b'.')
        elif not t:
            parts.append(b'(?!)')  # empty class: matches nothing
        elif len(t) == 1:
            parts.append(re.escape(bytes(t)))
        else:
            parts.append(b'[' + b''.join(re.escape(bytes((b,))) for b in sorted(t)) + b']')
    flags = re.DOTALL | (re.IGNORECASE if nocase else 0)
    return re.compile(b''.join(parts), flags), len(tokens)


class Glob:
    """A compiled pattern; `match(subject)` is the whole test."""

    __slots__ = (
        'pattern',
        'literal',
        'prefix',
        'suffix',
        'segments',
        'starred',
        'nocase',
        'prefix_only',
    )

    pattern: bytes
    literal: bytes | None
    prefix: bytes
    suffix: bytes
    segments: list[Segment]
    starred: bool
    nocase: bool
    prefix_only: bool

    def __init__(self, pattern: bytes, nocase: bool = False) -> None:
        self.pattern = pattern
        self.nocase = nocase
        tokens = _tokens(pattern)
        segments: list[list[Token]] = []
        cur: list[Token] = []
        for t in tokens:
            if t == '*':
                segments.append(cur)
                cur = []
            else:
                cur.append(t)
        segments.append(cur)
        self.starred = len(segments) > 1
        # The literal prefix (bytes before the first wildcard) lets the pub/sub layer
        # index patterns; `literal` is set when the whole pattern is one literal string.
        prefix = bytearray()
        for t in segments[0]:
            if t is _ANY or len(t) != 1 or nocase:
                break
            prefix += bytes(t)
        self.prefix = bytes(prefix)
        self.literal = self.prefix if not self.starred and len(prefix) == len(segments[0]) else None
        # `prefix*` (KEYS user:*, an ACL's ~app:*): a startswith, no regex
        self.prefix_only = (
            len(segments) == 2 and not segments[1] and len(prefix) == len(segments[0])
        )
        # The literal suffix (bytes after the last wildcard of a starred pattern) indexes
        # patterns such as `*.log` that have no prefix.
        suffix = bytearray()
        if self.starred and not nocase:
            for t in reversed(segments[-1]):
                if t is _ANY or len(t) != 1:
                    break
                suffix[:0] = bytes(t)
        self.suffix = bytes(suffix)
        self.segments = [_segment_regex(s, nocase) for s in segments]
        inner_stars = len(segments) - 1 - (not segments[-1])
        if inner_stars > MAX_NESTING:
            # Redis's recursion gives up at the 1,001st star: a first segment that matches
            # nothing makes match() say no (prefix_only and literal are false here).
            self.segments[0] = _NEVER

    def match(self, subject: bytes) -> bool:
        if not subject:
            return not self.pattern
        if self.prefix_only:
            return subject.startswith(self.prefix)
        if self.literal is not None:
            return subject == self.literal
        segs = self.segments
        first, width = segs[0]
        if not self.starred:
            return len(subject) == width and first.fullmatch(subject) is not None
        n = len(subject)
        if width and not first.match(subject):
            return False
        pos = width
        last, lwidth = segs[-1]
        end = n - lwidth
        if end < pos:
            return False
        for rx, w in segs[1:-1]:
            if not w:
                continue
            m = rx.search(subject, pos, end)
            if m is None:
                return False
            pos = m.end()
        return not lwidth or last.fullmatch(subject, end) is not None


@lru_cache(maxsize=1024)
def compile_glob(pattern: bytes, nocase: bool = False) -> Glob:
    return Glob(bytes(pattern), nocase)


def glob_match(pattern: bytes, subject: bytes, nocase: bool = False) -> bool:
    """stringmatchlen(pattern, subject, nocase) for bytes."""
    return compile_glob(pattern, nocase).match(subject)
