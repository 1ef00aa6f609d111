"""The server's command line (store/__main__.py) read as redis-server 7.0 reads it: options
appended to the config file's text, `--name` starting a line, other arguments quoted onto
it. Errors are compared with redis-server's own (it exits at once on a bad option)."""

import shutil
import subprocess
import sys

import pytest
import redis

from conftest import spawn_store, stop
from store.__main__ import parse_argv


def first_error_lines(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    text = (out.stdout + out.stderr).strip().splitlines()
    return out.returncode, text[1:4]  # past the banner, which names the server


@pytest.mark.parametrize(
    'args',
    [
        ['--port'],
        ['--port', '6380', '--loglevel'],
        ['--port', '6379', '6380'],
        ['--port', '--loglevel', 'verbose'],
        ['--port', '--bla', '--loglevel', 'verbose'],
        ['--logfile', '--my--log--file', '--loglevel', '--bla'],
        ['--shutdown-on-sigint'],
        ['--replicaof', '127.0.0.1', 'abc'],
        ['--replicaof', '--127.0.0.1', '--abc'],
        ['--user', 'foo', '--user', 'foo'],
        ['--user', 'default', '--user', 'default'],
        ['--logfile', '/nonexistent-dir/store.log'],
    ],
)
def test_bad_options_are_reported_as_redis_server_reports_them(args):
    ours = first_error_lines([sys.executable, '-m', 'store', *args])
    theirs = first_error_lines([shutil.which('redis-server'), *args])
    assert ours == theirs
    assert ours[0] == 1


def write_conf(tmp_path, text='save 900 1\n'):
    path = tmp_path / 'default.conf'
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    'args',
    [
        ['--save', '--loglevel', 'verbose'],
        ['--loglevel', 'verbose', '--save'],
        ['--save', '', '--loglevel', 'verbose'],
        ['--loglevel', 'verbose', '--save', ''],
    ],
)
def test_save_without_points_empties_them(tmp_path, args):
    config = parse_argv([write_conf(tmp_path), *args])
    assert config['save'] == '' and config['loglevel'] == 'verbose'


def test_options_and_values_in_one_argument_and_values_starting_with_dashes(tmp_path):
    conf = write_conf(tmp_path)
    config = parse_argv([conf, '--maxmemory 700mb', '--maxmemory-policy volatile-lru'])
    assert config['maxmemory'] == 734003200 and config['maxmemory-policy'] == 'volatile-lru'
    config = parse_argv([conf, 'loglevel', 'verbose', "--maxmemory '700mb'"])
    assert config['loglevel'] == 'verbose' and config['maxmemory'] == 734003200
    config = parse_argv(
        [conf, '--proc-title-template', '--my--title--template', '--loglevel'] + ['verbose']
    )
    assert config['proc-title-template'] == '--my--title--template'
    config = parse_argv(
        [conf, '--proc-title-template', '--save', '--save', '', '--loglevel', 'verbose']
    )
    assert config['proc-title-template'] == '--save' and config['save'] == ''
    assert config['loglevel'] == 'verbose'
    config = parse_argv([conf, '--save', '100', '100'])
    assert config['save'] == '900 1 100 100'  # the file's first save replaced the defaults


@pytest.mark.parametrize(
    'args', [['--rename-command', 'nosuch', 'x'], ['--rename-command', 'get', 'set']]
)
def test_bad_rename_command_is_reported_as_redis_server_reports_it(args):
    ours = first_error_lines([sys.executable, '-m', 'store', *args])
    theirs = first_error_lines([shutil.which('redis-server'), *args])
    assert ours == theirs
    assert ours[0] == 1


def test_rename_command(tmp_path):
    """rename-command gives a command a new name (the old one is unknown), '' removes
    it, and CONFIG REWRITE keeps the line."""
    conf = tmp_path / 'store.conf'
    conf.write_text('rename-command flushdb badger\nrename-command get ""\n')
    proc, port = spawn_store(conf=conf)
    try:
        r = redis.Redis(port=port)
        for name in ('flushdb', 'FLUSHDB', 'get'):
            with pytest.raises(redis.ResponseError, match='unknown command'):
                r.execute_command(name, *(['x'] if name == 'get' else []))
        assert r.execute_command('BADGER') == b'OK'
        assert r.execute_command('CONFIG', 'REWRITE') == b'OK'
    finally:
        stop(proc)
    assert 'rename-command flushdb badger\n' in conf.read_text()
