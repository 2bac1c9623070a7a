"""Feature `profile`: per-kernel cycles, to find the layer that makes a model slow.

The driver wraps every kernel call in counter reads (templates/mlif/mlonmcu_profile.h); the
harness runs one extra, profiled inference on the first sample so the report's Run figures are
those of unprofiled inferences. The per-layer table is written to postprocess/profile.csv.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from mlonmcu.features.feature import Feature
from mlonmcu.registry import FEATURES

if TYPE_CHECKING:
    from mlonmcu.session.stages import RunContext

PROFILE_FILE = "profile.csv"


def profile_table(kernels: list[dict[str, Any]], measured: list[dict[str, int]]) -> pd.DataFrame:
    rows = []
    for entry in measured:
        index = entry["kernel"]
        info = kernels[index] if index < len(kernels) else {"name": f"kernel{index}", "ops": [], "macs": 0}
        cost = entry.get("instructions", entry.get("cycles"))
        rows.append(
            {
                "Index": index,
                "Kernel": info["name"],
                "TFLite Ops": ",".join(info["ops"]),
                "Arithmetic": info.get("arithmetic", ""),
                "MACs": info["macs"],
                "Cycles": entry.get("cycles"),
                "Instructions": entry.get("instructions"),
                "Time [s]": entry["ns"] / 1e9 if "ns" in entry else None,
                "Instructions/MAC": round(cost / info["macs"], 2) if cost is not None and info["macs"] else None,
            }
        )
    frame = pd.DataFrame(rows)
    return frame.dropna(axis=1, how="all") if not frame.empty else frame


@FEATURES.register
class ProfileFeature(Feature):
    name = "profile"
    help = "per-kernel cycles/instructions of one inference, as a per-layer table (postprocess/profile.csv)"

    def compile_definitions(self) -> dict[str, str]:
        return {"MLONMCU_PROFILE": "1"}

    def postprocess(self, ctx: RunContext, row: dict[str, Any]) -> None:
        from mlonmcu.session.spec import Stage

        measured = ctx.results[Stage.RUN]["harness"].get("profile", [])
        kernels = ctx.results[Stage.BUILD].get("kernels", [])
        if not measured:
            row["Profile"] = "no per-kernel data (the backend does not support profiling)"
            return
        table = profile_table(kernels, measured)
        table.to_csv(ctx.postprocess_dir / PROFILE_FILE, index=False)
        metric = "Cycles" if "Cycles" in table else "Time [s]"
        total = float(table[metric].sum())
        floats = float(table.loc[table["Arithmetic"] == "float", metric].sum()) if "Arithmetic" in table else 0.0
        slowest = table.loc[table[metric].idxmax()]
        row["Profile Kernels"] = len(table)
        row["Profile Total"] = total
        row["Float Share [%]"] = round(100.0 * floats / total, 1) if total else 0.0
        row["Slowest Kernel"] = f"{slowest['Kernel']} ({slowest['TFLite Ops']}, {100.0 * slowest[metric] / total:.0f}%)"
