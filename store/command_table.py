"""The declarative command table.

Each command family module (store/commands/*.py) lists its commands as `Command(...)`
entries: name, handler, arity (Redis convention: N exactly, -N at least N), flags, key
positions and ACL categories. The dispatcher in connection.py checks arity, auth, MULTI and
subscribe-mode rules from these entries alone, COMMAND renders them, and INFO commandstats
reads the counters kept on them.

Handlers are `handler(conn, args)`: `args` is the request (args[0] is the command name as
sent), `conn` the Connection (its `ks` keyspace, `db`, `proto`, `server`). A handler returns
a reply value (see resp.py) or raises RedisError.
"""


class Command:
    __slots__ = ('name', 'handler', 'arity', 'flags', 'first_key', 'last_key', 'step',
                 'categories', 'subcommands', 'group', 'calls', 'ns', 'failed',
                 'rejected', 'no_auth', 'pubsub_ok', 'multi_ok', 'tips', 'summary',
                 'since', 'container')

    def __init__(self, name, handler, arity, flags='', keys=(0, 0, 0), categories='',
                 group='generic', subcommands=(), tips='', summary='', since='1.0.0'):
        self.name = name
        self.handler = handler
        self.arity = arity
        self.flags = tuple(flags.split())
        self.first_key, self.last_key, self.step = keys
        self.categories = tuple(categories.split())
        self.group = group
        self.subcommands = {}
        self.container = None
        for sub in subcommands:
            sub.container = self
            sub.name = f'{name}|{sub.name}'
            self.subcommands[sub.name.split('|')[1]] = sub
        self.tips = tuple(tips.split())
        self.summary = summary
        self.since = since
        self.no_auth = 'no_auth' in self.flags
        # RESP2 subscribe mode allows only these (Redis 7.0 processCommand).
        self.pubsub_ok = name in ('ping', 'subscribe', 'ssubscribe', 'unsubscribe',
                                  'sunsubscribe', 'psubscribe', 'punsubscribe', 'quit',
                                  'reset')
        # Inside MULTI these run at once instead of being queued.
        self.multi_ok = name in ('exec', 'discard', 'multi', 'watch', 'quit', 'reset')
        self.reset_stats()

    def reset_stats(self):
        self.calls = self.ns = self.failed = self.rejected = 0   # ns: time in the handler

    def arity_ok(self, n):
        a = self.arity
        return n == a if a > 0 else n >= -a

    def key_positions(self, args):
        """Indexes of the key arguments in `args`, from first/last/step."""
        if not self.first_key:
            return []
        last = self.last_key if self.last_key >= 0 else len(args) + self.last_key
        return list(range(self.first_key, last + 1, self.step))

    def all(self):
        """This command and its subcommands (for COMMAND and INFO commandstats)."""
        yield self
        yield from self.subcommands.values()


def build_table(*modules):
    """Merge the COMMANDS lists of the family modules into name -> Command, keyed by the
    lower- and upper-case names so the hot path rarely needs bytes.lower()."""
    table = {}
    for module in modules:
        for cmd in module.COMMANDS:
            key = cmd.name.encode()
            assert key not in table, cmd.name
            table[key] = table[key.upper()] = cmd
    return table


def subcommand(cmd, c, args):
    """Dispatch a container command (CONFIG, CLIENT, OBJECT, ...) to its subcommand with
    Redis's errors for unknown subcommands and wrong arity."""
    from .resp import RedisError, error_arg
    name = args[1].decode('utf-8', 'replace').lower()
    sub = cmd.subcommands.get(name)
    if sub is None:
        raise RedisError(f"ERR unknown subcommand '{error_arg(args[1], 128)}'. "
                         f"Try {cmd.name.upper()} HELP.")
    if not sub.arity_ok(len(args)):
        raise RedisError(f"ERR wrong number of arguments for '{sub.name}' command")
    sub.calls += 1
    return sub.handler(c, args)
