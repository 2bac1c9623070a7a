/* Arm DSP-extension (Cortex-M4/M7/M33) helpers and kernels of tvmaot, pasted into the kernels' C
   under `#if defined(__ARM_FEATURE_DSP)` (integer/dsp.py).

   The conv, depthwise and dense variants are TIR (integer/dsp.py) calling the word helpers below;
   ADD/SUB and the pools are C here, called once per kernel with every shape and quantization
   fact a constant argument, so GCC specializes each inlined call. Same arithmetic as the scalar
   kernels (integer/elementwise.py, integer/pooling.py, fixedpoint.requantize). The rotations are
   inline assembly (`sxtb16 ..., ror #8`): GCC 12 does not fold a C rotate into the instruction. */
#include <arm_acle.h>
#include <stdint.h>
#include <string.h>

#define MLONMCU_DSP_INLINE static inline __attribute__((always_inline))

/* a word load at any alignment (the M4's LDR takes unaligned addresses) */
MLONMCU_DSP_INLINE int32_t mlonmcu_load_word(const int8_t *p) {
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}
MLONMCU_DSP_INLINE int32_t mlonmcu_sxtb16(int32_t v) {
  int32_t r;
  __asm__("sxtb16 %0, %1" : "=r"(r) : "r"(v));
  return r;
}
MLONMCU_DSP_INLINE int32_t mlonmcu_sxtb16_ror8(int32_t v) {
  int32_t r;
  __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
  return r;
}
MLONMCU_DSP_INLINE int32_t mlonmcu_sxtab16(int32_t a, int32_t v) {
  int32_t r;
  __asm__("sxtab16 %0, %1, %2" : "=r"(r) : "r"(a), "r"(v));
  return r;
}
MLONMCU_DSP_INLINE int32_t mlonmcu_sxtab16_ror8(int32_t a, int32_t v) {
  int32_t r;
  __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(v));
  return r;
}
MLONMCU_DSP_INLINE int32_t mlonmcu_smmlar(int32_t a, int32_t b, int32_t acc) {
  int32_t r;
  __asm__("smmlar %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
  return r;
}
/* the larger signed byte of a and b in each of the four lanes (SSUB8 sets GE where a >= b) */
MLONMCU_DSP_INLINE int32_t mlonmcu_max8(int32_t a, int32_t b) {
  int32_t d;
  __asm__("ssub8 %1, %0, %2\n\tsel %0, %0, %2" : "+r"(a), "=&r"(d) : "r"(b) : "cc");
  return a;
}
/* a byte in all four lanes */
MLONMCU_DSP_INLINE int32_t mlonmcu_bytes(int32_t value) { return (int32_t)(0x01010101u * (uint8_t)value); }

/* MultiplyByQuantizedMultiplier by a compile-time (multiplier in [2^30, 2^31), shift) plus
   zero_point: SRDHM is SMMLAR with x as accumulator (2M read as a signed word is 2M - 2^32,
   fixedpoint.requantize), RDBPOT's remainder test a rounding add before the shift (for the
   bounded values of ADD/SUB, which cannot wrap). A multiplier of 2^30 is a rounding halving. */
MLONMCU_DSP_INLINE int32_t mlonmcu_dsp_scale(int32_t x, int32_t multiplier, int32_t shift, int32_t zero_point) {
  if (shift > 0) x = (int32_t)((uint32_t)x << shift);
  int32_t high;
  if (multiplier == 1 << 30)
    high = (x >> 1) + (x & 1);
  else
    high = mlonmcu_smmlar(x, (int32_t)((uint32_t)multiplier << 1), x);
  if (shift >= 0) return high + zero_point;
  return ((high + (1 << (-shift - 1)) + (high >> 31)) >> -shift) + zero_point;
}

MLONMCU_DSP_INLINE int32_t mlonmcu_dsp_clamp(int32_t value, int32_t act_min, int32_t act_max) {
  if (act_min > -128) value = value < act_min ? act_min : value;
  if (act_max == 127) return __ssat(value, 8);
  return value > act_max ? act_max : value < -128 ? -128 : value;
}

/* int8 ADD / SUB of two inputs of one shape (integer/elementwise.add_kernel): zero points of a and
   b, the left shift, the (multiplier, shift) pairs of a, b and the output (multipliers >= 2^30),
   the output zero point, activation range, subtract. */
MLONMCU_DSP_INLINE int32_t mlonmcu_dsp_add(const int8_t *a, const int8_t *b, int8_t *out, int32_t size,
                                           int32_t a_zero_point, int32_t b_zero_point, int32_t left_shift,
                                           int32_t a_multiplier, int32_t a_shift, int32_t b_multiplier, int32_t b_shift,
                                           int32_t multiplier, int32_t shift, int32_t zero_point, int32_t act_min,
                                           int32_t act_max, int32_t subtract) {
  for (int32_t i = 0; i < size; ++i) {
    const int32_t xa = (int32_t)((uint32_t)(a[i] - a_zero_point) << left_shift);
    const int32_t xb = (int32_t)((uint32_t)(b[i] - b_zero_point) << left_shift);
    const int32_t va = mlonmcu_dsp_scale(xa, a_multiplier, a_shift, 0);
    const int32_t vb = mlonmcu_dsp_scale(xb, b_multiplier, b_shift, 0);
    const int32_t value = mlonmcu_dsp_scale(subtract ? va - vb : va + vb, multiplier, shift, zero_point);
    out[i] = (int8_t)mlonmcu_dsp_clamp(value, act_min, act_max);
  }
  return 0;
}

/* The division of TFLite's AVERAGE_POOL_2D (rounding half away from zero), clamped. */
MLONMCU_DSP_INLINE int8_t mlonmcu_dsp_average(int32_t sum, int32_t count, int32_t act_min, int32_t act_max) {
  const int32_t half = count / 2;
  return (int8_t)mlonmcu_dsp_clamp((sum > 0 ? sum + half : sum - half) / count, act_min, act_max);
}

/* One channel (the channels past the last multiple of four) over the window from `start`: the
   sum of its values, or with `maximum` their largest. */
MLONMCU_DSP_INLINE int32_t mlonmcu_dsp_fold(const int8_t *corner, int32_t rows, int32_t cols, int32_t row_stride,
                                            int32_t channels, int32_t start, int32_t maximum) {
  int32_t folded = start;
  for (int32_t kh = 0; kh < rows; ++kh)
    for (int32_t kw = 0; kw < cols; ++kw) {
      const int32_t value = corner[kh * row_stride + kw * channels];
      folded = maximum ? (value > folded ? value : folded) : folded + value;
    }
  return folded;
}

/* The average of `words` words of channels (4 * words from `corner`) over the window: their sums
   in 16-bit lanes, SXTAB16 adding channels 0 and 2 of each word, rotated 1 and 3 (the word loop
   unrolled: the sums stay in registers). */
MLONMCU_DSP_INLINE void mlonmcu_dsp_average_words(const int8_t *corner, int8_t *out, int32_t rows, int32_t cols,
                                                  int32_t row_stride, int32_t channels, int32_t words,
                                                  int32_t act_min, int32_t act_max) {
  int32_t even[4] = {0, 0, 0, 0}, odd[4] = {0, 0, 0, 0};
  for (int32_t kh = 0; kh < rows; ++kh)
    for (int32_t kw = 0; kw < cols; ++kw)
      #pragma GCC unroll 4
      for (int32_t k = 0; k < words; ++k) {
        const int32_t word = mlonmcu_load_word(corner + kh * row_stride + kw * channels + 4 * k);
        even[k] = mlonmcu_sxtab16(even[k], word);
        odd[k] = mlonmcu_sxtab16_ror8(odd[k], word);
      }
  #pragma GCC unroll 4
  for (int32_t k = 0; k < words; ++k) {
    out[4 * k] = mlonmcu_dsp_average((int16_t)even[k], rows * cols, act_min, act_max);
    out[4 * k + 1] = mlonmcu_dsp_average((int16_t)odd[k], rows * cols, act_min, act_max);
    out[4 * k + 2] = mlonmcu_dsp_average(even[k] >> 16, rows * cols, act_min, act_max);
    out[4 * k + 3] = mlonmcu_dsp_average(odd[k] >> 16, rows * cols, act_min, act_max);
  }
}

/* The maximum of `words` words of channels over the window, each byte lane by SSUB8 + SEL from
   the activation's minimum on, its maximum applied the same way. */
MLONMCU_DSP_INLINE void mlonmcu_dsp_max_words(const int8_t *corner, int8_t *out, int32_t rows, int32_t cols,
                                              int32_t row_stride, int32_t channels, int32_t words, int32_t act_min,
                                              int32_t act_max) {
  const int32_t low = mlonmcu_bytes(act_min), high = mlonmcu_bytes(act_max);
  int32_t best[4] = {low, low, low, low};
  for (int32_t kh = 0; kh < rows; ++kh)
    for (int32_t kw = 0; kw < cols; ++kw)
      #pragma GCC unroll 4
      for (int32_t k = 0; k < words; ++k)
        best[k] = mlonmcu_max8(best[k], mlonmcu_load_word(corner + kh * row_stride + kw * channels + 4 * k));
  #pragma GCC unroll 4
  for (int32_t k = 0; k < words; ++k) {
    if (act_max != 127) best[k] = mlonmcu_max8(high, best[k]) ^ best[k] ^ high; /* the smaller of each lane */
    memcpy(out + 4 * k, &best[k], 4);
  }
}

/* One output pixel of an int8 pool (NHWC, integer/pooling.py: the TIR loops over the pixels and
   finds each valid window, rows x cols taps from `corner`, rows `row_stride` bytes apart):
   sixteen channels per pass over the window, then four, the rest one at a time; an average
   (`maximum` 0) of at most 256 taps (256 * 128 fits a 16-bit lane) or the maximum. */
MLONMCU_DSP_INLINE int32_t mlonmcu_dsp_pool(const int8_t *corner, int8_t *out, int32_t rows, int32_t cols,
                                            int32_t row_stride, int32_t channels, int32_t act_min, int32_t act_max,
                                            int32_t maximum) {
  int32_t c = 0;
  for (; c + 16 <= channels; c += 16)
    if (maximum)
      mlonmcu_dsp_max_words(corner + c, out + c, rows, cols, row_stride, channels, 4, act_min, act_max);
    else
      mlonmcu_dsp_average_words(corner + c, out + c, rows, cols, row_stride, channels, 4, act_min, act_max);
  for (; c + 4 <= channels; c += 4)
    if (maximum)
      mlonmcu_dsp_max_words(corner + c, out + c, rows, cols, row_stride, channels, 1, act_min, act_max);
    else
      mlonmcu_dsp_average_words(corner + c, out + c, rows, cols, row_stride, channels, 1, act_min, act_max);
  for (; c < channels; ++c) {
    const int32_t folded = mlonmcu_dsp_fold(corner + c, rows, cols, row_stride, channels, maximum ? act_min : 0, maximum);
    out[c] = maximum ? (int8_t)(folded > act_max ? act_max : folded)
                     : mlonmcu_dsp_average(folded, rows * cols, act_min, act_max);
  }
  return 0;
}

/* What the AVERAGE_POOL_2D and MAX_POOL_2D variants call per output pixel. */
MLONMCU_DSP_INLINE int32_t mlonmcu_dsp_average_pool(const int8_t *corner, int8_t *out, int32_t rows, int32_t cols,
                                                    int32_t row_stride, int32_t channels, int32_t act_min,
                                                    int32_t act_max) {
  return mlonmcu_dsp_pool(corner, out, rows, cols, row_stride, channels, act_min, act_max, 0);
}
MLONMCU_DSP_INLINE int32_t mlonmcu_dsp_max_pool(const int8_t *corner, int8_t *out, int32_t rows, int32_t cols,
                                                int32_t row_stride, int32_t channels, int32_t act_min,
                                                int32_t act_max) {
  return mlonmcu_dsp_pool(corner, out, rows, cols, row_stride, channels, act_min, act_max, 1);
}
