"""GEOADD, GEODIST, GEOHASH, GEOPOS, GEORADIUS[BYMEMBER][_RO], GEOSEARCH and GEOSEARCHSTORE
as differential tests against redis-server 7.0.15, replies compared as exact bytes in RESP2
and RESP3 (coordinates are RESP3 doubles there), the order of unsorted results and of
equally distant members under COUNT included.
"""

import random

import pytest

from conftest import assert_same, assert_same_events, raw_same

SICILY = [
    ('geoadd', 'Sicily', '13.361389', '38.115556', 'Palermo', '15.087269', '37.502669', 'Catania'),
    ('geoadd', 'Sicily', '12.758489', '38.788135', 'edge1', '17.241510', '38.788135', 'edge2'),
    ('geoadd', 'Sicily', '13.361389', '38.115556', 'twin'),  # as far as Palermo from anywhere
]


def test_commands_on_the_documentation_examples(both):
    cmds = [
        *SICILY,
        ('geodist', 'Sicily', 'Palermo', 'Catania'),
        ('geodist', 'Sicily', 'Palermo', 'Catania', 'km'),
        ('geodist', 'Sicily', 'Palermo', 'Catania', 'MI'),
        ('geodist', 'Sicily', 'Palermo', 'Catania', 'ft'),
        ('geodist', 'Sicily', 'Palermo', 'Catania', 'yd'),
        ('geodist', 'Sicily', 'Palermo', 'nope'),
        ('geodist', 'none', 'Palermo', 'Catania'),
        ('geodist', 'Sicily', 'Palermo', 'Catania', 'km', 'x'),
        ('geohash', 'Sicily', 'Palermo', 'Catania', 'nope'),
        ('geohash', 'none', 'a'),
        ('geohash', 'Sicily'),
        ('geopos', 'Sicily', 'Palermo', 'Catania', 'nope'),
        ('geopos', 'none', 'a'),
        ('georadius', 'Sicily', '15', '37', '200', 'km', 'WITHDIST'),
        ('georadius', 'Sicily', '15', '37', '200', 'km', 'WITHCOORD'),
        ('georadius', 'Sicily', '15', '37', '200', 'km', 'WITHDIST', 'WITHCOORD', 'WITHHASH'),
        ('georadius', 'Sicily', '15', '37', '400', 'km', 'ASC'),
        ('georadius', 'Sicily', '15', '37', '400', 'km', 'DESC', 'COUNT', '2'),
        ('georadius', 'Sicily', '15', '37', '400', 'km', 'COUNT', '1', 'ANY'),
        ('georadiusbymember', 'Sicily', 'Palermo', '200', 'km', 'WITHDIST', 'ASC'),
        ('georadiusbymember', 'Sicily', 'Catania', '0', 'km', 'COUNT', '2'),
        ('georadiusbymember', 'Sicily', 'Catania', '300', 'km', 'COUNT', '2', 'DESC'),
        ('georadius_ro', 'Sicily', '15', '37', '200', 'km', 'WITHDIST'),
        ('georadiusbymember_ro', 'Sicily', 'Palermo', '200', 'km'),
        ('geosearch', 'Sicily', 'FROMLONLAT', '15', '37', 'BYRADIUS', '200', 'km', 'ASC'),
        ('geosearch', 'Sicily', 'FROMMEMBER', 'Palermo', 'BYBOX', '400', '400', 'km', 'ASC'),
        (
            'geosearch',
            'Sicily',
            'FROMLONLAT',
            '15',
            '37',
            'BYBOX',
            '400',
            '400',
            'km',
            'ASC',
            'WITHCOORD',
            'WITHDIST',
            'WITHHASH',
        ),  # fmt: skip
        ('geosearchstore', 'dst', 'Sicily', 'FROMLONLAT', '15', '37', 'BYRADIUS', '200', 'km'),
        ('zrange', 'dst', '0', '-1', 'WITHSCORES'),
        (
            'geosearchstore',
            'dst',
            'Sicily',
            'FROMLONLAT',
            '15',
            '37',
            'BYRADIUS',
            '200',
            'km',
            'STOREDIST',
        ),  # fmt: skip
        ('zrange', 'dst', '0', '-1', 'WITHSCORES'),
        ('georadius', 'Sicily', '15', '37', '200', 'km', 'STORE', 'dst2'),
        ('zrange', 'dst2', '0', '-1', 'WITHSCORES'),
        ('georadius', 'Sicily', '15', '37', '200', 'km', 'STOREDIST', 'dst2', 'COUNT', '1'),
        ('zrange', 'dst2', '0', '-1', 'WITHSCORES'),
        ('georadius', 'Sicily', '0', '0', '1', 'km', 'STORE', 'dst2'),  # nothing: deleted
        ('exists', 'dst2'),
        ('geosearchstore', 'dst', 'none', 'FROMMEMBER', 'x', 'BYRADIUS', '1', 'km'),
        ('exists', 'dst'),
        ('geoadd', 'Sicily', 'NX', 'CH', '13', '38', 'Palermo', '14', '37', 'new'),
        ('geoadd', 'Sicily', 'XX', 'CH', '13', '38', 'Palermo', '14', '37', 'newer'),
        ('zscore', 'Sicily', 'Palermo'),
        ('zcard', 'Sicily'),
    ]
    assert_same(both, cmds)


def test_bad_arguments(server, both):
    for client in both:
        client.hset('h', 'f', 'v')
    cmds = [
        *SICILY,
        ('geoadd', 'g', '181', '10', 'm'),
        ('geoadd', 'g', '10', '85.06', 'm'),
        ('geoadd', 'g', 'x', '10', 'm'),
        ('geoadd', 'g', '10', '10'),
        ('geoadd', 'g', 'nx', 'xx', '10', '10', 'm'),
        ('geoadd', 'g', 'gt', '10', '10', 'm'),
        ('geoadd', 'g', 'nx', 'ch', 'nx'),
        ('geoadd', 'h', '10', '10', 'm'),
        ('exists', 'g'),
        ('geopos', 'h', 'm'),
        ('geohash', 'h', 'm'),
        ('geodist', 'h', 'a', 'b'),
        ('georadius', 'h', '15', '37', '200', 'km'),
        ('georadius', 'Sicily', '15', '37', '-1', 'km'),
        ('georadius', 'Sicily', '15', '37', 'x', 'km'),
        ('georadius', 'Sicily', '15', '37', '1', 'parsec'),
        ('georadius', 'Sicily', '15', '37', '1', 'km', 'COUNT', '0'),
        ('georadius', 'Sicily', '15', '37', '1', 'km', 'COUNT', 'x'),
        ('georadius', 'Sicily', '15', '37', '1', 'km', 'COUNT'),
        ('georadius', 'Sicily', '15', '37', '1', 'km', 'ANY'),
        ('georadius', 'Sicily', '15', '37', '1', 'km', 'STORE', 'd', 'WITHDIST'),
        ('georadius', 'Sicily', '15', '37', '1', 'km', 'bogus'),
        ('georadius_ro', 'Sicily', '15', '37', '1', 'km', 'STORE', 'd'),
        ('georadiusbymember', 'Sicily', 'nope', '1', 'km'),
        ('georadiusbymember', 'none', 'nope', 'x', 'nonsense', 'STORE', 'd'),
        ('georadiusbymember', 'none', 'nope', 'x', 'nonsense'),
        ('geosearch', 'Sicily', 'BYRADIUS', '1', 'km'),
        ('geosearch', 'Sicily', 'FROMMEMBER', 'Palermo'),
        ('geosearch', 'Sicily', 'FROMMEMBER', 'nope', 'BYRADIUS', '1', 'km'),
        (
            'geosearch',
            'Sicily',
            'FROMMEMBER',
            'Palermo',
            'FROMLONLAT',
            '1',
            '1',
            'BYRADIUS',
            '1',
            'km',
        ),  # fmt: skip
        (
            'geosearch',
            'Sicily',
            'FROMMEMBER',
            'Palermo',
            'BYRADIUS',
            '1',
            'km',
            'BYBOX',
            '1',
            '1',
            'km',
        ),  # fmt: skip
        ('geosearch', 'Sicily', 'FROMMEMBER', 'Palermo', 'BYBOX', '-1', '1', 'km'),
        ('geosearch', 'Sicily', 'FROMMEMBER', 'Palermo', 'BYBOX', 'x', '1', 'km'),
        ('geosearch', 'Sicily', 'FROMMEMBER', 'Palermo', 'BYBOX', '1', 'y', 'km'),
        ('geosearch', 'Sicily', 'FROMMEMBER', 'Palermo', 'BYRADIUS', '1', 'km', 'STORE', 'd'),
        ('GeoSearch', 'Sicily', 'BYRADIUS', '1', 'km'),
        (
            'geosearchstore',
            'd',
            'Sicily',
            'FROMMEMBER',
            'Palermo',
            'BYRADIUS',
            '1',
            'km',
            'WITHDIST',
        ),  # fmt: skip
        ('geosearch', 'h', 'FROMMEMBER', 'Palermo', 'BYRADIUS', '1', 'km'),
    ]
    assert_same(both, cmds)


def test_replies_resp2_and_resp3(raw_pair):
    cmds = [
        *SICILY,
        ('geopos', 'Sicily', 'Palermo', 'nope'),
        ('geodist', 'Sicily', 'Palermo', 'Catania'),
        ('geohash', 'Sicily', 'Palermo', 'nope'),
        (
            'geosearch',
            'Sicily',
            'FROMLONLAT',
            '15',
            '37',
            'BYRADIUS',
            '300',
            'km',
            'WITHCOORD',
            'WITHDIST',
            'WITHHASH',
        ),  # fmt: skip
        ('eval', "return redis.call('geopos', 'Sicily', 'Palermo', 'nope')", '0'),
        ('eval', "redis.setresp(3) return redis.call('geopos', 'Sicily', 'Catania')", '0'),
    ]
    for proto in (2, 3):
        raw_same(raw_pair(proto), [('flushall',), *cmds])


def test_keyspace_events(both):
    assert_same_events(
        both,
        [
            *SICILY,
            ('georadius', 'Sicily', '15', '37', '200', 'km', 'STORE', 'd1'),
            ('georadius', 'Sicily', '15', '37', '200', 'km', 'STOREDIST', 'd1'),
            ('geosearchstore', 'd2', 'Sicily', 'FROMLONLAT', '15', '37', 'BYRADIUS', '9', 'km'),
            ('geosearchstore', 'd1', 'Sicily', 'FROMLONLAT', '0', '0', 'BYRADIUS', '9', 'km'),
            ('georadius', 'Sicily', '15', '37', '200', 'km'),
        ],
        'KEAn',
    )


def test_getkeys_of_the_store_forms(raw_pair):
    raw_same(
        raw_pair(2),
        [
            ('command', 'getkeys', 'georadius', 'k', '1', '2', '3', 'km', 'STORE', 'd'),
            (
                'command',
                'getkeys',
                'georadius',
                'k',
                '1',
                '2',
                '3',
                'km',
                'STOREDIST',
                'd',
                'STORE',
                'e',
            ),  # fmt: skip
            ('command', 'getkeys', 'georadiusbymember', 'k', 'm', '3', 'km'),
            ('command', 'getkeys', 'geosearchstore', 'd', 'k', 'FROMMEMBER', 'm'),
        ],
    )


def random_geo_commands(seed, n):
    """Searches of every kind around members scattered at several scales, near a random
    point (the poles and the antimeridian among them)."""
    rnd = random.Random(seed)
    cx = rnd.choice([rnd.uniform(-179, 179), 179.9, -179.9])
    cy = rnd.choice([rnd.uniform(-80, 80), 84.9, -84.9, 0.0])
    members = [f'm{i}' for i in range(30)] + ['1', '007']
    units = ['m', 'km', 'FT', 'mi']

    def lon():
        return f'{max(-180, min(180, cx + rnd.gauss(0, rnd.choice([0.01, 0.5, 5])))):.6f}'

    def lat():
        return f'{max(-85, min(85, cy + rnd.gauss(0, rnd.choice([0.01, 0.5, 5])))):.6f}'

    def radius():
        return rnd.choice(['0', '1', '1000', '50000', '500000', '5000000', '20000000'])

    def options():
        out = []
        for _ in range(rnd.randrange(4)):
            out += rnd.choice(
                [
                    ['WITHDIST'],
                    ['WITHCOORD'],
                    ['WITHHASH'],
                    ['ASC'],
                    ['DESC'],
                    ['ANY'],
                    ['COUNT', rnd.choice(['1', '2', '5'])],
                ]  # fmt: skip
            )
        return out

    cmds = []
    for _ in range(n):
        t = rnd.randrange(8)
        if t < 3:
            args = ['geoadd', 'g']
            for _ in range(rnd.randrange(1, 6)):
                args += [lon(), lat(), rnd.choice(members)]
            cmds.append(tuple(args))
        elif t == 3:
            cmds.append(('geopos', 'g', *rnd.sample(members, 3)))
        elif t == 4:
            cmds.append(('geodist', 'g', *rnd.sample(members, 2), rnd.choice(units)))
        elif t == 5:
            cmds.append(('georadius', 'g', lon(), lat(), radius(), rnd.choice(units), *options()))
        elif t == 6:
            by = ['BYRADIUS', radius(), 'm']
            if rnd.random() < 0.5:
                by = ['BYBOX', radius(), radius(), 'm']
            cmds.append(('geosearch', 'g', 'FROMMEMBER', rnd.choice(members), *by, *options()))
        else:
            cmds.append(('georadiusbymember', 'g', rnd.choice(members), radius(), 'm', *options()))
    return cmds


@pytest.mark.parametrize('seed', [1, 2, 3, 4])
def test_random_searches(raw_pair, seed):
    proto = 2 if seed % 2 else 3
    raw_same(raw_pair(proto), [('flushall',), *random_geo_commands(seed, 400)])
