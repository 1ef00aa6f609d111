"""Background rewrites started from a transaction, and the fork counter: CONFIG SET
appendonly yes inside MULTI schedules the rewrite (startAppendOnly's in_exec case, with
its log line) and it runs after EXEC; every background snapshot counts in INFO's
total_forks, as redis-server counts its forks."""

from conftest import wait_until
from test_aof import Proc, wait_rewrite

SCHEDULED = (
    'AOF was enabled during a transaction. An AOF background was scheduled to start when possible.'
)


def _forks(client):
    return client.info('stats')['total_forks']


def _run(kind, dirpath):
    dirpath.mkdir()
    p = Proc(kind, dirpath)
    try:
        before = _forks(p.client)
        pipe = p.client.pipeline(transaction=True)
        pipe.set('foo', 'bar')
        pipe.config_set('appendonly', 'yes')
        pipe.execute()
        wait_until(lambda: _forks(p.client) > before, 'the rewrite to start')
        wait_rewrite(p.client)
        forks = _forks(p.client)
        p.client.bgsave()
        wait_until(lambda: not p.client.info('persistence')['rdb_bgsave_in_progress'], 'bgsave')
        return SCHEDULED in p.log(), _forks(p.client) - forks, p.client.get('foo')
    finally:
        p.stop()


def test_appendonly_in_exec_schedules_the_rewrite_and_forks_are_counted(tmp_path):
    ours = _run('store', tmp_path / 'ours')
    theirs = _run('redis', tmp_path / 'theirs')
    assert ours == theirs == (True, 1, b'bar')


def test_resetstat_zeroes_total_forks(r):
    before = _forks(r)
    r.bgsave()
    wait_until(lambda: not r.info()['rdb_bgsave_in_progress'], 'bgsave')
    assert _forks(r) == before + 1
    r.config_resetstat()
    assert _forks(r) == 0
