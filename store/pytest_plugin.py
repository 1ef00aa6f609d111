"""pytest plugin shipped with the package: the `store_server` fixture.

A session-wide EmbeddedServer on an ephemeral port; tests get it with `store_server` and a
client with `srv.client()`. Registered through the `pytest11` entry point.
"""

import pytest

from .embed import EmbeddedServer


@pytest.fixture(scope='session')
def store_server():
    with EmbeddedServer() as srv:
        yield srv
