"""Embedding API: run a server inside a Python process, on its own thread and loop.

    from store import EmbeddedServer
    with EmbeddedServer(notify_keyspace_events='Ex') as srv:
        r = srv.client()            # a redis.Redis connected to it
        r.set('k', 'v', ex=10)

Options are config parameters with '_' for '-'; a value is a string, a number, a bool
(yes/no) or a list of those (a multi-argument parameter such as `save`). The port defaults
to 0, an ephemeral port chosen by the OS (`srv.port`). Persistence is redis-server's: with
the default save points, `stop()` writes dump.rdb in `dir` (the working directory unless
given) and the next server started there loads it; `save=''` keeps nothing. The pytest
plugin (store/pytest_plugin.py) wraps this in the `store_server` fixture, without save
points.

Threading: the server runs on its own thread's event loop; `call` is the one way to touch
its objects from the caller's thread (it runs the function on the server's loop).
"""

from __future__ import annotations

import asyncio
import io
import threading
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeAlias, TypeVar, TypeVarTuple

from .config import Config
from .server import Server, new_event_loop

if TYPE_CHECKING:
    import redis

_Scalar: TypeAlias = str | int | float
OptionValue: TypeAlias = _Scalar | list[_Scalar] | tuple[_Scalar, ...]
"""A config option's value: a bool is written yes/no, a list or tuple is several arguments."""

T = TypeVar('T')
Ts = TypeVarTuple('Ts')


class EmbeddedServer:
    """A server on a daemon thread. `start()` (or `with`) returns once it listens;
    `stop()` (or leaving the `with`) shuts it down and joins the thread."""

    config: Config
    server: Server
    thread: threading.Thread | None
    loop: asyncio.AbstractEventLoop | None
    host: str

    def __init__(
        self, port: int = 0, bind: str = '127.0.0.1', log: bool = False, **options: OptionValue
    ) -> None:
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
        self._error: BaseException | None = None

    @property
    def port(self) -> int:
        """The port it listens on (the OS's choice when created with port 0)."""
        port: int = self.server.port
        return port

    def start(self) -> Self:
        """Start the server thread and wait until it listens; re-raises a start failure
        (say, OSError for an address in use) in the caller's thread."""
        self.thread = threading.Thread(target=self._run, name='store-server', daemon=True)
        self.thread.start()
        self._started.wait()
        if self._error is not None:
            raise self._error
        return self

    def _run(self) -> None:
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

    def stop(self) -> None:
        """Shut down (as SHUTDOWN does) and join the thread; a no-op when not started."""
        if self.thread is None:
            return
        if self.thread.is_alive():
            self._running_loop().call_soon_threadsafe(self.server.request_shutdown)
            self.thread.join(10)
        self.thread = None

    def call(self, fn: Callable[[*Ts], T], *args: *Ts) -> T:
        """Run `fn(*args)` on the server's loop and return its result (for inspection)."""
        fut = asyncio.run_coroutine_threadsafe(_wrap(fn, *args), self._running_loop())
        return fut.result(10)

    def client(self, **kwargs: Any) -> redis.Redis:
        """A redis-py client connected to this server; `kwargs` go to redis.Redis."""
        import redis

        return redis.Redis(host=self.host, port=self.port, **kwargs)

    def url(self, db: int = 0) -> str:
        return f'redis://{self.host}:{self.port}/{db}'

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        if self.loop is None:
            raise RuntimeError('the embedded server has not been started')
        return self.loop

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


async def _wrap(fn: Callable[[*Ts], T], *args: *Ts) -> T:
    return fn(*args)
