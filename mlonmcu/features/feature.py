"""Feature: an option that cuts across components; it hooks into fixed points of the stages."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from mlonmcu.config import Option

if TYPE_CHECKING:
    from mlonmcu.session.stages import RunContext


class Feature:
    name: ClassVar[str]
    help: ClassVar[str]
    options: ClassVar[tuple[Option, ...]] = ()
    requires: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: dict[str, Any]):
        self.config = config

    def opt(self, name: str) -> Any:
        return self.config[f"{self.name}.{name}"]

    def samples(self) -> int:
        """How many input samples LOAD should prepare and the firmware should run (0 = no opinion)."""
        return 0

    def print_outputs(self) -> bool:
        """Whether the firmware must print its outputs for all samples."""
        return False

    def compile_definitions(self) -> dict[str, str]:
        """Preprocessor definitions for every firmware source (part of the COMPILE key)."""
        return {}

    def postprocess(self, ctx: RunContext, row: dict[str, Any]) -> None:
        """Add columns to the run's report row (and artifacts to ctx.postprocess_dir)."""
