/* Bare-metal start-up for RV32 (Spike, QEMU virt, Ibex): stack, gp, trap vector, FPU, vector
   unit, .data/.bss. A core with a vector table at its boot address (Ibex: vectored mtvec only)
   keeps that table as its trap vector. */
#include "mlonmcu_target_config.h"

  .section .text.init, "ax", @progbits
  .globl _start
_start:
  .option push
  .option norelax
  la gp, __global_pointer$
  .option pop
  la sp, __stack_top
#if !MLONMCU_TRAP_VECTOR_TABLE
  la t0, mlonmcu_trap_entry
  csrw mtvec, t0
#endif
#ifdef __riscv_flen
  li t0, 0x2000           /* mstatus.FS = initial: enable the FPU */
  csrs mstatus, t0
  csrw fcsr, zero
#endif
#ifdef __riscv_vector
  li t0, 0x200            /* mstatus.VS = initial: enable the vector unit */
  csrs mstatus, t0
#endif
  /* copy .data from its load address in ROM to RAM */
  la t0, __data_load
  la t1, __data_start
  la t2, __data_end
1:
  bgeu t1, t2, 2f
  lw t3, 0(t0)
  sw t3, 0(t1)
  addi t0, t0, 4
  addi t1, t1, 4
  j 1b
2:
  /* zero .bss */
  la t1, __bss_start
  la t2, __bss_end
3:
  bgeu t1, t2, 4f
  sw zero, 0(t1)
  addi t1, t1, 4
  j 3b
4:
  call mlonmcu_paint_stack
  call main
  call mlonmcu_exit
5:
  j 5b

  .align 4
  .globl mlonmcu_trap_entry
mlonmcu_trap_entry:
  la sp, __stack_top      /* a crash may have corrupted sp: report from a fresh stack */
  call mlonmcu_trap
6:
  j 6b
