"""A full disk: one clear line naming the path and the free space; nothing already written is lost."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from faultlib import report, run_cli

pytestmark = [pytest.mark.integration, pytest.mark.faults]

RUN = ("flow", "run", "kws_dscnn", "-b", "tvmaot", "-t", "spike", "-f", "validate")


def _tmpfs(tmp_path: Path, size: str):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / f"disk-{size}"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def small_disk(tmp_path):
    yield from _tmpfs(tmp_path, "24m")


@pytest.fixture
def tiny_disk(tmp_path):
    yield from _tmpfs(tmp_path, "400k")


def fill(directory: Path, leave: int) -> Path:
    """A file taking all but `leave` bytes of the file system."""
    filler = directory / "filler"
    free = os.statvfs(directory).f_bavail * os.statvfs(directory).f_frsize
    with filler.open("wb") as fh:
        fh.truncate(0)
        remaining = max(0, free - leave)
        chunk = b"\0" * (1 << 20)
        while remaining > 0:
            fh.write(chunk[: min(len(chunk), remaining)])
            remaining -= min(len(chunk), remaining)
    return filler


def test_full_disk(fault_home, small_disk):
    env = yaml.safe_load((fault_home / "environment.yml").read_text())
    home = small_disk / "home"
    home.mkdir()
    (home / "environment.yml").write_text(yaml.safe_dump(env))
    code, output = run_cli(*RUN, "-H", home)
    assert code == 0, output
    before = (home / "sessions" / "0" / "report.csv").read_bytes()
    filler = fill(small_disk, leave=48 * 1024)
    code, output = run_cli(*RUN, "--no-cache", "-H", home)
    assert code == 1, output
    assert "Traceback" not in output
    assert "no space left on device writing" in output and "bytes free" in output
    assert (home / "sessions" / "0" / "report.csv").read_bytes() == before  # the finished session is intact
    code, sessions = run_cli("sessions", "-H", home)
    assert code == 0 and "running" not in sessions, sessions
    assert run_cli("sessions", "show", "0", "-H", home)[0] == 0
    latest = home / "sessions" / "1" / "report.csv"
    if latest.is_file():  # written before the disk filled up: complete, failing with the reason
        assert report(home, 1)["Reason"].str.contains("no space left on device").all()
    filler.unlink()
    code, output = run_cli(*RUN, "-H", home)
    assert code == 0, output
    assert report(home)["Validation"].tolist() == ["pass"]


def test_disk_fills_while_caching_a_build(fault_home, tiny_disk):
    """BUILD's outputs copied into the cache (a shutil.Error gathering every file's ENOSPC) are
    a full disk in HOME/cache, not an internal error; the log's later writes print no traceback."""
    home = tiny_disk / "home"
    home.mkdir()
    (home / "environment.yml").write_text((fault_home / "environment.yml").read_text())
    code, output = run_cli("flow", "run", "kws_dscnn", "-b", "tvmaot", "-t", "host_x86", "-H", home)
    assert code == 1, output
    assert "internal error" not in output and "Traceback" not in output and "Logging error" not in output, output
    assert "no space left on device writing" in output and str(home / "cache") in output, output
