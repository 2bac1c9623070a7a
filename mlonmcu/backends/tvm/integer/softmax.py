"""Integer SOFTMAX (int8 → int8), TFLite's reference: gemmlowp fixed-point exp and reciprocal.

Per row: the max, then exp(beta·s_in·(x − max)) in Q0.31 for every element whose difference is
above the input radius, their sum in Q12.19, its reciprocal by Newton iteration, and the output
in units of 1/256. The exponentials are computed twice instead of being kept: no scratch memory.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from mlonmcu.backends.tvm.integer.fixedpoint import (
    INT32_MAX,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    saturating_shift_left,
)
from mlonmcu.backends.tvm.integer.tir import (
    accumulators,
    clamp,
    flat_view,
    i32,
    local,
    prim_func,
    root_block,
)

if TYPE_CHECKING:
    from mlonmcu.backends.tvm.integer.graph import Quantized
    from mlonmcu.backends.tvm.integer.patterns import Output

INPUT_INTEGER_BITS = 5  # exp input in Q5.26
ACCUMULATION_INTEGER_BITS = 12  # sum of exps in Q12.19
EXP_MINUS_ONE_EIGHTH = 1895147668  # exp(-1/8) in Q0.31
ONE_THIRD = 715827883  # 1/3 in Q0.31
# exp(-2^k) in Q0.31 for k = -2 .. 4 (gemmlowp's barrel shifter)
EXP_POWERS = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401), (4, 242))
FORTY_EIGHT_OVER_SEVENTEEN = 1515870810  # Q2.29
MINUS_THIRTY_TWO_OVER_SEVENTEEN = -1010580540  # Q2.29


def softmax_parameters(input_scale: float, beta: float = 1.0) -> tuple[int, int, int]:
    """(multiplier, left shift, diff_min) as TFLite's softmax Prepare derives them."""
    real = min(beta * input_scale * (1 << (31 - INPUT_INTEGER_BITS)), float((1 << 31) - 1))
    multiplier, shift = quantize_multiplier(real)
    radius = ((1 << INPUT_INTEGER_BITS) - 1) * (1 << (31 - INPUT_INTEGER_BITS)) / (1 << shift)
    return multiplier, shift, -math.floor(radius)


def _srdhm(a: Any, b: Any) -> Any:
    return saturating_rounding_doubling_high_mul(a, b, saturate=True)


def _c(value: int) -> Any:
    from tvm import tirx

    return tirx.const(value, "int32")


def _exp_on_quarter(x: Any) -> Any:
    """exp(x) for x in [-1/4, 0), Q0.31 in and out (Taylor around -1/8)."""
    x = local(x + _c(1 << 28), "int32")
    x2 = _srdhm(x, x)
    x3 = _srdhm(x2, x)
    x4 = _srdhm(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, _c(2))
    poly = rounding_divide_by_pot(_srdhm(local(x4_over_4 + x3, "int32"), _c(ONE_THIRD)) + x2, _c(1))
    return local(_c(EXP_MINUS_ONE_EIGHTH) + _srdhm(_c(EXP_MINUS_ONE_EIGHTH), local(x + poly, "int32")), "int32")


def _exp_on_negative(a: Any) -> Any:
    """gemmlowp exp_on_negative_values: Q5.26 (a ≤ 0) in, Q0.31 out."""
    from tvm import tirx

    fraction_bits = 31 - INPUT_INTEGER_BITS
    quarter = 1 << (fraction_bits - 2)
    mod_quarter = local(tirx.bitwise_and(a, _c(quarter - 1)) - _c(quarter), "int32")
    result = _exp_on_quarter(saturating_shift_left(mod_quarter, INPUT_INTEGER_BITS))
    remainder = local(mod_quarter - a, "int32")
    for power, constant in EXP_POWERS:
        bit = _c(1 << (fraction_bits + power))
        scaled = _srdhm(result, _c(constant))
        result = local(tirx.Select(tirx.bitwise_and(remainder, bit) != _c(0), scaled, result), "int32")
    return local(tirx.Select(a == _c(0), _c(INT32_MAX), result), "int32")


def _reciprocal(total: Any) -> tuple[Any, Any]:
    """TFLite GetReciprocal for a Q12.19 sum: (Q0.31 reciprocal, bits over unit)."""
    from tvm import tirx

    unsigned = tirx.Cast("uint32", total)
    leading = local(tirx.call_pure_extern("int32", "__builtin_clz", unsigned), "int32")
    bits_over_unit = local(_c(ACCUMULATION_INTEGER_BITS) - leading, "int32")
    shifted = tirx.shift_left(unsigned, tirx.Cast("uint32", leading)) - tirx.const(1 << 31, "uint32")
    minus_one = local(tirx.Cast("int32", shifted), "int32")
    return _one_over_one_plus(minus_one), bits_over_unit


def _row_max(x: Any, acc: Any, base: Any, depth: int, lowest: int) -> Any:
    """The row's maximum (in acc[0]); acc[1] is reset for the sum of exps that follows."""
    from tvm import tirx
    from tvm.script.ir_builder import tirx as T

    T.buffer_store(acc, lowest, [0])
    with T.serial(0, depth) as c:
        T.buffer_store(acc, tirx.Max(acc[0], i32(x[base + c])), [0])
    row_max = local(acc[0], "int32")
    T.buffer_store(acc, 0, [1])
    return row_max


def softmax_kernel(name: str, shape: tuple[int, ...], q: Quantized, out: Output, out_dtype: str = "int8") -> Any:
    """int8 → int8 (scale 1/256) or int8 → int16 (scale 1/65536): TFLite's one gemmlowp softmax,
    with the output's width in the final shift."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    bits = 16 if out_dtype == "int16" else 8
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    scale = 1.0 / (1 << bits)
    if out.zero_point != low or abs(out.scale - scale) > scale * 1e-3:
        return None  # TFLite requires this output quantization
    multiplier, left_shift, diff_min = softmax_parameters(q.scalar_scale)
    depth = shape[-1]
    rows = 1
    for dim in shape[:-1]:
        rows *= dim

    def exp_of(value: Any, row_max: Any) -> tuple[Any, Any]:
        diff = local(i32(value) - row_max, "int32")
        scaled = _srdhm(tirx.shift_left(diff, _c(left_shift)), _c(multiplier))
        return diff >= _c(diff_min), _exp_on_negative(scaled)

    with IRBuilder() as ib, prim_func(name, ["SOFTMAX"], 0):
        x_arg = T.arg("x", T.Buffer(shape, "int8"))
        y_arg = T.arg("y", T.Buffer(shape, out_dtype))
        with root_block():
            x, y = flat_view(x_arg, shape), flat_view(y_arg, shape, out_dtype)
            acc = accumulators(2)  # [0]: row max, [1]: sum of exps (Q12.19)
            with T.serial(0, rows) as r:
                base = r * depth
                row_max = _row_max(x, acc, base, depth, -128)
                with T.serial(0, depth) as c:
                    valid, e = exp_of(x[base + c], row_max)
                    term = rounding_divide_by_pot(e, _c(ACCUMULATION_INTEGER_BITS))
                    T.buffer_store(acc, acc[1] + tirx.Select(valid, term, _c(0)), [1])
                recip, bits_over_unit = _reciprocal(acc[1])
                exponent = local(bits_over_unit + _c(31 - bits), "int32")
                with T.serial(0, depth) as c:
                    valid, e = exp_of(x[base + c], row_max)
                    value = rounding_divide_by_pot(_srdhm(recip, e), exponent) + _c(low)
                    result = tirx.Select(valid, clamp(value, low, high), _c(low))
                    T.buffer_store(y, tirx.Cast(out_dtype, result), [base + c])
    return ib.get()


def softmax16_tables() -> tuple[list[int], list[int]]:
    """TFLM's two int16 SOFTMAX tables: exp on [−10, 0] and 1/(1 + x) on [0, 1], Q0.15."""
    import numpy as np

    from mlonmcu.backends.tvm.integer.lut import libm_expf
    from mlonmcu.backends.tvm.integer.lut16 import populate_int16

    f32 = np.float32
    width = f32(65535)
    ten, one, two = (float(f32(v) / width) for v in (10, 1, 2))  # float32 quotients, as the C++
    exp_table = populate_int16(ten, 32767, two, 0, libm_expf)
    reciprocal = populate_int16(one, -32768, two, 0, lambda v: f32(1) / (f32(1) + f32(v)))
    return exp_table, reciprocal


def softmax16_kernel(name: str, shape: tuple[int, ...], input_scale: float, beta: float = 1.0) -> Any:
    """16x8 SOFTMAX (TFLite's SoftmaxInt16): the row's differences to its maximum rescaled to
    [−65535, 0] ≙ [−10, 0], exp by table, the sum's reciprocal by table after normalising it by
    its leading zeros, the product rounded into Q0.15. Arguments: x, exp table, reciprocal
    table (softmax16_tables, int32 [513]), y."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    from mlonmcu.backends.tvm.integer.fixedpoint import count_leading_zeros, multiply_by_constant, quantize_multiplier
    from mlonmcu.backends.tvm.integer.lut16 import lookup

    multiplier, shift = quantize_multiplier(float(input_scale) * float(beta) / (10.0 / 65535.0))
    depth = shape[-1]
    rows = 1
    for dim in shape[:-1]:
        rows *= dim

    def i64(value: Any) -> Any:
        return tirx.Cast("int64", value)

    with IRBuilder() as ib, prim_func(name, ["SOFTMAX"], 0):
        x_arg = T.arg("x", T.Buffer(shape, "int16"))
        exp_table = T.arg("exp_table", T.Buffer((513,), "int32"))
        reciprocal_table = T.arg("reciprocal_table", T.Buffer((513,), "int32"))
        y_arg = T.arg("y", T.Buffer(shape, "int16"))
        with root_block():
            x, y = flat_view(x_arg, shape, "int16"), flat_view(y_arg, shape, "int16")
            acc = accumulators(2)  # [0]: row max, [1]: sum of exps (Q16.15)
            with T.serial(0, rows) as r:
                base = r * depth
                row_max = _row_max(x, acc, base, depth, -32768)
                with T.serial(0, depth) as c:
                    scaled = multiply_by_constant(local(i32(x[base + c]) - row_max, "int32"), multiplier, shift)
                    e = local(lookup(clamp(scaled + 32767, -32768, 32767), exp_table), "int32")
                    T.buffer_store(y, tirx.Cast("int16", e), [base + c])
                    T.buffer_store(acc, acc[1] + e, [1])
                total = local(acc[1], "int32")
                headroom = local(count_leading_zeros(tirx.Cast("uint32", total)), "int32")
                normalised = tirx.shift_right(tirx.shift_left(i64(total), i64(headroom - 1)) + (1 << 13), i64(14))
                centred = clamp(tirx.Cast("int32", normalised) - ((1 << 15) + (1 << 16)), -32768, 32767)
                reciprocal = local(lookup(centred, reciprocal_table), "int32")
                right = local(31 - headroom, "int32")
                rounding = i64(tirx.shift_left(_c(1), right - 1))
                with T.serial(0, depth) as c:
                    product = i64(y[base + c]) * i64(reciprocal) + rounding
                    result = tirx.Cast("int32", tirx.shift_right(product, i64(right)))
                    T.buffer_store(y, tirx.Cast("int16", clamp(result, 0, 32767)), [base + c])
    return ib.get()


# gemmlowp/TFLite constants of log_x_for_x_greater_than_or_equal_to_1 (Q0.31)
LOG_2 = 1488522236
SQRT_SQRT_HALF = 1805811301
SQRT_HALF = 1518500250
ONE_QUARTER = 536870912
ALPHA_N, ALPHA_D, ALPHA_I, ALPHA_F = 117049297, 127690142, 1057819769, 638450708
LOG_ACCUMULATION_BITS = 6  # OutputIntegerBits (5) + 1


def _shift_left_saturating(x: Any, exponent: Any) -> Any:
    """TFLite's SaturatingRoundingMultiplyByPOTParam for a run-time exponent ≥ 0."""
    from tvm import tirx

    threshold = local(tirx.shift_left(_c(1), 31 - exponent) - _c(1), "int32")
    shifted = tirx.shift_left(x, exponent)
    saturated = tirx.Select(x > threshold, _c(INT32_MAX), tirx.Select(x < -threshold, _c(-INT32_MAX - 1), shifted))
    return local(tirx.Select(exponent == _c(0), x, saturated), "int32")


def _saturating(value: Any) -> Any:
    """An int64 sum or difference clamped to int32 (SaturatingAddNonGemmlowp, SaturatingSub)."""
    from tvm import tirx

    low, high = tirx.const(-INT32_MAX - 1, "int64"), tirx.const(INT32_MAX, "int64")
    return local(tirx.Cast("int32", tirx.Min(tirx.Max(value, low), high)), "int32")


def _one_over_one_plus(a: Any) -> Any:
    """gemmlowp one_over_one_plus_x_for_x_in_0_1 (Newton-Raphson in Q2.29): Q0.31 in and out."""
    from tvm import tirx

    pair = local(tirx.Cast("int64", a) + tirx.const(INT32_MAX, "int64"), "int64")
    sign = tirx.Select(pair >= tirx.const(0, "int64"), tirx.const(1, "int64"), tirx.const(-1, "int64"))
    half_denominator = local(tirx.Cast("int32", tirx.truncdiv(pair + sign, tirx.const(2, "int64"))), "int32")
    x = local(_c(FORTY_EIGHT_OVER_SEVENTEEN) + _srdhm(half_denominator, _c(MINUS_THIRTY_TWO_OVER_SEVENTEEN)), "int32")
    for _ in range(3):
        one_minus = local(_c(1 << 29) - _srdhm(half_denominator, x), "int32")
        x = local(x + saturating_shift_left(_srdhm(x, one_minus), 2), "int32")
    return local(saturating_shift_left(x, 1), "int32")


def _log_of_sum(total: Any) -> Any:
    """TFLite's log_x_for_x_greater_than_or_equal_to_1<5> of a Q12.19 sum: log as Q5.26."""
    from tvm import tirx

    def clz(value: Any) -> Any:
        return local(tirx.call_pure_extern("int32", "__builtin_clz", tirx.Cast("uint32", value)), "int32")

    def i64(value: Any) -> Any:
        return tirx.Cast("int64", value)

    quarter = ONE_QUARTER >> LOG_ACCUMULATION_BITS  # Rescale<6>(1/4): exact
    z_a = local(total, "int32")
    headroom_a = clz(z_a)
    r_a = _shift_left_saturating(_srdhm(_shift_left_saturating(z_a, headroom_a - 1), _c(SQRT_HALF)), _c(1))
    pow_a = _saturating(i64(_shift_left_saturating(ACCUMULATION_INTEGER_BITS - headroom_a, _c(25))) + quarter)
    z_b = local(_srdhm(z_a, _c(SQRT_HALF)), "int32")
    headroom_b = local(clz(z_b) - 1, "int32")
    r_b = _shift_left_saturating(z_a, headroom_b)
    pow_b = _saturating(i64(_shift_left_saturating(ACCUMULATION_INTEGER_BITS - headroom_b, _c(25))) - quarter)
    r = local(tirx.Min(r_a, r_b), "int32")
    power = local(tirx.Max(pow_a, pow_b), "int32")
    total_p = local(i64(r) + tirx.const(SQRT_SQRT_HALF, "int64"), "int64")
    sign = tirx.Select(total_p >= tirx.const(0, "int64"), tirx.const(1, "int64"), tirx.const(-1, "int64"))
    p = local(tirx.Cast("int32", tirx.truncdiv(total_p + sign, tirx.const(2, "int64"))), "int32")
    q = local(r - _c(SQRT_SQRT_HALF), "int32")
    q = local(q + q, "int32")
    square = _srdhm(q, q)
    numerator = local(_srdhm(q, r) + _srdhm(_srdhm(q, square), _c(ALPHA_N)), "int32")
    denominator = local(
        _srdhm(p, local(_c(ALPHA_I) + q + _srdhm(_c(ALPHA_D), square), "int32")) + _srdhm(_c(ALPHA_F), q), "int32"
    )
    reciprocal = _one_over_one_plus(denominator)
    scaled = rounding_divide_by_pot(numerator, _c(LOG_ACCUMULATION_BITS))
    log6 = local(_srdhm(power, _c(LOG_2)) + _srdhm(scaled, reciprocal), "int32")
    return local(saturating_shift_left(log6, 1), "int32")


def log_softmax_parameters(input_scale: float) -> tuple[int, int, int, int, int]:
    """TFLite's PreprocessLogSoftmaxScalingExp: (multiplier, left shift, diff_min, reverse
    divisor, reverse right shift)."""
    multiplier, shift, diff_min = softmax_parameters(input_scale)
    divisor, reverse_shift = quantize_multiplier((1 << (31 - shift)) / float(multiplier))
    return multiplier, shift, diff_min, divisor, -reverse_shift


def log_softmax_kernel(name: str, shape: tuple[int, ...], q: Quantized) -> Any:
    """int8 LOG_SOFTMAX (TFLite's LogSoftmaxQuantized; output scale 16/256, zero point 127): the
    softmax's sum of exps in Q12.19, its log in Q5.26 by gemmlowp's polynomial, then per element
    (diff − log) rounded into the output; differences below the adjusted minimum give −128."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    multiplier, left_shift, diff_min, divisor, reverse_right = log_softmax_parameters(q.scalar_scale)
    depth = shape[-1]
    rows = math.prod(shape[:-1])

    def rescaled(value: Any, row_max: Any) -> tuple[Any, Any]:
        diff = local(i32(value) - row_max, "int32")
        return diff, _srdhm(tirx.shift_left(diff, _c(left_shift)), _c(multiplier))

    with IRBuilder() as ib, prim_func(name, ["LOG_SOFTMAX"], 0):
        x_arg = T.arg("x", T.Buffer(shape, "int8"))
        y_arg = T.arg("y", T.Buffer(shape, "int8"))
        with root_block():
            x, y = flat_view(x_arg, shape), flat_view(y_arg, shape)
            acc = accumulators(2)
            with T.serial(0, rows) as r:
                base = r * depth
                row_max = _row_max(x, acc, base, depth, -128)
                with T.serial(0, depth) as c:
                    diff, scaled = rescaled(x[base + c], row_max)
                    term = rounding_divide_by_pot(
                        _exp_on_negative(local(scaled, "int32")), _c(ACCUMULATION_INTEGER_BITS)
                    )
                    T.buffer_store(acc, acc[1] + tirx.Select(diff >= _c(diff_min), term, _c(0)), [1])
                log_sum = _log_of_sum(acc[1])
                shifted = local(log_sum + _c(-INT32_MAX - 1), "int32")
                reverse = rounding_divide_by_pot(_srdhm(shifted, _c(divisor)), _c(reverse_right))
                adjusted = local(tirx.Max(_c(diff_min - 1), reverse), "int32")
                with T.serial(0, depth) as c:
                    diff, scaled = rescaled(x[base + c], row_max)
                    value = rounding_divide_by_pot(
                        local(scaled - log_sum, "int32"), _c(31 - INPUT_INTEGER_BITS - 4)
                    ) + _c(127)
                    result = tirx.Select(diff > adjusted, clamp(value, -128, 127), _c(-128))
                    T.buffer_store(y, tirx.Cast("int8", result), [base + c])
    return ib.get()
