"""TFLite's fixed-point requantization, exactly: multipliers in Python, arithmetic in TIR.

TFLite derives an (int32 multiplier, shift) pair from each real scale ratio with frexp and
applies it with SaturatingRoundingDoublingHighMul followed by RoundingDivideByPOT (two
roundings, each half away from zero). Any other formula, however close, is not bit-exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mlonmcu.backends.tvm.integer.tir import local, prim_func, root_block
from mlonmcu.backends.tvm.kernel_info import KERNEL_PREFIX

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
    return int(fixed), int(shift)  # (no cap at 30: that belongs to TFLITE_SINGLE_ROUNDING builds)


def round_half_away(value: float) -> int:
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


def per_channel_multipliers(input_scale: float, filter_scales: np.ndarray, output_scale: float) -> np.ndarray:
    """int32 [C, 2] (multiplier, shift): scales are float32 values, products taken in double."""
    pairs = [
        quantize_multiplier(float(np.float32(input_scale)) * float(np.float32(s)) / float(np.float32(output_scale)))
        for s in np.asarray(filter_scales, dtype=np.float32).reshape(-1)
    ]
    return np.array(pairs, dtype=np.int32).reshape(-1, 2)


# --- requantization tables: per channel, what the kernels read at run time -------------------


@dataclass(frozen=True)
class RequantTable:
    """Per-channel requantization constants in the form `requantize` reads them (int32 [C, 3|4]):
    2·multiplier as a uint32 bit pattern, right shift, rounding term with the output zero point
    folded in (2^(e−1) + zp·2^e), and a left shift column only if some channel needs one."""

    values: np.ndarray
    left_shift: bool  # some channel has shift > 0
    always_right: bool  # every channel shifts right (e > 0): no run-time test
    zero_point: int
    zero_point_folded: bool  # False when zp·2^e would not fit int32: added after the shift
    uniform: bool  # one row for all channels (per-tensor quantization): smaller ROM

    @property
    def rows(self) -> int:
        return self.values.shape[0]

    @property
    def high_multipliers(self) -> bool:
        """Every 2·multiplier has bit 31 set (multiplier ≥ 2^30, i.e. every nonzero normalized
        one): what Arm's SMMLAR needs to take the high-word step in one instruction (requantize)."""
        return bool(np.all(self.values[:, 0] < 0))


def requant_table(pairs: np.ndarray, zero_point: int = 0) -> RequantTable:
    multiplier = pairs[:, 0].astype(np.int64)
    shift = pairs[:, 1].astype(np.int64)
    right = np.maximum(-shift, 0)
    half = np.where(right > 0, np.left_shift(1, np.maximum(right - 1, 0)), 0)
    rounding = half + np.where(right > 0, np.left_shift(np.int64(zero_point), right), 0)
    folded = bool(np.all((rounding >= INT32_MIN) & (rounding <= INT32_MAX)))
    doubled = (2 * multiplier).astype(np.uint32).view(np.int32).astype(np.int64)
    columns = [doubled, right, rounding if folded else half]
    left = bool(np.any(shift > 0))
    if left:
        columns.append(np.maximum(shift, 0))
    table = np.stack(columns, axis=1).astype(np.int32)
    uniform = bool(np.all(table == table[:1]))
    if uniform:
        table = table[:1]
    return RequantTable(table, left, bool(np.all(right > 0)), int(zero_point), folded, uniform)


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


def requantize(acc: Any, table: Any, channel: Any, spec: RequantTable, smmlar: bool = False) -> Any:
    """MultiplyByQuantizedMultiplier + output zero point, from a RequantTable row.

    Same results as SRDHM + RDBPOT, rewritten for a 32-bit core:
    - SRDHM's truncating division with a sign-dependent nudge equals floor((a·M + 2^30) / 2^31),
      which is the high word of a·(2M) (signed × unsigned: one `mulhsu`) plus bit 31 of its low
      word;
    - RDBPOT's remainder test equals adding 2^(e−1), minus one for negative values, before an
      arithmetic shift by e > 0; adding zp·2^e there too adds the zero point exactly.
    `smmlar` (Arm DSP variants, spec.high_multipliers): 2M read as a signed word is 2M − 2^32, so
    the rounded high word of a·2M is a + (a·(2M − 2^32) + 2^31) >> 32 — SMMLAR's result with a as
    its accumulator, one instruction for the multiply, the rounding and the add.
    """
    from tvm import tirx

    if spec.uniform:
        channel = 0
    if spec.left_shift:
        acc = tirx.shift_left(acc, table[channel, 3])
    value = local(acc, "int32")
    doubled = local(table[channel, 0], "int32")
    if smmlar and spec.high_multipliers:
        high = local(tirx.call_pure_extern("int32", "mlonmcu_smmlar", value, doubled, value), "int32")
    else:
        high = _rounded_high_word(value, tirx.Cast("uint32", doubled))
    right = local(table[channel, 1], "int32")
    negative = tirx.Cast("int32", high < tirx.const(0, "int32"))
    rounded = tirx.shift_right(high + table[channel, 2] - negative, right)
    zero_point = tirx.const(spec.zero_point, "int32")
    if not spec.zero_point_folded:
        rounded = rounded + zero_point
    if spec.always_right:
        return rounded
    return tirx.Select(right > tirx.const(0, "int32"), rounded, high + zero_point)


def clamp_int8(value: Any, low: int, high: int, ssat: bool = False) -> Any:
    """Clamp to [low, high]; for the full int8 range with one unsigned compare on the common path.
    `ssat`: with Arm's SSAT (ACLE __ssat, one instruction) for the top, in the DSP variants."""
    from tvm import tirx

    from mlonmcu.backends.tvm.integer.tir import clamp

    if ssat and high == 127:
        raised = value if low == -128 else tirx.Max(value, tirx.const(low, "int32"))
        return tirx.call_pure_extern("int32", "__ssat", raised, tirx.const(8, "int32"))
    if (low, high) != (-128, 127):
        return clamp(value, low, high)
    value = local(value, "int32")
    outside = tirx.Cast("uint32", value + tirx.const(128, "int32")) > tirx.const(255, "uint32")
    saturated = tirx.bitwise_xor(tirx.shift_right(value, tirx.const(31, "int32")), tirx.const(127, "int32"))
    return tirx.Select(outside, saturated, value)


def multiply_by_constant(x: Any, multiplier: int, shift: int) -> Any:
    """Same, with a compile-time (multiplier, shift)."""
    from tvm import tirx

    if shift > 0:
        x = tirx.shift_left(x, tirx.const(shift, "int32"))
    high = high_mul_by_constant(local(x, "int32"), multiplier)
    return rounding_divide_by_pot(high, tirx.const(-shift, "int32")) if shift < 0 else high


def high_mul_by_constant(x: Any, multiplier: int) -> Any:
    """SaturatingRoundingDoublingHighMul by a compile-time multiplier ≥ 0 (which never saturates),
    in 32-bit operations as in `requantize`: floor((x·m + 2^30) / 2^31) is the high word of x·2m
    (2m a uint32) plus bit 31 of its low word — no 64-bit division. A multiplier of 2^30 (an
    input at the larger scale of ADD/SUB) is a rounding halving."""
    from tvm import tirx

    assert 0 <= multiplier <= INT32_MAX, multiplier
    if multiplier == 1 << 30:
        one = tirx.const(1, "int32")
        return local(tirx.shift_right(x, one) + tirx.bitwise_and(x, one), "int32")  # (x + 1) >> 1, no wrap
    return _rounded_high_word(x, tirx.const(2 * multiplier, "uint32"))


def _rounded_high_word(x: Any, doubled: Any) -> Any:
    """floor((x·2m + 2^31) / 2^32) for int32 x and uint32 2m: the high word of the signed ×
    unsigned product (one `mulhsu`) plus bit 31 of its low word (which wraps: unsigned)."""
    from tvm import tirx

    wide = tirx.Cast("int64", x) * tirx.Cast("int64", doubled)
    low = tirx.Cast("uint32", x) * doubled
    return local(
        tirx.Cast("int32", tirx.shift_right(wide, tirx.const(32, "int64")))
        + tirx.Cast("int32", tirx.shift_right(low, tirx.const(31, "uint32"))),
        "int32",
    )


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
    clz = count_leading_zeros
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


FAST_ROUNDING_SHIFTS = (54, 88)  # where round_double_product_fast applies (module docstring of it)


def fast_rounding(table: np.ndarray) -> bool:
    """Whether every row [hi, lo, shift] of a double_multiplier table suits the fast path."""
    shifts = np.asarray(table)[:, 2]
    low, high = FAST_ROUNDING_SHIFTS
    return bool(np.all((shifts >= low) & (shifts <= high)))


def common_shift(table: np.ndarray) -> int | None:
    """The shift of every row of a double_multiplier table, if they share one."""
    shifts = np.unique(np.asarray(table)[:, 2])
    return int(shifts[0]) if shifts.size == 1 else None


def round_double_product_fast(acc: Any, hi: Any, lo: Any, shift: Any) -> Any:
    """round_double_product in a fraction of the instructions, for 54 ≤ shift ≤ 88 (an int when
    every row has the same shift).

    The double multiply moves the exact product P = |acc|·mantissa (< 2^84) by at most half an
    ulp of 53 bits, 2^30. So wherever P + 2^(shift−1) lies at least 2^31 away from a multiple of
    2^shift, round(double) equals the exact rounding floor((P + 2^(shift−1)) / 2^shift), which
    needs only P's bits above 2^26: two 32×32→64 multiplies and a shift. Near a tie (a fraction
    2^(32−shift) of the values) the full emulation runs. shift ≥ 54 keeps the result
    below 2^30, so the INT32_MIN overflow case of the emulation cannot occur on this path.
    """
    from tvm import tirx
    from tvm.script.ir_builder import tirx as T

    def u64(value: Any) -> Any:
        return tirx.Cast("uint64", tirx.Cast("uint32", value))

    one = tirx.const(1, "uint64")
    sign = local(tirx.shift_right(acc, tirx.const(31, "int32")), "int32")  # 0 or −1: |x| = (x ^ sign) − sign
    magnitude = tirx.bitwise_xor(tirx.Cast("uint32", acc), tirx.Cast("uint32", sign)) - tirx.Cast("uint32", sign)
    a = local(tirx.Cast("uint64", magnitude), "uint64")
    if isinstance(shift, int):  # the same in every row: the 64-bit shifts below become constant
        k = tirx.const(shift - MANTISSA_SPLIT, "uint64")
    else:
        k = local(tirx.Cast("uint64", shift - MANTISSA_SPLIT), "uint64")
    high = a * u64(hi) + tirx.shift_right(a * u64(lo), tirx.const(MANTISSA_SPLIT, "uint64"))  # P >> 26
    margin = tirx.const(32, "uint64")  # in units of 2^26: 2^31 of P
    total = local(high + tirx.shift_left(one, k - one) + margin, "uint64")
    rounded = local(tirx.Cast("int32", tirx.shift_right(total, k)), "int32")
    slot = T.alloc_buffer((1,), "int32")
    T.buffer_store(slot, tirx.bitwise_xor(rounded, sign) - sign, [0])
    near_tie = tirx.bitwise_and(total, tirx.shift_left(one, k) - one) < margin + margin
    with T.If(near_tie), T.Then():
        out = T.alloc_buffer((1,), "int32")  # its own: a result whose address is taken stays in memory
        T.evaluate(T.call_extern("int32", KERNEL_PREFIX + ROUNDING_HELPER, acc, hi, lo, shift, T.address_of(out[0])))
        T.buffer_store(slot, out[0], [0])
    return slot[0]


ROUNDING_HELPER = "mlonmcu_round_double_product"


def rounding_helper() -> Any:
    """round_double_product as a function of its own (codegen.HELPERS): the near-tie path of
    round_double_product_fast is taken too rarely to be worth its code in every output."""
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    with IRBuilder() as ib, prim_func(ROUNDING_HELPER, ["FULLY_CONNECTED"], 0):
        acc, hi, lo, shift = (T.arg(name, T.int32()) for name in ("acc", "hi", "lo", "shift"))
        out = T.arg("out", T.Buffer((1,), "int32"))
        with root_block():
            T.buffer_store(out, round_double_product(acc, hi, lo, shift), [0])
    return ib.get()


def count_leading_zeros(value: Any) -> Any:
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
