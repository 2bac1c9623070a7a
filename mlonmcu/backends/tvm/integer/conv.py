"""Integer conv2d, depthwise conv2d and dense kernels, written for scalar MCUs.

Loop order and blocking follow what a 32-bit core with ~30 registers does well: output
channels are computed B at a time in registers (each input value is loaded once for B
multiply-accumulates), weights are packed at compile time so the innermost loop walks them
contiguously, and padding is handled by clamping the kernel-window loops per output pixel, so
the inner loop has no condition. Accumulation is int32, requantization TFLite's fixed point.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mlonmcu.backends.tvm.integer.fixedpoint import multiply_by_quantized_multiplier, round_double_product
from mlonmcu.backends.tvm.integer.tir import accumulators, clamp, flat_view, i32, prim_func, root_block, store_int8


@dataclass(frozen=True)
class ConvSpec:
    """An NHWC int8 convolution after the QDQ chain was matched."""

    name: str
    input_shape: tuple[int, int, int, int]  # N, H, W, C
    output_shape: tuple[int, int, int, int]
    kernel: tuple[int, int]  # KH, KW
    strides: tuple[int, int]
    dilation: tuple[int, int]
    padding: tuple[int, int, int, int]  # top, left, bottom, right
    depthwise: bool
    input_offset: int  # −zero point of the input
    output_offset: int
    act_min: int
    act_max: int
    block: int

    @property
    def macs(self) -> int:
        n, oh, ow, co = self.output_shape
        kh, kw = self.kernel
        per_output = kh * kw * (1 if self.depthwise else self.input_shape[3])
        return n * oh * ow * co * per_output


def pack_conv_weights(weights_hwio: np.ndarray, block: int) -> np.ndarray:
    """HWIO → [Cout/B][KH][KW][Cin][B], output channels padded with zeros to a multiple of B."""
    kh, kw, ci, co = weights_hwio.shape
    blocks = -(-co // block)
    padded = np.zeros((kh, kw, ci, blocks * block), dtype=np.int8)
    padded[..., :co] = weights_hwio
    return np.ascontiguousarray(padded.reshape(kh, kw, ci, blocks, block).transpose(3, 0, 1, 2, 4)).reshape(-1)


def pack_channels(values: np.ndarray, block: int, fill: int = 0) -> np.ndarray:
    count = -(-values.shape[0] // block) * block
    out = np.full((count, *values.shape[1:]), fill, dtype=values.dtype)
    out[: values.shape[0]] = values
    return out


def _window(origin: Any, size: int, kernel: int, dilation: int) -> tuple[Any, Any]:
    """Range of kernel taps that fall inside the input: [lo, hi)."""
    from tvm import tirx

    zero = tirx.const(0, "int32")
    lo = tirx.Max(zero, tirx.floordiv(-origin + (dilation - 1), dilation))
    hi = tirx.Min(tirx.const(kernel, "int32"), tirx.floordiv(size - origin + (dilation - 1), dilation))
    return lo, tirx.Max(lo, hi)


def _requantize_store(spec: ConvSpec, y: Any, acc: Any, quant: Any, n: Any, oh: Any, ow: Any, co: Any) -> None:
    from tvm.script.ir_builder import tirx as T

    value = multiply_by_quantized_multiplier(acc, quant[co, 0], quant[co, 1]) + spec.output_offset
    if spec.output_shape[3] % spec.block:
        with T.If(co < spec.output_shape[3]), T.Then():
            store_int8(y, clamp(value, spec.act_min, spec.act_max), [n, oh, ow, co])
    else:
        store_int8(y, clamp(value, spec.act_min, spec.act_max), [n, oh, ow, co])


def conv2d_kernel(spec: ConvSpec) -> Any:
    """Regular convolution: weights packed by pack_conv_weights."""
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    n_, h, w, ci = spec.input_shape
    _, oh_, ow_, co_ = spec.output_shape
    kh_, kw_ = spec.kernel
    sh, sw = spec.strides
    dh, dw = spec.dilation
    pt, pl = spec.padding[0], spec.padding[1]
    block = spec.block
    blocks = -(-co_ // block)
    with IRBuilder() as ib, prim_func(spec.name, ["CONV_2D"], spec.macs):
        x = T.arg("x", T.Buffer(spec.input_shape, "int8"))
        wt = T.arg("w", T.Buffer((blocks, kh_, kw_, ci, block), "int8"))
        bias = T.arg("bias", T.Buffer((blocks * block,), "int32"))
        quant = T.arg("quant", T.Buffer((blocks * block, 2), "int32"))
        y = T.arg("y", T.Buffer(spec.output_shape, "int8"))
        with root_block():
            acc = accumulators(block)
            with T.serial(0, n_) as n, T.serial(0, oh_) as oh:
                ih0 = T.bind(oh * sh - pt)
                kh_lo, kh_hi = _window(ih0, h, kh_, dh)
                kh_lo, kh_hi = T.bind(kh_lo), T.bind(kh_hi)
                with T.serial(0, ow_) as ow:
                    iw0 = T.bind(ow * sw - pl)
                    kw_lo, kw_hi = _window(iw0, w, kw_, dw)
                    kw_lo, kw_hi = T.bind(kw_lo), T.bind(kw_hi)
                    with T.serial(0, blocks) as cb:
                        for j in range(block):
                            T.buffer_store(acc, bias[cb * block + j], [j])
                        with T.serial(kh_lo, kh_hi) as kh, T.serial(kw_lo, kw_hi) as kw:
                            ih = T.bind(ih0 + kh * dh)
                            iw = T.bind(iw0 + kw * dw)
                            with T.serial(0, ci) as c:
                                xv = T.bind(i32(x[n, ih, iw, c]) + spec.input_offset)
                                for j in range(block):
                                    T.buffer_store(acc, acc[j] + xv * i32(wt[cb, kh, kw, c, j]), [j])
                        for j in range(block):
                            _requantize_store(spec, y, acc[j], quant, n, oh, ow, cb * block + j)
    return ib.get()


def depthwise_kernel(spec: ConvSpec) -> Any:
    """Depthwise convolution (depth multiplier 1): weights as [KH][KW][C], channels in blocks."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    n_, h, w, c_ = spec.input_shape
    _, oh_, ow_, _ = spec.output_shape
    kh_, kw_ = spec.kernel
    sh, sw = spec.strides
    dh, dw = spec.dilation
    pt, pl = spec.padding[0], spec.padding[1]
    block = spec.block
    blocks = -(-c_ // block)
    with IRBuilder() as ib, prim_func(spec.name, ["DEPTHWISE_CONV_2D"], spec.macs):
        x = T.arg("x", T.Buffer(spec.input_shape, "int8"))
        wt = T.arg("w", T.Buffer((kh_, kw_, blocks * block), "int8"))
        bias = T.arg("bias", T.Buffer((blocks * block,), "int32"))
        quant = T.arg("quant", T.Buffer((blocks * block, 2), "int32"))
        y = T.arg("y", T.Buffer(spec.output_shape, "int8"))
        with root_block():
            acc = accumulators(block)
            with T.serial(0, n_) as n, T.serial(0, oh_) as oh:
                ih0 = T.bind(oh * sh - pt)
                kh_lo, kh_hi = _window(ih0, h, kh_, dh)
                kh_lo, kh_hi = T.bind(kh_lo), T.bind(kh_hi)
                with T.serial(0, ow_) as ow:
                    iw0 = T.bind(ow * sw - pl)
                    kw_lo, kw_hi = _window(iw0, w, kw_, dw)
                    kw_lo, kw_hi = T.bind(kw_lo), T.bind(kw_hi)
                    with T.serial(0, blocks) as cb:
                        for j in range(block):
                            T.buffer_store(acc, bias[cb * block + j], [j])
                        with T.serial(kh_lo, kh_hi) as kh, T.serial(kw_lo, kw_hi) as kw:
                            ih = T.bind(ih0 + kh * dh)
                            iw = T.bind(iw0 + kw * dw)
                            for j in range(block):
                                channel = cb * block + j
                                if c_ % block:
                                    channel = tirx.Min(channel, c_ - 1)  # padded lanes read a valid input
                                xv = i32(x[n, ih, iw, channel]) + spec.input_offset
                                T.buffer_store(acc, acc[j] + xv * i32(wt[kh, kw, cb * block + j]), [j])
                        for j in range(block):
                            _requantize_store(spec, y, acc[j], quant, n, oh, ow, cb * block + j)
    return ib.get()


@dataclass(frozen=True)
class DenseSpec:
    """Requantization `litert`: LiteRT's reference kernel (round(double(acc)·eff), table of
    [hi, lo, shift] per channel); `tflm`: TFLite Micro's fixed point (table of [M, shift])."""

    name: str
    input_shape: tuple[int, ...]  # [..., inputs]: leading dimensions are batches
    output_shape: tuple[int, ...]
    input_offset: int
    output_offset: int
    act_min: int
    act_max: int
    block: int
    requant: str = "litert"

    @property
    def inputs(self) -> int:
        return self.input_shape[-1]

    @property
    def outputs(self) -> int:
        return self.output_shape[-1]

    @property
    def batch(self) -> int:
        return int(np.prod(self.input_shape[:-1]))

    @property
    def macs(self) -> int:
        return self.batch * self.inputs * self.outputs

    @property
    def quant_width(self) -> int:
        return 3 if self.requant == "litert" else 2


def pack_dense_weights(weights_oi: np.ndarray, block: int) -> np.ndarray:
    """[O][I] → [O/B][I][B] (zero-padded outputs)."""
    o, i = weights_oi.shape
    blocks = -(-o // block)
    padded = np.zeros((blocks * block, i), dtype=np.int8)
    padded[:o] = weights_oi
    return np.ascontiguousarray(padded.reshape(blocks, block, i).transpose(0, 2, 1)).reshape(-1)


def dense_kernel(spec: DenseSpec) -> Any:
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    block = spec.block
    blocks = -(-spec.outputs // block)
    with IRBuilder() as ib, prim_func(spec.name, ["FULLY_CONNECTED"], spec.macs):
        x_arg = T.arg("x", T.Buffer(spec.input_shape, "int8"))
        wt = T.arg("w", T.Buffer((blocks, spec.inputs, block), "int8"))
        bias = T.arg("bias", T.Buffer((blocks * block,), "int32"))
        quant = T.arg("quant", T.Buffer((blocks * block, spec.quant_width), "int32"))
        y_arg = T.arg("y", T.Buffer(spec.output_shape, "int8"))
        with root_block():
            x, y = flat_view(x_arg, spec.input_shape), flat_view(y_arg, spec.output_shape)
            acc = accumulators(block)
            with T.serial(0, spec.batch) as b, T.serial(0, blocks) as ob:
                for j in range(block):
                    T.buffer_store(acc, bias[ob * block + j], [j])
                with T.serial(0, spec.inputs) as i:
                    xv = T.bind(i32(x[b * spec.inputs + i]) + spec.input_offset)
                    for j in range(block):
                        T.buffer_store(acc, acc[j] + xv * i32(wt[ob, i, j]), [j])
                for j in range(block):
                    o = ob * block + j
                    if spec.requant == "litert":
                        scaled = round_double_product(acc[j], quant[o, 0], quant[o, 1], quant[o, 2])
                    else:
                        scaled = multiply_by_quantized_multiplier(acc[j], quant[o, 0], quant[o, 1])
                    value = scaled + spec.output_offset
                    if spec.outputs % block:
                        with T.If(o < spec.outputs), T.Then():
                            store_int8(y, clamp(value, spec.act_min, spec.act_max), [b * spec.outputs + o])
                    else:
                        store_int8(y, clamp(value, spec.act_min, spec.act_max), [b * spec.outputs + o])
    return ib.get()
