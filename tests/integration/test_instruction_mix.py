"""Instruction mix and RISC-V timing models: hand-written loops whose counts are known."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from helpers import FakeFirmwareBackend, home_with

from mlonmcu.registry import BACKENDS

pytestmark = pytest.mark.integration


class RiscvMixBackend(FakeFirmwareBackend):
    """A counted loop of two loads (the second used at once), a multiply, an add, a decrement and
    a taken branch, starting word-aligned."""

    iterations = 0

    def run_body(self) -> str:
        return (
            f"unsigned int n = {self.iterations}, a, b, c, acc = 0;\n"
            '__asm__ volatile(".balign 4\\n1: lw %1, 0(%5)\\n lw %2, 4(%5)\\n mul %3, %1, %2\\n'
            ' add %4, %4, %3\\n addi %0, %0, -1\\n bnez %0, 1b"\n'
            '                 : "+r"(n), "=&r"(a), "=&r"(b), "=&r"(c), "+r"(acc) : "r"(input) : "memory");\n'
            "return 0;"
        )


for _iterations in (1000, 3000):
    BACKENDS.register(
        type(f"RiscvMix{_iterations}", (RiscvMixBackend,), {"name": f"rvmix{_iterations}", "iterations": _iterations})
    )


def latest(home: Path) -> pd.DataFrame:
    return pd.read_csv(home / "sessions" / "latest" / "report.csv")


def test_mix_and_estimates_of_a_known_riscv_loop(integration_home, mlonmcu, tmp_path):
    home = home_with(integration_home, tmp_path, backends=["rvmix1000", "rvmix3000"])
    args = ["flow", "run", "kws_dscnn", "-b", "rvmix1000", "-b", "rvmix3000", "-t", "qemu_rv32", "-t", "spike"]
    args += [
        "-f",
        "instruction_mix",
        "-c",
        "qemu_rv32.timing_model=ibex-small",
        "-c",
        "qemu_rv32.timing_model=ibex-maxperf",
    ]
    code, output = mlonmcu(*args, "-H", home)
    assert code == 0, output
    frame = latest(home)
    qemu = frame[frame.Target == "qemu_rv32"].set_index(["Backend", "Timing Model"]).select_dtypes("number")
    more = qemu.loc["rvmix3000"] - qemu.loc["rvmix1000"]  # 2000 iterations, whatever surrounds them
    for model in ("ibex-small", "ibex-maxperf"):
        row = more.loc[model]
        assert row["Run Instructions"] == 2000 * 6
        expected = {"Mix Load": 4000, "Mix Mul": 2000, "Mix ALU": 4000, "Mix Branch Taken": 2000}
        assert {k: row[k] for k in expected} == expected
        assert row[["Mix Store", "Mix Branch Not Taken", "Mix Jump/Call", "Mix MAC"]].eq(0).all()
    # small: lw 2 + lw 2 + mul 3 + add 1 + addi 1 + taken bnez 3; maxperf: 1 + 1 (+1 load-use) + 1 + 1 + 1 + 2
    assert more.loc["ibex-small", "Estimated Cycles"] == 2000 * 12
    assert more.loc["ibex-maxperf", "Estimated Cycles"] == 2000 * 8
    spike = frame[frame.Target == "spike"]
    assert spike["Run Cycles"].isna().all() and spike["Estimated Cycles"].isna().all()
    assert spike["Instruction Mix"].str.startswith("not counted here").all()
    assert set(spike["Run Instructions"]) == set(qemu["Run Instructions"])  # one ELF, one count
    mix = pd.read_csv(home / "sessions" / "latest" / "runs" / "0" / "postprocess" / "instruction_mix.csv")
    assert mix.loc[0, "Kernel"] == "(inference)" and mix.loc[0, "Mix Load"] >= 2000


def test_a_timing_model_for_a_vector_isa_is_refused(integration_home, mlonmcu):
    code, output = mlonmcu(
        "flow", "run", "kws_dscnn", "-b", "tvmaot", "-t", "qemu_rv32", "-c", "qemu_rv32.arch=rv32gcv",
        "-c", "qemu_rv32.timing_model=ibex-small", "-H", integration_home,
    )  # fmt: skip
    reason = latest(integration_home).iloc[0]["Reason"]
    assert code == 1 and "models an integer core without F, D or V" in reason, output
