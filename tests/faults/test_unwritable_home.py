"""A HOME that cannot be written (read-only ~/.local): one clear line naming the path and the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from faultlib import run_cli

pytestmark = [pytest.mark.integration, pytest.mark.faults]


@pytest.fixture
def read_only(tmp_path: Path):
    """Make a folder read-only the way a user meets it: a read-only mount as root, mode 555 otherwise."""
    made: list[Path] = []

    def seal(path: Path) -> Path:
        if os.geteuid() == 0:
            done = subprocess.run(["mount", "--bind", "-o", "ro", str(path), str(path)], capture_output=True)
            if done.returncode != 0:
                pytest.skip(f"cannot bind-mount read-only here: {done.stderr.decode().strip()}")
        else:
            path.chmod(0o555)
        made.append(path)
        return path

    yield seal
    for path in made:
        if os.geteuid() == 0:
            subprocess.run(["umount", "-l", str(path)], check=False)
        else:
            path.chmod(0o755)


def _clear(code: int, output: str, path: Path) -> None:
    assert code == 2, output
    assert "Traceback" not in output, output
    assert "error: cannot write" in output and str(path) in output, output
    assert "-H DIR --create" in output, output


def test_default_home_under_read_only_local(tmp_path, read_only):
    user = tmp_path / "user"
    (user / ".local").mkdir(parents=True)
    read_only(user / ".local")
    env = {k: v for k, v in os.environ.items() if k not in ("MLONMCU_HOME", "XDG_DATA_HOME")}
    for command in (["models"], ["flow", "run", "kws_dscnn", "-b", "tvmaot", "-t", "host_x86"]):
        done = subprocess.run(
            [sys.executable, "-m", "mlonmcu", *command],
            env={**env, "HOME": str(user)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        _clear(done.returncode, done.stdout + done.stderr, user / ".local")


def test_existing_home_read_only(fault_home, read_only):
    env = yaml.safe_load((fault_home / "environment.yml").read_text())
    assert env  # a real environment, made read-only after it was created
    read_only(fault_home)
    code, output = run_cli("flow", "run", "kws_dscnn", "-b", "tvmaot", "-t", "host_x86", "-H", fault_home)
    _clear(code, output, fault_home)
