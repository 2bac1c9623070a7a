"""Feature `validate`: run every sample through the firmware and compare with the reference."""

from __future__ import annotations

from typing import Any

import numpy as np

from mlonmcu.config import Option
from mlonmcu.contracts import PostprocessInput, Sample
from mlonmcu.features.feature import Feature
from mlonmcu.models.reference import TFLM_PYTHON
from mlonmcu.report import columns as col

INT_ATOL = 1.0
FLOAT_ATOL = 1e-4
FLOAT_RTOL = 1e-3
MAX_SAMPLES = 1000  # embedded in the firmware image: more would only fill the disk
# no oracle for this model (LiteRT refuses or crashes on it): neither pass nor fail, the detail says why
NO_REFERENCE = "no reference"


class ValidateFeature(Feature):
    name = "validate"
    help = "compare the firmware's outputs with LiteRT reference-kernel outputs on every sample"
    options = (
        Option("samples", int, 10, "how many of the model's samples to run (at most)", min=1, max=MAX_SAMPLES),
        Option(
            "atol", float, None, f"absolute tolerance (default {INT_ATOL:g} int unit, {FLOAT_ATOL:g} for floats)", min=0
        ),
        Option("rtol", float, None, f"relative tolerance for float outputs; default {FLOAT_RTOL:g}", min=0),
        Option(
            "reference",
            str,
            "litert",
            "the oracle: litert = LiteRT's reference kernels; tflm = TFLite Micro's reference kernels "
            "(tflmi built for the host: the arithmetic TFLM users ship; needs `mlonmcu setup tflm`)",
            choices=("litert", "tflm"),
        ),
    )

    def samples(self) -> int:
        return int(self.opt("samples"))

    def print_outputs(self) -> bool:
        return True

    def postprocess(self, inp: PostprocessInput) -> dict[str, Any]:
        if inp.references is None:
            return {
                col.VALIDATION: NO_REFERENCE,
                col.VALIDATION_DETAIL: f"no reference outputs: {inp.reference_error or 'missing'}",
            }
        cells = self.compare(inp.outputs, inp.references)
        cells[col.ORACLE] = inp.oracle
        if self.opt("reference") == "tflm":
            cells[col.VALIDATION_DETAIL] = f"{cells[col.VALIDATION_DETAIL]} (reference: TFLM on the host)"
        elif inp.oracle == TFLM_PYTHON:
            cells[col.VALIDATION_DETAIL] = (
                f"{cells[col.VALIDATION_DETAIL]} (reference: TFLM's Python interpreter; LiteRT refused the model)"
            )
        return cells

    def tolerance(self, dtype: np.dtype) -> tuple[float, float]:
        is_int = np.dtype(dtype).kind in "iu"
        atol, rtol = self.opt("atol"), self.opt("rtol")
        atol = (INT_ATOL if is_int else FLOAT_ATOL) if atol is None else atol
        rtol = (0.0 if is_int else FLOAT_RTOL) if rtol is None else rtol
        return atol, rtol

    def compare(self, outputs: list[Sample], references: list[Sample]) -> dict[str, Any]:
        if len(outputs) < len(references):
            return {
                col.VALIDATION: "fail",
                col.VALIDATION_DETAIL: f"firmware printed outputs for {len(outputs)} of {len(references)} samples",
            }
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
        return {
            col.VALIDATION: "pass" if mismatched == 0 else "fail",
            col.MAX_ABS_ERROR: worst,
            col.VALIDATION_DETAIL: (
                f"{len(references)} samples"
                if mismatched == 0
                else f"{mismatched} of {len(references)} samples out of tolerance"
            ),
        }
