"""Feature: an option that cuts across components; it hooks into fixed points of the stages."""

from __future__ import annotations

from typing import Any, ClassVar

from mlonmcu.config import Option


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

    def postprocess(
        self, row: dict[str, Any], outputs: list[list[Any]], references: list[list[Any]], info: Any
    ) -> None:
        """Add columns to the run's report row."""
