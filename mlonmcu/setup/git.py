"""Git components: a source (URL or local path) and a ref, checked out shallow under deps/.

A checkout appears under its final name only once it is complete (a locked atomic entry, see
entry.py), so an interrupted setup leaves nothing half-cloned behind that a later run could
use; re-running setup simply starts again.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, ClassVar

import yaml

from mlonmcu.config import Option
from mlonmcu.errors import SetupError
from mlonmcu.setup.component import DirectoryComponent
from mlonmcu.setup.deps import Installed

logger = logging.getLogger("mlonmcu.setup")
STAMP = ".git/mlonmcu-source.yml"  # inside .git: the work tree stays clean


def split_source(value: str) -> tuple[str, str | None]:
    """`URL_OR_PATH[@REF]` → (source, ref). An '@' inside a URL's user part is not a ref."""
    head, sep, ref = value.rpartition("@")
    if sep and head and "/" not in ref and ":" not in ref:
        return head, ref
    return value, None


def is_work_tree(path: Path) -> bool:
    return (path / ".git").exists()


class GitComponent(DirectoryComponent):
    """Subclasses set the default source and ref: the ones the project depending on it pins.

    A clone is a locked atomic entry (deps/NAME, checked by size and mtime on every lookup,
    thoroughly by `mlonmcu cache verify`); a checkout the user points to (`NAME.path`, or a local
    work tree given to `--source` without a ref) is used in place and not checked.
    """

    default_url: ClassVar[str]
    default_ref: ClassVar[str]
    on_request = True  # large downloads from the network: only when asked for
    thorough = False  # thousands of files: size and mtime on lookup

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if hasattr(cls, "default_url"):
            cls.options = (
                Option("url", str, cls.default_url, "git URL or local path (also a bare mirror) to clone from"),
                Option("ref", str, cls.default_ref, "tag, branch or commit to check out"),
                Option("path", str, "", "an existing checkout to use as it is (nothing is cloned)"),
            )

    @property
    def checkout(self) -> Path:
        if self.opt("path"):
            return Path(self.opt("path")).expanduser()
        return self.directory

    @property
    def in_place(self) -> bool:
        return bool(self.opt("path")) or self.directory.is_symlink()

    def manages_directory(self) -> bool:
        return not self.in_place and super().manages_directory()

    def locate(self) -> Installed | None:
        if self.in_place:
            return self.found() if is_work_tree(self.checkout) else None
        return super().locate()

    def found(self) -> Installed:
        ref = self.recorded_source().get("ref", "")
        return Installed(self.name, _describe(self.checkout, ref), str(self.checkout))

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
            with self.entry.locked():
                self.entry.remove()
                self.directory.symlink_to(path.resolve(), target_is_directory=True)
            return
        self.set("url", str(path.resolve()) if path.exists() else source)
        if ref:
            self.set("ref", ref)
        wanted = {"url": self.opt("url"), "ref": self.opt("ref")}
        recorded = self.recorded_source()
        if self.directory.is_symlink() or (recorded and {k: recorded.get(k) for k in wanted} != wanted):
            with self.entry.locked():
                self.entry.remove()  # pointed elsewhere: clone again

    def install(self, log: Path) -> None:
        if self.opt("path"):
            raise SetupError(f"{self.name}: {self.opt('path')} is not a git checkout (setting {self.name}.path)")
        super().install(log)

    def fill(self, staging: Path, log: Path) -> None:
        from git import GitCommandError, Repo

        url, ref = self.opt("url"), self.opt("ref")
        try:
            repo = Repo.init(staging)
            origin = repo.create_remote("origin", url)
            try:
                origin.fetch(ref, depth=1)
                revision = "FETCH_HEAD"
            except GitCommandError:
                tracking = _tracking_branch(repo, url, ref)
                if tracking:  # a clone of a fork or mirror: the branch is only origin/REF there
                    logger.info("%s: %s is the remote-tracking branch %s in %s", self.name, ref, tracking, url)
                    origin.fetch(tracking, depth=1)
                    revision = "FETCH_HEAD"
                else:  # servers that refuse shallow fetches of a commit: fetch all
                    logger.info("%s: shallow fetch of %s refused; fetching everything", self.name, ref)
                    origin.fetch()
                    origin.fetch("+refs/tags/*:refs/tags/*")
                    revision = ref
            repo.git.checkout("--force", revision)
            (staging / STAMP).write_text(yaml.safe_dump({"url": url, "ref": ref, "commit": repo.head.commit.hexsha}))
            with log.open("a") as fh:
                fh.write(f"{self.name}: checked out {ref} ({repo.head.commit.hexsha}) from {url}\n")
            repo.close()
        except GitCommandError as err:
            detail = (err.stderr or str(err)).strip().splitlines()
            raise SetupError(
                f"{self.name}: cannot check out {ref} from {url}: {detail[-1] if detail else err}"
            ) from None


def _tracking_branch(repo: Any, url: str, ref: str) -> str | None:
    """The full name of `refs/remotes/R/REF` in the source, as `git checkout REF` there would take it:
    R is origin when several remotes have it, else the only one (None when there is none)."""
    from git import GitCommandError

    try:
        listing = repo.git.ls_remote(url)
    except GitCommandError:
        return None
    found = [
        name
        for name in (line.split("\t", 1)[-1] for line in listing.splitlines())
        if name.startswith("refs/remotes/") and name.count("/") >= 3 and name.split("/", 3)[3] == ref
    ]
    if len(found) == 1:
        return found[0]
    return next((name for name in found if name == f"refs/remotes/origin/{ref}"), None)


def _describe(path: Path, ref: str) -> str:
    """The commit, and the ref it was checked out as when that is a name (a tag, a branch)."""
    from git import InvalidGitRepositoryError, Repo

    try:
        commit = Repo(path).head.commit.hexsha
    except (InvalidGitRepositoryError, ValueError):
        return "unknown"
    return commit if not ref or commit.startswith(ref) else f"{commit} ({ref})"
