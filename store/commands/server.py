"""Server commands (to be completed): FLUSHDB, FLUSHALL, DBSIZE, ..."""

from ..command_table import Command
from ..resp import OK


def flushall(c, args):
    c.ks.flushall()
    return OK


def flushdb(c, args):
    c.ks.flushdb(c.db)
    return OK


def dbsize(c, args):
    return c.ks.dbsize(c.db)


COMMANDS = [
    Command('flushall', flushall, -1, 'write', categories='@keyspace @write @slow @dangerous',
            group='server'),
    Command('flushdb', flushdb, -1, 'write', categories='@keyspace @write @slow @dangerous',
            group='server'),
    Command('dbsize', dbsize, 1, 'readonly fast', categories='@keyspace @read @fast',
            group='server'),
]
