"""Firmware that crashes or hangs: the run fails with a clear reason, the others finish (real simulators)."""

from __future__ import annotations

import pandas as pd
import pytest
from helpers import FakeFirmwareBackend, home_with

from mlonmcu.registry import BACKENDS

pytestmark = pytest.mark.integration


class MisbehavingBackend(FakeFirmwareBackend):
    """Test firmware that implements the C API but crashes or hangs in inference."""

    body = ""

    def run_body(self) -> str:
        return self.body


@BACKENDS.register
class CrashingBackend(MisbehavingBackend):
    name = "crashing"
    body = "__builtin_trap(); return 0;"  # ebreak on RISC-V, SIGILL on the host


@BACKENDS.register
class HangingBackend(MisbehavingBackend):
    name = "hanging"
    body = 'for (;;) { __asm__ volatile(""); } return 0;'


def test_crashing_firmware(integration_home, mlonmcu, tmp_path):
    home = home_with(integration_home, tmp_path, backends=["tvmaot", "crashing"])
    code, output = mlonmcu(
        "flow",
        "run",
        "kws_dscnn_fp32",
        "-b",
        "crashing",
        "-b",
        "tvmaot",
        "-t",
        "spike",
        "-t",
        "host_x86",
        "-H",
        home,
    )
    assert code == 1, output
    frame = pd.read_csv(home / "sessions" / "latest" / "report.csv")
    crashed = frame[frame.Backend == "crashing"].set_index("Target")
    assert crashed.loc["spike", "Reason"].startswith("firmware crashed: trap mcause=0x00000003")  # ebreak
    assert "without finishing" in crashed.loc["host_x86", "Reason"]  # SIGILL on the host
    assert not frame[frame.Backend == "tvmaot"]["Failing"].any()


def test_hung_simulator_is_killed(integration_home, mlonmcu, tmp_path):
    home = home_with(integration_home, tmp_path, backends=["hanging", "tvmaot"])
    code, _ = mlonmcu(
        "flow",
        "run",
        "kws_dscnn_fp32",
        "-b",
        "hanging",
        "-b",
        "tvmaot",
        "-t",
        "spike",
        "-t",
        "qemu_rv32",
        "-c",
        "spike.timeout=3",
        "-c",
        "qemu_rv32.timeout=3",
        "-H",
        home,
    )
    assert code == 1
    frame = pd.read_csv(home / "sessions" / "latest" / "report.csv")
    hung = frame[frame.Backend == "hanging"].set_index("Target")
    for target in ("spike", "qemu_rv32"):
        assert hung.loc[target, "Reason"].startswith("timeout"), hung.loc[target, "Reason"]
        assert hung.loc[target, "Total ROM"] > 0  # what COMPILE produced is kept
    assert not frame[frame.Backend == "tvmaot"]["Failing"].any()
