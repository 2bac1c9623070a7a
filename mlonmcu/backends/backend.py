"""Backend: how a model becomes C/C++ sources implementing the `mlonmcu_model_*` C API.

A backend knows nothing about targets; the API it implements is templates/mlif/mlonmcu_model.h.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from mlonmcu.contracts import BuildResult, ModelInfo
from mlonmcu.plugin import Plugin
from mlonmcu.setup.deps import Installed


class Backend(Plugin):
    framework: ClassVar[str]

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        components: Mapping[str, Installed] | None = None,
        cache_dir: Path | None = None,
    ):
        super().__init__(config, components)
        self.cache_dir = cache_dir or Path(".")  # HOME/cache: for data shared by all runs

    def build(self, model_path: Path, info: ModelInfo, out: Path, log: Path) -> BuildResult:
        """Write sources to `out`; say how to compile them and what the report should know."""
        raise NotImplementedError
