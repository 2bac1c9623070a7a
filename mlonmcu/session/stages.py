"""The stages of a run. Each is a function of (its inputs' content, component versions, the config
keys it reads); that key names its cached outputs (see cache.py). A stage's key holds the
digest of the files the previous stage produced, not the previous key, so a recomputed input
that differs can never pick up an output made from the old one."""

from __future__ import annotations

import dataclasses
import logging
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from mlonmcu import registry
from mlonmcu.backends.backend import Backend
from mlonmcu.contracts import (
    BuildResult,
    CompileResult,
    FirmwareRequest,
    LoadResult,
    ModelInfo,
    PostprocessInput,
    RunResult,
    Sample,
    TargetProfile,
    encode,
)
from mlonmcu.errors import MlonmcuError, ModelError, StageError
from mlonmcu.features.feature import Feature
from mlonmcu.hashing import code_fingerprint, tree_hash, value_hash
from mlonmcu.models.model import Model
from mlonmcu.models.reference import LITERT, reference_outputs
from mlonmcu.models.samples import load_samples, prepare_inputs, save_samples
from mlonmcu.platforms import harness
from mlonmcu.platforms.mlif import MlifPlatform
from mlonmcu.process import Completed
from mlonmcu.session.cache import StageCache
from mlonmcu.session.manifest import Manifest
from mlonmcu.session.spec import RunSpec, Stage
from mlonmcu.targets.target import Target

INPUTS_FILE = "inputs.npz"
REFERENCE_FILE = "reference.npz"
OUTPUTS_FILE = "outputs.npz"
RUN_OUTPUT = "output.txt"

logger = logging.getLogger("mlonmcu.stages")
T = TypeVar("T")


class NotCached(Exception):
    """A stage a peeking run would have to compute."""


@dataclass
class RunContext:
    """Live state of one run inside a worker: the plugins and what each finished stage handed on."""

    spec: RunSpec
    cache: StageCache
    model: Model
    backend: Backend
    target: Target
    features: list[Feature]
    platform: MlifPlatform
    manifest: Manifest
    loaded: LoadResult | None = None
    built: BuildResult | None = None
    compiled: CompileResult | None = None
    ran: RunResult | None = None
    keys: dict[Stage, str] = field(default_factory=dict)
    digests: dict[Stage, str] = field(default_factory=dict)  # of each stage's output files
    times: dict[Stage, float] = field(default_factory=dict)
    cached: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)  # damaged cache entries that were recomputed
    peek: bool = False  # only look: a stage whose entry is absent raises NotCached (`sweep plan`)

    @classmethod
    def create(cls, spec: RunSpec) -> RunContext:
        model = Model(
            spec.model.name,
            Path(spec.model.path),
            Path(spec.model.directory) if spec.model.directory else None,
        )
        return cls(
            spec=spec,
            cache=StageCache(spec.cache_dir),
            model=model,
            backend=registry.BACKENDS.get(spec.backend)(spec.config, spec.components, spec.cache_dir),
            target=registry.TARGETS.get(spec.target)(spec.config, spec.components),
            features=[registry.FEATURES.get(f)(spec.config, spec.components) for f in spec.features],
            platform=registry.PLATFORMS.get(spec.platform)(spec.config, spec.components),
            manifest=Manifest(spec.run_dir),
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
        return dict(plugin.versions(self.spec.components))

    def scoped(self, *scopes: str) -> dict[str, Any]:
        return {k: v for k, v in self.spec.config.items() if k.split(".", 1)[0] in scopes}

    def sample_count(self) -> int:
        return max([1, *(f.samples() for f in self.features)])

    def execute(
        self,
        stage: Stage,
        key_parts: dict[str, Any],
        compute: Callable[[Path], T],
        result_type: type[T],
        cacheable: bool = True,
    ) -> T:
        key = value_hash({"stage": stage.name, "code": code_fingerprint(), **key_parts})
        self.keys[stage] = key
        start = time.perf_counter()

        def checked(out: Path) -> T:
            result = compute(out)
            if not isinstance(result, result_type):  # a plugin broke its contract: say which
                raise StageError(
                    f"{stage.name} returned a {type(result).__name__}, not a {result_type.__name__} "
                    f"(plugin {self.spec.backend if stage == Stage.BUILD else self.spec.target})"
                )
            return result

        if self.peek:
            return self._peek(stage, key, result_type, cacheable)
        outcome = self.cache.get_or_compute(
            stage.name.lower(),
            key,
            checked,
            self.stage_dir(stage),
            result_type,
            cacheable=cacheable,
            refresh=not self.spec.use_cache,
        )
        self.times[stage] = time.perf_counter() - start
        if outcome.hit:
            self.cached.append(stage.name.lower())
        if outcome.repaired:
            self.repaired.append(f"{stage.name}: {outcome.repaired}")
        self.digests[stage] = self.manifest.add_stage(stage.name.lower(), self.stage_dir(stage), outcome.files)
        return outcome.result

    def _peek(self, stage: Stage, key: str, result_type: type[T], cacheable: bool) -> T:
        found = self.cache.peek(stage.name.lower(), key, result_type) if cacheable else None
        if found is None:
            raise NotCached(stage.name)
        self.cached.append(stage.name.lower())
        self.digests[stage] = self.manifest.add_known(stage.name.lower(), found.files)
        return found.result

    def needs(self, value: T | None, stage: Stage) -> T:
        if value is None:
            raise StageError(f"internal: {stage.name} has not run")
        return value

    def references(self) -> tuple[list[Sample] | None, str, str]:
        """The reference outputs, the oracle that computed them and, when there are none, why:
        LOAD's (LiteRT, else TFLM's Python interpreter), or the oracle run's
        (validate.reference=tflm), whose stages run here, cached like any run's."""
        oracle = self.spec.oracle
        if oracle is None:
            loaded = self.needs(self.loaded, Stage.LOAD)
            reference = self.stage_dir(Stage.LOAD) / REFERENCE_FILE
            if loaded.reference_error or not reference.is_file():
                return None, "", loaded.reference_error or "missing"
            return load_samples(reference), loaded.oracle or LITERT, ""
        name = f"tflm (tflmi on {oracle.target})"
        if oracle.missing:
            return None, name, f"the TFLM oracle cannot run: {oracle.missing}"
        try:
            ctx = RunContext.create(oracle)
            for stage in stages_of(oracle):
                STAGE_FUNCTIONS[stage](ctx)
        except MlonmcuError as err:
            return None, name, f"TFLM (tflmi on {oracle.target}) did not run the model: {err}"
        return load_samples(ctx.stage_dir(Stage.RUN) / OUTPUTS_FILE), name, ""

    def postprocess_input(self) -> PostprocessInput:
        ran = self.needs(self.ran, Stage.RUN)
        outputs = self.stage_dir(Stage.RUN) / OUTPUTS_FILE
        references, oracle, reference_error = self.references()
        return PostprocessInput(
            model=self.model.name,
            outputs=load_samples(outputs) if outputs.is_file() else [],
            references=references,
            reference_error=reference_error,
            oracle=oracle,
            harness=ran.harness,
            kernels=self.built.kernels if self.built else (),
            counter=ran.counter,
            out_dir=self.postprocess_dir,
        )


def load(ctx: RunContext) -> LoadResult:
    model = ctx.model
    frontend = registry.FRONTENDS.get(ctx.spec.frontend)(ctx.spec.config, ctx.spec.components)
    count = ctx.sample_count()
    inputs_dir = model.input_dir
    parts = {
        "model": ctx.spec.model.sha256,
        "samples": tree_hash(inputs_dir) if inputs_dir else None,
        "frontend": ctx.spec.frontend,
        "count": count,
        "versions": ctx.versions(frontend),
    }

    def compute(out: Path) -> LoadResult:
        path, converted = model.path, ""
        if model.path.suffix.lower() not in frontend.suffixes:  # planned: the frontend converts it
            path = frontend.convert(model.path, out, ctx.log(Stage.LOAD))
            converted = path.name
        info = frontend.describe(path)
        samples, origin = prepare_inputs(model, info.inputs, count)
        save_samples(out / INPUTS_FILE, samples)
        reference_error, oracle = "", ""
        try:
            references, oracle = reference_outputs(path, samples)
            save_samples(out / REFERENCE_FILE, references)
        except ModelError as err:
            reference_error = str(err)
        return LoadResult(info, origin, len(samples), reference_error, oracle, converted)

    ctx.loaded = ctx.execute(Stage.LOAD, parts, compute, LoadResult)
    if ctx.loaded.converted:  # the later stages build the converted model, LOAD's output
        ctx.model = dataclasses.replace(model, path=ctx.stage_dir(Stage.LOAD) / ctx.loaded.converted)
    return ctx.loaded


def _check_format(ctx: RunContext, info: ModelInfo) -> None:
    """A model of a format the backend does not build fails here, naming the backends that do."""
    backend = ctx.backend
    if info.frontend not in backend.formats:
        others = [b.name for b in registry.BACKENDS if info.frontend in b.formats]
        suffix = ctx.model.path.suffix.lower()
        converting = [f.name for f in registry.FRONTENDS if f.name in backend.formats and suffix in f.converts]
        ways = [f"-b {' or -b '.join(others)}"] if others else []
        ways += [f"-F {name} (converts it)" for name in converting]
        raise StageError(
            f"backend {backend.name} takes {' and '.join(backend.formats)} models; {ctx.model.path.name} is "
            f"{info.frontend}: use {' or '.join(ways) or 'another model'}"
        )


def build(ctx: RunContext) -> BuildResult:
    backend = ctx.backend
    loaded = ctx.needs(ctx.loaded, Stage.LOAD)
    info = loaded.info
    _check_format(ctx, info)
    converted = loaded.converted
    parts = {
        # the file BUILD reads: the model, or LOAD's conversion of it (a new key only then)
        "model": ctx.manifest.sha256(f"load/{converted}") if converted else ctx.spec.model.sha256,
        "backend": backend.name,
        "config": ctx.scoped(backend.name),
        "versions": ctx.versions(backend),
    }
    backend.facts = backend.build_facts(ctx.target)
    if backend.facts:  # absent otherwise: keys of backends that read no target fact stay as they were
        parts["target"] = backend.facts

    def compute(out: Path) -> BuildResult:
        return backend.build(ctx.model.path, info, out, ctx.log(Stage.BUILD))

    ctx.built = ctx.execute(Stage.BUILD, parts, compute, BuildResult)
    return ctx.built


def compile_(ctx: RunContext) -> CompileResult:
    built = ctx.needs(ctx.built, Stage.BUILD)
    profile = _with_stack(ctx.target.profile(), built.stack_request)
    print_outputs = any(f.print_outputs() for f in ctx.features)
    definitions = {k: v for f in ctx.features for k, v in f.compile_definitions().items()}
    samples_path = ctx.stage_dir(Stage.LOAD) / INPUTS_FILE
    toolchain = ctx.spec.components[profile.toolchain].version if profile.toolchain in ctx.spec.components else "?"
    parts = {
        "build": ctx.digests[Stage.BUILD],  # the sources ...
        "build_result": encode(built),  # ... and how to compile them (flags, libraries, arena request)
        "samples": ctx.manifest.sha256(f"load/{INPUTS_FILE}"),
        "platform": ctx.spec.platform,
        "config": ctx.scoped(ctx.spec.platform),
        "profile": encode(profile),
        "toolchain": toolchain,
        "print_outputs": print_outputs,
        "definitions": definitions,
    }

    def firmware(out: Path, work: Path, defs: dict[str, str]) -> CompileResult:
        return ctx.platform.compile(
            FirmwareRequest(
                sources=ctx.stage_dir(Stage.BUILD),
                build=built,
                profile=profile,
                samples=load_samples(samples_path),
                print_outputs=print_outputs,
                definitions=defs,
                out=out,
                work=work,
                log=ctx.log(Stage.COMPILE),
                cache_root=ctx.spec.cache_dir,
                toolchain_version=toolchain,
            )
        )

    def compute(out: Path) -> CompileResult:
        work = ctx.spec.run_dir / "work" / "compile"
        requested = built.arena_request
        if requested is None:
            return firmware(out, work, definitions)
        if requested and ctx.target.hardware:  # measuring would need the device during COMPILE
            result = firmware(out, work, {**definitions, "MLONMCU_ARENA_SIZE": str(requested)})
            return _with_arena(result, requested, None)
        needed = _calibrate_arena(ctx, profile, firmware, definitions, work)
        if requested and requested < needed:
            raise StageError(
                f"the arena of {requested} bytes is too small: {ctx.model.name} needs {needed} bytes on "
                f"{ctx.target.name}; set {ctx.backend.name}.arena_size={needed} or leave it 0 (measured)"
            )
        size = requested or needed
        result = firmware(out, work, {**definitions, "MLONMCU_ARENA_SIZE": str(size)})
        return _with_arena(result, size, needed)

    ctx.compiled = ctx.execute(Stage.COMPILE, parts, compute, CompileResult)
    return ctx.compiled


def _with_stack(profile: TargetProfile, request: int) -> TargetProfile:
    """The target's memory map with at least the stack the backend's code asks for."""
    reserved = int(profile.memory.get("stack_size", 0))
    if not reserved or request <= reserved:
        return profile
    logger.info("stack: %d bytes instead of the target's %d, as the backend's code needs", request, reserved)
    return dataclasses.replace(profile, memory={**profile.memory, "stack_size": request})


def _with_arena(result: CompileResult, size: int, needed: int | None) -> CompileResult:
    return CompileResult(result.elf, result.map, result.memory, arena_size=size, arena_needed=needed)


PROBE_ARENA_MAX = 16 << 20


def _calibrate_arena(
    ctx: RunContext,
    profile: TargetProfile,
    firmware: Callable[[Path, Path, dict[str, str]], CompileResult],
    definitions: dict[str, str],
    work: Path,
) -> int:
    """Build and run a calibration firmware that finds the smallest arena the model runs with."""
    ram = int(profile.memory.get("ram_length", 0)) or PROBE_ARENA_MAX
    probe_size = min(PROBE_ARENA_MAX, ram // 2) // 16 * 16
    probe_dir = work / "arena-probe"
    probe_dir.mkdir(parents=True, exist_ok=True)
    defs = {**definitions, "MLONMCU_ARENA_PROBE": "1", "MLONMCU_ARENA_SIZE": str(probe_size)}
    built = firmware(probe_dir, work / "arena-probe-build", defs)
    completed = ctx.target.execute(probe_dir / built.elf, ctx.log(Stage.COMPILE))
    parsed = harness.parse(completed.output)
    record = parsed.record
    if record.end is None or any(e.startswith("trap") for e in record.errors):  # not a question of size
        raise StageError(
            f"the arena calibration firmware failed on {ctx.target.name} ({failure_of(parsed, completed)}): "
            f"{ctx.backend.name}'s AllocateTensors, which runs every operator's Prepare, crashed or aborted — "
            "the model has parameters the framework refuses (a failed check aborts) or hits a bug in it"
        )
    if not parsed.arena_needed:  # it ended, with no arena that works
        raise StageError(
            f"{ctx.backend.name}'s AllocateTensors fails on {ctx.target.name} even with a {probe_size}-byte arena: "
            "an operator's Prepare refuses the model (a type or parameter its TFLM kernel does not take, "
            "e.g. an int8 EXP: TFLM's is float-only), or the model needs a larger arena"
        )
    return parsed.arena_needed


def run(ctx: RunContext) -> RunResult:
    target = ctx.target
    if target.interpreter:
        return _interpret(ctx)
    compiled = ctx.needs(ctx.compiled, Stage.COMPILE)
    built = ctx.needs(ctx.built, Stage.BUILD)
    elf = ctx.stage_dir(Stage.COMPILE) / compiled.elf
    parts = {
        "elf": ctx.manifest.sha256(f"compile/{compiled.elf}"),
        "target": target.name,
        "settings": target.run_settings(),
        "versions": ctx.versions(target),
        **_output_types(ctx),
    }

    def compute(out: Path) -> RunResult:
        return _ran(ctx, target.execute(elf, ctx.log(Stage.RUN)), out, built.status_messages)

    ctx.ran = ctx.execute(Stage.RUN, parts, compute, RunResult, cacheable=target.deterministic)
    return ctx.ran


def _output_types(ctx: RunContext) -> dict[str, Any]:
    # the printed bytes become arrays of the model's output types and shapes: two models can
    # share one firmware (an elementwise model over 2×160×8 values and its twin over 2×80×16)
    info = ctx.needs(ctx.loaded, Stage.LOAD).info
    return {"outputs": [[t.dtype, list(t.shape)] for t in info.outputs]}


def _interpret(ctx: RunContext) -> RunResult:
    """A target that runs the model file in its framework's own interpreter (host_py): no
    firmware; the interpreter prints the harness's lines, so the rest is a firmware run's."""
    target, backend = ctx.target, ctx.backend
    if backend.framework != target.interpreter:
        backends = [b.name for b in registry.BACKENDS if b.framework == target.interpreter]
        raise StageError(
            f"target {target.name} runs the model in {target.interpreter}'s own interpreter, not with backend "
            f"{backend.name} ({backend.framework}): use -b {' or -b '.join(backends)} there, or -t host_x86 to "
            f"run {backend.name} on this machine"
        )
    _check_format(ctx, ctx.needs(ctx.loaded, Stage.LOAD).info)
    inputs = ctx.stage_dir(Stage.LOAD) / INPUTS_FILE
    parts = {
        "model": ctx.spec.model.sha256,  # host_py reads only .tflite files: never a conversion
        "samples": ctx.manifest.sha256(f"load/{INPUTS_FILE}"),
        "target": target.name,
        "settings": target.run_settings(),
        "versions": ctx.versions(target),
        **_output_types(ctx),
    }

    def compute(out: Path) -> RunResult:
        return _ran(ctx, target.interpret(ctx.model.path, inputs, ctx.log(Stage.RUN)), out, {})

    ctx.ran = ctx.execute(Stage.RUN, parts, compute, RunResult, cacheable=target.deterministic)
    return ctx.ran


def _ran(ctx: RunContext, completed: Completed, out: Path, messages: dict[int, str]) -> RunResult:
    """What a run printed → its outputs (saved in `out`) and records; StageError if it failed."""
    target = ctx.target
    info = ctx.needs(ctx.loaded, Stage.LOAD).info
    (out / RUN_OUTPUT).write_text(completed.output)
    parsed = harness.parse(completed.output)
    record = target.adjust(parsed.record)
    failure = failure_of(parsed, completed, messages)
    if failure:
        raise StageError(failure)
    outputs = [
        [np.frombuffer(parsed.outputs[s][i], dtype=t.dtype).reshape(t.shape) for i, t in enumerate(info.outputs)]
        for s in sorted(parsed.outputs)
    ]
    save_samples(out / OUTPUTS_FILE, outputs)
    model = target.timing_model()
    arena = parsed.arena_needed if target.interpreter else None  # a firmware's is measured at COMPILE
    return RunResult(record, target.profile().counter, model.name if model is not None else "", arena)


def _exit_status(code: int) -> str:
    """A host process's return code as a person reads it (a negative one is a signal)."""
    try:
        return f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
    except ValueError:
        return f"exit code {code}"


def failure_of(parsed: harness.ParsedOutput, completed: Completed, messages: dict[int, str] | None = None) -> str:
    """Why a firmware run did not produce trustworthy figures ("" when it did)."""
    record = parsed.record
    traps = [e for e in record.errors if e.startswith("trap")]
    if traps:
        return f"firmware crashed: {traps[0]}"
    if record.end is None:
        return f"firmware stopped without finishing ({_exit_status(completed.returncode)})"
    status = record.end.status
    if status != 0:
        detail = f" ({record.errors[0]})" if record.errors else ""
        meaning = (messages or {}).get(status)
        where = "model init" if record.setup.status != 0 else "model"
        return f"{where} returned status {status}{': ' + meaning if meaning else ''}{detail}"
    if completed.returncode != 0:
        return f"firmware exited with code {completed.returncode}"
    return ""


STAGE_FUNCTIONS: dict[Stage, Callable[[RunContext], object]] = {
    Stage.LOAD: load,
    Stage.BUILD: build,
    Stage.COMPILE: compile_,
    Stage.RUN: run,
}


#: the stages that compute (and cache) something, in order; POSTPROCESS only reads their outputs
COMPUTED_STAGES = (Stage.LOAD, Stage.BUILD, Stage.COMPILE, Stage.RUN)


def stages_of(spec: RunSpec) -> list[Stage]:
    """The computed stages a run of `spec` goes through (up to its `until`); a target that
    interprets the model itself (host_py) has no firmware to BUILD and COMPILE."""
    firmware = not registry.TARGETS.get(spec.target).interpreter
    return [s for s in COMPUTED_STAGES if s <= spec.until and (firmware or s not in (Stage.BUILD, Stage.COMPILE))]


def cached_stages(spec: RunSpec) -> list[str]:
    """The stages a run of `spec` would restore from the cache now; nothing is computed or copied.

    Keys chain on the previous stage's file digests, so this follows the chain through the
    entries' manifests exactly as a run would (damage is only found when a run verifies them).
    """
    if spec.missing or not spec.use_cache:  # --no-cache recomputes every stage: nothing is restored
        return []
    try:
        ctx = RunContext.create(spec)
    except (MlonmcuError, OSError):
        return []
    ctx.peek = True
    try:
        for stage in stages_of(spec):
            STAGE_FUNCTIONS[stage](ctx)
    except (NotCached, MlonmcuError, OSError):
        pass
    return ctx.cached
