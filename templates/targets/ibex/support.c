/*
 * Console and exit of Ibex's simple_system under Verilator: characters written to SIM_CTRL
 * go to ibex_simple_system.log, writing 1 to SIM_CTRL + 8 ends the simulation. The simulator
 * knows no exit code, so the code is printed as the last line before halting.
 */
#include <stdint.h>

#include "mlonmcu_target.h"

#define SIM_CTRL_OUT 0x20000u
#define SIM_CTRL_HALT 0x20008u

extern volatile int mlonmcu_exiting;

void mlonmcu_putc(char c) { *(volatile uint32_t *)SIM_CTRL_OUT = (uint8_t)c; }

void mlonmcu_flush(void) {}

static void put_decimal(int value) {
  char digits[12];
  int n = 0;
  unsigned magnitude = value < 0 ? 0u - (unsigned)value : (unsigned)value;
  if (value < 0) {
    mlonmcu_putc('-');
  }
  do {
    digits[n++] = (char)('0' + magnitude % 10u);
    magnitude /= 10u;
  } while (magnitude != 0u);
  while (n > 0) {
    mlonmcu_putc(digits[--n]);
  }
}

void __attribute__((noreturn)) mlonmcu_exit(int code) {
  mlonmcu_exiting = 1;
  for (const char *s = "\nMLONMCU_IBEX_EXIT "; *s; s++) {
    mlonmcu_putc(*s);
  }
  put_decimal(code);
  mlonmcu_putc('\n');
  *(volatile uint32_t *)SIM_CTRL_HALT = 1u;
  for (;;) {
  }
}
