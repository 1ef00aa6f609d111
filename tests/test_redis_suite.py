"""A fast part of Redis's own test suite, run the way it runs redis-server.

scripts/redis-suite runs all of Redis 7.0.15's test files with this server as
src/redis-server (its table is in docs/compatibility.md); these are the files of the areas
changed most often (its FAST list), a few minutes in all, so that a regression against
Redis's own tests fails CI. Each file must pass here as it passes on redis-server: no
failed test, no exception that stops the file, no timeout.
"""

import importlib.machinery
import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / 'scripts' / 'redis-suite'


def _load_runner():
    loader = importlib.machinery.SourceFileLoader('redis_suite', str(SCRIPT))
    spec = importlib.util.spec_from_loader('redis_suite', loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


suite = _load_runner()


@pytest.fixture(scope='module')
def work_tree():
    """Debian's source of redis (fetched once into .cache/redis-suite), laid out with this
    server as src/redis-server."""
    suite.ensure_tools()
    work = suite.layout(suite.fetch_source(), 'ours', 0)
    yield work
    suite.shutil.rmtree(work, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize('name', suite.FAST)
def test_redis_suite_file(work_tree, name, tmp_path):
    result = suite.run_file(work_tree, name, suite.free_baseport(), 600, tmp_path)
    log = (tmp_path / (name.replace('/', '_') + '.log')).read_text(errors='replace')
    failures = [
        line
        for line in log.splitlines()
        if (m := suite.STATUS.match(line)) and m.group(1) in ('err', 'exception')
    ]
    assert (result['err'], result['exception'], result['timeout']) == (0, 0, 0), '\n'.join(
        failures[:20] or log.splitlines()[-40:]
    )
    assert 'All tests passed without errors!' in log, log[-4000:]
