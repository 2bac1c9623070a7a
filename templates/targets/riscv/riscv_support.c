/*
 * Support code every bare-metal RV32 target shares (Spike, QEMU virt, Ibex): counters from the
 * CSRs, stack painting, the trap report. Console and exit are the machine's (its support.c).
 */
#include <stdint.h>

#include "mlonmcu_target.h"

volatile int mlonmcu_exiting; /* set by mlonmcu_exit: a trap after it only waits */

extern uint32_t __stack_bottom[];
#define STACK_PAINT 0x6d6c6f6eu

void mlonmcu_paint_stack(void) {
  /* Paint the stack below the current frame so the harness can report how much was used. */
  uint32_t *p = __stack_bottom;
  uint32_t *sp;
  __asm__ volatile("mv %0, sp" : "=r"(sp));
  while (p < sp - 64) {
    *p++ = STACK_PAINT;
  }
}

uint32_t mlonmcu_stack_used(void) {
  extern uint32_t __stack_top[];
  uint32_t *p = __stack_bottom;
  while (p < __stack_top && *p == STACK_PAINT) {
    p++;
  }
  return (uint32_t)((uintptr_t)__stack_top - (uintptr_t)p);
}

void mlonmcu_target_init(void) {}

int mlonmcu_cycles_available(void) { return 1; }

#define READ_CSR64(lo_name, hi_name)                          \
  ({                                                          \
    uint32_t hi, lo, hi2;                                     \
    do {                                                      \
      __asm__ volatile("csrr %0, " hi_name : "=r"(hi));       \
      __asm__ volatile("csrr %0, " lo_name : "=r"(lo));       \
      __asm__ volatile("csrr %0, " hi_name : "=r"(hi2));      \
    } while (hi != hi2);                                      \
    ((uint64_t)hi << 32) | lo;                                \
  })

uint64_t mlonmcu_cycles(void) { return READ_CSR64("mcycle", "mcycleh"); }

uint64_t mlonmcu_instructions(void) { return READ_CSR64("minstret", "minstreth"); }

uint64_t mlonmcu_time_ns(void) { return 0; }

/* QEMU plugin marks: the plugin records its counts whenever this function starts. */
static volatile uint32_t marks;

__attribute__((noinline, used)) uint32_t mlonmcu_mark(void) {
  __asm__ volatile("" ::: "memory");
  return marks++;
}

static void put_str(const char *s) {
  while (*s) {
    mlonmcu_putc(*s++);
  }
}

static void put_hex32(uint32_t v) {
  static const char digits[] = "0123456789abcdef";
  put_str("0x");
  for (int i = 28; i >= 0; i -= 4) {
    mlonmcu_putc(digits[(v >> i) & 0xfu]);
  }
}

void mlonmcu_trap(void) {
  if (mlonmcu_exiting) {
    for (;;) {
    }
  }
  uint32_t mcause, mepc, mtval;
  __asm__ volatile("csrr %0, mcause" : "=r"(mcause));
  __asm__ volatile("csrr %0, mepc" : "=r"(mepc));
  __asm__ volatile("csrr %0, mtval" : "=r"(mtval));
  put_str("\nMLONMCU TRAP mcause=");
  put_hex32(mcause);
  put_str(" mepc=");
  put_hex32(mepc);
  put_str(" mtval=");
  put_hex32(mtval);
  mlonmcu_putc('\n');
  mlonmcu_exit(100);
}
