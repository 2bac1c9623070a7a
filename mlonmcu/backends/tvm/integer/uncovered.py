"""The one error of the direct int8 path: an operator (or parameter set) it has no kernel for."""

from __future__ import annotations

from mlonmcu.models.tflite_graph import Operator


class NotCovered(Exception):
    """Names the operator, its position in the model and what about it is not covered."""

    def __init__(self, op: Operator, why: str = ""):
        super().__init__(f"{op.op} (operator {op.index}){': ' + why if why else ''}")
        self.op = op.op
