"""Render the Jinja templates under templates/ (StrictUndefined: a missing value is a bug)."""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlonmcu.data import templates_dir

if TYPE_CHECKING:
    import jinja2


@cache
def _environment() -> jinja2.Environment:
    import jinja2  # loaded by the first render: a session restored from the cache renders nothing

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates_dir()),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=False,
        autoescape=False,
    )


def render(template: str, dest: Path, **values: Any) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(_environment().get_template(template).render(**values), encoding="utf-8")
    return dest


def install_directory(name: str, dest: Path, **values: Any) -> list[Path]:
    """Copy a template directory: `*.j2` files are rendered (suffix dropped), others copied."""
    source = templates_dir() / name
    written = []
    for path in sorted(source.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(source)
        if path.suffix == ".j2":
            written.append(render(f"{name}/{rel.as_posix()}", dest / rel.with_suffix(""), **values))
        else:
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            written.append(target)
    return written


def c_byte_lines(data: bytes, per_line: int = 24) -> list[str]:
    """A byte string as lines of a C initialiser."""
    return [", ".join(f"0x{b:02x}" for b in data[i : i + per_line]) + "," for i in range(0, len(data), per_line)]
