"""Input samples: from the model directory (mlonmcu-models layout) or seeded random.

The layout's `input/N.bin` files are not raw tensors: 4 bytes per element means float32 values
before quantization, 1 byte per element means uint8 values (e.g. pixels); both are quantized
with the input's scale/zero point when the model takes an integer tensor.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mlonmcu.contracts import Sample, TensorInfo
from mlonmcu.errors import ModelError
from mlonmcu.models.model import Model


def quantize(values: np.ndarray, tensor: TensorInfo) -> np.ndarray:
    info = np.iinfo(tensor.dtype)
    scale, zero = tensor.scale[0], tensor.zero_point[0]
    q = np.round(values.astype(np.float64) / scale) + zero
    return np.clip(q, info.min, info.max).astype(tensor.dtype)


def dequantize(values: np.ndarray, tensor: TensorInfo) -> np.ndarray:
    return (values.astype(np.float64) - tensor.zero_point[0]) * tensor.scale[0]


def _from_file(path: Path, tensor: TensorInfo) -> np.ndarray:
    raw = path.read_bytes()
    target = np.dtype(tensor.dtype)
    if len(raw) == tensor.size * 4 and target != np.int32:
        values = np.frombuffer(raw, dtype=np.float32)
    elif len(raw) == tensor.size:
        values = np.frombuffer(raw, dtype=np.uint8)
    elif len(raw) == tensor.nbytes:
        values = np.frombuffer(raw, dtype=target)
    else:
        raise ModelError(
            f"sample {path} has {len(raw)} bytes; input '{tensor.name}' {tensor.shape} {tensor.dtype} "
            f"needs {tensor.size} (uint8), {tensor.size * 4} (float32) or {tensor.nbytes} bytes"
        )
    values = values.reshape(tensor.shape)
    if values.dtype == target:
        return values.copy()
    if target.kind in "iu" and tensor.quantized:
        return quantize(values, tensor)
    return values.astype(target)


def _numbered(directory: Path) -> list[Path]:
    files = [p for p in directory.iterdir() if re.fullmatch(r"\d+\.bin", p.name)]
    return sorted(files, key=lambda p: int(p.stem))


def sample_files(model: Model) -> list[Path]:
    """The model's own input samples (mlonmcu-models layout); [] when it has none."""
    return _numbered(model.input_dir) if model.input_dir is not None else []


def random_sample(inputs: Sequence[TensorInfo], rng: np.random.Generator) -> Sample:
    sample = []
    for tensor in inputs:
        dtype = np.dtype(tensor.dtype)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            sample.append(rng.integers(info.min, info.max, size=tensor.shape, endpoint=True).astype(dtype))
        else:
            sample.append(rng.uniform(-1.0, 1.0, size=tensor.shape).astype(dtype))
    return sample


def prepare_inputs(model: Model, inputs: Sequence[TensorInfo], count: int, seed: int = 0) -> tuple[list[Sample], str]:
    """Up to `count` samples and a note on their origin."""
    count = max(1, count)
    directory = model.input_dir
    if directory is not None and len(inputs) == 1:
        files = _numbered(directory)[:count]
        if files:
            return [[_from_file(f, inputs[0])] for f in files], f"{len(files)} from {directory}"
    rng = np.random.default_rng(seed)
    return [random_sample(inputs, rng) for _ in range(count)], f"{count} random (seed {seed})"


def save_samples(path: Path, samples: list[Sample]) -> None:
    """An .npz that np.load reads, with fixed member timestamps: the same samples give the same
    bytes, so the stages keyed on this file hit the cache after a recompute."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for s, sample in enumerate(samples):
            for t, array in enumerate(sample):
                member = zipfile.ZipInfo(f"s{s}_t{t}.npy", date_time=(1980, 1, 1, 0, 0, 0))
                with archive.open(member, "w") as fh:
                    np.lib.format.write_array(fh, np.ascontiguousarray(array), allow_pickle=False)


def load_samples(path: Path) -> list[Sample]:
    with np.load(path, allow_pickle=False) as data:
        samples: dict[int, dict[int, np.ndarray]] = {}
        for key in data.files:
            s, t = (int(x[1:]) for x in key.split("_"))
            samples.setdefault(s, {})[t] = data[key]
    return [[sample[t] for t in sorted(sample)] for _, sample in sorted(samples.items())]
