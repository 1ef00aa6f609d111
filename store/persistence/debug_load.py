"""DEBUG's persistence subcommands (debug.c): LOADAOF, which empties the server and replays
the append-only file as a restart would, so tests can check that what the AOF holds gives
back the same data.

The load runs synchronously, blocking the server as in Redis: the AOF loader is a
coroutine that only ever awaits asyncio.sleep(0) (to let clients get -LOADING at start-up),
so it is driven here by sending into it until it returns (`run_sync`). Nothing replayed is
propagated: Redis propagates nothing while loading (shouldPropagate), so the AOF's command
wrappers are taken off for the load and put back after it.
"""

from __future__ import annotations

import os
from collections.abc import Coroutine
from typing import Any

from .aof_resp import resp_command
from .errors import LoadError


def run_sync(coro: Coroutine[Any, Any, Any]) -> Any:
    """Drive a coroutine whose awaits are all asyncio.sleep(0) to its end."""
    try:
        while True:
            coro.send(None)
    except StopIteration as e:
        return e.value


def debug_loadaof(server: Any) -> None:
    """DEBUG LOADAOF: write and fsync what the AOF has queued, empty the data, and load
    the AOF files back. A file that cannot be loaded ends the server (exit(1)), as Redis
    does."""
    p = server.persistence
    aof = p.aof
    if aof.on:
        aof.write()
        try:
            os.fsync(aof.fd)
        except OSError:
            pass
    server.keyspace.flushall()
    server.functions.flush()
    hooked = bool(aof.installed)
    aof._uninstall()
    try:
        with p.loading_state():
            run_sync(aof.load_files())
    except LoadError as e:
        server.log(str(e).strip(), '#')
        os._exit(1)
    finally:
        if hooked:
            aof._install()
    p.dirty_at_save = p.changes()  # server.dirty = 0: what was loaded is on disk already
    server.log('Append Only File loaded by DEBUG LOADAOF', '#')


def debug_replicate(server: Any, args: list[bytes]) -> None:
    """DEBUG REPLICATE <command> [<arg> ...]: the command goes to the replicas only, as
    is, without a SELECT (replicationFeedSlaves with dictid -1); nothing without them."""
    repl = server.replication
    if repl.backlog is not None:
        repl.server.persistence.aof.write_replicas()
        repl.feed(resp_command(args))
