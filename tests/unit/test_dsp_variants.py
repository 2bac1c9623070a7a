"""Codegen of kernels with SIMD variants: all under one name, the compiler's features choosing."""

from mlonmcu.backends.tvm.codegen import _with_variants
from mlonmcu.backends.tvm.integer import rvv
from mlonmcu.backends.tvm.integer.dsp import DSP_VARIANT, GUARD

SCALAR = """#include <math.h>
#ifdef __cplusplus
extern "C"
#endif
void tvmgen_a(int8_t* x) {
  x[0] = 1;
}

#ifdef __cplusplus
extern "C"
#endif
void tvmgen_b(int8_t* x) {
  x[0] = 2;
}
"""
DSP = """#include <math.h>
#ifdef __cplusplus
extern "C"
#endif
void tvmgen_b(int8_t* x) {
  x[0] = __smlad(1, 2, 3);
}
"""


def test_the_scalar_kernel_is_kept_for_cores_without_dsp():
    text = _with_variants(SCALAR, {DSP_VARIANT: (DSP, {"tvmgen_b"})})
    lines = text.splitlines()
    guarded = lines.index(f"#if !({GUARD})")
    assert lines[guarded + 1 : guarded + 5] == [
        "#ifdef __cplusplus",
        'extern "C"',
        "#endif",
        "void tvmgen_b(int8_t* x) {",
    ]
    assert lines[guarded + 7] == f"#endif /* !({GUARD}) */"
    dsp = lines.index(f"#if {GUARD}")
    assert dsp > guarded and "__smlad(1, 2, 3)" in text and lines[-1] == f"#endif /* {GUARD} */"
    assert text.count("void tvmgen_a(") == 1 and text.count("void tvmgen_b(") == 2
    assert lines.index("void tvmgen_a(int8_t* x) {") < guarded  # untouched, unguarded


def test_a_kernel_with_dsp_and_rvv_variants_keeps_its_scalar_code_for_cores_with_neither():
    vector = DSP.replace("__smlad(1, 2, 3)", "__riscv_vsetvl_e8m1(4)")
    text = _with_variants(SCALAR, {DSP_VARIANT: (DSP, {"tvmgen_b"}), rvv.RVV_VARIANT: (vector, {"tvmgen_b"})})
    lines = text.splitlines()
    neither = f"!({GUARD}) && !({rvv.GUARD})"
    assert f"#if {neither}" in lines and f"#endif /* {neither} */" in lines
    assert lines.index(f"#if {GUARD}") < lines.index(f"#if {rvv.GUARD}")
    assert "mlonmcu_rvv_conv2d(" in text  # the RVV prelude comes with its variants
    assert text.count("void tvmgen_b(") == 3


def test_dsp_layout_widens_conv_blocks_only_where_they_divide_the_channels():
    """conv_block 0 = by layout: 4 for the scalar layouts, in the DSP layout 16 or 8 where they divide;
    a value the user sets is kept, and the 16x8 kernels keep the scalar block."""
    from mlonmcu.backends.tvm.integer.patterns import Schedule

    dsp = Schedule(simd="dsp")
    assert [dsp.regular_conv_block(c) for c in (64, 24, 12, 10, 3)] == [16, 8, 4, 4, 4]
    assert Schedule().regular_conv_block(64) == Schedule(simd="rvv").regular_conv_block(64) == 4
    assert Schedule(simd="dsp", conv_block=16).regular_conv_block(12) == 16
    assert dsp.scalar_conv_block == 4


def test_dsp_layout_blocks_depthwise_in_words_of_channels():
    """depthwise_block/pixels 0 = by layout: 8 x 1, in the DSP layout 4 x 2 where the channels come in
    words of four (the SMLABB/SMLATT step); a value the user sets is kept."""
    from mlonmcu.backends.tvm.integer.patterns import Schedule

    dsp = Schedule(simd="dsp")
    assert [dsp.depthwise_blocking(c) for c in (64, 12, 13)] == [(4, 2), (4, 2), (8, 1)]
    assert Schedule().depthwise_blocking(64) == Schedule(simd="mve").depthwise_blocking(64) == (8, 1)
    assert Schedule(simd="dsp", depthwise_block=8, depthwise_pixels=1).depthwise_blocking(64) == (8, 1)


def test_layout_free_kernels_take_one_arm_variant_at_most():
    """ADD and the pools: each BUILD's own kind; under auto MVE and RVV (free elsewhere), never DSP
    (an MVE core has the DSP extension too: two Arm variants would both be compiled)."""
    from mlonmcu.backends.tvm.integer.blocks import takes_variant

    chosen = {simd: [k for k in ("dsp", "mve", "rvv") if takes_variant(simd, k)] for simd in ("auto", "dsp", "off")}
    assert chosen == {"auto": ["mve", "rvv"], "dsp": ["dsp"], "off": []}


def _attrs(kernel) -> set[str]:
    from mlonmcu.backends.tvm.integer.blocks import variant_attrs

    return {kind for kind, attr in variant_attrs().items() if kernel.attrs is not None and attr in kernel.attrs}


def test_pool_variants_by_window():
    """Average pools of at most 256 taps (16-bit lane sums) get variants, larger ones none; RVV only
    where border windows are cut (clang vectorizes whole-window pools itself); int16 none."""
    from mlonmcu.backends.tvm.integer.pooling import pool_kernel

    same = ((1, 7, 6, 13), (1, 4, 3, 13), (3, 3), (2, 2), (1, 1, 1, 1))
    whole = ((1, 5, 5, 64), (1, 1, 1, 64), (5, 5), (1, 1), (0, 0, 0, 0))
    big = ((1, 20, 20, 6), (1, 1, 1, 6), (20, 20), (1, 1), (0, 0, 0, 0))
    assert _attrs(pool_kernel("AVERAGE_POOL_2D", "p", *same, simd="auto")) == {"mve", "rvv"}
    assert _attrs(pool_kernel("AVERAGE_POOL_2D", "p", *same, simd="dsp")) == {"dsp"}
    assert _attrs(pool_kernel("AVERAGE_POOL_2D", "p", *whole, simd="auto")) == {"mve"}
    assert _attrs(pool_kernel("AVERAGE_POOL_2D", "p", *big, simd="mve")) == set()
    assert _attrs(pool_kernel("MAX_POOL_2D", "p", *big, simd="dsp")) == {"dsp"}
    assert _attrs(pool_kernel("MAX_POOL_2D", "p", *same, simd="rvv")) == {"rvv"}
    assert _attrs(pool_kernel("MAX_POOL_2D", "p", *same, dtype="int16", simd="rvv")) == set()


def test_dsp_add_needs_normalized_multipliers():
    """SMMLAR reads 2M as a signed word: the DSP ADD only where every multiplier is >= 2^30."""
    import numpy as np

    from mlonmcu.backends.tvm.integer.elementwise import add_kernel
    from mlonmcu.backends.tvm.integer.graph import Quantized
    from mlonmcu.backends.tvm.integer.patterns import Output

    def quantized(scale: float, zero_point: int) -> Quantized:
        return Quantized(None, np.float32(scale), np.int32(zero_point), 0)

    a, b = quantized(0.05, -3), quantized(0.11, 17)
    out = Output(0.09, -20, -128, 127)
    shape = (1, 5, 7, 6)
    assert _attrs(add_kernel("add", (shape, shape), shape, a, b, out, simd="dsp")) == {"dsp"}
    assert _attrs(add_kernel("add", (shape, shape), shape, a, b, out, simd="auto")) == {"mve", "rvv"}
    zero = quantized(0.0, 0)  # a zero scale: multiplier 0
    assert _attrs(add_kernel("add", (shape, shape), shape, zero, b, out, simd="dsp")) == set()
