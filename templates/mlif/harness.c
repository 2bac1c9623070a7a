/*
 * mlonmcu benchmark harness: init once, run every embedded sample, read the target's counters
 * around init and around each inference, print results in a line format mlonmcu parses:
 *
 *   MLONMCU BEGIN
 *   MLONMCU SETUP status=0 cycles=.. instructions=.. ns=..   (or marks=B:A, see below)
 *   MLONMCU RUN sample=0 iteration=0 status=0 cycles=.. instructions=.. ns=..
 *   MLONMCU OUTPUT sample=0 index=0 size=12 data=<hex bytes>
 *   MLONMCU PROFILE kernel=3 calls=1 cycles=.. instructions=.. ns=..   (feature profile)
 *   MLONMCU END status=0 stack=..
 *   MLONMCU ARENA needed=..   (calibration firmware, MLONMCU_ARENA_PROBE)
 *
 * The exit code is the status: 0 when every call succeeded. Where an external tool counts
 * instructions (mlonmcu's QEMU plugin, which also counts their classes), the harness prints the
 * indices of the marks it set around each region (marks=before:after) and mlonmcu turns them
 * into counts. A mark opens a region before the counters are read and closes it after.
 */
#include <string.h>

#include "mlonmcu_harness_config.h"
#include "mlonmcu_model.h"
#include "mlonmcu_profile.h"
#include "mlonmcu_samples.h"
#include "mlonmcu_target.h"

typedef struct {
  uint64_t cycles;
  uint64_t instructions;
  uint64_t ns;
  uint64_t mark;
} counters_t;

static void put_str(const char *s) {
  while (*s) {
    mlonmcu_putc(*s++);
  }
}

static void put_u64(uint64_t value) {
  char buf[21];
  int pos = 20;
  buf[pos] = '\0';
  do {
    buf[--pos] = (char)('0' + (value % 10u));
    value /= 10u;
  } while (value != 0u);
  put_str(&buf[pos]);
}

static void put_field(const char *name, uint64_t value) {
  mlonmcu_putc(' ');
  put_str(name);
  mlonmcu_putc('=');
  put_u64(value);
}

static void put_int_field(const char *name, int value) {
  mlonmcu_putc(' ');
  put_str(name);
  mlonmcu_putc('=');
  if (value < 0) {
    mlonmcu_putc('-');
    put_u64((uint64_t)(-(int64_t)value));
  } else {
    put_u64((uint64_t)value);
  }
}

#define OPENING 0
#define CLOSING 1

static counters_t read_counters(int closing) {
  counters_t c = {0, 0, 0, 0};
#if MLONMCU_HAS_MARKS
  if (!closing) {
    c.mark = mlonmcu_mark();
  }
#endif
#if MLONMCU_HAS_TIME_NS
  c.ns = mlonmcu_time_ns();
#endif
#if MLONMCU_HAS_INSTRUCTIONS
  c.instructions = mlonmcu_instructions();
#endif
#if MLONMCU_HAS_CYCLES
  c.cycles = mlonmcu_cycles_available() ? mlonmcu_cycles() : 0;
#endif
#if MLONMCU_HAS_MARKS
  if (closing) {
    c.mark = mlonmcu_mark();
  }
#endif
  (void)closing;
  return c;
}

static void put_counters(counters_t before, counters_t after) {
#if MLONMCU_HAS_CYCLES
  if (mlonmcu_cycles_available()) {
    put_field("cycles", after.cycles - before.cycles);
  }
#endif
#if MLONMCU_HAS_INSTRUCTIONS
  put_field("instructions", after.instructions - before.instructions);
#endif
#if MLONMCU_HAS_MARKS
  put_str(" marks=");
  put_u64(before.mark);
  mlonmcu_putc(':');
  put_u64(after.mark);
#endif
#if MLONMCU_HAS_TIME_NS
  put_field("ns", after.ns - before.ns);
#endif
  (void)before;
  (void)after;
}

static void put_hex(const uint8_t *data, size_t size) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < size; i++) {
    mlonmcu_putc(digits[data[i] >> 4]);
    mlonmcu_putc(digits[data[i] & 0xfu]);
  }
}

static int load_sample(size_t sample) {
  size_t inputs = mlonmcu_model_num_inputs();
  if (inputs != mlonmcu_sample_num_inputs) {
    return -2;
  }
  for (size_t i = 0; i < inputs; i++) {
    size_t index = sample * inputs + i;
    if (mlonmcu_sample_size[index] != mlonmcu_model_input_size(i)) {
      return -3;
    }
    memcpy(mlonmcu_model_input_ptr(i), mlonmcu_sample_data[index], mlonmcu_sample_size[index]);
  }
  return 0;
}

static void put_outputs(size_t sample) {
  for (size_t i = 0; i < mlonmcu_model_num_outputs(); i++) {
    put_str("MLONMCU OUTPUT");
    put_field("sample", sample);
    put_field("index", i);
    put_field("size", mlonmcu_model_output_size(i));
    put_str(" data=");
    put_hex((const uint8_t *)mlonmcu_model_output_ptr(i), mlonmcu_model_output_size(i));
    mlonmcu_putc('\n');
  }
}

#if MLONMCU_PROFILE
#ifndef MLONMCU_PROFILE_MAX_KERNELS
#define MLONMCU_PROFILE_MAX_KERNELS 1024
#endif
/* Counters are only read during one extra inference, so the measured runs stay unperturbed. */
static int profile_active;
static counters_t profile_start;
static counters_t profile_sum[MLONMCU_PROFILE_MAX_KERNELS];
static uint32_t profile_calls[MLONMCU_PROFILE_MAX_KERNELS];

void mlonmcu_profile_begin(size_t kernel) {
  (void)kernel;
  if (profile_active) {
    profile_start = read_counters(OPENING);
  }
}

void mlonmcu_profile_end(size_t kernel) {
  if (profile_active && kernel < MLONMCU_PROFILE_MAX_KERNELS) {
    counters_t now = read_counters(CLOSING);
#if MLONMCU_HAS_MARKS
    /* Marks are indices, not counts: they cannot be summed here. Each call's pair is reported
     * (after its closing mark, so the printing is not measured); mlonmcu sums per kernel. */
    put_str("MLONMCU PROFILE");
    put_field("kernel", kernel);
    put_field("calls", 1);
    put_counters(profile_start, now);
    mlonmcu_putc('\n');
    return;
#endif
    profile_sum[kernel].cycles += now.cycles - profile_start.cycles;
    profile_sum[kernel].instructions += now.instructions - profile_start.instructions;
    profile_sum[kernel].ns += now.ns - profile_start.ns;
    profile_calls[kernel]++;
  }
}

static int profile_run(void) {
  int status = load_sample(0);
  if (status != 0) {
    return status;
  }
  profile_active = 1;
  status = mlonmcu_model_run();
  profile_active = 0;
  for (size_t k = 0; k < MLONMCU_PROFILE_MAX_KERNELS; k++) {
    if (profile_calls[k] == 0) {
      continue;
    }
    counters_t zero = {0, 0, 0, 0};
    put_str("MLONMCU PROFILE");
    put_field("kernel", k);
    put_field("calls", profile_calls[k]);
    put_counters(zero, profile_sum[k]);
    mlonmcu_putc('\n');
  }
  return status;
}
#endif

static int finish(int status) {
  put_str("MLONMCU END");
  put_int_field("status", status);
#if MLONMCU_HAS_STACK_USAGE
  put_field("stack", mlonmcu_stack_used());
#endif
  mlonmcu_putc('\n');
  mlonmcu_flush();
  return status;
}

#if MLONMCU_ARENA_PROBE
/* A calibration firmware: measures the arena the model needs on this target, nothing else. */
int main(void) {
  mlonmcu_target_init();
  put_str("MLONMCU BEGIN\n");
  (void)read_counters(OPENING); /* keeps the counter hooks linked: targets look them up in every ELF */
  size_t needed = mlonmcu_model_arena_probe();
  put_str("MLONMCU ARENA");
  put_field("needed", needed);
  mlonmcu_putc('\n');
  return finish(needed ? 0 : -1);
}
#else
int main(void) {
  mlonmcu_target_init();
  put_str("MLONMCU BEGIN\n");

  counters_t before = read_counters(OPENING);
  int status = mlonmcu_model_init();
  counters_t after = read_counters(CLOSING);
  put_str("MLONMCU SETUP");
  put_int_field("status", status);
  put_counters(before, after);
  put_field("arena", mlonmcu_model_arena_size());
  mlonmcu_putc('\n');
  if (status != 0) {
    return finish(status);
  }

  for (size_t sample = 0; sample < mlonmcu_num_samples; sample++) {
    /* Only the first sample is repeated: its figures are the report's "Run" numbers. */
    int iterations = sample == 0 ? MLONMCU_REPEAT : 1;
    for (int it = 0; it < iterations; it++) {
      /* Reloaded every time: a backend may reuse input memory for intermediates. */
      status = load_sample(sample);
      if (status != 0) {
        put_str("MLONMCU ERROR sample does not match the model's inputs\n");
        return finish(status);
      }
      before = read_counters(OPENING);
      status = mlonmcu_model_run();
      after = read_counters(CLOSING);
      put_str("MLONMCU RUN");
      put_field("sample", sample);
      put_field("iteration", (uint64_t)it);
      put_int_field("status", status);
      put_counters(before, after);
      mlonmcu_putc('\n');
      if (status != 0) {
        return finish(status);
      }
    }
    if (MLONMCU_PRINT_OUTPUTS || sample == 0) {
      put_outputs(sample);
    }
  }
#if MLONMCU_PROFILE
  status = profile_run();
#endif
  return finish(status);
}
#endif
