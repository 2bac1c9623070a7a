"""Integer AVERAGE_POOL_2D, MAX_POOL_2D and MEAN kernels (TFLite exact)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mlonmcu.backends.tvm.integer import tir
from mlonmcu.backends.tvm.integer.blocks import takes_variant, variant_attrs
from mlonmcu.backends.tvm.integer.fixedpoint import multiply_by_constant, quantize_multiplier
from mlonmcu.backends.tvm.integer.tir import accumulators, clamp, i32, local, prim_func, root_block

if TYPE_CHECKING:
    from mlonmcu.backends.tvm.integer.graph import Quantized
    from mlonmcu.backends.tvm.integer.patterns import Output


# SIMD variants of the pools: templates/tvmaot/mlonmcu_{dsp,mve,rvv}.h
AVERAGE_POOL_TAPS = 256  # the largest window an average pool variant takes: its sums in 16-bit lanes


def pool_kernel(
    op: str,
    name: str,
    in_shape: tuple[int, ...],
    out_shape: tuple[int, ...],
    pool: tuple[int, int],
    strides: tuple[int, int],
    padding: tuple[int, ...],
    act: tuple[int, int] = (-128, 127),
    dtype: str = "int8",
    simd: str = "off",
) -> Any:
    """AVERAGE_POOL_2D (`op`): the sum of the valid window divided with rounding half away from
    zero, as TFLite's AveragePool; MAX_POOL_2D: its largest value. Clamped to the fused
    activation's range `act`; int8 or (16x8) int16; SIMD variants for int8 as `simd`
    (patterns.Schedule) allows (average pools of at most AVERAGE_POOL_TAPS taps)."""
    geometry = _Geometry(in_shape, out_shape, pool, strides, padding, act, dtype, simd)
    average = op == "AVERAGE_POOL_2D"
    kernel = _pool_kernel(name, op, geometry, _average_pixel if average else _max_pixel)
    if average and pool[0] * pool[1] > AVERAGE_POOL_TAPS:
        return kernel
    return _with_pool_variants(kernel, name, op, geometry)


def _average_pixel(x: Any, acc: Any, window: _Window, c: Any, act: tuple[int, int]) -> Any:
    from tvm import tirx
    from tvm.script.ir_builder import tirx as T

    zero = tirx.const(0, "int32")
    T.buffer_store(acc, zero, [0])
    with T.serial(0, window.rows) as kh, T.serial(0, window.cols) as kw:
        T.buffer_store(acc, acc[0] + i32(window.tap(x, kh, kw, c)), [0])
    total = T.bind(acc[0])
    count = T.bind(window.rows * window.cols)
    half = T.bind(tirx.truncdiv(count, 2))
    rounded = tirx.Select(total > zero, tirx.truncdiv(total + half, count), tirx.truncdiv(total - half, count))
    return clamp(rounded, *act)


def _max_pixel(x: Any, acc: Any, window: _Window, c: Any, act: tuple[int, int]) -> Any:
    from tvm import tirx
    from tvm.script.ir_builder import tirx as T

    T.buffer_store(acc, tirx.const(act[0], "int32"), [0])
    with T.serial(0, window.rows) as kh, T.serial(0, window.cols) as kw:
        T.buffer_store(acc, tirx.Max(acc[0], i32(window.tap(x, kh, kw, c))), [0])
    return tirx.Min(acc[0], tirx.const(act[1], "int32"))


@dataclass(frozen=True)
class _Geometry:
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    pool: tuple[int, int]
    strides: tuple[int, int]
    padding: tuple[int, ...]  # top, left (, bottom, right)
    act: tuple[int, int]
    dtype: str
    simd: str = "off"

    @property
    def whole(self) -> bool:
        """Whether every window lies inside the input."""
        sizes = zip(self.out_shape[1:3], self.strides, self.pool, self.in_shape[1:3], strict=True)
        return not any(self.padding) and all((out - 1) * stride + pool <= size for out, stride, pool, size in sizes)


@dataclass(frozen=True)
class _Window:
    """The valid part of one output pixel's window: rows × cols taps from input pixel (n, ih, iw)."""

    n: Any
    ih: Any
    iw: Any
    rows: Any
    cols: Any

    def tap(self, x: Any, kh: Any, kw: Any, c: Any) -> Any:
        return x[self.n, self.ih + kh, self.iw + kw, c]


def _pool_kernel(name: str, op: str, g: _Geometry, pixel: Callable[..., Any]) -> Any:
    """A pool over NHWC: per output pixel its valid window (_windows), per channel `pixel`'s value."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    with IRBuilder() as ib, prim_func(name, [op], 0):
        x = T.arg("x", T.Buffer(g.in_shape, g.dtype))
        y = T.arg("y", T.Buffer(g.out_shape, g.dtype))
        with root_block():
            acc = accumulators(1)
            with _windows(g) as (window, oh, ow), T.serial(0, g.in_shape[3]) as c:
                T.buffer_store(y, tirx.Cast(g.dtype, pixel(x, acc, window, c, g.act)), [window.n, oh, ow, c])
    return ib.get()


@contextmanager
def _windows(g: _Geometry) -> Iterator[tuple[_Window, Any, Any]]:
    """Loops over the output pixels (n, oh, ow), each with its valid window."""
    from tvm import tirx
    from tvm.script.ir_builder import tirx as T

    _, h, w, _ = g.in_shape
    n_, oh_, ow_, _ = g.out_shape
    zero = tirx.const(0, "int32")

    def bounds(start: Any, size: int, extent: int) -> tuple[Any, Any]:
        low = T.bind(tirx.Max(zero, -start))
        high = T.bind(tirx.Max(tirx.Min(tirx.const(size, "int32"), extent - start), low))
        return low, high

    with T.serial(0, n_) as n, T.serial(0, oh_) as oh, T.serial(0, ow_) as ow:
        ih0 = T.bind(oh * g.strides[0] - g.padding[0])
        iw0 = T.bind(ow * g.strides[1] - g.padding[1])
        if g.whole:  # constant bounds the compiler unrolls
            yield _Window(n, ih0, iw0, tirx.const(g.pool[0], "int32"), tirx.const(g.pool[1], "int32")), oh, ow
            return
        h_lo, h_hi = bounds(ih0, g.pool[0], h)
        w_lo, w_hi = bounds(iw0, g.pool[1], w)
        yield _Window(n, ih0 + h_lo, iw0 + w_lo, h_hi - h_lo, w_hi - w_lo), oh, ow


def _with_pool_variants(kernel: Any, name: str, op: str, g: _Geometry) -> Any:
    """The int8 pool `kernel` with the SIMD variants its BUILD's `simd` allows. Not RVV where every window is
    whole: clang vectorizes the scalar loops of such pools itself, with their constant windows
    unrolled (measured: a 5x5 average over 64 channels, VLEN 128: 296 instructions, 426 with
    the variant); with border windows it does not (9x more than the variant)."""
    if g.dtype != "int8":
        return kernel
    for kind, attr in variant_attrs().items():
        if takes_variant(g.simd, kind) and not (kind == "rvv" and g.whole):
            kernel = kernel.with_attr(attr, _pool_variant(name, op, g, kind))
    return kernel


def _pool_variant(name: str, op: str, g: _Geometry, kind: str) -> Any:
    """The `kind` SIMD variant: the same pixel loops and windows, each pixel's channels in one
    call into the variant's C (mlonmcu_<kind>_average_pool / _max_pool)."""
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    extern = f"mlonmcu_{kind}_{'average' if op == 'AVERAGE_POOL_2D' else 'max'}_pool"
    _, _, width, channels = g.in_shape
    with IRBuilder() as ib, prim_func(name, [op], 0):
        x = T.arg("x", T.Buffer(g.in_shape, "int8"))
        y = T.arg("y", T.Buffer(g.out_shape, "int8"))
        with root_block(), _windows(g) as (window, oh, ow):
            corner = T.address_of(window.tap(x, 0, 0, 0))
            out = T.address_of(y[window.n, oh, ow, 0])
            facts = [window.rows, window.cols, width * channels, channels, *g.act]
            T.evaluate(T.call_extern("int32", extern, corner, out, *facts))
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
