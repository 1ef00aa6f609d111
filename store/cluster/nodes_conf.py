"""nodes.conf: the cluster's table on disk, read and written as redis-server 7.0.15 does
(cluster.c's clusterLoadConfig, clusterSaveConfig, clusterLockConfig).

The format. One line per node, its CLUSTER NODES line (`Node.describe`, node.py):

    <name> <ip>:<port>@<cport>[,<hostname>] <flags> <master or -> <ping sent> <pong received>
        <config epoch> <connected|disconnected> <slot or first-last>...
        [<slot>->-<name>]... [<slot>-<-<name>]...

nodes in handshake left out, the open-slot marks (migrating `->-`, importing `-<-`) on
myself's line only, then `vars currentEpoch N lastVoteEpoch M`.

Loading (`load`) follows clusterLoadConfig step by step: the file is read in lines (a
line starting with a newline or NUL is skipped: Redis 7.0 pads a shorter rewrite with
newlines), each split as sdssplitargs splits it (store/request_parser.py's `split_args`:
quotes, escapes, a NUL ends the line). A `vars` line (any case) takes pairs; others are
node lines of at least 8 fields. A node named on any line (its own, as a master, in an
open-slot mark) is created the first time; flags are or-ed in; a nonzero ping or pong
time means "now" (atoi's value, cut to an int as C does); a replica with a known master
gets config epoch 0 (it reports its master's); slots already taken by an earlier line stay
with it (clusterAddSlot refuses them). Numbers are read as C reads them: atoi
(store/cnum.py) for ports, slots and times, strtoull for epochs (a sign, digits up to the
first other byte, saturated; "-1" is 2**64-1). What clusterLoadConfig sends to `fmterr`
raises `CorruptConfig` with its log line; its serverPanic (an unknown flag) and
serverAssert (a second `myself`, a `[` mark without `-`) raise `ConfigPanic`, a
`CorruptConfig` carrying the panic's text. A line that splits into nothing (blanks only)
is undefined behaviour in Redis (it reads argv[0] of an empty vector); here it is corrupt.
Lines are not cut at fgets's 1024+16384*128 bytes, which only a hand-edited file reaches.

After loading, `state.myself` is the node of the `myself` line (the one ClusterState's
constructor made leaves the table) and `state.nodes` holds the nodes in the order of
their lines, then the ones only named by other lines: Redis writes its dict's order,
which a Python dict cannot reproduce, and keeping the file's order makes
save(load(file)) give the file back. The current epoch is raised to the greatest config
epoch, as Redis does.

Saving (`save`) writes `text(state)`, byte for byte what clusterSaveConfig writes apart
from its newline padding, to a temporary file beside nodes.conf (`<path>.tmp-<pid>-<ms>`,
Redis 7.2's name), fsyncs it when asked, renames it over nodes.conf and, when asked,
fsyncs the directory. A reader sees the old file or the new one, never half of one;
Redis 7.0 rewrites the file in place, so a crash mid-write could leave it torn. Any
failure raises OSError and leaves nodes.conf as it was (the caller logs "Fatal: can't
update cluster config file." and exits 1: clusterSaveConfigOrDie).

Locking (`lock`): flock(LOCK_EX|LOCK_NB) on nodes.conf, kept for the life of the process.
Redis's lock holds because it rewrites the same inode; a rename puts a new inode under
the name and the old lock would protect nothing. So `save` flocks the temporary file
before the rename and, after it, dup2s that descriptor onto the one `lock` returned: the
number stays the lock's for the life of the process, now on the file the name points to,
and the old inode's lock goes with its description. `lock` checks after flock that the
path still names the inode it locked (a save may have renamed a new file over it between
the open and the flock), retrying if not; a redis-server 7.0 starting on the same file
in that instant could still win the old inode, as it does not check. `unlock(path)` lets
the lock go (shutdown, tests).

Invariants: from `lock` to `unlock`, the descriptor `lock` returned holds a flock on the
inode `path` names; `save` never leaves a temporary file behind, and nodes.conf is
always a complete file.

Costs (measured on the development machine): `load` is O(lines + slots), each slot of a
range added on its own: 6 ms for 16384 slots in three ranges, 25 ms for the worst case of
8192 one-slot ranges; `text` scans the 16384-slot table twice (slot runs, open-slot marks)
plus a line per node, 2 ms; `save` is one write of that text, 1.5 ms, or 4 ms with the
fsyncs of the file and of its directory on a local disk.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Callable

from ..cnum import atoi
from ..request_parser import split_args
from .messages import SLOTS, valid_name
from .node import (
    FLAG_BY_NAME,
    FLAG_FAIL,
    FLAG_HANDSHAKE,
    FLAG_MYSELF,
    PORT_INCR,
    Node,
    mstime,
)
from .state import TODO_FSYNC_CONFIG, TODO_SAVE_CONFIG, ClusterState, add_replica

ULLONG_MAX = 2**64 - 1
LOCK_ATTEMPTS = 3  # a save renaming a new file over the path between our open and flock

CORRUPT = 'Unrecoverable error: corrupted cluster config file.'
UNKNOWN_FLAG = 'Unknown flag in redis cluster config file'
LOCKED = (
    'Sorry, the cluster configuration file %s is already used by a different Redis Cluster '
    'node. Please make sure that different nodes use different cluster configuration files.'
)

# path (absolute) -> the descriptor holding its flock
_locks: dict[str, int] = {}


class NodesConfError(Exception):
    """nodes.conf cannot be used; str() is the line redis-server logs before it exits."""


class CorruptConfig(NodesConfError):
    """What clusterLoadConfig treats as a format error (its `fmterr`)."""

    def __init__(self, msg: str = CORRUPT) -> None:
        super().__init__(msg)


class ConfigPanic(CorruptConfig):
    """A serverPanic or serverAssert of clusterLoadConfig: redis-server crashes with a bug
    report rather than exiting. `where` is the place in cluster.c."""

    def __init__(self, msg: str, where: str) -> None:
        super().__init__(msg)
        self.where = where


class LockError(NodesConfError):
    """clusterLockConfig failed."""


# -- reading numbers and text as C does ----------------------------------------------------


def strtoull(b: bytes) -> int:
    """C's strtoull(s, NULL, 10): blanks, a sign, digits up to the first other byte;
    saturated at 2**64-1; a minus sign negates modulo 2**64; 0 without digits."""
    i, n = 0, len(b)
    while i < n and b[i] in b' \t\n\v\f\r':
        i += 1
    negative = False
    if i < n and b[i] in b'+-':
        negative = b[i] == 45
        i += 1
    start = i
    while i < n and 48 <= b[i] <= 57:
        i += 1
    if i == start:
        return 0
    value = int(b[start:i])
    if value > ULLONG_MAX:
        return ULLONG_MAX
    return (-value) % 2**64 if negative else value


def _text(b: bytes) -> str:
    return b.decode('utf-8', 'surrogateescape')


# -- load ----------------------------------------------------------------------------------


def load(path: str, state: ClusterState) -> bool:
    """clusterLoadConfig: fill `state` (fresh from ClusterState's constructor) from the
    file. False when the file does not exist or is empty (the caller creates myself and
    saves). Raises CorruptConfig (ConfigPanic for Redis's panics and asserts) on a
    malformed file, OSError when it cannot be read (Redis logs "Loading the cluster node
    config from <path>: <strerror>"); the state is then half filled, and the caller exits
    as Redis does. The caller logs "Node configuration loaded, I'm <name>"."""
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except FileNotFoundError:
        return False
    if not data:
        return False

    placeholder = state.myself
    if state.nodes.get(placeholder.name) is placeholder:
        del state.nodes[placeholder.name]
    myself: Node | None = None
    in_order: dict[str, Node] = {}  # nodes with a line, in line order

    def node_named(name: bytes) -> Node:
        node = state.lookup(name)
        if node is None:
            node = Node(_text(name), 0)
            state.add_node(node)
        return node

    for line in data.split(b'\n'):
        if not line or line[0] == 0:  # fgets's empty last read, a blank or padding line
            continue
        argv = split_args(line)
        if not argv:  # unbalanced quotes (None), or blanks only (UB in Redis)
            raise CorruptConfig()
        argc = len(argv)

        if argv[0].lower() == b'vars':
            if argc % 2 == 0:
                raise CorruptConfig()
            for j in range(1, argc, 2):
                key = argv[j].lower()
                if key == b'currentepoch':
                    state.current_epoch = strtoull(argv[j + 1])
                elif key == b'lastvoteepoch':
                    state.last_vote_epoch = strtoull(argv[j + 1])
                else:
                    state.host.log(
                        f"Skipping unknown cluster config variable '{_text(argv[j])}'", '#'
                    )
            continue

        if argc < 8 or not valid_name(argv[0]):
            raise CorruptConfig()
        n = node_named(argv[0])
        in_order.setdefault(n.name, n)

        # ip:port[@cport][,hostname]
        addr, comma, hostname = argv[1].partition(b',')
        n.hostname = _text(hostname) if comma else ''
        colon = addr.rfind(b':')
        if colon < 0:
            raise CorruptConfig()
        n.ip = _text(addr[:colon])
        port, at, busport = addr[colon + 1 :].partition(b'@')
        n.port = atoi(port)
        n.cport = atoi(busport) if at else n.port + PORT_INCR

        for flag in argv[2].split(b','):
            name = _text(flag.lower())
            bit = FLAG_BY_NAME.get(name)
            if bit is None:
                raise ConfigPanic(UNKNOWN_FLAG, 'cluster.c:292')
            if bit == FLAG_MYSELF:
                if myself is not None:
                    raise ConfigPanic(
                        "'server.cluster->myself == NULL' is not true", 'cluster.c:271'
                    )
                myself = n
            elif bit == FLAG_FAIL:
                n.fail_time = mstime()
            n.flags |= bit

        if not argv[3].startswith(b'-'):
            if not valid_name(argv[3]):
                raise CorruptConfig()
            master = node_named(argv[3])
            n.master = master
            add_replica(master, n)

        if atoi(argv[4]):
            n.ping_sent = mstime()
        if atoi(argv[5]):
            n.pong_received = mstime()
        n.config_epoch = 0 if n.is_replica and n.master is not None else strtoull(argv[6])

        for arg in argv[8:]:
            if arg.startswith(b'['):
                _open_slot(state, arg, node_named)
                continue
            dash = arg.find(b'-')
            if dash >= 0:
                start, stop = atoi(arg[:dash]), atoi(arg[dash + 1 :])
            else:
                start = stop = atoi(arg)
            if not (0 <= start < SLOTS and 0 <= stop < SLOTS):
                raise CorruptConfig()
            for slot in range(start, stop + 1):
                state.add_slot(n, slot)

    if myself is None:
        raise CorruptConfig()
    state.myself = myself
    ordered = in_order | state.nodes
    state.nodes.clear()
    state.nodes.update(ordered)
    state.current_epoch = max(state.current_epoch, state.max_epoch())
    return True


def _open_slot(state: ClusterState, arg: bytes, node_named: Callable[[bytes], Node]) -> None:
    """A `[slot->-name]` (migrating) or `[slot-<-name]` (importing) mark."""
    dash = arg.find(b'-')
    if dash < 0:
        raise ConfigPanic("'p != NULL' is not true", 'cluster.c:333')
    direction = arg[dash + 1 : dash + 2]  # '>' or '<'
    slot = atoi(arg[1:dash])
    if not 0 <= slot < SLOTS:
        raise CorruptConfig()
    rest = arg[dash + 3 :]
    end = rest.find(b']')
    if end < 0 or not valid_name(rest[:end]):
        raise CorruptConfig()
    node = node_named(rest[:end])
    if direction == b'>':
        state.migrating_to[slot] = node
    else:
        state.importing_from[slot] = node


# -- save ----------------------------------------------------------------------------------


def text(state: ClusterState) -> str:
    """What clusterSaveConfig writes (without padding): the nodes not in handshake, then
    the epochs."""
    return (
        state.describe_nodes(skip=FLAG_HANDSHAKE)
        + f'vars currentEpoch {state.current_epoch} lastVoteEpoch {state.last_vote_epoch}\n'
    )


def save(path: str, state: ClusterState, fsync: bool) -> None:
    """clusterSaveConfig, atomically: a temporary file beside `path`, fsynced when asked,
    renamed over it, the directory fsynced when asked. The lock, if held, moves to the new
    file. Raises OSError, nodes.conf untouched."""
    state.todo &= ~TODO_SAVE_CONFIG
    if fsync:
        state.todo &= ~TODO_FSYNC_CONFIG
    data = text(state).encode('utf-8', 'surrogateescape')
    key = os.path.abspath(path)
    old_lock = _locks.get(key)
    tmp = f'{path}.tmp-{os.getpid()}-{mstime()}'
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        if old_lock is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if fsync:
            os.fsync(fd)
        os.rename(tmp, path)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if old_lock is not None:
        # the lock's descriptor number now names the new file's description (which
        # holds the flock); the old description, and its lock on the unlinked inode, go
        os.dup2(fd, old_lock, inheritable=False)
    os.close(fd)
    if fsync:
        _fsync_dir(os.path.dirname(key))


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- lock ----------------------------------------------------------------------------------


def lock(path: str) -> int:
    """clusterLockConfig: open (creating it empty if missing) and flock `path`; the
    descriptor stays open, and keeps the lock through `save`s, until `unlock` (or the
    process ends). Raises LockError with Redis's log line."""
    for _ in range(LOCK_ATTEMPTS):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise LockError(
                f"Can't open {path} in order to acquire a lock: {os.strerror(e.errno or 0)}"
            ) from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise LockError(LOCKED % path) from None
            raise LockError(f'Impossible to lock {path}: {os.strerror(e.errno or 0)}') from e
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except OSError:
            same = False
        if same:
            _locks[os.path.abspath(path)] = fd
            return fd
        os.close(fd)  # a save renamed a new file over the path: lock that one instead
    raise LockError(LOCKED % path)


def unlock(path: str) -> None:
    """Let the lock go (LOCK_UN and close), as redis-server does on shutdown."""
    fd = _locks.pop(os.path.abspath(path), None)
    if fd is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN | fcntl.LOCK_NB)
        finally:
            os.close(fd)
