"""INFO's copy-on-write fields for a background save: what the snapshot serializes early
because commands reached keys it had not written yet stands for the pages a fork child
copies (current_cow_size while it runs, rdb_last_cow_size after), and current_fork_perc
is the share of keys written (integration/rdb 'Test child sending info')."""

from conftest import wait_until


def _info(r):
    return r.info('persistence')


def test_writes_during_bgsave_are_reported_as_copy_on_write(r):
    info = _info(r)
    assert (info['current_cow_size'], info['current_fork_perc']) == (0, 0.0)
    r.mset({f'key{i}': 'A' * 500 for i in range(2000)})
    r.config_set('rdb-key-save-delay', 1000)  # 1 ms a key: the save lasts a while
    try:
        r.bgsave()
        wait_until(lambda: _info(r)['current_save_keys_processed'] > 0, 'the save to start')
        for i in range(1990, 2000):  # the last keys: not written yet
            r.setrange(f'key{i}', 0, 'B' * 500)
        info = _info(r)
        assert info['rdb_bgsave_in_progress'] == 1
        assert info['current_cow_size'] >= 10 * 500
        assert info['current_fork_perc'] > 0
        cow = info['current_cow_size']
    finally:
        r.config_set('rdb-key-save-delay', 0)
    wait_until(lambda: not _info(r)['rdb_bgsave_in_progress'], 'the save to end')
    info = _info(r)
    assert info['rdb_last_cow_size'] >= cow
    assert (info['current_cow_size'], info['current_fork_perc']) == (0, 0.0)
