"""The declarative command table, and the one executor that runs a command.

Each command family module (store/commands/*.py) declares its commands right above their
handlers, where the reader already is:

    COMMANDS = Family('string')

    @COMMANDS.command('get', 2, flags='readonly fast', keys=(1, 1, 1),
                      categories='@read @string @fast', summary='Get the value of a key')
    def get(c, args): ...

A container command (CONFIG, CLIENT, OBJECT, ...) is declared with `Family.container` and
its subcommands with the container's own `subcommand` decorator. The server merges the
families' lists (`build_table`); the dispatcher in connection.py checks arity, auth, MULTI
and subscribe-mode rules from these entries alone, COMMAND renders them, and INFO
commandstats reads the counters kept on them.

Arity follows Redis: N means exactly N arguments (the name included), -N at least N.
Handlers are `handler(conn, args)`: `args` is the request (args[0] is the command name as
sent), `conn` the Connection (its `ks` keyspace, `db`, `proto`, `server`). A handler returns
a reply value (see resp.py) or raises RedisError.

`call` is the executor: run a handler, count it, time it. The connection's inline hot path
(Connection.run) is the only other place that does this, written out there because a
function call per command is measurable at -P 16.
"""

from __future__ import annotations

import copy
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from .cnum import atoi, c_int
from .latency import new_histogram, observe
from .resp import Map, RedisError, Set, error_arg, string2ll

# A handler's context is typed where handlers are written (store/context.py's Client, a
# layer above); the table holds them as callables of any connection.
Handler = Callable[[Any, list[bytes]], Any]
# what the decorators return: the handler as it was, whose own keyword arguments (as
# evalsha's `ro`) its siblings may pass
H = TypeVar('H', bound=Handler)
KeyFinder = Callable[[list[bytes]], list[int]]

_perf_ns = time.perf_counter_ns

# RESP2 subscribe mode allows only these (Redis 7.0 processCommand).
_PUBSUB_OK = frozenset(
    (
        'ping',
        'subscribe',
        'ssubscribe',
        'unsubscribe',
        'sunsubscribe',
        'psubscribe',
        'punsubscribe',
        'quit',
        'reset',
    )
)
# Inside MULTI these run at once instead of being queued.
_MULTI_OK = frozenset(('exec', 'discard', 'multi', 'watch', 'quit', 'reset'))
# Commands that may replicate without the write flag (Redis 7.0's CMD_MAY_REPLICATE, not
# a flag COMMAND shows): CLIENT PAUSE WRITE holds them, a read-only script may not call them.
MAY_REPLICATE = frozenset(('eval', 'evalsha', 'fcall', 'publish', 'spublish', 'pfcount'))


class Command:
    __slots__ = (
        'name',
        'handler',
        'arity',
        'flags',
        'first_key',
        'last_key',
        'step',
        'categories',
        'subcommands',
        'group',
        'took',
        '_calls',
        '_ns',
        '_hist',
        'failed',
        'rejected',
        'no_auth',
        'pubsub_ok',
        'multi_ok',
        'tips',
        'summary',
        'since',
        'container',
        'getkeys',
        'key_specs',
        'key_flags_of',
    )

    def __init__(
        self,
        name: str,
        handler: Handler | None,
        arity: int,
        *,
        flags: str = '',
        keys: tuple[int, int, int] = (0, 0, 0),
        categories: str = '',
        group: str = 'generic',
        tips: str = '',
        summary: str = '',
        since: str = '1.0.0',
        getkeys: KeyFinder | None = None,
        key_specs: str = '',
        key_flags_of: Callable[[list[bytes]], str] | None = None,
    ) -> None:
        self.name = name
        self.handler = handler if handler is not None else self.dispatch
        self.arity = arity
        self.flags = tuple(flags.split())
        self.first_key, self.last_key, self.step = keys
        self.categories = tuple(categories.split())
        self.group = group
        self.subcommands: dict[str, Command] = {}
        self.container: Command | None = None
        self.tips = tuple(tips.split())
        self.summary = summary
        self.since = since
        self.getkeys = getkeys  # key positions of a `movablekeys` command
        self.key_specs = parse_key_specs(key_specs)
        # the flags of a key spec marked variable_flags, from the arguments (SET, BITFIELD)
        self.key_flags_of = key_flags_of
        self.no_auth = 'no_auth' in self.flags
        self.pubsub_ok = name in _PUBSUB_OK
        self.multi_ok = name in _MULTI_OK
        self.reset_stats()

    def reset_stats(self) -> None:
        self.failed = self.rejected = 0
        # The durations (ns) of the calls since the last `settle`: the executors append a
        # call's duration here, one list append where counting it into calls, ns and a
        # histogram bucket was three big-int updates on every command; the counters below
        # fold them in whenever they are read, and the server's cron folds them 10 times
        # a second (hz), so the list stays short.
        self.took: list[int] = []
        self._calls = self._ns = 0  # ns: time in the handler
        # calls by duration, log2 buckets of ns (store/latency.py: LATENCY HISTOGRAM)
        self._hist = new_histogram()

    def settle(self) -> None:
        """Fold the durations recorded since the last settle into the counters."""
        took = self.took
        if took:
            self.took = []
            self._calls += len(took)
            self._ns += sum(took)
            hist = self._hist
            for bucket, n in Counter(map(int.bit_length, took)).items():
                hist[bucket] += n

    @property
    def calls(self) -> int:
        self.settle()
        return self._calls

    @calls.setter
    def calls(self, value: int) -> None:
        self.settle()
        self._calls = value

    @property
    def ns(self) -> int:
        self.settle()
        return self._ns

    @property
    def hist(self) -> list[int]:
        self.settle()
        return self._hist

    @hist.setter
    def hist(self, value: list[int]) -> None:
        self.settle()  # into the histogram being replaced (latency-tracking turned off)
        self._hist = value

    def copy(self) -> Command:
        """This command for one server: the declaration shared, its statistics and its
        handler its own (the AOF wraps a server's write handlers; two embedded servers in
        one process must not run each other's AOF or count each other's calls)."""
        new = copy.copy(self)
        new.reset_stats()
        if self.handler == self.dispatch:
            new.handler = new.dispatch
        new.subcommands = {name: sub.copy() for name, sub in self.subcommands.items()}
        for sub in new.subcommands.values():
            sub.container = new
        return new

    def arity_ok(self, n: int) -> bool:
        a = self.arity
        return n == a if a > 0 else n >= -a

    def key_positions(self, args: list[bytes]) -> list[int]:
        """Indexes of the key arguments in `args`: the command's own finder for movable
        keys (COMMAND GETKEYS), else first/last/step."""
        if self.getkeys is not None:
            return self.getkeys(args)
        if not self.first_key:
            return []
        last = self.last_key if self.last_key >= 0 else len(args) + self.last_key
        return list(range(self.first_key, last + 1, self.step))

    def has_keys(self) -> bool:
        """doesCommandHaveKeys: a finder of its own, or a spec for real keys (SPUBLISH's
        shard channel is not one)."""
        return self.getkeys is not None or any('not_key' not in s.flags for s in self.key_specs)

    def key_flags(self, args: list[bytes], positions: list[int]) -> list[tuple[int, Any]]:
        """COMMAND GETKEYSANDFLAGS: each key position with the flags of the key spec that
        finds it, as Redis's getkeys procs give them: variable ones from the arguments,
        and for a key only the command's own finder knows of (SORT's STORE) those of its
        last spec, whose search is 'unknown'."""
        if self.key_flags_of is not None:
            flags = tuple(self.key_flags_of(args).split())
            return [(i, flags) for i in positions]
        found: dict[int, tuple[str, ...]] = {}
        for spec in self.key_specs:
            for i in spec.positions(args):
                found.setdefault(i, spec.flags)
        other = self.key_specs[-1].flags if self.key_specs else ()
        return [(i, found.get(i, other)) for i in positions]

    def all(self) -> Iterator[Command]:
        """This command and its subcommands (for COMMAND and INFO commandstats)."""
        yield self
        yield from self.subcommands.values()

    # -- containers ------------------------------------------------------------------------

    def subcommand(self, name: str, arity: int, **kw: Any) -> Callable[[H], H]:
        """Decorator: declare `handler` as this container's subcommand `name`. Keywords as
        for Command; the group and `since` default to the container's."""

        def register(handler: H) -> H:
            kw.setdefault('group', self.group)
            kw.setdefault('since', self.since)
            sub = Command(f'{self.name}|{name}', handler, arity, **kw)
            sub.container = self
            self.subcommands[name] = sub
            return handler

        return register

    def find_subcommand(self, name: bytes) -> Command | None:
        return self.subcommands.get(name.decode('utf-8', 'replace').lower())

    def unknown_subcommand(self, name: bytes) -> str:
        return f"ERR unknown subcommand '{error_arg(name, 128)}'. Try {self.name.upper()} HELP."

    def dispatch(self, c: Any, args: list[bytes]) -> Any:
        """A container's handler: run the subcommand named by args[1] with Redis's errors
        for unknown subcommands and wrong arity, keeping its commandstats."""
        sub = self.find_subcommand(args[1])
        if sub is None:
            raise RedisError(self.unknown_subcommand(args[1]))
        if not sub.arity_ok(len(args)):
            sub.rejected += 1
            raise RedisError(f"ERR wrong number of arguments for '{sub.name}' command")
        c.last_sub = sub  # CLIENT LIST cmd=container|sub
        return call(sub, c, args)


def find_command(table: dict[bytes, Command], argv: list[bytes]) -> Command | None:
    """lookupCommand: the command a full argv names, a container's subcommand when it
    has a second argument (COMMAND GETKEYS, ACL DRYRUN, redis.acl_check_cmd)."""
    cmd = table.get(argv[0].lower())
    if cmd is not None and cmd.subcommands and len(argv) > 1:
        return cmd.find_subcommand(argv[1])
    return cmd


def call(cmd: Command, c: Any, args: list[bytes]) -> Any:
    """The executor: run `cmd`'s handler, count the call and its time; a RedisError is
    counted as failed and propagates to the caller, which replies with it. A command at
    least `slow_ns` long goes to the slowlog and latency monitor (store/latency.py), once:
    a subcommand is seen through its container's call, which has its full argv."""
    t0 = _perf_ns()
    try:
        return cmd.handler(c, args)
    except RedisError:
        cmd.failed += 1
        raise
    finally:
        took = _perf_ns() - t0
        cmd.took.append(took)  # calls, time, LATENCY HISTOGRAM (Command.settle)
        if took >= c.server.config.slow_ns and cmd.container is None:
            observe(c, cmd, args, took)


class Family(list[Command]):
    """One command family's commands in declaration order (a module's COMMANDS)."""

    def __init__(self, group: str, since: str = '1.0.0') -> None:
        super().__init__()
        self.group = group
        self.since = since

    def _new(self, name: str, handler: Handler | None, arity: int, kw: dict[str, Any]) -> Command:
        kw.setdefault('group', self.group)
        kw.setdefault('since', self.since)
        cmd = Command(name, handler, arity, **kw)
        self.append(cmd)
        return cmd

    def command(self, name: str, arity: int, **kw: Any) -> Callable[[H], H]:
        """Decorator: declare `handler` as command `name`. Keywords: flags, keys
        (first, last, step), categories, group, tips, summary, since, getkeys and
        key_specs for movable keys."""

        def register(handler: H) -> H:
            self._new(name, handler, arity, kw)
            return handler

        return register

    def alias(self, name: str, handler: Handler, arity: int, **kw: Any) -> Command:
        """Declare another command served by an existing handler (UNLINK by DEL's)."""
        return self._new(name, handler, arity, kw)

    def container(
        self, name: str, arity: int = -2, handler: Handler | None = None, **kw: Any
    ) -> Command:
        """Declare a container command; its subcommands are declared with its
        `subcommand` decorator. It dispatches to them itself (`Command.dispatch`) unless
        given a handler of its own, which calls `dispatch` when it wants to."""
        return self._new(name, handler, arity, kw)


def build_table(*modules: Any) -> dict[bytes, Command]:
    """Merge the COMMANDS lists of the family modules into name -> Command (a server's
    own copies), keyed by the lower- and upper-case names so the hot path rarely needs
    bytes.lower()."""
    table: dict[bytes, Command] = {}
    for module in modules:
        for cmd in module.COMMANDS:
            key = cmd.name.encode()
            assert key not in table, cmd.name
            table[key] = table[key.upper()] = cmd.copy()
    return table


# -- key finders for movable keys (Redis 7.0 db.c's *GetKeys) ------------------------------


def numkeys_keys(at: int, store: int = 0) -> KeyFinder:
    """The key positions Redis 7.0's COMMAND GETKEYS reports for `[dest] numkeys key
    [key ...]` with numkeys at args[at] (SINTERCARD, LMPOP, ZUNION, ZUNIONSTORE with its
    destination at args[store], EVAL, ...): from the key specs when they fit the arguments
    (the destination first, numkeys a strict integer taken as a C int), else from
    genericGetKeys, db.c's fallback (numkeys read with atoi, the destination listed last),
    which finds nothing when numkeys < 1 or is more than the keys there are."""
    dest = [store] if store else []

    def find(args: list[bytes]) -> list[int]:
        n = string2ll(args[at]) if at < len(args) else None
        first = at + 1
        if n is not None and n > 0:
            count = c_int(n)
            if count > 0 and first + count <= len(args):
                return dest + list(range(first, first + count))
        num = atoi(args[at]) if at < len(args) else 0
        if num < 1 or num > len(args) - first:
            return []
        return list(range(first, first + num)) + dest

    return find


class KeySpec:
    """One of a command's key specs (Redis 7.0's keySpec), declared as a line of text:

        'RW access delete; index 1; range 0 1 0'
        'RO access; keyword STREAMS 1; range -1 1 2; a note'

    flags; where the search begins ('index POS', 'keyword WORD STARTFROM' or 'unknown');
    how keys are found from there ('range LASTKEY KEYSTEP LIMIT', 'keynum KEYNUMIDX
    FIRSTKEY KEYSTEP' or 'unknown'); and an optional note. COMMAND INFO shows it (`info`)
    and COMMAND GETKEYSANDFLAGS applies it (`positions`, getKeysUsingKeySpecs)."""

    __slots__ = ('flags', 'begin', 'keyword', 'start', 'find', 'numbers', 'notes')

    def __init__(self, text: str) -> None:
        flags, begin, find, *notes = (part.strip() for part in text.split(';', 3))
        self.flags = tuple(flags.split())
        self.begin, *where = begin.split()
        self.keyword = where.pop(0).encode() if self.begin == 'keyword' else b''
        self.start = int(where[0]) if where else 0  # the index, or where a keyword search starts
        self.find, *numbers = find.split()
        self.numbers = tuple(int(n) for n in numbers)
        self.notes = notes[0] if notes else ''

    def info(self) -> Map:
        """The spec as COMMAND INFO shows it (addReplyCommandKeySpecs)."""
        if self.begin == 'index':
            begin = Map([(b'index', self.start)])
        elif self.begin == 'keyword':
            begin = Map([(b'keyword', self.keyword), (b'startfrom', self.start)])
        else:
            begin = Map([])
        names = _FIND_FIELDS.get(self.find, ())
        out: list[tuple[bytes, Any]] = [(b'notes', self.notes.encode())] if self.notes else []
        out += [
            (b'flags', Set(list(self.flags))),  # statuses, as addReplyFlagsForKeyArgs sends
            (b'begin_search', Map([(b'type', self.begin.encode()), (b'spec', begin)])),
            (
                b'find_keys',
                Map(
                    [(b'type', self.find.encode()), (b'spec', Map(list(zip(names, self.numbers))))]
                ),
            ),
        ]
        return Map(out)

    def positions(self, args: list[bytes]) -> list[int]:
        """The key positions this spec finds in `args` (none where the search fails)."""
        argc = len(args)
        if self.begin == 'index':
            first = self.start
        elif self.begin == 'keyword':  # searched forwards, or backwards from the end
            start, word = self.start, self.keyword.lower()
            order = range(start, argc) if start > 0 else range(argc + start, 1, -1)
            first = next((i + 1 for i in order if args[i].lower() == word), -1)
            if first < 0:
                return []
        else:
            return []
        if self.find == 'range':
            lastkey, step, limit = self.numbers
            if lastkey >= 0:
                last = first + lastkey
            elif limit <= 1:
                last = argc + lastkey
            else:
                last = first + (argc - first) // limit + lastkey
        elif self.find == 'keynum':
            idx, firstkey, step = self.numbers
            n = string2ll(args[first + idx]) if first + idx < argc else None
            if n is None or n < 0:
                return []
            first += firstkey
            last = first + n - 1
        else:
            return []
        if last >= argc or first >= argc:
            return []
        return list(range(first, last + 1, step))


_FIND_FIELDS = {
    'range': (b'lastkey', b'keystep', b'limit'),
    'keynum': (b'keynumidx', b'firstkey', b'keystep'),
}


def parse_key_specs(text: str) -> list[KeySpec]:
    """A command's key specs from their declaration, one per '|'-separated part."""
    return [KeySpec(part) for part in text.split('|')] if text else []


def keys_after_streams(args: list[bytes]) -> list[int]:
    """xreadGetKeys: the first half of the arguments after STREAMS."""
    for i, a in enumerate(args):
        if a.lower() == b'streams':
            n = len(args) - i - 1
            return [] if n % 2 or not n else list(range(i + 1, i + 1 + n // 2))
    return []
