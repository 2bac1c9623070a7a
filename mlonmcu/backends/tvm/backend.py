"""Backend `tvmaot`: TFLite → Relax → scheduled TIR → plain C with the mlonmcu_model_* API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mlonmcu.backends.backend import Backend
from mlonmcu.backends.tvm.codegen import lower_kernels
from mlonmcu.backends.tvm.emitter import SOURCES, AotEmitter
from mlonmcu.backends.tvm.importer import first_line, import_tflite
from mlonmcu.backends.tvm.pipeline import lower_relax
from mlonmcu.backends.tvm.plan import read_plan
from mlonmcu.backends.tvm.schedule import schedule_for_mcu
from mlonmcu.errors import StageError
from mlonmcu.models.frontend import ModelInfo
from mlonmcu.registry import BACKENDS


@BACKENDS.register
class TvmAotBackend(Backend):
    name = "tvmaot"
    framework = "tvm"
    help = "TVM (Relax) ahead-of-time: the model as plain C kernels + a static driver, no TVM runtime"
    options = ()
    requires = ("tvm",)

    def build(self, model_path: Path, info: ModelInfo, out: Path, log: Path) -> dict[str, Any]:
        import tvm
        from tvm import tirx

        target = tvm.target.Target({"kind": "c"})
        mod = import_tflite(model_path)
        try:
            lowered = lower_relax(mod, target)
            prims = {
                gv.name_hint: schedule_for_mcu(func)
                for gv, func in lowered.functions.items()
                if isinstance(func, tirx.PrimFunc)
            }
            source = lower_kernels(prims, target)
        except StageError:
            raise
        except (RuntimeError, ValueError) as err:  # TVM errors: keep the message, not the backtrace
            raise StageError(f"TVM failed to compile {model_path.name}: {first_line(err)}") from None
        plan = read_plan(lowered["main"])
        self._check_io(plan, info)
        facts = AotEmitter(info_name(model_path), plan, source).emit(out)
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(json.dumps({"kernels": sorted(prims), **facts}, indent=1) + "\n")
        return {**facts, "sources": SOURCES, "include_dirs": ["."], "languages": ["C"]}

    @staticmethod
    def _check_io(plan: Any, info: ModelInfo) -> None:
        got = [(r.dtype, r.nbytes) for r in plan.inputs], [(r.dtype, r.nbytes) for r in plan.outputs]
        want = [(t.dtype, t.nbytes) for t in info.inputs], [(t.dtype, t.nbytes) for t in info.outputs]
        if got != want:
            raise StageError(f"tvmaot: generated I/O {got} does not match the model's {want}")


def info_name(path: Path) -> str:
    return path.stem
