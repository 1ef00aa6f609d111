"""File steps every persistence writer shares: a renamed file is durable only once its
directory is fsynced, and a temp file is removed quietly when a save fails."""

import os


def fsync_dir(path: str) -> None:
    """fsync the directory `path`, making the renames in it durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def install(tmp: str, path: str) -> None:
    """Rename a finished, fsynced temp file over `path`, and make the rename durable."""
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(os.path.abspath(path)))


def remove(path: str) -> None:
    """Delete a file if it is there."""
    try:
        os.unlink(path)
    except OSError:
        pass
