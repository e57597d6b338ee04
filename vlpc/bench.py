"""``vlpc bench``: throughput of a compiled GEMM, measured the way the seed's harness does.

On a HIP device: GFLOP/s = 2*M*N*K / mean kernel time over ``--iterations``
launches (after ``--warmup`` untimed ones), timed with HIP events; with
``--sweep``, M = N from ``--start`` to ``--stop`` in steps of ``--step`` with a fixed
K (the seed's section 3.1: 256..16384 step 256, K = 640), printed as a table in the
seed's format and optionally saved as CSV and as a PNG plot (matplotlib).

On the emulator there is no hardware time: the command reports the emulator's
counters per size (instructions by class, register and memory traffic) and says
so.  It never prints a GFLOP/s figure for the emulator.
"""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass

import numpy as np

from vlpc.errors import VlpcError

#: Emulated sizes above this need --max-emulated (a 4096^2 x 640 SGEMM takes ~30 s).
DEFAULT_MAX_EMULATED = 1024


@dataclass
class BenchRow:
    m: int
    n: int
    k: int
    kernel_ms: float | None = None
    gflops: float | None = None
    instructions: int | None = None
    valu: int | None = None
    vgpr_reads: int | None = None
    sgpr_reads: int | None = None
    lds_bytes: int | None = None
    global_bytes: int | None = None


def _sizes(args) -> list[tuple[int, int, int]]:
    if args.sweep:
        if args.step <= 0 or args.start <= 0 or args.stop < args.start:
            raise VlpcError("--sweep needs 0 < --start <= --stop and --step > 0")
        return [(s, s, args.k) for s in range(args.start, args.stop + 1, args.step)]
    if args.m is None or args.n is None:
        return []
    return [(args.m, args.n, args.k)]


def cmd_bench(args) -> int:
    import vlpc
    from vlpc.run import resolve_problem
    from vlpc.runtime import get_device, load_code_object

    with open(args.file) as f:
        text = f.read()
    from vlpc.cli import _options

    compiled = vlpc.compile(text, args.target, filename=args.file, **_options(args))
    kernel = compiled.kernel()
    sizes = _sizes(args)
    if not sizes:
        p = resolve_problem(kernel.launch_info, args.m, args.n, args.k)
        sizes = [(p.m, p.n, p.k)]
    dev = get_device(args.device)
    emulated = dev.name == "emulator"
    if args.verbose:
        print(f"vlpc: device {dev.describe()} ({getattr(dev, 'selection_reason', '')})", file=sys.stderr)
    if emulated:
        too_big = [s for s in sizes if max(s[0], s[1]) > args.max_emulated]
        if too_big:
            raise VlpcError(f"M=N up to {max(max(s[:2]) for s in too_big)} on the emulator would take very long; "
                            f"sizes above {args.max_emulated} need --max-emulated N (or a HIP device)")
        print("vlpc bench: device is the emulator: no hardware timing; reporting executed-instruction "
              "and traffic counters instead of GFLOP/s", file=sys.stderr)
    co = load_code_object(compiled.code_object)
    print(table_header(emulated, sizes[0][2]))
    print("|---" * (7 if emulated else 3) + "|")
    rows = []
    for m, n, k in sizes:
        p = resolve_problem(kernel.launch_info, m, n, k)
        kernel.check_sizes(p.m, p.n, p.k, p.lda, p.ldb, p.ldc)
        cfg = kernel.launch(p.m, p.n, p.k)
        rng = np.random.default_rng(0)
        bufs = [dev.upload(rng.standard_normal(shape, dtype=np.float32))
                for shape in ((p.m, p.lda), (p.n, p.ldb), (p.m, p.ldc))]
        kargs = [*bufs, np.int32(p.m), np.int32(p.n), np.int32(p.k), np.int32(p.lda), np.int32(p.ldb),
                 np.int32(p.ldc), np.float32(1.0), np.float32(0.0)]
        try:
            if emulated:
                st = kernel.execute(dev, co, kargs, p.m, p.n, p.k, p.ldc)
                row = BenchRow(p.m, p.n, p.k, instructions=st.instructions, valu=st.by_class.get("valu", 0),
                               vgpr_reads=st.vgpr_reads, sgpr_reads=st.sgpr_reads,
                               lds_bytes=st.lds_bytes_read + st.lds_bytes_written,
                               global_bytes=st.global_bytes_read + st.global_bytes_written)
            else:
                st = kernel.execute(dev, co, kargs, p.m, p.n, p.k, p.ldc, iterations=args.iterations,
                                    warmup=args.warmup)
                ms = float(np.mean(st.kernel_ms))
                row = BenchRow(p.m, p.n, p.k, kernel_ms=ms, gflops=2.0 * p.m * p.n * p.k / (ms * 1e-3) / 1e9)
        finally:
            for b in bufs:
                dev.free(b)
        rows.append(row)
        print(_format_row(row, emulated), flush=True)
    if args.csv:
        _write_csv(args.csv, rows, emulated)
    if args.plot:
        _plot(args.plot, rows, emulated)
    return 0


def table_header(emulated: bool, k: int) -> str:
    if emulated:
        return f"| K={k} | wave-instructions | VALU | VGPR reads | SGPR reads | LDS bytes | global bytes |"
    return f"| K={k} | kernel ms (mean) | TFLOP/s |"


def _format_row(r: BenchRow, emulated: bool) -> str:
    size = f"M=N={r.m}" if r.m == r.n else f"M={r.m} N={r.n}"
    if emulated:
        return (f"| {size} | {r.instructions} | {r.valu} | {r.vgpr_reads} | {r.sgpr_reads} | "
                f"{r.lds_bytes} | {r.global_bytes} |")
    return f"| {size} | {r.kernel_ms:.4f} | {r.gflops / 1000:.3f} |"


def _write_csv(path: str, rows: list[BenchRow], emulated: bool) -> None:
    from vlpc.cli import write_atomic
    import io

    buf = io.StringIO()
    w = csv.writer(buf)
    if emulated:
        w.writerow(["M", "N", "K", "instructions", "valu", "vgpr_reads", "sgpr_reads", "lds_bytes", "global_bytes"])
        for r in rows:
            w.writerow([r.m, r.n, r.k, r.instructions, r.valu, r.vgpr_reads, r.sgpr_reads, r.lds_bytes, r.global_bytes])
    else:
        w.writerow(["M", "N", "K", "kernel_ms", "gflops"])
        for r in rows:
            w.writerow([r.m, r.n, r.k, f"{r.kernel_ms:.6f}", f"{r.gflops:.3f}"])
    write_atomic(path, buf.getvalue())


def _plot(path: str, rows: list[BenchRow], emulated: bool) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise VlpcError("--plot needs matplotlib: pip install 'vlpc[plot]'") from None
    xs = [r.m for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4))
    if emulated:
        ax.plot(xs, [r.instructions for r in rows], marker="o")
        ax.set_ylabel("wave-instructions (emulator, not time)")
    else:
        ax.plot(xs, [r.gflops / 1000 for r in rows], marker="o")
        ax.set_ylabel("TFLOP/s")
    ax.set_xlabel(f"M = N (K = {rows[0].k})")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
