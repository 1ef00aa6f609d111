"""The replication commands (replication.c): SYNC, PSYNC and REPLCONF, which replicas and
redis-cli --rdb send; ROLE and WAIT, which clients ask; REPLICAOF / SLAVEOF, which make
this server a replica or a master again; FAILOVER, which hands the master's role to a
replica. The stream and the replicas' state are store/replication.py's, the link to a
master store/replica.py's.
"""

from __future__ import annotations

from typing import Any

from ..args import SYNTAX, int_arg, lower
from ..command_table import Family
from ..context import Client
from ..resp import NO_REPLY, OK, RedisError, string2ll
from .aggregates import FOREVER_MS

COMMANDS = Family('server')

E_TIMEOUT = 'ERR timeout is not an integer or out of range'
SYNC = dict(
    flags='admin noscript no_async_loading no_multi',
    categories='@admin @slow @dangerous',
    summary='Internal command used for replication',
)


@COMMANDS.command('sync', 1, **SYNC)
def sync(c: Client, args: list[bytes]) -> Any:
    c.server.replication.sync(c, args)
    return NO_REPLY


@COMMANDS.command('psync', -3, since='2.8.0', **SYNC)
def psync(c: Client, args: list[bytes]) -> Any:
    c.server.replication.sync(c, args)
    return NO_REPLY


@COMMANDS.command(
    'replconf',
    -1,
    flags='admin noscript loading stale allow_busy',
    categories='@admin @slow @dangerous',
    since='3.0.0',
    summary='An internal command for configuring the replication stream',
)
def replconf(c: Client, args: list[bytes]) -> Any:
    """replconfCommand: options in pairs, applied in order; ACK and GETACK answer
    nothing (an ACK's reply would land in the replica's stream)."""
    if len(args) % 2 == 0:
        raise SYNTAX
    replication = c.server.replication
    r = replication.of(c)
    for j in range(1, len(args), 2):
        opt, value = lower(args[j]), args[j + 1]
        if opt == 'listening-port':
            r.port = int_arg(value)
        elif opt == 'ip-address':
            if len(value) >= 256:  # NET_HOST_STR_LEN
                raise RedisError(
                    f'ERR REPLCONF ip-address provided by replica instance is too long: '
                    f'{len(value)} bytes'
                )
            r.ip = value.decode('utf-8', 'replace')
        elif opt == 'capa':
            r.capa.add(lower(value))
        elif opt == 'ack':
            offset = string2ll(value)
            if offset is not None:
                replication.ack(c, offset)
            return NO_REPLY
        elif opt == 'getack':
            link = c.server.replica_link
            if link is not None and link.is_master(c):
                link.getack = True  # answered once the master's read is applied
            return NO_REPLY
        elif opt == 'rdb-only':
            flag = int_arg(value)
            if not 0 <= flag <= 1:
                raise RedisError('ERR value is out of range, value must between 0 and 1')
            r.rdb_only = flag == 1
        elif opt == 'rdb-filter-only':
            # include filters: the keys are left out, the functions kept if named
            # ('' leaves them out too)
            parts: set[str] = set()
            for part in value.split():
                if lower(part) != 'functions':
                    shown = part.decode('latin-1')
                    raise RedisError(f'ERR Unsupported rdb-filter-only option: {shown}')
                parts.add('functions')
            r.rdb_filter = parts
        else:
            opt_s = args[j].decode('utf-8', 'replace')
            raise RedisError(f'ERR Unrecognized REPLCONF option: {opt_s}')
    return OK


@COMMANDS.command(
    'role',
    1,
    flags='noscript loading stale fast',
    categories='@admin @fast @dangerous',
    since='2.8.12',
    summary='Return the role of the instance in the context of replication',
)
def role(c: Client, args: list[bytes]) -> Any:
    return c.server.replication.role()


REPLICAOF = dict(
    flags='admin noscript stale no_async_loading',
    categories='@admin @slow @dangerous',
    summary='Make the server a replica of another instance, or promote it as master.',
)


def _replicaof(c: Client, args: list[bytes]) -> Any:
    """replicaofCommand: NO ONE makes this server a master (it keeps its data); a host and
    port make it a replica of that master (store/replica.py)."""
    if c.server.cluster is not None:  # a cluster node replicates its master by CLUSTER
        raise RedisError('ERR REPLICAOF not allowed in cluster mode.')
    replication = c.server.replication
    if replication.failover_state != 'no-failover':
        raise RedisError('ERR REPLICAOF not allowed while failing over.')
    if args[1].lower() == b'no' and args[2].lower() == b'one':
        replication.promote()
        return OK
    port = string2ll(args[2])
    if port is None or not 0 <= port <= 65535:
        raise RedisError('ERR Invalid master port')
    already = replication.replicate(args[1].decode('utf-8', 'replace'), port)
    return 'OK Already connected to specified master' if already else OK


@COMMANDS.command('replicaof', 3, since='5.0.0', **REPLICAOF)
def replicaof(c: Client, args: list[bytes]) -> Any:
    return _replicaof(c, args)


@COMMANDS.command('slaveof', 3, since='1.0.0', **REPLICAOF)
def slaveof(c: Client, args: list[bytes]) -> Any:
    return _replicaof(c, args)


@COMMANDS.command(
    'failover',
    -1,
    flags='admin noscript stale',
    categories='@admin @slow @dangerous',
    since='6.2.0',
    summary='Start a coordinated failover between this server and one of its replicas.',
)
def failover(c: Client, args: list[bytes]) -> Any:
    """failoverCommand: FAILOVER [TO host port [FORCE]] [TIMEOUT ms], or FAILOVER ABORT.
    It answers at once; the failover goes on in the background (store/replication.py)."""
    if c.server.cluster is not None:
        raise RedisError(
            'ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead.'
        )
    replication = c.server.replication
    if len(args) == 2 and lower(args[1]) == 'abort':
        if replication.failover_state == 'no-failover':
            raise RedisError('ERR No failover in progress.')
        replication.abort_failover('Failover manually aborted')
        return OK
    timeout = 0
    force = False
    target: tuple[str, int] | None = None
    j = 1
    while j < len(args):
        opt = lower(args[j])
        if opt == 'timeout' and j + 1 < len(args) and not timeout:
            timeout = int_arg(args[j + 1])
            if timeout <= 0:
                raise RedisError('ERR FAILOVER timeout must be greater than 0')
            j += 2
        elif opt == 'to' and j + 2 < len(args) and target is None:
            target = (args[j + 1].decode('utf-8', 'replace'), int_arg(args[j + 2]))
            j += 3
        elif opt == 'force' and not force:
            force = True
            j += 1
        else:
            raise SYNTAX
    if replication.failover_state != 'no-failover':
        raise RedisError('ERR FAILOVER already in progress.')
    if c.server.replica_link is not None:
        raise RedisError('ERR FAILOVER is not valid when server is a replica.')
    if not replication.count():
        raise RedisError('ERR FAILOVER requires connected replicas.')
    if force and (not timeout or target is None):
        raise RedisError(
            'ERR FAILOVER with force option requires both a timeout and target HOST and IP.'
        )
    if target is not None:
        r = replication.find_replica(*target)
        if r is None:
            raise RedisError('ERR FAILOVER target HOST and PORT is not a replica.')
        if r.state != 'online':
            raise RedisError('ERR FAILOVER target replica is not online.')
    replication.start_failover(target, timeout, force)
    return OK


@COMMANDS.command(
    'wait',
    3,
    flags='noscript',
    categories='@slow @connection',
    tips='request_policy:all_shards response_policy:agg_min',
    group='generic',
    since='3.0.0',
    summary='Wait for the synchronous replication of all the write commands sent in the '
    'context of the current connection',
)
def wait(c: Client, args: list[bytes]) -> Any:
    """waitCommand: the replicas that acknowledged the stream up to now, at once when
    they are enough (or it may not block), else when enough are, or at the timeout."""
    numreplicas = int_arg(args[1])
    ms = string2ll(args[2])  # getTimeoutFromObjectOrReply(UNIT_MILLISECONDS)
    if ms is None:
        raise RedisError(E_TIMEOUT)
    if ms < 0:
        raise RedisError('ERR timeout is negative')
    replication = c.server.replication
    replication.server.persistence.aof.write_replicas()  # this client's writes: in the stream
    offset = replication.offset
    acked = replication.acked(offset)
    blocking = c.server.blocking
    if acked >= numreplicas or not blocking.may_block(c):
        return acked
    blocking.block(c, [], _no_key, 0 if ms >= FOREVER_MS else ms / 1000, acked)
    replication.wait(c.blocked, offset, numreplicas)
    return NO_REPLY


def _no_key(db: int, key: bytes) -> None:
    return None
