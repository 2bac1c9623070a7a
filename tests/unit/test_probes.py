"""Tool versions and package states are asked once and remembered while the file behind them is unchanged."""

from __future__ import annotations

import os
from pathlib import Path

from mlonmcu.setup import probe
from mlonmcu.setup.probe import PROBES_FILE, Probes


def _tool(path: Path, version: str, calls: Path) -> Path:
    path.write_text(f"#!/bin/sh\necho x >> {calls}\necho '{version}'\n")
    path.chmod(0o755)
    return path


def test_a_version_line_is_asked_once_until_the_tool_changes(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    tool = _tool(tmp_path / "tool", "tool 1.0", calls)
    deps = tmp_path / "deps"
    deps.mkdir()
    assert Probes(deps).first_line([str(tool), "--version"]) == "tool 1.0"
    probe._memory.clear()  # a new process: only the file remembers
    assert Probes(deps).first_line([str(tool), "--version"]) == "tool 1.0"
    assert calls.read_text().count("x") == 1
    assert (deps / PROBES_FILE).is_file()

    _tool(tool, "tool 2.0", calls)  # replaced: a new size and mtime
    os.utime(tool, ns=(tool.stat().st_atime_ns, tool.stat().st_mtime_ns + 1_000_000))
    assert Probes(deps).first_line([str(tool), "--version"]) == "tool 2.0"
    assert calls.read_text().count("x") == 2


def test_a_tool_that_cannot_run_is_not_remembered(tmp_path: Path) -> None:
    deps = tmp_path / "deps"
    deps.mkdir()
    assert Probes(deps).first_line([str(tmp_path / "absent"), "--version"]) == "unknown"
    assert not (deps / PROBES_FILE).exists()


def test_an_unwritable_or_corrupt_shortcut_file_only_costs_the_question(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    tool = _tool(tmp_path / "tool", "tool 3.1", calls)
    deps = tmp_path / "deps"
    deps.mkdir()
    (deps / PROBES_FILE).write_text("{not json")
    probe._memory.clear()
    assert Probes(deps).first_line([str(tool)]) == "tool 3.1"
    missing = tmp_path / "no-such-dir" / "deps"  # cannot be written: answered all the same
    assert Probes(missing).first_line([str(tool)]) == "tool 3.1"
