"""ACL permission checks (acl.c's ACLCheckAllUserCommandPerm and its callers): a part of
Acl (store/acl.py), as a base class of it.

A command runs when one of the user's selectors allows it with all its keys and
channels; the denial reported is the highest reason any selector gave (OK < DENIED_CMD <
DENIED_KEY < DENIED_AUTH < DENIED_CHANNEL, Redis's order), with the position of the key
or channel to blame, and is logged (ACL LOG). A command's key positions and the
permissions each needs come from its key specs, worked out once per command when they
are fixed (`_keys_of`).

What this costs the hot path: nothing. A connection whose user may run everything on
every key and channel stays ungated; a user that may run some commands whole gets a
command table of those (`table_for`), the hot path's own; any other takes the gated
path, where `check` runs (Connection._execute_gated).
"""

from __future__ import annotations

from typing import Any

from .acl_log import AclLog
from .acl_users import READ, WRITE, Selector, User
from .glob import glob_match

# Permission check results, in Redis's order: the highest one is reported when no
# selector allows a command (ACLCheckAllUserCommandPerm).
OK, DENIED_CMD, DENIED_KEY, DENIED_AUTH, DENIED_CHANNEL = 0, 1, 2, 3, 4
REASONS = {DENIED_CMD: 'command', DENIED_KEY: 'key', DENIED_AUTH: 'auth', DENIED_CHANNEL: 'channel'}
_KEY_READ = frozenset(('access',))  # key spec flags that need each permission
_KEY_WRITE = frozenset(('insert', 'delete', 'update'))
_CHANNEL_COMMANDS = frozenset(('publish', 'spublish', 'subscribe', 'ssubscribe', 'psubscribe'))


class AclChecks(AclLog):
    """Acl's checks: they read the server's command table and the users' selectors."""

    keyed: dict[Any, int]  # a command's one key spec's needs, -1: no such (Acl.__init__)
    with_keys: set[Any]  # the commands that have keys

    def table_for(self, user: User) -> dict[bytes, Any] | None:
        """The commands `user` may run with no check, as a command table for the hot path:
        the server's own for a user that may run everything; for one whose root selector
        allows every key and channel, the commands it allows whole (a container with
        every subcommand; AUTH, HELLO and the other no_auth ones); None when every
        command needs its keys or channels checked."""
        if user.unrestricted():
            table: dict[bytes, Any] = self.server.commands
            return table
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
