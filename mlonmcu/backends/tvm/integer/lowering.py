"""The rewrite: replace matched QDQ chains in `main` by calls of integer kernels.

Each anchor binding keeps its variable and gets a `call_tir` of a new kernel as its value, so no
other binding needs rewriting; the float chains that fed it become dead and are removed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlonmcu.backends.tvm.integer.graph import Graph, op_name, tensor_type
from mlonmcu.backends.tvm.integer.patterns import Matcher, Schedule

_QDQ_OPS = ("relax.quantize", "relax.dequantize")


@dataclass
class LoweringReport:
    lowered: Counter[str] = field(default_factory=Counter)  # TFLite op → count, in integer
    float_ops: Counter[str] = field(default_factory=Counter)  # relax op → count, still float

    def float_summary(self) -> str:
        return ", ".join(f"{op.removeprefix('relax.')}×{n}" for op, n in sorted(self.float_ops.items()))


def is_quantized(mod: Any) -> bool:
    return any(op_name(b.value) in _QDQ_OPS for b in Graph(mod["main"]).bindings)


def lower_integer(mod: Any, schedule: Schedule | None = None) -> tuple[Any, LoweringReport]:
    import tvm_ffi
    from tvm import relax

    graph = Graph(mod["main"])
    matcher = Matcher(graph, schedule)
    replacements: dict[Any, Any] = {}
    report = LoweringReport()
    builder = relax.BlockBuilder(mod)
    for binding in graph.bindings:
        lowered = matcher.match(binding)
        if lowered is None or lowered.anchor in replacements:
            continue
        gvar = builder.add_func(lowered.kernel, str(lowered.kernel.attrs["global_symbol"]))
        replacements[lowered.anchor] = relax.call_tir(
            gvar, relax.Tuple([_arg(a) for a in lowered.args]), relax.TensorType(lowered.shape, "int8")
        )
        report.lowered[lowered.op] += 1

    def rewrite(binding: Any) -> Any:
        value = replacements.get(binding.var)
        return binding if value is None else relax.VarBinding(binding.var, value)

    mod = builder.get()
    main = tvm_ffi.structural_map(mod["main"], (relax.VarBinding, rewrite))
    mod.update_func(mod.get_global_var("main"), main)
    mod = relax.transform.DeadCodeElimination()(mod)
    for binding in Graph(mod["main"]).bindings:
        name = op_name(binding.value)
        if name and (name in _QDQ_OPS or tensor_type(binding.var)[1].startswith("float")):
            report.float_ops[name] += 1
    return mod, report


def _arg(value: Any) -> Any:
    from tvm import relax

    return relax.const(np.ascontiguousarray(value), str(value.dtype)) if isinstance(value, np.ndarray) else value
