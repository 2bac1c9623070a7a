/* Generated for mlonmcu: forced into every muRISCV-NN source (-include). Its vector kernels need
   RVV intrinsics, so they are chosen by the compiler's ISA, not by a flag of the library build:
   clang for a V or Zve* ISA defines __riscv_vector; a scalar build takes the portable C. */
#if defined(__riscv_vector)
#define USE_VEXT 1
#endif
