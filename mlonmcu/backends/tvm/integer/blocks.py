"""The conv register-block sizes the layouts default to, and which SIMD variants a layout takes.

Here rather than in patterns.py and dsp.py so that the backend's option help can name them
without loading the kernel modules (they load with the first BUILD, not on every command).
"""

SCALAR_CONV_BLOCK = 4  # CONV_2D output channels per register block in the scalar layout
# ... in the DSP layout (unless tvmaot.conv_block is set; patterns.Schedule.regular_conv_block):
# each widened input word feeds more SMLADs; measured on the M4 (MLPerf Tiny) against 4, 8 and 12;
# a layer 16 does not divide takes 8 or 4.
DSP_CONV_BLOCK = 16


def takes_variant(simd: str, kind: str) -> bool:
    """Whether a layout-free kernel (ADD, the pools) of a BUILD with tvmaot.simd `simd` gets the
    `kind` variant (dsp, mve, rvv): its own kind; under auto MVE and RVV, which cost other cores
    nothing — not DSP, since an MVE core has the DSP extension too and a kernel carries one Arm
    variant (codegen.VARIANT_KINDS)."""
    return simd == kind or (simd == "auto" and kind != "dsp")


def variant_attrs() -> dict[str, str]:
    """Each kind's PrimFunc attribute (integer/dsp.py, mve.py, rvv.py; loaded on first call)."""
    from mlonmcu.backends.tvm.integer import dsp, mve, rvv

    return {"dsp": dsp.DSP_VARIANT, "mve": mve.MVE_VARIANT, "rvv": rvv.RVV_VARIANT}
