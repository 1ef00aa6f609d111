"""Lua scripting: EVAL's scripts and FUNCTION's libraries run in an embedded Lua 5.1
(lupa), in the environment Redis 7.0 gives them.

- engine.py: one Lua state set up as Redis's, a script's run in it, its result and errors.
- redis_api.py: the `redis` table's functions: redis.call's checks and conversions both
  ways, redis.log, setresp, set_repl, ...
- run_context.py: a script's run (scriptRunCtx) and the checks before it starts.
- sandbox.lua: the script environment made inside the state (read-only globals, the
  error handler, the count hook, unpack as Redis patched it).
- libs/: bit, struct, cjson, cmsgpack and math.random as Redis links them in, a module
  each.
- eval.py: EVAL's script cache and shebang flags.
- busy.py: other clients served (-BUSY, SCRIPT KILL) while a long script runs.
- ldb.py: the Lua debugger (SCRIPT DEBUG YES|SYNC), a session around an EVAL.
"""

from __future__ import annotations

from typing import Any


def is_script_client(c: Any) -> bool:
    """Whether the connection `c` is the one scripts run their commands on (EVAL's or
    FUNCTION's: Redis's CLIENT_SCRIPT flag)."""
    server = c.server
    return c is server.scripts.engine.client or c is server.functions.engine.client


def set_disable_deny_scripts(server: Any, on: bool) -> None:
    """DEBUG SET-DISABLE-DENY-SCRIPTS: let scripts and functions run the commands flagged
    `noscript` (on) or refuse them again (Redis's server.script_disable_deny_script)."""
    server.scripts.engine.allow_noscript = server.functions.engine.allow_noscript = on
