"""The process as redis-server runs it: `daemonize`, `pidfile` and `logfile`.

Init systems and Debian's stock redis.conf start redis-server daemonized, read its pid
from the pid file and its log from the log file; this module does the same three things
as server.c does them:
- `daemonize yes` (and no supervisor, redisIsSupervised): daemonize() forks before
  anything else starts (no thread, no event loop yet), the parent exits 0, the child
  starts a session and points fds 0-2 at /dev/null;
- the pid file (createPidFile) is written once the listeners are open, when `pidfile`
  is set or the process daemonized (then /var/run/redis.pid if none is set); a failure
  is a warning, not a stop; it is removed at shutdown ("Removing the pid file.");
- `logfile <path>`: every line is appended by opening the file, writing and closing it
  again (serverLogRaw), so a log that logrotate moved away is recreated at the next
  line; `""` is standard output (/dev/null once daemonized, as in Redis). A file that
  cannot be opened at start-up stops the server with Redis's configuration error.
"""

from __future__ import annotations

import os

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


def supervised(mode: str) -> bool:
    """redisIsSupervised: whether a supervisor runs the process (it is then not
    daemonized). `auto` asks the environment, as Redis does."""
    if mode == 'auto':
        return 'UPSTART_JOB' in os.environ or 'NOTIFY_SOCKET' in os.environ
    return mode in ('upstart', 'systemd')


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
