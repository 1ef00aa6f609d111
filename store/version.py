"""Version strings: the Redis version whose behaviour is implemented (INFO redis_version,
HELLO, --version) and this server's name."""

VERSION = '7.0.15'
