"""The process title, as Redis 7.0 sets it (set-proc-title, proc-title-template): what ps
and /proc/<pid>/cmdline show for the server, e.g. `store 127.0.0.1:6379` (`{title}
{listen-addr} {server-mode}` by default), set at start-up and again when CONFIG SET changes
the template.

`expand` is sdstemplate: `{name}` is a variable, `{{` a literal brace, anything else
invalid; the result is trimmed of spaces. The variables are redisProcTitleGetVariable's:
title (the program as it was run: sys.argv[0], e.g. .venv/bin/store-server, or `python -m
store`),
listen-addr (the first bind address and the port, `*` without one), server-mode (empty:
no cluster or sentinel mode here), port, tls-port, unixsocket, config-file (`-` without
one).

Setting it is setproctitle(3)'s technique, from Python: the process's original argument
strings (and the environment strings right after them, once the C environment's pointers
have been moved to copies) are overwritten with the title. Linux reads the title back from
there: its byte at the end of the arguments is made non-zero, which tells the kernel the
area holds one title, up to its first NUL. Where the area cannot be found (no
/proc/self/stat fields for it) the title is left as it is.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Mapping
from typing import Any


def expand(template: str, variables: Mapping[str, str]) -> str | None:
    """sdstemplate with `variables`, trimmed of spaces; None when the template is invalid
    (an unknown variable, an unclosed brace)."""
    out = []
    p = 0
    while p < len(template):
        sv = template.find('{', p)
        if sv < 0:
            out.append(template[p:])
            break
        out.append(template[p:sv])
        if template[sv + 1 : sv + 2] == '{':
            out.append('{')
            p = sv + 2
            continue
        ev = template.find('}', sv + 1)
        if ev < 0 or template[sv + 1 : ev] not in variables:
            return None
        out.append(variables[template[sv + 1 : ev]])
        p = ev + 1
    return ''.join(out).strip(' ')


def variables(server: Any) -> dict[str, str]:
    """redisProcTitleGetVariable's values for this server."""
    cfg = server.config
    port = server.port
    listen_port = port or cfg['tls-port']  # Redis's: the TLS port when there is no other
    bind = cfg['bind'].split()  # (one string, as CONFIG GET shows it)
    addr = bind[0] if bind else '*'
    unixsocket = cfg['unixsocket'] or ''
    title = sys.argv[0]
    if title.endswith('__main__.py'):  # python -m store
        title = ' '.join(sys.orig_argv[:3])
    return {
        'title': title,
        'listen-addr': f'{addr}:{listen_port}' if listen_port else f'unixsocket:{unixsocket}',
        'server-mode': '',
        'port': str(port),
        'tls-port': str(cfg['tls-port']),
        'unixsocket': unixsocket,
        'config-file': cfg.file or '-',
    }


def apply(server: Any) -> None:
    """redisSetProcTitle(NULL): the template expanded for this server, when set-proc-title
    is on."""
    cfg = server.config
    if cfg['set-proc-title']:
        title = expand(cfg['proc-title-template'], variables(server))
        if title is not None:
            _area.set(title)


class _ArgvArea:
    """The memory of the process's original argument (and environment) strings."""

    def __init__(self) -> None:
        self.span: tuple[int, int, int] | None = None  # start, end of the arguments, end
        self.copies: list[Any] = []  # the environment strings moved out, kept alive

    def _find(self) -> tuple[int, int, int] | None:
        try:
            with open('/proc/self/stat', 'rb') as f:
                stat = f.read()
            # fields 48-51 (arg_start, arg_end, env_start, env_end), counted after comm
            fields = stat[stat.rindex(b')') + 2 :].split()
            arg_start, arg_end, env_start, env_end = map(int, fields[45:49])
        except (OSError, ValueError):
            return None
        if not arg_start or arg_end <= arg_start:
            return None
        end = arg_end
        if (
            env_start == arg_end
            and env_end > env_start
            and self._move_environment(env_start, env_end)
        ):
            end = env_end
        return arg_start, arg_end, end

    def _move_environment(self, start: int, end: int) -> bool:
        """Point the C environment's entries that live in [start, end) at copies, so that
        the area can be written (getenv, tzset read them after Python has started)."""
        try:
            libc = ctypes.CDLL(None)
            environ = ctypes.c_void_p.in_dll(libc, 'environ').value
        except (OSError, ValueError):
            return False
        if not environ:
            return True
        entries = ctypes.cast(environ, ctypes.POINTER(ctypes.c_void_p))
        i = 0
        while entries[i]:
            addr = entries[i]
            if start <= addr < end:
                copy = ctypes.create_string_buffer(ctypes.string_at(addr))
                self.copies.append(copy)
                entries[i] = ctypes.addressof(copy)
            i += 1
        return True

    def set(self, title: str) -> None:
        if self.span is None:
            self.span = self._find()
            if self.span is None:
                return
        start, arg_end, end = self.span
        data = title.encode('utf-8', 'replace')[: end - start - 1]
        ctypes.memset(start, 0, end - start)
        ctypes.memmove(start, data, len(data))
        if start + len(data) < arg_end - 1:
            # a non-zero last byte of the arguments: the kernel shows the area as one
            # string, up to its first NUL (setproctitle.c's '.')
            ctypes.memset(arg_end - 1, ord('.'), 1)


_area = _ArgvArea()
