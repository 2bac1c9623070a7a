"""Model: a model file plus the directory (mlonmcu-models layout) that may describe it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mlonmcu.config import closest
from mlonmcu.errors import ModelError

MODEL_SUFFIXES = (".tflite", ".onnx")  # the files a model directory's models are (frontends' `suffixes`)
GROUPS_FILE = "modelgroups.yml"


@dataclass(frozen=True)
class Model:
    """What to run. `directory` holds definition.yml, input/N.bin, output_tflite/N.bin if present."""

    name: str
    path: Path
    directory: Path | None = None

    @property
    def definition(self) -> dict[str, Any]:
        if self.directory is None or not (self.directory / "definition.yml").is_file():
            return {}
        try:
            return yaml.safe_load((self.directory / "definition.yml").read_text(encoding="utf-8")) or {}
        except yaml.YAMLError:
            return {}

    @property
    def input_dir(self) -> Path | None:
        if self.directory is None:
            return None
        candidate = self.directory / "input"
        return candidate if candidate.is_dir() else None


def _in_directory(root: Path, name: str) -> Model | None:
    for suffix in MODEL_SUFFIXES:
        nested = root / name / f"{name}{suffix}"
        if nested.is_file():
            return Model(name, nested.resolve(), nested.parent.resolve())
        flat = root / f"{name}{suffix}"
        if flat.is_file():
            return Model(name, flat.resolve(), None)
    return None


def find_model(spec: str, model_dirs: list[Path]) -> Model:
    """A model by name (searched in the model directories in order) or by file path."""
    path = Path(spec).expanduser()
    if path.suffix in MODEL_SUFFIXES or path.is_file():
        if not path.is_file():
            raise ModelError(f"model file '{spec}' does not exist")
        parent = path.resolve().parent
        directory = parent if (parent / "definition.yml").is_file() or (parent / "input").is_dir() else None
        return Model(path.stem, path.resolve(), directory)
    for root in model_dirs:
        found = _in_directory(root, spec)
        if found:
            return found
    known = [m.name for m in list_models(model_dirs)]
    dirs = ", ".join(str(d) for d in model_dirs) or "none"
    raise ModelError(f"unknown model '{spec}'{closest(spec, known)}: not found in the model directories ({dirs})")


def frontend_name(path: Path) -> str:
    """The frontend that reads a model file, by its suffix: each frontend declares its `suffixes`.
    A file given by path with another suffix is read as TFLite, whose check of the flatbuffer's
    identifier then names what is wrong with it."""
    from mlonmcu import registry

    for cls in registry.FRONTENDS:
        if path.suffix.lower() in cls.suffixes:
            return str(cls.name)
    return "tflite"


def list_models(model_dirs: list[Path]) -> list[Model]:
    """All models in the model directories; the first directory wins on name clashes."""
    seen: dict[str, Model] = {}
    for root in model_dirs:
        if not root.is_dir():
            continue
        for entry in sorted(root.iterdir()):
            name = entry.stem if entry.is_file() else entry.name
            if name in seen:
                continue
            model = _in_directory(root, name)
            if model:
                seen[name] = model
    return list(seen.values())


def model_groups(model_dirs: list[Path]) -> dict[str, list[str]]:
    """Named groups (modelgroups.yml in a model directory), e.g. `tinymlperf`."""
    groups: dict[str, list[str]] = {}
    for root in model_dirs:
        path = root / GROUPS_FILE
        if path.is_file():
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            for name, members in data.items():
                groups.setdefault(str(name), [str(m) for m in members or []])
    return groups


def expand_models(specs: list[str], model_dirs: list[Path]) -> list[str]:
    """Replace group names by their members, keeping order and dropping duplicates."""
    groups = model_groups(model_dirs)
    out: list[str] = []
    for spec in specs:
        for name in groups.get(spec, [spec]):
            if name not in out:
                out.append(name)
    return out
