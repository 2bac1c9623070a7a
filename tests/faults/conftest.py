"""Fault injection: the HOME each fault test gets (helpers are in faultlib.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml


@pytest.fixture
def fault_home(integration_home: Path, tmp_path: Path) -> Path:
    """A HOME of its own (sessions, cache) using the installed components, with the test backends."""
    env = yaml.safe_load((integration_home / "environment.yml").read_text())
    env["backends"] = ["tvmaot", "stuck"]
    home = tmp_path / "home"
    home.mkdir()
    (home / "environment.yml").write_text(yaml.safe_dump(env))
    return home
