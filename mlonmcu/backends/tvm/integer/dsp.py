"""Arm DSP-extension variants of the integer kernels (Cortex-M4/M7/M33): two MACs per SMLAD.

A variant is attached to its scalar kernel as the PrimFunc attribute DSP_VARIANT, with the same
parameters and the same packed constants; codegen emits both, the DSP one under
`#if defined(__ARM_FEATURE_DSP)`, so one BUILD serves every target and the compiler's -mcpu
decides. Same arithmetic as the scalar kernels: the 16-bit lanes hold x + offset (at most 255 in
magnitude) and weights, SMLAD's 32-bit accumulation wraps exactly like the scalar sum.

Four int8 inputs are one word: SXTAB16 adds the offset to bytes 0 and 2 (and, rotated by 8, to
bytes 1 and 3), SXTB16 widens the weights' bytes the same way, and two SMLADs take the four
products. The rotations are inline assembly (`sxtb16 ..., ror #8`): GCC 12 does not fold a C
rotate into the instruction.
"""

from __future__ import annotations

from typing import Any

from mlonmcu.backends.tvm.integer.dense import DenseSpec, dense_args, quad_layout, store_outputs
from mlonmcu.backends.tvm.integer.tir import accumulators, flat_view, prim_func, root_block

DSP_VARIANT = "mlonmcu_dsp_variant"
GUARD = "defined(__ARM_FEATURE_DSP)"
# what the variants call besides ACLE's __smlad (arm_acle.h)
PRELUDE = """#include <arm_acle.h>
static inline int32_t mlonmcu_sxtb16(int32_t v) { int32_t r; __asm__("sxtb16 %0, %1" : "=r"(r) : "r"(v)); return r; }
static inline int32_t mlonmcu_sxtb16_ror8(int32_t v) {
  int32_t r; __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v)); return r;
}
static inline int32_t mlonmcu_sxtab16(int32_t a, int32_t v) {
  int32_t r; __asm__("sxtab16 %0, %1, %2" : "=r"(r) : "r"(a), "r"(v)); return r;
}
static inline int32_t mlonmcu_sxtab16_ror8(int32_t a, int32_t v) {
  int32_t r; __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(v)); return r;
}
"""


def _call(name: str, *args: Any) -> Any:
    from tvm.script.ir_builder import tirx as T

    return T.call_pure_extern("int32", name, *args)


def dense_dsp_kernel(spec: DenseSpec) -> Any:
    """FULLY_CONNECTED with B outputs per register block, four inputs per step."""
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    assert quad_layout(spec)
    block = spec.block
    blocks = -(-spec.outputs // block)
    chunks = spec.inputs // 4
    offset = spec.input_offset & 0xFFFF
    pair = offset | (offset << 16)  # the input offset in both 16-bit lanes
    pair = pair - (1 << 32) if pair >= 1 << 31 else pair
    with IRBuilder() as ib, prim_func(spec.name, ["FULLY_CONNECTED"], spec.macs):
        x_arg, wt, bias, quant, y_arg = dense_args(spec)
        with root_block():
            x4 = flat_view(x_arg, (spec.batch * chunks,), "int32")
            w4 = flat_view(wt, (blocks * chunks * block,), "int32")
            y = flat_view(y_arg, spec.output_shape)
            acc = accumulators(block)
            with T.serial(0, spec.batch) as b, T.serial(0, blocks) as ob:
                for j in range(block):
                    T.buffer_store(acc, bias[ob * block + j], [j])
                with T.serial(0, chunks) as k:
                    word = T.bind(x4[b * chunks + k])
                    even = T.bind(_call("mlonmcu_sxtab16", pair, word))
                    odd = T.bind(_call("mlonmcu_sxtab16_ror8", pair, word))
                    for j in range(block):
                        weights = T.bind(w4[(ob * chunks + k) * block + j])
                        first = _call("__smlad", even, _call("mlonmcu_sxtb16", weights), acc[j])
                        T.buffer_store(acc, _call("__smlad", odd, _call("mlonmcu_sxtb16_ror8", weights), first), [j])
                store_outputs(spec, acc, quant, y, b, ob)
    return ib.get()
