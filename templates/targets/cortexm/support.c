/*
 * Cortex-M support: output and exit through semihosting (a debugger's or QEMU's), the
 * instruction-count marks read by mlonmcu's QEMU plugin, the DWT cycle counter where the core
 * has one, and fault reports.
 */
#include <stdint.h>

#include "mlonmcu_target.h"

#define SYS_WRITE0 0x04u
#define SYS_EXIT 0x18u
#define SYS_EXIT_EXTENDED 0x20u
#define ADP_STOPPED_APPLICATION_EXIT 0x20026u
#define ADP_STOPPED_RUNTIME_ERROR_UNKNOWN 0x20023u

static int semihost(uint32_t operation, const void *argument) {
  register uint32_t r0 __asm__("r0") = operation;
  register const void *r1 __asm__("r1") = argument;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return (int)r0;
}

#ifdef MLONMCU_UART_CMSDK_BASE
/* CMSDK APB UART (MPS2/MPS3 boards and their QEMU models): DATA, STATE (bit 0: TX full), CTRL. */
#define UART_DATA (*(volatile uint32_t *)(MLONMCU_UART_CMSDK_BASE + 0x0u))
#define UART_STATE (*(volatile uint32_t *)(MLONMCU_UART_CMSDK_BASE + 0x4u))
#define UART_CTRL (*(volatile uint32_t *)(MLONMCU_UART_CMSDK_BASE + 0x8u))
#define UART_BAUDDIV (*(volatile uint32_t *)(MLONMCU_UART_CMSDK_BASE + 0x10u))

static void uart_init(void) {
  UART_BAUDDIV = 16u;
  UART_CTRL = 1u; /* TX enable */
}

void mlonmcu_putc(char c) {
  while (UART_STATE & 1u) {
  }
  UART_DATA = (uint32_t)(uint8_t)c;
}

void mlonmcu_flush(void) {}
#else
/* Output goes out a line at a time: one semihosting call per line, not per character. */
static char line[128];
static uint32_t used;

static void uart_init(void) {}

void mlonmcu_flush(void) {
  if (used) {
    line[used] = '\0';
    semihost(SYS_WRITE0, line);
    used = 0;
  }
}

void mlonmcu_putc(char c) {
  line[used++] = c;
  if (c == '\n' || used == sizeof(line) - 1) {
    mlonmcu_flush();
  }
}
#endif

/* ---- counters ------------------------------------------------------------------------ */

#define DEMCR (*(volatile uint32_t *)0xE000EDFCu)
#define DWT_CTRL (*(volatile uint32_t *)0xE0001000u)
#define DWT_CYCCNT (*(volatile uint32_t *)0xE0001004u)
#define DWT_LAR (*(volatile uint32_t *)0xE0001FB0u)

static int have_cycles;

#if MLONMCU_SYSTICK_CYCLES
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SYSTICK_RELOAD 0x00FFFFFFu
static volatile uint32_t systick_wraps;

void SysTick_Handler(void) { systick_wraps++; }

uint64_t mlonmcu_cycles(void) {
  uint32_t wraps, value;
  do { /* a consistent pair: the counter may wrap between the two reads */
    wraps = systick_wraps;
    value = SYST_CVR;
  } while (wraps != systick_wraps);
  return (uint64_t)wraps * (SYSTICK_RELOAD + 1u) + (SYSTICK_RELOAD - value);
}
#else
static uint32_t cycles_high, cycles_last;

uint64_t mlonmcu_cycles(void) {
  uint32_t now = DWT_CYCCNT; /* 32-bit: extended by noticing wrap-arounds between reads */
  if (now < cycles_last) {
    cycles_high++;
  }
  cycles_last = now;
  return ((uint64_t)cycles_high << 32) | now;
}
#endif

void mlonmcu_target_init(void) {
  uart_init();
#if MLONMCU_SYSTICK_CYCLES
  SYST_RVR = SYSTICK_RELOAD;
  SYST_CVR = 0;
  SYST_CSR = 0x7u; /* processor clock, interrupt on wrap, enable */
  have_cycles = 1;
#elif MLONMCU_HAS_CYCLES
  /* DWT->CYCCNT exists on M3/M4/M7/M33/M55 silicon but not in QEMU: probe, don't assume. */
  DEMCR |= 1u << 24; /* TRCENA */
  DWT_LAR = 0xC5ACCE55u;
  if ((DWT_CTRL & (1u << 25)) == 0) { /* NOCYCCNT clear */
    DWT_CYCCNT = 0;
    DWT_CTRL |= 1u;
    uint32_t first = DWT_CYCCNT;
    for (volatile int i = 0; i < 8; i++) {
    }
    have_cycles = DWT_CYCCNT != first;
  }
#endif
}

int mlonmcu_cycles_available(void) { return have_cycles; }

/* QEMU plugin marks: the plugin records its instruction count whenever this function starts. */
static volatile uint32_t marks;

__attribute__((noinline, used)) uint32_t mlonmcu_mark(void) {
  __asm__ volatile("" ::: "memory");
  return marks++;
}

uint64_t mlonmcu_instructions(void) { return 0; } /* QEMU counts them between marks; DWT has no such counter */

uint64_t mlonmcu_time_ns(void) { return 0; }

/* ---- stack, exit, faults --------------------------------------------------------------- */

extern uint32_t __stack_bottom[], __stack_top[];
#define STACK_PAINT 0x6d6c6f6eu

void mlonmcu_paint_stack(void) {
  uint32_t *sp;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  for (uint32_t *p = __stack_bottom; p < sp - 16; p++) {
    *p = STACK_PAINT;
  }
}

uint32_t mlonmcu_stack_used(void) {
  uint32_t *p = __stack_bottom;
  while (p < __stack_top && *p == STACK_PAINT) {
    p++;
  }
  return (uint32_t)((uintptr_t)__stack_top - (uintptr_t)p);
}

__attribute__((noinline, noreturn, used)) void mlonmcu_exit(int code) {
  mlonmcu_flush();
  /* A debugger stops here (the board target sets a breakpoint on this symbol). */
  uint32_t block[2] = {ADP_STOPPED_APPLICATION_EXIT, (uint32_t)code};
  semihost(SYS_EXIT_EXTENDED, block);
  semihost(SYS_EXIT, (const void *)(uintptr_t)(code == 0 ? ADP_STOPPED_APPLICATION_EXIT
                                                         : ADP_STOPPED_RUNTIME_ERROR_UNKNOWN));
  for (;;) {
  }
}

static void put_hex(const char *name, uint32_t value) {
  static const char digits[] = "0123456789abcdef";
  for (const char *s = name; *s; s++) {
    mlonmcu_putc(*s);
  }
  mlonmcu_putc('0');
  mlonmcu_putc('x');
  for (int i = 28; i >= 0; i -= 4) {
    mlonmcu_putc(digits[(value >> i) & 0xfu]);
  }
}

#define SCB_CFSR (*(volatile uint32_t *)0xE000ED28u)
#define SCB_HFSR (*(volatile uint32_t *)0xE000ED2Cu)

__attribute__((used)) void mlonmcu_fault(uint32_t *frame, uint32_t exc_return) {
  (void)exc_return;
  mlonmcu_putc('\n');
  put_hex("MLONMCU TRAP hfsr=", SCB_HFSR);
  put_hex(" cfsr=", SCB_CFSR);
  if (frame) {
    put_hex(" pc=", frame[6]);
    put_hex(" lr=", frame[5]);
  }
  mlonmcu_putc('\n');
  mlonmcu_exit(100);
}
