"""``vlpc report FILE``: the seed's register/LDS/barrier traffic table, measured on the emulator;
``--energy``: modeled joules, watts and pJ/FLOP by component."""

from __future__ import annotations

from vlpc.cli_support import add_codegen_options, add_output_prefix, add_quiet, add_size_options


def add_parser(sub) -> None:
    rp = sub.add_parser("report", help="the seed's register/LDS/barrier traffic table, measured on the emulator "
                                       "for both strategies")
    rp.add_argument("file", help="input MLIR file (one gemm.matmul)")
    rp.add_argument("--strategies", default=None,
                    help="comma-separated strategies to compile, run and compare (default: sqc,lds; sqc alone "
                         "for f16/int8 products, which only the dot kernels compile)")
    add_size_options(rp)
    rp.add_argument("--batch", type=int,
                    help="the batch count of a strided batched kernel, when dynamic (as vlpc run), for --energy "
                         "(the traffic table refuses a strided batch)")
    rp.add_argument("--seed", type=int, default=None,
                    help="random seed for the traffic table's inputs (default: 0; not with --energy, whose buffers "
                         "are zero-filled)")
    rp.add_argument("--alpha", type=float, default=None,
                    help="alpha of the traffic table's run (default: 1.0; --energy prices alpha = 1)")
    rp.add_argument("--beta", type=float, default=None,
                    help="beta of the traffic table's run (default: 0.5, 2 for int8 -> i32; --energy prices beta = 0: C "
                         "is not read)")
    add_output_prefix(rp, "FILE-report, FILE-energy with --energy (gemm-report, gemm-energy for standard input)")
    rp.add_argument("--chart", metavar="FILE.svg|FILE.png",
                    help="where to write the chart (default: PREFIX.svg); the format follows the suffix")
    rp.add_argument("--energy", action="store_true",
                    help="instead of the traffic table: modeled joules per GEMM, average board watts, pJ/FLOP and "
                         "GFLOP/s per W by component for sqc, sqc without forwarding and legacy (lds; f32/f64 only), from the "
                         "timing and energy models (PREFIX default: FILE-energy)")
    from vlpc.targets import default_boards_text
    rp.add_argument("--gpu", default=None, choices=("mi60", "mi50", "mi25"),
                    help="the board the plan is made for and, with --energy, the board modeled (default: the "
                         f"target's default board: {default_boards_text()}; the MI50's and MI25's energy "
                         "coefficients are derived from the MI60's, not measured)")
    rp.add_argument("--clock", type=float, default=None, metavar="MHZ",
                    help="with --energy: engine clock in MHz (default: the board's stock clock; MI60 1800)")
    rp.add_argument("--memory-clock", type=float, default=None, metavar="MHZ",
                    help="with --energy: HBM2 clock in MHz (default: the board's; MI60/MI50 1000)")
    add_quiet(rp)
    add_codegen_options(rp)


def main(args) -> int:
    from vlpc.report import cmd_report
    return cmd_report(args)
