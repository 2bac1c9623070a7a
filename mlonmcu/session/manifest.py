"""The artifacts manifest of a run: every file a stage produced, with its content hash."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from mlonmcu.hashing import file_hash

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

    def add_stage(self, stage: str, directory: Path) -> None:
        for path in sorted(p for p in directory.rglob("*") if p.is_file()):
            self.artifacts.append(
                Artifact(str(path.relative_to(self.run_dir)), stage, file_hash(path), path.stat().st_size)
            )

    def to_list(self) -> list[dict[str, object]]:
        return [asdict(a) for a in self.artifacts]

    def write(self) -> Path:
        path = self.run_dir / MANIFEST_FILE
        path.write_text(yaml.safe_dump({"artifacts": self.to_list()}, sort_keys=False), encoding="utf-8")
        return path
