/* RISC-V vector (RVV 1.0, V or Zve32x and up) variants of tvmaot's integer kernels, pasted into
   the kernels' C under `#if defined(__riscv_vector)` (integer/rvv.py). Vector-length agnostic: each
   loop asks vsetvl how many channels fit, so one ELF runs on every VLEN.

   Same arithmetic as the scalar kernels (integer/conv.py, fixedpoint.requantize): the accumulator
   starts at the bias and adds (x + input offset) * w for every tap inside the input, in int32 that
   wraps like C; the requantization reads the same table [2M as uint32, right shift, rounding term
   with the zero point folded in, (left shift)] and rounds the same way. Output channels (conv) or
   channels (depthwise) are the vector lanes, e32 with LMUL 4. */
#include <riscv_vector.h>
#include <stdint.h>

typedef struct {
  int32_t height, width, channels;     /* input */
  int32_t out_height, out_width, outputs;
  int32_t kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
  int32_t block;                       /* conv: output channels per packed weight block */
  int32_t input_offset, act_min, act_max;
  int32_t quant_width, uniform, left_shift, always_right, zero_point, zero_point_folded;
} mlonmcu_rvv_conv_t;

/* Requantize vl accumulators of channels [channel, channel + vl), clamp and store them as int8. */
static inline void mlonmcu_rvv_requantize_store(vint32m4_t acc, const int32_t *quant, int32_t channel,
                                                const mlonmcu_rvv_conv_t *p, int8_t *out, size_t vl) {
  const int32_t *row = p->uniform ? quant : quant + channel * p->quant_width;
  const ptrdiff_t stride = p->uniform ? 0 : (ptrdiff_t)p->quant_width * 4;
  if (p->left_shift) {
    vuint32m4_t left = __riscv_vreinterpret_v_i32m4_u32m4(__riscv_vlse32_v_i32m4(row + 3, stride, vl));
    acc = __riscv_vsll_vv_i32m4(acc, left, vl);
  }
  vuint32m4_t doubled = __riscv_vreinterpret_v_i32m4_u32m4(__riscv_vlse32_v_i32m4(row, stride, vl));
  /* floor((acc * M + 2^30) / 2^31): high word of acc * 2M plus bit 31 of its low word */
  vint32m4_t high = __riscv_vmulhsu_vv_i32m4(acc, doubled, vl);
  vuint32m4_t low = __riscv_vmul_vv_u32m4(__riscv_vreinterpret_v_i32m4_u32m4(acc), doubled, vl);
  high = __riscv_vadd_vv_i32m4(high, __riscv_vreinterpret_v_u32m4_i32m4(__riscv_vsrl_vx_u32m4(low, 31, vl)), vl);
  vint32m4_t right = __riscv_vlse32_v_i32m4(row + 1, stride, vl);
  vint32m4_t term = __riscv_vlse32_v_i32m4(row + 2, stride, vl);
  /* (high + term - (high < 0)) >> right: half away from zero, zero point folded into term */
  vint32m4_t sum = __riscv_vadd_vv_i32m4(__riscv_vadd_vv_i32m4(high, term, vl), __riscv_vsra_vx_i32m4(high, 31, vl), vl);
  vint32m4_t value = __riscv_vsra_vv_i32m4(sum, __riscv_vreinterpret_v_i32m4_u32m4(right), vl);
  if (!p->zero_point_folded) value = __riscv_vadd_vx_i32m4(value, p->zero_point, vl);
  if (!p->always_right) {
    vbool8_t shifts = __riscv_vmsgt_vx_i32m4_b8(right, 0, vl);
    value = __riscv_vmerge_vvm_i32m4(__riscv_vadd_vx_i32m4(high, p->zero_point, vl), value, shifts, vl);
  }
  value = __riscv_vmin_vx_i32m4(__riscv_vmax_vx_i32m4(value, p->act_min, vl), p->act_max, vl);
  vint16m2_t half = __riscv_vncvt_x_x_w_i16m2(value, vl);
  __riscv_vse8_v_i8m1(out, __riscv_vncvt_x_x_w_i8m1(half, vl), vl);
}

/* Kernel taps [lo, hi) of one axis that fall inside the input for a window starting at origin. */
static inline void mlonmcu_rvv_window(int32_t origin, int32_t size, int32_t kernel, int32_t dilation,
                                      int32_t *lo, int32_t *hi) {
  int32_t first = origin < 0 ? (-origin + dilation - 1) / dilation : 0;
  int32_t last = (size - origin + dilation - 1) / dilation;
  if (last > kernel) last = kernel;
  *lo = first;
  *hi = last > first ? last : first;
}

/* CONV_2D, weights [Cout/B][KH][KW][Cin][B]: the strip [channel, channel + vl) of one block, each
   input value (a scalar) times a vector of B-contiguous weights, over the taps inside the input. */
static inline vint32m4_t mlonmcu_rvv_conv_strip(vint32m4_t acc, const int8_t *x, const int8_t *w, int32_t channel,
                                                int32_t x_origin, int32_t kh_lo, int32_t kh_hi, int32_t kw_lo, int32_t kw_hi,
                                                const mlonmcu_rvv_conv_t *p, size_t vl) {
  const int32_t tap_size = p->channels * p->block;
  const int8_t *block = w + channel / p->block * p->kernel_h * p->kernel_w * tap_size + channel % p->block;
  for (int32_t kh = kh_lo; kh < kh_hi; ++kh)
    for (int32_t kw = kw_lo; kw < kw_hi; ++kw) {
      const int8_t *xp = x + x_origin + (kh * p->dilation_h * p->width + kw * p->dilation_w) * p->channels;
      const int8_t *wp = block + (kh * p->kernel_w + kw) * tap_size;
      for (int32_t c = 0; c < p->channels; ++c) {
        vint16m2_t weights = __riscv_vsext_vf2_i16m2(__riscv_vle8_v_i8m1(wp + c * p->block, vl), vl);
        acc = __riscv_vwmacc_vx_i32m4(acc, (int16_t)(xp[c] + p->input_offset), weights, vl);
      }
    }
  return acc;
}

/* DEPTHWISE_CONV_2D (multiplier 1), weights [KH][KW][C padded]: the channels are the lanes. */
static inline vint32m4_t mlonmcu_rvv_depthwise_strip(vint32m4_t acc, const int8_t *x, const int8_t *w,
                                                     int32_t channel, int32_t x_origin, int32_t kh_lo, int32_t kh_hi, int32_t kw_lo, int32_t kw_hi,
                                                     const mlonmcu_rvv_conv_t *p, size_t vl) {
  const int32_t padded = (p->channels + p->block - 1) / p->block * p->block;
  for (int32_t kh = kh_lo; kh < kh_hi; ++kh)
    for (int32_t kw = kw_lo; kw < kw_hi; ++kw) {
      const int8_t *xp = x + x_origin + (kh * p->dilation_h * p->width + kw * p->dilation_w) * p->channels + channel;
      const int8_t *wp = w + (kh * p->kernel_w + kw) * padded + channel;
      vint16m2_t inputs =
          __riscv_vadd_vx_i16m2(__riscv_vsext_vf2_i16m2(__riscv_vle8_v_i8m1(xp, vl), vl), (int16_t)p->input_offset, vl);
      vint16m2_t weights = __riscv_vsext_vf2_i16m2(__riscv_vle8_v_i8m1(wp, vl), vl);
      acc = __riscv_vwmacc_vv_i32m4(acc, inputs, weights, vl);
    }
  return acc;
}

/* Both convolutions: per output pixel its window's taps inside the input, per strip of output
   channels (a conv strip stays inside one weight block) the accumulators, then requantized. */
static inline int32_t mlonmcu_rvv_convolve(const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *quant,
                                           int8_t *y, int32_t batches, int32_t depthwise,
                                           const mlonmcu_rvv_conv_t *p) {
  for (int32_t n = 0; n < batches; ++n)
    for (int32_t oh = 0; oh < p->out_height; ++oh) {
      const int32_t ih0 = oh * p->stride_h - p->pad_top;
      int32_t kh_lo, kh_hi, kw_lo, kw_hi;
      mlonmcu_rvv_window(ih0, p->height, p->kernel_h, p->dilation_h, &kh_lo, &kh_hi);
      for (int32_t ow = 0; ow < p->out_width; ++ow) {
        const int32_t iw0 = ow * p->stride_w - p->pad_left;
        mlonmcu_rvv_window(iw0, p->width, p->kernel_w, p->dilation_w, &kw_lo, &kw_hi);
        const int32_t x_origin = ((n * p->height + ih0) * p->width + iw0) * p->channels;
        int8_t *out = y + ((n * p->out_height + oh) * p->out_width + ow) * p->outputs;
        for (int32_t channel = 0; channel < p->outputs;) {
          int32_t rest = p->outputs - channel, left = p->block - channel % p->block;
          size_t vl = __riscv_vsetvl_e32m4((size_t)(depthwise || rest < left ? rest : left));
          vint32m4_t acc = __riscv_vle32_v_i32m4(bias + channel, vl);
          acc = depthwise ? mlonmcu_rvv_depthwise_strip(acc, x, w, channel, x_origin, kh_lo, kh_hi, kw_lo, kw_hi, p, vl)
                          : mlonmcu_rvv_conv_strip(acc, x, w, channel, x_origin, kh_lo, kh_hi, kw_lo, kw_hi, p, vl);
          mlonmcu_rvv_requantize_store(acc, quant, channel, p, out + channel, vl);
          channel += (int32_t)vl;
        }
      }
    }
  return 0;
}

/* What the kernels' C calls (every argument a compile-time constant but the buffers). */
static inline int32_t mlonmcu_rvv_conv2d(const int8_t *x, const int8_t *w, const int32_t *bias,
                                         const int32_t *quant, int8_t *y, int32_t depthwise, int32_t batches,
                                         int32_t height, int32_t width, int32_t channels, int32_t out_height,
                                         int32_t out_width, int32_t outputs, int32_t kernel_h, int32_t kernel_w,
                                         int32_t stride_h, int32_t stride_w, int32_t dilation_h, int32_t dilation_w,
                                         int32_t pad_top, int32_t pad_left, int32_t block, int32_t input_offset,
                                         int32_t act_min, int32_t act_max, int32_t quant_width, int32_t uniform,
                                         int32_t left_shift, int32_t always_right, int32_t zero_point,
                                         int32_t zero_point_folded) {
  const mlonmcu_rvv_conv_t p = {height, width, channels, out_height, out_width, outputs, kernel_h, kernel_w,
                                stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, block,
                                input_offset, act_min, act_max, quant_width, uniform, left_shift,
                                always_right, zero_point, zero_point_folded};
  return mlonmcu_rvv_convolve(x, w, bias, quant, y, batches, depthwise, &p);
}

/* FULLY_CONNECTED's multiply-accumulate for one block of outputs, weights [I][B] (the block's
   slice of [O/B][I][B]): acc[j] = bias[j] + sum_i (x[i] + offset) * w[i][j] for j < count, the
   outputs as lanes; the kernel requantizes acc as its scalar twin does. */
static inline int32_t mlonmcu_rvv_dense_block(int32_t *acc, const int8_t *x, const int8_t *w, const int32_t *bias,
                                              int32_t inputs, int32_t block, int32_t count, int32_t input_offset) {
  for (int32_t j = 0; j < count;) {
    size_t vl = __riscv_vsetvl_e32m4((size_t)(count - j));
    vint32m4_t sum = __riscv_vle32_v_i32m4(bias + j, vl);
    for (int32_t i = 0; i < inputs; ++i) {
      vint16m2_t weights = __riscv_vsext_vf2_i16m2(__riscv_vle8_v_i8m1(w + i * block + j, vl), vl);
      sum = __riscv_vwmacc_vx_i32m4(sum, (int16_t)(x[i] + input_offset), weights, vl);
    }
    __riscv_vse32_v_i32m4(acc + j, sum, vl);
    j += (int32_t)vl;
  }
  return 0;
}

/* x * 2^shift scaled by a Q31 multiplier, TFLite's MultiplyByQuantizedMultiplier with scalar
   constants (as the requantization above: the high word of x * 2M plus bit 31 of its low word,
   then a rounding right shift half away from zero). */
static inline vint32m4_t mlonmcu_rvv_scale(vint32m4_t x, int32_t multiplier, int32_t shift, size_t vl) {
  if (shift > 0) x = __riscv_vsll_vx_i32m4(x, (size_t)shift, vl);
  const uint32_t doubled = 2u * (uint32_t)multiplier;
  vint32m4_t high = __riscv_vmulhsu_vx_i32m4(x, doubled, vl);
  vuint32m4_t low = __riscv_vmul_vx_u32m4(__riscv_vreinterpret_v_i32m4_u32m4(x), doubled, vl);
  high = __riscv_vadd_vv_i32m4(high, __riscv_vreinterpret_v_u32m4_i32m4(__riscv_vsrl_vx_u32m4(low, 31, vl)), vl);
  if (shift >= 0) return high;
  const int32_t right = -shift;
  vint32m4_t sum = __riscv_vadd_vx_i32m4(__riscv_vadd_vv_i32m4(high, __riscv_vsra_vx_i32m4(high, 31, vl), vl),
                                         1 << (right - 1), vl);
  return __riscv_vsra_vx_i32m4(sum, (size_t)right, vl);
}

/* int8 ADD / SUB of two inputs of one shape (integer/elementwise.add_kernel): zero points of a and
   b, the left shift, the (multiplier, shift) pairs of a, b and the output, the output zero point,
   activation range, subtract. */
static inline int32_t mlonmcu_rvv_add(const int8_t *a, const int8_t *b, int8_t *out, int32_t size, int32_t a_zero_point,
                                      int32_t b_zero_point, int32_t left_shift, int32_t a_multiplier, int32_t a_shift,
                                      int32_t b_multiplier, int32_t b_shift, int32_t multiplier, int32_t shift,
                                      int32_t zero_point, int32_t act_min, int32_t act_max, int32_t subtract) {
  for (int32_t i = 0; i < size;) {
    size_t vl = __riscv_vsetvl_e32m4((size_t)(size - i));
    vint32m4_t va = __riscv_vsext_vf4_i32m4(__riscv_vle8_v_i8m1(a + i, vl), vl);
    vint32m4_t vb = __riscv_vsext_vf4_i32m4(__riscv_vle8_v_i8m1(b + i, vl), vl);
    va = __riscv_vsll_vx_i32m4(__riscv_vsub_vx_i32m4(va, a_zero_point, vl), (size_t)left_shift, vl);
    vb = __riscv_vsll_vx_i32m4(__riscv_vsub_vx_i32m4(vb, b_zero_point, vl), (size_t)left_shift, vl);
    va = mlonmcu_rvv_scale(va, a_multiplier, a_shift, vl);
    vb = mlonmcu_rvv_scale(vb, b_multiplier, b_shift, vl);
    vint32m4_t total = subtract ? __riscv_vsub_vv_i32m4(va, vb, vl) : __riscv_vadd_vv_i32m4(va, vb, vl);
    vint32m4_t value = __riscv_vadd_vx_i32m4(mlonmcu_rvv_scale(total, multiplier, shift, vl), zero_point, vl);
    value = __riscv_vmin_vx_i32m4(__riscv_vmax_vx_i32m4(value, act_min, vl), act_max, vl);
    vint16m2_t half = __riscv_vncvt_x_x_w_i16m2(value, vl);
    __riscv_vse8_v_i8m1(out + i, __riscv_vncvt_x_x_w_i8m1(half, vl), vl);
    i += (int32_t)vl;
  }
  return 0;
}

/* One output pixel of an int8 AVERAGE_POOL_2D (NHWC, integer/pooling.py: the TIR loops over the
   pixels and finds each valid window, rows x cols taps from `corner`, rows `row_stride` bytes
   apart) with at most 256 taps: channels as 16-bit lanes (LMUL 2) summed by widening adds
   (256 * 128 fits), then in int32 (sum +- count / 2) / count with the vector divide (truncating,
   as C): TFLite's division rounding half away from zero. */
static inline int32_t mlonmcu_rvv_average_pool(const int8_t *corner, int8_t *out, int32_t rows, int32_t cols,
                                               int32_t row_stride, int32_t channels, int32_t act_min,
                                               int32_t act_max) {
  const int32_t count = rows * cols, half = count / 2;
  for (int32_t c = 0; c < channels;) {
    size_t vl = __riscv_vsetvl_e16m2((size_t)(channels - c));
    vint16m2_t sums = __riscv_vmv_v_x_i16m2(0, vl);
    for (int32_t kh = 0; kh < rows; ++kh)
      for (int32_t kw = 0; kw < cols; ++kw)
        sums = __riscv_vwadd_wv_i16m2(sums, __riscv_vle8_v_i8m1(corner + kh * row_stride + kw * channels + c, vl), vl);
    vint32m4_t sum = __riscv_vsext_vf2_i32m4(sums, vl);
    vint32m4_t sign = __riscv_vsra_vx_i32m4(sum, 31, vl); /* 0 or -1: +-half = (half ^ sign) - sign */
    vint32m4_t nudge = __riscv_vsub_vv_i32m4(__riscv_vxor_vx_i32m4(sign, half, vl), sign, vl);
    vint32m4_t value = __riscv_vdiv_vx_i32m4(__riscv_vadd_vv_i32m4(sum, nudge, vl), count, vl);
    value = __riscv_vmin_vx_i32m4(__riscv_vmax_vx_i32m4(value, act_min, vl), act_max, vl);
    vint16m2_t narrow = __riscv_vncvt_x_x_w_i16m2(value, vl);
    __riscv_vse8_v_i8m1(out + c, __riscv_vncvt_x_x_w_i8m1(narrow, vl), vl);
    c += (int32_t)vl;
  }
  return 0;
}

/* One output pixel of an int8 MAX_POOL_2D (as mlonmcu_rvv_average_pool): channels as int8 lanes
   (LMUL 4), VMAX from the activation's minimum on, its maximum after. */
static inline int32_t mlonmcu_rvv_max_pool(const int8_t *corner, int8_t *out, int32_t rows, int32_t cols,
                                           int32_t row_stride, int32_t channels, int32_t act_min, int32_t act_max) {
  for (int32_t c = 0; c < channels;) {
    size_t vl = __riscv_vsetvl_e8m4((size_t)(channels - c));
    vint8m4_t best = __riscv_vmv_v_x_i8m4((int8_t)act_min, vl);
    for (int32_t kh = 0; kh < rows; ++kh)
      for (int32_t kw = 0; kw < cols; ++kw)
        best = __riscv_vmax_vv_i8m4(best, __riscv_vle8_v_i8m4(corner + kh * row_stride + kw * channels + c, vl), vl);
    __riscv_vse8_v_i8m4(out + c, __riscv_vmin_vx_i8m4(best, (int8_t)act_max, vl), vl);
    c += (int32_t)vl;
  }
  return 0;
}
