"""store/cluster/messages.py: the cluster bus codec against Redis 7.0.15's layout.

The offsets are cluster.h's static_asserts (and, where the Redis source is on disk,
checked against them); the lengths and checks are clusterProcessPacket's and
clusterReadHandler's. Round trips are property tests over canonical messages (count,
extensions and FLAG0_EXT_DATA as the encoder derives them), and decode is fuzzed with
arbitrary bytes, truncated and bit-flipped frames and frames whose lengths are fixed up so
that the damage reaches the body parsers: it must return a Message or raise
MalformedMessage, nothing else.
"""

import os
import re
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.cluster import messages as m
from store.cluster.messages import (
    EMPTY_SLOTS,
    FAIL,
    FLAG0_EXT_DATA,
    FLAG0_FORCEACK,
    FLAG0_PAUSED,
    GOSSIP_LEN,
    HEADER_LEN,
    MEET,
    MODULE,
    NULL_NAME,
    PING,
    PONG,
    PUBLISH,
    PUBLISHSHARD,
    UPDATE,
    Fail,
    Gossip,
    Header,
    MalformedMessage,
    Message,
    Module,
    Ping,
    Publish,
    Update,
    decode,
    encode,
    encode_fail,
    encode_header_only,
    encode_module,
    encode_ping,
    encode_publish,
    encode_update,
    frame_length,
)

SETTINGS = settings(max_examples=200, deadline=None, database=None)
FUZZ = settings(max_examples=500, deadline=None, database=None)

CLUSTER_H = os.path.join(
    os.path.dirname(__file__), '../../.cache/redis-suite/redis-7.0.15/src/cluster.h'
)

# cluster.h's static_asserts on clusterMsg
OFFSETS = {
    'sig': 0,
    'totlen': 4,
    'ver': 8,
    'port': 10,
    'type': 12,
    'count': 14,
    'currentEpoch': 16,
    'configEpoch': 24,
    'offset': 32,
    'sender': 40,
    'myslots': 80,
    'slaveof': 2128,
    'myip': 2168,
    'extensions': 2214,
    'notused1': 2216,
    'pport': 2246,
    'cport': 2248,
    'flags': 2250,
    'state': 2252,
    'mflags': 2253,
    'data': 2256,
}

A = b'a' * 40
B = b'0123456789abcdef0123456789abcdef01234567'


def header(mtype=PING, **kw):
    return Header(mtype, **kw)


def test_constants():
    assert (m.PING, m.PONG, m.MEET, m.FAIL, m.PUBLISH) == (0, 1, 2, 3, 4)
    assert (m.FAILOVER_AUTH_REQUEST, m.FAILOVER_AUTH_ACK, m.UPDATE, m.MFSTART) == (5, 6, 7, 8)
    assert (m.MODULE, m.PUBLISHSHARD, m.TYPE_COUNT) == (9, 10, 11)
    flags = (m.NODE_MASTER, m.NODE_SLAVE, m.NODE_PFAIL, m.NODE_FAIL, m.NODE_MYSELF)
    assert flags == (1, 2, 4, 8, 16)
    more = (m.NODE_HANDSHAKE, m.NODE_NOADDR, m.NODE_MEET, m.NODE_MIGRATE_TO, m.NODE_NOFAILOVER)
    assert more == (32, 64, 128, 256, 512)
    assert (FLAG0_PAUSED, FLAG0_FORCEACK, FLAG0_EXT_DATA) == (1, 2, 4)
    assert (HEADER_LEN, GOSSIP_LEN, m.SLOTS_BYTES, m.NAMELEN) == (2256, 104, 2048, 40)
    assert len(NULL_NAME) == 40 and not any(NULL_NAME)
    assert (m.PROTO_VER, m.EXT_HOSTNAME) == (1, 0)
    assert m.type_name(PUBLISHSHARD) == 'publishshard' and m.type_name(99) == 'unknown'


def test_offsets_are_cluster_h_static_asserts():
    if not os.path.exists(CLUSTER_H):
        pytest.skip('the Redis 7.0.15 source is not on disk')
    with open(CLUSTER_H) as f:
        src = f.read()
    found = dict(
        (name, int(off)) for name, off in re.findall(r'offsetof\(clusterMsg, (\w+)\) == (\d+)', src)
    )
    assert found == OFFSETS


def test_header_fields_at_their_offsets():
    h = Header(
        type=0x0102,
        port=0x0304,
        current_epoch=0x1111111111111111,
        config_epoch=0x2222222222222222,
        offset=0x3333333333333333,
        sender=A,
        myslots=bytes(range(256)) * 8,
        slaveof=B,
        myip='10.20.30.40',
        pport=0x0506,
        cport=0x0708,
        flags=0x090A,
        state=0x0B,
        mflags=b'\x01\x0c\x0d',
    )
    b = encode_header_only(h)
    assert len(b) == HEADER_LEN

    def at(field, fmt):
        return struct.unpack_from('>' + fmt, b, OFFSETS[field])[0]

    assert at('sig', '4s') == b'RCmb'
    assert at('totlen', 'I') == HEADER_LEN
    assert at('ver', 'H') == 1
    assert at('port', 'H') == 0x0304
    assert at('type', 'H') == 0x0102
    assert at('count', 'H') == 0
    assert at('currentEpoch', 'Q') == 0x1111111111111111
    assert at('configEpoch', 'Q') == 0x2222222222222222
    assert at('offset', 'Q') == 0x3333333333333333
    assert at('sender', '40s') == A
    assert at('myslots', '2048s') == bytes(range(256)) * 8
    assert at('slaveof', '40s') == B
    assert at('myip', '46s') == b'10.20.30.40' + bytes(35)
    assert at('extensions', 'H') == 0
    assert at('notused1', '30s') == bytes(30)
    assert at('pport', 'H') == 0x0506
    assert at('cport', 'H') == 0x0708
    assert at('flags', 'H') == 0x090A
    assert at('state', 'B') == 0x0B
    assert at('mflags', '3s') == b'\x01\x0c\x0d'
    assert decode(b).header == h


def test_gossip_entry_layout():
    g = Gossip(B, 0x01020304, 0x05060708, '192.168.1.1', 0x1112, 0x1314, 0x1516, 0x1718)
    b = encode_ping(header(PING, sender=A), [g, g])
    assert len(b) == HEADER_LEN + 2 * GOSSIP_LEN
    assert struct.unpack_from('>H', b, OFFSETS['count'])[0] == 2
    for i in range(2):
        e = b[HEADER_LEN + i * GOSSIP_LEN : HEADER_LEN + (i + 1) * GOSSIP_LEN]
        assert e[0:40] == B
        assert struct.unpack_from('>II', e, 40) == (0x01020304, 0x05060708)
        assert e[48:94] == b'192.168.1.1' + bytes(35)
        assert struct.unpack_from('>HHHHH', e, 94) == (0x1112, 0x1314, 0x1516, 0x1718, 0)
    assert decode(b).body == Ping([g, g], None)


@pytest.mark.parametrize(
    'hostname, size',
    [('abcdefg', 16), ('abcdefgh', 24), ('some-host', 24), ('', 16), ('x' * 255, 8 + 256)],
)
def test_hostname_extension_as_write_hostname_ping_ext(hostname, size):
    b = encode_ping(header(PONG, mflags=b'\x01\x00\x00'), [], hostname)
    assert len(b) == HEADER_LEN + size
    assert struct.unpack_from('>H', b, OFFSETS['extensions'])[0] == 1
    assert b[OFFSETS['mflags']] == FLAG0_PAUSED | FLAG0_EXT_DATA
    assert struct.unpack_from('>IHH', b, HEADER_LEN) == (size, m.EXT_HOSTNAME, 0)
    data = b[HEADER_LEN + 8 :]
    assert data == hostname.encode() + bytes(size - 8 - len(hostname))
    assert b'\0' in data  # always terminated
    assert decode(b).body == Ping([], hostname)


def test_no_hostname_no_extension():
    b = encode_ping(header(PING, mflags=bytes([FLAG0_EXT_DATA, 0, 0]), extensions=5, count=9))
    assert len(b) == HEADER_LEN
    h = decode(b).header
    assert (h.count, h.extensions, h.mflags) == (0, 0, bytes(3))


def test_fail_publish_update_module_layouts():
    b = encode_fail(header(FAIL), B)
    assert len(b) == HEADER_LEN + 40 and b[HEADER_LEN:] == B
    assert struct.unpack_from('>I', b, 4)[0] == len(b)

    b = encode_publish(header(PUBLISH), b'chan', b'message!')
    assert len(b) == HEADER_LEN + 8 + 12
    assert struct.unpack_from('>II', b, HEADER_LEN) == (4, 8)
    assert b[HEADER_LEN + 8 :] == b'chanmessage!'
    assert struct.unpack_from('>I', b, 4)[0] == len(b)

    slots = m.slots_bitmap([5, 16383])
    b = encode_update(header(UPDATE), 0x0102030405060708, B, slots)
    assert len(b) == HEADER_LEN + 8 + 40 + 2048
    assert struct.unpack_from('>Q40s', b, HEADER_LEN) == (0x0102030405060708, B)
    assert b[HEADER_LEN + 48 :] == slots

    b = encode_module(header(MODULE), 0x0102030405060708, 7, b'xyz')
    assert len(b) == HEADER_LEN + 13 + 3
    # clusterSendModule copies module_id as it is: the sender's (little-endian) order
    assert b[HEADER_LEN : HEADER_LEN + 8] == bytes([8, 7, 6, 5, 4, 3, 2, 1])
    assert struct.unpack_from('>IB', b, HEADER_LEN + 8) == (3, 7)
    assert b[HEADER_LEN + 13 :] == b'xyz'


def test_examples_round_trip():
    g = Gossip(B, 1, 2, '::1', 7000, 17000, m.NODE_MASTER, 0)
    for msg in [
        Message(header(PING, count=1, sender=A), Ping([g], None)),
        Message(header(MEET, extensions=1, mflags=bytes([FLAG0_EXT_DATA, 0, 0])), Ping([], 'h')),
        Message(header(FAIL), Fail(B)),
        Message(header(PUBLISH), Publish(b'', b'')),
        Message(header(PUBLISHSHARD), Publish(b'c\0h', bytes(range(256)))),
        Message(header(UPDATE), Update(2**64 - 1, B, m.slots_bitmap(range(100, 200)))),
        Message(header(MODULE), Module(2**64 - 1, 255, b'\0' * 10)),
        Message(header(m.FAILOVER_AUTH_REQUEST, mflags=bytes([FLAG0_FORCEACK, 0, 0])), None),
        Message(header(m.FAILOVER_AUTH_ACK), None),
        Message(header(m.MFSTART), None),
        Message(header(11), None),
        Message(header(0xFFFF), None),
    ]:
        assert decode(encode(msg)) == msg


# -- properties -------------------------------------------------------------------------------

u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 0xFFFFFFFF)
u64 = st.integers(0, 2**64 - 1)
names = st.binary(min_size=40, max_size=40)
bitmaps = st.one_of(
    st.binary(min_size=2048, max_size=2048),
    st.sets(st.integers(0, 16383), max_size=50).map(m.slots_bitmap),
)
latin1 = st.characters(min_codepoint=1, max_codepoint=255)
ips = st.text(latin1, max_size=45).filter(lambda s: len(s.encode('latin-1')) <= 45)
gossips = st.builds(Gossip, names, u32, u32, ips, u16, u16, u16, u16)


@st.composite
def headers(draw, mtype):
    return Header(
        type=mtype,
        port=draw(u16),
        current_epoch=draw(u64),
        config_epoch=draw(u64),
        offset=draw(u64),
        sender=draw(names),
        myslots=draw(bitmaps),
        slaveof=draw(st.one_of(st.just(NULL_NAME), names)),
        myip=draw(ips),
        pport=draw(u16),
        cport=draw(u16),
        flags=draw(u16),
        state=draw(st.integers(0, 255)),
        mflags=bytes(
            [draw(st.integers(0, 255)) & ~FLAG0_EXT_DATA, *draw(st.binary(min_size=2, max_size=2))]
        ),
    )


@st.composite
def messages(draw):
    """Canonical messages of every kind."""
    kind = draw(st.sampled_from(['ping', 'fail', 'publish', 'update', 'module', 'bare']))
    if kind == 'ping':
        h = draw(headers(draw(st.sampled_from([PING, PONG, MEET]))))
        gossip = draw(st.lists(gossips, max_size=5))
        hostname = draw(st.one_of(st.none(), st.text(latin1, max_size=300)))
        h.count = len(gossip)
        if hostname is not None:
            h.extensions = 1
            h.mflags = bytes([h.mflags[0] | FLAG0_EXT_DATA]) + h.mflags[1:]
        return Message(h, Ping(gossip, hostname))
    if kind == 'fail':
        return Message(draw(headers(FAIL)), Fail(draw(names)))
    if kind == 'publish':
        h = draw(headers(draw(st.sampled_from([PUBLISH, PUBLISHSHARD]))))
        return Message(h, Publish(draw(st.binary(max_size=300)), draw(st.binary(max_size=300))))
    if kind == 'update':
        return Message(draw(headers(UPDATE)), Update(draw(u64), draw(names), draw(bitmaps)))
    if kind == 'module':
        body = Module(draw(u64), draw(st.integers(0, 255)), draw(st.binary(max_size=300)))
        return Message(draw(headers(MODULE)), body)
    mtype = draw(st.one_of(st.sampled_from([5, 6, 8]), st.integers(11, 0xFFFF)))
    return Message(draw(headers(mtype)), None)


@SETTINGS
@given(messages())
def test_decode_encode_round_trip(msg):
    b = encode(msg)
    assert frame_length(b) == len(b) == struct.unpack_from('>I', b, 4)[0]
    assert decode(b) == msg
    assert encode(decode(b)) == b
    assert decode(bytearray(b)) == msg and decode(memoryview(b)) == msg


def _decodes_or_malformed(b):
    try:
        msg = decode(b)
    except MalformedMessage as e:
        assert str(e)
        return None
    assert isinstance(msg, Message)
    return msg


@FUZZ
@given(st.binary(max_size=5000))
def test_decode_arbitrary_bytes(b):
    _decodes_or_malformed(b)
    _decodes_or_malformed(b'RCmb' + b)


@FUZZ
@given(messages(), st.data())
def test_decode_truncated_or_bit_flipped(msg, data):
    b = bytearray(encode(msg))
    cut = data.draw(st.integers(0, len(b)))
    assert _decodes_or_malformed(bytes(b[:cut])) is None or cut == len(b)
    for _ in range(data.draw(st.integers(1, 8))):
        bit = data.draw(st.integers(0, len(b) * 8 - 1))
        b[bit >> 3] ^= 1 << (bit & 7)
    _decodes_or_malformed(bytes(b))
    if data.draw(st.booleans()):  # past the frame checks, into the body's
        b[0:10] = struct.pack('>4sIH', b'RCmb', len(b), 1)
        _decodes_or_malformed(bytes(b))


@st.composite
def structured_frames(draw):
    """A valid frame prefix (signature, totlen = size, version 1) with random type, count,
    extensions and mflags, and a random body: the fuzzing reaches every body parser."""
    mtype = draw(st.one_of(st.integers(0, 12), u16))
    count = draw(st.one_of(st.integers(0, 4), u16))
    extensions = draw(st.one_of(st.integers(0, 4), u16))
    m0 = draw(st.sampled_from([0, FLAG0_EXT_DATA, 0xFF]))
    gossip_part = bytes(GOSSIP_LEN * min(count, 4)) if draw(st.booleans()) else b''
    tail = draw(st.binary(max_size=400))
    if draw(st.booleans()):  # a plausible extension header first
        ext_len = draw(st.one_of(st.sampled_from([0, 8, 16, 24, 0x10008, 7]), u32))
        tail = struct.pack('>IHH', ext_len, draw(st.integers(0, 3)), 0) + tail
    body = gossip_part + tail
    h = bytearray(encode_header_only(Header(m.MFSTART)))
    struct.pack_into('>IHHHH', h, 4, HEADER_LEN + len(body), 1, 0, mtype, count)
    struct.pack_into('>H', h, OFFSETS['extensions'], extensions)
    h[OFFSETS['mflags']] = m0
    if mtype in (PUBLISH, PUBLISHSHARD, MODULE) and len(body) >= 8 and draw(st.booleans()):
        n = len(body) - 8
        a = draw(st.integers(0, n))
        fields = (a, n - a) if mtype != MODULE else (0, max(n - 5, 0))
        body = struct.pack('>II', *fields) + body[8:]
    return bytes(h) + body


@FUZZ
@given(structured_frames())
def test_decode_structured_fuzz(b):
    msg = _decodes_or_malformed(b)
    if msg is not None and msg.header.type < m.TYPE_COUNT:
        assert len(encode(msg)) <= len(b)  # unknown extensions are dropped, nothing added


# -- what decode rejects ----------------------------------------------------------------------


def _with(b, offset, fmt, *values):
    b = bytearray(b)
    struct.pack_into('>' + fmt, b, offset, *values)
    return bytes(b)


def _retotal(b):
    return _with(b, 4, 'I', len(b))


def _rejected(b, words):
    with pytest.raises(MalformedMessage, match=words):
        decode(b)


def test_frame_checks():
    good = encode_ping(header(PING))
    _rejected(b'', 'truncated')
    _rejected(b'RCmb\0\0', 'truncated')
    _rejected(b'GET / HTTP/1.1\r\n' + good, 'signature')
    _rejected(_with(good, 4, 'I', 100)[:100], 'below the header length')
    _rejected(good[:-1], 'totlen 2256 but the frame has 2255')
    _rejected(good + b'\0', 'totlen 2256 but the frame has 2257')
    _rejected(_with(good, 8, 'H', 0), 'version 0')
    _rejected(_with(good, 8, 'H', 2), 'version 2')


def test_ping_checks():
    g = Gossip(B)
    two = encode_ping(header(PING), [g, g])
    _rejected(_with(two, 14, 'H', 3), 'ping with 3 gossip entries needs 2568 bytes')
    _rejected(_with(two, 14, 'H', 1), 'ping of length 2464, expected 2360')  # trailing entry
    _rejected(_retotal(encode_ping(header(MEET)) + bytes(8)), 'meet of length 2264')

    ext = encode_ping(header(PONG), [g], 'host')
    at = HEADER_LEN + GOSSIP_LEN
    _rejected(_with(ext, at, 'I', 12), 'not padded')
    _rejected(_with(ext, at, 'I', 24), 'past totlen')
    _rejected(_with(ext, at, 'I', 0), 'out of range')  # Redis: stuck at 0, never adds up
    _rejected(_with(ext, OFFSETS['extensions'], 'H', 2), 'extension header past totlen')
    _rejected(_with(ext, OFFSETS['extensions'], 'H', 0), 'pong of length 2376, expected 2360')
    _rejected(_retotal(ext + bytes(8)), 'expected 2376')
    # Redis validates the length cut to 16 bits (16) and walks by 32: refused
    _rejected(_with(ext, at, 'I', 0x10010), 'out of range')


def test_other_types_checks():
    _rejected(_retotal(encode_fail(header(FAIL), B) + b'\0'), 'fail of length 2297')
    _rejected(_retotal(encode_fail(header(FAIL), B)[:-1]), 'expected 2296')
    pub = encode_publish(header(PUBLISH), b'ch', b'msg')
    _rejected(_retotal(pub[: HEADER_LEN + 4]), 'shorter than its lengths')
    _rejected(_with(pub, HEADER_LEN, 'I', 3), 'publish of length 2269, expected 2270')
    # Redis's u32 sum wraps to 5 and accepts this one (then reads a 4 GiB channel)
    _rejected(_with(pub, HEADER_LEN, 'II', 0xFFFFFFFF, 6), 'expected 4294969565')
    shard = encode_publish(header(PUBLISHSHARD), b'', b'')
    _rejected(_retotal(shard + b'x'), 'publishshard of length 2265')
    upd = encode_update(header(UPDATE), 1, B, EMPTY_SLOTS)
    _rejected(_retotal(upd[:-1]), 'update of length 4351, expected 4352')
    mod = encode_module(header(MODULE), 1, 2, b'abc')
    _rejected(_retotal(mod[: HEADER_LEN + 12]), 'shorter than its fields')
    _rejected(_with(mod, HEADER_LEN + 8, 'I', 4), 'module of length 2272, expected 2273')
    for t in (m.FAILOVER_AUTH_REQUEST, m.FAILOVER_AUTH_ACK, m.MFSTART):
        b = _retotal(encode_header_only(header(t)) + b'\0')
        _rejected(b, f'{m.type_name(t)} of length 2257, expected 2256')


def test_unknown_type_is_its_header():
    b = _retotal(encode_header_only(header(42, sender=A)) + b'whatever')
    msg = decode(b)
    assert msg == Message(header(42, sender=A), None)


def test_extensions_skipped_and_last_hostname_wins():
    b = encode_ping(header(PING), [], 'first')
    unknown = struct.pack('>IHH', 16, 7, 0) + b'\xff' * 8
    second = struct.pack('>IHH', 16, 0, 0) + b'second\0\0'
    b = _retotal(b + unknown + second)
    b = _with(b, OFFSETS['extensions'], 'H', 3)
    assert decode(b).body == Ping([], 'second')
    only_unknown = _retotal(encode_ping(header(PING)) + unknown)
    only_unknown = _with(only_unknown, OFFSETS['extensions'], 'H', 1)
    only_unknown = _with(only_unknown, OFFSETS['mflags'], 'B', FLAG0_EXT_DATA)
    assert decode(only_unknown).body == Ping([], None)


def test_extensions_without_the_flag_are_not_read():
    b = _with(encode_ping(header(PING)), OFFSETS['extensions'], 'H', 5)
    msg = decode(b)
    assert msg.body == Ping([], None) and msg.header.extensions == 5


def test_strings_decode_permissively():
    g = bytearray(encode_ping(header(PING), [Gossip(B)], 'x'))
    g[OFFSETS['myip'] : OFFSETS['myip'] + 46] = b'\xff' * 46  # no NUL: 45 bytes are read
    g[HEADER_LEN + 48 : HEADER_LEN + 94] = b'1.2.3.4\0garbage'.ljust(46, b'\xfe')
    at = HEADER_LEN + GOSSIP_LEN + 8
    g[at : at + 8] = b'\xe9t\xe9\x80\x81xyz'  # no NUL within the extension
    msg = decode(bytes(g))
    assert msg.header.myip == '\xff' * 45
    assert msg.body.gossip[0].ip == '1.2.3.4'
    assert msg.body.hostname == 'été\x80\x81xyz'


# -- encoder ----------------------------------------------------------------------------------


def test_encoder_derives_count_extensions_and_flag():
    h = header(PUBLISH, count=7, extensions=3, mflags=b'\x07\x08\x09')
    msg = decode(encode_publish(h, b'a', b'b'))
    assert (msg.header.count, msg.header.extensions, msg.header.mflags) == (0, 0, b'\x03\x08\x09')
    msg = decode(encode_ping(header(MEET, mflags=b'\x02\x00\x00'), [Gossip(A)] * 3, 'h'))
    assert (msg.header.count, msg.header.extensions, msg.header.mflags[0]) == (3, 1, 6)


@pytest.mark.parametrize(
    'call',
    [
        lambda: encode_ping(header(FAIL)),
        lambda: encode_ping(header(PING, sender=b'short')),
        lambda: encode_ping(header(PING, slaveof=bytes(41))),
        lambda: encode_ping(header(PING, myslots=bytes(2047))),
        lambda: encode_ping(header(PING, mflags=b'\0')),
        lambda: encode_ping(header(PING, myip='1' * 46)),
        lambda: encode_ping(header(PING, myip='1.2\0')),
        lambda: encode_ping(header(PING, myip='\u0100')),
        lambda: encode_ping(header(PING, port=65536)),
        lambda: encode_ping(header(PING, current_epoch=-1)),
        lambda: encode_ping(header(PING), [Gossip(b'x' * 39)]),
        lambda: encode_ping(header(PING), [Gossip(A, ping_sent=2**32)]),
        lambda: encode_ping(header(PING), [Gossip(A, ip='a' * 46)]),
        lambda: encode_ping(header(PING), [], 'a\0b'),
        lambda: encode_fail(header(PING), A),
        lambda: encode_fail(header(FAIL), A[:-1]),
        lambda: encode_publish(header(FAIL), b'', b''),
        lambda: encode_update(header(UPDATE), 0, A, bytes(10)),
        lambda: encode_update(header(UPDATE), 2**64, A, EMPTY_SLOTS),
        lambda: encode_module(header(MODULE), 0, 256, b''),
        lambda: encode_module(header(MODULE), -1, 0, b''),
        lambda: encode_header_only(header(PING)),
        lambda: encode(Message(header(PING), None)),
        lambda: encode(Message(header(FAIL), Ping())),
        lambda: encode(Message(header(m.MFSTART), Fail(A))),
    ],
)
def test_encoder_refuses_what_does_not_fit(call):
    with pytest.raises(ValueError):
        call()


# -- frame_length -----------------------------------------------------------------------------


def test_frame_length():
    b = encode_update(header(UPDATE), 1, A, EMPTY_SLOTS)
    for buf in (b, b[:8], bytearray(b[:9]), memoryview(b)[:8]):
        assert frame_length(buf) == len(b)
    assert frame_length(_with(b[:8], 4, 'I', 0xFFFFFFFF)) == 0xFFFFFFFF  # no maximum
    assert frame_length(_with(b[:8], 4, 'I', HEADER_LEN)) == HEADER_LEN
    with pytest.raises(MalformedMessage, match='below the header length'):
        frame_length(_with(b[:8], 4, 'I', HEADER_LEN - 1))  # for every type, in 7.0.15
    with pytest.raises(MalformedMessage, match='signature'):
        frame_length(b'RCmB' + b[4:8])
    with pytest.raises(ValueError):
        frame_length(b[:7])


# -- slot bitmaps and names -------------------------------------------------------------------


@SETTINGS
@given(st.sets(st.integers(0, 16383), max_size=300))
def test_slot_bitmap_helpers(slots):
    bm = m.slots_bitmap(slots)
    assert len(bm) == 2048
    for j in list(slots)[:50] + [0, 7, 8, 16383]:
        assert m.slot_bit(bm, j) == (j in slots) == bool(bm[j >> 3] & (1 << (j & 7)))
    assert list(m.iter_slots(bm)) == sorted(slots)
    assert m.slot_count(bm) == len(slots)
    ranges = m.slot_ranges(bm)
    assert [s for a, b in ranges for s in range(a, b + 1)] == sorted(slots)
    assert all(b + 1 < c for (_, b), (c, _) in zip(ranges, ranges[1:]))


@SETTINGS
@given(st.integers(0, 16384), st.integers(0, 16384))
def test_slot_range_bitmap(a, b):
    a, b = min(a, b), max(a, b)
    bm = m.slots_bitmap(range(a, b))
    assert bm == m.slots_bitmap(set(range(a, b)))
    assert m.slot_ranges(bm) == ([(a, b - 1)] if b > a else [])


def test_slot_bitmap_bounds():
    assert m.slots_bitmap(range(16384)) == b'\xff' * 2048
    assert m.slot_ranges(b'\xff' * 2048) == [(0, 16383)]
    assert m.slots_bitmap([0]) == b'\x01' + bytes(2047)
    assert m.slots_bitmap([16383])[-1] == 0x80
    for bad in ([16384], [-1], range(-1, 100), range(0, 16385)):
        with pytest.raises(ValueError):
            m.slots_bitmap(bad)


def test_names():
    n = m.random_name()
    assert len(n) == 40 and m.valid_name(n) and re.fullmatch(rb'[0-9a-f]{40}', n)
    assert n != m.random_name()
    assert m.name_bytes(m.name_str(n)) == n
    assert m.valid_name(b'z' * 40) and not m.valid_name(b'A' * 40)
    assert not m.valid_name(NULL_NAME) and not m.valid_name(b'a' * 39)
    assert m.name_str(b'\xff' * 40) == '\xff' * 40
    with pytest.raises(ValueError):
        m.name_bytes('abc')
