"""Relax lowering to a static execution plan (stopping before VM code generation).

After these passes `main` is a flat list of bindings: static storages, tensors placed in them,
direct calls of TIR kernels with outputs passed in, reshape aliases and one output allocation —
exactly what an AOT driver needs (see ../shared/notes/tvm-0.27-on-mcus.md).
"""

from __future__ import annotations

from typing import Any


def lower_relax(mod: Any, target: Any) -> Any:
    import tvm
    from tvm import relax

    passes = [
        relax.transform.LegalizeOps(),
        relax.transform.AnnotateTIROpPattern(),
        relax.transform.FoldConstant(),
        relax.transform.FuseOps(),
        relax.transform.FuseTIR(),
        relax.transform.DeadCodeElimination(),
        relax.transform.RewriteDataflowReshape(),
        relax.transform.ToNonDataflow(),
        relax.transform.RemovePurityChecking(),
        relax.transform.CallTIRRewrite(),
        relax.transform.StaticPlanBlockMemory(),
    ]
    with target:
        return tvm.ir.transform.Sequential(passes)(mod)
