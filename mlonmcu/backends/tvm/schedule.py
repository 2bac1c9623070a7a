"""A schedule for every kernel so that no scratch buffer lands on the MCU's stack.

TVM's default lowering materialises each fused op's intermediates (padding, conv accumulator,
epilogue steps) as full-size local arrays: up to 300 KB of stack for one conv. Inlining the
injective blocks and computing the epilogue under the reduction's spatial loops shrinks the
accumulator to one element.
"""

from __future__ import annotations

import itertools
from typing import Any

from mlonmcu.backends.tvm.kernel_info import ATTR_OPS


def _leading_spatial(dom_kind: str) -> int:
    return len(dom_kind) - len(dom_kind.lstrip("S"))


def _inline_injective(sch: Any) -> None:
    from tvm.s_tir.dlight import normalize_prim_func

    changed = True
    while changed:
        changed = False
        for info in normalize_prim_func(sch) or []:
            if not info.is_injective() or _reduces(sch, info.block_rv):
                continue
            primitives = [sch.compute_inline]
            # an epilogue inlined into a reduction with an init statement (after normalisation a
            # matmul with K = 1 is one) lands in the init too: relu(bias) + x·w + bias
            if not any(_reduces(sch, producer) for producer in sch.get_producers(info.block_rv)):
                primitives.append(sch.reverse_compute_inline)
            for primitive in primitives:
                try:
                    primitive(info.block_rv)
                except Exception:  # the primitive's preconditions are checked by trying it
                    continue
                changed = True
                break
            if changed:
                break


def _reduces(sch: Any, block_rv: Any) -> bool:
    return sch.get(block_rv).init is not None


def _fuse_epilogues(sch: Any) -> None:
    from tvm.s_tir.dlight import normalize_prim_func

    infos = normalize_prim_func(sch) or []
    for producer, consumer in itertools.pairwise(infos):
        if producer.is_injective() or not consumer.is_injective():
            continue
        spatial = _leading_spatial(producer.dom_kind())
        if spatial == 0:
            continue
        loops = sch.get_loops(producer.block_rv)
        try:
            sch.reverse_compute_at(consumer.block_rv, loops[spatial - 1], preserve_unit_loops=True)
        except Exception:  # e.g. softmax: the consumer also needs other reductions' results
            continue


def schedule_for_mcu(func: Any) -> Any:
    from tvm import s_tir
    from tvm.s_tir.dlight import normalize_prim_func

    if func.attrs is not None and ATTR_OPS in func.attrs:
        return func  # written loop by loop by the integer lowering: already scheduled
    sch = s_tir.Schedule(func)
    if normalize_prim_func(sch) is None:
        return func
    _inline_injective(sch)
    _fuse_epilogues(sch)
    return sch.mod["main"]
