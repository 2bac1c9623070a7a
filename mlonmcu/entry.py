"""Locked atomic entries: the one mechanism behind every cache and installer.

An entry is a directory that appears complete or not at all, and is checked before each use:
- a per-entry lock (`flock` on a file beside it) so concurrent processes compute it once;
- a unique staging directory, renamed into place only when its contents are complete;
- a manifest (SHA-256, size and mtime of every file) written with it.

A hit is verified against the manifest before it is used: a changed, truncated, missing or
extra file makes the entry *damaged*; callers log that, discard the entry and recompute it,
so a wrong number can never come out of the cache. Verification reads each file once; the
stage cache does it while copying the files out, so it costs little beyond the copy itself.
Large trees (git checkouts) may be checked by size and mtime only (`thorough=False`) on the
hot path and thoroughly by `mlonmcu cache verify`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from mlonmcu.atomic import disk_full, is_disk_full

MANIFEST = ".mlonmcu-manifest.json"
MANIFEST_VERSION = 1
IGNORED = (".git",)  # git keeps its own integrity; a work tree's .git changes when it is read
_CHUNK = 1 << 20

log = logging.getLogger("mlonmcu.entry")
T = TypeVar("T")


@dataclass(frozen=True)
class FileDigest:
    sha256: str
    size: int
    mtime_ns: int


def _walk(root: Path) -> Iterator[Path]:
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in IGNORED)
        for name in sorted(files):
            if name != MANIFEST:
                yield Path(directory, name)


def _copy_hashing(src: Path, dst: Path | None) -> str:
    """SHA-256 of `src`, copying it to `dst` in the same pass when given."""
    digest = hashlib.sha256()
    with src.open("rb") as fin:
        out = dst.open("wb") if dst is not None else None
        try:
            for chunk in iter(lambda: fin.read(_CHUNK), b""):
                digest.update(chunk)
                if out is not None:
                    out.write(chunk)
        finally:
            if out is not None:
                out.close()
    if dst is not None:
        shutil.copystat(src, dst)
    return digest.hexdigest()


def digest_tree(root: Path) -> dict[str, FileDigest]:
    found = {}
    for path in _walk(root):
        stat = path.stat()
        found[path.relative_to(root).as_posix()] = FileDigest(_copy_hashing(path, None), stat.st_size, stat.st_mtime_ns)
    return found


class Entry:
    """One cache entry or installed component directory (see the module docstring)."""

    def __init__(self, path: Path, what: str = ""):
        self.path = path
        self.what = what or str(path)
        self._fd: int | None = None  # the lock this object holds, if any

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(f".{self.path.name}.lock")

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    def exists(self) -> bool:
        return self.manifest_path.is_file()

    @contextmanager
    def locked(self, wait: bool = True, shared: bool = False) -> Iterator[bool]:
        """Hold the entry's lock; yields False (not held) when `wait` is off and another has it.

        The lock file may be deleted by a cleanup while we wait for it; then the lock we got is
        on a file nobody else will open, so we take the lock again on the current file.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        while True:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, mode | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                os.close(fd)
                yield False
                return
            try:
                same = os.fstat(fd).st_ino == os.stat(self.lock_path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        self._fd = fd
        try:
            yield True
        finally:
            self._fd = None
            os.close(fd)

    def share(self) -> None:
        """Turn the exclusive lock this object holds into a shared one: readers may join, but
        nobody may replace or delete the entry until it is released."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_SH)

    def digests(self) -> dict[str, FileDigest] | None:
        try:
            data = json.loads(self.manifest_path.read_text())
            if data.get("version") != MANIFEST_VERSION:
                return None
            return {name: FileDigest(**d) for name, d in data["files"].items()}
        except (OSError, ValueError, TypeError, KeyError):
            return None

    def verify(self, thorough: bool = True, copy: tuple[str, Path] | None = None) -> str:
        """What is wrong with the entry ("" if it is intact).

        `copy=(subdir, dest)` copies the files under `subdir` to `dest` while checking them
        (`dest` may then hold a partial copy when the entry is damaged: the caller clears it).
        """
        expected = self.digests()
        if expected is None:
            return "its manifest is missing or unreadable" if self.path.exists() else "missing"
        present = {p.relative_to(self.path).as_posix(): p for p in _walk(self.path)}
        for name in sorted(expected.keys() - present.keys()):
            return f"{name} is missing"
        for name in sorted(present.keys() - expected.keys()):
            return f"{name} is not in its manifest"
        prefix = f"{copy[0]}/" if copy else None
        for name, want in expected.items():
            path = present[name]
            stat = path.stat()
            if stat.st_size != want.size:
                return f"{name} has {stat.st_size} bytes, its manifest says {want.size}"
            target = None
            if copy is not None and prefix is not None and name.startswith(prefix):
                target = copy[1] / name[len(prefix) :]
                target.parent.mkdir(parents=True, exist_ok=True)
            if target is None and not thorough:
                if stat.st_mtime_ns != want.mtime_ns:
                    return f"{name} was modified after the entry was made"
                continue
            if _copy_hashing(path, target) != want.sha256:
                return f"{name} changed (SHA-256 differs from its manifest)"
        return ""

    def publish(self, fill: Callable[[Path], T]) -> T:
        """Make the entry: `fill` writes into a unique staging directory, which then replaces the
        entry in one rename. Call with the lock held. A failing `fill` leaves nothing behind."""
        parent = self.path.parent
        parent.mkdir(parents=True, exist_ok=True)
        for stale in parent.glob(f".{self.path.name}.staging-*"):  # left by a crash: we hold the lock
            shutil.rmtree(stale, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.staging-", dir=parent))
        try:
            result = fill(staging)
            files = {name: d.__dict__ for name, d in digest_tree(staging).items()}
            (staging / MANIFEST).write_text(json.dumps({"version": MANIFEST_VERSION, "files": files}, indent=0))
            self.remove()
            os.replace(staging, self.path)
        except OSError as err:
            shutil.rmtree(staging, ignore_errors=True)
            if is_disk_full(err):
                raise disk_full(self.path) from None  # the entry being made, not its staging name
            raise
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return result

    def remove(self) -> None:
        """Delete the entry (not its lock file). A directory is first renamed away, so no reader
        ever sees half of it."""
        if self.path.is_symlink() or self.path.is_file():
            self.path.unlink()
        elif self.path.exists():
            trash = self.path.with_name(f".{self.path.name}.trash-{uuid.uuid4().hex[:8]}")
            os.replace(self.path, trash)
            shutil.rmtree(trash, ignore_errors=True)

    def ensure(self, fill: Callable[[Path], object], thorough: bool = True) -> bool:
        """The entry, made if missing and remade if damaged; True when it was already intact."""
        with self.locked():
            return self._ensure_locked(fill, thorough)

    @contextmanager
    def using(self, fill: Callable[[Path], object], thorough: bool = True) -> Iterator[bool]:
        """Like :meth:`ensure`, then keep a shared lock while the caller reads the entry in place
        (e.g. links a library from it), so a cleanup cannot delete it underneath."""
        with self.locked():
            hit = self._ensure_locked(fill, thorough)
            self.share()
            yield hit

    def _ensure_locked(self, fill: Callable[[Path], object], thorough: bool) -> bool:
        problem = self.verify(thorough)
        if not problem:
            log.debug("%s: intact", self.what)
            return True
        if problem != "missing":
            log.warning("%s is damaged (%s): discarded, making it again", self.what, problem)
        self.publish(fill)
        return False


def find_entries(root: Path, depth: int) -> Iterator[Entry]:
    """Every entry `depth` levels below `root` (also those whose manifest is gone), skipping
    staging, trash and lock files."""
    if not root.is_dir():
        return
    level = [root]
    for _ in range(depth):
        level = [c for d in level for c in sorted(d.iterdir()) if c.is_dir() and not c.name.startswith(".")]
    for path in level:
        yield Entry(path)
