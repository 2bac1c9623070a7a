"""`profile` and `validate` on every kind of counter: minstret, wallclock, qemu-plugin, systick, none."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from helpers import home_with
from test_cortexm import free_port, qemu_board_args

pytestmark = pytest.mark.integration

MODEL = ("flow", "run", "kws_dscnn", "-b", "tvmaot", "-f", "validate", "-f", "profile")


def latest(home):
    frame = pd.read_csv(home / "sessions" / "latest" / "report.csv")
    return frame.set_index("Target")


def profile_of(home, run):
    return pd.read_csv(home / "sessions" / "latest" / "runs" / str(run) / "postprocess" / "profile.csv")


def test_instruction_and_wallclock_counters(integration_home, mlonmcu):
    code, output = mlonmcu(*MODEL, "-t", "spike", "-t", "host_x86", "-t", "mps2_an385", "-H", integration_home)
    assert code == 0, output
    frame = latest(integration_home)
    assert frame["Counter"].to_dict() == {"spike": "minstret", "host_x86": "wallclock", "mps2_an385": "qemu-plugin"}
    assert (frame["Validation"] == "pass").all()
    assert (frame["Profile Kernels"] > 3).all() and frame["Slowest Kernel"].notna().all()
    for target in ("spike", "mps2_an385"):  # per-kernel instructions add up to (almost) the inference
        row = frame.loc[target]
        assert abs(row["Profile Total"] - row["Run Instructions"]) <= 0.02 * row["Run Instructions"]
        table = profile_of(integration_home, row["Run"])
        assert "Instructions" in table and table["Instructions"].gt(0).all()
    host = profile_of(integration_home, frame.loc["host_x86", "Run"])
    assert "Time [s]" in host and "Instructions" not in host


def test_systick_fallback_without_the_plugin(integration_home, mlonmcu, tmp_path):
    """No qemu_plugin installed: instructions from SysTick under -icount, to one tick (40 on AN385)."""
    code, _ = mlonmcu(*MODEL, "-t", "mps2_an385", "-H", integration_home)
    exact = latest(integration_home).loc["mps2_an385", "Run Instructions"]
    env = yaml.safe_load((integration_home / "environment.yml").read_text())
    paths = {**env["paths"], "deps": str(tmp_path / "deps"), "cache": str(tmp_path / "cache")}  # no plugin
    home = home_with(integration_home, tmp_path, paths=paths)
    code, output = mlonmcu(*MODEL, "-t", "mps2_an385", "-H", home)
    assert code == 0, output
    row = latest(home).loc["mps2_an385"]
    assert row["Counter"] == "systick" and row["Validation"] == "pass"
    # a tick at each end of the region, plus the two firmwares' different counter-reading code
    assert abs(row["Run Instructions"] - exact) <= 3 * 40
    assert row["Profile Kernels"] > 3 and row["Profile Total"] > 0


def test_profile_where_nothing_is_counted(integration_home, mlonmcu):
    """A board without a usable cycle counter (QEMU playing one): validated, and no figure invented."""
    code, output = mlonmcu(*MODEL, *qemu_board_args(free_port()), "-H", integration_home)
    assert code == 0, output
    row = latest(integration_home).loc["board"]
    assert row["Counter"] == "none" and row["Validation"] == "pass"
    assert "measured nothing" in row["Profile"] and pd.isna(row["Profile Total"])
