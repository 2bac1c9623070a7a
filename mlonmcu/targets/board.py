"""Target `board`: a real Cortex-M board behind any GDB server (OpenOCD, pyOCD, J-Link, QEMU's gdbstub).

gdb-multiarch loads the ELF over the remote protocol, starts it at its reset handler, and stops
at `mlonmcu_exit`, whose argument is the exit code. The firmware's output arrives through
semihosting forwarded to GDB (File-I/O), or through a serial port (`board.serial`) when it
writes to a UART. Cycles come from DWT->CYCCNT where the core has one; where it has none (QEMU
playing the board) the report says so instead of inventing numbers.
"""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from mlonmcu.config import Option
from mlonmcu.errors import ConfigError, RunTimeout, StageError, ToolError
from mlonmcu.process import Completed, run, spawn, stop
from mlonmcu.targets.cortexm import CORES, CortexMTarget, MemoryMap, memory_from_regions, memory_presets, stack_option

EXIT_SYMBOL = "mlonmcu_exit"
_EXIT_LINE = re.compile(r"^MLONMCU_GDB_EXIT (-?\d+)", re.MULTILINE)


def parse_memory(spec: str) -> MemoryMap:
    """A preset name (boards.yml), or `rom=ORIGIN:SIZE,ram=ORIGIN:SIZE[,samples=ORIGIN:SIZE]`."""
    presets = memory_presets()
    if spec in presets:
        return presets[spec]
    try:
        regions = {}
        for part in spec.split(","):
            name, _, value = part.partition("=")
            regions[name.strip().lower()] = value
        return memory_from_regions(regions)
    except (KeyError, ValueError):
        raise ConfigError(
            f"bad board.memory '{spec}': use a preset ({', '.join(presets)}) or rom=0x08000000:1M,ram=0x20000000:128K"
        ) from None


def parse_endpoint(value: str) -> tuple[str, int] | None:
    host, sep, port = value.rpartition(":")
    if sep and host and port.isdigit() and " " not in value:
        return host, int(port)
    return None


class BoardTarget(CortexMTarget):
    name = "board"
    help = "a real Cortex-M board behind a GDB server; output by semihosting or a serial port"
    options = (
        Option(
            "gdb_server",
            str,
            "localhost:3333",
            "HOST:PORT of a running GDB server, or a command mlonmcu starts and stops (see board.port)",
        ),
        Option("port", int, 3333, "the port a gdb_server command listens on", min=1, max=65535),
        Option("core", str, "cortex-m4", "the board's core (selects compiler flags)", choices=tuple(CORES)),
        Option(
            "memory",
            str,
            "stm32f4",
            "flash/RAM map: a preset from boards.yml (stm32f4, mps2, ...) or rom=..,ram=..",
            check=lambda value: parse_memory(value),
        ),
        Option("serial", str, "", "pyserial URL to read the output from (e.g. /dev/ttyACM0, socket://host:port)"),
        Option("baud", int, 115200, "serial baud rate", min=1),
        Option(
            "uart",
            int,
            0,
            "base address of a CMSDK UART the firmware writes to (0: semihosting)",
            min=0,
            max=0xFFFFFFFF,
        ),
        Option("timeout", float, 120.0, "seconds before a run is stopped (the board is left halted)", above=0),
        stack_option(),
    )
    requires = ("arm_gcc", "gdb")
    deterministic = False  # a real chip: cycle counts are measurements
    hardware = True

    def core(self) -> str:
        return self.opt("core")

    def memory_map(self) -> MemoryMap:
        return parse_memory(self.opt("memory"))

    def memory_family(self) -> str:
        return f"board-{self.opt('memory')}"

    def uart(self) -> int | None:
        return int(self.opt("uart")) or None

    def endpoint(self) -> tuple[str, int]:
        server = self.opt("gdb_server")
        return parse_endpoint(server) or ("localhost", int(self.opt("port")))

    def execute(self, elf: Path, log: Path) -> Completed:
        host, port = self.endpoint()
        server = None if parse_endpoint(self.opt("gdb_server")) else self._start_server(log, host, port)
        try:
            _check_reachable(host, port, wait=10.0 if server else 0.0)
            with _SerialReader(self.opt("serial"), self.opt("baud")) as serial:
                completed = self._debug(elf, log, host, port)
            output = completed.output + serial.text()
        finally:
            if server is not None:
                stop(server, grace=5.0)
        match = _EXIT_LINE.search(output)
        if match is None:
            raise StageError(f"the firmware never reached {EXIT_SYMBOL} (gdb: {_last_error(output)})")
        return Completed(int(match.group(1)), output)

    def _debug(self, elf: Path, log: Path, host: str, port: int) -> Completed:
        commands = [
            "set pagination off",
            "set confirm off",
            f"target remote {host}:{port}",
            "load",
            "set $pc = Reset_Handler",
            "set $xpsr = 0x01000000",  # Thumb state (the reset vector was not read: we jumped in)
            f"break *{EXIT_SYMBOL}",  # the first instruction: the prologue may already exit
            "continue",
            'printf "MLONMCU_GDB_EXIT %d\\n", $r0',
            "disconnect",  # leaves the core halted
        ]
        args: list[str | Path] = [self.tool("gdb"), "-q", "-batch", "-nx"]
        for command in commands:
            args += ["-ex", command]
        args.append(elf)
        try:
            return run(args, log=log, timeout=self.opt("timeout"), check=False, what="gdb", interrupt=True)
        except RunTimeout:
            raise RunTimeout(
                f"timeout: the firmware did not finish within {self.opt('timeout'):g} s; the board was left halted"
            ) from None

    def _start_server(self, log: Path, host: str, port: int) -> subprocess.Popen[bytes]:
        command = shlex.split(self.opt("gdb_server"))
        with log.open("a") as fh:
            fh.write(f"$ {' '.join(command)} &\n")
        with log.open("a") as out:
            try:
                return spawn(command, stdout=out, what="the GDB server")
            except ToolError:
                raise StageError(f"cannot start the GDB server: '{command[0]}' not found") from None


def _check_reachable(host: str, port: int, wait: float) -> None:
    deadline = time.monotonic() + wait
    while True:
        try:
            with socket.create_connection((host, port), timeout=3.0):
                return
        except OSError as err:
            if time.monotonic() >= deadline:
                raise StageError(
                    f"no GDB server answering at {host}:{port} ({err.strerror or err}); start one (OpenOCD, "
                    "pyOCD, J-Link, QEMU -gdb) or set board.gdb_server"
                ) from None
            time.sleep(0.2)


def _last_error(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower() or "remote" in line.lower()]
    return (errors[-1] if errors else lines[-1] if lines else "no output")[:200]


class _SerialReader:
    """Collects what arrives on the serial port while GDB runs the firmware."""

    def __init__(self, url: str, baud: int):
        self.url, self.baud = url, baud
        self.chunks: list[bytes] = []
        self.port: Any = None
        self.thread: threading.Thread | None = None
        self.stop = threading.Event()

    def __enter__(self) -> _SerialReader:
        if self.url:
            import serial

            try:
                self.port = serial.serial_for_url(self.url, baudrate=self.baud, timeout=0.1)
            except (serial.SerialException, ValueError) as err:
                raise StageError(f"cannot open serial port {self.url}: {err}") from None
            self.thread = threading.Thread(target=self._read, daemon=True)
            self.thread.start()
        return self

    def _read(self) -> None:
        while not self.stop.is_set():
            data = self.port.read(4096)
            if data:
                self.chunks.append(data)

    def __exit__(self, *exc: object) -> None:
        if self.port is not None:
            time.sleep(0.3)  # the last bytes on the wire
            self.stop.set()
            if self.thread:
                self.thread.join(timeout=2)
            self.port.close()

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", errors="replace")
