"""Sweep files: a named matrix in YAML, run night after night (environments/sweeps/*.yml).

A sweep file is checked completely before anything runs; every problem names its file, line
and key, because a nightly job that fails at 3 a.m. on run 200 of 300 over a typo is worse than
one that refuses at once. Lists become matrix axes; `exclude` drops combinations, `include`
adds single ones (each its own small matrix); `compare` says what the session is checked against.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mlonmcu import registry
from mlonmcu.config import closest
from mlonmcu.environment import Environment
from mlonmcu.errors import ConfigError
from mlonmcu.report import columns as col
from mlonmcu.session.plan import FlowRequest, plan
from mlonmcu.session.spec import RunSpec, Stage

logger = logging.getLogger("mlonmcu.sweep")

MAX_RUNS = 10_000  # above this a matrix needs --yes: it is more likely a mistake than a plan
TOP_KEYS = (
    "name",
    "description",
    "label",
    "models",
    "backends",
    "targets",
    "platform",
    "frontend",
    "features",
    "config",
    "until",
    "exclude",
    "include",
    "compare",
)
RULE_KEYS = ("model", "backend", "target", "platform", "features", "config")
COMPARE_KEYS = ("against", "thresholds", "gate")
SWEEP_FILE = "sweep.yml"  # the copy a sweep session keeps (resume and compare read it)


@dataclass(frozen=True)
class Rule:
    """An include/exclude entry: every given field must match (a list matches any of its values)."""

    values: dict[str, list[str]]
    config: dict[str, list[str]]
    where: str  # "FILE:LINE" for messages

    def matches(self, spec: RunSpec) -> bool:
        fields = {"model": spec.model.name, "backend": spec.backend, "target": spec.target, "platform": spec.platform}
        for key, wanted in self.values.items():
            if key == "features":
                if not set(wanted) <= set(spec.features):
                    return False
            elif fields[key] not in wanted:
                return False
        for key, wanted in self.config.items():
            option = registry.check_key(key)
            if key not in spec.config or spec.config[key] not in {option.parse(v, key) for v in wanted}:
                return False
        return True

    def request(self, base: FlowRequest) -> FlowRequest:
        """The small matrix an include entry adds (fields it leaves out come from the sweep)."""
        v = self.values
        return FlowRequest(
            models=v.get("model", base.models),
            backends=v.get("backend", base.backends),
            targets=v.get("target", base.targets),
            features=v.get("features", base.features),
            config={**base.config, **self.config},
            until=base.until,
            frontends=base.frontends,
            platform=v.get("platform", [base.platform])[0],
            use_cache=base.use_cache,
        )


@dataclass(frozen=True)
class CompareRules:
    against: str = ""  # "" = do not compare at the end; else baseline | latest | a label | a session id
    thresholds: dict[str, float] = field(default_factory=dict)  # column → allowed increase (0.01 = 1 %)
    gate: bool = True  # the sweep's exit code follows the comparison (0 / 1 / 3)


@dataclass(frozen=True)
class Sweep:
    name: str
    path: Path
    text: str
    request: FlowRequest
    label: str = ""
    description: str = ""
    exclude: tuple[Rule, ...] = ()
    include: tuple[Rule, ...] = ()
    compare: CompareRules = CompareRules()

    def upper_bound(self) -> int:
        """Runs of the matrix before exclusions (a cheap check before planning a huge one)."""
        r = self.request
        axes = [len(r.models), len(r.backends) or 1, len(r.targets) or 1, *(len(v) for v in r.config.values())]
        return math.prod(axes) + len(self.include)


class _Locator:
    """Line numbers of a YAML document's keys, for messages that point into the file."""

    def __init__(self, path: Path, text: str):
        self.path = path
        try:
            self.root = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError:
            self.root = None

    def where(self, *keys: str | int) -> str:
        node = self.root
        line = node.start_mark.line + 1 if node is not None else 1
        for key in keys:
            child = None
            if isinstance(node, yaml.MappingNode):
                for k, v in node.value:
                    if k.value == key:
                        line, child = k.start_mark.line + 1, v
                        break
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
                child = node.value[key]
                line = child.start_mark.line + 1
            if child is None:
                break
            node = child
        return f"{self.path}:{line}"

    def error(self, message: str, *keys: str | int) -> ConfigError:
        path = ".".join(str(k) for k in keys)
        return ConfigError(f"{self.where(*keys)}: {path + ': ' if path else ''}{message}")


def _names(loc: _Locator, value: Any, *keys: str | int, allow_empty: bool = False) -> list[str]:
    """A scalar or a list of scalars, as strings (one value is an axis of one)."""
    values = value if isinstance(value, list) else [value]
    if not values and not allow_empty:
        raise loc.error("empty list: give at least one value or remove the key", *keys)
    for item in values:
        if item is None or isinstance(item, dict | list):
            raise loc.error(f"expected a name or a list of names, got {item!r}", *keys)
    return [str(v) for v in values]


def _known(loc: _Locator, reg: registry.Registry[Any], names: list[str], *keys: str | int) -> None:
    for name in names:
        try:
            reg.get(name)
        except ConfigError as err:
            raise loc.error(str(err), *keys) from None


def _config(loc: _Locator, value: Any, *keys: str | int) -> dict[str, list[str]]:
    if not isinstance(value, dict):
        raise loc.error("expected a mapping of config keys to a value or a list of values", *keys)
    result: dict[str, list[str]] = {}
    for key, raw in value.items():
        key = str(key)
        try:
            option = registry.check_key(key)
        except ConfigError as err:
            raise loc.error(str(err), *keys, key) from None
        values = _names(loc, raw if not isinstance(raw, bool) else str(raw).lower(), *keys, key)
        for item in values:
            try:
                option.parse(item, key)
            except ConfigError as err:
                raise loc.error(str(err), *keys, key) from None
        result[key] = list(dict.fromkeys(values))
    return result


def _rules(loc: _Locator, value: Any, section: str) -> tuple[Rule, ...]:
    if not isinstance(value, list):
        raise loc.error("expected a list of rules (mappings of model/backend/target/platform/features/config)", section)
    rules = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or not item:
            raise loc.error(f"expected a mapping with some of {', '.join(RULE_KEYS)}", section, i)
        values: dict[str, list[str]] = {}
        config: dict[str, list[str]] = {}
        for key, raw in item.items():
            if key not in RULE_KEYS:
                raise loc.error(
                    f"unknown key{closest(str(key), RULE_KEYS)}; valid: {', '.join(RULE_KEYS)}", section, i, key
                )
            if key == "config":
                config = _config(loc, raw, section, i, key)
                continue
            values[key] = _names(loc, raw, section, i, key)
            kind = {"backend": registry.BACKENDS, "target": registry.TARGETS, "platform": registry.PLATFORMS}
            if key in kind:
                _known(loc, kind[key], values[key], section, i, key)
            elif key == "features":
                _known(loc, registry.FEATURES, values[key], section, i, key)
        rules.append(Rule(values, config, loc.where(section, i)))
    return tuple(rules)


def parse_threshold(text: Any, where: str = "") -> float:
    """'1%' → 0.01, '0' → 0.0: how much a metric may grow before it counts as a regression."""
    raw = str(text).strip()
    number = raw[:-1] if raw.endswith("%") else raw
    try:
        value = float(number) / 100.0
    except ValueError:
        raise ConfigError(f"{where}bad threshold '{raw}': expected a percentage such as 0% or 2.5%") from None
    if value < 0 or math.isnan(value):
        raise ConfigError(f"{where}bad threshold '{raw}': must be 0% or more")
    return value


def check_metric(name: str, where: str = "") -> str:
    if name not in col.ALL:
        raise ConfigError(
            f"{where}unknown metric '{name}'{closest(name, col.ALL)}: "
            f"name a report column, e.g. '{col.RUN_INSTRUCTIONS}'"
        )
    return name


def _compare(loc: _Locator, value: Any) -> CompareRules:
    if not isinstance(value, dict):
        raise loc.error("expected a mapping with against / thresholds / gate", "compare")
    for key in value:
        if key not in COMPARE_KEYS:
            raise loc.error(
                f"unknown key{closest(str(key), COMPARE_KEYS)}; valid: {', '.join(COMPARE_KEYS)}", "compare", key
            )
    thresholds: dict[str, float] = {}
    raw = value.get("thresholds") or {}
    if not isinstance(raw, dict):
        raise loc.error("expected a mapping of report column to a percentage", "compare", "thresholds")
    for metric, limit in raw.items():
        where = f"{loc.where('compare', 'thresholds', metric)}: "
        thresholds[check_metric(str(metric), where)] = parse_threshold(limit, where)
    gate = value.get("gate", True)
    if not isinstance(gate, bool):
        raise loc.error("expected true or false", "compare", "gate")
    return CompareRules(str(value.get("against", "baseline")), thresholds, gate)


def load_sweep(path: str | os.PathLike[str]) -> Sweep:
    """Read and check a sweep file; ConfigError names the line and key of the first problem."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"cannot read sweep file {file}: {err.strerror or err}") from None
    return parse_sweep(text, file)


def parse_sweep(text: str, file: Path) -> Sweep:
    loc = _Locator(file, text)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"{file}: not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: expected a mapping with at least 'models:' (see environments/sweeps/)")
    for key in data:
        if key not in TOP_KEYS:
            raise loc.error(f"unknown key{closest(str(key), TOP_KEYS)}; valid: {', '.join(TOP_KEYS)}", str(key))
    if "models" not in data:
        raise ConfigError(f"{file}: no 'models:' — name the models or model groups to run")
    models = _names(loc, data["models"], "models")
    backends = _names(loc, data.get("backends", []), "backends", allow_empty="backends" not in data)
    targets = _names(loc, data.get("targets", []), "targets", allow_empty="targets" not in data)
    features = _names(loc, data.get("features", []), "features", allow_empty=True)
    _known(loc, registry.BACKENDS, backends, "backends")
    _known(loc, registry.TARGETS, targets, "targets")
    _known(loc, registry.FEATURES, features, "features")
    platform = str(data.get("platform", "") or "")
    if platform:
        _known(loc, registry.PLATFORMS, [platform], "platform")
    raw = data.get("frontend") or []  # none: each model's, by its file's suffix
    frontends = [str(f) for f in (raw if isinstance(raw, list) else [raw])]
    _known(loc, registry.FRONTENDS, frontends, "frontend")
    try:
        until = Stage.parse(str(data.get("until", "run")))
    except ConfigError as err:
        raise loc.error(str(err), "until") from None
    if until == Stage.POSTPROCESS:
        raise loc.error("until: postprocess always follows run; use 'run'", "until")
    request = FlowRequest(
        models=models,
        backends=backends,
        targets=targets,
        features=features,
        config=_config(loc, data.get("config") or {}, "config"),
        until=until,
        frontends=frontends,
        platform=platform,
    )
    name = str(data.get("name") or file.stem)
    return Sweep(
        name=name,
        path=file,
        text=text,
        request=request,
        label=str(data.get("label", "") or ""),
        description=str(data.get("description", "") or ""),
        exclude=_rules(loc, data["exclude"], "exclude") if "exclude" in data else (),
        include=_rules(loc, data["include"], "include") if "include" in data else (),
        compare=_compare(loc, data["compare"]) if "compare" in data else CompareRules(),
    )


def apply_rules(sweep: Sweep, specs: list[RunSpec], included: list[list[RunSpec]]) -> list[RunSpec]:
    """The matrix without excluded runs, plus included ones not already in it; runs renumbered."""
    kept = []
    for rule in sweep.exclude:
        if not any(rule.matches(s) for s in specs):
            logger.warning("%s: this exclude rule matches no run of the matrix", rule.where)
    for spec in specs:
        if not any(rule.matches(spec) for rule in sweep.exclude):
            kept.append(spec)
    seen = {_identity(s) for s in kept}
    for extra in included:
        for spec in extra:
            if _identity(spec) not in seen:
                seen.add(_identity(spec))
                kept.append(spec)
    for run_id, spec in enumerate(kept):
        spec.run_dir = spec.run_dir.parent / str(run_id)
        spec.run = run_id
    return kept


def _identity(spec: RunSpec) -> str:
    config = sorted(spec.user_config.items())
    return repr((spec.model.path, spec.backend, spec.target, spec.platform, spec.features, config))


def check_size(count: int, yes: bool) -> None:
    if count > MAX_RUNS and not yes:
        raise ConfigError(
            f"the matrix has {count} runs (more than {MAX_RUNS}): narrow the axes, or pass --yes to run them all"
        )


def plan_sweep(env: Environment, sweep: Sweep, session_id: int, runs_dir: Path) -> list[RunSpec]:
    """The sweep's runs: its matrix, less `exclude`, plus `include` (ConfigError for usage errors)."""
    specs = plan(env, sweep.request, session_id, runs_dir)
    included = [plan(env, rule.request(sweep.request), session_id, runs_dir) for rule in sweep.include]
    return apply_rules(sweep, specs, included)
