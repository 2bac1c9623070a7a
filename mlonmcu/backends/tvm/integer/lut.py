"""int8 activations as 256-entry lookup tables, computed at build time with TFLite's arithmetic.

An elementwise int8 operator has only 256 possible inputs, so the exact result of each is
computed here, once, and the kernel is one table load per element — cheaper on an MCU than
TFLite's per-element fixed point, and exact by construction as long as the table is.

- HARD_SWISH: TFLite's (and TFLite Micro's) 16-bit fixed-point reference arithmetic, emulated
  with Python integers (C's truncating division and int16 wrap-around spelled out).
- LOGISTIC, TANH, EXP: LiteRT fills a table the same way, in float32 (dequantize, transform, round
  half away from zero, requantize); the transform is the C library's `expf`/`tanhf` (called
  through ctypes) so the float32 results are the ones LiteRT computes. TFLite Micro computes
  LOGISTIC/TANH in gemmlowp fixed point instead (up to 1 LSB apart): `tvmaot.arithmetic=tflm`
  builds those tables (`tflm_table`, the fixed point emulated on Python integers).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from mlonmcu.backends.tvm.integer import scalar
from mlonmcu.backends.tvm.integer.fixedpoint import quantize_multiplier, round_half_away
from mlonmcu.backends.tvm.integer.scalar import c_div, rounding_divide_by_pot
from mlonmcu.backends.tvm.integer.tir import flat_view, i32, prim_func, root_block

INT8 = range(-128, 128)
_libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
for _name in ("expf", "tanhf"):
    getattr(_libm, _name).restype = ctypes.c_float
    getattr(_libm, _name).argtypes = [ctypes.c_float]


def libm_expf(value: float) -> float:
    """The C library's expf: the float32 exp TFLite's table builders call."""
    return float(_libm.expf(value))


def _f32(value: float) -> float:
    return float(np.float32(value))


def _wrap16(value: int) -> int:
    return (value + 0x8000) % 0x10000 - 0x8000


def _rounding_doubling_high_mul16(a: int, b: int) -> int:
    if a == b == -32768:
        return 32767
    product = a * b
    nudge = (1 << 14) if product >= 0 else 1 - (1 << 14)
    return _wrap16(c_div(product + nudge, 1 << 15))


def _doubling_high_mul16(a: int, b: int) -> int:
    if a == b == -32768:
        return 32767
    return _wrap16(c_div(a * b, 1 << 15))


def _saturating_left_shift16(value: int, amount: int) -> int:
    return max(-32768, min(32767, value * (1 << amount)))


def _to_int16_multiplier(multiplier: int) -> int:
    return 32767 if multiplier >= (1 << 31) - 1 - (1 << 15) else (multiplier + (1 << 15)) >> 16


def hard_swish_table(in_scale: float, in_zero: int, out_scale: float, out_zero: int) -> list[int] | None:
    """None when TFLite would refuse the scales (its output multiplier must not shift left)."""
    hires = _f32(_f32(1.0 / 128.0) * _f32(in_scale))
    out_multiplier, out_exponent = quantize_multiplier(float(np.float32(hires) / np.float32(out_scale)))
    relu_multiplier, relu_exponent = quantize_multiplier(float(np.float32(hires) / np.float32(3.0 / 32768.0)))
    if out_exponent > 0:
        return None
    out16, relu16 = _to_int16_multiplier(out_multiplier), _to_int16_multiplier(relu_multiplier)
    table = []
    for value in INT8:
        centred = _wrap16(value - in_zero)
        hires_value = _wrap16(centred * (1 << 7))
        preshift = _rounding_doubling_high_mul16(hires_value, out16)
        reluish = hires_value
        if relu_exponent > 0:
            reluish = _saturating_left_shift16(reluish, relu_exponent - 1)
        reluish = _rounding_doubling_high_mul16(reluish, relu16)
        if relu_exponent > 0:
            reluish = _saturating_left_shift16(reluish, 1)
        if relu_exponent < 0:
            reluish = rounding_divide_by_pot(reluish, -relu_exponent)
        reluish = _wrap16((reluish + (1 << 15)) >> 1)
        result = rounding_divide_by_pot(_doubling_high_mul16(reluish, preshift), -out_exponent)
        result = _wrap16(result + out_zero)
        table.append(max(-128, min(127, result)))
    return table


def float_table(
    in_scale: float, in_zero: int, out_scale: float, out_zero: int, transform: Callable[[float], float]
) -> list[int]:
    """LiteRT's table: dequantize in float32, transform, ×(1/out scale), round, add the zero point."""
    inverse = np.float32(1.0) / np.float32(out_scale)
    table = []
    for value in INT8:
        dequantized = np.float32(in_scale) * np.float32(value - in_zero)
        transformed = np.float32(transform(float(dequantized)))
        rescaled = round_half_away(float(np.float32(transformed * inverse)))
        table.append(max(-128, min(127, rescaled + out_zero)))
    return table


TRANSFORMS: dict[str, Callable[[float], float]] = {
    "LOGISTIC": lambda x: _f32(1.0) / _f32(_f32(1.0) + _f32(_libm.expf(-x))),
    "TANH": lambda x: float(_libm.tanhf(x)),
    "EXP": lambda x: float(_libm.expf(x)),
    "ELU": lambda x: x if x >= 0.0 else _f32(_f32(_libm.expf(x)) - _f32(1.0)),  # TFLM's; LiteRT has none
}


def lut_kernel(name: str, op: str, shape: tuple[int, ...]) -> Any:
    """out[i] = table[x[i] + 128]; the table is the kernel's second argument (a constant)."""
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    size = math.prod(shape)
    with IRBuilder() as ib, prim_func(name, [op], 0):
        x_arg = T.arg("x", T.Buffer(shape, "int8"))
        table = T.arg("table", T.Buffer((256,), "int8"))
        out_arg = T.arg("out", T.Buffer(shape, "int8"))
        with root_block():
            x, z = flat_view(x_arg, shape), flat_view(out_arg, shape)
            with T.serial(0, size) as i:
                T.buffer_store(z, table[i32(x[i]) + 128], [i])
    return ib.get()


def rsqrt_table(in_scale: float, in_zero: int, out_scale: float, out_zero: int) -> list[int]:
    """TFLM's int8 RSQRT (elementwise.cc) for every input: 1/sqrt in gemmlowp fixed point. TFLM
    refuses negative inputs at run time; here they follow the same formula (as values ≤ 1)."""
    multiplier, shift = quantize_multiplier(
        1.0 / float(np.float32(np.sqrt(np.float32(in_scale))) * np.float32(out_scale))
    )
    table = []
    for value in INT8:
        centred = value - in_zero
        if centred == 0:
            table.append(127)
            continue
        inv_multiplier, inv_shift = scalar.inv_sqrt(centred, -1)
        data = scalar.multiply_by_quantized_multiplier(1, inv_multiplier, inv_shift + 20)
        result = scalar.multiply_by_quantized_multiplier(data, multiplier, shift - 20) + out_zero
        table.append(max(-128, min(127, result)))
    return table


def abs_table(in_scale: float, in_zero: int, out_scale: float, out_zero: int) -> list[int]:
    """TFLM's int8 ABS: |x − zp|, rescaled (in fixed point) only when the scales differ."""
    rescale = np.float32(in_scale) != np.float32(out_scale)
    multiplier, shift = quantize_multiplier(float(np.float32(in_scale) / np.float32(out_scale)))
    table = []
    for value in INT8:
        magnitude = abs(value - in_zero)
        result = scalar.multiply_by_quantized_multiplier(magnitude, multiplier, shift) if rescale else magnitude
        table.append(max(-128, min(127, result + out_zero)))
    return table


def tflm_table(op: str, in_scale: float, in_zero: int) -> list[int]:
    """TFLM's int8 LOGISTIC / TANH (reference_integer_ops): the input rescaled to Q4.27 by a
    frexp multiplier, gemmlowp's fixed-point logistic or tanh, rounded to Q0.7 (logistic: plus
    its −128 zero point; tanh: no zero point, as TFLM assumes); inputs beyond the radius saturate."""
    mantissa, left_shift = math.frexp(float(in_scale) * float(1 << 27))
    multiplier = round_half_away(mantissa * (1 << 31))
    radius = math.floor(15.0 * (1 << 27) / (1 << left_shift))
    bits, offset, function = (8, -128, scalar.gemmlowp_logistic) if op == "LOGISTIC" else (7, 0, scalar.gemmlowp_tanh)
    table = []
    for value in INT8:
        centred = value - in_zero
        if centred <= -radius:
            table.append(-128)
        elif centred >= radius:
            table.append(127)
        else:
            q4 = scalar.multiply_by_quantized_multiplier(centred, multiplier, left_shift)
            result = scalar.rounding_divide_by_pot(function(q4, 4), 31 - bits) + offset
            table.append(max(-128, min(127, result)))
    return table
