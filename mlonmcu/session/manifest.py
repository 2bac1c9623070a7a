"""The artifacts manifest of a run: every file a stage produced, with its content hash."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from mlonmcu import yamlio
from mlonmcu.atomic import write_text
from mlonmcu.hashing import file_hash, value_hash

MANIFEST_FILE = "manifest.yml"


@dataclass
class Artifact:
    name: str
    stage: str
    sha256: str
    size: int


class Manifest:
    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.artifacts: list[Artifact] = []

    def add_stage(self, stage: str, directory: Path, known: Mapping[str, str] | None = None) -> str:
        """Record a stage's files; returns the digest of all of them (what later stages key on).

        `known` holds hashes already computed (and verified) by the cache: not read again.
        """
        known = known or {}
        hashes = {}
        for path in sorted(p for p in directory.rglob("*") if p.is_file()):
            rel = path.relative_to(directory).as_posix()
            sha = known.get(rel) or file_hash(path)
            hashes[rel] = sha
            self.artifacts.append(Artifact(str(path.relative_to(self.run_dir)), stage, sha, path.stat().st_size))
        return value_hash(hashes)

    def add_known(self, stage: str, files: Mapping[str, str]) -> str:
        """Record a stage's files from their known hashes alone (a cache entry looked at, not copied)."""
        for rel, sha in sorted(files.items()):
            self.artifacts.append(Artifact(f"{stage}/{rel}", stage, sha, 0))
        return value_hash(dict(sorted(files.items())))

    def sha256(self, name: str) -> str:
        """The hash of one recorded artifact (path relative to the run directory)."""
        return next(a.sha256 for a in self.artifacts if a.name == name)

    def to_list(self) -> list[dict[str, object]]:
        return [asdict(a) for a in self.artifacts]

    def write(self) -> Path:
        return write_text(self.run_dir / MANIFEST_FILE, yamlio.dump({"artifacts": self.to_list()}, sort_keys=False))
