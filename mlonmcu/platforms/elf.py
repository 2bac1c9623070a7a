"""ROM and RAM of a firmware from its ELF section headers (agrees with `size -A`).

pyelftools is imported where an ELF is read: a session restored from the cache reads none.
"""

from __future__ import annotations

from pathlib import Path

from mlonmcu.contracts import MemoryUsage

# Sections in the image that are not part of the firmware proper (harness input samples).
EXCLUDED = frozenset({".mlonmcu_samples"})
STACK_SECTIONS = frozenset({".stack", ".heap"})


def memory_usage(elf: Path) -> MemoryUsage:
    """ROM code/read-only/data and RAM zero-init/stack (RAM data is the ROM data's copy)."""
    from elftools.elf.constants import SH_FLAGS
    from elftools.elf.elffile import ELFFile

    rom_code = rom_ro = rom_data = ram_zero = ram_stack = 0
    with elf.open("rb") as fh:
        for section in ELFFile(fh).iter_sections():
            flags = section["sh_flags"]
            size = section["sh_size"]
            if not flags & SH_FLAGS.SHF_ALLOC or section.name in EXCLUDED or size == 0:
                continue
            nobits = section["sh_type"] == "SHT_NOBITS"
            writable = bool(flags & SH_FLAGS.SHF_WRITE)
            if section.name in STACK_SECTIONS:
                ram_stack += size
            elif nobits:
                ram_zero += size
            elif flags & SH_FLAGS.SHF_EXECINSTR:
                rom_code += size
            elif writable:
                rom_data += size  # load image in ROM, copied to RAM at start-up
            else:
                rom_ro += size
    return MemoryUsage(rom_code, rom_ro, rom_data, ram_zero, ram_stack)


def symbol(elf: Path, name: str) -> tuple[int, int] | None:
    """(address, size) of a symbol; Thumb function addresses without their mode bit."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    with elf.open("rb") as fh:
        symtab = ELFFile(fh).get_section_by_name(".symtab")
        if not isinstance(symtab, SymbolTableSection):
            return None
        symbols = symtab.get_symbol_by_name(name)
        if not symbols:
            return None
        entry = symbols[0]
        address = int(entry["st_value"])
        if entry["st_info"]["type"] == "STT_FUNC":
            address &= ~1
        return address, int(entry["st_size"])
