"""The server core: start-up, pipelining, unknown commands, embedding."""

import socket
import subprocess
import sys

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from conftest import WAIT, spawn_store, stop
from rawconn import RawConn, pack


def test_ping_echo_and_unknown_command(r):
    assert r.ping() is True
    assert r.echo('hi') == b'hi'
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command('NOPE', 'a', 'b')
    assert str(e.value) == "unknown command 'NOPE', with args beginning with: 'a' 'b' "


def test_pipeline_many_commands_in_one_write(server):
    with RawConn(server.port) as c:
        c.send(b''.join(pack('SET', 'k', i) for i in range(100)) + pack('GET', 'k'))
        assert c.read_replies(101) == b'+OK\r\n' * 100 + b'$2\r\n99\r\n'


def test_inline_commands(server):
    with RawConn(server.port) as c:
        c.send(b'PING\r\nECHO "a b"\r\n\r\nSET x \'y z\'\nGET x\r\n')
        assert c.read_replies(4) == b'+PONG\r\n$3\r\na b\r\n+OK\r\n$3\r\ny z\r\n'


def test_cli_subprocess_ready_line_and_sigterm():
    proc, port = spawn_store()
    try:
        assert redis.Redis(port=port).ping()
    finally:
        stop(proc)
    out = proc.stdout.read()
    assert 'Ready to accept connections' in out
    assert proc.returncode == 0


def test_ready_line_is_logged_after_the_data_is_loaded(tmp_path):
    """Supervisors and Redis's test harness read "Ready to accept connections" as "serving":
    like redis-server, the line comes once the data set is loaded, so a command sent right
    after it sees every key instead of -LOADING."""
    proc, port = spawn_store('--dir', str(tmp_path))
    try:
        r = redis.Redis(port=port)
        r.mset({f'key:{i}': i for i in range(2000)})
        r.save()
    finally:
        stop(proc)
    # 500 us a key: a second of loading with the port already open
    proc, port = spawn_store('--dir', str(tmp_path), '--key-load-delay', '500')
    try:
        for line in proc.stdout:
            if 'Ready to accept connections' in line:
                break
        # no retries: redis-py retries -LOADING (a ConnectionError) by default
        assert redis.Redis(port=port, retry=Retry(NoBackoff(), 0)).dbsize() == 2000
    finally:
        stop(proc)


def test_always_show_logo_prints_redis_banner_with_the_pid():
    """Redis's harness waits for the banner's ` PID: <pid>` line (always-show-logo yes)."""
    proc, port = spawn_store('--always-show-logo', 'yes')
    try:
        banner = []
        for line in proc.stdout:
            if 'Ready to accept connections' in line:
                break
            banner.append(line.strip())
        assert any(line.endswith(f"_.-'    |     PID: {proc.pid}") for line in banner)
        assert any(line.endswith(f"_.-'|     Port: {port}") for line in banner)
    finally:
        stop(proc)


def test_sigterm_with_a_broken_log_stream():
    """A server whose stdout reader went away still stops on SIGTERM (its log lines, the
    shutdown one included, fail to write and are dropped)."""
    proc, port = spawn_store()
    proc.stdout.close()
    proc.terminate()
    assert proc.wait(WAIT) == 0


def test_port_in_use_exits_nonzero():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        s.listen()
        port = s.getsockname()[1]
        out = subprocess.run(
            [sys.executable, '-m', 'store', '--port', str(port)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert out.returncode != 0
    # in the log (stdout here), as redis-server logs it: Redis's test harness looks there
    # for 'Failed listening on port' to retry on another port
    assert 'Could not create server TCP listening socket' in out.stdout
    assert f'# Failed listening on port {port} (TCP), aborting.' in out.stdout


def test_unknown_option_fails_clearly():
    out = subprocess.run(
        [sys.executable, '-m', 'store', '--no-such-option', 'x'],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 1
    assert 'Bad directive or wrong number of arguments' in out.stderr
    assert 'no-such-option' in out.stderr


def test_embedded_context_manager_stops():
    from store import EmbeddedServer

    with EmbeddedServer(save='') as srv:
        port = srv.port
        assert srv.client().ping()
    with pytest.raises(redis.ConnectionError):  # refused at once: no retries
        redis.Redis(port=port, retry=Retry(NoBackoff(), 0)).ping()


def test_pytest_plugin_fixture(store_server):
    assert store_server.client().ping()
