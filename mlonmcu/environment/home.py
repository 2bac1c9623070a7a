"""Where HOME is, and creating it from an environment template."""

from __future__ import annotations

import os
from pathlib import Path

from mlonmcu.config import closest
from mlonmcu.data import environments_dir
from mlonmcu.errors import ConfigError

ENV_FILE = "environment.yml"
DEFAULT_TEMPLATE = "default"


def default_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "mlonmcu"


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    """`-H`, else $MLONMCU_HOME, else the per-user default home."""
    if home:
        return Path(home).expanduser().resolve()
    if os.environ.get("MLONMCU_HOME"):
        return Path(os.environ["MLONMCU_HOME"]).expanduser().resolve()
    return default_home()


def template_names() -> list[str]:
    return sorted(p.name for p in environments_dir().iterdir() if (p / f"{ENV_FILE}.j2").is_file())


def render_template(name: str) -> str:
    names = template_names()
    if name not in names:
        raise ConfigError(f"unknown environment template '{name}'{closest(name, names)}; valid: {', '.join(names)}")
    import jinja2  # only for `init`: not on every command's path

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(environments_dir() / name),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    return env.get_template(f"{ENV_FILE}.j2").render(template=name)


def init_home(home: Path, template: str = DEFAULT_TEMPLATE, force: bool = False) -> Path:
    """Write HOME/environment.yml from a template; an existing file is kept unless `force`."""
    path = home / ENV_FILE
    if path.exists() and not force:
        raise ConfigError(f"{path} already exists (use --force to overwrite it)")
    text = render_template(template)
    try:
        home.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        raise ConfigError(unwritable_home(home, err)) from None
    return path


def unwritable_home(home: Path, err: OSError) -> str:
    """Why HOME cannot be written, and where to put one instead (a read-only ~/.local, a full disk)."""
    where = f" ({err.filename})" if err.filename and Path(err.filename) != home else ""
    return (
        f"cannot write the mlonmcu HOME {home}: {err.strerror or err}{where}; choose a writable one with "
        "`-H DIR --create`, $MLONMCU_HOME or $XDG_DATA_HOME"
    )
