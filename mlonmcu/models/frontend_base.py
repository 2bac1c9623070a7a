"""Frontend: what reads one model format (describe), and what it can convert into it once (convert).

A frontend is named after its format (ModelInfo.frontend); backends say which formats they build
(Backend.formats). A file of another format is converted at LOAD, where `converts` names the
component that does it: the converted model is LOAD's output, cached like every stage's.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from mlonmcu.contracts import ModelInfo
from mlonmcu.plugin import Plugin


class Frontend(Plugin):
    suffixes: ClassVar[tuple[str, ...]] = ()  # the files it reads
    converts: ClassVar[dict[str, str]] = {}  # suffix of a file it converts → the component converting it

    def describe(self, path: Path) -> ModelInfo:
        raise NotImplementedError

    def convert(self, source: Path, out: Path, log: Path) -> Path:
        """Write `source` (a suffix in `converts`) in this format into directory `out`; the new file."""
        raise NotImplementedError
