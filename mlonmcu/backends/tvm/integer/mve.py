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

from mlonmcu.backends.tvm.integer.conv import ConvSpec, conv_call_kernel
from mlonmcu.backends.tvm.integer.dense import DenseSpec, dense_call_kernel
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
    if spec.depthwise:
        assert spec.blocked and spec.block == 4, "the MVE depthwise reads weights [C/4][KH][KW][4]"
    else:
        assert spec.block == 1, "MVE convolutions read one output channel per weight block"
    passed = ("x", "w", "bias", "bias_interior", "quant", "y")
    return conv_call_kernel(spec, "mlonmcu_mve_conv2d", passed, [spec.table.zero_point])


def dense_mve_kernel(spec: DenseSpec) -> Any:
    """FULLY_CONNECTED, weights [O/B][B][I] (rows): the sums of each block from VMLADAVA, then
    LiteRT's double rounding as the C expression itself (mlonmcu_mve_dense_store: the M55's FPU
    has doubles), or the scalar kernel's own fixed point (store_outputs) for tflm rounding."""
    from tvm.script.ir_builder import tirx as T

    assert spec.rows, "the MVE FULLY_CONNECTED reads weight rows"

    def store(acc: Any, quant: Any, y: Any, b: Any, ob: Any, count: Any) -> None:
        row = quant[0 if spec.uniform_quant else ob * spec.block, 0]
        out = T.address_of(y[b * spec.outputs + ob * spec.block])
        facts = [count, int(spec.uniform_quant), spec.output_offset, spec.act_min, spec.act_max]
        T.evaluate(
            T.call_extern("int32", "mlonmcu_mve_dense_store", T.address_of(acc[0]), T.address_of(row), out, *facts)
        )

    litert = spec.requant == "litert"
    return dense_call_kernel(spec, "mlonmcu_mve_dense_block", lambda count: [count], store if litert else None)
