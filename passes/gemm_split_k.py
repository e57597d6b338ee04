"""``gemm-split-k``: divide the K range of a GEMM among workgroups and among the wavefronts of a workgroup.

Two ways to split (XeTLA's ``dispatch_policy_kslicing<num_global_splitk,
num_local_splitk>``, "Construct a High Performance GEMM": docs/references.md), which combine:

* **Global split** (``split-k = S``; Tensile's GlobalSplitU): S workgroups share one C
  tile, each taking a slice of K.  Workgroup id z is the slice, so the grid grows from
  (x, y, 1) to (x, y, S).  gfx906 has no float atomics (``global_atomic_add_f32``
  came with gfx908), so the slices are summed one of two ways:

  - ``mode=workspace`` (default; deterministic): each slice stores its raw partial
    tile into a workspace of S x M x ldc elements; a second kernel of the same code
    object, ``<name>_reduce``, sums the S partials of each element in slice order
    0, 1, ..., S-1 and applies alpha, beta and the epilogue.  The result does not
    depend on the order the workgroups ran in: it is bit-identical run to run.
  - ``mode=atomic``: a first kernel, ``<name>_scale``, computes C = beta*C (plus a
    bias), applying beta exactly once (and not reading C when beta is 0, as BLAS);
    then every slice adds alpha*partial into C with a ``global_atomic_cmpswap``
    retry loop.  No workspace, but the summation order, and so the rounding of the
    last bits, varies from run to run.  A ReLU or GELU epilogue needs the complete
    sum, so it is refused in this mode.

* **Local split** (``local-split = L``; XeTLA's num_local_splitk): the workgroup has L
  groups of wavefronts that compute the same C tile over different K slices.  After
  the main loop (which still uses no LDS and no barrier) groups 1..L-1 hand their
  accumulators to group 0 through LDS, a chunk of rows at a time, and group 0 adds
  them in group order and writes the result.

K is cut into P = S*L slices of ``k_per_split`` values, a multiple of the K step:
``ceil(ceil(K / P) / k_step) * k_step``.  The last slices may be shorter or empty
(an empty slice contributes zeros).  When K is known only at launch, the kernel
computes the slice length itself, which needs P to be a power of two.

**Choosing S** (``split-k=0``, the default: "auto"; with ``local-split=1``, the default, L too).  S is chosen by modeled time: the
plan surrogate (:mod:`vlpc.plan_model`), which has the timing model's structure (workgroups
per CU in rounds of the kernel's occupancy, a workgroup's prologue/epilogue plus its K
steps at the lone-wave or the competing-waves rate, the HBM time of the unique bytes, the
reduce or scale kernel and each launch) with per-kernel facts fitted to the timing model
(``benchmarks/plan_surrogate.py``, which prints its error against the model).  The board
is ``gpu`` (``mi50``, ``mi60``; default: the target's smallest product, MI50) with ``cus``
CUs.  Candidates: S = 1 .. MAX_AUTO_SPLIT with at least MIN_K_PER_SPLIT values of K per
slice (f16/int8 too: 128 or 64 dwords of packed K, 8 or 4 K steps; the surrogate follows the
timing model there, e.g. int8 1024^3 at S = 2, 74 vs 68.6 us modeled); the cheapest wins,
ties go to the smaller S.  Sizes known only at launch, batched GEMMs and the lds strategy are not split
automatically (S = 1).

The f16 and int8 dot kernels (``passes/isel/dot.py``, workspace mode: f32/i32
partials of 4 bytes) are chosen the same way, on surrogate variants fitted to the timing
model's dot kernels only (error against the model on shapes outside the fit:
``benchmarks/dot_split_k_auto.py``, docs/plans.md).  Their decode GEMV plan (M = 1..16, K split
over the wavefront groups of a workgroup) keeps S = 1: the timing model runs S = 2 and 4
slower for 1x4096x4096 and 16x4096x4096, f16 and int8 (e.g. f16 16x4096x4096 46.8 us at
S = 1, 52.6 at S = 2, 56.3 at S = 4; MI60, modeled; ``benchmarks/dot_split_k_auto.py c``).
Their other GEMMs (M > 16), with ``local-split`` left at 1 and S automatic, get S and the local
split L together (:func:`choose_split_local`: L in AUTO_LOCAL_SPLITS, each S slice at least
MIN_K_PER_SPLIT values of K, each of the S x L pieces one K step; the surrogate models L's LDS
hand-over and occupancy), with the tile N and the K step (16 or 8 dwords) gemm-tile chose from the
same candidates, e.g. examples/hgemm_nt.mlir 32x64 k8 S1 L8, 21.4 us against 32x128 k16 S2 L8, 30.4 us
with the K step kept at 16 and the former 32x256 S2 L1, 81.5 us (MI60, timing model, beta = 1;
``benchmarks/dot_split_k_auto.py d`` compares them at beta = 0).  The f32/f64 GEMMs of the sqc
kernel weigh L the same way (:func:`weighs_local`; issue 33: 128x4096x4096 f32 on MI60 took S = 3,
593 us, against S1 L4's 337 us, timing model), L at most the tile's occupancy without a local
split so that the workgroup fits one CU (:func:`vlpc.plan_model.choose`).

The chosen plan is in the IR (``split_k``, ``split_mode``, ``local_split``,
``k_per_split``, ``grid``) and ``vlpc compile --print-plan`` prints it, with the
kernels and the workspace size.

Errors (located at the op): S or L below 1, an unknown mode, a workgroup above the
target's work-item limit, a batched GEMM with S > 1, a local split whose macro tile N
is not a power of two, P not a power of two with K known only at launch, and
ReLU/GELU epilogues in atomic mode.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass

from vlpc.dialects.gemm import BYTE_OFFSET_LIMIT, DOT_PACK, ELEMENT_BYTES, GemmShape, MatmulOp, gemv_plan, quant_split
from vlpc.kernel import CompiledKernel
from vlpc.passes.common import matmuls, op_error, require
from vlpc import plan_model
from vlpc.plan_model import PlanCost, k_per_split, plan_board
from vlpc.targets import Target, TargetError, get_target

MODES = ("workspace", "atomic")
#: Largest S the automatic choice considers.
MAX_AUTO_SPLIT = 32
#: Smallest slice of K (values) the automatic choice gives a workgroup (16 f32 K steps of 16):
#: below that the loop's prologue and the partial tile's store are not paid back.
MIN_K_PER_SPLIT = 256
#: Local splits L the automatic plan of the f16/int8 dot kernels (M > 16) considers (module docstring).
AUTO_LOCAL_SPLITS = (1, 2, 4, 8, 16)
#: K steps (dwords of packed K) the f16/i8 dot kernels' automatic plan weighs (gemm-tile's class
#: docstring): the plan surrogate has a fitted variant of each (benchmarks/plan_surrogate.py
#: fit-dot); ties keep 16.
DOT_AUTO_K_STEPS = (16, 8)
#: Macro tile N extents gemm-tile's automatic choice picks from (the seed's 64x64, 64x128, 64x256);
#: here, with the K steps, because the plan explanation lists them too.
AUTO_MACRO_N = (64, 128, 256)

#: Tile rows the automatic plan weighs besides the type's default (issue 33: the tuner's best f16/int8
#: 1024^3 plans on MI60 have 16-row tiles), each only where the plan surrogate has a fitted variant of
#: that exact tile and K step (``vlpc.plan_model.choose``'s ``macro_ms``): no fit, no change.
AUTO_MACRO_M = (32, 16)
#: The element types whose automatic plan weighs AUTO_MACRO_M's other tile rows: the dot kernels'.
#: f32 16-row tiles are fitted too (issue 33) and not weighed: the timing model runs them faster on
#: small grids (examples/sgemm_nt.mlir 16x64 S1 L4 29.8 us against 32x64 S2 L4's 38.3 on MI50; the
#: 256x256x8192 of docs/plans.md 16x128 S4 L4 90.9 us against 32x64 S8 L4's 99.8 on MI60; modeled), but
#: weighing them changes the default kernel of every small f32 GEMM (the bundled examples, the golden
#: assembly, the seed sweep's 256..3584 plans and the figures docs/ quotes of them): a change of its own.
AUTO_MACRO_M_TYPES = tuple(DOT_PACK)


def weighed_k_steps(dtype: str, macro: tuple[int, int], k_step: int) -> tuple[int, ...]:
    """The K steps gemm-tile's automatic plan weighs for ``macro`` (``k_step`` the chosen one): the dot
    kernels' DOT_AUTO_K_STEPS, each other than ``k_step`` only where the plan surrogate has it fitted
    or lacks ``k_step``'s variant too (:func:`vlpc.plan_model.choose`).  f32 and f64 keep their K step
    (the sqc kernel's default, one ``s_load_dwordx16`` per A row: 16 f32, 8 f64), although f32 32x64 and
    32x128 K step 8 are fitted (issue 33; the timing model runs the f32 examples at K step 8 faster,
    10.8 against 13.3 us for examples/linalg_matmul_transpose_b.mlir on MI50; weighing it moves the
    default kernel's golden assembly and docs: left for its own change)."""
    if dtype not in DOT_PACK:
        return (k_step,)
    return tuple(ks for ks in DOT_AUTO_K_STEPS if ks == k_step or plan_model.is_fitted(dtype, macro, ks)
                 or not plan_model.is_fitted(dtype, macro, k_step))


def auto_macro_m(default_m: int, dtype: str) -> tuple[int, ...]:
    """The tile rows the automatic plan weighs for ``dtype`` whose default is ``default_m``: it and, for
    AUTO_MACRO_M_TYPES, the rows of AUTO_MACRO_M below it (a shorter tile: fewer VGPRs, more workgroups
    for a small grid)."""
    if dtype not in AUTO_MACRO_M_TYPES:
        return (default_m,)
    return (default_m, *(x for x in AUTO_MACRO_M if x < default_m))


def estimate(shape: GemmShape, macro: tuple[int, int], k_step: int, split: int, local: int, mode: str,
             target: Target, cus: int, gpu: str = "") -> PlanCost:
    """Modeled time of a plan for a static problem (:func:`vlpc.plan_model.estimate` on the
    plan's board: ``gpu`` or the target's smallest product, with ``cus`` CUs)."""
    board = plan_board(target.name, gpu, cus)
    return plan_model.estimate(shape.m, shape.n, shape.k, shape.dtype, shape.element_bytes, macro, k_step, split,
                               local, mode, board, beta_nonzero=True, batch=shape.batch,
                               c_esize=ELEMENT_BYTES[shape.c_type])


def workspace_element_bytes(shape: GemmShape) -> int:
    """Bytes of one workspace partial: 4 for the dot kernels (f32 or i32 partials), else C's element size."""
    return plan_model.partial_bytes(shape.dtype, shape.element_bytes)


def choose_split(shape: GemmShape, macro: tuple[int, int], k_step: int, local: int, mode: str,
                 target: Target, cus: int, gpu: str = "") -> tuple[int, list[PlanCost]]:
    """The automatic S and every candidate's estimate (S = 1 for sizes known only at launch,
    a batch, and the decode GEMV plan of f16/i8 with M <= 16, which splits K inside the workgroup)."""
    if not shape.is_static() or shape.batch != 0:
        return 1, []
    if gemv_plan(shape, k_step) and local > 1:  # the decode GEMV: keeps S = 1 (module docstring)
        return 1, []
    board = plan_board(target.name, gpu, cus)
    best, cands = plan_model.choose(shape.m, shape.n, shape.k, shape.dtype, shape.element_bytes, macro[0],
                                    (macro[1],), k_step, tuple(range(1, MAX_AUTO_SPLIT + 1)), local, mode, board,
                                    min_k_per_split=MIN_K_PER_SPLIT, c_esize=ELEMENT_BYTES[shape.c_type])
    return best.split_k, cands


def weighs_local(shape: GemmShape, k_step: int) -> bool:
    """Whether the automatic plan weighs the local split L with S (:func:`choose_split_local`): the
    GEMMs of the f32/f64 sqc kernel and of the f16/i8 dot kernels, not the decode GEMV (which splits
    K over its wavefront groups by its own plan) nor a quantized B."""
    return shape.dtype in ("f32", "f64", *DOT_PACK) and not gemv_plan(shape, k_step) and not shape.b_format


def choose_split_local(shape: GemmShape, macro: tuple[int, int], k_step: int, mode: str, target: Target, cus: int,
                       gpu: str = "", items: int = 0) -> tuple[int, int, list[PlanCost]]:
    """The automatic (S, L) of a GEMM that weighs L (:func:`weighs_local`) and every
    candidate's estimate: S in 1..MAX_AUTO_SPLIT and L in AUTO_LOCAL_SPLITS (L > 1 only for a
    power-of-two macro tile N and workgroups of ``items`` (default: macro N) x L work-items within
    the target's limit) by the plan surrogate; (1, 1, []) for sizes known only at launch and a batch."""
    if not shape.is_static() or shape.batch != 0:
        return 1, 1, []
    items = items or macro[1]
    pow2 = macro[1] & (macro[1] - 1) == 0
    locals_ = tuple(x for x in AUTO_LOCAL_SPLITS
                    if x == 1 or (pow2 and items * x <= target.max_workitems_per_workgroup))
    board = plan_board(target.name, gpu, cus)
    best, cands = plan_model.choose(shape.m, shape.n, shape.k, shape.dtype, shape.element_bytes, macro[0],
                                    (macro[1],), k_step, tuple(range(1, MAX_AUTO_SPLIT + 1)), 1, mode, board,
                                    min_k_per_split=MIN_K_PER_SPLIT, c_esize=ELEMENT_BYTES[shape.c_type],
                                    locals_=locals_, max_workitems=target.max_workitems_per_workgroup)
    return best.split_k, best.local_split, cands


@dataclass(frozen=True)
class GemmSplitKPass(ModulePass):
    """Options: ``split-k`` (S, K slices across workgroups; 0 = choose from the shape and the
    CU count, 1 = no split), ``mode`` (``workspace`` or ``atomic``), ``local-split`` (L, K slices
    across the wavefront groups of a workgroup), ``cus`` (compute units of the device the plan is
    for; 0 = the board's), ``gpu`` (the board the automatic S is modeled on: ``mi50``, ``mi60``;
    default: the target's smallest product, MI50 with 60 CUs for gfx906), ``target``."""

    name = "gemm-split-k"

    split_k: int = 0
    mode: str = "workspace"
    local_split: int = 1
    cus: int = 0
    gpu: str = ""
    target: str = "gfx906"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = get_target(self.target)
        for mm in matmuls(op):
            require(mm, "local_range", "gemm-map-subgroups")
            self._apply_one(mm, target)

    def _apply_one(self, mm: MatmulOp, target: Target) -> None:
        if self.split_k < 0:
            raise op_error(mm, f"split-k must be at least 1 (or 0 for automatic), got {self.split_k}")
        if self.local_split < 1:
            raise op_error(mm, f"local-split must be at least 1, got {self.local_split}")
        if self.mode not in MODES:
            raise op_error(mm, f"unknown split-k mode '{self.mode}' (workspace or atomic)")
        if self.cus < 0:
            raise op_error(mm, f"cus must be positive, got {self.cus}")
        try:
            cus = plan_board(target.name, self.gpu, self.cus).compute_units
        except TargetError as e:
            raise op_error(mm, str(e)) from None
        shape = mm.shape()
        macro = mm.get_int_array("macro_tile")
        k_step = mm.get_int("k_step")
        local = self.local_split
        split = self.split_k
        if shape.b_format and local == 1:  # the quantized GEMV: K over groups (and workgroups for a small N)
            split, local = quant_split(shape, cus, split or (1 if "swiglu" in mm.epilogue_ops() else 0))
        elif split == 0 and shape.b_format:
            split = 1
        if split == 0:
            gemv = gemv_plan(shape, k_step)  # f16/i8 with M <= 16: K over the wavefront groups
            if gemv and local == 1 and macro[1] == gemv[0]:
                local = gemv[1]
            if local == 1 and weighs_local(shape, k_step) and self.mode == "workspace":
                split, local, _ = choose_split_local(shape, macro, k_step, self.mode, target, cus, self.gpu,
                                                     items=mm.get_int_array("workgroup_size")[0])
            else:
                split, _ = choose_split(shape, macro, k_step, local, self.mode, target, cus, self.gpu)
        if split > 1 and self.mode == "workspace" and shape.m >= 0 and shape.ldc >= 0:
            # the workspace (S x M x ldc elements) is addressed with 32-bit byte offsets
            wsz = workspace_element_bytes(shape)
            per_slice = shape.m * shape.ldc * wsz
            fits = max(1, (BYTE_OFFSET_LIMIT - 1) // per_slice)
            if split > fits:
                if self.split_k != 0:
                    raise op_error(mm, f"split-k={split}: the workspace of {split} x M x ldc x {wsz} = "
                                   f"{split * per_slice} bytes reaches the 32-bit byte offset limit of vlpc's kernels "
                                   f"(2^32 bytes); use split-k <= {fits} or mode=atomic")
                split = fits
        if split > 1 and shape.batch != 0:
            raise op_error(mm, f"split-k={split} with a strided batch: the batch already uses grid z; "
                           "use split-k=1 (a batch usually fills the GPU)")
        items = mm.get_int_array("workgroup_size")[0]
        if local > 1:
            if macro[1] & (macro[1] - 1):
                raise op_error(mm, f"local-split={local} needs a power-of-two macro tile N, got {macro[1]}")
            if items * local > target.max_workitems_per_workgroup:
                raise op_error(mm, f"local-split={local} makes {items * local} work-items per workgroup; "
                               f"{target.name} allows at most {target.max_workitems_per_workgroup}")
        pieces = split * local
        if shape.k < 0 and pieces & (pieces - 1):
            raise op_error(mm, f"split-k x local-split = {pieces} slices of a K known only at launch: "
                           "the kernel divides K by shifting, so the product must be a power of two")
        if split > 1 and self.mode == "atomic":
            bad = [x for x in mm.epilogue_ops() if x in ("relu", "gelu", "silu")]
            if bad:
                raise op_error(mm, f"the {bad[0]} epilogue needs the complete sum: use mode=workspace "
                               "(atomic mode adds partial products straight into C)")
        mm.set_int("split_k", split)
        mm.set_int("local_split", local)
        if split > 1:
            mm.properties["split_mode"] = StringAttr(self.mode)
        mm.set_int("k_per_split", k_per_split(shape.k, pieces, k_step) if shape.k >= 0 else -1)
        gx, gy, gz = mm.get_int_array("grid")
        mm.set_int_array("grid", (gx, gy, gz * split))
        mm.set_int_array("workgroup_size", (items * local, 1, 1))
        if local > 1:
            lr = mm.get_int_array("local_range")
            mm.set_int_array("local_range", (*lr, local))


def _main_launch(mm: MatmulOp, kernel_name: str, split: int, local: int, mode: str):
    """The main kernel's :class:`vlpc.kernel.LaunchConfig` for ``mm`` after this pass, from
    :meth:`vlpc.kernel.CompiledKernel.launch` (the host's own computation, so the plan printed is
    the one launched) on the launch information the IR fixes so far.  Sizes known only at launch
    are replaced by one macro tile (their grid dimension is then printed as a formula) and a batch
    count known only at launch by 1 (one batch entry)."""
    s = mm.shape()
    macro = mm.get_int_array("macro_tile")
    k_step = mm.get_int("k_step")
    li = {"workgroup_size": mm.get_int_array("workgroup_size")[0], "macro_m": macro[0], "macro_n": macro[1],
          "k_step": k_step, "static_m": s.m, "static_n": s.n, "static_k": s.k, "static_lda": s.lda,
          "static_ldb": s.ldb, "static_ldc": s.ldc, "layout": mm.layout.data, "dtype": s.dtype,
          "batch": s.batch, "split_k": split, "split_mode": mode, "local_split": local}
    kernel = CompiledKernel(kernel_name, {}, li, 0, 0)
    m, n, k = (x if x >= 0 else d for x, d in ((s.m, macro[0]), (s.n, macro[1]), (s.k, k_step)))
    return kernel.launch(m, n, k, 1 if s.batch < 0 else None)


def describe_plan(mm: MatmulOp, kernel_name: str, target: Target, cus: int = 0, auto: bool = False,
                  gpu: str = "", a_transpose: str = "auto", auto_local: bool = True) -> list[str]:
    """The plan gemm-split-k chose for ``mm``, as text lines (``vlpc compile --print-plan``/``-v``):
    tiles, the main kernel's launch grid and workgroups against the CU count (of the whole batch:
    :meth:`vlpc.kernel.CompiledKernel.launch`, grid z = S x batch; a batch count given at launch is
    printed as a factor ``x batch``), the split, the kernels in launch order,
    the workspace size, and for an automatic choice the modeled candidates (plan surrogate,
    :mod:`vlpc.plan_model`): every S for the chosen tile and the best S of each tile N (f16/i8 dot
    kernels: also the best S of each local split L, and the best S and L of each K step; with
    ``auto_local`` (no local split given) the S candidates are those gemm-split-k weighed with L)."""
    board = plan_board(target.name, gpu, cus)
    cus = board.compute_units
    s = mm.shape()
    macro, micro = mm.get_int_array("macro_tile"), mm.get_int_array("micro_tile")
    k_step = mm.get_int("k_step")
    split, local = mm.get_int("split_k") or 1, mm.get_int("local_split") or 1
    mode = mm.split_mode.data if mm.split_mode is not None else "none"
    wg = mm.get_int_array("workgroup_size")[0]

    def size(x: int) -> str:
        return "?" if x < 0 else str(x)

    lines = [f"plan for @{kernel_name}: M={size(s.m)} N={size(s.n)} K={size(s.k)} {s.dtype}, {cus} CUs"]
    lines.append(f"  macro tile {macro[0]}x{macro[1]}, micro tile {micro[0]}x{micro[1]}, k-step {k_step}")
    kps = mm.get_int("k_per_split")
    lines.append(f"  split-k {split}{' (auto)' if auto else ''}"
                 + (f", mode {mode}" if split > 1 else "") + f", local split {local}: "
                 + (f"{split * local} K slices of {kps}" if kps is not None and kps >= 0 else
                    f"{split * local} K slices (length computed at launch)"))
    # the main kernel's launch grid as the host computes it (CompiledKernel.launch: grid z is the
    # split-K slices times the batch); a dynamic batch is launched per entry (batch 1) and said so
    launch = _main_launch(mm, kernel_name, split, local, mode)
    gx, gy, gz = launch.grid
    per_batch = " x batch (given at launch)" if s.batch < 0 else ""
    if s.m >= 0 and s.n >= 0:
        n_wg = gx * gy * gz
        of_batch = f" ({s.batch} batch entries x {n_wg // s.batch})" if s.batch > 0 else ""
        lines.append(f"  grid {gx}x{gy}x{gz}{per_batch} = {n_wg} workgroups{per_batch and ' x batch'}{of_batch} "
                     f"of {wg} work-items: {n_wg / cus:.2f} per CU{per_batch and ' x batch'}, "
                     f"{n_wg * (wg // target.wavefront_size)} wavefronts{per_batch and ' x batch'} "
                     f"on {cus * target.simds_per_cu} SIMDs")
    else:
        lines.append(f"  grid {gx if s.n >= 0 else f'ceil(N/{macro[1]})'}x{gy if s.m >= 0 else f'ceil(M/{macro[0]})'}"
                     f"x{gz}{per_batch} workgroups of {wg} work-items")
    group = mm.get_int("wg_group") or 1
    if group > 1:  # gemm-tile's grouped workgroup order (docs/kernels.md, "The grouped workgroup order")
        lines.append(f"  workgroup order: grouped, {group} tile rows per group (wg_group {group}; "
                     f"the hardware's order is row-major)")
    kernels = [f"{kernel_name} (grid z {('batch' if gz == 1 else f'{gz} x batch') if per_batch else gz})"]
    if split > 1 and mode == "workspace":
        kernels.append(f"{kernel_name}_reduce (grid z 1)")
    elif split > 1:
        kernels.insert(0, f"{kernel_name}_scale (grid z 1)")
    from vlpc.passes.isel.transpose import describe_a_copy  # f16/i8 A stored K x M copied first
    copy = describe_a_copy(mm, kernel_name, a_transpose)
    if copy:
        kernels.insert(0, copy[0])
    lines.append("  kernels: " + ", then ".join(kernels))
    if split > 1 and mode == "workspace":
        ldc = s.ldc
        wsz = workspace_element_bytes(s)
        bytes_ = split * s.m * ldc * wsz if s.m >= 0 and ldc >= 0 else -1
        lines.append(f"  workspace: {bytes_} bytes ({split} x M x ldc x {wsz})" if bytes_ >= 0 else
                     f"  workspace: {split} x M x ldc x {wsz} bytes, allocated at launch")
    else:
        if not copy:
            lines.append("  workspace: none")
        else:
            which = [x for x, tag in (("A", "_transpose ("), ("B", "_copy_b (")) if tag in copy[0]]
            lines.append(f"  workspace: the {' and '.join(which)} cop{'ies' if len(which) > 1 else 'y'} only")
    if copy:
        lines.append(copy[1])
    if auto:
        _, cands = choose_split(s, macro, k_step, local, mode, target, cus, gpu)
        weighs = weighs_local(s, k_step) and mode in ("workspace", "none")
        if auto_local and weighs:  # the S gemm-split-k weighed with the chosen L (choose_split_local)
            cands = [c for c in choose_split_local(s, macro, k_step, "workspace", target, cus, gpu,
                                                   items=wg // local)[2] if c.local_split == local] or cands
        if cands:
            lines.append(f"  modeled candidates on {board.name} ({cus} CUs, {board.engine_clock_mhz:.0f} MHz; plan "
                         "surrogate of the timing model, vlpc/plan_model.py): split-k: rounds of workgroups "
                         "per CU, main + reduction = modeled us")
            for c in cands:
                mark = "  <- chosen" if c.split_k == split else ""
                lines.append(f"    {c.split_k:>2}: {c.rounds} rounds, {c.main_seconds * 1e6:.1f} + "
                             f"{c.reduce_seconds * 1e6:.1f} = {c.seconds * 1e6:.1f} us{mark}")
            others = []
            dot = s.dtype in DOT_PACK
            for mn in AUTO_MACRO_N:
                if mn == macro[1]:
                    continue
                if weighs:  # gemm-tile's tile choice weighs S and L (and the dot kernels' K step) with N
                    alt = [c for ks in weighed_k_steps(s.dtype, (macro[0], mn), k_step)
                           for c in choose_split_local(s, (macro[0], mn), ks, "workspace", target, cus, gpu)[2]]
                else:
                    _, alt = choose_split(s, (macro[0], mn), k_step, local, mode, target, cus, gpu)
                if alt:
                    b = min(alt, key=lambda c: (c.seconds, c.split_k, c.local_split))
                    others.append(f"{macro[0]}x{mn} best split-k {b.split_k}"
                                  + (f" L{b.local_split}" if weighs else "") + (f" k{b.k_step}" if weighs and dot else "")
                                  + f": {b.seconds * 1e6:.1f} us")
            if others:
                lines.append("  other macro tiles (modeled): " + "; ".join(others))
            rows = []  # gemm-tile's other tile rows (AUTO_MACRO_M, where the surrogate has a fitted variant)
            for r in (AUTO_MACRO_M if weighs and macro[0] in AUTO_MACRO_M and s.dtype in AUTO_MACRO_M_TYPES else ()):
                alt = [c for mn in AUTO_MACRO_N for ks in weighed_k_steps(s.dtype, (r, mn), k_step)
                       if r != macro[0] and plan_model.is_fitted(s.dtype, (r, mn), ks)
                       for c in choose_split_local(s, (r, mn), ks, "workspace", target, cus, gpu)[2]]
                if alt:
                    b = min(alt, key=lambda c: (c.seconds, c.split_k, c.local_split))
                    rows.append(f"{r}x{b.macro[1]} k{b.k_step} best split-k {b.split_k} L{b.local_split}: "
                                f"{b.seconds * 1e6:.1f} us")
            if rows:
                lines.append("  other tile rows (modeled): " + "; ".join(rows))
            if weighs_local(s, k_step):  # the automatic L: best S of each L
                _, _, lc = choose_split_local(s, macro, k_step, "workspace", target, cus, gpu, items=wg // local)
                per = {}
                for c in lc:
                    if c.local_split not in per or (c.seconds, c.split_k) < (per[c.local_split].seconds,
                                                                            per[c.local_split].split_k):
                        per[c.local_split] = c
                if per:
                    lines.append("  local splits (modeled, this tile): " + "; ".join(
                        f"L{x} best split-k {c.split_k}: {c.seconds * 1e6:.1f} us"
                        + (" <- chosen" if x == local and c.split_k == split else "") for x, c in sorted(per.items())))
                steps = []
                for ks in (weighed_k_steps(s.dtype, macro, k_step) if dot else ()):
                    _, _, kc = choose_split_local(s, macro, ks, "workspace", target, cus, gpu, items=wg // local)
                    if kc:
                        b = min(kc, key=lambda c: (round(c.seconds, 12), c.split_k, c.local_split))
                        steps.append(f"k{ks} best split-k {b.split_k} L{b.local_split}: {b.seconds * 1e6:.1f} us"
                                     + (" <- chosen" if (ks, b.split_k, b.local_split) == (k_step, split, local) else ""))
                if steps:
                    lines.append("  K steps (modeled, this tile): " + "; ".join(steps))
        else:  # choose_split kept S = 1 without modeling: say why
            why = ("sizes known only at launch" if not s.is_static() else "a strided batch" if s.batch != 0 else
                   f"the decode GEMV plan splits K across the {local} wavefront groups of each workgroup instead"
                   if gemv_plan(s, k_step) and local > 1 else f"the plan surrogate models no {s.dtype} kernel")
            lines.append(f"  (not split across workgroups automatically: {why})")
    return lines


__all__ = ["AUTO_LOCAL_SPLITS", "AUTO_MACRO_M", "AUTO_MACRO_M_TYPES", "auto_macro_m", "weighed_k_steps", "GemmSplitKPass", "weighs_local", "PlanCost", "choose_split", "choose_split_local", "describe_plan", "estimate", "k_per_split"]
