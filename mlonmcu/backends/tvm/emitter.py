"""AotEmitter: the AOT plan + kernel source → driver, constants and kernels as C files."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from mlonmcu.backends.tvm.memory import lifetimes, lower_bound, pack
from mlonmcu.backends.tvm.plan import AotPlan, TensorRef
from mlonmcu.errors import StageError
from mlonmcu.platforms.templates import render

C_TYPES = {
    "float32": "float",
    "float64": "double",
    "int8": "int8_t",
    "uint8": "uint8_t",
    "int16": "int16_t",
    "uint16": "uint16_t",
    "int32": "int32_t",
    "uint32": "uint32_t",
    "int64": "int64_t",
    "uint64": "uint64_t",
    "bool": "bool",
}
_PROTOTYPE = re.compile(r"^(?:void|int32_t) tvmgen_\w+\([^;{]*\);$")
SOURCES = ("model.c", "tvmaot_kernels.c")


def c_type(dtype: str) -> str:
    try:
        return C_TYPES[dtype]
    except KeyError:
        raise StageError(f"tvmaot: data type {dtype} has no C equivalent here") from None


def _float_literal(value: float, suffix: str) -> str:
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "-INFINITY"
    return value.hex() + suffix  # exact: C99 hexadecimal floating constants


def c_values(array: np.ndarray, per_line: int = 12) -> list[str]:
    flat = array.reshape(-1)
    kind = flat.dtype.kind
    if kind == "f":
        suffix = "f" if flat.dtype == np.float32 else ""
        items = [_float_literal(v, suffix) for v in flat.astype(np.float64).tolist()]
    elif kind == "b":
        items = ["1" if v else "0" for v in flat.tolist()]
    elif flat.dtype == np.int64:
        items = [f"INT64_C({v})" for v in flat.tolist()]
    else:
        items = [str(v) for v in flat.tolist()]
    return [", ".join(items[i : i + per_line]) + "," for i in range(0, len(items), per_line)]


class AotEmitter:
    def __init__(self, model: str, plan: AotPlan, kernel_source: str):
        self.model = model
        self.plan = plan
        self.kernel_source = kernel_source
        lives = lifetimes(plan)
        self.lower_bound = lower_bound(lives)
        self.offsets, self.arena_size = pack(lives)

    def pointer(self, ref: TensorRef) -> str:
        ctype = c_type(ref.dtype)
        if ref.region in ("const", "state"):
            return f"({ctype} *)mlonmcu_{ref.region}_{ref.index}"
        return f"({ctype} *)(mlonmcu_arena + {self.offsets[(ref.region, ref.index)] + ref.offset})"

    def argument(self, arg: TensorRef | str) -> str:
        return arg if isinstance(arg, str) else self.pointer(arg)

    def emit(self, out: Path) -> dict[str, Any]:
        plan = self.plan
        render(
            "tvmaot/model.c.j2",
            out / "model.c",
            model=self.model,
            arena_size=self.arena_size,
            calls=[{"kernel": f"tvmgen_{c.kernel}", "args": [self.argument(a) for a in c.args]} for c in plan.calls],
            inputs=[{"pointer": self.pointer(r), "nbytes": r.nbytes} for r in plan.inputs],
            outputs=[{"pointer": self.pointer(r), "nbytes": r.nbytes} for r in plan.outputs],
            states=[{"ctype": c_type(r.dtype), "nbytes": r.nbytes, "fill": fill & 0xFF} for r, fill in plan.states],
        )
        render(
            "tvmaot/tvmaot_constants.inc.j2",
            out / "tvmaot_constants.inc",
            constants=[
                {
                    "ctype": c_type(str(a.dtype)),
                    "name": f"mlonmcu_const_{i}",
                    "count": max(1, a.size),
                    "lines": c_values(a) if a.size else ["0,"],
                }
                for i, a in enumerate(plan.constants)
            ],
        )
        prototypes = [line for line in self.kernel_source.splitlines() if _PROTOTYPE.match(line.strip())]
        render("tvmaot/tvmaot_kernels.h.j2", out / "tvmaot_kernels.h", prototypes=prototypes)
        body = "\n".join(line for line in self.kernel_source.splitlines() if not _PROTOTYPE.match(line.strip()))
        render("tvmaot/tvmaot_kernels.c.j2", out / "tvmaot_kernels.c", source=body)
        return {
            "arena_size": self.arena_size,
            "arena_lower_bound": self.lower_bound,
            "constants_bytes": int(sum(a.nbytes for a in plan.constants)),
            "state_bytes": sum(r.nbytes for r, _ in plan.states),
            "kernels": len(plan.calls),
        }
