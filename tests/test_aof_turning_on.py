"""CONFIG SET appendonly yes at run time whose first rewrite fails: the temp incr file
that took the writes since that rewrite's snapshot is removed (aofDelTempIncrAofFile, with
its log line), the writes queued meanwhile are dropped, and the next rewrite makes the
base and the first incr file; reloading the AOF then gives the data set as it was, each
write once (integration/aof-multi-part 'AOF will open a temporary INCR AOF ...')."""

from conftest import wait_until
from test_aof import Proc, manifest, wait_rewrite
from test_aof_rewrite_limit import _kill_child

REMOVED = 'Removing the temp incr aof file temp-appendonly.aof.incr in the background'


def _turn_on_after_a_failure(kind, dirpath):
    dirpath.mkdir()
    p = Proc(kind, dirpath, '--rdb-key-save-delay', '10000000')
    c = p.client
    try:
        c.incr('n')
        c.config_set('appendonly', 'yes')
        c.incr('n')  # in the temp incr file of the rewrite about to fail
        _kill_child(p)
        wait_until(
            lambda: c.info('persistence')['aof_rewrites_consecutive_failures'],
            'the rewrite to fail',
        )
        c.incr('n')  # no rewrite runs (or a new one has started): in its snapshot
        c.config_set('rdb-key-save-delay', 0)
        wait_until(lambda: c.info('persistence')['aof_rewrites'] >= 1, 'a rewrite to succeed')
        wait_rewrite(c)
        c.incr('n')
        before = c.get('n')
        c.execute_command('DEBUG', 'LOADAOF')
        return p.log().count(REMOVED), manifest(dirpath), before, c.get('n')
    finally:
        p.stop()


def test_a_failed_first_rewrite_drops_its_temp_incr_file(tmp_path):
    ours = _turn_on_after_a_failure('store', tmp_path / 'ours')
    theirs = _turn_on_after_a_failure('redis', tmp_path / 'theirs')
    assert ours == theirs
    assert theirs[0] == 1 and theirs[2] == theirs[3] == b'4'
