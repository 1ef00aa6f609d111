"""ACL users and selectors: the model Acl (store/acl.py) keeps and its rules change.

A user has flags (on/off, nopass, sanitize-payload), SHA256 password hashes and one or
more selectors: the root one, which the rules outside parentheses change, and any added
with `(rules)`. A selector allows a set of commands (commands and subcommands, the
objects of the server's table, as Redis's bitmap of command ids), key patterns with
read/write permissions (READ, WRITE), and channel patterns. Also here: the rules' error
messages (ACLSetUserStringError's), and the parsing of rule arguments that several
callers share (a selector spread over several arguments).
"""

from __future__ import annotations

import hashlib
from typing import Any

CATEGORIES = (
    'keyspace',
    'read',
    'write',
    'set',
    'sortedset',
    'list',
    'hash',
    'string',
    'bitmap',
    'hyperloglog',
    'geo',
    'stream',
    'pubsub',
    'admin',
    'fast',
    'slow',
    'blocking',
    'dangerous',
    'connection',
    'transaction',
    'scripting',
)

READ, WRITE = 1, 2  # key pattern permissions (%R~, %W~; ~ is both)


class AclError(Exception):
    """A rule that cannot be applied, with ACLSetUserStringError's message."""


E_UNKNOWN = 'Unknown command or category name in ACL'
E_SYNTAX = 'Syntax error'
E_KEYS_AFTER_ALL = (
    "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does "
    "not have any effect. Try 'resetkeys' to start with an empty list of patterns"
)
E_CHANNELS_AFTER_ALL = (
    "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and "
    "does not have any effect. Try 'resetchannels' to start with an empty list of channels"
)
E_NO_SUCH_PASSWORD = 'The password you are trying to remove from the user does not exist'
E_BAD_HASH = (
    'The password hash must be exactly 64 characters and contain only lowercase '
    'hexadecimal characters'
)
E_FIRSTARG_OF_SUBCOMMAND = 'Allowing first-arg of a subcommand is not supported'


def hash_password(password: bytes) -> str:
    return hashlib.sha256(password).hexdigest()


def password_hash(op: bytes) -> str:
    """The hash a password rule names: of the password after > or <, or the hash after #
    or ! (64 lowercase hex digits)."""
    if op[:1] in (b'>', b'<'):
        return hash_password(op[1:])
    h = op[1:]
    if len(h) != 64 or not all(48 <= c <= 57 or 97 <= c <= 102 for c in h):
        raise AclError(E_BAD_HASH)
    return h.decode()


def has_spaces(s: bytes) -> bool:
    """ACLStringHasSpaces: isspace() or NUL (usernames, key and channel patterns)."""
    return any(c in b' \t\n\v\f\r\0' for c in s)


class Selector:
    """aclSelector: commands (`allowed`, plus the reserved bit `future` that only +@all
    sets), key patterns and channel patterns."""

    __slots__ = (
        'root',
        'allowed',
        'future',
        'allcommands',
        'firstargs',
        'patterns',
        'allkeys',
        'channels',
        'allchannels',
    )

    def __init__(self, root: bool, allchannels: bool) -> None:
        self.root = root
        self.allowed: set[Any] = set()
        self.future = False
        self.allcommands = False  # every command, without looking at `allowed`
        self.firstargs: dict[Any, list[bytes]] = {}  # +select|0: command -> first args
        self.patterns: list[list[Any]] = []  # [pattern, READ|WRITE, its Glob], in order
        self.allkeys = False
        self.channels: list[bytes] = []
        self.allchannels = allchannels  # acl-pubsub-default

    def copy(self) -> Selector:
        new = Selector(self.root, self.allchannels)
        new.allowed = set(self.allowed)
        new.future = self.future
        new.allcommands = self.allcommands
        new.firstargs = {cmd: list(args) for cmd, args in self.firstargs.items()}
        new.patterns = [list(p) for p in self.patterns]
        new.allkeys = self.allkeys
        new.channels = list(self.channels)
        return new


class User:
    """A user: flags, password hashes, selectors (the root one first)."""

    __slots__ = ('name', 'enabled', 'nopass', 'sanitize', 'passwords', 'selectors', 'table')

    def __init__(self, name: bytes, allchannels: bool) -> None:
        self.name = name
        self.table: dict[bytes, Any] | None = None  # Acl.table_for's, until a rule changes
        self.enabled = False
        self.nopass = False
        self.sanitize: str | None = None  # 'sanitize-payload' or 'skip-sanitize-payload'
        self.passwords: list[str] = []
        self.selectors = [Selector(True, allchannels)]

    @property
    def root(self) -> Selector:
        return self.selectors[0]

    def copy_from(self, other: User) -> None:
        """ACLCopyUser: the rules of `other`, this user's name."""
        self.table = None
        self.enabled = other.enabled
        self.nopass = other.nopass
        self.sanitize = other.sanitize
        self.passwords = list(other.passwords)
        self.selectors = [s.copy() for s in other.selectors]

    def unrestricted(self) -> bool:
        """Any command on any key and channel: its connections need no checks."""
        root = self.root
        return root.allcommands and root.allkeys and root.allchannels

    def flags(self) -> list[str]:
        out = ['on' if self.enabled else 'off']
        if self.nopass:
            out.append('nopass')
        if self.sanitize is not None:
            out.append(self.sanitize)
        return out


def merge_selectors(ops: list[bytes]) -> list[bytes] | None:
    """ACLMergeSelectorArguments: a selector spread over several arguments, `(+get`
    `~key)`, made one; None when a parenthesis stays open."""
    out: list[bytes] = []
    current: bytes | None = None
    for op in ops:
        if current is None and op[:1] == b'(' and op[-1:] != b')':
            current = op
            continue
        if current is not None:
            current += b' ' + op
            if op[-1:] == b')':
                out.append(current)
                current = None
            continue
        out.append(op)
    return None if current is not None else out


def open_selector_index(ops: list[bytes]) -> int:
    """The index of the argument where an unmatched selector starts."""
    start = -1
    for i, op in enumerate(ops):
        if start < 0 and op[:1] == b'(' and op[-1:] != b')':
            start = i
        elif start >= 0 and op[-1:] == b')':
            start = -1
    return start


def pattern_string(pattern: bytes, flags: int) -> str:
    prefix = '~' if flags == READ | WRITE else '%R~' if flags == READ else '%W~'
    return prefix + pattern.decode('utf-8', 'surrogateescape')
