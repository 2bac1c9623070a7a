"""Planning: `mlonmcu flow`'s request → the run matrix, with every usage error found before any run.

Names, config keys and values are checked here (exit code 2 at the CLI), including keys that no
run of the matrix would read: a `-c qemu_rv32.arch=...` on a spike-only sweep is a mistake to
report, not a setting to drop.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlonmcu import config as cfg
from mlonmcu import registry
from mlonmcu.environment import Environment
from mlonmcu.errors import ConfigError
from mlonmcu.hashing import file_hash
from mlonmcu.models.model import Model, expand_models, find_model, frontend_name
from mlonmcu.models.samples import sample_files
from mlonmcu.session.spec import ModelRef, RunSpec, Stage
from mlonmcu.setup import installer
from mlonmcu.setup.deps import Installed

logger = logging.getLogger("mlonmcu.plan")


@dataclass
class FlowRequest:
    """What `mlonmcu flow` asks for; the session turns it into the run matrix."""

    models: list[str]
    backends: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    features: list[str] = field(default_factory=list)
    config: dict[str, list[str]] = field(default_factory=dict)
    until: Stage = Stage.RUN
    # [] = each model's by its file's suffix (models/model.py: frontend_name); a frontend that
    # converts (onnx from .tflite) makes a row of the model in its format
    frontends: list[str] = field(default_factory=list)
    platform: str = ""
    use_cache: bool = True

    def to_dict(self) -> dict[str, Any]:
        """What a session keeps (request.json) to plan the same matrix again when resumed."""
        return {**self.__dict__, "until": self.until.name}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FlowRequest:
        data = dict(data)
        legacy = data.pop("frontend", "")  # sessions before `frontends`: one name, "tflite"
        data.setdefault("frontends", [legacy] if legacy else [])
        return cls(**{**data, "until": Stage.parse(data["until"])})


def _check_enabled(env: Environment, kind: str, names: list[str], reg: registry.Registry[Any]) -> None:
    for name in names:
        reg.get(name)
        if name not in env.enabled[kind]:
            raise ConfigError(
                f"{reg.kind} '{name}' is not enabled in {env.file} (enabled: {', '.join(env.enabled[kind]) or 'none'});"
                f" add it to '{kind}:' there"
            )


class _Components:
    """Component look-up, once per component per plan (it runs subprocesses and hashes files)."""

    def __init__(self, env: Environment):
        self.env = env
        self.found: dict[str, Installed] = {}
        self.missing: dict[str, str] = {}

    def check(self, names: list[str]) -> tuple[dict[str, Installed], dict[str, str]]:
        todo = [n for n in dict.fromkeys(names) if n not in self.found and n not in self.missing]
        if todo:
            found, missing = installer.check(self.env, todo)
            self.found.update(found)
            self.missing.update(missing)
        return (
            {n: self.found[n] for n in names if n in self.found},
            {n: self.missing[n] for n in names if n in self.missing},
        )

    def of(self, plugins: dict[str, Any]) -> tuple[dict[str, Installed], dict[str, str]]:
        """What the plugins require (found, missing), plus the optional ones that are present
        (used when there, e.g. the QEMU plugin)."""
        found, missing = self.check([c for cls in plugins.values() for c in cls.requires])
        optional, _ = self.check([c for cls in plugins.values() for c in cls.optional])
        return {**found, **optional}, missing


def plugins_of(frontend: str, backend: str, platform: str, target: str, features: list[str]) -> dict[str, Any]:
    """The plugin classes one run uses, by name (the names are their config scopes). On a target
    that interprets the model itself (host_py) no firmware is built: neither the backend's
    settings and components nor the platform's are used."""
    target_class = registry.TARGETS.get(target)
    firmware = (
        {}
        if target_class.interpreter
        else {
            backend: registry.BACKENDS.get(backend),
            platform: registry.PLATFORMS.get(platform),
        }
    )
    return {
        frontend: registry.FRONTENDS.get(frontend),
        **firmware,
        target: target_class,
        **{f: registry.FEATURES.get(f) for f in features},
    }


def _unused_key_error(key: str) -> ConfigError:
    scope, _ = cfg.split_key(key)
    for reg in registry.REGISTRIES:
        if scope in reg:
            if reg is registry.COMPONENTS or key.split(".", 1)[1] not in {o.name for o in reg.get(scope).options}:
                continue
            return ConfigError(
                f"{key}: no run uses {reg.kind} {scope} (add it with -{reg.kind[0]} {scope}, or drop -c {key})"
            )
    return ConfigError(
        f"{key} is a setting of component {scope}, not of a run: set it in environment.yml under "
        f"components: {{{scope}: {{{key.split('.', 1)[1]}: ...}}}}"
    )


def _warn_about_samples(models: list[Model], values: list[str]) -> None:
    wanted = max(int(raw, 0) for raw in values)
    for model in models:
        available = len(sample_files(model))
        if available and wanted > available:
            logger.warning(
                "validate.samples=%d: model %s has %d samples; %d will run", wanted, model.name, available, available
            )


ORACLE_BACKEND, ORACLE_TARGET = "tflmi", "host_x86"


def _oracle(spec: RunSpec, components: _Components, defaults: dict[str, Any]) -> RunSpec:
    """validate.reference=tflm: TFLM's reference kernels on the host, on the run's own samples
    (same model, same `validate.samples`: the same LOAD entry); its outputs are the reference."""
    plugins = plugins_of(spec.frontend, ORACLE_BACKEND, spec.platform, ORACLE_TARGET, ["validate"])
    scopes = {name: tuple(cls.options) for name, cls in plugins.items()}
    found, missing = components.of(plugins)
    user = {"validate.samples": str(spec.config["validate.samples"])}
    return RunSpec(
        session=spec.session,
        run=spec.run,
        run_dir=spec.run_dir / "oracle",
        model=spec.model,
        frontend=spec.frontend,
        backend=ORACLE_BACKEND,
        platform=spec.platform,
        target=ORACLE_TARGET,
        features=["validate"],
        config=cfg.resolve(scopes, defaults, user),
        user_config={},
        until=Stage.RUN,
        cache_dir=spec.cache_dir,
        use_cache=spec.use_cache,
        components=found,
        missing=installer.missing_message(missing) if missing else "",
    )


def _frontends(request: FlowRequest, model: Model, backend: str) -> list[str]:
    """The frontends a model runs through: the requested ones (each must read the file or
    convert it), else the one its suffix names — or, where the backend does not build that
    format, one that converts the file into a format it builds (iree: a .tflite via ONNX)."""
    suffix = model.path.suffix.lower()
    if not request.frontends:
        own = frontend_name(model.path)
        formats = registry.BACKENDS.get(backend).formats
        if own in formats:
            return [own]
        converting = [f.name for f in registry.FRONTENDS if f.name in formats and suffix in f.converts]
        return converting[:1] or [own]  # none: BUILD says which backends take it
    for name in request.frontends:
        cls = registry.FRONTENDS.get(name)
        if suffix not in cls.suffixes and suffix not in cls.converts:
            takes = ", ".join([*cls.suffixes, *(f"{s} (converted)" for s in cls.converts)])
            raise ConfigError(f"frontend {name} takes {takes}; model {model.name} is {model.path.name}")
    return list(request.frontends)


def plan(env: Environment, request: FlowRequest, session_id: int, runs_dir: Path) -> list[RunSpec]:
    """The run matrix: models × backends × targets × config values (usage errors raise ConfigError)."""
    if not request.models:
        raise ConfigError("no model given: name one (see `mlonmcu models`) or pass a .tflite path")
    backends = request.backends or [env.first("backends")]
    targets = request.targets or [env.first("targets")]
    platform = request.platform or env.first("platforms")
    features = list(dict.fromkeys(request.features))
    _check_enabled(env, "backends", backends, registry.BACKENDS)
    _check_enabled(env, "targets", targets, registry.TARGETS)
    _check_enabled(env, "platforms", [platform], registry.PLATFORMS)
    _check_enabled(env, "features", features, registry.FEATURES)
    for name in request.frontends:
        registry.FRONTENDS.get(name)
    for key, values in request.config.items():
        option = registry.check_key(key)
        for value in values:
            option.parse(value, key)
    models = [find_model(m, env.model_dirs) for m in expand_models(request.models, env.model_dirs)]
    hashes = {model.path: file_hash(model.path) for model in models}
    if "validate" in features and "validate.samples" in request.config:
        _warn_about_samples(models, request.config["validate.samples"])
    defaults = env.defaults()
    components = _Components(env)
    specs: list[RunSpec] = []
    seen: set[str] = set()
    used_keys: set[str] = set()
    for model, backend in [(m, b) for m in models for b in backends]:
        for frontend in _frontends(request, model, backend):
            for target in targets:
                plugins = plugins_of(frontend, backend, platform, target, features)
                scopes = {name: tuple(cls.options) for name, cls in plugins.items()}
                readable = {f"{name}.{o.name}" for name, options in scopes.items() for o in options}
                used_keys |= readable & set(request.config)
                found, missing = components.of(plugins)
                for combo in cfg.expand_matrix(request.config):
                    user = {k: v for k, v in combo.items() if k in readable}
                    identity = repr((model.path, frontend, backend, target, sorted(user.items())))
                    if identity in seen:
                        continue
                    seen.add(identity)
                    run_id = len(specs)
                    spec = RunSpec(
                        session=session_id,
                        run=run_id,
                        run_dir=runs_dir / str(run_id),
                        model=ModelRef(
                            model.name,
                            str(model.path),
                            str(model.directory) if model.directory else None,
                            hashes[model.path],
                        ),
                        frontend=frontend,
                        backend=backend,
                        platform=platform,
                        target=target,
                        features=features,
                        config=cfg.resolve(scopes, defaults, user),
                        user_config={k: registry.check_key(k).parse(v, k) for k, v in user.items()},
                        until=request.until,
                        cache_dir=env.cache_dir,
                        use_cache=request.use_cache,
                        components=found,
                        missing=installer.missing_message(missing) if missing else "",
                    )
                    if spec.config.get("validate.reference") == "tflm":
                        spec.oracle = _oracle(spec, components, defaults)
                    specs.append(spec)
    for key in request.config:
        if key not in used_keys:
            raise _unused_key_error(key)
    return specs
