"""Integer elementwise kernels: ADD, requantize (int8 QUANTIZE), CONCATENATION (TFLite exact)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from mlonmcu.backends.tvm.integer.fixedpoint import multiply_by_constant, quantize_multiplier
from mlonmcu.backends.tvm.integer.tir import (
    clamp,
    flat_view,
    i32,
    local,
    prim_func,
    root_block,
    store_int8,
)

if TYPE_CHECKING:
    from mlonmcu.backends.tvm.integer.graph import Quantized
    from mlonmcu.backends.tvm.integer.patterns import Output

ADD_LEFT_SHIFT = 20  # int8 ADD works on inputs scaled by 2^20


def _flat(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape))


def add_params(a: Quantized, b: Quantized, out: Output) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
    """TFLite ADD's three (multiplier, shift) pairs; scales are float32, ratios in double."""
    sa, sb, so = (float(np.float32(s)) for s in (a.scalar_scale, b.scalar_scale, out.scale))
    twice_max = 2.0 * max(sa, sb)
    return (
        quantize_multiplier(sa / twice_max),
        quantize_multiplier(sb / twice_max),
        quantize_multiplier(twice_max / ((1 << ADD_LEFT_SHIFT) * so)),
    )


def add_kernel(name: str, shape: tuple[int, ...], a: Quantized, b: Quantized, out: Output) -> Any:
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    (ma, sa), (mb, sb), (mo, so) = add_params(a, b, out)
    size = _flat(shape)
    with IRBuilder() as ib, prim_func(name, ["ADD"], 0):
        args = [T.arg(name, T.Buffer(shape, "int8")) for name in ("a", "b", "out")]
        with root_block():
            x, y, z = (flat_view(arg, shape) for arg in args)
            with T.serial(0, size) as i:
                va = local((i32(x[i]) - a.scalar_zero_point) * (1 << ADD_LEFT_SHIFT), "int32")
                vb = local((i32(y[i]) - b.scalar_zero_point) * (1 << ADD_LEFT_SHIFT), "int32")
                total = local(multiply_by_constant(va, ma, sa) + multiply_by_constant(vb, mb, sb), "int32")
                result = multiply_by_constant(total, mo, so) + out.zero_point
                store_int8(z, clamp(result, out.act_min, out.act_max), [i])
    return ib.get()


def requantize_kernel(name: str, shape: tuple[int, ...], q: Quantized, out: Output) -> Any:
    """TFLite QUANTIZE int8 → int8: (x − zp_in)·(s_in/s_out) in fixed point + zp_out."""
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    identity = q.scalar_scale == out.scale
    multiplier, shift = quantize_multiplier(float(np.float32(q.scalar_scale)) / float(np.float32(out.scale)))
    size = _flat(shape)
    with IRBuilder() as ib, prim_func(name, ["QUANTIZE"], 0):
        args = [T.arg(name, T.Buffer(shape, "int8")) for name in ("x", "out")]
        with root_block():
            x, z = (flat_view(arg, shape) for arg in args)
            with T.serial(0, size) as i:
                centred = i32(x[i]) - q.scalar_zero_point
                scaled = centred if identity else multiply_by_constant(local(centred, "int32"), multiplier, shift)
                store_int8(z, clamp(scaled + out.zero_point, out.act_min, out.act_max), [i])
    return ib.get()


def concat_kernel(name: str, shapes: list[tuple[int, ...]], out_shape: tuple[int, ...], axis: int) -> Any:
    """Concatenation of tensors that share the output's quantization: copies."""
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    outer = _flat(out_shape[:axis])
    inner = [_flat(s[axis:]) for s in shapes]
    total = sum(inner)
    with IRBuilder() as ib, prim_func(name, ["CONCATENATION"], 0):
        args = [T.arg(f"in{k}", T.Buffer(shape, "int8")) for k, shape in enumerate(shapes)]
        out = T.arg("out", T.Buffer(out_shape, "int8"))
        with root_block():
            parts = [flat_view(arg, shape) for arg, shape in zip(args, shapes, strict=True)]
            z = flat_view(out, out_shape)
            with T.serial(0, outer) as o:
                offset = 0
                for part, size in zip(parts, inner, strict=True):
                    with T.serial(0, size) as i:
                        T.buffer_store(z, part[o * size + i], [o * total + offset + i])
                    offset += size
    return ib.get()
