"""Numbers as Redis's C code reads them: glibc's strtod, Redis's string2d, and atoi.

Redis parses scores, weights, range bounds, SORT weights and float config values with
strtod-based helpers whose quirks are observable: hex floats and `inf`/`infinity` are
numbers, leading white space is accepted by strtod but not by string2d, a NUL byte ends
the string, overflow and underflow set ERANGE. One implementation serves every caller.
"""

import math
import re
from decimal import Decimal

# What glibc's strtod accepts at the start of a string, after leading white space:
# a hex float, a decimal float, inf/infinity or nan[(chars)]. Alternatives are tried in
# that order, so '0x' with no hex digit falls back to the decimal '0', as in C.
_STRTOD = re.compile(
    rb'[ \t\n\x0b\f\r]*([+-]?)(?:'
    rb'0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?[0-9]+))?'
    rb'|([0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?'
    rb'|(inf(?:inity)?)'
    rb'|(nan(?:\([0-9A-Za-z_]*\))?)'
    rb')',
    re.IGNORECASE,
)
_DBL_MIN = 2.2250738585072014e-308  # the smallest normal double


def _exponent(digits: bytes | None) -> int:
    """A binary exponent's value; past 18 digits it only matters that it is huge (C
    saturates it), and int() would refuse thousands of digits."""
    if not digits:
        return 0
    if len(digits.lstrip(b'+-0')) > 18:
        return -(10**18) if digits[:1] == b'-' else 10**18
    return int(digits)


def strtod(b: bytes) -> tuple[float, int, bool]:
    """C's strtod over the C string `b` (it ends at the first NUL): (value, end, erange),
    `end` the number of bytes consumed (0 when there was no number, value 0.0) and
    `erange` True where glibc sets errno to ERANGE: overflow to inf, underflow to zero
    or to an inexact subnormal."""
    m = _STRTOD.match(b)
    if m is None:
        return 0.0, 0, False
    sign, hex_int, hex_frac, hex_exp, dec, inf, nan = m.groups()
    negative = sign == b'-'
    if inf is not None:
        return (-math.inf if negative else math.inf), m.end(), False
    if nan is not None:
        return math.nan, m.end(), False
    if dec is not None:
        text = b[m.start(5) : m.end()]
        value = float(text)
        mantissa = text.split(b'e')[0].split(b'E')[0]
        zero = mantissa.strip(b'0.') == b''
    elif not hex_int and not hex_frac:
        # '0x' without a hex digit: C reads the '0' alone
        return (-0.0 if negative else 0.0), m.start(2) - 1, False
    else:
        digits = hex_int + (hex_frac or b'')
        mant = int(digits, 16)
        exp = _exponent(hex_exp) - 4 * len(hex_frac or b'')
        zero = mant == 0
        try:
            value = 0.0 if zero else float.fromhex('0x%xp%d' % (mant, exp))
        except OverflowError:
            value = math.inf
    a = value
    erange = a == math.inf or (a == 0 and not zero)
    if 0 < a < _DBL_MIN:  # subnormal: ERANGE unless exact
        if dec is not None:
            erange = Decimal(a) != Decimal(text.decode())
        else:
            num, den = a.as_integer_ratio()
            erange = num << -exp != mant * den  # exp < 0 for any subnormal
    return (-value if negative else value), m.end(), erange


_SPACE = b' \t\n\x0b\f\r'


def string2d(b: bytes) -> float | None:
    """Redis's string2d (getDoubleFromObject): the double value of all of `b`, or None
    when Redis rejects it: empty, leading space, trailing bytes, NaN, overflow to inf or
    underflow to zero (an inexact subnormal is accepted).

    Fast path: Python's float() agrees with strtod on a finite, non-zero decimal without
    surrounding space or underscores (the common score); everything else takes strtod."""
    try:
        v = float(b)
    except ValueError:
        v = 0.0
    if v and v - v == 0 and b[0] not in _SPACE and b[-1] not in _SPACE and 95 not in b:
        return v  # 95: '_', which float() accepts and strtod does not
    if not b or b[0] in _SPACE:
        return None
    value, end, erange = strtod(b)
    if end != len(b) or value != value:
        return None
    if erange and (value == 0 or abs(value) == math.inf):
        return None
    return value


def c_int(v: int) -> int:
    """A C `(int)` cast of a 64-bit value."""
    return (v + 2**31) % 2**32 - 2**31


_ATOI = re.compile(rb'[ \t\n\x0b\f\r]*([+-]?[0-9]+)')


def atoi(b: bytes) -> int:
    """C's atoi as glibc does it, (int)strtol: leading space, a sign, digits up to the
    first other byte, saturated to 64 bits, then cut to an int; 0 without digits."""
    m = _ATOI.match(b)
    if m is None:
        return 0
    digits = m.group(1)
    v = int(digits) if len(digits) < 30 else (-(2**63) if digits[:1] == b'-' else 2**63 - 1)
    return c_int(max(-(2**63), min(v, 2**63 - 1)))
