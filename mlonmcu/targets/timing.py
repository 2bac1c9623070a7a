"""Timing models: a core's cycles estimated from what mlonmcu's QEMU plugin counts.

QEMU models no time. Its plugin (templates/qemu_plugin/mlonmcu_insn.c) puts every executed
instruction in a class by its mnemonic and counts the events that cost time without being
instructions (taken branches, register lists, load-use pairs, ...). A timing model is one cycle
weight per class and event; the estimate is their weighted sum (Estimated Cycles). Each model
names where its weights come from; docs/timing.md states for each its assumptions, what it
cannot see, and (for Ibex) its error against the RTL.

- Cortex-M3 and M4: the instruction timing tables of their technical reference manuals (ARM DDI
  0337 and 0439, Table 3-1). Where a manual gives a range, the middle of it is taken, rounded up.
- Ibex `small` and `maxperf` (rv32imc): the stall cycles of Ibex's documentation
  (doc/03_reference/pipeline_details.rst) for a memory that answers in the next cycle (its
  simple_system), checked against the cycles its RTL takes (benchmarks/timing_models.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from mlonmcu.contracts import HarnessRecord, Measurement

# what the plugin counts, per guest architecture: instruction classes (each instruction is in
# exactly one) and events
ARM_CLASSES = (
    "alu", "dsp", "vector", "mul", "mac", "long_mul", "long_mac", "dsp_mul", "div", "load", "store",
    "load_pipelined", "store_pipelined", "load_double", "store_double", "multiple", "branch", "call",
    "table_branch", "fp", "fp_mac", "fp_div", "fp_memory", "fp_multiple",
)  # fmt: skip
ARM_EVENTS = ("cond_taken", "cond_not_taken", "list_registers", "refill")
RISCV_CLASSES = ("alu", "csr", "load", "store", "mul", "mulh", "div", "branch", "jump", "vector", "fp", "system")
RISCV_EVENTS = ("cond_taken", "cond_not_taken", "load_use", "unaligned_target")
COUNTED = {"arm": ARM_CLASSES + ARM_EVENTS, "riscv": RISCV_CLASSES + RISCV_EVENTS}


@dataclass(frozen=True)
class TimingModel:
    name: str
    arch: str  # "arm" or "riscv": whose classes it weighs
    source: str
    cycles: Mapping[str, int]  # per class and event

    def estimate(self, counts: Mapping[str, int]) -> int:
        """Estimated cycles of a region from its counts; a class the model has no weight for
        (another architecture's) is an error, never a silent 0."""
        unknown = sorted(set(counts) - set(self.cycles))
        if unknown:
            raise ValueError(f"timing model {self.name} has no cycles for {', '.join(unknown)}")
        return sum(self.cycles[name] * count for name, count in counts.items())


# Cortex-M4: one cycle each unless said; `multiple` and `fp_multiple` cost that plus one per
# register of the list (`list_registers`), a taken branch (b, bl, bx, tbb, pop {..pc}, a taken
# b<cc>) the refill of the pipeline on top (`refill`, P = 1 to 3); a single load/store right after
# another pipelines its address phase (both TRMs): 1 instead of 2
_M4 = {
    "alu": 1,
    "dsp": 1,  # SADD16, SXTB16, PKHBT, ...
    "vector": 1,  # MVE: never on the M3/M4
    "mul": 1,
    "mac": 1,  # MLA, MLS
    "long_mul": 1,  # SMULL, UMULL
    "long_mac": 1,  # SMLAL, UMLAL
    "dsp_mul": 1,  # SMLAD, SMLABB, SMMUL, ...
    "div": 7,  # SDIV/UDIV: 2 to 12 (early termination)
    "load": 2,
    "store": 2,
    "load_pipelined": 1,
    "store_pipelined": 1,
    "load_double": 3,  # LDRD: 1 + N, N = 2
    "store_double": 3,
    "multiple": 1,  # LDM/STM/PUSH/POP: 1 + N
    "branch": 1,
    "call": 1,  # BL, BLX, BX: 1 + P
    "table_branch": 2,  # TBB, TBH: 2 + P
    "fp": 1,  # VADD, VMUL, VCVT, VMOV, ...
    "fp_mac": 3,  # VMLA, VFMA, ...
    "fp_div": 14,  # VDIV, VSQRT
    "fp_memory": 2,  # VLDR, VSTR
    "fp_multiple": 1,  # VLDM, VSTM, VPUSH, VPOP: 1 + N
    "cond_taken": 0,  # its cost is the refill
    "cond_not_taken": 0,
    "list_registers": 1,
    "refill": 2,  # P: 1 to 3
}
_M3 = {**_M4, "mac": 2, "long_mul": 4, "long_mac": 6}  # 3 to 5, 4 to 7; no DSP or FP instructions

# Ibex, 2 stages (small): cycles = 1 + the documented stall. Loads and stores wait a cycle for
# the memory's answer; the fast multiplier takes 2 (MUL) / 3 (MULH*) more; a division 37; a jump
# refetches (1), a taken branch also computes its target in the ALU (2); a 32-bit instruction
# that is not word-aligned needs two fetches after a jump.
_IBEX_SMALL = {
    "alu": 1,
    "csr": 1,
    "load": 2,
    "store": 2,
    "mul": 3,
    "mulh": 4,
    "div": 38,  # 2 when dividing by zero
    "branch": 1,  # not taken
    "jump": 2,
    "vector": 1,  # no V and no F on Ibex: the estimate refuses such an ISA (riscv.py)
    "fp": 1,
    "system": 1,
    "cond_taken": 2,
    "cond_not_taken": 0,
    "load_use": 0,  # the load's data goes straight to the register file
    "unaligned_target": 1,
}
# maxperf: single-cycle multiplier (MULH 1 more), a branch target ALU (a taken branch 1 more),
# and a writeback stage: a load or store leaves ID/EX after one cycle, but the instruction after
# a load that reads its result waits for it (load_use)
_IBEX_MAXPERF = {**_IBEX_SMALL, "load": 1, "store": 1, "mul": 1, "mulh": 2, "cond_taken": 1, "load_use": 1}

_ARM_SOURCE = "Table 3-1 of its technical reference manual"
_IBEX_SOURCE = "Ibex's documented stall cycles (pipeline_details.rst), docs/timing.md"
MODELS: dict[str, TimingModel] = {
    "cortex-m3": TimingModel("cortex-m3", "arm", f"ARM DDI 0337 (Cortex-M3 TRM), {_ARM_SOURCE}", _M3),
    "cortex-m4": TimingModel("cortex-m4", "arm", f"ARM DDI 0439 (Cortex-M4 TRM), {_ARM_SOURCE}", _M4),
    "ibex-small": TimingModel("ibex-small", "riscv", f"Ibex small: {_IBEX_SOURCE}", _IBEX_SMALL),
    "ibex-maxperf": TimingModel("ibex-maxperf", "riscv", f"Ibex maxperf: {_IBEX_SOURCE}", _IBEX_MAXPERF),
}
ARM_CORES = tuple(name for name, model in MODELS.items() if model.arch == "arm")
RISCV_MODELS = tuple(name for name, model in MODELS.items() if model.arch == "riscv")


def check_core(core: str) -> None:
    """ValueError naming the cores that have a table, for a core without one."""
    if core not in ARM_CORES:
        raise ValueError(
            f"{core} has no published per-instruction cycle table; estimated cycles exist for "
            f"{', '.join(ARM_CORES)} (docs/timing.md)"
        )


def with_estimates(record: HarnessRecord, model: TimingModel) -> HarnessRecord:
    """The record with Estimated Cycles for every region the plugin counted."""

    def estimated(m: Measurement) -> Measurement:
        return replace(m, estimated_cycles=model.estimate(m.event_counts())) if m.events else m

    return replace(
        record,
        setup=estimated(record.setup),
        runs=tuple(estimated(m) for m in record.runs),
        profile=tuple(estimated(m) for m in record.profile),
    )
