"""A compiled kernel at run time: its launch planning (grid, split-K plan, row-narrow
companions for a small M) and the execution of that plan on a device.

Public names (also re-exported from :mod:`vlpc` and, for compatibility, from
:mod:`vlpc.compiler`): :class:`CompiledModule` (what :func:`vlpc.compile` returns),
:class:`CompiledKernel`, :class:`LaunchConfig`, :class:`PlanStep`.  The pass pipeline that
produces them is :mod:`vlpc.compiler`; this module depends on nothing of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from vlpc.errors import LaunchError, VlpcError


@dataclass
class LaunchConfig:
    """How the host launches a kernel: ``grid`` in workgroups, ``block`` in work-items."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]


@dataclass
class PlanStep:
    """One launch of a kernel plan: the kernel's name, its grid (workgroups) and block (work-items)."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]


@dataclass
class CompiledKernel:
    """One kernel of a compiled module.

    ``launch(m, n, k)`` gives the grid and workgroup size for a problem (sizes in
    elements); it raises :class:`VlpcError` for sizes the kernel cannot handle.

    M given at launch below the macro tile's M: the sqc kernel moves its last row tile
    up to end at row M, which cannot work when the matrix is shorter than one tile, so
    ``convert-gemm-to-gcn`` also builds row-narrow companions ``<name>_rows8`` (an 8 x
    macro_n tile) and ``<name>_rows1`` (one row), listed in the launch info's
    ``small_m`` (role ``rows``; those with fewer rows than the macro tile).  For such
    an M, :meth:`plan` is the companion with the most rows <= M, alone and unsplit (it
    replaces a split-K plan as well: a short matrix gains nothing from slicing K), and
    :meth:`launch` gives its grid; :meth:`rows_kernel` says which one runs.
    """

    name: str
    metadata: dict
    launch_info: dict
    vgprs: int
    sgprs: int
    #: The assembly text of the module the kernel is in (``.s``).
    asm: str = field(default="", repr=False)
    #: The code object (ELF ``.hsaco``) bytes holding the kernel.
    code_object: bytes = field(default=b"", repr=False)
    #: The full target id the code object is for, e.g. ``gfx906:sramecc+:xnack-``.
    target_id: str = ""
    #: The other kernels of the plan, by name: of a split-K plan (``<name>_reduce`` or
    #: ``<name>_scale``), and the row-narrow kernels for a small M (``<name>_rows<R>``).
    companions: dict[str, CompiledKernel] = field(default_factory=dict, repr=False)

    @property
    def split_k(self) -> int:
        """S, the K slices across workgroups (1: no split; see ``gemm-split-k``)."""
        return int(self.launch_info.get("split_k", 1))

    @property
    def split_mode(self) -> str:
        """``workspace``, ``atomic``, or ``none`` when K is not split across workgroups."""
        return str(self.launch_info.get("split_mode", "none"))

    @property
    def local_split(self) -> int:
        """L, the K slices across the wavefront groups of a workgroup."""
        return int(self.launch_info.get("local_split", 1))

    def workspace_bytes(self, m: int, ldc: int, k: int | None = None, batch: int | None = None,
                        n: int | None = None) -> int:
        """Bytes of workspace a launch needs: S x M x ldc elements in workspace mode, else 0
        (also 0 when a row-narrow companion computes a small M: it is not split).  A plan that
        copies A first (f16/i8 A stored K x M, or M x K with a static lda not a multiple of P;
        ``<name>_transpose``; passes/isel/transpose.py)
        adds the copy after the partials (kept for a row-narrow companion, which finds the copy at
        the same offset): batch x M x ceil(K / P) P elements; it needs ``k`` (and a batch count).
        A plan that copies B (stored N x K with a static ldb not a multiple of P, ``<name>_copy_b``)
        adds N x ceil(K / P) P elements per batch entry (after A's copy): it needs ``n``."""
        var = self.variant_for(m, n, k) if k is not None else self
        if var is not self:
            return var.workspace_bytes(m, ldc, k, batch, n)
        esz = 8 if self.launch_info.get("dtype", "f32") == "f64" else 4  # f16/i8: f32/i32 partials
        pre = self.transpose_kernel()
        bpre = self.b_copy_kernel()
        rows = (m if pre is not None else 0)
        if bpre is not None:
            if n is None:
                raise VlpcError(f"{self.name} copies B first: its workspace needs N")
            rows += n
        pre = pre or bpre
        rows_k = self.rows_kernel(m)
        if pre is None and rows_k is not None and rows_k.transpose_kernel() is not None:
            return rows_k.workspace_bytes(m, ldc, k, batch, n)  # (its own plan: the prefill GEMM's pre-kernel)
        if pre is None:
            if self.split_mode != "workspace" or rows_k is not None:
                return 0
            return self.split_k * m * ldc * esz
        if k is None:
            raise VlpcError(f"{self.name} copies A first: its workspace needs K")
        li = pre.launch_info
        pack = int(li["k_pack"])
        nb = 1 if li.get("batch", 0) == 0 else (batch if batch is not None else int(li["batch"]))
        if nb < 1:
            raise VlpcError(f"{self.name} takes its batch count at launch: its workspace needs batch=")
        partial = int(li["ws_split"]) * m * ldc * esz if int(li["ws_split"]) > 1 else 0
        per = int(li.get("pack_bytes", pack * (1 if li["dtype"] == "i8" else 2)))  # bytes a row and pack of K
        return partial + nb * rows * -(-k // pack) * per

    def _plan_companion(self, role: str) -> CompiledKernel | None:
        """The kernel of this plan (``launch_info["plan"]``) whose ``role`` is ``role``, or None."""
        for name in str(self.launch_info.get("plan", "")).split(","):
            c = self.companions.get(name)
            if c is not None and c.launch_info.get("role") == role:
                return c
        return None

    def transpose_kernel(self) -> CompiledKernel | None:
        """The plan's A-transpose pre-kernel (role ``transpose``), or its activations' quantization
        pre-kernel (role ``quantize_a``: passes/isel/quant_act.py; launch info ``pack_bytes``), or None."""
        return self._plan_companion("transpose") or self._plan_companion("quantize_a")

    def b_copy_kernel(self) -> CompiledKernel | None:
        """The plan's B-copy pre-kernel (role ``copy_b``), or None."""
        return self._plan_companion("copy_b")

    def rows_kernel(self, m: int) -> CompiledKernel | None:
        """The row-narrow companion that computes a problem of M rows alone (M given at
        launch and below the macro tile's M): the one with the most rows <= M; or, for M at
        least the macro tile's, a wider companion of at most M rows (the quantized prefill
        GEMM's, passes/isel/quant_gemm.py).  None when the plan of this kernel runs
        (M static or at least the macro tile's M without a wider companion, or no companion:
        strategy lds, a kernel compiled before they existed)."""
        li = self.launch_info
        if li.get("static_m", 0) >= 0:
            return None
        fits = [self.companions[x] for x in str(li.get("small_m", "")).split(",")
                if x in self.companions and 0 < self.companions[x].launch_info["macro_m"] <= m]
        if m >= li["macro_m"]:  # only a wider companion (the quantized prefill GEMM's) replaces this kernel
            fits = [c for c in fits if c.launch_info["macro_m"] > li["macro_m"]]
        return max(fits, key=lambda c: c.launch_info["macro_m"], default=None)

    def variant_for(self, m: int, n: int, k: int) -> CompiledKernel:
        """The kernel that computes an M x N x K problem: this one, or the launch-time plan variant
        (``launch_info["variants"]``: another macro tile N or split-K S of the same product, built
        for a kernel whose sizes are given at launch) the plan model finds faster for these sizes
        (:func:`vlpc.launch_variants.choose`), or the decode GEMV variant compiled for exactly this M.
        This kernel for another M below its macro tile M (its row-narrow companions run), for sizes it
        refuses, and when it has no variants.
        :meth:`plan`, :meth:`launch`, :meth:`workspace_bytes` and :meth:`execute` follow it."""
        names = str(self.launch_info.get("variants", ""))
        if not names or min(m, n, k) < 1:
            return self
        from vlpc.launch_variants import choose

        return choose(self, [self.companions[x] for x in names.split(",") if x in self.companions], m, n, k)

    def plan(self, m: int, n: int, k: int, batch: int | None = None) -> list[PlanStep]:
        """The launches, in order, that compute an M x N x K problem: this kernel alone, or
        with the reduce kernel after it (workspace mode) or the scale kernel before it (atomic);
        for an M (given at launch) below the macro tile's M, the row-narrow companion alone
        (:meth:`rows_kernel`; unsplit, whatever the split-K plan); a launch-time plan variant's
        plan when one is chosen (:meth:`variant_for`)."""
        var = self.variant_for(m, n, k)
        if var is not self:
            return var.plan(m, n, k, batch)
        main = self.launch(m, n, k, batch)
        rows = self.rows_kernel(m)
        pre = self.transpose_kernel()
        bpre = self.b_copy_kernel()
        first = []
        copies = {}
        nb = 1 if self.launch_info.get("batch", 0) == 0 else main.grid[2]  # (no split-K with a batch)
        for c, rows_of in ((pre, m), (bpre, n)):  # the copies: a tile of A (B) per workgroup, grid z the batch
            if c is not None:
                pli = c.launch_info
                copies[c.name] = PlanStep(c.name, (-(-rows_of // pli["tile_m"]), -(-k // pli["tile_k"]), nb),
                                          (pli["workgroup_size"], 1, 1))
                first.append(copies[c.name])
        if rows is not None and not first and rows.transpose_kernel() is not None:  # its own plan: a pre-kernel first
            return rows.plan(m, n, k, batch)
        if rows is not None:
            return [*first, PlanStep(rows.name, main.grid, main.block)]
        steps = []
        for name in str(self.launch_info.get("plan", self.name)).split(","):
            if name == self.name:
                steps.append(PlanStep(name, main.grid, main.block))
            elif name in copies:
                steps.append(copies[name])
            else:
                other = self.companions[name]
                steps.append(PlanStep(name, (main.grid[0], main.grid[1], 1),
                                      (other.launch_info["workgroup_size"], 1, 1)))
        return steps

    def execute(self, device, code_object, args: Sequence, m: int, n: int, k: int, ldc: int | None = None,
                batch: int | None = None, *, buffer_sizes: dict | None = None, iterations: int = 1,
                warmup: int = 0, progress=None):
        """Run the plan on ``device``: allocate the workspace (appended to ``args``), launch each
        kernel in order, free the workspace.  ``args`` are the kernel arguments without it.
        This (and :func:`vlpc.run` over it) is the one way vlpc runs a plan from Python;
        ``vlpc compile --emit hip-launcher`` (:mod:`vlpc.hip_launcher`) generates the same for C.

        ``progress``, if given, is called with the workgroups done so far over the whole plan and
        its iterations (out of :meth:`plan_workgroups` x (``warmup`` + ``iterations``)); only a
        device with a ``progress`` hook (the emulator) reports during a launch.

        Returns the launch statistics of the plan: the emulator's counters summed over its
        kernels, or on HIP :meth:`HipDevice.launch_plan`'s device times of the whole plan and of
        each kernel (``iterations``/``warmup`` apply to the whole plan, so an atomic plan's
        scale kernel runs once per plan execution).  A launch-time plan variant runs when one is
        chosen (:meth:`variant_for`; the same arguments, its workspace appended)."""
        var = self.variant_for(m, n, k)
        if var is not self:
            return var.execute(device, code_object, args, m, n, k, ldc, batch, buffer_sizes=buffer_sizes,
                               iterations=iterations, warmup=warmup, progress=progress)
        steps = [self.persistent_step(st, device) for st in self.plan(m, n, k, batch)]
        ws_bytes = self.workspace_bytes(m, ldc if ldc is not None else n, k, batch, n=n)
        self.check_offsets(args, m, n, k, batch, ws_bytes)
        ws = device.alloc(ws_bytes) if ws_bytes else None
        full = [*args, ws] if ws is not None else list(args)
        sizes = dict(buffer_sizes or {})
        if ws is not None and buffer_sizes is not None:
            sizes[len(full) - 1] = ws_bytes
        kw: dict = {"buffer_sizes": sizes} if buffer_sizes is not None else {}
        per_iteration = []
        outer = getattr(device, "progress", None)  # a hook the caller set on the device: whole-plan counts
        if progress is None:
            progress = outer
        hook = progress is not None and hasattr(device, "progress")
        base = 0
        try:
            if hasattr(device, "launch_plan"):  # HIP: times the whole plan and each kernel on the device
                return device.launch_plan(code_object, steps, full, iterations=iterations, warmup=warmup, **kw)
            for it in range(warmup + iterations):
                stats = []
                for s in steps:
                    if hook:
                        device.progress = (lambda done, b=base: progress(b + done))
                    stats.append(device.launch(code_object, s.kernel, grid=s.grid, block=s.block, args=full, **kw))
                    base += s.grid[0] * s.grid[1] * s.grid[2]
                    if progress is not None:
                        progress(base)
                if it >= warmup:
                    per_iteration.append(stats)
        finally:
            if hook:
                device.progress = outer
            if ws is not None:
                device.free(ws)
        return _combine_stats(per_iteration)

    def persistent_step(self, step: PlanStep, device) -> PlanStep:
        """``step`` with the grid :func:`persistent_grid` chooses for ``device`` when it launches
        a persistent kernel (launch info ``persistent``: its workgroups loop over the row blocks
        with the grid's stride, passes/isel/gemv.py), else ``step`` itself.  The device's
        compute units: an emulator device's board (none without a timing model), a HIP
        device's ``hipDeviceProp_t.multiProcessorCount``; workgroups resident a CU from the
        kernel's VGPRs, SGPRs, LDS and workgroup size (``Target.occupancy``)."""
        if step.kernel != self.name or not self.launch_info.get("persistent") or step.grid[1:] != (1, 1):
            return step
        board, props = getattr(device, "board", None), getattr(device, "properties", None)
        cus = getattr(board, "compute_units", None) or getattr(props, "compute_units", None)
        target = getattr(getattr(device, "target_id", None), "target", None)
        if not cus or target is None:
            return step
        wg = self.launch_info["workgroup_size"]
        occ = target.occupancy(self.vgprs, self.sgprs, int(self.metadata.get(".group_segment_fixed_size", 0)), wg)
        resident = occ.waves_per_simd * target.simds_per_cu // max(1, -(-wg // target.wavefront_size))
        return PlanStep(step.kernel, (persistent_grid(step.grid[0], cus, resident), 1, 1), step.block)

    def plan_workgroups(self, m: int, n: int, k: int, batch: int | None = None) -> int:
        """Workgroups one run of :meth:`plan` launches (all its kernels)."""
        return sum(s.grid[0] * s.grid[1] * s.grid[2] for s in self.plan(m, n, k, batch))

    def check_offsets(self, args: Sequence, m: int, n: int, k: int, batch: int | None = None,
                      workspace_bytes: int = 0) -> None:
        """Refuse, before any launch, leading dimensions and batch strides (taken from ``args``,
        the kernel arguments in order) that differ from the values the IR fixes
        (:meth:`check_static`: a one-line :class:`VlpcError`), or past the kernels' 32-bit byte
        offsets, overlapping batch entries of C and a workspace of 2^32 bytes or more
        (:func:`vlpc.dialects.gemm.offset_errors`; a one-line
        :class:`~vlpc.runtime.LaunchError`)."""
        from vlpc.dialects.gemm import BYTE_OFFSET_LIMIT, offset_errors

        li = self.launch_info
        names = [a.get(".name") for a in self.kernargs]
        vals: dict = {}
        for name, v in zip(names, args):
            try:
                vals[name] = int(v)
            except (TypeError, ValueError, OverflowError):  # buffers; alpha/beta may be +-Inf or NaN
                pass
        # lda, ldb, ldc and the batch strides the IR fixes: the arguments must say the same
        self.check_static({x: vals.get(x) for x in ("lda", "ldb", "ldc", "stride_a", "stride_b", "stride_c")})
        if li.get("batch", 0) != 0:
            nb = batch if batch is not None else li.get("batch", 0)
        else:
            nb = 0
        errors = offset_errors(self.layout, str(li.get("dtype", "f32")), m, n, k,
                               *(vals.get(x, -1) for x in ("lda", "ldb", "ldc")), nb,
                               *(vals.get(x, -1) for x in ("stride_a", "stride_b", "stride_c")),
                               a_copied=self.transpose_kernel() is not None,
                               b_copied=self.b_copy_kernel() is not None)
        if workspace_bytes >= BYTE_OFFSET_LIMIT:
            what = ("the workspace of {} bytes (split-K partials and the copies of A / B) reaches the 32-bit byte "
                    "offset limit of vlpc's kernels (2^32 bytes)"
                    if self.transpose_kernel() is not None or self.b_copy_kernel() is not None else
                    "the split-K workspace of {} bytes (S x M x ldc elements) reaches the "
                    "32-bit byte offset limit of vlpc's kernels (2^32 bytes): use a smaller --split-k")
            errors.append(what.format(workspace_bytes))
        if errors:
            raise LaunchError(f"kernel '{self.name}': {errors[0]}")

    @property
    def layout(self) -> str:
        """BLAS ``transa``/``transb`` letters of the compiled product (``"NT"``...)."""
        return str(self.launch_info.get("layout", "NT"))

    @property
    def alpha(self) -> float | None:
        """alpha when the IR fixed it (an ``arith.constant``, e.g. 1.0 from linalg), else None."""
        v = self.launch_info.get("alpha")
        return None if v is None else float(v)

    @property
    def beta(self) -> float | None:
        """beta when the IR fixed it (1.0 for linalg's accumulate, 0.0 after a zero fill), else None."""
        v = self.launch_info.get("beta")
        return None if v is None else float(v)

    @property
    def kernargs(self) -> list[dict]:
        """The kernel arguments (``.args`` of the metadata): name, offset, size, value kind."""
        return list(self.metadata.get(".args", []))

    def check_static(self, values: dict) -> None:
        """Refuse a launch value that differs from the one the IR fixes (``values``: M, N, K,
        lda, ldb, ldc, stride_a/b/c by name; None: not given).  The kernel computes with the
        compiled value and ignores the argument, so a different one would be a silently wrong C:
        raises a one-line :class:`VlpcError` naming both values."""
        li = self.launch_info
        for dim, val in values.items():
            static = li.get(f"static_{dim.lower()}", -1)
            if val is not None and static is not None and static >= 0 and val != static:
                raise VlpcError(f"{self.name} was compiled for {dim}={static} (static in the IR), got {dim}={val}")

    def check_sizes(self, m: int, n: int, k: int, lda: int | None = None, ldb: int | None = None,
                    ldc: int | None = None) -> None:
        """Refuse sizes the kernel cannot compute (raises :class:`VlpcError`)."""
        li = self.launch_info
        self.check_static({"M": m, "N": n, "K": k, "lda": lda, "ldb": ldb, "ldc": ldc})
        for dim, val in (("M", m), ("N", n), ("K", k)):
            if val <= 0:
                raise VlpcError(f"{dim}={val}: sizes must be at least 1")
        if li["static_m"] < 0 and m < li["macro_m"] and self.rows_kernel(m) is None:
            raise VlpcError(f"M={m} is smaller than the macro tile's {li['macro_m']} rows and kernel "
                            f"{self.name} has no row-narrow companion for it (strategy "
                            f"{li.get('strategy', 'sqc')}): compile with a static M or a smaller macro tile")
        if li.get("full_tiles_only"):  # a kernel without edge handling (strategy lds)
            for dim, val, tile in (("M", m, li["macro_m"]), ("N", n, li["macro_n"]), ("K", k, li["k_step"])):
                if val % tile:
                    raise VlpcError(f"{dim}={val} is not a multiple of {tile}: kernel {self.name} (strategy "
                                    f"{li.get('strategy', '?')}) computes whole tiles only")
        layout = li.get("layout", "NT")
        lda_min = k if layout[0] == "N" else m  # A stored M x K, or K x M
        ldb_min = n if layout[1] == "N" else k  # B stored K x N, or N x K
        if li.get("b_format"):  # B: N rows of K / 32 blocks (bytes; docs/quantized.md)
            from vlpc.dialects.gemm import quant_row_bytes
            ldb_min = quant_row_bytes(str(li["b_format"]), k)
        for name, ld, minimum in (("lda", lda, lda_min), ("ldb", ldb, ldb_min), ("ldc", ldc, n)):
            if ld is not None and ld < minimum:
                raise VlpcError(f"{name}={ld} is smaller than {minimum}")

    def launch(self, m: int, n: int, k: int, batch: int | None = None) -> LaunchConfig:
        """Grid (workgroups) and block (work-items) for an M x N x K problem; a strided
        batch runs its ``batch`` products in grid z (workgroup id z is the batch index).

        Not a way to run a problem: a plan may need a workspace and more kernels; run it with
        :meth:`execute` (or :func:`vlpc.run`; C/C++ hosts: ``vlpc compile --emit hip-launcher``).
        This is the launch of this kernel, the main one of its plan (a split plan's reduce
        or scale kernel runs with the same grid x and y, see :meth:`plan`), except for an M
        below the macro tile's M given at launch: then the row-narrow companion that
        replaces the plan (:meth:`rows_kernel`), grid ``(ceil(N/macro_n), ceil(M/R), batch)``; a
        launch-time plan variant's launch when one is chosen (:meth:`variant_for`)."""
        self.check_sizes(m, n, k)
        var = self.variant_for(m, n, k)
        if var is not self:
            return var.launch(m, n, k, batch)
        rows = self.rows_kernel(m)
        if rows is not None:
            return rows.launch(m, n, k, batch)
        li = self.launch_info
        static_batch = li.get("batch", 0)
        if static_batch == 0:
            if batch not in (None, 1):
                raise VlpcError(f"{self.name} is not a batched kernel (batch={batch}): give A, B and C as "
                                "3-D memrefs (batch, rows, columns) for a strided batch")
            z = 1
        else:
            if batch is None:
                if static_batch < 0:
                    raise VlpcError(f"{self.name} takes its batch count at launch: give batch=")
                batch = static_batch
            if static_batch > 0 and batch != static_batch:
                raise VlpcError(f"{self.name} was compiled for batch={static_batch}, got batch={batch}")
            if batch < 1:
                raise VlpcError(f"batch={batch}: the batch count must be at least 1")
            z = batch
        z *= self.split_k  # workgroup id z is the K slice of a split-K plan
        return LaunchConfig((-(-n // li["macro_n"]), -(-m // li["macro_m"]), z), (li["workgroup_size"], 1, 1))


def persistent_grid(blocks: int, compute_units: int | None, resident: int) -> int:
    """Workgroups of a persistent kernel's launch: one round on the board, ``compute_units`` x
    ``resident`` (workgroups a CU holds at once), where that is fewer than ``blocks`` (the row
    blocks, the grid without persistence); ``blocks`` when the board is unknown (None or 0)."""
    if not compute_units or resident < 1:
        return blocks
    return max(1, min(blocks, compute_units * resident))


def _combine_stats(per_iteration: list[list]):
    """One statistics object for a plan: emulator counters summed over the kernels of the
    last iteration, or HIP kernel times summed over the kernels of each iteration."""
    import copy

    last = per_iteration[-1]
    if len(last) == 1 and len(per_iteration) == 1:
        return last[0]
    if hasattr(last[0], "merge"):
        total = copy.deepcopy(last[0])
        for st in last[1:]:
            total.merge(st)
        return total
    if hasattr(last[0], "kernel_ms"):
        ms = [sum(sum(st.kernel_ms) for st in its) for its in per_iteration]
        total = copy.copy(last[0])
        total.kernel_name = "+".join(st.kernel_name for st in last)
        total.kernel_ms = ms
        total.wall_s = sum(st.wall_s for its in per_iteration for st in its)
        return total
    return last[-1]


@dataclass
class CompiledModule:
    """The result of :func:`compile`: assembly, code object and per-kernel information."""

    asm: str = field(repr=False)
    code_object: bytes = field(repr=False)
    target_id: str
    kernels: dict[str, CompiledKernel] = field(default_factory=dict)
    toolchain: str = ""
    #: the tuning database's entry whose options built it (vlpc.tunedb), or None
    tuned_entry: int | None = None
    #: what the tuning database lookup said (``plan: tuned entry #N ...``, entries not used and why)
    plan_notes: list[str] = field(default_factory=list)

    def kernel(self, name: str | None = None) -> CompiledKernel:
        if name is None:
            if len(self.kernels) != 1:
                raise VlpcError(f"the module has {len(self.kernels)} kernels; name one of {', '.join(self.kernels)}")
            return next(iter(self.kernels.values()))
        try:
            return self.kernels[name]
        except KeyError:
            raise VlpcError(f"no kernel '{name}' (have: {', '.join(self.kernels)})") from None
