"""Propagation of the AOF's stream: the `AofPropagate` part of aof.Aof.

Propagation. While the AOF is on, or replicas follow the stream (store/replication.py gets
each batch written here too), the handler of every command whose flags include `write` is
wrapped (`_install`): after the command ran without error it is encoded and queued,
rewritten first where replaying it as sent would not give the same result (relative
expiries made absolute, SPOP as SREM, XADD's `*` as the id it got, blocking commands as
their non-blocking form: propagate_rewrites.py). Nothing is wrapped otherwise, so it costs
nothing then. Keys deleted at their deadline or evicted arrive as `removing` (the key
lifecycle, store/lifecycle.py) and are written as DEL before the command that found
them; journal entries (store/journal.py writes its stream directly) arrive as `journal`
and are written after the command that caused them, as `XADD <key> MAXLEN <n> <id> ...`
with the id the entry got. MULTI/EXEC and scripts mark an execution unit
(`begin`/`end`): what it wrote is wrapped in MULTI ... EXEC when there is more than one
command, as Redis 7.0 propagates.
"""

from __future__ import annotations

import time
from typing import Any

from ..resp import NULL_ARRAY as _NULL_ARRAY
from ..resp import OK, RedisError
from .aof_resp import (
    TO_ALL,
    TO_AOF,
    TO_REPLICAS,
    AofOnly,
    ReplicasOnly,
    encode_queued,
    resp_command,
)
from .propagate_rewrites import REWRITES, set_rewrite

_MULTI = b'*1\r\n$5\r\nMULTI\r\n'
_EXEC = b'*1\r\n$4\r\nEXEC\r\n'


class AofPropagate:
    """Aof's propagation: a mixin of aof.Aof, whose fields it uses."""

    # -- wrapping the write commands ---------------------------------------------------------

    def _install(self: Any) -> None:
        """Wrap every write command's handler (subcommands for containers) and hook the
        keyspace and the journal."""
        if self.installed:
            return
        seen = set()
        for cmd in self.server.commands.values():
            if id(cmd) in seen:
                continue
            seen.add(id(cmd))
            targets = list(cmd.subcommands.values()) if cmd.subcommands else [cmd]
            for t in targets:
                if 'write' in t.flags and t not in self.installed:
                    self.installed[t] = t.handler
                    t.handler = self._wrapped(t)
        self.propagating = True
        self.server.keyspace.listen(self)
        self.server.journal.aof = self

    def _uninstall(self: Any) -> None:
        for cmd, handler in self.installed.items():
            cmd.handler = handler
        self.installed: dict[Any, Any] = {}
        self.propagating = False
        self.server.keyspace.unlisten(self)
        self.server.journal.aof = None

    def _wrapped(self: Any, cmd: Any) -> Any:
        handler = cmd.handler
        rewrite = REWRITES.get(cmd.name)
        aof = self

        # SET without options is written as sent, as a command without a rewrite is
        plain = 3 if rewrite is set_rewrite else -1

        def run(c: Any, args: list[bytes]) -> Any:
            ks = c.ks
            changes = ks.changes
            aof.depth += 1
            try:
                r = handler(c, args)
            finally:
                aof.depth -= 1
            blocked = c.blocked
            if blocked is not None and blocked.conn is c and blocked.aof is None:
                blocked.aof = (rewrite, args)  # written when served (store/blocking.py)
            elif rewrite is None and ks.changes == changes:
                pass  # it changed nothing: call() propagates only when server.dirty moved
            elif aof.targets != TO_ALL:
                aof.propagate(c, rewrite, args, r)
            elif rewrite is None or (len(args) == plain and r is OK):
                # propagate's common case, inlined. A read holding only this command is
                # written as the client sent it: encoding costs ~0.6 us. Mid-turn in the
                # same database other arguments are queued as they are and encoded with
                # the rest of the turn's commands when written (encode_queued)
                raw = c.raw
                buf = aof.buf
                if raw is not None and raw[0] is args:
                    aof.feed(c.db, raw[1])
                elif buf and c.db == aof.selected_db and aof.unit is None and len(args) < 16:
                    if not aof.timestamps:
                        buf.append(args)
                    else:
                        aof.feed(c.db, resp_command(args))
                else:
                    aof.feed(c.db, resp_command(args))
            else:
                aof.propagate(c, rewrite, args, r)
            if aof.after and not aof.depth:
                aof._flush_after()
            return r

        return run

    def propagate(self: Any, c: Any, rewrite: Any, args: list[bytes], reply: Any) -> None:
        feed = self.feed if self.targets == TO_ALL else self._feed_targets
        if rewrite is None:
            feed(c.db, resp_command(args))
            return
        if reply is _NULL_ARRAY or isinstance(reply, RedisError):
            return
        cmds = rewrite(c, args, reply)
        if cmds is None:
            feed(c.db, resp_command(args))
        else:
            for cmd in cmds:
                feed(c.db, resp_command(cmd))

    def _feed_targets(self: Any, db: int, data: bytes) -> None:
        """feed() for a command that goes to the file only, the replicas only or nowhere
        (`targets`, a script's redis.set_repl: call()'s CMD_CALL_PROPAGATE_AOF/REPL)."""
        targets = self.targets
        if targets == TO_AOF:
            data = AofOnly(data)
        elif targets == TO_REPLICAS:
            data = ReplicasOnly(data)
        else:
            return
        self.replicas_only = True  # the file and the replicas get different bytes
        self.feed(db, data)

    def served(self: Any, conn: Any, pending: Any, reply: Any) -> None:
        """A blocked command was served (store/blocking.py): write what it did."""
        rewrite, args = pending
        if isinstance(reply, RedisError):
            return
        self.propagate(conn, rewrite, args, reply)
        if self.after and not self.depth:
            self._flush_after()

    # -- feeding -------------------------------------------------------------------------

    def feed(self: Any, db: int, data: bytes) -> None:
        if self.unit is not None:
            self.unit.append((db, data))
            return
        buf = self.buf
        if buf and db == self.selected_db and not self.timestamps:  # mid-turn, same db
            buf.append(data)
            self.buf_len += len(data)
            return
        self._append(db, data)

    def _append(self: Any, db: int, data: bytes) -> None:
        buf = self.buf
        if not buf and not self.write_scheduled:
            self.write_scheduled = True
            loop = self.server.loop
            if loop is not None:
                loop.call_soon(self._scheduled_write)
        if self.timestamps:
            now = int(time.time())
            if now != self.last_ts:
                self.last_ts = now
                buf.append(b'#TS:%d\r\n' % now)
        if db != self.selected_db:
            self.selected_db = db
            select = resp_command((b'SELECT', b'%d' % db))
            buf.append(select)
            self.buf_len += len(select)
        buf.append(data)
        self.buf_len += len(data)

    def removing(self: Any, shard: Any, db: int, key: bytes) -> None:
        """A key leaving without a command (store/lifecycle.py: at its deadline, lazily
        or actively, or evicted): DEL (UNLINK with lazyfree-lazy-expire), written before
        the command that found it."""
        name = b'UNLINK' if self.server.config['lazyfree-lazy-expire'] else b'DEL'
        self.feed(db, resp_command((name, key)))

    def journal(self: Any, args: list[bytes]) -> None:
        """A journal append (store/journal.py): written after the command that caused it."""
        data = resp_command(args)
        if self.depth:
            self.after.append(data)
        else:
            self.feed(0, data)

    def _flush_after(self: Any) -> None:
        after = self.after
        self.after: list[bytes] = []
        for data in after:
            self.feed(0, data)

    def begin(self: Any) -> None:
        """An execution unit starts (EXEC, a script or function run)."""
        self.unit_depth += 1
        if self.unit_depth == 1:
            self.unit: list[tuple[int, bytes]] | None = []

    def end(self: Any) -> None:
        """The unit ends: its commands, in MULTI ... EXEC when more than one."""
        self.unit_depth -= 1
        if self.unit_depth:
            return
        unit, self.unit = self.unit, None
        if not unit:
            return
        if len(unit) == 1:
            self._append(*unit[0])
            return
        db0 = unit[0][0]
        if db0 != self.selected_db:
            self._append(db0, b'')  # the SELECT before MULTI
        self._append(self.selected_db, _MULTI)
        for db, data in unit:
            self._append(db, data)
        self._append(self.selected_db, _EXEC)

    # -- replication (store/replication.py) ------------------------------------------------

    def replication_started(self: Any) -> None:
        """Replicas get the stream from now on: propagation runs with the AOF off too."""
        self._install()

    def replication_stopped(self: Any) -> None:
        if not self.on and not self.turning_on:
            self._uninstall()

    def write_replicas(self: Any) -> None:
        """Feed the replicas what is queued: before a replica syncs (what was queued is
        in its RDB), and before commands only replicas get."""
        if self.buf:
            self.write()

    def _feed_replicas(self: Any) -> bytes | None:
        """Feed the replicas what of the queue they were not given. Returns the bytes
        when they are the whole queue as the file takes it too, so that write() encodes
        the queue once for both."""
        buf = self.buf
        whole = not self.replicas_fed and not self.replicas_only
        new = buf[self.replicas_fed :] if self.replicas_fed else buf
        self.replicas_fed = len(buf)
        if self.timestamps:  # #TS: annotations are the file's (each its own entry)
            new = [x for x in new if not (type(x) is bytes and x[:4] == b'#TS:')]
            whole = False
        if not new:
            return None
        data = encode_queued(new, replicas=True)
        self.replication.feed(data)
        return data if whole else None

    def to_replicas(self: Any, db: int, args: list[bytes]) -> None:
        """A command the replicas get and the file does not: PUBLISH, so that their
        subscribers get the message too (Redis's PROPAGATE_REPL)."""
        self.feed(db, ReplicasOnly(resp_command(args)))
        self.replicas_only = True
