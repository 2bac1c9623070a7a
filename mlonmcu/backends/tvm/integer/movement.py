"""TFLite operators that only move or select quantized values: exact by construction.

Each becomes Relax operators on the integer tensor (permute_dims, strided_slice, take, pad,
concat, maximum, max, argmax, reshape), which TVM legalizes into integer loops. Index
computations TFLite does in float (RESIZE_NEAREST_NEIGHBOR) are done here, once, at build time
with the same float32 arithmetic, and become constant index tables. Most of these operators
require the input's quantization on the output; where TFLite would rescale, `NotCovered`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from mlonmcu.backends.tvm.integer.fixedpoint import round_half_away
from mlonmcu.backends.tvm.integer.uncovered import NotCovered
from mlonmcu.models.tflite_graph import Operator, Tensor

if TYPE_CHECKING:
    from mlonmcu.backends.tvm.integer.direct import DirectBuilder


def _ints(tensor: Tensor | None) -> list[int] | None:
    return None if tensor is None or tensor.data is None else [int(v) for v in tensor.data.reshape(-1)]


def _constant_ints(b: DirectBuilder, op: Operator, position: int, what: str) -> list[int]:
    values = _ints(b.graph.input(op, position))
    if values is None:
        raise NotCovered(op, f"{what} that are not constant")
    return values


def _source(b: DirectBuilder, op: Operator, position: int = 0) -> tuple[Tensor, Any]:
    """The data operand (activation or constant) with the output's type and quantization."""
    tensor = b.graph.input(op, position)
    out = b.graph.output(op)
    if tensor is None:
        raise NotCovered(op, f"no input {position}")
    if tensor.dtype != out.dtype:
        raise NotCovered(op, f"{tensor.dtype} → {out.dtype}")
    if out.quantized and (
        not tensor.quantized
        or not np.array_equal(tensor.scale, out.scale)
        or not np.array_equal(tensor.zero_point, out.zero_point)
    ):
        raise NotCovered(op, "input and output quantized differently (TFLite rescales here)")
    return tensor, b.operand(tensor)


def _select(value: Any, indices: list[list[int]], shape: tuple[int, ...]) -> Any:
    """value[indices[0]][:, indices[1]]…: strided_slice for progressions, take for the rest."""
    from tvm import relax

    for axis, (chosen, size) in enumerate(zip(indices, shape, strict=True)):
        if chosen == list(range(size)):
            continue
        step = chosen[1] - chosen[0] if len(chosen) > 1 else 1
        if chosen and step > 0 and chosen == list(range(chosen[0], chosen[-1] + 1, step)):
            value = relax.op.strided_slice(value, [axis], [chosen[0]], [chosen[-1] + 1], [step])
        else:
            value = relax.op.take(value, relax.const(np.array(chosen, np.int32)), axis=axis)
    return value


def transpose(b: DirectBuilder, op: Operator) -> Any:
    from tvm import relax

    _, value = _source(b, op)
    return relax.op.permute_dims(value, _constant_ints(b, op, 1, "a permutation"))


def pad(b: DirectBuilder, op: Operator) -> Any:
    """PAD fills with the zero point (a real 0), PADV2 with its constant; MIRROR_PAD reflects."""
    from tvm import relax

    tensor, value = _source(b, op)
    widths = _constant_ints(b, op, 1, "paddings")
    pairs = [(widths[2 * i], widths[2 * i + 1]) for i in range(len(tensor.shape))]
    if op.op == "MIRROR_PAD":
        symmetric = int(op.options.get("Mode", 0)) != 0  # REFLECT leaves the edge out, SYMMETRIC repeats it
        indices = [
            [int(i) for i in np.pad(np.arange(n), pair, mode="symmetric" if symmetric else "reflect")]
            for n, pair in zip(tensor.shape, pairs, strict=True)
        ]
        return _select(value, indices, tensor.shape)
    fill = b.graph.output(op).scalar_zero_point if b.graph.output(op).quantized else 0
    if op.op == "PADV2":
        constant = _ints(b.graph.input(op, 2))
        if constant is None:
            raise NotCovered(op, "a pad value that is not constant")
        fill = constant[0]
    flat = [int(v) for pair in pairs for v in pair]
    return relax.op.nn.pad(value, flat, pad_mode="constant", pad_value=float(fill))


def strided_slice(b: DirectBuilder, op: Operator) -> Any:
    """SLICE and STRIDED_SLICE with TFLite's masks (Python slice semantics for the rest)."""
    from tvm import relax

    tensor, value = _source(b, op)
    rank = len(tensor.shape)
    begin = _constant_ints(b, op, 1, "begins")
    if op.op == "SLICE":
        sizes = _constant_ints(b, op, 2, "sizes")
        chosen = [
            list(range(start, dim if size < 0 else start + size))
            for start, size, dim in zip(begin, sizes, tensor.shape, strict=True)
        ]
    else:
        end, strides = _constant_ints(b, op, 2, "ends"), _constant_ints(b, op, 3, "strides")
        opts = op.options
        if int(opts.get("EllipsisMask", 0)) or int(opts.get("NewAxisMask", 0)):
            raise NotCovered(op, "ellipsis or new-axis masks")
        begin_mask, end_mask = int(opts.get("BeginMask", 0)), int(opts.get("EndMask", 0))
        shrink = int(opts.get("ShrinkAxisMask", 0))
        chosen = []
        for axis in range(rank):
            dim = tensor.shape[axis]
            start = None if begin_mask >> axis & 1 else begin[axis]
            stop = None if end_mask >> axis & 1 else end[axis]
            if shrink >> axis & 1:
                first = start if start is not None else 0
                first = first + dim if first < 0 else first
                chosen.append([first])
            else:
                chosen.append(list(range(dim))[slice(start, stop, strides[axis])])
    if any(not axis for axis in chosen):
        raise NotCovered(op, "an empty slice")
    return relax.op.reshape(b.builder.emit(_select(value, chosen, tensor.shape)), b.graph.output(op).shape)


def split(b: DirectBuilder, op: Operator) -> list[Any]:
    """SPLIT (axis, x), SPLIT_V (x, sizes, axis) and UNPACK (x; axis option): one slice per output."""
    from tvm import relax

    if op.op == "SPLIT":
        axis = _constant_ints(b, op, 0, "an axis")[0]
        tensor, value = _source(b, op, 1)
        count = len(op.outputs)
        sizes = [tensor.shape[axis % len(tensor.shape)] // count] * count
    elif op.op == "SPLIT_V":
        tensor, value = _source(b, op, 0)
        axis = _constant_ints(b, op, 2, "an axis")[0]
        sizes = _constant_ints(b, op, 1, "sizes")
        known = sum(s for s in sizes if s >= 0)
        sizes = [s if s >= 0 else tensor.shape[axis % len(tensor.shape)] - known for s in sizes]
    else:
        tensor, value = _source(b, op, 0)
        axis = int(op.options.get("Axis", 0))
        sizes = [1] * len(op.outputs)
    axis %= len(tensor.shape)
    parts, start = [], 0
    for index, size in zip(op.outputs, sizes, strict=True):
        part = b.builder.emit(relax.op.strided_slice(value, [axis], [start], [start + size]))
        parts.append(relax.op.reshape(part, b.graph.tensors[index].shape))
        start += size
    return parts


def pack(b: DirectBuilder, op: Operator) -> Any:
    from tvm import relax

    out = b.graph.output(op)
    axis = int(op.options.get("Axis", 0)) % len(out.shape)
    values = []
    for position in range(len(op.inputs)):
        tensor, value = _source(b, op, position)
        shape = (*tensor.shape[:axis], 1, *tensor.shape[axis:])
        values.append(b.builder.emit(relax.op.reshape(value, shape)))
    return relax.op.concat(values, axis=axis)


def gather(b: DirectBuilder, op: Operator) -> Any:
    from tvm import relax

    tensor, value = _source(b, op, 0)
    if int(op.options.get("BatchDims", 0)):
        raise NotCovered(op, "batch_dims")
    indices = b.graph.input(op, 1)
    if indices is None or indices.dtype not in ("int32", "int64"):
        raise NotCovered(op, "indices that are not int32")
    axis = int(op.options.get("Axis", 0)) % len(tensor.shape)
    return relax.op.take(value, b.operand(indices), axis=axis)


def extremum(b: DirectBuilder, op: Operator) -> Any:
    """MAXIMUM / MINIMUM compare the stored integers (broadcasting), as TFLite does."""
    from tvm import relax

    first, second, out = b.graph.input(op, 0), b.graph.input(op, 1), b.graph.output(op)
    if first is None or second is None or not first.dtype == second.dtype == out.dtype:
        raise NotCovered(op, "inputs of another type than the output")
    combine = relax.op.maximum if op.op == "MAXIMUM" else relax.op.minimum
    return combine(b.operand(first), b.operand(second))


def reduce_max(b: DirectBuilder, op: Operator) -> Any:
    from tvm import relax

    tensor, value = _source(b, op)
    axes = sorted({a % len(tensor.shape) for a in _constant_ints(b, op, 1, "axes")})
    reduced = b.builder.emit(relax.op.max(value, axes, keepdims=bool(op.options.get("KeepDims", False))))
    return relax.op.reshape(reduced, b.graph.output(op).shape)


def arg_extremum(b: DirectBuilder, op: Operator) -> Any:
    """ARG_MAX / ARG_MIN: the first index of the extreme value, in the output's integer type."""
    from tvm import relax

    tensor = b.graph.input(op, 0)
    out = b.graph.output(op)
    if tensor is None or out.dtype not in ("int32", "int64"):
        raise NotCovered(op, f"an output of type {out.dtype}")
    axis = _constant_ints(b, op, 1, "an axis")[0] % len(tensor.shape)
    choose = relax.op.argmax if op.op == "ARG_MAX" else relax.op.argmin
    index = b.builder.emit(choose(b.operand(tensor), axis=axis))
    return relax.op.reshape(b.builder.emit(relax.op.astype(index, out.dtype)), out.shape)


def depth_space(b: DirectBuilder, op: Operator) -> Any:
    """SPACE_TO_DEPTH / DEPTH_TO_SPACE (NHWC, TFLite's DCR channel order) as reshape-permute-reshape."""
    from tvm import relax

    tensor, value = _source(b, op)
    n, h, w, c = tensor.shape
    block = int(op.options["BlockSize"])
    if op.op == "SPACE_TO_DEPTH":
        split_shape = (n, h // block, block, w // block, block, c)
    else:
        split_shape = (n, h, w, block, block, c // (block * block))
    moved = relax.op.permute_dims(b.builder.emit(relax.op.reshape(value, split_shape)), [0, 1, 3, 2, 4, 5])
    return relax.op.reshape(b.builder.emit(moved), b.graph.output(op).shape)


def space_batch(b: DirectBuilder, op: Operator) -> Any:
    """SPACE_TO_BATCH_ND (pad with the zero point, then move each block offset into the batch,
    offset-major as TFLite) and BATCH_TO_SPACE_ND (the inverse, then crop): reshape-permute-reshape
    over the M block dimensions after the batch."""
    from tvm import relax

    tensor, value = _source(b, op)
    out = b.graph.output(op)
    blocks = _constant_ints(b, op, 1, "block shapes")
    amounts = _constant_ints(b, op, 2, "paddings" if op.op == "SPACE_TO_BATCH_ND" else "crops")
    m = len(blocks)
    rest = list(tensor.shape[1 + m :])
    if op.op == "SPACE_TO_BATCH_ND":
        widths = [0, 0, *amounts, *[0] * (2 * len(rest))]
        fill = float(out.scalar_zero_point if out.quantized else 0)
        padded = b.builder.emit(relax.op.nn.pad(value, widths, pad_mode="constant", pad_value=fill))
        n = tensor.shape[0]
        spatial = [tensor.shape[1 + i] + amounts[2 * i] + amounts[2 * i + 1] for i in range(m)]
        split = [n, *[d for i in range(m) for d in (spatial[i] // blocks[i], blocks[i])], *rest]
        order = [*[2 + 2 * i for i in range(m)], 0, *[1 + 2 * i for i in range(m)], *range(1 + 2 * m, len(split))]
        moved = relax.op.permute_dims(b.builder.emit(relax.op.reshape(padded, split)), order)
        return relax.op.reshape(b.builder.emit(moved), out.shape)
    n = tensor.shape[0] // int(np.prod(blocks))
    spatial = list(tensor.shape[1 : 1 + m])
    split = [*blocks, n, *spatial, *rest]
    order = [m, *[d for i in range(m) for d in (m + 1 + i, i)], *range(2 * m + 1, len(split))]
    moved = b.builder.emit(relax.op.permute_dims(b.builder.emit(relax.op.reshape(value, split)), order))
    full = [n, *[spatial[i] * blocks[i] for i in range(m)], *rest]
    joined = b.builder.emit(relax.op.reshape(moved, full))
    begin = [0, *amounts[0::2], *[0] * len(rest)]
    return relax.op.strided_slice(
        joined, list(range(len(full))), begin, [b + e for b, e in zip(begin, out.shape, strict=True)]
    )


def nearest_index(out_size: int, in_size: int, align_corners: bool, half_pixel: bool) -> list[int]:
    """TFLite's nearest-neighbour source index per output position, in its float32 arithmetic."""
    if align_corners and out_size > 1:
        scale = np.float32(in_size - 1) / np.float32(out_size - 1)
    else:
        scale = np.float32(in_size) / np.float32(out_size)
    offset = np.float32(0.5 if half_pixel else 0.0)
    chosen = []
    for position in range(out_size):
        exact = (np.float32(position) + offset) * scale
        index = round_half_away(float(exact)) if align_corners else int(np.floor(exact))
        index = min(index, in_size - 1)
        chosen.append(max(0, index) if half_pixel else index)
    return chosen


def resize_nearest(b: DirectBuilder, op: Operator) -> Any:
    tensor, value = _source(b, op)
    out = b.graph.output(op)
    align = bool(op.options.get("AlignCorners", False))
    half = bool(op.options.get("HalfPixelCenters", False))
    rows = nearest_index(out.shape[1], tensor.shape[1], align, half)
    cols = nearest_index(out.shape[2], tensor.shape[2], align, half)
    return _select(value, [list(range(tensor.shape[0])), rows, cols, list(range(tensor.shape[3]))], tensor.shape)


def shape(b: DirectBuilder, op: Operator) -> Any:
    """SHAPE of a static tensor is a constant (Keras' Reshape/Flatten compute the new shape from
    it; RESHAPE here takes its output tensor's shape, so that chain ends up unused)."""
    from tvm import relax

    tensor, out = b.graph.input(op, 0), b.graph.output(op)
    if tensor is None or out.dtype not in ("int32", "int64"):
        raise NotCovered(op, f"an output of type {out.dtype}")
    return relax.const(np.array(tensor.shape, dtype=out.dtype), out.dtype)


HANDLERS = {
    "SHAPE": shape,
    "TRANSPOSE": transpose,
    "PAD": pad,
    "PADV2": pad,
    "MIRROR_PAD": pad,
    "SLICE": strided_slice,
    "STRIDED_SLICE": strided_slice,
    "SPLIT": split,
    "SPLIT_V": split,
    "UNPACK": split,
    "PACK": pack,
    "GATHER": gather,
    "MAXIMUM": extremum,
    "MINIMUM": extremum,
    "REDUCE_MAX": reduce_max,
    "ARG_MAX": arg_extremum,
    "ARG_MIN": arg_extremum,
    "SPACE_TO_DEPTH": depth_space,
    "DEPTH_TO_SPACE": depth_space,
    "RESIZE_NEAREST_NEIGHBOR": resize_nearest,
    "SPACE_TO_BATCH_ND": space_batch,
    "BATCH_TO_SPACE_ND": space_batch,
}
