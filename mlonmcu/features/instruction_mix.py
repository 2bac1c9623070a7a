"""Feature `instruction_mix`: how many loads, stores, multiplies, MACs, branches (taken or not),
SIMD/vector and CSR instructions one inference executes — and, with `profile`, each kernel.

The counts come from mlonmcu's QEMU plugin (templates/qemu_plugin/mlonmcu_insn.c), which puts
every executed instruction in a class; the feature only groups the classes of both architectures
into the report's Mix columns and writes the per-kernel table to postprocess/instruction_mix.csv.
It needs a target that runs the plugin: qemu_rv32 (the ELF Spike runs) and the QEMU Cortex-M
boards. A run that took place before the feature was asked for needs no re-run: the plugin
always counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlonmcu.contracts import KernelInfo, Measurement, PostprocessInput
from mlonmcu.features.feature import Feature
from mlonmcu.features.profile import kernel_of
from mlonmcu.report import columns as col

MIX_FILE = "instruction_mix.csv"
# the plugin's classes (both architectures) in the report's groups; conditional branches are
# counted by outcome, so `branch` minus its outcomes is what jumps unconditionally (Arm's b)
GROUPS: dict[str, tuple[str, ...]] = {
    col.MIX_ALU: ("alu",),
    col.MIX_LOAD: ("load", "load_pipelined", "load_double"),
    col.MIX_STORE: ("store", "store_pipelined", "store_double"),
    col.MIX_MULTIPLE: ("multiple",),
    col.MIX_MUL: ("mul", "mulh", "long_mul"),
    col.MIX_MAC: ("mac", "long_mac", "dsp_mul"),
    col.MIX_DIV: ("div",),
    col.MIX_BRANCH_TAKEN: ("cond_taken",),
    col.MIX_BRANCH_NOT_TAKEN: ("cond_not_taken",),
    col.MIX_JUMP: ("jump", "call", "table_branch", "branch"),
    col.MIX_SIMD: ("dsp", "vector"),
    col.MIX_CSR: ("csr",),
    col.MIX_FP: ("fp", "fp_mac", "fp_div", "fp_memory", "fp_multiple"),
    col.MIX_OTHER: ("system",),
}
NOT_COUNTED = "not counted here: QEMU targets only (qemu_rv32 runs spike's ELF; `mlonmcu setup qemu_plugin`)"


def grouped(counts: Mapping[str, int]) -> dict[str, int]:
    """The report's Mix groups of one region's class counts."""
    groups = {name: sum(counts.get(c, 0) for c in classes) for name, classes in GROUPS.items()}
    groups[col.MIX_JUMP] -= counts.get("cond_taken", 0) + counts.get("cond_not_taken", 0)
    return groups


def summary(groups: Mapping[str, int], shown: int = 4) -> str:
    """`Load 31%, Mul 24%, ALU 20%, Store 9%`: the largest groups' shares of the instructions."""
    total = sum(groups.values())
    if not total:
        return ""
    largest = sorted(groups.items(), key=lambda item: -item[1])[:shown]
    return ", ".join(f"{name.removeprefix('Mix ')} {100 * count / total:.0f}%" for name, count in largest if count)


def mean_counts(measured: tuple[Measurement, ...]) -> dict[str, float]:
    names = sorted({name for m in measured for name, _ in m.events})
    return {name: sum(m.event_counts().get(name, 0) for m in measured) / len(measured) for name in names}


def kernel_rows(kernels: tuple[KernelInfo, ...], profile: tuple[Measurement, ...]) -> list[dict[str, Any]]:
    rows = []
    for entry in profile:
        if not entry.events:
            continue
        index, info = kernel_of(kernels, entry)
        counts = grouped(entry.event_counts())
        rows.append({"Index": index, "Kernel": info.name, "Instructions": entry.instructions, **counts})
    return rows


class InstructionMixFeature(Feature):
    name = "instruction_mix"
    help = (
        "executed instructions per class (load, store, mul, MAC, branch taken/not taken, SIMD, CSR, ...) "
        "per inference, and per kernel with -f profile (postprocess/instruction_mix.csv); QEMU targets"
    )

    def postprocess(self, inp: PostprocessInput) -> dict[str, Any]:
        first = tuple(m for m in inp.harness.first_sample() if m.events)
        if not first:
            return {col.INSTRUCTION_MIX: NOT_COUNTED}
        groups = grouped({k: round(v) for k, v in mean_counts(first).items()})
        rows = [{"Index": "", "Kernel": "(inference)", "Instructions": sum(groups.values()), **groups}]
        rows += kernel_rows(inp.kernels, inp.harness.profile)
        import pandas as pd

        pd.DataFrame(rows).to_csv(inp.out_dir / MIX_FILE, index=False)
        return {col.INSTRUCTION_MIX: summary(groups), **groups}
