"""``vlpc bench``: throughput of an MLIR file or of rocblas-bench's problem flags, optionally a
sweep (measured on HIP, modeled on the emulator): its options, the table, the CSV and the chart.
:mod:`vlpc.bench` runs and measures each size (:func:`vlpc.bench.measure_size`)."""

from __future__ import annotations

import argparse
import csv
import sys

from vlpc.bench import (OTHER_PRECISIONS, PRECISIONS, ROCBLAS_CSV_HEADER, BenchRow, RocblasProblem, measure_size,
                        rocblas_problem, solution_line)
from vlpc.cli_support import (Progress, add_codegen_options, add_output_prefix, add_quiet, add_size_options, check_chart,
                              check_finite_scalars, check_size_options, check_writable, codegen_options, output_prefix,
                              positive, pyplot, read_input, save_figure, single_kernel, write_atomic)
from vlpc.commands.common import add_speed_options
from vlpc.errors import VlpcError

#: Emulated sizes above this need --max-emulated (a 4096^2 x 640 SGEMM takes ~30 s).
DEFAULT_MAX_EMULATED = 1024

#: rocblas-bench's defaults of -i (timed launches) and -j (untimed ones first).
DEFAULT_ITERATIONS, DEFAULT_WARMUP = 10, 1


def add_parser(sub) -> None:
    b = sub.add_parser("bench", help="throughput of an MLIR file or of rocblas-bench's problem flags, optionally a "
                                     "sweep: measured on HIP, modeled by the timing model on the emulator (--no-model: "
                                     "the emulator's executed-instruction counters)")
    add_bench_arguments(b)
    add_quiet(b)
    add_codegen_options(b, strategy=True)
    add_speed_options(b, verify=False)


def _precision(text: str) -> str:
    """A rocblas-bench type name (``f16_r``, ``h`` ...) -> vlpc's element type."""
    t = text.lower()
    if t in PRECISIONS:
        return PRECISIONS[t]
    known = "known to rocblas-bench, not to vlpc; " if t in OTHER_PRECISIONS else ""
    raise argparse.ArgumentTypeError(f"'{text}': {known}vlpc runs f32_r (s), f64_r (d), f16_r (h), i8_r and i32_r")


def _trans(text: str) -> str:
    t = text.upper()
    if t not in ("N", "T", "C"):
        raise argparse.ArgumentTypeError(f"expected N or T, got '{text}'")
    return "T" if t == "C" else t  # real types: conjugate transpose is the transpose


def add_bench_arguments(b: argparse.ArgumentParser) -> None:
    """``vlpc bench``'s own arguments (the code generation options are added by the caller)."""
    b.add_argument("file", nargs="?",
                   help="input MLIR file (dynamic '?' sizes for a sweep); without it, rocblas-bench's problem flags "
                        "(-f gemm -r ... -m -n -k) describe the GEMM and vlpc writes its IR")
    b.add_argument("--device", default="emulator", choices=("emulator", "hip", "auto"),
                   help="where to run (default: %(default)s, as vlpc run; auto: a gfx906 through HIP if present, "
                        "else the emulator)")
    g = b.add_argument_group("rocblas-bench problem flags")
    g.add_argument("-f", "--function", choices=("gemm", "gemm_ex"),
                   help="rocblas-bench's function: gemm (one type, -r) or gemm_ex (--a_type ... --compute_type)")
    g.add_argument("-r", "--precision", type=_precision, default=None,
                   help="element type: f32_r (s), f64_r (d), f16_r (h: f16 in and out, f32 accumulation); with "
                        "gemm_ex the default of --a_type, --b_type, --c_type, --compute_type (also i8_r, i32_r) "
                        "(default: f32_r)")
    for x, what in (("a", "A (default: -r's)"), ("b", "B (default: -r's)"), ("c", "C (default: -r's)"),
                    ("d", "D (default: C's; vlpc writes D in place of C, so it must be C's)"),
                    ("compute", "the computation (default: -r's)")):
        g.add_argument(f"--{x}-type", f"--{x}_type", dest=f"{x}_type", type=_precision, default=None,
                       metavar="TYPE", help=f"gemm_ex: type of {what}")
    g.add_argument("--ldd", type=positive, help="gemm_ex: leading dimension of D; must equal --ldc (D is C)")
    g.add_argument("--transpose-a", "--transposeA", dest="transpose_a", type=_trans, default=None, metavar="N|T",
                   help="op(A): N (A is m x k, column-major) or T (default: N)")
    g.add_argument("--transpose-b", "--transposeB", dest="transpose_b", type=_trans, default=None, metavar="N|T",
                   help="op(B): N (B is k x n, column-major) or T (default: N)")
    add_size_options(g, m="M (with a file: for a single measurement)", n="N (with a file: for a single measurement)",
                     k="K (default: 640, the seed's, for a file with a dynamic K)")
    g.add_argument("--lda", type=positive, help="leading dimension of A (default: m for N, k for T)")
    g.add_argument("--ldb", type=positive, help="leading dimension of B (default: k for N, n for T)")
    g.add_argument("--ldc", type=positive, help="leading dimension of C (default: m)")
    g.add_argument("--alpha", type=float, default=None, help="alpha (default: 1)")
    g.add_argument("--beta", type=float, default=None, help="beta (default: 0)")
    g.add_argument("--rocblas-csv", action="store_true",
                   help="print rocblas-bench's CSV (transA,transB,M,N,K,alpha,lda,beta,ldb,ldc,rocblas-Gflops,us) "
                        "instead of the table; on the emulator the time fields are the timing model's, after a "
                        "'# modeled: ...' line")
    b.add_argument("--sweep", action="store_true", help="M = N from --start to --stop in steps of --step")
    b.add_argument("--start", type=positive, default=256, help="first M = N of --sweep (default: %(default)s)")
    b.add_argument("--stop", type=positive, default=16384, help="last M = N of --sweep, included (default: %(default)s)")
    b.add_argument("--step", type=positive, default=256, help="M = N increment of --sweep (default: %(default)s)")
    b.add_argument("-i", "--iterations", type=positive, default=None,
                   help=f"timed launches per size on HIP (rocblas-bench's -i; default: {DEFAULT_ITERATIONS}; "
                        "not with --energy)")
    b.add_argument("-j", "--warmup", type=int, default=None,
                   help=f"untimed launches first (rocblas-bench's -j, cold iterations; default: {DEFAULT_WARMUP}; "
                        "not with --energy)")
    b.add_argument("--max-emulated", type=positive, default=None,
                   help="with --no-model: largest M or N the emulator is asked to run in full "
                        f"(default: {DEFAULT_MAX_EMULATED})")
    t = b.add_argument_group("timing model (emulator: modeled, not measured)")
    from vlpc.targets import default_boards_text
    t.add_argument("--gpu", default=None, choices=("mi60", "mi50", "mi25"),
                   help="board the plan is made for and the timing model predicts (default: the target's default "
                        f"board: {default_boards_text()})")
    t.add_argument("--clock", type=float, default=None, metavar="MHZ",
                   help="engine clock in MHz (default: the board's stock clock: MI60 1800, MI50 1725, MI25 1500)")
    t.add_argument("--memory-clock", type=float, default=None, metavar="MHZ",
                   help="HBM2 clock in MHz (default: the board's: MI60/MI50 1000, MI25 945; the seed measured at 800)")
    t.add_argument("--no-model", action="store_true",
                   help="no timing model: run every workgroup and report the emulator's counters")
    b.add_argument("--csv", metavar="FILE.csv", help="also write the table as CSV")
    b.add_argument("--chart", metavar="FILE.svg|FILE.png",
                   help="also write a chart of the sweep (matplotlib; the format follows the suffix)")
    b.add_argument("-v", "--verbose", action="store_true", help="print the device choice")
    b.add_argument("--energy", action="store_true",
                   help="modeled joules per GEMM, average board watts, pJ/FLOP and GFLOP/s per W by component of "
                        "sqc, sqc without forwarding and legacy (lds; f32/f64 only) at one size (timing and energy models; "
                        "writes PREFIX.md/.csv and the chart PREFIX.svg or --chart; -o PREFIX)")
    add_output_prefix(b, "FILE-energy, gemm-energy for rocblas-bench's flags", when="with --energy: ")
    b.add_argument("--batch", type=positive,
                   help="the batch count of a strided batched kernel, when dynamic (as vlpc run); FLOPs are "
                        "batch x 2MNK")


def _sizes(args) -> list[tuple[int, int, int]]:
    k = args.k if args.k is not None else 640
    if args.sweep:
        if args.stop < args.start:
            raise VlpcError("--sweep needs --start <= --stop")
        return [(s, s, k) for s in range(args.start, args.stop + 1, args.step)]
    if args.m is None or args.n is None:
        return []
    return [(args.m, args.n, k)]


def _scalar_option(kernel, name: str, given: float | None, default: float) -> float:
    """--alpha / --beta: the value the IR fixes (linalg accumulates: alpha = beta = 1), else the
    option, else ``default``; an option contradicting the IR is a :class:`VlpcError` (as vlpc run)."""
    fixed = getattr(kernel, name)
    if fixed is not None and given is not None and given != fixed:
        raise VlpcError(f"--{name} {given} contradicts {name}={fixed} fixed by the IR")
    return fixed if fixed is not None else (given if given is not None else default)


def main(args) -> int:
    import vlpc
    from vlpc.errors import EXIT_VERIFY
    from vlpc.api import Problem, check_batch_option, resolve_launch
    from vlpc.runtime import get_device, load_code_object

    if args.warmup is not None and args.warmup < 0:
        raise VlpcError(f"--warmup must be at least 0, got {args.warmup}")
    check_size_options(args)
    check_finite_scalars(args, float32=False)  # as vlpc run (an f64 GEMM takes beyond float32's range)
    rb = rocblas_problem(args)
    if args.csv:
        check_writable(args.csv, "CSV")
    if args.chart:
        check_chart(args.chart)
    if rb is not None:
        text, filename = rb.mlir(), "<rocblas-bench flags>"
    else:
        text, filename = read_input(args.file), args.file
    if getattr(args, "energy", False):  # modeled energy (issue 20): sqc, no forwarding, lds side by side
        from vlpc.commands.energy import default_prefix, run_energy_command
        if args.sweep:
            raise VlpcError("--energy compares three kernels at one size: drop --sweep")
        m, n, k = (rb.n, rb.m, rb.k) if rb is not None else (args.m, args.n, args.k)
        return run_energy_command(args, text, output_prefix(args.output, default_prefix(args.file)), m=m, n=n, k=k)
    if args.output is not None:
        raise VlpcError(f"-o {args.output}: -o PREFIX names --energy's outputs; the table is written with "
                        "--csv FILE.csv and --chart FILE.svg")
    for name, default in (("iterations", DEFAULT_ITERATIONS), ("warmup", DEFAULT_WARMUP),
                          ("max_emulated", DEFAULT_MAX_EMULATED)):
        if getattr(args, name) is None:
            setattr(args, name, default)
    compiled = vlpc.compile(text, args.target, filename=filename, **codegen_options(args))
    from vlpc.tunedb import print_notes

    print_notes(compiled.plan_notes, args.verbose)  # the tuning database's entry (vlpc tune), if any
    kernel = single_kernel(compiled, "bench")
    check_batch_option(kernel, args.batch)
    if rb is not None:
        problems = [Problem(rb.n, rb.m, rb.k, rb.ldb, rb.lda, rb.ldc)]
        alpha, beta = rb.alpha, rb.beta
    else:
        if args.sweep:  # M = N vary: they must be '?' in the IR, and not given as well
            given = [f"-{x}" for x in "mn" if getattr(args, x) is not None]
            if given:
                raise VlpcError(f"--sweep sets M = N from --start to --stop itself: drop {' and '.join(given)}")
            fixed = [f"{x.upper()}={kernel.launch_info[f'static_{x}']}" for x in "mn"
                     if kernel.launch_info.get(f"static_{x}", -1) >= 0]
            if fixed:
                raise VlpcError(f"--sweep varies M = N, but the IR fixes {' '.join(fixed)}: write them as '?' "
                                "(as examples/sgemm_dynamic.mlir does)")
        sizes = _sizes(args) or [(args.m, args.n, args.k)]
        # as vlpc run: a strided batch's count (--batch when dynamic) and strides (vlpc.api.resolve)
        problems = [resolve_launch(kernel, m, n, k, args.batch) for m, n, k in sizes]
        alpha = _scalar_option(kernel, "alpha", args.alpha, 1.0)
        beta = _scalar_option(kernel, "beta", args.beta, 0.0)
    from vlpc.verify import check_before_allocating
    for p in problems:  # every size of a sweep, before the first runs (vlpc/verify.py)
        check_before_allocating(kernel, p)
    plan = codegen_options(args)  # the flags, and --options TUNED.json for what they leave out:
    args.gpu, args.cus = plan.get("gpu"), plan.get("cus")  # the timing model's board and CUs are the plan's
    modeled = args.device != "hip" and not args.no_model
    dev_opts = {"target": args.target}
    if modeled:
        from vlpc.targets import board_for
        dev_opts.update({"gpu": args.gpu or board_for(args.target), "clock_mhz": args.clock,
                         "memory_clock_mhz": args.memory_clock,
                         "cus": getattr(args, "cus", None), "timing_only": True})
    dev = get_device(args.device, **dev_opts)
    emulated = dev.name == "emulator"
    modeled = emulated and getattr(dev, "board", None) is not None
    if args.verbose:
        print(f"vlpc: device {dev.describe()} ({getattr(dev, 'selection_reason', '')})", file=sys.stderr)
    if modeled:
        b = dev.board
        print(f"vlpc bench: device is the emulator: times are MODELED by the timing model of {b.name} "
              f"({b.compute_units} CUs, engine {b.engine_clock_mhz:.0f} MHz, memory {b.memory_clock_mhz:.0f} MHz), "
              f"not measured", file=sys.stderr)
    elif emulated:
        too_big = [p for p in problems if max(p.m, p.n) > args.max_emulated]
        if too_big:
            raise VlpcError(f"M or N up to {max(max(p.m, p.n) for p in too_big)} on the emulator would take very "
                            f"long; sizes above {args.max_emulated} need --max-emulated N (or a HIP device)")
        print("vlpc bench: device is the emulator: no hardware timing; reporting executed-instruction "
              "and traffic counters instead of GFLOP/s (C checked by vlpc.verify)", file=sys.stderr)
    if problems[0].batch:
        p = problems[0]
        print(f"vlpc bench: a strided batch of {p.batch} GEMMs (batch strides {p.stride_a}, {p.stride_b}, "
              f"{p.stride_c}): times and FLOPs (batch x 2MNK) are of the whole batch", file=sys.stderr)
    if rb is not None and rb.note:
        print(f"vlpc bench: {rb.note}", file=sys.stderr)
    if rb is not None and not args.rocblas_csv:
        print(f"vlpc bench: rocblas-bench's column-major {rb.m} x {rb.n} problem runs as vlpc's row-major "
              f"M={rb.n} N={rb.m} (layout {rb.layout}, A and B exchanged)", file=sys.stderr)
    shown = set()
    for p in problems:  # the solution of each size whose plan differs (rocblas-bench prints its solution)
        line = solution_line(kernel, p, args.target)
        key = line.split(" (workgroups)")[1] + " ".join(s.kernel for s in kernel.plan(p.m, p.n, p.k, p.batch or None))
        if key not in shown:
            shown.add(key)
            size = f" at M={p.m} N={p.n} K={p.k}" if len(problems) > 1 else ""
            print(f"vlpc bench: {line}{size}", file=sys.stderr)
    co = load_code_object(compiled.code_object)
    if args.rocblas_csv:
        if modeled:
            b = dev.board
            print(f"# modeled: rocblas-Gflops and us are vlpc's timing model of {b.name} ({b.compute_units} CUs, "
                  f"engine {b.engine_clock_mhz:.0f} MHz), not measured", flush=True)
        elif emulated:
            print("# no time: the emulator without its timing model (--no-model) leaves rocblas-Gflops and us empty",
                  flush=True)
        print(ROCBLAS_CSV_HEADER, flush=True)
    else:
        unit = "TOP/s" if kernel.launch_info.get("dtype", "f32") == "i8" else "TFLOP/s"
        print(table_header(emulated, problems[0].k, modeled, unit))
        print("|---" * (6 if modeled else 7 if emulated else 3) + "|", flush=True)
    launches = 1 if emulated else args.warmup + args.iterations
    total = sum(kernel.plan_workgroups(p.m, p.n, p.k, p.batch or None) for p in problems) * launches
    if modeled:  # timing-only launches: the bar counts sizes
        total = len(problems)
    rows = []
    with Progress(total, "vlpc bench", quiet=args.quiet) as bar:
        for i, p in enumerate(problems):
            row = measure_size(kernel, dev, co, p, emulated=emulated, alpha=alpha, beta=beta,
                               iterations=args.iterations, warmup=args.warmup,
                               progress=None if modeled else bar)
            if modeled:
                bar(i + 1)
            rows.append(row)
            if args.rocblas_csv:
                line = (rb or RocblasProblem.of(p, kernel.layout, kernel.launch_info.get("dtype", "f32"),
                                                alpha, beta, kernel.launch_info.get("c_dtype", ""))).csv_line(row)
            else:
                line = _format_row(row, emulated, modeled)
            if bar.bar is not None:
                bar.bar.write(line, file=sys.stdout)
            else:
                print(line, flush=True)
    if args.csv:
        _write_csv(args.csv, rows, emulated, modeled)
    if args.chart:
        plot(args.chart, rows, emulated, modeled, dev if modeled else None)
    bad = [r for r in rows if r.verified is False]
    for r in bad:
        print(f"vlpc: verification FAILED at {_size(r)}: {r.failure}", file=sys.stderr)
    if bad:
        return EXIT_VERIFY
    if any(r.verified for r in rows):
        print("vlpc bench: C verified at every size (vlpc.verify: within the error bound, elements outside the "
              "matrices untouched)", file=sys.stderr)
    return 0


#: Order of the "where the time goes" column.
BREAKDOWN = ("valu", "smem", "vmem", "lds", "barrier", "issue", "idle", "launch")


def table_header(emulated: bool, k: int, modeled: bool = False, unit: str = "TFLOP/s") -> str:
    """The table's header line; ``unit``: "TFLOP/s", or "TOP/s" for int8 products."""
    if modeled:
        return (f"| K={k} | modeled time (us) | modeled {unit} | % of peak | % of HBM (A, B, C once) "
                f"| where the modeled time goes "
                f"(VALU busy, waiting on SMEM/VMEM/LDS, barrier, other issue, idle SIMDs, launch) |")
    if emulated:
        return f"| K={k} | wave-instructions | VALU | VGPR reads | SGPR reads | LDS bytes | global bytes |"
    return f"| K={k} | kernel ms (mean) | TFLOP/s |"


def _size(r: BenchRow) -> str:
    """The table's size cell: ``M=N=256``, ``M=64 N=128``, with `` batch=3`` for a strided batch."""
    size = f"M=N={r.m}" if r.m == r.n else f"M={r.m} N={r.n}"
    return f"{size} batch={r.batch}" if r.batch else size


def _format_row(r: BenchRow, emulated: bool, modeled: bool = False) -> str:
    size = _size(r)
    if modeled:
        where = ", ".join(f"{k} {r.breakdown.get(k, 0.0) * 100:.0f}%" for k in BREAKDOWN
                          if r.breakdown.get(k, 0.0) >= 0.005)
        return (f"| {size} | {r.modeled_us:.1f} | {r.modeled_tflops:.3f} | {r.peak_share * 100:.1f} | "
                f"{r.hbm_share * 100:.1f} | {where} |")
    if emulated:
        return (f"| {size} | {r.instructions} | {r.valu} | {r.vgpr_reads} | {r.sgpr_reads} | "
                f"{r.lds_bytes} | {r.global_bytes} |")
    return f"| {size} | {r.kernel_ms:.4f} | {r.gflops / 1000:.3f} |"


def _write_csv(path: str, rows: list[BenchRow], emulated: bool, modeled: bool = False) -> None:
    import io

    buf = io.StringIO()
    w = csv.writer(buf)
    if modeled:
        w.writerow(["M", "N", "K", "modeled_us", "modeled_tflops", "peak_share"] + [f"share_{k}" for k in BREAKDOWN]
                   + ["hbm_share", "batch", "flops"])
        for r in rows:
            w.writerow([r.m, r.n, r.k, f"{r.modeled_us:.3f}", f"{r.modeled_tflops:.4f}", f"{r.peak_share:.4f}"]
                       + [f"{r.breakdown.get(k, 0.0):.4f}" for k in BREAKDOWN] + [f"{r.hbm_share:.4f}", r.batch,
                                                                                   f"{r.flops:.0f}"])
    elif emulated:
        w.writerow(["M", "N", "K", "instructions", "valu", "vgpr_reads", "sgpr_reads", "lds_bytes", "global_bytes",
                    "batch", "flops", "verified"])
        for r in rows:
            w.writerow([r.m, r.n, r.k, r.instructions, r.valu, r.vgpr_reads, r.sgpr_reads, r.lds_bytes, r.global_bytes,
                        r.batch, f"{r.flops:.0f}", r.verified])
    else:
        w.writerow(["M", "N", "K", "kernel_ms", "gflops", "batch", "flops"])
        for r in rows:
            w.writerow([r.m, r.n, r.k, f"{r.kernel_ms:.6f}", f"{r.gflops:.3f}", r.batch, f"{r.flops:.0f}"])
    write_atomic(path, buf.getvalue())


def plot(path: str, rows: list[BenchRow], emulated: bool, modeled: bool = False, dev=None) -> None:
    """The bench chart (SVG or PNG by ``path``'s suffix): TFLOP/s on HIP, modeled TFLOP/s with the
    timing model, wave-instructions on the emulator without it, against the size (as the seed's
    section 3.1 chart)."""
    plt = pyplot()
    square = all(r.m == r.n for r in rows)
    xs = [r.m for r in rows] if square else list(range(len(rows)))
    fig, ax = plt.subplots(figsize=(7, 4))
    if modeled:
        ys = [r.modeled_tflops for r in rows]
        b = dev.board
        ax.set_ylabel("TFLOP/s (MODELED: vlpc timing model)")
        ax.set_title(f"vlpc bench, modeled on {b.name} @ {b.engine_clock_mhz:.0f} MHz (K = {rows[0].k})")
    elif emulated:
        ys = [r.instructions for r in rows]
        ax.set_ylabel("wave-instructions (emulator count)")
        ax.set_title(f"vlpc bench on the emulator: work per size (K = {rows[0].k})")
    else:
        ys = [r.gflops / 1000 for r in rows]
        ax.set_ylabel("TFLOP/s (2MNK / mean kernel time)")
        ax.set_title(f"vlpc bench: SGEMM throughput (K = {rows[0].k})")
    ax.plot(xs, ys, marker="o")
    for x, y in zip(xs, ys):
        ax.annotate(f"{y:.3g}" if (modeled or not emulated) else f"{y:,}", (x, y), textcoords="offset points", xytext=(0, 5),
                    ha="center", fontsize=7)
    if square:
        ax.set_xlabel(f"M = N (elements; K = {rows[0].k})")
    else:
        ax.set_xticks(xs, [f"{r.m}x{r.n}" for r in rows])
        ax.set_xlabel(f"M x N (elements; K = {rows[0].k})")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
