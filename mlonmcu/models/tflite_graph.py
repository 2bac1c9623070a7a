"""The main subgraph of a TFLite flatbuffer as plain data: tensors, operators, options.

Backends that build kernels from the model itself (rather than from an importer's rewrite of
it) need exactly what TFLite's own kernels read: shapes, types, constant buffers, per-tensor or
per-channel scales and zero points with their `quantized_dimension`, and each operator's builtin
options. Reading them here keeps one place that knows the flatbuffer schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mlonmcu.errors import ModelError

DTYPES = {
    0: "float32",
    1: "float16",
    2: "int32",
    3: "uint8",
    4: "int64",
    6: "bool",
    7: "int16",
    9: "int8",
    10: "float64",
    15: "uint32",
    16: "uint16",
}


# the TFLite types neither backend takes, by their schema names (for the error)
UNSUPPORTED_TYPES = {5: "STRING", 8: "COMPLEX64", 11: "COMPLEX128", 12: "UINT64", 13: "RESOURCE", 14: "VARIANT"}
UNSUPPORTED_TYPES |= {17: "INT4", 18: "BFLOAT16"}


def dtype_of(code: int, name: str) -> str:
    """The numpy dtype of a TFLite tensor type, or a ModelError naming the type."""
    if code not in DTYPES:
        kind = f"{UNSUPPORTED_TYPES[code]} ({code})" if code in UNSUPPORTED_TYPES else f"{code}, unknown to this reader"
        raise ModelError(f"tensor '{name}' has TFLite type {kind}, which mlonmcu does not support")
    return DTYPES[code]


def text(value: bytes | None) -> str:
    """Flatbuffer strings are optional: a missing name, description or custom code is ""."""
    return value.decode("utf-8", errors="replace") if value else ""


@dataclass(frozen=True, eq=False)
class Tensor:
    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str
    scale: np.ndarray  # float32; empty when not quantized
    zero_point: np.ndarray  # int64, as long as `scale` (or empty)
    axis: int  # quantized_dimension: the channel axis of per-channel scales
    data: np.ndarray | None  # the constant's values (typed and shaped), None for activations
    variable: bool = False  # state kept from one inference to the next (SVDF, LSTM)

    @property
    def quantized(self) -> bool:
        return self.scale.size > 0

    @property
    def per_tensor(self) -> bool:
        return self.scale.size == 1

    @property
    def scalar_scale(self) -> float:
        return float(self.scale[0])

    @property
    def scalar_zero_point(self) -> int:
        return int(self.zero_point[0]) if self.zero_point.size else 0


@dataclass(frozen=True)
class Operator:
    index: int
    op: str  # builtin name, e.g. CONV_2D; CUSTOM:<code> for custom operators
    inputs: tuple[int, ...]  # tensor indices; -1 = an optional input left out
    outputs: tuple[int, ...]
    options: dict[str, Any] = field(default_factory=dict)  # builtin options by field name


@dataclass
class TfliteGraph:
    name: str
    tensors: list[Tensor]
    operators: list[Operator]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]

    def input(self, op: Operator, position: int) -> Tensor | None:
        index = op.inputs[position] if position < len(op.inputs) else -1
        return self.tensors[index] if index >= 0 else None

    def output(self, op: Operator, position: int = 0) -> Tensor:
        return self.tensors[op.outputs[position]]


def op_names() -> dict[int, str]:
    import tflite

    return {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}


def _options_classes() -> dict[int, str]:
    import tflite

    return {v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_")}


def _options(operator: Any, classes: dict[int, str]) -> dict[str, Any]:
    """Every scalar or vector field of the operator's builtin options table, by name."""
    import tflite

    table = operator.BuiltinOptions()
    name = classes.get(operator.BuiltinOptionsType(), "NONE")
    if table is None or name == "NONE" or not hasattr(tflite, name):
        return {}
    options = getattr(tflite, name)()
    options.Init(table.Bytes, table.Pos)
    found: dict[str, Any] = {}
    for attr in dir(options):
        if attr.startswith("_") or attr in ("Init",) or attr.startswith("GetRootAs") or "Buffer" in attr:
            continue
        if attr.endswith(("Length", "IsNone")):
            continue
        method = getattr(options, attr)
        if not callable(method):
            continue
        try:
            value = method()
        except TypeError:  # an element accessor (takes an index): the ...AsNumpy twin has it all
            continue
        found[attr.removesuffix("AsNumpy")] = value
    return found


def _tensor(model: Any, subgraph: Any, index: int) -> Tensor:
    tensor = subgraph.Tensors(index)
    name = text(tensor.Name()) or f"tensor{index}"
    dtype = dtype_of(tensor.Type(), name)
    shape = tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
    quant = tensor.Quantization()
    scale, zero, axis = np.zeros(0, np.float32), np.zeros(0, np.int64), 0
    if quant is not None and quant.ScaleLength():
        scale = np.asarray(quant.ScaleAsNumpy(), dtype=np.float32).reshape(-1)
        zero = (
            np.asarray(quant.ZeroPointAsNumpy(), dtype=np.int64).reshape(-1)
            if quant.ZeroPointLength()
            else np.zeros(scale.size, np.int64)
        )
        axis = int(quant.QuantizedDimension())
    buffer = model.Buffers(tensor.Buffer())
    data = None
    if buffer is not None and buffer.DataLength():
        raw = buffer.DataAsNumpy().tobytes()
        data = np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape).copy()
    return Tensor(index, name, shape, dtype, scale, zero, axis, data, bool(tensor.IsVariable()))


def read_graph(path: Path) -> TfliteGraph:
    """The model's main subgraph. Raises ModelError for what does not parse."""
    import tflite

    buf = path.read_bytes()
    try:
        model = tflite.Model.GetRootAsModel(buf, 0)
        subgraph = model.Subgraphs(0)
        names, classes = op_names(), _options_classes()
        tensors = [_tensor(model, subgraph, i) for i in range(subgraph.TensorsLength())]
        operators = []
        for i in range(subgraph.OperatorsLength()):
            operator = subgraph.Operators(i)
            code = model.OperatorCodes(operator.OpcodeIndex())
            builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            op = names.get(builtin, f"BUILTIN_{builtin}")
            if op == "CUSTOM":
                op = f"CUSTOM:{text(code.CustomCode())}"
            operators.append(
                Operator(
                    i,
                    op,
                    tuple(int(t) for t in operator.InputsAsNumpy()) if operator.InputsLength() else (),
                    tuple(int(t) for t in operator.OutputsAsNumpy()) if operator.OutputsLength() else (),
                    _options(operator, classes),
                )
            )
        inputs = tuple(int(t) for t in subgraph.InputsAsNumpy())
        outputs = tuple(int(t) for t in subgraph.OutputsAsNumpy())
    except ModelError:
        raise
    except Exception as err:  # the flatbuffer reader raises anything on corrupt data
        raise ModelError(f"{path.name} is a corrupt TFLite model: {type(err).__name__}: {err}") from None
    return TfliteGraph(path.stem, tensors, operators, inputs, outputs)


def hybrid_operators(graph: TfliteGraph) -> list[str]:
    """Operators with float activations and int8 constant weights (dynamic-range quantization)."""
    found = []
    for op in graph.operators:
        inputs = [graph.tensors[i] for i in op.inputs if i >= 0]
        floats = any(t.data is None and t.dtype == "float32" for t in inputs)
        weights = any(t.data is not None and t.dtype == "int8" and t.quantized for t in inputs)
        if floats and weights:
            found.append(op.op)
    return list(dict.fromkeys(found))


def broken_scales(graph: TfliteGraph) -> list[str]:
    """Tensors whose quantization cannot be computed with: a scale that is not finite, negative, or
    zero on an integer activation (every requantization would divide by it)."""
    found = []
    for tensor in graph.tensors:
        if not tensor.quantized:
            continue
        scales = np.asarray(tensor.scale, dtype=np.float64)
        bad = ~np.isfinite(scales) | (scales < 0)
        if tensor.data is None and tensor.dtype in ("int8", "int16", "uint8"):
            bad |= scales == 0
        if np.any(bad):
            found.append(f"'{tensor.name[:60]}' (scale {float(scales[bad][0]):g})")
    return found


def unrunnable_message(graph: TfliteGraph, backend: str) -> str:
    """'' for a model `backend` can try; else why it cannot run it and how to convert it."""
    broken = broken_scales(graph)
    if broken:
        return (
            f"{graph.name} has broken quantization: tensor(s) {', '.join(broken[:3])}"
            f"{f' and {len(broken) - 3} more' if len(broken) > 3 else ''}; no integer kernel can compute with "
            "such a scale (neither LiteRT nor TFLite Micro runs it either) — the converter saw no range for "
            "them (e.g. a representative dataset that never reaches the layer): re-convert the model"
        )
    return hybrid_message(graph, backend)


def hybrid_message(graph: TfliteGraph, backend: str) -> str:
    """'' for a fully integer or float model; else why `backend` cannot run it and how to convert."""
    ops = hybrid_operators(graph)
    if not ops:
        return ""
    return (
        f"{graph.name} is a hybrid (dynamic-range) quantized model: {', '.join(ops)} take float activations "
        f"with int8 weights, which {backend} does not run; convert it with full integer quantization "
        "(a representative dataset: TFLiteConverter with optimizations=[DEFAULT] and representative_dataset) "
        "or use the float model"
    )
