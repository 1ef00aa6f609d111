"""Configuration: one declarative table, redis.conf parsing, CONFIG GET/SET semantics.

Each entry names a parameter, its type, default and bounds, whether CONFIG SET may change
it, and optionally a hook that applies a new value to the running server. Parsing,
validation messages and the rendering CONFIG GET returns follow Redis 7.0's config.c, so
clients that read or set configuration see what they would from redis-server.
"""

from . import events
from .resp import split_args, string2ll

LLONG_MAX = 2**63 - 1


class ConfigError(Exception):
    pass


def memtoull(text):
    """Redis's memtoull: '100', '1k' (1000), '1kb' (1024), '5mb', '2G', ..."""
    s = text.lower()
    units = (
        ('gb', 1024**3),
        ('mb', 1024**2),
        ('kb', 1024),
        ('g', 1000**3),
        ('m', 1000**2),
        ('k', 1000),
        ('b', 1),
    )
    mul = 1
    for suffix, m in units:
        if s.endswith(suffix):
            s, mul = s[: -len(suffix)], m
            break
    if not s.isdigit():
        raise ConfigError('argument must be a memory value')
    return int(s) * mul


class Param:
    __slots__ = ('name', 'kind', 'default', 'lo', 'hi', 'choices', 'mutable', 'apply', 'aliases')

    def __init__(
        self,
        name,
        kind,
        default,
        lo=None,
        hi=None,
        choices=None,
        mutable=True,
        apply=None,
        aliases=(),
    ):
        self.name, self.kind, self.default = name, kind, default
        self.lo, self.hi, self.choices = lo, hi, choices
        self.mutable, self.apply, self.aliases = mutable, apply, aliases

    def parse(self, args):
        """Validate CONFIG SET / config-file arguments (a list of str); return the value."""
        kind = self.kind
        if kind == 'special':
            return PARSERS[self.name](args)
        if len(args) != 1:
            raise ConfigError('wrong number of arguments')
        text = args[0]
        if kind == 'bool':
            low = text.lower()
            if low not in ('yes', 'no'):
                raise ConfigError("argument must be 'yes' or 'no'")
            return low == 'yes'
        if kind == 'enum':
            low = text.lower()
            if low not in self.choices:
                raise ConfigError(
                    'argument(s) must be one of the following: ' + ', '.join(self.choices)
                )
            return low
        if kind == 'str':
            return text
        if kind == 'mem':
            value = memtoull(text)
        else:
            value = string2ll(text.encode())
            if value is None:
                raise ConfigError("argument couldn't be parsed into an integer")
        if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            raise ConfigError(f'argument must be between {self.lo} and {self.hi} inclusive')
        return value

    def render(self, value):
        if self.kind == 'bool':
            return 'yes' if value else 'no'
        if self.kind == 'special':
            return RENDERERS[self.name](value)
        return str(value)


def _parse_notify(args):
    flags = events.flags_from_string(' '.join(args)) if len(args) == 1 else None
    if flags is None:
        raise ConfigError('Invalid event class character. Use \'Ag$lshzxeKEtmdn\'.')
    return flags


def _parse_journal_events(args):
    flags = events.flags_from_string(' '.join(args)) if len(args) == 1 else None
    if flags is None or flags & (events.KEYSPACE | events.KEYEVENT):
        raise ConfigError("Invalid event class character. Use 'Ag$lshzxetmdn'.")
    return flags


_OBL_CLASSES = ('normal', 'slave', 'pubsub')


def _parse_obl(args):
    """client-output-buffer-limit <class> <hard> <soft> <seconds> [<class> ...]."""
    words = ' '.join(args).split()
    if not words or len(words) % 4:
        raise ConfigError('Wrong number of arguments in buffer limit configuration.')
    limits = {}
    for i in range(0, len(words), 4):
        cls = words[i].lower()
        cls = 'slave' if cls in ('replica', 'slave') else cls
        if cls not in _OBL_CLASSES:
            raise ConfigError('Invalid client class specified in buffer limit configuration.')
        try:
            hard, soft = memtoull(words[i + 1]), memtoull(words[i + 2])
            secs = int(words[i + 3])
            if secs < 0:
                raise ValueError
        except (ConfigError, ValueError):
            raise ConfigError(
                'Error in hard, soft or soft_seconds setting in buffer limit configuration.'
            ) from None
        limits[cls] = (hard, soft, secs)
    return limits


def _render_obl(limits):
    return ' '.join(f'{c} {limits[c][0]} {limits[c][1]} {limits[c][2]}' for c in _OBL_CLASSES)


def _parse_save(args):
    words = ' '.join(args).split()
    if len(words) % 2 or not all(w.isdigit() for w in words):
        raise ConfigError('Invalid save parameters')
    return ' '.join(words)


def _parse_words(args):
    return ' '.join(args)


PARSERS = {
    'notify-keyspace-events': _parse_notify,
    'keyevent-journal-events': _parse_journal_events,
    'client-output-buffer-limit': _parse_obl,
    'save': _parse_save,
    'bind': _parse_words,
}
RENDERERS = {
    'notify-keyspace-events': events.flags_to_string,
    'keyevent-journal-events': events.flags_to_string,
    'client-output-buffer-limit': _render_obl,
    'save': str,
    'bind': str,
}

INT_MAX = 2**31 - 1

PARAMS = [
    # network and clients
    Param('port', 'int', 6379, 0, 65535, mutable=False),
    Param('bind', 'special', '127.0.0.1', mutable=False),
    Param('protected-mode', 'bool', True),
    Param('tcp-backlog', 'int', 511, 0, INT_MAX, mutable=False),
    Param('tcp-keepalive', 'int', 300, 0, INT_MAX),
    Param('timeout', 'int', 0, 0, INT_MAX),
    Param('maxclients', 'int', 10000, 1, 2**32 - 1),
    Param('requirepass', 'str', ''),
    Param('proto-max-bulk-len', 'mem', 512 * 1024**2, 1024**2, LLONG_MAX),
    Param('client-query-buffer-limit', 'mem', 1024**3, 1024**2, LLONG_MAX),
    Param(
        'client-output-buffer-limit',
        'special',
        {
            'normal': (0, 0, 0),
            'slave': (256 * 1024**2, 64 * 1024**2, 60),
            'pubsub': (32 * 1024**2, 8 * 1024**2, 60),
        },
    ),
    Param('io-threads', 'int', 1, 1, 128, mutable=False),
    # keyspace
    Param('databases', 'int', 16, 1, INT_MAX, mutable=False),
    Param('shards', 'int', 16, 1, 16384, mutable=False),
    Param('notify-keyspace-events', 'special', 0),
    Param('hz', 'int', 10, 0, INT_MAX),
    Param('dynamic-hz', 'bool', True),
    Param('active-expire-effort', 'int', 1, 1, 10),
    Param('active-expire-budget-us', 'int', 1000, 10, 1000000),
    Param('maxmemory', 'mem', 0, 0, LLONG_MAX),
    Param(
        'maxmemory-policy',
        'enum',
        'noeviction',
        choices=(
            'volatile-lru',
            'volatile-lfu',
            'volatile-random',
            'volatile-ttl',
            'allkeys-lru',
            'allkeys-lfu',
            'allkeys-random',
            'noeviction',
        ),
    ),
    Param('maxmemory-samples', 'int', 5, 1, 64),
    Param('lazyfree-lazy-eviction', 'bool', False),
    Param('lazyfree-lazy-expire', 'bool', False),
    Param('lazyfree-lazy-server-del', 'bool', False),
    Param('lazyfree-lazy-user-del', 'bool', False),
    Param('lazyfree-lazy-user-flush', 'bool', False),
    # when small aggregates convert to their big encodings (types.EncodingLimits)
    Param(
        'hash-max-listpack-entries', 'int', 512, 0, LLONG_MAX, aliases=('hash-max-ziplist-entries',)
    ),
    Param('hash-max-listpack-value', 'int', 64, 0, LLONG_MAX, aliases=('hash-max-ziplist-value',)),
    Param('set-max-intset-entries', 'int', 512, 0, LLONG_MAX),
    Param(
        'zset-max-listpack-entries', 'int', 128, 0, LLONG_MAX, aliases=('zset-max-ziplist-entries',)
    ),
    Param('zset-max-listpack-value', 'int', 64, 0, LLONG_MAX, aliases=('zset-max-ziplist-value',)),
    Param('list-max-listpack-size', 'int', -2, -5, INT_MAX, aliases=('list-max-ziplist-size',)),
    Param('list-compress-depth', 'int', 0, 0, INT_MAX),
    # keyspace-event journal (store/journal.py)
    Param('keyevent-journal-events', 'special', 0),
    Param('keyevent-journal-key', 'str', '__keyevents__'),
    Param('keyevent-journal-maxlen', 'int', 1000000, 1, LLONG_MAX),
    # pub/sub
    Param('async-dispatch-quota', 'int', 100, 1, INT_MAX),
    Param('publish-buffer-limit', 'mem', 128 * 1024**2, 0, LLONG_MAX),
    # persistence (accepted for compatibility; this server keeps data in memory only)
    Param('save', 'special', ''),
    Param('appendonly', 'bool', False),
    Param('appendfsync', 'enum', 'everysec', choices=('always', 'everysec', 'no')),
    Param('dir', 'str', '.'),
    Param('dbfilename', 'str', 'dump.rdb'),
    Param('appendfilename', 'str', 'appendonly.aof', mutable=False),
    # operations
    Param('daemonize', 'bool', False, mutable=False),
    Param('pidfile', 'str', '', mutable=False),
    Param('loglevel', 'enum', 'notice', choices=('debug', 'verbose', 'notice', 'warning')),
    Param('logfile', 'str', '', mutable=False),
    Param('enable-debug-command', 'enum', 'no', choices=('yes', 'no', 'local'), mutable=False),
    Param('enable-protected-configs', 'enum', 'no', choices=('yes', 'no', 'local'), mutable=False),
    Param('slowlog-log-slower-than', 'int', 10000, -1, LLONG_MAX),
    Param('slowlog-max-len', 'int', 128, 0, LLONG_MAX),
    Param('latency-monitor-threshold', 'int', 0, 0, LLONG_MAX),
    Param('busy-reply-threshold', 'int', 5000, 0, LLONG_MAX, aliases=('lua-time-limit',)),
]

# CONFIG SET may change these only as `enable-protected-configs` allows (Redis 7.0).
PROTECTED = frozenset(('dir', 'dbfilename'))

TABLE = {p.name: p for p in PARAMS}
for _p in PARAMS:
    for _alias in _p.aliases:
        TABLE[_alias] = _p


class Config:
    """Current values, plus hooks the server registers to apply changes."""

    def __init__(self):
        self.values = {p.name: p.default for p in PARAMS}
        self.file = None  # absolute path of the config file, if any

    def __getitem__(self, name):
        return self.values[TABLE[name].name]

    def set_from_args(self, name, args):
        """Validate and store (no hooks). Raises ConfigError."""
        param = TABLE.get(name.lower())
        if param is None:
            raise ConfigError('Bad directive or wrong number of arguments')
        value = param.parse(args)
        if isinstance(value, dict):  # client-output-buffer-limit: only the classes given
            value = {**self.values[param.name], **value}
        self.values[param.name] = value
        return param

    def load_file(self, path):
        """Read a redis.conf-style file: 'name arg ...' per line, '#' comments."""
        with open(path, encoding='utf-8', errors='surrogateescape') as f:
            lines = f.read().split('\n')
        self.load_lines(lines)

    def load_lines(self, lines):
        for lineno, line in enumerate(lines, 1):
            text = line.strip()
            if not text or text.startswith('#'):
                continue
            argv = split_args(text.encode('utf-8', 'surrogateescape'))
            if argv is None:
                raise ConfigError(
                    f'Reading the configuration file, at line {lineno}\n'
                    f">>> '{text}'\nUnbalanced quotes in configuration line"
                )
            args = [a.decode('utf-8', 'surrogateescape') for a in argv]
            try:
                if args[0].lower() == 'include':
                    self.load_file(args[1])
                    continue
                self.set_from_args(args[0], args[1:])
            except (ConfigError, IndexError) as e:
                raise ConfigError(
                    f'Reading the configuration file, at line {lineno}\n>>> \'{text}\'\n{e}'
                ) from None

    def render(self, name):
        param = TABLE[name]
        return param.render(self.values[param.name])
