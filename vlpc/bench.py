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


def _precision(text: str) -> str:
    """A rocblas-bench type name (``f16_r``, ``h`` ...) -> vlpc's element type."""
    t = text.lower()
    if t in PRECISIONS:
        return PRECISIONS[t]
    known = "known to rocblas-bench, not to vlpc; " if t in OTHER_PRECISIONS else ""
    raise argparse.ArgumentTypeError(f"'{text}': {known}vlpc runs f32_r (s), f64_r (d), f16_r (h), i8_r and i32_r")


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


def bytes_to_move(host: dict, p, beta: float) -> int:
    """Bytes a launch must move through HBM at least (the streaming ceiling's numerator): A and B
    once (a stride-0 operand is one matrix for the batch), C written (and read when beta != 0)
    for every product, the W8A8 scales.  ``host``: the launch's buffers
    (:func:`vlpc.energy_report.host_buffers`), ``p``: its :class:`vlpc.verify.Problem`."""
    ab_bytes, c_bytes = host["A"].itemsize, host["C"].itemsize
    n_a = 1 if p.batch and p.stride_a == 0 else p.batches
    n_b = 1 if p.batch and p.stride_b == 0 else p.batches
    return (ab_bytes * p.k * (p.m * n_a + p.n * n_b) + c_bytes * p.m * p.n * (2 if beta != 0 else 1) * p.batches
            + (4 * (p.m + p.n) if "scale_row" in host else 0))


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
