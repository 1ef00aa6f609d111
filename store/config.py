"""Configuration: the current values, and reading them from a config file or options.

`Config.values` holds each parameter's value under its canonical name (an alias reads and
writes the same entry); the parameters are store/config_params.py's table, their parsing
store/config_values.py's. `set_from_args` reads one directive as a config file line, a
command-line option or an embedding option gives it: validated and stored, no hooks (the
hooks that make a change take effect are store/server.py's `apply_config`; CONFIG GET,
SET and REWRITE are store/commands/config_cmd.py's). A config file is read as redis.conf
is: sdssplitargs words per line, `#` comments, `include` read in place, the deprecated
directives Redis ignores skipped; `user` lines (ACL users, loaded by store/acl.py at
start-up) and `rename-command` lines (applied by the server to its command table) are
collected, checked as redis-server checks them.
"""

from collections.abc import Iterable
from typing import Any

from .config_params import DEPRECATED, MONITOR_PARAMS, PARAMS, TABLE
from .config_values import ConfigError, Param, lower
from .request_parser import split_args

# The commands' names, for rename-command's checks: filled by store/server.py from the
# command families (which sit above this module and import it).
COMMAND_NAMES: set[str] = set()


class Config:
    """Current values, keyed by canonical name."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {p.name: p.default for p in PARAMS}
        # The least command duration (ns) the slowlog or the latency monitor wants to see;
        # 0 until the first command derives it (store/latency.py, LatencyMonitor.sync).
        self.slow_ns = 0
        self.file: str | None = None  # absolute path of the config file, if any
        self.save_loaded = False  # a 'save' line was read: later ones add points
        # `rename-command <name> <new name>` lines, in order ('' removes the command):
        # the server applies them to its command table (Server.__init__)
        self.renames: list[tuple[str, str]] = []
        # `user <name> <rules...>` lines, as bytes (store/acl.py loads them)
        self.users: list[list[bytes]] = []

    def __getitem__(self, name: str) -> Any:
        return self.values[TABLE[name].name]

    def set_from_args(self, name: str, args: list[str]) -> Param | None:
        """Read one directive as a config file line, a command-line option or an embedding
        option gives it: validate and store, no hooks. Raises ConfigError.

        A multi-argument parameter's words may come as one argument ('pubsub 32mb 8mb
        60'); as in a config file, the first 'save' replaces the default points and later
        ones add to them, but `save ""` empties them."""
        if lower(name) == 'user' and args:  # an ACL user: loaded at start-up (store/acl.py)
            words = ' '.join(args).split(' ') if len(args) == 1 else args
            user = [w.encode('utf-8', 'surrogateescape') for w in words if w]
            if user and any(u[0] == user[0] for u in self.users):  # ACLAppendUserForLoading
                raise ConfigError(
                    f"Error in user declaration '{words[0]}': Duplicate user found. A user can "
                    'only be defined once in config files'
                )
            self.users.append(user)
            return None
        param = TABLE.get(lower(name))
        if param is None:
            raise ConfigError('Bad directive or wrong number of arguments')
        if param.multi and any(' ' in a for a in args):
            args = ' '.join(args).split(' ')
        value = param.parse(args, self.values[param.name])
        if param.name == 'save':
            # a single "" empties the points, wherever it comes (setConfigSaveOption)
            if self.save_loaded and args != ['']:
                value = f'{self.values["save"]} {value}'.strip()
            self.save_loaded = True
        self.values[param.name] = value
        if param.name in MONITOR_PARAMS:
            self.slow_ns = 0
        return param

    def load_file(self, path: str) -> None:
        """Read a redis.conf-style file: 'name arg ...' per line, '#' comments."""
        with open(path, encoding='utf-8', errors='surrogateescape') as f:
            lines = f.read().split('\n')
        self.load_lines(lines)

    def load_lines(self, lines: Iterable[str]) -> None:
        for lineno, line in enumerate(lines, 1):
            text = line.strip(' \t\r\n')
            if not text or text.startswith('#'):
                continue
            argv = split_args(text.encode('utf-8', 'surrogateescape'))
            if argv is None:
                raise ConfigError(
                    f'Reading the configuration file, at line {lineno}\n'
                    f">>> '{text}'\nUnbalanced quotes in configuration line"
                )
            if not argv:
                continue
            args = [a.decode('utf-8', 'surrogateescape') for a in argv]
            name = lower(args[0])
            try:
                if name not in TABLE and DEPRECATED.get(name) == len(args) - 1:
                    continue
                if name == 'include' and len(args) == 2:
                    self.load_file(args[1])
                    continue
                if name == 'rename-command' and len(args) == 3:
                    self.rename_command(args[1], args[2])
                    continue
                self.set_from_args(args[0], args[1:])
            except ConfigError as e:
                raise ConfigError(
                    f'Reading the configuration file, at line {lineno}\n>>> \'{text}\'\n{e}'
                ) from None

    def rename_command(self, old: str, new: str) -> None:
        """A rename-command line, checked against the command names as the earlier lines
        left them (loadServerConfigFromString's errors)."""
        names = set(COMMAND_NAMES)
        for before, after in self.renames:
            names.discard(before)
            if after:
                names.add(after)
        old, new = old.lower(), new.lower()
        if old not in names:
            raise ConfigError('No such command in rename-command')
        if new and new in names - {old}:
            raise ConfigError('Target command name already exists')
        self.renames.append((old, new))

    def render(self, name: str) -> str:
        param = TABLE[name]
        return param.render(self.values[param.name])
