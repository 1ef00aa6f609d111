"""Crash reports (store/crash.py): a fatal signal, DEBUG SEGFAULT, DEBUG PANIC and DEBUG ASSERT
write Redis's bug report to the log, then the process dies as redis-server dies: by the
signal, or with status 1 under use-exit-on-panic."""

import os
import signal

import pytest
import redis

from conftest import spawn_store, stop


def _crash(*args, action):
    proc, port = spawn_store('--enable-debug-command', 'yes', *args)
    try:
        r = redis.Redis(port=port)
        r.set('k', 'v')
        action(proc, r)
        proc.wait(30)
        return proc.returncode, proc.stdout.read()
    finally:
        stop(proc)


def _debug(*words):
    def action(proc, r):
        with pytest.raises(redis.ConnectionError):
            r.execute_command('DEBUG', *words)

    return action


def _report_parts(log):
    start = log.index('=== REDIS BUG REPORT START: Cut & paste starting from here ===')
    end = log.index('=== REDIS BUG REPORT END. Make sure to include from START to END. ===')
    return log[start:end]


def test_sigabrt_writes_the_report_and_dies_by_the_signal():
    code, log = _crash(action=lambda proc, r: os.kill(proc.pid, signal.SIGABRT))
    assert code == -signal.SIGABRT
    report = _report_parts(log)
    assert 'Redis 7.0.15 crashed by signal: 6, si_code: 0' in report
    assert '------ STACK TRACE ------' in report
    assert '------ INFO OUTPUT ------' in report and 'redis_version:7.0.15' in report
    assert '------ CLIENT LIST OUTPUT ------' in report
    assert 'sanitize-dump-payload no' in report  # CONFIG DEBUG OUTPUT


def test_debug_segfault_reports_a_sigsegv_and_dies_by_it():
    code, log = _crash(action=_debug('SEGFAULT'))
    assert code == -signal.SIGSEGV
    report = _report_parts(log)
    assert 'crashed by signal: 11, si_code: 2' in report
    assert 'Accessing address: 0x' in report
    assert "argv[1]: '\"SEGFAULT\"'" in report  # the client that ran it


def test_debug_panic_aborts_and_exits_1_under_use_exit_on_panic():
    code, log = _crash(action=_debug('PANIC'))
    assert code == -signal.SIGABRT
    assert 'Guru Meditation: DEBUG PANIC called at Unix time ' in _report_parts(log)
    code, log = _crash('--use-exit-on-panic', 'yes', action=_debug('PANIC'))
    assert code == 1
    assert '!!! Software Failure. Press left mouse button to continue' in log


def test_debug_assert_logs_the_client_context():
    code, log = _crash('--use-exit-on-panic', 'yes', action=_debug('ASSERT'))
    assert code == 1
    report = _report_parts(log)
    assert '=== ASSERTION FAILED CLIENT CONTEXT ===' in report
    assert 'client->argv[1] = "ASSERT"' in report
    assert "==> debug.c:530 '1 == 2' is not true" in report


def test_no_report_without_crash_log_enabled():
    code, log = _crash('--crash-log-enabled', 'no', action=_debug('SEGFAULT'))
    assert code == -signal.SIGSEGV
    assert 'REDIS BUG REPORT' not in log


def test_crash_log_enabled_is_read_when_the_signal_comes():
    def action(proc, r):
        r.config_set('crash-log-enabled', 'no')
        os.kill(proc.pid, signal.SIGABRT)

    code, log = _crash(action=action)
    assert code == -signal.SIGABRT
    assert 'REDIS BUG REPORT' not in log

    def action(proc, r):
        r.config_set('crash-log-enabled', 'yes')
        os.kill(proc.pid, signal.SIGABRT)

    code, log = _crash('--crash-log-enabled', 'no', action=action)
    assert code == -signal.SIGABRT
    assert 'crashed by signal: 6' in log
