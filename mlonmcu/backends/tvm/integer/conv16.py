"""16x8 CONV_2D and DEPTHWISE_CONV_2D (int16 activations, int8 weights): TFLite's reference
ConvPerChannel / DepthwiseConvPerChannel for int16.

The accumulator is as wide as the bias: an int64 bias (the converter's default for 16x8) means
int64 sums and TFLite's int64 MultiplyByQuantizedMultiplier, which first reduces the multiplier
to 16 bits ((m + 2^15) >> 16) and shifts once with rounding; an int32 bias means int32 sums and
the usual double-rounding requantization. LiteRT's 16x8 FULLY_CONNECTED (not TFLM's, nor any
convolution) rounds its int64 sums once with the full 31-bit multiplier instead
(`single_rounding`). int16 activations have zero point 0, so padding is a skipped tap. Regular
convolutions are register-blocked over output channels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mlonmcu.backends.tvm.integer.fixedpoint import multiply_by_quantized_multiplier
from mlonmcu.backends.tvm.integer.tir import accumulators, clamp, i32, local, prim_func, root_block


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
    single_rounding: bool = False  # wide only: (acc · m + 2^(t−1)) >> t with the 31-bit m, t = 31 − shift
    block: int = 4  # B: output channels per register block (regular convolutions)


def wide_multipliers(pairs: np.ndarray) -> np.ndarray:
    """(multiplier, shift) → (16-bit multiplier, total right shift) of the int64 requantization."""
    reduced = [(m + (1 << 15)) >> 16 if m < 0x7FFF0000 else 0x7FFF for m in pairs[:, 0].tolist()]
    return np.stack([np.array(reduced), 15 - pairs[:, 1]], axis=1).astype(np.int32)


def single_multipliers(pairs: np.ndarray) -> np.ndarray:
    """(multiplier, shift) → (multiplier, total right shift) of the single-rounding requantization."""
    return np.stack([pairs[:, 0], 31 - pairs[:, 1]], axis=1).astype(np.int32)


def _single_rounding(acc: Any, multiplier: Any, shift: Any) -> Any:
    """(acc · m + 2^(shift−1)) >> shift without the 79-bit product: acc = hi · 2^16 + lo, and
    floor((hi · m · 2^16 + lo · m + r) / 2^shift) = (hi · m + ((lo · m + r) >> 16)) >> (shift − 16),
    exact for shift ≥ 16 (TFLite's shifts are at most 7, so shift ≥ 24)."""
    from tvm import tirx

    def c64(v: int) -> Any:
        return tirx.const(v, "int64")

    m = tirx.Cast("int64", multiplier)
    total = tirx.Cast("int64", shift)
    hi, lo = tirx.shift_right(acc, c64(16)), tirx.bitwise_and(acc, c64(0xFFFF))
    low = tirx.shift_right(lo * m + tirx.shift_left(c64(1), total - c64(1)), c64(16))
    return tirx.shift_right(hi * m + low, total - c64(16))


def pack_conv16(spec: Conv16Spec, weights: np.ndarray, bias: np.ndarray, pairs: np.ndarray) -> list[np.ndarray]:
    """Weights, bias and requantization rows in the kernel's layout: a regular convolution's
    weights [KH, KW, I, O] as [O/B][KH][KW][I][B], bias and rows padded to the blocks."""
    if spec.depthwise:
        return [weights, bias, pairs]
    kh, kw, ci, co = weights.shape
    block = spec.block
    padded = -(-co // block) * block
    grown = np.zeros((kh, kw, ci, padded), np.int8)
    grown[..., :co] = weights
    packed = np.ascontiguousarray(grown.reshape(kh, kw, ci, padded // block, block).transpose(3, 0, 1, 2, 4))
    rows = np.zeros((padded, 2), np.int32)
    rows[:co] = pairs
    grown_bias = np.zeros(padded, bias.dtype)
    grown_bias[:co] = bias
    return [packed, grown_bias, rows]


def conv16_kernel(spec: Conv16Spec) -> Any:
    """Arguments: x (int16 NHWC), weights and bias and requant int32 rows ((multiplier, shift),
    through wide_multipliers if wide) as pack_conv16 lays them out (bias int64 if wide), y
    (int16). A regular convolution accumulates B output channels at once, so each input load
    feeds B MACs; a depthwise one goes channel by channel."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    n_, h_, w_, c_ = spec.input_shape
    _, oh_, ow_, o_ = spec.output_shape
    kh_, kw_ = spec.kernel
    acc_type = "int64" if spec.wide else "int32"
    block = 1 if spec.depthwise else spec.block
    blocks = -(-o_ // block)
    macs = n_ * oh_ * ow_ * o_ * kh_ * kw_ * (1 if spec.depthwise else c_)
    with IRBuilder() as ib, prim_func(spec.name, ["DEPTHWISE_CONV_2D" if spec.depthwise else "CONV_2D"], macs):
        x = T.arg("x", T.Buffer(spec.input_shape, "int16"))
        w_shape = (kh_, kw_, o_) if spec.depthwise else (blocks, kh_, kw_, c_, block)
        weights = T.arg("weights", T.Buffer(w_shape, "int8"))
        bias = T.arg("bias", T.Buffer((blocks * block,), acc_type))
        requant = T.arg("requant", T.Buffer((blocks * block, 2), "int32"))
        y = T.arg("y", T.Buffer(spec.output_shape, "int16"))
        with root_block():
            acc = T.sblock_alloc_buffer((block,), acc_type)
            # an int16 × int8 product has at most 22 bits plus sign: 511 of them sum in int32
            partial = accumulators(block) if spec.wide and not spec.depthwise and c_ < 512 else None
            loops = (T.serial(0, n_), T.serial(0, oh_), T.serial(0, ow_), T.serial(0, blocks))
            with loops[0] as n, loops[1] as oy, loops[2] as ox, loops[3] as ob:
                for j in range(block):
                    T.buffer_store(acc, bias[ob * block + j], [j])
                with T.serial(0, kh_) as fy, T.serial(0, kw_) as fx:
                    iy = oy * spec.strides[0] - spec.padding[0] + fy * spec.dilation[0]
                    ix = ox * spec.strides[1] - spec.padding[1] + fx * spec.dilation[1]
                    inside = tirx.all(iy >= 0, iy < h_, ix >= 0, ix < w_)
                    if spec.depthwise:
                        with T.If(inside), T.Then():
                            product = tirx.Cast(acc_type, x[n, iy, ix, ob]) * tirx.Cast(acc_type, weights[fy, fx, ob])
                            T.buffer_store(acc, acc[0] + product, [0])
                    elif partial is not None:  # int32 sums per tap, exact below 512 channels
                        with T.If(inside), T.Then():
                            for j in range(block):
                                T.buffer_store(partial, 0, [j])
                            with T.serial(0, c_) as c:
                                xv = T.bind(i32(x[n, iy, ix, c]))
                                for j in range(block):
                                    T.buffer_store(partial, partial[j] + xv * i32(weights[ob, fy, fx, c, j]), [j])
                            for j in range(block):
                                T.buffer_store(acc, acc[j] + tirx.Cast(acc_type, partial[j]), [j])
                    else:
                        with T.If(inside), T.Then(), T.serial(0, c_) as c:
                            xv = T.bind(i32(x[n, iy, ix, c]))
                            for j in range(block):
                                product = tirx.Cast(acc_type, xv * i32(weights[ob, fy, fx, c, j]))
                                T.buffer_store(acc, acc[j] + product, [j])
                for j in range(block):
                    o = ob * block + j
                    if spec.single_rounding:
                        rounded = _single_rounding(acc[j], requant[o, 0], requant[o, 1])
                        low, high = (tirx.const(v, "int64") for v in spec.act)  # saturated before narrowing
                        scaled = local(tirx.Cast("int32", tirx.Min(tirx.Max(rounded, low), high)), "int32")
                    elif spec.wide:
                        shift = tirx.Cast("int64", requant[o, 1])
                        one = tirx.const(1, "int64")
                        rounded = acc[j] * tirx.Cast("int64", requant[o, 0]) + tirx.shift_left(one, shift - one)
                        scaled = local(tirx.Cast("int32", tirx.shift_right(rounded, shift)), "int32")
                    else:
                        scaled = multiply_by_quantized_multiplier(local(acc[j], "int32"), requant[o, 0], requant[o, 1])
                    value = tirx.Cast("int16", clamp(scaled, *spec.act))
                    if o_ % block:
                        with T.If(o < o_), T.Then():
                            T.buffer_store(y, value, [n, oy, ox, o])
                    else:
                        T.buffer_store(y, value, [n, oy, ox, o])
    return ib.get()
