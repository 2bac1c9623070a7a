"""Relax lowering to a static execution plan (stopping before VM code generation).

After these passes `main` is a flat list of bindings: one static allocation per intermediate
tensor, direct calls of TIR kernels with their outputs passed in and reshape aliases — what an
AOT driver needs. StaticPlanBlockMemory is not run: memory.py packs the arena by liveness.
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
    ]
    with target:
        return tvm.ir.transform.Sequential(passes)(mod)
