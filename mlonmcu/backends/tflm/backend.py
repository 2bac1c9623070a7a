"""Backend `tflmi`: TensorFlow Lite Micro's interpreter with the model compiled in.

BUILD writes the firmware sources (model array, op resolver, arena) and describes the TFLM
library; COMPILE builds that library once per target (cached) and, since the arena a model
needs depends on the target's ABI, measures it with a calibration firmware first.
"""

from __future__ import annotations

from pathlib import Path

from mlonmcu.backends.backend import Backend
from mlonmcu.backends.tflm import cmsis_nn
from mlonmcu.backends.tflm.muriscv_nn import MuriscvNn
from mlonmcu.backends.tflm.tree import CORE_OPTIMIZATION, CXX_FLAGS, DEFINITIONS, TflmTree
from mlonmcu.config import Option
from mlonmcu.contracts import BuildResult, KernelInfo, LibrarySpec, ModelInfo
from mlonmcu.errors import StageError
from mlonmcu.hashing import value_hash
from mlonmcu.models.frontend import operator_macs
from mlonmcu.models.tflite_graph import read_graph, unrunnable_message
from mlonmcu.platforms.templates import c_byte_lines, render

PROBE_DEFAULT_ARENA = 1 << 20
KERNEL_COMPONENTS = {"reference": (), "cmsis_nn": ("cmsis_nn", "cmsis"), "muriscv_nn": ("muriscv_nn",)}
STATUS_MESSAGES = {
    -10: "the model's TFLite schema version is not the one TFLM was built for",
    -11: "the op resolver refused an operator (resolver full?)",
    -12: "AllocateTensors failed: the arena is too small for this model (tflmi.arena_size=0 measures it)",
    -13: "Invoke failed",
}


def tflm_identity(tree: str, sources: list[str], kernels: list[LibrarySpec]) -> str:
    """What the TFLM library is. Its CMSIS-NN glue compiles against the kernel library's headers,
    which CMSIS-NN and muRISCV-NN fill differently for the same sources: their identity is part of it."""
    return value_hash([tree, sources, *([[k.identity for k in kernels]] if kernels else [])])


class TflmiBackend(Backend):
    name = "tflmi"
    framework = "tflm"
    help = "TensorFlow Lite Micro interpreter (reference or CMSIS-NN kernels), the model compiled into the firmware"
    options = (
        Option(
            "arena_size",
            int,
            0,
            "arena bytes; 0: the smallest arena the model runs with, measured on the target",
            min=0,
            max=1 << 30,
        ),
        Option(
            "kernels",
            str,
            "reference",
            "TFLM's kernels: reference; cmsis_nn (TFLM's CMSIS-NN kernels: SIMD on Cortex-M4/M7/M33/M55, "
            "portable C elsewhere; `mlonmcu setup cmsis_nn`); muriscv_nn (the same glue on muRISCV-NN: RVV on "
            "vector ISAs, scalar C elsewhere; `mlonmcu setup muriscv_nn`)",
            choices=("reference", "cmsis_nn", "muriscv_nn"),
        ),
        Option(
            "library",
            str,
            "model",
            "which kernels the TFLM library compiles: model (the model's operators' kernels and their helpers: "
            "a first build in a third of the time, one library per operator set) or all (every kernel: one "
            "library per target for every model, as TFLM's Makefile builds it)",
            choices=("model", "all"),
        ),
    )
    requires = ("tflm", "flatbuffers", "gemmlowp")
    optional = ("cmsis_nn", "cmsis", "muriscv_nn")  # with tflmi.kernels=cmsis_nn / muriscv_nn

    def used_components(self) -> tuple[str, ...]:
        """A kernel library's commits key only the runs that use it: installing it changes no other run."""
        return self.requires + KERNEL_COMPONENTS[self.opt("kernels")]

    def _kernel_components(self) -> list[str]:
        """The commits of the chosen kernel library's components, or an error saying how to install them."""
        kernels = self.opt("kernels")
        names = KERNEL_COMPONENTS[kernels]
        absent = [c for c in names if c not in self.components]
        if absent:
            offline = " ".join(f"--source {c}=PATH_OR_URL[@REF]" for c in names)
            raise StageError(
                f"tflmi.kernels={kernels} needs component(s) {', '.join(absent)}: run `mlonmcu setup {names[0]}` "
                f"(offline: {offline})"
            )
        return [self.components[c].version.split()[0] for c in names]

    def cmsis_nn(self) -> cmsis_nn.CmsisNn:
        library, core = self._kernel_components()
        return cmsis_nn.CmsisNn(Path(self.tool("cmsis_nn")), Path(self.tool("cmsis")), (library, core))

    def muriscv_nn(self) -> MuriscvNn:
        (commit,) = self._kernel_components()
        return MuriscvNn(Path(self.tool("muriscv_nn")), commit)

    def tree(self) -> TflmTree:
        tflm, flatbuffers, gemmlowp = (self.components[c] for c in self.requires)
        commits = (tflm.version.split()[0], flatbuffers.version.split()[0], gemmlowp.version.split()[0])
        return TflmTree(Path(tflm.location), Path(flatbuffers.location), Path(gemmlowp.location), commits)

    def build(self, model_path: Path, info: ModelInfo, out: Path, log: Path) -> BuildResult:
        problem = unrunnable_message(read_graph(model_path), "TFLite Micro")
        if problem:  # TFLM would fail later, sizing the arena, without saying why
            raise StageError(problem)
        tree = self.tree()
        methods = tree.resolver_methods
        missing = [op for op in info.operators if op not in methods]
        if missing:
            raise StageError(
                f"TFLM {tree.commits[0][:12]} has no kernel for operator(s) {', '.join(missing)} "
                f"(model {model_path.name})"
            )
        data = model_path.read_bytes()
        render(
            "tflmi/model.cc.j2",
            out / "model.cc",
            model=model_path.stem,
            model_size=len(data),
            model_lines=c_byte_lines(data),
            methods=[methods[op] for op in info.operators],
            default_arena=PROBE_DEFAULT_ARENA,
        )
        render("tflmi/cxx_support.cc", out / "cxx_support.cc")
        headers = tree.third_party_headers(self.cache_dir)
        sources = tree.sources
        include_dirs = tree.include_dirs(headers)
        definitions: tuple[str, ...] = DEFINITIONS
        libraries: list[LibrarySpec] = []
        if self.opt("kernels") != "reference":  # both libraries go through TFLM's CMSIS-NN glue
            kernels = self.cmsis_nn() if self.opt("kernels") == "cmsis_nn" else self.muriscv_nn()
            sources = cmsis_nn.replace_kernels(tree.root, sources)
            include_dirs += kernels.include_dirs
            definitions += cmsis_nn.DEFINITIONS
            libraries.append(kernels.library())
        if self.opt("library") == "model":
            sources = tree.select(sources, {tree.registration_of(op) for op in info.operators} - {""})
        library = LibrarySpec(
            name="tflm",
            root=str(tree.root),
            identity=tflm_identity(tree.identity, sources, libraries),
            sources=tuple(sources),
            include_dirs=tuple(include_dirs),
            definitions=definitions,
            compile_flags=(CORE_OPTIMIZATION,),
            cxx_flags=CXX_FLAGS,
            source_options=tree.source_options(sources),
        )
        requested = int(self.opt("arena_size"))
        log.write_text(
            f"TFLM {tree.commits[0]}, {self.opt('kernels')} kernels; operators: {', '.join(info.operators)}\n"
        )
        return BuildResult(
            model=model_path.stem,
            backend=self.name,
            sources=("model.cc", "cxx_support.cc"),
            include_dirs=tuple(include_dirs),
            languages=("CXX",),
            cxx_flags=CXX_FLAGS,
            definitions=definitions,
            static_libraries=(library, *libraries),
            # feature profile: the interpreter's operators in execution order (templates/tflmi)
            kernels=tuple(
                KernelInfo(f"{op.lower()}_{i}", (op,), macs) for i, (op, macs) in enumerate(operator_macs(model_path))
            ),
            arena_size=requested or None,
            arena_request=requested,
            status_messages=STATUS_MESSAGES,
        )
