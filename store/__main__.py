"""`python -m store` / `store-server`: redis-server's command line.

    store-server [/path/to/redis.conf] [--name value ...]

Options are the config parameters of store/config_params.py, as redis-server takes them; a
parameter may take several values (`--save 60 1000`, `--client-output-buffer-limit "pubsub
32mb 8mb 60"`). Later options override the config file.
"""

import os
import sys
from collections.abc import Sequence

from . import crash, process
from .commands.config_cmd import quote
from .config import Config
from .config_values import ConfigError
from .persistence.errors import LoadError
from .request_parser import split_args
from .server import Server, new_event_loop
from .version import VERSION


def parse_argv(argv: Sequence[str]) -> Config:
    """Build a Config from redis-server style arguments; raises ConfigError.

    As Redis's main() does: a first argument not starting with '-' is the config file;
    the options after it become lines appended to the file's text, each `--name` starting
    a line and each other argument added to it quoted (sdscatrepr), so a value may start
    with `--` when its option has none yet (`--title --x`), an option and its value may
    come in one argument (`"--port 6380"`), and `--save` with no value is `save ""`. The
    whole text is then read as one config file (its line numbers run on past the file's)."""
    config = Config()
    args = list(argv)
    text = ''
    if args and not args[0].startswith('-'):
        path = args.pop(0)
        with open(path, encoding='utf-8', errors='surrogateescape') as f:
            text = f.read()
        config.file = os.path.abspath(path)
    options: list[str] = []
    handled = True  # the last option has its argument (handled_last_config_arg)
    for j, arg in enumerate(args):
        last = j == len(args) - 1
        if handled and arg.startswith('--'):
            options.append(arg[2:] + ' ')
            words = split_args(arg.encode('utf-8', 'surrogateescape'))
            if words is not None and len(words) == 1:
                handled = False  # an option name alone: its value follows
                if arg.lower() == '--save' and (last or args[j + 1].startswith('--')):
                    options[-1] += '""'  # `--save` alone: no save points
                    handled = True
                elif arg.lower() == '--sentinel' and not last and args[j + 1].startswith('--'):
                    handled = True
            else:
                handled = True  # name and value in one argument: "--port 6380"
        else:  # an argument of the option before (or a line of its own: `loglevel x`)
            if not options:
                options.append('')
            options[-1] += quote(arg) + ' '
            handled = True
    if options:
        text += '\n' + '\n'.join(options)  # (loadServerConfig appends them after a newline)
    config.load_lines(text.split('\n'))
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


def main(argv: list[str] | None = None) -> int:
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
        if config['logfile'] and (error := process.cannot_open_log(config['logfile'])):
            raise ConfigError(error)
    except (ConfigError, OSError) as e:
        print(f'\n*** FATAL CONFIG FILE ERROR (store {VERSION}) ***\n{e}', file=sys.stderr)
        return 1
    log = process.LogFile(config['logfile']) if config['logfile'] else sys.stdout

    # Redis marks the lines before the server exists 'C'
    def early_log(msg: str, level: str) -> None:
        if not process.below(level, config['loglevel']):
            process.log_line(log, 'C', level, msg)
            if config['syslog-enabled']:
                process.to_syslog(level, msg)

    supervised = process.supervision(config['supervised'], early_log)
    background = config['daemonize'] and not supervised
    if background:
        process.daemonize()  # before the loop and its threads exist
    process.starting(early_log, VERSION, bool(argv))
    loop = new_event_loop()
    server = Server(config)
    server.supervised = supervised
    if background and not server.pidfile:
        server.pidfile = process.DEFAULT_PIDFILE
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
