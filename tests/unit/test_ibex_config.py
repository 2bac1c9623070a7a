"""Ibex configurations → simple_system parameters and the firmware's ISA (mlonmcu/setup/ibex.py)."""

from __future__ import annotations

import pytest

from mlonmcu.errors import SetupError
from mlonmcu.setup import ibex

CONFIGS = """
small:
  BaseIsa: "ibex_pkg::BaseIsaRV32I"
  RV32E: 0
  RV32M: "ibex_pkg::RV32MFast"
  RV32B: "ibex_pkg::RV32BNone"
tiny:
  RV32E: 1
  RV32M: "ibex_pkg::RV32MNone"
  RV32B: "ibex_pkg::RV32BBalanced"
"""
CORE = """CAPI=2:
name: "lowrisc:ibex:ibex_simple_system"
parameters:
  RV32E: {datatype: int}
  RV32M: {datatype: str}
  RV32B: {datatype: str}
"""


@pytest.fixture
def checkout(tmp_path):
    (tmp_path / ibex.CONFIGS_FILE).write_text(CONFIGS)
    core = tmp_path / ibex.CORE_FILE
    core.parent.mkdir(parents=True)
    core.write_text(CORE)
    return tmp_path


def test_parameters_are_those_simple_system_takes(checkout):
    params = ibex.parameters(checkout, "small")
    assert "BaseIsa" not in params and params["RV32M"] == "ibex_pkg::RV32MFast"
    assert ibex.isa(params) == ("rv32imc", "ilp32")
    assert ibex.isa(ibex.parameters(checkout, "tiny")) == ("rv32ec_zba_zbb_zbs", "ilp32e")


def test_unknown_configuration_lists_the_known_ones(checkout):
    with pytest.raises(SetupError, match=r"no configuration 'huge'.*known: small, tiny"):
        ibex.parameters(checkout, "huge")


def test_memory_patch_refuses_an_unknown_simple_system(tmp_path):
    rtl = tmp_path / "lowrisc_ibex_ibex_simple_system_core_0" / "rtl" / "ibex_simple_system.sv"
    rtl.parent.mkdir(parents=True)
    rtl.write_text("module ibex_simple_system; endmodule\n")
    with pytest.raises(SetupError, match="not the simple_system this mlonmcu knows"):
        ibex._patch_memory(tmp_path, 4 << 20)


def test_the_model_is_built_without_waveform_tracing(tmp_path):
    config_mk = tmp_path / "config.mk"
    config_mk.write_text(
        "VERILATOR_OPTIONS := -DX --trace --trace-fst --trace-structs --trace-params --trace-max-array 1024 "
        '-CFLAGS "-std=c++17 -DVM_TRACE_FMT_FST -DTOP=x -g" -Wall\n'
    )
    ibex._without_tracing(config_mk, tmp_path / "log")
    assert config_mk.read_text() == 'VERILATOR_OPTIONS := -DX -CFLAGS "-std=c++17 -DTOP=x" -Wall\n'
    assert "without waveform tracing" in (tmp_path / "log").read_text()
