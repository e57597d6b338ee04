"""``vlpc profile FILE``: where the time goes inside a kernel (an MLIR file or any gfx906 code
object): summary, annotated assembly with stall causes and wave timeline, modeled by the timing
model on the emulator (:mod:`vlpc.profiler` does the work; docs/profile.md)."""

from __future__ import annotations

import os
import sys

from vlpc.errors import VlpcError


def add_parser(sub) -> None:
    """``vlpc profile``'s options."""
    from vlpc.cli_support import add_codegen_options, add_size_options
    from vlpc.launch_cli import add_launch_arguments
    from vlpc.targets import default_boards_text

    p = sub.add_parser("profile", help="where the time goes inside a kernel (MLIR file or any gfx906 code object): "
                                       "summary, annotated assembly with stall causes, wave timeline -- modeled "
                                       "by the timing model on the emulator (docs/profile.md)")
    p.add_argument("file", help="a gemm/linalg MLIR file or a gfx906 code object (.hsaco, .co, any ELF)")
    add_launch_arguments(p)
    add_size_options(p)
    p.add_argument("--batch", type=int, help="MLIR FILE: the batch count of a strided batched kernel, when dynamic")
    p.add_argument("--gpu", default=None, choices=("mi60", "mi50", "mi25"),
                   help="board modeled (default: the processor's -- the code object's, or --target's -- board: "
                        + default_boards_text() + ")")
    p.add_argument("--clock", type=float, default=None, metavar="MHZ",
                   help="engine clock in MHz (default: the board's; MI60 1700, as the seed measured)")
    p.add_argument("--memory-clock", type=float, default=None, metavar="MHZ",
                   help="HBM clock in MHz (default: the board's; MI60 800, MI50 1000, MI25 945)")
    p.add_argument("--seed", type=int, default=0, help="random seed for random:BYTES buffers and MLIR inputs "
                                                       "(default: %(default)s)")
    p.add_argument("--strict", action="store_true",
                   help="a race, an uninitialised read or an out-of-bounds access is an error (default: a "
                        "finding in the profile)")
    p.add_argument("--timing-only", action="store_true",
                   help="execute only the workgroups the timing model traces (large grids fast; outputs and "
                        "the MLIR check are skipped)")
    p.add_argument("--top", type=int, default=None, metavar="N",
                   help="print only the N instructions with the most cycles (default: every instruction)")
    p.add_argument("--html", metavar="FILE.html", help="also write the summary and annotated assembly as HTML")
    p.add_argument("--trace", metavar="FILE.json",
                   help="also write the wave timeline in the Chrome Trace Event Format (Perfetto UI, chrome://tracing)")
    p.add_argument("--timeline", metavar="FILE.png|FILE.svg",
                   help="also write the wave timeline as a picture (matplotlib; the format follows the suffix)")
    p.add_argument("--flops", type=float, default=None, metavar="N",
                   help="code object FILE: floating-point operations of the launch, for a modeled TFLOP/s and %% of "
                        "peak (an MLIR GEMM's: 2 M N K)")
    p.add_argument("--max-events", type=int, default=500_000, metavar="N",
                   help="timeline events kept per kernel (default: %(default)s)")
    add_codegen_options(p, strategy=True)


def main(args) -> int:
    from vlpc.cli_support import check_not_input, check_size_options, check_writable, codegen_options, write_atomic
    from vlpc.launch_cli import is_code_object
    from vlpc.profiler import chrome_trace, format_html, format_text, profile, timeline_figure

    check_size_options(args)
    outputs = [(o, getattr(args, o)) for o in ("html", "trace", "timeline") if getattr(args, o)]
    for opt, path in outputs:
        check_not_input(path, args.file, f"--{opt}")
        check_writable(path)
    if args.timeline:
        from vlpc.cli_support import check_chart
        check_chart(args.timeline, "--timeline")
    if len({os.path.abspath(p) for _, p in outputs}) < len(outputs):
        raise VlpcError("--html, --trace and --timeline must name different files")
    if args.top is not None and args.top < 1:
        raise VlpcError(f"--top must be at least 1, got {args.top}")
    if args.seed < 0:
        raise VlpcError(f"--seed must be a non-negative integer, got {args.seed}")
    if args.max_events < 0:
        raise VlpcError(f"--max-events must not be negative, got {args.max_events}")
    if not os.path.isfile(args.file):
        from vlpc.cli_support import read_input
        read_input(args.file)  # its one-line error for a missing/unreadable file
    code = is_code_object(args.file)
    opts = {} if code else codegen_options(args)
    opts.pop("gpu", None)
    if code and any(x is not None for x in (args.m, args.n, args.k, args.batch)):
        raise VlpcError("-m/-n/-k/--batch are for an MLIR FILE; a code object takes --grid, --block and --arg")
    prof = profile(args.file, kernel=args.kernel, grid=args.grid, block=args.block, args=args.arg,
                   dynamic_lds=args.dynamic_lds, m=args.m, n=args.n, k=args.k, batch=args.batch, gpu=args.gpu,
                   clock_mhz=args.clock, memory_clock_mhz=args.memory_clock, strict=args.strict,
                   timing_only=args.timing_only, seed=args.seed, max_events=args.max_events,
                   target=args.target, flops=args.flops, **opts)
    if not prof.kernels:  # a fault stopped the launch: the findings, and no file
        from vlpc.errors import EXIT_DEVICE
        sys.stdout.write(format_text(prof, args.top))
        print("vlpc: no launch to profile: a fault stopped it (see findings); nothing written", file=sys.stderr)
        return EXIT_DEVICE
    files = []
    if args.html:
        files.append((args.html, format_html(prof)))
    if args.trace:
        import json
        files.append((args.trace, json.dumps(chrome_trace(prof))))
    figure = timeline_figure(prof) if args.timeline else None
    sys.stdout.write(format_text(prof, args.top))
    for path, data in files:
        write_atomic(path, data)
    if figure is not None:
        from vlpc.cli_support import pyplot, save_figure
        save_figure(figure, args.timeline)
        pyplot().close(figure)
    return 0
