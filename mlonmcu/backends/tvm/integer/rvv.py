"""RISC-V vector variants of the integer kernels (RVV 1.0: V, Zve32x and up), VLEN-agnostic.

Like the Arm DSP variants (integer/dsp.py) a variant is attached to its scalar kernel as a
PrimFunc attribute (RVV_VARIANT) with the same parameters and the same packed constants, and
codegen emits it under `#if defined(__riscv_vector)`: the compiler's -march decides. The lanes are
output channels, so a BUILD for vector ISAs (tvmaot.simd=auto reads the target's core) packs conv
and dense weights in blocks of up to CONV_BLOCK / DENSE_BLOCK channels. The variant's body is one
call into hand-written C with RVV intrinsics (templates/tvmaot/mlonmcu_rvv.h, pasted in as its
prelude): vector types and vsetvl loops have no TIR form that TVM's C code generator prints.
Every shape and quantization fact is a constant argument, so clang specializes the inlined kernel
for each layer.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from mlonmcu.backends.tvm.integer.conv import ConvSpec
from mlonmcu.backends.tvm.integer.dense import DenseSpec, dense_args, quad_layout, store_outputs
from mlonmcu.backends.tvm.integer.tir import accumulators, flat_view, prim_func, root_block
from mlonmcu.data import templates_dir

RVV_VARIANT = "mlonmcu_rvv_variant"
GUARD = "defined(__riscv_vector)"
CONV_BLOCK = 64  # tvmaot.simd=rvv: output channels per conv weight block (VLEN 512 at e32m4)
DENSE_BLOCK = 64  # and outputs per FULLY_CONNECTED block


@cache
def prelude() -> str:
    return (templates_dir() / "tvmaot" / "mlonmcu_rvv.h").read_text()


def conv_rvv_kernel(spec: ConvSpec) -> Any:
    """CONV_2D or DEPTHWISE_CONV_2D (multiplier 1) with the scalar kernel's parameters; the
    interior bias is unused (every tap adds the input offset: the same int32 sums)."""
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

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
        T.arg("bias_interior", T.Buffer((channels,), "int32"))
        quant = T.arg("quant", T.Buffer((channels if not table.uniform else quant_rows, quant_width), "int32"))
        y = T.arg("y", T.Buffer(spec.output_shape, "int8"))
        constants = [
            int(spec.depthwise), n, height, width, cin, out_height, out_width, outputs,
            *spec.kernel, *spec.strides, *spec.dilation, spec.padding[0], spec.padding[1], spec.block,
            spec.input_offset, spec.act_min, spec.act_max, quant_width, int(table.uniform),
            int(table.left_shift), int(table.always_right), table.zero_point, int(table.zero_point_folded),
        ]  # fmt: skip
        T.evaluate(
            T.call_extern("int32", "mlonmcu_rvv_conv2d", x.data, w.data, bias.data, quant.data, y.data, *constants)
        )
    return ib.get()


def dense_rvv_kernel(spec: DenseSpec) -> Any:
    """FULLY_CONNECTED, weights [O/B][I][B]: the accumulators of each block from the vector
    multiply-accumulate, then the scalar kernel's own requantization (store_outputs)."""
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    assert not quad_layout(spec)
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
                T.evaluate(
                    T.call_extern(
                        "int32",
                        "mlonmcu_rvv_dense_block",
                        T.address_of(acc[0]),
                        T.address_of(x[b * spec.inputs]),
                        T.address_of(w[ob * spec.inputs * block]),
                        T.address_of(bias[ob * block]),
                        spec.inputs,
                        block,
                        count,
                        spec.input_offset,
                    )
                )
                store_outputs(spec, acc, quant, y, b, ob, unrolled=False)
    return ib.get()
