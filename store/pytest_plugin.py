"""pytest plugin shipped with the package: the `store_server` fixture.

A session-wide EmbeddedServer on an ephemeral port; tests get it with `store_server` and a
client with `store_server.client()`.

Opt-in. Installing the package does not load this plugin into every pytest run in the
environment (no `pytest11` entry point): a test suite that wants the fixture says so in its
top-level conftest.py (pytest reads `pytest_plugins` only there)::

    pytest_plugins = ['store.pytest_plugin']

or on the command line, `pytest -p store.pytest_plugin`. This project's tests do the former
(tests/conftest.py).
"""

from collections.abc import Iterator

import pytest

from .embed import EmbeddedServer


@pytest.fixture(scope='session')
def store_server() -> Iterator[EmbeddedServer]:
    """A running EmbeddedServer, shared by the whole session and stopped at its end. It
    has no save points, so a test run leaves no dump.rdb behind."""
    with EmbeddedServer(save='') as srv:
        yield srv
