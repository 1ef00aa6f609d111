"""The ACL LOG (acl.c's addACLLogEntry): the newest denials first, similar ones merged.

A denial (a command, key or channel no selector allows, or a failed AUTH) is an entry
with its reason, context (toplevel, multi, lua), object, user and the client's info
line; one like an entry among the newest ten, of the last minute, adds to its count and
moves it to the front. `acllog-max-len` entries are kept. A part of Acl (store/acl.py),
as a base class of it.
"""

from __future__ import annotations

from typing import Any

from .clock import now_ms

LOG_GROUPING_MS = 60000  # ACL_LOG_GROUPING_MAX_TIME_DELTA


class AclLog:
    """Acl's log: `log`, newest first (ACL LOG lists it, ACL LOG RESET empties it)."""

    server: Any
    log: list[dict[str, Any]]

    def add_log(
        self,
        conn: Any,
        reason: int,
        context: str,
        obj: bytes,
        username: bytes | None = None,
        cmd: Any = None,
    ) -> None:
        """addACLLogEntry: a denial, merged into a similar one of the last minute among
        the newest ten. The client info names `cmd`, the command denied, as its last
        command (as Redis's, which records a command when it looks it up)."""
        if cmd is not None:
            conn.last_cmd, conn.last_sub = cmd.container or cmd, cmd

        entry = {
            'count': 1,
            'reason': reason,
            'context': context,
            'object': obj,
            'username': username if username is not None else conn.user.name,
            'ctime': now_ms(),
            'cinfo': self.server.client_info(conn),
        }
        for i, old in enumerate(self.log[:10]):
            if (
                old['reason'] == reason
                and old['context'] == context
                and abs(old['ctime'] - entry['ctime']) <= LOG_GROUPING_MS
                and old['object'] == obj
                and old['username'] == entry['username']
            ):
                old['cinfo'], old['ctime'] = entry['cinfo'], entry['ctime']
                old['count'] += 1
                self.log.insert(0, self.log.pop(i))
                return
        self.log.insert(0, entry)
        del self.log[self.server.config['acllog-max-len'] :]
