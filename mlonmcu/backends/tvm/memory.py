"""Liveness-based packing of every activation (inputs, intermediates, outputs) into one arena.

StaticPlanBlockMemory reuses storage blocks but lays them back to back; here each tensor gets
the lowest offset that does not overlap a tensor alive at the same time (greedy, largest
first), which is close to the lower bound: the largest set of tensors live at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlonmcu.backends.tvm.plan import AotPlan, TensorRef

ALIGN = 16


@dataclass(frozen=True)
class Lifetime:
    key: tuple[str, int]  # (region, index) of the underlying buffer; aliases share it
    size: int
    first: int  # index of the first kernel call that touches it (-1: model input)
    last: int  # index of the last kernel call that reads it (len(calls): model output)


def _align(value: int) -> int:
    return (value + ALIGN - 1) // ALIGN * ALIGN


def lifetimes(plan: AotPlan) -> list[Lifetime]:
    end = len(plan.calls)
    first: dict[tuple[str, int], int] = {}
    last: dict[tuple[str, int], int] = {}
    size: dict[tuple[str, int], int] = {}
    for ref in plan.inputs:
        key = (ref.region, ref.index)
        first[key], last[key], size[key] = -1, -1, ref.nbytes
    for ref in plan.allocs:
        size[(ref.region, ref.index)] = ref.nbytes
    for i, call in enumerate(plan.calls):
        for arg in call.args:
            if isinstance(arg, TensorRef) and arg.region in ("input", "alloc"):
                key = (arg.region, arg.index)
                first.setdefault(key, i)
                last[key] = i
    for ref in plan.outputs:
        if ref.region in ("input", "alloc"):
            key = (ref.region, ref.index)
            first.setdefault(key, end)
            last[key] = end
    return [Lifetime(k, size[k], first[k], last[k]) for k in first]


def lower_bound(lives: list[Lifetime]) -> int:
    """Bytes of the largest set of tensors alive at the same time."""
    points = sorted({t for life in lives for t in (life.first, life.last)})
    return max((sum(lf.size for lf in lives if lf.first <= t <= lf.last) for t in points), default=0)


def _place(lives: list[Lifetime]) -> tuple[dict[tuple[str, int], int], int]:
    """Greedy: each tensor at the lowest offset free during its whole lifetime, in list order."""
    placed: list[tuple[int, int, Lifetime]] = []  # (offset, end, life)
    offsets: dict[tuple[str, int], int] = {}
    for life in lives:
        busy = sorted(
            (start, stop) for start, stop, other in placed if other.first <= life.last and life.first <= other.last
        )
        offset = 0
        for start, stop in busy:
            if offset + life.size <= start:
                break
            offset = max(offset, _align(stop))
        offsets[life.key] = offset
        placed.append((offset, offset + life.size, life))
    arena = max((stop for _, stop, _ in placed), default=0)
    return offsets, _align(arena)


_ORDERS = (
    lambda lf: (-lf.size, lf.first),  # largest first
    lambda lf: (lf.first, -lf.size),  # in execution order
    lambda lf: (-(lf.last - lf.first), -lf.size),  # longest-lived first
    lambda lf: (-lf.size * (lf.last - lf.first + 1), lf.first),  # biggest area first
)


def pack(lives: list[Lifetime]) -> tuple[dict[tuple[str, int], int], int]:
    """Offsets per buffer and the arena size: the best of a few greedy placement orders."""
    return min((_place(sorted(lives, key=order)) for order in _ORDERS), key=lambda result: result[1])
