"""oom-score-adj (store/oom_score.py): the process's /proc/<pid>/oom_score_adj follows the
score of its class (primary, replica), relative to the score it started with or absolute,
and goes back to that score when turned off, as redis-server sets it."""

import pytest
import redis

from conftest import spawn_redis, spawn_store, stop


def _score(pid):
    with open(f'/proc/{pid}/oom_score_adj') as f:
        return int(f.read())


@pytest.mark.parametrize('spawn', [spawn_store, spawn_redis], ids=['ours', 'redis'])
def test_oom_score_adj_follows_the_class_and_mode(spawn):
    proc, port = spawn()
    try:
        r = redis.Redis(port=port)
        base = _score(proc.pid)
        r.config_set('oom-score-adj-values', '10 20 30')
        assert _score(proc.pid) == base  # off: untouched
        r.config_set('oom-score-adj', 'yes')
        assert _score(proc.pid) == base + 10
        r.config_set('oom-score-adj-values', '15 20 30')
        assert _score(proc.pid) == base + 15
        r.replicaof('localhost', 1)
        assert _score(proc.pid) == base + 20
        r.replicaof('no', 'one')
        assert _score(proc.pid) == base + 15
        r.config_set('oom-score-adj', 'absolute')
        assert _score(proc.pid) == 15
        r.config_set('oom-score-adj', 'no')
        assert _score(proc.pid) == base
    finally:
        stop(proc)
