"""redis-cli 7.0 against our server: one-shot commands, a session piped through stdin,
--raw INFO, and an interactive start-up (a pty), where redis-cli reads COMMAND DOCS to
build its help and hints."""

import os
import pty
import select
import signal
import time

from conftest import WAIT, redis_cli


def test_one_shot_commands(server, r):
    port = server.port
    assert redis_cli(port, 'PING') == 'PONG\n'
    assert redis_cli(port, 'SET', 'k', 'hello world') == 'OK\n'
    assert redis_cli(port, 'GET', 'k') == 'hello world\n'
    assert redis_cli(port, 'DBSIZE') == '1\n'
    assert redis_cli(port, 'CONFIG', 'GET', 'maxmemory') == 'maxmemory\n0\n'
    assert redis_cli(port, 'CONFIG', 'SET', 'nosuch', '1') == (
        "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\n\n"
    )
    assert int(redis_cli(port, 'COMMAND', 'COUNT')) > 20
    before = int(time.time())
    seconds, micros = redis_cli(port, 'TIME').split()
    assert before <= int(seconds) <= time.time()
    assert redis_cli(port, 'FLUSHALL') == 'OK\n'
    assert redis_cli(port, 'DBSIZE') == '0\n'


def test_raw_info_keyspace(server, r):
    r.set('a', '1')
    r.set('b', '2', ex=100)
    out = redis_cli(server.port, '--raw', 'INFO', 'keyspace')
    assert out.replace('\r', '').splitlines()[:2] == [
        '# Keyspace',
        'db0:keys=2,expires=1,avg_ttl=' + out.split('avg_ttl=')[1].split()[0],
    ]
    info = redis_cli(server.port, 'INFO', 'server')
    assert 'redis_version:7.0.15' in info and f'tcp_port:{server.port}' in info


def test_piped_session(server, r):
    session = (
        'SET counter 10\n'
        'GET counter\n'
        'CONFIG GET hz\n'
        'SELECT 1\n'
        'SET other x\n'
        'DBSIZE\n'
        'SWAPDB 0 1\n'
        'DBSIZE\n'
        'FLUSHALL\n'
    )
    out = redis_cli(server.port, input=session)
    assert out.splitlines() == ['OK', '10', 'hz', '10', 'OK', 'OK', '1', 'OK', '1', 'OK']


def _interactive(port, lines, timeout=WAIT):
    """Drive redis-cli on a pty (TERM=dumb keeps linenoise simple); return its output."""
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.environ['TERM'] = 'dumb'
        os.execvp('redis-cli', ['redis-cli', '-p', str(port)])
    out = b''

    def read_until(token):
        nonlocal out
        deadline = time.monotonic() + timeout
        while token not in out and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    break

    try:
        prompt = f'127.0.0.1:{port}> '.encode()
        read_until(prompt)
        for line, expect in lines:
            start = len(out)
            os.write(fd, line.encode() + b'\r')
            deadline = time.monotonic() + timeout
            while expect.encode() not in out[start:] and time.monotonic() < deadline:
                read_until(expect.encode())
        os.write(fd, b'exit\r')
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return out.decode('utf-8', 'replace'), os.waitstatus_to_exitcode(status)
            read_until(b'\0')
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return out.decode('utf-8', 'replace'), None
    finally:
        os.close(fd)


def test_interactive_startup_reads_command_docs(server, r):
    r.config_resetstat()
    out, code = _interactive(server.port, [('PING', 'PONG'), ('help config set', 'group')])
    assert code == 0
    assert 'PONG' in out
    # The help text comes from our COMMAND DOCS reply.
    assert 'CONFIG SET' in out and 'parameter value [parameter value ...]' in out
    assert 'Set configuration parameters to the given values' in out
    assert 'since:\x1b[0m 2.0.0' in out or 'since: 2.0.0' in out
    assert 'ERR' not in out and 'rror' not in out
    stats = r.info('commandstats')
    assert stats['cmdstat_command|docs'] == {
        'calls': 1,
        'usec': stats['cmdstat_command|docs']['usec'],
        'usec_per_call': stats['cmdstat_command|docs']['usec_per_call'],
        'rejected_calls': 0,
        'failed_calls': 0,
    }
