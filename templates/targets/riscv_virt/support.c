/*
 * Support code shared by Spike and QEMU virt: one ELF runs on both.
 * Console: NS16550 UART at 0x10000000 (modelled by both).
 * Exit: HTIF `tohost` (Spike), then the SiFive test device at 0x100000 (QEMU); whichever
 * simulator does not know one of the two either ignores it or traps, and the trap handler
 * then just waits for the exit to take effect.
 */
#include <stdint.h>

#include "mlonmcu_target.h"

#define UART_BASE 0x10000000u
#define UART_THR 0u
#define UART_LSR 5u
#define UART_LSR_THRE 0x20u
#define TEST_DEVICE 0x100000u

volatile uint64_t tohost __attribute__((section(".tohost"), aligned(8)));
volatile uint64_t fromhost __attribute__((section(".tohost"), aligned(8)));

static volatile int exiting;

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

void mlonmcu_putc(char c) {
  volatile uint8_t *uart = (volatile uint8_t *)UART_BASE;
  while ((uart[UART_LSR] & UART_LSR_THRE) == 0) {
  }
  uart[UART_THR] = (uint8_t)c;
}

void mlonmcu_flush(void) {}

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

void __attribute__((noreturn)) mlonmcu_exit(int code) {
  exiting = 1;
  tohost = ((uint64_t)(uint32_t)code << 1) | 1u;
  *(volatile uint32_t *)TEST_DEVICE = code == 0 ? 0x5555u : (((uint32_t)code << 16) | 0x3333u);
  for (;;) {
  }
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
  if (exiting) {
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
