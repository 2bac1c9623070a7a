/*
 * Cortex-M start-up: vector table, reset handler, fault reporting.
 * The reset handler sets the stack pointer and VTOR itself, so the image also starts correctly
 * when a debugger loads it and jumps to the entry point (the `board` target).
 */
#include <stdint.h>
#include <string.h>

#include "mlonmcu_target.h"

extern uint32_t __stack_top[];
extern uint32_t __data_load[], __data_start[], __data_end[];
extern uint32_t __bss_start[], __bss_end[];
extern int main(void);
void mlonmcu_paint_stack(void);
void mlonmcu_fault(uint32_t *frame, uint32_t exc_return);

void Reset_Handler(void);
void Default_Handler(void);
void HardFault_Handler(void);
void SysTick_Handler(void) __attribute__((weak, alias("Default_Handler")));

#define SCB_VTOR (*(volatile uint32_t *)0xE000ED08u)
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)

__attribute__((section(".vectors"), used)) void (*const mlonmcu_vectors[16])(void) = {
    (void (*)(void))__stack_top, /* initial stack pointer */
    Reset_Handler,
    Default_Handler, /* NMI */
    HardFault_Handler,
    HardFault_Handler, /* MemManage */
    HardFault_Handler, /* BusFault */
    HardFault_Handler, /* UsageFault */
    HardFault_Handler, /* SecureFault */
    0, 0, 0,
    Default_Handler, /* SVC */
    Default_Handler, /* DebugMon */
    0,
    Default_Handler, /* PendSV */
    SysTick_Handler,
};

__attribute__((naked, noreturn)) void Reset_Handler(void) {
  __asm__ volatile(
      "ldr r0, =__stack_top\n"
      "mov sp, r0\n"
      "b mlonmcu_reset\n");
}

__attribute__((noreturn, used)) void mlonmcu_reset(void) {
  SCB_VTOR = (uint32_t)mlonmcu_vectors;
#if defined(__ARM_FP)
  SCB_CPACR |= (0xFu << 20); /* CP10/CP11 full access: enable the FPU */
  __asm__ volatile("dsb\n isb" ::: "memory");
#endif
  uint32_t *src = __data_load;
  for (uint32_t *dst = __data_start; dst < __data_end;) {
    *dst++ = *src++;
  }
  for (uint32_t *dst = __bss_start; dst < __bss_end;) {
    *dst++ = 0;
  }
  mlonmcu_paint_stack();
  mlonmcu_exit(main());
}

void Default_Handler(void) {
  mlonmcu_fault(0, 0);
}

__attribute__((naked)) void HardFault_Handler(void) {
  __asm__ volatile(
      "mov r1, lr\n"
      "mrs r0, msp\n"
      "b mlonmcu_fault\n");
}
