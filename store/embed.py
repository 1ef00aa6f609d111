"""Embedding API: run a server inside a Python process, on its own thread and loop.

    from store import EmbeddedServer
    with EmbeddedServer(notify_keyspace_events='Ex') as srv:
        r = srv.client()            # a redis.Redis connected to it
        r.set('k', 'v', ex=10)

Options are config parameters with '_' for '-'. The port defaults to 0, an ephemeral port
chosen by the OS (`srv.port`). The pytest plugin (store/pytest_plugin.py) wraps this in the
`store_server` fixture.
"""

import asyncio
import io
import threading

from .config import Config
from .server import Server, new_event_loop


class EmbeddedServer:
    def __init__(self, port=0, bind='127.0.0.1', log=False, **options):
        self.config = Config()
        self.config.set_from_args('port', [str(port)])
        self.config.set_from_args('bind', [bind])
        for name, value in options.items():
            values = value if isinstance(value, (list, tuple)) else [value]
            if isinstance(value, bool):
                values = ['yes' if value else 'no']
            self.config.set_from_args(name.replace('_', '-'), [str(v) for v in values])
        self.server = Server(self.config, log_stream=None if log else io.StringIO())
        self.thread = None
        self.loop = None
        self.host = bind.split()[0]
        self._started = threading.Event()
        self._error = None

    @property
    def port(self):
        return self.server.port

    def start(self):
        self.thread = threading.Thread(target=self._run, name='store-server', daemon=True)
        self.thread.start()
        self._started.wait()
        if self._error is not None:
            raise self._error
        return self

    def _run(self):
        self.loop = loop = new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self.server.start())
        except BaseException as e:
            self._error = e
            self._started.set()
            return
        self._started.set()
        loop.run_until_complete(self.server.serve_until_shutdown())
        loop.close()

    def stop(self):
        if self.thread is None:
            return
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.server.request_shutdown)
            self.thread.join(10)
        self.thread = None

    def call(self, fn, *args):
        """Run `fn(*args)` on the server's loop and return its result (for inspection)."""
        fut = asyncio.run_coroutine_threadsafe(_wrap(fn, *args), self.loop)
        return fut.result(10)

    def client(self, **kwargs):
        import redis
        return redis.Redis(host=self.host, port=self.port, **kwargs)

    def url(self, db=0):
        return f'redis://{self.host}:{self.port}/{db}'

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


async def _wrap(fn, *args):
    return fn(*args)
