"""What each generated kernel computes: TFLite ops it covers, MACs, integer or float arithmetic.

Used by the `profile` feature's per-layer table. Kernels built by the integer lowering carry this
as function attributes; kernels legalized by TVM are read from their TIR blocks.
"""

from __future__ import annotations

import re
from typing import Any

from mlonmcu.contracts import KernelInfo

# TIR block name prefix → TFLite operator (order matters: most specific first)
_BLOCK_OPS = (
    ("group_conv2d", "DEPTHWISE_CONV_2D"),
    ("depth_conv2d", "DEPTHWISE_CONV_2D"),
    ("conv2d", "CONV_2D"),
    ("matmul", "FULLY_CONNECTED"),
    ("pool_max", "MAX_POOL_2D"),
    ("pool_sum", "AVERAGE_POOL_2D"),
    ("pool_avg", "AVERAGE_POOL_2D"),
    ("T_softmax", "SOFTMAX"),
    ("T_concat", "CONCATENATION"),
    ("T_reshape", "RESHAPE"),
    ("T_pad", "PAD"),
    ("PadInput", "PAD"),
)
_NAME_OPS = (
    ("mean", "MEAN"),
    ("avg_pool2d", "AVERAGE_POOL_2D"),
    ("quantize", "QUANTIZE"),
    ("dequantize", "DEQUANTIZE"),
)
KERNEL_PREFIX = "tvmgen_"  # of every generated C function
ATTR_OPS = "mlonmcu.tflite_ops"
ATTR_MACS = "mlonmcu.macs"


def _blocks(func: Any) -> list[Any]:
    import tvm_ffi
    from tvm import s_tir

    found: list[Any] = []

    def visit(block: Any) -> Any:
        found.append(block)
        return block

    tvm_ffi.structural_map(func.body, (s_tir.SBlock, visit))
    return found


def _contains_load(expr: Any) -> bool:
    import tvm_ffi

    hits: list[bool] = []

    def visit(node: Any) -> Any:
        if type(node).__name__ in ("BufferLoad", "TensorLoad"):
            hits.append(True)
        return node

    tvm_ffi.structural_map(expr, visit)
    return bool(hits)


def _is_mac(block: Any) -> bool:
    """A multiply of two loaded values (not index arithmetic such as h * stride)."""
    import tvm_ffi
    from tvm import tirx

    hits: list[bool] = []

    def visit(node: Any) -> Any:
        if _contains_load(node.a) and _contains_load(node.b):
            hits.append(True)
        return node

    tvm_ffi.structural_map(block.body, (tirx.Mul, visit))
    return bool(hits)


def _is_float(func: Any) -> bool:
    text = func.script()
    return bool(re.search(r'"float(16|32|64)"', text))


def kernel_info(name: str, func: Any) -> KernelInfo:
    attrs = func.attrs or {}
    if ATTR_OPS in attrs:
        return KernelInfo(
            name,
            tuple(str(o) for o in attrs[ATTR_OPS]),
            int(attrs[ATTR_MACS]),
            "float" if _is_float(func) else "integer",
        )
    ops: list[str] = []
    macs = 0
    adds = 0
    for block in _blocks(func):
        block_name = str(block.name_hint)
        for prefix, op in _BLOCK_OPS:
            if block_name.startswith(prefix) and op not in ops:
                ops.append(op)
                break
        adds += block_name.startswith("T_add")
        reduces = any(int(iv.iter_type) == 2 for iv in block.iter_vars)
        if reduces and _is_mac(block):
            extent = 1
            for iv in block.iter_vars:
                extent *= int(iv.dom.extent)
            macs += extent
    has_bias = any(op in ops for op in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"))
    if adds > int(has_bias):
        ops.append("ADD")
    if not ops:
        ops = [op for token, op in _NAME_OPS if re.search(rf"(^|_){token}\d*(_|$)", name)][:1] or ["OTHER"]
    return KernelInfo(name, tuple(ops), macs, "float" if _is_float(func) else "integer")
