"""The process title (set-proc-title, proc-title-template), as ps and /proc/<pid>/cmdline
show it: Redis's template variables, set at start and by CONFIG SET (unit/other 'Process
title set as expected')."""

import sys

import redis

from conftest import spawn_redis, spawn_store, stop


def cmdline(pid):
    with open(f'/proc/{pid}/cmdline', 'rb') as f:
        return f.read().rstrip(b'\0').decode()


def test_title_follows_the_template(tmp_path):
    conf = tmp_path / 'server.conf'
    sock = tmp_path / 'socket'
    conf.write_text(f'unixsocket {sock}\nbind 127.0.0.1\n')
    proc, port = spawn_store(conf=conf)
    try:
        r = redis.Redis(port=port)
        pid = r.info('server')['process_id']
        # the default template: {title} {listen-addr} {server-mode}
        assert cmdline(pid) == f'{sys.executable} -m store 127.0.0.1:{port}'
        r.config_set(
            'proc-title-template',
            'TEST {title} {listen-addr} {port} {tls-port} {unixsocket} {config-file} {{x}',
        )
        assert cmdline(pid).split(' ') == [
            'TEST', sys.executable, '-m', 'store', f'127.0.0.1:{port}', str(port), '0',
            str(sock), str(conf), '{x}',
        ]  # fmt: skip
        assert r.ping()  # the environment the title overwrote was moved, not lost
    finally:
        stop(proc)


def test_bad_templates_are_refused_as_redis_refuses_them():
    proc, port = spawn_store()
    ref, ref_port = spawn_redis()
    try:
        for template in ('{invalid-var}', '{title', '   ', '{}'):
            errors = []
            for p in (port, ref_port):
                try:
                    redis.Redis(port=p).config_set('proc-title-template', template)
                    errors.append(None)
                except redis.ResponseError as e:
                    errors.append(str(e))
            assert errors[0] == errors[1] and errors[0] is not None, template
    finally:
        stop(proc)
        stop(ref)


def test_set_proc_title_no_leaves_the_command_line():
    proc, port = spawn_store('--set-proc-title', 'no')
    try:
        r = redis.Redis(port=port)
        r.config_set('proc-title-template', 'TEST {port}')
        line = cmdline(r.info('server')['process_id'])
        assert line.split('\0')[:3] == [sys.executable, '-m', 'store']
    finally:
        stop(proc)
