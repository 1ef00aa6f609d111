"""redis-py with protocol=3, sync and asyncio: the basics decode as RESP3 types."""

import pytest
import redis
import redis.asyncio

from rawconn import RawConn


def test_resp3_sync_basics(r3, server):
    assert r3.ping() is True
    assert r3.set('k', 'v') is True
    assert r3.get('k') == b'v'
    assert r3.get('missing') is None
    assert r3.echo('e') == b'e'
    assert r3.client_setname('r3') is True
    assert r3.client_getname() in ('r3', b'r3')
    info = r3.client_info()
    assert info['resp'] == '3' and info['name'] == 'r3'
    rows = r3.client_list()
    assert any(row['name'] == 'r3' and row['resp'] == '3' for row in rows)
    with pytest.raises(redis.ResponseError, match='unknown command'):
        r3.execute_command('NOPE')
    with r3.pipeline(transaction=True) as p:
        p.set('a', '1').get('a').get('missing')
        assert p.execute() == [True, b'1', None]


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


async def test_resp3_asyncio_basics(server):
    r = redis.asyncio.Redis(host='127.0.0.1', port=server.port, protocol=3)
    try:
        assert await r.ping() is True
        assert await r.set('ak', 'v') is True
        assert await r.get('ak') == b'v'
        assert await r.get('nothing') is None
        assert await r.client_setname('a3')
        info = await r.client_info()
        assert info['resp'] == '3' and info['name'] == 'a3'
        async with r.pipeline(transaction=True) as p:
            p.set('x', '1')
            p.incr('x')
            p.get('nothing')
            assert await p.execute() == [True, 2, None]
        meta = await r.execute_command('HELLO', '3')
        assert meta[b'proto'] == 3 and meta[b'version'] == b'7.0.15'
    finally:
        await r.aclose()


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
