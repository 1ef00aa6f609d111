"""A line chart written as a PNG in pure Python (zlib + struct), so the report needs no
plotting library: an RGB canvas, Bresenham lines, filled rectangles, a 5x7 bitmap font and the
PNG encoder (one IDAT chunk, filter type 0 on every row).

    line_chart_png('expirations.png', {'user': [(ms, count), ...], ...},
                   title='expirations per minute by namespace')

The x axis is time (UTC, epoch ms), the y axis a count from zero to a rounded maximum.
"""

import struct
import time
import zlib

# 5x7 glyphs, one 5-bit row per entry, top to bottom. Lower case is drawn in upper case.
_FONT = {
    '0': '01110 10001 10011 10101 11001 10001 01110',
    '1': '00100 01100 00100 00100 00100 00100 01110',
    '2': '01110 10001 00001 00010 00100 01000 11111',
    '3': '11111 00010 00100 00010 00001 10001 01110',
    '4': '00010 00110 01010 10010 11111 00010 00010',
    '5': '11111 10000 11110 00001 00001 10001 01110',
    '6': '00110 01000 10000 11110 10001 10001 01110',
    '7': '11111 00001 00010 00100 01000 01000 01000',
    '8': '01110 10001 10001 01110 10001 10001 01110',
    '9': '01110 10001 10001 01111 00001 00010 01100',
    'A': '01110 10001 10001 11111 10001 10001 10001',
    'B': '11110 10001 10001 11110 10001 10001 11110',
    'C': '01110 10001 10000 10000 10000 10001 01110',
    'D': '11100 10010 10001 10001 10001 10010 11100',
    'E': '11111 10000 10000 11110 10000 10000 11111',
    'F': '11111 10000 10000 11110 10000 10000 10000',
    'G': '01110 10001 10000 10111 10001 10001 01111',
    'H': '10001 10001 10001 11111 10001 10001 10001',
    'I': '01110 00100 00100 00100 00100 00100 01110',
    'J': '00111 00010 00010 00010 00010 10010 01100',
    'K': '10001 10010 10100 11000 10100 10010 10001',
    'L': '10000 10000 10000 10000 10000 10000 11111',
    'M': '10001 11011 10101 10101 10001 10001 10001',
    'N': '10001 10001 11001 10101 10011 10001 10001',
    'O': '01110 10001 10001 10001 10001 10001 01110',
    'P': '11110 10001 10001 11110 10000 10000 10000',
    'Q': '01110 10001 10001 10001 10101 10010 01101',
    'R': '11110 10001 10001 11110 10100 10010 10001',
    'S': '01111 10000 10000 01110 00001 00001 11110',
    'T': '11111 00100 00100 00100 00100 00100 00100',
    'U': '10001 10001 10001 10001 10001 10001 01110',
    'V': '10001 10001 10001 10001 10001 01010 00100',
    'W': '10001 10001 10001 10101 10101 10101 01010',
    'X': '10001 10001 01010 00100 01010 10001 10001',
    'Y': '10001 10001 10001 01010 00100 00100 00100',
    'Z': '11111 00001 00010 00100 01000 10000 11111',
    ' ': '00000 00000 00000 00000 00000 00000 00000',
    ':': '00000 01100 01100 00000 01100 01100 00000',
    '-': '00000 00000 00000 11111 00000 00000 00000',
    '_': '00000 00000 00000 00000 00000 00000 11111',
    '.': '00000 00000 00000 00000 00000 01100 01100',
    ',': '00000 00000 00000 00000 01100 00100 01000',
    '/': '00000 00001 00010 00100 01000 10000 00000',
    '(': '00010 00100 01000 01000 01000 00100 00010',
    ')': '01000 00100 00010 00010 00010 00100 01000',
    '%': '11000 11001 00010 00100 01000 10011 00011',
    '=': '00000 00000 11111 00000 11111 00000 00000',
    '+': '00000 00100 00100 11111 00100 00100 00000',
    '*': '00000 10101 01110 11111 01110 10101 00000',
    '?': '01110 10001 00001 00010 00100 00000 00100',
}
_GLYPHS = {c: [int(row, 2) for row in rows.split()] for c, rows in _FONT.items()}

PALETTE = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
           (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207)]
WHITE, BLACK, GRID, AXIS = (255, 255, 255), (0, 0, 0), (225, 225, 225), (90, 90, 90)


class Canvas:
    def __init__(self, width, height, background=WHITE):
        self.w, self.h = width, height
        self.px = bytearray(bytes(background) * (width * height))

    def set(self, x, y, color):
        if 0 <= x < self.w and 0 <= y < self.h:
            i = 3 * (y * self.w + x)
            self.px[i:i + 3] = bytes(color)

    def rect(self, x0, y0, x1, y1, color):
        x0, x1 = max(0, min(x0, x1)), min(self.w - 1, max(x0, x1))
        y0, y1 = max(0, min(y0, y1)), min(self.h - 1, max(y0, y1))
        row = bytes(color) * (x1 - x0 + 1)
        for y in range(y0, y1 + 1):
            i = 3 * (y * self.w + x0)
            self.px[i:i + len(row)] = row

    def line(self, x0, y0, x1, y1, color, width=1):
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err, r = dx + dy, width // 2
        while True:
            if width == 1:
                self.set(x0, y0, color)
            else:
                self.rect(x0 - r, y0 - r, x0 - r + width - 1, y0 - r + width - 1, color)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def text(self, x, y, s, color=BLACK, scale=2):
        for ch in s:
            glyph = _GLYPHS.get(ch.upper(), _GLYPHS['?'])
            for row, bits in enumerate(glyph):
                for col in range(5):
                    if bits & (16 >> col):
                        self.rect(x + col * scale, y + row * scale,
                                  x + col * scale + scale - 1, y + row * scale + scale - 1, color)
            x += 6 * scale

    def png(self):
        stride = 3 * self.w
        raw = b''.join(b'\x00' + bytes(self.px[y * stride:(y + 1) * stride])
                       for y in range(self.h))

        def chunk(kind, data):
            return (struct.pack('>I', len(data)) + kind + data
                    + struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff))
        return (b'\x89PNG\r\n\x1a\n'
                + chunk(b'IHDR', struct.pack('>IIBBBBB', self.w, self.h, 8, 2, 0, 0, 0))
                + chunk(b'IDAT', zlib.compress(raw, 9)) + chunk(b'IEND', b''))


def text_width(s, scale=2):
    return 6 * scale * len(s) - scale


def _nice_max(v):
    if v <= 0:
        return 1
    mag = 10 ** (len(str(int(v))) - 1)
    for m in (1, 1.5, 2, 2.5, 5, 10):
        if m * mag >= v:
            return int(m * mag) if m * mag >= 1 else 1
    return int(10 * mag)


def _hhmm(ms):
    return time.strftime('%H:%M', time.gmtime(ms / 1000))


def line_chart_png(path, series, title='', step_ms=60_000, width=960, height=480,
                   y_label='per minute'):
    """Draw `series` ({name: [(x_ms, y), ...]}) as lines, zero-filling missing steps."""
    c = Canvas(width, height)
    left, right, top, bottom = 80, width - 190, 50, height - 60
    c.text((width - text_width(title)) // 2, 14, title)
    xs = sorted({x for pts in series.values() for x, _ in pts})
    if not xs:
        c.text(left + 20, (top + bottom) // 2, 'no events')
        _save(path, c)
        return
    x_lo, x_hi = xs[0], xs[-1]
    steps = (x_hi - x_lo) // step_ms
    if steps > 5000:                      # very long spans: plot the points as they are
        step_ms = None
    filled = {}
    for name, pts in series.items():
        d = dict(pts)
        if step_ms:
            filled[name] = [(x, d.get(x, 0)) for x in range(x_lo, x_hi + 1, step_ms)]
        else:
            filled[name] = sorted(pts)
    y_max = _nice_max(max((y for pts in filled.values() for _, y in pts), default=1))
    span = max(1, x_hi - x_lo)

    def px(x):
        return left + (right - left) // 2 if x_hi == x_lo else left + (x - x_lo) * (right - left) // span

    def py(y):
        return bottom - int(y * (bottom - top) / y_max)

    for i in range(6):                     # y grid and labels
        v = y_max * i / 5
        y = py(v)
        c.line(left, y, right, y, GRID)
        label = f'{v:g}' if v != int(v) else str(int(v))
        c.text(left - 8 - text_width(label), y - 7, label, AXIS)
    n_ticks = min(6, len(xs)) if x_hi > x_lo else 1
    for i in range(n_ticks):               # x ticks
        x = x_lo + (span * i // max(1, n_ticks - 1) if n_ticks > 1 else 0)
        if step_ms:                        # snap to a plotted step
            x = x_lo + round((x - x_lo) / step_ms) * step_ms
        X = px(x)
        c.line(X, bottom, X, bottom + 5, AXIS)
        label = _hhmm(x)
        c.text(X - text_width(label) // 2, bottom + 10, label, AXIS)
    c.line(left, top, left, bottom, AXIS)
    c.line(left, bottom, right, bottom, AXIS)
    c.text(right - text_width('time (UTC)'), bottom + 34, 'time (UTC)', AXIS)
    c.text(8, top - 28, y_label, AXIS)
    for i, name in enumerate(sorted(filled)):
        color = PALETTE[i % len(PALETTE)]
        pts = [(px(x), py(y)) for x, y in filled[name]]
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            c.line(x0, y0, x1, y1, color, width=3)
        for x, y in pts:
            c.rect(x - 3, y - 3, x + 3, y + 3, color)
        ly = top + 10 + 24 * i            # legend
        c.rect(right + 20, ly, right + 40, ly + 12, color)
        c.text(right + 48, ly, name[:10] or '(empty)', BLACK)
    _save(path, c)


def _save(path, canvas):
    import os
    tmp = f'{path}.tmp'
    with open(tmp, 'wb') as f:
        f.write(canvas.png())
    os.replace(tmp, path)
