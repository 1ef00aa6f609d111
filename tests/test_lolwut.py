"""LOLWUT (store/commands/lolwut.py) against redis-server 7.0.15: the same text where
Redis's has no randomness (no VERSION; VERSION 5's first two rows of squares), the same
shape where it has (sizes, lines, the credits), the same errors."""

import re

from conftest import assert_same


def test_without_randomness_the_same_text(both):
    assert_same(
        both,
        [
            ('LOLWUT',),
            ('LOLWUT', '5', '6'),  # arguments of no version: ignored
            ('LOLWUT', 'x'),
            ('LOLWUT', 'VERSION'),
            ('LOLWUT', 'VERSION', '7'),
            ('LOLWUT', 'VERSION', '4', 'x'),
            ('LOLWUT', 'VERSION', 'x'),
            ('LOLWUT', 'VERSION', '5', 'x'),
            ('LOLWUT', 'VERSION', '6', '10', 'x'),
            ('LOLWUT', 'version', '5', '10', '2', '2'),
            ('LOLWUT', 'VERSION', '5', '33', '4', '2'),
            ('LOLWUT', 'VERSION', '5', '1', '1', '1'),
            ('LOLWUT', 'VERSION', '5', '0', '-3', '0'),
            ('LOLWUT', 'VERSION', '5', '7', '3', '1'),
        ],
    )


def _shape(text):
    """Each line's width in cells (a Braille character, or a colored space) and the
    credits: what random art keeps from call to call."""
    lines = text.split('\n')
    return [line.count('\033[0m') or len(line) for line in lines], lines[-3:]


def test_random_art_has_the_same_shape(both):
    ours, theirs = both
    for cmd in (
        ('LOLWUT', 'VERSION', '5'),
        ('LOLWUT', 'VERSION', '5', '40', '5', '9'),
        ('LOLWUT', 'VERSION', '6'),
        ('LOLWUT', 'VERSION', '6', '30', '7'),
        ('LOLWUT', 'VERSION', '6', '1', '1'),
    ):
        got, want = (c.execute_command(*cmd).decode() for c in (ours, theirs))
        assert _shape(got) == _shape(want), cmd
        if cmd[2] == '6':  # four grays, one cell a character
            cells = re.findall(r'\033\[0;(\d+);(\d+)m \033\[0m', got)
            assert {c for c in cells} <= {('30', '40'), ('90', '100'), ('37', '47'), ('97', '107')}
