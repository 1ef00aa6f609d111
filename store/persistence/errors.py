"""The error of a data file that cannot be loaded, shared by the AOF's loader, its upgrade
of an old single-file AOF and DEBUG LOADAOF without importing one another."""


class LoadError(Exception):
    """An AOF that cannot be loaded: the manager logs the message and exits non-zero."""
