/* Ibex's vector table at its boot address: 32 trap entries (mtvec is vectored only, and at
   reset it points here), then the reset vector at +0x80. */
  .section .vectors, "ax", @progbits
  .option push
  .option norvc
  .rept 32
  j mlonmcu_trap_entry
  .endr
  j _start
  .option pop
