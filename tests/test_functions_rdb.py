"""redis-cli --functions-rdb (REPLCONF rdb-filter-only functions): the master sends an
RDB with its functions and no key, which redis-server loads."""

import subprocess

import redis

from conftest import redis_cli, spawn_redis, stop
from test_replication import master, port_of  # noqa: F401 - the fixture

LIB = "#!lua name=lib1\nredis.register_function('func1', function() return 123 end)"


def test_functions_rdb_holds_the_functions_and_no_key(master, tmp_path):  # noqa: F811
    master.mset({'k1': 'v1', 'k2': 'v2'})
    master.function_load(LIB)
    path = tmp_path / 'functions.rdb'
    redis_cli(port_of(master), '--functions-rdb', str(path))
    check = subprocess.run(['redis-check-rdb', str(path)], capture_output=True, text=True)
    assert 'RDB looks OK' in check.stdout
    proc, port = spawn_redis('--dir', str(tmp_path), '--dbfilename', 'functions.rdb')
    try:
        loaded = redis.Redis(port=port, protocol=2, decode_responses=True)
        assert loaded.dbsize() == 0
        assert loaded.fcall('func1', 0) == 123
        loaded.close()
    finally:
        stop(proc)
    assert master.info('replication')['connected_slaves'] == 0


def test_rdb_filter_only_option_errors_as_redis(both):
    for r in both:
        r.execute_command('REPLCONF', 'rdb-filter-only', 'functions')
        r.execute_command('REPLCONF', 'rdb-filter-only', '')
    errors = []
    for r in both:
        try:
            r.execute_command('REPLCONF', 'rdb-filter-only', 'functions Keys')
        except redis.ResponseError as e:
            errors.append(str(e))
    assert errors[0] == errors[1] == 'Unsupported rdb-filter-only option: Keys'
