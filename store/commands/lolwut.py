"""LOLWUT (Redis 7.0's lolwut.c, lolwut5.c, lolwut6.c): computer art and the version.

Without VERSION, or with one other than 5 and 6, the reply is Redis 7.0's: the version
alone. VERSION 5 draws Georg Nees' Schotter in Braille characters (LOLWUT columns
squares-per-row squares-per-col), VERSION 6 a skyline in four terminal grays (LOLWUT
columns rows); both take their randomness where Redis does, so only the first two rows of
squares, the sizes and the texts are the same from one call (or server) to the next.
"""

import math
import random
import struct

from ..command_table import Family
from ..context import Client
from ..resp import RedisError, Verbatim, string2ll
from ..version import VERSION

COMMANDS = Family('server', since='5.0.0')

E_NOT_INT = 'ERR value is not an integer or out of range'
RAND_MAX = 2**31 - 1


def _f32(x: float) -> float:
    """x as a C float holds it."""
    f: float = struct.unpack('f', struct.pack('f', x))[0]
    return f


def _long(b: bytes) -> int:
    v = string2ll(b)
    if v is None:
        raise RedisError(E_NOT_INT)
    return v


def _rand() -> int:
    return random.getrandbits(31)  # C's rand(): 0 .. RAND_MAX


class Canvas:
    """lwCanvas: width x height pixels of one color each; drawing outside is ignored."""

    def __init__(self, width: int, height: int, color: int) -> None:
        self.width, self.height = width, height
        self.pixels = bytearray([color]) * (width * height)

    def set(self, x: int, y: int, color: int) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            self.pixels[x + y * self.width] = color

    def get(self, x: int, y: int) -> int:
        if 0 <= x < self.width and 0 <= y < self.height:
            return self.pixels[x + y * self.width]
        return 0

    def line(self, x1: int, y1: int, x2: int, y2: int, color: int) -> None:
        """Bresenham's line, both ends included."""
        dx, dy = abs(x2 - x1), abs(y2 - y1)
        sx = 1 if x1 < x2 else -1
        sy = 1 if y1 < y2 else -1
        err = dx - dy
        while True:
            self.set(x1, y1, color)
            if x1 == x2 and y1 == y2:
                return
            e2 = err * 2
            if e2 > -dy:
                err -= dy
                x1 += sx
            if e2 < dx:
                err += dx
                y1 += sy

    def square(self, x: int, y: int, size: float, angle: float, color: int) -> None:
        """A square centred on x, y, turned by `angle`: its corners on a circle."""
        size = _f32(round(_f32(size / 1.4142135623)))
        k = _f32(math.pi / 4 + angle)
        px, py = [], []
        for _ in range(4):
            px.append(int(_c_round(math.sin(k) * size + x)))
            py.append(int(_c_round(math.cos(k) * size + y)))
            k = _f32(k + math.pi / 2)
        for j in range(4):
            self.line(px[j], py[j], px[(j + 1) % 4], py[(j + 1) % 4], color)


def _c_round(v: float) -> int:
    """C's round(): halves away from zero (Python's round() goes to even)."""
    return math.floor(v + 0.5) if v >= 0 else -math.floor(-v + 0.5)


def schotter(cols: int, per_row: int, per_col: int) -> Canvas:
    """LOLWUT 5: rows of squares that turn and drift more the lower they are."""
    width = cols * 2
    padding = 2 if width > 4 else 0
    side = _f32((width - padding * 2) / per_row)
    canvas = Canvas(width, int(_f32(side * per_col + padding * 2)), 0)
    for y in range(per_col):
        for x in range(per_row):
            sx = int(_f32(x * side + side / 2 + padding))
            sy = int(_f32(y * side + side / 2 + padding))
            angle = 0.0
            if y > 1:
                r1, r2, r3 = (_f32(_rand() / RAND_MAX / per_col * y) for _ in range(3))
                if _rand() % 2:
                    r1 = -r1
                if _rand() % 2:
                    r2 = -r2
                if _rand() % 2:
                    r3 = -r3
                angle = r1
                sx = int(sx + _f32(r2 * side / 3))
                sy = int(sy + _f32(r3 * side / 3))
            canvas.square(sx, sy, side, angle, 1)
    return canvas


# Pixels of a 2x4 cell -> bit of its Braille character (U+2800 + bits)
_BRAILLE = ((0, 0, 0), (0, 1, 1), (0, 2, 2), (1, 0, 3), (1, 1, 4), (1, 2, 5), (0, 3, 6), (1, 3, 7))


def braille(canvas: Canvas) -> str:
    rows = []
    for y in range(0, canvas.height, 4):
        row = []
        for x in range(0, canvas.width, 2):
            bits = 0
            for dx, dy, bit in _BRAILLE:
                if canvas.get(x + dx, y + dy):
                    bits |= 1 << bit
            row.append(chr(0x2800 + bits))
        rows.append(''.join(row) + ('\n' if y != canvas.height - 1 else ''))
    return ''.join(rows)


def skyline(cols: int, rows: int) -> Canvas:
    """LOLWUT 6: two rows of skyscrapers in the grays behind, one with windows in front."""
    canvas = Canvas(cols, rows, 3)
    h = rows
    for color in (2, 1):
        offset = -10
        while offset < cols:
            offset += _rand() % 8
            width = 10 + _rand() % 9
            height = h // 2 + (_rand() % h) // (2 if color == 2 else 3)
            _skyscraper(canvas, offset, width, height, False, color)
            offset += width // 2 if color == 2 else width + 1
    offset = -10
    while offset < cols:
        offset += _rand() % 8
        width = 5 + _rand() % 14
        if width % 4:
            width += width % 3
        height = h // 3 + (_rand() % h) // 2
        _skyscraper(canvas, offset, width, height, True, 0)
        offset += width + 5
    return canvas


def _skyscraper(
    canvas: Canvas, xoff: int, width: int, height: int, windows: bool, color: int
) -> None:
    """A building from the bottom row up, its roof two pixels narrower each side; the
    windows of the front ones are one of the two grays, two pixels wide."""
    bottom = canvas.height - 1
    top = bottom - height + 1
    for y in range(bottom, top - 1, -1):
        for x in range(xoff, xoff + width):
            if y == top and (x <= xoff + 1 or x >= xoff + width - 2):
                continue
            c = color
            if windows and xoff + 1 < x < xoff + width - 2 and top + 1 < y < bottom - 1:
                relx, rely = x - (xoff + 1), y - (top + 1)
                if (relx // 2) % 2 and rely % 2:
                    c = 1 + _rand() % 2
                    while c == color:
                        c = 1 + _rand() % 2
                    if relx % 2:
                        c = canvas.get(x - 1, y)
            canvas.set(x, y, c)


_GRAYS = ('0;30;40m', '0;90;100m', '0;37;47m', '0;97;107m')


def grays(canvas: Canvas) -> str:
    lines = []
    for y in range(canvas.height):
        cells = ''.join(f'\033[{_GRAYS[canvas.get(x, y)]} \033[0m' for x in range(canvas.width))
        lines.append(cells)
    return '\n'.join(lines)


@COMMANDS.command(
    'lolwut',
    -1,
    flags='readonly fast',
    categories='@read @fast',
    summary='Display some computer art and the Redis version',
)
def lolwut(c: Client, args: list[bytes]) -> Verbatim:
    version = None
    if len(args) >= 3 and args[1].lower() == b'version':
        version = _long(args[2]) & 0xFFFFFFFF  # as C's %u prints it
        args = args[2:]  # the version's own arguments follow, as argv[1:]
    if version == 5:
        cols, per_row, per_col = _options(args, (66, 8, 12))
        text = braille(schotter(min(cols, 1000), min(per_row, 200), min(per_col, 200)))
        text += f'\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. {VERSION}\n'
    elif version == 6:
        cols, rows = _options(args, (80, 20))
        text = grays(skyline(min(cols, 1000), min(rows, 1000)))
        text += (
            '\nDedicated to the 8 bit game developers of past and present.\n'
            f'Original 8 bit image from Plaguemon by hikikomori. Redis ver. {VERSION}\n'
        )
    else:  # what Redis 7.0 itself draws
        text = f'Redis ver. {VERSION}\n'
    return Verbatim(text.encode())


def _options(args: list[bytes], defaults: tuple[int, ...]) -> list[int]:
    """The version's numeric arguments (as many as it takes, the rest ignored), at
    least 1 each."""
    given = [_long(a) for a in args[1 : 1 + len(defaults)]]
    return [max(v, 1) for v in given + list(defaults[len(given) :])]
