/* Host support: stdout for output, CLOCK_MONOTONIC for wall-clock time (no cycle counter). */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mlonmcu_target.h"

/* Line-buffered so that the lines before a crash still reach the log. */
void mlonmcu_target_init(void) { setvbuf(stdout, NULL, _IOLBF, 0); }

void mlonmcu_putc(char c) { putchar(c); }

void mlonmcu_flush(void) { fflush(stdout); }

int mlonmcu_cycles_available(void) { return 0; }

void mlonmcu_exit(int code) {
  fflush(stdout);
  exit(code);
}

uint64_t mlonmcu_cycles(void) { return 0; }

uint64_t mlonmcu_instructions(void) { return 0; }

uint64_t mlonmcu_time_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint32_t mlonmcu_stack_used(void) { return 0; }
