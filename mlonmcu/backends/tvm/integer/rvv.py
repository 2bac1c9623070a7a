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

from mlonmcu.backends.tvm.integer.conv import ConvSpec, conv_call_kernel
from mlonmcu.backends.tvm.integer.dense import DenseSpec, dense_call_kernel, quad_layout
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
    table = spec.table
    tail = [int(table.always_right), table.zero_point, int(table.zero_point_folded)]
    return conv_call_kernel(spec, "mlonmcu_rvv_conv2d", ("x", "w", "bias", "quant", "y"), tail)


def dense_rvv_kernel(spec: DenseSpec) -> Any:
    """FULLY_CONNECTED, weights [O/B][I][B]: the accumulators of each block from the vector
    multiply-accumulate, then the scalar kernel's own requantization (store_outputs)."""
    assert not quad_layout(spec)
    return dense_call_kernel(spec, "mlonmcu_rvv_dense_block", lambda count: [spec.block, count, spec.input_offset])
