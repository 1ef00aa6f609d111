"""`python -m store` / `store-server`: redis-server's command line.

    store-server [/path/to/redis.conf] [--name value ...]

Options are the config parameters of store/config.py, as redis-server takes them; a
parameter may take several values (`--save 60 1000`, `--client-output-buffer-limit "pubsub
32mb 8mb 60"`). Later options override the config file.
"""

import os
import sys

from . import crash
from .config import Config, ConfigError
from .persistence.manager import LoadError
from .server import Server, new_event_loop
from .version import VERSION


def parse_argv(argv):
    """Build a Config from redis-server style arguments; raises ConfigError."""
    config = Config()
    args = list(argv)
    if args and not args[0].startswith('--'):
        path = args.pop(0)
        config.load_file(path)
        config.file = os.path.abspath(path)
    lines = []
    for arg in args:
        if arg.startswith('--'):
            lines.append([arg[2:]])
        elif lines:
            lines[-1].append(arg)
        else:
            raise ConfigError(f"Invalid argument '{arg}'")
    for i, (name, *values) in enumerate(lines, 1):
        try:
            config.set_from_args(name, values)
        except ConfigError as e:
            shown = ' '.join([name] + [f'"{v}"' if ' ' in v or not v else v for v in values])
            raise ConfigError(
                f"Reading the configuration file, at line {i}\n>>> '{shown}'\n{e}"
            ) from None
    return config


USAGE = """Usage: store-server [/path/to/redis.conf] [options]
       store-server -v or --version
       store-server -h or --help

Examples:
       store-server (run the server with default config: 127.0.0.1:6379)
       store-server /etc/redis/6379.conf
       store-server --port 7777
       store-server --port 7777 --notify-keyspace-events Ex
       store-server /etc/myredis.conf --loglevel verbose
"""


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (['-v'], ['--version']):
        print(
            f'store-server v={VERSION} (Redis {VERSION} compatible, Python '
            f'{sys.version.split()[0]})'
        )
        return 0
    if argv[:1] in (['-h'], ['--help']):
        print(USAGE)
        return 0
    try:
        config = parse_argv(argv)
    except (ConfigError, OSError) as e:
        print(f'\n*** FATAL CONFIG FILE ERROR (store {VERSION}) ***\n{e}', file=sys.stderr)
        return 1
    loop = new_event_loop()
    server = Server(config)
    # before the port opens: a SIGTERM from then on shuts down (after start-up if it came
    # during it), never kills the process with its default action
    server.shutdown.install()
    crash.install(server, loop)  # crash reports on fatal signals (store/crash.py)
    try:
        loop.run_until_complete(server.start())
    except LoadError:  # logged by the server: a file it must not start without
        return 1
    except OSError as e:
        # logged as Redis logs them (the log, not stderr): Redis's test harness reads the
        # log for 'Failed listening on port' to retry on another port
        bind = config['bind']
        server.log(
            f'Warning: Could not create server TCP listening socket {bind}:{config["port"]}: '
            f'bind: {e.strerror or e}',
            '#',
        )
        server.log(f'Failed listening on port {config["port"]} (TCP), aborting.', '#')
        return 1
    loop.run_until_complete(server.serve_until_shutdown())
    loop.close()
    return server.exit_code


if __name__ == '__main__':
    sys.exit(main())
