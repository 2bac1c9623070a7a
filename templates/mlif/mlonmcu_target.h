/* What a target's support code provides to the benchmark harness. */
#ifndef MLONMCU_TARGET_H
#define MLONMCU_TARGET_H

#include <stdint.h>

#include "mlonmcu_target_config.h" /* MLONMCU_HAS_CYCLES, MLONMCU_HAS_INSTRUCTIONS, MLONMCU_HAS_TIME_NS,
                                      MLONMCU_HAS_STACK_USAGE,
                                      MLONMCU_HAS_MARKS: mlonmcu_mark() returns the index of
                                      a mark an external counter (QEMU plugin) records */

void mlonmcu_target_init(void);
void mlonmcu_exit(int code) __attribute__((noreturn));
/* Whether mlonmcu_cycles() counts on this chip (probed at run time, e.g. DWT->CYCCNT). */
int mlonmcu_cycles_available(void);
void mlonmcu_putc(char c);
void mlonmcu_flush(void);
uint64_t mlonmcu_cycles(void);
uint64_t mlonmcu_instructions(void);
uint64_t mlonmcu_time_ns(void);
uint32_t mlonmcu_mark(void);
/* Peak stack use in bytes, measured by painting the stack at start-up. */
uint32_t mlonmcu_stack_used(void);

#endif
