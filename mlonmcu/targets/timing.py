"""Per-instruction-class cycle timings of Cortex-M cores, for QEMU's estimated cycles.

QEMU models no time. With `<board>.estimate_cycles=1`, mlonmcu's plugin puts every executed
instruction in a class by its mnemonic and adds the class's cycles from the table here (see
templates/qemu_plugin/mlonmcu_insn.c; docs/arm-simd.md has the table, its sources and what an
estimate like this cannot see). Only cores whose technical reference manual publishes an
instruction timing table have one: the Cortex-M3 (ARM DDI 0337, Table 3-1) and the Cortex-M4
(ARM DDI 0439, Table 3-1). Where the manual gives a range, the middle of it is taken, rounded up.
"""

from __future__ import annotations

from pathlib import Path

from mlonmcu.atomic import write_text

# cycles of one instruction of each class; `multiple` and `fp_multiple` cost that plus one per
# register in the list, `call`/`table_branch`/`b` plus `refill`, a taken conditional branch
# `branch` plus `refill`; `pipelined`: a single load/store right after another (both TRMs: the
# two pipeline their address and data phases)
_M4 = {
    "alu": 1,
    "mul": 1,
    "mac": 1,  # MLA, MLS
    "long_mul": 1,  # SMULL, UMULL
    "long_mac": 1,  # SMLAL, UMLAL
    "dsp_mul": 1,  # SMLAD, SMLABB, SMMUL, ...
    "div": 7,  # SDIV/UDIV: 2 to 12 (early termination)
    "load": 2,
    "store": 2,
    "load_double": 3,  # LDRD: 1 + N, N = 2
    "store_double": 3,
    "multiple": 1,  # LDM/STM/PUSH/POP: 1 + N (+ refill when it loads the PC)
    "branch": 1,
    "call": 1,  # BL, BLX, BX: 1 + P
    "table_branch": 2,  # TBB, TBH: 2 + P
    "fp": 1,  # VADD, VMUL, VCVT, VMOV, ...
    "fp_mac": 3,  # VMLA, VFMA, ...
    "fp_div": 14,  # VDIV, VSQRT
    "fp_memory": 2,  # VLDR, VSTR
    "fp_multiple": 1,  # VLDM, VSTM, VPUSH, VPOP: 1 + N
    "refill": 2,  # P, the pipeline refill of a taken branch: 1 to 3
    "pipelined": 1,
}
_M3 = {
    **_M4,
    "mac": 2,
    "long_mul": 4,  # 3 to 5
    "long_mac": 6,  # 4 to 7
}  # the M3 has no DSP or FP instructions: those classes never occur on it

TIMINGS: dict[str, dict[str, int]] = {"cortex-m3": _M3, "cortex-m4": _M4}
SOURCES = {
    "cortex-m3": "ARM DDI 0337 (Cortex-M3 TRM), Table 3-1",
    "cortex-m4": "ARM DDI 0439 (Cortex-M4 TRM), Table 3-1",
}


def check_core(core: str) -> None:
    """ValueError naming the cores that have a table, for a core without one."""
    if core not in TIMINGS:
        raise ValueError(
            f"{core} has no published per-instruction cycle table; estimated cycles exist for "
            f"{', '.join(TIMINGS)} (docs/arm-simd.md)"
        )


def write_table(core: str, path: Path) -> Path:
    """The plugin's timing file: one `<class> <cycles>` line per class."""
    check_core(core)
    return write_text(path, "".join(f"{name} {cycles}\n" for name, cycles in TIMINGS[core].items()))
