"""oom-score-adj (store/oom_score.py): the process's /proc/<pid>/oom_score_adj follows the
score of its class (primary, replica), relative to the score it started with or absolute,
and goes back to that score when turned off, as redis-server sets it."""

import subprocess

import pytest
import redis

from conftest import spawn_redis, spawn_store, stop, wait_until


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


@pytest.mark.parametrize('spawn', [spawn_store, spawn_redis], ids=['ours', 'redis'])
def test_a_background_save_child_takes_the_third_score(spawn):
    proc, port = spawn()
    try:
        r = redis.Redis(port=port)
        base = _score(proc.pid)
        r.config_set('oom-score-adj-values', '10 20 30')
        r.config_set('oom-score-adj', 'yes')
        r.set('k', 'v')
        r.config_set('rdb-key-save-delay', 1000000)  # a second for the one key
        r.bgsave()
        out = subprocess.run(['pgrep', '-P', str(proc.pid)], capture_output=True, text=True)
        child = int(out.stdout.split()[0])
        wait_until(lambda: _score(child) == base + 30, "the child's score")  # Redis's child sets it
        assert _score(proc.pid) == base + 10
    finally:
        stop(proc)
