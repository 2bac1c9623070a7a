"""Targets: host, spike, qemu (riscv), ..."""
