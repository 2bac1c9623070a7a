"""16x8 CONV_2D and DEPTHWISE_CONV_2D (int16 activations, int8 weights): TFLite's reference
ConvPerChannel / DepthwiseConvPerChannel for int16.

The accumulator is as wide as the bias: an int64 bias (the converter's default for 16x8) means
int64 sums and TFLite's int64 MultiplyByQuantizedMultiplier, which first reduces the multiplier
to 16 bits ((m + 2^15) >> 16) and shifts once with rounding; an int32 bias means int32 sums and
the usual double-rounding requantization. int16 activations have zero point 0, so padding is a
skipped tap. A plain loop nest, not yet register-blocked like the int8 kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mlonmcu.backends.tvm.integer.fixedpoint import multiply_by_quantized_multiplier
from mlonmcu.backends.tvm.integer.tir import clamp, local, prim_func, root_block


@dataclass(frozen=True)
class Conv16Spec:
    name: str
    input_shape: tuple[int, int, int, int]
    output_shape: tuple[int, int, int, int]
    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilation: tuple[int, int]
    padding: tuple[int, int]  # top, left
    wide: bool  # int64 bias and accumulator
    act: tuple[int, int]
    depthwise: bool = False  # weights [KH, KW, C], output channel c reads input channel c


def wide_multipliers(pairs: np.ndarray) -> np.ndarray:
    """(multiplier, shift) → (16-bit multiplier, total right shift) of the int64 requantization."""
    reduced = [(m + (1 << 15)) >> 16 if m < 0x7FFF0000 else 0x7FFF for m in pairs[:, 0].tolist()]
    return np.stack([np.array(reduced), 15 - pairs[:, 1]], axis=1).astype(np.int32)


def conv16_kernel(spec: Conv16Spec) -> Any:
    """Arguments: x (int16 NHWC), weights int8 [KH, KW, I, O], bias [O] (int64 if wide, else
    int32), requant int32 [O, 2] ((multiplier, shift), through wide_multipliers if wide), y (int16)."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    n_, h_, w_, c_ = spec.input_shape
    _, oh_, ow_, o_ = spec.output_shape
    kh_, kw_ = spec.kernel
    acc_type = "int64" if spec.wide else "int32"
    macs = n_ * oh_ * ow_ * o_ * kh_ * kw_ * (1 if spec.depthwise else c_)
    with IRBuilder() as ib, prim_func(spec.name, ["DEPTHWISE_CONV_2D" if spec.depthwise else "CONV_2D"], macs):
        x = T.arg("x", T.Buffer(spec.input_shape, "int16"))
        weights = T.arg("weights", T.Buffer((kh_, kw_, o_) if spec.depthwise else (kh_, kw_, c_, o_), "int8"))
        bias = T.arg("bias", T.Buffer((o_,), acc_type))
        requant = T.arg("requant", T.Buffer((o_, 2), "int32"))
        y = T.arg("y", T.Buffer(spec.output_shape, "int16"))
        with root_block():
            acc = T.sblock_alloc_buffer((1,), acc_type)
            loops = (T.serial(0, n_), T.serial(0, oh_), T.serial(0, ow_), T.serial(0, o_))
            with loops[0] as n, loops[1] as oy, loops[2] as ox, loops[3] as o:
                T.buffer_store(acc, bias[o], [0])
                with T.serial(0, kh_) as fy, T.serial(0, kw_) as fx:
                    iy = oy * spec.strides[0] - spec.padding[0] + fy * spec.dilation[0]
                    ix = ox * spec.strides[1] - spec.padding[1] + fx * spec.dilation[1]
                    inside = tirx.all(iy >= 0, iy < h_, ix >= 0, ix < w_)
                    if spec.depthwise:
                        with T.If(inside), T.Then():
                            product = tirx.Cast(acc_type, x[n, iy, ix, o]) * tirx.Cast(acc_type, weights[fy, fx, o])
                            T.buffer_store(acc, acc[0] + product, [0])
                    else:
                        with T.If(inside), T.Then(), T.serial(0, c_) as c:
                            product = tirx.Cast(acc_type, x[n, iy, ix, c]) * tirx.Cast(acc_type, weights[fy, fx, c, o])
                            T.buffer_store(acc, acc[0] + product, [0])
                if spec.wide:
                    shift = tirx.Cast("int64", requant[o, 1])
                    one = tirx.const(1, "int64")
                    rounded = acc[0] * tirx.Cast("int64", requant[o, 0]) + tirx.shift_left(one, shift - one)
                    scaled = local(tirx.Cast("int32", tirx.shift_right(rounded, shift)), "int32")
                else:
                    scaled = multiply_by_quantized_multiplier(local(acc[0], "int32"), requant[o, 0], requant[o, 1])
                T.buffer_store(y, tirx.Cast("int16", clamp(scaled, *spec.act)), [n, oy, ox, o])
    return ib.get()
