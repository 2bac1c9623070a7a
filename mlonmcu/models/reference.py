"""Reference outputs from LiteRT with its reference kernels (BUILTIN_REF, no delegates).

These are the same integer kernels TFLite Micro uses, so they are the yardstick for
bit-exactness; XNNPACK (LiteRT's default) rounds differently.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mlonmcu.contracts import Sample
from mlonmcu.errors import ModelError


def reference_outputs(model_path: Path, samples: list[Sample]) -> list[Sample]:
    from ai_edge_litert import interpreter as litert

    try:
        interp = litert.Interpreter(
            model_path=str(model_path), experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF
        )
        interp.allocate_tensors()
    except (ValueError, RuntimeError) as err:
        raise ModelError(f"LiteRT cannot load {model_path.name}: {str(err).strip().splitlines()[0]}") from None
    inputs = interp.get_input_details()
    outputs = interp.get_output_details()
    results: list[Sample] = []
    for sample in samples:
        for detail, value in zip(inputs, sample, strict=True):
            interp.set_tensor(detail["index"], value.reshape(detail["shape"]).astype(detail["dtype"]))
        interp.invoke()
        results.append([np.array(interp.get_tensor(d["index"])) for d in outputs])
    return results
