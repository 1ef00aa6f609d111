"""SHUTDOWN and the shutdown signals as Redis 7.0 runs them (store/shutdown.py): a signal is
acted on by the cron (DEBUG PAUSE-CRON holds it, SHUTDOWN ABORT cancels it), a failed final
save keeps the server running, a second SIGINT during the final save exits at once."""

import os
import signal
import subprocess
import time

import pytest
import redis

from conftest import spawn_redis, spawn_store, stop, wait_until


def _log_until(proc, text, lines):
    """Read the server's log (its stdout) until a line holds `text`."""
    while True:
        line = proc.stdout.readline()
        assert line, f'{text!r} never logged; log: {"".join(lines)}'
        lines.append(line)
        if text in line:
            return


def test_failed_save_keeps_the_server_running(tmp_path):
    proc, port = spawn_store('--dir', str(tmp_path), '--save', '900 1')
    lines = []
    try:
        r = redis.Redis(port=port)
        r.set('k', 'v')
        (tmp_path / 'dump.rdb').mkdir()  # the final save's rename fails
        os.kill(proc.pid, signal.SIGINT)
        _log_until(proc, "Error trying to save the DB, can't exit.", lines)
        _log_until(proc, 'Errors trying to shut down the server.', lines)
        assert r.ping()
        with pytest.raises(redis.ResponseError, match='^Errors trying to SHUTDOWN. Check logs.$'):
            r.shutdown()
        assert r.ping()
        with pytest.raises(redis.ConnectionError):
            r.execute_command('SHUTDOWN', 'NOSAVE')
        _log_until(proc, 'Redis is now ready to exit, bye bye...', lines)
        assert proc.wait(10) == 0
    finally:
        stop(proc)


@pytest.mark.parametrize('spawn', [spawn_store, spawn_redis], ids=['ours', 'redis'])
def test_shutdown_abort_cancels_a_signal_not_acted_on(spawn):
    proc, port = spawn('--enable-debug-command', 'yes')
    try:
        r = redis.Redis(port=port)
        with pytest.raises(redis.ResponseError, match='^No shutdown in progress.$'):
            r.execute_command('SHUTDOWN', 'ABORT')
        r.execute_command('DEBUG', 'PAUSE-CRON', 1)
        os.kill(proc.pid, signal.SIGTERM)
        time.sleep(0.2)
        assert r.execute_command('SHUTDOWN', 'ABORT') is True  # +OK, as redis-py reads it
        r.execute_command('DEBUG', 'PAUSE-CRON', 0)
        time.sleep(0.3)  # a few cron runs: the signal was forgotten
        assert r.ping()
        assert proc.poll() is None
        with pytest.raises(redis.ResponseError, match='syntax error'):
            r.execute_command('SHUTDOWN', 'ABORT', 'NOSAVE')
    finally:
        stop(proc)


def test_second_sigint_during_the_final_save_exits_and_removes_the_temp_file(tmp_path):
    proc, port = spawn_store('--dir', str(tmp_path), '--save', '900 1')
    lines = []
    try:
        r = redis.Redis(port=port)
        for i in range(20):
            r.set(i, i)
        r.config_set('rdb-key-save-delay', 100000)  # 0.1 s a key: the save takes 2 s
        os.kill(proc.pid, signal.SIGINT)
        temp = tmp_path / f'temp-{proc.pid}.rdb'
        wait_until(temp.exists, 'the final save to start')
        os.kill(proc.pid, signal.SIGINT)
        _log_until(proc, 'You insist... exiting now.', lines)
        assert proc.wait(10) == 1
        assert not temp.exists()
    finally:
        stop(proc)


def test_shutdown_with_a_lagging_replica_waits_then_reports_it():
    """A replica stopped (SIGSTOP) cannot acknowledge: SHUTDOWN blocks its client, INFO
    shows the time left, and after shutdown-timeout the master logs the lagging replica."""
    master, mport = spawn_store()
    replica, rport = spawn_store()
    lines = []
    try:
        m, rep = redis.Redis(port=mport), redis.Redis(port=rport)
        m.config_set('shutdown-timeout', 2)
        rep.replicaof('127.0.0.1', mport)
        wait_until(lambda: rep.info('replication')['master_link_status'] == 'up', 'sync')
        m.set('k', 1)
        wait_until(lambda: rep.get('k') == b'1', 'k replicated')
        os.kill(replica.pid, signal.SIGSTOP)
        try:
            m.incr('k')
            waiting = redis.Redis(port=mport)
            conn = waiting.connection_pool.get_connection()
            conn.send_command('SHUTDOWN')
            wait_until(lambda: 'shutdown_in_milliseconds' in m.info('server'), 'the wait')
            assert m.info('clients')['blocked_clients'] == 1
            _log_until(master, 'Lagging replica', lines)
            _log_until(master, '0 of 1 replicas are in sync when shutting down.', lines)
            _log_until(master, 'Redis is now ready to exit, bye bye...', lines)
            assert master.wait(10) == 0
        finally:
            os.kill(replica.pid, signal.SIGCONT)
    finally:
        stop(master)
        stop(replica)


def test_shutdown_on_sigterm_flags_apply_to_the_signal(tmp_path):
    """shutdown-on-sigterm nosave: no final save though save points are set (and the
    save would fail); shutdown-on-sigint save: a final save without save points."""
    proc, port = spawn_store('--dir', str(tmp_path), '--save', '900 1')
    lines = []
    try:
        r = redis.Redis(port=port)
        r.set('k', 'v')
        (tmp_path / 'dump.rdb').mkdir()  # a save would fail
        r.config_set('shutdown-on-sigterm', 'nosave')
        os.kill(proc.pid, signal.SIGTERM)
        _log_until(proc, 'Redis is now ready to exit, bye bye...', lines)
        assert proc.wait(10) == 0
        assert not any('Saving the final RDB snapshot' in line for line in lines)
    finally:
        stop(proc)
    (tmp_path / 'dump.rdb').rmdir()
    proc, port = spawn_store('--dir', str(tmp_path), '--shutdown-on-sigint', 'save')
    lines = []
    try:
        redis.Redis(port=port).set('k', 'v')
        os.kill(proc.pid, signal.SIGINT)
        _log_until(proc, 'Saving the final RDB snapshot before exiting.', lines)
        assert proc.wait(10) == 0
        assert (tmp_path / 'dump.rdb').is_file()
    finally:
        stop(proc)


@pytest.mark.parametrize('spawn', [spawn_store, spawn_redis], ids=['ours', 'redis'])
def test_shutdown_removes_the_background_save_temp_file(spawn, tmp_path):
    """A BGSAVE writes temp-<child pid>.rdb; SHUTDOWN NOSAVE kills it and removes the file."""
    proc, port = spawn('--dir', str(tmp_path))
    try:
        r = redis.Redis(port=port)
        for i in range(20):
            r.set(i, i)
        r.config_set('rdb-key-save-delay', 100000)  # 2 s for the 20 keys
        r.bgsave()
        out = subprocess.run(['pgrep', '-P', str(proc.pid)], capture_output=True, text=True)
        temp = tmp_path / f'temp-{int(out.stdout.split()[0])}.rdb'
        wait_until(temp.exists, 'the temp file')
        with pytest.raises(redis.ConnectionError):
            r.execute_command('SHUTDOWN', 'NOSAVE')
        proc.wait(10)
        assert not temp.exists()
    finally:
        stop(proc)
