"""processCommand's gates on the command a client sends, with a script's declared flags.

Redis refuses a command, before it runs, for what it would do: writes while writes are
refused (-MISCONF, -NOREPLICAS, -READONLY: is_write_command), anything not `stale` on a
replica cut off from its master with replica-serve-stale-data no (-MASTERDOWN:
is_denystale_command), and CLIENT PAUSE WRITE holds the commands that may replicate
(is_may_replicate_command). For EVAL, EVALSHA and FCALL (and their _RO forms) the flags
are the script's own when it declares them (getCommandFlags: its shebang, or its
function's), else the command's; EXEC answers for the commands it queued.

Only the gated path asks (Connection._execute_gated, ClientPause.holds), and only while a
refusal or a pause is in force: the hot path pays nothing for these.
"""

from collections.abc import Iterator
from typing import Any

from ..args import lower
from ..command_table import MAY_REPLICATE, Command

# The commands whose flags are their script's (the same set MONITOR feeds before running).
SCRIPT_CALLS = frozenset(('eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro'))


def _script_flags(server: Any, name: str, arg: bytes) -> frozenset[str] | None:
    """The flags a script declares (its shebang, or its function's), None when it has none
    or is not found (evalGetCommandFlags / fcallGetCommandFlags)."""
    if name.startswith('fcall'):
        fn = server.functions.ctx.functions.get(arg.lower())
        return None if fn is None else fn.flags
    if name.startswith('evalsha'):
        script = server.scripts.get(arg)
        return None if script is None else script.flags
    flags: frozenset[str] | None = server.scripts.flags_of(arg)
    return flags


def writes(server: Any, cmd: Command, shown: Command, args: list[bytes]) -> bool:
    """processCommand's is_write_command: the command (`shown`: its subcommand) writes, or
    runs a script whose flags do not say no-writes (getCommandFlags; an EVAL script
    without flags keeps EVAL's own, which do not write), or is the EXEC of a transaction
    that queued one (mstate.cmd_flags): EXEC is then refused (-EXECABORT) while writes
    are, even if the refusal began after the commands were queued."""
    if 'write' in shown.flags:
        return True
    name = cmd.name
    if name in SCRIPT_CALLS:
        flags = _script_flags(server, name, args[1])
        return flags is not None and 'no-writes' not in flags
    if name == 'exec':
        for queued in _queued(server):
            if writes(server, *queued):
                return True
    return False


def _queued(server: Any) -> Iterator[tuple[Command, Command, list[bytes]]]:
    """(command, shown, args) of each command the transaction of the client running EXEC
    (processCommand's client) queued, `shown` its subcommand when it has one."""
    for cmd, args in getattr(server.current_client, 'multi', None) or ():
        shown = cmd
        if cmd.subcommands and len(args) > 1:
            shown = cmd.subcommands.get(lower(args[1]), cmd)
        yield cmd, shown, args


E_MASTERDOWN = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."


def denies_stale(server: Any, cmd: Command, shown: Command, args: list[bytes]) -> bool:
    """processCommand's is_denystale_command, for a replica cut off from its master with
    replica-serve-stale-data no: the command (`shown`: its subcommand) is not `stale`,
    with a script's declared flags (getCommandFlags: `stale` only with allow-stale). An
    EVAL script without flags is refused too, as scriptPrepareForRun refuses it (the same
    error); a script or function not found goes on to its own error; EXEC is refused
    when a command it queued would be."""
    name = cmd.name
    if name in SCRIPT_CALLS:
        flags = _script_flags(server, name, args[1])
        if flags is not None:
            return 'allow-stale' not in flags
        if name.startswith('fcall'):
            return False  # not found
        return not name.startswith('evalsha') or server.scripts.get(args[1]) is not None
    if name == 'exec':
        for queued in _queued(server):
            if denies_stale(server, *queued):
                return True
        return False
    return 'stale' not in shown.flags


def may_replicate(server: Any, cmd: Command, args: list[bytes]) -> bool:
    """Would this command write or replicate (processCommand's is_may_replicate_command,
    with getCommandFlags' script flags)? A script that declares flags writes unless it
    says no-writes; one without (or not found) keeps its command's flags."""
    name = cmd.name
    if name in SCRIPT_CALLS:
        flags = _script_flags(server, name, args[1])
        if flags is not None:
            return 'no-writes' not in flags
        return name in MAY_REPLICATE
    if 'write' in cmd.flags or name in MAY_REPLICATE:
        return True
    if cmd.subcommands and len(args) > 1:
        sub = cmd.subcommands.get(args[1].decode('utf-8', 'replace').lower())
        return sub is not None and 'write' in sub.flags
    return False
