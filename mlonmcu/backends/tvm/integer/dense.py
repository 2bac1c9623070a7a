"""Integer FULLY_CONNECTED kernel: output channels in register blocks, weights packed for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mlonmcu.backends.tvm.integer.fixedpoint import multiply_by_quantized_multiplier, round_double_product
from mlonmcu.backends.tvm.integer.tir import accumulators, clamp, flat_view, i32, prim_func, root_block, store_int8


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
        quant_rows = 1 if spec.uniform_quant else blocks * block
        quant = T.arg("quant", T.Buffer((quant_rows, spec.quant_width), "int32"))
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
                    row = 0 if spec.uniform_quant else o
                    if spec.requant == "litert":
                        scaled = round_double_product(acc[j], quant[row, 0], quant[row, 1], quant[row, 2])
                    else:
                        scaled = multiply_by_quantized_multiplier(acc[j], quant[row, 0], quant[row, 1])
                    value = scaled + spec.output_offset
                    if spec.outputs % block:
                        with T.If(o < spec.outputs), T.Then():
                            store_int8(y, clamp(value, spec.act_min, spec.act_max), [b * spec.outputs + o])
                    else:
                        store_int8(y, clamp(value, spec.act_min, spec.act_max), [b * spec.outputs + o])
    return ib.get()
