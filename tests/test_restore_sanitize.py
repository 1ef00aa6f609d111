"""RESTORE of corrupt payloads (store/persistence/payload_check.py): Redis's integrity checks
of ziplists, listpacks, intsets and zipmaps, deep ones under sanitize-dump-payload yes,
refuse them with 'Bad data format' as redis-server does, and log why at verbose level.
The payloads are the ones of Redis's tests/integration/corrupt-dump.tcl."""

import pytest
import redis

from conftest import run_all, spawn_store, stop

# a quicklist (type 14) of one ziplist whose second entry's prevlen is 0x0E, not 4
BIG_PREVLEN = (
    b'\x0e\x01\x13\x13\x00\x00\x00\x0e\x00\x00\x00\x02\x00\x00\x02\x61\x00\x0e\x02\x62\x00'
    b'\xff\x09\x00\x49\x97\x30\xb2\x0d\xa1\xed\xaa'
)
# the same, its ziplist's header counting 3 entries for 2
WRONG_COUNT = (
    b'\x0e\x01\x13\x13\x00\x00\x00\x0e\x00\x00\x00\x03\x00\x00\x02\x61\x00\x04\x02\x62\x00'
    b'\xff\x09\x00\x4d\xe2\x0a\x2f\x08\x25\xdf\x91'
)
# a quicklist (type 18) whose one plain node is empty
EMPTY_NODE = b'\x12\x01\x01\x00\x0a\x00\x8f\xc6\xc0\x57\x1c\x0a\xb3\x3c'
# a hash ziplist (type 13) whose third entry's length runs past the end
ENTRY_LEN = (
    b'\x0d\x1b\x1b\x00\x00\x00\x16\x00\x00\x00\x04\x00\x00\x02\x61\x00\x04\x02\x62\x00\x04'
    b'\x14\x63\x00\x04\x02\x64\x00\xff\x09\x00\xd9\x10\x54\x92\x15\xf5\x5f\x52'
)
# a zipmap hash (type 9) whose value length 4 takes 5 bytes
ZIPMAP_LONG_LEN = (
    b'\x09\x0e\x01\x01\x6b\xfe\x04\x00\x00\x00\x00\x76\x61\x6c\x31\xff\x09\x00\xd0\xf9\xe4'
    b'\x1d\xe4\xfb\x11\x4c'
)
# a hash listpack (type 16) with field 'a' twice (checksum not valid: skipped)
DUP_FIELDS = (
    b'\x10\x17\x17\x00\x00\x00\x04\x00\x82\x61\x00\x03\x82\x62\x00\x03\x82\x61\x00\x03\x82'
    b'\x64\x00\x03\xff\x0a\x00\xc0\xcf\xa6\x87\xe5\xa7\xc5\xbe'
)
CORRUPT = [BIG_PREVLEN, WRONG_COUNT, EMPTY_NODE, ENTRY_LEN, ZIPMAP_LONG_LEN]


@pytest.mark.parametrize('sanitize', ['no', 'yes'])
def test_corrupt_payloads_are_bad_data_format_as_in_redis(both, sanitize):
    for c in both:
        c.config_set('sanitize-dump-payload', sanitize)
    try:
        commands = [('RESTORE', f'k{i}', 0, p) for i, p in enumerate(CORRUPT)]
        got, want = (run_all(c, commands) for c in both)
        assert got == want
        assert got == [('error', 'Bad data format')] * len(CORRUPT)
        assert [c.dbsize() for c in both] == [0, 0]
    finally:
        for c in both:
            c.config_set('sanitize-dump-payload', 'no')


def test_deep_sanitization_finds_duplicate_fields(both):
    ours, theirs = both
    for c in both:
        c.execute_command('DEBUG', 'SET-SKIP-CHECKSUM-VALIDATION', 1)
        c.config_set('sanitize-dump-payload', 'yes')
    try:
        got, want = (run_all(c, [('RESTORE', 'h', 0, DUP_FIELDS)]) for c in both)
        assert got == want == [('error', 'Bad data format')]
    finally:
        for c in both:
            c.execute_command('DEBUG', 'SET-SKIP-CHECKSUM-VALIDATION', 0)
            c.config_set('sanitize-dump-payload', 'no')


def test_the_failed_check_is_logged_at_verbose_level():
    proc, port = spawn_store('--loglevel', 'verbose')
    try:
        r = redis.Redis(port=port)
        with pytest.raises(redis.ResponseError, match='^Bad data format$'):
            r.restore('k', 0, ENTRY_LEN)
        with pytest.raises(redis.ResponseError, match='^Bad data format$'):
            r.restore('k', 0, ZIPMAP_LONG_LEN)
        r.shutdown(nosave=True)
        log = proc.communicate(timeout=30)[0]
        assert 'function at rdb.c:2275 -> Hash ziplist integrity check failed.' in log
        assert 'Zipmap integrity check failed.' in log
    finally:
        stop(proc)


# a stream (type 15) whose entry's lp-count is wrong: only deep sanitization sees it
BAD_LP_COUNT = (
    b'\x0f\x01\x10\x00\x00\x01\x73\xde\xdf\x7d\x9b\x00\x00\x00\x00\x00\x00\x00\x00\x40\x42'
    b'\x42\x00\x00\x00\x18\x00\x03\x01\x00\x01\x02\x01\x84\x69\x74\x65\x6d\x05\x85\x76\x61'
    b'\x6c\x75\x65\x06\x00\x01\x02\x01\x00\x01\x00\x01\x01\x01\x00\x01\x56\x01\x02\x01\x22'
    b'\x01\x00\x01\x01\x01\x82\x5f\x31\x03\x05\x01\x02\x01\x2c\x01\x00\x01\x01\x01\x02\x01'
    b'\x05\x01\xff\x03\x81\x00\x00\x01\x73\xde\xdf\x7d\xc7\x00\x01\x07\x6d\x79\x67\x72\x6f'
    b'\x75\x70\x81\x00\x00\x01\x73\xde\xdf\x7d\x9b\x00\x01\x00\x00\x01\x73\xde\xdf\x7d\x9b'
    b'\x00\x00\x00\x00\x00\x00\x00\x00\xf9\x7d\xdf\xde\x73\x01\x00\x00\x01\x01\x05\x41\x6c'
    b'\x69\x63\x65\xeb\x7d\xdf\xde\x73\x01\x00\x00\x01\x00\x00\x01\x73\xde\xdf\x7d\x9b\x00'
    b'\x00\x00\x00\x00\x00\x00\x00\x09\x00\xb2\xa8\xa7\x5f\x1b\x61\x72\xd5'
)


def _unsanitized(*args):
    proc, port = spawn_store('--use-exit-on-panic', 'yes', '--enable-debug-command', 'yes', *args)
    r = redis.Redis(port=port)
    r.execute_command('DEBUG', 'SET-SKIP-CHECKSUM-VALIDATION', 1)
    return proc, r


def test_an_unsanitized_corrupt_stream_is_kept_and_asserts_when_read():
    """sanitize-dump-payload no: RESTORE keeps it as Redis does; reading its entries is
    Redis's assertion on the listpack (the report, then exit 1 under use-exit-on-panic)."""
    proc, r = _unsanitized()
    try:
        assert r.restore('s', 0, BAD_LP_COUNT) == b'OK'
        r.config_set('sanitize-dump-payload', 'yes')
        with pytest.raises(redis.ResponseError, match='^Bad data format$'):
            r.restore('t', 0, BAD_LP_COUNT)
        with pytest.raises(redis.ConnectionError):
            r.xrevrange('s', 738, 638932639)
        assert proc.wait(30) == 1
        log = proc.stdout.read()
        assert log.count('=== ASSERTION FAILED ===') == 1
        assert 'crashed by signal' not in log
        # the report's client sections are whole: the list, then the client that ran it
        clients = log.split('------ CLIENT LIST OUTPUT ------\n', 1)[1]
        assert clients.startswith('id=')
        current = clients.split('------ CURRENT CLIENT INFO ------\n', 1)[1]
        assert current.startswith('id=')
    finally:
        stop(proc)


# a quicklist (type 18) of one listpack whose second entry's encoding is bad (corrupt-dump's
# 'gcc asan reports false leak on assert'): its header passes, only deep checks refuse it
BAD_LP_ENTRY = (
    b'\x12\x01\x02\x13\x13\x00\x00\x00\x10\x00\x00\x00\x03\x00\x00\xf3\xfe\x02'
    b'\x5f\x31\x04\xf1\xff\x0a\x00\x19\x8d\x3d\x74\x85\x94\x29\xbd'
)


def test_an_unsanitized_corrupt_listpack_is_kept_and_asserts_when_read():
    """sanitize-dump-payload no: RESTORE keeps the list as Redis does; LPOP reads the bad
    entry and fails Redis's assertion on the listpack (exit 1 under use-exit-on-panic)."""
    proc, r = _unsanitized('--sanitize-dump-payload', 'no')
    try:
        assert r.restore('_list', 0, BAD_LP_ENTRY) == b'OK'
        with pytest.raises(redis.ConnectionError):
            r.lpop('_list')
        assert proc.wait(30) == 1
        log = proc.stdout.read()
        assert log.count('=== ASSERTION FAILED ===') == 1
        assert "==> listpack.c:1276 'lpValidateNext(lp, &p, lpbytes)' is not true" in log
        assert 'crashed by signal' not in log
    finally:
        stop(proc)


def test_converting_a_hash_listpack_with_duplicates_panics():
    """More fields than hash-max-listpack-entries: Redis converts at RESTORE, meets the
    duplicate and panics (hashTypeConvertListpack)."""
    proc, r = _unsanitized('--hash-max-listpack-entries', '1')
    try:
        with pytest.raises(redis.ConnectionError):
            r.restore('h', 0, DUP_FIELDS)
        assert proc.wait(30) == 1
        log = proc.stdout.read()
        assert 'listpack with dup elements dump (hexdump of 23 bytes):' in log
        assert 'Guru Meditation: Listpack corruption detected' in log
    finally:
        stop(proc)


def _fill(c):
    """Values in every encoding DUMP writes: small and big, integers of each width,
    strings of each length class, a stream with a group, a consumer and pending entries."""
    ints = [127, 32767, 2147483647, 9223372036854775807, 0, 12, -5000]
    strs = [b'x' * 31, b'x' * 8191, b'x' * 65535]
    c.hset('h', mapping={f'f{i}': v for i, v in enumerate(ints + strs)})
    c.hset('hs', mapping={'a': 1, 'b': 'two'})
    c.rpush('l', *ints, *strs)
    c.rpush('ls', 1, 'a')
    c.sadd('si', *ints)
    c.sadd('ss', 'a', 'b')
    c.zadd('z', {'a': 1.5, 'b': -2, 'c': 1e300})
    c.zadd('zb', {f'm{i}': i for i in range(200)})
    for i in range(300):
        c.xadd('st', {'foo': 'abc'} if i % 10 else {'bar': i}, id=f'{i + 1}-0')
    c.xgroup_create('st', 'g', id='0')
    c.xreadgroup('g', 'alice', {'st': '>'}, count=3)
    c.xdel('st', '2-0')
    c.xack('st', 'g', '1-0')


def test_valid_payloads_pass_the_deep_checks(both):
    """redis-server's DUMP of every encoding RESTOREs on this server under
    sanitize-dump-payload yes, to the same values."""
    ours, theirs = both
    _fill(theirs)
    ours.config_set('sanitize-dump-payload', 'yes')
    try:
        for key in theirs.scan_iter():
            assert ours.restore(key, 0, theirs.dump(key)) == b'OK', key
        assert ours.execute_command('DEBUG', 'DIGEST') == theirs.execute_command('DEBUG', 'DIGEST')
        for key in list(ours.scan_iter()):  # and this server's own DUMP of them
            assert ours.restore(key + b'2', 0, ours.dump(key)) == b'OK', key
    finally:
        ours.config_set('sanitize-dump-payload', 'no')
