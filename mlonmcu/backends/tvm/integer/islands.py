"""Float islands: operators an int8 model computes in float between a DEQUANTIZE and a QUANTIZE.

The converter leaves an operator it cannot quantize in float and wraps it (e.g. the NEG of a
Keras LayerNormalization: MEAN → DEQUANTIZE → NEG → QUANTIZE). TFLite Micro runs it with its
float kernel; here it becomes the same float operation in Relax (legalized to TIR), counted in
`Float Ops` — the rest of the model stays integer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mlonmcu.backends.tvm.integer.uncovered import NotCovered
from mlonmcu.models.tflite_graph import Operator

if TYPE_CHECKING:
    from mlonmcu.backends.tvm.integer.direct import DirectBuilder

# TFLite operator → relax.op function name, for float32 tensors
UNARY = {
    "NEG": "negative",
    "ABS": "abs",
    "EXP": "exp",
    "LOG": "log",
    "SQRT": "sqrt",
    "RSQRT": "rsqrt",
    "SQUARE": "square",
    "SIN": "sin",
    "COS": "cos",
    "TANH": "tanh",
    "LOGISTIC": "sigmoid",
}
BINARY = {
    "ADD": "add",
    "SUB": "subtract",
    "MUL": "multiply",
    "DIV": "divide",
    "MAXIMUM": "maximum",
    "MINIMUM": "minimum",
    "SQUARED_DIFFERENCE": "subtract",  # squared below
}
# fused activation → float clamp bounds: RELU's has no upper one
_CLAMPS: dict[int, tuple[float, float | None]] = {1: (0.0, None), 2: (-1.0, 1.0), 3: (0.0, 6.0)}


def takes(b: DirectBuilder, op: Operator) -> bool:
    """Whether `op` is a float operation of a float island: every tensor it reads and writes is
    float32 and none is quantized."""
    if op.op not in UNARY and op.op not in BINARY:
        return False
    tensors = [b.graph.tensors[i] for i in (*op.inputs, *op.outputs) if i >= 0]
    return all(t.dtype == "float32" and not t.quantized for t in tensors)


def float_op(b: DirectBuilder, op: Operator) -> Any:
    from tvm import relax

    operands = []
    for position in range(len(op.inputs)):
        tensor = b.graph.input(op, position)
        if tensor is None or (tensor.data is None and tensor.index not in b.values):
            raise NotCovered(op, f"float input {position} is not computed by any operator")
        operands.append(b.operand(tensor))
    if op.op in UNARY:
        value = getattr(relax.op, UNARY[op.op])(operands[0])
    else:
        value = getattr(relax.op, BINARY[op.op])(*operands)
        if op.op == "SQUARED_DIFFERENCE":
            difference = b.builder.emit(value)
            value = relax.op.multiply(difference, difference)
    code = int(op.options.get("FusedActivationFunction", 0))
    if code:
        if code not in _CLAMPS:
            raise NotCovered(op, f"float fused activation {code}")
        low, high = _CLAMPS[code]
        value = b.builder.emit(value)
        value = relax.op.nn.relu(value) if high is None else relax.op.clip(value, low, high)
    b.report.float_ops[op.op] += 1
    return value
