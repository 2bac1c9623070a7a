"""Feature: an option that cuts across components; it hooks into fixed points of the stages.

Hooks see only what they need: plan-time settings (samples, printed outputs, definitions) and,
after RUN, a :class:`PostprocessInput` — never the live run or another stage's files.
"""

from __future__ import annotations

from typing import Any, ClassVar

from mlonmcu.contracts import PostprocessInput
from mlonmcu.plugin import Plugin


class Feature(Plugin):
    columns: ClassVar[tuple[str, ...]] = ()  # report columns of its own, beyond report/columns.py

    def samples(self) -> int:
        """How many input samples LOAD should prepare and the firmware should run (0 = no opinion)."""
        return 0

    def print_outputs(self) -> bool:
        """Whether the firmware must print its outputs for all samples."""
        return False

    def compile_definitions(self) -> dict[str, str]:
        """Preprocessor definitions for every firmware source (part of the COMPILE key)."""
        return {}

    def postprocess(self, inp: PostprocessInput) -> dict[str, Any]:
        """Report cells (keys from report/columns.py) for the run's row; may write to inp.out_dir."""
        return {}
