"""TLS benchmark: our server against redis-server in the same run, over TLS and in clear.

    .venv/bin/python bench/tls.py [--requests 100000] [--repeat 3]

Both servers listen on a plain port and on a tls-port with the test certificates of
tests/tls (client certificates required, as by default). redis-benchmark -c 50 runs SET and
GET at -P 1 and -P 16 against each server in turn (alternating, so drift on a shared
machine hits both), over TLS (`--tls --cacert --cert --key`) and in clear; the best of
`--repeat` runs is kept. Prints a Markdown table: requests per second, ours / redis over
TLS, and what TLS costs each server (its TLS rate / its plain rate).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, ServerProc, free_port, redis_benchmark  # noqa: E402

CERTS = os.path.join(ROOT, 'tests', 'tls')


def cert(name):
    return os.path.join(CERTS, name)


def tls_server(kind):
    tls_port = free_port()
    srv = ServerProc(
        kind,
        '--tls-port',
        str(tls_port),
        '--tls-cert-file',
        cert('server.crt'),
        '--tls-key-file',
        cert('server.key'),
        '--tls-ca-cert-file',
        cert('ca.crt'),
    )
    srv.tls_port = tls_port
    return srv


CLIENT = ['--tls', '--cacert', cert('ca.crt'), '--cert', cert('client.crt')]
CLIENT += ['--key', cert('client.key')]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--requests', type=int, default=100000)
    ap.add_argument('--repeat', type=int, default=3, help='runs per cell; best is kept')
    args = ap.parse_args()
    best = {}
    with tls_server('ours') as ours, tls_server('redis') as redis:
        servers = [ours, redis]
        for pipeline in (1, 16):
            for test in ('set', 'get'):
                for _ in range(args.repeat):
                    for srv in servers:
                        for tls in (True, False):
                            port = srv.tls_port if tls else srv.port
                            extra = CLIENT if tls else ()
                            rps = redis_benchmark(
                                port, test, args.requests, 50, pipeline, extra=extra
                            )
                            key = (test, pipeline, srv.kind, tls)
                            best[key] = max(best.get(key, 0.0), rps)
                o, r = best[(test, pipeline, 'ours', True)], best[(test, pipeline, 'redis', True)]
                print(f'  {test} -P {pipeline}: ours {o:.0f}, redis {r:.0f} (TLS)', file=sys.stderr)
    print(
        '| test | pipeline | ours TLS req/s | redis TLS req/s | ratio | ours TLS / plain | '
        'redis TLS / plain |'
    )
    print('|---|---|---|---|---|---|---|')
    for pipeline in (1, 16):
        for test in ('set', 'get'):

            def rate(kind, tls, test=test, pipeline=pipeline):
                return best[(test, pipeline, kind, tls)]

            o, r = rate('ours', True), rate('redis', True)
            print(
                f'| {test.upper()} | {pipeline} | {o:,.0f} | {r:,.0f} | {o / r:.2f}x | '
                f'{o / rate("ours", False):.2f} | {r / rate("redis", False):.2f} |'
            )


if __name__ == '__main__':
    main()
