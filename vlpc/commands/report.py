"""``vlpc report FILE``: the seed's register/LDS/barrier traffic table, measured on the emulator;
``--energy``: modeled joules, watts and pJ/FLOP by component."""

from __future__ import annotations

import sys
from pathlib import Path

from vlpc.cli_support import (Progress, add_codegen_options, add_output_prefix, add_quiet, add_size_options, check_chart,
                              check_finite_scalars, check_size_options, check_writable, codegen_options, output_prefix,
                              read_input, write_atomic)
from vlpc.errors import EXIT_VERIFY, VlpcError


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
    from vlpc.report import STRATEGY_TITLE, build_report

    check_size_options(args)
    if args.seed is not None and args.seed < 0:  # as vlpc run (NumPy's generator takes none)
        raise VlpcError(f"--seed must be a non-negative integer, got {args.seed}")
    check_finite_scalars(args)  # as vlpc run: the table's run computes in float32
    if getattr(args, "energy", False):  # modeled energy of sqc, sqc without forwarding, lds (issue 20)
        from vlpc.commands.energy import default_prefix, run_energy_command

        # the traffic table's run options: --energy prices alpha = 1, beta = 0 on zero-filled buffers
        for name, priced in (("alpha", 1.0), ("beta", 0.0), ("seed", None)):
            given = getattr(args, name, None)
            if given is not None and given != priced:
                why = ("--energy's timing-only launches read zero-filled buffers (the work does not depend on "
                       "the values)" if name == "seed" else
                       "--energy prices every variant with alpha = 1, beta = 0 (C is not read)")
                raise VlpcError(f"--{name} {given:g}: {why}: drop --{name} (it is the traffic table's)")
        return run_energy_command(args, read_input(args.file), args.output or default_prefix(args.file),
                                  m=args.m, n=args.n, k=args.k)
    strategies = [s.strip() for s in (args.strategies or "sqc,lds").split(",") if s.strip()]
    for s in strategies:
        if s not in STRATEGY_TITLE:
            raise VlpcError(f"unknown strategy '{s}' in --strategies (available: {', '.join(STRATEGY_TITLE)})")
    if len(set(strategies)) != len(strategies) or not strategies:
        raise VlpcError("--strategies: give each strategy once, e.g. sqc,lds")
    # Every output is checked before the emulation starts (it takes seconds to minutes).
    stem = Path(args.file).stem if args.file != "-" else "gemm"  # standard input: gemm-report, as gemm-energy
    prefix = output_prefix(args.output, f"{stem}-report")  # -o t.md: t.md, t.csv, t.svg
    chart = args.chart or f"{prefix}.svg"
    for path, what in ((f"{prefix}.md", "report"), (f"{prefix}.csv", "CSV")):
        check_writable(path, what)
    check_chart(chart)
    text = read_input(args.file)
    options = codegen_options(args)  # the code generation options of vlpc compile, without the strategy
    options.pop("strategy", None)
    with Progress(0, "vlpc report", quiet=args.quiet) as bar:
        rep = build_report(text, args.file, strategies, dot_sqc_only=args.strategies is None,
                           target=args.target, m=args.m, n=args.n, k=args.k,
                           seed=0 if args.seed is None else args.seed,
                           alpha=1.0 if args.alpha is None else args.alpha,
                           beta=args.beta, options=options,
                           progress=None if getattr(args, "quiet", False) else bar, batch=args.batch)
    md = rep.markdown()
    sys.stdout.write(md)
    write_atomic(f"{prefix}.md", md)
    write_atomic(f"{prefix}.csv", rep.csv())
    rep.write_chart(chart)
    print(f"\nvlpc: wrote {prefix}.md, {prefix}.csv, {chart}", file=sys.stderr)
    bad = [m.strategy for m in rep.measurements if not m.verified]
    if bad:
        print(f"vlpc: verification FAILED for {', '.join(bad)}", file=sys.stderr)
        return EXIT_VERIFY
    return 0
