"""Read the lowered Relax `main` into an AOT plan: buffers, kernel calls, constants, I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlonmcu.errors import StageError

# `main` attribute: the byte each state parameter (the last ones) starts as — see AotPlan.states
STATE_ATTR = "mlonmcu_state_fill"
_IGNORED_OPS = {"relax.memory.kill_storage", "relax.memory.kill_tensor", "relax.null_value"}
_ALIAS_OPS = {"relax.reshape", "relax.memory.view"}


@dataclass(frozen=True)
class TensorRef:
    """Where a tensor's data lives: a region ('input', 'alloc', 'const', 'state'), an index and a
    byte offset."""

    region: str
    index: int
    offset: int
    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass
class KernelCall:
    kernel: str
    args: list[TensorRef | str]  # tensors, or C literals for scalar arguments


@dataclass
class AotPlan:
    allocs: list[TensorRef] = field(default_factory=list)  # builtin.alloc_tensor buffers
    inputs: list[TensorRef] = field(default_factory=list)
    outputs: list[TensorRef] = field(default_factory=list)
    constants: list[np.ndarray] = field(default_factory=list)
    calls: list[KernelCall] = field(default_factory=list)
    # Tensors kept from one inference to the next (a recurrent operator's state, which its kernel
    # updates in place): outside the arena, set to their fill byte once, at model init.
    states: list[tuple[TensorRef, int]] = field(default_factory=list)


def _ints(shape_expr: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in shape_expr.values)


def _dtype(generic: Any) -> str:
    return str(generic.value)


def _tensor_type(var: Any) -> tuple[str, tuple[int, ...]]:
    ty = var.ty
    return str(ty.dtype), tuple(int(v) for v in ty.shape.values)


class _Reader:
    def __init__(self) -> None:
        self.plan = AotPlan()
        # relax var → TensorRef | tuple; a list because relax vars overload ==
        self.values: list[tuple[Any, Any]] = []
        self.constant_exprs: list[tuple[Any, int]] = []

    def lookup(self, var: Any) -> Any:
        for key, value in reversed(self.values):
            if key.same_as(var):
                return value
        raise StageError(f"tvmaot: unbound variable '{var.name}' in the lowered model")

    def bind(self, var: Any, value: Any) -> None:
        self.values.append((var, value))

    def constant(self, const: Any) -> TensorRef:
        for known, index in self.constant_exprs:
            if known.same_as(const):
                data = self.plan.constants[index]
                return TensorRef("const", index, 0, str(data.dtype), tuple(data.shape))
        data = const.value.numpy()
        index = len(self.plan.constants)
        self.plan.constants.append(data)
        self.constant_exprs.append((const, index))
        return TensorRef("const", index, 0, str(data.dtype), tuple(data.shape))

    def argument(self, arg: Any) -> TensorRef | str:
        import tvm
        from tvm import relax, tirx

        if isinstance(arg, tvm.ir.expr.Var):
            value = self.lookup(arg)
            if not isinstance(value, TensorRef):
                raise StageError(f"tvmaot: kernel argument '{arg.name}' is not a tensor")
            return value
        if isinstance(arg, tvm.ir.expr.GenericConst) and hasattr(arg.value, "numpy"):
            return self.constant(arg)
        if isinstance(arg, tirx.IntImm):
            return str(int(arg.value))
        if isinstance(arg, tirx.FloatImm):
            return f"{float(arg.value)!r}"
        if isinstance(arg, relax.ShapeExpr):
            raise StageError("tvmaot: kernels with shape arguments (dynamic shapes) are not supported")
        raise StageError(f"tvmaot: unsupported kernel argument {type(arg).__name__}")

    def call(self, var: Any, call: Any) -> None:
        import tvm

        op = call.op
        if isinstance(op, tvm.ir.GlobalVar):
            self.plan.calls.append(KernelCall(op.name_hint, [self.argument(a) for a in call.args]))
            return
        name = getattr(op, "name", str(op))
        if name == "relax.builtin.alloc_tensor":
            ref = TensorRef("alloc", len(self.plan.allocs), 0, _dtype(call.args[1]), _ints(call.args[0]))
            self.plan.allocs.append(ref)
            self.bind(var, ref)
        elif name in _ALIAS_OPS:
            source = self.lookup(call.args[0])
            dtype, shape = _tensor_type(var)
            self.bind(var, TensorRef(source.region, source.index, source.offset, dtype, shape))
        elif name not in _IGNORED_OPS:
            raise StageError(f"tvmaot: operator '{name}' was not lowered to a kernel (unsupported)")

    def read(self, main: Any) -> AotPlan:
        import tvm
        from tvm import relax

        fills = [int(v) for v in main.attrs[STATE_ATTR]] if main.attrs and STATE_ATTR in main.attrs else []
        first_state = len(main.params) - len(fills)
        for position, param in enumerate(main.params):
            dtype, shape = _tensor_type(param)
            if position < first_state:
                ref = TensorRef("input", len(self.plan.inputs), 0, dtype, shape)
                self.plan.inputs.append(ref)
            else:
                ref = TensorRef("state", len(self.plan.states), 0, dtype, shape)
                self.plan.states.append((ref, fills[position - first_state]))
            self.bind(param, ref)
        for block in main.body.blocks:
            for binding in block.bindings:
                var, value = binding.var, binding.value
                if isinstance(value, relax.Call):
                    self.call(var, value)
                elif isinstance(value, tvm.ir.expr.Var):
                    self.bind(var, self.lookup(value))
                elif isinstance(value, relax.Tuple):
                    self.bind(var, tuple(self.lookup(f) for f in value.fields))
                elif isinstance(value, relax.TupleGetItem):
                    self.bind(var, self.lookup(value.tuple_value)[value.index])
                elif isinstance(value, tvm.ir.expr.GenericConst) and hasattr(value.value, "numpy"):
                    self.bind(var, self.constant(value))
                else:
                    raise StageError(f"tvmaot: unsupported binding {type(value).__name__} in the lowered model")
        result = main.body.body
        if isinstance(result, relax.Tuple):
            outputs = [self.argument(f) for f in result.fields]
        else:
            value = self.lookup(result)
            outputs = list(value) if isinstance(value, tuple) else [value]
        self.plan.outputs = [o for o in outputs if isinstance(o, TensorRef)]
        return self.plan


def read_plan(main: Any) -> AotPlan:
    return _Reader().read(main)
