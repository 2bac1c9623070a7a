"""Integer FULLY_CONNECTED kernel: output channels in register blocks, weights packed for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mlonmcu.backends.tvm.integer.fixedpoint import (
    clamp_int8,
    multiply_by_quantized_multiplier,
    round_double_product,
    round_double_product_fast,
)
from mlonmcu.backends.tvm.integer.tir import accumulators, flat_view, i32, prim_func, root_block, store_int8


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
    uniform_quant: bool = False  # one requantization row for all outputs (per-tensor weights)
    fours: bool = True  # weights in fours of inputs where the inputs allow (quad_layout)
    rows: bool = False  # weights [O/B][B][I] and the input offset folded into the bias (integer/mve.py)
    fast_rounding: bool = False  # litert: every row's shift suits round_double_product_fast
    shift: int | None = None  # litert: the shift of every row, if they share it (a constant then)

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


def pack_quad_weights(weights_oi: np.ndarray, block: int) -> np.ndarray:
    """[O][I] → [O/B][I/4][B][4]: four consecutive inputs of one output in one 32-bit word, the
    layout of the DSP kernel (integer/dsp.py); the scalar kernel reads it as well."""
    o, i = weights_oi.shape
    blocks = -(-o // block)
    padded = np.zeros((blocks * block, i), dtype=np.int8)
    padded[:o] = weights_oi
    return np.ascontiguousarray(padded.reshape(blocks, block, i // 4, 4).transpose(0, 2, 1, 3)).reshape(-1)


def pack_weights(spec: DenseSpec, weights_oi: np.ndarray) -> np.ndarray:
    """The weights [O][I] in the layout the kernels of `spec` read."""
    weights = np.ascontiguousarray(weights_oi)
    if spec.rows:
        padded = np.zeros((-(-spec.outputs // spec.block) * spec.block, spec.inputs), dtype=np.int8)
        padded[: spec.outputs] = weights
        return padded.reshape(-1, spec.block, spec.inputs)
    if quad_layout(spec):
        return pack_quad_weights(weights, spec.block).reshape(-1, spec.inputs // 4, spec.block, 4)
    return pack_dense_weights(weights, spec.block).reshape(-1, spec.inputs, spec.block)


def quad_layout(spec: DenseSpec) -> bool:
    """Whether the weights are packed in fours (pack_quad_weights): inputs a multiple of 4."""
    return spec.fours and not spec.rows and spec.inputs % 4 == 0


def store_outputs(
    spec: DenseSpec, acc: Any, quant: Any, y: Any, b: Any, ob: Any, unrolled: bool = True, ssat: bool = False
) -> None:
    """Requantize one register block of accumulators and store it (the tail block guarded);
    `unrolled=False`: a loop over the block, for accumulators in memory (wide vector blocks), with
    the full LiteRT rounding (clang vectorizes that loop; the fast path's call would stop it);
    `ssat`: clamp with Arm's SSAT (clamp_int8)."""
    from tvm.script.ir_builder import tirx as T

    block = spec.block
    if not unrolled:
        with T.serial(0, block) as j:
            _store_output(spec, acc, quant, y, b, ob, j, ssat, fast=False)
        return
    for j in range(block):
        _store_output(spec, acc, quant, y, b, ob, j, ssat, fast=spec.fast_rounding)


def _store_output(
    spec: DenseSpec, acc: Any, quant: Any, y: Any, b: Any, ob: Any, j: Any, ssat: bool, fast: bool
) -> None:
    from tvm.script.ir_builder import tirx as T

    block = spec.block
    o = ob * block + j
    row = 0 if spec.uniform_quant else o
    if spec.requant == "litert":
        shift = quant[row, 2] if spec.shift is None else spec.shift
        rounding = round_double_product_fast if fast else round_double_product
        scaled = rounding(acc[j], quant[row, 0], quant[row, 1], shift)
    else:
        scaled = multiply_by_quantized_multiplier(acc[j], quant[row, 0], quant[row, 1])
    value = clamp_int8(scaled + spec.output_offset, spec.act_min, spec.act_max, ssat)
    if spec.outputs % block:
        with T.If(o < spec.outputs), T.Then():
            store_int8(y, value, [b * spec.outputs + o])
    else:
        store_int8(y, value, [b * spec.outputs + o])


def dense_args(spec: DenseSpec) -> tuple[Any, Any, Any, Any, Any]:
    """The kernel's parameters: x, packed weights (as int8), padded bias, requant rows, y."""
    from tvm.script.ir_builder import tirx as T

    block = spec.block
    blocks = -(-spec.outputs // block)
    x_arg = T.arg("x", T.Buffer(spec.input_shape, "int8"))
    if spec.rows:
        shape: tuple[int, ...] = (blocks, block, spec.inputs)
    elif quad_layout(spec):
        shape = (blocks, spec.inputs // 4, block, 4)
    else:
        shape = (blocks, spec.inputs, block)
    wt = T.arg("w", T.Buffer(shape, "int8"))
    bias = T.arg("bias", T.Buffer((blocks * block,), "int32"))
    quant_rows = 1 if spec.uniform_quant else blocks * block
    quant = T.arg("quant", T.Buffer((quant_rows, spec.quant_width), "int32"))
    y_arg = T.arg("y", T.Buffer(spec.output_shape, "int8"))
    return x_arg, wt, bias, quant, y_arg


def dense_kernel(spec: DenseSpec) -> Any:
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    block = spec.block
    blocks = -(-spec.outputs // block)
    quad = quad_layout(spec)
    with IRBuilder() as ib, prim_func(spec.name, ["FULLY_CONNECTED"], spec.macs):
        x_arg, wt, bias, quant, y_arg = dense_args(spec)
        with root_block():
            x, y = flat_view(x_arg, spec.input_shape), flat_view(y_arg, spec.output_shape)
            acc = accumulators(block)
            with T.serial(0, spec.batch) as b, T.serial(0, blocks) as ob:
                for j in range(block):
                    T.buffer_store(acc, bias[ob * block + j], [j])
                if quad:
                    with T.serial(0, spec.inputs // 4) as k:
                        for t in range(4):
                            xv = T.bind(i32(x[b * spec.inputs + k * 4 + t]) + spec.input_offset)
                            for j in range(block):
                                T.buffer_store(acc, acc[j] + xv * i32(wt[ob, k, j, t]), [j])
                elif spec.rows:  # the offset is in the bias
                    with T.serial(0, spec.inputs) as i:
                        xv = T.bind(i32(x[b * spec.inputs + i]))
                        for j in range(block):
                            T.buffer_store(acc, acc[j] + xv * i32(wt[ob, j, i]), [j])
                else:
                    with T.serial(0, spec.inputs) as i:
                        xv = T.bind(i32(x[b * spec.inputs + i]) + spec.input_offset)
                        for j in range(block):
                            T.buffer_store(acc, acc[j] + xv * i32(wt[ob, i, j]), [j])
                store_outputs(spec, acc, quant, y, b, ob)
    return ib.get()


def dense_call_kernel(spec: DenseSpec, extern: str, extra: Any, store: Any = None) -> Any:
    """FULLY_CONNECTED whose sums come from one call into hand-written C per block of outputs
    (integer/rvv.py, integer/mve.py): extern(acc, the batch row of x, the block's weights, the
    block's bias, inputs, *extra(count)) with `count` outputs in the block; then `store(acc,
    quant, y, b, ob, count)`, by default the scalar kernel's requantization (store_outputs)."""
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    block = spec.block
    blocks = -(-spec.outputs // block)
    with IRBuilder() as ib, prim_func(spec.name, ["FULLY_CONNECTED"], spec.macs):
        x_arg, wt, bias, quant, y_arg = dense_args(spec)
        with root_block():
            x, y = flat_view(x_arg, spec.input_shape), flat_view(y_arg, spec.output_shape)
            w = flat_view(wt, (blocks * spec.inputs * block,))
            acc = accumulators(block)
            with T.serial(0, spec.batch) as b, T.serial(0, blocks) as ob:
                count = min(block, spec.outputs) if blocks == 1 else T.min(block, spec.outputs - ob * block)
                row, weights = T.address_of(x[b * spec.inputs]), T.address_of(w[ob * spec.inputs * block])
                args = [T.address_of(acc[0]), row, weights, T.address_of(bias[ob * block]), spec.inputs]
                T.evaluate(T.call_extern("int32", extern, *args, *extra(count)))
                if store is None:
                    store_outputs(spec, acc, quant, y, b, ob, unrolled=False)
                else:
                    store(acc, quant, y, b, ob, count)
    return ib.get()
