"""The floor under the server-core numbers at -P 16: a Python server that does only the
unavoidable, run beside ours and redis-server in the same run.

    .venv/bin/python bench/floor.py [--requests 400000] [--repeat 2]

The floor server (`--serve PORT`, below) is uvloop + hiredis + one dict: it parses each
read with hiredis, answers SET and GET from the dict and sends the replies in one write.
It has no command table, arity checks, shards, TTLs, statistics, or proof that hiredis
parsed what redis-server would. Its CPU per request is the event loop, the socket calls
and the parse; what our server spends above it is the per-command Python work that
DESIGN.md asks to keep small, and the floor bounds what pure Python can reach here.
"""

import argparse
import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ServerProc, redis_benchmark  # noqa: E402


class FloorProtocol(asyncio.Protocol):
    data = {}

    def connection_made(self, transport):
        import hiredis

        self.transport = transport
        self.reader = hiredis.Reader()

    def data_received(self, chunk):
        reader, data, out = self.reader, self.data, []
        reader.feed(chunk)
        frame = reader.gets()
        while frame is not False:
            if frame[0] == b'SET':
                data[frame[1]] = frame[2]
                out.append(b'+OK\r\n')
            elif frame[0] == b'GET':
                v = data.get(frame[1])
                out.append(b'$-1\r\n' if v is None else b'$%d\r\n%s\r\n' % (len(v), v))
            else:  # redis-benchmark's CONFIG GET at start-up
                out.append(b'*0\r\n')
            frame = reader.gets()
        self.transport.write(b''.join(out))


def serve(port):
    import uvloop

    async def main():
        server = await asyncio.get_running_loop().create_server(FloorProtocol, '127.0.0.1', port)
        await server.serve_forever()

    uvloop.run(main())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--requests', type=int, default=400000)
    ap.add_argument('--repeat', type=int, default=2, help='runs per cell; best is kept')
    ap.add_argument('--serve', type=int, metavar='PORT', help='run the floor server')
    args = ap.parse_args()
    if args.serve:
        return serve(args.serve)

    kinds = ('floor', 'ours', 'redis')
    print(
        '| test -P 16 | '
        + ' | '.join(f'{k} req/s | {k} CPU us/req' for k in kinds)
        + ' | ours CPU above floor us/req |'
    )
    print('|---|' + '---|---|' * len(kinds) + '---|')
    with ServerProc('floor') as floor, ServerProc('ours') as ours, ServerProc('redis') as redis:
        for test in ('set', 'get'):
            best = {}
            for _ in range(args.repeat):
                for srv in (floor, ours, redis):
                    cpu0 = srv.cpu_seconds()
                    rps = redis_benchmark(srv.port, test, args.requests, 50, 16)
                    cpu = (srv.cpu_seconds() - cpu0) / args.requests * 1e6
                    if rps > best.get(srv.kind, (0, 0))[0]:
                        best[srv.kind] = (rps, cpu)
            cells = ' | '.join(f'{best[k][0]:.0f} | {best[k][1]:.2f}' for k in kinds)
            print(f'| {test} | {cells} | {best["ours"][1] - best["floor"][1]:.2f} |')


if __name__ == '__main__':
    main()
