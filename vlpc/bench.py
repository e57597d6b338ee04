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

Types (rocblas-bench's flags; rocBLAS's ``rocblas_gemm_ex`` type table): ``-f gemm -r f32_r|f64_r``
(``s``/``d``), ``-r f16_r`` (``h``: rocBLAS's hgemm, f16 in and out; vlpc accumulates in f32 with
f32 alpha/beta, said on stderr), and ``-f gemm_ex`` with ``--a_type/--b_type/--c_type/--d_type/
--compute_type`` (each defaults to ``-r``, D's to C's: vlpc writes D in place of C, so ``--ldd``
must equal ``--ldc``): f32, f64, f16 x f16 -> f16 or f32 (compute f32; compute f16 runs in f32,
said) on ``v_dot2_f32_f16``, i8 x i8 -> i32 (compute i32, integer alpha/beta) on
``v_dot4_i32_i8``.  Other combinations are refused in one line.  ``bench`` prints the solution
that runs each size (stderr, as rocblas-bench prints its solution): the plan's kernels and
grids, macro tile, K step, split-K, local split, VGPRs, SGPRs and occupancy.

A strided batched GEMM (A, B, C as 3-D memrefs) runs its whole batch, resolved as ``vlpc run``
resolves it (``--batch`` when the count is dynamic; batch strides from the IR, else rows x
leading dimension), and every FLOP figure below counts batch x 2*M*N*K.

On a HIP device: GFLOP/s = 2*M*N*K / mean kernel time over ``--iterations`` (``-i``)
launches after ``--warmup`` (``-j``) untimed ones, timed with HIP events; with
``--sweep``, M = N from ``--start`` to ``--stop`` in steps of ``--step`` with a fixed K
(the seed's section 3.1: 256..16384 step 256, K = 640), printed as a table in the
seed's format and optionally saved as CSV and as a chart (``--chart F.svg|F.png``,
matplotlib).  ``--rocblas-csv`` prints rocblas-bench's CSV instead of the table:
``transA,transB,M,N,K,alpha,lda,beta,ldb,ldc,rocblas-Gflops,us``.  On the emulator the two time
fields hold the timing model's figures, and a comment line ``# modeled: ... not measured`` comes
before the header (the columns stay rocblas-bench's, so a script that reads them by name works
unchanged; rocblas-bench also prints lines before its CSV); with ``--no-model`` they are empty
after ``# no time: ...``.

On the emulator (the default device, as for ``vlpc run``) there is no hardware time;
the figures are **modeled** by vlpc's timing model of a gfx906 board (``--gpu mi50``
(default, :data:`vlpc.targets.DEFAULT_BOARDS`) or ``mi60``, ``--clock MHZ`` engine clock, ``--cus N`` (also the split-K
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

from dataclasses import dataclass

from types import SimpleNamespace


class _LazyNumPy(SimpleNamespace):
    """NumPy, imported on first use: `vlpc --help` and `vlpc compile` import this module (for the
    bench command's arguments) and need no NumPy (issue 18: start-up time)."""

    def __getattr__(self, name: str):
        import numpy

        return getattr(numpy, name)


np = _LazyNumPy()

from vlpc.errors import VlpcError


#: rocblas-bench's type names (``-r``, ``--a_type`` ... ``--compute_type``) and vlpc's element types.
PRECISIONS = {"f32_r": "f32", "s": "f32", "f64_r": "f64", "d": "f64", "f16_r": "f16", "h": "f16",
              "i8_r": "i8", "i32_r": "i32"}
#: rocblas-bench's other type names: known, refused with the supported list.
OTHER_PRECISIONS = ("bf16_r", "c", "z", "f32_c", "f64_c", "f16_c", "u8_r", "u32_r", "i8_c", "i32_c", "bf16_c")

#: rocBLAS gemm_ex's type combinations vlpc runs (rocBLAS "rocblas_gemm_ex": supported types),
#: (A = B, C = D, compute) -> (vlpc's A/B type, C type).  f16 x f16 runs on the dot kernels
#: (v_dot2_f32_f16: f32 accumulation), int8 on v_dot4_i32_i8 (i32 accumulation).
GEMM_EX_TYPES = {("f32", "f32", "f32"): ("f32", "f32"), ("f64", "f64", "f64"): ("f64", "f64"),
                 ("f16", "f16", "f32"): ("f16", "f16"), ("f16", "f32", "f32"): ("f16", "f32"),
                 ("f16", "f16", "f16"): ("f16", "f16"), ("i8", "i32", "i32"): ("i8", "i32")}

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
    """rocblas-bench's problem flags (column-major BLAS terms); ``precision`` is A's and B's
    element type, ``c_type`` C's (and D's: vlpc writes C in place; "" = ``precision``)."""

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
    c_type: str = ""
    #: rocblas-bench's function (``gemm`` or ``gemm_ex``), for the comment of the IR
    function: str = "gemm"
    #: how vlpc's computation differs from the requested one (f16 compute runs in f32), or ""
    note: str = ""

    @property
    def scalar_type(self) -> str:
        """alpha's and beta's type: the dot kernels' f32 (i32 for int8 -> i32), else the element type."""
        if self.precision == "f16":
            return "f32"
        if self.precision == "i8":
            return "i32" if (self.c_type or "i32") == "i32" else "f32"
        return self.precision

    @property
    def layout(self) -> str:
        """vlpc's layout of the row-major transpose (A and B exchanged)."""
        return self.trans_b + self.trans_a

    def mlir(self) -> str:
        """The gemm-dialect module of the row-major transpose, sizes and leading dimensions static."""
        t, ct, st = self.precision, self.c_type or self.precision, self.scalar_type
        mm, nn, k = self.n, self.m, self.k  # vlpc's M, N
        a_shape = (mm, k) if self.trans_b == "N" else (k, mm)  # vlpc's A is rocblas's B
        b_shape = (k, nn) if self.trans_a == "N" else (nn, k)  # vlpc's B is rocblas's A

        def memref(shape: tuple[int, int], ld: int, e: str) -> str:
            strided = f", strided<[{ld}, 1]>" if ld != shape[1] else ""
            return f"memref<{shape[0]}x{shape[1]}x{e}{strided}>"

        ta, tb, tc = memref(a_shape, self.ldb, t), memref(b_shape, self.lda, t), memref((mm, nn), self.ldc, ct)
        types = (f"-r {t}_r" if self.function == "gemm" else
                 f"--a_type {t}_r --b_type {t}_r --c_type {ct}_r --d_type {ct}_r")
        name = f"gemm_{t}" + (f"_{ct}" if ct != t else "")
        return (f"// rocblas-bench -f {self.function} {types} --transposeA {self.trans_a} --transposeB {self.trans_b} "
                f"-m {self.m} -n {self.n} -k {self.k} --lda {self.lda} --ldb {self.ldb} --ldc {self.ldc}\n"
                f"// as vlpc's row-major transpose: C^T = op(B)^T op(A)^T\n"
                "builtin.module {\n"
                f"  func.func @{name}_{self.trans_a}{self.trans_b}(%a: {ta}, %b: {tb}, %c: {tc}, "
                f"%alpha: {st}, %beta: {st}) {{\n"
                f"    gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"{self.layout}\"}}\n"
                f"        : {ta}, {tb}, {tc}, {st}, {st}\n"
                "    func.return\n  }\n}\n")

    @staticmethod
    def of(p, layout: str, precision: str, alpha: float, beta: float, c_type: str = "") -> RocblasProblem:
        """rocblas-bench's terms of vlpc's row-major problem ``p`` (the inverse of the mapping above)."""
        return RocblasProblem(precision, layout[1], layout[0], p.n, p.m, p.k, p.ldb, p.lda, p.ldc, alpha, beta,
                              c_type)

    def csv_line(self, row: BenchRow) -> str:
        """rocblas-bench's result line: Gflops and microseconds of HIP events, else the timing
        model's (``row.modeled_us``: the caller labels them modeled), else empty (--no-model)."""
        if row.gflops is not None:  # fixed-point, as rocblas-bench prints them
            gf, us = f"{row.gflops:.1f}", f"{row.kernel_ms * 1e3:.2f}"
        elif row.modeled_us is not None:
            gf, us = f"{row.flops / (row.modeled_us * 1e-6) / 1e9:.1f}", f"{row.modeled_us:.2f}"
        else:
            gf = us = ""
        return (f"{self.trans_a},{self.trans_b},{self.m},{self.n},{self.k},{_num(self.alpha)},{self.lda},"
                f"{_num(self.beta)},{self.ldb},{self.ldc},{gf},{us}")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def gemm_types(function: str, precision: str | None, a: str | None, b: str | None, c: str | None,
               d: str | None, compute: str | None) -> tuple[str, str, str]:
    """(A/B type, C type, a note or "") of rocblas-bench's type flags (vlpc's type names).

    ``-f gemm``: one type, ``-r`` (f32, f64, or f16: rocBLAS's hgemm, f16 in and out, which
    vlpc accumulates in f32).  ``-f gemm_ex``: each of ``--a_type`` ... ``--compute_type``
    defaults to ``-r`` (rocblas-bench's rule), and the combination must be one of
    :data:`GEMM_EX_TYPES` with A = B and D = C.  Anything else is a one-line :class:`VlpcError`."""
    prec = precision or "f32"
    if function == "gemm":
        given = [f"--{x}_type" for x, v in (("a", a), ("b", b), ("c", c), ("d", d), ("compute", compute))
                 if v is not None]
        if given:
            raise VlpcError(f"{', '.join(given)}: gemm_ex's flags; -f gemm takes one type, -r (or use -f gemm_ex)")
        if prec in ("i8", "i32"):
            raise VlpcError(f"-f gemm -r {prec}_r: rocBLAS has no integer gemm; use -f gemm_ex --a_type i8_r "
                            "--b_type i8_r --c_type i32_r --d_type i32_r --compute_type i32_r")
        note = ("-r f16_r: rocBLAS's hgemm computes in f16; vlpc accumulates the f16 products in f32 "
                "(v_dot2_f32_f16), with f32 alpha and beta" if prec == "f16" else "")
        return prec, prec, note
    a, b, c, compute = (x or prec for x in (a, b, c, compute))
    d = d or c  # (rocblas-bench defaults it to -r: vlpc writes D in place of C, so to C's type)
    if d != c:
        raise VlpcError(f"--d_type {d}_r differs from --c_type {c}_r: vlpc writes D in place of C (rocBLAS's "
                        "D = C), so their types must agree")
    if a != b or (a, c, compute) not in GEMM_EX_TYPES:
        raise VlpcError(f"gemm_ex with a_type {a}_r, b_type {b}_r, c_type {c}_r, compute_type {compute}_r: vlpc "
                        "runs f32 and f64 (one type), f16 x f16 -> f16 or f32 (compute f32) and i8 x i8 -> i32 "
                        "(compute i32)")
    ab, ct = GEMM_EX_TYPES[(a, c, compute)]
    note = ("compute_type f16_r: vlpc accumulates the f16 products in f32 (v_dot2_f32_f16), with f32 alpha and beta"
            if compute == "f16" else "")
    return ab, ct, note


def solution_line(kernel, p, target: str) -> str:
    """Which solution runs the problem ``p`` (as rocblas-bench prints its solution): the plan's
    kernels, the macro tile, K step, split-K and local split, and the computing kernel's VGPRs,
    SGPRs and occupancy (:meth:`vlpc.targets.Target.occupancy`)."""
    from vlpc.targets import get_target

    kernel = kernel.variant_for(p.m, p.n, p.k)  # a launch-time plan variant, when one runs (vlpc.launch_variants)
    steps = kernel.plan(p.m, p.n, p.k, p.batch or None)
    rows = kernel.rows_kernel(p.m)
    comp = rows or kernel
    li, md = comp.launch_info, comp.metadata
    occ = get_target(target).occupancy(comp.vgprs, int(md.get(".sgpr_count", comp.sgprs)),
                                       int(md.get(".group_segment_fixed_size", 0)), int(li["workgroup_size"]))
    split = ("split-K 1" if rows is not None or kernel.split_k == 1
             else f"split-K {kernel.split_k} ({kernel.split_mode})")
    return (f"solution: plan {' -> '.join(f'{s.kernel} {s.grid[0]}x{s.grid[1]}x{s.grid[2]}' for s in steps)} "
            f"(workgroups); macro tile {li['macro_m']}x{li['macro_n']}, K step {li['k_step']}, {split}, local split "
            f"{1 if rows is not None else kernel.local_split}; {comp.name}: {comp.vgprs} VGPRs, {comp.sgprs} SGPRs, "
            f"occupancy {occ}")


def rocblas_problem(args) -> RocblasProblem | None:
    """The problem of rocblas-bench's flags, or None when a file is given (flags checked)."""
    given = [name for name in ("function", "precision", "transpose_a", "transpose_b", "lda", "ldb", "ldc",
                               "a_type", "b_type", "c_type", "d_type", "compute_type", "ldd")
             if getattr(args, name, None) is not None]
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
    if args.ldd is not None and args.function != "gemm_ex":
        raise VlpcError("--ldd is gemm_ex's (D's leading dimension); -f gemm writes C")
    if args.ldd is not None and args.ldd != ldc:
        raise VlpcError(f"--ldd {args.ldd} differs from --ldc {ldc}: vlpc writes D in place of C (rocBLAS's D = C)")
    ab, ct, note = gemm_types(args.function, args.precision, args.a_type, args.b_type, args.c_type, args.d_type,
                              args.compute_type)
    alpha, beta = 1.0 if args.alpha is None else args.alpha, 0.0 if args.beta is None else args.beta
    if ct == "i32" and not all(float(x).is_integer() and -2**31 <= x < 2**31 for x in (alpha, beta)):
        raise VlpcError(f"--alpha {_num(alpha)} --beta {_num(beta)}: an i8 x i8 -> i32 gemm_ex (compute_type i32_r) "
                        "takes 32-bit integer alpha and beta")
    return RocblasProblem(ab, ta, tb, m, n, k, lda, ldb, ldc, alpha, beta, ct, args.function, note)


def _fill_random(host: dict, rng) -> None:
    """Standard normal floats (int8 in [-128, 128), i32 in [-2^15, 2^15)) over whole host buffers
    (matrices, padding and gaps alike: a timed launch reads only the matrices)."""
    for x in host.values():
        if np.issubdtype(x.dtype, np.integer):
            lim = 128 if x.itemsize == 1 else 2**15
            x[:] = rng.integers(-lim, lim, x.size)
        else:
            x[:] = rng.standard_normal(x.size, dtype=np.float64 if x.dtype == np.float64 else np.float32)


def bytes_to_move(host: dict, p, beta: float) -> int:
    """Bytes a launch must move through HBM at least (the streaming ceiling's numerator): A and B
    once (a stride-0 operand is one matrix for the batch), C written (and read when beta != 0)
    for every product, the W8A8 scales.  ``host``: the launch's buffers
    (:func:`vlpc.energy_report.host_buffers`), ``p``: its :class:`vlpc.verify.Problem`."""
    ab_bytes, c_bytes = host["A"].itemsize, host["C"].itemsize
    n_a = 1 if p.batch and p.stride_a == 0 else p.batches
    n_b = 1 if p.batch and p.stride_b == 0 else p.batches
    b_bytes = ab_bytes * p.k * p.n * n_b
    if host["B"].dtype == np.uint8:  # a quantized B (b_format): its bytes (host_buffers sizes them)
        b_bytes = host["B"].nbytes
    return (ab_bytes * p.k * p.m * n_a + b_bytes + c_bytes * p.m * p.n * (2 if beta != 0 else 1) * p.batches
            + (4 * (p.m + p.n) if "scale_row" in host else 0))


def measure_size(kernel, dev, co, p, *, emulated: bool, alpha: float, beta: float, iterations: int,
                 warmup: int, progress=None, seed: int = 0) -> BenchRow:
    """Run ``kernel``'s plan for the problem ``p`` (:class:`vlpc.verify.Problem`, e.g. from
    :func:`vlpc.api.resolve_launch`: a strided batch runs its ``p.batch`` products) on ``dev`` and return
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
        moved = bytes_to_move(host, p, beta)
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
