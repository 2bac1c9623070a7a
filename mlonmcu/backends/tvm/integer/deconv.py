"""TRANSPOSE_CONV as stride² ordinary convolutions, one per output phase.

TFLite's reference scatters every input pixel through the filter into an int32 scratch. The
same sums, gathered: output row `oy` receives filter row `fy` from input row
`(oy + pad − fy) / stride` when that divides. For one phase `r = oy mod stride` the taps that
divide are every stride-th filter row, and their input rows are consecutive — an ordinary
stride-1 correlation of the input with those rows (in reverse order). So each phase is a
register-blocked CONV_2D kernel (patterns.conv_lowering) with only the MACs that count, and the
phases are interleaved into the output afterwards. Integer sums do not depend on their order:
bit-exact with the scatter.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Phase:
    """One output phase along one axis."""

    taps: tuple[int, ...]  # filter rows, in the order the phase's convolution reads them
    first: int  # the input row its first output reads with the first tap (may be < 0: padding)
    rows: int  # outputs computed (uniform over phases; the interleave crops the extra ones)


def padding(out_size: int, kernel: int, stride: int, same: bool) -> int:
    """TFLite's TRANSPOSE_CONV padding: ComputePaddingHeightWidth with the output as the 'input'."""
    computed = (out_size + stride - 1) // stride if same else (out_size - kernel + stride) // stride
    return max(0, (computed - 1) * stride + kernel - out_size) // 2


def phases(out_size: int, kernel: int, stride: int, pad: int) -> list[Phase]:
    rows = (out_size + stride - 1) // stride
    found = []
    for r in range(stride):
        taps = sorted((f for f in range(kernel) if (r + pad - f) % stride == 0), reverse=True)
        first = (r + pad - taps[0]) // stride if taps else 0
        found.append(Phase(tuple(taps), first, rows))
    return found


def window(phase: Phase, in_size: int) -> tuple[int, int, int, int]:
    """(input start, input stop, padding before, padding after) for the phase's convolution."""
    length = phase.rows + max(len(phase.taps), 1) - 1
    start, stop = phase.first, phase.first + length
    return max(start, 0), min(stop, in_size), max(-start, 0), max(stop - in_size, 0)
