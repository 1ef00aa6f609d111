"""The floor under the server-core numbers at -P 16: a Python server that does only the
unavoidable, run beside ours and redis-server in the same run.

    .venv/bin/python bench/floor.py [--requests 400000] [--repeat 2]

The floor server (`--serve PORT`, below) is uvloop + hiredis + one dict: it parses each
read with hiredis, answers SET and GET from the dict and sends the replies in one write.
It has no command table, arity checks, shards, TTLs, statistics, or proof that hiredis
parsed what redis-server would. Its CPU per request is the event loop, the socket calls
and the parse; what our server spends above it is the per-command Python work that
DESIGN.md asks to keep small, and the floor bounds what pure Python can reach here.

It also runs scripts, for bench/scripting.py: SCRIPT LOAD compiles a body in one lupa
Lua 5.1 state, EVALSHA sets KEYS and ARGV and calls it under pcall, and `redis.call`
runs GET, SET, INCR or EXPIRE on the dicts, with none of a script's sandbox, checks,
statistics, events, frozen clock or error wording. That is the least a Python server
embedding Lua through lupa spends on a script and its calls.
"""

import argparse
import asyncio
import hashlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ServerProc, redis_benchmark  # noqa: E402


class FloorScripts:
    """SCRIPT LOAD and EVALSHA on one Lua state; `redis.call` on the floor's dicts."""

    def __init__(self, data):
        import lupa.lua51 as lua51

        self.data, self.deadlines, self.scripts = data, {}, {}
        self.commands = {b'GET': self.get, b'SET': self.set, b'INCR': self.incr}
        self.commands[b'EXPIRE'] = self.expire
        self.lua = lua = lua51.LuaRuntime(encoding=None, register_eval=False)
        lua.globals().redis = lua.table_from({b'call': self.call})
        self.compile = lua.eval('loadstring')
        self.run = lua.eval(
            """function(f, numkeys, ...)
              local all, keys, argv = {...}, {}, {}
              for i = 1, numkeys do keys[i] = all[i] end
              for i = numkeys + 1, select('#', ...) do argv[i - numkeys] = all[i] end
              KEYS, ARGV = keys, argv
              return pcall(f)
            end"""
        )

    def load(self, body):
        sha = hashlib.sha1(body).hexdigest().encode()
        self.scripts[sha] = self.compile(body)
        return b'$40\r\n%s\r\n' % sha

    def evalsha(self, frame):
        ok, v = self.run(self.scripts[frame[1]], int(frame[2]), *frame[3:])
        if type(v) is bytes:
            return b'$%d\r\n%s\r\n' % (len(v), v)
        if type(v) is int or type(v) is float:
            return b':%d\r\n' % v
        return b'$-1\r\n'

    def call(self, *args):
        args = [a if type(a) is bytes else b'%.17g' % a for a in args]
        return self.commands[args[0]](args)

    def get(self, args):
        return self.data.get(args[1], False)

    def set(self, args):
        self.data[args[1]] = args[2]
        return True

    def incr(self, args):
        n = int(self.data.get(args[1], b'0')) + 1
        self.data[args[1]] = b'%d' % n
        return n

    def expire(self, args):
        if args[1] not in self.data:
            return 0
        self.deadlines[args[1]] = time.time_ns() // 1_000_000 + int(args[2]) * 1000
        return 1


class FloorProtocol(asyncio.Protocol):
    data = {}
    scripts = None

    def connection_made(self, transport):
        import hiredis

        self.transport = transport
        self.reader = hiredis.Reader()
        if FloorProtocol.scripts is None:
            FloorProtocol.scripts = FloorScripts(self.data)

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
            elif frame[0] == b'EVALSHA':
                out.append(self.scripts.evalsha(frame))
            elif frame[0] == b'SCRIPT':
                out.append(self.scripts.load(frame[2]))
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
