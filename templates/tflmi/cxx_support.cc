/*
 * The C++ runtime pieces TFLM references but never uses on a bare-metal target without
 * libstdc++ (Debian's riscv64-unknown-elf has none): deleting through a base pointer, pure
 * virtual calls. They trap if ever reached.
 */
#include <stddef.h>

extern "C" void mlonmcu_exit(int code) __attribute__((noreturn));

void operator delete(void *pointer) noexcept {
  (void)pointer;
  mlonmcu_exit(101);
}

void operator delete(void *pointer, size_t size) noexcept {
  (void)pointer;
  (void)size;
  mlonmcu_exit(101);
}

extern "C" void __cxa_pure_virtual(void) { mlonmcu_exit(102); }
