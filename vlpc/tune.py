"""``vlpc tune``: search a GEMM's plan options by the timing model, each candidate checked on the emulator.

For one problem (an MLIR file with one GEMM and its sizes), the tuner

1. enumerates candidates (:func:`search_space`): macro tile (64x64, 64x128, 64x256 and
   32-row variants for f32; 32-row and 16-row for f64), K step (8, 16), waves per SIMD
   (the VGPR budget), split-K S (1, 2, 4, ... with at least one K step per slice) and mode,
   local split L and, for NT f32 shapes it supports, the seed's schedule.  f16 and int8
   GEMMs and GEMVs (the dot kernels, passes/gemm_to_gcn_dot.py) search what those kernels
   accept: the f32 tiles (rows clipped to a static M, so a decode GEMV's M x 64 tile is one
   of them), K steps of 8/16 dwords of packed K, waves per SIMD, split S in workspace mode
   only, local split L up to 16 (the GEMV's), the schedules ``default``/``cover`` (one of
   them when B is stored K x N, which always takes ``cover``) and, for A stored K x M (TN,
   TT), ``a_transpose`` ``pre`` (copy A first) or ``in-kernel`` (SALU packing);
2. compiles each one (the kernel cache makes a repeated candidate free);
3. **models** its time with the timing model of the board (``--gpu mi60``, ``--clock``,
   ``--cus``; :mod:`vlpc.runtime.timing`, a timing-only launch of the whole plan at the
   real size): modeled microseconds, TFLOP/s and share of the board's peak;
4. **checks** it (:func:`check_candidate`): the plan runs at the real size on the strict
   emulator for a sample of output tiles (corners and the middle; every K slice and the
   reduce/scale kernels of a split plan; a copy pre-kernel of A or B runs whole), the
   sampled C tiles are compared with NumPy's float64 product within
   :func:`vlpc.verify.error_bound` (f16/int8: :func:`vlpc.dot_run.check`'s bound, int8 -> i32
   exact, with the IR's W8A8 scales and bias), and every other element of C must be left
   untouched bit for bit;
5. ranks the candidates that passed by modeled time and prints the winner's options as
   ``vlpc compile`` flags and as a pass pipeline string.

The problem is resolved as ``vlpc run`` resolves it (:func:`vlpc.run.resolve_launch`).  A
strided batched GEMM (3-D memrefs; ``--batch`` for a count given at launch) is tuned whole: no
split across workgroups (S = 1), the model times and the check runs every batch entry.

Candidates run in parallel worker processes (``--jobs``, default: the machine's cores).
A result is reproducible from its printed options: compiling with them gives the same
code object, and the model is deterministic.  All times are **modeled**, not measured
(the model's accuracy against the seed's measured MI60 table is in the README).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from vlpc.errors import VlpcError

#: Macro tiles the search tries (rows x columns), per element type: the seed's 64x64/64x128/
#: 64x256 (``shared/seeds/002`` section 2.1) and half-height variants (fewer VGPRs, so more
#: waves per SIMD).
MACRO_TILES = {"f32": ((32, 256), (32, 128), (32, 64), (64, 256), (64, 128), (16, 256)),
               "f64": ((16, 256), (16, 128), (16, 64), (32, 256), (32, 128), (8, 256))}
#: Element types of A and B compiled by the dot kernels (passes/gemm_to_gcn_dot.py): the f32
#: kernel's scheme on packed K, so the f32 tiles (32 rows by default, gemm-tile's SQC_DEFAULT_M).
DOT_TYPES = ("f16", "i8")
MACRO_TILES.update({t: MACRO_TILES["f32"] for t in DOT_TYPES})
#: A schedules of the sqc kernel the search tries (convert-gemm-to-gcn's ``schedule``).
SCHEDULES = ("default", "cover")
K_STEPS = (16, 8)
#: Largest S the search tries.
MAX_SPLIT = 32
LOCAL_SPLITS = (1, 2, 4)
#: Local splits of the dot kernels: up to the decode GEMV plan's 16 wavefront groups
#: (dialects/gemm.py ``gemv_plan``), within the workgroup's work-item limit.
DOT_LOCAL_SPLITS = (1, 2, 4, 8, 16)
#: How an f16/int8 A stored K x M (layouts TN, TT) reaches the dot kernel (vlpc.compile's
#: ``a_transpose``): copied to M x K first, or packed by SALU ops in the kernel.
A_TRANSPOSES = ("pre", "in-kernel")


@dataclass(frozen=True, order=True)
class Candidate:
    """One point of the option space (the :func:`vlpc.compile` options it stands for:
    :meth:`options`)."""

    macro_m: int
    macro_n: int
    k_step: int
    split_k: int = 1
    split_mode: str = "workspace"
    local_split: int = 1
    waves_per_simd: int | None = None
    schedule: str = "default"
    a_transpose: str = "auto"

    def options(self) -> dict:
        """Keyword options of :func:`vlpc.compile`."""
        opts = dict(macro_tile=(self.macro_m, self.macro_n), micro_tile=(self.macro_m, 1), k_step=self.k_step,
                    split_k=self.split_k, local_split=self.local_split, schedule=self.schedule)
        if self.split_k > 1:
            opts["split_mode"] = self.split_mode
        if self.waves_per_simd is not None:
            opts["waves_per_simd"] = self.waves_per_simd
        if self.a_transpose != "auto":
            opts["a_transpose"] = self.a_transpose
        return opts

    def flags(self) -> str:
        """The same options as ``vlpc compile`` flags."""
        f = [f"--macro-tile {self.macro_m}x{self.macro_n}", f"--micro-tile {self.macro_m}x1",
             f"--k-step {self.k_step}", f"--split-k {self.split_k}"]
        if self.split_k > 1:
            f.append(f"--split-mode {self.split_mode}")
        if self.local_split > 1:
            f.append(f"--local-split {self.local_split}")
        if self.waves_per_simd is not None:
            f.append(f"--waves-per-simd {self.waves_per_simd}")
        if self.schedule != "default":
            f.append(f"--schedule {self.schedule}")
        if self.a_transpose != "auto":
            f.append(f"--a-transpose {self.a_transpose}")
        return " ".join(f)

    def label(self) -> str:
        s = f"{self.macro_m}x{self.macro_n} k{self.k_step}"
        if self.split_k > 1:
            s += f" S{self.split_k}" + ("a" if self.split_mode == "atomic" else "")
        if self.local_split > 1:
            s += f" L{self.local_split}"
        if self.waves_per_simd is not None:
            s += f" w{self.waves_per_simd}"
        if self.schedule != "default":
            s += f" {self.schedule}"
        if self.a_transpose != "auto":
            s += f" A:{self.a_transpose}"
        return s


@dataclass
class Result:
    """What the tuner learnt about one candidate (times in microseconds, modeled)."""

    candidate: Candidate | dict
    modeled_us: float | None = None
    tflops: float | None = None
    peak_share: float | None = None
    vgprs: int | None = None
    sgprs: int | None = None
    waves_per_simd: int | None = None
    verified: bool | None = None
    max_ratio: float | None = None       #: largest |error| / bound over the sampled tiles
    error: str | None = None             #: why the candidate was dropped (compile error, check failure)
    plan: str = ""                       #: the plan the compiler made (tile, k-step, split), as text
    wgs_per_cu: int | None = None        #: resident workgroups per CU of the main kernel (occupancy)
    parts_us: list = field(default_factory=list)  #: modeled us of each kernel of the plan, in launch order
    exact: bool = False                  #: compared bit for bit (int8 -> i32), not within a bound
    breakdown: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and self.modeled_us is not None and self.verified is not False


@dataclass(frozen=True)
class Problem:
    """The GEMM being tuned: the MLIR text, its file name and the launch sizes (elements; None:
    static in the IR), and a strided batch's count when it is dynamic."""

    text: str
    filename: str
    m: int | None
    n: int | None
    k: int | None
    alpha: float = 1.0
    beta: float = 1.0
    #: the batch count of a strided batched GEMM whose count is given at launch (else None)
    batch: int | None = None


def _k_slices(k: int, pieces: int, k_step: int) -> int:
    from vlpc.passes.gemm_split_k import k_per_split

    return k_per_split(k, pieces, k_step)


def search_space(m: int, n: int, k: int, dtype: str = "f32", layout: str = "NT", *, dynamic_k: bool = False,
                 exhaustive: bool = False, modes: Sequence[str] = ("workspace",),
                 static_m: bool = True, batched: bool = False) -> list[Candidate]:
    """The candidates for an ``m x n x k`` GEMM of ``dtype`` (A and B: ``f32``, ``f64``, or
    ``f16``/``i8`` for the dot kernels) in ``layout``.

    Split S runs over powers of two from 1 while every slice keeps at least 4 K steps
    (``exhaustive``: every S up to :data:`MAX_SPLIT`); local split L over 1, 2, 4 with a
    power-of-two macro N; waves per SIMD: automatic (the most, up to 4, that the kernel's
    VGPRs allow) and, for the smallest tiles, 6; the A schedules ``default`` and ``cover``.
    The seed's schedule is added for NT f32 problems it supports (M % 64, N % 256, K % 8 == 0).
    A ``static_m`` M below a tile's rows gives a tile of exactly M rows (as gemm-tile does;
    duplicates are left out).  A strided batch (``batched``) is not split across workgroups
    (S = 1: gemm-split-k refuses S > 1 with a batch, whose entries already fill grid z) and
    has no seed schedule (its kernel computes one product).

    f16/i8 (passes/gemm_to_gcn_dot.py): the K step counts dwords of packed K (2 f16 / 4 int8
    values), so the slices are counted in those; split mode workspace only (atomic is not
    compiled for them); L up to 16 (:data:`DOT_LOCAL_SPLITS`, the decode GEMV's), with at
    most the target's work-items per workgroup (macro N x L); schedule ``default`` alone when
    B is stored K x N (those kernels always run ``cover``); for A stored K x M (TN, TT) each
    of :data:`A_TRANSPOSES`, ``in-kernel`` only for tiles of 2 (f16) / 4 (int8) to 32 rows, a
    power of two (other tiles copy A anyway).  Raises :class:`VlpcError` for another type."""
    from vlpc.dialects.gemm import DOT_PACK
    from vlpc.plan_model import k_units
    from vlpc.targets import GFX906

    if dtype not in MACRO_TILES:
        raise VlpcError(f"vlpc tune supports f32, f64, f16 and int8 (i8) GEMMs, got {dtype}")
    dot = dtype in DOT_TYPES
    splits = [1] if batched else range(1, MAX_SPLIT + 1) if exhaustive else [1 << i for i in range(6)]
    units = k_units(k, dtype)  # K in the units of the K step (dwords of packed K for f16/int8)
    locals_ = DOT_LOCAL_SPLITS if dot else LOCAL_SPLITS
    schedules = ("default",) if dot and layout[1] == "N" else SCHEDULES
    modes = ("workspace",) if dot else modes
    pack = DOT_PACK.get(dtype, 1)
    out: dict[Candidate, None] = {}  # insertion-ordered set
    for macro_m, macro_n in MACRO_TILES[dtype]:
        waves = (None, 6) if macro_m < MACRO_TILES[dtype][0][0] else (None,)
        rows = m if static_m and 0 < m < macro_m else macro_m
        transposes = ("auto",)
        if dot and layout[0] == "T":
            packs = pack <= rows <= 32 and rows & (rows - 1) == 0
            transposes = A_TRANSPOSES if packs else A_TRANSPOSES[:1]
        for k_step in K_STEPS:
            for s in splits:
                for local in locals_:
                    pieces = s * local
                    if pieces > 1 and (_k_slices(units, pieces, k_step) < 4 * k_step or units < pieces * k_step):
                        continue
                    if dynamic_k and pieces & (pieces - 1):
                        continue
                    if local > 1 and (macro_n & (macro_n - 1) or macro_n * local > GFX906.max_workitems_per_workgroup):
                        continue
                    for mode in (modes if s > 1 else ("workspace",)):
                        for w in waves:
                            for sch in schedules:
                                for at in transposes:
                                    out[Candidate(rows, macro_n, k_step, s, mode, local, w, sch, at)] = None
    if not batched and dtype == "f32" and layout == "NT" and m % 64 == 0 and n % 256 == 0 and k % 8 == 0:
        out[Candidate(64, 256, 8, schedule="seed")] = None
    return list(out)


def _make_buffers(kernel, p, rng, dtype):
    """A, B, C0 as exactly sized flat buffers of ``p`` (standard normal values)."""
    from vlpc.verify import geometries

    g = geometries(kernel.launch_info.get("layout", "NT"), p)
    return {name: rng.standard_normal(g[name].size).astype(dtype) for name in "ABC"}


def _launch(kernel, co, dev, p, host: dict, alpha: float, beta: float):
    from vlpc.verify import NP_DTYPE, kernel_arguments

    dtype = NP_DTYPE[str(kernel.launch_info.get("dtype", "f32"))]
    bufs = {name: dev.upload(host[name]) for name in "ABC"}
    try:
        args = kernel_arguments(kernel, bufs, p, alpha, beta)
        st = kernel.execute(dev, co, args, p.m, p.n, p.k, p.ldc, p.batch or None)
        out = dev.download(bufs["C"], dtype=dtype)
    finally:
        for b in bufs.values():
            dev.free(b)
    return st, out


def sample_tiles(kernel, p) -> list[tuple[int, int]]:
    """Output tiles ``(x, y)`` the check runs: the four corners and the middle of the grid (of
    every entry of a strided batch)."""
    cfg = kernel.launch(p.m, p.n, p.k, p.batch or None)
    gx, gy = cfg.grid[0], cfg.grid[1]
    pts = {(0, 0), (gx - 1, gy - 1), (gx - 1, 0), (0, gy - 1), (gx // 2, gy // 2)}
    return sorted(pts)


def check_candidate(mod, p, alpha: float, beta: float, seed: int = 0) -> tuple[bool, float, str | None]:
    """Run ``mod``'s plan at the real size on the strict emulator for the sampled tiles of
    :func:`sample_tiles` (every K slice: all workgroups ``(x, y, z)`` of those tiles, in every
    kernel of the plan; a copy pre-kernel of A or B: the workgroups that copy the rows of A or B
    those tiles read, :func:`_sample_workgroups`) and compare them with
    NumPy: f32/f64 within :func:`vlpc.verify.error_bound` (:func:`vlpc.verify.check`), f16 and
    int8 by :func:`vlpc.dot_run.check` (int8 -> i32 exact; W8A8 scales and a fused bias as
    :func:`vlpc.dot_run.run_dot` passes them), each tile as its own M x N block.  A strided
    batch (``p.batch``) runs and checks those tiles in every one of its products.

    Returns ``(ok, worst error/bound ratio, first problem or None)``.  Elements of C outside
    the sampled tiles must keep their initial bits (no workgroup writes outside its tile)."""
    import re

    import numpy as np

    from vlpc.runtime.emulator.device import EmulatorDevice
    from vlpc.verify import geometries, op_matrices

    kernel = mod.kernel() if len(mod.kernels) == 1 else _main_kernel(mod)
    run_kernel = kernel.rows_kernel(p.m) or kernel
    tm, tn = run_kernel.launch_info["macro_m"], run_kernel.launch_info["macro_n"]
    tiles = sample_tiles(kernel, p)
    cfg = kernel.launch(p.m, p.n, p.k, p.batch or None)
    zmax = max(cfg.grid[2], 1)  # the K slices of a split plan, or the entries of a batch
    dev = EmulatorDevice(strict=True, target=getattr(mod, "target_id", None) or None)  # the code object's chip
    _sample_workgroups(dev, kernel, p, tiles, (tm, tn), zmax)
    g = geometries(kernel.layout, p)
    if _is_dot(kernel):
        from vlpc.dot_run import run_dot

        got, _, _, _, host = run_dot(kernel, None, None, None, p, alpha, beta, dev, seed=seed, verify=False)
    else:
        host = _make_buffers(kernel, p, np.random.default_rng(seed), _np_type(kernel))
        _, out = _launch(kernel, mod.code_object, dev, p, host, alpha, beta)
        got = g["C"].matrices(out)
    op_a, op_b = op_matrices(kernel.layout, p, host["A"], host["B"])
    c0 = g["C"].matrices(host["C"])
    touched = np.zeros((p.batches, p.m, p.n), bool)
    worst = 0.0

    def at(z: int, i: int, j: int) -> str:  # an element of C as vlpc.verify names it
        return f"C[{z}][{i}, {j}]" if p.batch else f"C[{i}, {j}]"

    for z in range(p.batches):
        for x, y in tiles:
            rows = slice(y * tm, min((y + 1) * tm, p.m))
            cols = slice(x * tn, min((x + 1) * tn, p.n))
            touched[z, rows, cols] = True
            v = _tile_verdict(kernel, host, op_a[z, rows, :], op_b[z, :, cols], c0[z, rows, cols],
                              got[z, rows, cols], rows, cols, alpha, beta)
            worst = max(worst, v.worst)
            if not v.ok:
                where = re.match(r"C\[(\d+),(\d+)\]", v.first_bad)  # tile coordinates -> C's
                why = (f"{at(z, rows.start + int(where[1]), cols.start + int(where[2]))}{v.first_bad[where.end():]}"
                       if where else v.failure())
                return False, max(worst, v.worst), why
    uint = {2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
    changed = ~touched & (got.view(uint) != c0.view(uint))
    if changed.any():
        z, i, j = (int(v) for v in np.argwhere(changed)[0])
        return False, worst, f"{at(z, i, j)} outside the sampled tiles was written"
    return True, worst, None


def _is_dot(kernel) -> bool:
    """Whether ``kernel`` is an f16/int8 dot kernel (:mod:`vlpc.dot_run` runs and checks it)."""
    return str(kernel.launch_info.get("dtype", "f32")) in DOT_TYPES


def _np_type(kernel):
    from vlpc.verify import NP_DTYPE

    return NP_DTYPE[str(kernel.launch_info.get("dtype", "f32"))]


def _sample_workgroups(dev, kernel, p, tiles, tile: tuple[int, int], zmax: int) -> None:
    """Make ``dev`` run, of each launch of ``kernel``'s plan (problem ``p``), only the
    workgroups the sampled output ``tiles`` (``(x, y)`` of ``tile`` = rows x columns of C) need:
    theirs, for every K slice z < ``zmax``; of a copy pre-kernel of A (``_transpose``, a grid of
    A's ``tile_m`` rows x ``tile_k`` values of K) or B (``_copy_b``, B's rows = C's columns), the
    workgroups that copy the rows of A (B) those tiles read, over all of K (and every batch entry,
    grid z of a copy)."""
    main = {(x, y, z) for (x, y) in tiles for z in range(zmax)}
    only = {}
    for copy, used, size, extent in ((kernel.transpose_kernel(), {y for _, y in tiles}, p.m, tile[0]),
                                     (kernel.b_copy_kernel(), {x for x, _ in tiles}, p.n, tile[1])):
        if copy is not None:
            li = copy.launch_info
            rows = {r // li["tile_m"] for t in used for r in range(t * extent, min((t + 1) * extent, size))}
            only[copy.name] = {(i, j, z) for i in rows for j in range(-(-p.k // li["tile_k"]))
                               for z in range(p.batches)}
    inner = dev.launch

    def launch(code_object, name, *args, **kwargs):
        dev.only_workgroups = only.get(name, main)
        return inner(code_object, name, *args, **kwargs)

    dev.launch = launch


def _tile_verdict(kernel, host: dict, a, b, c0, got, rows: slice, cols: slice, alpha, beta):
    """The check (:class:`vlpc.verify.Verdict`) of one C tile as its own ``NN`` problem: ``a``
    the tile's rows of op(A) (tm x K), ``b`` its columns of op(B) (K x tn), ``c0`` and ``got``
    C before and after (tm x tn), ``host`` the launch's buffers (the scales and bias are cut to
    the tile's ``rows`` and ``cols``)."""
    import numpy as np

    from vlpc.verify import Problem

    tm, tn = c0.shape
    k = a.shape[1]
    tp = Problem(tm, tn, k, k, tn, tn)
    flat = [np.ascontiguousarray(x).reshape(-1) for x in (a, b, c0, got)]
    if not _is_dot(kernel):
        from vlpc.verify import check

        return check("NN", tp, str(kernel.launch_info.get("dtype", "f32")), *flat, alpha, beta)
    from vlpc.dot_run import check, types_of

    ab, ct, dequant = types_of(kernel)
    epi = tuple(x for x in str(kernel.launch_info.get("epilogue", "")).split(",") if x)
    bias = host.get("bias")
    if bias is not None:
        bias = bias[rows] if "bias_row" in epi else bias[cols]
    scales = (host["scale_row"][rows], host["scale_col"][cols]) if dequant else None
    return check("NN", tp, ab, ct, *flat, alpha, beta, kernel.split_k * kernel.local_split, scales, epi, bias)


def _main_kernel(mod):
    """The plan's main kernel (the others are its ``_reduce``/``_scale``/``_rows`` companions)."""
    names = list(mod.kernels)
    main = [n for n in names if not any(n.endswith(s) for s in ("_reduce", "_scale"))
            and "_rows" not in n]
    return mod.kernels[main[0] if main else names[0]]


def model_candidate(mod, p, board: str, clock_mhz: float | None, cus: int | None, alpha: float, beta: float):
    """Modeled time of ``mod``'s whole plan at the real size (a timing-only launch of each of
    its kernels in order: a copy pre-kernel, the GEMM, a reduce or scale kernel): the
    :class:`vlpc.runtime.timing.TimingReport` of the plan, whose time is the sum of the
    kernels' (``parts``), and the board.  Buffers of the kernel's element types (W8A8 scales
    and a bias included) as ``vlpc report --energy`` sizes them
    (:func:`vlpc.energy_report.host_buffers`)."""
    from vlpc.energy_report import host_buffers
    from vlpc.runtime.emulator.device import EmulatorDevice
    from vlpc.verify import launch_and_read

    kernel = mod.kernel() if len(mod.kernels) == 1 else _main_kernel(mod)
    dev = EmulatorDevice(gpu=board, clock_mhz=clock_mhz, cus=cus, timing_only=True)
    host, c_type, scalar, _, _ = host_buffers(kernel, p)
    _, st, _ = launch_and_read(kernel, dev, host, p, alpha, beta, c_type, scalar=scalar)
    return st.timing, dev.board


def resolve(kernel, m: int | None, n: int | None, k: int | None, batch: int | None = None):
    """The launch problem (:class:`vlpc.verify.Problem`) of ``kernel`` as ``vlpc run`` resolves
    it: :func:`vlpc.run.resolve_launch` without operand arrays (static sizes from the IR, dynamic
    ones from ``m``, ``n``, ``k``; leading dimensions and a strided batch's strides from the IR,
    else rows x leading dimension; a dynamic batch count from ``batch``; the dot kernels' leading
    dimensions given at launch rounded up to whole dwords of K).  Raises :class:`VlpcError`."""
    from vlpc.run import resolve_launch

    return resolve_launch(kernel, m, n, k, batch)


def peak_ops(board, dtype: str) -> float:
    """The board's peak operations per second for A/B of ``dtype``: the f32 FMA peak, f64's
    divided by the f64 rate, f16/int8 the dot instructions' (``v_dot2_f32_f16``: 2 products per
    lane, ``v_dot4_i32_i8``: 4, each counted as 2 operations: the f32 peak x 2 or x 4)."""
    from vlpc.dialects.gemm import DOT_PACK

    if dtype == "f64":
        return board.peak_flops_f32 / board.target.f64_rate_divisor
    return board.peak_flops_f32 * DOT_PACK.get(dtype, 1)


def _type_label(dtype: str) -> str:
    """``"f16 dot "`` / ``"int8 dot "`` before "peak" for the dot kernels, else nothing."""
    return {"f16": "f16 dot ", "i8": "int8 dot "}.get(dtype, "")


def unit(dtype: str) -> str:
    """TOP/s for int8 products (integer operations), else TFLOP/s."""
    return "TOP/s" if dtype == "i8" else "TFLOP/s"


def evaluate(problem: Problem, cand: Candidate | dict, target: str, board: str, clock_mhz: float | None,
             cus: int | None, check: bool = True) -> Result:
    """Compile, model and (``check``) verify one candidate (or a dict of :func:`vlpc.compile`
    options, e.g. ``{}`` for vlpc's default plan); a failure is recorded in the result's
    ``error``, never raised."""
    import vlpc

    res = Result(cand)
    try:
        from vlpc.targets import get_board

        b = get_board(board)
        opts = cand.options() if isinstance(cand, Candidate) else dict(cand)
        mod = vlpc.compile(problem.text, target, filename=problem.filename, **{"cus": cus or b.compute_units, **opts})
        kernel = mod.kernel() if len(mod.kernels) == 1 else _main_kernel(mod)
        p = resolve(kernel, problem.m, problem.n, problem.k, problem.batch)
        rk = kernel.rows_kernel(p.m) or kernel
        res.vgprs, res.sgprs = rk.vgprs, rk.sgprs
        rli = rk.launch_info
        res.plan = (f"{rli['macro_m']}x{rli['macro_n']} k{rli['k_step']} S{li_get(kernel, 'split_k', 1)}"
                    f"{'a' if kernel.launch_info.get('split_mode') == 'atomic' else ''}"
                    f" L{li_get(kernel, 'local_split', 1)}"
                    + (f" {opts['schedule']}" if opts.get("schedule", "default") != "default" else "")
                    + (" A copied" if kernel.transpose_kernel() is not None else ""))
        alpha, beta = _scalars(kernel, problem)
        tm, brd = model_candidate(mod, p, board, clock_mhz, cus, alpha, beta)
        flops = 2.0 * p.m * p.n * p.k * p.batches  # every product of a strided batch
        res.modeled_us = tm.time_us
        res.tflops = tm.tflops(flops)
        res.peak_share = res.tflops * 1e12 / peak_ops(brd, str(kernel.launch_info.get("dtype", "f32")))
        res.breakdown = {k: v / tm.time_us for k, v in tm.breakdown_us.items()}
        res.wgs_per_cu = tm.wgs_per_cu
        res.parts_us = [x.time_us for x in (tm.parts or [tm])]
        if check:
            res.verified, res.max_ratio, why = check_candidate(mod, p, alpha, beta)
            res.exact = _is_dot(kernel) and str(kernel.launch_info.get("c_dtype", "f32")) == "i32"
            if not res.verified:
                res.error = f"wrong result: {why}"
    except VlpcError as e:
        res.error = str(e).splitlines()[0]
    except Exception as e:  # an emulator checker or a compiler bug: the candidate is dropped, the search goes on
        res.error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return res


def li_get(kernel, key: str, default):
    """``kernel.launch_info[key]`` or ``default`` when absent or 0."""
    return kernel.launch_info.get(key) or default


def _scalars(kernel, problem: Problem) -> tuple[float, float]:
    """alpha and beta of the launch: the IR's constants when it has them, else the problem's."""
    li = kernel.launch_info
    alpha, beta = float(li.get("alpha", problem.alpha)), float(li.get("beta", problem.beta))
    if _is_dot(kernel):  # int8 -> i32 takes i32 alpha and beta (vlpc.dot_run.scalar_type)
        import numpy as np

        from vlpc.dot_run import scalar_type

        if scalar_type(kernel) is np.int32:
            return int(alpha), int(beta)
    return alpha, beta


def _evaluate_star(args):
    return evaluate(*args)


def tune(problem: Problem, candidates: Sequence[Candidate], *, target: str = "gfx906", board: str = "mi60",
         clock_mhz: float | None = None, cus: int | None = None, jobs: int | None = None, check: bool = True,
         progress: Callable[[Result], None] | None = None) -> list[Result]:
    """Evaluate ``candidates`` (in ``jobs`` worker processes; default: the CPU count) and return
    the results, fastest modeled time first; failed candidates last."""
    jobs = jobs or os.cpu_count() or 1
    work = [(problem, c, target, board, clock_mhz, cus, check) for c in candidates]
    results: list[Result] = []
    if jobs <= 1 or len(work) <= 1:
        for w in work:
            r = _evaluate_star(w)
            results.append(r)
            if progress:
                progress(r)
    else:
        import multiprocessing as mp

        env = os.environ.get("VLPC_EMU_PROCS")
        os.environ["VLPC_EMU_PROCS"] = "1"  # the pool is the parallelism; no nested emulator workers
        try:
            with mp.get_context("fork").Pool(jobs) as pool:
                for r in pool.imap_unordered(_evaluate_star, work):
                    results.append(r)
                    if progress:
                        progress(r)
        finally:
            if env is None:
                os.environ.pop("VLPC_EMU_PROCS", None)
            else:
                os.environ["VLPC_EMU_PROCS"] = env
    return rank(results)


def rank(results: Sequence[Result]) -> list[Result]:
    """Passing candidates by modeled time (ties: the smaller candidate), then the failures."""
    good = sorted((r for r in results if r.ok), key=lambda r: (r.modeled_us, _order(r.candidate)))
    bad = sorted((r for r in results if not r.ok), key=lambda r: _order(r.candidate))
    return good + bad


def _order(cand: Candidate | dict) -> tuple:
    """A sort key of a candidate: its fields in order, automatic waves per SIMD (None) first."""
    import dataclasses

    if not isinstance(cand, Candidate):
        return ()
    return tuple(-1 if v is None else v for v in dataclasses.astuple(cand))


def table(results: Sequence[Result], limit: int | None = None, unit: str = "TFLOP/s") -> str:
    """The ranked results as a Markdown table (modeled figures; ``unit``: :func:`unit` of the
    element type, TOP/s for int8)."""
    lines = [f"| rank | candidate | modeled us | modeled {unit} | % of peak | VGPRs | check |",
             "|---:|---|---:|---:|---:|---:|---|"]
    shown = [r for r in results if r.ok][:limit] if limit else [r for r in results if r.ok]
    for i, r in enumerate(shown, 1):
        chk = ("not run" if r.verified is None else "ok (exact)" if r.exact
               else f"ok ({r.max_ratio:.2g} of bound)")
        lines.append(f"| {i} | {r.candidate.label()} | {r.modeled_us:,.1f} | {r.tflops:.3f} | "
                     f"{r.peak_share * 100:.1f} | {r.vgprs if r.vgprs is not None else '?'} | {chk} |")
    failed = [r for r in results if not r.ok]
    for r in failed:
        lines.append(f"| - | {r.candidate.label()} | | | | | dropped: {r.error} |")
    return "\n".join(lines)


def pipeline_string(cand: Candidate, target: str, cus: int) -> str:
    """The winner as a pass-pipeline string ``vlpc opt -p`` / ``xdsl-opt -p`` accepts."""
    from vlpc.pipeline import pipeline, pipeline_spec

    return pipeline_spec(pipeline(target, cus=cus, **cand.options()))


def add_parser(sub) -> None:
    """Register ``vlpc tune`` on the CLI's subparsers."""
    t = sub.add_parser("tune", help="search macro tile, k-step, waves per SIMD and split-K options by the timing "
                                    "model (modeled times), each candidate checked on the emulator")
    t.add_argument("file", help="input MLIR file with one GEMM (static sizes, or '?' ones given by --m/--n/--k)")
    from vlpc.cli_support import add_size_options, positive
    add_size_options(t)  # -m/--m, -n/--n, -k/--k, as run, bench and report
    t.add_argument("--batch", type=int, default=None,
                   help="the batch count of a strided batched GEMM, when dynamic (a batch is tuned whole, with S = 1)")
    t.add_argument("--target", default=None, help="target id (default: the --gpu board's processor: gfx900 for "
                                                  "mi25, else gfx906)")
    t.add_argument("--gpu", default=None, choices=("mi60", "mi50", "mi25"), help="board the timing model predicts "
                   "(default: the target's: mi60 for gfx906, mi25 for gfx900)")
    t.add_argument("--clock", type=float, default=None, metavar="MHZ", help="engine clock (default: the board's)")
    t.add_argument("--memory-clock", type=float, default=None, metavar="MHZ",
                   help="HBM2 clock (default: the board's: MI60/MI50 1000, MI25 945)")
    t.add_argument("--cus", type=int, default=None, help="compute units (default: the board's)")
    t.add_argument("-j", "--jobs", type=positive, default=None,
                   help="candidates evaluated in parallel (default: the machine's CPU count)")
    t.add_argument("--exhaustive", action="store_true", help="every split S from 1 to 32, not only powers of two")
    t.add_argument("--atomic", action="store_true", help="also try split-K mode atomic (not bit-reproducible)")
    t.add_argument("--max-candidates", type=positive, default=None, metavar="N",
                   help="evaluate only the first N candidates of the search space (in its order)")
    t.add_argument("--no-check", dest="check", action="store_false",
                   help="skip the emulator check of each candidate (the ranking is then unverified)")
    t.add_argument("--top", type=positive, default=20, help="rows of the ranked table shown (default: %(default)s)")
    t.add_argument("-o", "--output", metavar="TUNED.json",
                   help="write the winner (options, flags, pipeline, modeled figures) as JSON; "
                        "`vlpc compile FILE --options TUNED.json` compiles it")
    t.add_argument("--csv", metavar="FILE.csv", help="also write every candidate's figures as CSV")
    t.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def board_and_target(target: str | None, gpu: str | None) -> tuple[str, str]:
    """``(target id, board)`` of ``vlpc tune``: a missing one follows the other (``--gpu mi25``
    implies ``--target gfx900``; ``--target gfx900`` implies ``--gpu mi25``; neither: gfx906 on
    mi60).  Raises :class:`VlpcError` (one line naming the fix) for an unknown target or a
    board of another processor."""
    from vlpc.targets import TargetError, TargetId, board_for, get_board

    try:
        if gpu is None:
            target = target or "gfx906"
            return target, board_for(TargetId.parse(target).target)
        proc = get_board(gpu).target.name
        if target is None:
            return proc, gpu
        tid = TargetId.parse(target)
    except TargetError as e:
        raise VlpcError(f"vlpc tune: {e}") from None
    if tid.target.name != proc:
        raise VlpcError(f"vlpc tune: --gpu {gpu} is a {proc} board but --target is {target}: use --target {proc} "
                        f"(or leave --target out), or a {tid.target.name} board (--gpu {board_for(tid.target)})")
    return target, gpu


def cmd_tune(args) -> int:
    import json

    import vlpc
    from vlpc.cli_support import check_not_input, check_writable, read_input, write_atomic
    from vlpc.targets import get_board

    for path, option, what in ((args.output, "-o", "tuned options"), (args.csv, "--csv", "CSV")):
        if path:  # before the search, which takes minutes
            check_not_input(path, args.file, option)
            check_writable(path, what)
    text = read_input(args.file)
    args.target, args.gpu = board_and_target(args.target, args.gpu)
    board = get_board(args.gpu, memory_clock_mhz=getattr(args, "memory_clock", None))
    cus = args.cus or board.compute_units
    base = vlpc.compile(text, args.target, filename=args.file, cus=cus, split_k=1)
    from vlpc.cli_support import single_kernel
    kernel = single_kernel(base, "tune")  # (not the first of several functions, silently)
    li = kernel.launch_info
    from vlpc.cli_support import check_size_options

    check_size_options(args)
    p = resolve(kernel, args.m, args.n, args.k, args.batch)
    from vlpc.verify import check_before_allocating
    check_before_allocating(kernel, p)  # sizes and 32-bit offsets before any candidate's buffers
    dtype, layout = str(li.get("dtype", "f32")), li.get("layout", "NT")
    if dtype not in MACRO_TILES:
        raise VlpcError(f"vlpc tune supports f32, f64, f16 and int8 (i8) GEMMs, got {dtype}")
    cands = search_space(p.m, p.n, p.k, dtype, layout, dynamic_k=li["static_k"] < 0, exhaustive=args.exhaustive,
                         modes=("workspace", "atomic") if args.atomic else ("workspace",),
                         static_m=li.get("static_m", -1) >= 0, batched=li.get("batch", 0) != 0)
    if args.atomic and dtype in DOT_TYPES:
        print(f"vlpc tune: --atomic ignored: the dot kernels ({dtype}) split K in workspace mode only",
              file=sys.stderr)
    if args.max_candidates:
        cands = cands[:args.max_candidates]
    problem = Problem(text, args.file, args.m, args.n, args.k, batch=args.batch)
    clock = args.clock or board.engine_clock_mhz
    u = unit(dtype)
    print(f"vlpc tune: {p.m}x{p.n}x{p.k}{f' batch {p.batch}' if p.batch else ''} {dtype} {layout}, "
          f"{len(cands)} candidates, times MODELED by the timing "
          f"model of {board.name} ({cus} CUs, {clock:.0f} MHz), not measured; each candidate "
          f"{'checked on the strict emulator (sampled tiles)' if args.check else 'NOT checked (--no-check)'}",
          file=sys.stderr)
    bar = None
    if not args.quiet:
        from tqdm import tqdm

        bar = tqdm(total=len(cands), desc="candidates", unit="cand", file=sys.stderr)

    def step(r: Result) -> None:
        if bar is not None:
            bar.update(1)
            best = min((x.modeled_us for x in done if x.ok), default=None)
            if best is not None:
                bar.set_postfix_str(f"best {best:,.1f} us (modeled)")

    done: list[Result] = []

    def progress(r: Result) -> None:
        done.append(r)
        step(r)

    results = tune(problem, cands, target=args.target, board=board if args.memory_clock else args.gpu,
                   clock_mhz=args.clock, cus=cus,
                   jobs=args.jobs, check=args.check, progress=progress)
    if bar is not None:
        bar.close()
    print(table(results, args.top, u))
    good = [r for r in results if r.ok]
    if args.csv:
        import csv
        import io

        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["candidate", "flags", "modeled_us", "modeled_tflops", "peak_share", "vgprs", "sgprs",
                    "verified", "error"])
        for r in results:
            w.writerow([r.candidate.label(), r.candidate.flags(), r.modeled_us, r.tflops, r.peak_share, r.vgprs,
                        r.sgprs, r.verified, r.error or ""])
        write_atomic(args.csv, buf.getvalue())
    if not good:
        print("vlpc tune: no candidate passed (see the dropped rows above)", file=sys.stderr)
        return 1
    win = good[0]
    pipe = pipeline_string(win.candidate, args.target, cus)
    print(f"\nbest (modeled {win.modeled_us:,.1f} us, {win.tflops:.3f} {u}, {win.peak_share * 100:.1f} % of "
          f"{board.name} {_type_label(dtype)}peak): {win.candidate.label()}")
    print(f"  vlpc compile {args.file} --cus {cus} {win.candidate.flags()}")
    print(f"  pipeline: {pipe}")
    if args.output:
        write_atomic(args.output, json.dumps({
            "problem": {"file": args.file, "m": p.m, "n": p.n, "k": p.k, "batch": p.batch, "dtype": dtype,
                        "layout": layout},
            "board": board.name, "cus": cus, "clock_mhz": clock,
            "options": {**win.candidate.options(), "cus": cus}, "flags": f"--cus {cus} " + win.candidate.flags(),
            "pipeline": pipe, "modeled_us": win.modeled_us, "modeled_tflops": win.tflops, "unit": u,
            "modeled_parts_us": win.parts_us,
            "note": "times are modeled by vlpc's timing model, not measured"}, indent=1) + "\n")
        print(f"  written to {args.output} (vlpc compile {args.file} --options {args.output})")
    return 0


__all__ = ["Candidate", "Problem", "Result", "check_candidate", "evaluate", "model_candidate", "peak_ops", "pipeline_string", "resolve",
           "rank", "sample_tiles", "search_space", "table", "add_parser", "cmd_tune", "tune"]
