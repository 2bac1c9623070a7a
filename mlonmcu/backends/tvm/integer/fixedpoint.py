"""TFLite's fixed-point requantization, exactly: multipliers in Python, arithmetic in TIR.

TFLite derives an (int32 multiplier, shift) pair from each real scale ratio with frexp and
applies it with SaturatingRoundingDoublingHighMul followed by RoundingDivideByPOT (two
roundings, each half away from zero). Any other formula, however close, is not bit-exact.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mlonmcu.backends.tvm.integer.tir import local

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


def quantize_multiplier(real: float) -> tuple[int, int]:
    """(multiplier, shift) with real ≈ multiplier · 2^(shift − 31); TFLite's QuantizeMultiplier."""
    if real == 0.0:
        return 0, 0
    mantissa, shift = math.frexp(real)
    fixed = round_half_away(mantissa * (1 << 31))
    if fixed == 1 << 31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if shift > 30:
        shift, fixed = 30, INT32_MAX
    return int(fixed), int(shift)


def round_half_away(value: float) -> int:
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


def per_channel_multipliers(input_scale: float, filter_scales: np.ndarray, output_scale: float) -> np.ndarray:
    """int32 [C, 2] (multiplier, shift): scales are float32 values, products taken in double."""
    pairs = [
        quantize_multiplier(float(np.float32(input_scale)) * float(np.float32(s)) / float(np.float32(output_scale)))
        for s in np.asarray(filter_scales, dtype=np.float32).reshape(-1)
    ]
    return np.array(pairs, dtype=np.int32).reshape(-1, 2)


# --- TIR (inside an IRBuilder prim_func: intermediates become C locals) -------------------


def _i64(value: Any) -> Any:
    from tvm import tirx

    return tirx.Cast("int64", value)


def saturating_rounding_doubling_high_mul(a: Any, b: Any, saturate: bool = False) -> Any:
    """(a·b + nudge) / 2^31 truncated, as gemmlowp. `saturate` handles INT32_MIN·INT32_MIN, which
    cannot occur with a positive multiplier (requantization) but can in the softmax arithmetic."""
    from tvm import tirx

    product = local(_i64(a) * _i64(b), "int64")
    nudge = tirx.Select(
        product >= tirx.const(0, "int64"), tirx.const(1 << 30, "int64"), tirx.const(1 - (1 << 30), "int64")
    )
    high = tirx.Cast("int32", tirx.truncdiv(product + nudge, tirx.const(1 << 31, "int64")))
    if saturate:
        overflow = tirx.And(a == tirx.const(INT32_MIN, "int32"), b == tirx.const(INT32_MIN, "int32"))
        high = tirx.Select(overflow, tirx.const(INT32_MAX, "int32"), high)
    return local(high, "int32")


def rounding_divide_by_pot(x: Any, exponent: Any) -> Any:
    """x / 2^exponent rounded half away from zero (exponent ≥ 0)."""
    from tvm import tirx

    one = tirx.const(1, "int32")
    zero = tirx.const(0, "int32")
    mask = local(tirx.shift_left(one, exponent) - one, "int32")
    threshold = tirx.shift_right(mask, one) + tirx.Select(x < zero, one, zero)
    return tirx.shift_right(x, exponent) + tirx.Select(tirx.bitwise_and(x, mask) > threshold, one, zero)


def multiply_by_quantized_multiplier(x: Any, multiplier: Any, shift: Any) -> Any:
    """TFLite MultiplyByQuantizedMultiplier (double rounding), shift read at run time."""
    from tvm import tirx

    zero = tirx.const(0, "int32")
    shift = local(shift, "int32")
    high = saturating_rounding_doubling_high_mul(tirx.shift_left(x, tirx.Max(shift, zero)), multiplier)
    return rounding_divide_by_pot(high, tirx.Max(-shift, zero))


def multiply_by_constant(x: Any, multiplier: int, shift: int) -> Any:
    """Same, with a compile-time (multiplier, shift)."""
    from tvm import tirx

    if shift > 0:
        x = tirx.shift_left(x, tirx.const(shift, "int32"))
    high = saturating_rounding_doubling_high_mul(x, tirx.const(multiplier, "int32"))
    return rounding_divide_by_pot(high, tirx.const(-shift, "int32")) if shift < 0 else high


def saturating_shift_left(x: Any, exponent: int) -> Any:
    """gemmlowp SaturatingRoundingMultiplyByPOT for a positive exponent."""
    from tvm import tirx

    threshold = (1 << (31 - exponent)) - 1
    shifted = tirx.shift_left(x, tirx.const(exponent, "int32"))
    return tirx.Select(
        x > tirx.const(threshold, "int32"),
        tirx.const(INT32_MAX, "int32"),
        tirx.Select(x < tirx.const(-threshold, "int32"), tirx.const(INT32_MIN, "int32"), shifted),
    )


# --- FULLY_CONNECTED as LiteRT's reference kernel does it: round(double(acc) · eff) ---------

MANTISSA_SPLIT = 26


def double_multiplier(eff: float) -> tuple[int, int, int]:
    """eff = (hi·2^26 + lo) · 2^−shift exactly (53-bit mantissa split into int32-sized parts)."""
    if eff == 0.0:
        return 0, 0, 0
    mantissa, exponent = math.frexp(eff)
    whole = int(mantissa * (1 << 53))  # exact: a double has 53 significant bits
    return whole >> MANTISSA_SPLIT, whole & ((1 << MANTISSA_SPLIT) - 1), 53 - exponent


def round_double_product(acc: Any, hi: Any, lo: Any, shift: Any) -> Any:
    """int32(round(double(acc) · eff)) with integers only, bit-exact with the C expression.

    The exact product P = |acc|·mantissa (≤ 84 bits) is rounded to 53 bits like an IEEE double
    multiply (to nearest, ties to even), then to an integer half away from zero like C round();
    results outside int32 give INT32_MIN, as the x86 conversion does.
    """
    from tvm import tirx

    def c64(v: int) -> Any:
        return tirx.const(v, "int64")

    split = MANTISSA_SPLIT
    negative = local(acc < 0, "bool")
    a = local(tirx.Select(negative, -_i64(acc), _i64(acc)), "int64")
    low_product = local(a * _i64(lo), "int64")
    high = local(a * _i64(hi) + tirx.shift_right(low_product, c64(split)), "int64")  # P = high·2^26 + low
    low = local(tirx.bitwise_and(low_product, c64((1 << split) - 1)), "int64")
    top = local(tirx.Cast("uint32", tirx.shift_right(high, c64(32))), "uint32")
    bottom = local(tirx.bitwise_or(tirx.Cast("uint32", high), tirx.const(1, "uint32")), "uint32")
    clz = _count_leading_zeros
    bits = tirx.Select(top != tirx.const(0, "uint32"), 64 - clz(top), 32 - clz(bottom))
    drop = local(_i64(tirx.Max(bits - (53 - split), tirx.const(0, "int32"))), "int64")  # bits beyond 53
    small = drop <= c64(split)
    d1 = tirx.Min(drop, c64(split))
    d2 = tirx.Max(drop - c64(split), c64(0))
    one = c64(1)
    q = local(
        tirx.Select(
            small,
            tirx.bitwise_or(tirx.shift_left(high, c64(split) - d1), tirx.shift_right(low, d1)),
            tirx.shift_right(high, d2),
        ),
        "int64",
    )
    remainder = local(
        tirx.Select(
            small,
            tirx.bitwise_and(low, tirx.shift_left(one, d1) - one),
            tirx.bitwise_or(tirx.shift_left(tirx.bitwise_and(high, tirx.shift_left(one, d2) - one), c64(split)), low),
        ),
        "int64",
    )
    half = local(tirx.Select(drop > c64(0), tirx.shift_left(one, tirx.Max(drop - one, c64(0))), c64(0)), "int64")
    odd = tirx.bitwise_and(q, one) == one
    round_up = tirx.And(drop > c64(0), tirx.Or(remainder > half, tirx.And(remainder == half, odd)))
    mantissa = local(q + tirx.Select(round_up, one, c64(0)), "int64")
    t = local(_i64(shift) - drop, "int64")  # value = mantissa · 2^−t
    t_pos = tirx.Min(tirx.Max(t, one), c64(62))
    rounded = tirx.Select(
        t >= one,
        tirx.Select(t > c64(62), c64(0), tirx.shift_right(mantissa + tirx.shift_left(one, t_pos - one), t_pos)),
        tirx.Select(-t > c64(10), c64(1 << 40), tirx.shift_left(mantissa, tirx.Min(-t, c64(10)))),
    )
    magnitude = local(tirx.Select(a == c64(0), c64(0), rounded), "int64")
    signed = tirx.Select(negative, -magnitude, magnitude)
    in_range = tirx.And(signed >= c64(INT32_MIN), signed <= c64(INT32_MAX))
    return local(tirx.Select(in_range, tirx.Cast("int32", signed), tirx.const(INT32_MIN, "int32")), "int32")


def _count_leading_zeros(value: Any) -> Any:
    """GCC's __builtin_clz on a non-zero uint32 (TVM's C code generator has no clz)."""
    from tvm import tirx

    return tirx.call_pure_extern("int32", "__builtin_clz", value)


# --- the same arithmetic in numpy, the oracle for tests -----------------------------------


def reference_requantize(acc: np.ndarray, multiplier: np.ndarray, shift: np.ndarray) -> np.ndarray:
    acc = np.asarray(acc, dtype=np.int64)
    multiplier = np.asarray(multiplier, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    x = ((acc << left) + (1 << 31)) % (1 << 32) - (1 << 31)  # int32 wrap-around like C
    product = x * multiplier
    nudge = np.where(product >= 0, 1 << 30, 1 - (1 << 30))
    total = product + nudge
    high = np.where(total >= 0, total >> 31, -((-total) >> 31))  # division truncating toward zero
    mask = (1 << right) - 1
    remainder = high & mask
    threshold = (mask >> 1) + (high < 0)
    return (high >> right) + (remainder > threshold)
