"""A read-only view of Relax `main` for pattern matching: definitions, users, constants."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


def op_name(value: Any) -> str:
    import tvm

    if isinstance(value, tvm.relax.Call) and hasattr(value.op, "name"):
        return str(value.op.name)
    return ""


def constant(expr: Any) -> np.ndarray | None:
    """The value of a constant expression (GenericConst holding a tensor, or a float/int imm)."""
    import tvm
    from tvm import tirx

    if isinstance(expr, tvm.ir.expr.GenericConst) and hasattr(expr.value, "numpy"):
        return expr.value.numpy()
    if isinstance(expr, tirx.FloatImm | tirx.IntImm):
        return np.array(expr.value)
    return None


def tensor_type(var: Any) -> tuple[tuple[int, ...], str]:
    ty = var.ty
    return tuple(int(v) for v in ty.shape.values), str(ty.dtype)


@dataclass(frozen=True)
class Quantized:
    """An integer tensor and the (scale, zero point) that dequantize it."""

    value: Any  # a relax Var (activation) or a constant expression
    scale: np.ndarray  # float32, scalar or per-channel
    zero_point: np.ndarray  # int32
    axis: int

    @property
    def per_tensor(self) -> bool:
        return self.scale.size == 1 and self.zero_point.size == 1

    @property
    def scalar_scale(self) -> float:
        return float(self.scale.reshape(-1)[0])

    @property
    def scalar_zero_point(self) -> int:
        return int(self.zero_point.reshape(-1)[0])


class Graph:
    def __init__(self, main: Any):
        import tvm

        self.main = main
        self.bindings = [b for block in main.body.blocks for b in block.bindings]
        self.defs: dict[Any, Any] = {b.var: b.value for b in self.bindings}
        self.users: dict[Any, list[Any]] = {}
        for binding in self.bindings:
            for var in _vars_in(binding.value):
                self.users.setdefault(var, []).append(binding.var)
        outputs = main.body.body
        for var in _vars_in(outputs) if not isinstance(outputs, tvm.ir.expr.Var) else [outputs]:
            self.users.setdefault(var, []).append(None)  # None: the function's result

    def producer(self, expr: Any) -> Any:
        """The call that defines `expr` (following plain variable aliases)."""
        while expr in self.defs and not op_name(self.defs[expr]):
            value = self.defs[expr]
            if value is expr:
                break
            expr = value
        return self.defs.get(expr)

    def call(self, expr: Any, name: str) -> Any:
        value = self.producer(expr)
        return value if op_name(value) == name else None

    def dequantized(self, expr: Any) -> Quantized | None:
        """`expr` = dequantize(x, scale, zero_point): x with its quantization."""
        call = self.call(expr, "relax.dequantize")
        if call is None:
            return None
        scale, zero = constant(call.args[1]), constant(call.args[2])
        if scale is None or zero is None:
            return None
        return Quantized(call.args[0], scale.astype(np.float32), zero.astype(np.int32), int(call.attrs.axis))

    def single_user(self, var: Any) -> Any:
        users = self.users.get(var, [])
        return users[0] if len(users) == 1 else None


def _vars_in(expr: Any) -> list[Any]:
    import tvm
    import tvm_ffi

    found: list[Any] = []

    def visit(node: Any) -> Any:
        found.append(node)
        return node

    tvm_ffi.structural_map(expr, (tvm.ir.expr.Var, visit))
    return found
