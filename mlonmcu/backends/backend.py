"""Backend: how a model becomes C/C++ sources implementing the `mlonmcu_model_*` C API.

A backend knows nothing about targets but the facts it asks for (build_facts, e.g. the core's
SIMD extension), which key its BUILD; the API it implements is templates/mlif/mlonmcu_model.h.
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
    formats: ClassVar[tuple[str, ...]] = ("tflite",)  # the frontends whose models it builds (ModelInfo.frontend)

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        components: Mapping[str, Installed] | None = None,
        cache_dir: Path | None = None,
    ):
        super().__init__(config, components)
        self.cache_dir = cache_dir or Path(".")  # HOME/cache: for data shared by all runs
        self.facts: dict[str, str] = {}  # build_facts of the run's target, set before build()

    def build_facts(self, target: Any) -> dict[str, str]:
        """What BUILD reads of the target (part of the BUILD key); none by default, so one BUILD
        serves every target."""
        return {}

    def build(self, model_path: Path, info: ModelInfo, out: Path, log: Path) -> BuildResult:
        """Write sources to `out`; say how to compile them and what the report should know."""
        raise NotImplementedError
