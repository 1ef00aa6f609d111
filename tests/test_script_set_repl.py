"""redis.set_repl in scripts: the commands after it go to the AOF only (REPL_AOF), the
replicas only (REPL_REPLICA), both (REPL_ALL) or neither (REPL_NONE), as Redis's
scriptCall passes them to call() (unit/scripting 'Test selective replication of certain
Redis commands from Lua')."""

import redis

from conftest import WAIT, spawn_store, stop
from test_replication import start_replica

SCRIPT = """
redis.call('set', 'a', '1')
redis.set_repl(redis.REPL_NONE)
redis.call('set', 'b', '2')
redis.set_repl(redis.REPL_AOF)
redis.call('set', 'c', '3')
redis.set_repl(redis.REPL_REPLICA)
redis.call('set', 'e', '5')
redis.set_repl(redis.REPL_ALL)
redis.call('set', 'd', '4')
"""


def test_set_repl_sends_commands_to_the_aof_the_replicas_both_or_neither(tmp_path):
    data = tmp_path / 'master'
    data.mkdir()
    proc, port = spawn_store(
        '--appendonly', 'yes', '--dir', str(data), '--enable-debug-command', 'yes'
    )
    master = redis.Redis(port=port, protocol=2, decode_responses=True)
    try:
        rproc, replica = start_replica(port, tmp_path)
        try:
            master.eval(SCRIPT, 0)
            master.set('after', 'x')  # a command after the run goes to both again
            assert master.wait(1, WAIT * 1000) == 1
            keys = ('a', 'b', 'c', 'd', 'e', 'after')
            assert replica.mget(*keys) == ['1', None, None, '4', '5', 'x']
            assert master.mget(*keys) == ['1', '2', '3', '4', '5', 'x']
            master.execute_command('DEBUG', 'LOADAOF')
            assert master.mget(*keys) == ['1', None, '3', '4', None, 'x']
        finally:
            replica.close()
            stop(rproc)
    finally:
        master.close()
        stop(proc)
