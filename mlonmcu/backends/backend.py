"""Backend: how a model becomes C/C++ sources implementing the `mlonmcu_model_*` C API.

A backend knows nothing about targets; the API it implements is templates/mlif/mlonmcu_model.h.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from mlonmcu.config import Option
from mlonmcu.models.frontend import ModelInfo


class Backend:
    name: ClassVar[str]
    framework: ClassVar[str]
    help: ClassVar[str]
    options: ClassVar[tuple[Option, ...]] = ()
    requires: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self, config: dict[str, Any], components: dict[str, dict[str, str]] | None = None, cache_dir: Path | None = None
    ):
        self.config = config
        self.components = components or {}  # located components: version, location, ...
        self.cache_dir = cache_dir or Path(".")  # HOME/cache: for data shared by all runs

    def opt(self, name: str) -> Any:
        return self.config[f"{self.name}.{name}"]

    def build(self, model_path: Path, info: ModelInfo, out: Path, log: Path) -> dict[str, Any]:
        """Write sources to `out`; return facts for the report (at least `arena_size`)."""
        raise NotImplementedError
