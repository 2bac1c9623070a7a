"""TFLite's (gemmlowp's) 32-bit fixed-point arithmetic on Python integers, for build-time tables.

An int8 operator of one int8 operand (RSQRT, ABS) has 256 possible results and DIV's divisor
256 possible reciprocals: computed here once, with C's int32 semantics (truncating division,
wrap-around) spelled out, they become constant tables and the kernels stay integer loads.
"""

from __future__ import annotations

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def wrap32(value: int) -> int:
    return (value + (1 << 31)) % (1 << 32) - (1 << 31)


def c_div(a: int, b: int) -> int:
    """C's integer division (toward zero)."""
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b > 0) else -quotient


def srdhm(a: int, b: int) -> int:
    """gemmlowp SaturatingRoundingDoublingHighMul."""
    if a == b == INT32_MIN:
        return INT32_MAX
    product = a * b
    nudge = (1 << 30) if product >= 0 else 1 - (1 << 30)
    return c_div(product + nudge, 1 << 31)


def rounding_divide_by_pot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def multiply_by_pot(x: int, exponent: int) -> int:
    """gemmlowp SaturatingRoundingMultiplyByPOT."""
    if exponent <= 0:
        return rounding_divide_by_pot(x, -exponent)
    return max(INT32_MIN, min(INT32_MAX, x << exponent))


def multiply_by_quantized_multiplier(x: int, multiplier: int, shift: int) -> int:
    """TFLite's double-rounding MultiplyByQuantizedMultiplier (x·2^left wraps as in C)."""
    left, right = max(shift, 0), max(-shift, 0)
    return rounding_divide_by_pot(srdhm(wrap32(x * (1 << left)), multiplier), right)


def one_over_one_plus_x(a: int) -> int:
    """gemmlowp one_over_one_plus_x_for_x_in_0_1 (raw Q0.31 in and out): Newton-Raphson in Q2.29."""
    return multiply_by_pot(_newton_one_over(a), 1)


def reciprocal(x: int, integer_digits: int) -> tuple[int, int]:
    """TFLite's GetReciprocal of a positive int32: (Q0.31 reciprocal, bits over unit)."""
    headroom = 32 - x.bit_length()
    shifted = wrap32(((x << headroom) & 0xFFFFFFFF) - (1 << 31))
    return one_over_one_plus_x(shifted), integer_digits - headroom


def inv_sqrt(value: int, reverse_shift: int) -> tuple[int, int]:
    """TFLite's GetInvSqrtQuantizedMultiplierExp: 1/sqrt(value) as (multiplier, shift)."""
    if value <= 1:
        return INT32_MAX, 0
    shift = 11
    while value >= 1 << 29:
        value = c_div(value, 4)
        shift += 1
    pairs = ((32 - value.bit_length()) - 1) // 2 - 1
    shift -= pairs
    value <<= 2 * pairs
    half_input = multiply_by_pot(value >> 1, -1)
    x = 1 << 28  # F3 one
    for _ in range(5):
        cube = multiply_by_pot(srdhm(srdhm(x, x), x), 6)
        x = multiply_by_pot(wrap32(srdhm((1 << 28) + (1 << 27), x) - srdhm(half_input, cube)), 3)
    x = srdhm(x, 1518500250)
    if shift < 0:
        x = wrap32(x << -shift)
        shift = 0
    return x, shift * reverse_shift


def _exp_quarter_interval(a: int) -> int:
    """gemmlowp exp_on_interval_between_negative_one_quarter_and_0_excl (Q0.31)."""
    constant = 1895147668  # exp(-1/8)
    x = wrap32(a + (1 << 28))
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    inner = multiply_by_pot(wrap32(srdhm(wrap32(multiply_by_pot(x4, -2) + x3), 715827883) + x2), -1)
    return wrap32(constant + srdhm(constant, wrap32(x + inner)))


_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401), (4, 242))


def exp_on_negative_values(a: int, integer_bits: int) -> int:
    """gemmlowp exp_on_negative_values of a raw Q(integer_bits) value ≤ 0, as Q0.31."""
    fractional = 31 - integer_bits
    quarter = 1 << (fractional - 2)
    a_mod = wrap32((a & (quarter - 1)) - quarter)
    result = _exp_quarter_interval(multiply_by_pot(a_mod, integer_bits))
    remainder = wrap32(a_mod - a)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent and remainder & (1 << (fractional + exponent)):
            result = srdhm(result, multiplier)
    if integer_bits > 5 and a < -(1 << (36 - integer_bits)):
        result = 0
    return INT32_MAX if a == 0 else result


def _newton_one_over(a: int) -> int:
    """The Q2.29 Newton iteration both gemmlowp 1/(1+x) routines share."""
    total = a + INT32_MAX
    half_denominator = c_div(total + (1 if total >= 0 else -1), 2)
    x = wrap32(1515870810 + srdhm(half_denominator, -1010580540))
    for _ in range(3):
        one_minus = wrap32((1 << 29) - srdhm(half_denominator, x))
        x = wrap32(x + multiply_by_pot(srdhm(x, one_minus), 2))
    return x


def gemmlowp_logistic(a: int, integer_bits: int) -> int:
    if a == 0:
        return 1 << 30
    positive = one_over_one_plus_x(exp_on_negative_values(-abs(a), integer_bits))
    return positive if a > 0 else wrap32(INT32_MAX - positive)


def gemmlowp_tanh(a: int, integer_bits: int) -> int:
    if a == 0:
        return 0
    exponential = exp_on_negative_values(-abs(a), integer_bits + 1)  # ExactMulByPot<1>
    t = multiply_by_pot(wrap32(_newton_one_over(exponential) - (1 << 29)), 2)
    return -t if a < 0 else t
