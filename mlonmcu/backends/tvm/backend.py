"""Backend `tvmaot`: TFLite → Relax → scheduled TIR → plain C with the mlonmcu_model_* API."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlonmcu.backends.backend import Backend
from mlonmcu.backends.tvm.integer.blocks import DSP_CONV_BLOCK, SCALAR_CONV_BLOCK
from mlonmcu.config import Option
from mlonmcu.contracts import BuildResult, ModelInfo, encode
from mlonmcu.errors import StageError
from mlonmcu.models.tflite_graph import TfliteGraph, read_graph, unrunnable_message

if TYPE_CHECKING:
    from mlonmcu.backends.tvm.integer.patterns import Schedule

logger = logging.getLogger("mlonmcu.tvmaot")


class TvmAotBackend(Backend):
    name = "tvmaot"
    framework = "tvm"
    formats = ("tflite", "onnx")
    help = "TVM (Relax) ahead-of-time: the model as plain C kernels + a static driver, no TVM runtime"
    options = (
        Option(
            "quant",
            str,
            "integer",
            "int8 models: integer = TFLite-exact integer kernels; qdq = the importer's dequantize→float→quantize",
            choices=("integer", "qdq"),
        ),
        Option(
            "arithmetic",
            str,
            "litert",
            "where LiteRT's reference kernels and TFLite Micro round differently (FULLY_CONNECTED, int8 "
            "LOGISTIC/TANH, SUB's scale ratios), whose results to reproduce: litert or tflm "
            "(pair with validate.reference=tflm)",
            choices=("litert", "tflm"),
        ),
        Option(
            "fc_requant",
            str,
            "auto",
            "FULLY_CONNECTED rounding alone: litert = LiteRT reference kernels (double), tflm = TFLite Micro "
            "(fixed point), auto = as tvmaot.arithmetic",
            choices=("auto", "litert", "tflm"),
        ),
        Option(
            "importer",
            str,
            "auto",
            "int8 models: direct = integer kernels built from the flatbuffer; relax = TVM's importer, its "
            "dequantize→float→quantize chains matched; auto = direct when it covers every operator, else relax",
            choices=("auto", "direct", "relax"),
        ),
        Option(
            "conv_block",
            int,
            0,
            f"integer conv: output channels per register block (0 = by layout: {SCALAR_CONV_BLOCK}; in the Arm "
            f"DSP layout {DSP_CONV_BLOCK} or 8 where it divides the layer's channels)",
            min=0,
            max=16,
        ),
        Option("conv_pixels", int, 2, "integer conv: output pixels per register block", choices=(1, 2, 3, 4)),
        Option(
            "depthwise_block",
            int,
            0,
            "integer depthwise conv: channels per register block (0 = by layout: 8; 4 in the Arm DSP layout)",
            min=0,
            max=32,
        ),
        Option(
            "depthwise_pixels",
            int,
            0,
            "integer depthwise conv: output pixels per register block (0 = by layout: 1; 2 in the Arm DSP layout)",
            choices=(0, 1, 2),
        ),
        Option("dense_block", int, 8, "integer fully connected: outputs per register block", min=1, max=32),
        Option(
            "simd",
            str,
            "auto",
            "integer kernels' SIMD variants, which the compiler takes where the core has them: auto = laid out "
            "for the target's core (Arm DSP conv/depthwise/dense/add/pools on M4/M7/M33, Arm MVE the same on "
            "M55, RVV the same with conv/dense in blocks of 64 output channels on vector ISAs, scalar layouts "
            "elsewhere: one BUILD per kind of core); dsp / mve / rvv = those layouts for every target (slower on "
            "cores without the extension); off = scalar C only, to compare",
            choices=("auto", "dsp", "mve", "rvv", "off"),
        ),
    )
    requires = ("tvm",)

    def build(self, model_path: Path, info: ModelInfo, out: Path, log: Path) -> BuildResult:
        # TVM and the code generator load with the first BUILD: a session restored from the cache
        # (and every other command) does not need them
        import tvm
        from tvm import tirx

        from mlonmcu.backends.tvm.codegen import lower_kernels, split_variants
        from mlonmcu.backends.tvm.emitter import SOURCES, AotEmitter
        from mlonmcu.backends.tvm.importer import first_line
        from mlonmcu.backends.tvm.kernel_info import kernel_info
        from mlonmcu.backends.tvm.pipeline import lower_relax
        from mlonmcu.backends.tvm.plan import read_plan
        from mlonmcu.backends.tvm.schedule import schedule_for_mcu

        target = tvm.target.Target({"kind": "c"})
        float_ops = ""
        try:
            mod, float_ops, importer = self._import(model_path)
            lowered = lower_relax(mod, target)
            prims, variants = split_variants(
                {gv.name_hint: func for gv, func in lowered.functions.items() if isinstance(func, tirx.PrimFunc)}
            )
            infos = {name: kernel_info(name, func) for name, func in prims.items()}
            source = lower_kernels({name: schedule_for_mcu(func) for name, func in prims.items()}, target, variants)
        except StageError:
            raise
        except (RuntimeError, ValueError) as err:  # TVM errors: keep the message, not the backtrace
            raise StageError(f"TVM failed to compile {model_path.name}: {first_line(err)}") from None
        plan = read_plan(lowered["main"])
        self._check_io(plan, info)
        facts = AotEmitter(info_name(model_path), plan, source).emit(out)
        log.parent.mkdir(parents=True, exist_ok=True)
        kernels = tuple(infos[call.kernel] for call in plan.calls)
        log.write_text(json.dumps({"importer": importer, "kernels": encode(kernels), **facts}, indent=1) + "\n")
        return BuildResult(
            model=info_name(model_path),
            backend=self.name,
            sources=SOURCES,
            arena_size=facts["arena_size"],
            float_ops=float_ops,
            kernels=kernels,
            constants_bytes=facts["constants_bytes"],
            # the unrolled kernels need all registers: GCC's pre-allocation scheduling would hoist their
            # loads and spill (measured: 2× the instructions of a depthwise layer on rv32)
            compile_flags=("-fno-schedule-insns",),
        )

    def _import(self, path: Path, graph: TfliteGraph | None = None) -> tuple[Any, str, str]:
        """The Relax module, its `Float Ops` and which importer made it (for the build log)."""
        from mlonmcu.backends.tvm.importer import import_onnx, import_tflite
        from mlonmcu.backends.tvm.integer.direct import build_direct
        from mlonmcu.backends.tvm.integer.uncovered import NotCovered

        choice = self.opt("importer")
        importer = "relax"
        if path.suffix.lower() == ".onnx":
            return self._quantized(import_onnx(path), "onnx")
        graph = graph or read_graph(path)
        hybrid = unrunnable_message(graph, "tvmaot")
        if hybrid:
            raise StageError(hybrid)
        if self.opt("quant") == "integer" and choice != "relax" and _integer(graph):
            try:
                mod, report = build_direct(graph, self.schedule())
                return mod, report.float_summary() or "none", "direct"
            except NotCovered as err:
                if choice == "direct":
                    raise StageError(
                        f"tvmaot.importer=direct has no integer kernel for {path.name}: {err}; "
                        "tvmaot.importer=relax uses TVM's importer (unmatched operators stay float)"
                    ) from None
                logger.warning("%s: %s not covered by the direct integer path: TVM's importer instead", path.name, err)
                importer = f"relax (direct: {err})"
        return self._quantized(import_tflite(path), importer)

    def _quantized(self, mod: Any, importer: str) -> tuple[Any, str, str]:
        """A TVM importer's module, its quantize/dequantize pairs lowered to integer kernels where
        tvmaot.quant=integer and a pattern matches (Float Ops names the rest)."""
        from mlonmcu.backends.tvm.integer.lowering import is_quantized, lower_integer

        if not is_quantized(mod):
            return mod, "", importer
        if self.opt("quant") != "integer":
            return mod, "all (qdq)", importer
        mod, report = lower_integer(mod, self.schedule())
        return mod, report.float_summary() or "none", importer

    def build_facts(self, target: Any) -> dict[str, str]:
        """simd=auto lays the kernels out for the core: its SIMD extension keys the BUILD."""
        simd = target.core_simd() if self.opt("simd") == "auto" else ""
        return {"simd": simd} if simd else {}

    def schedule(self) -> Schedule:
        from mlonmcu.backends.tvm.integer.patterns import Schedule

        simd = self.opt("simd")
        if simd == "auto":  # the layouts of the core's extension (build_facts), free variants elsewhere
            simd = self.facts.get("simd", "auto")
        return Schedule(
            conv_block=self.opt("conv_block"),
            conv_pixels=self.opt("conv_pixels"),
            depthwise_block=self.opt("depthwise_block"),
            depthwise_pixels=self.opt("depthwise_pixels"),
            dense_block=self.opt("dense_block"),
            fc_requant=self.opt("arithmetic") if self.opt("fc_requant") == "auto" else self.opt("fc_requant"),
            arithmetic=self.opt("arithmetic"),
            simd=simd,
        )

    @staticmethod
    def _check_io(plan: Any, info: ModelInfo) -> None:
        got = [(r.dtype, r.nbytes) for r in plan.inputs], [(r.dtype, r.nbytes) for r in plan.outputs]
        want = [(t.dtype, t.nbytes) for t in info.inputs], [(t.dtype, t.nbytes) for t in info.outputs]
        if got != want:
            raise StageError(f"tvmaot: generated I/O {got} does not match the model's {want}")


def _integer(graph: TfliteGraph) -> bool:
    """Quantized integer tensors (int8, or int16 as in TFLM's int16-interface models): the direct path's."""
    return any(t.dtype in ("int8", "int16") and t.quantized for t in graph.tensors)


def info_name(path: Path) -> str:
    return path.stem
