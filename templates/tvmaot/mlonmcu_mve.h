/* Arm MVE (Helium: Cortex-M55) variants of tvmaot's integer kernels, pasted into the kernels' C
   under `#if defined(__ARM_FEATURE_MVE)` (integer/mve.py).

   Same arithmetic as the scalar kernels (integer/conv.py, integer/dense.py, fixedpoint.requantize).
   CONV_2D and FULLY_CONNECTED are dot products along contiguous input channels (VMLADAVA: sixteen
   int8 MACs into a 32-bit sum), four output channels at a time sharing each input load: weights
   [Cout][KH][KW][Cin] (one conv weight block per channel) and [O][I]. The sums are of raw int8
   inputs, the input offset folded into the bias: conv's interior bias for full windows; border
   pixels add offset * (their valid weights' sum, VADDVA). DEPTHWISE_CONV_2D has the channels as
   int32 lanes (widening loads; MVE multiplies and accumulates vectors only by a scalar or as a
   reduction, so VMUL + VADD). Requantization in vector form: SRDHM is VQRDMULH exactly;
   rounding right shifts round half up (VRSHL), so negative values are nudged down by one first,
   which gives TFLite's half away from zero. */
#include <arm_mve.h>
#include <math.h>
#include <stdint.h>

/* inlined into each kernel whatever the optimization level: the constant shapes are what make
   the loops tight */
#define MLONMCU_MVE_INLINE static inline __attribute__((always_inline))
#define MLONMCU_MVE_COLUMN 1024 /* bytes: the largest window gathered into a column (on the stack) */

typedef struct {
  int32_t height, width, channels;     /* input */
  int32_t out_height, out_width, outputs;
  int32_t kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
  int32_t block;                       /* depthwise: 4, weights [C/4][KH][KW][4] */
  int32_t input_offset, act_min, act_max;
  int32_t quant_width, uniform, left_shift;
  int32_t zero_point;
} mlonmcu_mve_conv_t;

/* Requantize four accumulators (channels [channel, channel + real), real <= 4), clamp, store the
   low bytes. The table rows: [2M as uint32, right shift, rounding term, (left shift)]. */
MLONMCU_MVE_INLINE void mlonmcu_mve_requantize_store(int32x4_t acc, const int32_t *quant, int32_t channel,
                                                     int32_t real, const mlonmcu_mve_conv_t *p, int8_t *out) {
  const mve_pred16_t lanes = vctp32q((uint32_t)real);
  int32x4_t doubled, right, left = vdupq_n_s32(0);
  if (p->uniform) {
    doubled = vdupq_n_s32(quant[0]);
    right = vdupq_n_s32(quant[1]);
    if (p->left_shift) left = vdupq_n_s32(quant[3]);
  } else {
    const uint32x4_t rows = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)p->quant_width);
    const int32_t *row = quant + channel * p->quant_width;
    if (real == 4) {
      doubled = vldrwq_gather_shifted_offset_s32(row, rows);
      right = vldrwq_gather_shifted_offset_s32(row + 1, rows);
      if (p->left_shift) left = vldrwq_gather_shifted_offset_s32(row + 3, rows);
    } else {
      doubled = vldrwq_gather_shifted_offset_z_s32(row, rows, lanes);
      right = vldrwq_gather_shifted_offset_z_s32(row + 1, rows, lanes);
      if (p->left_shift) left = vldrwq_gather_shifted_offset_z_s32(row + 3, rows, lanes);
    }
  }
  if (p->left_shift) acc = vshlq_s32(acc, left);
  const int32x4_t multiplier = vreinterpretq_s32_u32(vshrq_n_u32(vreinterpretq_u32_s32(doubled), 1));
  const int32x4_t high = vqrdmulhq_s32(acc, multiplier);
  const int32x4_t shift = vnegq_s32(right);
  const int32x4_t nudge = vshrq_n_s32(vandq_s32(high, shift), 31); /* -1: negative and shifted */
  int32x4_t value = vaddq_n_s32(vrshlq_s32(vqaddq_s32(high, nudge), shift), p->zero_point);
  value = vminq_s32(vmaxq_s32(value, vdupq_n_s32(p->act_min)), vdupq_n_s32(p->act_max));
  if (real == 4)
    vstrbq_s32(out, value);
  else
    vstrbq_p_s32(out, value, lanes);
}

/* Four values of an int32 array, the first `real` of them. */
MLONMCU_MVE_INLINE int32x4_t mlonmcu_mve_load4(const int32_t *from, int32_t real) {
  return real == 4 ? vldrwq_s32(from) : vldrwq_z_s32(from, vctp32q((uint32_t)real));
}

/* The dot products of x[0..n) with four weight rows (the first `real` of them exist; the others
   repeat the last), and with `sums` each row's sum added to sums[t]. Pointers step with the loads
   so every load post-increments. */
MLONMCU_MVE_INLINE int32x4_t mlonmcu_mve_dot4(const int8_t *x, const int8_t *w, int32_t stride, int32_t real,
                                              int32_t n, int32_t *sums) {
  const int8_t *w0 = w, *w1 = w + (real > 1 ? stride : 0);
  const int8_t *w2 = w + (real > 2 ? 2 * stride : (real - 1) * stride);
  const int8_t *w3 = w + (real - 1 < 3 ? real - 1 : 3) * stride;
  int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (int32_t i = n >> 4; i > 0; --i) {
    const int8x16_t xv = vldrbq_s8(x);
    const int8x16_t v0 = vldrbq_s8(w0), v1 = vldrbq_s8(w1), v2 = vldrbq_s8(w2), v3 = vldrbq_s8(w3);
    x += 16, w0 += 16, w1 += 16, w2 += 16, w3 += 16;
    a0 = vmladavaq_s8(a0, xv, v0);
    a1 = vmladavaq_s8(a1, xv, v1);
    a2 = vmladavaq_s8(a2, xv, v2);
    a3 = vmladavaq_s8(a3, xv, v3);
    if (sums) s0 = vaddvaq_s8(s0, v0), s1 = vaddvaq_s8(s1, v1), s2 = vaddvaq_s8(s2, v2), s3 = vaddvaq_s8(s3, v3);
  }
  if (n & 15) { /* the tail: inactive lanes load zeros and touch no memory */
    const mve_pred16_t tail = vctp8q((uint32_t)(n & 15));
    const int8x16_t xv = vldrbq_z_s8(x, tail);
    const int8x16_t v0 = vldrbq_z_s8(w0, tail), v1 = vldrbq_z_s8(w1, tail);
    const int8x16_t v2 = vldrbq_z_s8(w2, tail), v3 = vldrbq_z_s8(w3, tail);
    a0 = vmladavaq_s8(a0, xv, v0);
    a1 = vmladavaq_s8(a1, xv, v1);
    a2 = vmladavaq_s8(a2, xv, v2);
    a3 = vmladavaq_s8(a3, xv, v3);
    if (sums) s0 = vaddvaq_s8(s0, v0), s1 = vaddvaq_s8(s1, v1), s2 = vaddvaq_s8(s2, v2), s3 = vaddvaq_s8(s3, v3);
  }
  if (sums) sums[0] += s0, sums[1] += s1, sums[2] += s2, sums[3] += s3;
  int32x4_t v = vdupq_n_s32(a0);
  v = vsetq_lane_s32(a1, v, 1);
  v = vsetq_lane_s32(a2, v, 2);
  return vsetq_lane_s32(a3, v, 3);
}

/* Kernel taps [lo, hi) of one axis that fall inside the input for a window starting at origin. */
MLONMCU_MVE_INLINE void mlonmcu_mve_window(int32_t origin, int32_t size, int32_t kernel, int32_t dilation,
                                      int32_t *lo, int32_t *hi) {
  int32_t first = origin < 0 ? (-origin + dilation - 1) / dilation : 0;
  int32_t last = (size - origin + dilation - 1) / dilation;
  if (last > kernel) last = kernel;
  *lo = first;
  *hi = last > first ? last : first;
}

/* Output channels [co, co + real) of one CONV_2D pixel from a column of its whole window (taps x
   channels, contiguous as the weights are). */
MLONMCU_MVE_INLINE void mlonmcu_mve_conv_column(const int8_t *column, const int8_t *w, const int32_t *bias,
                                                const int32_t *quant, int8_t *out, int32_t co, int32_t real,
                                                const mlonmcu_mve_conv_t *p) {
  const int32_t taps = p->kernel_h * p->kernel_w * p->channels;
  int32x4_t acc = mlonmcu_mve_dot4(column, w + co * taps, taps, real, taps, 0);
  mlonmcu_mve_requantize_store(vaddq_s32(acc, mlonmcu_mve_load4(bias + co, real)), quant, co, real, p, out + co);
}

/* Output channels [co, co + real) of one CONV_2D pixel read in place: the dot products over the
   window's rows inside the input (one contiguous run of taps x channels per row when dilation_w
   is 1); a border pixel adds the offset times its valid weights' sum. */
MLONMCU_MVE_INLINE void mlonmcu_mve_conv_pixel(const int8_t *x, const int8_t *w, const int32_t *bias,
                                               const int32_t *quant, int8_t *out, int32_t co, int32_t real,
                                               int32_t x_origin, int32_t kh_lo, int32_t kh_hi, int32_t kw_lo,
                                               int32_t kw_hi, int32_t interior, const mlonmcu_mve_conv_t *p) {
  const int32_t taps = p->kernel_h * p->kernel_w * p->channels;
  const int32_t span = (kw_hi - kw_lo) * p->channels;
  const int8_t *rows = w + co * taps;
  int32_t sums[4] = {0, 0, 0, 0};
  int32x4_t acc = mlonmcu_mve_load4(bias + co, real);
  for (int32_t kh = kh_lo; kh < kh_hi; ++kh) {
    const int8_t *xr = x + x_origin + kh * p->dilation_h * p->width * p->channels;
    const int8_t *wr = rows + kh * p->kernel_w * p->channels;
    if (p->dilation_w == 1) {
      acc = vaddq_s32(acc, mlonmcu_mve_dot4(xr + kw_lo * p->channels, wr + kw_lo * p->channels, taps, real, span,
                                            interior ? 0 : sums));
    } else {
      for (int32_t kw = kw_lo; kw < kw_hi; ++kw)
        acc = vaddq_s32(acc, mlonmcu_mve_dot4(xr + kw * p->dilation_w * p->channels, wr + kw * p->channels, taps,
                                              real, p->channels, interior ? 0 : sums));
    }
  }
  if (!interior) acc = vmlaq_n_s32(acc, vldrwq_s32(sums), p->input_offset);
  mlonmcu_mve_requantize_store(acc, quant, co, real, p, out + co);
}

/* Channels [c, c + real) of one or two DEPTHWISE_CONV_2D pixels (multiplier 1; the second `next`
   bytes further in the input), weights [C/4][KH][KW][4] (block 4) loaded once for both: every tap,
   unrolled, of a window at `src` (the input in place, or a column) whose rows and taps are `row`
   and `tap` bytes apart; raw inputs, the input offset folded into the bias. */
MLONMCU_MVE_INLINE void mlonmcu_mve_depthwise_lanes(const int8_t *src, int32_t row, int32_t tap, int32_t next,
                                                    int32_t pixels, const int8_t *w, const int32_t *bias,
                                                    const int32_t *quant, int8_t *out, int32_t c, int32_t real,
                                                    const mlonmcu_mve_conv_t *p) {
  const int32_t full = real == 4;
  const mve_pred16_t lanes = vctp32q((uint32_t)real);
  int32x4_t acc0 = mlonmcu_mve_load4(bias + c, real), acc1 = acc0;
#pragma GCC unroll 16
  for (int32_t kh = 0; kh < p->kernel_h; ++kh)
#pragma GCC unroll 16
    for (int32_t kw = 0; kw < p->kernel_w; ++kw) {
      const int8_t *xp = src + kh * row + kw * tap + c;
      const int8_t *wp = w + c * p->kernel_h * p->kernel_w + (kh * p->kernel_w + kw) * 4;
      const int32x4_t wv = full ? vldrbq_s32(wp) : vldrbq_z_s32(wp, lanes);
      acc0 = vaddq_s32(acc0, vmulq_s32(full ? vldrbq_s32(xp) : vldrbq_z_s32(xp, lanes), wv));
      if (pixels == 2)
        acc1 = vaddq_s32(acc1, vmulq_s32(full ? vldrbq_s32(xp + next) : vldrbq_z_s32(xp + next, lanes), wv));
      __asm__("" : "+w"(acc0), "+w"(acc1)); /* tap by tap: else GCC hoists every product and spills */
    }
  mlonmcu_mve_requantize_store(acc0, quant, c, real, p, out + c);
  if (pixels == 2) mlonmcu_mve_requantize_store(acc1, quant, c, real, p, out + p->outputs + c);
}

/* Channels [c0, c1) of one or two DEPTHWISE_CONV_2D pixels, four at a time, the last four
   predicated. */
MLONMCU_MVE_INLINE void mlonmcu_mve_depthwise_pixel(const int8_t *src, int32_t row, int32_t tap, int32_t next,
                                                    int32_t pixels, const int8_t *w, const int32_t *bias,
                                                    const int32_t *quant, int8_t *out, int32_t c0, int32_t c1,
                                                    const mlonmcu_mve_conv_t *p) {
  int32_t c = c0;
  for (; c + 4 <= c1; c += 4) mlonmcu_mve_depthwise_lanes(src, row, tap, next, pixels, w, bias, quant, out, c, 4, p);
  if (c < c1) mlonmcu_mve_depthwise_lanes(src, row, tap, next, pixels, w, bias, quant, out, c, c1 - c, p);
}

/* `count` bytes from `from` to `to` (or the zero point, if not `inside`), sixteen at a time. */
MLONMCU_MVE_INLINE void mlonmcu_mve_copy(int8_t *to, const int8_t *from, int32_t count, int32_t inside,
                                         int8x16_t zero_point) {
  int32_t i = 0;
  for (; i + 16 <= count; i += 16) vstrbq_s8(to + i, inside ? vldrbq_s8(from + i) : zero_point);
  if (i < count) {
    const mve_pred16_t part = vctp8q((uint32_t)(count - i));
    vstrbq_p_s8(to + i, inside ? vldrbq_z_s8(from + i, part) : zero_point, part);
  }
}

/* Channels [c0, c0 + count) of the window of one output pixel as a column [KH][KW][count] (the
   weights' order), taps outside the input filled with the input's zero point: (zero point +
   offset) * w adds nothing. A kernel row inside the input is one contiguous copy (dilation 1). */
MLONMCU_MVE_INLINE void mlonmcu_mve_column(int8_t *column, const int8_t *x, int32_t x_origin, int32_t ih0,
                                           int32_t iw0, int32_t c0, int32_t count, const mlonmcu_mve_conv_t *p) {
  const int8x16_t zero_point = vdupq_n_s8((int8_t)-p->input_offset);
  const int32_t whole = count == p->channels && p->dilation_w == 1 && iw0 >= 0 &&
                        iw0 + p->kernel_w <= p->width; /* every tap of a row inside, if the row is */
  for (int32_t kh = 0; kh < p->kernel_h; ++kh) {
    const int32_t ih = ih0 + kh * p->dilation_h;
    const int32_t row_inside = ih >= 0 && ih < p->height;
    const int8_t *from = x + x_origin + kh * p->dilation_h * p->width * p->channels + c0;
    int8_t *to = column + kh * p->kernel_w * count;
    if (whole || !row_inside) {
      mlonmcu_mve_copy(to, from, p->kernel_w * count, row_inside, zero_point);
      continue;
    }
    for (int32_t kw = 0; kw < p->kernel_w; ++kw) {
      const int32_t iw = iw0 + kw * p->dilation_w;
      mlonmcu_mve_copy(to + kw * count, from + kw * p->dilation_w * p->channels, count, iw >= 0 && iw < p->width,
                       zero_point);
    }
  }
}

/* Both convolutions: per output pixel its window's taps inside the input; a full window (the
   interior) takes the bias with the input offset folded in. */
MLONMCU_MVE_INLINE int32_t mlonmcu_mve_conv2d(const int8_t *x, const int8_t *w, const int32_t *bias,
                                         const int32_t *bias_interior, const int32_t *quant, int8_t *y,
                                         int32_t depthwise, int32_t batches, int32_t height, int32_t width,
                                         int32_t channels, int32_t out_height, int32_t out_width, int32_t outputs,
                                         int32_t kernel_h, int32_t kernel_w, int32_t stride_h, int32_t stride_w,
                                         int32_t dilation_h, int32_t dilation_w, int32_t pad_top, int32_t pad_left,
                                         int32_t block, int32_t input_offset, int32_t act_min, int32_t act_max,
                                         int32_t quant_width, int32_t uniform, int32_t left_shift, int32_t zero_point) {
  const mlonmcu_mve_conv_t p = {height, width, channels, out_height, out_width, outputs, kernel_h, kernel_w,
                                stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, block,
                                input_offset, act_min, act_max, quant_width, uniform, left_shift, zero_point};
  const int32_t taps = kernel_h * kernel_w * channels;
  const int32_t columns = !depthwise && taps <= MLONMCU_MVE_COLUMN && (kernel_w * channels) % 16 != 0 && taps > channels;
  const int32_t slice = MLONMCU_MVE_COLUMN / (kernel_h * kernel_w) / 4 * 4; /* depthwise channels per column */
  int8_t column[MLONMCU_MVE_COLUMN]; /* conv: the window; depthwise: a slice of channels of it */
  for (int32_t n = 0; n < batches; ++n)
    for (int32_t oh = 0; oh < out_height; ++oh) {
      const int32_t ih0 = oh * stride_h - pad_top;
      int32_t kh_lo, kh_hi, kw_lo, kw_hi;
      mlonmcu_mve_window(ih0, height, kernel_h, dilation_h, &kh_lo, &kh_hi);
      for (int32_t ow = 0; ow < out_width; ++ow) {
        const int32_t iw0 = ow * stride_w - pad_left;
        mlonmcu_mve_window(iw0, width, kernel_w, dilation_w, &kw_lo, &kw_hi);
        const int32_t interior = kh_lo == 0 && kh_hi == kernel_h && kw_lo == 0 && kw_hi == kernel_w;
        const int32_t x_origin = ((n * height + ih0) * width + iw0) * channels;
        int8_t *out = y + ((n * out_height + oh) * out_width + ow) * outputs;
        if (depthwise && interior) { /* with the next pixel when it is interior too */
          int32_t right = 0;
          mlonmcu_mve_window(iw0 + stride_w, width, kernel_w, dilation_w, &right, &kw_hi);
          const int32_t pixels = ow + 1 < out_width && right == 0 && kw_hi == kernel_w ? 2 : 1;
          mlonmcu_mve_depthwise_pixel(x + x_origin, dilation_h * width * channels, dilation_w * channels,
                                      stride_w * channels, pixels, w, bias_interior, quant, out, 0, channels, &p);
          ow += pixels - 1;
        } else if (depthwise) { /* a zero-point padded column per slice of channels */
          for (int32_t c0 = 0; c0 < channels; c0 += slice) {
            const int32_t count = channels - c0 < slice ? channels - c0 : slice;
            mlonmcu_mve_column(column, x, x_origin, ih0, iw0, c0, count, &p);
            mlonmcu_mve_depthwise_pixel(column - c0, kernel_w * count, count, 0, 1, w, bias_interior, quant, out, c0,
                                        c0 + count, &p);
          }
        } else if (columns) { /* few channels per kernel row: one column of the window, zero point padded */
          mlonmcu_mve_column(column, x, x_origin, ih0, iw0, 0, channels, &p);
          int32_t co = 0;
          for (; co + 4 <= outputs; co += 4) mlonmcu_mve_conv_column(column, w, bias_interior, quant, out, co, 4, &p);
          if (co < outputs) mlonmcu_mve_conv_column(column, w, bias_interior, quant, out, co, outputs - co, &p);
        } else if (interior) {
          int32_t co = 0;
          for (; co + 4 <= outputs; co += 4)
            mlonmcu_mve_conv_pixel(x, w, bias_interior, quant, out, co, 4, x_origin, 0, kernel_h, 0, kernel_w, 1, &p);
          if (co < outputs)
            mlonmcu_mve_conv_pixel(x, w, bias_interior, quant, out, co, outputs - co, x_origin, 0, kernel_h, 0,
                                   kernel_w, 1, &p);
        } else {
          for (int32_t co = 0; co < outputs; co += 4)
            mlonmcu_mve_conv_pixel(x, w, bias, quant, out, co, outputs - co < 4 ? outputs - co : 4, x_origin, kh_lo,
                                   kh_hi, kw_lo, kw_hi, 0, &p);
        }
      }
    }
  return 0;
}

/* FULLY_CONNECTED's sums for one block of outputs, weights [B][I] (the block's rows of [O][I]):
   acc[j] = bias[j] + x . w[j] for j < count, the input offset folded into the bias; the kernel
   requantizes acc as its scalar twin does. */
MLONMCU_MVE_INLINE int32_t mlonmcu_mve_dense_block(int32_t *acc, const int8_t *x, const int8_t *w, const int32_t *bias,
                                              int32_t inputs, int32_t count) {
  int32_t j = 0;
  for (; j + 4 <= count; j += 4)
    vstrwq_s32(acc + j, vaddq_s32(mlonmcu_mve_dot4(x, w + j * inputs, inputs, 4, inputs, 0), vldrwq_s32(bias + j)));
  if (j < count) {
    const int32_t real = count - j;
    const int32x4_t sums = mlonmcu_mve_dot4(x, w + j * inputs, inputs, real, inputs, 0);
    vstrwq_p_s32(acc + j, vaddq_s32(sums, mlonmcu_mve_load4(bias + j, real)), vctp32q((uint32_t)real));
  }
  return 0;
}

/* x * 2^shift scaled by a Q31 multiplier, TFLite's MultiplyByQuantizedMultiplier with scalar
   constants: left shift, VQRDMULH (SRDHM), then a rounding right shift half away from zero. */
MLONMCU_MVE_INLINE int32x4_t mlonmcu_mve_scale(int32x4_t x, int32_t multiplier, int32_t shift) {
  if (shift > 0) x = vshlq_r_s32(x, shift);
  x = vqrdmulhq_n_s32(x, multiplier);
  if (shift < 0) x = vrshlq_n_s32(vqaddq_s32(x, vshrq_n_s32(x, 31)), shift);
  return x;
}

/* Elements [i, i + real) of ADD / SUB with inputs of one shape (integer/elementwise.add_kernel). */
MLONMCU_MVE_INLINE void mlonmcu_mve_add_lanes(const int8_t *a, const int8_t *b, int8_t *out, int32_t real,
                                              const int32_t *k) {
  const mve_pred16_t lanes = vctp32q((uint32_t)real);
  const int32x4_t xa = real == 4 ? vldrbq_s32(a) : vldrbq_z_s32(a, lanes);
  const int32x4_t xb = real == 4 ? vldrbq_s32(b) : vldrbq_z_s32(b, lanes);
  const int32x4_t va = mlonmcu_mve_scale(vshlq_r_s32(vsubq_n_s32(xa, k[0]), k[2]), k[3], k[4]);
  const int32x4_t vb = mlonmcu_mve_scale(vshlq_r_s32(vsubq_n_s32(xb, k[1]), k[2]), k[5], k[6]);
  int32x4_t value = mlonmcu_mve_scale(k[12] ? vsubq_s32(va, vb) : vaddq_s32(va, vb), k[7], k[8]);
  value = vaddq_n_s32(value, k[9]);
  value = vminq_s32(vmaxq_s32(value, vdupq_n_s32(k[10])), vdupq_n_s32(k[11]));
  if (real == 4)
    vstrbq_s32(out, value);
  else
    vstrbq_p_s32(out, value, lanes);
}

/* What an ADD / SUB kernel calls: zero points of a and b, the left shift, the (multiplier, shift)
   pairs of a, b and the output, the output zero point, activation range, subtract. */
MLONMCU_MVE_INLINE int32_t mlonmcu_mve_add(const int8_t *a, const int8_t *b, int8_t *out, int32_t size,
                                           int32_t a_zero_point, int32_t b_zero_point, int32_t left_shift,
                                           int32_t a_multiplier, int32_t a_shift, int32_t b_multiplier, int32_t b_shift,
                                           int32_t multiplier, int32_t shift, int32_t zero_point, int32_t act_min,
                                           int32_t act_max, int32_t subtract) {
  const int32_t k[13] = {a_zero_point, b_zero_point, left_shift, a_multiplier, a_shift, b_multiplier, b_shift,
                         multiplier, shift, zero_point, act_min, act_max, subtract};
  int32_t i = 0;
  for (; i + 4 <= size; i += 4) mlonmcu_mve_add_lanes(a + i, b + i, out + i, 4, k);
  if (i < size) mlonmcu_mve_add_lanes(a + i, b + i, out + i, size - i, k);
  return 0;
}

/* The double a FULLY_CONNECTED requantization row [hi, lo, shift] was split from
   (fixedpoint.double_multiplier: eff = (hi * 2^26 + lo) * 2^-shift, 53 significant bits), rebuilt
   from its bits: exact. */
MLONMCU_MVE_INLINE double mlonmcu_mve_effective(const int32_t *row) {
  const uint64_t whole = ((uint64_t)(uint32_t)row[0] << 26) | (uint32_t)row[1];
  union {
    uint64_t bits;
    double value;
  } eff = {((uint64_t)(1075 - row[2]) << 52) | (whole & ((UINT64_C(1) << 52) - 1))};
  return whole ? eff.value : 0.0;
}

/* FULLY_CONNECTED outputs [0, count) of one block as LiteRT's reference kernel computes them:
   int32(round(double(acc) * eff)) — the C expression itself, in the FPU's double precision where
   the core has one — out of int32 range INT32_MIN (the x86 conversion the scalar kernel matches). */
MLONMCU_MVE_INLINE int32_t mlonmcu_mve_dense_store(const int32_t *acc, const int32_t *quant, int8_t *y, int32_t count,
                                                   int32_t uniform, int32_t zero_point, int32_t act_min,
                                                   int32_t act_max) {
  for (int32_t j = 0; j < count; ++j) {
    const double rounded = round((double)acc[j] * mlonmcu_mve_effective(uniform ? quant : quant + 3 * j));
    int32_t value = rounded < 2147483648.0 && rounded >= -2147483648.0 ? (int32_t)rounded : INT32_MIN;
    value += zero_point;
    y[j] = (int8_t)(value < act_min ? act_min : value > act_max ? act_max : value);
  }
  return 0;
}

/* (sum + count / 2) / count for sum > 0, else (sum - count / 2) / count, truncated (TFLite's
   AVERAGE_POOL_2D): MVE has no divide, so the magnitude's quotient is the high word of its
   product with ceil(2^32 / count), exact for magnitudes below 2^32 / count (at most 256 taps of
   int8: mlonmcu_mve_average_pool), and the sign is restored after. */
MLONMCU_MVE_INLINE int32x4_t mlonmcu_mve_divide(int32x4_t sum, int32_t count, uint32_t reciprocal) {
  const int32x4_t magnitude = vaddq_n_s32(vabsq_s32(sum), count / 2);
  const int32x4_t quotient =
      count > 1 ? vreinterpretq_s32_u32(vmulhq_u32(vreinterpretq_u32_s32(magnitude), vdupq_n_u32(reciprocal)))
                : magnitude;
  return vpselq_s32(vnegq_s32(quotient), quotient, vcmpltq_n_s32(sum, 0));
}

/* One output pixel of an int8 AVERAGE_POOL_2D (NHWC, integer/pooling.py: the TIR loops over the
   pixels and finds each valid window, rows x cols taps from `corner`, rows `row_stride` bytes
   apart) with at most 256 taps: eight channels per vector, summed in 16-bit lanes by widening
   loads (256 * 128 fits), divided in two int32 halves (even and odd lanes), narrowed back in
   place. */
MLONMCU_MVE_INLINE int32_t mlonmcu_mve_average_pool(const int8_t *corner, int8_t *out, int32_t rows, int32_t cols,
                                                    int32_t row_stride, int32_t channels, int32_t act_min,
                                                    int32_t act_max) {
  const int32_t count = rows * cols;
  const uint32_t reciprocal = count > 1 ? UINT32_MAX / (uint32_t)count + 1 : 0;
  for (int32_t c = 0; c < channels; c += 8) {
    const int32_t real = channels - c < 8 ? channels - c : 8;
    const mve_pred16_t lanes = vctp16q((uint32_t)real);
    int16x8_t sum = vdupq_n_s16(0);
    for (int32_t kh = 0; kh < rows; ++kh)
      for (int32_t kw = 0; kw < cols; ++kw) {
        const int8_t *p = corner + kh * row_stride + kw * channels + c;
        sum = vaddq_s16(sum, real == 8 ? vldrbq_s16(p) : vldrbq_z_s16(p, lanes));
      }
    const int32x4_t even = mlonmcu_mve_divide(vmovlbq_s16(sum), count, reciprocal);
    const int32x4_t odd = mlonmcu_mve_divide(vmovltq_s16(sum), count, reciprocal);
    int16x8_t value = vmovntq_s32(vmovnbq_s32(vdupq_n_s16(0), even), odd);
    value = vminq_s16(vmaxq_s16(value, vdupq_n_s16((int16_t)act_min)), vdupq_n_s16((int16_t)act_max));
    if (real == 8)
      vstrbq_s16(out + c, value);
    else
      vstrbq_p_s16(out + c, value, lanes);
  }
  return 0;
}

/* One output pixel of an int8 MAX_POOL_2D (as mlonmcu_mve_average_pool): sixteen channels per
   vector, VMAX from the activation's minimum on, its maximum after. */
MLONMCU_MVE_INLINE int32_t mlonmcu_mve_max_pool(const int8_t *corner, int8_t *out, int32_t rows, int32_t cols,
                                                int32_t row_stride, int32_t channels, int32_t act_min,
                                                int32_t act_max) {
  for (int32_t c = 0; c < channels; c += 16) {
    const int32_t real = channels - c < 16 ? channels - c : 16;
    const mve_pred16_t lanes = vctp8q((uint32_t)real);
    int8x16_t best = vdupq_n_s8((int8_t)act_min);
    for (int32_t kh = 0; kh < rows; ++kh)
      for (int32_t kw = 0; kw < cols; ++kw) {
        const int8_t *p = corner + kh * row_stride + kw * channels + c;
        best = vmaxq_s8(best, real == 16 ? vldrbq_s8(p) : vldrbq_z_s8(p, lanes));
      }
    best = vminq_s8(best, vdupq_n_s8((int8_t)act_max));
    if (real == 16)
      vstrbq_s8(out + c, best);
    else
      vstrbq_p_s8(out + c, best, lanes);
  }
  return 0;
}
