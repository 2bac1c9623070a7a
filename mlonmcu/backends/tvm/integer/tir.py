"""Small helpers for writing kernels with TVM's IRBuilder (TIR without blocks)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from mlonmcu.backends.tvm.kernel_info import ATTR_MACS, ATTR_OPS

OPAQUE = 8  # relax OpPatternKind.kOpaque: never fused with neighbours


def kernel_attrs(ops: Sequence[str], macs: int) -> dict[str, Any]:
    return {"tirx.noalias": True, "op_pattern": OPAQUE, ATTR_OPS: list(ops), ATTR_MACS: int(macs)}


def i32(value: Any) -> Any:
    from tvm import tirx

    return tirx.Cast("int32", value) if not isinstance(value, int) else tirx.const(value, "int32")


def clamp(value: Any, low: int, high: int) -> Any:
    from tvm import tirx

    return tirx.Min(tirx.Max(value, tirx.const(low, "int32")), tirx.const(high, "int32"))


def store_int8(buffer: Any, value: Any, indices: list[Any]) -> None:
    from tvm import tirx
    from tvm.script.ir_builder import tirx as T

    T.buffer_store(buffer, tirx.Cast("int8", value), indices)


@contextmanager
def prim_func(name: str, ops: Sequence[str], macs: int) -> Iterator[None]:
    """An IRBuilder PrimFunc for a kernel: declare its arguments, then open `root_block()`."""
    from tvm.script.ir_builder import tirx as T

    with T.prim_func(s_tir=True):
        T.func_name(name)
        T.func_attr(kernel_attrs(ops, macs))
        yield


def root_block() -> Any:
    """The kernel body lives in a root block: Relax passes (e.g. reshape detection) expect one."""
    from tvm.script.ir_builder import tirx as T

    return T.sblock("root")


def accumulators(count: int) -> Any:
    from tvm.script.ir_builder import tirx as T

    return T.sblock_alloc_buffer((count,), "int32")


def flat_view(arg: Any, shape: tuple[int, ...], dtype: str = "int8") -> Any:
    """A 1-D view of a parameter declared with the tensor's true shape (call_tir checks shapes)."""
    from tvm.script.ir_builder import tirx as T

    size = 1
    for dim in shape:
        size *= int(dim)
    return T.decl_buffer((size,), dtype, data=arg.data)


def local(value: Any, dtype: str) -> Any:
    """A C local holding `value`. Unlike a let binding it is opaque to TVM's arithmetic analyzer,
    which otherwise re-expands long fixed-point chains (minutes per kernel in FlattenBuffer)."""
    from tvm.script.ir_builder import tirx as T

    slot = T.alloc_buffer((1,), dtype)
    T.buffer_store(slot, value, [0])
    return slot[0]
