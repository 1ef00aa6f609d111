"""Commands that replicas and the AOF get in another form, as Redis rewrites them
(rewriteClientCommandVector): GETDEL as DEL, LMPOP and ZMPOP as LPOP/RPOP/ZPOPMIN/ZPOPMAX
with the number of elements popped. Compared byte for byte with redis-server's AOF."""

from test_aof import _incr_bytes_after


def test_getdel_lmpop_zmpop_written_as_redis_propagates_them(tmp_path):
    commands = [
        ('SET', 'foo', 'bar'),
        ('GETDEL', 'foo'),
        ('GETDEL', 'foo'),
        ('RPUSH', 'l', '1', '2', '3'),
        ('LMPOP', '1', 'l', 'LEFT', 'COUNT', '2'),
        ('LMPOP', '2', 'none', 'l', 'right'),
        ('LMPOP', '1', 'l', 'left'),
        ('ZADD', 'z', '1', 'a', '2', 'b', '3', 'c'),
        ('ZMPOP', '1', 'z', 'MIN'),
        ('ZMPOP', '1', 'z', 'max', 'COUNT', '5'),
        ('ZMPOP', '1', 'z', 'max'),
    ]
    (tmp_path / 'a').mkdir()
    (tmp_path / 'b').mkdir()
    ours = _incr_bytes_after('store', tmp_path / 'a', commands)
    theirs = _incr_bytes_after('redis', tmp_path / 'b', commands)
    assert ours == theirs
