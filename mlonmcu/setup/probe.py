"""What installed tools say of themselves, remembered while the files behind the answer are unchanged.

Every session looks up its components, and asking a dozen executables for `--version` and dpkg
for its package states costs a subprocess each — a tenth of an unchanged rerun. An answer is
kept in DEPS/.probes.json under the identity (path, size, mtime, inode) of the file it depends
on: the executable for a version line, dpkg's status database for package states. Replacing the
tool or installing/removing any package changes that identity, so a stale answer is never used.
The file is only a shortcut: unreadable or unwritable, every question is asked again.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from mlonmcu.atomic import write_text
from mlonmcu.errors import DiskFull

PROBES_FILE = ".probes.json"
DPKG_STATUS = Path("/var/lib/dpkg/status")
_memory: dict[Path, dict[str, list[str]]] = {}  # per process: the file is read once


def _identity(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return ""
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


class Probes:
    """The shortcut file of one deps directory."""

    def __init__(self, deps_dir: Path):
        self.path = deps_dir / PROBES_FILE

    def _answers(self) -> dict[str, list[str]]:
        if self.path not in _memory:
            try:
                loaded = json.loads(self.path.read_text())
                _memory[self.path] = loaded if isinstance(loaded, dict) else {}
            except (OSError, ValueError):
                _memory[self.path] = {}
        return _memory[self.path]

    def _ask(self, question: str, depends_on: Path, answer: Callable[[], str]) -> str:
        identity = _identity(depends_on)
        answers = self._answers()
        known = answers.get(question)
        if identity and isinstance(known, list) and len(known) == 2 and known[0] == identity:
            return str(known[1])
        value = answer()
        if identity and value != "unknown":  # a timeout may pass: ask again next time
            answers[question] = [identity, value]
            with contextlib.suppress(OSError, DiskFull):  # a read-only or full deps directory loses the shortcut only
                write_text(self.path, json.dumps(answers, indent=0, sort_keys=True))
        return value

    def first_line(self, args: list[str]) -> str:
        """The first line a tool prints for `args` (e.g. its version), "unknown" if it cannot run."""
        exe = Path(args[0])
        return self._ask("line " + json.dumps(args), exe.resolve() if exe.exists() else exe, lambda: first_line(args))

    def packages_present(self, packages: tuple[str, ...]) -> bool:
        """Are all these Debian packages installed (True where there is no dpkg to ask)?"""
        if not shutil.which("dpkg-query"):
            return True
        return self._ask("dpkg " + " ".join(packages), DPKG_STATUS, lambda: str(_dpkg_installed(packages))) == "True"


def first_line(args: list[str]) -> str:
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0].strip() if text else "unknown"


def _dpkg_installed(packages: tuple[str, ...]) -> bool:
    out = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Status}\n", *packages],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "LC_ALL": "C"},
    )
    return out.returncode == 0 and all(line.endswith("installed") for line in out.stdout.splitlines())
