"""The converter's static shapes, settled where TFLite itself resizes at Prepare.

TFLite's converter writes SPACE_TO_BATCH_ND's output (Keras' dilated Conv1D/Conv2D) with the
batch of its input, and the operators up to the BATCH_TO_SPACE_ND that undoes it inherit that
batch; TFLite and TFLite Micro compute the real shapes when they prepare the model. The direct
path builds from static shapes, so it settles them first: SPACE_TO_BATCH_ND's and
BATCH_TO_SPACE_ND's outputs are computed, and an operator reading a settled tensor gets its
output settled by the operator's own rule. An operator without such a rule here is named
(`NotCovered`) rather than built from a shape that is not the one TFLite runs.
"""

from __future__ import annotations

import dataclasses
import math

from mlonmcu.backends.tvm.integer.uncovered import NotCovered
from mlonmcu.models.tflite_graph import Operator, TfliteGraph

Shape = tuple[int, ...]
# operators whose output has the shape of their first input
_SAME_SHAPE = {
    "RELU",
    "RELU6",
    "RELU_N1_TO_1",
    "RELU_0_TO_1",
    "LEAKY_RELU",
    "LOGISTIC",
    "TANH",
    "HARD_SWISH",
    "ELU",
    "QUANTIZE",
    "DEQUANTIZE",
    "ABS",
    "RSQRT",
    "EXP",
}


def _constant(graph: TfliteGraph, op: Operator, position: int) -> list[int]:
    tensor = graph.input(op, position)
    if tensor is None or tensor.data is None:
        raise NotCovered(op, f"input {position} that is not constant (needed for its shape)")
    return [int(v) for v in tensor.data.reshape(-1)]


def _space_to_batch(graph: TfliteGraph, op: Operator, x: Shape) -> Shape:
    blocks, pads = _constant(graph, op, 1), _constant(graph, op, 2)
    spatial = [(x[1 + i] + pads[2 * i] + pads[2 * i + 1]) // b for i, b in enumerate(blocks)]
    return (x[0] * math.prod(blocks), *spatial, *x[1 + len(blocks) :])


def _batch_to_space(graph: TfliteGraph, op: Operator, x: Shape) -> Shape:
    blocks, crops = _constant(graph, op, 1), _constant(graph, op, 2)
    spatial = [x[1 + i] * b - crops[2 * i] - crops[2 * i + 1] for i, b in enumerate(blocks)]
    return (x[0] // math.prod(blocks), *spatial, *x[1 + len(blocks) :])


def _reshape(graph: TfliteGraph, op: Operator, x: Shape) -> Shape:
    target = _constant(graph, op, 1) if len(op.inputs) > 1 else [int(v) for v in op.options.get("NewShape", [])]
    if -1 not in target:
        return tuple(target)
    known = math.prod(v for v in target if v != -1)
    return tuple(math.prod(x) // known if v == -1 else v for v in target)


def _expand_dims(graph: TfliteGraph, op: Operator, x: Shape) -> Shape:
    axis = _constant(graph, op, 1)[0]
    axis = axis if axis >= 0 else len(x) + 1 + axis
    return (*x[:axis], 1, *x[axis:])


def settle_shapes(graph: TfliteGraph) -> TfliteGraph:
    """The graph with every tensor's shape as TFLite computes it at Prepare (the same graph when
    the converter's shapes hold, which they do without SPACE_TO_BATCH_ND)."""
    shapes: dict[int, Shape] = {t.index: t.shape for t in graph.tensors}
    settled: set[int] = set()
    for op in graph.operators:
        first = op.inputs[0] if op.inputs else -1
        x = shapes.get(first, ())
        declared = graph.tensors[op.outputs[0]].shape if op.outputs else ()
        if op.op == "SPACE_TO_BATCH_ND":
            out = _space_to_batch(graph, op, x)
        elif not any(i in settled for i in op.inputs):
            continue
        elif op.op == "BATCH_TO_SPACE_ND":
            out = _batch_to_space(graph, op, x)
        elif op.op in _SAME_SHAPE:
            out = x
        elif op.op == "RESHAPE":
            out = _reshape(graph, op, x)
        elif op.op == "EXPAND_DIMS":
            out = _expand_dims(graph, op, x)
        elif op.op in ("CONV_2D", "DEPTHWISE_CONV_2D", "MAX_POOL_2D", "AVERAGE_POOL_2D"):
            out = (x[0], *declared[1:])  # only the batch is stale
        else:
            raise NotCovered(op, "an input whose static shape the converter left stale (after SPACE_TO_BATCH_ND)")
        if out != declared:
            shapes[op.outputs[0]] = out
            settled.add(op.outputs[0])
    if not settled:
        return graph
    tensors = [dataclasses.replace(t, shape=shapes[t.index]) if t.index in settled else t for t in graph.tensors]
    return dataclasses.replace(graph, tensors=tensors)
