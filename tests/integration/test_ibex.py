"""Target ibex: the Ibex RTL under Verilator, with the real FuseSoC, GCC and simulator."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mlonmcu.environment import Environment
from mlonmcu.setup import installer

pytestmark = [pytest.mark.integration, pytest.mark.ibex]


def report(home: Path) -> pd.DataFrame:
    return pd.read_csv(home / "sessions" / "latest" / "report.csv")


def run_log(home: Path, run: int = 0) -> str:
    return (home / "sessions" / "latest" / "runs" / str(run) / "logs" / "run.log").read_text()


@pytest.fixture(scope="module")
def ibex_home(integration_home: Path) -> Path:
    """integration_home with the Ibex sources, Verilator and FuseSoC (from MLONMCU_IBEX_SRC, or
    as `mlonmcu setup ibex` installed them); its Verilator models are the installed HOME's."""
    env = Environment.load(integration_home)
    if installer.environment_sources().get("ibex"):
        _, failed = installer.install(env, ["ibex"])
        assert not failed, f"setup of ibex from MLONMCU_IBEX_SRC failed: {failed}"
    _, missing = installer.check(env, ("ibex", "verilator", "fusesoc"))
    if missing:
        pytest.skip(
            "no Ibex source tree: set MLONMCU_IBEX_SRC to a local checkout or mirror, or run "
            "`mlonmcu setup ibex --source ibex=PATH`"
        )
    return integration_home


def test_measured_cycles_and_exact_outputs(ibex_home, mlonmcu):
    args = ["flow", "run", "kws_dscnn", "-b", "tvmaot", "-t", "ibex", "-f", "validate", "-c", "validate.samples=2"]
    code, output = mlonmcu(*args, "-H", ibex_home)
    assert code == 0, output
    row = report(ibex_home).iloc[0]
    assert row.Validation == "pass" and row["Max Abs Error"] == 0, output
    assert row.Counter == "mcycle"
    # an in-order core with a 2-stage pipeline: loads, branches and multiplies take extra cycles
    assert 1.2 * row["Run Instructions"] < row["Run Cycles"] < 3 * row["Run Instructions"]
    # a second session compiles again (--no-cache) and simulates with the same Verilator model
    code, output = mlonmcu(*args, "--no-cache", "-H", ibex_home)
    assert code == 0, output
    assert "ibex: reusing the Verilator model" in run_log(ibex_home)
    assert report(ibex_home).iloc[0]["Run Cycles"] == row["Run Cycles"]  # RTL simulation is deterministic


def test_the_timing_models_estimate_the_rtl_cycles(ibex_home, mlonmcu):
    """QEMU's instruction classes weighted by the Ibex models (targets/timing.py) against the RTL."""
    configs = ["-c", "ibex.config=small", "-c", "ibex.config=maxperf"]
    models = ["-c", "qemu_rv32.timing_model=ibex-small", "-c", "qemu_rv32.timing_model=ibex-maxperf"]
    args = ["flow", "run", "kws_dscnn", "-b", "tvmaot", "-t", "ibex", "-t", "qemu_rv32", *configs, *models]
    code, output = mlonmcu(*args, "-H", ibex_home)
    assert code == 0, output
    frame = report(ibex_home)
    rtl = frame[frame.Target == "ibex"]
    rtl = rtl.set_index(rtl.Config.str.extract(r"ibex\.config=(\w+)")[0])
    estimated = frame[frame.Target == "qemu_rv32"].set_index("Timing Model")
    assert set(estimated.Counter) == {"minstret"} and estimated["Run Cycles"].isna().all()
    for config in ("small", "maxperf"):
        error = estimated.loc[f"ibex-{config}", "Estimated Cycles"] / rtl.loc[config, "Run Cycles"] - 1
        assert abs(error) < 0.02, (config, error)  # measured: under 0.01 % (docs/timing.md)


def test_a_hang_is_a_timeout_and_leaves_no_simulator(ibex_home, mlonmcu):
    code, _ = mlonmcu(
        "flow", "run", "kws_dscnn", "-b", "tvmaot", "-t", "ibex", "-c", "ibex.timeout=1", "--no-cache", "-H", ibex_home
    )
    row = report(ibex_home).iloc[0]
    assert code == 1 and row.Reason.startswith("timeout"), row.Reason
    processes = [p.read_bytes() for p in Path("/proc").glob("[0-9]*/cmdline") if p.exists()]
    assert not any(b"Vibex_simple_system" in cmd for cmd in processes)


def test_unknown_configuration_names_the_known_ones(ibex_home, mlonmcu):
    args = ["flow", "run", "kws_dscnn", "-b", "tvmaot", "-t", "ibex", "-c", "ibex.config=huge"]
    code, _ = mlonmcu(*args, "-H", ibex_home)
    reason = report(ibex_home).iloc[0]["Reason"]
    assert code == 1 and "no configuration 'huge'" in reason and "maxperf" in reason, reason
