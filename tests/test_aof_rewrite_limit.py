"""aofRewriteLimited: after three background rewrites failed in a row, automatic rewrites
wait (1 minute, then 2, 4... up to an hour) and the wait is logged once, as redis-server
does (integration/aof-multi-part 'AOF will trigger limit when AOFRW fails many times')."""

import os
import signal
import subprocess

from conftest import wait_until
from test_aof import Proc, wait_rewrite

LIMIT = 'Background AOF rewrite has repeatedly failed and triggered the limit'


def _kill_child(p):
    def child():
        out = subprocess.run(['pgrep', '-P', str(p.proc.pid)], capture_output=True, text=True)
        return out.stdout.split()

    wait_until(child, 'the rewrite child')
    os.kill(int(child()[0]), signal.SIGKILL)


def _limited(kind, dirpath):
    dirpath.mkdir()
    p = Proc(kind, dirpath, '--appendonly', 'yes', '--rdb-key-save-delay', '10000000')
    try:
        p.client.set('k', 'v')
        for _ in range(3):
            p.client.bgrewriteaof()
            _kill_child(p)
            wait_rewrite(p.client)
        p.client.config_set('auto-aof-rewrite-percentage', 1)
        p.client.config_set('auto-aof-rewrite-min-size', '1kb')
        p.client.set('x', 'x' * 1024)
        wait_until(lambda: LIMIT in p.log(), 'the limit logged')
        info = p.client.info('persistence')
        return p.log().count(LIMIT), info['aof_rewrite_in_progress']
    finally:
        p.client.config_set('rdb-key-save-delay', 0)
        p.stop()


def test_repeated_rewrite_failures_limit_automatic_rewrites(tmp_path):
    ours = _limited('store', tmp_path / 'ours')
    theirs = _limited('redis', tmp_path / 'theirs')
    assert ours == theirs == (1, 0)
