"""Long double (x87 80-bit extended) arithmetic, for INCRBYFLOAT and HINCRBYFLOAT.

Redis adds in C `long double` (80-bit x87 extended precision on x86-64: a
64-bit significand) and prints with "%.17Lf" before stripping trailing zeros. Python floats
are too narrow to reproduce that (0.1 + 0.2 prints as 0.30000000000000004 in double but as
0.3 in Redis), so the arithmetic is emulated exactly with Fractions rounded to the
long-double grid, which reproduces Redis's replies digit for digit, including huge values
such as 1e400 that a double cannot hold.
"""

import re
from decimal import Decimal
from fractions import Fraction

LD_MANT_BITS = 64  # significand bits, explicit integer bit included
LD_MIN_EXP = -16382  # exponent of the smallest normal value
LD_MAX = Fraction((1 << LD_MANT_BITS) - 1) * 2 ** (16384 - LD_MANT_BITS)
INF = float('inf')
MAX_LONG_DOUBLE_CHARS = 5 * 1024

_DEC_RE = re.compile(rb'([+-]?)(?:([0-9]+)\.?([0-9]*)|\.([0-9]+))(?:[eE]([+-]?[0-9]+))?')
_HEX_RE = re.compile(
    rb'([+-]?)0[xX](?:([0-9a-fA-F]+)\.?([0-9a-fA-F]*)|\.([0-9a-fA-F]+))'
    rb'(?:[pP]([+-]?[0-9]+))?'
)
_INF_RE = re.compile(rb'([+-]?)(?:inf|infinity)', re.I)


def ld_round(x: Fraction) -> Fraction | float:
    """Round a Fraction to the nearest long double (ties to even); INF/-INF on overflow."""
    if x == 0:
        return Fraction(0)
    neg = x < 0
    n, d = abs(x.numerator), x.denominator
    e = n.bit_length() - d.bit_length()
    if (n << max(0, -e)) < (d << max(0, e)):
        e -= 1  # now 2**e <= |x| < 2**(e+1)
    q = max(e, LD_MIN_EXP) - (LD_MANT_BITS - 1)  # exponent of one unit in the last place
    if q >= 0:
        m, r = divmod(n, d << q)
        den = d << q
    else:
        m, r = divmod(n << -q, d)
        den = d
    if 2 * r > den or (2 * r == den and m & 1):
        m += 1
    v = Fraction(m << q) if q >= 0 else Fraction(m, 1 << -q)
    if v > LD_MAX:
        return -INF if neg else INF
    return -v if neg else v


def _big_int(digits: bytes) -> int:
    """int() of a decimal digit string of any length (int() refuses > 4300 digits)."""
    return int(Decimal(digits.decode())) if len(digits) > 4000 else int(digits)


def strtold(b: bytes) -> Fraction | float | None:
    """Redis's string2ld: the long double value of `b` (a Fraction, or +-INF), or None
    when Redis rejects it (empty, leading space, trailing garbage, NaN, over/underflow)."""
    if not b or len(b) >= MAX_LONG_DOUBLE_CHARS or b[:1].isspace():
        return None
    m = _DEC_RE.fullmatch(b)
    if m is not None:
        sign, ipart, fpart, only_frac, exp = m.groups()
        digits = (ipart + fpart) if only_frac is None else only_frac
        frac_len = len(fpart) if only_frac is None else len(only_frac)
        mant = _big_int(digits)
        if mant == 0:
            return Fraction(0)
        e10 = (int(exp) if exp else 0) - frac_len
        magnitude = len(str(Decimal(mant))) + e10  # |x| < 10**magnitude
        if magnitude > 4940:
            return None  # overflow: HUGE_VALL with ERANGE
        if magnitude < -4960:
            return None  # underflow to zero with ERANGE
        x = Fraction(mant * 10**e10) if e10 >= 0 else Fraction(mant, 10**-e10)
    else:
        m = _HEX_RE.fullmatch(b)
        if m is None:
            m = _INF_RE.fullmatch(b)
            if m is None:
                return None  # garbage, or NaN (which Redis rejects too)
            return -INF if m.group(1) == b'-' else INF
        sign, ipart, fpart, only_frac, exp = m.groups()
        digits = (ipart + fpart) if only_frac is None else only_frac
        frac_len = len(fpart) if only_frac is None else len(only_frac)
        mant = int(digits, 16)
        if mant == 0:
            return Fraction(0)
        e2 = (int(exp) if exp else 0) - 4 * frac_len
        magnitude = mant.bit_length() + e2
        if magnitude > 16400:
            return None
        if magnitude < -16500:
            return None
        x = Fraction(mant << e2) if e2 >= 0 else Fraction(mant, 1 << -e2)
    v = ld_round(x)
    if v == 0 or v == INF or v == -INF:
        return None  # ERANGE to zero or HUGE_VALL: rejected
    return -v if sign == b'-' else v


def ld_format(x: Fraction) -> bytes:
    """ld2string(LD_STR_HUMAN): "%.17Lf" with trailing zeros (and a bare '.') removed."""
    neg = x < 0
    x = abs(x)
    n = x.numerator * 10**17
    d = x.denominator
    q, r = divmod(n, d)
    if 2 * r > d or (2 * r == d and q & 1):
        q += 1
    s = str(Decimal(q)).rjust(18, '0')
    s = s[:-17] + '.' + s[-17:]
    s = s.rstrip('0')
    if s.endswith('.'):
        s = s[:-1]
    if neg and s != '0':
        s = '-' + s
    return s.encode()
