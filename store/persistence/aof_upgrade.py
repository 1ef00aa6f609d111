"""Starting from a Redis < 7.0 append-only file (aofUpgradePrepare): the single file
`dir`/`appendfilename` becomes the base of the multi-part layout.

Redis 7.0 takes the old file over when it exists in `dir` and the AOF directory does not,
or holds no manifest, or holds a manifest naming only that file as base (an upgrade that
stopped between writing the manifest and moving the file): the manifest naming it as base
1 is written first, then the file is moved into the directory, so an interruption at any
point is resumed at the next start.
"""

from __future__ import annotations

import os
from typing import Any

from .errors import LoadError


def upgrade_if_needed(aof: Any, m: Any) -> None:
    """Take over `dir`/`appendfilename` as the base of manifest `m` where Redis would."""
    name = aof.name
    old = os.path.join(aof.server.config['dir'], name)
    if not os.path.isfile(old):
        return
    interrupted = (
        m.base is not None
        and not m.incrs
        and m.base[0] == name
        and not os.path.isfile(aof.path(name))
    )
    if os.path.isdir(aof.dir_path()) and (m.base is not None or m.incrs) and not interrupted:
        return
    try:
        os.makedirs(aof.dir_path(), exist_ok=True)
    except OSError as e:
        msg = f"Can't open or create append-only dir {aof.dir_path()}: {e.strerror}"
        raise LoadError(msg) from None
    m.base = (name, 1)
    m.base_seq = 1
    aof._persist_manifest(m)
    try:
        os.rename(old, aof.path(name))
    except OSError as e:
        msg = (
            f'Error trying to move the old AOF file {name} into dir '
            f'{aof.server.config["appenddirname"]}: {e.strerror}'
        )
        raise LoadError(msg) from None
    aof.log(
        f'Successfully migrated an old-style AOF file ({name}) into the AOF directory '
        f'({aof.server.config["appenddirname"]}).'
    )
