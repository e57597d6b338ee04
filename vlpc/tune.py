"""``vlpc tune``: search a GEMM's plan options by the timing model, each candidate checked on the emulator.

For one problem (an MLIR file with one GEMM and its sizes), the tuner

1. enumerates candidates (:func:`search_space`): macro tile (64x64, 64x128, 64x256 and
   32-row variants for f32; 32-row and 16-row for f64), K step (8, 16), waves per SIMD
   (the VGPR budget), split-K S (1, 2, 4, ... with at least one K step per slice) and mode,
   local split L and, for NT f32 shapes it supports, the seed's schedule.  f16 and int8
   GEMMs and GEMVs (the dot kernels, passes/isel/dot.py) search what those kernels
   accept: the f32 tiles (rows clipped to a static M, so a decode GEMV's M x 64 tile is one
   of them), K steps of 8/16 dwords of packed K, waves per SIMD, split S in workspace mode
   only, local split L up to 16 (the GEMV's), the schedules ``default``/``cover`` (one of
   them when B is stored K x N, which always takes ``cover``) and, for A stored K x M (TN,
   TT), ``a_transpose`` ``pre`` (copy A first) or ``in-kernel`` (SALU packing);
2. orders them by the plan model's estimate (:func:`estimate_us`), adds the automatic plan
   (vlpc's own choice) as a candidate, and compiles and models them in that order until none
   left can win (:func:`search`; the kernel cache makes a repeated candidate free);
3. **models** each one's time with the timing model of the board (``--gpu``, default the target's board, ``--clock``,
   ``--cus``; :mod:`vlpc.runtime.timing`, a timing-only launch of the whole plan at the
   real size): modeled microseconds, TFLOP/s and share of the board's peak;
4. **checks** the fastest (the finalists; :func:`check_candidate`): the plan runs at the real size on the strict
   emulator for a sample of output tiles (corners and the middle; every K slice and the
   reduce/scale kernels of a split plan; a copy pre-kernel of A or B runs whole), the
   sampled C tiles are compared with NumPy's float64 product within
   :func:`vlpc.verify.error_bound` (f16/int8: :func:`vlpc.verify.dot_error_bound`, int8 -> i32
   exact, with the IR's W8A8 scales and bias), and every other element of C must be left
   untouched bit for bit;
5. ranks the candidates that passed by modeled time, prints the winner's options as
   ``vlpc compile`` flags and as a pass pipeline string, and records it in the tuning database
   (:mod:`vlpc.tunedb`) that :func:`vlpc.compile` consults.

``--shapes`` and ``--model`` tune many problems (:mod:`vlpc.tune_shapes`); ``--ray`` runs the
candidates on a Ray cluster and ``--budget``/Ctrl-C stop a run keeping its results
(:mod:`vlpc.tune_run`); docs/tuning.md is the manual.

The problem is resolved as ``vlpc run`` resolves it (:func:`vlpc.api.resolve_launch`).  A
strided batched GEMM (3-D memrefs; ``--batch`` for a count given at launch) is tuned whole: no
split across workgroups (S = 1), the model times and the check runs every batch entry.

Candidates run in parallel worker processes (``--jobs``, default: the machine's cores) or Ray tasks.
A result is reproducible from its printed options: compiling with them gives the same
code object, and the model is deterministic.  All times are **modeled**, not measured
(the model's accuracy against the seed's measured MI60 table is in docs/timing_model.md and docs/plans.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from vlpc.errors import VlpcError

#: Macro tiles the search tries (rows x columns), per element type: the seed's 64x64/64x128/
#: 64x256 (*An Alternative SGEMM on VEGA* section 2.1, docs/references.md) and half-height variants
#: (fewer VGPRs, so more waves per SIMD).
MACRO_TILES = {"f32": ((32, 256), (32, 128), (32, 64), (64, 256), (64, 128), (16, 256)),
               "f64": ((16, 256), (16, 128), (16, 64), (32, 256), (32, 128), (8, 256))}
#: Element types of A and B compiled by the dot kernels (passes/isel/dot.py): the f32
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
    #: bytes that must move over the modeled time, as a share of the board's HBM bandwidth
    hbm_share: float | None = None
    #: the roofline's binding ceiling is HBM bandwidth (a decode GEMV), not the compute peak
    memory_bound: bool = False
    #: the plan model's (surrogate's) estimate, microseconds: the search order
    estimate_us: float | None = None
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

    f16/i8 (passes/isel/dot.py): the K step counts dwords of packed K (2 f16 / 4 int8
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
    int8 by :func:`vlpc.verify.check` (int8 -> i32 exact; W8A8 scales and a fused bias as
    :func:`vlpc.api.launch_and_check` passes them), each tile as its own M x N block.  A strided
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
        from vlpc.api import launch_and_check

        got, _, _, _, host = launch_and_check(kernel, None, None, None, p, alpha, beta, dev, seed=seed, verify=False)
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
    """Whether ``kernel`` is an f16/int8 dot kernel (:mod:`vlpc.verify` checks it)."""
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
    from vlpc.verify import check, types_of

    ab, ct, dequant = types_of(kernel)
    epi = tuple(x for x in str(kernel.launch_info.get("epilogue", "")).split(",") if x)
    bias = host.get("bias")
    if bias is not None:
        bias = bias[rows] if "bias_row" in epi else bias[cols]
    scales = (host["scale_row"][rows], host["scale_col"][cols]) if dequant else None
    return check("NN", tp, ab, *flat, alpha, beta, epi, bias, c_type=ct, pieces=kernel.split_k * kernel.local_split,
                 scales=scales)


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
    kernels' (``parts``), the board and the bytes the launch must move through HBM
    (:func:`vlpc.bench.bytes_to_move`).  Buffers of the kernel's element types (W8A8 scales
    and a bias included) as ``vlpc report --energy`` sizes them
    (:func:`vlpc.energy_report.host_buffers`)."""
    from vlpc.energy_report import host_buffers
    from vlpc.runtime.emulator.device import EmulatorDevice
    from vlpc.verify import launch_and_read

    kernel = mod.kernel() if len(mod.kernels) == 1 else _main_kernel(mod)
    dev = EmulatorDevice(gpu=board, clock_mhz=clock_mhz, cus=cus, timing_only=True)
    host, c_type, scalar, _, _ = host_buffers(kernel, p)
    _, st, _ = launch_and_read(kernel, dev, host, p, alpha, beta, c_type, scalar=scalar)
    from vlpc.bench import bytes_to_move

    return st.timing, dev.board, bytes_to_move(host, p, beta)


def resolve(kernel, m: int | None, n: int | None, k: int | None, batch: int | None = None):
    """The launch problem (:class:`vlpc.verify.Problem`) of ``kernel`` as ``vlpc run`` resolves
    it: :func:`vlpc.api.resolve_launch` without operand arrays (static sizes from the IR, dynamic
    ones from ``m``, ``n``, ``k``; leading dimensions and a strided batch's strides from the IR,
    else rows x leading dimension; a dynamic batch count from ``batch``; the dot kernels' leading
    dimensions given at launch rounded up to whole dwords of K).  Raises :class:`VlpcError`."""
    from vlpc.api import resolve_launch

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
             cus: int | None, check: bool = True, model: bool = True) -> Result:
    """Compile, (``model``) model and (``check``) verify one candidate (or a dict of
    :func:`vlpc.compile` options, e.g. ``{}`` for vlpc's default plan); a failure is recorded in
    the result's ``error``, never raised."""
    import vlpc

    res = Result(cand)
    try:
        from vlpc.targets import get_board

        b = get_board(board)
        opts = cand.options() if isinstance(cand, Candidate) else dict(cand)
        mod = vlpc.compile(problem.text, target, filename=problem.filename, tuned=False,
                           **{"cus": cus or b.compute_units, **opts})
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
        if not model:
            if check:
                _check_into(res, mod, kernel, p, alpha, beta)
            return res
        tm, brd, moved = model_candidate(mod, p, board, clock_mhz, cus, alpha, beta)
        flops = 2.0 * p.m * p.n * p.k * p.batches  # every product of a strided batch
        res.modeled_us = tm.time_us
        res.tflops = tm.tflops(flops)
        peak = peak_ops(brd, str(kernel.launch_info.get("dtype", "f32")))
        res.peak_share = res.tflops * 1e12 / peak
        res.hbm_share = moved / (tm.time_us * 1e-6) / brd.hbm_bytes_per_second
        # the roofline's binding ceiling: HBM when streaming the bytes takes longer than the FMAs at peak
        res.memory_bound = moved / brd.hbm_bytes_per_second > flops / peak
        res.breakdown = {k: v / tm.time_us for k, v in tm.breakdown_us.items()}
        res.wgs_per_cu = tm.wgs_per_cu
        res.parts_us = [x.time_us for x in (tm.parts or [tm])]
        if check:
            _check_into(res, mod, kernel, p, alpha, beta)
    except VlpcError as e:
        res.error = str(e).splitlines()[0]
    except Exception as e:  # an emulator checker or a compiler bug: the candidate is dropped, the search goes on
        res.error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return res


def _check_into(res: Result, mod, kernel, p, alpha, beta) -> None:
    """Run :func:`check_candidate` and record its verdict in ``res``."""
    res.verified, res.max_ratio, why = check_candidate(mod, p, alpha, beta)
    res.exact = _is_dot(kernel) and str(kernel.launch_info.get("c_dtype", "f32")) == "i32"
    if not res.verified:
        res.error = f"wrong result: {why}"


def li_get(kernel, key: str, default):
    """``kernel.launch_info[key]`` or ``default`` when absent or 0."""
    return kernel.launch_info.get(key) or default


def _scalars(kernel, problem: Problem) -> tuple[float, float]:
    """alpha and beta of the launch: the IR's constants when it has them, else the problem's."""
    li = kernel.launch_info
    alpha, beta = float(li.get("alpha", problem.alpha)), float(li.get("beta", problem.beta))
    if _is_dot(kernel):  # int8 -> i32 takes i32 alpha and beta (vlpc.verify.scalar_type)
        import numpy as np

        from vlpc.verify import scalar_type

        if scalar_type(kernel) is np.int32:
            return int(alpha), int(beta)
    return alpha, beta


#: The automatic plan as a candidate: vlpc.compile's options left to the compiler.
AUTO: dict = {}


def is_auto(cand) -> bool:
    return isinstance(cand, dict) and not cand


def label(cand, plan: str = "") -> str:
    """A candidate's short name; the automatic plan's names the plan it made."""
    if isinstance(cand, Candidate):
        return cand.label()
    return f"automatic plan ({plan})" if plan and is_auto(cand) else "automatic plan" if is_auto(cand) else str(cand)


def flags(cand) -> str:
    """A candidate's ``vlpc compile`` flags (none for the automatic plan)."""
    return cand.flags() if isinstance(cand, Candidate) else ""


def candidate_key(cand) -> str:
    """A candidate as JSON text: its fields, or ``"auto"`` for the automatic plan."""
    import dataclasses
    import json

    if isinstance(cand, Candidate):
        return json.dumps(dataclasses.asdict(cand), sort_keys=True)
    return '"auto"' if is_auto(cand) else json.dumps(cand, sort_keys=True)


def result_dict(r: Result) -> dict:
    """``r`` as JSON-able data (the candidate as :func:`candidate_key`)."""
    import dataclasses

    d = {f.name: getattr(r, f.name) for f in dataclasses.fields(r) if f.name != "candidate"}
    return d


def result_of(cand, d: dict) -> Result:
    import dataclasses

    names = {f.name for f in dataclasses.fields(Result)}
    return Result(cand, **{k: v for k, v in d.items() if k in names and k != "candidate"})


def tune(problem: Problem, candidates: Sequence[Candidate], *, target: str = "gfx906", board: str | None = None,
         clock_mhz: float | None = None, cus: int | None = None, jobs: int | None = None, check: bool = True,
         progress: Callable[[Result], None] | None = None) -> list[Result]:
    """Evaluate every one of ``candidates`` (in ``jobs`` worker processes; default: the CPU count;
    no pruning: :func:`search` prunes) and return the results, fastest modeled time first;
    failed candidates last.  ``board``: the board modeled (default: the target's,
    :data:`vlpc.targets.DEFAULT_BOARDS`)."""
    from vlpc.targets import TargetId, board_for
    from vlpc.tune_run import Runner

    board = board or board_for(TargetId.parse(target).target)

    results: list[Result] = []

    def got(_i, r):
        results.append(r)
        if progress:
            progress(r)

    with Runner(jobs) as runner:
        runner.map(evaluate, [(problem, c, target, board, clock_mhz, cus, check) for c in candidates], got)
    return rank(results)


def estimate_us(cand, m: int, n: int, k: int, dtype: str, c_dtype: str, board, batch: int = 0) -> float:
    """The plan model's (:func:`vlpc.plan_model.estimate`) time of ``cand`` in microseconds, the
    search's order (waves per SIMD, schedules and A copies share their plan's estimate; the
    seed's schedule is its 64x256 tile with K step 8).  ``inf`` when the model has no estimate."""
    from vlpc.dialects.gemm import ELEMENT_BYTES
    from vlpc.plan_model import estimate

    if not isinstance(cand, Candidate):
        return float("inf")
    try:
        c = estimate(m, n, k, dtype, ELEMENT_BYTES[dtype], (cand.macro_m, cand.macro_n), cand.k_step, cand.split_k,
                     cand.local_split, cand.split_mode, board, batch=batch, c_esize=ELEMENT_BYTES.get(c_dtype, 0))
    except (KeyError, ValueError, ZeroDivisionError):
        return float("inf")
    return c.seconds * 1e6


@dataclass
class Outcome:
    """What :func:`search` found for one problem (times modeled, in microseconds)."""

    results: list[Result]                 #: ranked (:func:`rank`)
    default: Result | None                #: the automatic plan's
    winner: Result | None                 #: the fastest that passed the check (or unchecked, check off)
    space: int = 0                        #: candidates in the search space
    modeled: int = 0                      #: candidates modeled (resumed ones included)
    resumed: int = 0                      #: taken from the database (an earlier run)
    checked: int = 0                      #: finalists run on the emulator
    stopped: str | None = None            #: "budget" or "interrupted"
    seconds: float = 0.0                  #: wall time
    pruned: str = ""                      #: why the search stopped before the end of its order
    entry: int | None = None              #: the tuning database's entry recorded


#: A best modeled time within this share above the streaming floor (its bytes at the HBM
#: bandwidth, a bound no plan beats) ends the search: no candidate can gain more.
FLOOR_TOLERANCE = 0.05


def search(problem: Problem, candidates: Sequence[Candidate], runner, *, target: str, board: str,
           clock_mhz: float | None, cus: int | None, shape: tuple, check: bool = True, finalists: int = 3,
           max_modeled: int | None = None, prune: bool = True, margin: float = 0.10, db=None, key=None,
           progress: Callable[[Result], None] | None = None, model_deadline: float | None = None) -> Outcome:
    """Tune one problem: the automatic plan and ``candidates``, in the order of the plan model's
    estimate (:func:`estimate_us`), modeled in batches of twice the ``runner``'s width.  The
    search decides one candidate at a time, in that order, on the results before it (whatever
    the batch width or a resume: a Ray search and a sequential one give the same results): it
    stops when the next candidate cannot win (its estimate times the smallest modeled/estimate
    ratio seen so far, less ``margin``, is above the best modeled time), or the best is within
    :data:`FLOOR_TOLERANCE` of the streaming floor (``prune``), or when ``max_modeled`` are
    modeled; candidates a batch modeled past that stop are kept in ``db`` only.  Variants (waves per SIMD, the A schedule) are modeled for the
    ``finalists`` fastest plans within ``margin`` of the best.  Then the fastest ``finalists`` are checked
    on the emulator (more while none passes); the winner is the fastest that passed, never
    slower than the automatic plan (a candidate itself; it wins ties).

    ``shape``: ``(m, n, k, dtype, c_dtype, batch)`` of the launch (for the estimates).  ``db`` and
    ``key`` (:mod:`vlpc.tunedb`): candidates measured by an earlier run are taken from it (resume),
    each new one is stored as it finishes, and the winner is recorded.  A stop (the runner's
    budget or Ctrl-C) keeps everything finished so far; past ``model_deadline`` (a
    :func:`time.monotonic` value: part of a budget kept for the checks) no new batch is modeled."""
    import time

    from vlpc.targets import get_board

    t0 = time.monotonic()
    m, n, k, dtype, c_dtype, batch = shape
    brd = get_board(board)
    brd = brd.at(compute_units=cus) if cus and cus != brd.compute_units else brd
    est = {c: estimate_us(c, m, n, k, dtype, c_dtype, brd, batch) for c in candidates}
    # one representative per plan (tile, K step, S, L, split mode, A copy) in the order of its
    # estimate; its variants (waves per SIMD, the A schedule) only for the fastest plans
    groups: dict[Candidate, list[Candidate]] = {}
    for c in candidates:
        groups.setdefault(_plan_of(c), []).append(c)
    reps = {g: min(cs, key=lambda c: (c.waves_per_simd is not None, c.schedule != "default"))
            for g, cs in groups.items()}
    order = [AUTO] + sorted(reps.values(), key=lambda c: est[c])
    done = db.measured(key) if db is not None and key is not None else {}
    out = Outcome([], None, None, space=len(candidates) + 1)
    # ``known``: every result at hand (an earlier run's from the database, and this run's, some modeled
    # ahead of the search's decisions); ``by_key``: the results the search accepts, decided one
    # candidate at a time in ``order`` by the rule of :func:`stop_reason` on the accepted results
    # alone.  So neither the batch width (a Ray cluster's or a local pool's) nor a resume changes what
    # is accepted, which budget is left for the variants, or the winner.
    known: dict[str, Result] = {}
    for c in [AUTO, *candidates]:  # (the variants too: a resumed search models none of them again)
        d = done.get(candidate_key(c))
        if d is not None and candidate_key(c) not in known:
            known[candidate_key(c)] = result_of(c, d)
    from_db = set(known)
    by_key: dict[str, Result] = {}
    pending_save: list[tuple[str, dict]] = []

    def store(r: Result) -> None:
        known[candidate_key(r.candidate)] = r
        pending_save.append((candidate_key(r.candidate), result_dict(r)))
        if progress:
            progress(r)

    def flush() -> None:
        if db is not None and key is not None and pending_save:
            db.save_measured(key, pending_save)
        pending_save.clear()

    def work(cs, chk, mdl):
        return [(problem, c, target, board, clock_mhz, cus, chk, mdl) for c in cs]

    def n_modeled() -> int:
        return sum(1 for r in by_key.values() if r.modeled_us is not None)

    def stop_reason(i: int) -> str:
        """Why the search stops before ``order[i]`` ('': it goes on), from the accepted results."""
        modeled = [r for r in by_key.values() if r.modeled_us is not None]
        if max_modeled is not None and len(modeled) >= max_modeled + 1:
            return f"--max-candidates {max_modeled}"
        best = min((r.modeled_us for r in modeled if r.error is None), default=None)
        if prune and best is not None and i > 1:
            # the streaming floor (the bytes at the HBM bandwidth) bounds every candidate from below
            floor = min((r.hbm_share * r.modeled_us for r in modeled if r.hbm_share and r.error is None),
                        default=0.0)
            if best <= floor * (1 + FLOOR_TOLERANCE):
                return (f"the streaming ceiling: the best is within {FLOOR_TOLERANCE:.0%} of the HBM "
                        "time of its bytes")
            ratios = [r.modeled_us / est[r.candidate] for r in modeled
                      if isinstance(r.candidate, Candidate) and est.get(r.candidate, 0) not in (0, float("inf"))]
            if ratios and est[order[i]] * min(ratios) * (1 - margin) > best:
                return "the plan model's bound: no candidate left can win"
        return ""

    # modeled ahead of the decisions in batches of twice the runner's width (the results past the
    # search's stop are kept in the database only)
    width = max(2, 2 * runner.width)
    i = 0
    modeling = True
    try:
        while i < len(order):
            why = stop_reason(i)
            if why:
                out.pruned = why
                break
            c = order[i]
            if candidate_key(c) in known:
                by_key[candidate_key(c)] = known[candidate_key(c)]
                i += 1
                continue
            if not modeling:
                break
            if model_deadline is not None and i > 0 and time.monotonic() >= model_deadline:
                out.pruned = "the budget (the rest is kept for the checks)"
                break
            room = width if max_modeled is None else max(1, min(width, max_modeled + 1 - n_modeled()))
            ahead = []
            for x in order[i:]:
                if len(ahead) >= room:
                    break
                if candidate_key(x) not in known:
                    ahead.append(x)
            ok = runner.map(_evaluate8, work(ahead, False, True), lambda _j, r: store(r))
            flush()
            modeling = bool(ok)  # stopped (budget, Ctrl-C): accept what finished, model nothing more
        # the variants of the fastest plans
        if not runner.stopped and not (model_deadline is not None and time.monotonic() >= model_deadline):
            best = min((r.modeled_us for r in by_key.values() if r.ok), default=0.0)
            top = [r.candidate for r in rank(list(by_key.values()))
                   if r.ok and isinstance(r.candidate, Candidate) and r.modeled_us <= best * (1 + margin)]
            sib = [c for t in top[:finalists] for c in groups[_plan_of(t)] if candidate_key(c) not in by_key]
            if max_modeled is not None:
                sib = sib[:max(0, max_modeled + 1 - n_modeled())]
            todo = [c for c in sib if candidate_key(c) not in known]
            if todo:
                runner.map(_evaluate8, work(todo, False, True), lambda _j, r: store(r))
                flush()
            for c in sib:
                if candidate_key(c) in known:
                    by_key[candidate_key(c)] = known[candidate_key(c)]
        out.resumed = sum(1 for k_ in by_key if k_ in from_db)
        out.modeled = sum(1 for r in by_key.values() if r.modeled_us is not None or r.error)
        # the finalists: the fastest modeled, checked on the emulator until one passes
        if check and not runner.stopped:
            ranked = [r for r in rank(list(by_key.values())) if r.ok]
            i = 0
            while i < len(ranked) and not runner.stopped:
                group = [r for r in ranked[i:i + finalists] if r.verified is None]
                i += finalists

                def checked(j, v, group=group):
                    r = group[j]
                    r.verified, r.max_ratio, r.exact = v.verified, v.max_ratio, v.exact
                    if v.error:
                        r.error = v.error
                    store(r)
                    out.checked += 1

                runner.map(_evaluate8, work([r.candidate for r in group], True, False), checked)
                flush()
                if any(r.verified for r in ranked[:i]):
                    break
    except KeyboardInterrupt:
        runner.stopped = "interrupted"
    finally:
        flush()
    out.results = rank(list(by_key.values()))
    out.default = by_key.get(candidate_key(AUTO))
    passed = [r for r in out.results if r.ok and (r.verified or not check)]
    out.winner = passed[0] if passed else None
    out.stopped = runner.stopped
    out.seconds = time.monotonic() - t0
    if db is not None and key is not None and out.winner is not None and not out.stopped:
        w = out.winner
        opts = w.candidate.options() if isinstance(w.candidate, Candidate) else dict(w.candidate)
        out.entry = db.record(key, opts, label(w.candidate, w.plan), w.modeled_us,
                              out.default.modeled_us if out.default else None)
    return out


def _plan_of(c: Candidate) -> Candidate:
    """The plan ``c`` is a variant of: automatic waves per SIMD, the default A schedule (the
    seed's schedule is a plan of its own)."""
    import dataclasses

    sch = c.schedule if c.schedule == "seed" else "default"
    return dataclasses.replace(c, waves_per_simd=None, schedule=sch)


def _evaluate8(problem, cand, target, board, clock_mhz, cus, check, model):
    return evaluate(problem, cand, target, board, clock_mhz, cus, check=check, model=model)


def rank(results: Sequence[Result]) -> list[Result]:
    """Passing candidates by modeled time (ties: the automatic plan, then the smaller candidate),
    then the failures."""
    good = sorted((r for r in results if r.ok), key=lambda r: (r.modeled_us, _order(r.candidate)))
    bad = sorted((r for r in results if not r.ok), key=lambda r: _order(r.candidate))
    return good + bad


def _order(cand: Candidate | dict) -> tuple:
    """A sort key of a candidate: its fields in order, automatic waves per SIMD (None) first."""
    import dataclasses

    if not isinstance(cand, Candidate):
        return ()
    return tuple(-1 if v is None else v for v in dataclasses.astuple(cand))


def ceiling(results: Sequence[Result]) -> str:
    """The roofline ceiling the share column is of: ``HBM`` (bandwidth) when the problem is
    memory-bound (a decode GEMV: streaming the bytes takes longer than the FMAs at peak), else
    ``peak``."""
    return "HBM" if any(r.memory_bound for r in results if r.modeled_us is not None) else "peak"


def share(r: Result, ceil: str) -> float | None:
    return r.hbm_share if ceil == "HBM" else r.peak_share


def table(results: Sequence[Result], limit: int | None = None, unit: str = "TFLOP/s") -> str:
    """The ranked results as a Markdown table (modeled figures; ``unit``: :func:`unit` of the
    element type, TOP/s for int8).  The share column is of the streaming ceiling (HBM
    bandwidth) for a memory-bound problem, else of the compute peak (:func:`ceiling`); the
    automatic plan's row is always shown."""
    ceil = ceiling(results)
    col = "% of HBM bandwidth" if ceil == "HBM" else "% of peak"
    lines = [f"| rank | candidate | modeled us | modeled {unit} | {col} | VGPRs | check |",
             "|---:|---|---:|---:|---:|---:|---|"]
    good = [r for r in results if r.ok]
    shown = good[:limit] if limit else good
    auto = next((r for r in good if is_auto(r.candidate)), None)
    rows = [(good.index(r) + 1, r) for r in shown]
    if auto is not None and auto not in shown:
        rows.append((good.index(auto) + 1, auto))
    for i, r in rows:
        chk = ("not run" if r.verified is None else "ok (exact)" if r.exact
               else f"ok ({r.max_ratio:.2g} of bound)")
        sh = share(r, ceil)
        lines.append(f"| {i} | {label(r.candidate, r.plan)} | {r.modeled_us:,.1f} | {r.tflops:.3f} | "
                     f"{'' if sh is None else f'{sh * 100:.1f}'} | {r.vgprs if r.vgprs is not None else '?'} | {chk} |")
    for r in (r for r in results if not r.ok):
        lines.append(f"| - | {label(r.candidate, r.plan)} | | | | | dropped: {r.error} |")
    return "\n".join(lines)


def pipeline_string(cand: Candidate, target: str, cus: int) -> str:
    """The winner as a pass-pipeline string ``vlpc opt -p`` / ``xdsl-opt -p`` accepts."""
    from vlpc.compiler import pipeline, pipeline_spec

    opts = cand.options() if isinstance(cand, Candidate) else dict(cand)
    return pipeline_spec(pipeline(target, cus=cus, **opts))


def board_and_target(target: str | None, gpu: str | None) -> tuple[str, str]:
    """``(target id, board)`` of ``vlpc tune``: a missing one follows the other (``--gpu mi25``
    implies ``--target gfx900``; ``--target gfx900`` implies ``--gpu mi25``; neither: gfx906 on
    its default board, :func:`vlpc.targets.board_for`).  Raises :class:`VlpcError` (one line naming the fix) for an unknown target or a
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


def shapes_in_flight(runner, problems: int) -> int:
    """Problems tuned at once: one locally; on Ray, one per 4 CPUs of the cluster (a search keeps
    about twice its width of candidates in flight, and stops early), at most ``problems``."""
    if getattr(runner, "_remote", None) is None or problems <= 1:
        return 1
    return max(1, min(problems, runner.width // 4))


__all__ = ["AUTO", "Candidate", "Outcome", "Problem", "Result", "check_candidate", "evaluate", "model_candidate",
           "peak_ops", "pipeline_string", "resolve", "rank", "sample_tiles", "search", "search_space", "table",
           "board_and_target", "shapes_in_flight", "tune"]
