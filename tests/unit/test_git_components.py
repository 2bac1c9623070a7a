"""Git components against local repositories made here: no network needed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from helpers import make_home

from mlonmcu.setup.git import split_source


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(autouse=True)
def no_environment_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests give their sources themselves: $MLONMCU_<NAME>_SRC (test.sh sources
    ../shared/sources/sources.env) would point setup at the shared snapshots instead."""
    for name in os.environ:
        if name.startswith("MLONMCU_") and name.endswith("_SRC"):
            monkeypatch.delenv(name)


@pytest.fixture
def upstream(tmp_path: Path) -> Path:
    """A repository with two tagged commits."""
    repo = tmp_path / "upstream"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    for version in ("v1", "v2"):
        (repo / "VERSION").write_text(version)
        git("add", "VERSION", cwd=repo)
        git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", version, cwd=repo)
        git("tag", version, cwd=repo)
    return repo


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("/srv/mirror/tflite-micro", ("/srv/mirror/tflite-micro", None)),
        ("/srv/mirror/tflite-micro@v1.2", ("/srv/mirror/tflite-micro", "v1.2")),
        ("https://github.com/google/flatbuffers@v25.9.23", ("https://github.com/google/flatbuffers", "v25.9.23")),
        ("git@github.com:google/gemmlowp.git", ("git@github.com:google/gemmlowp.git", None)),
    ],
)
def test_split_source(value, expected):
    assert split_source(value) == expected


def test_clone_from_local_repository_at_a_ref(tmp_path, upstream, mlonmcu):
    home = make_home(tmp_path / "home")
    code, output = mlonmcu("setup", "-H", home, "flatbuffers", "--source", f"flatbuffers={upstream}@v1")
    assert code == 0, output
    checkout = home / "deps" / "flatbuffers"
    assert (checkout / "VERSION").read_text() == "v1"
    recorded = yaml.safe_load((home / "deps" / "deps.yml").read_text())["components"]["flatbuffers"]
    assert recorded["version"].startswith(git("rev-parse", "v1", cwd=upstream)) and "(v1)" in recorded["version"]
    # idempotent: a second setup keeps the checkout; pointing elsewhere re-clones
    assert mlonmcu("setup", "-H", home, "flatbuffers")[0] == 0
    assert (checkout / "VERSION").read_text() == "v1"
    assert mlonmcu("setup", "-H", home, "flatbuffers", "--source", f"flatbuffers={upstream}@v2")[0] == 0
    assert (checkout / "VERSION").read_text() == "v2"


def test_branch_known_only_as_remote_tracking_in_a_clone(tmp_path, upstream, mlonmcu):
    """A clone of a fork has its branches as origin/NAME only; `git checkout NAME` takes that, so
    does `--source PATH@NAME`."""
    git("checkout", "-q", "-b", "topic", "v1", cwd=upstream)
    (upstream / "VERSION").write_text("topic")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-am", "topic", cwd=upstream)
    git("checkout", "-q", "v2", cwd=upstream)
    mirror = tmp_path / "mirror"
    git("clone", "-q", str(upstream), str(mirror), cwd=tmp_path)
    assert "topic" not in git("branch", "--list", cwd=mirror)  # only refs/remotes/origin/topic
    home = make_home(tmp_path / "home")
    code, output = mlonmcu("setup", "-H", home, "gemmlowp", "--source", f"gemmlowp={mirror}@topic")
    assert code == 0, output
    assert (home / "deps" / "gemmlowp" / "VERSION").read_text() == "topic"


def test_a_work_tree_is_used_as_it_is(tmp_path, upstream, mlonmcu):
    home = make_home(tmp_path / "home")
    assert mlonmcu("setup", "-H", home, "gemmlowp", "--source", f"gemmlowp={upstream}")[0] == 0
    link = home / "deps" / "gemmlowp"
    assert link.is_symlink() and link.resolve() == upstream.resolve()


def test_wrong_source_names_url_and_ref(tmp_path, upstream, mlonmcu):
    home = make_home(tmp_path / "home")
    code, output = mlonmcu("setup", "-H", home, "gemmlowp", "--source", f"gemmlowp={upstream}@no-such-tag")
    assert code == 1 and "no-such-tag" in output and str(upstream) in output
    missing = tmp_path / "nowhere"
    code, output = mlonmcu("setup", "-H", home, "gemmlowp", "--source", f"gemmlowp={missing}@main")
    assert code == 1 and str(missing) in output
    assert not (home / "deps" / "gemmlowp").exists()  # nothing half-cloned is left for later runs
    assert not list((home / "deps").glob(".gemmlowp.staging-*"))


def test_interrupted_setup_is_completed_by_the_next(tmp_path, upstream, mlonmcu):
    home = make_home(tmp_path / "home")
    leftover = home / "deps" / ".flatbuffers.staging-deadbeef"
    leftover.mkdir(parents=True)
    (leftover / "half-written").write_text("x")
    code, _ = mlonmcu("setup", "-H", home, "flatbuffers", "--source", f"flatbuffers={upstream}@v2")
    assert code == 0
    assert not leftover.exists() and (home / "deps" / "flatbuffers" / "VERSION").read_text() == "v2"


def test_source_for_a_non_git_component_is_a_usage_error(tmp_path, upstream, mlonmcu):
    home = make_home(tmp_path / "home")
    code, output = mlonmcu("setup", "-H", home, "cmake", "--source", f"cmake={upstream}")
    assert code == 2 and "not a git component" in output


def test_setup_tflm_takes_sources_from_the_environment_and_brings_its_headers(tmp_path, upstream, mlonmcu, monkeypatch):
    home = make_home(tmp_path / "home")
    monkeypatch.setenv("MLONMCU_TFLM_SRC", f"{upstream}@v1")
    monkeypatch.setenv("MLONMCU_FLATBUFFERS_SRC", f"{upstream}@v2")
    monkeypatch.setenv("MLONMCU_GEMMLOWP_SRC", str(upstream))
    code, output = mlonmcu("setup", "-H", home, "tflm")
    assert code == 0, output
    deps = home / "deps"
    assert (deps / "tflm" / "VERSION").read_text() == "v1"
    assert (deps / "flatbuffers" / "VERSION").read_text() == "v2"
    assert (deps / "gemmlowp").resolve() == upstream.resolve()
    # an explicit --source wins over the environment variable
    assert mlonmcu("setup", "-H", home, "tflm", "--source", f"tflm={upstream}@v2")[0] == 0
    assert (deps / "tflm" / "VERSION").read_text() == "v2"
