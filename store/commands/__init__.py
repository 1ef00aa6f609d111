"""Command families, one module each; the server merges their COMMANDS tables."""

from . import connection, expire, keys, server, strings, transactions

MODULES = [strings, keys, expire, transactions, connection, server]
