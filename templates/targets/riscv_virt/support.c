/*
 * Console and exit of Spike and QEMU virt: one ELF runs on both.
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

extern volatile int mlonmcu_exiting;

void mlonmcu_putc(char c) {
  volatile uint8_t *uart = (volatile uint8_t *)UART_BASE;
  while ((uart[UART_LSR] & UART_LSR_THRE) == 0) {
  }
  uart[UART_THR] = (uint8_t)c;
}

void mlonmcu_flush(void) {}

void __attribute__((noreturn)) mlonmcu_exit(int code) {
  mlonmcu_exiting = 1;
  tohost = ((uint64_t)(uint32_t)code << 1) | 1u;
  *(volatile uint32_t *)TEST_DEVICE = code == 0 ? 0x5555u : (((uint32_t)code << 16) | 0x3333u);
  for (;;) {
  }
}
