"""Feature `validate`: run every sample through the firmware and compare with the reference."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from mlonmcu.config import Option
from mlonmcu.features.feature import Feature
from mlonmcu.registry import FEATURES

if TYPE_CHECKING:
    from mlonmcu.session.stages import RunContext

INT_ATOL = 1.0
FLOAT_ATOL = 1e-4
FLOAT_RTOL = 1e-3


@FEATURES.register
class ValidateFeature(Feature):
    name = "validate"
    help = "compare the firmware's outputs with LiteRT reference-kernel outputs on every sample"
    options = (
        Option("samples", "int", 10, "how many of the model's samples to run (at most)"),
        Option("atol", "float", None, f"absolute tolerance (default {INT_ATOL:g} int unit, {FLOAT_ATOL:g} for floats)"),
        Option("rtol", "float", None, f"relative tolerance for float outputs; default {FLOAT_RTOL:g}"),
    )

    def samples(self) -> int:
        return max(1, int(self.opt("samples")))

    def print_outputs(self) -> bool:
        return True

    def postprocess(self, ctx: RunContext, row: dict[str, Any]) -> None:
        from mlonmcu.session.spec import Stage
        from mlonmcu.session.stages import OUTPUTS_FILE, REFERENCE_FILE, load_samples

        load = ctx.results[Stage.LOAD]
        reference_path = ctx.stage_dir(Stage.LOAD) / REFERENCE_FILE
        if load.get("reference_error") or not reference_path.is_file():
            row["Validation"] = "fail"
            row["Validation Detail"] = f"no reference outputs: {load.get('reference_error') or 'missing'}"
            return
        self.compare(row, load_samples(ctx.stage_dir(Stage.RUN) / OUTPUTS_FILE), load_samples(reference_path))

    def tolerance(self, dtype: np.dtype) -> tuple[float, float]:
        is_int = np.dtype(dtype).kind in "iu"
        atol, rtol = self.opt("atol"), self.opt("rtol")
        atol = (INT_ATOL if is_int else FLOAT_ATOL) if atol is None else atol
        rtol = (0.0 if is_int else FLOAT_RTOL) if rtol is None else rtol
        return atol, rtol

    def compare(self, row: dict[str, Any], outputs: list[list[np.ndarray]], references: list[list[np.ndarray]]) -> None:
        if len(outputs) < len(references):
            row["Validation"] = "fail"
            row["Validation Detail"] = f"firmware printed outputs for {len(outputs)} of {len(references)} samples"
            return
        worst = 0.0
        mismatched = 0
        for sample_out, sample_ref in zip(outputs, references, strict=False):
            sample_ok = True
            for got, ref in zip(sample_out, sample_ref, strict=True):
                diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
                worst = max(worst, float(diff.max()) if diff.size else 0.0)
                atol, rtol = self.tolerance(ref.dtype)
                sample_ok &= bool(np.all(diff <= atol + rtol * np.abs(ref.astype(np.float64))))
            mismatched += not sample_ok
        row["Validation"] = "pass" if mismatched == 0 else "fail"
        row["Max Abs Error"] = worst
        row["Validation Detail"] = (
            f"{len(references)} samples"
            if mismatched == 0
            else f"{mismatched} of {len(references)} samples out of tolerance"
        )
