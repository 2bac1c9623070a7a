"""Shared fixtures: throw-away HOMEs; integration tests reuse the components `mlonmcu setup` installed."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import installed_deps_dir, make_home

from mlonmcu.cli.main import cli

pytest_plugins = ["source_check"]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return make_home(tmp_path / "home")


@pytest.fixture
def mlonmcu(monkeypatch: pytest.MonkeyPatch):
    """Invoke the CLI in-process; returns (exit_code, output)."""
    monkeypatch.delenv("MLONMCU_MODELS", raising=False)

    def invoke(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
        return result.exit_code, result.output

    return invoke


@pytest.fixture(scope="session")
def integration_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One HOME (and stage cache) for all integration tests, using the installed components."""
    from mlonmcu.environment import Environment
    from mlonmcu.setup import installer

    deps = installed_deps_dir()
    root = make_home(tmp_path_factory.mktemp("ihome"), paths={"deps": str(deps)})
    env = Environment.load(root)
    _, missing = installer.check(env, installer.default_components(env))
    if missing:
        pytest.skip(f"components not installed ({', '.join(missing)}): run `mlonmcu setup` first")
    return root
