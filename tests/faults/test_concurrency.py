"""Two sessions, two setups and a cleanup at once on one HOME."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from faultlib import cli_args, kill_group, report, run_cli, simulators, start_cli, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.faults]

RUN = ("flow", "run", "cnn_small", "-b", "tvmaot", "-t", "spike", "-t", "qemu_rv32", "-f", "validate")


def test_two_sessions_at_once(fault_home, tmp_path):
    procs = [start_cli(*RUN, "-H", fault_home, log=tmp_path / f"log{i}") for i in range(2)]
    codes = [p.wait(timeout=600) for p in procs]
    assert codes == [0, 0], [(tmp_path / f"log{i}").read_text() for i in range(2)]
    frames = [report(fault_home, i) for i in (0, 1)]
    assert sorted(f["Session"].iloc[0] for f in frames) == [0, 1]  # distinct ids
    assert frames[0]["Run Instructions"].tolist() == frames[1]["Run Instructions"].tolist()
    compiled = list((fault_home / "cache" / "compile").glob("*/*/out/firmware.elf"))
    assert len(compiled) == 1  # spike and QEMU share one firmware; the two sessions computed it once
    assert run_cli("cache", "verify", "-H", fault_home)[1].count("0 damaged") == 2


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_two_setups_at_once(tmp_path):
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git("init", "-q", cwd=upstream)
    (upstream / "VERSION").write_text("v1")
    git("add", "VERSION", cwd=upstream)
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "v1", cwd=upstream)
    git("tag", "v1", cwd=upstream)
    home = tmp_path / "home"
    assert run_cli("init", home)[0] == 0
    args = ("setup", "-H", home, "qemu_plugin", "flatbuffers", "--source", f"flatbuffers={upstream}@v1")
    procs = [subprocess.Popen(cli_args(*args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for _ in range(3)]
    outputs = [p.communicate(timeout=300)[0].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outputs
    deps = home / "deps"
    assert (deps / "flatbuffers" / "VERSION").read_text() == "v1"
    assert (deps / "qemu_plugin" / "libmlonmcu_insn.so").is_file()
    assert not [p for p in deps.iterdir() if ".staging-" in p.name or ".trash-" in p.name]
    recorded = yaml.safe_load((deps / "deps.yml").read_text())["components"]
    assert {"flatbuffers", "qemu_plugin"} <= set(recorded)


def test_cleanup_during_a_sweep(fault_home, tmp_path):
    assert run_cli(*RUN, "-H", fault_home)[0] == 0  # session 0: old, finished
    sweep = start_cli(
        "flow",
        "run",
        "kws_dscnn",
        "-b",
        "stuck",
        "-b",
        "tvmaot",
        "-t",
        "spike",
        "-f",
        "validate",
        "-c",
        "spike.timeout=15",
        "-H",
        fault_home,
        log=tmp_path / "log",
    )
    try:
        wait_for(lambda: simulators(str(fault_home)), 180, "the sweep's simulator")
        code, output = run_cli("cleanup", "--keep", "0", "--cache", "-H", fault_home)
        assert code == 0, output
        assert "removed 1 session(s): 0" in output and "kept running session(s) 1" in output
        assert "cache not emptied" in output
        assert (fault_home / "sessions" / "1").is_dir()
        assert sweep.wait(timeout=300) == 1  # the stuck run times out; the rest finish
    finally:
        kill_group(sweep)
    frame = report(fault_home, 1)
    assert len(frame) == 2 and frame.set_index("Backend").loc["tvmaot", "Validation"] == "pass"
    code, output = run_cli("cleanup", "--keep", "0", "--cache", "-H", fault_home)
    assert "removed 1 session(s): 1" in output and "emptied the cache" in output
    assert run_cli(*RUN, "-H", fault_home)[0] == 0
    assert pd.read_csv(fault_home / "sessions" / "latest" / "report.csv")["Session"].iloc[0] == 2  # never reused
