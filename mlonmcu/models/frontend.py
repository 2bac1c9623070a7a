"""Frontend `tflite`: read a TFLite flatbuffer and describe it (I/O, operators, MACs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mlonmcu.contracts import ModelInfo, TensorInfo
from mlonmcu.errors import ModelError
from mlonmcu.models.frontend_base import Frontend
from mlonmcu.models.tflite_graph import DTYPES as _DTYPES
from mlonmcu.models.tflite_graph import dtype_of as _dtype_of
from mlonmcu.models.tflite_graph import op_names as _op_names
from mlonmcu.models.tflite_graph import text as _text


def _tensor(subgraph: Any, index: int) -> TensorInfo:
    tensor = subgraph.Tensors(index)
    quant = tensor.Quantization()
    scale: tuple[float, ...] = ()
    zero: tuple[int, ...] = ()
    if quant is not None and quant.ScaleLength():
        scale = tuple(float(s) for s in quant.ScaleAsNumpy())
        zero = tuple(int(z) for z in quant.ZeroPointAsNumpy()) if quant.ZeroPointLength() else (0,) * len(scale)
    name = _text(tensor.Name()) or f"tensor{index}"
    dtype = _dtype_of(tensor.Type(), name)
    shape = tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
    return TensorInfo(name, shape, dtype, scale, zero)


def _macs(op: str, subgraph: Any, operator: Any) -> int:
    def shape(i: int, outputs: bool = False) -> list[int]:
        idx = operator.Outputs(i) if outputs else operator.Inputs(i)
        if idx < 0:
            return []
        t = subgraph.Tensors(idx)
        return [int(d) for d in t.ShapeAsNumpy()] if t.ShapeLength() else []

    out = shape(0, outputs=True)
    out_elems = int(np.prod(out)) if out else 0
    if op == "CONV_2D":
        w = shape(1)  # [Cout, KH, KW, Cin]
        return out_elems * w[1] * w[2] * w[3]
    if op == "DEPTHWISE_CONV_2D":
        w = shape(1)  # [1, KH, KW, Cout]
        return out_elems * w[1] * w[2]
    if op == "FULLY_CONNECTED":
        w = shape(1)  # [Cout, Cin]
        return out_elems * w[-1]
    if op == "TRANSPOSE_CONV":
        w = shape(1)
        inp = shape(2)
        return int(np.prod(inp)) * w[0] * w[1] * w[2] if inp else 0
    if op == "BATCH_MATMUL":
        a = shape(0)
        return out_elems * a[-1] if a else 0
    return 0


_ALIASING_OPS = {"RESHAPE", "SQUEEZE", "EXPAND_DIMS"}  # outputs that can share their input's memory


def _activation_lower_bound(model: Any, subgraph: Any, names: dict[int, str]) -> int:
    """Bytes of the largest set of activation tensors alive at once, executing ops in file order.

    A tensor lives from the op that produces it (model inputs: from the start) to its last
    consumer (model outputs: to the end); constants are not activations; reshape-like outputs
    share their input's memory. No memory plan can use less.
    """

    def nbytes(index: int) -> int:
        tensor = subgraph.Tensors(index)
        shape = [int(d) for d in tensor.ShapeAsNumpy()] if tensor.ShapeLength() else []
        itemsize = np.dtype(_DTYPES.get(tensor.Type(), "int8")).itemsize
        return int(np.prod(shape)) * itemsize if shape else itemsize

    def is_constant(index: int) -> bool:
        buffer = model.Buffers(subgraph.Tensors(index).Buffer())
        return buffer is not None and buffer.DataLength() > 0

    root: dict[int, int] = {}  # aliasing output → the tensor that owns the memory
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    end = subgraph.OperatorsLength()
    for i in range(subgraph.InputsLength()):
        first[subgraph.Inputs(i)] = -1
    for step in range(end):
        op = subgraph.Operators(step)
        code = model.OperatorCodes(op.OpcodeIndex())
        name = names.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()), "")
        inputs = [t for t in op.InputsAsNumpy() if t >= 0 and not is_constant(t)]
        for t in inputs:
            owner = root.get(t, t)
            last[owner] = step
        for t in op.OutputsAsNumpy():
            if name in _ALIASING_OPS and inputs:
                root[t] = root.get(inputs[0], inputs[0])
            else:
                first.setdefault(t, step)
                last[t] = step
    for i in range(subgraph.OutputsLength()):
        last[root.get(subgraph.Outputs(i), subgraph.Outputs(i))] = end
    sizes = {t: nbytes(t) for t in first}
    return max(
        (sum(size for t, size in sizes.items() if first[t] <= step <= last.get(t, first[t])) for step in range(end)),
        default=0,
    )


def _operators(model: Any, subgraph: Any, path: Path) -> list[tuple[str, int]]:
    """Each operator in execution order with its MACs."""
    names = _op_names()
    found = []
    try:
        for i in range(subgraph.OperatorsLength()):
            operator = subgraph.Operators(i)
            code = model.OperatorCodes(operator.OpcodeIndex())
            builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            op = names.get(builtin, f"BUILTIN_{builtin}")
            if op == "CUSTOM" and _text(code.CustomCode()):
                op = f"CUSTOM:{_text(code.CustomCode())}"
            found.append((op, _macs(op, subgraph, operator)))
    except (IndexError, TypeError, ValueError) as err:
        raise ModelError(f"{path.name}: cannot count the MACs of its operators: {type(err).__name__}: {err}") from None
    return found


def operator_macs(path: Path) -> list[tuple[str, int]]:
    """The model's operators in execution order with their MACs (an interpreter's per-layer view)."""
    model, subgraph = TfliteFrontend._parse(path)
    return _operators(model, subgraph, path)


class TfliteFrontend(Frontend):
    """Reads .tflite flatbuffers with the `tflite` package; no TensorFlow needed."""

    name = "tflite"
    help = "TFLite flatbuffers (.tflite): I/O, operators, MACs, activation lower bound"
    suffixes = (".tflite",)
    requires = ("litert",)
    optional = ("tflm_python",)  # the oracle where LiteRT refuses (models/reference.py)

    def describe(self, path: Path) -> ModelInfo:
        """Parse, then analyse: only a flatbuffer that does not parse is called corrupt; a model
        that parses but defeats the analysis is reported as what it is."""
        model, subgraph = self._parse(path)
        names = _op_names()
        per_operator = _operators(model, subgraph, path)
        operators = [op for op, _ in per_operator]
        macs = sum(count for _, count in per_operator)
        try:
            activations = _activation_lower_bound(model, subgraph, names)
        except (IndexError, TypeError, ValueError) as err:
            raise ModelError(
                f"{path.name}: cannot compute the liveness of its tensors: {type(err).__name__}: {err}"
            ) from None
        inputs = tuple(_tensor(subgraph, subgraph.Inputs(i)) for i in range(subgraph.InputsLength()))
        outputs = tuple(_tensor(subgraph, subgraph.Outputs(i)) for i in range(subgraph.OutputsLength()))
        unique_ops = tuple(dict.fromkeys(operators))
        return ModelInfo("tflite", path.stat().st_size, inputs, outputs, unique_ops, macs, activations)

    @staticmethod
    def _parse(path: Path) -> tuple[Any, Any]:
        """The model and its main subgraph, with every table the analysis reads touched once."""
        import tflite

        buf = path.read_bytes()
        if len(buf) < 8 or buf[4:8] != b"TFL3":
            raise ModelError(f"{path.name} is not a TFLite model (no 'TFL3' flatbuffer identifier)")
        try:
            model = tflite.Model.GetRootAsModel(buf, 0)
            if model.SubgraphsLength() < 1:
                raise ModelError(f"{path.name}: TFLite model has no subgraph")
            subgraph = model.Subgraphs(0)
            for i in range(subgraph.TensorsLength()):
                tensor = subgraph.Tensors(i)
                tensor.Type(), tensor.ShapeAsNumpy() if tensor.ShapeLength() else None, tensor.Buffer()
            for i in range(subgraph.OperatorsLength()):
                operator = subgraph.Operators(i)
                model.OperatorCodes(operator.OpcodeIndex()).BuiltinCode()
                operator.InputsAsNumpy(), operator.OutputsAsNumpy()
            for i in range(model.BuffersLength()):
                model.Buffers(i).DataLength()
        except ModelError:
            raise
        except Exception as err:  # the flatbuffer reader raises anything on corrupt data
            raise ModelError(f"{path.name} is a corrupt TFLite model: {type(err).__name__}: {err}") from None
        return model, subgraph
