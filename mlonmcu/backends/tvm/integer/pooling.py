"""Integer AVERAGE_POOL_2D and MEAN kernels (TFLite exact)."""

from __future__ import annotations

import math
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from mlonmcu.backends.tvm.integer import tir
from mlonmcu.backends.tvm.integer.fixedpoint import multiply_by_constant, quantize_multiplier
from mlonmcu.backends.tvm.integer.tir import accumulators, clamp, i32, local, prim_func, root_block

if TYPE_CHECKING:
    from mlonmcu.backends.tvm.integer.graph import Quantized
    from mlonmcu.backends.tvm.integer.patterns import Output


def average_pool_kernel(
    name: str,
    in_shape: tuple[int, ...],
    out_shape: tuple[int, ...],
    pool: tuple[int, int],
    strides: tuple[int, int],
    padding: tuple[int, ...],
    act: tuple[int, int] = (-128, 127),
    dtype: str = "int8",
) -> Any:
    """Sum of the valid window, divided with rounding half away from zero (TFLite AveragePool),
    clamped to the fused activation's range `act`; int8 or (16x8) int16."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    n_, h, w, c_ = in_shape
    _, oh_, ow_, _ = out_shape
    zero = tirx.const(0, "int32")
    with IRBuilder() as ib, prim_func(name, ["AVERAGE_POOL_2D"], 0):
        x = T.arg("x", T.Buffer(in_shape, dtype))
        y = T.arg("y", T.Buffer(out_shape, dtype))
        with root_block():
            acc = accumulators(1)
            with T.serial(0, n_) as n, T.serial(0, oh_) as oh, T.serial(0, ow_) as ow:
                ih0 = T.bind(oh * strides[0] - padding[0])
                iw0 = T.bind(ow * strides[1] - padding[1])
                h_lo = T.bind(tirx.Max(zero, -ih0))
                h_hi = T.bind(tirx.Min(tirx.const(pool[0], "int32"), h - ih0))
                w_lo = T.bind(tirx.Max(zero, -iw0))
                w_hi = T.bind(tirx.Min(tirx.const(pool[1], "int32"), w - iw0))
                count = T.bind(tirx.Max(h_hi - h_lo, zero) * tirx.Max(w_hi - w_lo, zero))
                half = T.bind(tirx.truncdiv(count, 2))
                with T.serial(0, c_) as c:
                    T.buffer_store(acc, zero, [0])
                    with T.serial(h_lo, h_hi) as kh, T.serial(w_lo, w_hi) as kw:
                        T.buffer_store(acc, acc[0] + i32(x[n, ih0 + kh, iw0 + kw, c]), [0])
                    total = T.bind(acc[0])
                    rounded = tirx.Select(
                        total > zero, tirx.truncdiv(total + half, count), tirx.truncdiv(total - half, count)
                    )
                    T.buffer_store(y, tirx.Cast(dtype, clamp(rounded, *act)), [n, oh, ow, c])
    return ib.get()


def mean_multiplier(input_scale: float, output_scale: float, count: int) -> tuple[int, int]:
    """TFLite folds the division by the element count into the requantization multiplier."""
    multiplier, shift = quantize_multiplier(input_scale / output_scale)
    k = min(math.floor(math.log2(count)), 32, 31 + shift)
    return int((multiplier << k) // count), shift - k


def mean_kernel(name: str, in_shape: tuple[int, ...], out_shape: tuple[int, ...], q: Quantized, out: Output) -> Any:
    """MEAN over H and W of an NHWC tensor (TFLite's special case; the general one is the same)."""
    return reduce_mean_kernel(name, in_shape, (1, 2), out_shape, q, out)


def reduce_mean_kernel(
    name: str,
    in_shape: tuple[int, ...],
    axes: tuple[int, ...],
    out_shape: tuple[int, ...],
    q: Quantized,
    out: Output,
    dtype: str = "int8",
    compute_sum: bool = False,
) -> Any:
    """MEAN over `axes`: the raw values summed in int32, the zero point (× count) taken off, then
    one requantization with the division by the count folded into the multiplier, as TFLite's
    integer QuantizedMeanOrSum does (for int8 and, 16x8, int16 tensors); `compute_sum`: SUM,
    the same without the division."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    kept = [a for a in range(len(in_shape)) if a not in axes]
    count = math.prod(in_shape[a] for a in axes)
    if compute_sum:
        multiplier, shift = quantize_multiplier(q.scalar_scale / out.scale)
    else:
        multiplier, shift = mean_multiplier(q.scalar_scale, out.scale, count)
    with IRBuilder() as ib, prim_func(name, ["SUM" if compute_sum else "MEAN"], 0):
        x = T.arg("x", T.Buffer(in_shape, dtype))
        y = T.arg("y", T.Buffer(out_shape, dtype))
        with root_block():
            acc = accumulators(1)
            y_flat = tir.flat_view(y, out_shape, dtype)
            with ExitStack() as outer:
                index = {a: outer.enter_context(T.serial(0, in_shape[a])) for a in kept}
                T.buffer_store(acc, 0, [0])
                with ExitStack() as inner:
                    index.update({a: inner.enter_context(T.serial(0, in_shape[a])) for a in axes})
                    T.buffer_store(acc, acc[0] + i32(x[tuple(index[a] for a in range(len(in_shape)))]), [0])
                centred = local(acc[0] - q.scalar_zero_point * count, "int32")
                value = multiply_by_constant(centred, multiplier, shift) + out.zero_point
                position = 0
                for a in kept:
                    position = position * in_shape[a] + index[a]
                T.buffer_store(y_flat, tirx.Cast(dtype, clamp(value, out.act_min, out.act_max)), [position])
    return ib.get()
