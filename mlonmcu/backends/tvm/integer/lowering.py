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
from mlonmcu.backends.tvm.integer.patterns import NCHW_OF_NHWC, NHWC_OF_NCHW, Matcher, Schedule

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
    from tvm import relax

    mod = _fold_movement(mod)
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
        args = [_arg(a) for a in lowered.args]
        if lowered.nchw:
            args[0] = relax.op.permute_dims(args[0], list(NHWC_OF_NCHW))
        call = relax.call_tir(gvar, relax.Tuple(args), relax.TensorType(lowered.shape, "int8"))
        replacements[lowered.anchor] = relax.op.permute_dims(call, list(NCHW_OF_NHWC)) if lowered.nchw else call
        report.lowered[lowered.op] += 1

    mod = _cancel_transposes(relax.transform.Normalize()(_rebound(builder.get(), replacements)))
    mod = relax.transform.DeadCodeElimination()(mod)
    for binding in Graph(mod["main"]).bindings:
        name = op_name(binding.value)
        if name and (name in _QDQ_OPS or tensor_type(binding.var)[1].startswith("float")):
            report.float_ops[name] += 1
    return mod, report


_MOVEMENT_OPS = ("relax.reshape", "relax.permute_dims", "relax.squeeze", "relax.expand_dims")


def _fold_movement(mod: Any) -> Any:
    """quantize(move(dequantize(x, s, z)), s, z) is move(x): a QDQ graph's Reshape, Flatten or
    Transpose (ONNX) moves the int8 values themselves, exactly."""
    from tvm import relax

    from mlonmcu.backends.tvm.integer.graph import constant

    graph = Graph(mod["main"])
    moved: dict[Any, Any] = {}
    for binding in graph.bindings:
        call = binding.value
        if op_name(call) != "relax.quantize" or str(call.attrs.out_dtype) != "int8":
            continue
        move = graph.producer(call.args[0])
        if op_name(move) not in _MOVEMENT_OPS:
            continue
        source = graph.dequantized(move.args[0])
        scale, zero = constant(call.args[1]), constant(call.args[2])
        if source is None or scale is None or zero is None or tensor_type(source.value)[1] != "int8":
            continue
        same = np.array_equal(source.scale.reshape(-1), scale.astype(np.float32).reshape(-1))
        if same and np.array_equal(source.zero_point.reshape(-1), zero.astype(np.int32).reshape(-1)):
            moved[binding.var] = relax.Call(move.op, [source.value, *move.args[1:]], move.attrs)

    if not moved:
        return mod
    return relax.transform.DeadCodeElimination()(relax.transform.Normalize()(_rebound(mod, moved)))


def _cancel_transposes(mod: Any) -> Any:
    """permute_dims(permute_dims(x, a), b) with b undoing a is x: between two NCHW kernels of an
    ONNX model the NHWC result of one is what the next reads."""
    from tvm import relax

    graph = Graph(mod["main"])
    undone: dict[Any, Any] = {}
    for binding in graph.bindings:
        outer = binding.value
        if op_name(outer) != "relax.permute_dims" or outer.attrs.axes is None:
            continue
        inner = graph.call(outer.args[0], "relax.permute_dims")
        if inner is None or inner.attrs.axes is None:
            continue
        first, second = [int(a) for a in inner.attrs.axes], [int(a) for a in outer.attrs.axes]
        if [first[a] for a in second] == list(range(len(first))):
            undone[binding.var] = inner.args[0]

    if not undone:
        return mod
    return relax.transform.CanonicalizeBindings()(_rebound(mod, undone))


def _rebound(mod: Any, values: dict[Any, Any]) -> Any:
    """`mod` with the variables in `values` bound to their new values in `main`."""
    import tvm_ffi
    from tvm import relax

    def rewrite(binding: Any) -> Any:
        value = values.get(binding.var)
        return binding if value is None else relax.VarBinding(binding.var, value)

    main = tvm_ffi.structural_map(mod["main"], (relax.VarBinding, rewrite))
    mod.update_func(mod.get_global_var("main"), main)
    return mod


def _arg(value: Any) -> Any:
    from tvm import relax

    return relax.const(np.ascontiguousarray(value), str(value.dtype)) if isinstance(value, np.ndarray) else value
