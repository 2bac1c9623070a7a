"""Static libraries (platforms/libraries.py) with the real host GCC, CMake and ccache."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mlonmcu.contracts import LibrarySpec, TargetProfile
from mlonmcu.platforms.libraries import library_archive

pytestmark = pytest.mark.integration

HOST = TargetProfile(family="host", toolchain="host_gcc", toolchain_file="host_gcc.cmake.j2", support=("host",))


def library(root: Path, name: str, sources: tuple[str, ...]) -> LibrarySpec:
    return LibrarySpec(name=name, root=str(root), identity="test", sources=sources, include_dirs=())


def hits(ccache_dir: Path) -> int:
    stats = subprocess.run(
        ["ccache", "--print-stats"], env={"CCACHE_DIR": str(ccache_dir)}, capture_output=True, text=True, check=True
    ).stdout
    values = dict(line.split("\t") for line in stats.splitlines() if "\t" in line)
    return int(values["direct_cache_hit"]) + int(values["preprocessed_cache_hit"])


def test_two_libraries_share_their_common_sources_through_ccache(tmp_path):
    if shutil.which("ccache") is None:
        pytest.skip("ccache not installed: `mlonmcu setup cmake` installs it")
    root = tmp_path / "src"
    root.mkdir()
    for name in ("common", "first", "second"):
        (root / f"{name}.c").write_text(f"int {name}(int x) {{ return x * {len(name)}; }}\n")
    cache, log = tmp_path / "cache", tmp_path / "build.log"
    with library_archive(library(root, "one", ("common.c", "first.c")), HOST, "gcc", cache, log) as archive:
        assert archive.is_file()
    assert hits(cache / "ccache") == 0
    with library_archive(library(root, "two", ("common.c", "second.c")), HOST, "gcc", cache, log) as archive:
        assert archive.is_file()
    assert hits(cache / "ccache") == 1  # common.c, compiled for library one
    assert f"compiling through ccache ({cache / 'ccache'})" in log.read_text()
