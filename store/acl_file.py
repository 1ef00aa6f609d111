"""ACL files (acl.c's ACLLoadFromFile, ACLSaveToFile, ACLLoadUsersAtStartup): a part of
Acl (store/acl.py), as a base class of it.

ACL SAVE writes every user as a `user` line, to a temporary file renamed over the ACL
file. ACL LOAD reads the whole file first and replaces the users only when every line
loaded, so an error changes nothing. At start-up, the config file's `user` lines or the
ACL file (not both) make the users. A relative aclfile is in `dir`, where Redis, having
chdir'd there, opens it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .acl_users import AclError, User, has_spaces, merge_selectors


class AclFile:
    """Acl's files: they read and replace Acl's users."""

    server: Any
    users: dict[bytes, User]
    default: User
    new_user: Callable[[bytes], User]
    set_user: Callable[[User, bytes], None]
    listing: Callable[[], list[str]]
    _create_default: Callable[[], User]

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


def _startup_errors(acl: AclFile) -> str | None:
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
