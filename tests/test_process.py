"""The process as operators run redis-server (store/process.py): Debian's stock redis.conf
(daemonized, a pid file, a log file, a unix socket), the log's level and its rotation.
Each test runs this server and Debian's redis-server the same way and expects the same."""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading

import pytest
import redis

from conftest import WAIT, free_port, spawn_redis, spawn_store, stop, wait_until

STOCK_CONF = '/etc/redis/redis.conf'  # installed with Debian's redis-server


def command(kind):
    if kind == 'store':
        return [sys.executable, '-m', 'store']
    return [shutil.which('redis-server')]


def stock_conf(tmp_path):
    """Debian's redis.conf with only the port, the directory, the pid file, the log file
    and the (commented out) unix socket pointed at `tmp_path`."""
    with open(STOCK_CONF) as f:
        text = f.read()
    paths = {
        'port': str(free_port()),
        'dir': str(tmp_path),
        'pidfile': str(tmp_path / 'server.pid'),
        'logfile': str(tmp_path / 'server.log'),
    }
    for name, value in paths.items():
        text, n = re.subn(rf'^{name} .*$', f'{name} {value}', text, flags=re.M)
        assert n == 1, name
    sock = tmp_path / 'server.sock'
    text, n = re.subn(r'^# unixsocket /.*$', f'unixsocket {sock}', text, flags=re.M)
    assert n == 1
    assert re.search(r'^daemonize yes$', text, flags=re.M)
    conf = tmp_path / 'redis.conf'
    conf.write_text(text)
    return conf, paths, sock


@pytest.mark.parametrize('kind', ['store', 'redis'])
def test_debians_stock_config_runs_the_server_as_a_daemon(kind, tmp_path):
    """The command returns at once with nothing on its output (the daemon goes on); the
    pid file holds the daemon's pid, the log file its lines, the unix socket answers; a
    SHUTDOWN removes the pid file and the socket, and says so in the log."""
    conf, paths, sock = stock_conf(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ('NOTIFY_SOCKET', 'UPSTART_JOB')}
    done = subprocess.run(
        [*command(kind), str(conf)], capture_output=True, text=True, timeout=WAIT, env=env
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, '', '')
    pidfile, log = tmp_path / 'server.pid', tmp_path / 'server.log'
    wait_until(lambda: pidfile.exists() and pidfile.read_text().endswith('\n'), 'the pid file')
    pid = int(pidfile.read_text())
    try:
        client = redis.Redis(unix_socket_path=str(sock), decode_responses=True)
        wait_until(lambda: 'Ready to accept connections' in log.read_text(), 'the start')
        assert client.ping()
        assert client.info('server')['process_id'] == pid
        assert client.config_get('daemonize') == {'daemonize': 'yes'}
        client.shutdown()
        wait_until(lambda: 'ready to exit, bye bye' in log.read_text(), 'the shutdown')
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        raise
    lines = [line.split(' ', 6)[-1] for line in log.read_text().splitlines()]
    assert all(line.startswith(f'{pid}:') for line in log.read_text().splitlines())
    assert f'The server is now ready to accept connections at {sock}' in lines
    removed = [line for line in lines if line.startswith('Removing the')]
    assert removed == ['Removing the pid file.', 'Removing the unix socket file.']
    assert not pidfile.exists() and not sock.exists()


@pytest.mark.parametrize('kind', ['store', 'redis'])
def test_loglevel_warning_keeps_only_warnings(kind, tmp_path):
    log = tmp_path / 'server.log'
    spawn = spawn_store if kind == 'store' else spawn_redis
    proc, port = spawn('--loglevel', 'warning', '--logfile', str(log))
    try:
        client = redis.Redis(port=port)
        client.config_set('loglevel', 'notice')
        client.save()  # "DB saved on disk", a notice
        client.config_set('loglevel', 'warning')
        client.save()
        client.shutdown(nosave=True)
        proc.wait(WAIT)
    finally:
        stop(proc)
    text = log.read_text()
    marks = {line.split(' ', 6)[5] for line in text.splitlines()}
    assert text.count('DB saved on disk') == 1
    assert marks == {'#', '*'}  # the one notice line, the rest warnings
    assert 'User requested shutdown...' in text


@pytest.mark.parametrize('kind', ['store', 'redis'])
def test_a_log_file_moved_away_is_written_anew(kind, tmp_path):
    """As logrotate's default (create) rotation moves the file: the next line goes to a
    new file at the configured path, not after the moved file's lines."""
    log = tmp_path / 'server.log'
    spawn = spawn_store if kind == 'store' else spawn_redis
    proc, port = spawn('--logfile', str(log))
    try:
        client = redis.Redis(port=port)
        wait_until(lambda: 'Ready to accept connections' in log.read_text(), 'the start')
        log.rename(tmp_path / 'server.log.1')
        client.save()
        assert 'DB saved on disk' in log.read_text()
        assert 'DB saved on disk' not in (tmp_path / 'server.log.1').read_text()
    finally:
        stop(proc)


@pytest.mark.parametrize('mode', ['systemd', 'auto'])
@pytest.mark.parametrize('kind', ['store', 'redis'])
def test_systemd_hears_the_servers_state(kind, mode, tmp_path):
    """Under `supervised systemd` (or `auto` with NOTIFY_SOCKET set, as Debian's
    redis-server.service runs it, Type=notify) the server sends systemd its states through
    $NOTIFY_SOCKET, in Redis's words, and is not daemonized even with `daemonize yes`."""
    path = str(tmp_path / 'notify')
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(path)
    listener.settimeout(WAIT)
    port, log = free_port(), tmp_path / 'server.log'
    env = {k: v for k, v in os.environ.items() if k != 'UPSTART_JOB'}
    env['NOTIFY_SOCKET'] = path
    proc = subprocess.Popen(
        [*command(kind), '--port', str(port), '--bind', '127.0.0.1', '--dir', str(tmp_path)]
        + ['--save', '3600 1', '--supervised', mode, '--daemonize', 'yes']
        + ['--logfile', str(log)],
        env=env,
    )
    try:
        states = [listener.recv(1024).decode() for _ in range(3)]
        assert states == [
            'STATUS=Redis is loading...\n',
            'STATUS=Ready to accept connections\n',
            'READY=1\n',
        ]
        assert proc.poll() is None  # not daemonized: systemd's process is the server
        client = redis.Redis(port=port)
        client.shutdown()
        states = [listener.recv(1024).decode() for _ in range(2)]
        assert states == ['STOPPING=1\n', 'STATUS=Saving the final RDB snapshot\n']
        assert proc.wait(WAIT) == 0
    finally:
        listener.close()
        stop(proc)
    assert (
        'Supervised by systemd. Please make sure you set appropriate values for '
        'TimeoutStartSec and TimeoutStopSec in your service unit.'
    ) in log.read_text()


@pytest.mark.parametrize('kind', ['store', 'redis'])
def test_upstart_sees_the_server_stop_itself_once(kind, tmp_path):
    """supervised upstart: the server stops itself (SIGSTOP) before it starts, upstart's
    sign of readiness, and goes on when continued."""
    port, log = free_port(), tmp_path / 'server.log'
    env = {k: v for k, v in os.environ.items() if k != 'NOTIFY_SOCKET'}
    env['UPSTART_JOB'] = 'redis-server'
    proc = subprocess.Popen(
        [*command(kind), '--port', str(port), '--bind', '127.0.0.1', '--save', '']
        + ['--supervised', 'upstart', '--logfile', str(log), '--dir', str(tmp_path)],
        env=env,
    )
    try:

        def state():
            with open(f'/proc/{proc.pid}/stat') as f:
                return f.read().rsplit(')', 1)[1].split()[0]

        wait_until(lambda: state() == 'T', 'the server to stop itself')
        assert 'supervised by upstart, will stop to signal readiness.' in log.read_text()
        os.kill(proc.pid, signal.SIGCONT)
        wait_until(lambda: 'Ready to accept connections' in log.read_text(), 'the start')
        assert redis.Redis(port=port).ping()
    finally:
        stop(proc)


@pytest.fixture
def dev_log():
    """/dev/log, where glibc's syslog() sends its datagrams, bound by the test and read as
    a syslog daemon reads it, at once (a sender blocks once 10 datagrams wait: the
    kernel's max_dgram_qlen). Yields a function returning (priority, ident, pid, message)
    for each datagram so far."""
    if os.path.exists('/dev/log'):
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as probe:
                probe.connect('/dev/log')
            pytest.skip("/dev/log is the machine's syslog daemon's: the test would take its lines")
        except ConnectionRefusedError:
            os.unlink('/dev/log')  # left by an earlier run that was killed
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        listener.bind('/dev/log')
    except OSError as e:
        pytest.skip(f'/dev/log cannot be made here: {e}')
    listener.settimeout(0.1)
    datagrams, done = [], threading.Event()

    def read():
        while not done.is_set():
            try:
                datagrams.append(listener.recv(1 << 16).decode())
            except TimeoutError:
                pass

    def received():
        lines = []
        for data in datagrams:
            m = re.fullmatch(
                r'<(\d+)>\w{3} [ \d]\d \d\d:\d\d:\d\d ([^:\[]+)(?:\[(\d+)\])?: (.*)', data, re.S
            )
            assert m, data
            lines.append((int(m[1]), m[2], m[3] and int(m[3]), m[4]))
        return lines

    reader = threading.Thread(target=read)
    reader.start()
    try:
        yield received
    finally:
        done.set()
        reader.join()
        listener.close()
        os.unlink('/dev/log')


LOG_USER, LOG_LOCAL3 = 1, 19  # syslog's facility codes
SEVERITY = {'#': 4, '*': 5, '-': 6, '.': 7}  # warning, notice, info, debug


@pytest.mark.parametrize('kind', ['store', 'redis'])
def test_syslog_gets_every_line_the_log_gets(kind, dev_log, tmp_path):
    """syslog-enabled: each line of the log also goes to syslog, without its prefix, at
    its level's severity; the start-up lines before the server exists ('C') with syslog's
    defaults (facility user, no pid), the rest under syslog-ident with the pid, in
    syslog-facility."""
    log = tmp_path / 'server.log'
    spawn = spawn_store if kind == 'store' else spawn_redis
    proc, port = spawn(
        *('--logfile', str(log), '--loglevel', 'verbose', '--syslog-enabled', 'yes'),
        *('--syslog-ident', 'cache7', '--syslog-facility', 'local3'),
    )
    try:
        client = redis.Redis(port=port)
        client.save()
        client.shutdown(nosave=True)
        proc.wait(WAIT)
    finally:
        stop(proc)
    lines = [line.split(' ', 6) for line in log.read_text().splitlines()]
    expected = []
    for pid_role, _, _, _, _, mark, msg in lines:
        pid, role = pid_role.split(':')
        if role == 'C':  # syslog's defaults: the program's name, no pid
            expected.append((LOG_USER * 8 + SEVERITY[mark], None, msg))
        else:
            expected.append((LOG_LOCAL3 * 8 + SEVERITY[mark], ('cache7', int(pid)), msg))
    received = dev_log()
    got = [(pri, (ident, pid) if pid else None, msg) for pri, ident, pid, msg in received]
    assert got == expected
    program = {'store': 'store', 'redis': 'redis-server'}[kind]
    assert {ident for _, ident, pid, _ in received if not pid} == {program}
    messages = [msg for _, _, msg in got]
    for msg in ('Server initialized', 'DB saved on disk', 'Redis is now ready to exit, bye bye...'):
        assert msg in messages


@pytest.mark.parametrize('kind', ['store', 'redis'])
def test_the_watchdog_reports_a_blocked_loop_and_goes_on(kind, tmp_path):
    """watchdog-period: a loop blocked longer than the period (DEBUG SLEEP) gets Redis's
    watchdog report in the log, with the stack it is stuck in, and goes on serving; at 0
    nothing is armed."""
    log = tmp_path / 'server.log'
    spawn = spawn_store if kind == 'store' else spawn_redis
    proc, port = spawn('--logfile', str(log), '--enable-debug-command', 'yes')
    try:
        client = redis.Redis(port=port)
        client.config_set('watchdog-period', '200')
        client.execute_command('DEBUG', 'SLEEP', '1')
        assert client.ping()
        wait_until(lambda: '--- WATCHDOG TIMER EXPIRED ---' in log.read_text(), 'the report')
        text = log.read_text()
        assert '------ STACK TRACE ------' in text and ':signal-handler (' in text
        client.config_set('watchdog-period', '0')
        reports = log.read_text().count('WATCHDOG TIMER EXPIRED')
        client.execute_command('DEBUG', 'SLEEP', '0.5')
        assert client.ping() and log.read_text().count('WATCHDOG TIMER EXPIRED') == reports
    finally:
        stop(proc)
