"""Loading the AOF (loadAppendOnlyFiles): the `AofLoad` half of aof.Aof.

The manifest's base, then its incr files in order, are replayed into the keyspace through
a Connection of the loader's ACL user, as the commands they are; an RDB base (or a Redis <
7.0 file's RDB preamble) is loaded by the manager's RDB load, then any command tail after
it. MULTI ... EXEC is replayed as a unit and reverted when the file ends inside it. The
loop gets a turn every YIELD_EVERY commands (clients get -LOADING). A truncated last file
is cut back to its last whole command with aof-load-truncated yes; anything else a file
cannot be read as is a LoadError, with Redis's message, and the server does not start.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from .aof_resp import _parse_command
from .aof_upgrade import upgrade_if_needed
from .errors import LoadError

YIELD_EVERY = 1024  # commands replayed between two turns of the loop (-LOADING replies)
FIX_HINT = 'make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>'


class AofLoad:
    """Aof's loading: a mixin of aof.Aof, whose fields it uses."""

    async def load(self: Any) -> None:
        """loadAppendOnlyFiles: the base, then the incr files in order; LoadError when
        the server must not start. Then the AOF is opened for appending."""
        await self.load_files()
        self.start()  # open for appending now, so expiries right after loading are written

    async def load_files(self: Any) -> None:
        """The files the manifest names, replayed into the keyspace (start-up, and DEBUG
        LOADAOF with the AOF open, which keeps appending to its incr file)."""
        m = self._load_manifest()
        upgrade_if_needed(self, m)
        self.manifest = m
        files: list[tuple[str, str]] = []
        if m.base is not None:
            files.append(('base', m.base[0]))
        files += [('incr', name) for name, _ in m.incrs]
        total = 0
        for _, name in files:
            try:
                total += os.path.getsize(self.path(name))
            except OSError as e:
                msg = f'Unable to obtain the AOF file {name} length. stat: {e.strerror}'
                raise LoadError(msg) from None
        server = self.server
        server.persistence.load_total = total  # INFO's loading_* fields
        if files and total:
            load_started = time.time()
            for n, (kind, name) in enumerate(files):
                started = time.time()
                last = n == len(files) - 1
                status = await self._load_file(name, last)
                if status != 'empty' or kind == 'base':
                    self.log(
                        f'DB loaded from {kind} file {name}: {time.time() - started:.3f} seconds'
                    )
            self.log(f'DB loaded from append only file: {time.time() - load_started:.3f} seconds')
        self.base_size = os.path.getsize(self.path(m.base[0])) if m.base is not None else 0
        self.current_size = total

    async def _load_file(self: Any, name: str, last: bool) -> str:
        """loadSingleAppendOnlyFile: 'ok', 'empty' or 'truncated'; LoadError otherwise."""
        path = self.path(name)
        try:
            with open(path, 'rb') as f:
                data = f.read()
        except OSError as e:
            msg = f"Fatal error: can't open the append log file {name} for reading: {e.strerror}"
            raise LoadError(msg) from None
        if not data:
            return 'empty'
        server = self.server
        pos = 0
        n = len(data)
        if data[:5] == b'REDIS':
            self.log('Reading RDB base file on AOF loading...')
            try:
                await server.persistence.load_rdb(path)
            except Exception as e:
                self.log(f'Error reading the RDB base file {name}, AOF loading aborted', '#')
                raise LoadError(str(e) or f'Error reading the RDB base file {name}') from None
            pos = server.persistence.rdb_end
            if pos >= n:
                return 'ok'
            # a Redis < 7.0 AOF: the RDB preamble, then commands
            self.log('Reading the remaining AOF tail...')
        from ..connection import Connection

        conn = Connection(server)
        conn.set_user(server.acl.loader)  # replayed commands and scripts are not checked
        table = server.commands
        start = valid_up_to = pos
        valid_before_multi = 0
        queued: list[tuple[Any, list[bytes]]] | None = None
        loops = 0
        truncate_tail = False
        while pos < n:
            loops += 1
            if loops % YIELD_EVERY == 0:
                server.persistence.load_pos = pos
                await asyncio.sleep(0)
            if data[pos] == 35:  # '#': an annotation (#TS:...)
                eol = data.find(b'\n', pos)
                if eol < 0:
                    truncate_tail = True
                    break
                pos = eol + 1
                continue
            parsed = _parse_command(data, pos)
            if parsed is None:
                truncate_tail = True
                break
            if parsed is False:
                msg = f'Bad file format reading the append only file {name}: {FIX_HINT}'
                raise LoadError(msg)
            args, pos = parsed
            cmd = table.get(args[0]) or table.get(args[0].lower())
            if cmd is None:
                msg = (
                    f"Unknown command '{args[0].decode('utf-8', 'replace')}' reading the "
                    f'append only file {name}'
                )
                raise LoadError(msg)
            cname = cmd.name
            if cname == 'multi':
                valid_before_multi = valid_up_to
                queued = []
            elif cname == 'exec':
                if queued is not None:
                    conn.in_exec = True
                    try:
                        for qc, qa in queued:
                            conn.call(qc, qa)
                    finally:
                        conn.in_exec = False
                queued = None
            elif queued is not None:
                queued.append((cmd, args))
            else:
                conn.call(cmd, args)
            valid_up_to = pos
        if not truncate_tail and queued is not None:
            self.log(f'Revert incomplete MULTI/EXEC transaction in AOF file {name}', '#')
            valid_up_to = valid_before_multi
            truncate_tail = True
        elif truncate_tail and queued is not None:
            valid_up_to = valid_before_multi
        server.persistence.load_done += n - start
        server.persistence.load_pos = 0
        if not truncate_tail:
            return 'ok'
        if server.config['aof-load-truncated']:
            self.log(f'!!! Warning: short read while loading the AOF file {name}!!!', '#')
            self.log(f'!!! Truncating the AOF {name} at offset {valid_up_to} !!!', '#')
            try:
                os.truncate(path, valid_up_to)
            except OSError as e:
                self.log(f'Error truncating the AOF file {name}: {e.strerror}', '#')
            else:
                self.log(f'AOF {name} loaded anyway because aof-load-truncated is enabled', '#')
                if not last:
                    msg = 'Fatal error: the truncated file is not the last file'
                    raise LoadError(msg)
                return 'truncated'
        msg = (
            f'Unexpected end of file reading the append only file {name}. You can: '
            '1) Make a backup of your AOF file, then use ./redis-check-aof --fix '
            '<filename.manifest>. 2) Alternatively you can set the \'aof-load-truncated\' '
            'configuration option to yes and restart the server.'
        )
        raise LoadError(msg)
