"""YAML for the files mlonmcu writes per run (run.yml, manifest.yml, session.yml): libyaml's C
parser and emitter when PyYAML has them — the pure-Python ones cost ~40 ms per run, which is
most of what a fully cached rerun spends outside its stages. Same safe subset, same output."""

from __future__ import annotations

from typing import Any

import yaml

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def load(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)


def dump(data: Any, **options: Any) -> str:
    return str(yaml.dump(data, Dumper=_Dumper, **options))
