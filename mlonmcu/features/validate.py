"""Feature `validate`: run every sample through the firmware and compare with the reference."""

from __future__ import annotations

from typing import Any

import numpy as np

from mlonmcu.config import Option
from mlonmcu.features.feature import Feature
from mlonmcu.registry import FEATURES

INT_ATOL = 1.0
FLOAT_ATOL = 1e-4
FLOAT_RTOL = 1e-3


@FEATURES.register
class ValidateFeature(Feature):
    name = "validate"
    help = "compare the firmware's outputs with LiteRT reference-kernel outputs on every sample"
    options = (
        Option("samples", "int", 10, "how many of the model's samples to run (at most)"),
        Option(
            "atol",
            "float",
            None,
            f"absolute tolerance; default {INT_ATOL:g} int unit or {FLOAT_ATOL:g} for floats",
        ),
        Option("rtol", "float", None, f"relative tolerance for float outputs; default {FLOAT_RTOL:g}"),
    )

    def samples(self) -> int:
        return max(1, int(self.opt("samples")))

    def print_outputs(self) -> bool:
        return True

    def postprocess(
        self,
        row: dict[str, Any],
        outputs: list[list[np.ndarray]],
        references: list[list[np.ndarray]],
        info: Any,
    ) -> None:
        if len(outputs) < len(references):
            row["Validation"] = "fail"
            row["Validation Detail"] = f"firmware printed outputs for {len(outputs)} of {len(references)} samples"
            return
        worst = 0.0
        passed = True
        mismatched = 0
        for sample_out, sample_ref in zip(outputs, references, strict=False):
            sample_ok = True
            for got, ref in zip(sample_out, sample_ref, strict=True):
                is_int = np.dtype(ref.dtype).kind in "iu"
                diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
                worst = max(worst, float(diff.max()) if diff.size else 0.0)
                atol = self.opt("atol")
                atol = (INT_ATOL if is_int else FLOAT_ATOL) if atol is None else atol
                rtol = self.opt("rtol")
                rtol = (0.0 if is_int else FLOAT_RTOL) if rtol is None else rtol
                if not np.all(diff <= atol + rtol * np.abs(ref.astype(np.float64))):
                    sample_ok = False
            if not sample_ok:
                passed = False
                mismatched += 1
        row["Validation"] = "pass" if passed else "fail"
        row["Max Abs Error"] = worst
        row["Validation Detail"] = (
            f"{len(references)} samples" if passed else f"{mismatched} of {len(references)} samples out of tolerance"
        )
