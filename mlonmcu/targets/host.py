"""Target `host_x86`: the firmware as a host program; wall-clock time, no cycle counts."""

from __future__ import annotations

from pathlib import Path

from mlonmcu.contracts import TargetProfile
from mlonmcu.process import Completed, run
from mlonmcu.targets.target import Target, timeout_option


class HostTarget(Target):
    name = "host_x86"
    help = "this machine, compiled with the host gcc; reports wall-clock time only"
    options = (timeout_option(300.0),)
    requires = ("host_gcc",)
    deterministic = False  # wall-clock figures are measurements, never reused from the cache

    def profile(self) -> TargetProfile:
        return TargetProfile(
            family="host",
            toolchain="host_gcc",
            toolchain_file="host_gcc.cmake.j2",
            support=("host",),
            counter="wallclock",
        )

    def execute(self, elf: Path, log: Path) -> Completed:
        return run([elf], log=log, timeout=self.opt("timeout"), check=False, what="host firmware")
