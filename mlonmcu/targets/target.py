"""Target: what a firmware runs on, how it is started and how its counters are read.

A target knows nothing about backends. It gives the platform a :class:`TargetProfile`
(toolchain, flags, startup/linker/support templates) and turns an ELF into raw output text.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from mlonmcu.config import Option
from mlonmcu.contracts import HarnessRecord, TargetProfile
from mlonmcu.plugin import Plugin
from mlonmcu.process import Completed

if TYPE_CHECKING:
    from mlonmcu.targets.timing import TimingModel


def timeout_option(default: float) -> Option:
    return Option("timeout", float, default, "seconds before a hung run is killed (Reason: timeout)", above=0)


class Target(Plugin):
    deterministic: ClassVar[bool] = True  # may RUN results be cached?
    hardware: ClassVar[bool] = False  # running needs a device attached (not just a program)
    # the framework whose own interpreter runs the model file on this target (host_py: "tflm"):
    # no firmware, so no BUILD, COMPILE or platform; "" for every firmware target
    interpreter: ClassVar[str] = ""

    def profile(self) -> TargetProfile:
        raise NotImplementedError

    def core_simd(self) -> str:
        """The SIMD extension of the target's core that kernels may be laid out for ("dsp": Arm's
        DSP extension, "mve": Arm's Helium, "rvv": RISC-V vectors; "": none). A backend that reads it (build_facts)
        builds once per value, not once per target."""
        return ""

    def run_settings(self) -> dict[str, Any]:
        """What besides the ELF determines the output (part of the RUN key)."""
        return {k: v for k, v in self.config.items() if k.startswith(f"{self.name}.")}

    def timing_model(self) -> TimingModel | None:
        """The model that turns counted instruction classes into Estimated Cycles (targets/timing.py)."""
        return None

    def adjust(self, record: HarnessRecord) -> HarnessRecord:
        """Turn raw counter readings into report figures where the target needs to (see systick),
        and counted instruction classes into Estimated Cycles where a timing model is chosen."""
        from mlonmcu.targets import timing

        model = self.timing_model()
        return timing.with_estimates(record, model) if model is not None else record

    def execute(self, elf: Path, log: Path) -> Completed:
        """Run the firmware, return its output; raise RunTimeout/ToolError on failure."""
        raise NotImplementedError

    def interpret(self, model: Path, inputs: Path, log: Path) -> Completed:
        """A target with an `interpreter`: run the model on the samples in `inputs`, printing the
        harness's lines as a firmware would."""
        raise NotImplementedError
