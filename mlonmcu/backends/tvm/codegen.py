"""TIR kernels → plain C functions with unpacked pointer arguments and no TVM runtime.

TVM 0.27 only emits packed-FFI functions; here the default TIR pipeline runs without
AnnotateEntryFunc/SplitHostDevice/MakePackedAPI, every buffer parameter becomes a plain
pointer, and the C code generator is called directly.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from typing import Any

from mlonmcu.backends.tvm.integer import dsp, fixedpoint, mve, rvv
from mlonmcu.backends.tvm.kernel_info import ATTR_OPS, KERNEL_PREFIX

# functions kernels call (call_extern of KERNEL_PREFIX + name): lowered once per firmware when called
HELPERS: dict[str, Callable[[], Any]] = {fixedpoint.ROUNDING_HELPER: fixedpoint.rounding_helper}


def _tir_passes() -> list[Any]:
    from tvm import s_tir, tirx

    return [
        s_tir.transform.CanonicalizeLoop(),
        s_tir.transform.LowerInitBlock(),
        s_tir.transform.PlanAndUpdateBufferAllocationLocation(),
        s_tir.transform.ConvertBlocksToOpaque(),
        s_tir.transform.CompactBufferAllocation(),
        s_tir.transform.LowerMatchBuffer(),
        s_tir.transform.StmtSimplify(),
        s_tir.transform.LowerOpaqueBlock(),
        tirx.transform.FlattenBuffer(),
        tirx.transform.NarrowDataType(32),
        s_tir.transform.LoopPartition(),
        tirx.transform.VectorizeLoop(False),
        tirx.transform.StorageRewrite(),
        s_tir.transform.HoistIfThenElse(),
        tirx.transform.UnrollLoop(),
        s_tir.transform.RenormalizeSplitPattern(),
        tirx.transform.StmtSimplify(),
        tirx.transform.RemoveNoOp(),
        s_tir.transform.RewriteUnsafeSelect(),
        tirx.transform.CommonSubexprElim(),
    ]


def _structural_passes() -> list[Any]:
    """For kernels written loop by loop (integer lowering): lower blocks and buffers, nothing
    else. The simplifiers add nothing there and can take minutes on long fixed-point chains."""
    from tvm import s_tir, tirx

    return [
        s_tir.transform.LowerInitBlock(),
        s_tir.transform.PlanAndUpdateBufferAllocationLocation(),
        s_tir.transform.ConvertBlocksToOpaque(),
        s_tir.transform.LowerMatchBuffer(),
        s_tir.transform.LowerOpaqueBlock(),
        tirx.transform.FlattenBuffer(),
        tirx.transform.NarrowDataType(32),
    ]


def _c_name(name: str, index: int) -> str:
    """A C identifier for a parameter: TVM's importer names them after TFLite tensors, which may
    hold '/', ';' or ':' (e.g. "model/conv/BiasAdd;model/conv/conv2d")."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,39}", name):
        return name
    cleaned = re.sub(r"[^A-Za-z0-9_]+", "_", name.rsplit("/", 1)[-1])[:32].strip("_")
    return f"p{index}_{cleaned}" if cleaned else f"p{index}"


def _unpack_params(func: Any) -> Any:
    """Buffer parameters → pointer variables (what MakeUnpackedAPI once did)."""
    import tvm
    import tvm_ffi
    from tvm import tirx

    pairs = []
    for index, param in enumerate(func.params):
        if isinstance(param.ty, tirx.BufferType):
            pairs.append((param, tirx.Var(_c_name(param.name, index), tirx.buffer_data_pointer_type(param))))
        else:
            pairs.append((param, param))

    def replace(call: Any) -> Any:
        if call.op.name == "tirx.buffer_data":
            for old, new in pairs:
                if call.args[0].same_as(old):
                    return new
        return call

    body = tvm_ffi.structural_map(func.body, (tvm.ir.expr.Call, replace))
    return tirx.PrimFunc([new for _, new in pairs], body, func.ret_type, attrs=func.attrs)


def _exact_float_literals(func: Any) -> Any:
    """TVM prints float32 immediates with 7 digits, which is not always the same float.

    A float64 immediate cast to float32 prints with 17 digits and converts back exactly.
    """
    import tvm_ffi
    from tvm import tirx

    def replace(imm: Any) -> Any:
        if str(imm.ty) != "float32":
            return imm
        value = float(imm.value)
        printed = struct.unpack("f", struct.pack("f", float(f"{value:.6e}")))[0]
        if printed == value or value != value or value in (float("inf"), float("-inf")):
            return imm
        return tirx.Cast("float32", tirx.FloatImm("float64", value))

    return tvm_ffi.structural_map(func, (tirx.FloatImm, replace))


# SIMD variants of a kernel (PrimFunc attribute → the guard the compiler decides it by, and what
# the variants' C needs before them): integer/dsp.py, integer/rvv.py, integer/mve.py. A kernel
# carries one variant of the Arm kinds at most: an MVE core has the DSP extension too.
VARIANT_KINDS: dict[str, tuple[str, Callable[[], str]]] = {
    dsp.DSP_VARIANT: (dsp.GUARD, dsp.prelude),
    rvv.RVV_VARIANT: (rvv.GUARD, rvv.prelude),
    mve.MVE_VARIANT: (mve.GUARD, mve.prelude),
}


def split_variants(prims: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The kernels without their SIMD variants, and the variants: attribute → kernel name → PrimFunc."""
    plain: dict[str, Any] = {}
    variants: dict[str, dict[str, Any]] = {}
    for name, func in prims.items():
        for attr in VARIANT_KINDS:
            if func.attrs is not None and attr in func.attrs:
                variants.setdefault(attr, {})[name] = func.attrs[attr]
                func = func.without_attr(attr)
        plain[name] = func
    return plain, variants


def lower_kernels(prims: dict[str, Any], target: Any, variants: dict[str, dict[str, Any]] | None = None) -> str:
    """C source of all kernels, named KERNEL_PREFIX + name. A kernel with SIMD variants is emitted
    once per variant and once plain under one name, the compiler's target features choosing; the
    HELPERS they call are added."""
    source = _lower({**prims, **_helpers_called([*prims.values(), *_all(variants)])}, target)
    if not variants:
        return source
    lowered = {
        attr: (_lower(funcs, target), {KERNEL_PREFIX + name for name in funcs}) for attr, funcs in variants.items()
    }
    return _with_variants(source, lowered)


def _all(variants: dict[str, dict[str, Any]] | None) -> list[Any]:
    return [func for funcs in (variants or {}).values() for func in funcs.values()]


def _helpers_called(funcs: list[Any]) -> dict[str, Any]:
    import tvm_ffi
    from tvm import ir

    called: set[str] = set()

    def visit(call: Any) -> Any:
        if getattr(call.op, "name", None) == "tirx.call_extern" and isinstance(call.args[0], ir.expr.StringImm):
            called.add(str(call.args[0].value))
        return call

    for func in funcs:
        tvm_ffi.structural_map(func, (ir.expr.Call, visit))
    return {name: build() for name, build in HELPERS.items() if KERNEL_PREFIX + name in called}


_DEFINITION = re.compile(r"^(?:void|int32_t) (tvmgen_\w+)\(.*\{$")
_EXTERN_C = ["#ifdef __cplusplus", 'extern "C"', "#endif"]


def _definitions(source: str) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """The source's lines and, per function defined in it, its line range (with the extern "C"
    lines before it)."""
    lines = source.splitlines()
    found: dict[str, tuple[int, int]] = {}
    for start, line in enumerate(lines):
        match = _DEFINITION.match(line)
        if match:
            end = lines.index("}", start)
            first = start - 3 if lines[max(start - 3, 0) : start] == _EXTERN_C else start
            found[match.group(1)] = (first, end + 1)
    return lines, found


def _with_variants(scalar: str, lowered: dict[str, tuple[str, set[str]]]) -> str:
    """The plain kernels, each with variants under `#if` none of their guards; then per kind its
    prelude and variants under its guard."""
    lines, ranges = _definitions(scalar)
    guards: dict[str, list[str]] = {}
    for attr, (_, names) in lowered.items():
        for name in names:
            guards.setdefault(name, []).append(VARIANT_KINDS[attr][0])
    opening = {ranges[name][0]: " && ".join(f"!({g})" for g in kinds) for name, kinds in guards.items()}
    closing = {ranges[name][1] - 1: opening[ranges[name][0]] for name in guards}
    out: list[str] = []
    for index, line in enumerate(lines):
        if index in opening:
            out.append(f"#if {opening[index]}")
        out.append(line)
        if index in closing:
            out.append(f"#endif /* {closing[index]} */")
    for attr, (source, _) in lowered.items():
        guard, prelude = VARIANT_KINDS[attr]
        variant_lines, variant_ranges = _definitions(source)
        out += [f"#if {guard}", prelude().rstrip()]
        for first, last in variant_ranges.values():
            out += variant_lines[first:last]
        out.append(f"#endif /* {guard} */")
    return "\n".join(out)


def _lower(prims: dict[str, Any], target: Any) -> str:
    import tvm
    from tvm import tirx

    functions = {}
    for handwritten in (False, True):
        group = {
            name: f.with_attr("global_symbol", KERNEL_PREFIX + name)
            for name, f in prims.items()
            if (f.attrs is not None and ATTR_OPS in f.attrs) == handwritten
        }
        if group:
            mod = tirx.transform.BindTarget(target)(tvm.IRModule(group))
            mod = tvm.ir.transform.Sequential(_structural_passes() if handwritten else _tir_passes())(mod)
            functions.update(mod.functions)
    mod = tvm.IRModule({gv: _exact_float_literals(_unpack_params(f)) for gv, f in functions.items()})
    mod = tirx.transform.LowerIntrin()(mod)
    source = tvm.get_global_func("target.build.c")(mod, target).inspect_source()
    return clean_source(source)


_DROP = re.compile(r'^(#include "tvm/.*"|#define TVM_EXPORTS|void\* __tvm_ffi__library_ctx = NULL;)\s*$')


def clean_source(source: str) -> str:
    lines = [line for line in source.splitlines() if not _DROP.match(line)]
    text = "\n".join(lines)
    return text.replace("TVM_DLL ", "")
