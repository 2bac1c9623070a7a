"""Feature `profile`: per-kernel cycles, to find the layer that makes a model slow.

The driver wraps every kernel call in counter reads (templates/mlif/mlonmcu_profile.h); the
harness runs one extra, profiled inference on the first sample so the report's Run figures are
those of unprofiled inferences. The per-layer table is written to postprocess/profile.csv.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mlonmcu.contracts import KernelInfo, Measurement, PostprocessInput
from mlonmcu.features.feature import Feature
from mlonmcu.report import columns as col

if TYPE_CHECKING:  # loaded with the registry's features by every session; pandas only to profile
    import pandas as pd

PROFILE_FILE = "profile.csv"
# the cost of a kernel, in order of preference: what the target measures best
METRICS = ("Cycles", "Instructions", "Time [s]")


def kernel_of(kernels: tuple[KernelInfo, ...], entry: Measurement) -> tuple[int, KernelInfo]:
    """The index and description of a profiled kernel (a placeholder for an index the backend did not list)."""
    index = entry.kernel if entry.kernel is not None else -1
    return index, kernels[index] if 0 <= index < len(kernels) else KernelInfo(f"kernel{index}", (), 0)


def profile_table(kernels: tuple[KernelInfo, ...], measured: tuple[Measurement, ...]) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for entry in measured:
        index, info = kernel_of(kernels, entry)
        cost = entry.cost()
        rows.append(
            {
                "Index": index,
                "Kernel": info.name,
                "TFLite Ops": ",".join(info.ops),
                "Arithmetic": info.arithmetic,
                "MACs": info.macs,
                "Cycles": entry.cycles,
                "Instructions": entry.instructions,
                "Estimated Cycles": entry.estimated_cycles,
                "Time [s]": entry.ns / 1e9 if entry.ns is not None else None,
                "Instructions/MAC": round(cost / info.macs, 2) if cost is not None and info.macs else None,
            }
        )
    frame = pd.DataFrame(rows)
    return frame.dropna(axis=1, how="all") if not frame.empty else frame


class ProfileFeature(Feature):
    name = "profile"
    help = "per-kernel cycles/instructions of one inference, as a per-layer table (postprocess/profile.csv)"

    def compile_definitions(self) -> dict[str, str]:
        return {"MLONMCU_PROFILE": "1"}

    def postprocess(self, inp: PostprocessInput) -> dict[str, Any]:
        measured = inp.harness.profile
        if not measured:
            return {col.PROFILE: "no per-kernel data (the backend or the target measures no kernels, e.g. host_py)"}
        table = profile_table(inp.kernels, measured)
        table.to_csv(inp.out_dir / PROFILE_FILE, index=False)
        metric = next((m for m in METRICS if m in table and table[m].notna().any()), None)
        if metric is None:
            return {col.PROFILE_KERNELS: len(table), col.PROFILE: f"the counter '{inp.counter}' measured nothing"}
        total = float(table[metric].sum())
        floats = float(table.loc[table["Arithmetic"] == "float", metric].sum()) if "Arithmetic" in table else 0.0
        slowest = table.iloc[int(table[metric].to_numpy().argmax())]
        share = 100.0 * slowest[metric] / total if total else 0.0
        return {
            col.PROFILE_KERNELS: len(table),
            col.PROFILE_TOTAL: total,
            col.FLOAT_SHARE: round(100.0 * floats / total, 1) if total else 0.0,
            col.SLOWEST_KERNEL: f"{slowest['Kernel']} ({slowest['TFLite Ops']}, {share:.0f}%)",
        }
