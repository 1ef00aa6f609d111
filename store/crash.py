"""Crash reports: what redis-server's src/debug.c writes to its log before dying, and the
death itself (by the signal, as Redis dies).

- A fatal signal (`install`): SIGABRT sent to the process runs `on_signal` on the event
  loop: "=== REDIS BUG REPORT START ...", "Redis <version> crashed by signal: <n>, si_code:
  0", the stack trace (Python's, where Redis prints its C backtrace), INFO, CLIENT LIST,
  the current client, the config values Redis reports, "=== REDIS BUG REPORT END ...",
  then the default action of the signal (sigsegvHandler's bugReportEnd(1, sig)). SIGSEGV,
  SIGBUS, SIGFPE and SIGILL are real faults in a Python process (a C extension's): a
  Python handler would return into the faulting instruction forever, so those go to
  faulthandler, which writes the Python stack to the log and dies by the signal. With
  `crash-log-enabled no` (at start or by CONFIG SET) SIGABRT takes its default action, as
  Redis installs no handler then.
- DEBUG SEGFAULT writes the report of a SIGSEGV (si_code 2, SEGV_ACCERR, as the write to
  Redis's read-only page gives) and dies by SIGSEGV. DEBUG PANIC and DEBUG ASSERT are
  serverPanic and serverAssertWithInfo: "Guru Meditation: ..." or "=== ASSERTION FAILED
  ===", the report, then exit(1) under `use-exit-on-panic` or abort() (SIGABRT).

`panic` and `assert_failed` are there for any code that meets a state Redis asserts on.
The fast memory test of `crash-memcheck-enabled` is Redis's only on builds with
/proc/self/maps memtests; this server answers as a build without it (no section).
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import time
import traceback
from types import FrameType
from typing import Any, NoReturn

from .version import VERSION

FAULTS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL)

START = '\n\n=== REDIS BUG REPORT START: Cut & paste starting from here ===\n'
END = (
    '\n=== REDIS BUG REPORT END. Make sure to include from START to END. ===\n\n'
    '       Please report the crash by opening an issue on github:\n\n'
    '           http://github.com/redis/redis/issues\n\n'
    "  If a Redis module was involved, please open in the module's repo instead.\n\n"
    '  Suspect RAM error? Use redis-server --test-memory to verify it.\n\n'
    '  Some other issues could be detected by redis-server --check-system\n'
)
# logConfigDebugInfo's parameters, in its order
DEBUG_CONFIG = (
    'io-threads',
    'lazyfree-lazy-user-flush',
    'repl-diskless-load',
    'lazyfree-lazy-user-del',
    'activedefrag',
    'list-compress-depth',
    'client-query-buffer-limit',
    'repl-diskless-sync',
    'lazyfree-lazy-server-del',
    'replica-read-only',
    'slave-read-only',
    'lazyfree-lazy-expire',
    'proto-max-bulk-len',
    'lazyfree-lazy-eviction',
    'io-threads-do-reads',
    'sanitize-dump-payload',
)


def install(server: Any, loop: Any) -> None:
    """setupSignalHandlers' crash part. Installed whatever crash-log-enabled says, which
    CONFIG SET may change: with it off, the handler takes the signal's default action,
    as Redis then has no handler."""
    try:
        fd = server.log_stream.fileno()
    except (AttributeError, OSError, ValueError):
        fd = sys.stderr.fileno()
    faulthandler.enable(file=fd, all_threads=True)
    loop.add_signal_handler(signal.SIGABRT, on_signal, server, signal.SIGABRT)


def on_signal(server: Any, sig: int) -> NoReturn:
    """sigsegvHandler for a signal sent to the process (si_code SI_USER)."""
    if not server.config['crash-log-enabled']:
        die_by(sig)
    _report_signal(server, sig, 0, None)


def debug_segfault(server: Any, args: Any = ()) -> NoReturn:
    """DEBUG SEGFAULT: what Redis's write to a read-only page leads to."""
    if not server.config['crash-log-enabled']:
        die_by(sig=signal.SIGSEGV)
    _report_signal(server, signal.SIGSEGV, 2, 0x7F0000000000, args)


def panic(server: Any, message: str, where: str = 'debug.c:510', args: Any = ()) -> NoReturn:
    """_serverPanic: the Guru Meditation, the report, then exit or abort."""
    _enter(server)
    bug_report_start(server)
    server.log('------------------------------------------------', '#')
    server.log('!!! Software Failure. Press left mouse button to continue', '#')
    server.log(f'Guru Meditation: {message} #{where}', '#')
    if server.config['crash-log-enabled']:
        _stack_trace(server)
        _crash_report(server, args)
    _end_and_abort(server)


def assert_failed(
    server: Any, estr: str, where: str = 'debug.c:530', conn: Any = None, args: Any = None
) -> NoReturn:
    """_serverAssertWithInfo: the client's context when there is one, then _serverAssert."""
    _enter(server)
    if conn is not None:
        bug_report_start(server)
        server.log('=== ASSERTION FAILED CLIENT CONTEXT ===', '#')
        server.log('client->flags = 0', '#')
        server.log(f'client->conn = fd=?, type=tcp, state=connected, addr={conn.addr}', '#')
        argv = list(args or ())
        server.log(f'client->argc = {len(argv)}', '#')
        for j, a in enumerate(argv):
            server.log(f'client->argv[{j}] = "{_text(a)}" (refcount: 1)', '#')
    if args:
        server.log('=== ASSERTION FAILED OBJECT CONTEXT ===', '#')
        server.log('Object type: 0', '#')
        server.log('Object encoding: 0', '#')
        server.log('Object refcount: 1', '#')
        server.log(f'Object raw string len: {len(args[0])}', '#')
        server.log(f'Object raw string content: "{_text(args[0])}"', '#')
    bug_report_start(server)
    server.log('=== ASSERTION FAILED ===', '#')
    server.log(f"==> {where} '{estr}' is not true", '#')
    if server.config['crash-log-enabled']:
        _stack_trace(server)
        _crash_report(server, args)
    _end_and_abort(server)


# -- the parts of the report ------------------------------------------------------------------


def _enter(server: Any) -> None:
    """One report a process: a failure met while writing it (INFO reading a corrupt
    value) is an exception there, which the report's sections catch."""
    if getattr(server, 'crashing', False):
        raise RuntimeError('failed while writing a crash report')
    server.crashing = True


def bug_report_start(server: Any) -> None:
    """bugReportStart: the START banner, once however many reports follow."""
    if not getattr(server, 'bug_report_started', False):
        server.bug_report_started = True
        raw(server, START)


def _report_signal(
    server: Any, sig: int, si_code: int, address: int | None, args: Any = ()
) -> NoReturn:
    _enter(server)
    bug_report_start(server)
    server.log(f'Redis {VERSION} crashed by signal: {int(sig)}, si_code: {si_code}', '#')
    if address is not None:
        server.log(f'Accessing address: {address:#x}', '#')
    _stack_trace(server)
    _crash_report(server, args)
    raw(server, END)
    die_by(sig)


def _stack_trace(server: Any) -> None:
    """logStackTrace, with the Python stack of the main thread (the event loop's)."""
    raw(server, stack_trace(sys._getframe(2)))


def stack_trace(frame: FrameType | None) -> str:
    """logStackTrace's section, with the Python stack from `frame` where Redis prints its
    C backtrace (the crash report's and the watchdog's)."""
    return '\n------ STACK TRACE ------\n\nBacktrace:\n' + ''.join(traceback.format_stack(frame))


def _crash_report(server: Any, args: Any = ()) -> None:
    """printCrashReport: INFO, CLIENT LIST, the current client, modules, debug config.
    `args`: the current command's arguments when the caller has them (None otherwise)."""
    args = list(args or ())
    parts = []
    try:
        parts.append('\n------ INFO OUTPUT ------\n' + server.info_text(['all']).replace('\r', ''))
    except Exception as e:  # noqa: BLE001 - a broken section must not stop the report
        parts.append(f'\n------ INFO OUTPUT ------\n(failed: {e!r})\n')
    try:
        current = server.current_client
        lines = [server.client_info(c, current) + '\n' for c in list(server.clients.values())]
        parts.append('\n------ CLIENT LIST OUTPUT ------\n' + ''.join(lines))
        if current is not None and current.transport is not None:
            info = server.client_info(current, current, args or None) + '\n'
            info += ''.join(f"argv[{j}]: '\"{_text(a)}\"'\n" for j, a in enumerate(args))
            parts.append('\n------ CURRENT CLIENT INFO ------\n' + info)
    except Exception as e:  # noqa: BLE001
        parts.append(f'\n------ CLIENT LIST OUTPUT ------\n(failed: {e!r})\n')
    parts.append('\n------ MODULES INFO OUTPUT ------\n')
    cfg = server.config
    values = []
    for name in DEBUG_CONFIG:
        try:
            values.append(f'{name} {cfg.render(name)}\n')
        except Exception:  # noqa: BLE001 - a parameter this server lacks
            continue
    parts.append('\n------ CONFIG DEBUG OUTPUT ------\n' + ''.join(values))
    raw(server, ''.join(parts))


def _end_and_abort(server: Any) -> NoReturn:
    """bugReportEnd(0, 0): exit(1) under use-exit-on-panic, else abort()."""
    raw(server, END)
    if server.config['use-exit-on-panic']:
        os._exit(1)
    die_by(signal.SIGABRT)


def die_by(sig: int) -> NoReturn:
    """The signal's default action on this process (a core dump where it makes one)."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    faulthandler.disable()
    signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
    os.kill(os.getpid(), sig)
    time.sleep(1)  # the signal arrives before this ends
    os._exit(128 + int(sig))


def raw(server: Any, text: str) -> None:
    """serverLogRaw: the text as it is, no prefix."""
    try:
        server.log_stream.write(text)
        server.log_stream.flush()
    except (OSError, ValueError):
        pass


def _text(a: Any) -> str:
    return a.decode('utf-8', 'replace') if isinstance(a, bytes | bytearray) else str(a)
