"""Codegen of kernels with a DSP variant: both under one name, the compiler's features choosing."""

from mlonmcu.backends.tvm.codegen import _with_variants
from mlonmcu.backends.tvm.integer.dsp import GUARD

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
    text = _with_variants(SCALAR, DSP, {"tvmgen_b"})
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
