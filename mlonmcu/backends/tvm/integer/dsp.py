"""Arm DSP-extension variants of the integer kernels (Cortex-M4/M7/M33): two MACs per SMLAD.

A variant is attached to its scalar kernel as the PrimFunc attribute DSP_VARIANT, with the same
parameters and the same packed constants; codegen emits both, the DSP one under
`#if defined(__ARM_FEATURE_DSP)`, so one BUILD serves every target and the compiler's -mcpu
decides. Same arithmetic as the scalar kernels: the 16-bit lanes hold x + offset (at most 255 in
magnitude) and weights, SMLAD's 32-bit accumulation wraps exactly like the scalar sum.

Four int8 inputs are one word: SXTAB16 adds the offset to bytes 0 and 2 (and, rotated by 8, to
bytes 1 and 3), SXTB16 widens the weights' bytes the same way, and two SMLADs take the four
products. The helpers they call (word loads, the rotations as inline assembly: GCC 12 does not
fold a C rotate into `sxtb16 ..., ror #8`) and the ADD/SUB and pool variants, which are C, are in
templates/tvmaot/mlonmcu_dsp.h.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from mlonmcu.backends.tvm.integer.dense import DenseSpec, dense_args, quad_layout, store_outputs
from mlonmcu.backends.tvm.integer.tir import accumulators, flat_view, prim_func, root_block
from mlonmcu.data import templates_dir

DSP_VARIANT = "mlonmcu_dsp_variant"
GUARD = "defined(__ARM_FEATURE_DSP)"


@cache
def prelude() -> str:
    """What the variants call besides ACLE's intrinsics: word helpers, ADD/SUB and the pools."""
    return (templates_dir() / "tvmaot" / "mlonmcu_dsp.h").read_text()


def _call(name: str, *args: Any) -> Any:
    from tvm.script.ir_builder import tirx as T

    return T.call_pure_extern("int32", name, *args)


def _offset_pair(offset: int) -> int:
    """The input offset in both 16-bit lanes, as an int32."""
    lane = offset & 0xFFFF
    pair = lane | (lane << 16)
    return pair - (1 << 32) if pair >= 1 << 31 else pair


def _widened(word: Any, offset: int) -> tuple[Any, Any]:
    """Bytes 0 and 2, and 1 and 3, of a word of four int8 inputs as 16-bit lanes (+ offset)."""
    from tvm.script.ir_builder import tirx as T

    if offset:
        pair = _offset_pair(offset)
        return T.bind(_call("mlonmcu_sxtab16", pair, word)), T.bind(_call("mlonmcu_sxtab16_ror8", pair, word))
    return T.bind(_call("mlonmcu_sxtb16", word)), T.bind(_call("mlonmcu_sxtb16_ror8", word))


def _word(buffer: Any, at: Any) -> Any:
    """Four int8 of a 1-D view as one word, addressed in bytes (the C compiler keeps constant
    offsets of an address as the load's immediate; a word index would need the shift)."""
    from tvm.script.ir_builder import tirx as T

    return T.bind(_call("mlonmcu_load_word", T.address_of(buffer[at])))


def conv_dsp_step(builder: Any, x_tap: Any, w_tap: Any, c4: Any, pixel_offsets: list[int], offset: int) -> None:
    """Four input channels of one tap of a convolution (conv._ConvBuilder with quad weights): per
    pixel one word of inputs, per output channel one word of weights, then two SMLADs for each
    pixel and channel. In the interior the offset is folded into the bias: no add."""
    lanes = [_widened(_word(builder.x, x_tap + po + c4 * 4), offset) for po in pixel_offsets]
    _smlad_block(builder, lanes, w_tap + c4 * (4 * builder.spec.block))


def conv_dsp_row_step(builder: Any, source: Any, x_at: Any, w_at: Any, pixel_offsets: list[int]) -> None:
    """Four bytes of a kernel row (ConvSpec.row_quad: few input channels) of a pixel block whose
    window is whole — interior, or a border pixel's zero-point padded copy (`source`): the inputs
    as words at any alignment (the M4's LDR takes them), the weights in fours."""
    _smlad_block(builder, [_widened(_word(source, x_at + po), 0) for po in pixel_offsets], w_at)


def depthwise_dsp_step(builder: Any, x_tap: Any, w_tap: Any, pixel_offsets: list[int], offset: int) -> None:
    """One tap of a depthwise block (ConvSpec.depthwise_quad): per four channels one word of
    weights, widened once, and per pixel one word of inputs (the offset added by SXTAB16 on the
    border); each channel's product by SMLABB (bytes 0, 1) or SMLATT (bytes 2, 3) of the lanes."""
    from tvm.script.ir_builder import tirx as T

    block = builder.spec.block
    for q in range(block // 4):
        lanes_w = _widened(_word(builder.w, w_tap + 4 * q), 0)
        for p, po in enumerate(pixel_offsets):
            lanes_x = _widened(_word(builder.x, x_tap + po + 4 * q), offset)
            for odd in range(2):  # lanes of channels 4q + odd (bottom halves) and 4q + odd + 2 (top)
                for top, intrinsic in enumerate(("__smlabb", "__smlatt")):
                    index = p * block + 4 * q + odd + 2 * top
                    product = _call(intrinsic, lanes_x[odd], lanes_w[odd], builder.acc[index])
                    T.buffer_store(builder.acc, product, [index])


def _smlad_block(builder: Any, lanes: list[tuple[Any, Any]], w_at: Any) -> None:
    """Per output channel j of the block one word of weights (bytes w_at + 4j), widened, and two
    SMLADs with each pixel's widened inputs into its accumulator."""
    from tvm.script.ir_builder import tirx as T

    block = builder.spec.block
    for j in range(block):
        even_w, odd_w = _widened(_word(builder.w, w_at + 4 * j), 0)
        for p, (even_x, odd_x) in enumerate(lanes):
            index = p * block + j
            first = _call("__smlad", even_x, even_w, builder.acc[index])
            T.buffer_store(builder.acc, _call("__smlad", odd_x, odd_w, first), [index])


def dense_dsp_kernel(spec: DenseSpec) -> Any:
    """FULLY_CONNECTED with B outputs per register block, four inputs per step."""
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    assert quad_layout(spec)
    block = spec.block
    blocks = -(-spec.outputs // block)
    chunks = spec.inputs // 4
    with IRBuilder() as ib, prim_func(spec.name, ["FULLY_CONNECTED"], spec.macs):
        x_arg, wt, bias, quant, y_arg = dense_args(spec)
        with root_block():
            x4 = flat_view(x_arg, (spec.batch * chunks,), "int32")
            w4 = flat_view(wt, (blocks * chunks * block,), "int32")
            y = flat_view(y_arg, spec.output_shape)
            acc = accumulators(block)
            with T.serial(0, spec.batch) as b, T.serial(0, blocks) as ob:
                for j in range(block):
                    T.buffer_store(acc, bias[ob * block + j], [j])
                with T.serial(0, chunks) as k:
                    even, odd = _widened(T.bind(x4[b * chunks + k]), spec.input_offset)
                    for j in range(block):
                        weights = T.bind(w4[(ob * chunks + k) * block + j])
                        first = _call("__smlad", even, _call("mlonmcu_sxtb16", weights), acc[j])
                        T.buffer_store(acc, _call("__smlad", odd, _call("mlonmcu_sxtb16_ror8", weights), first), [j])
                store_outputs(spec, acc, quant, y, b, ob, ssat=True)
    return ib.get()
