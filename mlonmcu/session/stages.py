"""The stages of a run. Each is a function of (its inputs' hashes, component versions, the config
keys it reads); that key names its cached outputs (see cache.py)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mlonmcu import registry
from mlonmcu.backends.backend import Backend
from mlonmcu.errors import ModelError, StageError
from mlonmcu.features.feature import Feature
from mlonmcu.hashing import code_fingerprint, file_hash, tree_hash, value_hash
from mlonmcu.models.frontend import ModelInfo
from mlonmcu.models.model import Model
from mlonmcu.models.reference import reference_outputs
from mlonmcu.models.samples import Sample, prepare_inputs
from mlonmcu.platforms import harness
from mlonmcu.session.cache import StageCache
from mlonmcu.session.spec import RunSpec, Stage
from mlonmcu.targets.target import Target

INFO_FILE = "model_info.json"
INPUTS_FILE = "inputs.npz"
REFERENCE_FILE = "reference.npz"
OUTPUTS_FILE = "outputs.npz"
RUN_OUTPUT = "output.txt"


def save_samples(path: Path, samples: list[Sample]) -> None:
    np.savez(path, **{f"s{s}_t{t}": a for s, sample in enumerate(samples) for t, a in enumerate(sample)})


def load_samples(path: Path) -> list[Sample]:
    with np.load(path) as data:
        samples: dict[int, dict[int, np.ndarray]] = {}
        for key in data.files:
            s, t = (int(x[1:]) for x in key.split("_"))
            samples.setdefault(s, {})[t] = data[key]
    return [[sample[t] for t in sorted(sample)] for _, sample in sorted(samples.items())]


@dataclass
class RunContext:
    """Live state of one run inside a worker."""

    spec: RunSpec
    cache: StageCache
    model: Model
    backend: Backend
    target: Target
    features: list[Feature]
    platform: Any
    results: dict[Stage, dict[str, Any]] = field(default_factory=dict)
    keys: dict[Stage, str] = field(default_factory=dict)
    times: dict[Stage, float] = field(default_factory=dict)
    cached: list[str] = field(default_factory=list)

    @classmethod
    def create(cls, spec: RunSpec) -> RunContext:
        model = Model(
            spec.model.name,
            Path(spec.model.path),
            Path(spec.model.directory) if spec.model.directory else None,
        )
        return cls(
            spec=spec,
            cache=StageCache(spec.cache_dir, spec.use_cache),
            model=model,
            backend=registry.BACKENDS.get(spec.backend)(spec.config, spec.components, spec.cache_dir),
            target=registry.TARGETS.get(spec.target)(spec.config, spec.components),
            features=[registry.FEATURES.get(f)(spec.config) for f in spec.features],
            platform=registry.PLATFORMS.get(spec.platform)(spec.config),
        )

    def stage_dir(self, stage: Stage) -> Path:
        return self.spec.run_dir / stage.name.lower()

    @property
    def postprocess_dir(self) -> Path:
        return self.stage_dir(Stage.POSTPROCESS)

    def log(self, stage: Stage) -> Path:
        path = self.spec.run_dir / "logs" / f"{stage.name.lower()}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def versions(self, plugin: Any) -> dict[str, str]:
        return {c: self.spec.components.get(c, {}).get("version", "?") for c in plugin.requires}

    def scoped(self, *scopes: str) -> dict[str, Any]:
        return {k: v for k, v in self.spec.config.items() if k.split(".", 1)[0] in scopes}

    @property
    def info(self) -> ModelInfo:
        return ModelInfo.from_dict(self.results[Stage.LOAD]["info"])

    def sample_count(self) -> int:
        return max([1, *(f.samples() for f in self.features)])

    def execute(self, stage: Stage, key_parts: dict[str, Any], compute: Any, cacheable: bool = True) -> dict[str, Any]:
        key = value_hash({"stage": stage.name, "code": code_fingerprint(), **key_parts})
        self.keys[stage] = key
        start = time.perf_counter()
        result, hit = self.cache.get_or_compute(
            stage.name.lower(), key, compute, self.stage_dir(stage), use_cache=cacheable
        )
        self.times[stage] = time.perf_counter() - start
        if hit:
            self.cached.append(stage.name.lower())
        self.results[stage] = result
        return result


def load(ctx: RunContext) -> dict[str, Any]:
    model = ctx.model
    frontend = registry.FRONTENDS.get(ctx.spec.frontend)()
    count = ctx.sample_count()
    inputs_dir = model.input_dir
    parts = {
        "model": file_hash(model.path),
        "samples": tree_hash(inputs_dir) if inputs_dir else None,
        "frontend": ctx.spec.frontend,
        "count": count,
        "versions": ctx.versions(frontend),
    }

    def compute(out: Path) -> dict[str, Any]:
        info = frontend.describe(model.path)
        samples, origin = prepare_inputs(model, info.inputs, count)
        save_samples(out / INPUTS_FILE, samples)
        (out / INFO_FILE).write_text(json.dumps(info.to_dict(), indent=1))
        reference_error = ""
        try:
            save_samples(out / REFERENCE_FILE, reference_outputs(model.path, samples))
        except ModelError as err:
            reference_error = str(err)
        return {
            "info": info.to_dict(),
            "samples": origin,
            "num_samples": len(samples),
            "reference_error": reference_error,
        }

    return ctx.execute(Stage.LOAD, parts, compute)


def build(ctx: RunContext) -> dict[str, Any]:
    backend = ctx.backend
    parts = {
        "model": file_hash(ctx.model.path),
        "backend": backend.name,
        "config": ctx.scoped(backend.name),
        "versions": ctx.versions(backend),
    }
    info = ctx.info

    def compute(out: Path) -> dict[str, Any]:
        result = backend.build(ctx.model.path, info, out, ctx.log(Stage.BUILD))
        return {"model": ctx.model.name, "backend": backend.name, **result}

    return ctx.execute(Stage.BUILD, parts, compute)


def compile_(ctx: RunContext) -> dict[str, Any]:
    profile = ctx.target.profile()
    print_outputs = any(f.print_outputs() for f in ctx.features)
    definitions = {k: v for f in ctx.features for k, v in f.compile_definitions().items()}
    samples_path = ctx.stage_dir(Stage.LOAD) / INPUTS_FILE
    parts = {
        "build": ctx.keys[Stage.BUILD],
        "samples": file_hash(samples_path),
        "platform": ctx.spec.platform,
        "config": ctx.scoped(ctx.spec.platform),
        "profile": profile.to_dict(),
        "toolchain": ctx.spec.components.get(profile.toolchain, {}).get("version", "?"),
        "print_outputs": print_outputs,
        "definitions": definitions,
    }

    def firmware(out: Path, work: Path, defs: dict[str, str]) -> dict[str, Any]:
        return ctx.platform.compile(
            sources=ctx.stage_dir(Stage.BUILD),
            build=ctx.results[Stage.BUILD],
            profile=profile,
            samples=load_samples(samples_path),
            print_outputs=print_outputs,
            definitions=defs,
            out=out,
            work=work,
            log=ctx.log(Stage.COMPILE),
            cache_root=ctx.spec.cache_dir,
            toolchain_version=ctx.spec.components.get(profile.toolchain, {}).get("version", "?"),
        )

    def compute(out: Path) -> dict[str, Any]:
        work = ctx.spec.run_dir / "work" / "compile"
        calibration = ctx.results[Stage.BUILD].get("arena_calibration")
        if calibration is None:
            return firmware(out, work, definitions)
        requested = int(calibration.get("requested") or 0)
        if requested and ctx.target.hardware:  # measuring would need the device during COMPILE
            result = firmware(out, work, {**definitions, "MLONMCU_ARENA_SIZE": str(requested)})
            return {**result, "arena_size": requested}
        needed = _calibrate_arena(ctx, profile, firmware, definitions, work)
        if requested and requested < needed:
            raise StageError(
                f"the arena of {requested} bytes is too small: {ctx.model.name} needs {needed} bytes on "
                f"{ctx.target.name}; set {ctx.backend.name}.arena_size={needed} or leave it 0 (measured)"
            )
        size = requested or needed
        result = firmware(out, work, {**definitions, "MLONMCU_ARENA_SIZE": str(size)})
        return {**result, "arena_size": size, "arena_needed": needed}

    return ctx.execute(Stage.COMPILE, parts, compute)


PROBE_ARENA_MAX = 16 << 20


def _calibrate_arena(ctx: RunContext, profile: Any, firmware: Any, definitions: dict[str, str], work: Path) -> int:
    """Build and run a calibration firmware that finds the smallest arena the model runs with."""
    ram = int(profile.memory.get("ram_length", 0)) or PROBE_ARENA_MAX
    probe_size = min(PROBE_ARENA_MAX, ram // 2) // 16 * 16
    probe_dir = work / "arena-probe"
    probe_dir.mkdir(parents=True, exist_ok=True)
    defs = {**definitions, "MLONMCU_ARENA_PROBE": "1", "MLONMCU_ARENA_SIZE": str(probe_size)}
    built = firmware(probe_dir, work / "arena-probe-build", defs)
    completed = ctx.target.execute(probe_dir / built["elf"], ctx.log(Stage.COMPILE))
    parsed = harness.parse(completed.output)
    needed = int((parsed.arena or {}).get("needed", 0))
    if needed == 0:
        failure = _failure(parsed, completed.returncode) or "no ARENA line"
        raise StageError(
            f"cannot size the arena on {ctx.target.name}: even {probe_size} bytes are not enough "
            f"or the calibration firmware failed ({failure})"
        )
    return needed


def run(ctx: RunContext) -> dict[str, Any]:
    target = ctx.target
    elf = ctx.stage_dir(Stage.COMPILE) / ctx.results[Stage.COMPILE]["elf"]
    parts = {
        "compile": ctx.keys[Stage.COMPILE],
        "elf": file_hash(elf),
        "target": target.name,
        "settings": target.run_settings(),
        "versions": ctx.versions(target),
    }
    info = ctx.info

    def compute(out: Path) -> dict[str, Any]:
        completed = target.execute(elf, ctx.log(Stage.RUN))
        (out / RUN_OUTPUT).write_text(completed.output)
        parsed = harness.parse(completed.output)
        target.adjust(parsed)
        failure = _failure(parsed, completed.returncode, ctx.results[Stage.BUILD].get("status_messages", {}))
        if failure:
            raise StageError(failure)
        outputs = [
            [np.frombuffer(parsed.outputs[s][i], dtype=t.dtype).reshape(t.shape) for i, t in enumerate(info.outputs)]
            for s in sorted(parsed.outputs)
        ]
        save_samples(out / OUTPUTS_FILE, outputs)
        return {"harness": parsed.to_dict(), "counter": target.profile().counter}

    return ctx.execute(Stage.RUN, parts, compute, cacheable=target.deterministic)


def _failure(parsed: harness.HarnessResult, returncode: int, messages: dict[str, str] | None = None) -> str:
    traps = [e for e in parsed.errors if e.startswith("trap")]
    if traps:
        return f"firmware crashed: {traps[0]}"
    if parsed.end is None:
        return f"firmware stopped without finishing (exit code {returncode})"
    status = parsed.end.get("status", 0)
    if status != 0:
        detail = f" ({parsed.errors[0]})" if parsed.errors else ""
        meaning = (messages or {}).get(str(status))
        where = "model init" if parsed.setup.get("status", 0) != 0 else "model"
        return f"{where} returned status {status}{': ' + meaning if meaning else ''}{detail}"
    if returncode != 0:
        return f"firmware exited with code {returncode}"
    return ""


STAGE_FUNCTIONS = {Stage.LOAD: load, Stage.BUILD: build, Stage.COMPILE: compile_, Stage.RUN: run}
