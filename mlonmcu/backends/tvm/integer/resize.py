"""Integer RESIZE_BILINEAR: TFLite's ResizeBilinearInteger (10-bit fixed-point positions).

Where each output row and column samples the input (the two neighbours and the 10-bit weight of
the upper one) depends only on sizes and options, so it is computed here at build time with
TFLite's integer formulas and becomes two small constant tables; the kernel interpolates the
stored int8 values in int64 and rounds half away from zero at 2^20, as TFLite does without
TFLITE_SINGLE_ROUNDING. Input and output share one quantization (TFLite requires it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mlonmcu.backends.tvm.integer.scalar import c_div
from mlonmcu.backends.tvm.integer.tir import local, prim_func, root_block

ONE = 1 << 10


def sample_table(out_size: int, in_size: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    """Per output position: [lower input index, upper input index, position − 1024·lower]."""
    scale = (ONE * in_size + out_size // 2) // out_size
    if align_corners and out_size > 1:
        scale = (ONE * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    rows = []
    for i in range(out_size):
        position = i * scale + scale // 2 - (1 << 9) if half_pixel else i * scale
        lower = max(c_div(position, ONE), 0)
        upper = min(c_div(position + ONE - 1, ONE), in_size - 1)
        rows.append((lower, upper, position - ONE * lower))
    return np.array(rows, np.int32)


def bilinear_kernel(name: str, in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> Any:
    """Arguments: x, the row table, the column table (sample_table), y."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    n_, _, _, c_ = in_shape
    _, oh_, ow_, _ = out_shape

    def i64(value: Any) -> Any:
        return tirx.Cast("int64", value)

    with IRBuilder() as ib, prim_func(name, ["RESIZE_BILINEAR"], 0):
        x = T.arg("x", T.Buffer(in_shape, "int8"))
        rows = T.arg("rows", T.Buffer((oh_, 3), "int32"))
        cols = T.arg("cols", T.Buffer((ow_, 3), "int32"))
        y = T.arg("y", T.Buffer(out_shape, "int8"))
        loops = (T.serial(0, n_), T.serial(0, oh_), T.serial(0, ow_), T.serial(0, c_))
        with root_block(), loops[0] as n, loops[1] as oy, loops[2] as ox, loops[3] as c:
            y0, y1, dy = rows[oy, 0], rows[oy, 1], i64(rows[oy, 2])
            x0, x1, dx = cols[ox, 0], cols[ox, 1], i64(cols[ox, 2])
            one = tirx.const(ONE, "int64")
            total = local(
                i64(x[n, y0, x0, c]) * (one - dy) * (one - dx)
                + i64(x[n, y1, x0, c]) * dy * (one - dx)
                + i64(x[n, y0, x1, c]) * (one - dy) * dx
                + i64(x[n, y1, x1, c]) * dy * dx,
                "int64",
            )
            half = tirx.const(1 << 19, "int64")
            rounded = tirx.truncdiv(total + tirx.Select(total > 0, half, -half), tirx.const(1 << 20, "int64"))
            T.buffer_store(y, tirx.Cast("int8", rounded), [n, oy, ox, c])
    return ib.get()
