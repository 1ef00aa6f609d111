"""The cluster bus's messages (cluster.h's clusterMsg), encoded and decoded byte for byte as
redis-server 7.0.15 writes and reads them.

Layout. Every message is a 2256-byte header (HEADER_LEN, Redis's CLUSTERMSG_MIN_LEN) and a
body whose layout the header's `type` picks. All integers are big-endian (htons, htonl,
htonu64), except a MODULE message's module_id, which clusterSendModule copies in the
sender's byte order (little-endian on every machine Redis runs on: that is what we write).

    offset  field                   offset  field
         0  sig "RCmb"               2128  slaveof[40] (all NUL: a master)
         4  totlen (u32)             2168  myip[46] (NUL-terminated; empty: use the peer's)
         8  ver (u16) = 1            2214  extensions (u16)
        10  port (u16)               2216  30 bytes unused
        12  type (u16)               2246  pport, cport, flags (u16 each)
        14  count (u16)              2252  state (u8)
        16  currentEpoch (u64)       2253  mflags[3]
        24  configEpoch (u64)        2256  body
        32  offset (u64)
        40  sender[40]
        80  myslots[2048] (slot j is bit j & 7 of byte j >> 3)

Bodies: PING, PONG and MEET carry `count` gossip entries of 104 bytes (nodename[40],
ping_sent and pong_received in seconds (u32), ip[46], port, cport, flags, pport, 2 unused
bytes), then, when mflags[0] has FLAG0_EXT_DATA, `extensions` ping extensions, each an
8-byte header (u32 length, the header included; u16 type; u16 unused) and its data padded
with NULs to a multiple of 8 (writeHostnamePingExt: the hostname, its NUL, the padding).
FAIL: nodename[40]. PUBLISH and PUBLISHSHARD: channel_len, message_len (u32 each), the
channel's bytes, the message's. UPDATE: configEpoch (u64), nodename[40], slots[2048].
MODULE: module_id (u64), len (u32), type (u8), the payload. FAILOVER_AUTH_REQUEST,
FAILOVER_AUTH_ACK and MFSTART are a header alone.

Encoding. `encode_ping` and the others pack the header with one precompiled Struct and
join it with the body's pieces (one pack per gossip entry). The header's `count`,
`extensions` and mflags[0]'s FLAG0_EXT_DATA bit are derived from the body, as Redis derives
them: the gossip entries' number and the extensions written for a PING, PONG or MEET, 0
for the other types (clusterBuildMessageHdr zeroes the header); totlen is the size. A
hostname of None writes no extension (Redis's behaviour when its hostname is empty); ''
writes an empty one, which Redis never sends but accepts. A field that does not fit (a name
that is not 40 bytes, an ip over 45 bytes or with a NUL, a number out of range) raises
ValueError: `struct` would otherwise truncate or pad it silently.

Decoding. `decode` takes one whole frame (`frame_length` tells the stream reader how long
it is) and checks what 7.0.15 checks before acting on a message: the signature and
totlen >= HEADER_LEN (clusterReadHandler, which drops the link), the version and totlen
equal to the length the type and its counts imply (clusterProcessPacket, which ignores the
message and keeps the link; 7.0 has no clusterIsValidPacket yet, the checks are inline).
Whatever Redis rejects raises MalformedMessage with the reason, and so does whatever would
read past the frame; nothing else is raised for any input. Strings are decoded
permissively: ip and myip as latin-1 up to the first NUL within their first 45 bytes (as
nodeIp2String terminates them), the hostname as latin-1 up to the first NUL within its
extension. An unknown type (>= TYPE_COUNT) decodes to its header with no body, its length
unchecked, as Redis only logs it; an unknown extension type is skipped. Where 7.0.15 is
unsafe we are stricter: an extension length of 64 KiB or more is refused (Redis validates
it truncated to 16 bits but walks by the full 32), PUBLISH lengths are added without the
u32 wrap-around, and extensions announced without FLAG0_EXT_DATA are ignored (Redis would
read them from past the frame).

Invariants: for every canonical message m (count, extensions and FLAG0_EXT_DATA as the
encoder derives them, at most one hostname extension), decode(encode(m)) == m; for a frame
b that Redis writes, encode(decode(b)) == b (tests/test_cluster_bus_interop.py checks its
PING, PONG and PUBLISH), except the bytes after the NUL of a gossip entry's ip, which Redis
copies from its node table as they are and we write as zeros. decode(b) returns a Message
or raises MalformedMessage, whatever b is; it never allocates by a declared length.

Costs (CPython 3.11, timeit on the development machine): encode_ping of a header, 3
gossip entries and a hostname 3 us (1.2 us without gossip, 13 us with 30 entries; a PING
every 100 ms per peer is noise); decode of the same 5 us. The 2256-byte header is packed
and unpacked by one Struct call; each gossip entry by one more.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

# -- message types (CLUSTERMSG_TYPE_*) -------------------------------------------------------
PING = 0
PONG = 1
MEET = 2
FAIL = 3
PUBLISH = 4
FAILOVER_AUTH_REQUEST = 5
FAILOVER_AUTH_ACK = 6
UPDATE = 7
MFSTART = 8
MODULE = 9
PUBLISHSHARD = 10
TYPE_COUNT = 11

# clusterGetMessageTypeString, also the names CLUSTER INFO's message counters use
TYPE_NAMES = (
    'ping',
    'pong',
    'meet',
    'fail',
    'publish',
    'auth-req',
    'auth-ack',
    'update',
    'mfstart',
    'module',
    'publishshard',
)

# -- node flags (CLUSTER_NODE_*), in the header's `flags` and each gossip entry's -----------
NODE_MASTER = 1
NODE_SLAVE = 2
NODE_PFAIL = 4
NODE_FAIL = 8
NODE_MYSELF = 16
NODE_HANDSHAKE = 32
NODE_NOADDR = 64
NODE_MEET = 128
NODE_MIGRATE_TO = 256
NODE_NOFAILOVER = 512

# -- mflags[0] bits (CLUSTERMSG_FLAG0_*) -------------------------------------------------------
FLAG0_PAUSED = 1  # master paused for a manual failover
FLAG0_FORCEACK = 2  # vote for the AUTH_REQUEST even if the master is up
FLAG0_EXT_DATA = 4  # ping extensions follow the gossip section

# -- ping extension types (clusterMsgPingtypes) -----------------------------------------------
EXT_HOSTNAME = 0

# -- sizes --------------------------------------------------------------------------------------
SIGNATURE = b'RCmb'
PROTO_VER = 1
SLOTS = 16384
SLOTS_BYTES = SLOTS // 8  # 2048
NAMELEN = 40
NULL_NAME = bytes(NAMELEN)  # CLUSTER_NODE_NULL_NAME: slaveof of a master
NET_IP_STR_LEN = 46
IP_MAX = NET_IP_STR_LEN - 1  # the bytes of an address a receiver reads
HEADER_LEN = 2256  # CLUSTERMSG_MIN_LEN: the header without the body
GOSSIP_LEN = 104  # sizeof(clusterMsgDataGossip)
EXT_HEADER_LEN = 8  # sizeof(clusterMsgPingExt)
FAIL_LEN = HEADER_LEN + NAMELEN
UPDATE_LEN = HEADER_LEN + 8 + NAMELEN + SLOTS_BYTES
PUBLISH_MIN = HEADER_LEN + 8  # channel_len, message_len
MODULE_MIN = HEADER_LEN + 13  # module_id, len, type
EMPTY_SLOTS = bytes(SLOTS_BYTES)
NO_MFLAGS = bytes(3)

PING_TYPES = frozenset((PING, PONG, MEET))
PUBLISH_TYPES = frozenset((PUBLISH, PUBLISHSHARD))
HEADER_ONLY_TYPES = frozenset((FAILOVER_AUTH_REQUEST, FAILOVER_AUTH_ACK, MFSTART))

_HEADER = struct.Struct('>4sIHHHHQQQ40s2048s40s46sH30xHHHBBBB')
_GOSSIP = struct.Struct('>40sII46sHHHH2x')
_PREFIX = struct.Struct('>4sI')
_EXT = struct.Struct('>IHH')
_PUBLISH = struct.Struct('>II')
_UPDATE = struct.Struct('>Q40s2048s')
_MODULE_LEN = struct.Struct('>IB')
assert _HEADER.size == HEADER_LEN and _GOSSIP.size == GOSSIP_LEN
assert _UPDATE.size + HEADER_LEN == UPDATE_LEN


class MalformedMessage(Exception):
    """A frame Redis would not act on, or one that would make a parser read past it."""


def type_name(mtype: int) -> str:
    """clusterGetMessageTypeString: 'ping', ..., 'unknown'."""
    return TYPE_NAMES[mtype] if 0 <= mtype < TYPE_COUNT else 'unknown'


@dataclass(slots=True)
class Header:
    """Every field of the 2256-byte header but the signature, totlen and version. Names are
    40 bytes (`slaveof` NULL_NAME for a master); `myslots` the 2048-byte slot bitmap;
    `myip` '' when the sender leaves its address to the receiver; `mflags` 3 bytes."""

    type: int
    count: int = 0
    port: int = 0
    current_epoch: int = 0
    config_epoch: int = 0
    offset: int = 0
    sender: bytes = NULL_NAME
    myslots: bytes = EMPTY_SLOTS
    slaveof: bytes = NULL_NAME
    myip: str = ''
    extensions: int = 0
    pport: int = 0
    cport: int = 0
    flags: int = 0
    state: int = 0  # CLUSTER_OK 0, CLUSTER_FAIL 1
    mflags: bytes = NO_MFLAGS


@dataclass(slots=True)
class Gossip:
    """One gossip entry (clusterMsgDataGossip): what the sender knows of another node.
    ping_sent and pong_received are seconds (Redis sends its ms times divided by 1000)."""

    nodename: bytes
    ping_sent: int = 0
    pong_received: int = 0
    ip: str = ''
    port: int = 0
    cport: int = 0
    flags: int = 0
    pport: int = 0


@dataclass(slots=True)
class Ping:
    """The body of a PING, PONG or MEET: the gossip section and the hostname extension
    (None: none sent)."""

    gossip: list[Gossip] = field(default_factory=list)
    hostname: str | None = None


@dataclass(slots=True)
class Fail:
    nodename: bytes


@dataclass(slots=True)
class Publish:
    """PUBLISH or PUBLISHSHARD, as the header's type says."""

    channel: bytes
    message: bytes


@dataclass(slots=True)
class Update:
    """The slots `nodename` serves at `config_epoch`, as a 2048-byte bitmap."""

    config_epoch: int
    nodename: bytes
    slots: bytes


@dataclass(slots=True)
class Module:
    module_id: int
    type: int
    payload: bytes


Body = Ping | Fail | Publish | Update | Module | None


@dataclass(slots=True)
class Message:
    """A header and its body: None for the header-only types and unknown ones."""

    header: Header
    body: Body = None


# -- encoding -----------------------------------------------------------------------------------


def _pack_header(h: Header, totlen: int, count: int, extensions: int, ext_flag: int) -> bytes:
    sender, slaveof, myslots, mflags = h.sender, h.slaveof, h.myslots, h.mflags
    if len(sender) != NAMELEN or len(slaveof) != NAMELEN:
        raise ValueError('sender and slaveof must be 40 bytes')
    if len(myslots) != SLOTS_BYTES:
        raise ValueError('myslots must be 2048 bytes')
    if len(mflags) != 3:
        raise ValueError('mflags must be 3 bytes')
    try:
        return _HEADER.pack(
            SIGNATURE,
            totlen,
            PROTO_VER,
            h.port,
            h.type,
            count,
            h.current_epoch,
            h.config_epoch,
            h.offset,
            sender,
            myslots,
            slaveof,
            _ip_bytes(h.myip),
            extensions,
            h.pport,
            h.cport,
            h.flags,
            h.state,
            (mflags[0] & ~FLAG0_EXT_DATA) | ext_flag,
            mflags[1],
            mflags[2],
        )
    except struct.error as e:
        raise ValueError(f'header field out of range: {e}') from None


def _ip_bytes(ip: str) -> bytes:
    b = ip.encode('latin-1')
    if len(b) > IP_MAX or b'\0' in b:
        raise ValueError(f'an address is at most {IP_MAX} bytes, without NUL: {ip!r}')
    return b


def encode_ping(
    header: Header, gossip: Sequence[Gossip] = (), hostname: str | None = None
) -> bytes:
    """A PING, PONG or MEET (header.type) with `gossip` and, unless None, the hostname
    extension (clusterSendPing)."""
    if header.type not in PING_TYPES:
        raise ValueError(f'encode_ping of a {type_name(header.type)} header')
    parts = [b'']
    pack = _GOSSIP.pack
    try:
        for g in gossip:
            nodename = g.nodename
            if len(nodename) != NAMELEN:
                raise ValueError('a gossip nodename must be 40 bytes')
            parts.append(
                pack(
                    nodename,
                    g.ping_sent,
                    g.pong_received,
                    _ip_bytes(g.ip),
                    g.port,
                    g.cport,
                    g.flags,
                    g.pport,
                )
            )
    except struct.error as e:
        raise ValueError(f'gossip field out of range: {e}') from None
    count = len(parts) - 1
    totlen = HEADER_LEN + GOSSIP_LEN * count
    if hostname is None:
        parts[0] = _pack_header(header, totlen, count, 0, 0)
    else:
        name = hostname.encode('latin-1')
        if b'\0' in name:
            raise ValueError('a hostname has no NUL')
        size = EXT_HEADER_LEN + ((len(name) + 8) & ~7)  # EIGHT_BYTE_ALIGN(len + 1)
        parts.append(_EXT.pack(size, EXT_HOSTNAME, 0))
        parts.append(name)
        parts.append(bytes(size - EXT_HEADER_LEN - len(name)))
        parts[0] = _pack_header(header, totlen + size, count, 1, FLAG0_EXT_DATA)
    return b''.join(parts)


def encode_fail(header: Header, nodename: bytes) -> bytes:
    """FAIL about `nodename` (clusterSendFail)."""
    if header.type != FAIL:
        raise ValueError(f'encode_fail of a {type_name(header.type)} header')
    if len(nodename) != NAMELEN:
        raise ValueError('nodename must be 40 bytes')
    return _pack_header(header, FAIL_LEN, 0, 0, 0) + nodename


def encode_publish(header: Header, channel: bytes, message: bytes) -> bytes:
    """PUBLISH or PUBLISHSHARD (header.type) of `message` to `channel` (clusterSendPublish)."""
    if header.type not in PUBLISH_TYPES:
        raise ValueError(f'encode_publish of a {type_name(header.type)} header')
    totlen = PUBLISH_MIN + len(channel) + len(message)
    if totlen > 0xFFFFFFFF:
        raise ValueError('a bus message is at most 4 GiB')
    return b''.join(
        (
            _pack_header(header, totlen, 0, 0, 0),
            _PUBLISH.pack(len(channel), len(message)),
            channel,
            message,
        )
    )


def encode_update(header: Header, config_epoch: int, nodename: bytes, slots: bytes) -> bytes:
    """UPDATE: `nodename` serves `slots` at `config_epoch` (clusterSendUpdate)."""
    if header.type != UPDATE:
        raise ValueError(f'encode_update of a {type_name(header.type)} header')
    if len(nodename) != NAMELEN or len(slots) != SLOTS_BYTES:
        raise ValueError('nodename must be 40 bytes and slots 2048')
    try:
        body = _UPDATE.pack(config_epoch, nodename, slots)
    except struct.error as e:
        raise ValueError(f'config_epoch out of range: {e}') from None
    return _pack_header(header, UPDATE_LEN, 0, 0, 0) + body


def encode_module(header: Header, module_id: int, mtype: int, payload: bytes) -> bytes:
    """MODULE: `payload` for the receivers of module `module_id`, message type `mtype`
    (clusterSendModule)."""
    if header.type != MODULE:
        raise ValueError(f'encode_module of a {type_name(header.type)} header')
    totlen = MODULE_MIN + len(payload)
    if totlen > 0xFFFFFFFF:
        raise ValueError('a bus message is at most 4 GiB')
    try:
        body = struct.pack('<Q', module_id) + _MODULE_LEN.pack(len(payload), mtype)
    except struct.error as e:
        raise ValueError(f'module field out of range: {e}') from None
    return b''.join((_pack_header(header, totlen, 0, 0, 0), body, payload))


def encode_header_only(header: Header) -> bytes:
    """FAILOVER_AUTH_REQUEST, FAILOVER_AUTH_ACK, MFSTART, or a type this version does not
    know (a header alone)."""
    if header.type < TYPE_COUNT and header.type not in HEADER_ONLY_TYPES:
        raise ValueError(f'a {type_name(header.type)} message has a body')
    return _pack_header(header, HEADER_LEN, 0, 0, 0)


def encode(msg: Message) -> bytes:
    """Any message, by its header's type (the encoders above, for their callers' clarity)."""
    h, body = msg.header, msg.body
    t = h.type
    if t in PING_TYPES:
        if isinstance(body, Ping):
            return encode_ping(h, body.gossip, body.hostname)
    elif t == FAIL:
        if isinstance(body, Fail):
            return encode_fail(h, body.nodename)
    elif t in PUBLISH_TYPES:
        if isinstance(body, Publish):
            return encode_publish(h, body.channel, body.message)
    elif t == UPDATE:
        if isinstance(body, Update):
            return encode_update(h, body.config_epoch, body.nodename, body.slots)
    elif t == MODULE:
        if isinstance(body, Module):
            return encode_module(h, body.module_id, body.type, body.payload)
    elif body is None:
        return encode_header_only(h)
    raise ValueError(f'a {type_name(t)} message with a {type(body).__name__} body')


# -- decoding -----------------------------------------------------------------------------------


def frame_length(buf: bytes | bytearray | memoryview) -> int:
    """The totlen of the frame `buf` starts with (at least its first 8 bytes): how many
    bytes to wait for. Raises MalformedMessage where clusterReadHandler drops the link:
    a signature other than 'RCmb', or totlen below HEADER_LEN (7.0.15 applies that minimum
    to every type). There is no maximum: the reader must not allocate by it."""
    if len(buf) < 8:
        raise ValueError('frame_length needs the first 8 bytes of a frame')
    sig, totlen = _PREFIX.unpack_from(buf)
    if sig != SIGNATURE:
        raise MalformedMessage(f'bad signature {bytes(sig)!r} (not a cluster bus message)')
    if totlen < HEADER_LEN:
        raise MalformedMessage(f'totlen {totlen} is below the header length {HEADER_LEN}')
    return int(totlen)


def _str(raw: bytes) -> str:
    """A NUL-terminated field, permissively."""
    end = raw.find(b'\0')
    return (raw if end < 0 else raw[:end]).decode('latin-1')


def decode(buf: bytes | bytearray | memoryview) -> Message:
    """The message in the frame `buf` (exactly one frame: totlen must be its size)."""
    if type(buf) is not bytes:
        buf = bytes(buf)
    size = len(buf)
    if size < 8:
        raise MalformedMessage(f'truncated: {size} bytes, fewer than a signature and totlen')
    totlen = frame_length(buf)
    if totlen != size:
        raise MalformedMessage(f'totlen {totlen} but the frame has {size} bytes')
    (
        _sig,
        _totlen,
        ver,
        port,
        mtype,
        count,
        current_epoch,
        config_epoch,
        offset,
        sender,
        myslots,
        slaveof,
        myip,
        extensions,
        pport,
        cport,
        flags,
        state,
        m0,
        m1,
        m2,
    ) = _HEADER.unpack_from(buf)
    if ver != PROTO_VER:
        raise MalformedMessage(f'protocol version {ver}, not {PROTO_VER}')
    header = Header(
        mtype,
        count,
        port,
        current_epoch,
        config_epoch,
        offset,
        sender,
        myslots,
        slaveof,
        _str(myip[:IP_MAX]),
        extensions,
        pport,
        cport,
        flags,
        state,
        bytes((m0, m1, m2)),
    )
    name = type_name(mtype)
    body: Body
    if mtype in PING_TYPES:
        explen = HEADER_LEN + GOSSIP_LEN * count
        if totlen < explen:
            raise MalformedMessage(
                f'{name} with {count} gossip entries needs {explen} bytes, totlen is {totlen}'
            )
        gossip = [
            Gossip(nodename, ping_sent, pong_received, _str(ip[:IP_MAX]), p, cp, f, pp)
            for nodename, ping_sent, pong_received, ip, p, cp, f, pp in _GOSSIP.iter_unpack(
                memoryview(buf)[HEADER_LEN:explen]
            )
        ]
        hostname: str | None = None
        if m0 & FLAG0_EXT_DATA:
            for _ in range(extensions):
                if totlen - explen < EXT_HEADER_LEN:
                    raise MalformedMessage(f'{name}: extension header past totlen {totlen}')
                extlen, ext_type, _unused = _EXT.unpack_from(buf, explen)
                if extlen % 8:
                    raise MalformedMessage(f'{name}: extension of {extlen} bytes, not padded')
                if extlen < EXT_HEADER_LEN or extlen > 0xFFFF:
                    raise MalformedMessage(f'{name}: extension length {extlen} out of range')
                if totlen - explen < extlen:
                    raise MalformedMessage(f'{name}: extension of {extlen} bytes past totlen')
                if ext_type == EXT_HOSTNAME:
                    hostname = _str(buf[explen + EXT_HEADER_LEN : explen + extlen])
                explen += extlen
        if totlen != explen:
            raise MalformedMessage(f'{name} of length {totlen}, expected {explen}')
        body = Ping(gossip, hostname)
    elif mtype == FAIL:
        if totlen != FAIL_LEN:
            raise MalformedMessage(f'fail of length {totlen}, expected {FAIL_LEN}')
        body = Fail(buf[HEADER_LEN:])
    elif mtype in PUBLISH_TYPES:
        if totlen < PUBLISH_MIN:
            raise MalformedMessage(f'{name} of length {totlen}, shorter than its lengths')
        channel_len, message_len = _PUBLISH.unpack_from(buf, HEADER_LEN)
        explen = PUBLISH_MIN + channel_len + message_len
        if totlen != explen:
            raise MalformedMessage(f'{name} of length {totlen}, expected {explen}')
        mid = PUBLISH_MIN + channel_len
        body = Publish(buf[PUBLISH_MIN:mid], buf[mid:])
    elif mtype in HEADER_ONLY_TYPES:
        if totlen != HEADER_LEN:
            raise MalformedMessage(f'{name} of length {totlen}, expected {HEADER_LEN}')
        body = None
    elif mtype == UPDATE:
        if totlen != UPDATE_LEN:
            raise MalformedMessage(f'update of length {totlen}, expected {UPDATE_LEN}')
        body = Update(*_UPDATE.unpack_from(buf, HEADER_LEN))
    elif mtype == MODULE:
        if totlen < MODULE_MIN:
            raise MalformedMessage(f'module of length {totlen}, shorter than its fields')
        (module_id,) = struct.unpack_from('<Q', buf, HEADER_LEN)
        length, module_type = _MODULE_LEN.unpack_from(buf, HEADER_LEN + 8)
        explen = MODULE_MIN + length
        if totlen != explen:
            raise MalformedMessage(f'module of length {totlen}, expected {explen}')
        body = Module(module_id, module_type, buf[MODULE_MIN:])
    else:
        body = None  # an unknown type: Redis assumes it well formed and logs it
    return Message(header, body)


# -- slot bitmaps -------------------------------------------------------------------------------

_BITS = tuple(tuple(b for b in range(8) if byte >> b & 1) for byte in range(256))


def slot_bit(bitmap: bytes | bytearray, slot: int) -> bool:
    """bitmapTestBit: whether `slot` is set."""
    return bitmap[slot >> 3] & (1 << (slot & 7)) != 0


def slots_bitmap(slots: Iterable[int]) -> bytes:
    """The bitmap of `slots` (a set, a range, any iterable of slot numbers)."""
    out = bytearray(SLOTS_BYTES)
    if isinstance(slots, range) and slots.step == 1 and len(slots) > 16:
        first, last = slots.start, slots.stop - 1
        if first < 0 or last >= SLOTS:
            raise ValueError(f'slots {first}-{last} outside 0-{SLOTS - 1}')
        lo, hi = (first + 7) >> 3, (last + 1) >> 3  # whole bytes [lo, hi)
        out[lo:hi] = b'\xff' * (hi - lo)
        for s in (*range(first, lo << 3), *range(hi << 3, last + 1)):
            out[s >> 3] |= 1 << (s & 7)
        return bytes(out)
    for s in slots:
        if not 0 <= s < SLOTS:
            raise ValueError(f'slot {s} outside 0-{SLOTS - 1}')
        out[s >> 3] |= 1 << (s & 7)
    return bytes(out)


def iter_slots(bitmap: bytes | bytearray) -> Iterator[int]:
    """The set slots in increasing order; a zero byte costs one test."""
    bits = _BITS
    for i, byte in enumerate(bitmap):
        if byte:
            base = i << 3
            for b in bits[byte]:
                yield base + b


def slot_count(bitmap: bytes | bytearray) -> int:
    """How many slots are set."""
    return int.from_bytes(bitmap, 'little').bit_count()


def slot_ranges(bitmap: bytes | bytearray) -> list[tuple[int, int]]:
    """The runs of set slots as (first, last) pairs, in order. Whole bytes inside a run
    or a gap cost one test (a node's slots are a few long runs)."""
    out: list[tuple[int, int]] = []
    start = -1
    for i, byte in enumerate(bitmap):
        if byte == 0xFF and start >= 0 or byte == 0 and start < 0:
            continue
        base = i << 3
        for bit in range(8):
            if byte & (1 << bit):
                if start < 0:
                    start = base + bit
            elif start >= 0:
                out.append((start, base + bit - 1))
                start = -1
    if start >= 0:
        out.append((start, (len(bitmap) << 3) - 1))
    return out


# -- node names ---------------------------------------------------------------------------------


def random_name() -> bytes:
    """A new node name, 40 lowercase hex characters (getRandomHexChars)."""
    return os.urandom(NAMELEN // 2).hex().encode()


def valid_name(name: bytes) -> bool:
    """verifyClusterNodeId: 40 characters of [a-z0-9] (what clusterLookupNode accepts)."""
    if len(name) != NAMELEN:
        return False
    for c in name:
        if not (97 <= c <= 122 or 48 <= c <= 57):
            return False
    return True


def name_str(name: bytes) -> str:
    """A name from the wire as text (any 40 bytes decode)."""
    return name.decode('latin-1')


def name_bytes(name: str) -> bytes:
    """A 40-character name as the wire's 40 bytes."""
    b = name.encode('latin-1')
    if len(b) != NAMELEN:
        raise ValueError(f'a node name is {NAMELEN} characters: {name!r}')
    return b
