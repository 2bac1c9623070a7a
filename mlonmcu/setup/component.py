"""Component: how a dependency gets onto the machine, how to find it, which version it is."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from mlonmcu.config import Option
from mlonmcu.entry import Entry
from mlonmcu.errors import SetupError, ToolError
from mlonmcu.plugin import Plugin
from mlonmcu.process import run
from mlonmcu.setup.deps import Installed
from mlonmcu.setup.probe import Probes

logger = logging.getLogger("mlonmcu.setup")


class Component(Plugin):
    """Base class. Subclasses are idempotent: `install` on an installed component is a no-op."""

    companions: ClassVar[tuple[str, ...]] = ()  # installed along with it: `setup tflm` is enough
    on_request: ClassVar[bool] = False  # plain `setup` skips it unless listed under components:

    def __init__(self, deps_dir: Path, settings: Mapping[str, Any] | None = None):
        """`settings` are environment.yml's `components: {NAME: {option: value}}` for this one."""
        config = {f"{self.name}.{k}": self.option(k).parse(v, f"{self.name}.{k}") for k, v in (settings or {}).items()}
        super().__init__(config)
        self.deps_dir = deps_dir
        self.problem = ""  # why locate() found nothing usable, when something is there

    def set(self, option: str, value: Any) -> None:
        self.config[f"{self.name}.{option}"] = self.option(option).parse(value, f"{self.name}.{option}")

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
            if self.problem:
                logger.warning("%s: %s; installing it again", self.name, self.problem)
            self.install(log)
            found = self.locate()
        if found is None:
            detail = f": {self.problem}" if self.problem else ""
            raise SetupError(f"{self.name}: installation finished but the component is still not found{detail}")
        return found


class DirectoryComponent(Component):
    """A component mlonmcu puts into deps/NAME itself, as a locked atomic entry: it appears only
    when complete, concurrent setups of one HOME build it once, and every lookup checks it
    against its manifest (a changed file is reported and the component installed again)."""

    thorough: ClassVar[bool] = True  # hash every file on lookup (False: size and mtime only)

    @property
    def directory(self) -> Path:
        return self.deps_dir / self.name

    @property
    def entry(self) -> Entry:
        return Entry(self.directory, f"component {self.name} ({self.directory})")

    def manages_directory(self) -> bool:
        """Is deps/NAME ours to check (not absent, not a checkout the user pointed to)?"""
        return self.directory.exists() and not self.directory.is_symlink()

    def current(self, directory: Path) -> bool:
        """Is the intact entry the one the settings ask for (e.g. the configured version)?"""
        return True

    def found(self) -> Installed:
        raise NotImplementedError

    def fill(self, staging: Path, log: Path) -> None:
        """Install into `staging`, which becomes deps/NAME when this returns."""
        raise NotImplementedError

    def locate(self) -> Installed | None:
        self.problem = ""
        problem = self.entry.verify(self.thorough)
        if problem == "missing":
            return None
        if problem:
            self.problem = f"{self.directory} is damaged ({problem})"
            return None
        if not self.current(self.directory):
            return None
        return self.found()

    def install(self, log: Path) -> None:
        with self.entry.locked():
            if self.locate() is not None:  # another setup finished it while we waited
                return
            self.entry.publish(lambda staging: self.fill(staging, log))


class AptComponent(Component):
    """Debian packages: installed with apt-get when root, otherwise the exact command is printed."""

    packages: ClassVar[tuple[str, ...]]
    executable: ClassVar[str]
    version_args: ClassVar[tuple[str, ...]] = ("--version",)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.options = (
            Option("path", str, "", f"directory holding {cls.executable} (default: the Debian package on PATH)"),
        )

    def locate(self) -> Installed | None:
        if self.opt("path"):  # a toolchain installed elsewhere: used as is, no package check
            path = shutil.which(self.executable, path=self.opt("path"))
        else:
            path = shutil.which(self.executable)
            if path is not None and not Probes(self.deps_dir).packages_present(self.packages):
                path = None
        if path is None:
            return None
        return Installed(self.name, Probes(self.deps_dir).first_line([path, *self.version_args]), path)

    def apt_command(self) -> list[str]:
        # another apt/dpkg (a second setup, unattended-upgrades) holds the lock: wait, do not fail
        return ["apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y", "--no-install-recommends", *self.packages]

    def hint(self) -> str:
        return f"mlonmcu setup {self.name}  (or: sudo {' '.join(self.apt_command())})"

    def install(self, log: Path) -> None:
        if self.opt("path"):
            raise SetupError(f"{self.name}: no {self.executable} in {self.opt('path')} (setting {self.name}.path)")
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
            logger.info("%s: apt-get install failed; running apt-get update and retrying", self.name)
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
