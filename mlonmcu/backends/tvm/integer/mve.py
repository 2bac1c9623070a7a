"""Arm MVE (Helium) variants of the integer kernels (Cortex-M55): VMLADAVA, sixteen MACs each.

Like the DSP and RVV variants (integer/dsp.py, integer/rvv.py) a variant is attached to its
scalar kernel as a PrimFunc attribute (MVE_VARIANT) with the same parameters and the same packed
constants, and codegen emits it under `#if defined(__ARM_FEATURE_MVE)`. A BUILD for MVE cores
(tvmaot.simd=auto reads the target's core) lays the weights out for dot products along input
channels: conv weights one output channel per block ([Cout][KH][KW][Cin]), dense weights as rows
([O][I]) with the input offset folded into the bias; depthwise weights with each four channels'
taps together ([C/4][KH][KW][4]). The body is one call into hand-written C
with arm_mve.h intrinsics (templates/tvmaot/mlonmcu_mve.h, pasted in as the prelude); every shape
and quantization fact is a constant argument, so the compiler specializes the inlined kernel.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from mlonmcu.backends.tvm.integer.conv import ConvSpec
from mlonmcu.backends.tvm.integer.dense import DenseSpec, dense_args, store_outputs
from mlonmcu.backends.tvm.integer.tir import accumulators, flat_view, prim_func, root_block
from mlonmcu.data import templates_dir

MVE_VARIANT = "mlonmcu_mve_variant"
GUARD = "defined(__ARM_FEATURE_MVE)"
DENSE_BLOCK = 16  # tvmaot.simd=mve: FULLY_CONNECTED outputs per block (accumulators in memory)


@cache
def prelude() -> str:
    return (templates_dir() / "tvmaot" / "mlonmcu_mve.h").read_text()


def conv_mve_kernel(spec: ConvSpec) -> Any:
    """CONV_2D (weights [Cout][KH][KW][Cin]: block 1) or DEPTHWISE_CONV_2D (multiplier 1, weights
    [C/4][KH][KW][4]) with the scalar kernel's parameters."""
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    if spec.depthwise:
        assert spec.blocked and spec.block == 4, "the MVE depthwise reads weights [C/4][KH][KW][4]"
    else:
        assert spec.block == 1, "MVE convolutions read one output channel per weight block"
    table = spec.table
    channels = spec.channel_blocks * spec.block
    n, height, width, cin = spec.input_shape
    _, out_height, out_width, outputs = spec.output_shape
    quant_rows, quant_width = table.values.shape
    op = "DEPTHWISE_CONV_2D" if spec.depthwise else "CONV_2D"
    with IRBuilder() as ib, prim_func(spec.name, [op], spec.macs):
        x = T.arg("x", T.Buffer(spec.input_shape, "int8"))
        w = T.arg("w", T.Buffer(spec.weight_shape, "int8"))
        bias = T.arg("bias", T.Buffer((channels,), "int32"))
        bias_interior = T.arg("bias_interior", T.Buffer((channels,), "int32"))
        quant = T.arg("quant", T.Buffer((channels if not table.uniform else quant_rows, quant_width), "int32"))
        y = T.arg("y", T.Buffer(spec.output_shape, "int8"))
        constants = [
            int(spec.depthwise), n, height, width, cin, out_height, out_width, outputs,
            *spec.kernel, *spec.strides, *spec.dilation, spec.padding[0], spec.padding[1], spec.block,
            spec.input_offset, spec.act_min, spec.act_max, quant_width, int(table.uniform),
            int(table.left_shift), table.zero_point,
        ]  # fmt: skip
        buffers = [x.data, w.data, bias.data, bias_interior.data, quant.data, y.data]
        T.evaluate(T.call_extern("int32", "mlonmcu_mve_conv2d", *buffers, *constants))
    return ib.get()


def dense_mve_kernel(spec: DenseSpec) -> Any:
    """FULLY_CONNECTED, weights [O/B][B][I] (rows): the sums of each block from VMLADAVA, then
    LiteRT's double rounding as the C expression itself (mlonmcu_mve_dense_store: the M55's FPU
    has doubles), or the scalar kernel's own fixed point (store_outputs) for tflm rounding."""
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    assert spec.rows, "the MVE FULLY_CONNECTED reads weight rows"
    block = spec.block
    blocks = -(-spec.outputs // block)
    with IRBuilder() as ib, prim_func(spec.name, ["FULLY_CONNECTED"], spec.macs):
        x_arg, wt, bias, quant, y_arg = dense_args(spec)
        with root_block():
            x, y = flat_view(x_arg, spec.input_shape), flat_view(y_arg, spec.output_shape)
            w = flat_view(wt, (blocks * block * spec.inputs,))
            acc = accumulators(block)
            with T.serial(0, spec.batch) as b, T.serial(0, blocks) as ob:
                count = min(block, spec.outputs) if blocks == 1 else T.min(block, spec.outputs - ob * block)
                T.evaluate(
                    T.call_extern(
                        "int32",
                        "mlonmcu_mve_dense_block",
                        T.address_of(acc[0]),
                        T.address_of(x[b * spec.inputs]),
                        T.address_of(w[ob * block * spec.inputs]),
                        T.address_of(bias[ob * block]),
                        spec.inputs,
                        count,
                    )
                )
                if spec.requant != "litert":
                    store_outputs(spec, acc, quant, y, b, ob, unrolled=False)
                else:
                    row = quant[0 if spec.uniform_quant else ob * block, 0]
                    T.evaluate(
                        T.call_extern(
                            "int32",
                            "mlonmcu_mve_dense_store",
                            T.address_of(acc[0]),
                            T.address_of(row),
                            T.address_of(y[b * spec.outputs + ob * block]),
                            count,
                            int(spec.uniform_quant),
                            spec.output_offset,
                            spec.act_min,
                            spec.act_max,
                        )
                    )
    return ib.get()
