"""A fast surrogate of the timing model, for choosing a GEMM's plan inside the compiler.

The timing model (:mod:`vlpc.runtime.timing`) needs an emulator run of the kernel, seconds
to a minute per plan: too slow for a pass that weighs dozens of plans.  This surrogate has
the same structure as the model's dispatch (``runtime/timing/gpu.py``) with the per-kernel
facts **fitted to the timing model** by ``benchmarks/plan_surrogate.py`` (stored in
``plan_model.json`` beside this file; its error against the model on shapes it was not
fitted on is printed by that script and quoted in docs/plans.md).  Every figure is modeled.

For a plan (element type, macro tile ``mm x mn``, K step, split S, local split L):

* ``W = ceil(M/mm) ceil(N/mn) S`` workgroups; CU 0 receives ``n = ceil(W / C)`` of them,
  ``R`` resident at a time (R: the kernel's occupancy, recorded by the fit).
* A workgroup whose CU holds ``r`` workgroups lasts ``F + steps x max(ceil(r w / 4) V', V + Lat)``
  engine cycles: ``steps`` K steps of its slice, ``V`` the VALU cycles of one wave's K
  step (``mm x k_step`` FMAs x 4 cycles, x2 for f64), ``w`` waves of a workgroup, so
  ``ceil(r w / 4)`` the waves of the busiest of the CU's 4 SIMDs (the CU is done when it is: 13
  one-wave workgroups run as long as 16 in the timing model; issue 33) when they start together,
  ``r w / 4`` for a last partial round after full ones (its workgroups fill slots as they free), ``Lat`` the latency a
  lone wave exposes per step, ``V'`` the per-wave cost of a step when waves compete, ``F``
  prologue and epilogue.  (Fitted per kernel variant.)
* CU 0's time is ``floor(n/R) d(R) + d(n mod R)``, at least the HBM time of the unique
  bytes (A, B, C and the workspace) at the board's bandwidth, plus the launch overhead.
* A workspace split adds the reduce kernel: ``(S + 1 + [beta != 0]) M N`` elements at
  the HBM bandwidth times the fitted ``reduce_efficiency``, and for the f32/f64 kernel at least
  its load waits, ``fixed + per_wait x`` :func:`reduce_waits` cycles (``reduce_latency_cycles``,
  fitted: a GEMM of few C tiles has few reduce workgroups, each waiting on its S partials), plus
  a launch; an atomic split adds the scale kernel and reads and writes C once per slice.

The f16 and int8 dot kernels (``passes/isel/dot.py``) have the same structure with
K counted in dwords of packed K (2 f16 or 4 int8 values; their K step is in dwords): ``steps``
K steps of ``ceil(K / P)`` dwords, ``V`` = ``mm x k_step`` dot instructions x 4 cycles (one
``v_dot2_f32_f16`` or ``v_dot4_i32_i8`` issues as one FMA), A and B ``esize`` bytes per
element, C its own element size (f32, f16 or i32) and the workspace's f32/i32 partials 4
bytes; their variants and the reduce kernel's bandwidth share (``reduce_efficiency_dot``) are
fitted to the timing model's dot kernels only.  A local split L (every kernel) adds the LDS hand-over after the main loop to ``F``
(``(L - 1) x mm x c``, ``c`` fitted per type: :func:`local_reduce_cycles`), scales ``V'`` by a factor
fitted per type on R / L resident workgroups (:func:`local_wave_scale`) and divides ``R`` by L;
for the dot kernels ``R`` is also bounded by the LDS a workgroup's hand-over holds
(:func:`dot_local_lds_bytes`; the sqc kernel's hand-over, at most 16 KiB in chunks of rows,
``passes/isel/sqc.py``, allows at least the ``R / L`` of its fitted tiles).  The automatic
plan weighs L through :func:`choose`'s ``locals_``, and the dot kernels' K step (16 or 8 dwords,
a fitted variant of each: ``benchmarks/plan_surrogate.py fit-dot``) through its ``k_steps``.

Variants the fit did not cover (every f64 one: ``F64_VARIANTS`` in ``vlpc/benchmarking/plan_runs.py``
says why) take the nearest fitted one (same element type first, else f32; nearest
macro N, then M, then A dwords per row and K step) with the VALU cycles of their own K step, ``F`` scaled
by them and ``Lat`` by their A dwords per K step (the number of waits); without a fit file the structure runs with ``Lat = 0``, ``V' = V`` and a fixed
``F`` (the former issue-rate formula).
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from vlpc.dialects.gemm import DOT_LOCAL_SPLIT_LDS_BYTES, DOT_PACK, sqc_out_row_group, sqc_reduce_slice_chunk
from vlpc.isa import issue_cycles
from vlpc.targets import Board, TargetError, board_for, get_board

#: The fit's file (written by ``benchmarks/plan_surrogate.py fit``).
DATA_FILE = "plan_model.json"
#: Cycles outside the K loop when no fit is present (the former split-K cost model's constant).
DEFAULT_FIXED_CYCLES = 2000.0


def k_per_split(k: int, pieces: int, k_step: int) -> int:
    """K values per slice when K is cut into ``pieces`` slices (a multiple of ``k_step``)."""
    per = -(-k // pieces)
    return -(-per // k_step) * k_step


def k_units(k: int, dtype: str) -> int:
    """K in the units the kernel's K step counts: values for f32/f64, dwords of packed K
    (``ceil(K / P)``, P = 2 f16 or 4 int8 values per dword) for the dot kernels."""
    p = DOT_PACK.get(dtype, 1)
    return -(-k // p)


def partial_bytes(dtype: str, esize: int) -> int:
    """Bytes of one workspace partial: f32 (f16 products) or i32 (int8) for the dot kernels,
    else the element size."""
    return 4 if dtype in DOT_PACK else esize


@dataclass(frozen=True)
class Variant:
    """Fitted facts of one kernel variant (engine cycles at the fit's board)."""

    fixed: float          #: F: prologue + epilogue of one workgroup
    latency: float        #: Lat: exposed latency per K step of a lone wave
    per_wave: float       #: V': cost of one wave's K step when waves compete
    wgs_per_cu: int       #: R: resident workgroups per CU (occupancy)


@lru_cache(maxsize=1)
def fitted() -> dict:
    """The fit (``{}`` when there is none)."""
    try:
        text = resources.files("vlpc").joinpath(DATA_FILE).read_text()
    except (FileNotFoundError, OSError):
        return {}
    return json.loads(text)


def variant_key(dtype: str, macro: tuple[int, int], k_step: int) -> str:
    return f"{dtype} {macro[0]}x{macro[1]} k{k_step}"


def is_fitted(dtype: str, macro: tuple[int, int], k_step: int) -> bool:
    """Whether the fit has this exact variant (not a fallback from the nearest one)."""
    return variant_key(dtype, macro, k_step) in fitted().get("variants", {})


def valu_cycles(dtype: str, macro_m: int, k_step: int, board: Board) -> float:
    """VALU cycles of one wave's K step: ``macro_m x k_step`` FMAs at the ISA table's issue
    cycles on the board's target (``v_fma_f64`` for f64, else ``v_fma_f32``)."""
    per = issue_cycles("v_fma_f64" if dtype == "f64" else "v_fma_f32", board.target)
    return macro_m * k_step * per


def variant(dtype: str, macro: tuple[int, int], k_step: int, board: Board, wgs_per_cu: int = 0) -> Variant:
    """The fitted variant, the nearest fitted one of the same element type (macro N, then the
    accumulator dwords of a column, macro M x 2 for f64, then K step closest; so f64 16-row tiles take
    the f32 32-row fits, of the same VGPRs and occupancy), or the unfitted default."""
    data = fitted().get("variants", {})
    if not wgs_per_cu:  # 3 waves per SIMD (the default kernels' occupancy) over the workgroup's waves
        t = board.target
        wgs_per_cu = min(t.max_workgroups_per_cu, 3 * t.simds_per_cu // max(1, macro[1] // t.wavefront_size))
    v = data.get(variant_key(dtype, macro, k_step))
    vv = valu_cycles(dtype, macro[0], k_step, board)
    if v is not None:
        return Variant(v["fixed"], v["latency"], vv * v["per_wave_ratio"], v["wgs_per_cu"])
    # the nearest fitted variant: same element type if any, else f32 (an f64 K step of k_step/2
    # doubles loads as many A bytes per VALU cycle as the f32 one: same latency, same ratio)
    same = [(k, x) for k, x in data.items() if k.startswith(dtype + " ")] or \
        [(k, x) for k, x in data.items() if k.startswith("f32 ")]
    if not same:
        return Variant(DEFAULT_FIXED_CYCLES, 0.0, vv, wgs_per_cu)

    def dwords(dt: str, ks: int) -> int:  # A dwords per row and K step (one s_load's width)
        return ks * (2 if dt == "f64" else 1)

    def dist(item):  # rows compared as accumulator dwords (an f64 row holds 2): the same VGPRs, occupancy
        dt, mt, ks = item[0].split()
        m_, n_ = (int(x) for x in mt.split("x"))
        return (abs(n_ - macro[1]), abs(dwords(dt, m_) - dwords(dtype, macro[0])),
                abs(dwords(dt, int(ks[1:])) - dwords(dtype, k_step)))

    key, v = min(same, key=dist)
    ref_dt, ref_ks = key.split()[0], int(key.split()[2][1:])
    ref = valu_cycles(ref_dt, int(v["macro_m"]), ref_ks, board)
    scale = vv / ref  # prologue/epilogue in proportion to the work of a K step
    # the exposed latency of a K step in proportion to its A dwords (rows x dwords per row:
    # the number of lgkmcnt(0) waits of batches of 64 SGPRs)
    lat = v["latency"] * (macro[0] * dwords(dtype, k_step)) / (int(v["macro_m"]) * dwords(ref_dt, ref_ks))
    r = v["wgs_per_cu"] * max(1, int(v.get("macro_n", macro[1])) // macro[1])  # narrower: more resident
    return Variant(v["fixed"] * scale, lat, vv * v["per_wave_ratio"],
                   min(board.target.max_workgroups_per_cu, r))


def local_reduce_cycles(dtype: str, macro_m: int, local: int) -> float:
    """Engine cycles a workgroup of a local split L spends handing the accumulators of groups
    1..L-1 to group 0 through LDS after the main loop: ``(L - 1) x macro_m x c``, ``c`` fitted
    per element type to the timing model (``local_reduce_cycles_per_row`` in the fit file:
    ``benchmarks/plan_surrogate.py fit`` or ``fit-local``; the f16/i8 dot kernels and the f32 sqc
    kernel).  f64 takes the f32 figure doubled (two dwords per element through LDS, a ``v_add_f64``
    per element); 0 without a fit."""
    if local <= 1:
        return 0.0
    per_row = fitted().get("local_reduce_cycles_per_row", {})
    c = per_row.get(dtype, 2 * per_row.get("f32", 0.0) if dtype == "f64" else 0.0)
    return (local - 1) * macro_m * c


def local_wave_scale(dtype: str, local: int) -> float:
    """The factor on the competing-waves cost of a K step (``V'``) of a local split L > 1, fitted per
    element type to the timing model on R / L resident workgroups per CU (``local_wave_scale`` in the
    fit file: ``benchmarks/plan_surrogate.py fit``; f64 takes f32's when unfitted); 1 for L = 1 or
    without a fit."""
    if local <= 1:
        return 1.0
    sc = fitted().get("local_wave_scale", {})
    return sc.get(dtype, sc.get("f32", 1.0) if dtype == "f64" else 1.0)


def dot_local_lds_bytes(macro: tuple[int, int], local: int) -> int:
    """LDS bytes of one dot-kernel workgroup's local split hand-over (L groups x a chunk of rows of
    ``macro N`` 4-byte partials, chunks of at most ``DOT_LOCAL_SPLIT_LDS_BYTES``:
    ``vlpc.passes.isel.dot``, ``DotKernelBuilder._local_reduce``)."""
    row = macro[1] * 4
    rows = max(1, min(macro[0], DOT_LOCAL_SPLIT_LDS_BYTES // (local * row)))
    return local * rows * row


def reduce_waits(dtype: str, macro_m: int, split: int) -> int:
    """Waits for loads of one work-item of the f32/f64 sqc kernel's reduce kernel (``<name>_reduce``,
    one workgroup per C tile, a lane per column): its ``macro_m`` rows go in groups of
    :func:`vlpc.dialects.gemm.sqc_out_row_group` rows (``dw`` dwords per element: 2 for f64), and each
    group loads its S partials in chunks (:func:`vlpc.dialects.gemm.sqc_reduce_slice_chunk`), each waited for before it is
    summed (``passes/isel/sqc.py``, ``_out_rows`` and ``_store_outputs``): ``groups x chunks``.  With
    few workgroups per CU the reduce kernel's time is these waits (:func:`estimate`), not the bandwidth
    (issue 33: 256x256x8192 f32 S20 on MI60, 32x64 tiles, 32 waits: 40.4 us in the timing model against
    11.2 us at the bandwidth share)."""
    dw = 2 if dtype == "f64" else 1
    group = sqc_out_row_group(dw, split, reduce=True)
    return -(-macro_m // group) * -(-split // sqc_reduce_slice_chunk(group, dw, split))


@dataclass(frozen=True)
class PlanCost:
    """The surrogate's estimate for one plan (seconds; modeled)."""

    split_k: int
    workgroups: int
    wavefronts: int
    rounds: int
    main_seconds: float
    reduce_seconds: float
    macro: tuple[int, int] = (0, 0)
    local_split: int = 1
    k_step: int = 0  #: in the kernel's K units (values, or dwords for f16/i8)

    @property
    def seconds(self) -> float:
        return self.main_seconds + self.reduce_seconds


def estimate(m: int, n: int, k: int, dtype: str, esize: int, macro: tuple[int, int], k_step: int, split: int,
             local: int, mode: str, board: Board, beta_nonzero: bool = True, batch: int = 0,
             c_esize: int = 0) -> PlanCost:
    """Modeled time of a plan for a static ``m x n x k`` problem (see the module docstring).
    ``esize``: bytes of an A/B element; ``c_esize``: of a C element (0: ``esize``); ``k_step``
    in the kernel's K units (values, or dwords for f16/i8: :func:`k_units`)."""
    t = board.target
    var = variant(dtype, macro, k_step, board)
    tiles = math.ceil(m / macro[0]) * math.ceil(n / macro[1]) * max(1, batch)
    waves_per_wg = max(1, macro[1] // t.wavefront_size) * local
    W = tiles * split
    C = board.compute_units
    R = max(1, var.wgs_per_cu // max(1, local))
    if local > 1 and dtype in DOT_PACK:  # the dot kernels' LDS hand-over also bounds the occupancy
        R = max(1, min(R, t.lds_bytes_per_cu // dot_local_lds_bytes(macro, local)))
    steps = math.ceil(k_per_split(k_units(k, dtype), split * local, k_step) / k_step)
    v = valu_cycles(dtype, macro[0], k_step, board)

    fixed = var.fixed + local_reduce_cycles(dtype, macro[0], local)
    per_wave = var.per_wave * local_wave_scale(dtype, local)

    def duration(r: int, busiest: bool = True) -> float:
        # r resident: the waves of the busiest SIMD (r x waves over the SIMDs) when they start together; a
        # last partial round after full ones fills the slots freed one by one: the average SIMD
        waves = r * waves_per_wg / t.simds_per_cu
        return fixed + steps * max((math.ceil(waves) if busiest else waves) * per_wave, v + var.latency)

    n0 = math.ceil(W / C)
    cycles = (n0 // R) * duration(R) + (duration(n0 % R, busiest=n0 < R) if n0 % R else 0.0)
    hz = board.engine_clock_mhz * 1e6
    bw = board.hbm_bytes_per_second
    launch = board.timing.launch_overhead_us * 1e-6
    c_esize = c_esize or esize
    part = partial_bytes(dtype, esize)
    unique = ((m * k + k * n) * esize + m * n * c_esize * (1 + (1 if beta_nonzero and split == 1 else 0))) \
        * max(1, batch)
    if split > 1 and mode == "workspace":
        unique += split * m * n * part  # partial tiles written
    main = max(cycles / hz, unique / bw) + launch
    reduce = 0.0
    if split > 1:
        fit = fitted()
        eff = fit.get("reduce_efficiency", 1.0)
        if dtype in DOT_PACK:
            eff = fit.get("reduce_efficiency_dot", eff)
        if mode == "workspace":  # S partials read, C written (and read when beta != 0)
            moved = split * m * n * part + (1 + (1 if beta_nonzero else 0)) * m * n * c_esize
        else:  # scale kernel (read/write C) + one read-modify-write of C per slice
            moved = (2 + 2 * split) * m * n * c_esize
        reduce = moved / (bw * eff) + launch
        lat = fit.get("reduce_latency_cycles")
        if lat and mode == "workspace" and dtype not in DOT_PACK:  # a few workgroups: their loads' waits
            reduce = max(reduce, (lat["fixed"] + lat["per_wait"] * reduce_waits(dtype, macro[0], split)) / hz
                         + launch)
    return PlanCost(split, W, W * waves_per_wg, max(1, math.ceil(n0 / R)), main, reduce, macro, local, k_step)


def plan_board(target_name: str, gpu: str = "", cus: int = 0) -> Board:
    """The board a plan is made for: ``gpu`` by name (``mi50``, ``mi60``, ``mi25``), else the
    target's default board (:data:`vlpc.targets.DEFAULT_BOARDS`; gfx906: MI50, 60 CUs), with
    ``cus`` compute units when given.  Raises :class:`vlpc.targets.TargetError` for an
    unknown board or one of another target."""
    if gpu:
        board = get_board(gpu)
        if board.target.name != target_name:
            raise TargetError(f"board {gpu} is a {board.target.name}, not a {target_name}: compile for "
                              f"--target {board.target.name} (target='{board.target.name}') to use it")
    else:
        board = get_board(board_for(target_name))
    return board.at(compute_units=cus) if cus and cus != board.compute_units else board


def choose(m: int, n: int, k: int, dtype: str, esize: int, macro_m: int, macro_ns: tuple[int, ...], k_step: int,
           splits: tuple[int, ...], local: int, mode: str, board: Board, beta_nonzero: bool = True,
           min_k_per_split: int = 0, c_esize: int = 0, locals_: tuple[int, ...] = (),
           max_workitems: int = 0, k_steps: tuple[int, ...] = (),
           macro_ms: tuple[int, ...] = ()) -> tuple[PlanCost, list[PlanCost]]:
    """The cheapest plan over macro tile N in ``macro_ns`` and split S in ``splits`` (slices of at
    least ``min_k_per_split`` values of K and one K step; for f16/i8 a slice is whole dwords of
    packed K, :func:`k_units`, 2 or 4 values each), S = 1 always allowed, and every candidate;
    ties go to the tile with fewer idle columns past N, then the larger tile, then the smaller S.

    ``locals_`` (the automatic plan): also every local split L in it (instead of ``local``) whose
    workgroup (``macro N x L`` work-items) stays within ``max_workitems`` (0: no limit) and fits
    one CU (L at most the variant's occupancy R without a local split: its L x waves are then no
    more than the CU holds at once, as the VGPRs allow); there each of the S slices keeps ``min_k_per_split`` values of K and each of
    the S x L pieces at least one K step (L's cost is its LDS hand-over, modeled, not a slice's
    prologue and partial store), and ties go to the smaller L after the smaller S.

    ``k_steps`` (the automatic plan, e.g. ``(16, 8)``): also every K step in it
    (instead of ``k_step``), each with its own fitted variant and its own slice and piece bounds
    (whole K steps); ties go to the larger K step last.

    ``macro_ms`` (the automatic plan, tile rows not given): also every tile rows in it besides
    ``macro_m``; ties go to ``macro_m``.

    A variant other than the default (``macro_m`` rows, ``k_step``) of a tile N is weighed only where
    the fit has it (:func:`is_fitted`) or lacks the default too: a fallback derived from another
    tile's fit is never weighed against a fitted variant (issue 33: derived 16-row dot tiles model
    20 % fast)."""
    cands = []
    ku, pack = k_units(k, dtype), DOT_PACK.get(dtype, 1)
    for mr, ks, mn, L in itertools.product((macro_m, *(x for x in macro_ms if x != macro_m)),
                                           k_steps or (k_step,), macro_ns, locals_ or (local,)):
        if (mr, ks) != (macro_m, k_step) and not is_fitted(dtype, (mr, mn), ks) \
                and is_fitted(dtype, (macro_m, mn), k_step):
            continue
        if locals_ and L > 1 and (max_workitems and mn * L > max_workitems or ku < L * ks
                                  or L > variant(dtype, (mr, mn), ks, board).wgs_per_cu):
            continue  # (L workgroups' waves of the tile without a local split: those a CU holds at once)
        for s in splits:
            if s > 1 and len(splits) > 1:  # (a single S given is the plan's: always a candidate)
                if not locals_ and k_per_split(ku, s * local, ks) * pack < max(min_k_per_split, ks * pack):
                    continue
                if locals_ and (k_per_split(ku, s, ks) * pack < max(min_k_per_split, ks * pack)
                                or ku < s * L * ks):
                    continue
            cands.append(estimate(m, n, k, dtype, esize, (mr, mn), ks, s, L, mode, board,
                                  beta_nonzero, c_esize=c_esize))
    # ties: fewer idle columns (lanes past N), then the larger tile, then the smaller S, then the smaller L,
    # then the larger K step, then the default tile rows
    best = min(cands, key=lambda c: (round(c.seconds, 12), -(-n // c.macro[1]) * c.macro[1] - n, -c.macro[1],
                                     c.split_k, c.local_split, -c.k_step, c.macro[0] != macro_m))
    return best, cands


__all__ = ["PlanCost", "choose", "k_per_split", "k_units", "local_reduce_cycles", "local_wave_scale", "dot_local_lds_bytes", "partial_bytes", "plan_board", "reduce_waits", "Variant", "estimate", "fitted", "is_fitted", "valu_cycles", "variant", "variant_key"]
