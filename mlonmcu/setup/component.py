"""Component: how a dependency gets onto the machine, how to find it, which version it is."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

from mlonmcu.config import Option
from mlonmcu.errors import SetupError, ToolError
from mlonmcu.process import run
from mlonmcu.setup.deps import Installed


class Component:
    """Base class. Subclasses are idempotent: `install` on an installed component is a no-op."""

    name: ClassVar[str]
    help: ClassVar[str]
    options: ClassVar[tuple[Option, ...]] = ()
    companions: ClassVar[tuple[str, ...]] = ()  # installed along with it: `setup tflm` is enough
    on_request: ClassVar[bool] = False  # plain `setup` skips it unless listed under components:

    def __init__(self, deps_dir: Path, settings: dict[str, Any] | None = None):
        self.deps_dir = deps_dir
        self.settings = {o.name: o.default for o in self.options} | dict(settings or {})

    def locate(self) -> Installed | None:
        """The installed component, or None. Must be cheap: `flow` calls it before every session."""
        raise NotImplementedError

    def install(self, log: Path) -> None:
        raise NotImplementedError

    def hint(self) -> str:
        return f"mlonmcu setup {self.name}"

    def ensure(self, log: Path) -> Installed:
        found = self.locate()
        if found is None:
            self.install(log)
            found = self.locate()
        if found is None:
            raise SetupError(f"{self.name}: installation finished but the component is still not found")
        return found


def first_line(args: list[str]) -> str:
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0].strip() if text else "unknown"


class AptComponent(Component):
    """Debian packages: installed with apt-get when root, otherwise the exact command is printed."""

    packages: ClassVar[tuple[str, ...]]
    executable: ClassVar[str]
    version_args: ClassVar[tuple[str, ...]] = ("--version",)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.options = (
            Option("path", "str", "", f"directory holding {cls.executable} (default: the Debian package on PATH)"),
        )

    def locate(self) -> Installed | None:
        if self.settings["path"]:  # a toolchain installed elsewhere: used as is, no package check
            path = shutil.which(self.executable, path=self.settings["path"])
        else:
            path = shutil.which(self.executable)
            if path is not None and not self._packages_present():
                path = None
        if path is None:
            return None
        return Installed(self.name, first_line([path, *self.version_args]), path)

    def _packages_present(self) -> bool:
        if not shutil.which("dpkg-query"):
            return True
        out = subprocess.run(
            ["dpkg-query", "-W", "-f", "${Status}\n", *self.packages],
            capture_output=True,
            text=True,
            check=False,
        )
        return out.returncode == 0 and all(line.endswith("installed") for line in out.stdout.splitlines())

    def apt_command(self) -> list[str]:
        return ["apt-get", "install", "-y", "--no-install-recommends", *self.packages]

    def hint(self) -> str:
        return f"mlonmcu setup {self.name}  (or: sudo {' '.join(self.apt_command())})"

    def install(self, log: Path) -> None:
        if self.settings["path"]:
            raise SetupError(f"{self.name}: no {self.executable} in {self.settings['path']} (setting {self.name}.path)")
        if os.geteuid() != 0:
            raise SetupError(
                f"{self.name}: needs Debian packages; run as root or install them yourself:\n"
                f"  sudo apt-get update && sudo {' '.join(self.apt_command())}"
            )
        env = {"DEBIAN_FRONTEND": "noninteractive"}
        try:
            run(self.apt_command(), log=log, env=env, what="apt-get install")
        except ToolError:
            # Package lists are often missing on a fresh machine: refresh once and retry.
            run(["apt-get", "update"], log=log, env=env, what="apt-get update")
            run(self.apt_command(), log=log, env=env, what="apt-get install")


class PythonComponent(Component):
    """A pinned Python distribution, normally installed with mlonmcu itself."""

    distribution: ClassVar[str]
    pin: ClassVar[str]
    module: ClassVar[str]

    def locate(self) -> Installed | None:
        try:
            version = importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return None
        if version != self.pin:
            return None
        spec = importlib.util.find_spec(self.module)
        location = str(Path(spec.origin).parent) if spec and spec.origin else "?"
        return Installed(self.name, version, location)

    def hint(self) -> str:
        return f"mlonmcu setup {self.name}  (or: pip install {self.distribution}=={self.pin})"

    def install(self, log: Path) -> None:
        run(
            [sys.executable, "-m", "pip", "install", f"{self.distribution}=={self.pin}"],
            log=log,
            what="pip install",
        )
