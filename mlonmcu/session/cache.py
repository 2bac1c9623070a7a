"""Content-addressed cache of stage outputs (HOME/cache/<stage>/<key>).

A stage's key hashes everything it reads, so a hit is a proof that rerunning would produce the
same files. The same mechanism gives cross-session caching and resume after a crash: an entry
appears atomically (rename) only once its stage finished, and a per-key lock makes concurrent
runs that need the same output (e.g. two targets sharing one firmware) compute it once.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

RESULT_FILE = "result.json"
OUTPUT_DIR = "out"


class StageCache:
    def __init__(self, root: Path, enabled: bool = True):
        self.root = root
        self.enabled = enabled

    def entry(self, stage: str, key: str) -> Path:
        return self.root / stage / key[:2] / key

    @contextmanager
    def _lock(self, stage: str, key: str) -> Iterator[None]:
        lock_dir = self.root / stage / key[:2]
        lock_dir.mkdir(parents=True, exist_ok=True)
        with (lock_dir / f"{key}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def get_or_compute(
        self,
        stage: str,
        key: str,
        compute: Callable[[Path], dict[str, Any]],
        dest: Path,
        use_cache: bool = True,
    ) -> tuple[dict[str, Any], bool]:
        """Fill `dest` with the stage outputs; returns (result, was_cached)."""
        if not (self.enabled and use_cache):
            dest.mkdir(parents=True, exist_ok=True)
            return compute(dest), False
        with self._lock(stage, key):
            entry = self.entry(stage, key)
            if (entry / RESULT_FILE).is_file():
                _copy_tree(entry / OUTPUT_DIR, dest)
                return json.loads((entry / RESULT_FILE).read_text()), True
            dest.mkdir(parents=True, exist_ok=True)
            result = compute(dest)
            staging = Path(tempfile.mkdtemp(prefix=f".{key[:8]}-", dir=entry.parent))
            try:
                _copy_tree(dest, staging / OUTPUT_DIR)
                (staging / RESULT_FILE).write_text(json.dumps(result, indent=1, default=str))
                if entry.exists():  # a partial entry left by a crash before the rename cannot exist;
                    shutil.rmtree(entry)  # an older complete one without result.json is stale
                os.replace(staging, entry)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            return result, False

    def size(self) -> int:
        return sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file()) if self.root.exists() else 0

    def clear(self) -> None:
        if self.root.exists():
            shutil.rmtree(self.root)


def _copy_tree(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for path in src.rglob("*"):
        target = dst / path.relative_to(src)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
