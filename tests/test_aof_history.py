"""The multi-part AOF's history files (aof-disable-auto-gc yes keeps them): the manifest
names each with its own sequence number, as redis-server's does, and turning auto gc back
on deletes them at once (updateAofAutoGCEnabled)."""

import os

from conftest import wait_until
from test_aof import Proc, manifest, wait_rewrite


def _history_then_gc(kind, dirpath):
    dirpath.mkdir()
    p = Proc(kind, dirpath, '--appendonly', 'yes', '--aof-disable-auto-gc', 'yes')
    try:
        for i in range(2):
            p.client.set('k', i)
            p.client.bgrewriteaof()
            wait_rewrite(p.client)
        kept = manifest(dirpath)
        p.client.config_set('aof-disable-auto-gc', 'no')
        after = manifest(dirpath)

        def files():
            return sorted(os.listdir(dirpath / 'appendonlydir'))

        wait_until(lambda: len(files()) == 3, 'the history files deleted')  # in the background
    finally:
        p.stop()
    return kept, after, files()


def test_history_files_keep_their_sequence_numbers_until_gc(tmp_path):
    ours = _history_then_gc('store', tmp_path / 'ours')
    theirs = _history_then_gc('redis', tmp_path / 'theirs')
    assert ours == theirs
    assert 'seq 1 type h' in theirs[0]
