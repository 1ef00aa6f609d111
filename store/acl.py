"""Access control lists: users, their rules and the permission checks (Redis 7.0's acl.c).

A user has flags (on/off, nopass, sanitize-payload), SHA256 password hashes and one or
more selectors: the root one, which the rules outside parentheses change, and any added
with `(rules)`. A selector allows a set of commands (commands and subcommands, the
objects of the server's table, as Redis's bitmap of command ids), key patterns with
read/write permissions, and channel patterns. A command runs when one selector allows
it with all its keys and channels.

What this costs the hot path: nothing. A connection whose user may run everything on
every key and channel (the default user, unless changed) stays ungated; any other takes
the gated path, where `check` runs (Connection._execute_gated).

Rules as Redis 7.0 describes them back (ACL LIST, GETUSER): the command rules are
rebuilt from the set, +@all or -@all, then the categories that fit best, then single
commands. Redis emits those single commands in its command dict's hash order; here they
come in the table's order.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from typing import Any

from .clock import now_ms
from .glob import compile_glob, glob_match
from .request_parser import split_args

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

# Permission check results, in Redis's order: the highest one is reported when no
# selector allows a command (ACLCheckAllUserCommandPerm).
OK, DENIED_CMD, DENIED_KEY, DENIED_AUTH, DENIED_CHANNEL = 0, 1, 2, 3, 4
REASONS = {DENIED_CMD: 'command', DENIED_KEY: 'key', DENIED_AUTH: 'auth', DENIED_CHANNEL: 'channel'}

READ, WRITE = 1, 2  # key pattern permissions (%R~, %W~; ~ is both)
_KEY_READ = frozenset(('access',))  # key spec flags that need each permission
_KEY_WRITE = frozenset(('insert', 'delete', 'update'))
_CHANNEL_COMMANDS = frozenset(('publish', 'spublish', 'subscribe', 'ssubscribe', 'psubscribe'))

LOG_GROUPING_MS = 60000  # ACL_LOG_GROUPING_MAX_TIME_DELTA


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


def _password_hash(op: bytes) -> str:
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


class Acl:
    """The server's users (Redis's Users radix tree, ordered by name when listed), the
    command table they refer to, and the ACL log."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.log: list[dict[str, Any]] = []  # newest first
        self.keyed: dict[Any, int] = {}  # a command's one key spec's needs, -1: no such
        self.with_keys = {cmd for cmd in self.all_commands() if cmd.has_keys()}
        self.in_category = {
            name: [cmd for cmd in self.all_commands() if '@' + name in cmd.categories]
            for name in CATEGORIES
        }
        self.users: dict[bytes, User] = {}
        self.default = self._create_default()
        self.users[b'default'] = self.default
        # No user's: what the AOF replays (Redis's fake client has no user, no checks)
        self.loader = self._create_default()

    # -- the command table ------------------------------------------------------------------

    def commands(self) -> list[Any]:
        """The top-level commands, each once (the table holds both spellings)."""
        table = self.server.commands
        return [cmd for name, cmd in table.items() if name == cmd.name.encode()]

    def all_commands(self) -> Iterator[Any]:
        """Every command and subcommand, each container followed by its subcommands."""
        for cmd in self.commands():
            yield cmd
            yield from cmd.subcommands.values()

    def lookup(self, name: bytes) -> Any:
        """ACLLookupCommand: `cmd` or `cmd|sub`, strictly (SELECT|0 is no command)."""
        parts = name.split(b'|')
        if len(parts) > 2:
            return None
        cmd = self.server.commands.get(parts[0].lower())
        if cmd is None:
            return None
        if len(parts) == 1:
            return cmd
        if not cmd.subcommands:
            return None
        return cmd.subcommands.get(parts[1].decode('latin-1').lower())

    # -- rules ------------------------------------------------------------------------------

    def new_user(self, name: bytes) -> User:
        return User(name, self._pubsub_default())

    def _pubsub_default(self) -> bool:
        return self.server.config['acl-pubsub-default'] == 'allchannels'

    def _create_default(self) -> User:
        user = self.new_user(b'default')
        for op in (b'+@all', b'~*', b'&*', b'on', b'nopass'):
            self.set_user(user, op)
        return user

    def _change(self, s: Selector, cmd: Any, allow: bool) -> None:
        """ACLChangeSelectorPerm: a command and, for a container, its subcommands."""
        self._bit(s, cmd, allow)
        s.firstargs.pop(cmd, None)
        for sub in cmd.subcommands.values():
            self._bit(s, sub, allow)

    @staticmethod
    def _bit(s: Selector, cmd: Any, allow: bool) -> None:
        if allow:
            s.allowed.add(cmd)
        else:
            s.allowed.discard(cmd)
            s.allcommands = False

    def _category(self, s: Selector, name: bytes, allow: bool) -> None:
        commands = self.in_category.get(name.decode('latin-1').lower())
        if commands is None:
            raise AclError(E_UNKNOWN)
        for cmd in commands:  # a container before its subcommands, as Redis walks them
            self._change(s, cmd, allow)

    def set_selector(self, s: Selector, op: bytes) -> None:
        """ACLSetSelector: one command, key or channel rule."""
        low = op.lower()
        if low in (b'allkeys', b'~*'):
            s.allkeys = True
            s.patterns.clear()
        elif low == b'resetkeys':
            s.allkeys = False
            s.patterns.clear()
        elif low in (b'allchannels', b'&*'):
            s.allchannels = True
            s.channels.clear()
        elif low == b'resetchannels':
            s.allchannels = False
            s.channels.clear()
        elif low in (b'allcommands', b'+@all'):
            s.allowed = set(self.all_commands())
            s.future = s.allcommands = True
            s.firstargs.clear()
        elif low in (b'nocommands', b'-@all'):
            s.allowed = set()
            s.future = s.allcommands = False
            s.firstargs.clear()
        elif op[:1] in (b'~', b'%'):
            self._key_pattern(s, op)
        elif op[:1] == b'&':
            if s.allchannels:
                raise AclError(E_CHANNELS_AFTER_ALL)
            if has_spaces(op[1:]):
                raise AclError(E_SYNTAX)
            if op[1:] not in s.channels:
                s.channels.append(op[1:])
            s.allchannels = False
        elif op[:1] == b'+' and op[1:2] != b'@':
            self._allow(s, op[1:])
        elif op[:1] == b'-' and op[1:2] != b'@':
            cmd = self.lookup(op[1:])
            if cmd is None:
                raise AclError(E_UNKNOWN)
            self._change(s, cmd, False)
        elif op[:1] in (b'+', b'-') and op[1:2] == b'@':
            self._category(s, op[2:], op[:1] == b'+')
        else:
            raise AclError(E_SYNTAX)

    def _key_pattern(self, s: Selector, op: bytes) -> None:
        if s.allkeys:
            raise AclError(E_KEYS_AFTER_ALL)
        flags = READ | WRITE
        offset = 1
        if op[:1] == b'%':
            flags = 0
            while offset < len(op):
                c = op[offset : offset + 1].upper()
                if c == b'R' and not flags & READ:
                    flags |= READ
                elif c == b'W' and not flags & WRITE:
                    flags |= WRITE
                elif c == b'~':
                    offset += 1
                    break
                else:
                    raise AclError(E_SYNTAX)
                offset += 1
            if not flags:  # '%' or '%~': no permission named
                raise AclError(E_SYNTAX)
        pattern = op[offset:]
        if has_spaces(pattern):
            raise AclError(E_SYNTAX)
        for known in s.patterns:
            if known[0] == pattern:
                known[1] |= flags
                break
        else:
            s.patterns.append([pattern, flags, compile_glob(pattern)])
        s.allkeys = False

    def _allow(self, s: Selector, name: bytes) -> None:
        """+command, +container|sub, or +command|first-arg (deprecated, still accepted)."""
        if b'|' not in name:
            cmd = self.lookup(name)
            if cmd is None:
                raise AclError(E_UNKNOWN)
            self._change(s, cmd, True)
            return
        base, _, first = name.rpartition(b'|')
        cmd = self.lookup(base)
        if cmd is None:
            raise AclError(E_UNKNOWN)
        if cmd.container is not None:
            raise AclError(E_FIRSTARG_OF_SUBCOMMAND)
        if not first:
            raise AclError(E_SYNTAX)
        if cmd.subcommands:
            sub = self.lookup(name)
            if sub is None:
                raise AclError(E_UNKNOWN)
            self._change(s, sub, True)
            return
        self.server.log(
            'Deprecation warning: Allowing a first arg of an otherwise blocked command is a '
            'misuse of ACL and may get disabled in the future (offender: +'
            + name.decode('utf-8', 'replace')
            + ')',
            '#',
        )
        args = s.firstargs.setdefault(cmd, [])
        if first.lower() not in (a.lower() for a in args):
            args.append(first)

    def set_user(self, user: User, op: bytes) -> None:
        """ACLSetUser: one rule (AclError when it does not apply)."""
        if not op:
            return
        user.table = None
        low = op.lower()
        if low == b'on':
            user.enabled = True
        elif low == b'off':
            user.enabled = False
        elif low == b'skip-sanitize-payload':
            user.sanitize = 'skip-sanitize-payload'
        elif low == b'sanitize-payload':
            user.sanitize = 'sanitize-payload'
        elif low == b'nopass':
            user.nopass = True
            user.passwords.clear()
        elif low == b'resetpass':
            user.nopass = False
            user.passwords.clear()
        elif op[:1] in (b'>', b'#'):
            h = _password_hash(op)
            if h not in user.passwords:
                user.passwords.append(h)
            user.nopass = False
        elif op[:1] in (b'<', b'!'):
            h = _password_hash(op)
            if h not in user.passwords:
                raise AclError(E_NO_SUCH_PASSWORD)
            user.passwords.remove(h)
        elif op[:1] == b'(' and op[-1:] == b')':
            s = Selector(False, self._pubsub_default())
            for part in split_args(op[1:-1]) or ():  # sdssplitargs: unbalanced, no rules
                self.set_selector(s, part)
            user.selectors.append(s)
        elif low == b'clearselectors':
            del user.selectors[1:]
        elif low == b'reset':
            for rule in (b'resetpass', b'resetkeys', b'resetchannels'):
                self.set_user(user, rule)
            if self._pubsub_default():
                self.set_user(user, b'allchannels')
            for rule in (b'off', b'sanitize-payload', b'clearselectors', b'-@all'):
                self.set_user(user, rule)
        else:
            self.set_selector(user.root, op)

    def apply(self, user: User, ops: list[bytes]) -> None:
        """Rules applied in order to `user`; AclError (with the rule) leaves it changed
        up to there: callers stage on a copy."""
        for op in ops:
            try:
                self.set_user(user, op)
            except AclError as e:
                raise AclError(op, str(e)) from None

    # -- describing ------------------------------------------------------------------------

    def _counts(self, s: Selector, category: str) -> tuple[int, int]:
        """How many of a category's commands the selector allows, and how many not."""
        commands = self.in_category[category]
        on = sum(cmd in s.allowed for cmd in commands)
        return on, len(commands) - on

    def describe_commands(self, s: Selector) -> str:
        """ACLDescribeSelectorCommandRules: +@all or -@all, the categories that fit best,
        then the commands that still differ."""
        fake = Selector(False, False)
        additive = not s.future
        rules = ['-@all' if additive else '+@all']
        self.set_selector(fake, rules[0].encode())
        temp = Selector(False, False)
        temp.allowed = set(s.allowed)
        applied: set[str] = set()
        while True:
            best = None
            mindiff, maxsame = 1 << 62, 0
            for name in CATEGORIES:
                if name in applied:
                    continue
                on, off = self._counts(temp, name)
                diff, same = (off, on) if additive else (on, off)
                if same > diff and (diff < mindiff or (diff == mindiff and same > maxsame)):
                    best, mindiff, maxsame = name, diff, same
            if best is None:
                break
            op = ('+@' if additive else '-@') + best
            self.set_selector(fake, op.encode())
            self.set_selector(temp, (('-@' if additive else '+@') + best).encode())
            rules.append(op)
            applied.add(best)
        for cmd in self.commands():
            for each in (cmd, *cmd.subcommands.values()):
                mine = each in s.allowed
                if mine != (each in fake.allowed):
                    rules.append(('+' if mine else '-') + each.name)
                    self._change(fake, each, mine)
                if not mine:
                    for arg in s.firstargs.get(each, ()):
                        rules.append(f'+{each.name}|{arg.decode("utf-8", "surrogateescape")}')
        return ' '.join(rules)

    @staticmethod
    def describe_keys(s: Selector) -> str:
        if s.allkeys:
            return '~*'
        return ' '.join(_pattern_string(p, f) for p, f, _ in s.patterns)

    @staticmethod
    def describe_channels(s: Selector) -> str:
        if s.allchannels:
            return '&*'
        return ' '.join('&' + c.decode('utf-8', 'surrogateescape') for c in s.channels)

    def describe_selector(self, s: Selector) -> str:
        """ACLDescribeSelector: keys, channels and commands in ACL SETUSER's words (the
        channels after `resetchannels` unless they are all allowed)."""
        channels = self.describe_channels(s)
        if not s.allchannels:
            channels = f'resetchannels {channels}'.rstrip()
        parts = (self.describe_keys(s), channels, self.describe_commands(s))
        return ' '.join(p for p in parts if p)

    def describe_user(self, user: User) -> str:
        """ACLDescribeUser: the rules that recreate `user` (ACL LIST, ACL SAVE)."""
        parts = user.flags() + ['#' + h for h in user.passwords]
        parts.append(self.describe_selector(user.root))
        out = ' '.join(parts)
        for s in user.selectors[1:]:
            out += f' ({self.describe_selector(s)})'
        return out

    def listing(self) -> list[str]:
        return [
            f'user {name.decode("utf-8", "surrogateescape")} {self.describe_user(u)}'
            for name, u in sorted(self.users.items())
        ]

    # -- authentication ----------------------------------------------------------------------

    def credentials(self, name: bytes, password: bytes) -> User | None:
        """ACLCheckUserCredentials: the user, if it is on and the password is one of its
        own (any, for nopass)."""
        user = self.users.get(name)
        if user is None or not user.enabled:
            return None
        if user.nopass:
            return user
        if hash_password(password) in user.passwords:
            return user
        return None

    def set_default_password(self, password: str) -> None:
        """requirepass: the default user's one password, or nopass when empty."""
        self.set_user(self.default, b'resetpass')
        if password:
            self.set_user(self.default, b'>' + password.encode('utf-8', 'surrogateescape'))
        else:
            self.set_user(self.default, b'nopass')

    def auth_required(self) -> bool:
        """New connections start unauthenticated (authRequired)."""
        d = self.default
        return not d.nopass or not d.enabled

    # -- checks ------------------------------------------------------------------------------

    def table_for(self, user: User) -> dict[bytes, Any] | None:
        """The commands `user` may run with no check, as a command table for the hot path:
        the server's own for a user that may run everything; for one whose root selector
        allows every key and channel, the commands it allows whole (a container with
        every subcommand; AUTH, HELLO and the other no_auth ones); None when every
        command needs its keys or channels checked."""
        if user.unrestricted():
            return self.server.commands
        root = user.root
        if not (root.allkeys and root.allchannels):
            return None
        if user.table is None:
            allowed = root.allowed
            user.table = {
                name: cmd
                for name, cmd in self.server.commands.items()
                if (cmd.no_auth or cmd in allowed)
                and all(sub in allowed for sub in cmd.subcommands.values())
            }
        return user.table

    def check(self, user: User, cmd: Any, args: list[bytes]) -> tuple[int, int]:
        """ACLCheckAllUserCommandPerm: (OK, 0), or the reason no selector allows `cmd` (the
        command or subcommand found for `args`) and the position of the key or channel to
        blame."""
        relevant, last = DENIED_CMD, 0
        keys: list[Any] | None = None
        for s in user.selectors:
            result, pos, keys = self._check_selector(s, cmd, args, keys)
            if result == OK:
                return OK, 0
            if result > relevant or (result == relevant and pos > last):
                relevant, last = result, pos
        return relevant, last

    def _keys_of(self, cmd: Any, args: list[bytes]) -> list[tuple[int, int]]:
        """key_needs, with what a command's declaration fixes worked out once: for most
        commands, one key spec of fixed flags and positions by first/last/step."""
        need = self.keyed.get(cmd)
        if need is None:
            simple = cmd.getkeys is None and cmd.key_flags_of is None and len(cmd.key_specs) == 1
            need = self.keyed[cmd] = _need(cmd.key_specs[0].flags) if simple else -1
        if need < 0:
            return key_needs(cmd, args)
        n = len(args)
        return [(i, need) for i in cmd.key_positions(args) if i < n]

    def _check_selector(
        self, s: Selector, cmd: Any, args: list[bytes], keys: list[Any] | None
    ) -> tuple[int, int, list[Any] | None]:
        if not s.allcommands and not cmd.no_auth and cmd not in s.allowed:
            allowed = s.firstargs.get(cmd)
            if len(args) < 2 or not allowed:
                return DENIED_CMD, 0, keys
            first = args[2 if cmd.container is not None else 1].lower()
            if all(a.lower() != first for a in allowed):
                return DENIED_CMD, 0, keys
        if not s.allkeys and cmd in self.with_keys:
            if keys is None:
                keys = self._keys_of(cmd, args)
            for pos, need in keys:
                if not _key_allowed(s, args[pos], need):
                    return DENIED_KEY, pos, keys
        if not s.allchannels and cmd.name in _CHANNEL_COMMANDS:
            if cmd.name in ('publish', 'spublish'):
                positions = range(1, 2)
            else:
                positions = range(1, len(args))
            literal = cmd.name == 'psubscribe'
            for pos in positions:
                if not channel_in(s.channels, args[pos], literal):
                    return DENIED_CHANNEL, pos, keys
        return OK, 0, keys

    def deny(self, conn: Any, cmd: Any, args: list[bytes]) -> str | None:
        """processCommand's ACL check for `conn`'s user: None when allowed, else the
        -NOPERM message, the denial logged ('multi' while queueing)."""
        context = 'multi' if conn.multi is not None else 'toplevel'
        result = self.check_logged(conn, cmd, args, context)
        if result == OK:
            return None
        if result == DENIED_CMD:
            return f"NOPERM this user has no permissions to run the '{cmd.name}' command"
        what = 'keys' if result == DENIED_KEY else 'channels'
        return f'NOPERM this user has no permissions to access one of the {what} used as arguments'

    def reads_every_key(self, user: User, cmd: Any, args: list[bytes]) -> bool:
        """ACLUserCheckCmdWithUnrestrictedKeyAccess for reads: a selector allows the
        command and reads of any key (allkeys, or a `*` pattern that may read)."""
        keys = None
        for s in user.selectors:
            result, _, keys = self._check_selector(s, cmd, args, keys)
            if result == OK and (
                s.allkeys or any(p == b'*' and f & READ for p, f, _ in s.patterns)
            ):
                return True
        return False

    def check_logged(
        self, conn: Any, cmd: Any, args: list[bytes], context: str, running: Any = None
    ) -> int:
        """`check` for `conn`'s user, a denial logged with the command `conn` is running
        (`cmd`, or for a script's command its EVAL or FCALL)."""
        result, pos = self.check(conn.user, cmd, args)
        if result != OK:
            obj = cmd.name.encode() if result == DENIED_CMD else args[pos]
            self.add_log(conn, result, context, obj, cmd=running or cmd)
        return result

    def deny_queued(self, conn: Any, cmd: Any, args: list[bytes]) -> str | None:
        """EXEC's check of a queued command (`cmd` as queued, a container for a
        subcommand): None, or why the rules changed under the transaction."""
        if cmd.subcommands and len(args) > 1:
            cmd = cmd.subcommands.get(args[1].decode('latin-1').lower(), cmd)
        result = self.check_logged(conn, cmd, args, 'multi')
        if result == OK:
            return None
        reason = {
            DENIED_CMD: 'no permission to execute the command or subcommand',
            DENIED_KEY: 'no permission to touch the specified keys',
            DENIED_CHANNEL: 'no permission to access one of the channels used as arguments',
        }[result]
        return (
            'NOPERM ACLs rules changed between the moment the transaction was accumulated '
            f'and its execution. The user is no longer able to execute this command: {reason}.'
        )

    # -- the log -------------------------------------------------------------------------------

    def add_log(
        self,
        conn: Any,
        reason: int,
        context: str,
        obj: bytes,
        username: bytes | None = None,
        cmd: Any = None,
    ) -> None:
        """addACLLogEntry: a denial, merged into a similar one of the last minute among
        the newest ten. The client info names `cmd`, the command denied, as its last
        command (as Redis's, which records a command when it looks it up)."""
        if cmd is not None:
            conn.last_cmd, conn.last_sub = cmd.container or cmd, cmd

        entry = {
            'count': 1,
            'reason': reason,
            'context': context,
            'object': obj,
            'username': username if username is not None else conn.user.name,
            'ctime': now_ms(),
            'cinfo': self.server.client_info(conn),
        }
        for i, old in enumerate(self.log[:10]):
            if (
                old['reason'] == reason
                and old['context'] == context
                and abs(old['ctime'] - entry['ctime']) <= LOG_GROUPING_MS
                and old['object'] == obj
                and old['username'] == entry['username']
            ):
                old['cinfo'], old['ctime'] = entry['cinfo'], entry['ctime']
                old['count'] += 1
                self.log.insert(0, self.log.pop(i))
                return
        self.log.insert(0, entry)
        del self.log[self.server.config['acllog-max-len'] :]

    # -- files ---------------------------------------------------------------------------------

    def load_at_startup(self) -> str | None:
        return _startup_errors(self)

    def _in_dir(self, path: str) -> str:
        """A relative aclfile is in `dir`, where Redis, having chdir'd there, opens it."""
        return os.path.join(self.server.config['dir'], path)

    def save(self, path: str) -> bool:
        """ACLSaveToFile: every user as a `user` line, written whole then renamed."""
        path = self._in_dir(path)
        text = ''.join(line + '\n' for line in self.listing())
        tmp = f'{path}.tmp-{os.getpid()}'
        try:
            with open(tmp, 'w', encoding='utf-8', errors='surrogateescape') as f:
                f.write(text)
            os.replace(tmp, path)
        except OSError as e:
            self.server.log(f'Writing ACL file for ACL SAVE: {e.strerror}', '#')
            try:
                os.unlink(tmp)
            except OSError:
                pass
            return False
        return True

    def load(self, path: str) -> str | None:
        """ACLLoadFromFile: None when every line loaded (the users replaced), else the
        errors, with nothing changed."""
        try:
            with open(self._in_dir(path), 'rb') as f:
                lines = f.read().split(b'\n')
        except OSError as e:
            return f"Error loading ACLs, opening file '{path}': {e.strerror}"
        users: dict[bytes, User] = {}
        errors = ''
        for n, raw in enumerate(lines, 1):
            line = raw.strip(b' \t\r\n')
            if not line:
                continue
            argv = [a for a in line.split(b' ') if a]
            if not argv:
                continue
            if argv[0] != b'user' or len(argv) < 2:
                errors += f'{path}:{n} should start with user keyword followed by the username. '
                continue
            if has_spaces(argv[1]):
                name = argv[1].decode('utf-8', 'replace')
                errors += f"'{path}:{n}: username '{name}' contains invalid characters. "
                continue
            if argv[1] in users:
                name = argv[1].decode('utf-8', 'replace')
                errors += f"WARNING: Duplicate user '{name}' found on line {n}. "
                continue
            user = users[argv[1]] = self.new_user(argv[1])
            ops = merge_selectors(argv[2:])
            if ops is None:
                errors += f'{path}:{n}: Unmatched parenthesis in selector definition.'
                continue
            for op in ops:
                try:
                    self.set_user(user, op.strip(b'\t\r\n'))
                except AclError as e:
                    errors += f'{path}:{n}: {e}. '
        if errors:
            return errors + (
                'WARNING: ACL errors detected, no change to the previously active ACL rules '
                'was performed'
            )
        default = users.pop(b'default', None) or self._create_default()
        self.default.copy_from(default)
        old = self.users
        self.users = {b'default': self.default, **users}
        for uname, gone in old.items():
            if uname != b'default':
                self.server.users_changed(gone, deleted=True)
        self.server.users_changed(self.default)
        return None


def _startup_errors(acl: Acl) -> str | None:
    """ACLLoadUsersAtStartup: the config file's `user` lines, then the ACL file; the
    message that stops the start, if any."""
    config = acl.server.config
    path = config['aclfile']
    if path and config.users:
        return (
            'Configuring Redis with users defined in redis.conf and at the same setting an ACL '
            'file path is invalid. This setup is very likely to lead to configuration errors '
            'and security holes, please define either an ACL file or declare users directly '
            'in your redis.conf, but not both.'
        )
    for name, *rules in config.users:
        if has_spaces(name):
            return 'Spaces not allowed in ACL usernames'
        user = acl.users.get(name)
        if user is None:
            user = acl.users[name] = acl.new_user(name)
        else:
            acl.set_user(user, b'reset')  # only `default` can be defined twice
        ops = merge_selectors(rules)
        if ops is None:
            return f"Unmatched parenthesis in the rules of the user named '{_s(name)}'"
        for op in ops:
            try:
                acl.set_user(user, op)
            except AclError as e:
                return (
                    f"Error loading ACL rule '{_s(op)}' for the user named '{_s(name)}': {e}\n"
                    'Critical error while loading ACLs. Exiting.'
                )
    if path:
        errors = acl.load(path)
        if errors is not None:
            return f'Aborting Redis startup because of ACL errors: {errors}'
    return None


def _s(b: bytes) -> str:
    return b.decode('utf-8', 'surrogateescape')


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


def key_needs(cmd: Any, args: list[bytes]) -> list[tuple[int, int]]:
    """The key positions of a command's arguments (positions past them dropped), each
    with the permissions its key spec needs (getKeysFromCommandWithSpecs, then
    ACLSelectorCheckKey's flags)."""
    positions = [i for i in cmd.key_positions(args) if i < len(args)]
    return [(i, _need(flags)) for i, flags in cmd.key_flags(args, positions)]


_NEEDS: dict[tuple[str, ...], int] = {}


def _need(flags: tuple[str, ...]) -> int:
    """READ for a key spec that accesses the value, WRITE for one that inserts, deletes
    or updates it (per flag set, once)."""
    need = _NEEDS.get(flags)
    if need is None:
        low = {f.lower() for f in flags}
        need = _NEEDS[flags] = (READ if low & _KEY_READ else 0) | (WRITE if low & _KEY_WRITE else 0)
    return need


def _key_allowed(s: Selector, key: bytes, need: int) -> bool:
    """ACLSelectorCheckKey."""
    for _, flags, glob in s.patterns:
        if flags & need == need and glob.match(key):
            return True
    return False


def channel_in(channels: list[bytes], channel: bytes, literal: bool) -> bool:
    """ACLCheckChannelAgainstList: PSUBSCRIBE's patterns must be allowed literally."""
    for pattern in channels:
        if pattern == channel if literal else glob_match(pattern, channel):
            return True
    return False


def _pattern_string(pattern: bytes, flags: int) -> str:
    prefix = '~' if flags == READ | WRITE else '%R~' if flags == READ else '%W~'
    return prefix + pattern.decode('utf-8', 'surrogateescape')
