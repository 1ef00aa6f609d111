"""Configuration values: how a parameter's value is parsed, checked and rendered.

`Param` is one parameter of the table (store/config_params.py): its `kind` says how a
value is parsed and rendered, its bounds, choices and flags what CONFIG SET and a config
file accept. Parsing follows config.c function by function, because clients and test
suites match on the messages and on the renderings:

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
- `special` parameters have a parser and a renderer of their own (PARSERS, RENDERERS).
"""

import os
import stat
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

from . import events
from .cnum import string2d
from .resp import string2ll


class Settings(Protocol):
    """What an apply check (`on_set`) sees of the configuration (store/config.py's Config,
    which imports this module): a parameter's value by name, and the slow-path mark."""

    slow_ns: int

    def __getitem__(self, name: str) -> Any: ...


LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)
ULLONG_MAX = 2**64 - 1
INT_MAX = 2**31 - 1
INT_MIN = -(2**31)
UINT_MAX = 2**32 - 1


class ConfigError(Exception):
    pass


# -- C's number parsers -------------------------------------------------------------------


def lower(text: str) -> str:
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


def memtoull(text: str) -> int:
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


def strtoll(text: str, base: int = 10) -> tuple[int, bool, bool]:
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


def c_int(value: int) -> int:
    """A C cast of a 64-bit value to a 32-bit int (two's complement wrap)."""
    return (value + 2**31) % 2**32 - 2**31


# -- the parameter --------------------------------------------------------------------------

# How a value is parsed and rendered (Param.kind).
Kind = Literal['bool', 'enum', 'str', 'int', 'mem', 'mem%', 'octal', 'special']
# The buffer limits of client-output-buffer-limit: class -> (hard, soft, soft seconds).
BufferLimits = dict[str, tuple[int, int, int]]


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
        name: str,
        kind: Kind,
        default: Any,
        lo: int | None = None,
        hi: int | None = None,
        choices: tuple[str, ...] | dict[str, str] | None = None,
        mutable: bool = True,
        alias: str | None = None,
        multi: bool = False,
        protected: bool = False,
        hidden: bool = False,
        clamp: tuple[int, int] | None = None,
        valid: Callable[[Any], None] | None = None,
        on_set: Callable[[Any, Settings], Any] | None = None,
        inert: str | None = None,
    ) -> None:
        self.name, self.kind, self.default = name, kind, default
        self.lo, self.hi, self.choices = lo, hi, choices
        self.mutable, self.alias, self.multi = mutable, alias, multi
        self.protected, self.hidden, self.clamp = protected, hidden, clamp
        self.valid, self.on_set, self.inert = valid, on_set, inert

    def parse_set(self, text: str, current: Any) -> Any:
        """Validate a CONFIG SET value; return the new value. Raises ConfigError."""
        if self.multi:
            return self.parse(text.split(' ') if text else [], current)
        return self.parse([text], current)

    def parse(self, args: list[str], current: Any) -> Any:
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

    def parse_enum(self, text: str) -> str:
        choices = self.choices
        assert choices is not None  # an enum always names its choices
        low = lower(text)
        if low not in choices:
            raise ConfigError('argument(s) must be one of the following: ' + ', '.join(choices))
        return choices[low] if isinstance(choices, dict) else low

    def parse_number(self, text: str) -> int:
        """numericParseString then numericBoundaryCheck."""
        kind, lo, hi = self.kind, self.lo, self.hi
        assert lo is not None and hi is not None  # a number always has its bounds
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
        if value > LLONG_MAX and hi <= LLONG_MAX:
            value -= 2**64  # the C value is a signed 64-bit word
        if kind == 'mem%' and value < 0:
            if value < lo:
                raise ConfigError(f'percentage argument must be less or equal to {-lo}')
        elif not lo <= value <= hi:
            if kind == 'octal':
                raise ConfigError(f'argument must be between {lo:o} and {hi:o} inclusive')
            raise ConfigError(f'argument must be between {lo} and {hi} inclusive')
        if self.clamp is not None:
            value = min(max(value, self.clamp[0]), self.clamp[1])
        return value

    def render(self, value: Any) -> str:
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


# -- special parameters: a parser (args, current value) -> value, and a renderer ------------


def _parse_notify(args: list[str], current: int) -> int:
    flags = events.flags_from_string(args[0])
    if flags is None:
        raise ConfigError("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
    return flags


def _parse_journal_events(args: list[str], current: int) -> int:
    flags = events.flags_from_string(args[0])
    if flags is None or flags & (events.KEYSPACE | events.KEYEVENT):
        raise ConfigError("Invalid event class character. Use 'Ag$lshzxetmdn'.")
    return flags


_OBL_CLASSES = ('normal', 'slave', 'pubsub')


def _parse_obl(args: list[str], current: BufferLimits) -> BufferLimits:
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


def _render_obl(limits: Mapping[str, tuple[int, int, int]]) -> str:
    return ' '.join(f'{c} {limits[c][0]} {limits[c][1]} {limits[c][2]}' for c in _OBL_CLASSES)


def _parse_save(args: list[str], current: str) -> str:
    """setConfigSaveOption: pairs of <seconds> <changes>, seconds >= 1, changes >= 0, read
    with strtoll (so ' 5', '+5' and '' pass); changes are kept in an int. Returns the
    points as the text CONFIG GET shows."""
    if len(args) == 1 and args[0] == '':
        args = []
    if len(args) % 2:
        raise ConfigError('Invalid save parameters')
    points: list[int] = []
    for j, arg in enumerate(args):
        value, complete, _ = strtoll(arg)
        if not complete or value < (1 if j % 2 == 0 else 0):
            raise ConfigError('Invalid save parameters')
        points.append(value if j % 2 == 0 else c_int(value))
    return ' '.join(str(v) for v in points)


def _parse_bind(args: list[str], current: str) -> str:
    if len(args) > 16:
        raise ConfigError('Too many bind addresses specified.')
    if len(args) == 1 and args[0] == '':
        args = []
    return ' '.join(args)


def _parse_replicaof(args: list[str], current: str) -> str:
    """setConfigReplicaOfOption: <host> <port> or NO ONE."""
    if len(args) != 2:
        raise ConfigError('wrong number of arguments')
    if lower(args[0]) == 'no' and lower(args[1]) == 'one':
        return ''
    port, complete, _ = strtoll(args[1])
    if not complete or not 0 <= port <= 65535:
        raise ConfigError('Invalid master port')
    return f'{args[0]} {port}'


def _parse_oom_values(args: list[str], current: tuple[int, ...]) -> tuple[int, ...]:
    """setConfigOOMScoreAdjValuesOption: three scores (primary, replica, background
    child), each read with strtoll and within -2000..2000."""
    if len(args) != 3:
        raise ConfigError('wrong number of arguments')
    values: list[int] = []
    for arg in args:
        value, complete, _ = strtoll(arg)
        if not complete or not -2000 <= value <= 2000:
            raise ConfigError(
                'Invalid oom-score-adj-values, elements must be between -2000 and 2000.'
            )
        values.append(value)
    return tuple(values)


def _parse_percentiles(args: list[str], current: tuple[float, ...]) -> tuple[float, ...]:
    """setConfigLatencyTrackingInfoPercentilesOutputOption: doubles in [0, 100]."""
    if len(args) == 1 and args[0] == '':
        args = []
    values: list[float] = []
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


def render_percentile(value: float) -> str:
    """'%f' with trailing zeros (and a trailing point) trimmed, as trimDoubleString does."""
    text = '%f' % value
    return text.rstrip('0').rstrip('.') if '.' in text else text


_SHUTDOWN_FLAGS = {'default': 0, 'save': 1, 'nosave': 2, 'now': 4, 'force': 8}


def _parse_shutdown_flags(args: list[str], current: str) -> str:
    """shutdown-on-sigint / shutdown-on-sigterm: a multi-argument enum of flags, rendered in
    the enum's order ('default' when none is set)."""
    bit: int | None
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


def _parse_dir(args: list[str], current: str) -> str:
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


PARSERS: dict[str, Callable[[list[str], Any], Any]] = {
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
RENDERERS: dict[str, Callable[[Any], str]] = {
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
