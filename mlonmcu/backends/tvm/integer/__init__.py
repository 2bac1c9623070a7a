"""Integer-only lowering of int8 models ("QNN lowering"): QDQ chains → integer TIR kernels."""
