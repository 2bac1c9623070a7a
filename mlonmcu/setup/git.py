"""Git components: a source (URL or local path) and a ref, checked out shallow under deps/.

A checkout appears under its final name only once it is complete (cloned into a temporary
directory, then renamed), so an interrupted setup leaves nothing half-cloned behind that a later
run could use; re-running setup simply starts again. An existing checkout is used as it is.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any, ClassVar

import yaml

from mlonmcu.config import Option
from mlonmcu.errors import SetupError
from mlonmcu.setup.component import Component
from mlonmcu.setup.deps import Installed

STAMP = ".git/mlonmcu-source.yml"  # inside .git: the work tree stays clean


def split_source(value: str) -> tuple[str, str | None]:
    """`URL_OR_PATH[@REF]` → (source, ref). An '@' inside a URL's user part is not a ref."""
    head, sep, ref = value.rpartition("@")
    if sep and head and "/" not in ref and ":" not in ref:
        return head, ref
    return value, None


def is_work_tree(path: Path) -> bool:
    return (path / ".git").exists()


class GitComponent(Component):
    """Subclasses set the default source and ref: the ones the project depending on it pins."""

    default_url: ClassVar[str]
    default_ref: ClassVar[str]
    on_request = True  # large downloads from the network: only when asked for

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if hasattr(cls, "default_url"):
            cls.options = (
                Option("url", "str", cls.default_url, "git URL or local path (also a bare mirror) to clone from"),
                Option("ref", "str", cls.default_ref, "tag, branch or commit to check out"),
                Option("path", "str", "", "an existing checkout to use as it is (nothing is cloned)"),
            )

    @property
    def checkout(self) -> Path:
        if self.settings["path"]:
            return Path(self.settings["path"]).expanduser()
        return self.deps_dir / self.name

    def locate(self) -> Installed | None:
        path = self.checkout
        if not is_work_tree(path):
            return None
        ref = self.recorded_source().get("ref", "")
        return Installed(self.name, _describe(path, ref), str(path))

    def hint(self) -> str:
        return f"mlonmcu setup {self.name}  (offline: mlonmcu setup --source {self.name}=PATH_OR_URL[@REF])"

    def recorded_source(self) -> dict[str, str]:
        stamp = self.checkout / STAMP
        return yaml.safe_load(stamp.read_text()) if stamp.is_file() else {}

    def use_source(self, source: str, ref: str | None) -> None:
        """`setup --source`: a local work tree is used in place (deps/NAME links to it); anything
        else (a URL, a bare mirror, a work tree with @REF) is cloned from."""
        path = Path(source).expanduser()
        if is_work_tree(path) and ref is None:
            self.deps_dir.mkdir(parents=True, exist_ok=True)
            _remove(self.checkout)
            self.checkout.symlink_to(path.resolve(), target_is_directory=True)
            return
        self.settings["url"] = str(path.resolve()) if path.exists() else source
        if ref:
            self.settings["ref"] = ref
        wanted = {"url": self.settings["url"], "ref": self.settings["ref"]}
        recorded = self.recorded_source()
        if recorded and {k: recorded.get(k) for k in wanted} != wanted and not self.settings["path"]:
            _remove(self.checkout)  # pointed elsewhere: clone again

    def install(self, log: Path) -> None:
        if self.settings["path"]:
            raise SetupError(f"{self.name}: {self.settings['path']} is not a git checkout (setting {self.name}.path)")
        from git import GitCommandError, Repo

        url, ref = self.settings["url"], self.settings["ref"]
        self.deps_dir.mkdir(parents=True, exist_ok=True)
        for stale in self.deps_dir.glob(f".{self.name}.partial-*"):
            _remove(stale)  # left by an interrupted setup
        staging = self.deps_dir / f".{self.name}.partial-{uuid.uuid4().hex[:8]}"
        try:
            repo = Repo.init(staging)
            origin = repo.create_remote("origin", url)
            try:
                origin.fetch(ref, depth=1)
                revision = "FETCH_HEAD"
            except GitCommandError:  # servers that refuse shallow fetches of a commit: fetch all
                origin.fetch()
                origin.fetch("+refs/tags/*:refs/tags/*")
                revision = ref
            repo.git.checkout("--force", revision)
            (staging / STAMP).write_text(yaml.safe_dump({"url": url, "ref": ref, "commit": repo.head.commit.hexsha}))
            with log.open("a") as fh:
                fh.write(f"{self.name}: checked out {ref} ({repo.head.commit.hexsha}) from {url}\n")
        except GitCommandError as err:
            _remove(staging)
            detail = (err.stderr or str(err)).strip().splitlines()
            raise SetupError(
                f"{self.name}: cannot check out {ref} from {url}: {detail[-1] if detail else err}"
            ) from None
        except Exception:
            _remove(staging)
            raise
        _remove(self.checkout)
        staging.replace(self.checkout)


def _describe(path: Path, ref: str) -> str:
    """The commit, and the ref it was checked out as when that is a name (a tag, a branch)."""
    from git import InvalidGitRepositoryError, Repo

    try:
        commit = Repo(path).head.commit.hexsha
    except (InvalidGitRepositoryError, ValueError):
        return "unknown"
    return commit if not ref or commit.startswith(ref) else f"{commit} ({ref})"


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)
