"""A process standing in for Redis's fork child while a background snapshot runs.

Redis makes BGSAVE, BGREWRITEAOF and a replica's payload in a forked child, and tools
and Redis's own tests deal with that child: they find it (`pgrep -P <server pid>`), kill
it to make a background save fail (the server then logs 'Background saving terminated by
signal 9', refuses writes with -MISCONF, opens a new AOF incr file for the next rewrite).
This server makes those snapshots itself, between commands (snapshot.py), so there is no
child doing the work; a `cat` reading a pipe from the server stands for it, for as long as
the snapshot runs. If it is killed, the snapshot fails as Redis's does when its child is
killed (the manager polls it from the cron); when the snapshot ends the pipe is closed
and the stand-in exits, and it exits too if the server dies (end of file on the pipe).
Starting one costs a fork and exec (a few ms), once per background snapshot.
"""

from __future__ import annotations

import subprocess


class ChildStandIn:
    """The stand-in process of one background snapshot."""

    def __init__(self) -> None:
        try:
            self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                ['cat'],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        except OSError:
            self.proc = None  # no stand-in: the snapshot runs all the same

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc is not None else 0

    def kill(self, sig: int) -> None:
        """Signal the stand-in (killRDBChild's SIGUSR1): it dies of it, as a child would."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def killed_by(self) -> int:
        """The signal that ended the stand-in while the snapshot ran, or 0."""
        proc = self.proc
        if proc is None or proc.poll() is None:
            return 0
        return -proc.returncode if proc.returncode < 0 else 0

    def end(self) -> None:
        """The snapshot is over: the stand-in exits (end of file) and is reaped."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(1)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
