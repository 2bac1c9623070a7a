/*
 * The system calls a bare-metal C library asks for when library code reaches abort() or
 * malloc() (TFLM's C++ does; generated C code does not). abort() ends the run with the code a
 * shell would show (128 + SIGABRT); there is no heap. Weak, so a board support package wins.
 * picolibc (RISC-V) names them _exit/kill/getpid, newlib (Arm) _exit/_kill/_getpid/_sbrk.
 */
#include <errno.h>
#include <stddef.h>

#include "mlonmcu_target.h"

__attribute__((weak, noreturn)) void _exit(int code) { mlonmcu_exit(code); }

__attribute__((weak)) int kill(int pid, int sig) {
  (void)pid;
  mlonmcu_exit(128 + sig);
}

__attribute__((weak)) int _kill(int pid, int sig) { return kill(pid, sig); }

__attribute__((weak)) int getpid(void) { return 1; }

__attribute__((weak)) int _getpid(void) { return getpid(); }

__attribute__((weak)) void *_sbrk(ptrdiff_t increment) {
  (void)increment;
  errno = ENOMEM;
  return (void *)-1;
}
