"""Feature instruction_mix: the plugin's classes of both architectures in the report's groups."""

from __future__ import annotations

from mlonmcu.contracts import HarnessRecord, KernelInfo, Measurement, PostprocessInput
from mlonmcu.features.instruction_mix import NOT_COUNTED, InstructionMixFeature, grouped, summary
from mlonmcu.report import columns as col


def test_groups_partition_the_instructions_of_both_architectures():
    arm = {"alu": 10, "load": 4, "load_pipelined": 2, "dsp_mul": 5, "branch": 6, "call": 1}
    arm |= {"cond_taken": 4, "cond_not_taken": 1, "refill": 9, "list_registers": 3}
    groups = grouped(arm)
    assert groups[col.MIX_LOAD] == 6 and groups[col.MIX_MAC] == 5
    assert (groups[col.MIX_BRANCH_TAKEN], groups[col.MIX_BRANCH_NOT_TAKEN], groups[col.MIX_JUMP]) == (4, 1, 2)
    assert sum(groups.values()) == 10 + 6 + 5 + 6 + 1  # events that are no instructions count nowhere
    riscv = grouped({"alu": 5, "mul": 2, "mulh": 1, "branch": 3, "cond_taken": 2, "cond_not_taken": 1, "load_use": 7})
    assert riscv[col.MIX_MUL] == 3 and riscv[col.MIX_JUMP] == 0 and sum(riscv.values()) == 11
    assert summary(riscv, shown=2) == "ALU 45%, Mul 27%"


def _input(tmp_path, record: HarnessRecord) -> PostprocessInput:
    kernels = (KernelInfo("conv", ("CONV_2D",), 100),)
    return PostprocessInput("m", [], None, "", record, kernels, "minstret", tmp_path)


def test_a_run_without_counts_says_why_and_one_with_them_writes_a_table(tmp_path):
    feature = InstructionMixFeature({})
    plain = HarnessRecord(Measurement(instructions=5), runs=(Measurement(sample=0, instructions=9),))
    assert feature.postprocess(_input(tmp_path, plain)) == {col.INSTRUCTION_MIX: NOT_COUNTED}
    runs = tuple(Measurement(sample=0, instructions=9, events=(("alu", n), ("load", 4))) for n in (5, 7))
    profile = (Measurement(kernel=0, instructions=3, events=(("load", 3),)),)
    cells = feature.postprocess(_input(tmp_path, HarnessRecord(Measurement(), runs=runs, profile=profile)))
    assert cells[col.MIX_ALU] == 6 and cells[col.MIX_LOAD] == 4 and cells[col.INSTRUCTION_MIX] == "ALU 60%, Load 40%"
    table = (tmp_path / "instruction_mix.csv").read_text().splitlines()
    assert table[1].startswith(",(inference),10,6,4") and table[2].startswith("0,conv,3,0,3")
