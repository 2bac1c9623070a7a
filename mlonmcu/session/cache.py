"""Content-addressed cache of stage outputs (HOME/cache/<stage>/<xx>/<key>).

A stage's key hashes everything it reads, so a hit stands for rerunning the stage — provided the
entry is still what the stage wrote. Every entry is a locked atomic entry (entry.py): it
appears only once its stage finished, concurrent runs that need it (two targets sharing one
firmware) compute it once, and a hit is verified against its manifest while it is copied into
the run. A damaged entry (a changed, missing or extra file) is logged, discarded and computed
again; `--no-cache` recomputes and replaces the entry.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from mlonmcu.contracts import decode, encode
from mlonmcu.entry import Entry, find_entries

RESULT_FILE = "result.json"
OUTPUT_DIR = "out"
STAGES = ("load", "build", "compile", "run")

logger = logging.getLogger("mlonmcu.cache")
T = TypeVar("T")


@dataclass
class CacheOutcome(Generic[T]):
    result: T
    hit: bool
    repaired: str = ""  # what was wrong with a damaged entry that was recomputed
    files: dict[str, str] = field(default_factory=dict)  # output file → SHA-256, when known


class StageCache:
    def __init__(self, root: Path, enabled: bool = True):
        self.root = root
        self.enabled = enabled

    def entry(self, stage: str, key: str) -> Entry:
        return Entry(self.root / stage / key[:2] / key, f"{stage.upper()} cache entry {key[:12]}")

    def get_or_compute(
        self,
        stage: str,
        key: str,
        compute: Callable[[Path], T],
        dest: Path,
        result_type: type[T],
        *,
        cacheable: bool = True,
        refresh: bool = False,
    ) -> CacheOutcome[T]:
        """Fill `dest` with the stage outputs, from a verified entry or by computing them.

        `cacheable=False`: never stored (measurements of a real clock or chip); `refresh`:
        compute even on a hit and replace the entry (`--no-cache`).
        """
        if not (self.enabled and cacheable):
            dest.mkdir(parents=True, exist_ok=True)
            return CacheOutcome(compute(dest), False)
        entry = self.entry(stage, key)
        with entry.locked():
            problem = "refresh requested" if refresh else ""
            if not refresh:
                restored = self._restore(entry, dest, result_type)
                if isinstance(restored, CacheOutcome):
                    logger.info("cache hit: %s %s", stage, key[:12])
                    return restored
                problem = restored
                if problem == "missing":
                    logger.info("cache miss: %s %s", stage, key[:12])
                else:
                    logger.warning("%s is damaged (%s): discarded, recomputing", entry.what, problem)
            _clear(dest)
            result = compute(dest)

            def fill(staging: Path) -> None:
                shutil.copytree(dest, staging / OUTPUT_DIR, symlinks=True)
                (staging / RESULT_FILE).write_text(json.dumps(encode(result), indent=1))

            entry.publish(fill)
            repaired = problem if problem not in ("missing", "refresh requested") else ""
            return CacheOutcome(result, False, repaired, _output_files(entry))

    def peek(self, stage: str, key: str, result_type: type[T]) -> CacheOutcome[T] | None:
        """The entry's result and file digests without copying or verifying (`sweep plan`)."""
        entry = self.entry(stage, key)
        if not (self.enabled and entry.exists()):
            return None
        try:
            result = decode(result_type, json.loads((entry.path / RESULT_FILE).read_text()))
        except (OSError, ValueError, TypeError):
            return None
        return CacheOutcome(result, True, "", _output_files(entry))

    def _restore(self, entry: Entry, dest: Path, result_type: type[T]) -> CacheOutcome[T] | str:
        """The verified entry copied into `dest`, or what is wrong with it ("missing" if absent)."""
        problem = entry.verify(copy=(OUTPUT_DIR, dest))
        if not problem:
            try:
                result = decode(result_type, json.loads((entry.path / RESULT_FILE).read_text()))
            except (OSError, ValueError, TypeError) as err:
                problem = f"{RESULT_FILE} does not hold a {result_type.__name__}: {err}"
            else:
                return CacheOutcome(result, True, "", _output_files(entry))
        if problem != "missing":
            entry.remove()
        _clear(dest)
        return problem

    def entries(self) -> Iterator[Entry]:
        """Every stage entry (for `mlonmcu cache verify`)."""
        for stage in STAGES:
            yield from find_entries(self.root / stage, depth=2)


def _output_files(entry: Entry) -> dict[str, str]:
    prefix = OUTPUT_DIR + "/"
    return {n[len(prefix) :]: d.sha256 for n, d in (entry.digests() or {}).items() if n.startswith(prefix)}


def _clear(directory: Path) -> None:
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True, exist_ok=True)
