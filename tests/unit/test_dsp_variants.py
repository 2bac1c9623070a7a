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
