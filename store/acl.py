"""Access control lists: the server's users, their rules, and describing them (acl.c).

`Acl` (server.acl) keeps the users (Redis's Users radix tree, listed by name) and the
command table their selectors refer to; the rules (ACL SETUSER's words) change a user's
flags, passwords and selectors (store/acl_users.py's model). Its other parts are base
classes of their own modules: the permission checks (store/acl_checks.py), with the ACL
LOG they write (store/acl_log.py), and the ACL file (store/acl_file.py).

Rules as Redis 7.0 describes them back (ACL LIST, GETUSER): the command rules are
rebuilt from the set, +@all or -@all, then the categories that fit best, then single
commands. Redis emits those single commands in its command dict's hash order; here they
come in the table's order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .acl_checks import AclChecks
from .acl_file import AclFile
from .acl_users import (
    CATEGORIES,
    E_CHANNELS_AFTER_ALL,
    E_FIRSTARG_OF_SUBCOMMAND,
    E_KEYS_AFTER_ALL,
    E_NO_SUCH_PASSWORD,
    E_SYNTAX,
    E_UNKNOWN,
    READ,
    WRITE,
    AclError,
    Selector,
    User,
    has_spaces,
    hash_password,
    password_hash,
    pattern_string,
)
from .glob import compile_glob
from .request_parser import split_args


class Acl(AclChecks, AclFile):
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
        default: str = self.server.config['acl-pubsub-default']
        return default == 'allchannels'

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
            h = password_hash(op)
            if h not in user.passwords:
                user.passwords.append(h)
            user.nopass = False
        elif op[:1] in (b'<', b'!'):
            h = password_hash(op)
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
        return ' '.join(pattern_string(p, f) for p, f, _ in s.patterns)

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
