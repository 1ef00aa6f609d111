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
