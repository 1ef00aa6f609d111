"""Geospatial commands (Redis 7.0 geo.c): GEOADD, GEODIST, GEOHASH, GEOPOS, GEORADIUS,
GEORADIUSBYMEMBER and their _RO forms, GEOSEARCH and GEOSEARCHSTORE.

A geospatial index is a sorted set whose scores are 52-bit geohashes (store/types/
geohash.py): GEOADD is ZADD with the coordinates encoded (and answers, errs and raises
`zadd` as ZADD does), the searches scan the score ranges of the nine cells around the
centre in geo.c's order, which an unsorted reply keeps. Coordinates are answered as Redis
prints a long double for humans (`ld_format`), distances with four decimals.
"""

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from .. import events
from ..args import SYNTAX, int_arg, keyword
from ..command_table import Family, KeyFinder
from ..context import Client
from ..longdouble import ld_format
from ..pqsort import pqsort
from ..resp import NULL_ARRAY, DoubleText, Raw, RedisError
from ..types import geohash as gh
from ..types.zset import ZSet
from .aggregates import read_value, store_result
from .zsets import score_arg, zadd

COMMANDS = Family('geo', since='3.2.0')

E_UNIT = RedisError('ERR unsupported unit provided. please use M, KM, FT, MI')
E_MEMBER = RedisError('ERR could not decode requested zset member')


def _lonlat(args: list[bytes], i: int) -> tuple[float, float]:
    """extractLongLatOrReply: the pair at args[i], args[i + 1]."""
    lon, lat = score_arg(args[i]), score_arg(args[i + 1])
    if not (gh.LON_MIN <= lon <= gh.LON_MAX and gh.LAT_MIN <= lat <= gh.LAT_MAX):
        raise RedisError(f'ERR invalid longitude,latitude pair {lon:f},{lat:f}')
    return lon, lat


def _unit(b: bytes) -> float:
    """extractUnitOrReply: meters per unit."""
    unit = gh.UNITS.get(keyword(b))
    if unit is None:
        raise E_UNIT
    return unit


def _distance(d: float) -> bytes:
    """addReplyDoubleDistance."""
    return b'%.4f' % d


def _coord(x: float) -> DoubleText:
    """addReplyHumanLongDouble of a double."""
    return DoubleText(ld_format(Fraction(x)))


@COMMANDS.command(
    'geoadd',
    -5,
    flags='write denyoom',
    keys=(1, 1, 1),
    categories='@write @geo @slow',
    summary='Add one or more geospatial items in the geospatial index represented using a '
    'sorted set',
    key_specs='RW update; index 1; range 0 1 0',
)
def geoadd(c: Client, args: list[bytes]) -> Any:
    i, n = 2, len(args)
    opts: set[bytes] = set()
    while i < n and keyword(args[i]) in (b'nx', b'xx', b'ch'):
        opts.add(keyword(args[i]))
        i += 1
    if (n - i) % 3 or {b'nx', b'xx'} <= opts:
        raise SYNTAX
    zargs = [b'zadd', *args[1:i]]
    for j in range(i, n, 3):
        lon, lat = _lonlat(args, j)
        zargs += [b'%d' % gh.encode(lon, lat), args[j + 2]]
    return zadd(c, zargs)


def _position(z: ZSet | None, member: bytes) -> tuple[float, float] | None:
    """(lon, lat) of a member, None when it is not there."""
    score = z.score(member) if z is not None else None
    return None if score is None else gh.decode_score(score)


@COMMANDS.command(
    'geodist',
    -4,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @geo @slow',
    summary='Returns the distance between two members of a geospatial index',
    key_specs='RO access; index 1; range 0 1 0',
)
def geodist(c: Client, args: list[bytes]) -> Any:
    unit = 1.0
    if len(args) == 5:
        unit = _unit(args[4])
    elif len(args) > 5:
        raise SYNTAX
    z = read_value(c, args[1], ZSet)
    if z is None:
        return None
    a, b = _position(z, args[2]), _position(z, args[3])
    if a is None or b is None:
        return None
    return _distance(gh.distance(a[0], a[1], b[0], b[1]) / unit)


@COMMANDS.command(
    'geohash',
    -2,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @geo @slow',
    summary='Returns members of a geospatial index as standard geohash strings',
    key_specs='RO access; index 1; range 0 1 0',
)
def geohash(c: Client, args: list[bytes]) -> Any:
    z = read_value(c, args[1], ZSet)
    out: list[bytes | None] = []
    for member in args[2:]:
        xy = _position(z, member)
        out.append(None if xy is None else gh.standard_geohash(*xy))
    return out


@COMMANDS.command(
    'geopos',
    -2,
    flags='readonly',
    keys=(1, 1, 1),
    categories='@read @geo @slow',
    summary='Returns longitude and latitude of members of a geospatial index',
    key_specs='RO access; index 1; range 0 1 0',
)
def geopos(c: Client, args: list[bytes]) -> Any:
    z = read_value(c, args[1], ZSet)
    out: list[Raw | list[DoubleText]] = []
    for member in args[2:]:
        xy = _position(z, member)
        out.append(NULL_ARRAY if xy is None else [_coord(xy[0]), _coord(xy[1])])
    return out


# -- searches ----------------------------------------------------------------------------

COORDS, MEMBER, NOSTORE, SEARCH, SEARCHSTORE = 1, 2, 4, 8, 16

# what a search found: (distance, score, member, lon, lat)
Found = tuple[float, float, bytes, float, float]


def _radius(args: list[bytes], i: int) -> tuple[float, float]:
    """extractDistanceOrReply: (radius, unit)."""
    radius = score_arg(args[i], 'ERR need numeric radius')
    if radius < 0:
        raise RedisError('ERR radius cannot be negative')
    return radius, _unit(args[i + 1])


def _box(args: list[bytes], i: int) -> tuple[float, float, float]:
    """extractBoxOrReply: (width, height, unit)."""
    width = score_arg(args[i], 'ERR need numeric width')
    height = score_arg(args[i + 1], 'ERR need numeric height')
    if height < 0 or width < 0:
        raise RedisError('ERR height or width cannot be negative')
    return width, height, _unit(args[i + 2])


def _scan(z: ZSet, shape: gh.Shape, limit: int) -> list[Found]:
    """membersOfAllNeighbors: (distance, score, member, lon, lat) of the members inside
    the shape, cell by cell; `limit` (ANY) stops the scan once that many were found."""
    found: list[Found] = []
    cells = gh.areas(shape)
    last = 0
    for i, area in enumerate(cells):
        if area is None:
            continue
        if last and area == cells[last]:  # huge radii: a neighbour equal to the last one
            continue
        if found and limit and len(found) >= limit:
            break
        low, high = gh.score_range(*area)
        for score, member in z.order.irange((low, b''), (high, b''), inclusive=(True, False)):
            lon, lat = gh.decode_score(score)
            d = shape.contains(lon, lat)
            if d is not None:
                found.append((d, score, member, lon, lat))
                if limit and len(found) >= limit:
                    break
        last = i
    return found


def _search(c: Client, args: list[bytes], src: int, flags: int) -> Any:
    """georadiusGeneric."""
    name = args[0].decode('utf-8', 'replace')  # as sent, in the errors naming it
    z = read_value(c, args[src], ZSet)
    lon: float | None = None
    lat: float | None = None
    radius: float | None = None
    width: float | None = None
    height: float | None = None
    unit = 1.0
    if flags & COORDS:
        base = 6
        lon, lat = _lonlat(args, 2)
        radius, unit = _radius(args, 4)
    elif flags & MEMBER:
        base = 5
        if z is not None:
            xy = _position(z, args[2])
            if xy is None:
                raise E_MEMBER
            lon, lat = xy
            radius, unit = _radius(args, 3)
    else:
        base = 3 if flags & SEARCHSTORE else 2
    withdist = withhash = withcoord = any_ = False
    frommember = fromloc = byradius = bybox = False
    sort: str | None = None
    count = 0
    store: bytes | None = None
    storedist = False
    search = flags & SEARCH
    i, n = base, len(args)
    while i < n:
        arg = keyword(args[i])
        left = n - i - 1
        if arg == b'withdist':
            withdist = True
        elif arg == b'withhash':
            withhash = True
        elif arg == b'withcoord':
            withcoord = True
        elif arg == b'any':
            any_ = True
        elif arg == b'asc':
            sort = 'asc'
        elif arg == b'desc':
            sort = 'desc'
        elif arg == b'count' and left >= 1:
            count = int_arg(args[i + 1])
            if count <= 0:
                raise RedisError('ERR COUNT must be > 0')
            i += 1
        elif arg in (b'store', b'storedist') and left >= 1 and not flags & (NOSTORE | SEARCH):
            store, storedist = args[i + 1], arg == b'storedist'
            i += 1
        elif arg == b'storedist' and flags & SEARCHSTORE:
            storedist = True
        elif arg == b'frommember' and left >= 1 and search and not fromloc:
            if z is not None:
                xy = _position(z, args[i + 1])
                if xy is None:
                    raise E_MEMBER
                lon, lat = xy
            frommember = True
            i += 1
        elif arg == b'fromlonlat' and left >= 2 and search and not frommember:
            lon, lat = _lonlat(args, i + 1)
            fromloc = True
            i += 2
        elif arg == b'byradius' and left >= 2 and search and not bybox:
            radius, unit = _radius(args, i + 1)
            byradius = True
            i += 2
        elif arg == b'bybox' and left >= 3 and search and not byradius:
            width, height, unit = _box(args, i + 1)
            bybox = True
            i += 3
        else:
            raise SYNTAX
        i += 1
    if flags & SEARCHSTORE:
        store = args[1]
    if store is not None and (withdist or withhash or withcoord):
        what = 'GEOSEARCHSTORE' if flags & SEARCHSTORE else 'STORE option in GEORADIUS'
        raise RedisError(
            f'ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options'
        )
    if search and not (frommember or fromloc):
        raise RedisError(f'ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}')
    if search and not (byradius or bybox):
        raise RedisError(f'ERR exactly one of BYRADIUS and BYBOX can be specified for {name}')
    if any_ and not count:
        raise RedisError('ERR the ANY argument requires COUNT argument')
    if z is None:
        if store is not None:
            return _store(c, store, [], storedist, flags)
        return []
    if count and sort is None and not any_:
        sort = 'asc'
    shape = gh.Shape(lon, lat, unit, radius, width, height)
    found = _scan(z, shape, count if any_ else 0)
    if sort is not None:
        if count and count < len(found):  # Redis's partial quicksort: its order of ties
            pqsort(found, _by_distance(sort == 'desc'), 0, count - 1)
        else:  # glibc's qsort, a merge sort: stable
            found.sort(key=lambda f: f[0], reverse=sort == 'desc')
    if count:
        found = found[:count]
    if store is not None:
        return _store(c, store, found, storedist, flags, unit)
    if not (withdist or withhash or withcoord):
        return [f[2] for f in found]
    out: list[list[bytes | int | list[DoubleText]]] = []
    for d, score, member, x, y in found:
        item: list[bytes | int | list[DoubleText]] = [member]
        if withdist:
            item.append(_distance(d / unit))
        if withhash:
            item.append(int(score))
        if withcoord:
            item.append([_coord(x), _coord(y)])
        out.append(item)
    return out


def _by_distance(desc: bool) -> Callable[[Found, Found], int]:
    """sort_gp_asc / sort_gp_desc."""

    def cmp(x: Found, y: Found) -> int:
        r = (x[0] > y[0]) - (x[0] < y[0])
        return -r if desc else r

    return cmp


def _store(
    c: Client, dst: bytes, found: list[Found], storedist: bool, flags: int, unit: float = 1.0
) -> int:
    """STORE / STOREDIST / GEOSEARCHSTORE: the results (scores or distances) as a new
    sorted set, or the destination deleted when there are none."""
    items = [(d / unit if storedist else score, member) for d, score, member, _, _ in found]
    z = ZSet.sized(c.ks.limits, items) if items else None
    event = b'geosearchstore' if flags & SEARCH else b'georadiusstore'
    return store_result(c, dst, z, events.ZSET, event)


def _store_keys(start: int) -> KeyFinder:
    """The key specs' key finder (what COMMAND GETKEYS reports): the key, then the key
    after the first STORE, then the key after the first STOREDIST, each keyword looked for
    from args[start] on (not in the last argument)."""

    def find(args: list[bytes]) -> list[int]:
        keys = [1]
        for keyword_ in (b'store', b'storedist'):
            for i in range(start, len(args) - 1):
                if args[i].lower() == keyword_:
                    keys.append(i + 1)
                    break
        return keys

    return find


_SEARCH = dict(categories='@read @geo @slow', keys=(1, 1, 1), flags='readonly')
_RADIUS = dict(categories='@write @geo @slow', keys=(1, 1, 1), flags='write denyoom movablekeys')


@COMMANDS.command(
    'georadius',
    -6,
    summary='Query a sorted set representing a geospatial index to fetch members matching a '
    'given maximum distance from a point',
    getkeys=_store_keys(6),
    **_RADIUS,
    key_specs=(
        'RO access; index 1; range 0 1 0 | OW update; keyword STORE 6; range 0 1 0 | '
        'OW update; keyword STOREDIST 6; range 0 1 0'
    ),
)
def georadius(c: Client, args: list[bytes]) -> Any:
    return _search(c, args, 1, COORDS)


@COMMANDS.command(
    'georadius_ro',
    -6,
    since='3.2.10',
    summary='A read-only variant for GEORADIUS',
    **_SEARCH,
    key_specs='RO access; index 1; range 0 1 0',
)
def georadius_ro(c: Client, args: list[bytes]) -> Any:
    return _search(c, args, 1, COORDS | NOSTORE)


@COMMANDS.command(
    'georadiusbymember',
    -5,
    summary='Query a sorted set representing a geospatial index to fetch members matching a '
    'given maximum distance from a member',
    getkeys=_store_keys(5),
    **_RADIUS,
    key_specs=(
        'RO access; index 1; range 0 1 0 | OW update; keyword STORE 5; range 0 1 0 | '
        'OW update; keyword STOREDIST 5; range 0 1 0'
    ),
)
def georadiusbymember(c: Client, args: list[bytes]) -> Any:
    return _search(c, args, 1, MEMBER)


@COMMANDS.command(
    'georadiusbymember_ro',
    -5,
    since='3.2.10',
    summary='A read-only variant for GEORADIUSBYMEMBER',
    **_SEARCH,
    key_specs='RO access; index 1; range 0 1 0',
)
def georadiusbymember_ro(c: Client, args: list[bytes]) -> Any:
    return _search(c, args, 1, MEMBER | NOSTORE)


@COMMANDS.command(
    'geosearch',
    -7,
    since='6.2.0',
    summary='Query a sorted set representing a geospatial index to fetch members inside an '
    'area of a box or a circle.',
    **_SEARCH,
    key_specs='RO access; index 1; range 0 1 0',
)
def geosearch(c: Client, args: list[bytes]) -> Any:
    return _search(c, args, 1, SEARCH)


@COMMANDS.command(
    'geosearchstore',
    -8,
    flags='write denyoom',
    keys=(1, 2, 1),
    categories='@write @geo @slow',
    since='6.2.0',
    summary='Query a sorted set representing a geospatial index to fetch members inside an '
    'area of a box or a circle, and store the result in another key.',
    key_specs='OW update; index 1; range 0 1 0 | RO access; index 2; range 0 1 0',
)
def geosearchstore(c: Client, args: list[bytes]) -> Any:
    return _search(c, args, 2, SEARCH | SEARCHSTORE)
