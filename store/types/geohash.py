"""Geohashes as Redis 7.0's GEO commands use them (geohash.c, geohash_helper.c): the 52-bit
interleaved cell a sorted-set score holds, its neighbours, the cells that cover a search
area, and haversine distances on Redis's Earth.

A longitude/latitude pair becomes a cell of 26 halvings of each range (longitude -180..180,
latitude -85.05112878..85.05112878, the Web Mercator limits), the latitude's bits in the
even positions and the longitude's in the odd ones. Decoding gives the cell's centre, which
is what GEOPOS answers, not the coordinates given to GEOADD.

A search (GEOSEARCH, GEORADIUS) looks at nine cells, the one holding the centre and its
eight neighbours, at a precision chosen from the radius, dropping neighbours the bounding
box does not reach; members are scanned cell by cell in that order, which is the order of
an unsorted reply, so `areas` follows geohashCalculateAreasByShapeWGS84 step by step. All
arithmetic is in IEEE doubles, as C's, so distances and cells are Redis's to the bit.
"""

from __future__ import annotations

import math
from typing import Any

STEP_MAX = 26
LAT_MIN, LAT_MAX = -85.05112878, 85.05112878
LON_MIN, LON_MAX = -180.0, 180.0
EARTH_RADIUS = 6372797.560856  # meters, as EARTH_RADIUS_IN_METERS
MERCATOR_MAX = 20037726.37
D_R = math.pi / 180.0
UNITS = {b'm': 1.0, b'km': 1000.0, b'ft': 0.3048, b'mi': 1609.34}
_EVEN = 0x5555555555555555
_ODD = 0xAAAAAAAAAAAAAAAA
_M64 = (1 << 64) - 1


def _spread(v: int) -> int:
    """The 32 low bits of v in the even bit positions."""
    v &= 0xFFFFFFFF
    v = (v | (v << 16)) & 0x0000FFFF0000FFFF
    v = (v | (v << 8)) & 0x00FF00FF00FF00FF
    v = (v | (v << 4)) & 0x0F0F0F0F0F0F0F0F
    v = (v | (v << 2)) & 0x3333333333333333
    return (v | (v << 1)) & _EVEN


def _squash(v: int) -> int:
    """The even bits of v, packed into 32 bits."""
    v &= _EVEN
    v = (v | (v >> 1)) & 0x3333333333333333
    v = (v | (v >> 2)) & 0x0F0F0F0F0F0F0F0F
    v = (v | (v >> 4)) & 0x00FF00FF00FF00FF
    v = (v | (v >> 8)) & 0x0000FFFF0000FFFF
    return (v | (v >> 16)) & 0xFFFFFFFF


def encode(
    lon: float,
    lat: float,
    step: int = STEP_MAX,
    lat_range: tuple[float, float] = (LAT_MIN, LAT_MAX),
) -> int:
    """geohashEncode: the cell (`step` bits per coordinate) holding the point; at 26 bits,
    the sorted-set score GEOADD gives it (geohashAlign52Bits shifts by 0 there)."""
    lat_offset = (lat - lat_range[0]) / (lat_range[1] - lat_range[0]) * (1 << step)
    lon_offset = (lon - LON_MIN) / (LON_MAX - LON_MIN) * (1 << step)
    return _spread(int(lat_offset)) | _spread(int(lon_offset)) << 1


def cell(bits: int, step: int) -> tuple[float, float, float, float]:
    """geohashDecode: (lon min, lon max, lat min, lat max) of a cell."""
    ilat, ilon = _squash(bits), _squash(bits >> 1)
    lat_scale, lon_scale = LAT_MAX - LAT_MIN, LON_MAX - LON_MIN
    n = 1 << step
    return (
        LON_MIN + (ilon * 1.0 / n) * lon_scale,
        LON_MIN + ((ilon + 1) * 1.0 / n) * lon_scale,
        LAT_MIN + (ilat * 1.0 / n) * lat_scale,
        LAT_MIN + ((ilat + 1) * 1.0 / n) * lat_scale,
    )


def decode_score(score: float) -> tuple[float, float]:
    """decodeGeohash: the centre (lon, lat) of the cell a sorted-set score names (`cell`
    and the clamping written out: a search decodes every candidate)."""
    try:
        bits = int(score) & _M64
    except (OverflowError, ValueError):  # inf, nan: no cell (C's cast is undefined)
        bits = 0
    ilat, ilon = _squash(bits), _squash(bits >> 1)
    n = 67108864.0  # 1 << STEP_MAX
    lon_scale, lat_scale = LON_MAX - LON_MIN, LAT_MAX - LAT_MIN
    lon = (
        (LON_MIN + (ilon * 1.0 / n) * lon_scale) + (LON_MIN + ((ilon + 1) * 1.0 / n) * lon_scale)
    ) / 2
    lat = (
        (LAT_MIN + (ilat * 1.0 / n) * lat_scale) + (LAT_MIN + ((ilat + 1) * 1.0 / n) * lat_scale)
    ) / 2
    if lon > LON_MAX:
        lon = LON_MAX
    elif lon < LON_MIN:
        lon = LON_MIN
    if lat > LAT_MAX:
        lat = LAT_MAX
    elif lat < LAT_MIN:
        lat = LAT_MIN
    return lon, lat


def standard_geohash(lon: float, lat: float) -> bytes:
    """GEOHASH's 11 characters: the point encoded again with latitude -90..90."""
    bits = encode(lon, lat, STEP_MAX, (-90.0, 90.0))
    alphabet = b'0123456789bcdefghjkmnpqrstuvwxyz'
    out = bytes(alphabet[(bits >> (52 - (i + 1) * 5)) & 0x1F] for i in range(10))
    return out + b'0'


# -- distances ----------------------------------------------------------------------------


def lat_distance(lat1: float, lat2: float) -> float:
    return EARTH_RADIUS * abs(lat2 * D_R - lat1 * D_R)


def distance(lon1: float, lat1: float, lon2: float, lat2: float) -> float:
    """geohashGetDistance: haversine, along the meridian when the longitudes agree."""
    v = math.sin((lon2 * D_R - lon1 * D_R) / 2)
    if v == 0.0:
        return lat_distance(lat1, lat2)
    lat1r, lat2r = lat1 * D_R, lat2 * D_R
    u = math.sin((lat2r - lat1r) / 2)
    a = u * u + math.cos(lat1r) * math.cos(lat2r) * v * v
    return 2.0 * EARTH_RADIUS * math.asin(math.sqrt(a))


class Shape:
    """GeoShape: a centre, a radius or a width and height, in `unit` meters each."""

    __slots__ = ('lon', 'lat', 'radius', 'width', 'height', 'unit')

    lon: float
    lat: float
    unit: float
    radius: float | None  # None: a box, width by height
    width: float  # a box's sides, read only when radius is None (a circle's are None)
    height: float

    def __init__(
        self,
        lon: Any,
        lat: Any,
        unit: float,
        radius: float | None = None,
        width: Any = None,
        height: Any = None,
    ) -> None:
        # lon, lat, width and height are GEOSEARCH's parsed arguments, which mypy sees as
        # Any | None in geo.py: set or not by the options, always set where they are read
        self.lon, self.lat, self.unit = lon, lat, unit
        self.radius, self.width, self.height = radius, width, height

    def contains(self, lon: float, lat: float) -> float | None:
        """geoWithinShape: the distance in meters from the centre, None when outside."""
        if self.radius is not None:
            d = distance(self.lon, self.lat, lon, lat)
            return None if d > self.radius * self.unit else d
        if lat_distance(lat, self.lat) > self.height * self.unit / 2:
            return None
        if distance(lon, lat, self.lon, lat) > self.width * self.unit / 2:
            return None
        return distance(self.lon, self.lat, lon, lat)


# -- the cells a search scans ----------------------------------------------------------------


def _steps_for(radius: float, lat: float) -> int:
    """geohashEstimateStepsByRadius."""
    if radius == 0:
        return 26
    step = 1
    while radius < MERCATOR_MAX:
        radius *= 2
        step += 1
    step -= 2
    if lat > 66 or lat < -66:
        step -= 1
        if lat > 80 or lat < -80:
            step -= 1
    return min(max(step, 1), 26)


def _move(bits: int, step: int, dx: int, dy: int) -> int:
    """geohash_move_x / geohash_move_y: the cell dx, dy cells away (wrapping)."""
    x, y = bits & _ODD, bits & _EVEN
    if dx:
        zz = _EVEN >> (64 - step * 2)
        x = x + (zz + 1) if dx > 0 else ((x | zz) - (zz + 1)) & _M64
        x &= _ODD >> (64 - step * 2)
    if dy:
        zz = _ODD >> (64 - step * 2)
        y = y + (zz + 1) if dy > 0 else ((y | zz) - (zz + 1)) & _M64
        y &= _EVEN >> (64 - step * 2)
    return x | y


# membersOfAllNeighbors' order: the centre, N, S, E, W, NE, NW, SE, SW
_AROUND = ((0, 0), (0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (-1, 1), (1, -1), (-1, -1))


def areas(shape: Shape) -> list[tuple[int, int] | None]:
    """geohashCalculateAreasByShapeWGS84: (bits, step) of the nine cells to scan in
    membersOfAllNeighbors' order, None for the ones the bounding box does not reach."""
    lon, lat = shape.lon, shape.lat
    if shape.radius is not None:
        half_h = half_w = shape.unit * shape.radius
        radius = shape.radius
    else:
        half_h, half_w = shape.unit * (shape.height / 2), shape.unit * (shape.width / 2)
        w, h = shape.width / 2, shape.height / 2
        radius = math.sqrt(w * w + h * h)
    radius *= shape.unit
    # geohashBoundingBox
    lat_delta = half_h / EARTH_RADIUS / D_R
    top = half_w / EARTH_RADIUS / math.cos((lat + lat_delta) * D_R) / D_R
    bottom = half_w / EARTH_RADIUS / math.cos((lat - lat_delta) * D_R) / D_R
    wide = bottom if lat < 0 else top
    min_lon, max_lon = lon - wide, lon + wide
    min_lat, max_lat = lat - lat_delta, lat + lat_delta

    steps = _steps_for(radius, lat)
    bits = encode(lon, lat, steps)
    north = cell(_move(bits, steps, 0, 1), steps)
    south = cell(_move(bits, steps, 0, -1), steps)
    east = cell(_move(bits, steps, 1, 0), steps)
    west = cell(_move(bits, steps, -1, 0), steps)
    if steps > 1 and (
        north[3] < max_lat or south[2] > min_lat or east[1] < max_lon or west[0] > min_lon
    ):
        steps -= 1
        bits = encode(lon, lat, steps)
    cells: list[tuple[int, int] | None] = [
        (_move(bits, steps, dx, dy), steps) for dx, dy in _AROUND
    ]
    if steps >= 2:
        c_lon_min, c_lon_max, c_lat_min, c_lat_max = cell(bits, steps)
        drop = set()
        if c_lat_min < min_lat:
            drop |= {2, 7, 8}  # south, south-east, south-west
        if c_lat_max > max_lat:
            drop |= {1, 5, 6}  # north, north-east, north-west
        if c_lon_min < min_lon:
            drop |= {4, 8, 6}  # west, south-west, north-west
        if c_lon_max > max_lon:
            drop |= {3, 7, 5}  # east, south-east, north-east
        for i in drop:
            cells[i] = None
    return cells


def score_range(bits: int, step: int) -> tuple[int, int]:
    """scoresOfGeoHashBox: the scores [min, max) of the 52-bit cells inside a cell."""
    shift = 52 - step * 2
    return bits << shift, (bits + 1) << shift
