"""``vlpc bench``: throughput of an MLIR file or of rocblas-bench's problem flags, optionally a
sweep (measured on HIP, modeled on the emulator)."""

from __future__ import annotations

from vlpc.cli_support import add_codegen_options, add_quiet
from vlpc.commands.common import add_speed_options


def add_parser(sub) -> None:
    from vlpc.bench import add_bench_arguments
    b = sub.add_parser("bench", help="throughput of an MLIR file or of rocblas-bench's problem flags, optionally a "
                                     "sweep: measured on HIP, modeled by the timing model on the emulator (--no-model: "
                                     "the emulator's executed-instruction counters)")
    add_bench_arguments(b)
    add_quiet(b)
    add_codegen_options(b, strategy=True)
    add_speed_options(b, verify=False)


def main(args) -> int:
    from vlpc.bench import cmd_bench
    return cmd_bench(args)
