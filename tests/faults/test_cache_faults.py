"""Damaged cache entries in every stage: detected, discarded, recomputed — the figures stay right."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from faultlib import report, run_cli

pytestmark = [pytest.mark.integration, pytest.mark.faults]

RUN = ("flow", "run", "kws_dscnn", "-b", "tvmaot", "-t", "spike", "-f", "validate")
STAGE_FILES = {  # the file of each stage's entry the fault hits
    "load": "out/inputs.npz",
    "build": "out/tvmaot_constants.inc",
    "compile": "out/firmware.elf",
    "run": "out/outputs.npz",
}


def flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 8] = bytes(b ^ 0xFF for b in data[middle : middle + 8])
    path.write_bytes(bytes(data))


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])


def delete(path: Path) -> None:
    path.unlink()


def entry_dir(home: Path, stage: str) -> Path:
    keys = yaml.safe_load((home / "sessions" / "latest" / "runs" / "0" / "run.yml").read_text())["stage_keys"]
    key = keys[stage.upper()]
    return home / "cache" / stage / key[:2] / key


@pytest.fixture
def clean(fault_home: Path) -> dict[str, object]:
    code, output = run_cli(*RUN, "-H", fault_home)
    assert code == 0, output
    row = report(fault_home).iloc[0]
    assert row["Validation"] == "pass"
    return {"instructions": row["Run Instructions"], "rom": row["Total ROM"], "mae": row["Max Abs Error"]}


@pytest.mark.parametrize("stage", list(STAGE_FILES))
@pytest.mark.parametrize("damage", [flip, truncate, delete])
def test_damaged_entry_gives_the_clean_figures(fault_home, clean, stage, damage):
    damage(entry_dir(fault_home, stage) / STAGE_FILES[stage])
    code, output = run_cli(*RUN, "-H", fault_home)
    assert code == 0, output
    assert f"{stage.upper()} cache entry" in output and "damaged" in output  # said on the terminal
    row = report(fault_home).iloc[0]
    assert row["Run Instructions"] == clean["instructions"] and row["Total ROM"] == clean["rom"]
    assert row["Validation"] == "pass" and row["Max Abs Error"] == clean["mae"]
    assert stage not in str(row["Cached Stages"]).split(",")
    run = yaml.safe_load((fault_home / "sessions" / "latest" / "runs" / "0" / "run.yml").read_text())
    assert any(r.startswith(f"{stage.upper()}:") for r in run["cache_repairs"])
    log = (fault_home / "sessions" / "latest" / "mlonmcu.log").read_text()
    assert "damaged" in log
    # repaired for good: the next run takes everything from the cache again
    assert run_cli(*RUN, "-H", fault_home)[0] == 0
    assert report(fault_home).iloc[0]["Cached Stages"] == "load,build,compile,run"


def test_changed_result_figure_is_caught(fault_home, clean):
    result = entry_dir(fault_home, "run") / "result.json"
    result.write_text(result.read_text().replace('"instructions": ', '"instructions": 1', 1))
    assert run_cli(*RUN, "-H", fault_home)[0] == 0
    assert report(fault_home).iloc[0]["Run Instructions"] == clean["instructions"]


def test_no_cache_replaces_a_damaged_entry(fault_home, clean):
    """A deleted firmware with its result kept: --no-cache repairs it, later runs hit again."""
    delete(entry_dir(fault_home, "compile") / "out" / "firmware.elf")
    code, output = run_cli(*RUN, "--no-cache", "-H", fault_home)
    assert code == 0, output
    assert report(fault_home).iloc[0]["Run Instructions"] == clean["instructions"]
    assert run_cli(*RUN, "-H", fault_home)[0] == 0
    assert report(fault_home).iloc[0]["Cached Stages"] == "load,build,compile,run"


def test_cache_verify_finds_and_removes_damage(fault_home, clean):
    flip(entry_dir(fault_home, "build") / STAGE_FILES["build"])
    code, output = run_cli("cache", "verify", "-H", fault_home)
    assert code == 0, output
    assert "1 damaged and removed" in output and "tvmaot_constants.inc" in output
    assert not entry_dir(fault_home, "build").exists()
    code, output = run_cli("cache", "verify", "-H", fault_home)
    assert "0 damaged" in output
