"""``vlpc bench``: throughput of a compiled GEMM, measured the way the seed's harness does.

The problem comes from an MLIR file (``vlpc bench FILE``, dynamic ``?`` sizes for a
sweep), or from rocblas-bench's problem flags, for which vlpc writes the gemm-dialect
IR itself::

    vlpc bench -f gemm -r f32_r --transposeA N --transposeB T -m 4096 -n 4096 -k 640 \\
        --lda 4096 --ldb 4096 --ldc 4096 --alpha 1 --beta 0 -i 10 -j 1 --rocblas-csv

rocblas-bench's matrices are column-major (BLAS); vlpc's are row-major, so the problem
``C = alpha op(A) op(B) + beta C`` (C m x n, column-major, leading dimension ldc) is
computed as its row-major transpose ``C^T = alpha op(B)^T op(A)^T + beta C^T``: a vlpc
GEMM of M = n, N = m with A and B exchanged and layout ``transB transA``, over the same
bytes with the same leading dimensions, so the figures are those of rocblas-bench's
problem.

A strided batched GEMM (A, B, C as 3-D memrefs) runs its whole batch, resolved as ``vlpc run``
resolves it (``--batch`` when the count is dynamic; batch strides from the IR, else rows x
leading dimension), and every FLOP figure below counts batch x 2*M*N*K.

On a HIP device: GFLOP/s = 2*M*N*K / mean kernel time over ``--iterations`` (``-i``)
launches after ``--warmup`` (``-j``) untimed ones, timed with HIP events; with
``--sweep``, M = N from ``--start`` to ``--stop`` in steps of ``--step`` with a fixed K
(the seed's section 3.1: 256..16384 step 256, K = 640), printed as a table in the
seed's format and optionally saved as CSV and as a chart (``--chart F.svg|F.png``,
matplotlib).  ``--rocblas-csv`` prints rocblas-bench's CSV instead of the table:
``transA,transB,M,N,K,alpha,lda,beta,ldb,ldc,rocblas-Gflops,us``.

On the emulator (the default device, as for ``vlpc run``) there is no hardware time;
the figures are **modeled** by vlpc's timing model of a gfx906 board (``--gpu mi60``
(default) or ``mi50``, ``--clock MHZ`` engine clock, ``--cus N`` (also the split-K
plan's); ``runtime/timing``,
calibrated on the seed's measured MI60 table, ``benchmarks/timing_calibration.py``):
modeled time, modeled TFLOP/s (TOP/s for int8), the share of the board's peak for the
type (FP32/FP64 FMA, or the f16/int8 dot instructions'), the share of its HBM bandwidth
that the bytes which must move (A and B once, C once or twice) take, and where the
cycles go (VALU busy, waiting on SMEM / VMEM / LDS, barrier, other issue, idle SIMDs,
launch).  Only the workgroups the model traces are executed (a timing-only launch), so
any size runs in seconds to a minute; ``--no-model`` reports the emulator's counters
of a full functional run instead, whose C is checked as ``vlpc run`` checks it
(:mod:`vlpc.verify`: the error bound, elements outside the matrices untouched; a failure
is exit code 3).  Every emulator figure is labelled modeled.  The CSV's ``batch`` and
``flops`` columns give the batch count (0: a plain GEMM) and the operations counted.
"""

from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass

from types import SimpleNamespace


class _LazyNumPy(SimpleNamespace):
    """NumPy, imported on first use: `vlpc --help` and `vlpc compile` import this module (for the
    bench command's arguments) and need no NumPy (issue 18: start-up time)."""

    def __getattr__(self, name: str):
        import numpy

        return getattr(numpy, name)


np = _LazyNumPy()

from vlpc.cli_support import (Progress, add_output_prefix, add_size_options, check_chart, check_finite_scalars,
                              check_size_options, check_writable, codegen_options, output_prefix, positive, pyplot,
                              read_input, save_figure, single_kernel, write_atomic)
from vlpc.errors import VlpcError

#: Emulated sizes above this need --max-emulated (a 4096^2 x 640 SGEMM takes ~30 s).
DEFAULT_MAX_EMULATED = 1024

#: rocblas-bench's defaults of -i (timed launches) and -j (untimed ones first).
DEFAULT_ITERATIONS, DEFAULT_WARMUP = 10, 1

#: rocblas-bench's ``-r`` precisions vlpc compiles.
PRECISIONS = {"f32_r": "f32", "s": "f32", "f64_r": "f64", "d": "f64"}

ROCBLAS_CSV_HEADER = "transA,transB,M,N,K,alpha,lda,beta,ldb,ldc,rocblas-Gflops,us"


@dataclass
class BenchRow:
    """One measured size: M, N, K of vlpc's row-major problem; HIP time or emulator counters."""

    m: int
    n: int
    k: int
    kernel_ms: float | None = None
    #: Products of a strided batched GEMM (:attr:`vlpc.verify.Problem.batch`); 0 for a plain GEMM.
    batch: int = 0
    #: Operations of the launch: 2 M N K x the batch count (FLOPs; integer ops for int8).
    flops: float = 0.0
    #: --no-model's full emulator run: C checked by :mod:`vlpc.verify` (None: not checked).
    verified: bool | None = None
    #: What failed when ``verified`` is False (:meth:`vlpc.verify.Verdict.failure`).
    failure: str = ""
    gflops: float | None = None
    instructions: int | None = None
    modeled_us: float | None = None
    modeled_tflops: float | None = None
    peak_share: float | None = None
    #: Bytes that must move (A and B read once, C read when beta != 0 and written once, the
    #: dequantizing scales) over the modeled time, as a share of the board's HBM bandwidth.
    hbm_share: float | None = None
    breakdown: dict | None = None
    valu: int | None = None
    vgpr_reads: int | None = None
    sgpr_reads: int | None = None
    lds_bytes: int | None = None
    global_bytes: int | None = None


@dataclass
class RocblasProblem:
    """rocblas-bench's problem flags (column-major BLAS terms)."""

    precision: str
    trans_a: str
    trans_b: str
    m: int
    n: int
    k: int
    lda: int
    ldb: int
    ldc: int
    alpha: float
    beta: float

    @property
    def layout(self) -> str:
        """vlpc's layout of the row-major transpose (A and B exchanged)."""
        return self.trans_b + self.trans_a

    def mlir(self) -> str:
        """The gemm-dialect module of the row-major transpose, sizes and leading dimensions static."""
        t = self.precision
        mm, nn, k = self.n, self.m, self.k  # vlpc's M, N
        a_shape = (mm, k) if self.trans_b == "N" else (k, mm)  # vlpc's A is rocblas's B
        b_shape = (k, nn) if self.trans_a == "N" else (nn, k)  # vlpc's B is rocblas's A

        def memref(shape: tuple[int, int], ld: int) -> str:
            strided = f", strided<[{ld}, 1]>" if ld != shape[1] else ""
            return f"memref<{shape[0]}x{shape[1]}x{t}{strided}>"

        ta, tb, tc = memref(a_shape, self.ldb), memref(b_shape, self.lda), memref((mm, nn), self.ldc)
        return (f"// rocblas-bench -f gemm -r {t}_r --transposeA {self.trans_a} --transposeB {self.trans_b} "
                f"-m {self.m} -n {self.n} -k {self.k} --lda {self.lda} --ldb {self.ldb} --ldc {self.ldc}\n"
                f"// as vlpc's row-major transpose: C^T = op(B)^T op(A)^T\n"
                "builtin.module {\n"
                f"  func.func @gemm_{t}_{self.trans_a}{self.trans_b}(%a: {ta}, %b: {tb}, %c: {tc}, "
                f"%alpha: {t}, %beta: {t}) {{\n"
                f"    gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"{self.layout}\"}}\n"
                f"        : {ta}, {tb}, {tc}, {t}, {t}\n"
                "    func.return\n  }\n}\n")

    @staticmethod
    def of(p, layout: str, precision: str, alpha: float, beta: float) -> RocblasProblem:
        """rocblas-bench's terms of vlpc's row-major problem ``p`` (the inverse of the mapping above)."""
        return RocblasProblem(precision, layout[1], layout[0], p.n, p.m, p.k, p.ldb, p.lda, p.ldc, alpha, beta)

    def csv_line(self, row: BenchRow) -> str:
        """rocblas-bench's result line (Gflops and microseconds empty without hardware time)."""
        gf = "" if row.gflops is None else f"{row.gflops:.4g}"
        us = "" if row.kernel_ms is None else f"{row.kernel_ms * 1e3:.4g}"
        return (f"{self.trans_a},{self.trans_b},{self.m},{self.n},{self.k},{_num(self.alpha)},{self.lda},"
                f"{_num(self.beta)},{self.ldb},{self.ldc},{gf},{us}")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


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
    g.add_argument("-f", "--function", choices=("gemm",), help="rocblas-bench's function: gemm")
    g.add_argument("-r", "--precision", choices=tuple(PRECISIONS), default=None,
                   help="element type: f32_r (s) or f64_r (d) (default: f32_r)")
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
                        "instead of the table")
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
    t.add_argument("--gpu", default=None, choices=("mi60", "mi50", "mi25"),
                   help="board the timing model predicts (default: the target's: mi60 for gfx906, mi25 for gfx900)")
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


def rocblas_problem(args) -> RocblasProblem | None:
    """The problem of rocblas-bench's flags, or None when a file is given (flags checked)."""
    given = [name for name in ("function", "precision", "transpose_a", "transpose_b", "lda", "ldb", "ldc")
             if getattr(args, name) is not None]
    if args.file is not None:
        if given:
            flags = ", ".join("--" + x.replace("_", "-") for x in given)
            raise VlpcError(f"{flags}: rocblas-bench's problem flags describe the GEMM instead of an MLIR file; "
                            f"drop {args.file} or the flags")
        return None
    if args.function is None:
        raise VlpcError("bench needs an MLIR file, or rocblas-bench's problem flags: -f gemm -r f32_r "
                        "--transposeA N --transposeB T -m M -n N -k K")
    if args.m is None or args.n is None or args.k is None:
        raise VlpcError("-f gemm needs -m, -n and -k")
    if args.sweep:
        raise VlpcError("--sweep needs an MLIR file with dynamic sizes (rocblas-bench's flags give one problem)")
    ta, tb = args.transpose_a or "N", args.transpose_b or "N"
    m, n, k = args.m, args.n, args.k
    lda = args.lda if args.lda is not None else (m if ta == "N" else k)
    ldb = args.ldb if args.ldb is not None else (k if tb == "N" else n)
    ldc = args.ldc if args.ldc is not None else m
    for name, ld, least in (("lda", lda, m if ta == "N" else k), ("ldb", ldb, k if tb == "N" else n),
                            ("ldc", ldc, m)):
        if ld < least:
            raise VlpcError(f"--{name} {ld} is smaller than {least} (rocblas-bench's matrices are column-major: "
                            f"{name} is at least the rows of the stored matrix)")
    return RocblasProblem(PRECISIONS[args.precision or "f32_r"], ta, tb, m, n, k, lda, ldb, ldc,
                          1.0 if args.alpha is None else args.alpha, 0.0 if args.beta is None else args.beta)


def _sizes(args) -> list[tuple[int, int, int]]:
    k = args.k if args.k is not None else 640
    if args.sweep:
        if args.stop < args.start:
            raise VlpcError("--sweep needs --start <= --stop")
        return [(s, s, k) for s in range(args.start, args.stop + 1, args.step)]
    if args.m is None or args.n is None:
        return []
    return [(args.m, args.n, k)]


def _fill_random(host: dict, rng) -> None:
    """Standard normal floats (int8 in [-128, 128), i32 in [-2^15, 2^15)) over whole host buffers
    (matrices, padding and gaps alike: a timed launch reads only the matrices)."""
    for x in host.values():
        if np.issubdtype(x.dtype, np.integer):
            lim = 128 if x.itemsize == 1 else 2**15
            x[:] = rng.integers(-lim, lim, x.size)
        else:
            x[:] = rng.standard_normal(x.size, dtype=np.float64 if x.dtype == np.float64 else np.float32)


def measure_size(kernel, dev, co, p, *, emulated: bool, alpha: float, beta: float, iterations: int,
                 warmup: int, progress=None, seed: int = 0) -> BenchRow:
    """Run ``kernel``'s plan for the problem ``p`` (:class:`vlpc.verify.Problem`, e.g. from
    :func:`vlpc.run.resolve_launch`: a strided batch runs its ``p.batch`` products) on ``dev`` and return
    its row.  Every figure of a bench row is computed here; operations are 2 M N K x the batch
    count.  The launch goes through :mod:`vlpc.verify`'s argument packing (``kernel_arguments``,
    by the kernel's metadata: batch strides, bias, W8A8 scales) and exactly sized buffers
    (:func:`vlpc.verify.geometries`, via :func:`vlpc.energy_report.host_buffers`):

    * the emulator with a timing model (``dev.board``): one timing-only launch
      (:func:`vlpc.verify.launch_and_read`, zero-filled buffers: the work does not depend on
      the values); modeled time, TFLOP/s, share of peak and of HBM bandwidth;
    * the emulator without one: a full functional run by :func:`vlpc.run` (random operands,
      NaN outside the matrices), C checked by :mod:`vlpc.verify` (``row.verified``; a failure
      also in ``row.failure``); the emulator's counters;
    * HIP: ``warmup`` + ``iterations`` launches (random operands), the mean kernel time of HIP
      events and GFLOP/s."""
    from vlpc.energy_report import host_buffers
    from vlpc.verify import kernel_arguments, launch_and_read

    ops = 2.0 * p.m * p.n * p.k * p.batches
    row = BenchRow(p.m, p.n, p.k, batch=p.batch, flops=ops)
    if emulated and getattr(dev, "board", None) is None:  # a full functional run, checked
        from vlpc.api import VerificationError, run

        if progress is not None and hasattr(dev, "progress"):
            dev.progress = progress
        try:
            r = run(kernel, m=p.m, n=p.n, k=p.k, batch=p.batch or None, alpha=alpha, beta=beta, device=dev,
                    seed=seed)
            row.failure = ""
        except VerificationError as e:
            r, row.failure = e.result, e.result.verdict.failure()
        finally:
            if hasattr(dev, "progress"):
                dev.progress = None
        st = r.stats
        row.verified = bool(r.verified)
        row.instructions, row.valu = st.instructions, st.by_class.get("valu", 0)
        row.vgpr_reads, row.sgpr_reads = st.vgpr_reads, st.sgpr_reads
        row.lds_bytes = st.lds_bytes_read + st.lds_bytes_written
        row.global_bytes = st.global_bytes_read + st.global_bytes_written
        return row
    host, c_type, scalar, ab, _ct = host_buffers(kernel, p)
    if emulated:  # the timing model: only the workgroups it traces run (values do not matter)
        _out, st, _walls = launch_and_read(kernel, dev, host, p, alpha, beta, c_type, scalar=scalar)
        tm = st.timing
        # FMA peak of the type: v_dot2_f32_f16 does 4 FLOP per lane and v_dot4_i32_i8 8 ops per FMA slot
        peak = {"f16": 2.0, "i8": 4.0}.get(ab, 1.0) * dev.board.peak_flops_f32 / (
            dev.board.target.f64_rate_divisor if ab == "f64" else 1)
        tf = tm.tflops(ops)
        # bytes that must move: A and B once (a stride-0 operand is one matrix for the batch), C
        # written (and read when beta != 0) for every product, the W8A8 scales
        ab_bytes, c_bytes = host["A"].itemsize, host["C"].itemsize
        n_a = 1 if p.batch and p.stride_a == 0 else p.batches
        n_b = 1 if p.batch and p.stride_b == 0 else p.batches
        moved = (ab_bytes * p.k * (p.m * n_a + p.n * n_b) + c_bytes * p.m * p.n * (2 if beta != 0 else 1) * p.batches
                 + (4 * (p.m + p.n) if "scale_row" in host else 0))
        row.modeled_us, row.modeled_tflops, row.peak_share = tm.time_us, tf, tf * 1e12 / peak
        row.hbm_share = moved / (tm.time_us * 1e-6) / dev.board.hbm_bytes_per_second
        row.breakdown = {key: v / tm.time_us for key, v in tm.breakdown_us.items()}
        return row
    _fill_random(host, np.random.default_rng(seed))
    bufs: dict = {}
    try:
        for name, x in host.items():
            bufs[name] = dev.upload(x)
        args = kernel_arguments(kernel, bufs, p, alpha, beta, scalar=scalar)
        st = kernel.execute(dev, co, args, p.m, p.n, p.k, p.ldc, p.batch or None, iterations=iterations,
                            warmup=warmup, progress=progress)
    finally:
        for b in bufs.values():
            dev.free(b)
    row.kernel_ms = float(np.mean(st.kernel_ms))
    row.gflops = ops / (row.kernel_ms * 1e-3) / 1e9
    return row


def _scalar_option(kernel, name: str, given: float | None, default: float) -> float:
    """--alpha / --beta: the value the IR fixes (linalg accumulates: alpha = beta = 1), else the
    option, else ``default``; an option contradicting the IR is a :class:`VlpcError` (as vlpc run)."""
    fixed = getattr(kernel, name)
    if fixed is not None and given is not None and given != fixed:
        raise VlpcError(f"--{name} {given} contradicts {name}={fixed} fixed by the IR")
    return fixed if fixed is not None else (given if given is not None else default)


def cmd_bench(args) -> int:
    import vlpc
    from vlpc.errors import EXIT_VERIFY
    from vlpc.run import Problem, check_batch_option, resolve_launch
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
        from vlpc.energy_report import default_prefix, run_energy_command
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
    if rb is not None and not args.rocblas_csv:
        print(f"vlpc bench: rocblas-bench's column-major {rb.m} x {rb.n} problem runs as vlpc's row-major "
              f"M={rb.n} N={rb.m} (layout {rb.layout}, A and B exchanged)", file=sys.stderr)
    co = load_code_object(compiled.code_object)
    if args.rocblas_csv:
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
                                                alpha, beta)).csv_line(row)
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
