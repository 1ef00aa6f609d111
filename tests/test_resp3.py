"""redis-py with protocol=3, sync and asyncio (one test for both APIs): the basics decode
as RESP3 types."""

import pytest
import redis
import redis.asyncio

from conftest import close, connect, done
from rawconn import RawConn


async def test_resp3_basics(server, api):
    r = connect(server, api, protocol=3)
    try:
        await done(r.flushall())
        assert await done(r.ping()) is True
        assert await done(r.set('k', 'v')) is True
        assert await done(r.get('k')) == b'v'
        assert await done(r.get('missing')) is None
        assert await done(r.echo('e')) == b'e'
        assert await done(r.client_setname('r3')) is True
        assert await done(r.client_getname()) in ('r3', b'r3')
        info = await done(r.client_info())
        assert info['resp'] == '3' and info['name'] == 'r3'
        rows = await done(r.client_list())
        assert any(row['name'] == 'r3' and row['resp'] == '3' for row in rows)
        with pytest.raises(redis.ResponseError, match='unknown command'):
            await done(r.execute_command('NOPE'))
        p = r.pipeline(transaction=True)
        p.set('a', '1').incr('a').get('a').get('missing')
        assert await done(p.execute()) == [True, 2, b'2', None]
        meta = await done(r.execute_command('HELLO', '3'))
        assert meta[b'proto'] == 3 and meta[b'version'] == b'7.0.15'
    finally:
        await close(r)


def test_resp3_connection_really_is_resp3(r3, server):
    """The same connection answers HELLO with proto 3 and nulls as '_'."""
    meta = r3.execute_command('HELLO')
    assert meta[b'proto'] == 3
    cid = r3.client_id()
    assert meta[b'id'] == cid
    line = r3.execute_command('CLIENT', 'LIST', 'ID', cid)
    line = line.decode() if isinstance(line, bytes) else line
    assert f'id={cid} ' in line and line.rstrip('\n').endswith('resp=3')


def test_resp3_hello_switches_back(server):
    with RawConn(server.port) as c:
        assert c.cmd('HELLO', '3').startswith(b'%7\r\n')
        assert c.cmd('GET', 'nothing') == b'_\r\n'
        assert c.cmd('HELLO', '2').startswith(b'*14\r\n')
        assert c.cmd('GET', 'nothing') == b'$-1\r\n'


async def test_resp2_and_resp3_asyncio_side_by_side(server):
    r2 = redis.asyncio.Redis(host='127.0.0.1', port=server.port, protocol=2)
    r3 = redis.asyncio.Redis(host='127.0.0.1', port=server.port, protocol=3)
    try:
        i2, i3 = await r2.client_info(), await r3.client_info()
        assert i2['resp'] == '2' and i3['resp'] == '3'
        await r2.set('shared', 'x')
        assert await r3.get('shared') == b'x'
    finally:
        await r2.aclose()
        await r3.aclose()
