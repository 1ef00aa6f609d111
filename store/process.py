"""The process as redis-server runs it: `daemonize`, `pidfile`, `logfile`, `supervised`.

Init systems and Debian's stock redis.conf start redis-server daemonized or supervised,
read its pid from the pid file and its log from the log file; this module does these
things as server.c does them:
- `daemonize yes` (and no supervisor, redisIsSupervised): daemonize() forks before
  anything else starts (no thread, no event loop yet), the parent exits 0, the child
  starts a session and points fds 0-2 at /dev/null;
- the pid file (createPidFile) is written once the listeners are open, when `pidfile`
  is set or the process daemonized (then /var/run/redis.pid if none is set); a failure
  is a warning, not a stop; it is removed at shutdown ("Removing the pid file.");
- `logfile <path>`: every line is appended by opening the file, writing and closing it
  again (serverLogRaw), so a log that logrotate moved away is recreated at the next
  line; `""` is standard output (/dev/null once daemonized, as in Redis). A file that
  cannot be opened at start-up stops the server with Redis's configuration error;
- `supervised` (redisIsSupervised): under systemd (`systemd`, or `auto` with NOTIFY_SOCKET
  set, as Debian's redis-server.service runs it: Type=notify) the server tells systemd
  its state through $NOTIFY_SOCKET with sd_notify's datagrams: loading, ready (READY=1),
  stopping, saving, a replica's sync; under upstart (UPSTART_JOB set) it stops itself
  with SIGSTOP once, which upstart takes as "ready". Either way it does not daemonize;
- `syslog-enabled`: every line that is logged also goes to syslog (glibc's, through
  /dev/log), its message without the prefix, at the level's priority. As in Redis the
  lines before the server starts ('C') go with syslog's defaults (the program's name,
  facility user); open_syslog, as initServer calls openlog, then names `syslog-ident`
  with the pid and `syslog-facility`.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import syslog
import time
from collections.abc import Callable
from typing import Protocol

DEFAULT_PIDFILE = '/var/run/redis.pid'  # CONFIG_DEFAULT_PID_FILE


class LogFile:
    """`logfile <path>` as a text stream for Server.log and the crash report."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None

    def write(self, text: str) -> int:
        with open(self.path, 'a', encoding='utf-8', errors='surrogateescape') as f:
            return f.write(text)

    def flush(self) -> None:
        pass  # every write closes the file

    def fileno(self) -> int:
        """For faulthandler, which needs a descriptor ready before a crash: the file
        opened once to append (a crash after a rotation lands in the rotated file)."""
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        return self._fd


def cannot_open_log(path: str) -> str | None:
    """loadServerConfigFromString's last check: Redis's error text when `path` cannot be
    opened to append, else None."""
    try:
        with open(path, 'a'):
            return None
    except OSError as e:
        return f"Can't open the log file: {os.strerror(e.errno or 0)}"


Log = Callable[[str, str], None]

# serverLog's verbosity: a line's level mark, and `loglevel`, ranked (LL_DEBUG..LL_WARNING)
LOG_LEVELS = {'.': 0, 'debug': 0, '-': 1, 'verbose': 1, '*': 2, 'notice': 2, '#': 3, 'warning': 3}


def below(level: str, loglevel: str) -> bool:
    """Whether a line marked `level` is dropped under `loglevel`, as serverLog drops it."""
    return LOG_LEVELS[level] < LOG_LEVELS[loglevel]


# serverLogRaw's syslogLevelMap, and syslog-facility's names (syslog_facility_enum)
_SYSLOG_LEVELS = {'.': syslog.LOG_DEBUG, '-': syslog.LOG_INFO, '*': syslog.LOG_NOTICE}
_FACILITIES = {
    'user': syslog.LOG_USER,
    **{f'local{i}': syslog.LOG_LOCAL0 + i * 8 for i in range(8)},
}


_syslog_opened = False  # openlog called: by initServer's open_syslog, or with the defaults


def open_syslog(ident: str, facility: str) -> None:
    global _syslog_opened
    syslog.openlog(
        ident, syslog.LOG_PID | syslog.LOG_NDELAY | syslog.LOG_NOWAIT, _FACILITIES[facility]
    )
    _syslog_opened = True


def to_syslog(level: str, msg: str) -> None:
    global _syslog_opened
    if not _syslog_opened:
        # syslog's defaults, as glibc's before any openlog: the program's name (Python's
        # would be "__main__.py" under `python -m store`), no pid, facility user
        name = os.path.basename(sys.argv[0])
        syslog.openlog('store' if name == '__main__.py' else name, 0, syslog.LOG_USER)
        _syslog_opened = True
    syslog.syslog(_SYSLOG_LEVELS.get(level, syslog.LOG_WARNING), msg)


class TextSink(Protocol):
    """Where log lines go: standard output, a LogFile, a test's StringIO."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


def log_line(stream: TextSink, role: str, level: str, msg: str) -> None:
    """One line in redis-server's format: pid:role date time.ms level message."""
    now = time.time()
    stamp = time.strftime('%d %b %Y %H:%M:%S', time.localtime(now))
    stream.write(f'{os.getpid()}:{role} {stamp}.{int(now * 1000) % 1000:03d} {level} {msg}\n')
    stream.flush()


def starting(log: Log, version: str, configured: bool) -> None:
    """main's first lines, once daemonized: the version, and whether a configuration was
    given (an argument) or the defaults apply."""
    log('oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo', '#')
    pid = os.getpid()
    log(
        f'Redis version={version}, bits=64, commit=00000000, modified=0, pid={pid}, just started',
        '#',
    )
    if configured:
        log('Configuration loaded', '#')
    else:
        log(
            'Warning: no config file specified, using the default config. In order to '
            f'specify a config file use {sys.argv[0]} /path/to/redis.conf',
            '#',
        )


def notify(msg: str, log: Log) -> int:
    """redisCommunicateSystemd: sd_notify's datagram to $NOTIFY_SOCKET ('@' for the
    abstract namespace); > 0 once sent, 0 without the variable, -errno on failure, the
    last two logged as Redis logs them."""
    path = os.environ.get('NOTIFY_SOCKET')
    if not path:
        log('systemd supervision error: NOTIFY_SOCKET not found!', '#')
        return 0
    address = '\0' + path[1:] if path.startswith('@') else path
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(msg.encode(), address)
    except OSError as e:
        log(f'systemd supervision error: sd_notify: {-(e.errno or 1)}', '#')
        return -(e.errno or 1)
    return 1


def supervision(mode: str, log: Log) -> str | None:
    """redisIsSupervised: 'systemd' or 'upstart' when that supervisor runs the process
    (then it is not daemonized), else None."""
    if mode == 'auto':
        if 'UPSTART_JOB' in os.environ:
            log('Upstart supervision detected.', '-')
            mode = 'upstart'
        elif 'NOTIFY_SOCKET' in os.environ:
            log('Systemd supervision detected.', '-')
            mode = 'systemd'
    if mode == 'upstart':
        if 'UPSTART_JOB' not in os.environ:
            log('upstart supervision requested, but UPSTART_JOB not found!', '#')
            return None
        log('supervised by upstart, will stop to signal readiness.', '*')
        os.kill(os.getpid(), signal.SIGSTOP)
        del os.environ['UPSTART_JOB']
        return 'upstart'
    if mode == 'systemd':
        if notify('STATUS=Redis is loading...\n', log) <= 0:
            return None
        log(
            'Supervised by systemd. Please make sure you set appropriate values for '
            'TimeoutStartSec and TimeoutStopSec in your service unit.',
            '*',
        )
        return 'systemd'
    return None


def daemonize() -> None:
    """daemonize(): the parent exits at once; the child goes on in a session of its own
    with standard input, output and error on /dev/null."""
    if os.fork() != 0:
        os._exit(0)
    os.setsid()
    fd = os.open(os.devnull, os.O_RDWR)
    for std in (0, 1, 2):
        os.dup2(fd, std)
    if fd > 2:
        os.close(fd)


def write_pidfile(path: str) -> str | None:
    """createPidFile, best effort: the warning to log when it cannot be written."""
    try:
        with open(path, 'w') as f:
            f.write(f'{os.getpid()}\n')
    except OSError as e:
        return f'Failed to write PID file: {os.strerror(e.errno or 0)}'
    return None


def remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
