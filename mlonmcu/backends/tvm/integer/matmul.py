"""Integer BATCH_MATMUL (TFLite exact): both operands activations or constants, batches broadcast.

out[b, i, j] = zp_out + MBQM(Σ_k (L[b, i, k] − zp_L)·(R[b, k, j] − zp_R), s_L·s_R/s_out), clamped
to int8. TFLite multiplies the two scales in float32 and divides by the output scale in double
(its GetQuantizedConvolutionMultipler); `adj_x`/`adj_y` transpose the last two axes.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import numpy as np

from mlonmcu.backends.tvm.integer.fixedpoint import multiply_by_constant, quantize_multiplier
from mlonmcu.backends.tvm.integer.tir import (
    accumulators,
    clamp,
    flat_view,
    i32,
    local,
    prim_func,
    root_block,
    store_int8,
)


@dataclass(frozen=True)
class MatmulSpec:
    name: str
    lhs_shape: tuple[int, ...]
    rhs_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    adj_x: bool
    adj_y: bool
    lhs_zero: int
    rhs_zero: int
    out_zero: int
    multiplier: tuple[int, int]
    block: int = 8  # B: output columns per register block


def batch_multiplier(lhs_scale: float, rhs_scale: float, out_scale: float) -> tuple[int, int]:
    product = float(np.float32(lhs_scale) * np.float32(rhs_scale))
    return quantize_multiplier(product / float(np.float32(out_scale)))


def _batch_strides(shape: tuple[int, ...], batch: tuple[int, ...]) -> list[int]:
    """Element strides of `shape`'s batch axes over the output's batch axes (0 where broadcast)."""
    own = (1,) * (len(batch) - (len(shape) - 2)) + tuple(shape[:-2])
    matrix = shape[-1] * shape[-2]
    strides, step = [0] * len(batch), matrix
    for axis in reversed(range(len(batch))):
        strides[axis] = 0 if own[axis] == 1 else step
        step *= own[axis]
    return strides


def batch_matmul_kernel(spec: MatmulSpec) -> Any:
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    batch = spec.out_shape[:-2]
    rows, cols = spec.out_shape[-2:]
    depth = spec.lhs_shape[-2] if spec.adj_x else spec.lhs_shape[-1]
    macs = int(np.prod(spec.out_shape)) * depth
    l_cols = spec.lhs_shape[-1]
    r_cols = spec.rhs_shape[-1]
    with IRBuilder() as ib, prim_func(spec.name, ["BATCH_MATMUL"], macs):
        args = [
            T.arg(n, T.Buffer(s, "int8"))
            for n, s in (("lhs", spec.lhs_shape), ("rhs", spec.rhs_shape), ("out", spec.out_shape))
        ]
        with root_block():
            lhs, rhs, out = (
                flat_view(a, s) for a, s in zip(args, (spec.lhs_shape, spec.rhs_shape, spec.out_shape), strict=True)
            )
            acc = accumulators(spec.block + 1)
            with ExitStack() as loops:
                axes = [loops.enter_context(T.serial(0, d)) for d in batch]
                l_base = sum(
                    (v * s for v, s in zip(axes, _batch_strides(spec.lhs_shape, batch), strict=True) if s),
                    tirx.const(0, "int32"),
                )
                r_base = sum(
                    (v * s for v, s in zip(axes, _batch_strides(spec.rhs_shape, batch), strict=True) if s),
                    tirx.const(0, "int32"),
                )
                o_base = sum(
                    (v * s for v, s in zip(axes, _batch_strides(spec.out_shape, batch), strict=True) if s),
                    tirx.const(0, "int32"),
                )

                def column_block(i: Any, j0: Any, width: int) -> None:
                    """`width` output columns at once: each LHS load feeds `width` MACs; the RHS
                    zero point is taken out once per block, via the sum of the LHS row."""
                    for w in range(width + 1):
                        T.buffer_store(acc, tirx.const(0, "int32"), [w])
                    with T.serial(0, depth) as k:
                        l_at = l_base + (k * l_cols + i if spec.adj_x else i * l_cols + k)
                        lv = T.bind(i32(lhs[l_at]) - spec.lhs_zero)
                        if spec.rhs_zero:
                            T.buffer_store(acc, acc[width] + lv, [width])
                        for w in range(width):
                            j = j0 + w
                            r_at = r_base + (j * r_cols + k if spec.adj_y else k * r_cols + j)
                            T.buffer_store(acc, acc[w] + lv * i32(rhs[r_at]), [w])
                    for w in range(width):
                        total = acc[w] - acc[width] * spec.rhs_zero if spec.rhs_zero else acc[w]
                        scaled = multiply_by_constant(local(total, "int32"), *spec.multiplier) + spec.out_zero
                        store_int8(out, clamp(scaled, -128, 127), [o_base + i * cols + j0 + w])

                full, rest = divmod(cols, spec.block)
                with T.serial(0, rows) as i:
                    if full:
                        with T.serial(0, full) as jb:
                            column_block(i, jb * spec.block, spec.block)
                    if rest:
                        column_block(i, tirx.const(full * spec.block, "int32"), rest)
    return ib.get()
