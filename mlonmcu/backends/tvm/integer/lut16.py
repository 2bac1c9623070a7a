"""TFLite's int16 sigmoid and tanh: one 256-entry table, linearly interpolated.

Shared by the 16x8 LOGISTIC and TANH operators and the LSTM gates. TFLite first scales the
int16 input by (multiplier, shift) (`input_scaling`: multiplier 0 means 3·2^shift, no shift),
then interpolates the table in 9 (sigmoid) or 8 (tanh) fractional bits; unsigned C arithmetic
that stays below 2^31 here, so int32 gives the same bits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from mlonmcu.backends.tvm.integer.tir import flat_view, i32, local, prim_func, root_block

# TFLite's int16 sigmoid/tanh table: sigmoid(i/24) in 0.16 fixed point (kernels/internal/common.h),
# values tuned for linear interpolation, so they are data, not a formula.
# fmt: off
SIGMOID_TABLE = (
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794,
    41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443,
    48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374,
    54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544,
    58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279,
    61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990,
    63090, 63186, 63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030,
    64090, 64148, 64204, 64257, 64308, 64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652,
    64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019,
    65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234,
    65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360,
    65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476,
    65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498, 65500, 65501,
    65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516,
    65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529,
    65529, 65530, 65530, 65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532,
    65532, 65532, 65532, 65533, 65533, 65533, 65533, 65533, 65533, 65533, 65533, 65534, 65534,
    65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535
)
# fmt: on


def _interpolated(value: Any, scaling: tuple[int, int], table: Any, bits: int, saturated: int) -> tuple[Any, Any]:
    """The scaled input and the table interpolated at its magnitude with `bits` fractional bits
    (`saturated` beyond the table), as TFLite's int16 logistic and tanh both do first."""
    from tvm import tirx

    multiplier, shift = scaling
    rounding = 1 << (shift - 1) if shift > 0 else 0
    x = local(tirx.shift_right(value * multiplier + rounding, shift), "int32")
    magnitude = local(tirx.abs(x), "int32")
    high = local(tirx.shift_right(magnitude, bits), "int32")
    below = table[tirx.Min(high, 254)]
    fraction = tirx.bitwise_and(magnitude, (1 << bits) - 1)
    interpolated = tirx.shift_left(below, bits) + fraction * (table[tirx.Min(high, 254) + 1] - below)
    return x, local(tirx.Select(high >= 255, tirx.const(saturated, "int32"), interpolated), "int32")


def sigmoid16(value: Any, scaling: tuple[int, int], table: Any) -> Any:
    """TFLite's int16 logistic (reference_integer_ops::Logistic) of `value` scaled by `scaling`
    (input_scaling), by table interpolation; the result is in Q0.15."""
    from tvm import tirx

    x, result = _interpolated(value, scaling, table, 9, 0x7FFF << 10)
    positive = tirx.shift_right(result + (1 << 9), 10)
    negative = tirx.shift_right((1 << 25) - result + (1 << 9) - 1, 10)
    return tirx.Select(x >= 0, positive, negative)


def tanh16(value: Any, scaling: tuple[int, int], table: Any) -> Any:
    """TFLite's int16 tanh (reference_integer_ops::Tanh), as sigmoid16; the result is in Q0.15."""
    from tvm import tirx

    x, result = _interpolated(value, scaling, table, 8, 0xFFFF << 8)
    positive = tirx.shift_right(result - (1 << 23) + (1 << 7), 8)
    negative = tirx.shift_right((1 << 23) - result + (1 << 7) - 1, 8)
    return tirx.Select(x >= 0, positive, negative)


def input_scaling(multiplier: int, shift: int) -> tuple[int, int]:
    """TFLite's normalisation of the (input_multiplier, input_left_shift) it prepared."""
    return (3 << shift, 0) if multiplier == 0 else (multiplier, shift)


def log2_rounded(scale: float) -> tuple[int, bool]:
    """TFLite's CheckedLog2 in float32: the rounded log2 and whether the scale is a power of two."""
    import numpy as np

    from mlonmcu.backends.tvm.integer.fixedpoint import round_half_away

    f32 = np.float32
    value = f32(np.log(f32(scale))) * (f32(1.0) / f32(np.log(f32(2.0))))
    rounded = round_half_away(float(value))
    return rounded, abs(float(f32(value) - f32(rounded))) < 1e-3


def operator_scaling(input_scale: float, tanh: bool) -> tuple[int, int]:
    """(multiplier, shift) of TFLM's int16 LOGISTIC/TANH Prepare: a power-of-two scale of Q3.12
    (tanh also Q4.11) is a shift, anything else a multiplier to 1/(3·4096) found by doubling."""
    power, pot = log2_rounded(input_scale)
    left_shift = (15 - 3) + power
    if pot and left_shift in ((0, 1) if tanh else (0,)):
        return input_scaling(0, left_shift)
    multiplier, shift = float(input_scale) * 4096.0 * 3.0, 0
    while multiplier <= 32767.0 / 2.0 and shift <= 30:
        shift += 1
        multiplier *= 2.0
    return input_scaling(int(multiplier), shift)


def lut16_kernel(name: str, op: str, shape: tuple[int, ...], scaling: tuple[int, int]) -> Any:
    """16x8 LOGISTIC or TANH: arguments x (int16), the table (int32 [256]), y (int16)."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    size = math.prod(shape)
    function = tanh16 if op == "TANH" else sigmoid16
    with IRBuilder() as ib, prim_func(name, [op], 0):
        x_arg = T.arg("x", T.Buffer(shape, "int16"))
        table = T.arg("table", T.Buffer((256,), "int32"))
        y_arg = T.arg("y", T.Buffer(shape, "int16"))
        with root_block():
            x, y = flat_view(x_arg, shape, "int16"), flat_view(y_arg, shape, "int16")
            with T.serial(0, size) as i:
                T.buffer_store(y, tirx.Cast("int16", function(i32(x[i]), scaling, table)), [i])
    return ib.get()


def populate_int16(
    input_scale: float, input_zero: int, output_scale: float, output_zero: int, transform: Callable[[Any], Any]
) -> list[int]:
    """TFLite's LUTPopulateInt16<float> (513 entries for LUTLookup), every step in float32 as the
    C++ computes it: 512 samples, each lowered by half the interpolation error at its midpoint."""
    import numpy as np

    from mlonmcu.backends.tvm.integer.fixedpoint import round_half_away

    f32 = np.float32

    def rnd(value: Any) -> Any:
        return f32(round_half_away(float(value)))

    input_min = f32(input_scale) * f32(-32768 - input_zero)
    input_max = f32(input_scale) * f32(32767 - input_zero)
    output_min = f32(output_scale) * f32(-32768 - output_zero)
    output_max = f32(output_scale) * f32(32767 - output_zero)
    steps = 512
    step = (input_max - input_min) / f32(steps)
    half_step = step / f32(2)
    inverse = f32(65536) / (output_max - output_min)
    table = []
    for i in range(steps):
        value = f32(transform(input_min + f32(i) * step))
        midpoint = f32(transform(input_min + f32(i) * step + half_step))
        following = f32(transform(input_min + f32(i + 1) * step))
        sample = rnd(value * inverse)
        interpolated = rnd((following * inverse + rnd(value * inverse)) / f32(2))
        bias = rnd((interpolated - rnd(midpoint * inverse)) / f32(2))
        table.append(int(min(max(sample - bias, f32(-32768)), f32(32767))))
    table.append(int(min(max(rnd(f32(transform(input_max)) * inverse), f32(-32768)), f32(32767))))
    return table


def lookup(value: Any, table: Any) -> Any:
    """TFLite's LUTLookup of an int16 value in a 513-entry table (int16 arithmetic wraps as C's)."""
    from tvm import tirx

    index = local(tirx.shift_right(value, 7) + 256, "int32")
    offset = tirx.bitwise_and(value, 0x7F)
    base = local(table[index], "int32")
    slope = tirx.Cast("int32", tirx.Cast("int16", table[index + 1] - base))
    delta = tirx.shift_right(slope * offset + 64, 7)
    return tirx.Cast("int32", tirx.Cast("int16", base + delta))
