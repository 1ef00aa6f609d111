"""Configuration: one declarative table, redis.conf parsing, CONFIG GET/SET semantics.

The table (PARAMS) holds every parameter of Redis 7.0.15's config.c, under the same names
and aliases, with the same types, defaults, bounds and flags, plus this server's own few
(shards, the keyevent journal, pub/sub dispatch, the active-expiry budget). Each entry
says how a value is parsed and rendered (`kind`), whether CONFIG SET may change it, and,
where this server has nothing that the parameter could steer, why it is inert (`inert`):
tools and test suites set replication, cluster, TLS or persistence parameters as a matter
of course, so they are accepted, validated and reported exactly as redis-server does, and
docs/config.md lists what each one does here.

Parsing follows config.c function by function, because clients and test suites match on
the messages and on the renderings:

- numbers: string2ll for plain integers (no '+', spaces or leading zeros), memtoull for
  memory values ('1k' = 1000, '1kb' = 1024; leading zeros, '' and 'k' are 0; a number past
  2**64-1 saturates, its product with the unit wraps), 'n%' for percent values (stored
  negative, as config.c does), strtoll base 8 for octal; the parsed value is kept in a
  signed 64-bit word, as C does, before the bounds are checked, so a memory value past
  2**63 is out of range unless the bound itself is unsigned (maxmemory).
- multi-argument parameters (save, client-output-buffer-limit, bind, ...): CONFIG SET splits
  its value on single spaces (empty words included, '' is no words); a config file line gives
  its words as sdssplitargs splits them.
- C's strtoll, int casts and strtod are reproduced where config.c calls them (save points,
  soft seconds, oom-score-adj-values, latency percentiles), since their leniencies (leading
  whitespace, '+', wrapping to 32 bits, hexadecimal floats) are what redis-server accepts.

Values live in `Config.values` under the canonical name; an alias reads and writes the same
entry. Hooks that make a change take effect are store/server.py's `apply_config`.
"""

import os
import stat

from . import events
from .cnum import string2d
from .request_parser import split_args
from .resp import string2ll
from .version import VERSION

LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)
ULLONG_MAX = 2**64 - 1
INT_MAX = 2**31 - 1
INT_MIN = -(2**31)
UINT_MAX = 2**32 - 1

# Why a parameter is inert here (see docs/config.md): what it would steer does not exist in
# this server.
PERSISTENCE = 'persistence'  # tunes a forked child or incremental fsync: none here
REPLICATION = 'replication'  # never a replica, no diskless sync (store/replication.py)
CLUSTER = 'cluster'  # no cluster mode, no cluster bus
TLS = 'tls'  # plain TCP only
MEMORY = 'memory'  # no eviction, no allocator to tune, no defragmentation
ENCODING = 'encoding'  # internal layouts this server does not use
PROCESS = 'process'  # process management: daemon, logs, signals, OOM score, threads
NETWORK = 'network'  # listeners and sockets options this server does not apply
EXPIRY = 'expiry'  # deadline-driven expiry has no sampling effort or hz to adapt


class ConfigError(Exception):
    pass


# -- C's number parsers -------------------------------------------------------------------


def lower(text):
    """Lower case as strcasecmp compares: ASCII letters only. Every name and keyword is
    ASCII, so a text with anything else in it is left as it is, to match nothing (str.lower
    would turn the Kelvin sign into 'k')."""
    return text.lower() if text.isascii() else text


_DIGITS = '0123456789'
_MEMORY_UNITS = {
    '': 1,
    'b': 1,
    'k': 1000,
    'kb': 1024,
    'm': 1000**2,
    'mb': 1024**2,
    'g': 1000**3,
    'gb': 1024**3,
}


def memtoull(text):
    """Redis's memtoull: '100', '1k' (1000), '1kb' (1024), '5mb', '2G', ... An empty number
    is 0 ('' and 'kb' are valid), leading zeros are fine, a number past 2**64-1 saturates
    (strtoull's ERANGE is not checked) and the product with the unit wraps modulo 2**64; a
    sign, a space or an unknown unit is an error."""
    i = 0
    while i < len(text) and text[i] in _DIGITS:
        i += 1
    mul = _MEMORY_UNITS.get(lower(text[i:]))
    if mul is None or i >= 128:
        raise ConfigError('argument must be a memory value')
    value = min(int(text[:i]), ULLONG_MAX) if i else 0
    return value * mul % 2**64


_C_SPACE = ' \t\n\v\f\r'


def strtoll(text, base=10):
    """C's strtoll: (value, complete, overflow). Leading whitespace and a sign are skipped;
    `complete` says whether the end pointer reached the end of the text (with no digits at
    all nothing is consumed, so only the empty text is complete); a value past the 64-bit
    bounds saturates and sets `overflow` (errno ERANGE)."""
    digits = _DIGITS[:base]
    i = 0
    while i < len(text) and text[i] in _C_SPACE:
        i += 1
    sign = 1
    if i < len(text) and text[i] in '+-':
        sign = -1 if text[i] == '-' else 1
        i += 1
    start = i
    while i < len(text) and text[i] in digits:
        i += 1
    if i == start:
        return 0, text == '', False
    value = sign * int(text[start:i], base)
    overflow = not LLONG_MIN <= value <= LLONG_MAX
    if overflow:
        value = LLONG_MAX if sign > 0 else LLONG_MIN
    return value, i == len(text), overflow


def c_int(value):
    """A C cast of a 64-bit value to a 32-bit int (two's complement wrap)."""
    return (value + 2**31) % 2**32 - 2**31


# -- the parameter --------------------------------------------------------------------------


class Param:
    """One parameter. `kind` is how its value is parsed and rendered: bool, enum, str, int
    (string2ll), mem (memtoull), mem% (memory or percent), octal, or special (a parser and
    renderer of its own, below). `lo`/`hi` bound numbers, `choices` names an enum's values
    (a dict when two names mean the same value), `clamp` narrows a number after the bounds
    check (hz), `valid` is config.c's is_valid_fn (raises ConfigError) and `on_set` what
    the apply function Redis runs after a CONFIG SET (not when it reads a config file) makes
    of the new value, given the Config: it returns the value kept, or raises ConfigError.

    The flags are config.c's: `mutable=False` is IMMUTABLE_CONFIG (CONFIG SET refuses it),
    `protected` PROTECTED_CONFIG (CONFIG SET only as enable-protected-configs allows),
    `hidden` HIDDEN_CONFIG (CONFIG GET patterns skip it), `multi` MULTI_ARG_CONFIG (its
    value is several words). `inert` names why the parameter does nothing here, or is None
    for the parameters that take effect."""

    __slots__ = (
        'name',
        'kind',
        'default',
        'lo',
        'hi',
        'choices',
        'mutable',
        'alias',
        'multi',
        'protected',
        'hidden',
        'clamp',
        'valid',
        'on_set',
        'inert',
    )

    def __init__(
        self,
        name,
        kind,
        default,
        lo=None,
        hi=None,
        choices=None,
        mutable=True,
        alias=None,
        multi=False,
        protected=False,
        hidden=False,
        clamp=None,
        valid=None,
        on_set=None,
        inert=None,
    ):
        self.name, self.kind, self.default = name, kind, default
        self.lo, self.hi, self.choices = lo, hi, choices
        self.mutable, self.alias, self.multi = mutable, alias, multi
        self.protected, self.hidden, self.clamp = protected, hidden, clamp
        self.valid, self.on_set, self.inert = valid, on_set, inert

    def parse_set(self, text, current):
        """Validate a CONFIG SET value; return the new value. Raises ConfigError."""
        if self.multi:
            return self.parse(text.split(' ') if text else [], current)
        return self.parse([text], current)

    def parse(self, args, current):
        """Validate arguments (a list of str) as config.c's set functions do; return the
        new value (`current` is the value it replaces). Raises ConfigError."""
        if not self.multi and len(args) != 1:
            raise ConfigError('wrong number of arguments')
        kind = self.kind
        if kind == 'special':
            value = PARSERS[self.name](args, current)
        elif kind == 'bool':
            low = lower(args[0])
            if low not in ('yes', 'no'):
                raise ConfigError("argument must be 'yes' or 'no'")
            value = low == 'yes'
        elif kind == 'enum':
            value = self.parse_enum(args[0])
        elif kind == 'str':
            value = args[0]
        else:
            value = self.parse_number(args[0])
        if self.valid is not None:
            self.valid(value)
        return value

    def parse_enum(self, text):
        low = lower(text)
        if low not in self.choices:
            raise ConfigError(
                'argument(s) must be one of the following: ' + ', '.join(self.choices)
            )
        return self.choices[low] if isinstance(self.choices, dict) else low

    def parse_number(self, text):
        """numericParseString then numericBoundaryCheck."""
        kind = self.kind
        if kind == 'int':
            value = string2ll(text.encode('utf-8', 'surrogateescape'))
            if value is None:
                raise ConfigError("argument couldn't be parsed into an integer")
        elif kind == 'mem':
            value = memtoull(text)
        elif kind == 'mem%':
            try:
                value = memtoull(text)
            except ConfigError:
                percent = string2ll(text[:-1].encode('utf-8', 'surrogateescape'))
                if len(text) < 2 or text[-1] != '%' or percent is None or percent < 0:
                    raise ConfigError('argument must be a memory or percent value') from None
                value = -percent  # config.c stores a percentage as a negative value
        else:  # octal
            value, complete, overflow = strtoll(text, 8)
            if not complete or overflow:
                raise ConfigError("argument couldn't be parsed as an octal number")
        if value > LLONG_MAX and self.hi <= LLONG_MAX:
            value -= 2**64  # the C value is a signed 64-bit word
        if kind == 'mem%' and value < 0:
            if value < self.lo:
                raise ConfigError(f'percentage argument must be less or equal to {-self.lo}')
        elif not self.lo <= value <= self.hi:
            if kind == 'octal':
                raise ConfigError(f'argument must be between {self.lo:o} and {self.hi:o} inclusive')
            raise ConfigError(f'argument must be between {self.lo} and {self.hi} inclusive')
        if self.clamp is not None:
            value = min(max(value, self.clamp[0]), self.clamp[1])
        return value

    def render(self, value):
        """What CONFIG GET answers."""
        kind = self.kind
        if kind == 'bool':
            return 'yes' if value else 'no'
        if kind == 'special':
            return RENDERERS[self.name](value)
        if kind == 'mem%' and value < 0:
            return f'{-value}%'
        if kind == 'octal':
            return f'{value:o}'
        return str(value)


# -- validity checks (config.c's is_valid_fn) and apply refusals ----------------------------


def _valid_dbfilename(value):
    if '/' in value or '\\' in value:
        raise ConfigError("dbfilename can't be a path, just a filename")


def _valid_appendfilename(value):
    if value == '':
        raise ConfigError("appendfilename can't be empty")
    if '/' in value or '\\' in value:
        raise ConfigError("appendfilename can't be a path, just a filename")


def _valid_appenddirname(value):
    if value == '':
        raise ConfigError("appenddirname can't be empty")
    if '/' in value or '\\' in value:
        raise ConfigError("appenddirname can't be a path, just a dirname")


def _valid_version(value):
    """announce-redis-version: MAJOR.MINOR.PATCH, as clients parse it."""
    parts = value.split('.')
    if len(parts) != 3 or not all(p.isdigit() and p.isascii() and len(p) < 6 for p in parts):
        raise ConfigError('argument must be a version of the form MAJOR.MINOR.PATCH')


def _valid_hostname(value):
    if len(value.encode('utf-8', 'surrogateescape')) >= 256:
        raise ConfigError('Hostnames must be less than 256 characters')
    for ch in value:
        if not (ch.isascii() and (ch.isalnum() or ch in '-.')):
            raise ConfigError('Hostnames may only contain alphanumeric characters, hyphens or dots')


# What the proc-title-template variables expand to when the template is validated: only
# whether the expansion is empty matters (no title yet, not in cluster or sentinel mode, no
# Unix socket; config-file is '-' without a file).
_TITLE_VARIABLES = {
    'title': '',
    'listen-addr': '*:6379',
    'server-mode': '',
    'port': '6379',
    'tls-port': '0',
    'unixsocket': '',
    'config-file': '-',
}


def _valid_proc_title(value):
    """validateProcTitleTemplate: sdstemplate must expand it ('{{' is a literal '{', every
    other '{' opens a known variable closed by '}') to something besides spaces."""
    out = []
    p = 0
    while p < len(value):
        sv = value.find('{', p)
        if sv < 0:
            out.append(value[p:])
            break
        out.append(value[p:sv])
        if value[sv + 1 : sv + 2] == '{':
            out.append('{')
            p = sv + 2
            continue
        ev = value.find('}', sv + 1)
        if ev < 0 or value[sv + 1 : ev] not in _TITLE_VARIABLES:
            raise ConfigError('template format is invalid or contains unknown variables')
        out.append(_TITLE_VARIABLES[value[sv + 1 : ev]])
        p = ev + 1
    if not ''.join(out).strip(' '):
        raise ConfigError('template format is invalid or contains unknown variables')


def _no_defrag(value):
    """isValidActiveDefrag as Debian's build answers it (no Redis-patched jemalloc); this
    server has no defragmenter either."""
    if value:
        raise ConfigError(
            'Active defragmentation cannot be enabled: it requires a Redis server compiled '
            'with a modified Jemalloc like the one shipped by default with the Redis source '
            'distribution'
        )


def _no_tls(value, config):
    """applyTlsCfg / applyTLSPort: turning TLS on fails as it does in a redis-server that
    has no certificate configured; this server has no TLS listener at all."""
    if value:
        raise ConfigError('Unable to update TLS configuration. Check server logs.')
    return value


def _same_shards(value, config):
    """shards is fixed once the keyspace exists: CONFIG SET takes back the value it has
    (as CONFIG GET * then CONFIG SET of every parameter does) and refuses another."""
    if value != config['shards']:
        raise ConfigError("can't set immutable config")
    return value


def _backlog_size(value, config):
    """updateReplBacklogSize: resizeReplicationBacklog raises the size to 16kb."""
    return max(value, 16 * 1024)


def _watchdog_period(value, config):
    """applyWatchdogPeriod: a period shorter than two cron ticks is raised to that."""
    return max(value, 1000 // config['hz'] * 2) if value else 0


# Parameters the hot path's one comparison depends on (Config.slow_ns).
MONITOR_PARAMS = frozenset(
    ('slowlog-log-slower-than', 'slowlog-max-len', 'latency-monitor-threshold', 'latency-tracking')
)


def _monitor_changed(value, config):
    """A slowlog or latency-monitor parameter changes: the next command (this CONFIG SET
    itself) takes the slow path, which derives `slow_ns` from the stored values
    (store/latency.py), so a CONFIG SET that fails later leaves nothing stale."""
    config.slow_ns = 0
    return value


# -- special parameters: a parser (args, current value) -> value, and a renderer ------------


def _parse_notify(args, current):
    flags = events.flags_from_string(args[0])
    if flags is None:
        raise ConfigError("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
    return flags


def _parse_journal_events(args, current):
    flags = events.flags_from_string(args[0])
    if flags is None or flags & (events.KEYSPACE | events.KEYEVENT):
        raise ConfigError("Invalid event class character. Use 'Ag$lshzxetmdn'.")
    return flags


_OBL_CLASSES = ('normal', 'slave', 'pubsub')


def _parse_obl(args, current):
    """updateClientOutputBufferLimit: <class> <hard> <soft> <soft seconds>, any number of
    times; only the classes given change. No words at all change nothing."""
    if len(args) % 4:
        raise ConfigError('Wrong number of arguments in buffer limit configuration.')
    limits = dict(current)
    for i in range(0, len(args), 4):
        cls = lower(args[i])
        cls = 'slave' if cls == 'replica' else cls
        if cls not in _OBL_CLASSES:
            raise ConfigError('Invalid client class specified in buffer limit configuration.')
        try:
            hard, soft = memtoull(args[i + 1]), memtoull(args[i + 2])
        except ConfigError:
            hard = None
        secs, complete, _ = strtoll(args[i + 3])
        secs = c_int(secs)  # stored in an int, then checked
        if hard is None or secs < 0 or not complete:
            raise ConfigError(
                'Error in hard, soft or soft_seconds setting in buffer limit configuration.'
            )
        limits[cls] = (hard, soft, secs)
    return limits


def _render_obl(limits):
    return ' '.join(f'{c} {limits[c][0]} {limits[c][1]} {limits[c][2]}' for c in _OBL_CLASSES)


def _parse_save(args, current):
    """setConfigSaveOption: pairs of <seconds> <changes>, seconds >= 1, changes >= 0, read
    with strtoll (so ' 5', '+5' and '' pass); changes are kept in an int. Returns the
    points as the text CONFIG GET shows."""
    if len(args) == 1 and args[0] == '':
        args = []
    if len(args) % 2:
        raise ConfigError('Invalid save parameters')
    points = []
    for j, arg in enumerate(args):
        value, complete, _ = strtoll(arg)
        if not complete or value < (1 if j % 2 == 0 else 0):
            raise ConfigError('Invalid save parameters')
        points.append(value if j % 2 == 0 else c_int(value))
    return ' '.join(str(v) for v in points)


def _parse_bind(args, current):
    if len(args) > 16:
        raise ConfigError('Too many bind addresses specified.')
    if len(args) == 1 and args[0] == '':
        args = []
    return ' '.join(args)


def _parse_replicaof(args, current):
    """setConfigReplicaOfOption: <host> <port> or NO ONE."""
    if len(args) != 2:
        raise ConfigError('wrong number of arguments')
    if lower(args[0]) == 'no' and lower(args[1]) == 'one':
        return ''
    port, complete, _ = strtoll(args[1])
    if not complete or not 0 <= port <= 65535:
        raise ConfigError('Invalid master port')
    return f'{args[0]} {port}'


def _parse_oom_values(args, current):
    """setConfigOOMScoreAdjValuesOption: three scores (primary, replica, background
    child), each read with strtoll and within -2000..2000."""
    if len(args) != 3:
        raise ConfigError('wrong number of arguments')
    values = []
    for arg in args:
        value, complete, _ = strtoll(arg)
        if not complete or not -2000 <= value <= 2000:
            raise ConfigError(
                'Invalid oom-score-adj-values, elements must be between -2000 and 2000.'
            )
        values.append(value)
    return tuple(values)


def _parse_percentiles(args, current):
    """setConfigLatencyTrackingInfoPercentilesOutputOption: doubles in [0, 100]."""
    if len(args) == 1 and args[0] == '':
        args = []
    values = []
    for arg in args:
        value = string2d(arg.encode('utf-8', 'surrogateescape'))
        if value is None:
            raise ConfigError('Invalid latency-tracking-info-percentiles parameters')
        if not 0.0 <= value <= 100.0:
            raise ConfigError(
                'latency-tracking-info-percentiles parameters should sit between [0.0,100.0]'
            )
        values.append(value)
    return tuple(values)


def render_percentile(value):
    """'%f' with trailing zeros (and a trailing point) trimmed, as trimDoubleString does."""
    text = '%f' % value
    return text.rstrip('0').rstrip('.') if '.' in text else text


_SHUTDOWN_FLAGS = {'default': 0, 'save': 1, 'nosave': 2, 'now': 4, 'force': 8}


def _parse_shutdown_flags(args, current):
    """shutdown-on-sigint / shutdown-on-sigterm: a multi-argument enum of flags, rendered in
    the enum's order ('default' when none is set)."""
    flags = bit = 0
    for arg in args:
        bit = _SHUTDOWN_FLAGS.get(lower(arg))
        if bit is None:
            break
        flags |= bit
    if bit is None or not args:
        raise ConfigError('argument(s) must be one of the following: ' + ', '.join(_SHUTDOWN_FLAGS))
    if flags & 3 == 3:
        raise ConfigError("shutdown options SAVE and NOSAVE can't be used simultaneously")
    return ' '.join(n for n, b in _SHUTDOWN_FLAGS.items() if b & flags) or 'default'


def _parse_dir(args, current):
    """setConfigDirOption: Redis chdirs; this server keeps the directory as a path instead
    (an embedded server must not move its host process), resolved as chdir would resolve it,
    and fails with chdir's error."""
    text = args[0]
    path = os.path.join(os.path.realpath(current), text)
    try:
        if not text:
            raise FileNotFoundError(2, 'No such file or directory')
        mode = os.stat(path).st_mode
    except OSError as e:
        raise ConfigError(e.strerror) from None
    except ValueError:  # an embedded NUL
        raise ConfigError('No such file or directory') from None
    if not stat.S_ISDIR(mode):
        raise ConfigError('Not a directory')
    if not os.access(path, os.X_OK):
        raise ConfigError('Permission denied')
    return os.path.realpath(path)


PARSERS = {
    'notify-keyspace-events': _parse_notify,
    'keyevent-journal-events': _parse_journal_events,
    'client-output-buffer-limit': _parse_obl,
    'save': _parse_save,
    'bind': _parse_bind,
    'replicaof': _parse_replicaof,
    'oom-score-adj-values': _parse_oom_values,
    'latency-tracking-info-percentiles': _parse_percentiles,
    'shutdown-on-sigint': _parse_shutdown_flags,
    'shutdown-on-sigterm': _parse_shutdown_flags,
    'dir': _parse_dir,
}
RENDERERS = {
    'notify-keyspace-events': events.flags_to_string,
    'keyevent-journal-events': events.flags_to_string,
    'client-output-buffer-limit': _render_obl,
    'save': str,
    'bind': str,
    'replicaof': str,
    'oom-score-adj-values': lambda values: ' '.join(str(v) for v in values),
    'latency-tracking-info-percentiles': lambda values: ' '.join(map(render_percentile, values)),
    'shutdown-on-sigint': str,
    'shutdown-on-sigterm': str,
    'dir': os.path.realpath,  # '.' until CONFIG SET dir: the working directory
}

_PROTECTED_ACTION = ('no', 'yes', 'local')
_OOM_SCORE_ADJ = {'no': 'no', 'yes': 'yes', 'relative': 'yes', 'absolute': 'absolute'}
_SYSLOG_FACILITIES = ('user', *(f'local{i}' for i in range(8)))
_MAXMEMORY_POLICIES = (
    'volatile-lru',
    'volatile-lfu',
    'volatile-random',
    'volatile-ttl',
    'allkeys-lru',
    'allkeys-lfu',
    'allkeys-random',
    'noeviction',
)

# Redis 7.0.15's parameters, grouped by subsystem, then this server's own. The order is the
# order CONFIG REWRITE appends parameters in. `mutable=False` is config.c's IMMUTABLE_CONFIG
# (port and bind move the listeners when CONFIG SET changes them: store/listen.py).
PARAMS = [
    # network and clients
    Param('port', 'int', 6379, 0, 65535),
    Param('bind', 'special', '* -::*', multi=True),
    Param('protected-mode', 'bool', True),
    Param('tcp-backlog', 'int', 511, 0, INT_MAX, mutable=False),
    Param('tcp-keepalive', 'int', 300, 0, INT_MAX, inert=NETWORK),
    Param('socket-mark-id', 'int', 0, 0, UINT_MAX, mutable=False, inert=NETWORK),
    Param('unixsocket', 'str', '', mutable=False),  # listened on (store/listen.py)
    Param('unixsocketperm', 'octal', 0, 0, 0o777, mutable=False),
    Param('timeout', 'int', 0, 0, INT_MAX),
    Param('maxclients', 'int', 10000, 1, UINT_MAX),
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
        multi=True,
    ),
    Param('maxmemory-clients', 'mem%', 0, -100, LLONG_MAX),
    Param('tracking-table-max-keys', 'int', 1000000, 0, LLONG_MAX),
    Param('io-threads', 'int', 1, 1, 128, mutable=False, inert=PROCESS),
    Param('io-threads-do-reads', 'bool', False, mutable=False, inert=PROCESS),
    # keyspace
    Param('databases', 'int', 16, 1, INT_MAX, mutable=False),
    Param('shards', 'int', 16, 1, 16384, on_set=_same_shards),
    Param('notify-keyspace-events', 'special', 0),
    Param('hz', 'int', 10, 0, INT_MAX, clamp=(1, 500)),
    Param('dynamic-hz', 'bool', True, inert=EXPIRY),
    Param('active-expire-effort', 'int', 1, 1, 10, inert=EXPIRY),
    Param('active-expire-budget-us', 'int', 1000, 10, 1000000),
    # memory: the limit and eviction (store/memory)
    Param('maxmemory', 'mem', 0, 0, ULLONG_MAX),
    Param('maxmemory-policy', 'enum', 'noeviction', choices=_MAXMEMORY_POLICIES),
    Param('maxmemory-samples', 'int', 5, 1, INT_MAX),
    Param('maxmemory-eviction-tenacity', 'int', 10, 0, 100),
    Param('lfu-log-factor', 'int', 10, 0, INT_MAX),
    Param('lfu-decay-time', 'int', 1, 0, INT_MAX),
    # lazy freeing: the value or database goes at once, its memory in steps (store/lazyfree.py)
    Param('lazyfree-lazy-eviction', 'bool', False),
    Param('lazyfree-lazy-expire', 'bool', False),
    Param('lazyfree-lazy-server-del', 'bool', False),
    Param('lazyfree-lazy-user-del', 'bool', False),
    Param('lazyfree-lazy-user-flush', 'bool', False),
    Param('activerehashing', 'bool', True, inert=MEMORY),
    Param('activedefrag', 'bool', False, valid=_no_defrag, inert=MEMORY),
    Param('active-defrag-ignore-bytes', 'mem', 100 * 1024**2, 1, LLONG_MAX, inert=MEMORY),
    Param('active-defrag-threshold-lower', 'int', 10, 0, 1000, inert=MEMORY),
    Param('active-defrag-threshold-upper', 'int', 100, 0, 1000, inert=MEMORY),
    Param('active-defrag-cycle-min', 'int', 1, 1, 99, inert=MEMORY),
    Param('active-defrag-cycle-max', 'int', 25, 1, 99, inert=MEMORY),
    Param('active-defrag-max-scan-fields', 'int', 1000, 1, LLONG_MAX, inert=MEMORY),
    Param('jemalloc-bg-thread', 'bool', True, inert=MEMORY),
    # when small aggregates convert to their big encodings (types.EncodingLimits)
    Param('hash-max-listpack-entries', 'int', 512, 0, LLONG_MAX, alias='hash-max-ziplist-entries'),
    Param('hash-max-listpack-value', 'mem', 64, 0, LLONG_MAX, alias='hash-max-ziplist-value'),
    Param('set-max-intset-entries', 'int', 512, 0, LLONG_MAX),
    Param('zset-max-listpack-entries', 'int', 128, 0, LLONG_MAX, alias='zset-max-ziplist-entries'),
    Param('zset-max-listpack-value', 'mem', 64, 0, LLONG_MAX, alias='zset-max-ziplist-value'),
    Param(
        'list-max-listpack-size',
        'int',
        -2,
        INT_MIN,
        INT_MAX,
        alias='list-max-ziplist-size',
        inert=ENCODING,
    ),
    Param('list-compress-depth', 'int', 0, 0, INT_MAX, inert=ENCODING),
    Param('stream-node-max-bytes', 'mem', 4096, 0, LLONG_MAX, inert=ENCODING),
    Param('stream-node-max-entries', 'int', 100, 0, LLONG_MAX, inert=ENCODING),
    Param('hll-sparse-max-bytes', 'mem', 3000, 0, LLONG_MAX),  # store/types/hll.py
    Param('sanitize-dump-payload', 'enum', 'no', choices=('no', 'yes', 'clients')),
    # keyspace-event journal (store/journal.py)
    Param('keyevent-journal-events', 'special', 0),
    Param('keyevent-journal-key', 'str', '__keyevents__'),
    Param('keyevent-journal-maxlen', 'int', 1000000, 1, LLONG_MAX),
    # pub/sub
    Param('async-dispatch-quota', 'int', 100, 1, INT_MAX),
    Param('publish-buffer-limit', 'mem', 128 * 1024**2, 0, LLONG_MAX),
    # the Redis version HELLO and INFO announce (docs/tracking.md)
    Param('announce-redis-version', 'str', VERSION, valid=_valid_version),
    # persistence (store/persistence); the inert ones tune what forking or rewriting
    # with a child process would need
    Param('save', 'special', '3600 1 300 100 60 10000', multi=True),
    Param('stop-writes-on-bgsave-error', 'bool', True),
    Param('rdbcompression', 'bool', True),
    Param('rdbchecksum', 'bool', True, mutable=False),
    Param('rdb-del-sync-files', 'bool', False, inert=PERSISTENCE),
    Param('rdb-save-incremental-fsync', 'bool', True, inert=PERSISTENCE),
    Param('dbfilename', 'str', 'dump.rdb', protected=True, valid=_valid_dbfilename),
    Param('dir', 'special', '.', protected=True),
    Param('appendonly', 'bool', False),
    Param(
        'appendfilename',
        'str',
        'appendonly.aof',
        mutable=False,
        valid=_valid_appendfilename,
    ),
    Param(
        'appenddirname',
        'str',
        'appendonlydir',
        mutable=False,
        valid=_valid_appenddirname,
    ),
    Param('appendfsync', 'enum', 'everysec', choices=('everysec', 'always', 'no')),
    Param('no-appendfsync-on-rewrite', 'bool', False, inert=PERSISTENCE),
    Param('auto-aof-rewrite-percentage', 'int', 100, 0, INT_MAX),
    Param('auto-aof-rewrite-min-size', 'mem', 64 * 1024**2, 0, LLONG_MAX),
    Param('aof-load-truncated', 'bool', True),
    Param('aof-use-rdb-preamble', 'bool', True),
    Param('aof-rewrite-incremental-fsync', 'bool', True, inert=PERSISTENCE),
    Param('aof-timestamp-enabled', 'bool', False),
    Param('aof-disable-auto-gc', 'bool', False),
    Param('rdb-key-save-delay', 'int', 0, INT_MIN, INT_MAX, hidden=True),
    Param('key-load-delay', 'int', 0, INT_MIN, INT_MAX, hidden=True),
    Param(
        'loading-process-events-interval-bytes',
        'int',
        2 * 1024**2,
        1024,
        INT_MAX,
        hidden=True,
        inert=PERSISTENCE,
    ),
    # replication
    Param('replicaof', 'special', '', multi=True, mutable=False, alias='slaveof'),
    Param('masterauth', 'str', ''),
    Param('masteruser', 'str', ''),
    Param('replica-serve-stale-data', 'bool', True, alias='slave-serve-stale-data'),
    Param('replica-read-only', 'bool', True, alias='slave-read-only'),
    Param('replica-lazy-flush', 'bool', False, alias='slave-lazy-flush', inert=REPLICATION),
    Param('replica-ignore-maxmemory', 'bool', True, alias='slave-ignore-maxmemory'),
    Param('replica-announced', 'bool', True),
    Param('replica-ignore-disk-write-errors', 'bool', False, inert=REPLICATION),
    Param('replica-priority', 'int', 100, 0, INT_MAX, alias='slave-priority'),
    Param('replica-announce-ip', 'str', '', alias='slave-announce-ip', inert=REPLICATION),
    Param(
        'replica-announce-port', 'int', 0, 0, 65535, alias='slave-announce-port', inert=REPLICATION
    ),
    Param('repl-diskless-sync', 'bool', True),
    Param('repl-diskless-sync-delay', 'int', 5, 0, INT_MAX),
    Param('repl-diskless-sync-max-replicas', 'int', 0, 0, INT_MAX),
    Param(
        'repl-diskless-load',
        'enum',
        'disabled',
        choices=('disabled', 'on-empty-db', 'swapdb'),
    ),
    Param(
        'repl-ping-replica-period',
        'int',
        10,
        1,
        INT_MAX,
        alias='repl-ping-slave-period',
    ),
    Param('repl-timeout', 'int', 60, 1, INT_MAX),
    Param('repl-disable-tcp-nodelay', 'bool', False, inert=REPLICATION),
    Param('repl-backlog-size', 'mem', 1024**2, 1, LLONG_MAX, on_set=_backlog_size),
    Param('repl-backlog-ttl', 'int', 3600, 0, LLONG_MAX),
    Param('min-replicas-to-write', 'int', 0, 0, INT_MAX, alias='min-slaves-to-write'),
    Param('min-replicas-max-lag', 'int', 10, 0, INT_MAX, alias='min-slaves-max-lag'),
    Param(
        'propagation-error-behavior',
        'enum',
        'ignore',
        choices=('ignore', 'panic', 'panic-on-replicas'),
    ),
    Param('bind-source-addr', 'str', ''),  # the replica link's source (store/replica.py)
    # cluster
    Param('cluster-enabled', 'bool', False, mutable=False, inert=CLUSTER),
    Param('cluster-config-file', 'str', 'nodes.conf', mutable=False, inert=CLUSTER),
    Param('cluster-port', 'int', 0, 0, 65535, mutable=False, inert=CLUSTER),
    Param('cluster-node-timeout', 'int', 15000, 0, LLONG_MAX, inert=CLUSTER),
    Param(
        'cluster-replica-validity-factor',
        'int',
        10,
        0,
        INT_MAX,
        alias='cluster-slave-validity-factor',
        inert=CLUSTER,
    ),
    Param('cluster-migration-barrier', 'int', 1, 0, INT_MAX, inert=CLUSTER),
    Param('cluster-allow-replica-migration', 'bool', True, inert=CLUSTER),
    Param('cluster-require-full-coverage', 'bool', True, inert=CLUSTER),
    Param(
        'cluster-replica-no-failover',
        'bool',
        False,
        alias='cluster-slave-no-failover',
        inert=CLUSTER,
    ),
    Param('cluster-allow-reads-when-down', 'bool', False, inert=CLUSTER),
    Param('cluster-allow-pubsubshard-when-down', 'bool', True, inert=CLUSTER),
    Param('cluster-announce-ip', 'str', '', inert=CLUSTER),
    Param('cluster-announce-hostname', 'str', '', valid=_valid_hostname, inert=CLUSTER),
    Param('cluster-announce-port', 'int', 0, 0, 65535, inert=CLUSTER),
    Param('cluster-announce-bus-port', 'int', 0, 0, 65535, inert=CLUSTER),
    Param('cluster-announce-tls-port', 'int', 0, 0, 65535, inert=CLUSTER),
    Param(
        'cluster-preferred-endpoint-type',
        'enum',
        'ip',
        choices=('ip', 'hostname', 'unknown-endpoint'),
        inert=CLUSTER,
    ),
    Param('cluster-link-sendbuf-limit', 'mem', 0, 0, ULLONG_MAX, inert=CLUSTER),
    # TLS: turning it on fails as in a redis-server without certificates
    Param('tls-port', 'int', 0, 0, 65535, on_set=_no_tls, inert=TLS),
    Param('tls-cert-file', 'str', '', inert=TLS),
    Param('tls-key-file', 'str', '', inert=TLS),
    Param('tls-key-file-pass', 'str', '', inert=TLS),
    Param('tls-client-cert-file', 'str', '', inert=TLS),
    Param('tls-client-key-file', 'str', '', inert=TLS),
    Param('tls-client-key-file-pass', 'str', '', inert=TLS),
    Param('tls-dh-params-file', 'str', '', inert=TLS),
    Param('tls-ca-cert-file', 'str', '', inert=TLS),
    Param('tls-ca-cert-dir', 'str', '', inert=TLS),
    Param('tls-protocols', 'str', '', inert=TLS),
    Param('tls-ciphers', 'str', '', inert=TLS),
    Param('tls-ciphersuites', 'str', '', inert=TLS),
    Param('tls-auth-clients', 'enum', 'yes', choices=('no', 'yes', 'optional'), inert=TLS),
    Param('tls-replication', 'bool', False, on_set=_no_tls, inert=TLS),
    Param('tls-cluster', 'bool', False, on_set=_no_tls, inert=TLS),
    Param('tls-prefer-server-ciphers', 'bool', False, inert=TLS),
    Param('tls-session-caching', 'bool', True, inert=TLS),
    Param('tls-session-cache-size', 'int', 20480, 0, INT_MAX, inert=TLS),
    Param('tls-session-cache-timeout', 'int', 300, 0, INT_MAX, inert=TLS),
    # ACL and modules
    Param('aclfile', 'str', '', mutable=False),  # ACL LOAD / ACL SAVE (store/acl.py)
    Param(
        'acl-pubsub-default',
        'enum',
        'resetchannels',
        choices=('allchannels', 'resetchannels'),  # new users' channels
    ),
    Param('enable-module-command', 'enum', 'no', choices=_PROTECTED_ACTION, mutable=False),
    # the process
    Param('daemonize', 'bool', False, mutable=False, inert=PROCESS),
    Param(
        'supervised',
        'enum',
        'no',
        choices=('upstart', 'systemd', 'auto', 'no'),
        mutable=False,
        inert=PROCESS,
    ),
    Param('pidfile', 'str', '', mutable=False, inert=PROCESS),
    Param('loglevel', 'enum', 'notice', choices=('debug', 'verbose', 'notice', 'warning')),
    Param('logfile', 'str', '', mutable=False, inert=PROCESS),
    Param('syslog-enabled', 'bool', False, mutable=False, inert=PROCESS),
    Param('syslog-ident', 'str', 'redis', mutable=False, inert=PROCESS),
    Param(
        'syslog-facility',
        'enum',
        'local0',
        choices=_SYSLOG_FACILITIES,
        mutable=False,
        inert=PROCESS,
    ),
    Param('always-show-logo', 'bool', False, mutable=False),
    Param('set-proc-title', 'bool', True, mutable=False, inert=PROCESS),
    Param(
        'proc-title-template',
        'str',
        '{title} {listen-addr} {server-mode}',
        valid=_valid_proc_title,
        inert=PROCESS,
    ),
    Param('crash-log-enabled', 'bool', True),
    Param('crash-memcheck-enabled', 'bool', True, inert=PROCESS),
    Param('use-exit-on-panic', 'bool', False, hidden=True),
    Param(
        'watchdog-period', 'int', 0, 0, INT_MAX, hidden=True, on_set=_watchdog_period, inert=PROCESS
    ),
    Param('disable-thp', 'bool', True, mutable=False, inert=PROCESS),
    Param('oom-score-adj', 'enum', 'no', choices=_OOM_SCORE_ADJ),
    Param('oom-score-adj-values', 'special', (0, 200, 800), multi=True),
    Param('server_cpulist', 'str', '', mutable=False, inert=PROCESS),
    Param('bio_cpulist', 'str', '', mutable=False, inert=PROCESS),
    Param('aof_rewrite_cpulist', 'str', '', mutable=False, inert=PROCESS),
    Param('bgsave_cpulist', 'str', '', mutable=False, inert=PROCESS),
    Param('shutdown-on-sigint', 'special', 'default', multi=True),
    Param('shutdown-on-sigterm', 'special', 'default', multi=True),
    Param('shutdown-timeout', 'int', 10, 0, INT_MAX),
    Param('ignore-warnings', 'str', '', inert=PROCESS),
    Param('enable-debug-command', 'enum', 'no', choices=_PROTECTED_ACTION, mutable=False),
    Param('enable-protected-configs', 'enum', 'no', choices=_PROTECTED_ACTION, mutable=False),
    # monitoring: the slowlog and the latency monitor (store/latency.py)
    Param('slowlog-log-slower-than', 'int', 10000, -1, LLONG_MAX, on_set=_monitor_changed),
    Param('slowlog-max-len', 'int', 128, 0, LLONG_MAX, on_set=_monitor_changed),
    Param('latency-monitor-threshold', 'int', 0, 0, LLONG_MAX, on_set=_monitor_changed),
    Param('latency-tracking', 'bool', True, on_set=_monitor_changed),
    Param('latency-tracking-info-percentiles', 'special', (50.0, 99.0, 99.9), multi=True),
    Param('acllog-max-len', 'int', 128, 0, LLONG_MAX),
    # scripting
    Param('busy-reply-threshold', 'int', 5000, 0, LLONG_MAX, alias='lua-time-limit'),
    Param('script-memory-limit', 'mem', 1024**3, 1024**2, LLONG_MAX),  # this server's own
    # Redis's CVE fixes (Debian's 7.0.15): setfenv, getfenv and newproxy for scripts
    Param('lua-enable-deprecated-api', 'bool', False, mutable=False, hidden=True),
]

# Directives a config file may still hold that Redis 7.0 reads and ignores, with the
# number of arguments it accepts for them.
DEPRECATED = {
    'list-max-ziplist-entries': 1,
    'list-max-ziplist-value': 1,
    'lua-replicate-commands': 1,
}

TABLE = {p.name: p for p in PARAMS}
for _p in PARAMS:
    if _p.alias:
        TABLE[_p.alias] = _p


# The commands' names, for rename-command's checks: filled by store/server.py from the
# command families (which sit above this module and import it).
COMMAND_NAMES: set[str] = set()


class Config:
    """Current values, keyed by canonical name."""

    def __init__(self):
        self.values = {p.name: p.default for p in PARAMS}
        # The least command duration (ns) the slowlog or the latency monitor wants to see;
        # 0 until the first command derives it (store/latency.py, LatencyMonitor.sync).
        self.slow_ns = 0
        self.file = None  # absolute path of the config file, if any
        self.save_loaded = False  # a 'save' line was read: later ones add points
        # `rename-command <name> <new name>` lines, in order ('' removes the command):
        # the server applies them to its command table (Server.__init__)
        self.renames: list[tuple[str, str]] = []
        self.users = []  # `user <name> <rules...>` lines, as bytes (store/acl.py loads them)

    def __getitem__(self, name):
        return self.values[TABLE[name].name]

    def set_from_args(self, name, args):
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

    def load_file(self, path):
        """Read a redis.conf-style file: 'name arg ...' per line, '#' comments."""
        with open(path, encoding='utf-8', errors='surrogateescape') as f:
            lines = f.read().split('\n')
        self.load_lines(lines)

    def load_lines(self, lines):
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

    def rename_command(self, old, new):
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

    def render(self, name):
        param = TABLE[name]
        return param.render(self.values[param.name])
